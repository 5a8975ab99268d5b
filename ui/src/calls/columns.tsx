// columns.tsx -- the columns of the calls table (ui.md §3.2): label, the API sort column
// (docs/API.md), width, cell rendering with the red thresholds of §1.4, and the per-browser
// layout (order, hidden, widths) kept in localStorage, optionally overridden by the URL's
// `cols` parameter.

import type { ComponentChildren } from 'preact';
import type { Call } from '../lib/api';
import { durationDot, fmtBytes, fmtCount, fmtDuration, shortPod } from '../lib/format';
import { fmtTs } from '../lib/time';
import { cachedListTs } from './fasttime';
import { cachedTitle, traceIds, traceLink } from './title';

export interface CellCtx { zone: string; now: number; traceLink?: string | null }

export interface ColDef {
  key: string;
  label: string;
  short?: string;          // header text when the label is too wide
  sort: string;            // API sort column
  width: number;           // default px
  num: boolean;            // right-aligned; a first click sorts descending
  hidden?: boolean;        // hidden by default
  cell: (c: Call, x: CellCtx) => ComponentChildren;
  tip?: (c: Call, x: CellCtx) => string | undefined;   // computed on hover only
  red?: (c: Call) => boolean;
}

const KiB = 1024, MiB = 1024 * 1024;

export function treeHref(c: Call): string {
  return `/tree?call=${encodeURIComponent(c.id)}&ts=${c.ts_ms}`;
}

function durTip(c: Call): string | undefined {
  if (!c.suspend_ms && !c.queue_wait_ms) return undefined;
  const exec = Math.max(0, c.duration_ms - c.suspend_ms);
  return `${fmtDuration(exec)} execution + ${fmtDuration(c.suspend_ms)} gc/swap + ${fmtDuration(c.queue_wait_ms)} waited in queue`;
}

function durationCell(c: Call): ComponentChildren {
  return (
    <a class="cl-dur" href={treeHref(c)} target="_blank" rel="noopener" data-testid="call-link" title={durTip(c)}>
      <span class={`dot ${durationDot(c.duration_ms)}`} />{fmtDuration(c.duration_ms)}
    </a>
  );
}

/** The "ids" chip (§3.3): the call's trace/request ids in the tooltip; a click copies them.
 *  With the server's --trace-link, each id also gets a link to the tracing system. */
function idsChip(c: Call, template?: string | null): ComponentChildren {
  const ids = traceIds(c);
  if (!ids.length) return null;
  const text = ids.map(([n, v]) => `${n}: ${v}`).join('\n');
  const links = ids.map(([n, v]) => [n, v, traceLink(template, n, v)] as const).filter(([, , u]) => u);
  return (
    <>
      <span class="tag tag-ids" data-testid="call-ids" title={`${text}\n(click to copy)`}
        onClick={(e) => { e.stopPropagation(); navigator.clipboard?.writeText(ids.map(([, v]) => v).join(' ')).catch(() => {}); }}>ids</span>
      {links.map(([n, v, u]) => (
        <a key={n + v} class="tag tag-ids" data-testid="call-id-link" href={u!} target="_blank" rel="noopener noreferrer"
          title={`open ${n} ${v}`} onClick={(e) => e.stopPropagation()}>↗</a>
      ))}
    </>
  );
}

function titleCell(c: Call, x?: CellCtx): ComponentChildren {
  const t = cachedTitle(c);
  return (
    <>
      <span class="cl-title-text">{t.text}</span>
      {c.error && <span class="tag tag-red" title={c.params['call.red']?.join(', ')}>error</span>}
      {c.sql && <span class="tag tag-sql" data-testid="call-sql" title="the call ran SQL (open its tree for the statements)">sql</span>}
      {!c.trace_available && <span class="tag tag-amber" title={`no trace: ${c.trace_dropped_reason ?? 'unknown reason'}`}>no trace</span>}
      {idsChip(c, x?.traceLink)}
    </>
  );
}

const pct15 = (c: Call, floor: number) => Math.max(0.15 * c.duration_ms, floor);

export const COLUMNS: ColDef[] = [
  { key: 'start', label: 'Start', sort: 'ts_ms', width: 160, num: false,
    cell: (c, x) => cachedListTs(c, x.zone, x.now), tip: (c, x) => fmtTs(c.ts_ms, x.zone) },
  { key: 'duration', label: 'Duration', sort: 'duration_ms', width: 84, num: true,
    cell: durationCell, red: (c) => c.duration_ms > 10000 },
  { key: 'cpu', label: 'CPU', sort: 'cpu_time', width: 66, num: true,
    cell: (c) => fmtDuration(c.cpu_time), red: (c) => c.cpu_time > 10000 },
  { key: 'suspension', label: 'Suspension', short: 'Susp.', sort: 'suspend_ms', width: 62, num: true,
    cell: (c) => fmtDuration(c.suspend_ms), red: (c) => c.suspend_ms > pct15(c, 2000) },
  { key: 'queue', label: 'Queue', sort: 'queue_wait_ms', width: 62, num: true,
    cell: (c) => fmtDuration(c.queue_wait_ms), red: (c) => c.queue_wait_ms > pct15(c, 500) },
  { key: 'calls', label: 'Calls', sort: 'calls', width: 56, num: true,
    cell: (c) => fmtCount(c.calls), red: (c) => c.calls >= 500000 },
  { key: 'transactions', label: 'Transactions', short: 'Trans.', sort: 'transactions', width: 58, num: true,
    cell: (c) => fmtCount(c.transactions), red: (c) => c.transactions > 10 },
  { key: 'disk', label: 'Disk I/O', sort: 'file_read', width: 70, num: true,
    cell: (c) => fmtBytes(c.file_read + c.file_written), red: (c) => c.file_read + c.file_written >= 200 * KiB,
    tip: (c) => `read ${fmtBytes(c.file_read)}, written ${fmtBytes(c.file_written)}` },
  { key: 'net', label: 'Net I/O', sort: 'net_read', width: 70, num: true,
    cell: (c) => fmtBytes(c.net_read + c.net_written), red: (c) => c.net_read + c.net_written >= MiB,
    tip: (c) => `read ${fmtBytes(c.net_read)}, written ${fmtBytes(c.net_written)}` },
  { key: 'memory', label: 'Memory', sort: 'memory_used', width: 72, num: true,
    cell: (c) => fmtBytes(c.memory_used), red: (c) => c.memory_used > 10 * MiB },
  { key: 'logs', label: 'Logs', sort: 'logs_generated', width: 110, num: true, hidden: true,
    cell: (c) => `${fmtBytes(c.logs_generated)} / ${fmtBytes(c.logs_written)}`,
    tip: () => 'log bytes generated / written' },
  { key: 'namespace', label: 'Namespace', sort: 'namespace', width: 110, num: false, hidden: true, cell: (c) => c.namespace },
  { key: 'service', label: 'Service', sort: 'service', width: 130, num: false, hidden: true, cell: (c) => c.service },
  { key: 'pod', label: 'Pod', sort: 'pod', width: 136, num: false, cell: (c) => shortPod(c.pod),
    tip: (c, x) => `${c.namespace}/${c.service}/${c.pod}, restart ${fmtTs(c.restart_ms, x.zone)}` },
  { key: 'thread', label: 'Thread', sort: 'thread', width: 150, num: false, hidden: true, cell: (c) => c.thread },
  { key: 'title', label: 'Title', sort: 'method', width: 320, num: false, cell: titleCell,
    tip: (c) => cachedTitle(c).tooltip },
];

export const COL_BY_KEY = new Map(COLUMNS.map((c) => [c.key, c]));
const BY_SORT = new Map(COLUMNS.map((c) => [c.sort, c]));

/** The column an API sort name belongs to (aliases `ts`, `duration` included). */
export function colForSort(sort: string): ColDef | undefined {
  if (sort === 'ts') return COL_BY_KEY.get('start');
  if (sort === 'duration') return COL_BY_KEY.get('duration');
  return BY_SORT.get(sort);
}

// ---- layout ------------------------------------------------------------------------------

export interface Layout { order: string[]; hidden: string[]; widths: Record<string, number> }

const LAYOUT_KEY = 'cloudprof.calls.columns';
export const MIN_WIDTH = 36;

export function defaultLayout(): Layout {
  return { order: COLUMNS.map((c) => c.key), hidden: COLUMNS.filter((c) => c.hidden).map((c) => c.key), widths: {} };
}

/** Keeps only known keys and appends columns a newer version added. */
export function normalizeLayout(l: Partial<Layout> | null | undefined): Layout {
  const d = defaultLayout();
  if (!l || !Array.isArray(l.order)) return d;
  const order = l.order.filter((k) => COL_BY_KEY.has(k));
  for (const k of d.order) if (!order.includes(k)) order.push(k);
  const hidden = Array.isArray(l.hidden) ? l.hidden.filter((k) => COL_BY_KEY.has(k)) : d.hidden;
  const widths: Record<string, number> = {};
  for (const [k, v] of Object.entries(l.widths ?? {})) {
    if (COL_BY_KEY.has(k) && typeof v === 'number' && v >= MIN_WIDTH) widths[k] = Math.round(v);
  }
  if (order.every((k) => hidden.includes(k))) return { ...d, widths };
  return { order: [...new Set(order)], hidden: [...new Set(hidden)], widths };
}

export function loadLayout(): Layout {
  try { return normalizeLayout(JSON.parse(localStorage.getItem(LAYOUT_KEY) ?? 'null')); } catch { return defaultLayout(); }
}

export function saveLayout(l: Layout | null): void {
  try {
    if (l) localStorage.setItem(LAYOUT_KEY, JSON.stringify(l));
    else localStorage.removeItem(LAYOUT_KEY);
  } catch { /* storage disabled */ }
}

/** The URL's `cols=a,b,c` (visible columns in order) applied over a layout. */
export function applyColsParam(l: Layout, cols: string | null): Layout {
  if (!cols) return l;
  const vis = cols.split(',').map((s) => s.trim()).filter((k) => COL_BY_KEY.has(k));
  if (!vis.length) return l;
  const rest = l.order.filter((k) => !vis.includes(k));
  return { order: [...vis, ...rest], hidden: rest, widths: l.widths };
}

export function visibleCols(l: Layout): ColDef[] {
  return l.order.filter((k) => !l.hidden.includes(k)).map((k) => COL_BY_KEY.get(k)!);
}

export function colWidth(l: Layout, c: ColDef): number {
  return l.widths[c.key] ?? c.width;
}
