// HprofSummary.tsx -- the server-side summary of a heap dump (ui.md §10.5, issue 19 item
// 9): GET /api/v1/dumps/{id}/hprof -- the HPROF header (format, identifier size, dump
// time), totals and the top classes by shallow size. The first request computes it on the
// server (a 1 GB dump takes seconds), later ones come from its cache.

import { apiGet, type ApiError } from '../lib/api';
import { fmtBytes, fmtCount } from '../lib/format';
import { fmtTs } from '../lib/time';
import { ErrorBanner, Loading, useFetch } from './common';

export interface HprofClass { name: string; instances: number; shallow_bytes: number }
export interface HprofResp {
  format: string; id_size: number; time_ms: number; entry: string; file_bytes: number; bytes: number; records: number;
  heap_records: number; gc_roots: number; classes_loaded: number; instances: number; shallow_bytes: number; class_count: number;
  classes: HprofClass[]; names_incomplete: boolean; elapsed_ms: number; cached: boolean;
}

export function HprofSummary({ id, zone, onClose }: { id: string; zone: string; onClose: () => void }) {
  const f = useFetch((s) => apiGet<HprofResp>(`/dumps/${encodeURIComponent(id)}/hprof`, { top: '50' }, s), [id]);
  let body;
  if (f.error) body = <ErrorBanner error={f.error as ApiError} retry={f.retry} />;
  else if (f.loading || !f.data) body = <Loading rows={4} label="Summarising the heap dump on the server (a large dump takes a while the first time)…" />;
  else {
    const d = f.data;
    body = (
      <>
        <div class="viewer-head" data-testid="hprof-header">
          <span class="fig">{d.format}</span>
          <span class="fig">identifiers <b>{d.id_size}</b> bytes</span>
          <span class="fig">taken <b>{fmtTs(d.time_ms, zone)}</b></span>
          <span class="fig"><b data-testid="hprof-instances">{fmtCount(d.instances)}</b> objects, <b>{fmtBytes(d.shallow_bytes)}</b> shallow</span>
          <span class="fig">{fmtCount(d.class_count)} classes · {fmtCount(d.gc_roots)} GC roots · {fmtBytes(d.bytes)} HPROF</span>
          <span class="fig muted">{d.cached ? 'from the cache' : `computed in ${(d.elapsed_ms / 1000).toFixed(1)} s`}</span>
        </div>
        {d.names_incomplete && <div class="banner banner-amber">Some class names were not kept (name budget): they show as class@0x….</div>}
        <table class="grid" data-testid="hprof-classes">
          <thead><tr><th>Class</th><th class="num">Instances</th><th class="num">Shallow size</th><th class="num">Share</th></tr></thead>
          <tbody>
            {d.classes.map((c) => (
              <tr key={c.name} data-testid="hprof-class" data-name={c.name} data-instances={c.instances}>
                <td class="mono">{c.name}</td><td class="num">{fmtCount(c.instances)}</td><td class="num">{fmtBytes(c.shallow_bytes)}</td>
                <td class="num">{d.shallow_bytes ? `${((c.shallow_bytes / d.shallow_bytes) * 100).toFixed(1)} %` : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </>
    );
  }
  return (
    <tr class="hprof-row"><td colSpan={9}>
      <div class="hprof-summary" data-testid="hprof-summary">
        <div class="hprof-top"><b>Summary</b><span class="spacer" /><button type="button" class="btn btn-small" onClick={onClose}>Close</button></div>
        {body}
      </div>
    </td></tr>
  );
}
