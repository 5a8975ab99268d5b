// loader.ts -- keyset paging of GET /api/v1/calls for the virtual table (ui.md §3.7): pages
// of 1000 fetched on demand, empty pages that still carry a cursor followed for a bounded
// number of rounds, a hard cap on the rows kept, and errors kept next to the rows already
// loaded. Rows live in one array that is appended in place (copying 100 000 rows per page
// would be wasteful); `version` bumps on every change so the page re-renders.
//
// The first page is asked for in the streaming mode (lib/stream.ts): while it runs,
// `progress` holds the server's last progress line and `snapshot` its last set of best
// rows so far (provisional: replaced by the answer). `cancel()` stops that request and
// keeps the snapshot; later pages are plain requests.

import { ApiError, apiGet, isAbort, type Call, type CallsPage } from '../lib/api';
import { apiStream, type StreamOptions, type StreamProgress } from '../lib/stream';

export const PAGE_SIZE = 1000;
export const ROW_CAP = 100000;
export const MAX_EMPTY_ROUNDS = 10;

/** `stream` is given for the first page: progress and provisional rows go to its callbacks. */
export type Fetcher = (params: Record<string, string>, signal: AbortSignal, stream?: StreamOptions) => Promise<CallsPage>;

const apiFetcher: Fetcher = (params, signal, stream) => (stream
  ? apiStream<CallsPage>('/calls', params, { ...stream, signal })
  : apiGet<CallsPage>('/calls', params, signal));

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
  /** the first page's last progress line, while it runs */
  progress: StreamProgress | null = null;
  /** the first page's best rows so far (provisional), until its answer */
  snapshot: Call[] | null = null;
  /** the first page was cancelled (`snapshot` is what had arrived) */
  cancelled = false;
  version = 0;
  private ac = new AbortController();

  constructor(readonly params: Record<string, string>, private onChange: () => void,
              private fetcher: Fetcher = apiFetcher, private cap = ROW_CAP) {}

  get capped(): boolean { return this.rows.length >= this.cap; }
  get expired(): boolean { return this.error?.code === 'cursor_expired'; }
  get canLoadMore(): boolean { return !this.done && !this.capped && !this.loading && !this.error && !this.cancelled; }
  /** rows to show are the snapshot of an unfinished first page */
  get provisional(): boolean { return !this.started && this.snapshot !== null; }

  private changed(): void { this.version++; this.onChange(); }

  /** Fetches the next page (following empty pages). No-op while loading, at the end or at
   *  the cap. */
  async more(): Promise<void> {
    if (this.loading || this.done || this.capped || this.cancelled) return;
    this.loading = true;
    this.error = null;
    this.stalled = false;
    this.changed();
    let empty = 0;
    // a cancel or dispose swaps the controller: whatever this request brings later is dropped
    const signal = this.ac.signal;
    try {
      for (;;) {
        const p: Record<string, string> = { ...this.params, limit: String(Math.min(PAGE_SIZE, this.cap - this.rows.length)) };
        if (this.cursor) p.cursor = this.cursor;
        const stream: StreamOptions | undefined = this.started ? undefined : {
          onProgress: (pr) => { if (!signal.aborted) { this.progress = pr; this.changed(); } },
          onPartial: (calls) => { if (!signal.aborted) { this.snapshot = calls; this.changed(); } },
        };
        const page = await this.fetcher(p, signal, stream);
        if (signal.aborted) return;
        this.started = true;
        this.snapshot = null;
        this.progress = null;
        for (const c of page.calls) this.rows.push(c);
        this.cursor = page.next_cursor;
        this.done = page.next_cursor === null;
        this.scanned += page.scanned ?? 0;
        for (const r of page.partial_reasons ?? []) if (!this.partialReasons.includes(r)) this.partialReasons.push(r);
        if (page.calls.length || this.done) break;
        if (++empty >= MAX_EMPTY_ROUNDS) { this.stalled = true; break; }
      }
    } catch (e) {
      if (isAbort(e) || signal.aborted) return;
      this.error = e instanceof ApiError ? e : new ApiError(0, 'client', String((e as Error)?.message ?? e));
      this.progress = null;
    }
    this.loading = false;
    this.changed();
  }

  /** Stops a first page that is still running, keeping the rows it had sent (`snapshot`).
   *  Later pages are left alone. Returns whether something was cancelled. */
  cancel(): boolean {
    if (!this.loading || this.started) return false;
    this.ac.abort();
    this.ac = new AbortController();
    this.loading = false;
    this.cancelled = true;
    this.progress = null;
    this.changed();
    return true;
  }

  /** Retry after an error or a cancel: an expired cursor restarts from the first page. */
  retry(): void {
    if (this.expired) {
      this.rows = [];
      this.cursor = null;
      this.started = false;
      this.done = false;
      this.partialReasons = [];
      this.snapshot = null;
    }
    this.error = null;
    this.cancelled = false;
    void this.more();
  }

  dispose(): void { this.ac.abort(); }
}
