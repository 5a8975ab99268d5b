// StatusLine.tsx -- the status line of ui.md §3.8: how many calls are listed out of how
// many match, and the totals/averages over all matching calls from /calls/stats; server
// busy time is the union of the loaded rows' intervals (exact once every row is loaded).
// While a long query runs it shows its progress with a Cancel button, and marks rows that
// are only the best found so far as partial results.

import type { CallsStats } from '../lib/api';
import { fmtCount, fmtDuration } from '../lib/format';

export interface StatusProps {
  loaded: number;
  allLoaded: boolean;
  busy: number;
  stats: CallsStats | null;
  statsError: string | null;
  loading: boolean;
  /** a query has run for a while: its progress text and how to stop it */
  search?: { text: string; onCancel: () => void } | null;
  /** the rows are a provisional snapshot (the query runs or was cancelled) */
  provisional?: boolean;
  /** the totals were cancelled: the number of matching calls is unknown */
  statsCancelled?: boolean;
}

const avg = (sum: number, n: number) => (n > 0 ? sum / n : 0);

export function StatusLine({ loaded, allLoaded, busy, stats, statsError, loading, search, provisional, statsCancelled }: StatusProps) {
  const total = stats?.total;
  const m = total === undefined ? (statsCancelled ? '?' : '…') : `${stats?.partial ? '≥ ' : ''}${fmtCount(total)}`;
  const part = (label: string, value: string, tip?: string) => (
    <span class="cl-stat" title={tip}><span class="muted">{label}</span> {value}</span>
  );
  return (
    <div class="cl-status" data-testid="calls-status">
      <span class="cl-stat"><b>Displaying {fmtCount(loaded)} of {m} calls</b></span>
      {provisional && (
        <span class="tag cl-provisional-tag" data-testid="calls-provisional"
          title={search ? 'The best rows found so far: the list is replaced when the search finishes'
            : 'The best rows found before the search stopped: there may be others'}>partial results</span>
      )}
      {search ? (
        <span class="cl-progress" data-testid="calls-progress">
          <span class="spinner" />
          <span title="Cold files: compacted Parquet files of older data; hot windows: recent data">{search.text}</span>
          <button type="button" class="btn btn-small" data-testid="calls-cancel"
            title="Stop the search, keep the rows found so far" onClick={search.onCancel}>Cancel</button>
        </span>
      ) : loading && <span class="spinner" />}
      {stats && stats.total > 0 && (
        <>
          {part('Duration', `${fmtDuration(stats.sum_duration_ms)} (avg ${fmtDuration(avg(stats.sum_duration_ms, stats.total))})`,
            'Total and average duration of all matching calls')}
          {part('Server busy', fmtDuration(busy),
            `Length of the union of [start, end] of the ${allLoaded ? '' : 'loaded '}calls${allLoaded ? '' : ' (load more rows for the whole window)'}`)}
          {part('Queue', `${fmtDuration(stats.sum_queue_wait_ms)} (avg ${fmtDuration(avg(stats.sum_queue_wait_ms, stats.total))})`)}
          {part('Suspension', `${fmtDuration(stats.sum_suspend_ms)} (avg ${fmtDuration(avg(stats.sum_suspend_ms, stats.total))})`)}
          {part('Transactions', `${fmtCount(stats.sum_transactions)} (avg ${avg(stats.sum_transactions, stats.total).toFixed(2)})`)}
        </>
      )}
      {statsError && <span class="error-text" title="The totals could not be computed">totals: {statsError}</span>}
    </div>
  );
}
