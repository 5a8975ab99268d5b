// ParamsTab.tsx -- the Parameters tab (ui.md §4.6): the call's params over the whole tree,
// by (name, value) with Σ duration and count; SQL shapes by signature with their texts
// (top 20 + ::other), binds nested under their SQL. Each value opens in full with Copy.

import type { JSX } from 'preact';
import { useMemo, useState } from 'preact/hooks';
import { fmtDuration } from '../lib/format';
import { exactGroups, isSqlLike, paramsSummary, type SumGroup, type SumParam } from './derived';
import type { TreeModel } from './model';
import { fmtInv } from './numbers';

export function ParamsView({ model, q, onValue }: { model: TreeModel; q: string; onValue: (name: string, value: string, key?: string, source?: string) => void }) {
  const [exact, setExact] = useState(() => localStorage.getItem('cloudprof.tree.exactSql') === '1');
  const shapes = useMemo(() => paramsSummary(model), [model]);
  const all = useMemo(() => (exact ? exactGroups(shapes) : shapes), [shapes, exact]);
  const sum = useMemo(() => filterParams(all, q.trim().toLowerCase()), [all, q]);
  const [open, setOpen] = useState<Set<string>>(new Set());
  if (all.length === 0) return <div class="state" data-testid="params-empty">This tree carries no parameters.</div>;
  if (sum.length === 0) return <div class="state" data-testid="params-empty">No parameter matches “{q}”.</div>;
  const rows: JSX.Element[] = [];
  const addParams = (ps: SumParam[], depth: number, keyBase: string) => {
    for (const p of ps) {
      const pk = `${keyBase}/${p.name}`;
      rows.push(
        <tr key={pk} class="hs-group">
          <td style={{ paddingLeft: 8 + depth * 16 }}>{p.name} <span class="muted small">({p.groups.length} value{p.groups.length === 1 ? '' : 's'})</span></td>
          <td class="num">{fmtDuration(p.duration)}</td><td class="num" />
        </tr>,
      );
      p.groups.forEach((g, gi) => addGroup(g, depth, `${pk}/${gi}`));
    }
  };
  const addGroup = (g: SumGroup, depth: number, key: string) => {
    const sub = g.variants.length + g.nested.length;
    const isOpen = open.has(key) || (sub > 0 && sub <= 5 && !open.has(key + '!'));
    const flip = () => {
      const s = new Set(open);
      if (isOpen) { s.delete(key); s.add(key + '!'); } else { s.add(key); s.delete(key + '!'); }
      setOpen(s);
    };
    rows.push(
      <tr key={key} data-testid="param-row">
        <td style={{ paddingLeft: 8 + (depth + 1) * 16 }}>
          {sub > 0 ? <span class="hs-tog" onClick={flip}>{isOpen ? '−' : '+'}</span> : <span class="hs-tog" />}
          <span class={`ps-val ${isSqlLike(g.name) || g.variants.length ? '' : 'plain'}`} title="View the full value"
            onClick={() => onValue(g.name, g.value, g.key, g.source)}>{g.value.slice(0, 300).replace(/\s+/g, ' ')}</span>
          {g.unresolved && <span class="tag tag-amber">⚠ unresolved</span>}
          {g.trimmed && <span class="tag tag-amber">trimmed</span>}
          {g.variants.length > 0 && <span class="muted small"> {g.variants.length} texts</span>}
        </td>
        <td class="num">{fmtDuration(g.duration)}</td>
        <td class="num">{fmtInv(g.count)}</td>
      </tr>,
    );
    if (!isOpen) return;
    g.variants.forEach((v, vi) => rows.push(
      <tr key={`${key}/v${vi}`} class="hs-caller">
        <td style={{ paddingLeft: 8 + (depth + 2) * 16 }}>
          <span class="ps-val" onClick={() => onValue(g.name, v.value, v.key, v.source)}>{v.value.slice(0, 300).replace(/\s+/g, ' ')}</span>
        </td>
        <td class="num">{fmtDuration(v.duration)}</td><td class="num">{fmtInv(v.count)}</td>
      </tr>,
    ));
    addParams(g.nested, depth + 2, key);
  };
  addParams(sum, 0, '');
  return (
    <div class="hs" data-testid="params">
      <label class="check small hs-modules" title="SQL that differs only in literals is one group (its texts listed under it); exact text lists every text as its own group">
        <input type="checkbox" checked={exact} data-testid="params-exact" onChange={() => {
          localStorage.setItem('cloudprof.tree.exactSql', exact ? '0' : '1');
          setExact(!exact);
        }} />exact SQL text</label>
      <table class="grid">
        <thead><tr><th>Parameter / value</th><th class="num">Σ duration</th><th class="num">Count</th></tr></thead>
        <tbody>{rows}</tbody>
      </table>
    </div>
  );
}

/** Keeps the params whose name, or the groups whose value, texts or nested params contain
 *  the search text (the search box of the page). */
function filterParams(ps: SumParam[], q: string): SumParam[] {
  if (!q) return ps;
  const hit = (g: SumGroup): boolean =>
    g.value.toLowerCase().includes(q) || g.variants.some((v) => v.value.toLowerCase().includes(q)) || filterParams(g.nested, q).length > 0;
  const out: SumParam[] = [];
  for (const p of ps) {
    if (p.name.toLowerCase().includes(q)) { out.push(p); continue; }
    const groups = p.groups.filter(hit);
    if (groups.length) out.push({ ...p, groups });
  }
  return out;
}
