// FlameView.tsx -- flame graph (root at the bottom) and icicle (root on top) of a tree
// (ui.md §10.1). Frames are absolutely positioned DIVs (only those ≥ 1 px; narrower
// children fold into a grey "…" frame), only the levels in the viewport are in the DOM.
// Click zooms (the zoom path is in the URL), the breadcrumb strip and Esc zoom out, hover
// shows the node's numbers in the details line; exports: collapsed stacks and SVG.

import type { JSX } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { saveText } from '../lib/save';
import { categoryColor, type Categories } from './derived';
import { collapsedStacks, flameSvg, layoutFlame, METRICS, metricValue, packageHue, type Metric } from './flame';
import type { SearchResult, TreeModel } from './model';
import { numbersText } from './numbers';
import { fmtVal } from './units';

const FH = 18;

export interface FlameViewProps {
  model: TreeModel;
  icicle: boolean;
  metric: Metric;
  zoom: number;                       // node index, 0 = root
  setZoom: (node: number) => void;
  search: SearchResult | null;
  cats: Categories | null;
  marks: Set<number> | null;
  baseName: string;                   // file name stem for exports
  onMetric: (m: Metric) => void;
  /** a colour per frame instead of category/package (the difference view's change) */
  colorOf?: (node: number) => string;
  /** more text for the hover line and the frame's title (the difference view's numbers) */
  detailOf?: (node: number) => string;
}

export function FlameView(p: FlameViewProps) {
  const { model: m } = p;
  const scroller = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(0);
  // scroll position: from the top for the icicle, from the bottom for the flame (whose root
  // sits at the bottom), so the first render already shows the right levels
  const [view, setView] = useState({ top: 0, fromBottom: 0, h: 600 });
  const [hover, setHover] = useState(-1);
  const zoom = p.zoom >= 0 && p.zoom < m.n ? p.zoom : 0;

  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const measure = () => { setWidth(el.clientWidth); setView(viewOf(el)); };
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  const lay = useMemo(() => (width > 0 ? layoutFlame(m, zoom, p.metric, width) : null), [m, zoom, p.metric, width]);
  // the flame grows upwards from the bottom of the viewport; the icicle hangs from the top
  const height = lay ? (p.icicle ? lay.levels * FH : Math.max(lay.levels * FH, view.h - 2)) : 0;

  // a flame graph grows upwards: start scrolled to the bottom, where the root is
  useLayoutEffect(() => {
    const el = scroller.current;
    if (el) el.scrollTop = p.icicle ? 0 : el.scrollHeight;
  }, [lay, p.icicle]);

  // Esc zooms out one level
  useEffect(() => {
    const h = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement) return;
      if (zoom !== 0) { e.preventDefault(); p.setZoom(Math.max(0, m.parent[zoom])); }
    };
    window.addEventListener('keydown', h);
    return () => window.removeEventListener('keydown', h);
  }, [zoom, m]);

  const color = (i: number, more: boolean): string => {
    if (more) return '#d5d8de';
    if (p.colorOf) return p.colorOf(i);
    const c = p.cats && !m.bottomUp ? p.cats.cat[i] : -1;
    if (c >= 0) return categoryColor(c).replace('95%)', '82%)');
    const n = m.names.get(m.method[i]);
    return `hsl(${packageHue(n.ok ? n.pkg : n.full)}, 75%, 72%)`;
  };
  const label = (i: number, more: boolean): string => {
    if (more) return `… ${narrowCount(m, i, p.metric, lay ? lay.w[0] / Math.max(1e-9, metricValue(m, zoom, p.metric)) : 0)} narrow frames`;
    return m.names.get(m.method[i]).label;
  };
  const title = (i: number, more: boolean): string =>
    (more ? label(i, true) : `${label(i, false)} — ${numbersText(m, i)}${p.detailOf ? ` — ${p.detailOf(i)}` : ''}`);

  // JSON (or the page) to the first frames on screen, for the aggregate profile's benchmark
  const painted = useRef(false);
  useEffect(() => {
    if (painted.current || !lay || lay.count === 0) return;
    painted.current = true;
    const w = window as unknown as { __cpFlameTiming?: Record<string, number> };
    w.__cpFlameTiming = { pageMs: Math.round(performance.now()), frames: lay.count, nodes: m.n };
  }, [lay]);

  const frames: JSX.Element[] = [];
  if (lay) {
    const top = p.icicle ? view.top : height - view.fromBottom - view.h;
    const minY = top - FH * 4;
    const maxY = top + view.h + FH * 4;
    for (let k = 0; k < lay.count; k++) {
      const y = p.icicle ? lay.level[k] * FH : height - (lay.level[k] + 1) * FH;
      if (y < minY || y > maxY) continue;
      const i = lay.node[k];
      const more = lay.more[k] === 1;
      const cls = ['flame-frame'];
      if (more) cls.push('more');
      else {
        if (p.search && p.search.match[i]) cls.push('match');
        if (p.marks && p.marks.has(i)) cls.push('marked');
      }
      const w = lay.w[k];
      frames.push(
        <div key={more ? `m${i}` : i} class={cls.join(' ')} data-testid="flame-frame" data-node={more ? undefined : i}
          title={title(i, more)}
          style={{ left: lay.x[k], width: w, top: y, background: color(i, more) }}
          onMouseEnter={() => setHover(more ? -1 : i)}
          onClick={() => { if (!more) p.setZoom(i); }}>
          {w > 24 ? label(i, more) : ''}
        </div>,
      );
    }
  }

  const crumbs: number[] = [];
  for (let x = zoom; x >= 0; x = m.parent[x]) crumbs.push(x);
  crumbs.reverse();

  const exportStacks = () => saveText(`${p.baseName}.collapsed.txt`, collapsedStacks(m, zoom, p.metric), 'text/plain');
  const exportSvg = () => {
    if (!lay) return;
    saveText(`${p.baseName}.svg`, flameSvg(m, lay, width, FH, p.icicle, color, (i, more) => title(i, more)), 'image/svg+xml');
  };

  return (
    <div class="fl-wrap">
      <div class="fl-crumbs">
        <label class="muted">width
          <select class="input" style={{ marginLeft: 4 }} value={p.metric} data-testid="flame-metric"
            onChange={(e) => p.onMetric((e.currentTarget as HTMLSelectElement).value as Metric)}>
            {METRICS.map(([k, l]) => <option key={k} value={k}>{l}</option>)}
          </select>
        </label>
        <span class="muted" style={{ marginLeft: 8 }}>zoom:</span>
        {crumbs.map((x, k) => (
          <button type="button" key={x} disabled={x === zoom} title={m.methods[m.method[x]]} data-testid="flame-crumb"
            onClick={() => p.setZoom(x)}>{k === 0 ? m.names.get(m.method[x]).short : m.names.get(m.method[x]).short}</button>
        ))}
        <span class="spacer" />
        {lay?.truncated && <span class="tag tag-amber">frame limit reached</span>}
        <button type="button" class="btn btn-small" onClick={exportStacks} title="frame;frame;frame value per line">Collapsed stacks</button>
        <button type="button" class="btn btn-small" onClick={exportSvg}>SVG</button>
      </div>
      <div class="fl-scroll" ref={scroller} onScroll={(e) => setView(viewOf(e.currentTarget as HTMLDivElement))}>
        <div class={`flame ${p.search ? 'searching' : ''}`} data-testid="flame" data-kind={p.icicle ? 'icicle' : 'flame'}
          style={{ height: Math.max(height, 1), width: '100%' }} onMouseLeave={() => setHover(-1)}>
          {frames}
        </div>
      </div>
      <div class="fl-details" data-testid="flame-details">
        {hover >= 0
          ? <><b>{m.names.get(m.method[hover]).label}</b> — {numbersText(m, hover)}
              {p.detailOf && <span data-testid="flame-detail-extra"> — {p.detailOf(hover)}</span>}
              {m.total[zoom] > 0 && <span class="muted"> — {pct(m.total[hover], m.total[zoom])} of {fmtVal(m.total[zoom])}</span>}</>
          : <span class="muted">Hover a frame for its numbers; click to zoom; Esc zooms out.</span>}
      </div>
    </div>
  );
}

function viewOf(el: HTMLElement): { top: number; fromBottom: number; h: number } {
  return { top: el.scrollTop, fromBottom: Math.max(0, el.scrollHeight - el.scrollTop - el.clientHeight), h: el.clientHeight };
}

function pct(a: number, b: number): string {
  return `${((a / b) * 100).toFixed(1)} %`;
}

function narrowCount(m: TreeModel, parent: number, metric: Metric, scale: number): number {
  let n = 0;
  const s = m.kidStart[parent];
  for (let j = s; j < s + m.kidCount[parent]; j++) if (metricValue(m, m.kids[j], metric) * scale < 1) n++;
  return n;
}

