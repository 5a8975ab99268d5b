// busy.test.ts -- union of intervals, and its speed on 100 000 rows.
import { describe, expect, it } from 'vitest';
import { busyMs } from './busy';

const r = (ts_ms: number, duration_ms: number) => ({ ts_ms, duration_ms });

describe('busyMs', () => {
  it('unions overlapping, nested, touching and disjoint intervals', () => {
    expect(busyMs([])).toBe(0);
    expect(busyMs([r(0, 10)])).toBe(10);
    expect(busyMs([r(0, 10), r(5, 10)])).toBe(15);
    expect(busyMs([r(0, 100), r(10, 5)])).toBe(100);
    expect(busyMs([r(0, 10), r(10, 10)])).toBe(20);
    expect(busyMs([r(0, 10), r(20, 10)])).toBe(20);
    expect(busyMs([r(20, 10), r(0, 0), r(0, 10)])).toBe(20);
  });
  it('100 000 rows in well under 100 ms', () => {
    const rows = Array.from({ length: 100000 }, (_, i) => r(1.7e12 + ((i * 7919) % 100000) * 10, (i % 97) * 3));
    const t0 = performance.now();
    const v = busyMs(rows);
    const dt = performance.now() - t0;
    expect(v).toBeGreaterThan(0);
    expect(dt).toBeLessThan(100);
  });
});
