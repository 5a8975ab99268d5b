// stream.ts -- the streaming mode of /calls and /calls/stats (`stream=1`): the answer is
// NDJSON, one object per line with one key: `progress` (files/windows done, rows scanned),
// `calls` (a snapshot of the best rows so far, replacing the previous one), then `result`
// (the body the endpoint returns without stream=1) or `error` (the query failed after the
// stream started). Parameter errors still come as a normal 4xx JSON error.
//
// Cancelling: abort the signal. The promise then rejects with a DOMException named
// AbortError (isAbort() is true), never with an ApiError, so callers tell a cancel apart
// from a failure. Servers without the streaming mode refuse `stream` (400
// unknown_parameter): apiStream() then asks again without it and stops streaming for the
// rest of the page load.

import { ApiError, apiGet, apiUrl, decode, isAbort, type Call } from './api';

export interface StreamProgress {
  files_done: number;
  files_total: number;
  windows_done: number;
  windows_total: number;
  scanned: number;
  elapsed_ms: number;
}

export interface StreamOptions {
  signal?: AbortSignal;
  onProgress?: (p: StreamProgress) => void;
  /** a snapshot of the best rows so far (/calls only): replaces the previous one */
  onPartial?: (calls: Call[]) => void;
}

/** Splits text arriving in chunks into lines: a line may span chunks, a chunk may hold
 *  several lines; `\r\n` and `\n` both end a line, blank lines are dropped. */
export class LineSplitter {
  private rest = '';

  push(text: string): string[] {
    const s = this.rest + text;
    const parts = s.split('\n');
    this.rest = parts.pop()!;
    return parts.map(trimCr).filter((l) => l.trim() !== '');
  }

  /** The last line when the text did not end with a newline. */
  end(): string[] {
    const l = trimCr(this.rest);
    this.rest = '';
    return l.trim() === '' ? [] : [l];
  }
}

const trimCr = (l: string) => (l.endsWith('\r') ? l.slice(0, -1) : l);

function abortError(): DOMException {
  return new DOMException('the query was cancelled', 'AbortError');
}

/** The error line `{"error":{"status","error":code,"message"}}` as an ApiError shaped like
 *  a non-stream error (body.error = message, body.code = code). */
function lineError(v: unknown): ApiError {
  const o = (v && typeof v === 'object' ? v : {}) as Record<string, unknown>;
  const status = typeof o.status === 'number' ? o.status : 500;
  const code = typeof o.error === 'string' ? o.error : 'stream_error';
  const message = typeof o.message === 'string' ? o.message : `the query failed (${code})`;
  return new ApiError(status, code, message, { ...o, error: message, code });
}

/** GET `url` in the streaming mode. Resolves with the `result` object; rejects with an
 *  ApiError (HTTP error, error line, broken stream) or an AbortError (cancelled). An
 *  answer that is plain JSON (a server that did not stream) is taken as the result. */
export async function fetchStream<T>(url: string, opts: StreamOptions = {}): Promise<T> {
  const { signal } = opts;
  if (signal?.aborted) throw abortError();
  let res: Response;
  try {
    res = await fetch(url, { signal, headers: { Accept: 'application/x-ndjson, application/json' } });
  } catch (e) {
    if (signal?.aborted || isAbort(e)) throw abortError();
    throw new ApiError(0, 'network', 'the server cannot be reached');
  }
  if (signal?.aborted) throw abortError();
  if (!res.ok || !/ndjson/i.test(res.headers.get('Content-Type') ?? '')) {
    try { return await decode<T>(res); } catch (e) {
      if (signal?.aborted || isAbort(e)) throw abortError();
      throw e;
    }
  }

  let result: { value: T } | null = null;
  const handle = (line: string) => {
    let msg: unknown;
    try { msg = JSON.parse(line); } catch {
      throw new ApiError(200, 'bad_json', 'the server sent a line that is not JSON');
    }
    if (!msg || typeof msg !== 'object') return;
    const m = msg as Record<string, unknown>;
    if (result) return;                       // nothing counts after the result
    if ('error' in m) throw lineError(m.error);
    if ('result' in m) result = { value: m.result as T };
    else if ('progress' in m) opts.onProgress?.(m.progress as StreamProgress);
    else if ('calls' in m && Array.isArray(m.calls)) opts.onPartial?.(m.calls as Call[]);
    // other keys: a newer server; ignored
  };

  const split = new LineSplitter();
  if (!res.body) {
    // no readable body (old engines): everything at once
    const text = await res.text();
    for (const l of [...split.push(text), ...split.end()]) handle(l);
  } else {
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    // abort ends a pending read even when the body itself does not error
    const onAbort = () => { reader.cancel().catch(() => {}); };
    signal?.addEventListener('abort', onAbort);
    try {
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try { chunk = await reader.read(); } catch (e) {
          if (signal?.aborted || isAbort(e)) throw abortError();
          throw new ApiError(0, 'network', 'the connection was lost while the query ran');
        }
        if (signal?.aborted) throw abortError();
        const lines = chunk.done ? [...split.push(dec.decode()), ...split.end()]
          : split.push(dec.decode(chunk.value, { stream: true }));
        for (const l of lines) {
          handle(l);
          if (signal?.aborted) throw abortError();   // a callback cancelled
        }
        if (chunk.done) break;
      }
    } catch (e) {
      reader.cancel().catch(() => {});
      throw e;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }
  if (!result) throw new ApiError(0, 'truncated', 'the answer ended before the result');
  return (result as { value: T }).value;
}

// ---- stream=1 with a fallback for servers without it -------------------------------------

let streamOff = false;

/** Whether the streaming mode is still tried (false once a server refused it). */
export function streamingOn(): boolean { return !streamOff; }

/** For tests: forget that a server refused the streaming mode. */
export function resetStreaming(): void { streamOff = false; }

function refusesStream(e: unknown): boolean {
  if (!(e instanceof ApiError) || e.status !== 400 || e.code !== 'unknown_parameter') return false;
  return e.body?.parameter === 'stream' || /stream/.test(e.message);
}

/** GET /api/v1{path} with `stream=1`; against a server that refuses the parameter, once
 *  more without it (no progress then), and without it for the rest of the page load. */
export async function apiStream<T>(path: string, params: Record<string, string>, opts: StreamOptions = {}): Promise<T> {
  if (!streamOff) {
    try {
      return await fetchStream<T>(apiUrl(path, { ...params, stream: '1' }), opts);
    } catch (e) {
      if (!refusesStream(e)) throw e;
      streamOff = true;
    }
  }
  return apiGet<T>(path, params, opts.signal);
}
