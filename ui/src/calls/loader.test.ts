// loader.test.ts -- paging, empty rounds, cap and expired cursors of CallsLoader; the
// streamed first page (progress, provisional rows, result), cancel and late answers.
import { describe, expect, it } from 'vitest';
import { ApiError, isAbort, type Call, type CallsPage } from '../lib/api';
import type { StreamOptions, StreamProgress } from '../lib/stream';
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

/** A fetcher whose answers the test gives by hand; it rejects like fetch on abort. */
function manual() {
  const calls: { params: Record<string, string>; stream?: StreamOptions; resolve: (p: CallsPage) => void;
    reject: (e: unknown) => void; signal: AbortSignal }[] = [];
  const f: Fetcher = (params, signal, stream) => new Promise<CallsPage>((resolve, reject) => {
    signal.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
    calls.push({ params, stream, resolve, reject, signal });
  });
  return { f, calls };
}

const prog = (files_done: number): StreamProgress =>
  ({ files_done, files_total: 40, windows_done: 0, windows_total: 0, scanned: files_done * 1000, elapsed_ms: 0 });
const tick = () => new Promise((r) => setTimeout(r, 0));

describe('CallsLoader streamed first page', () => {
  it('goes progress -> provisional rows -> result, and streams only the first page', async () => {
    const m = manual();
    let changes = 0;
    const l = new CallsLoader({}, () => changes++, m.f);
    const done = l.more();
    expect(l.loading).toBe(true);
    const c0 = m.calls[0];
    expect(c0.stream).toBeDefined();
    c0.stream!.onProgress!(prog(3));
    expect(l.progress?.files_done).toBe(3);
    expect(l.provisional).toBe(false);
    c0.stream!.onPartial!([call(5), call(4)]);
    expect(l.provisional).toBe(true);
    expect(l.snapshot!.map((c) => c.id)).toEqual(['c5', 'c4']);
    expect(l.rows.length).toBe(0);
    c0.stream!.onPartial!([call(7)]);                   // a snapshot replaces the previous one
    expect(l.snapshot!.map((c) => c.id)).toEqual(['c7']);
    const before = changes;
    c0.resolve(page([call(7), call(6)], 'k'));
    await done;
    expect(changes).toBeGreaterThan(before);
    expect(l.rows.map((c) => c.id)).toEqual(['c7', 'c6']);
    expect(l.provisional).toBe(false);
    expect(l.snapshot).toBeNull();
    expect(l.progress).toBeNull();
    expect(l.loading).toBe(false);
    const next = l.more();
    expect(m.calls[1].params.cursor).toBe('k');
    expect(m.calls[1].stream).toBeUndefined();
    m.calls[1].resolve(page([call(1)], null));
    await next;
    expect(l.rows.length).toBe(3);
  });

  it('cancel keeps the provisional rows, stops the request and ignores what comes later', async () => {
    const m = manual();
    const l = new CallsLoader({}, () => {}, m.f);
    const done = l.more();
    const c0 = m.calls[0];
    c0.stream!.onProgress!(prog(1));
    c0.stream!.onPartial!([call(2), call(1)]);
    expect(l.cancel()).toBe(true);
    expect(c0.signal.aborted).toBe(true);
    expect(l.cancelled).toBe(true);
    expect(l.loading).toBe(false);
    expect(l.progress).toBeNull();
    expect(l.provisional).toBe(true);
    expect(l.snapshot!.length).toBe(2);
    expect(l.canLoadMore).toBe(false);
    await done;
    expect(l.error).toBeNull();                        // a cancel is not an error
    c0.stream!.onPartial!([call(9)]);                  // late callbacks are dropped
    c0.stream!.onProgress!(prog(9));
    expect(l.snapshot!.map((c) => c.id)).toEqual(['c2', 'c1']);
    expect(l.progress).toBeNull();
    await l.more();                                    // no request after a cancel
    expect(m.calls.length).toBe(1);
    expect(l.cancel()).toBe(false);
  });

  it('retry after a cancel runs the first page again', async () => {
    const m = manual();
    const l = new CallsLoader({}, () => {}, m.f);
    void l.more();
    l.cancel();
    await tick();
    l.retry();
    expect(m.calls.length).toBe(2);
    expect(m.calls[1].signal.aborted).toBe(false);
    expect(m.calls[1].stream).toBeDefined();
    m.calls[1].resolve(page([call(1)], null));
    await tick();
    expect(l.cancelled).toBe(false);
    expect(l.rows.length).toBe(1);
    expect(l.done).toBe(true);
  });

  it('cancel leaves a later page alone', async () => {
    const m = manual();
    const l = new CallsLoader({}, () => {}, m.f);
    const first = l.more();
    m.calls[0].resolve(page([call(1)], 'k'));
    await first;
    void l.more();
    expect(l.cancel()).toBe(false);
    expect(m.calls[1].signal.aborted).toBe(false);
  });

  it('an answer arriving after dispose changes nothing', async () => {
    let resolve!: (p: CallsPage) => void;
    let stream: StreamOptions | undefined;
    const f: Fetcher = (_p, _signal, s) => { stream = s; return new Promise((r) => { resolve = r; }); };   // ignores the signal
    const l = new CallsLoader({}, () => {}, f);
    const done = l.more();
    l.dispose();
    stream!.onPartial!([call(1)]);
    resolve(page([call(1)], null));
    await done;
    expect(l.rows.length).toBe(0);
    expect(l.snapshot).toBeNull();
    expect(l.started).toBe(false);
  });

  it('an error after provisional rows keeps them next to the error', async () => {
    const m = manual();
    const l = new CallsLoader({}, () => {}, m.f);
    const done = l.more();
    m.calls[0].stream!.onProgress!(prog(1));
    m.calls[0].stream!.onPartial!([call(1)]);
    m.calls[0].reject(new ApiError(503, 'overloaded', 'out of memory'));
    await done;
    expect(l.error?.code).toBe('overloaded');
    expect(l.provisional).toBe(true);
    expect(l.progress).toBeNull();
    expect(l.loading).toBe(false);
  });

  it('the manual fetcher rejects like fetch on abort', async () => {
    const m = manual();
    const ac = new AbortController();
    const p = m.f({}, ac.signal).catch((e) => e);
    ac.abort();
    expect(isAbort(await p)).toBe(true);
  });
});
