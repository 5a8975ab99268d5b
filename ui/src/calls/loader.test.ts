// loader.test.ts -- paging, empty rounds, cap and expired cursors of CallsLoader.
import { describe, expect, it } from 'vitest';
import { ApiError, type Call, type CallsPage } from '../lib/api';
import { CallsLoader, MAX_EMPTY_ROUNDS, type Fetcher } from './loader';

const call = (i: number) => ({ id: `c${i}`, ts_ms: i, duration_ms: 1 } as Call);
const page = (calls: Call[], next: string | null): CallsPage =>
  ({ calls, next_cursor: next, scanned: calls.length, cold_files: 0, cold_files_skipped: 0, partial: false, partial_reasons: [] });

describe('CallsLoader', () => {
  it('pages with the cursor and stops at the end', async () => {
    const seen: Record<string, string>[] = [];
    const f: Fetcher = async (p) => { seen.push(p); return p.cursor ? page([call(2)], null) : page([call(1)], 'k'); };
    const l = new CallsLoader({ from: '1' }, () => {}, f);
    await l.more();
    expect(l.rows.length).toBe(1);
    await l.more();
    expect(l.rows.map((c) => c.id)).toEqual(['c1', 'c2']);
    expect(l.done).toBe(true);
    expect(seen[1].cursor).toBe('k');
    expect(seen[0].limit).toBe('1000');
  });
  it('follows empty pages, bounded', async () => {
    let n = 0;
    const f: Fetcher = async () => { n++; return page([], 'k'); };
    const l = new CallsLoader({}, () => {}, f);
    await l.more();
    expect(n).toBe(MAX_EMPTY_ROUNDS);
    expect(l.stalled).toBe(true);
    expect(l.done).toBe(false);
  });
  it('stops at the cap and asks only for what fits', async () => {
    const limits: string[] = [];
    let i = 0;
    const f: Fetcher = async (p) => { limits.push(p.limit); return page(Array.from({ length: +p.limit }, () => call(i++)), 'k'); };
    const l = new CallsLoader({}, () => {}, f, 1500);
    await l.more();
    await l.more();
    await l.more();
    expect(limits).toEqual(['1000', '500']);
    expect(l.capped).toBe(true);
  });
  it('an expired cursor restarts from the first page on retry', async () => {
    let fail = true;
    const f: Fetcher = async (p) => {
      if (p.cursor && fail) { fail = false; throw new ApiError(410, 'cursor_expired', 'expired'); }
      return p.cursor ? page([call(9)], null) : page([call(1)], 'k');
    };
    const l = new CallsLoader({}, () => {}, f);
    await l.more();
    await l.more();
    expect(l.expired).toBe(true);
    expect(l.rows.length).toBe(1);
    l.retry();
    await new Promise((r) => setTimeout(r, 0));
    expect(l.rows.map((c) => c.id)).toEqual(['c1']);
    expect(l.expired).toBe(false);
  });
});
