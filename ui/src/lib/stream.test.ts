// stream.test.ts -- the NDJSON client of stream=1 (lines across chunks, several per chunk,
// a last line without newline, error lines, HTTP errors, cancel) and the fallback for
// servers without the streaming mode, over a mocked fetch.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError, isAbort } from './api';
import { apiStream, fetchStream, LineSplitter, resetStreaming, streamingOn, type StreamProgress } from './stream';

const enc = new TextEncoder();
const NDJSON = 'application/x-ndjson; charset=utf-8';

/** A body whose chunks the test hands over one by one (`push`), then `close`s. */
function controlled() {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start(c) { ctl = c; } });
  return {
    body,
    push: (s: string | Uint8Array) => ctl.enqueue(typeof s === 'string' ? enc.encode(s) : s),
    close: () => ctl.close(),
  };
}

function streamOf(chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(c) {
      for (const ch of chunks) c.enqueue(typeof ch === 'string' ? enc.encode(ch) : ch);
      c.close();
    },
  });
}

const ndjson = (body: ReadableStream<Uint8Array>) => new Response(body, { status: 200, headers: { 'Content-Type': NDJSON } });
const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json; charset=utf-8' } });

const prog = (files_done: number, scanned: number): StreamProgress =>
  ({ files_done, files_total: 40, windows_done: 0, windows_total: 2, scanned, elapsed_ms: 10 });
const line = (o: unknown) => JSON.stringify(o) + '\n';

/** fetch answering `res` (a function of the URL), rejecting like a browser on abort. */
function mockFetch(res: (url: string) => Response | Promise<Response>) {
  const urls: string[] = [];
  const f = vi.fn((url: string, init?: RequestInit) => {
    urls.push(url);
    const signal = init?.signal;
    if (signal?.aborted) return Promise.reject(new DOMException('aborted', 'AbortError'));
    return new Promise<Response>((resolve, reject) => {
      signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
      Promise.resolve(res(url)).then(resolve, reject);
    });
  });
  vi.stubGlobal('fetch', f);
  return urls;
}

/** The error a promise rejects with (the test fails when it resolves). */
async function caught(p: Promise<unknown>): Promise<ApiError> {
  try { await p; } catch (e) { return e as ApiError; }
  throw new Error('resolved instead of rejecting');
}

beforeEach(() => resetStreaming());
afterEach(() => vi.unstubAllGlobals());

describe('LineSplitter', () => {
  it('joins lines split across chunks and splits several lines per chunk', () => {
    const s = new LineSplitter();
    expect(s.push('{"a":')).toEqual([]);
    expect(s.push('1}\n{"b":2}\n{"c"')).toEqual(['{"a":1}', '{"b":2}']);
    expect(s.push(':3}\r\n\n')).toEqual(['{"c":3}']);
    expect(s.push('{"d":4}')).toEqual([]);
    expect(s.end()).toEqual(['{"d":4}']);
    expect(s.end()).toEqual([]);
  });
});

describe('fetchStream', () => {
  it('reports progress and snapshots, and resolves with the result', async () => {
    const chunks = [
      line({ progress: prog(0, 0) }).slice(0, 7),                   // a line cut in two
      line({ progress: prog(0, 0) }).slice(7) + line({ progress: prog(3, 1500) }),   // and two in one chunk
      line({ calls: [{ id: 'a' }, { id: 'b' }] }),
      line({ calls: [{ id: 'c' }] }),
      line({ progress: prog(40, 90000) }),
      line({ result: { calls: [{ id: 'c' }, { id: 'd' }], next_cursor: null, partial: false } }),
    ];
    const urls = mockFetch(() => ndjson(streamOf(chunks)));
    const seen: string[] = [];
    const r = await fetchStream<{ calls: { id: string }[] }>('/api/v1/calls?stream=1', {
      onProgress: (p) => seen.push(`p${p.files_done}/${p.scanned}`),
      onPartial: (c) => seen.push(`c${c.map((x) => x.id).join('')}`),
    });
    expect(seen).toEqual(['p0/0', 'p3/1500', 'cab', 'cc', 'p40/90000']);
    expect(r.calls.map((c) => c.id)).toEqual(['c', 'd']);
    expect(urls).toEqual(['/api/v1/calls?stream=1']);
  });

  it('decodes a UTF-8 character split across chunks and a last line without newline', async () => {
    const bytes = enc.encode(JSON.stringify({ result: { method: 'Café.run' } }));
    const cut = bytes.indexOf(0xc3) + 1;                          // inside "é"
    mockFetch(() => ndjson(streamOf([line({ progress: prog(1, 1) }), bytes.slice(0, cut), bytes.slice(cut)])));
    const r = await fetchStream<{ method: string }>('/x');
    expect(r.method).toBe('Café.run');
  });

  it('calls back as lines arrive, before the stream ends', async () => {
    const b = controlled();
    mockFetch(() => ndjson(b.body));
    const seen: number[] = [];
    let got = false;
    const done = fetchStream<{ total: number }>('/x', { onProgress: (p) => seen.push(p.files_done) })
      .then((r) => { got = true; return r; });
    b.push(line({ progress: prog(1, 10) }));
    await vi.waitFor(() => expect(seen).toEqual([1]));
    b.push(line({ progress: prog(2, 20) }));
    await vi.waitFor(() => expect(seen).toEqual([1, 2]));
    expect(got).toBe(false);
    b.push(line({ result: { total: 7 } }));
    b.close();
    expect((await done).total).toBe(7);
  });

  it('rejects with the error line as an ApiError', async () => {
    mockFetch(() => ndjson(streamOf([
      line({ progress: prog(1, 10) }),
      line({ error: { status: 503, error: 'overloaded', message: 'out of memory while answering' } }),
    ])));
    const e = await caught(fetchStream('/x'));
    expect(e).toBeInstanceOf(ApiError);
    expect(e.status).toBe(503);
    expect(e.code).toBe('overloaded');
    expect(e.message).toBe('out of memory while answering');
    expect(e.body.error).toBe('out of memory while answering');
    expect(isAbort(e)).toBe(false);
  });

  it('rejects with a non-200 JSON error like apiGet', async () => {
    mockFetch(() => json(400, { error: "'duration' does not parse", code: 'bad_parameter', parameter: 'duration' }));
    const e = await caught(fetchStream('/x'));
    expect(e).toBeInstanceOf(ApiError);
    expect(e.status).toBe(400);
    expect(e.code).toBe('bad_parameter');
    expect(e.body.parameter).toBe('duration');
    expect(e.message).toBe("'duration' does not parse");
  });

  it('takes a plain JSON answer as the result', async () => {
    mockFetch(() => json(200, { total: 3 }));
    expect((await fetchStream<{ total: number }>('/x')).total).toBe(3);
  });

  it('a stream that ends without result or error is an error', async () => {
    mockFetch(() => ndjson(streamOf([line({ progress: prog(1, 1) })])));
    const e = await caught(fetchStream('/x'));
    expect(e).toBeInstanceOf(ApiError);
    expect(e.code).toBe('truncated');
  });

  it('a line that is not JSON is an error; unknown keys are ignored', async () => {
    mockFetch(() => ndjson(streamOf([line({ hello: 1 }), 'nope\n', line({ result: {} })])));
    const e = await caught(fetchStream('/x'));
    expect(e).toBeInstanceOf(ApiError);
    expect(e.code).toBe('bad_json');
  });

  it('a network failure is an ApiError', async () => {
    vi.stubGlobal('fetch', vi.fn(() => Promise.reject(new TypeError('Failed to fetch'))));
    const e = await caught(fetchStream('/x'));
    expect(e).toBeInstanceOf(ApiError);
    expect(e.code).toBe('network');
  });

  it('abort while reading rejects with an AbortError, not an ApiError, and stops callbacks', async () => {
    const b = controlled();
    mockFetch(() => ndjson(b.body));
    const ac = new AbortController();
    const seen: number[] = [];
    const p = fetchStream('/x', { signal: ac.signal, onProgress: (x) => seen.push(x.files_done) }).catch((x) => x);
    b.push(line({ progress: prog(1, 10) }));
    await vi.waitFor(() => expect(seen).toEqual([1]));
    ac.abort();
    const e = await p;
    expect(isAbort(e)).toBe(true);
    expect(e).not.toBeInstanceOf(ApiError);
    expect(() => b.push(line({ progress: prog(2, 20) }))).toThrow();   // the body was cancelled
    expect(seen).toEqual([1]);
  });

  it('abort before the answer, or with a custom reason, is an AbortError too', async () => {
    mockFetch(() => new Promise<Response>(() => {}));
    const ac = new AbortController();
    const p = fetchStream('/x', { signal: ac.signal }).catch((x) => x);
    ac.abort(new Error('mine'));
    expect(isAbort(await p)).toBe(true);
    expect(isAbort(await fetchStream('/x', { signal: ac.signal }).catch((x) => x))).toBe(true);
  });
});

describe('apiStream', () => {
  const refuse = () => json(400, { error: "unknown parameter 'stream'", code: 'unknown_parameter', parameter: 'stream' });

  it('adds stream=1', async () => {
    const urls = mockFetch(() => ndjson(streamOf([line({ result: { total: 1 } })])));
    expect(await apiStream('/calls/stats', { from: '1', to: '2' })).toEqual({ total: 1 });
    expect(urls).toEqual(['/api/v1/calls/stats?from=1&to=2&stream=1']);
  });

  it('falls back once to a plain request on a server that refuses stream, and remembers', async () => {
    const urls = mockFetch((u) => (u.includes('stream=1') ? refuse() : json(200, { total: 2 })));
    expect(await apiStream('/calls', { from: '1' })).toEqual({ total: 2 });
    expect(urls).toEqual(['/api/v1/calls?from=1&stream=1', '/api/v1/calls?from=1']);
    expect(streamingOn()).toBe(false);
    expect(await apiStream('/calls/stats', { from: '1' })).toEqual({ total: 2 });
    expect(urls.slice(2)).toEqual(['/api/v1/calls/stats?from=1']);
  });

  it('other parameter errors are not a reason to fall back', async () => {
    const urls = mockFetch(() => json(400, { error: "unknown parameter 'colums'", code: 'unknown_parameter', parameter: 'colums' }));
    const e = await caught(apiStream('/calls/stats', { colums: '5' }));
    expect(e).toBeInstanceOf(ApiError);
    expect(e.code).toBe('unknown_parameter');
    expect(urls.length).toBe(1);
    expect(streamingOn()).toBe(true);
  });
});
