// TimelineChart.tsx -- the classic timeline above the calls list (ui.md §3.9): each loaded
// call a bar from its start to its end, labelled with its duration and title when there is
// room, overlapping bars stacked in lanes (timeline.ts), only the 1 000 longest drawn. A
// click on a bar selects its row and scrolls the list to it; selected rows zoom the chart
// to their span. ←/→ move, ↑/↓ zoom (the chart's own view, not the window); its lower edge
// drags to resize it, and the Chart button hides it like the scatter.

import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Call } from '../lib/api';
import { fmtDuration } from '../lib/format';
import { fmtFull } from '../lib/time';
import { useWidth } from '../lib/width';
import { timeTicks } from './chartScale';
import { cachedTitle } from './title';
import { layoutBars, longest, selectionSpan, TIMELINE_MAX, type Bar } from './timeline';

const LANE_H = 14, TOP = 4, AXIS = 18, ML = 8, MR = 8;
const COLORS: [number, string][] = [[100, '#2e9d4a'], [1000, '#d4b400'], [3000, '#f08c00'], [Infinity, '#c62828']];
const colorFor = (ms: number) => COLORS.find(([lim]) => ms < lim)![1];

export function TimelineChart({ calls, from, to, zone, selected, onPick }: {
  calls: Call[]; from: number; to: number; zone: string; selected: Call[]; onPick: (c: Call) => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const cv = useRef<HTMLCanvasElement>(null);
  const w = useWidth(box);
  const [view, setView] = useState<{ from: number; to: number } | null>(null);
  const [hover, setHover] = useState<{ bar: Bar; x: number; y: number } | null>(null);
  const drawn = useMemo(() => longest(calls), [calls, calls.length]);
  const { bars, lanes } = useMemo(() => layoutBars(drawn), [drawn]);
  const selSpan = useMemo(() => selectionSpan(selected), [selected]);
  // a selection zooms the chart to its span; clearing it shows the window again
  useEffect(() => { setView(selSpan); }, [selSpan?.from, selSpan?.to]);
  const v = view ?? { from, to };
  const h = TOP + Math.max(3, lanes) * LANE_H + AXIS;

  const pw = Math.max(1, w - ML - MR);
  const x = (t: number) => ML + ((t - v.from) / Math.max(1, v.to - v.from)) * pw;
  const sel = useMemo(() => new Set(selected.map((c) => c.id)), [selected]);

  useEffect(() => {
    const c = cv.current;
    if (!c || w <= 0) return;
    const dpr = window.devicePixelRatio || 1;
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
    const ctx = c.getContext('2d');
    if (!ctx) return;
    ctx.scale(dpr, dpr);
    ctx.clearRect(0, 0, w, h);
    ctx.font = '10px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    ctx.strokeStyle = '#eceef2';
    ctx.fillStyle = '#6b7383';
    ctx.textAlign = 'center';
    for (const t of timeTicks(v.from, v.to, zone, Math.max(2, Math.floor(pw / 110)))) {
      const xx = Math.round(x(t.v)) + 0.5;
      ctx.beginPath(); ctx.moveTo(xx, TOP); ctx.lineTo(xx, h - AXIS); ctx.stroke();
      ctx.fillText(t.label, xx, h - AXIS / 2);
    }
    ctx.textAlign = 'left';
    for (const b of bars) {
      const x0 = Math.max(ML, x(b.from)), x1 = Math.min(w - MR, Math.max(x(b.from) + 2, x(b.to)));
      if (x1 < ML || x0 > w - MR) continue;
      const y = TOP + b.lane * LANE_H;
      ctx.fillStyle = colorFor(b.call.duration_ms);
      ctx.globalAlpha = sel.size && !sel.has(b.call.id) ? 0.35 : 0.85;
      ctx.fillRect(x0, y + 1, x1 - x0, LANE_H - 3);
      ctx.globalAlpha = 1;
      if (sel.has(b.call.id)) { ctx.strokeStyle = '#1d2330'; ctx.lineWidth = 1.5; ctx.strokeRect(x0, y + 1, x1 - x0, LANE_H - 3); }
      if (x1 - x0 > 60) {
        ctx.fillStyle = '#1d2330';
        const label = `${fmtDuration(b.call.duration_ms)} ${cachedTitle(b.call).text}`;
        ctx.save();
        ctx.beginPath(); ctx.rect(x0, y, x1 - x0 - 2, LANE_H); ctx.clip();
        ctx.fillText(label, x0 + 3, y + LANE_H / 2);
        ctx.restore();
      }
    }
  }, [bars, w, h, v.from, v.to, zone, sel]);

  const barAt = (mx: number, my: number): Bar | null => {
    const lane = Math.floor((my - TOP) / LANE_H);
    let best: Bar | null = null;
    for (const b of bars) {
      if (b.lane !== lane) continue;
      const x0 = x(b.from), x1 = Math.max(x0 + 2, x(b.to));
      if (mx >= x0 - 1 && mx <= x1 + 1 && (!best || b.call.duration_ms > best.call.duration_ms)) best = b;
    }
    return best;
  };
  const local = (e: MouseEvent) => { const r = cv.current!.getBoundingClientRect(); return { mx: e.clientX - r.left, my: e.clientY - r.top }; };
  const onKey = (e: KeyboardEvent) => {
    const span = v.to - v.from;
    let f: number | null = null, t = 0;
    if (e.key === 'ArrowLeft') { f = v.from - span * 0.2; t = v.to - span * 0.2; }
    else if (e.key === 'ArrowRight') { f = v.from + span * 0.2; t = v.to + span * 0.2; }
    else if (e.key === 'ArrowUp' || e.key === '+') { f = v.from + span / 4; t = v.to - span / 4; }
    else if (e.key === 'ArrowDown' || e.key === '-') { f = v.from - span / 2; t = v.to + span / 2; }
    if (f === null) return;
    e.preventDefault();
    setView({ from: f, to: t });
  };
  return (
    <div class="cl-chart cl-timeline" ref={box} data-testid="calls-timeline" tabIndex={0} onKeyDown={onKey}
      data-bars={bars.length} data-lanes={lanes}
      title={`Each bar: a call from its start to its end (the ${TIMELINE_MAX} longest loaded calls); click selects its row; ←/→ move, ↑/↓ zoom`}>
      <canvas ref={cv} style={{ width: `${w}px`, height: `${h}px` }}
        onMouseMove={(e) => { const { mx, my } = local(e); const b = barAt(mx, my); setHover(b ? { bar: b, x: mx, y: my } : null); }}
        onMouseLeave={() => setHover(null)}
        onClick={(e) => { const { mx, my } = local(e); const b = barAt(mx, my); if (b) onPick(b.call); }}
        class={hover ? 'cl-chart-pointer' : ''} />
      {hover && (
        <div class="cl-tip" data-testid="timeline-tip" style={{ left: `${Math.min(hover.x + 12, w - 260)}px`, top: `${hover.y + 10}px` }}>
          <div>{fmtFull(hover.bar.call.ts_ms, zone)}</div>
          <div><b>{fmtDuration(hover.bar.call.duration_ms)}</b> {cachedTitle(hover.bar.call).text}</div>
          <div class="muted small">click: select the row</div>
        </div>
      )}
      {view && <button type="button" class="btn btn-small cl-tl-reset" onClick={() => setView(null)} title="Show the whole window">whole window</button>}
      {calls.length === 0 && <div class="cl-chart-empty muted">no loaded calls to draw</div>}
    </div>
  );
}
