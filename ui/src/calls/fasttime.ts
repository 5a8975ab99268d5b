// fasttime.ts -- the list's Start text (lib/time fmtListTs) without an Intl call per row:
// the zone offset is looked up once per 15-minute bucket (offsets change only at
// transitions, which fall on quarter hours) and the wall clock is then plain arithmetic.
// The virtual table formats ~50 rows per frame while scrolling, so this matters.

import { pad2, pad3 } from '../lib/format';
import { fmtOffset, offsetMin } from '../lib/time';

const BUCKET = 900000;
const offsets = new Map<string, number>();

function offsetOf(ms: number, zone: string): number {
  const key = `${zone}|${Math.floor(ms / BUCKET)}`;
  let o = offsets.get(key);
  if (o === undefined) {
    o = offsetMin(ms, zone);
    if (offsets.size > 20000) offsets.clear();
    offsets.set(key, o);
  }
  return o;
}

function dayOf(d: Date): number {
  return d.getUTCFullYear() * 10000 + (d.getUTCMonth() + 1) * 100 + d.getUTCDate();
}

/** Same text as fmtListTs: `HH:mm:ss.SSS +03:00`, date-prefixed unless today and < 24 h old. */
export function listTs(ms: number, zone: string, nowMs: number): string {
  const off = offsetOf(ms, zone);
  const d = new Date(ms + off * 60000);
  const n = new Date(nowMs + offsetOf(nowMs, zone) * 60000);
  const t = `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}.${pad3(d.getUTCMilliseconds())} ${fmtOffset(off)}`;
  const today = dayOf(d) === dayOf(n) && nowMs - ms < 86400000;
  return today ? t : `${d.getUTCFullYear()}/${pad2(d.getUTCMonth() + 1)}/${pad2(d.getUTCDate())} ${t}`;
}

const memo = new WeakMap<object, { zone: string; day: number; text: string }>();

/** listTs memoised per call object (the answer only changes with the zone or the day). */
export function cachedListTs(c: { ts_ms: number }, zone: string, nowMs: number): string {
  const day = Math.floor(nowMs / 3600000);
  const m = memo.get(c);
  if (m && m.zone === zone && m.day === day) return m.text;
  const text = listTs(c.ts_ms, zone, nowMs);
  memo.set(c, { zone, day, text });
  return text;
}
