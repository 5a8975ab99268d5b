// TdView.tsx -- the thread-dump viewer (ui.md §9.1) at /dump/td/<id>: header with state
// chips, a filterable thread table with the selected thread's stack (locks annotated with
// who holds / waits), identical-stack groups, and the lock view with deadlock cycles. When
// opened with its pod context (?namespace=&pod=&t=, as the Pods Info links do) it also joins
// the top dump of the same minute by native thread id and shows %CPU per thread.
// All view state (filters, mode, selected thread) is in the URL.

import { Fragment } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { apiGet, apiUrl, type Dump, type DumpsPage } from '../lib/api';
import { useApp } from '../lib/ctx';
import { fmtDuration, shortPod } from '../lib/format';
import { fmtTs } from '../lib/time';
import { buildUrl, setParams, type Route } from '../lib/url';
import { ErrorBanner, Loading, dumpSubtitle, hexNid, useFetch } from './common';
import {
  buildMonitors, closestInMinute, fmtTopTime, deadlockedThreads, effectiveHeld, fullState, groupStacks, isSystemThread, lockVerb,
  stateClass, stateLabel, topByNid, type Monitor, type TdThread, type ThreadsResp, type TopResp, type TopRow,
} from './dumpModel';
import { ViewerFrame } from './frame';

interface Ctx { record: Dump | null; top: Dump | null; topData: TopResp | null; note: string | null }

/** The dump's own record and the top dump of the same minute, found through the pod context. */
async function loadContext(id: string, p: URLSearchParams, signal: AbortSignal): Promise<Ctx> {
  const namespace = p.get('namespace') ?? undefined;
  const pod = p.get('pod');
  const t = Number(p.get('t'));
  if (!pod || !Number.isFinite(t) || t <= 0) return { record: null, top: null, topData: null, note: null };
  const [tds, tops] = await Promise.all([
    apiGet<DumpsPage>('/dumps', { namespace, pod, type: 'td', from: String(t), to: String(t + 1), limit: '1000' }, signal),
    apiGet<DumpsPage>('/dumps', { namespace, pod, type: 'top', from: String(t - 60000), to: String(t + 60001), limit: '1000' }, signal),
  ]);
  const record = tds.dumps.find((d) => d.id === id) ?? null;
  const top = closestInMinute(tops.dumps, t, record?.capture_ms ?? null);
  let topData: TopResp | null = null;
  let note: string | null = null;
  if (top) {
    try { topData = await apiGet<TopResp>(`/dumps/${encodeURIComponent(top.id)}/top`, undefined, signal); }
    catch (e: any) { if (e?.name === 'AbortError') throw e; note = `the top dump of this minute could not be read (${e?.message ?? e})`; }
  }
  return { record, top, topData, note };
}

type Mode = 'threads' | 'groups' | 'locks';
type SortKey = '' | 'name' | 'state' | '-cpu' | '-elapsed' | '-pcpu' | 'nid';

export function TdView({ id, route }: { id: string; route: Route }) {
  const { zone } = useApp();
  const P = route.params;
  const f = useFetch((s) => apiGet<ThreadsResp>(`/dumps/${encodeURIComponent(id)}/threads`, undefined, s), [id]);
  const ctxKey = `${P.get('namespace')}|${P.get('pod')}|${P.get('t')}`;
  const c = useFetch((s) => loadContext(id, P, s), [id, ctxKey]);
  const download = apiUrl(`/dumps/${encodeURIComponent(id)}`);

  const rec = c.data?.record ?? null;
  const sub = dumpSubtitle(rec, P.get('pod'), zone);

  let body;
  if (f.error) body = <ErrorBanner error={f.error} retry={f.retry} downloadHref={download} />;
  else if (f.loading || !f.data) body = <Loading label="Parsing the thread dump…" />;
  else body = <TdBody d={f.data} route={route} ctx={c.data} ctxErr={c.error?.message ?? null} zone={zone} download={download} />;
  return <ViewerFrame route={route} title="Thread dump" sub={sub} testid="td-view">{body}</ViewerFrame>;
}

function TdBody({ d, route, ctx, ctxErr, zone, download }: {
  d: ThreadsResp; route: Route; ctx: Ctx | null; ctxErr: string | null; zone: string; download: string;
}) {
  const P = route.params;
  const mode = (['threads', 'groups', 'locks'].includes(P.get('mode') ?? '') ? P.get('mode') : 'threads') as Mode;
  const state = P.get('state');
  const q = P.get('q') ?? '';
  const hideSys = P.get('sys') === 'hide';
  const inStack = P.get('in') === 'stack';
  const sort = (P.get('sort') ?? '') as SortKey;
  const [qDraft, setQDraft] = useState(q);
  useEffect(() => setQDraft(q), [q]);

  const threads = d.threads;
  const monitors = useMemo(() => buildMonitors(threads), [threads]);
  const monByAddr = useMemo(() => new Map(monitors.map((m) => [m.addr, m])), [monitors]);
  const dead = useMemo(() => deadlockedThreads(threads, monitors), [threads, monitors]);
  const top = useMemo(() => ctx?.topData ? topByNid(ctx.topData.rows) : null, [ctx?.topData]);

  const shown = useMemo(() => {
    const needle = q.trim().toLowerCase();
    const hex = /^0x[0-9a-f]+$/.test(needle) ? parseInt(needle, 16) : null;
    const idx: number[] = [];
    threads.forEach((t, i) => {
      if (hideSys && isSystemThread(t)) return;
      if (state !== null && fullState(t) !== state && t.state !== state) return;
      if (needle) {
        const hit = t.name.toLowerCase().includes(needle) || (hex !== null && t.nid === hex)
          || (inStack && t.frames.some((fr) => fr.toLowerCase().includes(needle)));
        if (!hit) return;
      }
      idx.push(i);
    });
    const key = (i: number): number | string => {
      const t = threads[i];
      switch (sort) {
        case 'name': return t.name.toLowerCase();
        case 'state': return fullState(t);
        case '-cpu': return -(t.cpu_ms ?? -1);
        case '-elapsed': return -(t.elapsed_s ?? -1);
        case '-pcpu': return -((t.nid !== null && top?.get(t.nid)?.cpu_pct) ?? -1);
        case 'nid': return t.nid ?? 0;
        default: return i;
      }
    };
    if (sort) idx.sort((a, b) => { const x = key(a), y = key(b); return x < y ? -1 : x > y ? 1 : a - b; });
    return idx;
  }, [threads, q, hideSys, state, inStack, sort, top]);

  // the selected thread: ?thread=<index>, or ?nid=<native id> from the top viewer's links
  let selected: number | null = P.has('thread') ? Number(P.get('thread')) : null;
  if (selected === null && P.has('nid')) {
    const n = Number(P.get('nid'));
    const i = threads.findIndex((t) => t.nid === n);
    selected = i >= 0 ? i : null;
  }
  if (selected !== null && !(selected >= 0 && selected < threads.length)) selected = null;
  const select = (i: number) => setParams({ thread: String(i), nid: null, mode: 'threads' }, { replace: true });

  // ↑/↓ walk the visible threads
  useEffect(() => {
    if (mode !== 'threads') return;
    const k = (e: KeyboardEvent) => {
      const tag = (e.target as HTMLElement)?.tagName;
      if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') return;
      if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
      e.preventDefault();
      const pos = selected === null ? -1 : shown.indexOf(selected);
      const next = e.key === 'ArrowDown' ? Math.min(shown.length - 1, pos + 1) : Math.max(0, pos - 1);
      if (shown[next] !== undefined) {
        select(shown[next]);
        document.querySelector(`[data-idx="${shown[next]}"]`)?.scrollIntoView({ block: 'nearest' });
      }
    };
    window.addEventListener('keydown', k);
    return () => window.removeEventListener('keydown', k);
  }, [mode, shown, selected]);

  const stateKeys = Object.entries(d.states).sort((a, b) => b[1] - a[1]);
  const rec = ctx?.record;
  const topLink = ctx?.top ? buildUrl(`/dump/top/${encodeURIComponent(ctx.top.id)}`, {
    namespace: P.get('namespace'), pod: P.get('pod'), t: String(ctx.top.time_ms), back: P.get('back'),
  }) : null;

  return (
    <>
      <div class="viewer-head" data-testid="td-header">
        {rec && <span class="fig" title={rec.restart_pod ?? rec.pod}>Pod <b class="mono">{shortPod(rec.restart_pod ?? rec.pod)}</b></span>}
        {rec && <span class="fig" title={rec.name}>Received for <b>{fmtTs(rec.time_ms, zone)}</b></span>}
        {d.time_ms !== null && <span class="fig">Dump taken <b>{fmtTs(d.time_ms, zone)}</b></span>}
        {d.vm && <span class="fig muted">{d.vm}</span>}
        <span class="fig">Java threads <b data-testid="td-java-threads">{d.java_threads ?? '?'}</b></span>
        <span class="fig">listed <b>{threads.length}</b></span>
        {d.jni_global_refs !== null && <span class="fig muted">JNI refs {d.jni_global_refs}/{d.jni_weak_refs ?? 0}</span>}
        {topLink && ctx?.top && (
          <a href={topLink} target="_blank" rel="noopener" data-testid="td-top-link">
            top dump {fmtTs(ctx.top.time_ms, zone).slice(11, 19)} (%CPU joined)</a>
        )}
        <a href={download} download class="small">Download</a>
      </div>
      {d.deadlocks > 0 && (
        <div class="banner banner-red" data-testid="td-deadlock">
          The JVM reported {d.deadlocks === 1 ? 'a Java-level deadlock' : `${d.deadlocks} deadlocks`}.
          {dead.size > 0 && <> Threads in the cycle: {[...dead].map((i) => threads[i].name).join(', ')}.</>}
          <button type="button" class="btn btn-small" onClick={() => setParams({ mode: 'locks' }, { replace: true })}>Show locks</button>
        </div>
      )}
      {ctx?.note && <div class="banner banner-amber">{ctx.note}</div>}
      {ctxErr && <div class="muted small">Pod context unavailable: {ctxErr}</div>}
      <div class="chips" data-testid="td-state-chips">
        <button type="button" class={`chip ${state === null ? 'chip-on' : ''}`} onClick={() => setParams({ state: null }, { replace: true })}>
          All<span class="n">{threads.length}</span></button>
        {stateKeys.map(([k, n]) => (
          <button type="button" key={k} class={`chip ${state === k ? 'chip-on' : ''}`} data-testid="td-state-chip" data-state={k}
            onClick={() => setParams({ state: state === k ? null : k, mode: mode === 'locks' ? 'threads' : mode }, { replace: true })}>
            {stateLabel(k)}<span class="n">{n}</span></button>
        ))}
      </div>
      <div class="viewer-tools">
        <span class="chips">
          {(['threads', 'groups', 'locks'] as Mode[]).map((m) => (
            <button type="button" key={m} class={`btn btn-small ${mode === m ? 'btn-on' : ''}`} data-testid={`td-mode-${m}`}
              onClick={() => setParams({ mode: m === 'threads' ? null : m }, { replace: true })}>
              {m === 'threads' ? 'Threads' : m === 'groups' ? 'Group identical stacks' : 'Locks'}
            </button>
          ))}
        </span>
        <select class="input" data-testid="td-state-filter" value={state === null ? '*' : state}
          onChange={(e) => { const v = (e.target as HTMLSelectElement).value; setParams({ state: v === '*' ? null : v }, { replace: true }); }}>
          <option value="*">All states</option>
          {[...new Set(threads.map((t) => t.state))].filter(Boolean).sort().map((s) => (
            <option key={'b' + s} value={s}>{s} (any)</option>
          ))}
          {stateKeys.filter(([k]) => k.includes('(') || k === '').map(([k]) => (
            <option key={k} value={k}>{stateLabel(k)}</option>
          ))}
        </select>
        <input class="input" type="search" placeholder="Thread name or 0x nid" data-testid="td-name-filter" value={qDraft}
          onInput={(e) => { const v = (e.target as HTMLInputElement).value; setQDraft(v); setParams({ q: v || null }, { replace: true }); }} />
        <label class="check small"><input type="checkbox" checked={inStack} data-testid="td-in-stack"
          onChange={(e) => setParams({ in: (e.target as HTMLInputElement).checked ? 'stack' : null }, { replace: true })} /> also in stacks</label>
        <label class="check small"><input type="checkbox" checked={hideSys} data-testid="td-hide-system"
          onChange={(e) => setParams({ sys: (e.target as HTMLInputElement).checked ? 'hide' : null }, { replace: true })} /> hide JVM/system threads</label>
        <span class="muted small" data-testid="td-shown">{shown.length} of {threads.length} threads</span>
      </div>
      {mode === 'threads' && (
        <div class="td-split">
          <div class="td-list">
            <ThreadTable threads={threads} shown={shown} selected={selected} sort={sort} top={top} dead={dead} onSelect={select} />
          </div>
          <div class="td-side" data-testid="td-stack">
            {selected !== null
              ? <ThreadDetail t={threads[selected]} i={selected} threads={threads} monByAddr={monByAddr}
                  topRow={top && threads[selected].nid !== null ? top.get(threads[selected].nid!) ?? null : null} dead={dead} />
              : <div class="state">Click a thread to see its stack (↑/↓ move).</div>}
          </div>
        </div>
      )}
      {mode === 'groups' && <Groups threads={threads} shown={shown} onSelect={select} />}
      {mode === 'locks' && <Locks threads={threads} monitors={monitors} dead={dead} focus={P.get('lock')}
        all={P.get('all') === '1'} onSelect={select} />}
    </>
  );
}

function ThreadTable({ threads, shown, selected, sort, top, dead, onSelect }: {
  threads: TdThread[]; shown: number[]; selected: number | null; sort: SortKey; top: Map<number, TopRow> | null;
  dead: Set<number>; onSelect: (i: number) => void;
}) {
  const th = (label: string, key: SortKey, cls = '', title?: string) => (
    <th class={`sortable ${cls}`} title={title ?? `Sort by ${label}`}
      onClick={() => setParams({ sort: sort === key ? null : key || null }, { replace: true })}>
      {label}{sort === key && key ? ' ▾' : ''}</th>
  );
  if (!shown.length) return <div class="state">No thread matches the filters.</div>;
  return (
    <table class="grid td-grid" data-testid="td-table">
      <thead>
        <tr>
          {th('Name', 'name')}{th('State', 'state')}<th title="Daemon thread">D</th><th class="num" title="Java priority">Prio</th>
          {th('CPU', '-cpu', 'num', 'CPU time the JVM reports for the thread')}{th('Elapsed', '-elapsed', 'num')}{th('nid', 'nid')}
          {top && th('%CPU', '-pcpu', 'num', '%CPU from the top dump of the same minute')}
          {top && <th class="num">TIME+</th>}
        </tr>
      </thead>
      <tbody>
        {shown.map((i) => {
          const t = threads[i];
          const tr = top && t.nid !== null ? top.get(t.nid) : undefined;
          return (
            <tr key={i} data-idx={i} data-testid="td-thread-row" data-name={t.name} data-nid={t.nid ?? ''}
              class={`${selected === i ? 'sel' : ''} ${dead.has(i) ? 'deadlocked' : ''}`} onClick={() => onSelect(i)}>
              <td class="td-name" title={t.name}>{t.name}{dead.has(i) && <span class="tag tag-red">deadlock</span>}</td>
              <td><span class={`st st-${stateClass(t)}`} title={`${fullState(t) || 'VM (non-Java) thread'} — ${t.header_state}`}>
                {t.state ? <>{t.state}{t.state_detail && <span class="st-detail"> {shortDetail(t.state_detail)}</span>}</> : 'VM'}</span></td>
              <td class="muted">{t.daemon ? '✓' : ''}</td>
              <td class="num">{t.priority ?? ''}</td>
              <td class="num">{t.cpu_ms !== null ? fmtDuration(t.cpu_ms) : ''}</td>
              <td class="num">{t.elapsed_s !== null ? fmtDuration(t.elapsed_s * 1000) : ''}</td>
              <td class="mono">{t.nid !== null ? hexNid(t.nid) : ''}</td>
              {top && <td class="num">{tr ? tr.cpu_pct.toFixed(1) : ''}</td>}
              {top && <td class="num">{tr ? fmtTopTime(tr.time_s) : ''}</td>}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** "on object monitor" is the long one; the tooltip keeps the full text. */
function shortDetail(d: string): string {
  return d === 'on object monitor' ? 'monitor' : d;
}

function ThreadLink({ threads, i, onSelect }: { threads: TdThread[]; i: number; onSelect: (i: number) => void }) {
  return <a href="#" class="nowrap" onClick={(e) => { e.preventDefault(); onSelect(i); }}>{threads[i].name}</a>;
}

/** Stack frames with the JVM's lock lines under the frame that took or waits for them, each
 *  saying who else holds or waits for the monitor. */
function ThreadDetail({ t, i, threads, monByAddr, topRow, dead }: {
  t: TdThread; i: number; threads: TdThread[]; monByAddr: Map<string, Monitor>; topRow: TopRow | null; dead: Set<number>;
}) {
  const select = (j: number) => setParams({ thread: String(j), nid: null }, { replace: true });
  const released = new Set(t.locks_held.filter((l) => !effectiveHeld(t).includes(l)).map((l) => l.addr));
  const lockLine = (l: { kind?: string; addr: string; class: string }, waiting: boolean, k: string) => {
    const m = monByAddr.get(l.addr);
    const others = waiting ? (m?.holders ?? []).filter((h) => h !== i) : (m?.waiters ?? []).map((w) => w.t).filter((w) => w !== i);
    return (
      <div key={k} class={`lock ${waiting ? 'lock-wait' : ''}`}>
        - {lockVerb(waiting ? l.kind ?? '' : 'locked')} <a href="#" title="Show in the lock view"
          onClick={(e) => { e.preventDefault(); setParams({ mode: 'locks', lock: l.addr }, { replace: true }); }}>&lt;{l.addr}&gt;</a> (a {l.class})
        {!waiting && released.has(l.addr) && <span class="muted"> (released by wait())</span>}
        {others.length > 0 && (
          <span class="muted"> — {waiting ? 'held by ' : `${others.length} waiting: `}
            {others.slice(0, 5).map((o, n) => <Fragment key={o}>{n > 0 && ', '}<ThreadLink threads={threads} i={o} onSelect={select} /></Fragment>)}
            {others.length > 5 && ` and ${others.length - 5} more`}</span>
        )}
      </div>
    );
  };
  const ownable = t.locks_held.filter((l) => l.frame === null);
  return (
    <div data-testid="td-thread-detail">
      <h3 class="mono">"{t.name}"{dead.has(i) && <span class="tag tag-red">deadlock</span>}</h3>
      <div class="small muted">
        {fullState(t) || 'VM thread'}{t.header_state ? ` · ${t.header_state}` : ''}{t.daemon ? ' · daemon' : ''}
        {t.priority !== null ? ` · prio ${t.priority}` : ''}{t.os_priority !== null ? ` · os_prio ${t.os_priority}` : ''}
        {t.cpu_ms !== null ? ` · cpu ${fmtDuration(t.cpu_ms)}` : ''}{t.elapsed_s !== null ? ` · elapsed ${fmtDuration(t.elapsed_s * 1000)}` : ''}
        {t.tid ? ` · tid ${t.tid}` : ''}{t.nid !== null ? ` · nid ${hexNid(t.nid)} (${t.nid})` : ''}
        {topRow ? ` · top: ${topRow.cpu_pct.toFixed(1)}% CPU, TIME+ ${fmtTopTime(topRow.time_s)}` : ''}
      </div>
      <div class="stack" data-testid="td-frames">
        {t.frames.length === 0 && <div class="muted">(no Java stack)</div>}
        {t.frames.map((fr, k) => (
          <Fragment key={k}>
            <div class="frame">{fr}</div>
            {t.locks_waited.filter((l) => l.frame === k).map((l, n) => lockLine(l, true, `w${k}-${n}`))}
            {t.locks_held.filter((l) => l.frame === k).map((l, n) => lockLine(l, false, `h${k}-${n}`))}
          </Fragment>
        ))}
        {t.locks_waited.filter((l) => l.frame === null || l.frame >= t.frames.length).map((l, n) => lockLine(l, true, `wx${n}`))}
        {ownable.length > 0 && (
          <>
            <div class="muted" style="margin-top:6px">Locked ownable synchronizers:</div>
            {ownable.map((l, n) => lockLine(l, false, `o${n}`))}
          </>
        )}
      </div>
    </div>
  );
}

function Groups({ threads, shown, onSelect }: { threads: TdThread[]; shown: number[]; onSelect: (i: number) => void }) {
  const groups = useMemo(() => groupStacks(threads, shown), [threads, shown]);
  const [open, setOpen] = useState<Set<string>>(new Set());
  if (!groups.length) return <div class="state">No thread matches the filters.</div>;
  return (
    <div class="td-groups" data-testid="td-groups">
      <div class="muted small" style="margin-bottom:4px">{groups.length} distinct stacks for {shown.length} threads</div>
      {groups.map((g) => {
        const isOpen = open.has(g.key);
        const states = new Map<string, number>();
        for (const i of g.threads) { const s = fullState(threads[i]) || 'VM'; states.set(s, (states.get(s) ?? 0) + 1); }
        return (
          <div key={g.key} class="group-card" data-testid="td-group">
            <div class="group-head" onClick={() => setOpen((o) => { const n = new Set(o); if (n.has(g.key)) n.delete(g.key); else n.add(g.key); return n; })}>
              <span class="twisty">{isOpen ? '▾' : '▸'}</span>
              <b data-testid="td-group-count">{g.threads.length} {g.threads.length === 1 ? 'thread' : 'threads'} here</b>
              <span class="muted small">{[...states].map(([s, n]) => `${s} ${n}`).join(' · ')}</span>
              <span class="mono small ellipsis">{g.frames[0] ?? '(no Java stack)'}</span>
            </div>
            {isOpen && (
              <div class="group-body">
                <GroupThreads threads={threads} members={g.threads} onSelect={onSelect} />
                <div class="stack">
                  {g.frames.length ? g.frames.map((fr, k) => <div key={k} class="frame">{fr}</div>) : <div class="muted">(no Java stack)</div>}
                </div>
              </div>
            )}
          </div>
        );
      })}
    </div>
  );
}

/** The names of a group's threads: the first 60, then a "more" link (pools have hundreds). */
function GroupThreads({ threads, members, onSelect }: { threads: TdThread[]; members: number[]; onSelect: (i: number) => void }) {
  const [all, setAll] = useState(false);
  const list = all ? members : members.slice(0, 60);
  return (
    <div class="group-threads">
      {list.map((i, n) => <Fragment key={i}>{n > 0 && ', '}<ThreadLink threads={threads} i={i} onSelect={onSelect} /></Fragment>)}
      {!all && members.length > list.length && (
        <> … <a href="#" onClick={(e) => { e.preventDefault(); setAll(true); }}>{members.length - list.length} more</a></>
      )}
    </div>
  );
}

function Locks({ threads, monitors, dead, focus, all, onSelect }: {
  threads: TdThread[]; monitors: Monitor[]; dead: Set<number>; focus: string | null; all: boolean; onSelect: (i: number) => void;
}) {
  const contended = monitors.filter((m) => m.waiters.length > 0);
  const list = all ? monitors : monitors.filter((m) => m.waiters.length > 0 || m.addr === focus);
  useEffect(() => {
    if (focus) document.querySelector(`[data-addr="${CSS.escape(focus)}"]`)?.scrollIntoView({ block: 'center' });
  }, [focus]);
  return (
    <div data-testid="td-locks">
      <div class="viewer-tools">
        <span class="muted small">{monitors.length} monitors/synchronizers · {contended.length} with waiting threads</span>
        <label class="check small"><input type="checkbox" checked={all}
          onChange={(e) => setParams({ all: (e.target as HTMLInputElement).checked ? '1' : null }, { replace: true })} /> show uncontended too</label>
      </div>
      {list.length === 0 ? <div class="state">No thread waits for a monitor held by another.</div> : (
        <table class="grid lock-grid">
          <thead><tr><th>Monitor</th><th>Class</th><th>Held by</th><th>Waiting</th></tr></thead>
          <tbody>
            {list.map((m) => {
              const isDead = m.holders.some((h) => dead.has(h)) && m.waiters.some((w) => dead.has(w.t));
              return (
                <tr key={m.addr} data-addr={m.addr} data-testid="td-lock-row" class={`${isDead ? 'deadlocked' : ''} ${focus === m.addr ? 'sel' : ''}`}>
                  <td class="mono">{m.addr}{isDead && <span class="tag tag-red">deadlock</span>}</td>
                  <td class="mono small">{m.cls}</td>
                  <td>{m.holders.length ? m.holders.map((h, n) => <Fragment key={h}>{n > 0 && ', '}<ThreadLink threads={threads} i={h} onSelect={onSelect} /></Fragment>)
                    : <span class="muted">{m.waiters.some((w) => w.kind === 'parking') ? 'unknown owner (parked synchronizer)' : '—'}</span>}</td>
                  <td>{m.waiters.length ? m.waiters.map((w, n) => (
                    <Fragment key={n}>{n > 0 && ', '}<ThreadLink threads={threads} i={w.t} onSelect={onSelect} /><span class="muted small"> ({lockVerb(w.kind)})</span></Fragment>
                  )) : <span class="muted">—</span>}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </div>
  );
}
