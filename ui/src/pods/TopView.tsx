// TopView.tsx -- the top-dump viewer (ui.md §9.2) at /dump/top/<id>: the header figures
// (load, threads by state, CPU split, memory) and the per-thread table sortable by %CPU and
// TIME+. With its pod context (?namespace=&pod=&t=) it finds the thread dump of the same
// minute and names each native thread, linking to its stack.

import { apiGet, apiUrl, type Dump, type DumpsPage } from '../lib/api';
import { useApp } from '../lib/ctx';
import { fmtBytes } from '../lib/format';
import { buildUrl, setParams, type Route } from '../lib/url';
import { ErrorBanner, Loading, dumpSubtitle, hexNid, useFetch } from './common';
import { closestInMinute, fmtTopTime, type TdThread, type ThreadsResp, type TopResp, type TopRow } from './dumpModel';
import { ViewerFrame } from './frame';

interface Ctx { record: Dump | null; td: Dump | null; names: Map<number, TdThread> | null }

async function loadContext(id: string, p: URLSearchParams, signal: AbortSignal): Promise<Ctx> {
  const namespace = p.get('namespace') ?? undefined;
  const pod = p.get('pod');
  const t = Number(p.get('t'));
  if (!pod || !Number.isFinite(t) || t <= 0) return { record: null, td: null, names: null };
  const [tops, tds] = await Promise.all([
    apiGet<DumpsPage>('/dumps', { namespace, pod, type: 'top', from: String(t), to: String(t + 1), limit: '1000' }, signal),
    apiGet<DumpsPage>('/dumps', { namespace, pod, type: 'td', from: String(t - 60000), to: String(t + 60001), limit: '1000' }, signal),
  ]);
  const record = tops.dumps.find((d) => d.id === id) ?? null;
  const td = closestInMinute(tds.dumps, t, record?.capture_ms ?? null);
  let names: Map<number, TdThread> | null = null;
  if (td) {
    try {
      const th = await apiGet<ThreadsResp>(`/dumps/${encodeURIComponent(td.id)}/threads`, undefined, signal);
      names = new Map();
      for (const x of th.threads) if (x.nid !== null && !names.has(x.nid)) names.set(x.nid, x);
    } catch (e: any) { if (e?.name === 'AbortError') throw e; }
  }
  return { record, td, names };
}

type SortKey = '-cpu' | '-time' | '-mem' | '-res' | 'pid';

export function TopView({ id, route }: { id: string; route: Route }) {
  const { zone } = useApp();
  const P = route.params;
  const f = useFetch((s) => apiGet<TopResp>(`/dumps/${encodeURIComponent(id)}/top`, undefined, s), [id]);
  const ctxKey = `${P.get('namespace')}|${P.get('pod')}|${P.get('t')}`;
  const c = useFetch((s) => loadContext(id, P, s), [id, ctxKey]);
  const download = apiUrl(`/dumps/${encodeURIComponent(id)}`);
  const rec = c.data?.record ?? null;
  const sub = dumpSubtitle(rec, P.get('pod'), zone);

  let body;
  if (f.error) body = <ErrorBanner error={f.error} retry={f.retry} downloadHref={download} />;
  else if (f.loading || !f.data) body = <Loading label="Parsing the top dump…" />;
  else body = <TopBody d={f.data} route={route} ctx={c.data} download={download} />;
  return <ViewerFrame route={route} title="Top dump" sub={sub} testid="top-view">{body}</ViewerFrame>;
}

function TopBody({ d, route, ctx, download }: { d: TopResp; route: Route; ctx: Ctx | null; download: string }) {
  const P = route.params;
  const sort = (P.get('sort') ?? '-cpu') as SortKey;
  const rows = [...d.rows];
  const key: Record<SortKey, (r: TopRow) => number> = {
    '-cpu': (r) => -r.cpu_pct, '-time': (r) => -r.time_s, '-mem': (r) => -r.mem_pct, '-res': (r) => -r.res_kib, pid: (r) => r.pid,
  };
  const k = key[sort] ?? key['-cpu'];
  rows.sort((a, b) => k(a) - k(b) || b.time_s - a.time_s || a.pid - b.pid);
  const names = ctx?.names ?? null;
  const tdUrl = (nid: number) => ctx?.td ? buildUrl(`/dump/td/${encodeURIComponent(ctx.td.id)}`, {
    namespace: P.get('namespace'), pod: P.get('pod'), t: String(ctx.td.time_ms), back: P.get('back'), nid: String(nid),
  }) : null;
  const th = (label: string, sk: SortKey, title?: string) => (
    <th class="sortable num" title={title ?? `Sort by ${label}`} data-testid={`top-sort-${sk.replace('-', '')}`}
      onClick={() => setParams({ sort: sk === '-cpu' ? null : sk }, { replace: true })}>{label}{sort === sk ? ' ▾' : ''}</th>
  );
  const m = d.memory_kib ?? {};
  const mem = (v: number | undefined) => v === undefined ? '?' : fmtBytes(v * 1024);
  const cpu = d.cpu ?? {};
  return (
    <>
      <div class="viewer-head" data-testid="top-header">
        {d.clock && <span class="fig">clock <b>{d.clock}</b></span>}
        {d.uptime && <span class="fig">up <b>{d.uptime}</b></span>}
        {d.load?.length > 0 && <span class="fig">load average <b>{d.load.map((x) => x.toFixed(2)).join(', ')}</b></span>}
        {d.pid !== null && <span class="fig">pid <b>{d.pid}</b></span>}
        <a href={download} download class="small">Download</a>
      </div>
      <div class="viewer-head">
        <span class="fig">Threads <b>{d.threads?.total ?? '?'}</b>: {d.threads?.running ?? 0} running, {d.threads?.sleeping ?? 0} sleeping,
          {' '}{d.threads?.stopped ?? 0} stopped, {d.threads?.zombie ?? 0} zombie</span>
        <span class="fig">CPU <b>{fmtPct(cpu.us)} us</b>, {fmtPct(cpu.sy)} sy, {fmtPct(cpu.ni)} ni, {fmtPct(cpu.id)} id, {fmtPct(cpu.wa)} wa,
          {' '}{fmtPct(cpu.hi)} hi, {fmtPct(cpu.si)} si, {fmtPct(cpu.st)} st</span>
        <span class="fig">Memory <b>{mem(m.total)}</b> total, {mem(m.used)} used, {mem(m.free)} free, {mem(m.buff_cache)} cache,
          {' '}{mem(m.avail)} avail{m.swap_total ? `, swap ${mem(m.swap_used)} of ${mem(m.swap_total)}` : ''}</span>
      </div>
      {ctx?.td ? (
        <div class="muted small" data-testid="top-td-join">Thread names from the thread dump of the same minute
          ({ctx.td.name}); click a name to see its stack.</div>
      ) : ctx?.record ? <div class="muted small">No thread dump of this pod within a minute: native ids only.</div> : null}
      <div class="table-scroll">
        <table class="grid" data-testid="top-table">
          <thead>
            <tr>
              {th('TID', 'pid', 'Native thread id (nid in the thread dump)')}<th>nid</th><th>User</th><th class="num">PR</th><th class="num">NI</th>
              <th class="num">VIRT</th>{th('RES', '-res')}<th class="num">SHR</th><th>S</th>
              {th('%CPU', '-cpu')}{th('%MEM', '-mem')}{th('TIME+', '-time', 'Total CPU time of the thread')}<th>Command</th>
              {names && <th>Java thread</th>}
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => {
              const jt = names?.get(r.pid);
              const url = jt ? tdUrl(r.pid) : null;
              return (
                <tr key={r.pid} data-testid="top-row" data-pid={r.pid}>
                  <td class="num">{r.pid}</td>
                  <td class="mono muted">{hexNid(r.pid)}</td>
                  <td>{r.user}</td>
                  <td class="num">{r.pr}</td>
                  <td class="num">{r.ni}</td>
                  <td class="num">{fmtBytes(r.virt_kib * 1024)}</td>
                  <td class="num">{fmtBytes(r.res_kib * 1024)}</td>
                  <td class="num">{fmtBytes(r.shr_kib * 1024)}</td>
                  <td>{r.state}</td>
                  <td class="num"><b>{r.cpu_pct.toFixed(1)}</b></td>
                  <td class="num">{r.mem_pct.toFixed(1)}</td>
                  <td class="num" title={`${r.time_s.toFixed(2)} s`}>{fmtTopTime(r.time_s)}</td>
                  <td class="mono">{r.command}</td>
                  {names && <td class="ellipsis" style="max-width:320px">{jt && url
                    ? <a href={url} title={`${jt.name} — ${jt.state}`}>{jt.name}</a> : ''}</td>}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </>
  );
}

function fmtPct(v: number | undefined): string {
  return v === undefined || v === null ? '?' : v.toFixed(1);
}
