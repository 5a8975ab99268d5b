// Hotspots.tsx -- the bottom-up flat profile (ui.md §4.6): one row per method (per category
// when categories exist) with Σ self, Σ self suspension, Σ invocations and Σ total of its
// outermost occurrences, sorted by self. Grouped by category (dotted names nested) and, on
// request, by package module (hotgroups.ts), group rows with their sums. A row expands
// lazily into its callers with the numbers of Incoming calls (restricted to the row's
// category).

import type { JSX } from 'preact';
import { useMemo, useState } from 'preact/hooks';
import { hotspots, incoming, type Categories, type HotRow } from './derived';
import { groupHotspots, packageModule, type HotGroup, type Module } from './hotgroups';
import { abbreviatePackage } from './methodname';
import type { TreeModel } from './model';
import { fmtInv } from './numbers';
import { fmtVal } from './units';

const PAGE = 400;

export function HotspotsView({ model: m, cats, by, onIncoming }: {
  model: TreeModel; cats: Categories | null; by: 'self' | 'total';
  onIncoming: (method: number) => void;
}) {
  const hs = useMemo(() => hotspots(m, cats, by), [m, cats, by]);
  const [byModule, setByModule] = useState(() => localStorage.getItem('cloudprof.tree.hotspotsModules') === '1');
  const grouped = useMemo(() => {
    if (!cats && !byModule) return null;
    const mods = new Map<number, Module>();
    const moduleOf = (mi: number) => {
      let x = mods.get(mi);
      if (!x) { const n = m.names.get(mi); x = packageModule(n.ok ? n.fqn : n.full); mods.set(mi, x); }
      return x;
    };
    return groupHotspots(hs.rows, cats && !m.bottomUp ? cats.names : null, byModule ? moduleOf : null, by);
  }, [hs, cats, byModule, by, m]);
  const [open, setOpen] = useState<Set<string>>(new Set());
  const [limit, setLimit] = useState(PAGE);
  const callerModels = useMemo(() => new Map<string, TreeModel | null>(), [m, cats]);

  const toggle = (key: string) => {
    const s = new Set(open);
    if (s.has(key)) s.delete(key);
    else s.add(key);
    setOpen(s);
  };

  const callersOf = (r: HotRow): TreeModel | null => {
    const key = `${r.cat}:${r.method}`;
    if (!callerModels.has(key)) {
      const only = cats ? (i: number) => cats.cat[i] === r.cat : undefined;
      callerModels.set(key, incoming(m, r.method, only));
    }
    return callerModels.get(key)!;
  };

  const body: JSX.Element[] = [];
  let emitted = 0;
  const methodRow = (r: HotRow, depth: number) => {
    const key = `${r.cat}:${r.method}`;
    const name = m.names.get(r.method);
    const isOpen = open.has(key);
    body.push(
      <tr key={key} data-testid="hotspot-row" data-method={name.full}>
        <td style={depth > 0 ? { paddingLeft: 8 + depth * 14 } : undefined}>
          <span class="hs-tog" onClick={() => toggle(key)} title="Callers">{isOpen ? '−' : '+'}</span>
          {name.ok && name.pkg && <span class="muted" title={name.pkg}>{abbreviatePackage(name.pkg)}.</span>}
          <span title={name.full}>{name.label}</span>
          {name.ok && name.jar && <span class="tr-file"> [{name.jar}]</span>}
        </td>
        <td class="num"><b>{fmtVal(r.self)}</b></td>
        <td class="num">{r.selfSusp >= 1 ? fmtVal(r.selfSusp) : ''}</td>
        <td class="num">{fmtInv(r.inv)}</td>
        <td class="num">{fmtVal(r.total)}</td>
        <td><button type="button" class="btn btn-small btn-ghost" onClick={() => onIncoming(r.method)} title="Open Incoming calls as a tab">↙ incoming</button></td>
      </tr>,
    );
    if (isOpen) {
      const cm = callersOf(r);
      if (cm) pushCallers(cm, 0, 1 + depth, key, body, open, toggle);
    }
  };
  const groupRows = (g: HotGroup) => {
    for (const c of g.groups) {
      if (emitted >= limit) return;
      body.push(
        <tr key={`g${c.key}`} class="hs-group" data-testid="hotspot-group" data-group={c.key} data-depth={c.depth}>
          <td style={{ paddingLeft: 8 + c.depth * 14 }}>{c.label}</td>
          <td class="num">{fmtVal(c.sums.self)}</td><td class="num">{fmtVal(c.sums.selfSusp)}</td>
          <td class="num">{fmtInv(c.sums.inv)}</td><td class="num" /><td />
        </tr>,
      );
      groupRows(c);
    }
    for (const r of g.rows) {
      if (emitted++ >= limit) return;
      methodRow(r, g.depth + 1);
    }
  };
  const rows = hs.rows;
  if (grouped) groupRows(grouped);
  else for (const r of rows.slice(0, limit)) { emitted++; methodRow(r, 0); }

  return (
    <div class="hs" data-testid="hotspots">
      <label class="check small hs-modules" title="Group the methods by package module: logging, database driver, profiler, scheduler, reflection, other JDK, other">
        <input type="checkbox" checked={byModule} data-testid="hotspots-by-module" onChange={() => {
          localStorage.setItem('cloudprof.tree.hotspotsModules', byModule ? '0' : '1');
          setByModule(!byModule);
        }} />by package module</label>
      <table class="grid">
        <thead>
          <tr><th>Method</th><th class="num">Self</th><th class="num">Self susp.</th><th class="num">Inv.</th>
            <th class="num" title="Σ total of the outermost occurrences">Total</th><th /></tr>
        </thead>
        <tbody>{body}</tbody>
      </table>
      {rows.length > limit && <div class="hs-foot"><button type="button" class="btn btn-small" onClick={() => setLimit(limit + PAGE)}>
        Show {Math.min(PAGE, rows.length - limit)} more of {rows.length - limit}</button></div>}
      {hs.zero > 0 && <div class="hs-foot" data-testid="hotspots-zero">{hs.zero} method{hs.zero === 1 ? '' : 's'} with 0 ms self time {hs.zero === 1 ? 'is' : 'are'} not shown</div>}
      {rows.length === 0 && <div class="state">No method has self time in this tree.</div>}
    </div>
  );
}

/** Caller rows of an Incoming model, each lazily expandable into its own callers. */
function pushCallers(cm: TreeModel, node: number, depth: number, keyBase: string, out: JSX.Element[],
                     open: Set<string>, toggle: (k: string) => void): void {
  const s = cm.kidStart[node];
  const n = Math.min(cm.kidCount[node], 50);
  for (let j = s; j < s + n; j++) {
    const c = cm.kids[j];
    const key = `${keyBase}/${c}`;
    const name = cm.names.get(cm.method[c]);
    const isOpen = open.has(key);
    out.push(
      <tr key={key} class="hs-caller">
        <td style={{ paddingLeft: 8 + depth * 16 }}>
          {cm.kidCount[c] > 0 ? <span class="hs-tog" onClick={() => toggle(key)}>{isOpen ? '−' : '+'}</span> : <span class="hs-tog" />}
          <span title={name.full}>← {name.label}</span>
          <span class="muted small" title="How often this caller ran"> (ran {fmtInv(cm.calls[c])}×)</span>
        </td>
        <td class="num">{fmtVal(cm.self[c])}</td>
        <td class="num">{cm.selfSusp[c] >= 1 ? fmtVal(cm.selfSusp[c]) : ''}</td>
        <td class="num">{fmtInv(cm.inv[c])}</td>
        <td class="num">{fmtVal(cm.total[c])}</td>
        <td />
      </tr>,
    );
    if (isOpen) pushCallers(cm, c, depth + 1, key, out, open, toggle);
  }
  if (cm.kidCount[node] > n) out.push(<tr key={`${keyBase}/more`}><td class="muted small" style={{ paddingLeft: 8 + depth * 16 }}>… {cm.kidCount[node] - n} more callers</td><td colSpan={5} /></tr>);
}
