// ProfilePage.tsx -- the /profile route (ui.md §10.2, issue 19 items 1–2): the aggregate
// profile of every call a calls-list filter matches, merged on the server
// (GET /api/v1/profile?stream=1, with the search's and the merge's progress and a Cancel
// button), shown in the tree page (Tree | Flame | Icicle | Hotspots) with why it stopped
// early. With `base=` in the URL a second profile (the baseline: another period or other
// pods) is merged too and the page shows the difference (DiffScreen).

import { useEffect, useMemo, useState } from 'preact/hooks';
import { ApiError, apiUrl, isAbort } from '../lib/api';
import { useApp } from '../lib/ctx';
import { fetchStream } from '../lib/stream';
import { fmtTs } from '../lib/time';
import { setParams, type Route } from '../lib/url';
import { progressText } from '../calls/progress';
import { DiffScreen } from './DiffScreen';
import {
  baselineOf, describeFilter, filterOf, mergeFraction, mergeText, previousPeriod, treeParams, treePatch,
  type ProfileProgress, type ProfileResp,
} from './profileModel';
import { TreeScreen, type StateIO } from './TreeScreen';
import { setTreeUnit, TIME } from './units';
import './tree.css';

interface Side { resp: ProfileResp; raw: string; t0: number }
type Load =
  | { kind: 'loading'; a: ProfileProgress | null; b: ProfileProgress | null }
  | { kind: 'ok'; a: Side; b: Side | null }
  | { kind: 'error'; err: ApiError; which: string }
  | { kind: 'cancelled' };

async function loadProfile(filter: Record<string, string>, signal: AbortSignal, onProgress: (p: ProfileProgress) => void): Promise<Side> {
  const resp = await fetchStream<ProfileResp>(apiUrl('/profile', { ...filter, stream: '1' }), { signal, onProgress });
  if (!resp || !resp.root || !Array.isArray(resp.methods) || !resp.profile) {
    throw new ApiError(200, 'bad_tree', 'the answer is not an aggregate profile');
  }
  return { resp, raw: JSON.stringify(resp), t0: performance.now() };
}

export function ProfilePage({ route }: { route: Route }) {
  const app = useApp();
  const p = route.params;
  const filter = useMemo(() => filterOf(p), [p.toString()]);
  const baseline = useMemo(() => baselineOf(p), [p.toString()]);
  const key = JSON.stringify([filter, baseline]);
  const [load, setLoad] = useState<Load>({ kind: 'loading', a: null, b: null });
  const [retry, setRetry] = useState(0);
  const [ac, setAc] = useState<AbortController | null>(null);

  useEffect(() => {
    const ctl = new AbortController();
    setAc(ctl);
    const prog = { a: null as ProfileProgress | null, b: null as ProfileProgress | null };
    setLoad({ kind: 'loading', a: null, b: null });
    const tick = () => setLoad((l) => (l.kind === 'loading' ? { kind: 'loading', a: prog.a, b: prog.b } : l));
    const fail = (which: string) => (e: unknown) => {
      if (isAbort(e)) throw e;
      throw { which, err: e instanceof ApiError ? e : new ApiError(0, 'client', String((e as Error)?.message ?? e)) };
    };
    const a = loadProfile(filter, ctl.signal, (x) => { prog.a = x; tick(); }).catch(fail('profile'));
    const b = baseline ? loadProfile(baseline, ctl.signal, (x) => { prog.b = x; tick(); }).catch(fail('baseline')) : Promise.resolve(null);
    Promise.all([a, b])
      .then(([sa, sb]) => setLoad({ kind: 'ok', a: sa, b: sb }))
      .catch((e) => {
        if (isAbort(e)) { if (!ctl.signal.aborted || ctl.signal.reason !== 'replaced') setLoad({ kind: 'cancelled' }); return; }
        ctl.abort('replaced');
        setLoad({ kind: 'error', err: e.err, which: e.which });
      });
    return () => ctl.abort('replaced');
  }, [key, retry]);

  const fmt = (ms: number) => fmtTs(ms, app.zone);
  const label = describeFilter(filter, fmt) || 'all calls of the period';

  if (load.kind === 'loading') {
    return (
      <Frame label={label}>
        <ProgressBox label="Profile" p={load.a} />
        {baseline && <ProgressBox label="Baseline" p={load.b} />}
        <button type="button" class="btn btn-small" data-testid="profile-cancel" onClick={() => ac?.abort('cancel')}>Cancel</button>
      </Frame>
    );
  }
  if (load.kind === 'cancelled') {
    return (
      <Frame label={label}>
        <div class="banner banner-info" data-testid="profile-cancelled">The profile was cancelled.
          <button type="button" class="btn btn-small" onClick={() => setRetry(retry + 1)}>Start again</button></div>
      </Frame>
    );
  }
  if (load.kind === 'error') {
    const e = load.err;
    const what = load.which === 'baseline' ? 'The baseline' : 'The profile';
    const msg = e.status === 404 ? `${what}: no call matches the filter.`
      : e.status === 410 ? `${what}: none of the matching calls has a trace.`
      : e.status === 413 ? `${what} is too large to merge (${e.message}); narrow the filter or lower max_calls.`
      : `${what} failed: ${e.status ? `${e.status}: ` : ''}${e.message}`;
    return (
      <Frame label={label}>
        <div class={`banner ${e.status === 404 || e.status === 410 ? 'banner-amber' : 'banner-red'}`} data-testid="profile-error" data-status={e.status}>
          {msg}<button type="button" class="btn btn-small" onClick={() => setRetry(retry + 1)}>Retry</button></div>
      </Frame>
    );
  }

  // a profile's numbers are times (a sampled tree shown before in this tab set another unit)
  setTreeUnit(TIME);
  const io: StateIO = {
    params: treeParams(p),
    set: (patch, replace) => setParams(treePatch(patch), { replace: !!replace }),
  };
  if (load.b && baseline) {
    return <DiffScreen a={load.a.resp} b={load.b.resp} labelA={label} labelB={describeFilter(baseline, fmt) || 'baseline'}
      io={io} onClose={() => setParams({ base: null, side: null, norm: null, dview: null })} />;
  }
  const info = load.a.resp.profile;
  const compare = <CompareButton filter={filter} />;
  return <TreeScreen key={key} data={{ resp: load.a.resp, raw: load.a.raw, ids: [], t0: load.a.t0, label, profile: info, tools: compare }} io={io} />;
}

function ProgressBox({ label, p }: { label: string; p: ProfileProgress | null }) {
  const merge = mergeText(p);
  return (
    <div class="pf-progress" data-testid="profile-progress">
      <span class="spinner" /> <b>{label}:</b> {merge ?? progressText(p)}
      {merge && <progress max={1} value={mergeFraction(p)} />}
    </div>
  );
}

function Frame({ label, children }: { label: string; children: preact.ComponentChildren }) {
  return (
    <div class="tp" data-testid="tree-page">
      <header class="tp-header" data-testid="tree-header"><a class="brand" href="/calls">cloudprof</a>
        <span class="muted">aggregate profile</span><span class="tp-ctx">{label}</span></header>
      <div class="tp-banners" data-testid="profile-loading">{children}</div>
    </div>
  );
}

/** "Compare…": the baseline is the previous period of the same length, the same period a
 *  day or a week earlier, and/or other pods. */
function CompareButton({ filter }: { filter: Record<string, string> }) {
  const [open, setOpen] = useState(false);
  const [shift, setShift] = useState('prev');
  const [pods, setPods] = useState('');
  const from = Number(filter.from), to = Number(filter.to);
  const timed = Number.isFinite(from) && Number.isFinite(to) && to > from;
  const apply = () => {
    const b = new URLSearchParams();
    if (timed && shift !== 'same') {
      const w = shift === 'prev' ? previousPeriod(from, to) : { from: from - (shift === 'day' ? 864e5 : 7 * 864e5), to: to - (shift === 'day' ? 864e5 : 7 * 864e5) };
      b.set('from', String(w.from));
      b.set('to', String(w.to));
    }
    const list = pods.split(/[\s,]+/).filter(Boolean);
    if (list.length === 1) { b.set('pod', list[0]); b.set('pods', ''); }
    else if (list.length > 1) { b.set('pods', list.join(',')); b.set('pod', ''); }
    setOpen(false);
    setParams({ base: b.toString() || 'same=1' });
  };
  return (
    <span class="pf-compare">
      <button type="button" class="btn btn-small" data-testid="profile-compare" onClick={() => setOpen(!open)}
        title="Merge a baseline (another period or other pods) and show the difference">Compare…</button>
      {open && (
        <div class="popover pf-compare-pop" data-testid="profile-compare-popover">
          <label>Baseline period <select class="input" value={shift} data-testid="compare-period"
            onChange={(e) => setShift((e.currentTarget as HTMLSelectElement).value)}>
            {timed && <option value="prev">the previous period of the same length</option>}
            {timed && <option value="day">the same period a day earlier</option>}
            {timed && <option value="week">the same period a week earlier</option>}
            <option value="same">the same period</option>
          </select></label>
          <label>Baseline pods <input class="input" placeholder="same as the profile" value={pods} data-testid="compare-pods"
            onInput={(e) => setPods((e.currentTarget as HTMLInputElement).value)} /></label>
          <div><button type="button" class="btn btn-primary btn-small" data-testid="compare-apply" onClick={apply}>Compare</button>
            <button type="button" class="btn btn-small" onClick={() => setOpen(false)}>Close</button></div>
        </div>
      )}
    </span>
  );
}
