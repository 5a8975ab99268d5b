// Hotspots.tsx -- the bottom-up flat profile (ui.md §4.6): one row per method (per category
// when categories exist) with Σ self, Σ self suspension, Σ invocations and Σ total of its
// outermost occurrences, sorted by self. A row expands lazily into its callers with the
// numbers of Incoming calls (restricted to the row's category).

import type { JSX } from 'preact';
import { useMemo, useState } from 'preact/hooks';
import { fmtDuration } from '../lib/format';
import { hotspots, incoming, type Categories, type HotRow } from './derived';
import { abbreviatePackage } from './methodname';
import type { TreeModel } from './model';
import { fmtInv } from './numbers';

const PAGE = 400;

export function HotspotsView({ model: m, cats, by, onIncoming }: {
  model: TreeModel; cats: Categories | null; by: 'self' | 'total';
  onIncoming: (method: number) => void;
}) {
  const hs = useMemo(() => hotspots(m, cats, by), [m, cats, by]);
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
  let lastCat = -2;
  const groupSums = useMemo(() => {
    const s = new Map<number, { self: number; selfSusp: number; inv: number }>();
    for (const r of hs.rows) {
      const g = s.get(r.cat) ?? { self: 0, selfSusp: 0, inv: 0 };
      g.self += r.self; g.selfSusp += r.selfSusp; g.inv += r.inv;
      s.set(r.cat, g);
    }
    return s;
  }, [hs]);
  const rows = cats ? [...hs.rows].sort((a, b) => a.cat - b.cat) : hs.rows;
  for (const r of rows.slice(0, limit)) {
    if (cats && r.cat !== lastCat) {
      lastCat = r.cat;
      const g = groupSums.get(r.cat)!;
      body.push(
        <tr key={`g${r.cat}`} class="hs-group">
          <td>{r.cat >= 0 ? cats.names[r.cat].toUpperCase() : 'UNSORTED'}</td>
          <td class="num">{fmtDuration(g.self)}</td><td class="num">{fmtDuration(g.selfSusp)}</td>
          <td class="num">{fmtInv(g.inv)}</td><td class="num" /><td />
        </tr>,
      );
    }
    const key = `${r.cat}:${r.method}`;
    const name = m.names.get(r.method);
    const isOpen = open.has(key);
    body.push(
      <tr key={key} data-testid="hotspot-row" data-method={name.full}>
        <td>
          <span class="hs-tog" onClick={() => toggle(key)} title="Callers">{isOpen ? '−' : '+'}</span>
          {name.ok && name.pkg && <span class="muted" title={name.pkg}>{abbreviatePackage(name.pkg)}.</span>}
          <span title={name.full}>{name.label}</span>
          {name.ok && name.jar && <span class="tr-file"> [{name.jar}]</span>}
        </td>
        <td class="num"><b>{fmtDuration(r.self)}</b></td>
        <td class="num">{r.selfSusp >= 1 ? fmtDuration(r.selfSusp) : ''}</td>
        <td class="num">{fmtInv(r.inv)}</td>
        <td class="num">{fmtDuration(r.total)}</td>
        <td><button type="button" class="btn btn-small btn-ghost" onClick={() => onIncoming(r.method)} title="Open Incoming calls as a tab">↙ incoming</button></td>
      </tr>,
    );
    if (isOpen) {
      const cm = callersOf(r);
      if (cm) pushCallers(cm, 0, 1, key, body, open, toggle);
    }
  }

  return (
    <div class="hs" data-testid="hotspots">
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
        <td class="num">{fmtDuration(cm.self[c])}</td>
        <td class="num">{cm.selfSusp[c] >= 1 ? fmtDuration(cm.selfSusp[c]) : ''}</td>
        <td class="num">{fmtInv(cm.inv[c])}</td>
        <td class="num">{fmtDuration(cm.total[c])}</td>
        <td />
      </tr>,
    );
    if (isOpen) pushCallers(cm, c, depth + 1, key, out, open, toggle);
  }
  if (cm.kidCount[node] > n) out.push(<tr key={`${keyBase}/more`}><td class="muted small" style={{ paddingLeft: 8 + depth * 16 }}>… {cm.kidCount[node] - n} more callers</td><td colSpan={5} /></tr>);
}
