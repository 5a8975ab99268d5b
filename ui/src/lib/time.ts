// time.ts -- display time zones and the period (ui.md §1.2, §1.3). The wire and the URL
// carry UTC epoch milliseconds; zones exist only here. Pure functions (tested in
// time.test.ts) plus the persisted zone choice and the server-clock offset.

import { pad2, pad3 } from './format';

export const BROWSER = 'Browser';

export function browserZone(): string {
  try { return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'; } catch { return 'UTC'; }
}

/** The IANA zone a display-zone choice stands for. */
export function resolveZone(choice: string): string {
  return !choice || choice === BROWSER ? browserZone() : choice;
}

const dtfCache = new Map<string, Intl.DateTimeFormat>();
function dtf(zone: string): Intl.DateTimeFormat {
  let f = dtfCache.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric',
      hour: 'numeric', minute: 'numeric', second: 'numeric',
    });
    dtfCache.set(zone, f);
  }
  return f;
}

export function isValidZone(zone: string): boolean {
  try { dtf(zone); return true; } catch { return false; }
}

export interface Civil { y: number; mo: number; d: number; h: number; mi: number; s: number; ms: number }

/** Wall-clock fields of an instant in a zone. */
export function civil(ms: number, zone: string): Civil {
  const parts = dtf(zone).formatToParts(new Date(ms));
  const get = (t: string) => Number(parts.find((p) => p.type === t)?.value ?? 0);
  const msPart = ((ms % 1000) + 1000) % 1000;
  return { y: get('year'), mo: get('month'), d: get('day'), h: get('hour') % 24, mi: get('minute'), s: get('second'), ms: msPart };
}

/** Offset of the zone at an instant, in minutes east of UTC. */
export function offsetMin(ms: number, zone: string): number {
  const c = civil(ms, zone);
  const asUtc = Date.UTC(c.y, c.mo - 1, c.d, c.h, c.mi, c.s);
  const base = Math.floor(ms / 1000) * 1000;
  return Math.round((asUtc - base) / 60000);
}

export function fmtOffset(min: number): string {
  const sign = min < 0 ? '-' : '+';
  const a = Math.abs(min);
  return `${sign}${pad2(Math.floor(a / 60))}:${pad2(a % 60)}`;
}

/** The instant of a wall-clock time in a zone. A time in a spring-forward gap moves
 *  forward by the gap; an ambiguous one (fall-back overlap) is the earlier instant. */
export function fromCivil(c: Omit<Civil, 'ms'> & { ms?: number }, zone: string): number {
  const guess = Date.UTC(c.y, c.mo - 1, c.d, c.h, c.mi, c.s, c.ms ?? 0);
  const before = offsetMin(guess - 86400000, zone) * 60000;
  const after = offsetMin(guess + 86400000, zone) * 60000;
  const cands = [guess - before, guess - after].filter((t) => t + offsetMin(t, zone) * 60000 === guess);
  if (cands.length) return Math.min(...cands);
  return guess - before;
}

/** `YYYY-MM-DD HH:mm:ss.SSS` in the zone. */
export function fmtFull(ms: number, zone: string, withMs = true): string {
  const c = civil(ms, zone);
  const base = `${c.y}-${pad2(c.mo)}-${pad2(c.d)} ${pad2(c.h)}:${pad2(c.mi)}:${pad2(c.s)}`;
  return withMs ? `${base}.${pad3(c.ms)}` : base;
}

/** The list's Start format: `HH:mm:ss.SSS +03:00`, with `YYYY/MM/DD ` before it when the
 *  instant is not today in the zone or more than 24 h old. */
export function fmtListTs(ms: number, zone: string, nowMs: number): string {
  const c = civil(ms, zone);
  const n = civil(nowMs, zone);
  const today = c.y === n.y && c.mo === n.mo && c.d === n.d && nowMs - ms < 86400000;
  const t = `${pad2(c.h)}:${pad2(c.mi)}:${pad2(c.s)}.${pad3(c.ms)} ${fmtOffset(offsetMin(ms, zone))}`;
  return today ? t : `${c.y}/${pad2(c.mo)}/${pad2(c.d)} ${t}`;
}

/** `YYYY-MM-DD HH:mm:ss +03:00`: headers, tables, tooltips. */
export function fmtTs(ms: number, zone: string): string {
  return `${fmtFull(ms, zone, false)} ${fmtOffset(offsetMin(ms, zone))}`;
}

// ---- parsing the period ------------------------------------------------------------------

const UNIT_MS: Record<string, number> = { s: 1000, m: 60000, h: 3600000, d: 86400000, w: 604800000 };

/** `now`, `now-6h`, `now+1d`: units s m h d w M y. Months and years are calendar steps in
 *  UTC. Returns null when the text is not a relative expression. */
export function parseRelative(text: string, nowMs: number): number | null {
  const m = /^\s*now\s*(?:([+-])\s*(\d+)\s*([smhdwMy]))?\s*$/.exec(text);
  if (!m) return null;
  if (!m[1]) return nowMs;
  const k = (m[1] === '-' ? -1 : 1) * Number(m[2]);
  const unit = m[3];
  if (unit === 'M' || unit === 'y') {
    const d = new Date(nowMs);
    if (unit === 'M') d.setUTCMonth(d.getUTCMonth() + k);
    else d.setUTCFullYear(d.getUTCFullYear() + k);
    return d.getTime();
  }
  return nowMs + k * UNIT_MS[unit];
}

export function isRelative(text: string): boolean {
  return /^\s*now/.test(text);
}

/** `YYYY-MM-DD HH:mm:ss`, `YYYY-MM-DD HH:mm`, `YYYY-MM-DD` (also with `T` or `/`) read in
 *  the zone. null when it matches none or would roll over (month 13, day 40, Feb 30). */
export function parseAbsolute(text: string, zone: string): number | null {
  const m = /^\s*(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?\s*$/.exec(text);
  if (!m) return null;
  const y = +m[1], mo = +m[2], d = +m[3];
  const h = m[4] ? +m[4] : 0, mi = m[5] ? +m[5] : 0, s = m[6] ? +m[6] : 0;
  const ms = m[7] ? Number(m[7].padEnd(3, '0')) : 0;
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return null;
  const dim = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (d > dim) return null;
  return fromCivil({ y, mo, d, h, mi, s, ms }, zone);
}

/** A Unix timestamp in seconds or milliseconds; a number with up to three digits too few
 *  or too many is scaled by powers of ten towards now (the classic free-text rule). */
export function parseUnix(text: string, nowMs: number): number | null {
  if (!/^\s*\d{7,16}\s*$/.test(text)) return null;
  const v = Number(text.trim());
  const cands = [v, v * 1000];
  for (let k = 1; k <= 3; k++) cands.push(v * 10 ** k, v / 10 ** k, v * 1000 * 10 ** k, v * 1000 / 10 ** k);
  let best: number | null = null;
  for (const c of cands) if (best === null || Math.abs(c - nowMs) < Math.abs(best - nowMs)) best = c;
  return best === null ? null : Math.round(best);
}

const MAX_PAST_MS = 7 * 366 * 86400000;
const MAX_FUTURE_MS = 2 * 366 * 86400000;

/** One end of the window as typed: relative, epoch ms (the URL form), absolute in the zone.
 *  null if invalid or outside 7 years back / 2 years ahead. */
export function parseTimeExpr(text: string, zone: string, nowMs: number): number | null {
  const t = text.trim();
  let v = parseRelative(t, nowMs);
  if (v === null && /^\d{12,14}$/.test(t)) v = Number(t);
  if (v === null) v = parseAbsolute(t, zone);
  if (v === null) v = parseUnix(t, nowMs);
  if (v === null) return null;
  if (v < nowMs - MAX_PAST_MS || v > nowMs + MAX_FUTURE_MS) return null;
  return v;
}

/** The classic single field `A .. B` (two or more dots). */
export function parseRangeText(text: string, zone: string, nowMs: number): { from: number; to: number } | null {
  const parts = text.split(/\.{2,}/);
  if (parts.length !== 2) return null;
  const a = parseTimeExpr(parts[0], zone, nowMs);
  const b = parseTimeExpr(parts[1], zone, nowMs);
  if (a === null || b === null || a === b) return null;
  return a < b ? { from: a, to: b } : { from: b, to: a };
}

export interface QuickRange { label: string; from: string; ms: number }

export const QUICK_RANGES: QuickRange[] = [
  ['5m', 5], ['15m', 15], ['30m', 30], ['1h', 60], ['2h', 120], ['3h', 180], ['4h', 240], ['6h', 360],
  ['12h', 720], ['24h', 1440], ['2d', 2880], ['7d', 10080], ['30d', 43200],
].map(([l, m]) => ({ label: `${l}`, from: `now-${l}`, ms: (m as number) * 60000 }));

export const DEFAULT_FROM = 'now-15m';
export const DEFAULT_TO = 'now';

/** The quick range whose span is closest to a live window of span ms. */
export function closestQuick(spanMs: number): QuickRange {
  let best = QUICK_RANGES[0];
  for (const q of QUICK_RANGES) if (Math.abs(q.ms - spanMs) < Math.abs(best.ms - spanMs)) best = q;
  return best;
}

/** The span of a relative `now-<n><unit>` expression in ms, or null. */
export function relativeSpan(from: string, to: string): number | null {
  if (to.trim() !== 'now') return null;
  const a = parseRelative(from, 0);
  return a === null ? null : -a;
}

// ---- the zone list ---------------------------------------------------------------------

export function allZones(): string[] {
  const anyIntl = Intl as unknown as { supportedValuesOf?: (k: string) => string[] };
  let z: string[] = [];
  try { z = anyIntl.supportedValuesOf ? anyIntl.supportedValuesOf('timeZone') : []; } catch { z = []; }
  if (!z.includes('UTC')) z.push('UTC');
  // the fixed-offset zones are not in the canonical list; their names invert the sign
  // (Etc/GMT-3 is +03:00), which the offset label makes plain
  for (let h = -14; h <= 12; h++) {
    const name = h === 0 ? 'Etc/GMT' : `Etc/GMT${h > 0 ? '+' : '-'}${Math.abs(h)}`;
    if (!z.includes(name) && isValidZone(name)) z.push(name);
  }
  return z;
}

export interface ZoneOption { value: string; label: string; offset: number }

/** Browser first, then UTC, then every zone sorted by its offset at `atMs`. */
export function zoneOptions(atMs: number): ZoneOption[] {
  const bz = browserZone();
  const out: ZoneOption[] = [
    { value: BROWSER, label: `Browser (${fmtOffset(offsetMin(atMs, bz))} ${bz})`, offset: offsetMin(atMs, bz) },
    { value: 'UTC', label: '+00:00 UTC', offset: 0 },
  ];
  const rest = allZones().filter((z) => z !== 'UTC').map((z) => {
    const o = offsetMin(atMs, z);
    return { value: z, label: `${fmtOffset(o)} ${z}`, offset: o };
  });
  rest.sort((a, b) => a.offset - b.offset || a.value.localeCompare(b.value));
  return out.concat(rest);
}

// ---- persisted choice and the server clock -----------------------------------------------

const ZONE_KEY = 'cloudprof.zone';

export function loadZone(): string {
  try {
    const z = localStorage.getItem(ZONE_KEY);
    if (z && (z === BROWSER || isValidZone(z))) return z;
  } catch { /* storage disabled */ }
  return BROWSER;
}

export function saveZone(z: string): void {
  try { localStorage.setItem(ZONE_KEY, z); } catch { /* storage disabled */ }
}

let clockSkew = 0;

/** The server clock (ui.md §1.2): browser time corrected by /api/v1/time. */
export function serverNow(): number {
  return Date.now() + clockSkew;
}

export function setServerNow(serverMs: number): void {
  clockSkew = serverMs - Date.now();
}
