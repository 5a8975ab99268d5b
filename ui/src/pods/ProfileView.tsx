// ProfileView.tsx -- the Go pprof viewer (ui.md §9.4) at /dump/profile/<id>: sample-type
// chooser and the top table (flat, flat %, cum, cum %) per function. The API gives no
// per-type total, so the table asks for every function (top=10000) and the total is the sum
// of the flat values (each sample's value is flat in exactly one function); 100 rows are
// shown at first.

import { useState } from 'preact/hooks';
import { apiGet, apiUrl } from '../lib/api';
import { useApp } from '../lib/ctx';
import { fmtCount, fmtDuration, shortPod } from '../lib/format';
import { fmtTs } from '../lib/time';
import { setParams, type Route } from '../lib/url';
import { ErrorBanner, Loading, useFetch } from './common';
import { fmtProfileValue, pct, type ProfileResp } from './dumpModel';
import { TYPE_LABEL } from './files';
import { ViewerFrame } from './frame';

const ALL_FUNCTIONS = 10000;
const FIRST_ROWS = 100;

export function ProfileView({ id, route }: { id: string; route: Route }) {
  const { zone } = useApp();
  const P = route.params;
  const st = P.get('st') ?? '';
  const f = useFetch((s) => apiGet<ProfileResp>(`/dumps/${encodeURIComponent(id)}/profile`,
    { sample_type: st || undefined, top: String(ALL_FUNCTIONS) }, s), [id, st]);
  const download = apiUrl(`/dumps/${encodeURIComponent(id)}`);
  const pod = P.get('pod');
  const t = Number(P.get('t'));
  const sub = [pod ? shortPod(pod) : null, t > 0 ? fmtTs(t, zone) : null].filter(Boolean).join(' · ');

  let body;
  if (f.error) body = <ErrorBanner error={f.error} retry={f.retry} downloadHref={download} />;
  else if (f.loading && !f.data) body = <Loading label="Reading the profile…" />;
  else if (f.data) body = <ProfileBody d={f.data} zone={zone} download={download} loading={f.loading} byCum={P.get('sort') === 'cum'} />;
  const kind = (f.data as { type?: string } | null)?.type;
  const title = kind ? (TYPE_LABEL[kind] ?? 'Go profile').replace(/s$/, '') : 'Go profile';
  return <ViewerFrame route={route} title={title} sub={sub} testid="profile-view">{body}</ViewerFrame>;
}

function ProfileBody({ d, zone, download, loading, byCum }: {
  d: ProfileResp; zone: string; download: string; loading: boolean; byCum: boolean;
}) {
  const [all, setAll] = useState(false);
  const [q, setQ] = useState('');
  const type = d.sample_types[d.sample_type] ?? { type: '?', unit: 'count' };
  const total = d.top.reduce((a, r) => a + r.flat, 0);
  const complete = d.top.length < ALL_FUNCTIONS;
  const needle = q.trim().toLowerCase();
  const filtered = needle ? d.top.filter((r) => r.name.toLowerCase().includes(needle) || r.file.toLowerCase().includes(needle)) : d.top;
  // the server orders by flat; cum order (pprof -cum) is a client-side re-sort of the same list
  const rows = byCum ? [...filtered].sort((a, b) => b.cum - a.cum || b.flat - a.flat) : filtered;
  const shown = all ? rows : rows.slice(0, FIRST_ROWS);
  const v = (x: number) => fmtProfileValue(x, type.unit);
  return (
    <>
      <div class="viewer-head" data-testid="profile-header">
        <label class="fig">Sample type{' '}
          <select class="input" data-testid="profile-sample-type" value={String(d.sample_type)}
            onChange={(e) => setParams({ st: (e.target as HTMLSelectElement).value }, { replace: true })}>
            {d.sample_types.map((s, i) => <option key={i} value={String(i)}>{s.type} ({s.unit})</option>)}
          </select>
        </label>
        {loading && <span class="spinner" />}
        <span class="fig">total <b>{v(total)}</b>{complete ? '' : ' (top 10 000 functions)'}</span>
        <span class="fig">{fmtCount(d.samples)} samples · {fmtCount(d.functions)} functions · {fmtCount(d.locations)} locations</span>
        {d.time_ms ? <span class="fig">taken {fmtTs(d.time_ms, zone)}</span> : null}
        {d.duration_ms > 0 && <span class="fig">over {fmtDuration(d.duration_ms)}</span>}
        {d.period_type && d.period ? <span class="fig muted">period {fmtProfileValue(d.period, d.period_type.unit)} {d.period_type.type}</span> : null}
        <a href={`/tree?pprof=${encodeURIComponent(d.id)}&sample_type=${encodeURIComponent(type.type)}&view=flame`} target="_blank" rel="noopener"
          class="btn btn-small" data-testid="profile-flame-link" title="The profile's stacks for this sample type as a flame graph, icicle, tree and hotspots (new tab)">Flame graph</a>
        <a href={download} download class="small">Download</a>
      </div>
      <div class="viewer-tools">
        <input class="input" type="search" placeholder="Filter functions" value={q} data-testid="profile-filter"
          onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
        <span class="muted small">{rows.length} functions{needle ? ' match' : ''}</span>
      </div>
      {total === 0 ? <div class="state">Every sample of this type is zero.</div> : (
        <div class="table-scroll">
          <table class="grid" data-testid="profile-top">
            <thead>
              <tr>
                <th class="num">#</th>
                <th class="num sortable" data-testid="profile-sort-flat" onClick={() => setParams({ sort: null }, { replace: true })}>flat{byCum ? '' : ' ▾'}</th>
                <th class="num">flat %</th>
                <th class="num sortable" data-testid="profile-sort-cum" onClick={() => setParams({ sort: 'cum' }, { replace: true })}>cum{byCum ? ' ▾' : ''}</th>
                <th class="num">cum %</th><th>Function</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((r, i) => (
                <tr key={r.name + i} data-testid="profile-row">
                  <td class="num muted">{i + 1}</td>
                  <td class="num">{v(r.flat)}</td>
                  <td class="num">{pct(r.flat, total)}</td>
                  <td class="num">{v(r.cum)}</td>
                  <td class="num">{pct(r.cum, total)}</td>
                  <td class="mono" title={r.file}>{r.name}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {!all && rows.length > shown.length && (
            <button type="button" class="btn btn-small" onClick={() => setAll(true)}>Show all {rows.length} functions</button>
          )}
        </div>
      )}
    </>
  );
}
