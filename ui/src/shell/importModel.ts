// importModel.ts -- the pure parts of "Import trace" (POST /api/v1/import): the query of
// the upload, the answer read into an outcome, the progress text, and the calls-list URL
// that shows every call of an import (its pod, its time span padded by a minute, no
// duration floor, system calls shown). Tested in importModel.test.ts.

import { fmtBytes, fmtCount, fmtDuration } from '../lib/format';
import { fmtFull, fmtOffset, offsetMin } from '../lib/time';
import { buildUrl } from '../lib/url';

/** The report of an import (200 body; `report` of a 400). */
export interface ImportReport {
  format: string;
  calls: number;              // new calls stored (duplicates not counted)
  threads: number;
  methods: number;
  events: number;
  skipped: number;
  unknown_messages: number;
  too_large: number;          // calls kept without their tree
  incomplete: number;         // calls closed at the end of the file
  stopped_at: number;
  bytes: number;
  error: string | null;
  namespace: string | null;
  service: string | null;
  pod: string | null;
  first_ms: number | null;    // null without new calls
  last_ms: number | null;
  duplicates?: number;        // calls of the file that were imported before
}

export type ImportOutcome =
  | { kind: 'ok'; report: ImportReport }
  /** 400 bad_input: the file is malformed; the calls before the error are kept */
  | { kind: 'bad_input'; error: string; report: ImportReport }
  | { kind: 'error'; status: number; code: string; error: string; report: ImportReport | null };

export const IMPORT_FORMATS: [string, string][] = [
  ['', 'Detect from the content'],
  ['trcbin', 'TPTP binary (.trcbin)'],
  ['trcxml', 'TPTP XML (.trcxml)'],
  ['cbor', 'CBOR raw trace (.cbor)'],
];

export function formatName(f: string): string {
  if (f === 'trcbin') return 'TPTP binary (trcbin)';
  if (f === 'trcxml') return 'TPTP XML (trcxml)';
  if (f === 'cbor') return 'CBOR raw trace (cbor)';
  return f || 'unknown';
}

export interface ImportFields { namespace: string; service: string; pod: string; format: string }

/** What is wrong with a typed name, or null. Names become `ns/svc/pod` keys in the URL
 *  (lib/ctx.ts splitKey), so they may not contain a slash. */
export function nameProblem(v: string): string | null {
  const t = v.trim();
  if (!t) return null;
  if (t.includes('/')) return 'may not contain /';
  if (/\s/.test(t)) return 'may not contain spaces';
  if (new TextEncoder().encode(t).length > 1024) return 'at most 1024 bytes';
  return null;
}

/** The query parameters of POST /import: the non-empty fields, trimmed. */
export function importQuery(f: ImportFields): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of ['namespace', 'service', 'pod', 'format'] as const) {
    const v = f[k].trim();
    if (v) out[k] = v;
  }
  return out;
}

/** A gzip member starts with 1f 8b: the body is sent with Content-Encoding: gzip. */
export function isGzip(head: Uint8Array): boolean {
  return head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
}

function isReport(x: unknown): x is ImportReport {
  const r = x as ImportReport | null;
  return !!r && typeof r === 'object' && typeof r.calls === 'number' && typeof r.format === 'string';
}

/** Reads the status and text of the /import answer. */
export function parseImportAnswer(status: number, text: string): ImportOutcome {
  let body: any = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = null; }
  if (status >= 200 && status < 300) {
    if (isReport(body)) return { kind: 'ok', report: body };
    return { kind: 'error', status, code: 'bad_json', error: 'the server answered something that is not an import report', report: null };
  }
  const error = body && typeof body.error === 'string' ? body.error : `HTTP ${status}`;
  const code = body && typeof body.code === 'string' ? body.code : 'http_error';
  const report = body && isReport(body.report) ? body.report : null;
  if (status === 400 && code === 'bad_input' && report) return { kind: 'bad_input', error, report };
  return { kind: 'error', status, code, error, report };
}

/** The upload's progress: `42 % · 1.2 MiB of 3.0 MiB` (`1.2 MiB sent` without a total). */
export function progressText(loaded: number, total: number | null): string {
  if (total === null || total <= 0) return `${fmtBytes(loaded)} sent`;
  return `${progressPercent(loaded, total)} % · ${fmtBytes(loaded)} of ${fmtBytes(total)}`;
}

/** Whole percent, rounded down: 100 only once every byte is sent. */
export function progressPercent(loaded: number, total: number | null): number {
  if (total === null || total <= 0) return 0;
  return Math.max(0, Math.min(100, Math.floor((loaded * 100) / total)));
}

/** The one-line outcome: `Imported 12 calls`, `No new calls: the 12 calls of this file
 *  were imported before`, `Imported 3 calls before the error`. */
export function headline(o: ImportOutcome): string {
  const r = o.report;
  const n = (k: number) => `${fmtCount(k)} call${k === 1 ? '' : 's'}`;
  if (o.kind === 'ok' && r) {
    const dup = r.duplicates ?? 0;
    if (r.calls === 0 && dup > 0) return `No new calls: the ${n(dup)} of this file were imported before`;
    if (r.calls === 0) return 'The file holds no calls';
    return `Imported ${n(r.calls)}${dup ? ` (${fmtCount(dup)} imported before)` : ''}`;
  }
  if (o.kind === 'bad_input') return `The file is malformed: ${n(r!.calls)} kept`;
  return 'The import failed';
}

/** `ns / service / pod` of a report, or '' before any call. */
export function identityText(r: ImportReport): string {
  return [r.namespace, r.service, r.pod].filter((x): x is string => !!x).join(' / ');
}

/** `2024-03-27 13:42:11.024 → 13:42:11.175 +00:00 (151ms)` in the zone; the second date
 *  is written out when it differs. */
export function spanText(first: number, last: number, zone: string): string {
  const a = fmtFull(first, zone);
  const b = fmtFull(last, zone);
  const sameDay = a.slice(0, 10) === b.slice(0, 10);
  return `${a} → ${sameDay ? b.slice(11) : b} ${fmtOffset(offsetMin(last, zone))} (${fmtDuration(last - first)})`;
}

export const PAD_MS = 60000;

/** The calls list that shows every call of an import: the pod (else the service) as the
 *  applied rail selection, the span first_ms..last_ms padded by PAD_MS on each side as an
 *  absolute window (at most maxSpanMs wide: then the latest part), duration filter All,
 *  system calls shown. null when the report names no calls. */
export function callsUrlForReport(r: ImportReport, maxSpanMs = 0): string | null {
  if (!r.namespace || r.first_ms === null || r.last_ms === null) return null;
  let to = r.last_ms + PAD_MS;
  let from = Math.min(r.first_ms, r.last_ms) - PAD_MS;
  if (maxSpanMs > 0 && to - from > maxSpanMs) from = to - maxSpanMs;
  if (to <= from) to = from + 1;
  const p: Record<string, string> = { from: String(Math.floor(from)), to: String(Math.ceil(to)) };
  if (r.service && r.pod) p.pod = `${r.namespace}/${r.service}/${r.pod}`;
  else if (r.service) p.service = `${r.namespace}/${r.service}`;
  else return null;
  p.dur = 'all';
  p.hideSystem = '0';
  return buildUrl('/calls', p);
}
