import { describe, expect, it } from 'vitest';
import { gcPods, pauseAt, pausesIn } from './gcOverlay';

const pause = (t: number, d: number) => ({ time_ms: t, gc_id: 1, kind: 'Pause Young', cause: 'x', duration_ms: d,
  heap_before_kib: null, heap_after_kib: null, heap_capacity_kib: null, uptime_s: null });

describe('GC overlay (§10.6)', () => {
  it('asks for named pods only, up to four', () => {
    expect(gcPods(['ns/svc/pod-1_17'])).toEqual([{ namespace: 'ns', service: 'svc', pod: 'pod-1_17' }]);
    expect(gcPods([])).toBeNull();
    expect(gcPods(['a/b/1', 'a/b/2', 'a/b/3', 'a/b/4', 'a/b/5'])).toBeNull();
    expect(gcPods(['a/b'])).toBeNull();
  });
  it('keeps the pauses overlapping the window, oldest first, with their pod', () => {
    const ps = pausesIn([{ pod: 'p2', pauses: [pause(500, 10), pause(50, 100)] }, { pod: 'p1', pauses: [pause(90, 5), pause(2000, 1)] }], 100, 1000);
    expect(ps.map((p) => [p.pod, p.time_ms])).toEqual([['p2', 50], ['p2', 500]]);
  });
  it('finds the longest pause under a time', () => {
    const ps = pausesIn([{ pod: 'p', pauses: [pause(100, 50), pause(120, 200), pause(1000, 1)] }], 0, 2000);
    expect(pauseAt(ps, 130, 0)?.duration_ms).toBe(200);
    expect(pauseAt(ps, 995, 10)?.time_ms).toBe(1000);
    expect(pauseAt(ps, 600, 10)).toBeNull();
  });
});
