// TreeScreen.tsx -- the call-tree page once its data is in memory (ui.md §4.2–§4.7, §10.1):
// context header, tabs (Call Tree, Hotspots, Parameters, derived tabs), toolbar (search,
// Tree | Flame | Icicle, Adjust duration, Setup categories, Download page, Raw trace,
// Export as TPTP),
// banners, the active view, the node menu with its operations, dialogs and toasts.
// The view state lives in a StateIO: the URL online, memory in a downloaded page.

import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { TreeResp } from '../lib/api';
import { useApp } from '../lib/ctx';
import { buildUrl } from '../lib/url';
import { fmtDuration, shortPod } from '../lib/format';
import { civil, fmtFull, fmtTs } from '../lib/time';
import {
  applyAdjust, applyCategories, incoming, outgoing, parseAdjust, parseCategories, usages, type Categories,
} from './derived';
import { downloadStandalone, offlineFileName } from './download';
import { ExportMenu } from './ExportMenu';
import { parseMetric, type Metric } from './flame';
import { FlameView } from './FlameView';
import { HotspotsView } from './Hotspots';
import { modelFromResp, hasUnresolved, newViewState, searchTree, autoExpand, type TreeModel, type ViewState } from './model';
import { ParamsView } from './ParamsTab';
import { RulesDialog, StacktraceDialog, ValueDialog } from './dialogs';
import { TreeView } from './TreeView';
import type { SuspMode } from './numbers';
import { stoppedText, type ProfileInfo } from './profileModel';
import './tree.css';
import { fmtVal } from './units';

export interface TreeData {
  resp: TreeResp;
  raw: string;          // the JSON text as the API returned it (embedded by Download page)
  ids: string[];
  t0?: number;          // performance.now() when the JSON text was complete (first-paint timing)
  label?: string;       // context text when the tree has no calls listed (an aggregate profile)
  profile?: ProfileInfo; // an aggregate profile (GET /profile): how it was merged, why it stopped
  tools?: JSX.Element;  // more toolbar buttons (the profile's Compare…)
}

export interface StateIO {
  params: URLSearchParams;
  set: (patch: Record<string, string | null>, replace?: boolean) => void;
}

type DerivedKind = 'out' | 'in' | 'use' | 'lh';
const DERIVED: Record<DerivedKind, { icon: string; name: string }> = {
  out: { icon: '↘', name: 'Outgoing calls' },
  in: { icon: '↙', name: 'Incoming calls' },
  use: { icon: '◎', name: 'Find usages' },
  lh: { icon: '▲', name: 'Local hotspots' },
};

function parseDt(s: string | null): string[] {
  if (!s) return [];
  return s.split(',').filter((x) => /^(out|in|use|lh):\d+$/.test(x));
}

interface TabView { model: TreeModel; vs: ViewState; limited: boolean }

interface Menu { node: number; x: number; y: number; shift: boolean }
type DialogState =
  | { kind: 'stack'; node: number }
  | { kind: 'value'; name: string; value: string; key?: string; source?: string }
  | { kind: 'adjust'; text: string }
  | { kind: 'categories'; text: string }
  | null;
interface Toast { text: string; undo?: () => void }

/** Title of a call (§3.3, short form): profiler.title, else `web.method web.url`. */
export function callTitle(resp: TreeResp): string {
  const c = resp.calls[0];
  if (!c) return '';
  const p = c.params ?? {};
  if (p['profiler.title']?.[0]) return p['profiler.title'][0];
  if (p['web.url']?.length) return `${p['web.method']?.[0] ?? ''} ${p['web.url'].join(', ')}`.trim();
  return '';
}

export function TreeScreen({ data, io, offline }: { data: TreeData; io: StateIO; offline?: JSX.Element }) {
  const app = useApp();
  const { resp } = data;
  const P = io.params;
  const base = useMemo(() => modelFromResp(resp), [resp]);
  const adjText = P.get('adj') ?? '';
  const catText = P.get('cat') ?? '';
  const adj = useMemo(() => parseAdjust(adjText), [adjText]);
  const model = useMemo(() => applyAdjust(base, adj.rules), [base, adj]);
  const catRules = useMemo(() => parseCategories(catText), [catText]);
  const cats = useMemo(() => applyCategories(model, catRules.rules), [model, catRules]);
  const unresolved = useMemo(() => hasUnresolved(base), [base]);

  const dt = parseDt(P.get('dt'));
  let tab = P.get('tab') || 'tree';
  if (!['tree', 'hotspots', 'params'].includes(tab) && !dt.includes(tab)) tab = 'tree';
  const view = (['tree', 'flame', 'icicle'].includes(P.get('view') ?? '') ? P.get('view') : 'tree') as 'tree' | 'flame' | 'icicle';
  const metric = parseMetric(P.get('metric'));
  const q = P.get('q') ?? '';
  const redPaths = (P.get('red') ?? '').split(',').filter(Boolean);

  // ---- the model of the active tab ----
  const tabModel = useMemo((): TreeModel | null => {
    const m = /^(out|in|use|lh):(\d+)$/.exec(tab);
    if (!m) return model;
    const method = Number(m[2]);
    if (m[1] === 'in') return incoming(model, method);
    if (m[1] === 'use') return usages(model, method);
    return outgoing(model, method);
  }, [tab, model]);
  const tabCats = useMemo((): Categories | null => {
    if (!tabModel || tabModel === model) return cats;
    return tabModel.bottomUp ? null : applyCategories(tabModel, catRules.rules);
  }, [tabModel, model, cats, catRules]);

  // expansion state per tab, kept across adjustments (same node indexes)
  const views = useRef(new Map<string, TabView>());
  const [version, setVersion] = useState(0);
  const bump = useCallback(() => setVersion((v) => v + 1), []);
  let tv: TabView | null = null;
  if (tabModel) {
    tv = views.current.get(tab) ?? null;
    if (!tv || tv.vs.expanded.length !== tabModel.n) {
      const vs = newViewState(tabModel);
      const limited = !autoExpand(tabModel, 0, vs.expanded, 3000);
      tv = { model: tabModel, vs, limited };
      views.current.set(tab, tv);
    }
    tv.model = tabModel;
  }

  const search = useMemo(() => (tabModel && q ? searchTree(tabModel, q) : null), [tabModel, q]);
  const marks = useMemo(() => {
    if (!redPaths.length || tabModel !== model) return null;
    const s = new Set<number>();
    for (const p of redPaths) { const i = model.findPath(p); if (i >= 0) s.add(i); }
    return s;
  }, [P.get('red'), model, tabModel]);
  const zoomNode = tabModel ? Math.max(0, tabModel.findPath(P.get('zoom') ?? '')) : 0;

  const [selected, setSelected] = useState(-1);
  const [menu, setMenu] = useState<Menu | null>(null);
  const [dialog, setDialog] = useState<DialogState>(null);
  const [toast, setToast] = useState<Toast | null>(null);
  const [suspMode, setSuspMode] = useState<SuspMode>(() => (localStorage.getItem('cloudprof.tree.suspension') === 'never' ? 'never' : 'smart'));
  const [hsBy, setHsBy] = useState<'self' | 'total'>(() => (localStorage.getItem('cloudprof.tree.hotspotsSort') === 'total' ? 'total' : 'self'));
  useEffect(() => { setSelected(-1); }, [tab]);
  useEffect(() => {
    if (!toast) return;
    const t = setTimeout(() => setToast(null), 8000);
    return () => clearTimeout(t);
  }, [toast]);

  // ---- header facts ----
  const calls = resp.calls;
  const nCalls = Math.max(1, calls.length);
  const merged = calls.length > 1;
  const first = calls[0];
  const startMs = resp.start_ms || first?.ts_ms || 0;
  const title = callTitle(resp);
  const rootName = base.names.get(base.method[0]);
  const durText = fmtVal(base.total[0]);
  const host = first ? shortPod(first.pod) : '';
  useEffect(() => {
    document.title = `${durText} ${host} ${startMs ? fmtFull(startMs, app.zone, false) : ''} ${nCalls}calls`;
  }, [durText, host, startMs, app.zone, nCalls]);

  // ---- first paint timing (big trees) ----
  const onPainted = useCallback((rows: number) => {
    if (data.t0 === undefined) return;
    const ms = performance.now() - data.t0;
    const w = window as unknown as { __cpTreeTiming?: Record<string, number> };
    w.__cpTreeTiming = { firstPaintMs: Math.round(ms), nodes: base.n, rows };
    console.info(`tree: ${base.n} nodes, JSON to first paint ${ms.toFixed(0)} ms`);
  }, [data, base]);

  // ---- operations ----
  const openDerived = (kind: DerivedKind, method: number, background: boolean) => {
    const id = `${kind}:${method}`;
    const next = dt.includes(id) ? dt : [...dt, id];
    io.set({ dt: next.join(','), tab: background ? tab : id, zoom: background ? P.get('zoom') : null });
  };
  const closeTab = (id: string) => {
    const next = dt.filter((x) => x !== id);
    views.current.delete(id);
    io.set({ dt: next.length ? next.join(',') : null, tab: tab === id ? null : tab });
  };
  const toggleMark = (node: number) => {
    const p = model.pathOf(node);
    const next = redPaths.includes(p) ? redPaths.filter((x) => x !== p) : [...redPaths, p];
    io.set({ red: next.length ? next.join(',') : null });
  };
  const setAdjust = (text: string, withToast: boolean) => {
    const before = model.total[0];
    const clean = text.trim() ? text : '';
    const old = adjText;
    io.set({ adj: clean || null });
    if (withToast) {
      const after = applyAdjust(base, parseAdjust(clean).rules).total[0];
      setToast({
        text: `Root: ${fmtVal(before)} → ${fmtVal(after)} (saves ${fmtVal(before - after)})`,
        undo: () => io.set({ adj: old || null }),
      });
    }
  };
  const adjustNode = (m: TreeModel, node: number, shift: boolean) => {
    const word = m.methods[m.method[node]];
    const k = m.depth[node] <= 3 && m.inv[node] > 1 ? Math.round(m.inv[node]) : 10000;
    const text = (adjText.trim() ? adjText.replace(/\s+$/, '') + '\n' : '') + `1/${k} ${word}`;
    if (shift) setDialog({ kind: 'adjust', text });
    else setAdjust(text, true);
  };
  const addCategory = (m: TreeModel, node: number, shift: boolean) => {
    const n = m.names.get(m.method[node]);
    const text = (catText.trim() ? catText.replace(/\s+$/, '') + '\n' : '') + `${n.short.replace(/\s+/g, '_')} ${n.full}`;
    if (shift) { setDialog({ kind: 'categories', text }); return; }
    const old = catText;
    io.set({ cat: text });
    setToast({ text: `Category ${n.short} added`, undo: () => io.set({ cat: old || null }) });
  };

  const doDownload = async () => {
    try {
      const c = civil(startMs, app.zone);
      const name = offlineFileName(c, durText, nCalls, merged ? '' : title);
      const state = new URLSearchParams(P);
      state.delete('synthetic');
      await downloadStandalone(name, document.title, data.raw, { state: state.toString(), zone: app.zoneChoice, ids: data.ids });
      // the dev server serves unbundled modules: only the production build inlines into one file
      setToast({ text: import.meta.env.DEV ? `Saved ${name} (development server: the file needs the production build to work offline)` : `Saved ${name}` });
    } catch (e) {
      setToast({ text: `Download failed: ${(e as Error).message}` });
    }
  };

  // ---- search box (debounced; Esc clears) ----
  const [qIn, setQIn] = useState(q);
  const searchBox = useRef<HTMLInputElement>(null);
  useEffect(() => { setQIn(q); }, [q]);
  useEffect(() => {
    if (qIn === q) return;
    const t = setTimeout(() => io.set({ q: qIn || null }, true), qIn.length < 3 ? 450 : 180);
    return () => clearTimeout(t);
  }, [qIn]);
  useEffect(() => {
    const h = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement;
      if (t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || dialog) return;
      if (e.key === '/' && !e.ctrlKey && !e.metaKey) { e.preventDefault(); searchBox.current?.focus(); }
    };
    window.addEventListener('keydown', h);
    return () => window.removeEventListener('keydown', h);
  }, [dialog]);

  const treeLike = tab === 'tree' || /^(out|in|use):/.test(tab);
  const derivedInfo = /^(out|in|use|lh):(\d+)$/.exec(tab);
  const derivedLabel = derivedInfo ? base.names.get(Number(derivedInfo[2])).label : '';

  // ---- render ----
  const pi = data.profile ?? (resp as TreeResp & { profile?: ProfileInfo }).profile;
  const header = (
    <header class="tp-header" data-testid="tree-header">
      {!offline && <a class="brand" href="/calls" title="Calls list">cloudprof</a>}
      <span class="tp-ctx" data-testid="tree-context">{contextText(resp) || data.label || ''}</span>
      {pi
        ? <>
            <span class="chip" data-testid="profile-merged" title="Calls merged into this profile">aggregate of {pi.merged} calls</span>
            <span class="chip" title="Σ of the calls' durations">Σ {durText}</span>
          </>
        : merged
        ? <>
            <span class="chip" data-testid="tree-ncalls">{calls.length} calls</span>
            <span class="chip" title="Merged span">{fmtTs(resp.start_ms, app.zone)} → {fmtTs(resp.end_ms, app.zone)}</span>
            <span class="chip" title="Σ of the calls' durations">Σ {durText}</span>
          </>
        : <span class="chip" title="Start (display zone) and duration">{startMs ? fmtTs(startMs, app.zone) : '—'} · {durText}</span>}
      {!merged && !pi && <span class="tp-title" title={first?.method ?? rootName.full}>{title || rootName.label}</span>}
      <span class="spacer" />
      {offline}
    </header>
  );

  const tabs = (
    <nav class="tp-tabs">
      <TabBtn id="tree" on={tab === 'tree'} onClick={() => io.set({ tab: null, zoom: null })} testid="tree-tab-tree">Call Tree</TabBtn>
      <TabBtn id="hotspots" on={tab === 'hotspots'} onClick={() => io.set({ tab: 'hotspots', zoom: null })} testid="tree-tab-hotspots">Hotspots</TabBtn>
      <TabBtn id="params" on={tab === 'params'} onClick={() => io.set({ tab: 'params', zoom: null })} testid="tree-tab-params">Parameters</TabBtn>
      {dt.map((id) => {
        const [kind, m] = id.split(':');
        const d = DERIVED[kind as DerivedKind];
        const n = base.names.get(Number(m));
        return (
          <TabBtn key={id} id={id} on={tab === id} onClick={() => io.set({ tab: id, zoom: null })} testid="tree-tab-derived"
            title={`${d.name}: ${n.full}`}>
            <span>{d.icon}</span>{n.short}
            <span class="x" title="Close" onClick={(e) => { e.stopPropagation(); closeTab(id); }}>×</span>
          </TabBtn>
        );
      })}
    </nav>
  );

  const toolbar = (
    <div class="tp-toolbar">
      {(treeLike || tab === 'params') && <>
        <input ref={searchBox} class="input tp-search" type="search" placeholder="Search methods and params  ( / )" value={qIn}
          data-testid="tree-search" spellcheck={false}
          onInput={(e) => setQIn((e.currentTarget as HTMLInputElement).value)}
          onKeyDown={(e) => {
            if (e.key === 'Escape') { e.preventDefault(); if (qIn) { setQIn(''); io.set({ q: null }, true); } else (e.currentTarget as HTMLInputElement).blur(); }
            if (e.key === 'Enter') io.set({ q: qIn || null }, true);
          }} />
        {treeLike && <span class="tp-count" data-testid="tree-search-count">{search ? (search.count ? `${search.count} result${search.count === 1 ? '' : 's'}` : 'no results found') : ''}</span>}
      </>}
      {treeLike && (
        <span class="tp-seg" role="group" aria-label="View">
          {(['tree', 'flame', 'icicle'] as const).map((v) => (
            <button key={v} type="button" class={`btn btn-small ${view === v ? 'btn-on' : ''}`} data-testid={`view-${v}`}
              onClick={() => io.set({ view: v === 'tree' ? null : v })}>{v[0].toUpperCase() + v.slice(1)}</button>
          ))}
        </span>
      )}
      {(tab === 'hotspots' || tab.startsWith('lh:')) && (
        <label class="muted small">sort by <select class="input" value={hsBy} onChange={(e) => {
          const v = (e.currentTarget as HTMLSelectElement).value === 'total' ? 'total' : 'self';
          localStorage.setItem('cloudprof.tree.hotspotsSort', v);
          setHsBy(v);
        }}><option value="self">self time</option><option value="total">total time</option></select></label>
      )}
      {data.tools}
      <span class="spacer" />
      {treeLike && view === 'tree' && (
        <label class="muted small" title="Personal setting: show suspension (GC pauses) separately when it matters, or always fold it into the durations">
          suspension <select class="input" value={suspMode} data-testid="tree-susp-mode" onChange={(e) => {
            const v = (e.currentTarget as HTMLSelectElement).value === 'never' ? 'never' : 'smart';
            localStorage.setItem('cloudprof.tree.suspension', v);
            setSuspMode(v);
          }}><option value="smart">smart</option><option value="never">never</option></select></label>
      )}
      <button type="button" class="btn btn-small" data-testid="tree-adjust" onClick={() => setDialog({ kind: 'adjust', text: adjText })}>Adjust duration…</button>
      <button type="button" class="btn btn-small" data-testid="tree-categories" onClick={() => setDialog({ kind: 'categories', text: catText })}>Setup categories…</button>
      <button type="button" class="btn btn-small" data-testid="tree-download" onClick={doDownload} title="One HTML file that opens offline with this view">Download page</button>
      {!offline && !merged && first && (first.suspend_ms > 0 || base.susp[0] > 0) && (
        <a class="btn btn-small" data-testid="tree-gc-around" target="_blank" rel="noopener"
          href={buildUrl('/dump/gc', {
            namespace: first.namespace, pod: first.pod, from: String(first.ts_ms - 60000), to: String(first.ts_ms + first.duration_ms + 60000),
            call_from: String(first.ts_ms), call_to: String(first.ts_ms + first.duration_ms), cpod: `${first.namespace}/${first.service}/${first.pod}`,
          })}
          title={`This call was suspended ${fmtDuration(Math.max(first.suspend_ms, base.susp[0]))}: the pod's GC pauses a minute around it`}>GC around this call</a>
      )}
      {!offline && data.ids.length === 1 && data.ids[0] !== 'synthetic' && (
        <a class="btn btn-small" data-testid="tree-raw-trace" href={`/api/v1/calls/${encodeURIComponent(data.ids[0])}/trace`} download
          title="The raw agent trace of this call">Raw trace</a>
      )}
      {!offline && data.ids.length > 0 && data.ids[0] !== 'synthetic' && <ExportMenu ids={data.ids} />}
    </div>
  );

  const noTrace = calls.filter((c) => !c.trace_available).length;
  const banners = (
    <div class="tp-banners">
      {adj.rules.length > 0 && (
        <div class="banner banner-amber" data-testid="banner-adjusted">Durations are adjusted — what-if view
          ({adj.rules.length} rule{adj.rules.length === 1 ? '' : 's'}; root {fmtVal(base.total[0])} → {fmtVal(model.total[0])})
          <button type="button" class="btn btn-small" onClick={() => setDialog({ kind: 'adjust', text: adjText })}>Edit</button>
          <button type="button" class="btn btn-small" onClick={() => io.set({ adj: null })}>Reset</button></div>
      )}
      {adj.invalid.length > 0 && <div class="banner banner-amber">Adjust rules ignored: {adj.invalid.join('; ')}</div>}
      {catRules.invalid.length > 0 && <div class="banner banner-amber">Category rules ignored: {catRules.invalid.join('; ')}</div>}
      {unresolved && <div class="banner banner-amber">Some big parameters could not be resolved (shown with their reference).</div>}
      {resp.truncated && <div class="banner banner-amber">The trace ends before the root method returned: the last numbers are cut at the last event.</div>}
      {pi && stoppedText(pi) && (
        <div class="banner banner-amber" data-testid="profile-stopped" data-reason={pi.stopped}>
          Stopped early: {stoppedText(pi)} — {pi.merged} of {pi.matched}{pi.stopped === 'max_calls' ? '+' : ''} matching calls merged.
          Narrow the filter (period, pods, duration) to profile the rest.</div>
      )}
      {pi && pi.without_trace > 0 && (
        <div class="banner banner-info" data-testid="profile-untraced">{pi.without_trace} of {pi.matched} matching calls have no trace and are not part of the profile.</div>
      )}
      {noTrace > 0 && <div class="banner banner-info">{noTrace} of {calls.length} calls have no trace and are not part of the tree.</div>}
      {tv?.limited && treeLike && view === 'tree' && <div class="banner banner-info">Large tree — automatic expansion limited.</div>}
    </div>
  );

  let body: JSX.Element;
  if (!tabModel) {
    body = <div class="state">The method of this tab does not occur in the tree (any more).</div>;
  } else if (tab === 'hotspots' || tab.startsWith('lh:')) {
    body = <HotspotsView model={tabModel} cats={tabCats} by={hsBy} onIncoming={(mth) => openDerived('in', mth, false)} />;
  } else if (tab === 'params') {
    body = <ParamsView model={tabModel} q={q} onValue={(name, value, key, source) => setDialog({ kind: 'value', name, value, key, source })} />;
  } else if (view !== 'tree') {
    body = (
      <FlameView key={`${tab}/${view}`} model={tabModel} icicle={view === 'icicle'} metric={metric} zoom={zoomNode} search={search} cats={tabCats} marks={marks}
        setZoom={(i) => io.set({ zoom: i === 0 ? null : tabModel.pathOf(i) })} baseName={`tree-${durText.replace(/\s+/g, '')}`}
        onMetric={(mt: Metric) => io.set({ metric: mt === 'total' ? null : mt })} />
    );
  } else {
    body = (
      <TreeView key={tab} model={tabModel} vs={tv!.vs} version={version} bump={bump} search={search} marks={marks} cats={tabCats}
        selected={selected} onSelect={setSelected}
        onMenu={(i, el, shift) => { const r = el.getBoundingClientRect(); setMenu({ node: i, x: r.left, y: r.bottom, shift }); }}
        onValue={(name, value, row) => {
          const v = row.kind === 'variant' ? row.group?.variants?.find((x) => x.value === value) : undefined;
          setDialog({ kind: 'value', name, value, key: v?.key ?? row.group?.key, source: v?.source ?? row.group?.source });
        }}
        onPainted={tab === 'tree' ? onPainted : undefined} startMs={merged ? 0 : startMs} suspMode={suspMode} />
    );
  }

  return (
    <div class="tp" data-testid="tree-page">
      {header}
      {tabs}
      {toolbar}
      {banners}
      {derivedInfo && <div class="tp-note" data-testid="derived-note">{derivedNote(derivedInfo[1] as DerivedKind, derivedLabel)}</div>}
      <div class="tp-body">{body}</div>
      {menu && tabModel && (
        <NodeMenu model={tabModel} menu={menu} isBase={tabModel === model} marked={!!marks?.has(menu.node)} onClose={() => setMenu(null)}
          op={(op, shift) => {
            const n = menu.node;
            const mth = tabModel.method[n];
            setMenu(null);
            if (op === 'stack') setDialog({ kind: 'stack', node: n });
            else if (op === 'out' || op === 'in' || op === 'use' || op === 'lh') openDerived(op, mth, shift);
            else if (op === 'red') toggleMark(n);
            else if (op === 'adjust') adjustNode(tabModel, n, shift);
            else if (op === 'cat') addCategory(tabModel, n, shift);
          }} />
      )}
      {dialog?.kind === 'stack' && tabModel && <StacktraceDialog model={tabModel} node={dialog.node} onClose={() => setDialog(null)} />}
      {dialog?.kind === 'value' && <ValueDialog name={dialog.name} value={dialog.value} fullKey={offline ? undefined : dialog.key} ids={data.ids} source={dialog.source} onClose={() => setDialog(null)} />}
      {(dialog?.kind === 'adjust' || dialog?.kind === 'categories') && (
        <RulesDialog kind={dialog.kind} text={dialog.text} onClose={() => setDialog(null)}
          onApply={(t) => (dialog.kind === 'adjust' ? setAdjust(t, false) : io.set({ cat: t.trim() ? t : null }))} />
      )}
      {toast && (
        <div class="toast" data-testid="toast">{toast.text}
          {toast.undo && <button type="button" class="btn btn-small" onClick={() => { toast.undo!(); setToast(null); }}>Undo</button>}
        </div>
      )}
    </div>
  );
}

function derivedNote(kind: DerivedKind, label: string): string {
  switch (kind) {
    case 'out': return `Outgoing calls for method ${label}: every occurrence merged into one root, totals recomputed.`;
    case 'in': return `Incoming calls for method ${label} — a bottom-up view: each caller shows the numbers of ${label} that arrived through it; "calls" = the caller's own invocations.`;
    case 'use': return `Usages of method ${label}: the paths that lead to it; each node shows the numbers of ${label} beneath it ("5 inv 10 calls" = the node ran 10 times and led to 5 runs).`;
    default: return `Local hotspots of method ${label}: the flat profile of its Outgoing-calls tree.`;
  }
}

function contextText(resp: TreeResp): string {
  const cs = resp.calls;
  if (!cs.length) return '';
  const uniq = (f: (c: (typeof cs)[0]) => string) => [...new Set(cs.map(f))];
  const ns = uniq((c) => c.namespace);
  const svc = uniq((c) => c.service);
  const pods = uniq((c) => c.pod);
  const part = (vals: string[], what: string, f = (s: string) => s) => (vals.length === 1 ? f(vals[0]) : `${vals.length} ${what}`);
  return `${part(ns, 'namespaces')} / ${part(svc, 'services')} / ${part(pods, 'pods', shortPod)}`;
}

function TabBtn({ on, onClick, children, testid, title, id }: {
  id: string; on: boolean; onClick: () => void; children: ComponentChildren; testid: string; title?: string;
}) {
  return (
    <button type="button" class={`tp-tab ${on ? 'tp-tab-on' : ''}`} onClick={onClick} data-testid={testid} data-tab={id} title={title}
      aria-selected={on}>{children}</button>
  );
}

type Op = 'stack' | 'out' | 'in' | 'use' | 'lh' | 'red' | 'adjust' | 'cat';

function NodeMenu({ model, menu, isBase, marked, onClose, op }: {
  model: TreeModel; menu: Menu; isBase: boolean; marked: boolean; onClose: () => void; op: (o: Op, shift: boolean) => void;
}) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const down = (e: MouseEvent) => { if (ref.current && !ref.current.contains(e.target as Node)) onClose(); };
    const key = (e: KeyboardEvent) => { if (e.key === 'Escape') onClose(); };
    setTimeout(() => window.addEventListener('mousedown', down), 0);
    window.addEventListener('keydown', key);
    return () => { window.removeEventListener('mousedown', down); window.removeEventListener('keydown', key); };
  }, []);
  const n = model.names.get(model.method[menu.node]);
  const left = Math.min(menu.x, window.innerWidth - 260);
  const top = Math.min(menu.y, window.innerHeight - 300);
  const item = (o: Op, label: string, hint?: string) => (
    <button type="button" data-op={o} title={hint} onClick={(e) => op(o, e.shiftKey || menu.shift)}>{label}</button>
  );
  return (
    <div class="popover tp-menu" ref={ref} style={{ position: 'fixed', left, top }} data-testid="node-menu-popover">
      <div class="head" title={n.full}>{n.label}</div>
      {item('stack', 'Get stacktrace')}
      {item('out', '↘ Outgoing calls', 'Shift: open the tab in the background')}
      {item('in', '↙ Incoming calls', 'Shift: open the tab in the background')}
      {item('use', '◎ Find usages', 'Shift: open the tab in the background')}
      {item('lh', '▲ Local hotspots', 'Shift: open the tab in the background')}
      <hr />
      {isBase && item('adjust', 'Adjust duration (what-if)', 'Shift: open the dialog with the rule added')}
      {isBase && item('cat', 'Add category', 'Shift: open the dialog with the rule added')}
      {isBase && item('red', marked ? 'Unmark' : 'Mark red')}
    </div>
  );
}
