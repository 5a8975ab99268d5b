// importModel.test.ts -- "Import trace": the upload's query, the answer, the progress text
// and the calls-list URL of a report.
import { describe, expect, it } from 'vitest';
import {
  callsUrlForReport, headline, identityText, importQuery, isGzip, nameProblem, parseImportAnswer, progressPercent,
  progressText, spanText, type ImportReport,
} from './importModel';

const REPORT: ImportReport = {
  format: 'trcbin', calls: 12, threads: 2, methods: 31, events: 146, skipped: 0, unknown_messages: 0, too_large: 0,
  incomplete: 0, stopped_at: 16100, bytes: 16100, error: null, namespace: 'tptp', service: 'shop-backend',
  pod: 'shop-backend-7d9f8c6b5-s7x4d_1711546836682', first_ms: 1711546931024, last_ms: 1711546931175, duplicates: 0,
};

describe('callsUrlForReport', () => {
  it('selects the pod, pads the span by a minute, shows every call', () => {
    const u = new URL(callsUrlForReport(REPORT)!, 'http://x');
    expect(u.pathname).toBe('/calls');
    expect(u.searchParams.get('from')).toBe(String(1711546931024 - 60000));
    expect(u.searchParams.get('to')).toBe(String(1711546931175 + 60000));
    expect(u.searchParams.getAll('pod')).toEqual(['tptp/shop-backend/shop-backend-7d9f8c6b5-s7x4d_1711546836682']);
    expect(u.searchParams.getAll('service')).toEqual([]);
    expect(u.searchParams.get('dur')).toBe('all');
    expect(u.searchParams.get('hideSystem')).toBe('0');
    expect(callsUrlForReport(REPORT)).toBe(
      '/calls?from=1711546871024&to=1711546991175&pod=tptp%2Fshop-backend%2Fshop-backend-7d9f8c6b5-s7x4d_1711546836682&dur=all&hideSystem=0');
  });

  it('falls back to the service without a pod', () => {
    const u = new URL(callsUrlForReport({ ...REPORT, pod: null })!, 'http://x');
    expect(u.searchParams.getAll('service')).toEqual(['tptp/shop-backend']);
    expect(u.searchParams.getAll('pod')).toEqual([]);
  });

  it('gives nothing without calls or identity', () => {
    expect(callsUrlForReport({ ...REPORT, calls: 0, first_ms: null, last_ms: null, duplicates: 12 })).toBeNull();
    expect(callsUrlForReport({ ...REPORT, namespace: null })).toBeNull();
    expect(callsUrlForReport({ ...REPORT, service: null, pod: null })).toBeNull();
  });

  it('keeps the window within the widest span the server takes (the latest part)', () => {
    const day = 86400000;
    const r = { ...REPORT, first_ms: 0 + 1e12, last_ms: 40 * day + 1e12 };
    const u = new URL(callsUrlForReport(r, 31 * day)!, 'http://x');
    const from = Number(u.searchParams.get('from'));
    const to = Number(u.searchParams.get('to'));
    expect(to).toBe(r.last_ms + 60000);
    expect(to - from).toBe(31 * day);
  });

  it('gives a one-call import a window too', () => {
    const u = new URL(callsUrlForReport({ ...REPORT, calls: 1, first_ms: 5e11, last_ms: 5e11 })!, 'http://x');
    expect(Number(u.searchParams.get('to')) - Number(u.searchParams.get('from'))).toBe(120000);
  });
});

describe('parseImportAnswer', () => {
  it('reads a report', () => {
    const o = parseImportAnswer(200, JSON.stringify(REPORT));
    expect(o.kind).toBe('ok');
    expect(o.report?.calls).toBe(12);
    expect(headline(o)).toBe('Imported 12 calls');
  });

  it('reads a malformed file with the calls kept', () => {
    const body = { error: 'truncated message 1011 at offset 2914', code: 'bad_input', report: { ...REPORT, calls: 3, error: 'truncated' } };
    const o = parseImportAnswer(400, JSON.stringify(body));
    expect(o).toMatchObject({ kind: 'bad_input', error: 'truncated message 1011 at offset 2914' });
    expect(headline(o)).toBe('The file is malformed: 3 calls kept');
  });

  it('reads other errors', () => {
    expect(parseImportAnswer(415, '{"error":"not a trace","code":"unknown_format"}'))
      .toEqual({ kind: 'error', status: 415, code: 'unknown_format', error: 'not a trace', report: null });
    expect(parseImportAnswer(502, '<html>bad gateway</html>'))
      .toEqual({ kind: 'error', status: 502, code: 'http_error', error: 'HTTP 502', report: null });
    expect(parseImportAnswer(200, 'nope')).toMatchObject({ kind: 'error', code: 'bad_json' });
    // a 400 that is not bad_input keeps its report but is an error
    expect(parseImportAnswer(400, JSON.stringify({ error: 'x', code: 'bad_encoding', report: REPORT })))
      .toMatchObject({ kind: 'error', code: 'bad_encoding', report: { calls: 12 } });
    expect(headline(parseImportAnswer(413, '{"error":"too big","code":"body_too_large"}'))).toBe('The import failed');
  });

  it('says when every call was there already', () => {
    const o = parseImportAnswer(200, JSON.stringify({ ...REPORT, calls: 0, duplicates: 12, first_ms: null, last_ms: null }));
    expect(headline(o)).toBe('No new calls: the 12 calls of this file were imported before');
    expect(headline(parseImportAnswer(200, JSON.stringify({ ...REPORT, calls: 1, duplicates: 2 })))).toBe('Imported 1 call (2 imported before)');
    expect(headline(parseImportAnswer(200, JSON.stringify({ ...REPORT, calls: 0, duplicates: 0 })))).toBe('The file holds no calls');
  });
});

describe('progress', () => {
  it('formats percent and bytes', () => {
    expect(progressText(0, 3 * 1048576)).toBe('0 % · 0 B of 3.0 MiB');
    expect(progressText(1258291, 3 * 1048576)).toBe('39 % · 1.2 MiB of 3.0 MiB');
    expect(progressText(1258292, 3 * 1048576)).toBe('40 % · 1.2 MiB of 3.0 MiB');
    expect(progressText(16100, 16100)).toBe('100 % · 16 KiB of 16 KiB');
    expect(progressText(2048, null)).toBe('2.0 KiB sent');
    expect(progressPercent(99.9, 100)).toBe(99);
    expect(progressPercent(5, 0)).toBe(0);
    expect(progressPercent(200, 100)).toBe(100);
  });
});

describe('the upload', () => {
  it('sends the non-empty fields', () => {
    expect(importQuery({ namespace: ' ns1 ', service: '', pod: ' ', format: '' })).toEqual({ namespace: 'ns1' });
    expect(importQuery({ namespace: 'a', service: 'b', pod: 'c', format: 'cbor' }))
      .toEqual({ namespace: 'a', service: 'b', pod: 'c', format: 'cbor' });
  });

  it('checks the names', () => {
    expect(nameProblem('')).toBeNull();
    expect(nameProblem('shop-backend')).toBeNull();
    expect(nameProblem('a/b')).toBe('may not contain /');
    expect(nameProblem('a b')).toBe('may not contain spaces');
    expect(nameProblem('x'.repeat(1025))).toBe('at most 1024 bytes');
  });

  it('recognises gzip', () => {
    expect(isGzip(new Uint8Array([0x1f, 0x8b, 8]))).toBe(true);
    expect(isGzip(new Uint8Array([0x1f]))).toBe(false);
    expect(isGzip(new Uint8Array([0x3c, 0x3f]))).toBe(false);
  });

  it('writes the time span', () => {
    expect(spanText(1711546931024, 1711546931175, 'UTC')).toBe('2024-03-27 13:42:11.024 → 13:42:11.175 +00:00 (151ms)');
    expect(spanText(1711546931024, 1711546931175 + 86400000, 'Asia/Kolkata'))
      .toBe('2024-03-27 19:12:11.024 → 2024-03-28 19:12:11.175 +05:30 (24h 0m)');
  });

  it('names the identity', () => {
    expect(identityText(REPORT)).toBe('tptp / shop-backend / shop-backend-7d9f8c6b5-s7x4d_1711546836682');
    expect(identityText({ ...REPORT, namespace: null, service: null, pod: null })).toBe('');
  });
});
