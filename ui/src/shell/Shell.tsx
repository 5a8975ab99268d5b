// Shell.tsx -- the frame of the list screens (ui.md §1.1): top bar with the tabs, the
// period controls, the discovery rail on the left, and the screen on the right. The
// discovery answer is fetched here once per window and handed to the screen, which needs
// it to turn a multi-selection into API filters. "Import trace" (a button in the top bar,
// or a file dropped anywhere on the page) opens the import dialog.

import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { apiGet, isAbort, type ServicesResp } from '../lib/api';
import { badgeText, badgeTitle } from '../lib/auth';
import { resolveWindow, selectionFromParams, useApp, type Selection, type Win } from '../lib/ctx';
import { buildUrl, contextParams, navigate, type Route } from '../lib/url';
import { ImportDialog, useFileDrag, type DroppedFile } from './ImportDialog';
import { PeriodBar } from './PeriodBar';
import { Rail } from './Rail';

export interface ScreenProps {
  route: Route;
  win: Win;
  sel: Selection;
  disc: ServicesResp | null;
  /** bumps when the user asks for a refresh (same URL) */
  refresh: number;
}

const TABS: [string, string][] = [['/calls', 'Calls'], ['/pods', 'Pods Info'], ['/heaps', 'Heap Dumps']];

export function Shell({ route, screen }: { route: Route; screen: (p: ScreenProps) => ComponentChildren }) {
  const app = useApp();
  const win = resolveWindow(route.params, app.zone);
  const sel = selectionFromParams(route.params);
  const [disc, setDisc] = useState<ServicesResp | null>(null);
  const [discErr, setDiscErr] = useState<string | null>(null);
  const [discLoading, setDiscLoading] = useState(false);
  const [collapsed, setCollapsed] = useState(false);
  const [toast, setToast] = useState<string | null>(null);
  const [refresh, setRefresh] = useState(0);
  const [importOpen, setImportOpen] = useState(false);
  const [dropped, setDropped] = useState<DroppedFile | null>(null);
  const dragging = useFileDrag((file) => { setDropped((d) => ({ file, seq: (d?.seq ?? 0) + 1 })); setImportOpen(true); });

  useEffect(() => {
    const ac = new AbortController();
    setDiscLoading(true);
    setDiscErr(null);
    apiGet<ServicesResp>('/services', { from: String(win.from), to: String(win.to) }, ac.signal)
      .then((d) => { setDisc(d); setDiscLoading(false); })
      .catch((e) => { if (!isAbort(e)) { setDiscErr(String(e.message ?? e)); setDiscLoading(false); } });
    return () => ac.abort();
  }, [win.fromText, win.toText, refresh, app.zone]);

  useEffect(() => {
    if (!toast) return;
    const t = setTimeout(() => setToast(null), 3000);
    return () => clearTimeout(t);
  }, [toast]);

  const ctx = contextParams(route.params);
  return (
    <div class="shell">
      <header class="topbar">
        <a class="brand" href={buildUrl('/calls', ctx)} onClick={(e) => { e.preventDefault(); navigate(buildUrl('/calls', ctx)); }}>
          cloudprof
        </a>
        <nav class="tabs">
          {[...TABS, ...(app.me?.role === 'admin' && app.config?.features?.audit === true ? [['/audit', 'Audit'] as [string, string]] : [])].map(([path, label]) => (
            <a key={path} href={buildUrl(path, ctx)} data-testid={`tab-${path.slice(1)}`}
              class={`tab ${route.path === path ? 'tab-on' : ''}`}
              onClick={(e) => { e.preventDefault(); navigate(buildUrl(path, ctx)); }}>{label}</a>
          ))}
        </nav>
        <div class="topbar-right">
          <button type="button" class="btn btn-ghost" data-testid="import-open"
            title="Import a trace file (TPTP .trcbin / .trcxml, CBOR); you can also drop it on the page"
            onClick={() => { setDropped(null); setImportOpen(true); }}>Import trace…</button>
          <button type="button" class="btn btn-ghost" title="Reload the data" data-testid="refresh"
            onClick={() => setRefresh(refresh + 1)}>⟳</button>
          <span class="muted small">{app.config ? `v${app.config.version}` : ''}</span>
          {app.me && badgeText(app.me) && (
            <span class="user-badge small" data-testid="user-badge" title={badgeTitle(app.me)}>{badgeText(app.me)}</span>
          )}
          {app.me?.logout && (
            <a class="btn btn-ghost" data-testid="logout" href={app.me.logout}>Log out</a>
          )}
        </div>
      </header>
      <PeriodBar win={win} onToast={setToast} />
      <div class="shell-body">
        <Rail win={win} applied={sel} disc={disc} loading={discLoading} error={discErr}
          collapsed={collapsed} onCollapse={setCollapsed} />
        <main class="screen">{screen({ route, win, sel, disc, refresh })}</main>
      </div>
      {toast && <div class="toast" data-testid="toast">{toast}</div>}
      {dragging && !importOpen && <div class="imp-page-drop" data-testid="import-page-drop">Drop the trace file to import it</div>}
      {importOpen && (
        <ImportDialog dropped={dropped} dragging={dragging} onClose={() => setImportOpen(false)}
          onImported={() => setRefresh((r) => r + 1)} />
      )}
    </div>
  );
}
