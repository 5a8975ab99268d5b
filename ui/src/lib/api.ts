// api.ts -- the /api/v1 client (docs/API.md). Every request takes an AbortSignal so a
// screen that changes its filters cancels the answer it no longer wants. Errors become
// ApiError with the server's JSON fields (status, code, message). A 401 of --auth oidc
// sends the browser to the login page (lib/auth.ts).

import { goLogin, wantsOidcLogin } from './auth';

export class ApiError extends Error {
  status: number;
  code: string;
  body: Record<string, unknown>;
  constructor(status: number, code: string, message: string, body: Record<string, unknown> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

export function isAbort(e: unknown): boolean {
  return e instanceof DOMException && e.name === 'AbortError';
}

export function apiUrl(path: string, params?: URLSearchParams | Record<string, string | undefined>): string {
  let p: URLSearchParams;
  if (!params) p = new URLSearchParams();
  else if (params instanceof URLSearchParams) p = params;
  else {
    p = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') p.set(k, v);
  }
  const s = p.toString();
  return `/api/v1${path}${s ? '?' + s : ''}`;
}

/** The JSON body of an answer, or an ApiError with the server's fields for a non-2xx one. */
export async function decode<T>(res: Response): Promise<T> {
  const text = await res.text();
  let body: any = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = null; }
  if (!res.ok) {
    if (wantsOidcLogin(res.status, body)) goLogin();
    const msg = body && typeof body.error === 'string' ? body.error : `HTTP ${res.status} ${res.statusText}`;
    throw new ApiError(res.status, body?.code ?? 'http_error', msg, body ?? {});
  }
  if (body === null) throw new ApiError(res.status, 'bad_json', 'the server answered something that is not JSON');
  return body as T;
}

export async function apiGet<T>(path: string, params?: URLSearchParams | Record<string, string | undefined>,
                                signal?: AbortSignal): Promise<T> {
  let res: Response;
  try {
    res = await fetch(apiUrl(path, params), { signal, headers: { Accept: 'application/json' } });
  } catch (e) {
    if (isAbort(e)) throw e;
    throw new ApiError(0, 'network', 'the server cannot be reached');
  }
  return decode<T>(res);
}

export async function apiPost<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
  let res: Response;
  try {
    res = await fetch(apiUrl(path), {
      method: 'POST', signal, body: JSON.stringify(body),
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    });
  } catch (e) {
    if (isAbort(e)) throw e;
    throw new ApiError(0, 'network', 'the server cannot be reached');
  }
  return decode<T>(res);
}

export async function apiDelete(path: string): Promise<void> {
  const res = await fetch(apiUrl(path), { method: 'DELETE' });
  if (!res.ok && res.status !== 204) await decode<unknown>(res);
}

// ---- shapes (docs/API.md) ----------------------------------------------------------------

export interface Call {
  id: string;
  ts_ms: number;
  duration_ms: number;
  method: string;
  namespace: string;
  service: string;
  pod: string;
  restart_ms: number;
  thread: string;
  cpu_time: number;
  wait_time: number;
  memory_used: number;
  suspend_ms: number;
  calls: number;
  transactions: number;
  queue_wait_ms: number;
  logs_generated: number;
  logs_written: number;
  file_read: number;
  file_written: number;
  net_read: number;
  net_written: number;
  error: boolean;
  /** the call ran SQL: its trace references a value of the sql stream (ui.md §3.3 tag) */
  sql?: boolean;
  params: Record<string, string[]>;
  trace_available: boolean;
  trace_dropped_reason: string | null;
}

export interface CallsPage {
  calls: Call[];
  next_cursor: string | null;
  scanned: number;
  cold_files: number;
  cold_files_skipped: number;
  partial: boolean;
  partial_reasons: string[];
}

export interface StatsPoint { ts_ms: number; duration_ms: number; calls: number; id: string }

export interface CallsStats {
  points: StatsPoint[];
  total: number;
  sampled: boolean;
  sum_duration_ms: number;
  sum_suspend_ms: number;
  sum_queue_wait_ms: number;
  sum_transactions: number;
  scanned: number;
  partial: boolean;
  partial_reasons: string[];
  /** width of one chart column in ms (newer servers) */
  column_ms?: number;
  /** where the answer came from (newer servers; informative) */
  source?: string;
}

export interface RestartRow { restart_ms: number; first_ms: number; last_ms: number; calls: number }
export interface PodRow { pod: string; calls: number; restarts: RestartRow[] }
export interface ServiceRow { service: string; calls: number; pods: PodRow[] }
export interface NamespaceRow { namespace: string; calls: number; services: ServiceRow[] }
export interface ServicesResp { namespaces: NamespaceRow[]; partial: boolean }

export interface TreeParamGroup {
  value: string;
  duration: number;
  count: number;
  variants?: { value: string; duration: number; count: number; trimmed?: boolean; length?: number; key?: string; source?: string }[];
  params?: TreeParam[];
  unresolved?: boolean;
  trimmed?: boolean;
  length?: number;
  ref?: string;
  key?: string;          // a trimmed value's key: GET /calls/{id}/value?param=&key= answers it whole
  source?: string;       // a trimmed value: the id of the call it was first seen in (ask that one)
}
export interface TreeParam { param: number; groups: TreeParamGroup[] }

export interface TreeNodeJson {
  method: number;
  total: number;
  self: number;
  suspension: number;
  self_suspension: number;
  invocations: number;
  calls: number;
  first?: number;
  last?: number;
  params?: TreeParam[];
  children?: TreeNodeJson[];
}

export interface TreeResp {
  version: number;
  methods: string[];
  params: string[];
  calls: Call[];
  root: TreeNodeJson;
  truncated: boolean;
  nodes: number;
  start_ms: number;
  end_ms: number;
}

export interface Dump {
  id: string;
  namespace: string;
  service: string;
  pod: string;
  restart_pod: string | null;
  restart_ms: number;
  type: string;
  time_ms: number;
  capture_ms: number | null;
  received_ms: number;
  bytes: number;
  name: string;
  sha256: string;
  version: number;
  location: string;
  state: string;
  info?: Record<string, any>;
}

export interface DumpsPage { dumps: Dump[]; next_cursor: string | null }

export interface DumpTypeSummary { count: number; bytes: number; first_ms: number; last_ms: number }
export interface DumpPodSummary {
  namespace: string;
  pod: string;
  service: string;
  restart_pod: string | null;
  restart_ms: number;
  first_ms: number;
  last_ms: number;
  bytes: number;
  online: boolean;
  last_received_ms: number;
  bitrate_bps: number;
  types: Record<string, DumpTypeSummary>;
}
export interface DumpsSummary { from: number; to: number; truncated: boolean; pods: DumpPodSummary[] }

export interface ServerConfig {
  version: string;
  auth?: 'none' | 'basic' | 'oidc';
  features: Record<string, unknown>;
  limits: Record<string, number>;
  default_duration: string;
  /** --trace-link: the ids chip links each id there ({id}, {name}); null = no links */
  trace_link?: string | null;
}
