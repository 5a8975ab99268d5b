// files.tsx -- the per-pod file list that Pods Info expands inline (ui.md §5): every file
// of one type for one pod in the window, newest first, with View (the §9 viewer in a new
// tab) and Download links; and the zip download action with its size check.

import { useState } from 'preact/hooks';
import { apiGet, apiUrl, type Dump, type DumpsPage } from '../lib/api';
import { useApp } from '../lib/ctx';
import { fmtBytes, fmtCount } from '../lib/format';
import { fmtTs, serverNow } from '../lib/time';
import { buildUrl } from '../lib/url';
import { ConfirmDialog, ErrorBanner, fmtShort, triggerDownload, useFetch } from './common';

/** Above this the zip download asks first (ui.md §5 "size budget"). */
export const DOWNLOAD_WARN_BYTES = 500 * 1024 * 1024;

export const TYPE_LABEL: Record<string, string> = {
  td: 'thread dumps', top: 'top dumps', gc: 'GC logs', heap: 'heap dumps',
  alloc: 'Go alloc profiles', pprof_heap: 'Go heap profiles', goroutine: 'Go goroutine profiles', profile: 'Go CPU profiles',
};

/** The viewer of a file, or null when the type has none. `ctx` is carried so the viewer can
 *  find its pod, neighbours (the top dump of the same minute) and the way back. */
export function viewerUrl(d: Dump, back: string, win: { from: number; to: number }): string | null {
  const ctx = { namespace: d.namespace, pod: d.restart_pod ?? d.pod, t: String(d.time_ms), back };
  if (d.type === 'td') return buildUrl(`/dump/td/${encodeURIComponent(d.id)}`, ctx);
  if (d.type === 'top') return buildUrl(`/dump/top/${encodeURIComponent(d.id)}`, ctx);
  if (['alloc', 'pprof_heap', 'goroutine', 'profile'].includes(d.type)) return buildUrl(`/dump/profile/${encodeURIComponent(d.id)}`, ctx);
  if (d.type === 'gc') {
    return buildUrl('/dump/gc', { namespace: d.namespace, pod: d.restart_pod ?? d.pod, from: String(win.from), to: String(win.to), back });
  }
  return null;
}

/** All files of `type` for the given pod filters (a row can map to several dump pod names). */
async function loadFiles(namespace: string, pods: string[], type: string, from: number, to: number,
                         signal: AbortSignal): Promise<{ dumps: Dump[]; more: boolean }> {
  const pages = await Promise.all(pods.map((pod) => apiGet<DumpsPage>('/dumps', {
    namespace, pod, type, from: String(from), to: String(to), limit: '1000',
  }, signal)));
  const seen = new Set<string>();
  const dumps: Dump[] = [];
  for (const p of pages) for (const d of p.dumps) if (!seen.has(d.id)) { seen.add(d.id); dumps.push(d); }
  dumps.sort((a, b) => b.time_ms - a.time_ms || Number(b.id) - Number(a.id));
  return { dumps, more: pages.some((p) => p.next_cursor !== null) };
}

/** `winKey` names the window as typed (and the refresh count): a live window resolves to new
 *  milliseconds on every render, which must not refetch the list each time. */
export function FileList(p: {
  namespace: string; pods: string[]; type: string; from: number; to: number; winKey: string; back: string; colSpan: number;
}) {
  const { zone } = useApp();
  const now = serverNow();
  const f = useFetch((s) => loadFiles(p.namespace, p.pods, p.type, p.from, p.to, s),
    [p.namespace, p.pods.join(','), p.type, p.winKey]);
  let body;
  if (f.error) body = <ErrorBanner error={f.error} retry={f.retry} />;
  else if (f.loading && !f.data) body = <div class="muted small pad"><span class="spinner" /> Loading {TYPE_LABEL[p.type] ?? p.type}…</div>;
  else if (!f.data || f.data.dumps.length === 0) body = <div class="muted small pad">No {TYPE_LABEL[p.type] ?? p.type} of this pod in the window.</div>;
  else {
    body = (
      <table class="grid files-grid" data-testid="dump-files">
        <thead>
          <tr><th>Time</th><th class="num">Size</th><th>File</th><th>Details</th><th /></tr>
        </thead>
        <tbody>
          {f.data.dumps.map((d) => {
            const view = viewerUrl(d, p.back, p);
            return (
              <tr key={d.id} data-testid="dump-file-row" data-id={d.id}>
                <td class="nowrap" title={`${fmtTs(d.time_ms, zone)} — ${d.name}${d.capture_ms ? `\ncaptured ${fmtTs(d.capture_ms, zone)}` : ''}`}>
                  {fmtShort(d.time_ms, zone, now)}
                </td>
                <td class="num nowrap">{fmtBytes(d.bytes)}</td>
                <td class="mono ellipsis files-name" title={d.name}>{d.name}</td>
                <td class="muted small">{fileDetails(d)}</td>
                <td class="nowrap files-actions">
                  {view && <a href={view} target="_blank" rel="noopener" data-testid="dump-view-link">View</a>}
                  {d.state === 'uploading'
                    ? <span class="tag tag-amber">uploading</span>
                    : <a href={apiUrl(`/dumps/${encodeURIComponent(d.id)}`)} download={d.name} data-testid="dump-download-link">Download</a>}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    );
  }
  return (
    <tr class="files-row">
      <td colSpan={p.colSpan}>
        <div class="files-box">
          {body}
          {f.data?.more && <div class="muted small pad">Only the newest 1000 files are listed: narrow the window for older ones.</div>}
        </div>
      </td>
    </tr>
  );
}

function fileDetails(d: Dump): string {
  const i = d.info ?? {};
  if (d.type === 'td' && typeof i.threads === 'number') return `${fmtCount(i.threads)} threads`;
  if (d.type === 'top' && typeof i.threads === 'number') return `${fmtCount(i.threads)} threads`;
  if (typeof i.samples === 'number') return `${fmtCount(i.samples)} samples`;
  if (d.type === 'gc' && d.version > 1) return `re-sent ${d.version}×`;
  return '';
}

// ---- zip download with the size check -----------------------------------------------------

export function downloadHref(type: string, filter: Record<string, string>, from: number, to: number, estimate = false): string {
  return apiUrl('/dumps/download', { ...filter, type, from: String(from), to: String(to), estimate: estimate ? '1' : undefined });
}

/** A link that checks the estimate first: nothing to download → a toast; more than
 *  DOWNLOAD_WARN_BYTES → a confirmation with the estimate. */
export function DownloadLink(p: {
  type: string; filter: Record<string, string>; from: number; to: number; label: string; title?: string;
  onToast: (t: string) => void; testid?: string; none?: boolean;
}) {
  const [busy, setBusy] = useState(false);
  const [ask, setAsk] = useState<{ files: number; bytes: number } | null>(null);
  const href = downloadHref(p.type, p.filter, p.from, p.to);
  const click = async (e: MouseEvent) => {
    e.preventDefault();
    if (busy) return;
    setBusy(true);
    try {
      const est = await apiGet<{ files: number; bytes: number }>('/dumps/download',
        { ...p.filter, type: p.type, from: String(p.from), to: String(p.to), estimate: '1' });
      if (est.files === 0) p.onToast(`No ${TYPE_LABEL[p.type] ?? p.type} in this window`);
      else if (est.bytes > DOWNLOAD_WARN_BYTES) setAsk(est);
      else triggerDownload(href);
    } catch (err: any) {
      p.onToast(`Download failed: ${err?.message ?? err}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <a href={href} class={`dl-link ${busy ? 'dl-busy' : ''} ${p.none ? 'dl-none' : ''}`} title={p.title ?? `Zip of the ${TYPE_LABEL[p.type]} in the window`}
        data-testid={p.testid} data-type={p.type} onClick={click}>{p.label}</a>
      {ask && (
        <ConfirmDialog title="Large download" confirm="Download anyway" testid="download-confirm"
          onCancel={() => setAsk(null)} onConfirm={() => { setAsk(null); triggerDownload(href); }}>
          <p>The {TYPE_LABEL[p.type]} zip holds {fmtCount(ask.files)} files, about <b>{fmtBytes(ask.bytes)}</b> before
            compression. Narrow the window or the selection to make it smaller.</p>
        </ConfirmDialog>
      )}
    </>
  );
}

/** Thread dumps / Top dumps / GC logs links for one scope. */
export function DownloadSet(p: {
  filter: Record<string, string>; from: number; to: number; onToast: (t: string) => void; scope: string;
  present?: Record<string, unknown>;
}) {
  // a row knows which types it has: the others stay clickable (they answer with a toast) but dimmed
  const none = (t: string) => p.present !== undefined && !p.present[t];
  return (
    <span class="dl-set" data-testid={`download-${p.scope}`}>
      <span class="dl-icon" aria-hidden="true">⤓</span>
      <DownloadLink none={none('td')} type="td" label="TD" title="Thread dumps (zip)" {...p} testid="download-td" />
      <DownloadLink none={none('top')} type="top" label="Top" title="Top dumps (zip)" {...p} testid="download-top" />
      <DownloadLink none={none('gc')} type="gc" label="GC" title="GC logs (zip)" {...p} testid="download-gc" />
    </span>
  );
}
