import { describe, expect, it } from 'vitest';
import { fmtWith, unitKind, TIME } from './units';

describe('tree units (§1.4, §9.4, §10.7)', () => {
  it('time by default, pprof units by name', () => {
    expect(fmtWith(TIME, 1500)).toBe('1500ms');
    expect(unitKind('nanoseconds')).toBe('ns');
    expect(unitKind('bytes')).toBe('bytes');
    expect(unitKind('count')).toBe('count');
    expect(unitKind('samples')).toBe('samples');
    expect(fmtWith({ ...TIME, kind: 'ns' }, 2e9)).toBe('2000ms');
  });
  it('samples as counts, shares and time', () => {
    const u = { kind: 'samples' as const, show: 'count' as const, msPerSample: 1000, total: 40 };
    expect(fmtWith(u, 12)).toBe('12 smp');
    expect(fmtWith({ ...u, show: 'pct' }, 10)).toBe('25.0 %');
    expect(fmtWith({ ...u, show: 'pct' }, 1)).toBe('2.50 %');
    expect(fmtWith({ ...u, show: 'time', msPerSample: 60000 }, 3)).toBe('180s');
  });
});
