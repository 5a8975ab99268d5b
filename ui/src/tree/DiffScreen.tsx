// DiffScreen.tsx -- the difference of two aggregate profiles (ui.md §10.2, issue 19 item
// 2): the profile and its baseline merged by method text (diff.ts), shown as a flame or
// icicle whose frames are coloured by the change of net time (red: more, blue: less), a
// tree with both numbers and the change, and a table of the methods that changed most.
// Per call (default) compares what one call costs on each side; absolute compares the
// sums. The view state is in the URL: dview, side (which numbers size the frames), norm,
// zoom, metric.

import { useMemo, useState } from 'preact/hooks';
import { fmtDuration } from '../lib/format';
import { deltaColor, diffTrees, methodChanges, netDeltas, netSelf, netTotal } from './diff';
import { parseMetric, type Metric } from './flame';
import { FlameView } from './FlameView';
import type { TreeModel } from './model';
import { modelFromResp } from './model';
import type { ProfileResp } from './profileModel';
import type { StateIO } from './TreeScreen';

type DView = 'flame' | 'icicle' | 'tree' | 'changes';

/** Per-call averages are often below a millisecond: decimals there, ui.md §1.4 above. */
function dur(ms: number): string {
  const v = Math.abs(ms);
  if (v > 0 && v < 10) return `${ms < 0 ? '-' : ''}${v.toFixed(v < 1 ? 2 : 1)}ms`;
  return fmtDuration(ms);
}

function signed(ms: number): string {
  if (!ms) return '±0';
  return `${ms > 0 ? '+' : '−'}${dur(Math.abs(ms))}`;
}

function pctChange(after: number, before: number): string {
  if (!before) return after ? 'new' : '';
  const r = (after - before) / before * 100;
  return `${r > 0 ? '+' : ''}${r.toFixed(0)} %`;
}

export function DiffScreen({ a, b, labelA, labelB, io, onClose }: {
  a: ProfileResp; b: ProfileResp; labelA: string; labelB: string; io: StateIO; onClose: () => void;
}) {
  const P = io.params;
  const norm = P.get('norm') === 'abs' ? 'abs' : 'call';
  const dview = (['flame', 'icicle', 'tree', 'changes'].includes(P.get('dview') ?? '') ? P.get('dview') : 'flame') as DView;
  const side = P.get('side') === 'before' ? 'before' : 'after';
  const metric = parseMetric(P.get('metric'));
  const d = useMemo(() => {
    const ka = norm === 'call' ? 1 / Math.max(1, a.profile.merged) : 1;
    const kb = norm === 'call' ? 1 / Math.max(1, b.profile.merged) : 1;
    const t = diffTrees(a, b, ka, kb, norm === 'call' ? 'one call (average)' : 'all calls');
    const after = modelFromResp(t.after), before = modelFromResp(t.before);
    return { after, before, ...netDeltas(after, before) };
  }, [a, b, norm]);
  const shown = side === 'before' ? d.before : d.after;
  const zoom = Math.max(0, shown.findPath(P.get('zoom') ?? ''));
  const detail = (i: number) =>
    `net ${dur(netTotal(d.before, i))} → ${dur(netTotal(d.after, i))}: Δ ${signed(d.delta[i])} ${pctChange(netTotal(d.after, i), netTotal(d.before, i))}`;

  let body;
  if (dview === 'changes') body = <ChangesTable after={d.after} before={d.before} />;
  else if (dview === 'tree') body = <DiffTree after={d.after} before={d.before} delta={d.delta} max={d.max} />;
  else {
    body = (
      <FlameView key={`${dview}/${side}/${norm}`} model={shown} icicle={dview === 'icicle'} metric={metric} zoom={zoom} search={null}
        cats={null} marks={null} baseName={`difference-${norm}`}
        setZoom={(i) => io.set({ zoom: i === 0 ? null : shown.pathOf(i) })}
        onMetric={(mt: Metric) => io.set({ metric: mt === 'total' ? null : mt })}
        colorOf={(i) => deltaColor(d.delta[i], d.max)} detailOf={detail} />
    );
  }
  const seg = <T extends string>(val: T, opts: [T, string][], key: string, testid: string, def: T) => (
    <span class="tp-seg" role="group">
      {opts.map(([v, l]) => (
        <button key={v} type="button" class={`btn btn-small ${val === v ? 'btn-on' : ''}`} data-testid={`${testid}-${v}`}
          onClick={() => io.set({ [key]: v === def ? null : v, zoom: null })}>{l}</button>
      ))}
    </span>
  );
  return (
    <div class="tp" data-testid="tree-page">
      <header class="tp-header" data-testid="tree-header">
        <a class="brand" href="/calls">cloudprof</a>
        <span class="muted">difference</span>
        <span class="chip" data-testid="diff-after" title="The profile">{labelA} · {a.profile.merged} calls</span>
        <span class="muted">against</span>
        <span class="chip" data-testid="diff-before" title="The baseline">{labelB} · {b.profile.merged} calls</span>
        <span class="chip" data-testid="diff-root-delta" title="Change of the root's net time">Δ {signed(d.delta[0])}</span>
        <span class="spacer" />
        <button type="button" class="btn btn-small" data-testid="diff-close" onClick={onClose}>Back to the profile</button>
      </header>
      <div class="tp-toolbar" data-testid="diff-toolbar">
        {seg(dview, [['flame', 'Flame'], ['icicle', 'Icicle'], ['tree', 'Tree'], ['changes', 'Largest changes']], 'dview', 'diff-view', 'flame')}
        {seg(norm, [['call', 'Per call'], ['abs', 'Absolute']], 'norm', 'diff-norm', 'call')}
        {(dview === 'flame' || dview === 'icicle') && seg(side, [['after', 'Width: profile'], ['before', 'Width: baseline']], 'side', 'diff-side', 'after')}
        <span class="spacer" />
        <span class="small"><span class="pf-swatch" style={{ background: deltaColor(1, 1) }} /> more net time
          <span class="pf-swatch" style={{ background: deltaColor(-1, 1), marginLeft: 8 }} /> less
          <span class="pf-swatch" style={{ background: deltaColor(0, 0), marginLeft: 8 }} /> unchanged</span>
      </div>
      {(a.profile.stopped || b.profile.stopped) && (
        <div class="tp-banners"><div class="banner banner-amber" data-testid="diff-stopped">
          {a.profile.stopped ? `The profile stopped early (${a.profile.stopped}). ` : ''}
          {b.profile.stopped ? `The baseline stopped early (${b.profile.stopped}).` : ''}</div></div>
      )}
      {d.max === 0 && <div class="tp-banners"><div class="banner banner-info" data-testid="diff-nochange">No change: both sides spend the same net time in every frame.</div></div>}
      <div class="tp-body" data-testid="diff-body" data-view={dview}>{body}</div>
    </div>
  );
}

function ChangesTable({ after, before }: { after: TreeModel; before: TreeModel }) {
  const [by, setBy] = useState<'self' | 'total'>('self');
  const rows = useMemo(() => methodChanges(after, before, by, 100), [after, before, by]);
  return (
    <div class="pf-changes">
      <label class="muted small">largest change of <select class="input" value={by} data-testid="changes-by"
        onChange={(e) => setBy((e.currentTarget as HTMLSelectElement).value === 'total' ? 'total' : 'self')}>
        <option value="self">self net time</option><option value="total">total net time</option></select></label>
      {rows.length === 0
        ? <div class="state" data-testid="changes-empty">No method changed.</div>
        : (
          <table class="pf-table" data-testid="changes-table">
            <thead><tr><th>Method</th><th>Baseline</th><th>Profile</th><th>Δ</th><th /></tr></thead>
            <tbody>
              {rows.map((r) => {
                const x = by === 'self' ? r.afterSelf : r.afterTotal, y = by === 'self' ? r.beforeSelf : r.beforeTotal;
                const n = after.names.get(r.method);
                return (
                  <tr key={r.method} data-testid="changes-row">
                    <td title={n.full}>{n.label}</td><td class="num">{dur(y)}</td><td class="num">{dur(x)}</td>
                    <td class="num" style={{ color: x > y ? '#b3261e' : '#1d4fb8' }}>{signed(x - y)}</td>
                    <td class="num muted">{pctChange(x, y)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
    </div>
  );
}

const TREE_ROWS = 3000;

/** The union tree with both sides' net time and the change; children by the profile's
 *  order (frames only the baseline has come last). */
function DiffTree({ after, before, delta, max }: { after: TreeModel; before: TreeModel; delta: Float64Array; max: number }) {
  const [open, setOpen] = useState<Set<number>>(() => {
    const s = new Set<number>([0]);
    // open the path of the largest change, a few levels
    for (let x = 0, k = 0; k < 6; k++) {
      let best = -1;
      for (let j = after.kidStart[x]; j < after.kidStart[x] + after.kidCount[x]; j++) {
        const c = after.kids[j];
        if (best < 0 || Math.abs(delta[c]) > Math.abs(delta[best])) best = c;
      }
      if (best < 0) break;
      s.add(best);
      x = best;
    }
    return s;
  });
  const rows: { i: number; depth: number }[] = [];
  const stack: [number, number][] = [[0, 0]];
  while (stack.length && rows.length < TREE_ROWS) {
    const [i, dp] = stack.pop()!;
    rows.push({ i, depth: dp });
    if (!open.has(i)) continue;
    for (let j = after.kidStart[i] + after.kidCount[i] - 1; j >= after.kidStart[i]; j--) stack.push([after.kids[j], dp + 1]);
  }
  const toggle = (i: number) => {
    const s = new Set(open);
    if (s.has(i)) s.delete(i); else s.add(i);
    setOpen(s);
  };
  return (
    <div class="pf-difftree" data-testid="diff-tree">
      <table class="pf-table">
        <thead><tr><th>Method</th><th>Baseline net</th><th>Profile net</th><th>Δ net</th><th /></tr></thead>
        <tbody>
          {rows.map(({ i, depth }) => {
            const kids = after.kidCount[i] > 0;
            const n = after.names.get(after.method[i]);
            return (
              <tr key={i} data-testid="diff-tree-row" data-node={i}>
                <td style={{ paddingLeft: 6 + depth * 14 }} title={n.full}>
                  <button type="button" class="pf-twisty" disabled={!kids} onClick={() => toggle(i)}>{kids ? (open.has(i) ? '▾' : '▸') : '·'}</button>
                  <span class="pf-swatch" style={{ background: deltaColor(delta[i], max) }} />{n.label}
                </td>
                <td class="num">{dur(netTotal(before, i))}</td>
                <td class="num">{dur(netTotal(after, i))}</td>
                <td class="num">{signed(delta[i])}</td>
                <td class="num muted" title="self net time: baseline → profile">{dur(netSelf(before, i))} → {dur(netSelf(after, i))}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {rows.length >= TREE_ROWS && <div class="muted small">Only the first {TREE_ROWS} rows are shown: collapse some branches.</div>}
    </div>
  );
}
