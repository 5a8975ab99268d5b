// CallsTable.tsx -- the virtual calls table (ui.md §3.2, §3.7, §3.10): one scroll container
// with a sticky header; the body is as tall as all rows but only the rows in view (plus a
// small overscan) are in the DOM, at a fixed row height. Scrolling near the end asks for
// the next page. Headers sort (server-side) and resize by dragging their right edge.

import type { ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { Call } from '../lib/api';
import { serverNow } from '../lib/time';
import { colWidth, MIN_WIDTH, type ColDef, type Layout } from './columns';

export const ROW_H = 24;
const OVERSCAN = 8;

/** rows from the end at which the next page is requested */
const NEAR_END = 300;

export interface TableProps {
  rows: Call[];
  version: number;
  cols: ColDef[];
  layout: Layout;
  zone: string;
  traceLink?: string | null;     // the server's --trace-link (the ids chip's links)
  sortKey: string | undefined;   // key of the sorted column
  order: 'asc' | 'desc';
  selected: { has(id: string): boolean };
  /** changes when the list is reloaded: the scroll position returns to the top */
  resetKey: string;
  canLoadMore: boolean;
  skeleton: boolean;
  /** the rows are the best found so far by a query still running (or cancelled): muted */
  provisional?: boolean;
  body?: ComponentChildren;      // replaces the rows (empty state)
  onSort: (c: ColDef) => void;
  onResize: (key: string, width: number, done: boolean) => void;
  onRowClick: (index: number, e: MouseEvent) => void;
  onNearEnd: () => void;
  /** scroll so that this row is in view (a new `seq` asks again) */
  reveal?: { index: number; seq: number } | null;
}

export function CallsTable(p: TableProps) {
  const ref = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [viewH, setViewH] = useState(600);
  const raf = useRef(0);

  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setViewH(el.clientHeight));
    ro.observe(el);
    setViewH(el.clientHeight);
    return () => ro.disconnect();
  }, []);

  useLayoutEffect(() => {
    if (ref.current) ref.current.scrollTop = 0;
    setScrollTop(0);
  }, [p.resetKey]);

  useEffect(() => () => cancelAnimationFrame(raf.current), []);

  useLayoutEffect(() => {
    const el = ref.current;
    if (!el || !p.reveal) return;
    const y = p.reveal.index * ROW_H;
    if (y < el.scrollTop || y + ROW_H > el.scrollTop + el.clientHeight) {
      el.scrollTop = Math.max(0, y - el.clientHeight / 2);
      setScrollTop(el.scrollTop);
    }
  }, [p.reveal?.seq]);

  const onScroll = () => {
    // one state update per frame, however many scroll events arrive
    if (raf.current) return;
    raf.current = requestAnimationFrame(() => {
      raf.current = 0;
      if (ref.current) setScrollTop(ref.current.scrollTop);
    });
  };

  const n = p.rows.length;
  // A fixed number of row slots: row i lives in slot i mod slots, and the slots are always
  // rendered in slot order with each row absolutely placed. Rows that scroll out give their
  // DOM nodes to the rows that scroll in, and no node ever moves in the DOM: scrolling only
  // rewrites texts and offsets (no creating, removing or re-ordering nodes).
  const slots = Math.ceil(viewH / ROW_H) + 2 * OVERSCAN + 1;
  const first = Math.max(0, Math.min(Math.floor(scrollTop / ROW_H) - OVERSCAN, n - slots));
  const last = Math.min(n, first + slots);

  useEffect(() => {
    if (p.canLoadMore && n > 0 && last >= n - NEAR_END) p.onNearEnd();
  }, [last, n, p.canLoadMore, p.version]);

  const widths = p.cols.map((c) => colWidth(p.layout, c));
  const total = widths.reduce((a, b) => a + b, 0);
  const cellStyle = (i: number): Record<string, string> => (i === p.cols.length - 1
    ? { flex: `1 0 ${widths[i]}px` } : { width: `${widths[i]}px` });
  const styles = p.cols.map((_, i) => cellStyle(i));

  const onBodyClick = (e: MouseEvent) => {
    const t = e.target as HTMLElement;
    if (t.closest('a')) return;            // the Duration link opens the tree, no selection change
    const row = t.closest('.cl-row') as HTMLElement | null;
    if (row) p.onRowClick(Number(row.dataset.index), e);
  };
  // tooltips are computed when the pointer enters a cell, not for every rendered row (some
  // need Intl time formatting)
  const onBodyOver = (e: MouseEvent) => {
    const cell = (e.target as HTMLElement).closest('.cl-cell') as HTMLElement | null;
    const row = cell?.parentElement as HTMLElement | null;
    if (!cell || !row) return;
    const c = p.rows[Number(row.dataset.index)];
    // nodes are recycled: the tooltip is redone when the cell now shows another call
    const stamp = c ? `${c.id}|${p.zone}` : '';
    if (cell.dataset.tip === stamp) return;
    cell.dataset.tip = stamp;
    cell.removeAttribute('title');
    const col = p.cols.find((x) => x.key === cell.dataset.col);
    const tip = c && col?.tip?.(c, { zone: p.zone, now: serverNow() });
    if (tip) cell.title = tip;
  };
  const onBodyMouseDown = (e: MouseEvent) => {
    if (e.shiftKey) e.preventDefault();    // Shift-click selects rows, not text
  };

  const ctx = { zone: p.zone, now: serverNow(), traceLink: p.traceLink };
  const rows: ComponentChildren[] = [];
  for (let s = 0; s < slots; s++) {
    const i = first + ((s - (first % slots)) + slots) % slots;
    if (i >= last) continue;
    const c = p.rows[i];
    const sel = p.selected.has(c.id);
    rows.push(
      <div key={s} class={`cl-row${sel ? ' selected' : ''}${c.error ? ' cl-error' : ''}${i % 2 ? ' cl-odd' : ''}`}
        style={{ transform: `translateY(${i * ROW_H}px)` }} role="row" data-testid="calls-row" data-id={c.id} data-index={i}>
        {p.cols.map((col, j) => (
          <div key={col.key} role="gridcell" style={styles[j]} data-col={col.key}
            class={`cl-cell cl-c-${col.key}${col.num ? ' num' : ''}${col.red?.(c) ? ' red' : ''}`}>
            {col.cell(c, ctx)}
          </div>
        ))}
      </div>,
    );
  }

  return (
    <div class={`cl-scroll${p.provisional ? ' cl-provisional' : ''}`} ref={ref} onScroll={onScroll} data-testid="calls-table" role="grid" aria-rowcount={n}>
      <div class="cl-inner" style={{ minWidth: `${total}px` }}>
        <div class="cl-head" role="row">
          {p.cols.map((col, j) => (
            <HeaderCell key={col.key} col={col} style={styles[j]} width={widths[j]}
              sort={p.sortKey === col.key ? p.order : undefined} onSort={p.onSort} onResize={p.onResize} />
          ))}
        </div>
        {p.body ?? (p.skeleton ? <Skeleton /> : (
          <div class="cl-body" style={{ height: `${n * ROW_H}px` }} onClick={onBodyClick} onMouseDown={onBodyMouseDown} onMouseOver={onBodyOver}>
            {rows}
          </div>
        ))}
      </div>
    </div>
  );
}

function Skeleton() {
  return <div class="cl-skeleton">{Array.from({ length: 8 }, (_, i) => <div key={i} class="skeleton" />)}</div>;
}

interface HeaderProps {
  col: ColDef;
  style: Record<string, string>;
  width: number;
  sort: 'asc' | 'desc' | undefined;
  onSort: (c: ColDef) => void;
  onResize: (key: string, width: number, done: boolean) => void;
}

function HeaderCell({ col, style, width, sort, onSort, onResize }: HeaderProps) {
  const startDrag = (e: MouseEvent) => {
    e.preventDefault();
    e.stopPropagation();
    const x0 = e.clientX;
    const w0 = width;
    const w = (ev: MouseEvent) => Math.max(MIN_WIDTH, Math.round(w0 + ev.clientX - x0));
    const move = (ev: MouseEvent) => onResize(col.key, w(ev), false);
    const up = (ev: MouseEvent) => {
      window.removeEventListener('mousemove', move);
      window.removeEventListener('mouseup', up);
      document.body.classList.remove('cl-resizing');
      onResize(col.key, w(ev), true);
    };
    document.body.classList.add('cl-resizing');
    window.addEventListener('mousemove', move);
    window.addEventListener('mouseup', up);
  };
  return (
    <div role="columnheader" style={style} data-testid={`calls-header-${col.key}`} data-sort={sort}
      class={`cl-cell cl-hcell${col.num ? ' num' : ''}${sort ? ' cl-sorted' : ''}`}
      title={`${col.label}: click to sort (server-side, whole window)`} onClick={() => onSort(col)}>
      <span class="cl-hlabel">{col.short ?? col.label}</span>
      {sort && <span class="cl-arrow">{sort === 'asc' ? '▲' : '▼'}</span>}
      <span class="cl-resize" title="Drag to resize" onMouseDown={startDrag} onClick={(e) => e.stopPropagation()} />
    </div>
  );
}
