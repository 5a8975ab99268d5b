import { describe, expect, it } from 'vitest';
import type { Call } from '../lib/api';
import { layoutBars, longest, selectionSpan } from './timeline';

const call = (id: string, ts: number, dur: number, cpu = 0): Call => ({ id, ts_ms: ts, duration_ms: dur, cpu_time: cpu, transactions: 0,
  calls: 0, suspend_ms: 0, queue_wait_ms: 0 } as unknown as Call);

describe('classic timeline (§3.9)', () => {
  it('draws the longest calls, ties by CPU', () => {
    const cs = [call('a', 0, 10), call('b', 0, 30), call('c', 0, 30, 5), call('d', 0, 20)];
    expect(longest(cs, 2).map((c) => c.id)).toEqual(['c', 'b']);
    expect(longest(cs, 10)).toBe(cs);
  });
  it('stacks overlapping bars, reuses free lanes', () => {
    const { bars, lanes } = layoutBars([call('a', 0, 100), call('b', 50, 100), call('c', 120, 10), call('d', 160, 5)]);
    const lane = Object.fromEntries(bars.map((b) => [b.call.id, b.lane]));
    expect(lane).toEqual({ a: 0, b: 1, c: 0, d: 0 });
    expect(lanes).toBe(2);
  });
  it('piles the rest on the last lane when dense', () => {
    const cs = Array.from({ length: 10 }, (_, i) => call(`x${i}`, 0, 100));
    const { lanes, bars } = layoutBars(cs, 0, 3);
    expect(lanes).toBe(3);
    expect(bars.filter((b) => b.lane === 2).length).toBe(8);
  });
  it('a selection zooms to its span', () => {
    expect(selectionSpan([])).toBeNull();
    expect(selectionSpan([call('a', 1000, 2000), call('b', 5000, 1000)])).toEqual({ from: 750, to: 6250 });
  });
});
