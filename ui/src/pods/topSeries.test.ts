import { describe, expect, it } from 'vitest';
import { heat, hotThreads, type TopSnap } from './topSeries';

const row = (pid: number, time_s: number, command = `t${pid}`) => ({ pid, user: 'u', pr: '20', ni: 0, virt_kib: 0, res_kib: 0,
  shr_kib: 0, state: 'S', cpu_pct: 0, mem_pct: 0, time_s, command });
const snap = (id: string, t: number, rows: ReturnType<typeof row>[], capture: number | null = null): TopSnap => ({ id, time_ms: t, capture_ms: capture, rows });

describe('hot threads across top dumps (§9.2)', () => {
  it('CPU seconds per minute from TIME+ differences, busiest first', () => {
    const h = hotThreads([
      snap('c', 180000, [row(1, 100), row(2, 10), row(3, 5)]),
      snap('a', 0, [row(1, 10), row(2, 8)]),
      snap('b', 60000, [row(1, 40), row(2, 9), row(3, 1)]),
    ]);
    expect(h.intervals.map((i) => [i.from, i.to])).toEqual([[0, 60000], [60000, 180000]]);
    expect(h.threads.map((t) => t.tid)).toEqual([1, 3, 2]);
    expect(h.threads[0].perMin).toEqual([30, 30]);      // 30 s in 1 min, 60 s in 2 min
    expect(h.threads[0].total).toBe(90);
    expect(h.threads[1].perMin).toEqual([null, 2]);     // thread 3 appears in b
    expect(h.threads[2].perMin).toEqual([1, 0.5]);
  });
  it('a reused thread id (TIME+ went down) has no figure', () => {
    const h = hotThreads([snap('a', 0, [row(7, 50)]), snap('b', 60000, [row(7, 2)])]);
    expect(h.threads).toEqual([]);
    expect(h.threadsSeen).toBe(0);
  });
  it('uses the captures when they differ, and skips zero-length intervals', () => {
    const h = hotThreads([snap('a', 0, [row(1, 0)], 1000), snap('b', 60000, [row(1, 60)], 121000), snap('c', 60000, [row(1, 61)])]);
    expect(h.intervals.length).toBe(1);
    expect(h.threads[0].perMin).toEqual([30]);
  });
  it('colours', () => {
    expect(heat(null)).toBe('#f3f4f6');
    expect(heat(0)).toBe('#ffffff');
    expect(heat(60)).toBe('hsl(4, 80%, 40%)');
  });
});
