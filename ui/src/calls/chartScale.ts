// chartScale.ts -- axes of the calls scatter (ui.md §3.9): duration ticks (linear or log)
// and time ticks aligned to round wall-clock steps in the display zone. Pure.

import { fmtDuration, pad2 } from '../lib/format';
import { civil, offsetMin } from '../lib/time';

export interface Tick { v: number; label: string }

const TIME_STEPS = [
  1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3,
  3600e3, 7200e3, 10800e3, 21600e3, 43200e3, 86400e3, 2 * 86400e3, 7 * 86400e3,
];

/** Time ticks between from and to, at most ~maxTicks, on round steps of the zone's clock. */
export function timeTicks(from: number, to: number, zone: string, maxTicks: number): Tick[] {
  const span = to - from;
  const step = TIME_STEPS.find((s) => span / s <= maxTicks) ?? TIME_STEPS[TIME_STEPS.length - 1];
  const off = offsetMin(from, zone) * 60000;
  let t = Math.ceil((from + off) / step) * step - off;
  const out: Tick[] = [];
  for (; t <= to && out.length < 200; t += step) {
    const c = civil(t, zone);
    let label = `${pad2(c.h)}:${pad2(c.mi)}`;
    if (step < 60e3) label += `:${pad2(c.s)}`;
    if (step >= 86400e3 || (c.h === 0 && c.mi === 0 && c.s === 0)) label = `${c.mo}/${c.d}${step >= 86400e3 ? '' : ' ' + label}`;
    out.push({ v: t, label });
  }
  return out;
}

const NICE = [1, 2, 5];

/** Linear duration ticks from 0 to max. */
export function linearTicks(max: number, maxTicks: number): Tick[] {
  if (max <= 0) return [{ v: 0, label: '0ms' }];
  let step = 1;
  outer: for (let p = 1; p < 1e12; p *= 10) {
    for (const n of NICE) if (max / (n * p) <= maxTicks) { step = n * p; break outer; }
  }
  const out: Tick[] = [];
  for (let v = 0; v <= max; v += step) out.push({ v, label: fmtDuration(v) });
  return out;
}

/** Log duration ticks at powers of ten from 1 ms. */
export function logTicks(max: number): Tick[] {
  const out: Tick[] = [];
  for (let v = 1; v <= Math.max(max, 1); v *= 10) out.push({ v, label: fmtDuration(v) });
  return out;
}
