// CallsChart.tsx -- the scatter above the list (ui.md §3.9): x = start time over the
// window, y = duration (linear or log), point size grows with log(calls), colour as the
// duration dot of §1.4. Fed by /calls/stats (slowest calls per pixel column, all matching
// calls). Hover shows time/duration/calls, a click opens the call's tree in a new tab,
// dragging selects a time range that becomes the window. ←/→ move the window by 20 %,
// ↑/↓ (+/−) zoom it, when the chart has focus.

import { useEffect, useRef, useState } from 'preact/hooks';
import type { StatsPoint } from '../lib/api';
import { fmtCount, fmtDuration } from '../lib/format';
import { fmtFull } from '../lib/time';
import { useWidth } from '../lib/width';
import { linearTicks, logTicks, timeTicks } from './chartScale';
import { pauseAt, type PodPause } from './gcOverlay';

export const CHART_H = 150;
const M = { l: 54, r: 10, t: 8, b: 18 };

const COLORS: [number, string][] = [[100, '#2e9d4a'], [1000, '#d4b400'], [3000, '#f08c00'], [Infinity, '#c62828']];
const colorFor = (ms: number) => COLORS.find(([lim]) => ms < lim)![1];
const radius = (calls: number) => Math.min(7, 1.6 + Math.log10(Math.max(1, calls)) * 1.1);

export interface ChartProps {
  points: StatsPoint[];
  from: number;
  to: number;
  zone: string;
  log: boolean;
  loading: boolean;
  /** width of one time column of /calls/stats (newer servers), for the tooltip */
  columnMs?: number;
  /** the stats request was cancelled: nothing to chart, but not because nothing matched */
  cancelled?: boolean;
  onWindow: (from: number, to: number) => void;
  onOpen: (p: StatsPoint) => void;
  /** GC pauses drawn behind the calls (the GC overlay), or null when it is off */
  gc?: PodPause[] | null;
}

const GC_STRIP = 10;   // px at the top where a pause can be pointed at

interface Geo { w: number; x: (t: number) => number; y: (d: number) => number; tOf: (px: number) => number }

function geometry(w: number, from: number, to: number, maxD: number, log: boolean): Geo {
  const pw = Math.max(1, w - M.l - M.r);
  const ph = CHART_H - M.t - M.b;
  const top = log ? Math.log10(Math.max(10, maxD) * 1.3) : Math.max(1, maxD) * 1.08;
  const yv = (d: number) => (log ? Math.log10(Math.max(1, d)) : d);
  return {
    w,
    x: (t) => M.l + ((t - from) / (to - from)) * pw,
    y: (d) => M.t + ph - (yv(d) / top) * ph,
    tOf: (px) => from + ((px - M.l) / pw) * (to - from),
  };
}

function draw(cv: HTMLCanvasElement, g: Geo, p: ChartProps, maxD: number, hover: StatsPoint | null) {
  const dpr = window.devicePixelRatio || 1;
  cv.width = Math.round(g.w * dpr);
  cv.height = Math.round(CHART_H * dpr);
  const ctx = cv.getContext('2d');
  if (!ctx) return;
  ctx.scale(dpr, dpr);
  ctx.clearRect(0, 0, g.w, CHART_H);
  ctx.font = '10px system-ui, sans-serif';
  ctx.strokeStyle = '#eceef2';
  ctx.fillStyle = '#6b7383';
  ctx.lineWidth = 1;
  const yt = p.log ? logTicks(maxD * 1.3) : linearTicks(maxD * 1.08, 4);
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (const t of yt) {
    const y = Math.round(g.y(t.v)) + 0.5;
    ctx.beginPath(); ctx.moveTo(M.l, y); ctx.lineTo(g.w - M.r, y); ctx.stroke();
    ctx.fillText(t.label, M.l - 4, y);
  }
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  for (const t of timeTicks(p.from, p.to, p.zone, Math.max(2, Math.floor((g.w - M.l) / 90)))) {
    const x = Math.round(g.x(t.v)) + 0.5;
    ctx.beginPath(); ctx.moveTo(x, M.t); ctx.lineTo(x, CHART_H - M.b); ctx.stroke();
    // a label that would run into the duration axis or off the right edge is left out
    const half = ctx.measureText(t.label).width / 2;
    if (x - half > M.l - 2 && x + half < g.w) ctx.fillText(t.label, x, CHART_H - M.b + 3);
  }
  if (p.gc) {
    // a band per pause, at least 2 px wide, over the plot; a strip at the top to point at
    for (const gp of p.gc) {
      const x0 = Math.max(M.l, g.x(gp.time_ms));
      const x1 = Math.min(g.w - M.r, Math.max(x0 + 2, g.x(gp.time_ms + gp.duration_ms)));
      if (x1 <= x0) continue;
      const full = /full/i.test(gp.kind) || /full/i.test(gp.cause);
      ctx.fillStyle = full ? 'rgba(198, 40, 40, 0.22)' : 'rgba(74, 120, 214, 0.18)';
      ctx.fillRect(x0, M.t, x1 - x0, CHART_H - M.b - M.t);
      ctx.fillStyle = full ? '#c62828' : '#4a78d6';
      ctx.fillRect(x0, M.t, x1 - x0, 3);
    }
  }
  ctx.globalAlpha = 0.7;
  for (const pt of p.points) {
    ctx.fillStyle = colorFor(pt.duration_ms);
    ctx.beginPath();
    ctx.arc(g.x(pt.ts_ms), g.y(pt.duration_ms), radius(pt.calls), 0, Math.PI * 2);
    ctx.fill();
  }
  ctx.globalAlpha = 1;
  if (hover) {
    ctx.strokeStyle = '#1d2330';
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    ctx.arc(g.x(hover.ts_ms), g.y(hover.duration_ms), radius(hover.calls) + 2, 0, Math.PI * 2);
    ctx.stroke();
  }
}

function nearest(points: StatsPoint[], g: Geo, mx: number, my: number): StatsPoint | null {
  let best: StatsPoint | null = null;
  let bd = 10 * 10;
  for (const pt of points) {
    const dx = g.x(pt.ts_ms) - mx;
    const dy = g.y(pt.duration_ms) - my;
    const d = dx * dx + dy * dy;
    if (d <= bd) { bd = d; best = pt; }
  }
  return best;
}

export function CallsChart(p: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const cv = useRef<HTMLCanvasElement>(null);
  const w = useWidth(box);
  const [hover, setHover] = useState<{ pt: StatsPoint; x: number; y: number } | null>(null);
  const [gcHover, setGcHover] = useState<{ gp: PodPause; x: number; y: number } | null>(null);
  const [brush, setBrush] = useState<{ a: number; b: number } | null>(null);
  const drag = useRef<{ x0: number; moved: boolean } | null>(null);

  let maxD = 1;
  for (const pt of p.points) if (pt.duration_ms > maxD) maxD = pt.duration_ms;
  const g = geometry(w, p.from, p.to, maxD, p.log);

  useEffect(() => {
    if (cv.current && w > 0) draw(cv.current, g, p, maxD, hover?.pt ?? null);
  }, [p.points, p.from, p.to, p.zone, p.log, w, hover, p.gc]);
  // the pause under the pointer in the top strip (2 px of slack either side)
  const gcAt = (x: number, y: number): PodPause | null => {
    if (!p.gc || y > M.t + GC_STRIP || x < M.l) return null;
    const t = g.tOf(x);
    return pauseAt(p.gc, t, (p.to - p.from) / Math.max(1, g.w - M.l - M.r) * 2);
  };

  const local = (e: MouseEvent) => {
    const r = cv.current!.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  };
  const clampX = (x: number) => Math.min(g.w - M.r, Math.max(M.l, x));

  const onDown = (e: MouseEvent) => {
    if (e.button !== 0) return;
    const { x } = local(e);
    drag.current = { x0: clampX(x), moved: false };
    const move = (ev: MouseEvent) => {
      const d = drag.current;
      if (!d) return;
      const lx = clampX(local(ev).x);
      if (Math.abs(lx - d.x0) > 4) d.moved = true;
      if (d.moved) setBrush({ a: Math.min(d.x0, lx), b: Math.max(d.x0, lx) });
    };
    const up = (ev: MouseEvent) => {
      window.removeEventListener('mousemove', move);
      window.removeEventListener('mouseup', up);
      const d = drag.current;
      drag.current = null;
      setBrush(null);
      if (!d) return;
      if (d.moved) {
        const lx = clampX(local(ev).x);
        const f = Math.round(g.tOf(Math.min(d.x0, lx)));
        const t = Math.round(g.tOf(Math.max(d.x0, lx)));
        if (t - f >= 1000) p.onWindow(f, t);
      } else {
        const { x: mx, y: my } = local(ev);
        const gp = gcAt(mx, my);
        // a pause: the window around it, whose calls are listed (the calls in the pause)
        if (gp) p.onWindow(Math.floor(gp.time_ms - 5000), Math.ceil(gp.time_ms + gp.duration_ms + 1000));
        else {
          const pt = nearest(p.points, g, mx, my);
          if (pt) p.onOpen(pt);
        }
      }
    };
    window.addEventListener('mousemove', move);
    window.addEventListener('mouseup', up);
  };

  const onMove = (e: MouseEvent) => {
    if (drag.current?.moved) { setHover(null); return; }
    const { x, y } = local(e);
    const gp = gcAt(x, y);
    setGcHover(gp ? { gp, x, y } : null);
    const pt = gp ? null : nearest(p.points, g, x, y);
    setHover(pt ? { pt, x, y } : null);
  };

  const onKey = (e: KeyboardEvent) => {
    const span = p.to - p.from;
    let f: number | null = null, t = 0;
    if (e.key === 'ArrowLeft') { f = p.from - span * 0.2; t = p.to - span * 0.2; }
    else if (e.key === 'ArrowRight') { f = p.from + span * 0.2; t = p.to + span * 0.2; }
    else if (e.key === 'ArrowUp' || e.key === '+' || e.key === '=') { f = p.from + span / 4; t = p.to - span / 4; }
    else if (e.key === 'ArrowDown' || e.key === '-') { f = p.from - span / 2; t = p.to + span / 2; }
    if (f === null) return;
    e.preventDefault();
    p.onWindow(Math.round(f), Math.round(t));
  };

  return (
    <div class="cl-chart" ref={box} data-testid="calls-chart" tabIndex={0} onKeyDown={onKey}
      data-gc-pauses={p.gc ? p.gc.length : undefined}
      title={`Drag to zoom into a period; click a point to open its tree; ←/→ move, ↑/↓ zoom${p.columnMs
        ? `\nPoints: the slowest calls of each ${fmtDuration(p.columnMs)} column` : ''}`}>
      <canvas ref={cv} style={{ width: `${w}px`, height: `${CHART_H}px` }} onMouseDown={onDown} onMouseMove={onMove}
        onMouseLeave={() => { setHover(null); setGcHover(null); }} class={hover || gcHover ? 'cl-chart-pointer' : ''} />
      {brush && <div class="cl-brush" style={{ left: `${brush.a}px`, width: `${brush.b - brush.a}px` }} />}
      {hover && !brush && (
        <div class="cl-tip" style={{ left: `${Math.min(hover.x + 12, w - 190)}px`, top: `${Math.max(0, hover.y - 50)}px` }}>
          <div>{fmtFull(hover.pt.ts_ms, p.zone)}</div>
          <div><b>{fmtDuration(hover.pt.duration_ms)}</b> · {fmtCount(hover.pt.calls)} calls</div>
          <div class="muted small">click: open the tree</div>
        </div>
      )}
      {gcHover && !brush && (
        <div class="cl-tip" data-testid="chart-gc-tip" style={{ left: `${Math.min(gcHover.x + 12, w - 230)}px`, top: `${gcHover.y + 8}px` }}>
          <div>{fmtFull(gcHover.gp.time_ms, p.zone)}</div>
          <div><b>GC pause {gcHover.gp.duration_ms.toFixed(gcHover.gp.duration_ms < 10 ? 2 : 1)}ms</b> · {gcHover.gp.kind}</div>
          <div class="muted small">{gcHover.gp.cause} · {gcHover.gp.pod}</div>
          <div class="muted small">click: the calls around this pause</div>
        </div>
      )}
      {p.loading && <span class="cl-chart-busy spinner" />}
      {!p.loading && p.points.length === 0 && (
        <div class="cl-chart-empty muted">{p.cancelled ? 'cancelled: no chart' : 'no calls to chart'}</div>
      )}
    </div>
  );
}
