// loader.ts -- keyset paging of GET /api/v1/calls for the virtual table (ui.md §3.7): pages
// of 1000 fetched on demand, empty pages that still carry a cursor followed for a bounded
// number of rounds, a hard cap on the rows kept, and errors kept next to the rows already
// loaded. Rows live in one array that is appended in place (copying 100 000 rows per page
// would be wasteful); `version` bumps on every change so the page re-renders.

import { ApiError, apiGet, isAbort, type Call, type CallsPage } from '../lib/api';

export const PAGE_SIZE = 1000;
export const ROW_CAP = 100000;
export const MAX_EMPTY_ROUNDS = 10;

export type Fetcher = (params: Record<string, string>, signal: AbortSignal) => Promise<CallsPage>;

const apiFetcher: Fetcher = (params, signal) => apiGet<CallsPage>('/calls', params, signal);

export class CallsLoader {
  rows: Call[] = [];
  cursor: string | null = null;
  /** a first page was answered */
  started = false;
  /** no cursor left */
  done = false;
  loading = false;
  error: ApiError | null = null;
  partialReasons: string[] = [];
  scanned = 0;
  /** gave up after MAX_EMPTY_ROUNDS empty pages in a row; `more()` continues */
  stalled = false;
  version = 0;
  private ac = new AbortController();

  constructor(readonly params: Record<string, string>, private onChange: () => void,
              private fetcher: Fetcher = apiFetcher, private cap = ROW_CAP) {}

  get capped(): boolean { return this.rows.length >= this.cap; }
  get expired(): boolean { return this.error?.code === 'cursor_expired'; }
  get canLoadMore(): boolean { return !this.done && !this.capped && !this.loading && !this.error; }

  private changed(): void { this.version++; this.onChange(); }

  /** Fetches the next page (following empty pages). No-op while loading, at the end or at
   *  the cap. */
  async more(): Promise<void> {
    if (this.loading || this.done || this.capped) return;
    this.loading = true;
    this.error = null;
    this.stalled = false;
    this.changed();
    let empty = 0;
    try {
      for (;;) {
        const p: Record<string, string> = { ...this.params, limit: String(Math.min(PAGE_SIZE, this.cap - this.rows.length)) };
        if (this.cursor) p.cursor = this.cursor;
        const page = await this.fetcher(p, this.ac.signal);
        this.started = true;
        for (const c of page.calls) this.rows.push(c);
        this.cursor = page.next_cursor;
        this.done = page.next_cursor === null;
        this.scanned += page.scanned ?? 0;
        for (const r of page.partial_reasons ?? []) if (!this.partialReasons.includes(r)) this.partialReasons.push(r);
        if (page.calls.length || this.done) break;
        if (++empty >= MAX_EMPTY_ROUNDS) { this.stalled = true; break; }
      }
    } catch (e) {
      if (isAbort(e)) return;
      this.error = e instanceof ApiError ? e : new ApiError(0, 'client', String((e as Error)?.message ?? e));
    }
    this.loading = false;
    this.changed();
  }

  /** Retry after an error: an expired cursor restarts from the first page. */
  retry(): void {
    if (this.expired) {
      this.rows = [];
      this.cursor = null;
      this.started = false;
      this.done = false;
      this.partialReasons = [];
    }
    this.error = null;
    void this.more();
  }

  dispose(): void { this.ac.abort(); }
}
