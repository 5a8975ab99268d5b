// TopSeriesView.tsx -- hot threads across the top dumps of a pod (ui.md §9.2, issue 19 item
// 6) at /dump/topseries?namespace=&pod=&from=&to=: one row per thread (the busiest first),
// one column per interval between consecutive top dumps, each cell the CPU seconds the
// thread used per minute there (TIME+ differences, topSeries.ts), coloured from white to
// red at a whole core. A cell links to the thread's stack in the thread dump of the same
// minute as the interval's end, when there is one.

import { apiGet, type Dump, type DumpsPage } from '../lib/api';
import { resolveWindow, useApp } from '../lib/ctx';
import { shortPod } from '../lib/format';
import { fmtFull, fmtTs } from '../lib/time';
import { buildUrl, type Route } from '../lib/url';
import { ErrorBanner, Loading, fmtShort, hexNid, useFetch } from './common';
import { closestInMinute, type TopResp } from './dumpModel';
import { ViewerFrame } from './frame';
import { heat, hotThreads, type HotSeries, type TopSnap } from './topSeries';

const MAX_SNAPS = 120;       // two hours of one top dump a minute
const PARALLEL = 4;

interface Loaded { series: HotSeries; tds: Dump[]; snaps: number; listed: number; failed: number }

async function listAll(params: Record<string, string | undefined>, max: number, signal: AbortSignal): Promise<{ dumps: Dump[]; more: boolean }> {
  const out: Dump[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await apiGet<DumpsPage>('/dumps', { ...params, limit: '500', cursor }, signal);
    out.push(...page.dumps);
    if (!page.next_cursor || out.length >= max) return { dumps: out.slice(0, max), more: !!page.next_cursor || out.length > max };
    cursor = page.next_cursor;
  }
}

async function load(namespace: string | undefined, pod: string, from: number, to: number, signal: AbortSignal): Promise<Loaded> {
  const q = { namespace, pod, from: String(from), to: String(to) };
  const [tops, tds] = await Promise.all([
    listAll({ ...q, type: 'top' }, MAX_SNAPS, signal),
    listAll({ ...q, type: 'td', from: String(from - 60000), to: String(to + 60000) }, 5 * MAX_SNAPS, signal),
  ]);
  const snaps: TopSnap[] = [];
  let failed = 0;
  const queue = [...tops.dumps];
  const worker = async () => {
    for (let d = queue.shift(); d; d = queue.shift()) {
      try {
        const t = await apiGet<TopResp>(`/dumps/${encodeURIComponent(d.id)}/top`, undefined, signal);
        snaps.push({ id: d.id, time_ms: d.time_ms, capture_ms: d.capture_ms, rows: t.rows });
      } catch (e) {
        if ((e as Error)?.name === 'AbortError') throw e;
        failed++;   // an unparsable dump leaves a gap, not a failed page
      }
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  return { series: hotThreads(snaps), tds: tds.dumps, snaps: snaps.length, listed: tops.dumps.length + (tops.more ? 1 : 0), failed };
}

export function TopSeriesView({ route }: { route: Route }) {
  const { zone } = useApp();
  const P = route.params;
  const pod = P.get('pod') ?? '';
  const namespace = P.get('namespace') ?? undefined;
  const win = resolveWindow(P, zone);
  const f = useFetch((s) => (pod ? load(namespace, pod, win.from, win.to, s) : Promise.resolve(null)), [pod, namespace, win.fromText, win.toText]);
  const sub = `${pod ? shortPod(pod) : 'no pod'} · ${fmtTs(win.from, zone)} – ${fmtTs(win.to, zone)}`;
  let body;
  if (!pod) body = <div class="state">Open the hot threads from Pods Info: they need a pod (?pod=…).</div>;
  else if (win.error) body = <div class="banner banner-red">{win.error}</div>;
  else if (f.error) body = <ErrorBanner error={f.error} retry={f.retry} />;
  else if (f.loading || !f.data) body = <Loading label="Reading the top dumps…" />;
  else body = <SeriesBody d={f.data} route={route} zone={zone} />;
  return <ViewerFrame route={route} title="Hot threads" docTitle={`Hot threads ${shortPod(pod)}`} sub={sub} testid="topseries-view">{body}</ViewerFrame>;
}

function SeriesBody({ d, route, zone }: { d: Loaded; route: Route; zone: string }) {
  const P = route.params;
  const { intervals, threads } = d.series;
  if (intervals.length === 0) {
    return (
      <div class="state" data-testid="topseries-empty">
        {d.snaps < 2 ? `${d.snaps} top dump${d.snaps === 1 ? '' : 's'} in this window: hot threads need two or more consecutive ones.`
          : 'The top dumps of this window share one time: no interval to measure.'}
      </div>
    );
  }
  const last = intervals[intervals.length - 1].to;
  const tdFor = (k: number) => closestInMinute(d.tds, intervals[k].snap.time_ms, intervals[k].snap.capture_ms);
  const tds = intervals.map((_, k) => tdFor(k));
  const tdUrl = (k: number, tid: number) => {
    const td = tds[k];
    return td ? buildUrl(`/dump/td/${encodeURIComponent(td.id)}`, {
      namespace: P.get('namespace'), pod: P.get('pod'), t: String(td.time_ms), back: P.get('back'), nid: String(tid),
    }) : null;
  };
  return (
    <>
      <div class="viewer-head">
        <span class="fig">{d.snaps} top dumps, {intervals.length} interval{intervals.length === 1 ? '' : 's'}</span>
        <span class="fig muted">{threads.length} of {d.series.threadsSeen} threads with CPU figures, busiest first</span>
        {d.listed > MAX_SNAPS && <span class="tag tag-amber">only the first {MAX_SNAPS} top dumps: narrow the window</span>}
        {d.failed > 0 && <span class="tag tag-amber">{d.failed} top dump{d.failed === 1 ? '' : 's'} could not be read</span>}
      </div>
      <div class="muted small">CPU seconds per minute of each thread between consecutive top dumps (60 = a whole core);
        a cell opens the thread's stack in the thread dump of the same minute.</div>
      <div class="table-scroll">
        <table class="grid topseries" data-testid="topseries-table">
          <thead>
            <tr>
              <th>Thread</th><th class="num">TID</th><th class="num" title="CPU seconds over the series">Σ CPU</th>
              {intervals.map((iv, k) => (
                <th key={k} class="num" title={`${fmtFull(iv.from, zone)} → ${fmtFull(iv.to, zone)}`}>{fmtShort(iv.to, zone, last)}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {threads.map((t) => (
              <tr key={t.tid} data-testid="hot-row" data-tid={t.tid} data-name={t.name}>
                <td class="mono">{t.name}</td>
                <td class="num mono" title={`nid ${hexNid(t.tid)}`}>{t.tid}</td>
                <td class="num"><b>{t.total.toFixed(1)}s</b></td>
                {t.perMin.map((v, k) => {
                  const url = v !== null ? tdUrl(k, t.tid) : null;
                  const text = v === null ? '' : v.toFixed(v < 10 ? 1 : 0);
                  return (
                    <td key={k} class="num hot-cell" data-testid="hot-cell" data-value={v === null ? '' : v.toFixed(3)}
                      style={{ background: heat(v) }}
                      title={v === null ? 'no figure (the thread is not in both top dumps)' : `${v.toFixed(2)} CPU s per minute${url ? '' : ' (no thread dump in that minute)'}`}>
                      {url ? <a href={url} data-testid="hot-cell-link">{text}</a> : text}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
