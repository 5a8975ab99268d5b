// flame.ts -- flame graph / icicle layout of a merged tree (ui.md §10.1), pure TS: frame
// widths by a metric, children left to right in tree order, frames narrower than 1 px
// folded into one grey "…" frame per parent; plus the "collapsed stacks" text and SVG
// exports of the view.

import type { TreeModel } from './model';

export type Metric = 'total' | 'net' | 'self' | 'suspension' | 'invocations';
export const METRICS: [Metric, string][] = [
  ['total', 'total time'], ['net', 'net time'], ['self', 'self time'], ['suspension', 'suspension'], ['invocations', 'invocations'],
];

export function parseMetric(s: string | null): Metric {
  return METRICS.some(([k]) => k === s) ? (s as Metric) : 'total';
}

/** Inclusive width of a frame. Widths must nest (children ≤ parent), so "self" sizes a
 *  frame by the self time of its whole subtree (= total) and shows self in the numbers;
 *  invocations size by the executions in the subtree (invocations + calls). */
export function metricValue(m: TreeModel, i: number, metric: Metric): number {
  switch (metric) {
    case 'net': return Math.max(0, m.total[i] - m.susp[i]);
    case 'suspension': return m.susp[i];
    case 'invocations': return m.inv[i] + m.calls[i];
    default: return m.total[i];
  }
}

/** The node's own part of the metric (a line of collapsed stacks). */
export function ownValue(m: TreeModel, i: number, metric: Metric): number {
  switch (metric) {
    case 'net': return Math.max(0, m.self[i] - m.selfSusp[i]);
    case 'suspension': return m.selfSusp[i];
    case 'invocations': return m.inv[i];
    default: return m.self[i];
  }
}

export interface FlameLayout {
  count: number;
  node: Int32Array;      // node index; for a "…" frame: the parent's index
  more: Uint8Array;      // 1 = a "…" frame of narrow children
  x: Float64Array;       // px from the left
  w: Float64Array;       // px
  level: Int32Array;     // 0 = the zoomed node
  levels: number;        // number of levels
  truncated: boolean;    // hit the frame budget
}

/** Lays out the subtree of `zoom` over `width` px. */
export function layoutFlame(m: TreeModel, zoom: number, metric: Metric, width: number, maxFrames = 60000): FlameLayout {
  const node: number[] = [], more: number[] = [], xs: number[] = [], ws: number[] = [], lv: number[] = [];
  let levels = 0;
  let truncated = false;
  const v0 = metricValue(m, zoom, metric);
  if (m.n === 0 || zoom < 0) return pack();
  const scale = v0 > 0 ? width / v0 : 0;
  const push = (i: number, isMore: number, x: number, w: number, l: number) => {
    node.push(i); more.push(isMore); xs.push(x); ws.push(w); lv.push(l);
    if (l + 1 > levels) levels = l + 1;
  };
  push(zoom, 0, 0, width, 0);
  const stack: number[] = [zoom, 0, 0];   // node, x, level triples
  while (stack.length) {
    const l = stack.pop()!, x = stack.pop()!, i = stack.pop()!;
    if (scale === 0) break;
    let cursor = x;
    let narrow = 0;
    const s = m.kidStart[i];
    for (let j = s; j < s + m.kidCount[i]; j++) {
      const c = m.kids[j];
      const w = metricValue(m, c, metric) * scale;
      if (w < 1) { narrow += w; continue; }
      if (node.length >= maxFrames) { truncated = true; continue; }
      push(c, 0, cursor, w, l + 1);
      stack.push(c, cursor, l + 1);
      cursor += w;
    }
    if (narrow >= 1 && node.length < maxFrames) push(i, 1, cursor, narrow, l + 1);
  }
  return pack();

  function pack(): FlameLayout {
    return {
      count: node.length, node: Int32Array.from(node), more: Uint8Array.from(more), x: Float64Array.from(xs),
      w: Float64Array.from(ws), level: Int32Array.from(lv), levels, truncated,
    };
  }
}

/** Frame name for exports: the fully qualified method (no args), `;` made safe. */
export function frameName(m: TreeModel, i: number): string {
  const n = m.names.get(m.method[i]);
  return (n.ok ? n.fqn : n.full).replace(/;/g, ',').replace(/\s+/g, ' ');
}

/** "collapsed stacks" text: `frame;frame;frame value` per node with an own value. */
export function collapsedStacks(m: TreeModel, from: number, metric: Metric): string {
  const out: string[] = [];
  const names: string[] = [];
  const stack: number[] = [from];
  const depthOf: number[] = [0];
  while (stack.length) {
    const i = stack.pop()!;
    const d = depthOf.pop()!;
    names.length = d;
    names.push(frameName(m, i));
    const v = Math.round(ownValue(m, i, metric));
    if (v > 0) out.push(`${names.join(';')} ${v}`);
    const s = m.kidStart[i];
    for (let j = s + m.kidCount[i] - 1; j >= s; j--) { stack.push(m.kids[j]); depthOf.push(d + 1); }
  }
  return out.join('\n') + '\n';
}

export function packageHue(pkg: string): number {
  let h = 0;
  for (let k = 0; k < pkg.length; k++) h = (h * 31 + pkg.charCodeAt(k)) | 0;
  // warm flame-like hues (0..60) for most packages, a few cooler ones for contrast
  const u = (h >>> 0) % 97;
  return u < 70 ? Math.round(u * 55 / 70) : 180 + (u - 70) * 3;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** An SVG picture of a layout (the frames the view shows). */
export function flameSvg(m: TreeModel, lay: FlameLayout, width: number, rowH: number, icicle: boolean,
                         color: (i: number, more: boolean) => string, label: (i: number, more: boolean) => string): string {
  const h = lay.levels * rowH;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${Math.ceil(width)}" height="${h}" font-family="monospace" font-size="11">`,
  ];
  for (let k = 0; k < lay.count; k++) {
    const y = icicle ? lay.level[k] * rowH : h - (lay.level[k] + 1) * rowH;
    const more = lay.more[k] === 1;
    const t = label(lay.node[k], more);
    const chars = Math.floor((lay.w[k] - 6) / 6.6);
    const shown = chars >= 3 ? (t.length > chars ? t.slice(0, chars - 1) + '…' : t) : '';
    parts.push(`<g><title>${esc(t)}</title><rect x="${lay.x[k].toFixed(1)}" y="${y}" width="${lay.w[k].toFixed(1)}" height="${rowH - 1}" fill="${color(lay.node[k], more)}" stroke="#fff" stroke-width="0.5"/>` +
      (shown ? `<text x="${(lay.x[k] + 3).toFixed(1)}" y="${y + rowH - 5}">${esc(shown)}</text>` : '') + '</g>');
  }
  parts.push('</svg>');
  void m;
  return parts.join('\n');
}
