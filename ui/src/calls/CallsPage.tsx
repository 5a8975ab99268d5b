// CallsPage.tsx -- the calls list (ui.md §3): filter bar, toolbar (columns, export, open
// selected as one tree, chart toggle), the scatter chart, the status line and the virtual
// table, over GET /api/v1/calls, /calls/stats and /calls.csv. The URL holds every filter
// (dur, q, errors, sort, order, cols); the loaded rows, the selection and the scroll
// position do not.
//
// The first page and the stats are streamed (lib/stream.ts): a query that runs longer than
// SLOW_MS shows its progress and the best rows so far (marked provisional) and can be
// cancelled, which stops both requests and keeps those rows. New filters cancel the old
// requests (the loader and the stats effect are per filter set).

import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { apiUrl, isAbort, type Call, type CallsStats, type StatsPoint } from '../lib/api';
import { selectionFilter, useApp, type Selection } from '../lib/ctx';
import { useWidth } from '../lib/width';
import { fmtDuration } from '../lib/format';
import { apiStream, type StreamProgress } from '../lib/stream';
import { fmtListTs, fmtTs, serverNow } from '../lib/time';
import { buildUrl, setParams } from '../lib/url';
import { GC_MAX_PODS, gcPods, useGcOverlay } from './gcOverlay';
import { narrowingChips, type NarrowChip } from './narrow';
import { TimelineChart } from './TimelineChart';
import type { ScreenProps } from '../shell/Shell';
import { busyMs } from './busy';
import { CallsChart } from './CallsChart';
import { CallsTable } from './CallsTable';
import { ColumnSettings } from './ColumnSettings';
import {
  applyColsParam, colForSort, defaultLayout, loadLayout, saveLayout, visibleCols, type ColDef, type Layout,
} from './columns';
import { DEFAULT_DUR, durApiValue, durFromParams } from './durfilter';
import { FilterBar } from './FilterBar';
import { CallsLoader, ROW_CAP } from './loader';
import { progressText, slowest } from './progress';
import { StatusLine } from './StatusLine';
import './calls.css';

/** Above this many ids the tree page gets them through localStorage, not the URL. */
const MAX_URL_IDS = 40;
const CHART_KEY = 'cloudprof.calls.chart';
const CHART_LOG_KEY = 'cloudprof.calls.chartLog';
const CHART_GC_KEY = 'cloudprof.calls.chartGc';
const CHART_TIMELINE_KEY = 'cloudprof.calls.chartTimeline';
/** A query running longer than this shows its progress, provisional rows and Cancel. */
const SLOW_MS = 300;

function readFlag(key: string, dflt: boolean): boolean {
  try { const v = localStorage.getItem(key); return v === null ? dflt : v === '1'; } catch { return dflt; }
}
function writeFlag(key: string, v: boolean): void {
  try { localStorage.setItem(key, v ? '1' : '0'); } catch { /* storage disabled */ }
}

/** A multi-selection that names services needs the discovery answer to list their pods. */
function needsDiscovery(sel: Selection): boolean {
  if (sel.services.length === 1 && sel.pods.length === 0) return false;
  return sel.services.length > 0;
}

function treeUrlFor(p: { id: string; ts_ms: number }): string {
  return `/tree?call=${encodeURIComponent(p.id)}&ts=${p.ts_ms}`;
}

/** Opens several calls as one tree (§3.10): ids in the URL, or in localStorage when many. */
function openMerged(ids: string[]): void {
  if (ids.length > MAX_URL_IDS) {
    const key = Math.random().toString(36).slice(2, 10) + Date.now().toString(36);
    try { localStorage.setItem(`cloudprof.sel.${key}`, JSON.stringify(ids)); } catch { /* quota */ }
    window.open(`/tree?sel=${key}`, '_blank');
    return;
  }
  window.open(`/tree?${ids.map((id) => `call=${encodeURIComponent(id)}`).join('&')}`, '_blank');
}

/** True once `running` has held for `ms` without `key` changing. */
function useSlow(running: boolean, key: string, ms: number): boolean {
  const [slowKey, setSlowKey] = useState<string | null>(null);
  useEffect(() => {
    setSlowKey(null);
    if (!running) return;
    const t = setTimeout(() => setSlowKey(key), ms);
    return () => clearTimeout(t);
  }, [running, key]);
  return running && slowKey === key;
}

function clean(rec: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(rec)) if (v !== undefined && v !== '') out[k] = v;
  return out;
}

interface StatsState {
  key: string;
  data: CallsStats | null;
  error: string | null;
  param: string | null;
  loading: boolean;
  progress: StreamProgress | null;
  cancelled: boolean;
}
const noStats = (key: string, loading = false): StatsState =>
  ({ key, data: null, error: null, param: null, loading, progress: null, cancelled: false });

export function CallsPage(p: ScreenProps) {
  const app = useApp();
  const { win, sel, disc, refresh } = p;
  const params = p.route.params;
  const rootRef = useRef<HTMLDivElement>(null);
  const rootW = useWidth(rootRef);

  // ---- URL state -----------------------------------------------------------------------
  const defaultDur = app.config?.default_duration || DEFAULT_DUR;
  const dur = durFromParams(params, defaultDur);
  const q = params.get('q') ?? '';
  const errorsOnly = params.get('errors') === '1';
  // §3.6: system/proxy calls are hidden unless the URL says hideSystem=0
  const hideSystem = params.get('hideSystem') !== '0';
  const sort = params.get('sort') || 'ts_ms';
  const order: 'asc' | 'desc' = params.get('order') === 'asc' ? 'asc' : 'desc';
  const apiSort = (order === 'desc' ? '-' : '') + sort;
  const selF = selectionFilter(sel, disc);
  const nothing = selF === null;
  const waitingDisc = !nothing && disc === null && needsDiscovery(sel);
  const active = !nothing && !waitingDisc;

  const [reload, setReload] = useState(0);
  const filters = clean({ ...(selF ?? {}), duration: durApiValue(dur), q: q || undefined, error: errorsOnly ? 'true' : undefined,
    hide_system: hideSystem ? 'true' : undefined });
  const filterKey = JSON.stringify([win.fromText, win.toText, filters, refresh, reload]);
  const listKey = `${filterKey}|${apiSort}`;
  // a live window is resolved once per load: every page of it must carry the same bounds
  const frozen = useMemo(() => ({ from: win.from, to: win.to }), [filterKey]);
  const base = { from: String(frozen.from), to: String(frozen.to), ...filters };

  // ---- rows ----------------------------------------------------------------------------
  const [, setTick] = useState(0);
  const [loader, setLoader] = useState<CallsLoader | null>(null);
  useEffect(() => {
    if (!active) { setLoader(null); return; }
    const l = new CallsLoader({ ...base, sort: apiSort }, () => setTick((t) => t + 1));
    setLoader(l);
    void l.more();
    return () => l.dispose();
  }, [listKey, active]);

  // ---- stats (chart + status line) --------------------------------------------------------
  const columns = Math.min(5000, Math.max(50, Math.round((rootW - 64) / 50) * 50));
  const [statsRaw, setStats] = useState<StatsState>(noStats(''));
  const statsAc = useRef<AbortController | null>(null);
  // the filters whose stats the user cancelled: a resize does not start them again (other
  // filters, or the same ones again later, do)
  const statsCancelledFor = useRef<string | null>(null);
  useEffect(() => {
    const key = filterKey;
    if (statsCancelledFor.current !== key) statsCancelledFor.current = null;
    if (!active || rootW === 0) { setStats(noStats(key)); return; }
    if (statsCancelledFor.current === key) return;
    const ac = new AbortController();
    statsAc.current = ac;
    // a resize (other column count) keeps the old points until the new ones arrive
    setStats((s) => (s.key === key ? { ...s, loading: true, error: null, param: null, progress: null, cancelled: false }
      : noStats(key, true)));
    apiStream<CallsStats>('/calls/stats', { ...base, columns: String(columns) }, {
      signal: ac.signal,
      onProgress: (pr) => { if (!ac.signal.aborted) setStats((s) => (s.key === key ? { ...s, progress: pr } : s)); },
    })
      .then((d) => { if (!ac.signal.aborted) setStats({ ...noStats(key), data: d }); })
      .catch((e) => {
        if (isAbort(e) || ac.signal.aborted) return;
        setStats({ ...noStats(key), error: String(e?.message ?? e), param: (e?.body?.parameter as string) ?? null });
      });
    return () => ac.abort();
  }, [filterKey, columns, active]);
  // totals of other filters are never shown next to these rows
  const stats: StatsState = statsRaw.key === filterKey ? statsRaw : noStats(filterKey, active);

  // ---- long queries: progress, provisional rows, cancel ----------------------------------
  const listRunning = !!loader && loader.loading && !loader.started;
  const slow = useSlow(listRunning || stats.loading, listKey, SLOW_MS);
  // the best rows so far, once the query is slow (no flicker for quick ones) or has stopped
  const showSnap = !!loader && loader.provisional && (slow || !loader.loading);
  const cancel = () => {
    loader?.cancel();
    const ac = statsAc.current;
    if (stats.loading && ac && !ac.signal.aborted) {
      ac.abort();
      statsCancelledFor.current = filterKey;
      setStats((s) => ({ ...s, loading: false, progress: null, cancelled: true }));
    }
  };
  const search = slow ? {
    text: progressText(slowest([listRunning ? loader?.progress : null, stats.loading ? stats.progress : null])),
    onCancel: cancel,
  } : null;

  // ---- selection -------------------------------------------------------------------------
  const [selected, setSelected] = useState<Map<string, Call>>(new Map());
  const anchor = useRef<number | null>(null);
  useEffect(() => { setSelected(new Map()); anchor.current = null; }, [listKey]);

  const onRowClick = (i: number, e: MouseEvent) => {
    if (!rows[i]) return;
    const c = rows[i];
    const multi = e.ctrlKey || e.metaKey;
    if (e.shiftKey && anchor.current !== null) {
      const m = multi ? new Map(selected) : new Map<string, Call>();
      const [a, b] = [Math.min(anchor.current, i), Math.max(anchor.current, i)];
      for (let k = a; k <= b && k < rows.length; k++) m.set(rows[k].id, rows[k]);
      setSelected(m);
      return;
    }
    anchor.current = i;
    if (multi) {
      const m = new Map(selected);
      if (m.has(c.id)) m.delete(c.id); else m.set(c.id, c);
      setSelected(m);
    } else setSelected(new Map([[c.id, c]]));
  };

  // ---- columns ---------------------------------------------------------------------------
  const [layoutBase, setLayoutBase] = useState<Layout>(loadLayout);
  const layoutRef = useRef(layoutBase);
  layoutRef.current = layoutBase;
  const colsParam = params.get('cols');
  const layout = applyColsParam(layoutBase, colsParam);
  const cols = visibleCols(layout);
  // Start carries a date prefix when the window reaches before today: widen it by default
  const withDate = fmtListTs(frozen.from, app.zone, serverNow()).includes('/');
  const tableLayout = layout.widths.start || !withDate ? layout : { ...layout, widths: { ...layout.widths, start: 236 } };
  const changeLayout = (l: Layout) => {
    setLayoutBase(l);
    saveLayout(l);
    if (colsParam) setParams({ cols: visibleCols(l).map((c) => c.key).join(',') }, { replace: true });
  };
  const resetLayout = () => {
    saveLayout(null);
    setLayoutBase(defaultLayout());
    if (colsParam) setParams({ cols: null });
  };
  const onResize = (key: string, width: number, done: boolean) => {
    const l = { ...layoutRef.current, widths: { ...layoutRef.current.widths, [key]: width } };
    layoutRef.current = l;
    setLayoutBase(l);
    if (done) saveLayout(l);
  };
  const sortCol = colForSort(sort);
  const onSort = (c: ColDef) => {
    const isActive = sortCol?.key === c.key;
    const next: 'asc' | 'desc' = isActive ? (order === 'asc' ? 'desc' : 'asc') : (c.num || c.key === 'start' ? 'desc' : 'asc');
    if (c.key === 'start' && next === 'desc') setParams({ sort: null, order: null });
    else setParams({ sort: c.sort, order: next });
  };

  // ---- chart -----------------------------------------------------------------------------
  const [chartOn, setChartOn] = useState(() => readFlag(CHART_KEY, true));
  const [chartLog, setChartLog] = useState(() => readFlag(CHART_LOG_KEY, false));
  const [gcOn, setGcOn] = useState(() => readFlag(CHART_GC_KEY, false));
  const [timelineOn, setTimelineOn] = useState(() => readFlag(CHART_TIMELINE_KEY, false));
  const [reveal, setReveal] = useState<{ index: number; seq: number } | null>(null);
  const pickFromTimeline = (c: Call) => {
    const i = rows.findIndex((r) => r.id === c.id);
    setSelected(new Map([[c.id, c]]));
    anchor.current = i >= 0 ? i : null;
    if (i >= 0) setReveal({ index: i, seq: (reveal?.seq ?? 0) + 1 });
  };
  const gcPodList = gcPods(sel.pods);
  const gc = useGcOverlay(chartOn && gcOn, gcPodList, frozen.from, frozen.to);
  const setWindow = (from: number, to: number) => setParams({ from: String(from), to: String(to) });
  const openPoint = (pt: StatsPoint) => window.open(treeUrlFor(pt), '_blank');

  // ---- derived ---------------------------------------------------------------------------
  const rows = showSnap ? loader!.snapshot! : loader?.rows ?? [];
  const version = loader?.version ?? 0;
  const busy = useMemo(() => busyMs(rows), [loader, rows, rows.length]);
  const err = loader?.error ?? null;
  const errParam = (err?.body?.parameter as string | undefined) ?? stats.param ?? undefined;
  const fieldMsg = err?.message ?? stats.error ?? undefined;
  const durError = errParam === 'duration' ? fieldMsg : undefined;
  const qError = errParam === 'q' ? fieldMsg : undefined;
  const fieldErr = !!(durError || qError);
  const windowText = `${fmtTs(frozen.from, app.zone)} → ${fmtTs(frozen.to, app.zone)}`;
  const csvHref = apiUrl('/calls.csv', { ...base, sort: apiSort });
  const xlsxHref = apiUrl('/calls.xlsx', { ...base, sort: apiSort });
  const xlsxOn = app.config?.features?.export_xlsx === true;

  if (nothing) {
    return (
      <div class="cl-page" data-testid="calls-page" ref={rootRef}>
        <div class="state" data-testid="calls-nothing-selected">Select a namespace/service and a period</div>
      </div>
    );
  }

  const selList = [...selected.values()];
  const sumDur = selList.reduce((a, c) => a + c.duration_ms, 0);
  const sumCpu = selList.reduce((a, c) => a + c.cpu_time, 0);
  const empty = !!loader && loader.started && rows.length === 0 && loader.done && !err;
  const skeleton = !loader || (!loader.started && loader.loading && !showSnap);
  const cancelled = loader?.cancelled ? 'list' : stats.cancelled ? 'stats' : null;

  return (
    <div class="cl-page" data-testid="calls-page" ref={rootRef}>
      <div class="cl-bar">
        <FilterBar dur={dur} defaultDur={defaultDur} q={q} errorsOnly={errorsOnly} hideSystem={hideSystem} durError={durError} qError={qError} />
        <div class="cl-tools">
          <ColumnSettings layout={layout} onChange={changeLayout} onReset={resetLayout} />
          <a class="btn" href={csvHref} download data-testid="export-csv"
            title="Download the calls of the current filters and sort as CSV (UTC times, ; separated)">CSV</a>
          {xlsxOn ? (
            <a class="btn" href={xlsxHref} download data-testid="export-xlsx"
              title="Download the calls of the current filters and sort as an Excel workbook (UTC times, a link to each call's tree)">XLSX</a>
          ) : (
            /* an older server: the tooltip sits on a wrapper, a disabled button gets no pointer events */
            <span title="XLSX export is not offered by this server (features.export_xlsx is off)">
              <button type="button" class="btn" disabled data-testid="export-xlsx">XLSX</button>
            </span>
          )}
          <button type="button" class="btn" data-testid="profile-all" disabled={app.config?.features?.profile !== true}
            title="Merge every call matching the filters into one aggregate profile (a new tab): tree, flame graph, hotspots, and a difference against a baseline"
            onClick={() => window.open(buildUrl('/profile', base), '_blank')}>Profile</button>
          <button type="button" class={`btn ${chartOn ? 'btn-on' : ''}`} data-testid="chart-toggle"
            title={chartOn ? 'Hide the chart' : 'Show the chart'}
            onClick={() => { setChartOn(!chartOn); writeFlag(CHART_KEY, !chartOn); }}>Chart</button>
        </div>
      </div>

      {chartOn && (
        <div class="cl-chart-row">
          {timelineOn ? (
            <TimelineChart calls={rows} from={frozen.from} to={frozen.to} zone={app.zone} selected={selList} onPick={pickFromTimeline} />
          ) : (
          <CallsChart points={stats.data?.points ?? []} from={frozen.from} to={frozen.to} zone={app.zone}
            log={chartLog} loading={stats.loading} columnMs={stats.data?.column_ms}
            cancelled={stats.cancelled} onWindow={setWindow} onOpen={openPoint} gc={gcOn && gcPodList ? gc.pauses : null} />
          )}
          <span class="tp-seg cl-kind" role="group" aria-label="Chart">
            {([['scatter', 'Scatter', 'All matching calls: start × duration'], ['timeline', 'Timeline', 'The loaded calls as bars from start to end']] as const).map(([k, l, t]) => (
              <button key={k} type="button" title={t} data-testid={`chart-kind-${k}`}
                class={`btn btn-small ${(k === 'timeline') === timelineOn ? 'btn-on' : ''}`}
                onClick={() => { setTimelineOn(k === 'timeline'); writeFlag(CHART_TIMELINE_KEY, k === 'timeline'); }}>{l}</button>
            ))}
          </span>
          {!timelineOn && <><label class="check cl-log small" title="Logarithmic duration axis">
            <input type="checkbox" data-testid="chart-log" checked={chartLog}
              onChange={() => { setChartLog(!chartLog); writeFlag(CHART_LOG_KEY, !chartLog); }} />log
          </label>
          <label class="check cl-log cl-gc small" title={gcPodList ? 'GC pauses of the selected pods over the chart (from their GC logs)' : `Select up to ${GC_MAX_PODS} pods in the rail to overlay their GC pauses`}>
            <input type="checkbox" data-testid="chart-gc" checked={gcOn && !!gcPodList} disabled={!gcPodList}
              onChange={() => { setGcOn(!gcOn); writeFlag(CHART_GC_KEY, !gcOn); }} />GC
            {gcOn && gcPodList && (gc.loading ? <span class="spinner" />
              : <span class="muted" data-testid="chart-gc-count">{gc.error ? ` (${gc.error})` : ` ${gc.pauses.length}`}</span>)}
          </label></>}
        </div>
      )}

      <div class="cl-status-row">
        <StatusLine loaded={rows.length} allLoaded={!!loader?.done} busy={busy} stats={stats.data}
          statsError={stats.error && !fieldErr ? stats.error : null} loading={!!loader?.loading || stats.loading}
          search={search} provisional={showSnap} statsCancelled={stats.cancelled} />
        {selected.size >= 2 && (
          <button type="button" class="btn btn-primary btn-small cl-merge" data-testid="merge-selected"
            title="Open the selected calls merged into one call tree (new tab); Ctrl-click toggles a row, Shift-click selects a range"
            onClick={() => openMerged(selList.map((c) => c.id))}>
            Open {selected.size} calls as one tree (Duration: {fmtDuration(sumDur)}, CPU: {fmtDuration(sumCpu)})
          </button>
        )}
        {selected.size === 1 && <span class="muted small cl-selhint">Ctrl-click or Shift-click more rows to open them as one tree</span>}
      </div>

      <Banners loader={loader} fieldErr={fieldErr} statsPartial={stats.data?.partial_reasons ?? []}
        narrow={narrowingChips({ dur, errorsOnly, from: frozen.from, to: frozen.to, pods: sel.pods })}
        cancelled={cancelled} shown={rows.length} onRetry={() => setReload((r) => r + 1)} />

      <CallsTable rows={rows} version={version} cols={cols} layout={tableLayout} zone={app.zone} traceLink={app.config?.trace_link}
        sortKey={sortCol?.key} order={order} selected={selected} resetKey={listKey} reveal={reveal}
        canLoadMore={!!loader?.canLoadMore && !loader.stalled} skeleton={skeleton} provisional={showSnap}
        body={empty ? (
          <div class="state" data-testid="calls-empty">
            No calls in this window ({windowText}){Object.keys(filters).some((k) => k === 'duration' || k === 'q' || k === 'error') ? ' matching the filters' : ''}.
          </div>
        ) : fieldErr && rows.length === 0 ? <div class="state">Fix the highlighted filter.</div>
          : loader?.cancelled && rows.length === 0 ? <div class="state" data-testid="calls-cancelled-empty">The search was cancelled before it found any matching call.</div>
          : loader?.stalled && rows.length === 0 ? <div class="state">No matching calls in the pages scanned so far; the window is not finished.</div>
          : undefined}
        onSort={onSort} onResize={onResize} onRowClick={onRowClick} onNearEnd={() => void loader?.more()} />

      {loader && loader.started && (rows.length > 0 || loader.stalled) && !loader.done && !err && (
        <div class="cl-foot">
          {loader.capped ? (
            <span class="banner banner-info" data-testid="calls-cap">
              The list keeps at most {ROW_CAP.toLocaleString('en-US').replace(/,/g, ' ')} rows: refine the filter (a duration floor, a query, fewer pods) to see the rest.
            </span>
          ) : (
            <>
              <button type="button" class="btn" data-testid="calls-load-more" disabled={loader.loading}
                onClick={() => void loader.more()}>{loader.loading ? 'Loading…' : loader.stalled ? 'Continue scanning' : 'Load more'}</button>
              {loader.stalled && <span class="muted">No matching calls in the last pages scanned; the window continues.</span>}
            </>
          )}
        </div>
      )}
    </div>
  );
}

function Banners({ loader, fieldErr, statsPartial, narrow, cancelled, shown, onRetry }: {
  loader: CallsLoader | null; fieldErr: boolean; statsPartial: string[];
  /** one-click narrowing when the scan hit the server's budget (too wide, ui.md §1.5) */
  narrow: NarrowChip[];
  /** what a Cancel stopped: the first page (and the stats), or only the stats */
  cancelled: 'list' | 'stats' | null; shown: number; onRetry: () => void;
}) {
  if (!loader) return null;
  const err = loader.error;
  const reasons = [...new Set([...loader.partialReasons, ...statsPartial])];
  return (
    <>
      {err && loader.expired && (
        <div class="banner banner-amber" data-testid="calls-expired">
          Scroll position expired — reload from the first page
          <button type="button" class="btn btn-small" onClick={() => loader.retry()}>Reload</button>
        </div>
      )}
      {err && !loader.expired && !fieldErr && (
        <div class="banner banner-red" data-testid="calls-error">
          <span>Could not load calls: {err.message}</span>
          <button type="button" class="btn btn-small" onClick={() => (loader.rows.length ? loader.retry() : onRetry())}>Retry</button>
        </div>
      )}
      {cancelled && !err && (
        <div class="banner banner-info" data-testid="calls-cancelled">
          <span>{cancelled === 'stats' ? 'Cancelled — the chart and the totals are incomplete'
            : shown > 0 ? 'Cancelled — showing partial results' : 'Cancelled — no calls found so far'}</span>
          <button type="button" class="btn btn-small" data-testid="calls-retry" onClick={onRetry}>Retry</button>
        </div>
      )}
      {reasons.length > 0 && (
        <div class="banner banner-amber" data-testid="calls-partial">
          <span>Partial results ({reasons.map(partialText).join('; ')}): the rows shown are correct, there may be more.</span>
          {reasons.includes('scan_budget') && narrow.length > 0 && (
            <span class="chips" data-testid="narrow-chips"><span class="muted small">Narrow:</span>
              {narrow.map((c) => (
                <button type="button" key={c.key} class="chip" data-testid="narrow-chip" data-key={c.key} onClick={() => setParams(c.patch)}>{c.label}</button>
              ))}</span>
          )}
          <button type="button" class="btn btn-small" onClick={onRetry}>Retry</button>
        </div>
      )}
    </>
  );
}

function partialText(r: string): string {
  if (r === 'scan_budget') return 'the server\'s limit of calls examined was reached';
  if (r === 'response_size') return 'a page reached its size cap';
  return r;
}
