// progress.ts -- the "Searching…" text of the status line while a streamed query runs
// (the first page of /calls and /calls/stats, lib/stream.ts): cold Parquet files and hot
// windows read so far, rows examined.

import { fmtCount } from '../lib/format';
import type { StreamProgress } from '../lib/stream';

/** Share of the files and windows read (0 when the server has not counted them yet). */
export function fraction(p: StreamProgress): number {
  const total = p.files_total + p.windows_total;
  return total > 0 ? Math.min(1, (p.files_done + p.windows_done) / total) : 0;
}

/** Of the requests still running, the one furthest from done: the one the user waits for. */
export function slowest(ps: (StreamProgress | null | undefined)[]): StreamProgress | null {
  let best: StreamProgress | null = null;
  for (const p of ps) if (p && (!best || fraction(p) < fraction(best))) best = p;
  return best;
}

/** `Searching… 12 / 40 cold files, 3 / 8 hot windows, 3400 K calls examined`. */
export function progressText(p: StreamProgress | null): string {
  if (!p) return 'Searching…';
  const parts: string[] = [];
  if (p.files_total > 0) parts.push(`${fmtCount(p.files_done)} / ${fmtCount(p.files_total)} cold files`);
  if (p.windows_total > 0) parts.push(`${fmtCount(p.windows_done)} / ${fmtCount(p.windows_total)} hot windows`);
  if (p.scanned > 0 || parts.length) parts.push(`${fmtCount(p.scanned)} calls examined`);
  return parts.length ? `Searching… ${parts.join(', ')}` : 'Searching…';
}
