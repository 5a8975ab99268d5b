// StatusLine.tsx -- the status line of ui.md §3.8: how many calls are listed out of how
// many match, and the totals/averages over all matching calls from /calls/stats; server
// busy time is the union of the loaded rows' intervals (exact once every row is loaded).

import type { CallsStats } from '../lib/api';
import { fmtCount, fmtDuration } from '../lib/format';

export interface StatusProps {
  loaded: number;
  allLoaded: boolean;
  busy: number;
  stats: CallsStats | null;
  statsError: string | null;
  loading: boolean;
}

const avg = (sum: number, n: number) => (n > 0 ? sum / n : 0);

export function StatusLine({ loaded, allLoaded, busy, stats, statsError, loading }: StatusProps) {
  const total = stats?.total;
  const m = total === undefined ? '…' : `${stats?.partial ? '≥ ' : ''}${fmtCount(total)}`;
  const part = (label: string, value: string, tip?: string) => (
    <span class="cl-stat" title={tip}><span class="muted">{label}</span> {value}</span>
  );
  return (
    <div class="cl-status" data-testid="calls-status">
      <span class="cl-stat"><b>Displaying {fmtCount(loaded)} of {m} calls</b></span>
      {loading && <span class="spinner" />}
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
