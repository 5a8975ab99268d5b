// podsModel.ts -- the Pods Info table model (ui.md §5): joins the discovery answer (pods
// with calls in the window) with the dumps summary (pods with diagnostic files) into
// namespace → service → pod-restart rows. The join key is the pod name string
// (dumps-http.md §5): a dump's restart_pod equals the calls pod name when the server joined
// it; otherwise the dump's bare pod segment is compared with the calls pod's short name.
// Pure functions, tested in podsModel.test.ts.

import type { DumpPodSummary, DumpTypeSummary, ServicesResp } from '../lib/api';
import type { Selection } from '../lib/ctx';
import { shortPod } from '../lib/format';

export const GO_TYPES = ['alloc', 'pprof_heap', 'goroutine', 'profile'] as const;
export const GO_LABEL: Record<string, string> = { alloc: 'alloc', pprof_heap: 'heap', goroutine: 'goroutine', profile: 'cpu' };
/** Online (ui.md §5): profiling data within the last 2 minutes. */
export const CALLS_ONLINE_MS = 2 * 60000;

export interface PodRowModel {
  key: string;
  namespace: string;
  service: string;
  pod: string;                 // the calls pod name, or the dump pod for dump-only rows
  restartMs: number | null;    // restart (connection) time; null when unknown
  calls: number;
  callsFirst: number | null;
  callsLast: number | null;
  types: Record<string, DumpTypeSummary>;
  dumpPods: string[];          // values for the dumps API `pod=` filter that cover this row
  bytes: number;
  bitrate: number | null;
  dumpsOnline: boolean;
  lastReceived: number | null;
  from: number | null;         // data available, clipped to the window
  to: number | null;
  hasCalls: boolean;
  hasDumps: boolean;
}

export interface ServiceGroup { key: string; namespace: string; service: string; rows: PodRowModel[] }
export interface NamespaceGroup { namespace: string; services: ServiceGroup[] }

function mergeType(a: DumpTypeSummary | undefined, b: DumpTypeSummary): DumpTypeSummary {
  if (!a) return { ...b };
  return {
    count: a.count + b.count, bytes: a.bytes + b.bytes,
    first_ms: Math.min(a.first_ms, b.first_ms), last_ms: Math.max(a.last_ms, b.last_ms),
  };
}

function emptyRow(key: string, namespace: string, service: string, pod: string, restartMs: number | null): PodRowModel {
  return {
    key, namespace, service, pod, restartMs, calls: 0, callsFirst: null, callsLast: null, types: {}, dumpPods: [],
    bytes: 0, bitrate: null, dumpsOnline: false, lastReceived: null, from: null, to: null, hasCalls: false, hasDumps: false,
  };
}

function attach(row: PodRowModel, s: DumpPodSummary): void {
  row.hasDumps = true;
  for (const [t, v] of Object.entries(s.types)) row.types[t] = mergeType(row.types[t], v);
  const filter = s.restart_pod ?? s.pod;
  if (!row.dumpPods.includes(filter)) row.dumpPods.push(filter);
  row.bytes += s.bytes;
  if (s.bitrate_bps !== null && s.bitrate_bps !== undefined) row.bitrate = (row.bitrate ?? 0) + s.bitrate_bps;
  row.dumpsOnline = row.dumpsOnline || s.online;
  if (s.last_received_ms) row.lastReceived = Math.max(row.lastReceived ?? 0, s.last_received_ms);
}

/** Builds the rows. `sel` empty = every pod of the window (dumps have no other scope). */
export function buildRows(disc: ServicesResp | null, dumps: DumpPodSummary[], sel: Selection,
                          winFrom: number, winTo: number): PodRowModel[] {
  const rows = new Map<string, PodRowModel>();
  // calls pods by (namespace, full name) and by (namespace, short name)
  const byFull = new Map<string, PodRowModel[]>();
  const byShort = new Map<string, PodRowModel[]>();
  for (const n of disc?.namespaces ?? []) {
    for (const s of n.services) {
      for (const p of s.pods) {
        for (const r of p.restarts) {
          const key = `${n.namespace}|${p.pod}|${r.restart_ms}`;
          const row = emptyRow(key, n.namespace, s.service, p.pod, r.restart_ms);
          row.hasCalls = true;
          row.calls = r.calls;
          row.callsFirst = r.first_ms;
          row.callsLast = r.last_ms;
          rows.set(key, row);
          const fk = `${n.namespace}|${p.pod}`;
          const sk = `${n.namespace}|${shortPod(p.pod)}`;
          byFull.set(fk, [...(byFull.get(fk) ?? []), row]);
          byShort.set(sk, [...(byShort.get(sk) ?? []), row]);
        }
      }
    }
  }
  for (const s of dumps) {
    let cands: PodRowModel[] | undefined;
    if (s.restart_pod) cands = byFull.get(`${s.namespace}|${s.restart_pod}`);
    if (!cands) cands = byFull.get(`${s.namespace}|${s.pod}`);
    if (!cands && !/_\d{10,}$/.test(s.pod)) cands = byShort.get(`${s.namespace}|${s.pod}`);
    let target: PodRowModel | undefined;
    if (cands && cands.length) target = pickRestart(cands, s);
    if (!target) {
      // dump-only pod: one row per (namespace, joined or bare name, restart)
      const name = s.restart_pod ?? s.pod;
      const key = `${s.namespace}|${name}|${s.restart_ms || 'dumps'}`;
      target = rows.get(key);
      if (!target) {
        target = emptyRow(key, s.namespace, s.service, name, s.restart_ms || null);
        rows.set(key, target);
      }
    }
    attach(target, s);
  }
  for (const row of rows.values()) {
    // a pod without dumps still gets a filter: its lists are simply empty
    if (!row.dumpPods.length) row.dumpPods.push(row.pod);
    let from = row.callsFirst;
    let to = row.callsLast;
    for (const t of Object.values(row.types)) {
      from = from === null ? t.first_ms : Math.min(from, t.first_ms);
      to = to === null ? t.last_ms : Math.max(to, t.last_ms);
    }
    row.from = from === null ? null : Math.max(from, winFrom);
    row.to = to === null ? null : Math.min(to, winTo);
  }
  return [...rows.values()].filter((r) => inSelection(r, sel));
}

/** The restart a dump file belongs to: same restart time, else the one whose lifetime covers
 *  the file, else the latest. */
function pickRestart(cands: PodRowModel[], s: DumpPodSummary): PodRowModel {
  const exact = cands.find((c) => s.restart_ms && c.restartMs === s.restart_ms);
  if (exact) return exact;
  const sorted = [...cands].sort((a, b) => (b.restartMs ?? 0) - (a.restartMs ?? 0));
  return sorted.find((c) => (c.restartMs ?? 0) <= s.last_ms) ?? sorted[0];
}

export function inSelection(r: PodRowModel, sel: Selection): boolean {
  if (sel.services.length === 0 && sel.pods.length === 0) return true;
  if (sel.services.includes(`${r.namespace}/${r.service}`)) return true;
  return sel.pods.includes(`${r.namespace}/${r.service}/${r.pod}`);
}

export function groupRows(rows: PodRowModel[]): NamespaceGroup[] {
  const ns = new Map<string, Map<string, PodRowModel[]>>();
  for (const r of rows) {
    let svcs = ns.get(r.namespace);
    if (!svcs) ns.set(r.namespace, (svcs = new Map()));
    const list = svcs.get(r.service);
    if (list) list.push(r);
    else svcs.set(r.service, [r]);
  }
  const out: NamespaceGroup[] = [];
  for (const n of [...ns.keys()].sort()) {
    const svcs = ns.get(n)!;
    out.push({
      namespace: n,
      services: [...svcs.keys()].sort().map((s) => ({
        key: `${n}/${s}`, namespace: n, service: s,
        rows: svcs.get(s)!.sort((a, b) => a.pod.localeCompare(b.pod) || (b.restartMs ?? 0) - (a.restartMs ?? 0)),
      })),
    });
  }
  return out;
}

/** Sums of a set of rows for the group lines. */
export function totals(rows: PodRowModel[]): { pods: number; calls: number; bytes: number; types: Record<string, number> } {
  const types: Record<string, number> = {};
  let calls = 0, bytes = 0;
  for (const r of rows) {
    calls += r.calls;
    bytes += r.bytes;
    for (const [t, v] of Object.entries(r.types)) types[t] = (types[t] ?? 0) + v.count;
  }
  return { pods: rows.length, calls, bytes, types };
}

/** Query filters of the dumps API for the summary request: as narrow as the selection
 *  allows with single-valued parameters (the rest is filtered client-side). */
export function summaryFilter(sel: Selection): Record<string, string> {
  const keys = [...sel.services, ...sel.pods];
  if (!keys.length) return {};
  const nss = new Set(keys.map((k) => k.split('/')[0]));
  if (nss.size !== 1) return {};
  const out: Record<string, string> = { namespace: [...nss][0] };
  const svcs = new Set(keys.map((k) => k.split('/')[1]));
  if (svcs.size === 1) out.service = [...svcs][0];
  return out;
}

/** Download scopes for "the whole selection": one filter set when the selection maps to
 *  single-valued API filters, else one per selected service and per lone pod. */
export function selectionScopes(sel: Selection, rows: PodRowModel[]): { label: string; filter: Record<string, string> }[] {
  if (sel.services.length === 0 && sel.pods.length === 0) {
    const nss = new Set(rows.map((r) => r.namespace));
    return nss.size === 1 ? [{ label: `namespace ${[...nss][0]}`, filter: { namespace: [...nss][0] } }]
      : [{ label: 'all pods', filter: {} }];
  }
  const out: { label: string; filter: Record<string, string> }[] = [];
  for (const s of sel.services) {
    const [namespace, service] = s.split('/');
    out.push({ label: `${namespace} / ${service}`, filter: { namespace, service } });
  }
  for (const p of sel.pods) {
    const [namespace, service, pod] = p.split('/');
    if (sel.services.includes(`${namespace}/${service}`)) continue;
    const row = rows.find((r) => r.namespace === namespace && r.pod === pod);
    for (const dp of row?.dumpPods.length ? row.dumpPods : [pod]) {
      out.push({ label: `${namespace} / ${shortPod(dp)}`, filter: { namespace, pod: dp } });
    }
  }
  return out;
}
