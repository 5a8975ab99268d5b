// sampled.tsx -- sampled stacks on the tree page (ui.md §9.4, §10.7, issue 19 items 3–4):
// a pod's thread dumps merged into one tree (one sample = one thread in one dump) or a Go
// pprof profile's samples for one sample type. The URL names the source; the header gets
// what was merged and the controls: the unit of samples (counts, % of all, time at N ms per
// sample — the personal setting of §1.4), idle/system threads shown or not, the sample type.

import { useEffect, useState } from 'preact/hooks';
import { apiGet, apiUrl } from '../lib/api';
import { setParams } from '../lib/url';
import { loadSampleShow, saveSampleShow, unitKind, type SampleShow, type TreeUnit } from './units';

export interface Sampled {
  unit: string;
  dumps?: number; threads?: number; excluded_idle?: number; dumps_unparsable?: number; truncated?: boolean;
  sample_type?: string; samples?: number; skipped?: number;
}

export type SampledSrc =
  | { kind: 'td'; namespace: string | null; pod: string | null; pods: string | null; from: string | null; to: string | null; idle: boolean; error: null }
  | { kind: 'pprof'; id: string; sampleType: string | null; error: null }
  | { kind: 'td' | 'pprof'; error: string };

/** The sampled source a /tree URL names, or null for call trees. */
export function sampledSource(p: URLSearchParams): SampledSrc | null {
  if (p.get('td') === '1') {
    const pod = p.get('pod'), pods = p.get('pods');
    if (!pod && !pods) return { kind: 'td', error: 'No pod given: open the thread-dump profile from Pods Info.' };
    return { kind: 'td', namespace: p.get('namespace'), pod, pods, from: p.get('from'), to: p.get('to'), idle: p.get('idle') === '1', error: null };
  }
  const id = p.get('pprof');
  if (id !== null) {
    if (!id) return { kind: 'pprof', error: 'No profile given: open the flame graph from a Go profile.' };
    return { kind: 'pprof', id, sampleType: p.get('sample_type'), error: null };
  }
  return null;
}

export function sampledUrl(s: SampledSrc): string {
  if (s.error !== null) return '';
  if (s.kind === 'pprof') {
    return apiUrl(`/dumps/${encodeURIComponent(s.id)}/profile/tree`, s.sampleType !== null ? { sample_type: s.sampleType } : undefined);
  }
  const q: Record<string, string> = {};
  if (s.namespace) q.namespace = s.namespace;
  if (s.pod) q.pod = s.pod;
  if (s.pods) q.pods = s.pods;
  if (s.from) q.from = s.from;
  if (s.to) q.to = s.to;
  if (s.idle) q.idle = '1';
  return apiUrl('/dumps/threads-profile', q);
}

export function sampledLabel(s: SampledSrc, sm: Sampled): string {
  if (s.error !== null) return '';
  if (s.kind === 'pprof') return `Go profile ${s.id} · ${sm.sample_type ?? ''} (${sm.unit}) · ${sm.samples ?? 0} samples`;
  const who = s.pod ?? `${(s.pods ?? '').split(',').length} pods`;
  return `${who} · ${sm.threads ?? 0} threads in ${sm.dumps ?? 0} thread dumps`;
}

export function unitOf(sm: Sampled, rootTotal: number): TreeUnit {
  const { show, msPerSample } = loadSampleShow();
  return { kind: unitKind(sm.unit), show, msPerSample, total: rootTotal };
}

export function SampledTools({ src, sampled }: { src: SampledSrc; sampled: Sampled }) {
  const [pref, setPref] = useState(loadSampleShow());
  const [types, setTypes] = useState<{ type: string; unit: string }[]>([]);
  useEffect(() => {
    if (src.error !== null || src.kind !== 'pprof') return;
    const ac = new AbortController();
    apiGet<{ sample_types: { type: string; unit: string }[] }>(`/dumps/${encodeURIComponent(src.id)}/profile`, { top: '1' }, ac.signal)
      .then((r) => setTypes(r.sample_types)).catch(() => {});
    return () => ac.abort();
  }, [src.error === null && src.kind === 'pprof' ? src.id : '']);
  if (src.error !== null) return null;
  const apply = (show: SampleShow, ms: number) => {
    saveSampleShow(show, ms);
    setPref({ show, msPerSample: ms });
    setParams({ u: `${show}:${ms}` }, { replace: true }); // re-renders the page with the new unit
  };
  return (
    <span class="sp-tools" data-testid="sampled-tools">
      {sampled.unit === 'samples' && (
        <label class="muted small" title="Personal setting: how sample counts show (ui.md §1.4)">show
          <select class="input" value={pref.show} data-testid="sampled-show"
            onChange={(e) => apply((e.currentTarget as HTMLSelectElement).value as SampleShow, pref.msPerSample)}>
            <option value="count">samples</option><option value="pct">% of all</option><option value="time">time</option>
          </select>
          {pref.show === 'time' && <> at <input class="input sp-ms" type="number" min={1} value={pref.msPerSample} data-testid="sampled-ms"
            onChange={(e) => { const v = Number((e.currentTarget as HTMLInputElement).value); if (v > 0) apply('time', v); }} /> ms per sample</>}
        </label>
      )}
      {src.kind === 'td' && (
        <label class="check small" title="Threads that wait (parked, sleeping, polling) and JVM threads without Java frames">
          <input type="checkbox" checked={src.idle} data-testid="sampled-idle" onChange={() => setParams({ idle: src.idle ? null : '1' })} />
          idle and system threads{!src.idle && sampled.excluded_idle ? ` (${sampled.excluded_idle} left out)` : ''}</label>
      )}
      {src.kind === 'pprof' && types.length > 1 && (
        <label class="muted small">sample type <select class="input" data-testid="sampled-type" value={sampled.sample_type ?? ''}
          onChange={(e) => setParams({ sample_type: (e.currentTarget as HTMLSelectElement).value })}>
          {types.map((t) => <option key={t.type} value={t.type}>{t.type} ({t.unit})</option>)}
        </select></label>
      )}
      {sampled.truncated && <span class="tag tag-amber" title="Only the newest thread dumps were merged">truncated</span>}
      {(sampled.dumps_unparsable ?? 0) > 0 && <span class="tag tag-amber">{sampled.dumps_unparsable} unreadable dump(s)</span>}
    </span>
  );
}

/** Thread-dump frames (`pkg.Class.method(java.base@17/File.java:181)`, `(Native Method)`)
 *  in the method form the tree page parses (`pkg.Class.method() (File.java:181)`), so
 *  labels, packages and hotspot modules come out right. Other texts stay as they are. */
export function tdFrameMethod(frame: string): string {
  const m = /^([\w$.<>]+)\((?:[^()/]*\/)?([^():/]+?)(?::(\d+))?\)$/.exec(frame);
  if (!m) return frame;
  return m[3] ? `${m[1]}() (${m[2]}:${m[3]})` : `${m[1]}() (${m[2]})`;
}
