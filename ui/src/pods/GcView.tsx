// GcView.tsx -- the GC log view (ui.md §9.3, §10.6) at /dump/gc?namespace=&pod=&from=&to=:
// pauses over time as bars (full collections in red) with heap before/after/capacity lines,
// the totals (count, Σ, max, p95, p99, % paused) and the events table. Dragging across the
// chart zooms the window (it is in the URL like everywhere else). A click on a pause opens
// the calls list of the pod around that pause (`cpod`, the calls' "ns/service/pod", names
// it); `call_from`/`call_to` mark a call's span on the chart ("GC around this call" from
// the call tree, ui.md §10.6).

import { useMemo, useRef, useState } from 'preact/hooks';
import { fetchGc } from '../calls/gcOverlay';
import { resolveWindow, useApp } from '../lib/ctx';
import { useWidth } from '../lib/width';
import { fmtBytes, fmtCount, fmtDuration, shortPod } from '../lib/format';
import { fmtFull, fmtOffset, fmtTs, offsetMin } from '../lib/time';
import { buildUrl, setParams, type Route } from '../lib/url';
import { ErrorBanner, Loading, fmtShort, useFetch } from './common';
import { isFullGc, niceTicks, timeTicks, type GcPause, type GcResp } from './dumpModel';
import { ViewerFrame } from './frame';

const WIDEN: [string, number][] = [['1h', 36e5], ['6h', 216e5], ['24h', 864e5], ['7d', 6048e5], ['30d', 2592e6]];

export function GcView({ route }: { route: Route }) {
  const { zone } = useApp();
  const P = route.params;
  const pod = P.get('pod') ?? '';
  const namespace = P.get('namespace') ?? '';
  const win = resolveWindow(P, zone);
  const f = useFetch((s) => {
    if (!pod) return Promise.resolve(null);
    return fetchGc(namespace, pod, win.from, win.to, s);
  }, [pod, namespace, win.fromText, win.toText]);
  const sub = `${pod ? shortPod(pod) : 'no pod'} · ${fmtTs(win.from, zone)} – ${fmtTs(win.to, zone)}`;

  let body;
  if (!pod) body = <div class="state">Open the GC view from Pods Info: it needs a pod (?pod=…).</div>;
  else if (win.error) body = <div class="banner banner-red">{win.error}</div>;
  else if (f.error) body = <ErrorBanner error={f.error} retry={f.retry} />;
  else if (f.loading || !f.data) body = <Loading label="Reading the GC logs…" />;
  else {
    const cf = Number(P.get('call_from')), ct = Number(P.get('call_to'));
    const mark = Number.isFinite(cf) && Number.isFinite(ct) && ct >= cf && P.get('call_from') ? { from: cf, to: ct } : null;
    body = <GcBody d={f.data} zone={zone} from={win.from} to={win.to} cpod={P.get('cpod')} mark={mark} />;
  }
  return <ViewerFrame route={route} title="GC pauses" docTitle={`GC ${shortPod(pod)}`} sub={sub} testid="gc-view">{body}</ViewerFrame>;
}

function Widen({ to }: { to: number }) {
  return (
    <span class="chips">
      <span class="muted small" title="A window of this length ending at the current end">Window:</span>
      {WIDEN.map(([l, ms]) => (
        <button type="button" key={l} class="chip" onClick={() => setParams({ from: String(to - ms), to: String(to) })}>{l}</button>
      ))}
    </span>
  );
}

interface Span { from: number; to: number }

/** The calls list of the pod around a pause: from 5 s before it to 1 s after it ends. */
export function callsUrlForPause(p: GcPause, cpod: string): string {
  return buildUrl('/calls', { from: String(Math.floor(p.time_ms - 5000)), to: String(Math.ceil(p.time_ms + p.duration_ms + 1000)), pod: cpod, dur: 'all' });
}

function GcBody({ d, zone, from, to, cpod, mark }: { d: GcResp; zone: string; from: number; to: number; cpod: string | null; mark: Span | null }) {
  const t = d.totals;
  const [sortDur, setSortDur] = useState(false);
  const [all, setAll] = useState(false);
  const fulls = d.pauses.filter(isFullGc).length;
  const rows = useMemo(() => {
    const r = [...d.pauses];
    if (sortDur) r.sort((a, b) => b.duration_ms - a.duration_ms);
    return r;
  }, [d.pauses, sortDur]);
  const shown = all ? rows : rows.slice(0, 500);
  const off = fmtOffset(offsetMin(to, zone));
  return (
    <>
      <div class="viewer-head">
        <span class="fig">Pod <b class="mono" title={d.pod}>{shortPod(d.pod)}</b></span>
        <span class="fig muted">{d.files} log file{d.files === 1 ? '' : 's'} read{d.files_unreadable ? `, ${d.files_unreadable} unreadable` : ''}</span>
        <Widen to={to} />
      </div>
      {d.truncated && <div class="banner banner-amber">More than 500 GC log files in this window: only the first were read. Narrow the window.</div>}
      {d.pauses.length === 0 ? (
        <div class="state" data-testid="gc-empty">
          {d.files === 0
            ? <>No GC log of this pod was received between {fmtTs(from, zone)} and {fmtTs(to, zone)} (logs uploaded up to a day later are read too).</>
            : <>No GC pause between {fmtTs(from, zone)} and {fmtTs(to, zone)} in {d.files} log file{d.files === 1 ? '' : 's'}.</>}
        </div>
      ) : (
        <>
          <div class="gc-totals" data-testid="gc-totals">
            <span class="fig"><span class="muted small">pauses</span><b data-testid="gc-count">{fmtCount(t.count)}</b></span>
            <span class="fig"><span class="muted small">Σ paused</span><b>{fmtMs(t.total_ms)}</b></span>
            <span class="fig"><span class="muted small">max</span><b>{fmtMs(t.max_ms)}</b></span>
            <span class="fig"><span class="muted small">p95</span><b>{fmtMs(t.p95_ms)}</b></span>
            <span class="fig"><span class="muted small">p99</span><b>{fmtMs(t.p99_ms)}</b></span>
            <span class="fig"><span class="muted small">% of time paused</span><b>{fmtShare(t.paused_share)}</b></span>
            <span class="fig"><span class="muted small">full GCs</span><b class={fulls ? 'red' : ''}>{fulls}</b></span>
          </div>
          <GcChart pauses={d.pauses} zone={zone} cpod={cpod} mark={mark} />
          <div class="gc-legend">
            <span><i style="background:#4a78d6;height:8px;width:8px" />pause (young/mixed)</span>
            <span><i style="background:#c62828;height:8px;width:8px" />full collection</span>
            <span><i style="background:#e08a00" />heap before</span>
            <span><i style="background:#2e9d4a" />heap after</span>
            <span><i style="background:#9aa3b2" />capacity</span>
            {mark && <span><i style="background:#2e9d4a;opacity:.3;height:8px;width:8px" />the call</span>}
            <span>drag across the chart to zoom{cpod ? '; click a pause for the calls around it' : ''}</span>
          </div>
          <h2>Events</h2>
          <div class="table-scroll">
            <table class="grid" data-testid="gc-events">
              <thead>
                <tr>
                  <th class="sortable" onClick={() => setSortDur(false)}>Time ({off}){!sortDur ? ' ▴' : ''}</th>
                  <th class="num">GC id</th><th>Kind</th><th>Cause</th>
                  <th class="sortable num" onClick={() => setSortDur(true)}>Pause{sortDur ? ' ▾' : ''}</th>
                  <th class="num">Heap before</th><th class="num">after</th><th class="num">capacity</th><th class="num">Uptime</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((p, i) => (
                  <tr key={`${p.time_ms}-${p.gc_id}-${i}`} class={isFullGc(p) ? 'full-gc' : ''} data-testid="gc-event">
                    <td class="nowrap mono">{fmtFull(p.time_ms, zone)}</td>
                    <td class="num">{p.gc_id ?? ''}</td>
                    <td>{p.kind}</td>
                    <td>{p.cause}</td>
                    <td class="num">{fmtMs(p.duration_ms)}</td>
                    <td class="num">{kib(p.heap_before_kib)}</td>
                    <td class="num">{kib(p.heap_after_kib)}</td>
                    <td class="num">{kib(p.heap_capacity_kib)}</td>
                    <td class="num">{p.uptime_s !== null ? fmtDuration(p.uptime_s * 1000) : ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {!all && rows.length > shown.length && (
              <button type="button" class="btn btn-small" onClick={() => setAll(true)}>Show all {rows.length} events</button>
            )}
          </div>
        </>
      )}
    </>
  );
}

function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return '';
  if (ms < 10) return `${ms.toFixed(2)}ms`;
  if (ms < 12000) return `${ms.toFixed(ms < 100 ? 1 : 0)}ms`;
  return fmtDuration(ms);
}

function fmtShare(s: number): string {
  const p = s * 100;
  if (p === 0) return '0%';
  if (p < 0.01) return `${p.toPrecision(2)}%`;
  return `${p.toFixed(p < 1 ? 3 : 2)}%`;
}

function kib(v: number | null): string {
  return v === null ? '' : fmtBytes(v * 1024);
}

const H = 300, ML = 56, MR = 64, MT = 10, MB = 26;

/** Pauses as bars on the left axis (ms), heap lines on the right axis. Bars are binned per
 *  pixel column (the longest pause wins) so a week of GC logs stays a light SVG. */
function GcChart({ pauses, zone, cpod, mark }: { pauses: GcPause[]; zone: string; cpod: string | null; mark: Span | null }) {
  const box = useRef<HTMLDivElement>(null);
  const W = useWidth(box, 900);
  const [hover, setHover] = useState<{ p: GcPause; x: number; y: number } | null>(null);
  const [drag, setDrag] = useState<{ a: number; b: number } | null>(null);
  const pw = Math.max(50, W - ML - MR);
  const ph = H - MT - MB;
  let t0 = pauses[0].time_ms, t1 = pauses[0].time_ms;
  for (const p of pauses) { if (p.time_ms < t0) t0 = p.time_ms; if (p.time_ms > t1) t1 = p.time_ms; }
  if (mark) { t0 = Math.min(t0, mark.from); t1 = Math.max(t1, mark.to); }
  const pad = Math.max((t1 - t0) * 0.02, 1000);
  t0 -= pad; t1 += pad;
  // 10 % headroom keeps the longest bar and the capacity line off the frame
  const maxMs = Math.max(...pauses.map((p) => p.duration_ms), 0.001) * 1.1;
  const maxHeap = Math.max(1, ...pauses.map((p) => Math.max(p.heap_capacity_kib ?? 0, p.heap_before_kib ?? 0))) * 1.1;
  const x = (t: number) => ML + ((t - t0) / (t1 - t0)) * pw;
  const yMs = (v: number) => MT + ph - (v / maxMs) * ph;
  const yHeap = (v: number) => MT + ph - (v / maxHeap) * ph;
  const msTicks = niceTicks(0, maxMs, 5);
  const heapTicksMiB = niceTicks(0, maxHeap / 1024, 5);
  const tTicks = timeTicks(t0, t1, Math.max(2, Math.floor(pw / 110)));

  const bins = useMemo(() => {
    const m = new Map<number, { p: GcPause; full: boolean }>();
    for (const p of pauses) {
      const col = Math.round(x(p.time_ms));
      const cur = m.get(col);
      const full = isFullGc(p);
      if (!cur || p.duration_ms > cur.p.duration_ms) m.set(col, { p, full: full || (cur?.full ?? false) });
      else if (full) cur.full = true;
    }
    return [...m.entries()];
  }, [pauses, W]);
  const line = (get: (p: GcPause) => number | null) => {
    let d = '';
    for (const p of pauses) {
      const v = get(p);
      if (v === null) continue;
      d += `${d ? 'L' : 'M'}${x(p.time_ms).toFixed(1)},${yHeap(v).toFixed(1)}`;
    }
    return d;
  };
  const tFromX = (px: number) => t0 + ((Math.min(Math.max(px, ML), ML + pw) - ML) / pw) * (t1 - t0);
  const localX = (e: MouseEvent) => e.clientX - (e.currentTarget as SVGElement).getBoundingClientRect().left;
  const onMove = (e: MouseEvent) => {
    const lx = localX(e);
    if (drag) { setDrag({ ...drag, b: lx }); return; }
    let best: GcPause | null = null;
    let bd = 7;
    for (const [col, b] of bins) { const dd = Math.abs(col - lx); if (dd < bd) { bd = dd; best = b.p; } }
    setHover(best ? { p: best, x: e.clientX, y: e.clientY } : null);
  };
  const onUp = () => {
    if (drag && Math.abs(drag.b - drag.a) <= 5 && hover && cpod) {
      setDrag(null);
      window.open(callsUrlForPause(hover.p, cpod), '_blank');
      return;
    }
    if (drag && Math.abs(drag.b - drag.a) > 5) {
      const a = tFromX(Math.min(drag.a, drag.b)), b = tFromX(Math.max(drag.a, drag.b));
      setParams({ from: String(Math.floor(a)), to: String(Math.ceil(b)) });
    }
    setDrag(null);
  };
  return (
    <div ref={box}>
      <svg class="gc-chart" data-testid="gc-chart" width={W} height={H} viewBox={`0 0 ${W} ${H}`}
        onMouseMove={onMove} onMouseLeave={() => { setHover(null); setDrag(null); }}
        onMouseDown={(e) => { e.preventDefault(); const lx = localX(e); setDrag({ a: lx, b: lx }); }} onMouseUp={onUp}>
        <g class="axis">
          {msTicks.map((v) => (
            <g key={'m' + v}>
              <line class="grid-line" x1={ML} x2={ML + pw} y1={yMs(v)} y2={yMs(v)} />
              <text x={ML - 4} y={yMs(v) + 3} text-anchor="end">{fmtMs(v)}</text>
            </g>
          ))}
          {heapTicksMiB.map((v) => (
            <text key={'h' + v} x={ML + pw + 4} y={yHeap(v * 1024) + 3}>{v >= 1024 ? `${(v / 1024).toFixed(1)} GiB` : `${v} MiB`}</text>
          ))}
          {tTicks.map((v) => (
            <g key={'t' + v}>
              <line x1={x(v)} x2={x(v)} y1={MT + ph} y2={MT + ph + 4} />
              <text x={x(v)} y={H - 8} text-anchor="middle">{fmtShort(v, zone, t1)}</text>
            </g>
          ))}
          <line x1={ML} x2={ML + pw} y1={MT + ph} y2={MT + ph} />
        </g>
        {mark && <rect x={x(mark.from)} y={MT} width={Math.max(2, x(mark.to) - x(mark.from))} height={ph} fill="#2e9d4a" opacity="0.18"
          data-testid="gc-call-mark"><title>the call</title></rect>}
        <path d={line((p) => p.heap_capacity_kib)} fill="none" stroke="#9aa3b2" stroke-width="1.2" stroke-dasharray="4 3" />
        <path d={line((p) => p.heap_before_kib)} fill="none" stroke="#e08a00" stroke-width="1" opacity="0.8" />
        <path d={line((p) => p.heap_after_kib)} fill="none" stroke="#2e9d4a" stroke-width="1.2" />
        {bins.map(([col, b]) => (
          <rect key={col} x={col - 1} y={yMs(b.p.duration_ms)} width={2} height={Math.max(1, MT + ph - yMs(b.p.duration_ms))}
            fill={b.full ? '#c62828' : '#4a78d6'} opacity={hover?.p === b.p ? 1 : 0.8} data-testid="gc-bar" data-time={b.p.time_ms}
            style={cpod ? { cursor: 'pointer' } : undefined} />
        ))}
        {bins.filter(([, b]) => b.full).map(([col]) => (
          <path key={'f' + col} d={`M${col - 4},${MT} L${col + 4},${MT} L${col},${MT + 7} Z`} fill="#c62828" data-testid="gc-full-marker" />
        ))}
        {drag && <rect x={Math.min(drag.a, drag.b)} y={MT} width={Math.abs(drag.b - drag.a)} height={ph} fill="#2962d9" opacity="0.12" />}
      </svg>
      {hover && !drag && (
        <div class="gc-tip" style={{ left: `${hover.x + 12}px`, top: `${hover.y + 12}px` }}>
          {`${fmtFull(hover.p.time_ms, zone)}\nGC(${hover.p.gc_id ?? '?'}) ${hover.p.kind} (${hover.p.cause})\npause ${fmtMs(hover.p.duration_ms)}` +
            `\nheap ${kib(hover.p.heap_before_kib)} → ${kib(hover.p.heap_after_kib)} of ${kib(hover.p.heap_capacity_kib)}`}
        </div>
      )}
    </div>
  );
}
