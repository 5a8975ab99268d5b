// ctx.ts -- what every screen derives from the URL and the app shell: the display zone,
// the window and the selection (ui.md §1, §2).

import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ServerConfig, ServicesResp } from './api';
import type { Me } from './auth';
import { DEFAULT_FROM, DEFAULT_TO, isRelative, parseTimeExpr, serverNow } from './time';

export interface AppState {
  zoneChoice: string;            // "Browser", "UTC" or an IANA name (persisted)
  zone: string;                  // the IANA zone in force
  setZone: (choice: string) => void;
  config: ServerConfig | null;
  me: Me | null;                 // GET /api/v1/me (null until it answers)
}

export const AppContext = createContext<AppState>({
  zoneChoice: 'UTC', zone: 'UTC', setZone: () => {}, config: null, me: null,
});

export function useApp(): AppState {
  return useContext(AppContext);
}

// ---- the window ------------------------------------------------------------------------

export interface Win {
  fromText: string;   // as in the URL: epoch ms or a relative expression
  toText: string;
  from: number;       // resolved now (server clock)
  to: number;
  live: boolean;      // `to` is now: every refresh re-resolves it
  error: string | null;
}

export function resolveWindow(params: URLSearchParams, zone: string, nowMs = serverNow()): Win {
  const fromText = params.get('from') || DEFAULT_FROM;
  const toText = params.get('to') || DEFAULT_TO;
  const from = parseTimeExpr(fromText, zone, nowMs);
  const to = parseTimeExpr(toText, zone, nowMs);
  const live = isRelative(toText) && toText.trim() === 'now';
  if (from === null || to === null) {
    const f = nowMs - 15 * 60000;
    return { fromText, toText, from: f, to: nowMs, live: true, error: `bad period '${from === null ? fromText : toText}'` };
  }
  if (from >= to) return { fromText, toText, from: to - 60000, to, live, error: 'the period ends before it starts' };
  return { fromText, toText, from, to, live, error: null };
}

// ---- the selection ---------------------------------------------------------------------

export interface Selection {
  services: string[];   // "ns/svc"
  pods: string[];       // "ns/svc/pod" (the pod name as the agent sent it)
}

export function selectionFromParams(params: URLSearchParams): Selection {
  return { services: params.getAll('service'), pods: params.getAll('pod') };
}

export function selectionEmpty(s: Selection): boolean {
  return s.services.length === 0 && s.pods.length === 0;
}

export function splitKey(key: string): string[] {
  // names never contain '/' (Kubernetes names), so the key splits cleanly
  return key.split('/');
}

/** Query parameters of the calls API (namespace/service/pod, or pods=a,b,...) that select
 *  exactly the selection. Services are expanded into their pods in the window with the
 *  discovery answer when more than one target is selected. null = nothing selected. */
export function selectionFilter(sel: Selection, disc: ServicesResp | null): Record<string, string> | null {
  if (selectionEmpty(sel)) return null;
  if (sel.services.length === 1 && sel.pods.length === 0) {
    const [namespace, service] = splitKey(sel.services[0]);
    return { namespace, service };
  }
  if (sel.services.length === 0 && sel.pods.length === 1) {
    const [namespace, service, pod] = splitKey(sel.pods[0]);
    return { namespace, service, pod };
  }
  const pods = new Set<string>();
  const nss = new Set<string>();
  for (const p of sel.pods) {
    const [ns, , pod] = splitKey(p);
    nss.add(ns);
    pods.add(pod);
  }
  for (const s of sel.services) {
    const [ns, svc] = splitKey(s);
    nss.add(ns);
    const n = disc?.namespaces.find((x) => x.namespace === ns);
    const sv = n?.services.find((x) => x.service === svc);
    for (const p of sv?.pods ?? []) pods.add(p.pod);
  }
  const out: Record<string, string> = {};
  if (nss.size === 1) out.namespace = [...nss][0];
  // no pod at all in the window: a pod name that cannot exist keeps the answer empty
  out.pods = pods.size ? [...pods].join(',') : '-';
  return out;
}
