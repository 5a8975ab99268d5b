// dumpModel.ts -- shapes of the parsed dumps (docs/API.md "Diagnostic files") and the pure
// logic of the viewers (ui.md §9): thread states and JVM-thread detection, identical-stack
// groups, the monitor/lock graph with deadlock cycles, the td↔top join by native thread id,
// GC chart scales and percentiles, pprof value formats. Tested in dumpModel.test.ts.

import { fmtBytes, fmtCount, fmtDuration } from '../lib/format';

export interface TdLock { kind?: string; addr: string; class: string; frame: number | null }
export interface TdThread {
  name: string; seq: number | null; daemon: boolean; priority: number | null; os_priority: number | null;
  cpu_ms: number | null; elapsed_s: number | null; tid: string | null; nid: number | null;
  state: string; state_detail: string; header_state: string; frames: string[];
  locks_held: TdLock[]; locks_waited: TdLock[];
}
export interface ThreadsResp {
  id: string; type: string; time_ms: number | null; vm: string; smr_length: number | null; java_threads: number | null;
  jni_global_refs: number | null; jni_weak_refs: number | null; deadlocks: number; states: Record<string, number>;
  threads: TdThread[];
}
export interface TopRow {
  pid: number; user: string; pr: string; ni: number; virt_kib: number; res_kib: number; shr_kib: number; state: string;
  cpu_pct: number; mem_pct: number; time_s: number; command: string;
}
export interface TopResp {
  id: string; pid: number | null; clock: string; uptime: string; users: number | null; load: number[];
  threads: Record<string, number>; cpu: Record<string, number>; memory_kib: Record<string, number>; rows: TopRow[];
}
export interface GcPause {
  time_ms: number; gc_id: number | null; kind: string; cause: string; duration_ms: number;
  heap_before_kib: number | null; heap_after_kib: number | null; heap_capacity_kib: number | null; uptime_s: number | null;
}
export interface GcResp {
  pod: string; from: number; to: number; files: number; files_unreadable: number; truncated: boolean;
  totals: { count: number; total_ms: number; max_ms: number; p95_ms: number; p99_ms: number; paused_share: number };
  pauses: GcPause[];
}
export interface ProfileResp {
  id: string; sample_types: { type: string; unit: string }[]; default_sample_type: number | null;
  period_type: { type: string; unit: string } | null; period: number; time_ms: number | null; duration_ms: number;
  samples: number; locations: number; functions: number; mappings: number; sample_type: number;
  top: { name: string; file: string; flat: number; cum: number }[];
}

// ---- thread dump ------------------------------------------------------------------------------

/** The key of the API's `states` map: `WAITING (parking)`, `RUNNABLE`, or '' for VM threads. */
export function fullState(t: TdThread): string {
  if (!t.state) return '';
  return t.state_detail ? `${t.state} (${t.state_detail})` : t.state;
}

export function stateLabel(key: string): string {
  return key === '' ? 'VM (non-Java)' : key;
}

/** CSS class suffix for a state badge. */
export function stateClass(t: TdThread): string {
  return t.state ? t.state.replace(/[^A-Z_]/g, '') : 'VM';
}

const SYSTEM_NAMES = [
  /^Reference Handler$/, /^Finalizer$/, /^Signal Dispatcher$/, /^Service Thread$/, /^Monitor Deflation Thread$/,
  /^C[12] CompilerThread\d*/, /^Sweeper thread$/, /^Common-Cleaner$/, /^Notification Thread$/, /^Attach Listener$/,
  /^VM Thread$/, /^VM Periodic Task Thread$/, /^GC Thread#?\d*/, /^G1 /, /^ZGC|^Z[A-Z][a-z]+ /, /^Shenandoah/,
  /^Gang worker/, /^Concurrent Mark/, /^CMS /, /^process reaper$/, /^JFR /, /^Surrogate Locker Thread/,
  /^Java2D Disposer$/, /^DestroyJavaVM$/, /^Parallel GC Threads/, /^Compiler Thread/,
];

/** JVM housekeeping threads: the non-Java ones (no Java state) and the well-known names. */
export function isSystemThread(t: TdThread): boolean {
  if (!t.state) return true;
  return SYSTEM_NAMES.some((r) => r.test(t.name));
}

export interface StackGroup { key: string; frames: string[]; threads: number[] }

/** Threads with byte-identical stacks, largest group first ("37 threads here"). */
export function groupStacks(threads: TdThread[], idx: number[]): StackGroup[] {
  const m = new Map<string, StackGroup>();
  for (const i of idx) {
    const t = threads[i];
    const key = t.frames.join('\n');
    const g = m.get(key);
    if (g) g.threads.push(i);
    else m.set(key, { key, frames: t.frames, threads: [i] });
  }
  return [...m.values()].sort((a, b) => b.threads.length - a.threads.length || b.frames.length - a.frames.length);
}

export interface Monitor {
  addr: string;
  cls: string;
  holders: number[];
  waiters: { t: number; kind: string }[];
}

/** Held entries that are really released: Object.wait() prints both "waiting on" and
 *  "locked" for the same monitor, but the thread gave it up while waiting. */
export function effectiveHeld(t: TdThread): TdLock[] {
  const waitOn = new Set(t.locks_waited.filter((l) => l.kind === 'waiting_on').map((l) => l.addr));
  return t.locks_held.filter((l) => !waitOn.has(l.addr));
}

/** Every monitor/synchronizer mentioned in the dump, with who holds it and who waits. */
export function buildMonitors(threads: TdThread[]): Monitor[] {
  const m = new Map<string, Monitor>();
  const get = (l: TdLock) => {
    let x = m.get(l.addr);
    if (!x) m.set(l.addr, (x = { addr: l.addr, cls: l.class, holders: [], waiters: [] }));
    return x;
  };
  threads.forEach((t, i) => {
    for (const l of effectiveHeld(t)) { const x = get(l); if (!x.holders.includes(i)) x.holders.push(i); }
    for (const l of t.locks_waited) get(l).waiters.push({ t: i, kind: l.kind ?? '' });
  });
  return [...m.values()].sort((a, b) =>
    (b.waiters.length && b.holders.length ? 1 : 0) - (a.waiters.length && a.holders.length ? 1 : 0)
    || b.waiters.length - a.waiters.length || a.addr.localeCompare(b.addr));
}

/** Threads in a wait-for cycle: T waits to lock (or parks on) M, M is held by U, and so on
 *  back to T. These are the deadlocked threads to highlight. */
export function deadlockedThreads(threads: TdThread[], monitors: Monitor[]): Set<number> {
  const holders = new Map<string, number[]>();
  for (const mo of monitors) holders.set(mo.addr, mo.holders);
  const edges = threads.map((t) => {
    const out: number[] = [];
    for (const l of t.locks_waited) {
      if (l.kind !== 'waiting_to_lock' && l.kind !== 'parking') continue;
      for (const h of holders.get(l.addr) ?? []) if (!out.includes(h)) out.push(h);
    }
    return out;
  });
  const inCycle = new Set<number>();
  // Tarjan's strongly connected components: a component of two or more (or a self-loop) is a cycle
  let index = 0;
  const idx = new Array<number>(threads.length).fill(-1);
  const low = new Array<number>(threads.length).fill(0);
  const onStack = new Array<boolean>(threads.length).fill(false);
  const stack: number[] = [];
  const strong = (v: number) => {
    idx[v] = low[v] = index++;
    stack.push(v);
    onStack[v] = true;
    for (const w of edges[v]) {
      if (idx[w] < 0) { strong(w); low[v] = Math.min(low[v], low[w]); }
      else if (onStack[w]) low[v] = Math.min(low[v], idx[w]);
    }
    if (low[v] === idx[v]) {
      const comp: number[] = [];
      let w: number;
      do { w = stack.pop()!; onStack[w] = false; comp.push(w); } while (w !== v);
      if (comp.length > 1 || edges[v].includes(v)) for (const c of comp) inCycle.add(c);
    }
  };
  for (let v = 0; v < threads.length; v++) if (idx[v] < 0 && edges[v].length) strong(v);
  return inCycle;
}

export function lockVerb(kind: string): string {
  switch (kind) {
    case 'waiting_on': return 'waiting on';
    case 'waiting_to_lock': return 'waiting to lock';
    case 'parking': return 'parking to wait for';
    default: return 'locked';
  }
}

/** The top row of each native thread id. */
export function topByNid(rows: TopRow[]): Map<number, TopRow> {
  const m = new Map<number, TopRow>();
  for (const r of rows) if (!m.has(r.pid)) m.set(r.pid, r);
  return m;
}

/** The file of `cands` closest in time to `t` and within the same minute (±60 s). */
export function closestInMinute<T extends { time_ms: number; capture_ms: number | null }>(cands: T[], t: number, capture: number | null): T | null {
  let best: T | null = null;
  let bestD = Infinity;
  for (const c of cands) {
    const d = capture !== null && c.capture_ms !== null ? Math.abs(c.capture_ms - capture) : Math.abs(c.time_ms - t);
    if (d < 60000 && d < bestD) { best = c; bestD = d; }
  }
  return best;
}

// ---- GC ---------------------------------------------------------------------------------------

export function isFullGc(p: GcPause): boolean {
  return /full/i.test(p.kind) || /full/i.test(p.cause);
}

/** "Nice" axis ticks between lo and hi: about `n` of them on 1/2/5 steps. */
export function niceTicks(lo: number, hi: number, n = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((k) => k * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Time ticks: round steps of seconds/minutes/hours/days that give about `n` labels. */
export function timeTicks(lo: number, hi: number, n = 6): number[] {
  const steps = [1e3, 5e3, 1e4, 3e4, 6e4, 3e5, 6e5, 18e5, 36e5, 108e5, 216e5, 432e5, 864e5, 6048e5];
  const raw = (hi - lo) / n;
  const step = steps.find((s) => s >= raw) ?? steps[steps.length - 1];
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) out.push(v);
  return out;
}

// ---- pprof ------------------------------------------------------------------------------------

/** A pprof value in its unit: bytes, nanoseconds (shown as durations), counts. */
export function fmtProfileValue(v: number, unit: string): string {
  if (unit === 'bytes') return fmtBytes(v);
  if (unit === 'nanoseconds') return v === 0 ? '0' : v < 1e6 ? `${(v / 1e6).toFixed(2)}ms` : fmtDuration(v / 1e6);
  if (unit === 'microseconds') return fmtDuration(v / 1e3);
  if (unit === 'milliseconds') return fmtDuration(v);
  return fmtCount(v);
}

export function pct(v: number, total: number): string {
  if (!total) return '';
  const p = (100 * v) / total;
  return p >= 10 ? p.toFixed(1) + '%' : p.toFixed(2) + '%';
}

/** TIME+ as top prints it: `minutes:seconds.hundredths`. */
export function fmtTopTime(s: number): string {
  if (!Number.isFinite(s)) return '';
  const m = Math.floor(s / 60);
  const rest = (s - m * 60).toFixed(2).padStart(5, '0');
  return `${m}:${rest}`;
}
