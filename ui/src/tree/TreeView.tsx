// TreeView.tsx -- the virtualised call-tree rows (ui.md §4.3): only the rows in the viewport
// (plus a small overscan) are in the DOM, each 20 px high, absolutely positioned in a
// spacer as tall as the whole list. The row list itself comes from model.buildRows, so
// expanding a node re-derives it once; scrolling only re-slices it.

import type { JSX } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useApp } from '../lib/ctx';
import { fmtBytes, fmtDuration } from '../lib/format';
import { fmtTs } from '../lib/time';
import { categoryColor, isSqlLike, type Categories } from './derived';
import { autoExpand, buildRows, isExpandable, type ParamRow, type SearchResult, type TreeModel, type ViewState } from './model';
import { fmtInv, nodeNumbers, type SuspMode } from './numbers';
import { fmtVal, treeUnit } from './units';

export const ROW_H = 20;
const OVERSCAN = 12;

export interface TreeViewProps {
  model: TreeModel;
  vs: ViewState;
  version: number;
  bump: () => void;
  search: SearchResult | null;
  marks: Set<number> | null;
  cats: Categories | null;
  selected: number;
  onSelect: (i: number) => void;
  onMenu: (i: number, anchor: HTMLElement, shift: boolean) => void;
  onValue: (name: string, value: string, row: ParamRow) => void;
  /** the first paint of rows (timing of big trees) */
  onPainted?: (rows: number) => void;
  startMs: number;       // the tree's start (absolute first/last times in the stats popover)
  suspMode: SuspMode;    // personal setting: smart suspension display or never
}

export function TreeView(p: TreeViewProps) {
  const { model: m, vs } = p;
  const rows = useMemo(() => buildRows(m, vs, p.search), [m, p.version, p.search]);
  const box = useRef<HTMLDivElement>(null);
  const [scroll, setScroll] = useState({ top: 0, h: 800 });
  const raf = useRef(0);
  const [stats, setStats] = useState<{ node: number; x: number; y: number } | null>(null);
  const statsTimer = useRef(0);

  // Ctrl + hover: the stats popover after ~100 ms (§1.6); releasing Ctrl hides it
  useEffect(() => {
    const up = (e: KeyboardEvent) => { if (e.key === 'Control') { clearTimeout(statsTimer.current); setStats(null); } };
    window.addEventListener('keyup', up);
    return () => window.removeEventListener('keyup', up);
  }, []);
  const onRowMove = (i: number, e: MouseEvent) => {
    if (!e.ctrlKey) { if (stats) setStats(null); return; }
    if (stats && stats.node === i) return;
    clearTimeout(statsTimer.current);
    const x = e.clientX, y = e.clientY;
    statsTimer.current = window.setTimeout(() => setStats({ node: i, x, y }), 100);
  };

  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const measure = () => setScroll({ top: el.scrollTop, h: el.clientHeight });
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  useEffect(() => {
    if (!p.onPainted) return;
    const n = rows.count;
    requestAnimationFrame(() => p.onPainted?.(n));
  }, []);

  // keep the selected row in view when it moves by keyboard
  const scrollTo = (rowIdx: number) => {
    const el = box.current;
    if (!el) return;
    const y = rowIdx * ROW_H;
    if (y < el.scrollTop) el.scrollTop = y;
    else if (y + ROW_H > el.scrollTop + el.clientHeight) el.scrollTop = y + ROW_H - el.clientHeight;
  };

  const onScroll = () => {
    if (raf.current) return;
    raf.current = requestAnimationFrame(() => {
      raf.current = 0;
      const el = box.current;
      if (el) setScroll({ top: el.scrollTop, h: el.clientHeight });
    });
  };

  const toggle = (i: number) => {
    if (vs.expanded[i]) vs.expanded[i] = 0;
    else autoExpand(m, i, vs.expanded, 2000);
    p.bump();
  };

  /** The skip chip: reveal the whole chain, or one level with Ctrl/Shift (classic). */
  const reveal = (i: number, oneLevel: boolean, fold: boolean) => {
    const d = Math.max(0, m.state[i]);
    let x = i;
    for (let k = 0; k < d - 1 && x >= 0; k++) {
      vs.revealed[x] = fold ? 0 : 1;
      if (!fold) vs.expanded[x] = 1;
      if (oneLevel) break;
      x = m.firstKid(x);
    }
    p.bump();
  };

  const onKey = (e: KeyboardEvent) => {
    if (e.target instanceof HTMLInputElement) return;
    const pos = rowIndexOf(rows.item, p.selected);
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      let k = pos < 0 ? 0 : pos;
      const dir = e.key === 'ArrowDown' ? 1 : -1;
      for (k += dir; k >= 0 && k < rows.count; k += dir) if (rows.item[k] >= 0) break;
      if (k >= 0 && k < rows.count) { p.onSelect(rows.item[k]); scrollTo(k); }
    } else if ((e.key === 'ArrowRight' || e.key === 'ArrowLeft' || e.key === 'Enter') && p.selected >= 0) {
      e.preventDefault();
      const open = vs.expanded[p.selected] === 1;
      if (e.key === 'Enter' || (e.key === 'ArrowRight') !== open) toggle(p.selected);
    }
  };

  const first = Math.max(0, Math.floor(scroll.top / ROW_H) - OVERSCAN);
  const last = Math.min(rows.count, Math.ceil((scroll.top + scroll.h) / ROW_H) + OVERSCAN);
  const rootVal = m.bottomUp ? Math.max(m.self[0], 1e-9) : Math.max(m.total[0], 1e-9);
  const out: JSX.Element[] = [];
  for (let k = first; k < last; k++) {
    const it = rows.item[k];
    const top = k * ROW_H;
    const ind = rows.indent[k] * 16 + 4;
    if (it < 0) out.push(<ParamRowView key={`p${rows.params[-it - 1].key}`} r={rows.params[-it - 1]} top={top} ind={ind} vs={vs} bump={p.bump} onValue={p.onValue} />);
    else out.push(nodeRow(it, top, ind));
  }

  function nodeRow(i: number, top: number, ind: number): JSX.Element {
    const name = m.names.get(m.method[i]);
    const x = nodeNumbers(m, i, p.suspMode);
    const open = vs.expanded[i] === 1 || (p.search !== null && p.search.below[i] - p.search.match[i] > 0);
    // a chain skip hides d - 1 levels (depth 1 shows the first child as usual)
    const d = m.state[i] > 1 ? m.state[i] : 0;
    const canOpen = isExpandable(m, i);
    const barW = Math.min(60, ((m.bottomUp ? m.self[i] : m.total[i]) / rootVal) * 30);
    const s = p.search;
    const cls = ['tr-row'];
    if (s && s.match[i]) cls.push('match');
    else if (s && s.below[i] === 0) cls.push('dim');
    if (i === p.selected) cls.push('sel');
    if (p.marks && p.marks.has(i)) cls.push('marked');
    const cat = p.cats && !m.bottomUp ? p.cats.cat[i] : -1;
    const style: Record<string, string | number> = { top, paddingLeft: ind };
    if (cat >= 0) style.backgroundColor = categoryColor(cat);
    return (
      <div key={`n${i}`} class={cls.join(' ')} style={style} data-testid="tree-row" data-method={name.full} data-node={i}
        onClick={() => p.onSelect(i)} onMouseMove={(e) => onRowMove(i, e)}
        onMouseLeave={() => { clearTimeout(statsTimer.current); if (stats) setStats(null); }}>
        {canOpen && !open && d > 0
          ? <button type="button" class="tr-tog tr-skip" title={`${d} pass-through level${d > 1 ? 's' : ''} skipped: opens the first node that does real work`}
              onClick={(e) => { e.stopPropagation(); toggle(i); }}>⤵{d}</button>
          : <button type="button" class={`tr-tog ${canOpen ? '' : 'leaf'}`} tabIndex={-1} aria-label={open ? 'collapse' : 'expand'}
              onClick={(e) => { e.stopPropagation(); if (canOpen) toggle(i); }}>{open ? '−' : '+'}</button>}
        <button type="button" class="tr-menu" data-testid="node-menu" title="Operations on this node"
          onClick={(e) => { e.stopPropagation(); p.onSelect(i); p.onMenu(i, e.currentTarget as HTMLElement, e.shiftKey); }}>⋮</button>
        <span class="tr-bar">{barW >= 0.6 && <span style={{ width: barW }} />}</span>
        <span class="tr-num">
          {x.onlySelf
            ? <b>{fmtVal(x.self)} self</b>
            : <>{fmtVal(x.total)}{Math.round(x.self) > 0 && <span class="muted"> ({fmtVal(x.self)} self)</span>}</>}
          {x.gc > 0 && <span class="tr-gc"> + {fmtVal(x.gc)} gc{x.selfGc >= 1 && ` (+ ${fmtVal(x.selfGc)} self gc)`}</span>}
        </span>
        <span class="tr-inv">- {fmtInv(x.inv)} inv{x.invX > 0 && <span class="tr-x"> (x {x.invX})</span>}</span>
        {x.calls > 0 && <span class="tr-inv">- {fmtInv(x.calls)} calls{x.callsX > 0 && <span class="tr-x"> (x {x.callsX})</span>}</span>}
        {open && d > 0 && canOpen && (vs.revealed[i]
          ? <span class="tr-chip" title="Fold the pass-through levels again" onClick={(e) => { e.stopPropagation(); reveal(i, false, true); }}>⤴ fold</span>
          : <span class="tr-chip" data-testid="skip-chip" title={`${d - 1} pass-through level${d > 2 ? 's' : ''} hidden — click to show them (Ctrl/Shift-click: one level)`}
              onClick={(e) => { e.stopPropagation(); reveal(i, e.ctrlKey || e.shiftKey || e.metaKey, false); }}>⤵ {d - 1} hidden</span>)}
        <span class="tr-label" title={name.full}>
          {name.ok && <span class="tr-pkg">{name.pkg ? name.pkg + '.' : ''}</span>}{name.label}
          {name.ok && name.file && <span class="tr-file"> {name.file}{name.line ? `:${name.line}` : ''}{name.jar ? ` [${name.jar}]` : ''}</span>}
        </span>
      </div>
    );
  }

  return (
    <div class="tv" ref={box} onScroll={onScroll} tabIndex={0} onKeyDown={onKey} data-testid="tree-view">
      <div class="tv-inner" style={{ height: rows.count * ROW_H }}>{out}</div>
      {stats && <StatsPopover m={m} i={stats.node} x={stats.x} y={stats.y} startMs={p.startMs} />}
    </div>
  );
}

function rowIndexOf(items: Int32Array, node: number): number {
  if (node < 0) return -1;
  return items.indexOf(node);
}

function ParamRowView({ r, top, ind, vs, bump, onValue }: {
  r: ParamRow; top: number; ind: number; vs: ViewState; bump: () => void;
  onValue: (name: string, value: string, row: ParamRow) => void;
}) {
  const g = r.group;
  const sql = isSqlLike(r.name, g);
  const zone = useApp().zone;
  const shown = displayValue(r.name, r.value.length > 400 ? r.value.slice(0, 400) : r.value, zone);
  return (
    <div class={`tr-row tr-param ${r.kind === 'variant' ? 'tr-variant' : ''}`} style={{ top, paddingLeft: ind }} data-testid="tree-param">
      {r.subItems > 0
        ? <button type="button" class="tr-tog" onClick={() => { vs.paramOpen.set(r.key, !r.open); bump(); }}>{r.open ? '−' : '+'}</button>
        : <span class="tr-tog leaf" />}
      <span class="tr-num">{fmtDuration(r.duration)}</span>
      <span class="tr-inv">- {fmtInv(r.count)} inv</span>
      {r.kind === 'group' ? <span class="tr-pname">{r.name}</span> : <span class="muted">{r.name} text</span>}
      <span>:</span>
      <span class={`tr-pval ${sql ? 'mono' : ''}`} title="Click to view the full value" onClick={() => onValue(r.name, r.value, r)}>
        {shown.replace(/\s+/g, ' ')}
      </span>
      {g?.trimmed && <span class="tag tag-amber" title={`The value was cut at 15 000 of ${g.length ?? '?'} characters`}>trimmed</span>}
      {g?.unresolved && <span class="tag tag-amber" title="The server could not resolve this big value (evicted); the reference is shown">⚠ unresolved</span>}
      {r.subItems > 0 && !r.open && <span class="muted small">{r.subItems} more</span>}
    </div>
  );
}

/** Value rendering by param kind (§4.3 table, the one-line forms): stamps in the display
 *  zone followed by the raw ms, byte counters in binary units, times as durations, a
 *  decoded `web.query`. Anything else as-is. */
export function displayValue(name: string, v: string, zone: string): string {
  const num = /^-?\d+$/.test(v) ? Number(v) : NaN;
  if ((name === 'common.started' || name === 'jms.timestamp') && num > 1e11) return `${fmtTs(num, zone)} (${v})`;
  if (/^(log\.written|log\.generated|memory\.allocated|io\..*)$/.test(name) && !Number.isNaN(num)) return fmtBytes(num);
  if (/^(time\.wait|time\.cpu|time\.queue\.wait)$/.test(name) && !Number.isNaN(num)) return fmtDuration(num);
  if (name === 'web.query') {
    try {
      const q = new URLSearchParams(v);
      return [...q.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([k, x]) => `${k} = ${x}`).join('; ');
    } catch { return v; }
  }
  return v;
}

/** The Ctrl + hover popover (§4.5): full name, "method itself / with children" for
 *  duration, suspension, invocations and average per invocation, first/last offsets,
 *  jar and line. */
function StatsPopover({ m, i, x, y, startMs }: { m: TreeModel; i: number; x: number; y: number; startMs: number }) {
  const zone = useApp().zone;
  const n = m.names.get(m.method[i]);
  const inv = Math.max(m.inv[i], 1e-9);
  const left = Math.min(x + 12, window.innerWidth - 470);
  const top = Math.min(y + 14, window.innerHeight - 260);
  return (
    <div class="popover tv-stats" style={{ position: 'fixed', left, top }} data-testid="stats-popover">
      <div class="mono small" style={{ wordBreak: 'break-all', marginBottom: 4 }}>{n.full}</div>
      {m.bottomUp && <div class="muted small">Numbers of the target method that arrived through this caller.</div>}
      <table class="grid">
        <thead><tr><th /><th class="num">method itself</th><th class="num">with children</th></tr></thead>
        <tbody>
          <tr><td>{treeUnit().kind === 'ms' ? 'duration' : 'value'}</td><td class="num">{fmtVal(m.self[i])}</td><td class="num">{fmtVal(m.total[i])}</td></tr>
          <tr><td>suspension</td><td class="num">{fmtVal(m.selfSusp[i])}</td><td class="num">{fmtVal(m.susp[i])}</td></tr>
          <tr><td>invocations</td><td class="num">{fmtInv(m.inv[i])}</td><td class="num">{fmtInv(m.calls[i])} calls</td></tr>
          <tr><td>avg / invocation</td><td class="num">{fmtVal(m.self[i] / inv)}</td><td class="num">{fmtVal(m.total[i] / inv)}</td></tr>
        </tbody>
      </table>
      {m.first && m.last && startMs > 0 && (
        <div class="small" style={{ marginTop: 4 }}>first enter +{fmtDuration(m.first[i])} ({fmtTs(startMs + m.first[i], zone)}),
          last exit +{fmtDuration(m.last[i])}</div>
      )}
      {n.ok && <div class="small muted">{n.file}{n.line ? `:${n.line}` : ''} {n.jarPath ? `[${n.jarPath}]` : ''}</div>}
    </div>
  );
}
