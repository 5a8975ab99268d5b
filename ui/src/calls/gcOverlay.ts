// gcOverlay.ts -- GC pauses over the calls chart (ui.md §9.3, §10.6; issue 19 item 5): the
// pauses of the selected pods' GC logs (GET /api/v1/gc, one request per pod, at most
// GC_MAX_PODS pods) in the chart's window, drawn as bands behind the calls so that a slow
// call under a long pause shows itself.

import { useEffect, useState } from 'preact/hooks';
import { apiGet, isAbort } from '../lib/api';
import type { GcPause, GcResp } from '../pods/dumpModel';

export const GC_MAX_PODS = 4;

export interface GcPod { namespace: string; service: string; pod: string }
export type PodPause = GcPause & { pod: string };

/** The pods of a rail selection ("ns/svc/pod") the overlay can ask for; null when none is
 *  named or more than GC_MAX_PODS are. */
export function gcPods(selPods: string[]): GcPod[] | null {
  if (!selPods.length || selPods.length > GC_MAX_PODS) return null;
  const out: GcPod[] = [];
  for (const key of selPods) {
    const parts = key.split('/');
    if (parts.length < 3) return null;
    out.push({ namespace: parts[0], service: parts[1], pod: parts.slice(2).join('/') });
  }
  return out;
}

/** Pauses that overlap [from, to), merged over pods, oldest first. */
export function pausesIn(lists: { pod: string; pauses: GcPause[] }[], from: number, to: number): PodPause[] {
  const out: PodPause[] = [];
  for (const l of lists) for (const p of l.pauses) if (p.time_ms + p.duration_ms >= from && p.time_ms < to) out.push({ ...p, pod: l.pod });
  return out.sort((a, b) => a.time_ms - b.time_ms);
}

/** The pause under a time (the longest when several overlap), within `slackMs`. */
export function pauseAt(ps: PodPause[], t: number, slackMs: number): PodPause | null {
  let best: PodPause | null = null;
  for (const p of ps) {
    if (t < p.time_ms - slackMs || t > p.time_ms + p.duration_ms + slackMs) continue;
    if (!best || p.duration_ms > best.duration_ms) best = p;
  }
  return best;
}

/** GET /gc of a pod: the logs uploaded under the name the calls carry, else (agents upload
 *  dumps under the pod's own name) under that name without the restart suffix `_<ms>`. */
export async function fetchGc(namespace: string, pod: string, from: number, to: number, signal?: AbortSignal): Promise<GcResp> {
  const ask = (name: string) => apiGet<GcResp>('/gc', { namespace, pod: name, from: String(from), to: String(to) }, signal);
  const r = await ask(pod);
  const bare = podWithoutRestart(pod);
  return r.files === 0 && bare !== pod ? ask(bare) : r;
}

async function gcOf(p: GcPod, from: number, to: number, signal: AbortSignal): Promise<{ pod: string; pauses: GcPause[]; files: number }> {
  const r = await fetchGc(p.namespace, p.pod, from, to, signal);
  return { pod: p.pod, pauses: r.pauses, files: r.files };
}

export function podWithoutRestart(pod: string): string {
  return pod.replace(/_\d{10,}$/, '');
}

export interface GcOverlay { pauses: PodPause[]; loading: boolean; error: string | null; files: number }

export function useGcOverlay(on: boolean, pods: GcPod[] | null, from: number, to: number): GcOverlay {
  const [st, setSt] = useState<GcOverlay>({ pauses: [], loading: false, error: null, files: 0 });
  const key = on && pods ? JSON.stringify([pods, from, to]) : '';
  useEffect(() => {
    if (!key || !pods) { setSt({ pauses: [], loading: false, error: null, files: 0 }); return; }
    const ac = new AbortController();
    setSt((s) => ({ ...s, loading: true, error: null }));
    Promise.all(pods.map((p) => gcOf(p, from, to, ac.signal)))
      .then((rs) => setSt({ pauses: pausesIn(rs, from, to), loading: false, error: null, files: rs.reduce((a, r) => a + r.files, 0) }))
      .catch((e) => { if (!isAbort(e)) setSt({ pauses: [], loading: false, error: String((e as Error)?.message ?? e), files: 0 }); });
    return () => ac.abort();
  }, [key]);
  return st;
}
