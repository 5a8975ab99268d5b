// diff.ts -- the difference of two merged trees (ui.md §10.2, issue 19 item 2), pure TS.
//
// Two aggregate profiles (e.g. an endpoint before and after a deploy) are merged by method
// text into one union tree: node for node the same shape, once with the numbers of the
// profile looked at ("after") and once with those of the baseline ("before"); a node only
// one side has carries zeros on the other. Both are plain TreeResp objects built in the
// same preorder, so their TreeModels share node indexes: a flame laid out by either side
// can be coloured by the change at the same index. The roots are matched whatever their
// text (each is the synthetic "<N> calls" node of its profile).
//
// Numbers can be scaled per side (per call: 1 / the calls merged) so that two periods with
// different traffic compare by what one call costs rather than by volume.

import type { TreeNodeJson, TreeResp } from '../lib/api';
import type { TreeModel } from './model';

export interface DiffTrees {
  after: TreeResp;      // the union tree with the profile's numbers
  before: TreeResp;     // the same shape with the baseline's numbers
  nodes: number;
}

interface Pair { a: TreeNodeJson | null; b: TreeNodeJson | null; out: number }

const ZERO: TreeNodeJson = { method: -1, total: 0, self: 0, suspension: 0, self_suspension: 0, invocations: 0, calls: 0 };

function scaled(x: TreeNodeJson | null, method: number, k: number): TreeNodeJson {
  const s = x ?? ZERO;
  return {
    method, total: s.total * k, self: s.self * k, suspension: s.suspension * k, self_suspension: s.self_suspension * k,
    invocations: s.invocations * k, calls: s.calls * k,
  };
}

/** The union of two trees by method text; `ka`/`kb` scale each side's numbers. Params are
 *  left out (a difference of parameter values is not defined). `label` names the root. */
export function diffTrees(a: TreeResp, b: TreeResp, ka = 1, kb = 1, label = 'difference'): DiffTrees {
  const methods: string[] = [];
  const index = new Map<string, number>();
  const word = (w: string): number => {
    let i = index.get(w);
    if (i === undefined) { i = methods.length; methods.push(w); index.set(w, i); }
    return i;
  };
  const rootM = word(label);
  const ra = scaled(a.root, rootM, ka), rb = scaled(b.root, rootM, kb);
  let nodes = 1;
  // iterative: deep trees must not overflow the stack
  const work: [TreeNodeJson | null, TreeNodeJson | null, TreeNodeJson, TreeNodeJson][] = [[a.root, b.root, ra, rb]];
  while (work.length) {
    const [xa, xb, oa, ob] = work.pop()!;
    const kids = new Map<string, Pair>();
    const order: Pair[] = [];
    const add = (ch: TreeNodeJson[] | undefined, side: 'a' | 'b', words: string[]) => {
      for (const c of ch ?? []) {
        const w = words[c.method] ?? `#${c.method}`;
        let p = kids.get(w);
        if (!p) { p = { a: null, b: null, out: word(w) }; kids.set(w, p); order.push(p); }
        p[side] = c;
      }
    };
    add(xa?.children, 'a', a.methods);
    add(xb?.children, 'b', b.methods);
    if (!order.length) continue;
    oa.children = [];
    ob.children = [];
    for (const p of order) {
      const ca = scaled(p.a, p.out, ka), cb = scaled(p.b, p.out, kb);
      oa.children.push(ca);
      ob.children.push(cb);
      nodes++;
      work.push([p.a, p.b, ca, cb]);
    }
  }
  const shell = (root: TreeNodeJson, src: TreeResp): TreeResp => ({
    version: 1, methods, params: [], calls: [], root, truncated: src.truncated, nodes, start_ms: src.start_ms, end_ms: src.end_ms,
  });
  return { after: shell(ra, a), before: shell(rb, b), nodes };
}

/** Net time (total − suspension) of a node, the quantity the difference is coloured by. */
export function netTotal(m: TreeModel, i: number): number {
  return m.total[i] - m.susp[i];
}

export function netSelf(m: TreeModel, i: number): number {
  return m.self[i] - m.selfSusp[i];
}

/** Δ net time per node (after − before), and the largest |Δ| (for the colour scale). */
export function netDeltas(after: TreeModel, before: TreeModel): { delta: Float64Array; max: number } {
  const n = Math.min(after.n, before.n);
  const delta = new Float64Array(n);
  let max = 0;
  for (let i = 0; i < n; i++) {
    const d = netTotal(after, i) - netTotal(before, i);
    delta[i] = Math.abs(d) < 1e-9 ? 0 : d;
    if (Math.abs(delta[i]) > max) max = Math.abs(delta[i]);
  }
  return { delta, max };
}

/** The frame colour of a change: red for more time, blue for less, white-grey for none;
 *  the saturation grows with |Δ| against the largest change. */
export function deltaColor(d: number, max: number): string {
  if (!d || !max) return 'hsl(0, 0%, 88%)';
  const t = Math.min(1, Math.abs(d) / max);
  const light = Math.round(92 - 42 * Math.sqrt(t));
  return d > 0 ? `hsl(4, 85%, ${light}%)` : `hsl(215, 85%, ${light}%)`;
}

export interface MethodChange {
  method: number;        // index into the union dictionary
  afterSelf: number;     // Σ net self time of the method's nodes
  beforeSelf: number;
  afterTotal: number;    // Σ net total time of its outermost nodes (recursion counted once)
  beforeTotal: number;
}

/** The methods whose time changed, largest |Δ| first (`by` self or total net time). */
export function methodChanges(after: TreeModel, before: TreeModel, by: 'self' | 'total' = 'self', top = 50): MethodChange[] {
  const rows = new Map<number, MethodChange>();
  const n = Math.min(after.n, before.n);
  for (let i = 1; i < n; i++) {
    const mth = after.method[i];
    let r = rows.get(mth);
    if (!r) { r = { method: mth, afterSelf: 0, beforeSelf: 0, afterTotal: 0, beforeTotal: 0 }; rows.set(mth, r); }
    r.afterSelf += netSelf(after, i);
    r.beforeSelf += netSelf(before, i);
    let outer = true;
    for (let x = after.parent[i]; x > 0; x = after.parent[x]) if (after.method[x] === mth) { outer = false; break; }
    if (outer) { r.afterTotal += netTotal(after, i); r.beforeTotal += netTotal(before, i); }
  }
  const d = (r: MethodChange) => (by === 'self' ? r.afterSelf - r.beforeSelf : r.afterTotal - r.beforeTotal);
  return [...rows.values()]
    .filter((r) => Math.abs(d(r)) > 1e-9)
    .sort((x, y) => Math.abs(d(y)) - Math.abs(d(x)) || x.method - y.method)
    .slice(0, top);
}
