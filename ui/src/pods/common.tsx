// common.tsx -- small pieces the pods, heaps and dump-viewer screens share: a fetch hook
// that cancels stale answers, the error banner with Retry (and the 422 "could not be
// parsed" variant), a confirmation dialog, a transient toast, and tiny formatters.

import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, isAbort, type Dump } from '../lib/api';
import { civil, fmtOffset, fmtTs, offsetMin } from '../lib/time';
import { pad2, shortPod } from '../lib/format';

export interface Fetched<T> {
  data: T | null;
  error: ApiError | null;
  loading: boolean;
  retry: () => void;
}

/** Runs `load` whenever `deps` change (or retry() is called); an answer that arrives after
 *  the deps moved on is dropped, and the previous request is aborted. */
export function useFetch<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Fetched<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ac = new AbortController();
    setLoading(true);
    setError(null);
    load(ac.signal)
      .then((d) => { if (!ac.signal.aborted) { setData(d); setLoading(false); } })
      .catch((e) => {
        if (isAbort(e) || ac.signal.aborted) return;
        setError(e instanceof ApiError ? e : new ApiError(0, 'client', String(e?.message ?? e)));
        setLoading(false);
      });
    return () => ac.abort();
  }, [...deps, tick]);
  return { data, error, loading, retry: () => setTick((t) => t + 1) };
}

/** Red banner for a failed request; a 422 on a dump means the file itself is broken, so
 *  the useful action is downloading it, not retrying. */
export function ErrorBanner({ error, retry, downloadHref }: { error: ApiError; retry?: () => void; downloadHref?: string }) {
  if (error.status === 422) {
    return (
      <div class="banner banner-red" data-testid="dump-unparsable">
        <span>This file could not be parsed ({error.message}).</span>
        {downloadHref && <a class="btn btn-small" href={downloadHref} download>Download the file</a>}
      </div>
    );
  }
  const text = error.status === 403 ? `No access: ${error.message}` : error.message;
  return (
    <div class="banner banner-red" data-testid="error-banner">
      <span>{text}</span>
      {retry && <button type="button" class="btn btn-small" onClick={retry}>Retry</button>}
    </div>
  );
}

export function Loading({ rows = 6, label = 'Loading…' }: { rows?: number; label?: string }) {
  return (
    <div class="pods-loading" data-testid="loading">
      <div class="muted small"><span class="spinner" /> {label}</div>
      {Array.from({ length: rows }, (_, i) => <div key={i} class="skeleton" />)}
    </div>
  );
}

export function ConfirmDialog(p: {
  title: string; children?: ComponentChildren; confirm: string; danger?: boolean; busy?: boolean;
  onConfirm: () => void; onCancel: () => void; testid?: string;
}) {
  const ok = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    ok.current?.focus();
    const k = (e: KeyboardEvent) => { if (e.key === 'Escape') p.onCancel(); };
    window.addEventListener('keydown', k);
    return () => window.removeEventListener('keydown', k);
  }, []);
  return (
    <div class="overlay" onClick={(e) => { if (e.target === e.currentTarget) p.onCancel(); }}>
      <div class="dialog" role="dialog" aria-modal="true" aria-label={p.title} data-testid={p.testid ?? 'confirm-dialog'}>
        <h2>{p.title}</h2>
        {p.children && <div class="dialog-body">{p.children}</div>}
        <div class="dialog-buttons">
          <button type="button" class="btn" onClick={p.onCancel}>Cancel</button>
          <button type="button" ref={ok} disabled={p.busy} data-testid="confirm-ok"
            class={`btn ${p.danger ? 'btn-danger' : 'btn-primary'}`} onClick={p.onConfirm}>
            {p.busy ? <span class="spinner" /> : null} {p.confirm}
          </button>
        </div>
      </div>
    </div>
  );
}

/** A toast that disappears by itself; returns [element, show]. */
export function useToast(): [ComponentChildren, (text: string) => void] {
  const [text, setText] = useState<string | null>(null);
  useEffect(() => {
    if (!text) return;
    const t = setTimeout(() => setText(null), 3500);
    return () => clearTimeout(t);
  }, [text]);
  return [text ? <div class="toast" data-testid="pods-toast">{text}</div> : null, setText];
}

/** Compact time for table cells: `HH:mm:ss` when the instant is on the same day as `ref`
 *  in the zone, else `MM/DD HH:mm`, else with the year. Full form goes in the tooltip. */
export function fmtShort(ms: number, zone: string, ref: number): string {
  const c = civil(ms, zone);
  const r = civil(ref, zone);
  const hms = `${pad2(c.h)}:${pad2(c.mi)}:${pad2(c.s)}`;
  if (c.y === r.y && c.mo === r.mo && c.d === r.d) return hms;
  if (c.y === r.y) return `${pad2(c.mo)}/${pad2(c.d)} ${hms}`;
  return `${c.y}/${pad2(c.mo)}/${pad2(c.d)} ${hms}`;
}

/** `+03:00` of the zone now: column headers say which zone the times are in. */
export function zoneLabel(zone: string, at: number): string {
  return zone === 'UTC' ? 'UTC' : fmtOffset(offsetMin(at, zone));
}

/** Bits per second, decimal units as network people read them. */
export function fmtBitrate(bps: number | null | undefined): string {
  if (bps === null || bps === undefined || !Number.isFinite(bps)) return '';
  if (bps < 1000) return `${Math.round(bps)} bit/s`;
  if (bps < 1e6) return `${(bps / 1000).toFixed(bps < 1e4 ? 1 : 0)} kbit/s`;
  return `${(bps / 1e6).toFixed(bps < 1e7 ? 1 : 0)} Mbit/s`;
}

export function hexNid(nid: number): string {
  return '0x' + nid.toString(16);
}

/** Follow a same-origin `back` parameter only (never an absolute URL: no open redirect). */
export function safeBack(back: string | null, fallback: string): string {
  return back && back.startsWith('/') && !back.startsWith('//') ? back : fallback;
}

/** Starts a browser download of a same-origin URL without leaving the page. */
export function triggerDownload(href: string): void {
  const a = document.createElement('a');
  a.href = href;
  a.download = '';
  a.style.display = 'none';
  document.body.appendChild(a);
  a.click();
  a.remove();
}

/** A file viewer's subtitle: pod · time · name, from the file's record when it was found,
 *  else from the pod the link carried. */
export function dumpSubtitle(rec: Dump | null, linkPod: string | null, zone: string): string {
  const pod = rec ? (rec.restart_pod ?? rec.pod) : linkPod;
  return [pod ? shortPod(pod) : null, rec ? fmtTs(rec.time_ms, zone) : null, rec?.name].filter(Boolean).join(' · ');
}
