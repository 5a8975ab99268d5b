// HeapsPage.tsx -- Heap Dumps (ui.md §6, §10.5): the heap dumps of the window and the
// selection, newest first, with resumable download and delete. The dumps API filters on
// one service or pod at a time, so a selection of several becomes one request per
// service/pod, merged here.

import { useState } from 'preact/hooks';
import { ApiError, apiDelete, apiGet, apiUrl, type Dump, type DumpsPage } from '../lib/api';
import { useApp, type Selection } from '../lib/ctx';
import { fmtBytes, shortPod } from '../lib/format';
import { fmtTs, serverNow } from '../lib/time';
import type { ScreenProps } from '../shell/Shell';
import { ConfirmDialog, ErrorBanner, Loading, fmtShort, useFetch, useToast, zoneLabel } from './common';
import { HprofSummary } from './HprofSummary';
import { Fragment } from 'preact';
import './pods.css';

/** Server default of the per-pod heap dump retention (dumps-http.md §7). */
const KEEP_PER_POD = 10;
/** Pages of 1000 fetched per filter before we ask the user to narrow the window. */
const MAX_PAGES = 5;

export function heapFilters(sel: Selection): Record<string, string>[] {
  if (sel.services.length === 0 && sel.pods.length === 0) return [{}];
  const out: Record<string, string>[] = [];
  for (const s of sel.services) {
    const [namespace, service] = s.split('/');
    out.push({ namespace, service });
  }
  for (const p of sel.pods) {
    const [namespace, service, pod] = p.split('/');
    if (!sel.services.includes(`${namespace}/${service}`)) out.push({ namespace, pod });
  }
  return out;
}

async function loadHeaps(filters: Record<string, string>[], from: number, to: number, signal: AbortSignal) {
  let more = false;
  const lists = await Promise.all(filters.map(async (f) => {
    const out: Dump[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < MAX_PAGES; i++) {
      const page = await apiGet<DumpsPage>('/dumps', { ...f, type: 'heap', from: String(from), to: String(to), limit: '1000', cursor }, signal);
      out.push(...page.dumps);
      if (!page.next_cursor) return out;
      cursor = page.next_cursor;
    }
    more = true;
    return out;
  }));
  const seen = new Set<string>();
  const dumps = lists.flat().filter((d) => !seen.has(d.id) && seen.add(d.id) !== undefined);
  dumps.sort((a, b) => b.time_ms - a.time_ms || Number(b.id) - Number(a.id));
  return { dumps, more };
}

export function HeapsPage(p: ScreenProps) {
  const { zone, config } = useApp();
  const hprofOn = config?.features?.hprof_summary === true;
  const [summary, setSummary] = useState<string | null>(null);
  const { win, sel } = p;
  const [toast, showToast] = useToast();
  const [victim, setVictim] = useState<Dump | null>(null);
  const [deleting, setDeleting] = useState(false);
  const [deleteErr, setDeleteErr] = useState<string | null>(null);
  const filters = heapFilters(sel);
  const key = JSON.stringify(filters);
  const f = useFetch((s) => loadHeaps(filters, win.from, win.to, s), [win.fromText, win.toText, p.refresh, key]);
  const now = serverNow();

  const doDelete = async () => {
    if (!victim) return;
    setDeleting(true);
    setDeleteErr(null);
    try {
      await apiDelete(`/dumps/${encodeURIComponent(victim.id)}`);
      setVictim(null);
      showToast(`Heap dump of ${shortPod(victim.pod)} deleted`);
      f.retry();
    } catch (e) {
      const err = e instanceof ApiError ? e : null;
      setDeleteErr(err?.status === 403 ? 'Deleting heap dumps needs the admin role.'
        : err?.status === 404 ? 'It was already deleted.' : String((e as Error)?.message ?? e));
      if (err?.status === 404) f.retry();
    } finally {
      setDeleting(false);
    }
  };

  let body;
  if (win.error) body = <div class="banner banner-red">{win.error}</div>;
  else if (f.error) body = <ErrorBanner error={f.error} retry={f.retry} />;
  else if (f.loading && !f.data) body = <Loading label="Loading heap dumps…" />;
  else if (!f.data || f.data.dumps.length === 0) {
    body = (
      <div class="state" data-testid="heaps-empty">
        No heap dump between {fmtTs(win.from, zone)} and {fmtTs(win.to, zone)}
        {sel.services.length + sel.pods.length ? ' for the selection' : ''}.
      </div>
    );
  } else {
    body = (
      <div class="pods-scroll">
        <table class="grid heaps-grid" data-testid="heaps-table">
          <thead>
            <tr>
              <th title={`Directory time of the upload, in ${zone}`}>Time <span class="muted small">{zoneLabel(zone, win.to)}</span></th>
              <th>Pod</th><th>Service</th><th>Namespace</th>
              <th class="num" title="Compressed: the .hprof.zip as stored">Zip size</th>
              <th class="num" title="Uncompressed: the .hprof inside the zip">HPROF size</th>
              <th title="The file name inside the zip">Entry</th><th>State</th><th />
            </tr>
          </thead>
          <tbody>
            {f.data.dumps.map((d) => {
              const entryBytes = typeof d.info?.entry_bytes === 'number' ? d.info.entry_bytes : null;
              const entry = typeof d.info?.entry === 'string' ? d.info.entry : '';
              const uploading = d.state === 'uploading';
              return (
                <Fragment key={d.id}>
                <tr data-testid="heap-row" data-id={d.id} data-pod={d.restart_pod ?? d.pod}>
                  <td title={`${fmtTs(d.time_ms, zone)}\n${d.name}`}>{fmtShort(d.time_ms, zone, now)}</td>
                  <td title={d.restart_pod ?? d.pod}>{shortPod(d.restart_pod ?? d.pod)}</td>
                  <td>{d.service}</td>
                  <td>{d.namespace}</td>
                  <td class="num">{fmtBytes(d.bytes)}</td>
                  <td class="num">{entryBytes !== null ? fmtBytes(entryBytes) : ''}</td>
                  <td class="mono heap-entry" title={entry}>{entry === '-' ? <span class="muted" title="streamed zip: the entry has no name">(unnamed)</span> : entry}</td>
                  <td>{uploading ? <span class="tag tag-amber">uploading</span> : <span class="muted">{d.state}</span>}</td>
                  <td class="heap-actions nowrap">
                    {uploading
                      ? <span class="muted small" title="The upload has not finished">Download</span>
                      : <a href={apiUrl(`/dumps/${encodeURIComponent(d.id)}`)} download={d.name} data-testid="heap-download"
                          title="Download the .hprof.zip (resumable: the server answers HTTP range requests)">Download</a>}
                    {hprofOn && !uploading && (
                      <button type="button" class={`btn btn-small ${summary === d.id ? 'btn-on' : ''}`} data-testid="heap-summary"
                        title="Header and the top classes by shallow size, computed on the server"
                        onClick={() => setSummary(summary === d.id ? null : d.id)}>Summary</button>
                    )}
                    <button type="button" class="btn btn-small" data-testid="heap-delete"
                      onClick={() => { setDeleteErr(null); setVictim(d); }}>Delete</button>
                  </td>
                </tr>
                {summary === d.id && <HprofSummary id={d.id} zone={zone} onClose={() => setSummary(null)} />}
                </Fragment>
              );
            })}
          </tbody>
        </table>
        {f.data.more && <div class="banner banner-amber">More heap dumps than listed: narrow the window.</div>}
      </div>
    );
  }

  return (
    <div class="pods-page" data-testid="heaps-page">
      <div class="pods-head">
        <h1>Heap Dumps</h1>
        {f.data && <span class="muted small" data-testid="heaps-count">{f.data.dumps.length} heap dumps</span>}
        {f.loading && f.data && <span class="spinner" />}
      </div>
      <p class="muted small heaps-explain">
        Each file is a zipped HPROF snapshot of a JVM heap: unzip it and open the <code>.hprof</code> in a heap
        analyser such as Eclipse MAT or VisualVM. Downloads resume after an interruption (the server answers HTTP range
        requests, so <code>curl -C -</code> or a browser's resume works). Only the most recent {KEEP_PER_POD} heap dumps of
        each pod are kept (server default).
      </p>
      {body}
      {victim && (
        <ConfirmDialog title="Delete heap dump?" confirm="Delete" danger busy={deleting} testid="heap-delete-dialog"
          onCancel={() => setVictim(null)} onConfirm={doDelete}>
          <p>
            The heap dump of <b class="mono">{shortPod(victim.restart_pod ?? victim.pod)}</b> taken
            {' '}{fmtTs(victim.time_ms, zone)} ({fmtBytes(victim.bytes)}) will be removed from the store. This cannot be undone.
          </p>
          {deleteErr && <div class="banner banner-red">{deleteErr}</div>}
        </ConfirmDialog>
      )}
      {toast}
    </div>
  );
}
