// PodsPage.tsx -- Pods Info (ui.md §5): which pod-restarts produced data in the window,
// grouped namespace → service → pod-restart, with their diagnostic files (counts, inline
// file lists with viewer links) and zip downloads per row, per service and for the whole
// selection. With nothing selected in the rail it shows every pod of the window: dump-only
// pods have no service in the rail, so "select first" would hide them.

import { useMemo, useState } from 'preact/hooks';
import { apiGet, type DumpsSummary } from '../lib/api';
import { useApp, type Win } from '../lib/ctx';
import { fmtBytes, fmtCount, shortPod } from '../lib/format';
import { fmtTs, serverNow } from '../lib/time';
import { buildUrl, navigate, setParams } from '../lib/url';
import type { ScreenProps } from '../shell/Shell';
import { ErrorBanner, Loading, fmtBitrate, fmtShort, useToast, useFetch, zoneLabel } from './common';
import { DownloadSet, FileList, TYPE_LABEL } from './files';
import {
  CALLS_ONLINE_MS, GO_LABEL, GO_TYPES, buildRows, groupRows, selectionScopes, summaryFilter, totals,
  type PodRowModel,
} from './podsModel';
import './pods.css';

export function PodsPage(p: ScreenProps) {
  const { zone } = useApp();
  const { win, sel, disc, route } = p;
  const [toast, showToast] = useToast();
  const [open, setOpen] = useState<Set<string>>(new Set());
  const [flipped, setFlipped] = useState<Set<string>>(new Set());
  const [scopesOpen, setScopesOpen] = useState(false);
  const dumpsOnly = route.params.get('dumpsOnly') === '1';
  const filter = summaryFilter(sel);
  const filterKey = JSON.stringify(filter);

  const sum = useFetch((s) => apiGet<DumpsSummary>('/dumps/summary',
    { ...filter, from: String(win.from), to: String(win.to) }, s),
  [win.fromText, win.toText, p.refresh, filterKey]);

  const rows = useMemo(
    () => buildRows(disc, sum.data?.pods ?? [], sel, win.from, win.to).filter((r) => !dumpsOnly || r.hasDumps),
    [disc, sum.data, sel.services.join('|'), sel.pods.join('|'), dumpsOnly, win.from, win.to]);
  const groups = useMemo(() => groupRows(rows), [rows]);
  const showGo = rows.some((r) => GO_TYPES.some((t) => r.types[t]));
  const colSpan = showGo ? 12 : 11;
  // thousands of pods: start with the services folded so the page stays responsive
  const foldByDefault = rows.length > 200;
  const folded = (k: string) => foldByDefault !== flipped.has(k);
  const flip = (k: string) => setFlipped((s) => toggled(s, k));
  const back = buildUrl(route.path, route.params);
  const now = serverNow();
  const scopes = selectionScopes(sel, rows);
  const winText = `${fmtTs(win.from, zone)} – ${fmtTs(win.to, zone)}`;

  if (win.error) return <div class="pods-page" data-testid="pods-page"><div class="banner banner-red">{win.error}</div></div>;

  let body;
  if (sum.error) body = <ErrorBanner error={sum.error} retry={sum.retry} />;
  else if ((sum.loading && !sum.data) || (!disc && !sum.data)) body = <Loading label="Loading pods and their dumps…" />;
  else if (rows.length === 0) {
    body = (
      <div class="state" data-testid="pods-empty">
        {dumpsOnly ? 'No pod sent diagnostic files' : 'No pod produced calls or diagnostic files'} between {winText}
        {sel.services.length + sel.pods.length > 0 ? ' in the selection' : ''}.
      </div>
    );
  } else {
    body = (
      <div class="pods-scroll">
        <table class="grid pods-grid" data-testid="pods-table">
          <thead>
            <tr>
              <th>Pod</th>
              <th title={`Restart (agent connection) time, ${zone}`}>JVM start</th>
              <th title={`Calls or dump files available, clipped to the window (${zone})`}>Data from–to</th>
              <th title="Online: calls within 2 min, dump files within 5 min">●</th>
              <th class="num">Calls</th>
              <th>Thread dumps</th>
              <th class="num">Top</th>
              <th>GC logs</th>
              <th class="num">Heap</th>
              {showGo && <th>Go profiles</th>}
              <th class="num" title="Diagnostic files received in the window (hover a cell for the current bitrate)">Dumps</th>
              <th>Download</th>
            </tr>
          </thead>
          <tbody>
            {groups.map((g) => {
              const nsRows = g.services.flatMap((s) => s.rows);
              const nt = totals(nsRows);
              // namespaces start open even when services start folded
              const nsFolded = flipped.has('ns:' + g.namespace);
              return [
                <tr key={'ns:' + g.namespace} class="pods-ns-row" data-testid="pods-ns-row">
                  <td colSpan={colSpan}>
                    <button type="button" class="twisty-btn" onClick={() => flip('ns:' + g.namespace)}
                      aria-expanded={!nsFolded}>{nsFolded ? '▸' : '▾'}</button>
                    <b>{g.namespace}</b>
                    <span class="muted small"> {g.services.length} services · {nt.pods} pod-restarts · {fmtCount(nt.calls)} calls
                      {typeSummary(nt.types)}</span>
                  </td>
                </tr>,
                ...(nsFolded ? [] : g.services.flatMap((s) => {
                  const st = totals(s.rows);
                  const sf = folded(s.key);
                  return [
                    <tr key={'svc:' + s.key} class="pods-svc-row" data-testid="pods-svc-row" data-service={s.key}>
                      <td colSpan={colSpan - 1}>
                        <button type="button" class="twisty-btn" onClick={() => flip(s.key)} aria-expanded={!sf}>{sf ? '▸' : '▾'}</button>
                        <b>{s.service}</b>
                        <span class="muted small"> {st.pods} pod-restarts · {fmtCount(st.calls)} calls{typeSummary(st.types)}
                          {st.bytes ? ` · ${fmtBytes(st.bytes)}` : ''}</span>
                      </td>
                      <td class="nowrap">
                        <DownloadSet scope="service" filter={{ namespace: s.namespace, service: s.service }}
                          from={win.from} to={win.to} onToast={showToast} />
                      </td>
                    </tr>,
                    ...(sf ? [] : s.rows.flatMap((r) => [
                      <PodRow key={r.key} r={r} now={now} zone={zone} showGo={showGo} open={open} win={win}
                        onToggle={(t) => setOpen((o) => toggled(o, `${r.key}|${t}`))} onToast={showToast} back={back} />,
                      ...fileRows(r, open, win, p.refresh, back, colSpan),
                    ])),
                  ];
                })),
              ];
            })}
          </tbody>
        </table>
      </div>
    );
  }

  return (
    <div class="pods-page" data-testid="pods-page">
      <div class="pods-head">
        <h1>Pods Info</h1>
        <span class="muted small" data-testid="pods-count">
          {rows.length} pod-restarts · {rows.filter((r) => r.hasDumps).length} with dumps · times in {zoneLabel(zone, win.to)}
          {sel.services.length + sel.pods.length === 0 ? ' · all pods (nothing selected)' : ''}
        </span>
        {sum.loading && sum.data && <span class="spinner" />}
        <span class="spacer" />
        <label class="check small">
          <input type="checkbox" checked={dumpsOnly} data-testid="pods-dumps-only"
            onChange={(e) => setParams({ dumpsOnly: (e.target as HTMLInputElement).checked ? '1' : null }, { replace: true })} />
          only pods with dumps
        </label>
        <span class="nowrap">
        <span class="muted small">Download for {scopes.length === 1 ? scopes[0].label : 'the selection'}: </span>
        {scopes.length === 1
          ? <DownloadSet scope="selection" filter={scopes[0].filter} from={win.from} to={win.to} onToast={showToast} />
          : <button type="button" class="btn btn-small" data-testid="download-selection-open" onClick={() => setScopesOpen(true)}>
              {scopes.length} zips…</button>}
        </span>
      </div>
      {sum.data?.truncated && (
        <div class="banner banner-amber">More than 100 000 pods sent dumps in this window; only the first are listed. Narrow the selection.</div>
      )}
      {!disc && sum.data && rows.length > 0 && (
        <div class="banner banner-info"><span class="spinner" /> Waiting for the pods with calls (left rail); the rows below are the pods with dumps.</div>
      )}
      {disc?.partial && (
        <div class="banner banner-amber">The pod discovery stopped at 100 000 restarts; some pods with calls are missing.</div>
      )}
      {body}
      {scopesOpen && (
        <div class="overlay" onClick={(e) => { if (e.target === e.currentTarget) setScopesOpen(false); }}>
          <div class="dialog" data-testid="download-scopes">
            <h2>Download for the selection</h2>
            <div class="dialog-body">
              <p class="muted small">The download API takes one service or pod at a time: one zip per line.</p>
              <table class="grid">
                <tbody>
                  {scopes.map((sc) => (
                    <tr key={sc.label}><td>{sc.label}</td>
                      <td><DownloadSet scope="scope" filter={sc.filter} from={win.from} to={win.to} onToast={showToast} /></td></tr>
                  ))}
                </tbody>
              </table>
            </div>
            <div class="dialog-buttons"><button type="button" class="btn" onClick={() => setScopesOpen(false)}>Close</button></div>
          </div>
        </div>
      )}
      {toast}
    </div>
  );
}

/** Long pod names keep their distinctive tail (the replica-set and pod hashes). */
export function middleEllipsis(s: string, max: number): string {
  if (s.length <= max) return s;
  const tail = Math.ceil((max - 1) * 0.6);
  return s.slice(0, max - 1 - tail) + '…' + s.slice(s.length - tail);
}

function toggled(s: Set<string>, k: string): Set<string> {
  const n = new Set(s);
  if (n.has(k)) n.delete(k);
  else n.add(k);
  return n;
}

function typeSummary(types: Record<string, number>): string {
  const parts: string[] = [];
  if (types.td) parts.push(`${types.td} TD`);
  if (types.top) parts.push(`${types.top} top`);
  if (types.gc) parts.push(`${types.gc} GC`);
  if (types.heap) parts.push(`${types.heap} heap`);
  const go = GO_TYPES.reduce((a, t) => a + (types[t] ?? 0), 0);
  if (go) parts.push(`${go} pprof`);
  return parts.length ? ' · ' + parts.join(', ') : '';
}

/** Expanded file lists under a row, in a fixed type order. */
function fileRows(r: PodRowModel, open: Set<string>, win: Win, refresh: number, back: string, colSpan: number) {
  return ['td', 'top', 'gc', 'heap', ...GO_TYPES].filter((t) => open.has(`${r.key}|${t}`)).map((t) => (
    <FileList key={`${r.key}|files|${t}`} namespace={r.namespace} pods={r.dumpPods} type={t}
      from={win.from} to={win.to} winKey={`${win.fromText}|${win.toText}|${refresh}`} back={back} colSpan={colSpan} />
  ));
}

interface RowProps {
  r: PodRowModel; now: number; zone: string; showGo: boolean; open: Set<string>; back: string;
  win: Win;
  onToggle: (type: string) => void; onToast: (t: string) => void;
}

function PodRow({ r, now, zone, showGo, open, win, back, onToggle, onToast }: RowProps) {
  const callsOnline = r.callsLast !== null && now - r.callsLast < CALLS_ONLINE_MS;
  const online = callsOnline || r.dumpsOnline;
  const onlineTitle = [
    r.callsLast !== null ? `last call ${fmtTs(r.callsLast, zone)}${callsOnline ? ' (online)' : ''}` : 'no calls in the window',
    r.lastReceived ? `last dump received ${fmtTs(r.lastReceived, zone)}${r.dumpsOnline ? ' (online)' : ''}` : 'no dumps',
  ].join('\n');
  const t = (type: string) => r.types[type];
  const isOpen = (type: string) => open.has(`${r.key}|${type}`);
  const ts = (ms: number | null) => ms === null ? '' : fmtShort(ms, zone, now);
  // dump ranges: minutes are enough (diagtools sends one per minute); seconds in the tooltip
  const hm = (ms: number) => ts(ms).replace(/:\d\d$/, '');
  const countLink = (type: string, testid?: string) => {
    const v = t(type);
    if (!v) return null;
    return (
      <a href="#" class={`count-link ${isOpen(type) ? 'count-open' : ''}`} data-testid={testid} data-type={type}
        title={`${isOpen(type) ? 'Hide' : 'List'} the ${TYPE_LABEL[type]} (${fmtBytes(v.bytes)})`}
        onClick={(e) => { e.preventDefault(); onToggle(type); }}>{v.count}</a>
    );
  };
  const range = (type: string) => {
    const v = t(type);
    if (!v) return null;
    return (
      <span class="muted small range" title={`${fmtTs(v.first_ms, zone)} – ${fmtTs(v.last_ms, zone)}`}>
        {v.count > 1 ? `${hm(v.first_ms)}–${hm(v.last_ms)}` : hm(v.first_ms)}
      </span>
    );
  };
  // relative windows stay relative: a live Pods Info opens a live GC view / heap list
  const gcUrl = buildUrl('/dump/gc', {
    namespace: r.namespace, pod: r.dumpPods[0], from: win.fromText, to: win.toText, back,
    cpod: r.calls > 0 ? `${r.namespace}/${r.service}/${r.pod}` : undefined,
  });
  const tdProfileUrl = buildUrl('/tree', { td: '1', namespace: r.namespace, pod: r.dumpPods.length === 1 ? r.dumpPods[0] : undefined,
    pods: r.dumpPods.length > 1 ? r.dumpPods.join(',') : undefined, from: String(win.from), to: String(win.to) });
  const topUrl = buildUrl('/dump/topseries', { namespace: r.namespace, pod: r.dumpPods[0], from: win.fromText, to: win.toText, back });
  const heapsUrl = buildUrl('/heaps', { from: win.fromText, to: win.toText, pod: `${r.namespace}/${r.service}/${r.pod}` });
  const filter = r.dumpPods.length === 1 ? { namespace: r.namespace, pod: r.dumpPods[0] } : null;
  return (
    <tr class="pods-row" data-testid="pods-row" data-pod={r.pod} data-namespace={r.namespace}>
      <td class="pods-pod" title={r.pod + (r.dumpPods.some((d) => d !== r.pod) ? `\ndumps also under: ${r.dumpPods.join(', ')}` : '')}>
        <span class="pod-name">{middleEllipsis(shortPod(r.pod), 40)}</span>
      </td>
      <td class="nowrap" title={r.restartMs ? fmtTs(r.restartMs, zone) : 'unknown'}>{r.restartMs ? ts(r.restartMs) : ''}</td>
      <td class="nowrap" title={r.from !== null && r.to !== null ? `${fmtTs(r.from, zone)} – ${fmtTs(r.to, zone)}` : ''}>
        {r.from !== null && r.to !== null ? `${ts(r.from)}–${ts(r.to)}` : ''}</td>
      <td title={onlineTitle}><span class={`dot ${online ? 'dot-green' : 'dot-grey'}`} data-testid="pods-online" data-online={String(online)} /></td>
      <td class="num">{r.hasCalls ? fmtCount(r.calls)
        : <span class="tag tag-tiny" title="This pod sent diagnostic files but no profiling data in the window">dumps only</span>}</td>
      <td class="nowrap">{countLink('td', 'pods-td-link')} {range('td')}
        {t('td') && <> <a href={tdProfileUrl} target="_blank" rel="noopener" class="small" data-testid="pods-td-profile"
          title="The thread dumps of the window merged into one sampled tree: one sample = one thread in one dump (new tab)">profile</a></>}</td>
      <td class="num nowrap">{countLink('top', 'pods-top-link')}
        {(t('top')?.count ?? 0) >= 2 && <> <a href={topUrl} target="_blank" rel="noopener" class="small" data-testid="pods-hot-link"
          title="Hot threads across the top dumps: CPU seconds per thread per minute (new tab)">hot</a></>}</td>
      <td class="nowrap">
        {countLink('gc', 'pods-gc-files')}
        {t('gc') && <> <a href={gcUrl} target="_blank" rel="noopener" class="small" data-testid="pods-gc-link"
          title="GC pauses of this pod in the window (new tab)">chart</a></>}
      </td>
      <td class="num">
        {t('heap') && <a href={heapsUrl} class="count-link" data-testid="pods-heap-link" title="Heap dumps of this pod"
          onClick={(e) => { e.preventDefault(); navigate(heapsUrl); }}>{t('heap')!.count}</a>}
      </td>
      {showGo && (
        <td><div class="go-wrap">
          {GO_TYPES.filter((g) => t(g)).map((g) => (
            <span key={g} class="go-chip">{GO_LABEL[g]} {countLink(g, 'pods-go-link')}</span>
          ))}
        </div></td>
      )}
      <td class="num nowrap" title={r.bitrate ? `current bitrate ${fmtBitrate(r.bitrate)}` : ''}>
        {r.bytes ? fmtBytes(r.bytes) : ''}
        {r.bitrate ? <span class="muted small wide-only"> · {fmtBitrate(r.bitrate)}</span> : null}
      </td>
      <td class="nowrap">
        {filter && r.hasDumps
          ? <DownloadSet scope="row" filter={filter} from={win.from} to={win.to} onToast={onToast} present={r.types} />
          : r.hasDumps
            ? <span class="dl-multi">{r.dumpPods.map((dp) => (
                <div key={dp} title={dp}><DownloadSet scope="row" filter={{ namespace: r.namespace, pod: dp }}
                  from={win.from} to={win.to} onToast={onToast} present={r.types} /></div>))}</span>
            : null}
      </td>
    </tr>
  );
}
