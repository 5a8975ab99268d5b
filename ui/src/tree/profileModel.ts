// profileModel.ts -- the URL of an aggregate profile (ui.md §10.2, issue 19 items 1–2),
// pure TS. `/profile?<calls filter>` merges every call the filter matches on the server
// (GET /api/v1/profile); `base=<query string>` adds a baseline: the same filter with those
// parameters replaced (another period, other pods), and the page shows the difference.
// The tree view's own state shares the URL: its in-tree search is `tq` here, because `q`
// is the calls filter's query.

import type { StreamProgress } from '../lib/stream';
import type { TreeResp } from '../lib/api';

/** The parameters of GET /api/v1/profile, as the calls list passes them. */
export const FILTER_KEYS = ['from', 'to', 'namespace', 'service', 'pod', 'pods', 'hide_system', 'duration', 'method', 'q', 'error', 'max_calls'];

export interface ProfileInfo {
  matched: number;
  merged: number;
  without_trace: number;
  stopped: null | 'max_calls' | 'max_nodes' | 'scan_budget' | string;
}
export type ProfileResp = TreeResp & { profile: ProfileInfo };

/** The merge's progress line (`phase: "merge"`) next to the search's. */
export type ProfileProgress = StreamProgress & { phase?: string; merged?: number; to_merge?: number; nodes?: number };

export function filterOf(p: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of FILTER_KEYS) { const v = p.get(k); if (v !== null && v !== '') out[k] = v; }
  return out;
}

/** The baseline's filter: the profile's, with `base`'s parameters in place (an empty value
 *  removes one, e.g. `pod=` for "all pods"). Unknown keys are ignored. */
export function baselineOf(p: URLSearchParams): Record<string, string> | null {
  const b = p.get('base');
  if (b === null) return null;
  const out = filterOf(p);
  for (const [k, v] of new URLSearchParams(b)) {
    if (!FILTER_KEYS.includes(k)) continue;
    if (v === '') delete out[k];
    else out[k] = v;
  }
  return out;
}

/** The period of the same length just before [from, to) — the default baseline. */
export function previousPeriod(from: number, to: number): { from: number; to: number } {
  const len = Math.max(1, to - from);
  return { from: from - len, to: from };
}

const STOPPED: Record<string, string> = {
  max_calls: 'more calls match than the limit: the newest were merged',
  max_nodes: 'the merged tree reached its node budget',
  scan_budget: 'the search reached its scan budget',
};

/** Why a profile stopped early, in words (null when it did not). */
export function stoppedText(info: ProfileInfo): string | null {
  if (!info.stopped) return null;
  return STOPPED[info.stopped] ?? info.stopped;
}

/** The progress line: the search, then `Merging 1 200 / 10 000 calls`. */
export function mergeText(p: ProfileProgress | null): string | null {
  if (!p || p.phase !== 'merge' || p.to_merge === undefined) return null;
  return `Merging ${p.merged ?? 0} / ${p.to_merge} calls${p.nodes ? ` (${p.nodes} nodes)` : ''}`;
}

export function mergeFraction(p: ProfileProgress | null): number {
  if (!p || p.phase !== 'merge' || !p.to_merge) return 0;
  return Math.min(1, (p.merged ?? 0) / p.to_merge);
}

/** The TreeScreen's view state under the profile's URL: `q` there is `tq` here. */
export function treeParams(p: URLSearchParams): URLSearchParams {
  const out = new URLSearchParams(p);
  out.delete('q');
  const tq = p.get('tq');
  if (tq !== null) out.set('q', tq);
  out.delete('tq');
  return out;
}

export function treePatch(patch: Record<string, string | null>): Record<string, string | null> {
  const out: Record<string, string | null> = { ...patch };
  if ('q' in out) { out.tq = out.q; delete out.q; }
  return out;
}

/** A short description of a filter for headers: `orders-service, 10:00 → 11:00, ≥ 100 ms`. */
export function describeFilter(f: Record<string, string>, fmt: (ms: number) => string): string {
  const parts: string[] = [];
  const scope = f.pod ?? (f.pods ? `${f.pods.split(',').length} pods` : null) ?? f.service ?? f.namespace;
  if (scope) parts.push(scope);
  if (f.from && f.to && /^\d+$/.test(f.from) && /^\d+$/.test(f.to)) parts.push(`${fmt(Number(f.from))} → ${fmt(Number(f.to))}`);
  if (f.duration) parts.push(`duration ${f.duration}`);
  if (f.q) parts.push(`“${f.q}”`);
  if (f.method) parts.push(f.method);
  return parts.join(', ');
}
