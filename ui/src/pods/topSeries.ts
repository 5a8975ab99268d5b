// topSeries.ts -- hot threads across consecutive top dumps of a pod (ui.md §9.2, issue 19
// item 6), pure TS: the CPU seconds each thread used per minute between two snapshots,
// from the difference of its TIME+ (cumulative CPU time) over the time between them.
// A thread id missing from either snapshot, or whose TIME+ went down (the id was reused by
// a new thread), has no figure for that interval.

import type { TopRow } from './dumpModel';

export interface TopSnap { id: string; time_ms: number; capture_ms: number | null; rows: TopRow[] }

export interface Interval {
  from: number;         // ms (the earlier snapshot)
  to: number;           // ms (the later one)
  snap: TopSnap;        // the later snapshot (its minute's thread dump names the threads)
}

export interface HotThread {
  tid: number;
  name: string;         // top's COMMAND (a thread name, cut at 15 characters by top)
  perMin: (number | null)[];  // CPU s per minute in each interval; null = no figure
  total: number;        // CPU s over all intervals
}

export interface HotSeries { intervals: Interval[]; threads: HotThread[]; threadsSeen: number }

/** The time between two snapshots: their captures when both have one and they differ,
 *  else their directory times. */
function span(a: TopSnap, b: TopSnap): [number, number] {
  if (a.capture_ms !== null && b.capture_ms !== null && b.capture_ms > a.capture_ms) return [a.capture_ms, b.capture_ms];
  return [a.time_ms, b.time_ms];
}

/** The `top` threads with the most CPU time over the series, each with its per-minute CPU. */
export function hotThreads(snaps: TopSnap[], top = 20): HotSeries {
  const s = [...snaps].sort((x, y) => x.time_ms - y.time_ms);
  const intervals: Interval[] = [];
  const byTid = new Map<number, HotThread>();
  for (let i = 1; i < s.length; i++) {
    const [from, to] = span(s[i - 1], s[i]);
    if (to <= from) continue;
    const k = intervals.length;
    intervals.push({ from, to, snap: s[i] });
    const before = new Map<number, TopRow>();
    for (const r of s[i - 1].rows) if (!before.has(r.pid)) before.set(r.pid, r);
    const minutes = (to - from) / 60000;
    for (const r of s[i].rows) {
      const b = before.get(r.pid);
      if (!b) continue;
      const d = r.time_s - b.time_s;
      if (d < 0) continue;
      let t = byTid.get(r.pid);
      if (!t) { t = { tid: r.pid, name: r.command, perMin: [], total: 0 }; byTid.set(r.pid, t); }
      t.name = r.command;
      t.perMin[k] = d / minutes;
      t.total += d;
    }
  }
  const n = intervals.length;
  const threads = [...byTid.values()]
    .map((t) => ({ ...t, perMin: Array.from({ length: n }, (_, k) => (t.perMin[k] === undefined ? null : t.perMin[k])) }))
    .sort((a, b) => b.total - a.total || a.tid - b.tid);
  return { intervals, threads: threads.slice(0, top), threadsSeen: threads.length };
}

/** Cell colour: white at 0, dark red at a whole core (60 CPU s per minute) and beyond. */
export function heat(perMin: number | null): string {
  if (perMin === null) return '#f3f4f6';
  const t = Math.min(1, Math.max(0, perMin / 60));
  if (t === 0) return '#ffffff';
  return `hsl(4, 80%, ${Math.round(96 - 56 * Math.sqrt(t))}%)`;
}
