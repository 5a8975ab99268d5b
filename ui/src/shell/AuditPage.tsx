// AuditPage.tsx -- the audit log (ui.md §10.8, issue 19 item 10) at /audit, for admins:
// who deleted, exported, downloaded or imported what and when (GET /api/v1/audit), newest
// first, filtered by action and user, paged with "Load more" (keyset cursor). Not the
// shell's period: that is the profiled data's time, the audit log is about recent actions.

import { useEffect, useState } from 'preact/hooks';
import { ApiError, apiGet, isAbort } from '../lib/api';
import { useApp } from '../lib/ctx';
import { fmtTs } from '../lib/time';
import { setParams } from '../lib/url';
import type { ScreenProps } from './Shell';

export interface AuditEntry {
  id: string; time_ms: number; user: string; role: string; action: string; target: string;
  namespace: string | null; outcome: string; remote: string; detail: Record<string, unknown> | null;
}
interface AuditPage { entries: AuditEntry[]; next_cursor: string | null }

export const AUDIT_ACTIONS = ['dump.delete', 'dump.download', 'dumps.download', 'calls.export_csv', 'calls.export_xlsx', 'tree.export', 'import'];

/** The detail object in one line: `rows: 45, bytes: 12 KiB`. */
export function detailText(d: Record<string, unknown> | null): string {
  if (!d) return '';
  return Object.entries(d).map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`).join(', ');
}

export function AuditPage({ route }: ScreenProps) {
  const app = useApp();
  const P = route.params;
  const action = P.get('action') ?? '';
  const user = P.get('user') ?? '';
  const [rows, setRows] = useState<AuditEntry[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [more, setMore] = useState(0);
  const [state, setState] = useState<{ loading: boolean; error: ApiError | null }>({ loading: true, error: null });
  const [userIn, setUserIn] = useState(user);
  const key = `${action}|${user}`;
  useEffect(() => { setRows([]); setCursor(null); setMore(0); }, [key]);
  useEffect(() => {
    const ac = new AbortController();
    setState({ loading: true, error: null });
    const q: Record<string, string> = { limit: '200' };
    if (action) q.action = action;
    if (user) q.user = user;
    if (more > 0 && cursor) q.cursor = cursor;
    apiGet<AuditPage>('/audit', q, ac.signal)
      .then((p) => { setRows((r) => (more > 0 ? [...r, ...p.entries] : p.entries)); setCursor(p.next_cursor); setState({ loading: false, error: null }); })
      .catch((e) => { if (!isAbort(e)) setState({ loading: false, error: e instanceof ApiError ? e : new ApiError(0, 'client', String(e)) }); });
    return () => ac.abort();
  }, [key, more]);

  if (app.config && app.config.features?.audit !== true) {
    return <div class="state" data-testid="audit-off">This server keeps no audit log.</div>;
  }
  return (
    <div class="pods-page" data-testid="audit-page">
      <div class="pods-head">
        <h1>Audit log</h1>
        <span class="muted small" data-testid="audit-count">{rows.length} entries{cursor ? ' (more)' : ''}</span>
        <select class="input" value={action} data-testid="audit-action" onChange={(e) => setParams({ action: (e.currentTarget as HTMLSelectElement).value || null })}>
          <option value="">every action</option>
          {AUDIT_ACTIONS.map((a) => <option key={a} value={a}>{a}</option>)}
        </select>
        <input class="input" placeholder="user" value={userIn} data-testid="audit-user"
          onInput={(e) => setUserIn((e.currentTarget as HTMLInputElement).value)}
          onKeyDown={(e) => { if (e.key === 'Enter') setParams({ user: userIn.trim() || null }); }} />
        {state.loading && <span class="spinner" />}
      </div>
      <p class="muted small">Deletions, exports, downloads and imports: who, what, when. Admins only; an admin limited to
        namespaces sees the entries of those namespaces.</p>
      {state.error && (
        <div class="banner banner-red" data-testid="audit-error">
          {state.error.status === 403 ? 'The audit log is for admins.' : `${state.error.status ? `${state.error.status}: ` : ''}${state.error.message}`}
        </div>
      )}
      {!state.error && !state.loading && rows.length === 0 && <div class="state" data-testid="audit-empty">No entry yet.</div>}
      {rows.length > 0 && (
        <div class="pods-scroll">
          <table class="grid" data-testid="audit-table">
            <thead><tr><th>Time</th><th>User</th><th>Role</th><th>Action</th><th>Target</th><th>Namespace</th><th>Outcome</th><th>From</th><th>Detail</th></tr></thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id} data-testid="audit-row" data-action={r.action} data-user={r.user}>
                  <td class="nowrap">{fmtTs(r.time_ms, app.zone)}</td><td>{r.user}</td><td class="muted">{r.role}</td>
                  <td class="mono">{r.action}</td><td class="mono ellipsis" style="max-width:360px" title={r.target}>{r.target}</td>
                  <td>{r.namespace ?? ''}</td>
                  <td class={r.outcome === 'ok' ? '' : 'red'}>{r.outcome}</td><td class="muted mono">{r.remote}</td>
                  <td class="small ellipsis" style="max-width:320px" title={detailText(r.detail)}>{detailText(r.detail)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {cursor && <button type="button" class="btn btn-small" data-testid="audit-more" disabled={state.loading} onClick={() => setMore(more + 1)}>Load more</button>}
        </div>
      )}
    </div>
  );
}
