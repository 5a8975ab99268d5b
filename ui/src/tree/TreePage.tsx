// TreePage.tsx -- the /tree route (ui.md §4): reads the call ids from the URL (`call=`
// repeated, or `sel=<key>`, a long selection the calls page stored in localStorage),
// fetches the merged tree (GET /calls/{id}/tree, GET /tree?ids= up to 40 ids, POST beyond)
// and hands it to TreeScreen with the URL as its state. Loading, 404 / 410 / 413 and other
// errors get their own states. `synthetic=<N>` (development aid) builds an N-node tree in
// the browser to measure JSON-to-first-paint on big trees.

import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, apiUrl, isAbort, type TreeResp } from '../lib/api';
import { setParams, type Route } from '../lib/url';
import { TreeScreen, type StateIO, type TreeData } from './TreeScreen';
import { syntheticTree } from './synthetic';
import { SampledTools, sampledLabel, sampledSource, sampledUrl, tdFrameMethod, unitOf, type Sampled } from './sampled';
import { setTreeUnit, TIME } from './units';
import './tree.css';

const GET_MAX_IDS = 40;

type Load =
  | { kind: 'loading' }
  | { kind: 'ok'; data: TreeData }
  | { kind: 'error'; err: ApiError };

/** The call ids of the page: `call=` params, else the stored selection `sel=`. */
export function idsFromParams(p: URLSearchParams): { ids: string[]; error: string | null } {
  const ids = p.getAll('call').flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean);
  if (ids.length) return { ids: [...new Set(ids)], error: null };
  const sel = p.get('sel');
  if (sel) {
    try {
      const raw = localStorage.getItem(`cloudprof.sel.${sel}`);
      if (!raw) return { ids: [], error: 'This selection is not stored in this browser — reopen it from the calls list.' };
      const arr = JSON.parse(raw);
      if (Array.isArray(arr) && arr.every((x) => typeof x === 'string') && arr.length) return { ids: [...new Set(arr as string[])], error: null };
    } catch { /* fall through */ }
    return { ids: [], error: 'The stored selection is unreadable — reopen it from the calls list.' };
  }
  return { ids: [], error: 'No call given: open a tree from the calls list.' };
}

async function fetchTree(ids: string[], signal: AbortSignal, sampled: string | null = null): Promise<string> {
  let res: Response;
  try {
    if (sampled) res = await fetch(sampled, { signal, headers: { Accept: 'application/json' } });
    else if (ids.length === 1) res = await fetch(apiUrl(`/calls/${encodeURIComponent(ids[0])}/tree`), { signal, headers: { Accept: 'application/json' } });
    else if (ids.length <= GET_MAX_IDS) res = await fetch(apiUrl('/tree', { ids: ids.join(',') }), { signal, headers: { Accept: 'application/json' } });
    else {
      res = await fetch(apiUrl('/tree'), {
        method: 'POST', signal, body: JSON.stringify({ ids }),
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      });
    }
  } catch (e) {
    if (isAbort(e)) throw e;
    throw new ApiError(0, 'network', 'the server cannot be reached');
  }
  const text = await res.text();
  if (!res.ok) {
    let body: Record<string, unknown> = {};
    try { body = JSON.parse(text); } catch { /* not JSON */ }
    const msg = typeof body.error === 'string' ? body.error : `HTTP ${res.status} ${res.statusText}`;
    throw new ApiError(res.status, typeof body.code === 'string' ? body.code : 'http_error', msg, body);
  }
  return text;
}

function parseTree(text: string): TreeResp {
  let t: TreeResp;
  try { t = JSON.parse(text); } catch { throw new ApiError(200, 'bad_json', 'the server answered something that is not JSON'); }
  if (!t || !t.root || !Array.isArray(t.methods)) throw new ApiError(200, 'bad_tree', 'the answer is not a call tree');
  return t;
}

export function TreePage({ route }: { route: Route }) {
  const p = route.params;
  const synthetic = Number(p.get('synthetic') ?? 0);
  const src = sampledSource(p);
  const { ids, error } = synthetic > 0 ? { ids: ['synthetic'], error: null }
    : src ? (src.error ? { ids: [], error: src.error } : { ids: [], error: null }) : idsFromParams(p);
  const key = synthetic > 0 ? `synthetic:${synthetic}` : src ? sampledUrl(src) : ids.join(',');
  const [load, setLoad] = useState<Load>({ kind: 'loading' });
  const [retry, setRetry] = useState(0);

  useEffect(() => {
    if (error) return;
    const ac = new AbortController();
    setLoad({ kind: 'loading' });
    if (synthetic > 0) {
      // built here, serialised and parsed again so the timing covers what a fetch would
      const text = JSON.stringify(syntheticTree(Math.min(synthetic, 2000000)));
      const t0 = performance.now();
      setLoad({ kind: 'ok', data: { resp: JSON.parse(text), raw: text, ids, t0 } });
      return;
    }
    fetchTree(ids, ac.signal, src ? sampledUrl(src) : null)
      .then((text) => {
        const t0 = performance.now();
        setLoad({ kind: 'ok', data: { resp: parseTree(text), raw: text, ids, t0 } });
      })
      .catch((e) => {
        if (isAbort(e)) return;
        setLoad({ kind: 'error', err: e instanceof ApiError ? e : new ApiError(0, 'client', String((e as Error)?.message ?? e)) });
      });
    return () => ac.abort();
  }, [key, retry]);

  if (error) return <Frame><div class="state" data-testid="tree-error">{error}</div></Frame>;
  if (load.kind === 'loading') {
    return (
      <Frame>
        <div class="state" data-testid="tree-loading"><span class="spinner" /> Loading the call tree{ids.length > 1 ? ` of ${ids.length} calls` : ''}…</div>
      </Frame>
    );
  }
  if (load.kind === 'error') return <Frame><TreeError err={load.err} ids={ids} onRetry={() => setRetry(retry + 1)} /></Frame>;
  const io: StateIO = {
    params: p,
    set: (patch, replace) => setParams(patch, { replace: !!replace }),
  };
  // the numbers' unit: time for call trees, the sample type's for sampled trees
  const sm = (load.data.resp as { sampled?: Sampled }).sampled;
  if (src && sm && src.kind === 'td' && !load.data.resp.methods.every((x, i) => x === tdFrameMethod(x) || i < 0)) {
    load.data.resp.methods = load.data.resp.methods.map(tdFrameMethod);  // once: the mapped text maps to itself
  }
  setTreeUnit(src && sm ? unitOf(sm, load.data.resp.root.total) : TIME);
  const data = src && sm ? { ...load.data, label: sampledLabel(src, sm), tools: <SampledTools src={src} sampled={sm} /> } : load.data;
  // a new tree gets fresh per-tab view state
  return <TreeScreen key={key} data={data} io={io} />;
}

function Frame({ children }: { children: ComponentChildren }) {
  return (
    <div class="tp" data-testid="tree-page">
      <header class="tp-header" data-testid="tree-header"><a class="brand" href="/calls">cloudprof</a><span class="muted">call tree</span></header>
      <div class="tp-banners">{children}</div>
    </div>
  );
}

const REASONS: Record<string, string> = {
  trace_incomplete: 'the trace was incomplete',
  trace_not_found: 'the trace was not found in storage',
  bad_pointer: 'the call points at a trace position that does not exist',
  too_large: 'the trace was too large to keep',
  backlog: 'the agent dropped it under backlog',
};

function TreeError({ err, ids, onRetry }: { err: ApiError; ids: string[]; onRetry: () => void }) {
  const body = err.body as { reason?: string; id?: string };
  if (err.status === 404 && (err.code === 'call_not_found' || err.code === 'not_found')) {
    return (
      <div class="banner banner-red" data-testid="tree-error" data-status="404">
        Call not found — reopen it from the list.{body.id ? <span class="muted"> ({body.id})</span> : null}
      </div>
    );
  }
  if (err.status === 410) {
    const r = body.reason ? REASONS[body.reason] ?? body.reason : 'no reason given';
    return <div class="banner banner-amber" data-testid="tree-error" data-status="410">The trace of this call was dropped ({r}).</div>;
  }
  if (err.status === 413) {
    return (
      <div class="banner banner-amber" data-testid="tree-error" data-status="413" style={{ flexWrap: 'wrap' }}>
        This tree is too large to draw ({err.message}).
        {ids.length <= 20
          ? ids.map((id) => <a key={id} class="btn btn-small" href={`/api/v1/calls/${encodeURIComponent(id)}/trace`} download>
              Download the raw trace{ids.length > 1 ? ` of ${id.slice(0, 13)}…` : ''}</a>)
          : <span>Open fewer calls at once, or download raw traces of single calls.</span>}
      </div>
    );
  }
  return (
    <div class="banner banner-red" data-testid="tree-error" data-status={err.status}>
      {err.status ? `${err.status}: ` : ''}{err.message}
      <button type="button" class="btn btn-small" onClick={onRetry} data-testid="retry">Retry</button>
    </div>
  );
}
