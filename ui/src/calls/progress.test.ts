// progress.test.ts -- the "Searching…" text of long queries.
import { describe, expect, it } from 'vitest';
import type { StreamProgress } from '../lib/stream';
import { progressText, slowest } from './progress';

const p = (files_done: number, files_total: number, windows_done: number, windows_total: number, scanned: number): StreamProgress =>
  ({ files_done, files_total, windows_done, windows_total, scanned, elapsed_ms: 0 });

describe('progressText', () => {
  it('names what was read and how many calls were examined', () => {
    expect(progressText(null)).toBe('Searching…');
    expect(progressText(p(0, 0, 0, 0, 0))).toBe('Searching…');
    expect(progressText(p(12, 40, 0, 0, 3400000))).toBe('Searching… 12 / 40 cold files, 3400 K calls examined');
    expect(progressText(p(0, 0, 3, 8, 1234))).toBe('Searching… 3 / 8 hot windows, 1234 calls examined');
    expect(progressText(p(1, 2, 3, 4, 0))).toBe('Searching… 1 / 2 cold files, 3 / 4 hot windows, 0 calls examined');
  });
});

describe('slowest', () => {
  it('picks the request furthest from done', () => {
    const a = p(30, 40, 0, 0, 10);
    const b = p(5, 40, 1, 2, 10);
    expect(slowest([a, b])).toBe(b);
    expect(slowest([null, a, undefined])).toBe(a);
    expect(slowest([null, null])).toBeNull();
  });
});
