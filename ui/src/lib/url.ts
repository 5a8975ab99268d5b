// url.ts -- the URL is the source of truth for every view (ui.md §1.1): the path picks the
// screen, the query string holds the window, the selection and every filter. Components
// read it through useRoute() and change it through navigate()/setParams(), which push a
// history entry (or replace it for typing-speed edits) and re-render subscribers.

import { useEffect, useState } from 'preact/hooks';

export interface Route {
  path: string;              // location.pathname, e.g. "/calls"
  params: URLSearchParams;   // a fresh copy: mutate freely
}

type Listener = () => void;
const listeners = new Set<Listener>();

function notify(): void {
  for (const l of [...listeners]) l();
}

if (typeof window !== 'undefined') window.addEventListener('popstate', notify);

export function currentRoute(): Route {
  return { path: location.pathname, params: new URLSearchParams(location.search) };
}

/** Re-renders the component whenever the URL changes. */
export function useRoute(): Route {
  const [, setTick] = useState(0);
  useEffect(() => {
    const l = () => setTick((t) => t + 1);
    listeners.add(l);
    return () => { listeners.delete(l); };
  }, []);
  return currentRoute();
}

export function buildUrl(path: string, params: URLSearchParams | Record<string, string | string[] | undefined | null>): string {
  const p = params instanceof URLSearchParams ? params : toParams(params);
  const s = p.toString();
  return s ? `${path}?${s}` : path;
}

export function toParams(rec: Record<string, string | string[] | undefined | null>): URLSearchParams {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(rec)) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) for (const x of v) p.append(k, x);
    else p.set(k, v);
  }
  return p;
}

export interface NavOpts { replace?: boolean }

export function navigate(url: string, opts: NavOpts = {}): void {
  if (url === location.pathname + location.search) return;
  if (opts.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  notify();
}

/** Sets (string), replaces (array) or deletes (null/undefined/'') query parameters of the
 *  current URL, keeping the path and every other parameter. */
export function setParams(patch: Record<string, string | string[] | null | undefined>, opts: NavOpts = {}): void {
  const r = currentRoute();
  for (const [k, v] of Object.entries(patch)) {
    r.params.delete(k);
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) for (const x of v) r.params.append(k, x);
    else r.params.set(k, v);
  }
  navigate(buildUrl(r.path, r.params), opts);
}

/** The parameters that carry the window and the selection from one screen to another. */
export const CONTEXT_KEYS = ['from', 'to', 'service', 'pod'];

export function contextParams(params: URLSearchParams): URLSearchParams {
  const out = new URLSearchParams();
  for (const k of CONTEXT_KEYS) for (const v of params.getAll(k)) out.append(k, v);
  return out;
}
