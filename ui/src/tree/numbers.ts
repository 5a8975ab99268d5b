// numbers.ts -- how a node's numbers read on a row (ui.md §4.3 items 4–7): total and self,
// "smart" suspension (`+ X gc` when it matters, else folded back into the durations),
// invocations with the red `(x K)` fan-out marker, and the plain-text summary used in
// tooltips and the flame details line.

import { fmtCount } from '../lib/format';
import type { TreeModel } from './model';
import { fmtVal } from './units';

export interface NodeNumbers {
  total: number;       // duration shown (net of suspension when gc is shown)
  self: number;
  gc: number;          // suspension shown separately, 0 = folded in
  selfGc: number;
  onlySelf: boolean;   // total == self: one bold value with the word "self"
  inv: number;
  invX: number;        // K of the red (x K), 0 = none
  calls: number;
  callsX: number;      // bottom-up fan-out K, 0 = none
}

/** Suspension below 30 ms or below 3 % of (net + suspension) is folded into the
 *  durations; the root row always folds it in. */
export type SuspMode = 'smart' | 'never';

export function nodeNumbers(m: TreeModel, i: number, mode: SuspMode = 'smart'): NodeNumbers {
  const susp = m.susp[i];
  const showGc = mode === 'smart' && i !== 0 && susp >= 30 && susp >= 0.03 * m.total[i];
  const total = showGc ? m.total[i] - susp : m.total[i];
  const self = showGc ? m.self[i] - m.selfSusp[i] : m.self[i];
  const p = m.parent[i];
  const inv = m.inv[i];
  let invX = 0;
  if (!m.bottomUp && p >= 0 && m.inv[p] > 0 && inv >= 5 * m.inv[p]) invX = Math.round(inv / m.inv[p]);
  let callsX = 0;
  if (m.bottomUp && m.calls[i] > 0 && inv >= 5 * m.calls[i]) callsX = Math.round(inv / m.calls[i]);
  return {
    total, self, gc: showGc ? susp : 0, selfGc: showGc ? m.selfSusp[i] : 0,
    onlySelf: Math.round(self) > 0 && Math.round(total) === Math.round(self),
    inv, invX, calls: m.calls[i], callsX,
  };
}

/** Counts; adjusted (scaled) counts below 10 keep one decimal so 0.1 does not read 0. */
export function fmtInv(n: number): string {
  if (n > 0 && n < 10 && Math.abs(n - Math.round(n)) > 0.05) return n.toFixed(1);
  return fmtCount(Math.round(n));
}

/** One-line summary: `412ms (12ms self) + 40ms gc, 3 inv, 12 calls`. */
export function numbersText(m: TreeModel, i: number): string {
  const x = nodeNumbers(m, i);
  let s = x.onlySelf ? `${fmtVal(x.self)} self` : fmtVal(x.total) + (Math.round(x.self) > 0 ? ` (${fmtVal(x.self)} self)` : '');
  if (x.gc) s += ` + ${fmtVal(x.gc)} gc`;
  s += `, ${fmtInv(x.inv)} inv`;
  if (x.invX) s += ` (x ${x.invX})`;
  if (x.calls > 0) s += `, ${fmtInv(x.calls)} calls`;
  return s;
}
