// timeline.ts -- the classic timeline above the calls list (ui.md §3.9), pure TS: the
// calls drawn (the 1 000 longest, ties by CPU, transactions, calls, suspension, queue) and
// the lane of each bar (overlapping bars stacked: a bar takes the first lane free at its
// start), and the span a selection zooms to.

import type { Call } from '../lib/api';

export const TIMELINE_MAX = 1000;

export function longest(calls: Call[], max = TIMELINE_MAX): Call[] {
  if (calls.length <= max) return calls;
  return [...calls].sort((a, b) => b.duration_ms - a.duration_ms || b.cpu_time - a.cpu_time || b.transactions - a.transactions
    || b.calls - a.calls || b.suspend_ms - a.suspend_ms || b.queue_wait_ms - a.queue_wait_ms || (a.id < b.id ? -1 : 1)).slice(0, max);
}

export interface Bar { call: Call; lane: number; from: number; to: number }

/** Lanes by start time: a bar goes to the first lane whose last bar ended before it
 *  starts (with `gapMs` of air), else a new lane; at most `maxLanes` (the rest pile on
 *  the last lane, a dense cluster). */
export function layoutBars(calls: Call[], gapMs = 0, maxLanes = 40): { bars: Bar[]; lanes: number } {
  const sorted = [...calls].sort((a, b) => a.ts_ms - b.ts_ms || b.duration_ms - a.duration_ms);
  const ends: number[] = [];
  const bars: Bar[] = [];
  for (const c of sorted) {
    const from = c.ts_ms, to = c.ts_ms + Math.max(0, c.duration_ms);
    let lane = ends.findIndex((e) => e + gapMs <= from);
    if (lane < 0) lane = ends.length < maxLanes ? ends.length : maxLanes - 1;
    ends[lane] = Math.max(ends[lane] ?? -Infinity, to);
    bars.push({ call: c, lane, from, to });
  }
  return { bars, lanes: ends.length };
}

/** The span of the selected calls, with 5 % of air either side (null when none). */
export function selectionSpan(calls: Call[]): { from: number; to: number } | null {
  if (!calls.length) return null;
  let f = Infinity, t = -Infinity;
  for (const c of calls) { f = Math.min(f, c.ts_ms); t = Math.max(t, c.ts_ms + c.duration_ms); }
  const pad = Math.max(50, (t - f) * 0.05);
  return { from: f - pad, to: t + pad };
}
