// narrow.ts -- the "too wide" state of ui.md §1.5: when the server stopped a scan at its
// budget (partial_reasons: scan_budget), one-click chips that narrow the query -- a higher
// duration floor, errors only, a shorter period, fewer pods -- each a patch of the URL.

import { DUR_CHIPS, parseDur } from './durfilter';

export interface NarrowChip { key: string; label: string; patch: Record<string, string | string[] | null> }

export interface NarrowInput {
  dur: string;             // the `dur` value in force
  errorsOnly: boolean;
  from: number;            // the frozen window
  to: number;
  pods: string[];          // the rail's "ns/svc/pod" selection
}

const MIN_SPAN_MS = 2 * 60000;

export function narrowingChips(x: NarrowInput): NarrowChip[] {
  const out: NarrowChip[] = [];
  const cur = parseDur(x.dur);
  const floor = cur?.min ?? 0;
  const next = DUR_CHIPS.find((c) => { const f = parseDur(c.value); return f?.min != null && f.min > floor; });
  if (next && cur?.max == null) out.push({ key: 'dur', label: `duration ${next.label}`, patch: { dur: next.value } });
  if (!x.errorsOnly) out.push({ key: 'errors', label: 'errors only', patch: { errors: '1' } });
  const span = x.to - x.from;
  if (span >= MIN_SPAN_MS) {
    const quarter = Math.round(span / 4);
    out.push({ key: 'period', label: `the last ${fmtSpan(quarter)} only`, patch: { from: String(x.to - quarter), to: String(x.to) } });
  }
  if (x.pods.length > 1) {
    const name = x.pods[0].split('/').slice(2).join('/');
    out.push({ key: 'pods', label: `one pod: ${name.replace(/_\d{10,}$/, '')}`, patch: { pod: [x.pods[0]] } });
  }
  return out;
}

function fmtSpan(ms: number): string {
  if (ms >= 2 * 86400000) return `${Math.round(ms / 86400000)} days`;
  if (ms >= 2 * 3600000) return `${Math.round(ms / 3600000)} hours`;
  return `${Math.max(1, Math.round(ms / 60000))} minutes`;
}
