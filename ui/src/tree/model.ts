// model.ts -- the merged call tree in memory (ui.md §4.1, §4.3, §4.4, §4.7), pure TS.
//
// A tree is a set of flat, index-based typed arrays (no per-node objects): node i has a
// method (index into the tree's dictionary), a parent, its numbers, and a range of its
// children in `kids` (sorted by the §4.1 order). That is what lets a 100 000-node tree open
// in well under a second. The same structure carries the derived views (Outgoing, Incoming,
// Find usages, adjusted durations): they are built by derived.ts as ModelArrays and wrapped
// in a TreeModel the same way.
//
// Also here: the collapse depth of pass-through chains (§4.4), the initial expansion rule
// (§4.3), the visible-row list the virtualised view renders, and in-tree search (§4.7).

import type { TreeParam, TreeParamGroup, TreeResp, TreeNodeJson } from '../lib/api';
import { MethodNames } from './methodname';

export interface ModelArrays {
  methods: string[];
  paramNames: string[];
  n: number;
  method: Int32Array;
  parent: Int32Array;           // -1 for the root (node 0)
  total: Float64Array;
  self: Float64Array;
  susp: Float64Array;
  selfSusp: Float64Array;
  inv: Float64Array;
  calls: Float64Array;
  first?: Float64Array;
  last?: Float64Array;
  params: Map<number, TreeParam[]>;
  pinned?: Uint8Array;           // pinned by an adjustment: stops a skipped chain (§4.4 d)
  paramScale?: Float64Array;     // param group durations are multiplied by this (adjustments)
}

/** Chain states of the collapse-depth state machine (§4.4). Non-negative values are chain
 *  depths; the negative ones say why a node cannot be merged into its first child. */
export const ST_PINNED = -1;   // has params or an adjustment pin
export const ST_FANOUT = -2;   // the first child runs ≥ 5× as often: a fan-out
export const ST_BROKEN = -3;   // the first child does not carry ≥ 90 % of the node

export class TreeModel {
  readonly n: number;
  readonly methods: string[];
  readonly paramNames: string[];
  readonly names: MethodNames;
  readonly method: Int32Array;
  readonly parent: Int32Array;
  readonly total: Float64Array;
  readonly self: Float64Array;
  readonly susp: Float64Array;
  readonly selfSusp: Float64Array;
  readonly inv: Float64Array;
  readonly calls: Float64Array;
  readonly first?: Float64Array;
  readonly last?: Float64Array;
  readonly params: Map<number, TreeParam[]>;
  readonly pinned?: Uint8Array;
  readonly paramScale?: Float64Array;
  readonly bottomUp: boolean;
  readonly kidStart: Int32Array;
  readonly kidCount: Int32Array;
  readonly kids: Int32Array;
  readonly order: Int32Array;     // preorder in sorted child order
  readonly depth: Int32Array;
  readonly state: Int32Array;     // collapse state (§4.4): ≥ 0 depth, < 0 ST_*
  private lowerMethods: string[] | null = null;
  private paramText: Map<number, string> | null = null;

  /** `ownNumbers`: the nodes carry numbers that are not their own subtree's (Find usages:
   *  the target's numbers), so chain skipping derives self times from the totals. */
  constructor(a: ModelArrays, bottomUp = false, names?: MethodNames, ownNumbers = false) {
    this.n = a.n;
    this.methods = a.methods;
    this.paramNames = a.paramNames;
    this.names = names && names.words === a.methods ? names : new MethodNames(a.methods);
    this.method = a.method;
    this.parent = a.parent;
    this.total = a.total;
    this.self = a.self;
    this.susp = a.susp;
    this.selfSusp = a.selfSusp;
    this.inv = a.inv;
    this.calls = a.calls;
    this.first = a.first;
    this.last = a.last;
    this.params = a.params;
    this.pinned = a.pinned;
    this.paramScale = a.paramScale;
    this.bottomUp = bottomUp;
    const n = a.n;
    this.kidStart = new Int32Array(n);
    this.kidCount = new Int32Array(n);
    this.kids = new Int32Array(Math.max(0, n - 1));
    this.linkChildren();
    this.sortChildren();
    this.order = new Int32Array(n);
    this.depth = new Int32Array(n);
    this.computeOrder();
    this.state = new Int32Array(n);
    if (bottomUp) this.collapseBottomUp();
    else this.collapseTopDown(ownNumbers ? this.selfFromTotals() : this.self);
  }

  // ---- structure -------------------------------------------------------------------------

  private linkChildren(): void {
    const { n, parent, kidStart, kidCount, kids } = this;
    for (let i = 1; i < n; i++) kidCount[parent[i]]++;
    let s = 0;
    for (let i = 0; i < n; i++) { kidStart[i] = s; s += kidCount[i]; }
    const fill = new Int32Array(n);
    for (let i = 1; i < n; i++) {
      const p = parent[i];
      kids[kidStart[p] + fill[p]++] = i;
    }
  }

  /** §4.1 Ordering: total, self, suspension, self suspension, invocations + calls,
   *  invocations (all descending), then method text. Bottom-up views put self first. */
  compare = (x: number, y: number): number => {
    const { total: T, self: S, susp: U, selfSusp: V, inv: I, calls: C } = this;
    let d: number;
    if (this.bottomUp) {
      if ((d = S[y] - S[x])) return d;
      if ((d = T[y] - T[x])) return d;
    } else {
      if ((d = T[y] - T[x])) return d;
      if ((d = S[y] - S[x])) return d;
    }
    if ((d = U[y] - U[x])) return d;
    if ((d = V[y] - V[x])) return d;
    if ((d = I[y] + C[y] - I[x] - C[x])) return d;
    if ((d = I[y] - I[x])) return d;
    const a = this.methods[this.method[x]];
    const b = this.methods[this.method[y]];
    return a < b ? -1 : a > b ? 1 : x - y;
  };

  private sortChildren(): void {
    const { n, kidStart, kidCount, kids, compare } = this;
    for (let i = 0; i < n; i++) {
      const c = kidCount[i];
      if (c < 2) continue;
      const s = kidStart[i];
      // the server already sends children sorted: check before sorting
      let sorted = true;
      for (let j = s + 1; j < s + c; j++) if (compare(kids[j - 1], kids[j]) > 0) { sorted = false; break; }
      if (!sorted) kids.subarray(s, s + c).sort(compare);
    }
  }

  private computeOrder(): void {
    const { n, kidStart, kidCount, kids, order, depth } = this;
    if (n === 0) return;
    const stack = new Int32Array(n);
    let sp = 0;
    let o = 0;
    stack[sp++] = 0;
    while (sp > 0) {
      const i = stack[--sp];
      order[o++] = i;
      const s = kidStart[i];
      for (let j = s + kidCount[i] - 1; j >= s; j--) {
        const c = kids[j];
        depth[c] = depth[i] + 1;
        stack[sp++] = c;
      }
    }
  }

  firstKid(i: number): number {
    return this.kidCount[i] > 0 ? this.kids[this.kidStart[i]] : -1;
  }

  hasParams(i: number): boolean {
    return this.params.has(i);
  }

  /** The node shown when a skipped chain of node i is expanded: d first-child steps down. */
  skipTarget(i: number): number {
    let d = this.state[i];
    let x = i;
    while (d-- > 0) x = this.firstKid(x);
    return x;
  }

  collapseDepth(i: number): number {
    return Math.max(0, this.state[i]);
  }

  // ---- §4.4 collapse depth -----------------------------------------------------------------

  /** Top-down: walks children before parents; a node mergeable into its first child c gets
   *  c's depth + 1 (a non-mergeable c counts as 0: the chain restarts), else a negative
   *  state that says why the chain is cut here. */
  private selfFromTotals(): Float64Array {
    const s = Float64Array.from(this.total);
    for (let i = 1; i < this.n; i++) s[this.parent[i]] -= this.total[i];
    return s;
  }

  private collapseTopDown(S: Float64Array): void {
    const { n, order, state, total: T, inv: I, calls: C, pinned } = this;
    for (let k = n - 1; k >= 0; k--) {
      const i = order[k];
      const c = this.firstKid(i);
      if (c < 0) { state[i] = 0; continue; }
      if (this.params.has(i) || (pinned && pinned[i])) { state[i] = ST_PINNED; continue; }
      const t = T[i];
      // (a) the first child's self plus the other siblings' totals stay within 10 %
      let ok = ((t - S[i]) - (T[c] - S[c])) * 10 <= t;
      // (b) zero-duration nodes compare executions instead
      if (ok && t === 0) ok = (C[i] - C[c] + I[c]) * 10 < C[i] + I[i];
      if (!ok) { state[i] = ST_BROKEN; continue; }
      // (c) the child is not a fan-out
      if (!(I[i] === 0 || I[i] * 5 > I[c])) { state[i] = ST_FANOUT; continue; }
      state[i] = Math.max(0, state[c]) + 1;
    }
  }

  /** Bottom-up views use self time, compare invocations for zero-self nodes, and never
   *  merge a node whose parent's calls exceed 5× its own calls. */
  private collapseBottomUp(): void {
    const { n, order, state, self: S, inv: I, calls: C, parent } = this;
    for (let k = n - 1; k >= 0; k--) {
      const i = order[k];
      const c = this.firstKid(i);
      if (c < 0) { state[i] = 0; continue; }
      if (this.params.has(i)) { state[i] = ST_PINNED; continue; }
      const p = parent[i];
      if (p >= 0 && C[p] > 5 * C[i]) { state[i] = ST_FANOUT; continue; }
      const s = S[i];
      const ok = s === 0 ? (I[i] - I[c]) * 10 <= I[i] : (s - S[c]) * 10 <= s;
      if (!ok) { state[i] = ST_BROKEN; continue; }
      state[i] = Math.max(0, state[c]) + 1;
    }
  }

  // ---- paths (URL state: marked rows, flame zoom) ------------------------------------------

  /** Method indices from the root down to i, joined with '.'; unique because children of
   *  one parent never share a method. */
  pathOf(i: number): string {
    const parts: number[] = [];
    for (let x = i; x >= 0; x = this.parent[x]) parts.push(this.method[x]);
    return parts.reverse().join('.');
  }

  findPath(path: string): number {
    if (!path) return -1;
    const parts = path.split('.').map(Number);
    if (this.n === 0 || parts[0] !== this.method[0]) return -1;
    let x = 0;
    for (let k = 1; k < parts.length; k++) {
      let next = -1;
      const s = this.kidStart[x];
      for (let j = s; j < s + this.kidCount[x]; j++) if (this.method[this.kids[j]] === parts[k]) { next = this.kids[j]; break; }
      if (next < 0) return -1;
      x = next;
    }
    return x;
  }

  // ---- search support --------------------------------------------------------------------

  methodLower(m: number): string {
    if (!this.lowerMethods) this.lowerMethods = this.methods.map((s) => s.toLowerCase());
    return this.lowerMethods[m];
  }

  /** Lower-cased param names and values of node i (binds and variants included). */
  paramTextOf(i: number): string {
    if (!this.paramText) this.paramText = new Map();
    let t = this.paramText.get(i);
    if (t === undefined) {
      const parts: string[] = [];
      collectParamText(this.params.get(i) ?? [], this.paramNames, parts);
      t = parts.join('\n').toLowerCase();
      this.paramText.set(i, t);
    }
    return t;
  }
}

function collectParamText(ps: TreeParam[], names: string[], out: string[]): void {
  for (const p of ps) {
    out.push(names[p.param] ?? '');
    for (const g of p.groups) {
      out.push(g.value);
      if (g.variants) for (const v of g.variants) out.push(v.value);
      if (g.params) collectParamText(g.params, names, out);
    }
  }
}

// ---- building from the API answer ----------------------------------------------------------

function grow(a: Float64Array, n: number): Float64Array<ArrayBuffer> {
  const b = new Float64Array(n);
  b.set(a);
  return b;
}
function growI(a: Int32Array, n: number): Int32Array<ArrayBuffer> {
  const b = new Int32Array(n);
  b.set(a);
  return b;
}

/** Flattens the API tree (preorder, iterative: deep trees must not overflow the stack). */
export function arraysFromResp(resp: TreeResp): ModelArrays {
  let cap = Math.max(16, (resp.nodes | 0) + 1);
  let method = new Int32Array(cap), parent = new Int32Array(cap);
  let total = new Float64Array(cap), self = new Float64Array(cap), susp = new Float64Array(cap);
  let selfSusp = new Float64Array(cap), inv = new Float64Array(cap), calls = new Float64Array(cap);
  let first = new Float64Array(cap), last = new Float64Array(cap);
  const params = new Map<number, TreeParam[]>();
  const nodes: TreeNodeJson[] = [resp.root];
  const parents: number[] = [-1];
  let n = 0;
  while (nodes.length) {
    const x = nodes.pop()!;
    const p = parents.pop()!;
    if (n === cap) {
      cap *= 2;
      method = growI(method, cap); parent = growI(parent, cap);
      total = grow(total, cap); self = grow(self, cap); susp = grow(susp, cap); selfSusp = grow(selfSusp, cap);
      inv = grow(inv, cap); calls = grow(calls, cap); first = grow(first, cap); last = grow(last, cap);
    }
    const i = n++;
    method[i] = x.method;
    parent[i] = p;
    total[i] = x.total;
    self[i] = x.self;
    susp[i] = x.suspension;
    selfSusp[i] = x.self_suspension;
    inv[i] = x.invocations;
    calls[i] = x.calls;
    first[i] = x.first ?? 0;
    last[i] = x.last ?? 0;
    if (x.params && x.params.length) params.set(i, x.params);
    const ch = x.children;
    if (ch) for (let j = ch.length - 1; j >= 0; j--) { nodes.push(ch[j]); parents.push(i); }
  }
  return {
    methods: resp.methods, paramNames: resp.params, n,
    method: method.subarray(0, n), parent: parent.subarray(0, n),
    total: total.subarray(0, n), self: self.subarray(0, n), susp: susp.subarray(0, n),
    selfSusp: selfSusp.subarray(0, n), inv: inv.subarray(0, n), calls: calls.subarray(0, n),
    first: first.subarray(0, n), last: last.subarray(0, n), params,
  };
}

export function modelFromResp(resp: TreeResp): TreeModel {
  return new TreeModel(arraysFromResp(resp));
}

/** True when some param group of the tree could not be resolved by the server (§4.2 banner). */
export function hasUnresolved(m: TreeModel): boolean {
  const walk = (ps: TreeParam[]): boolean => ps.some((p) => p.groups.some((g) => g.unresolved || (g.params ? walk(g.params) : false)));
  for (const ps of m.params.values()) if (walk(ps)) return true;
  return false;
}

// ---- §4.3 initial expansion ----------------------------------------------------------------

/** Opens `from` and, recursively, every node whose total exceeds 10 % of from's total (for
 *  a zero-duration `from`: whose invocations + calls exceed 10 % of from's). Stops after
 *  `budget` nodes; returns false when it had to stop (the "expansion limited" banner). */
export function autoExpand(m: TreeModel, from: number, expanded: Uint8Array, budget = 5000): boolean {
  const zero = m.total[from] === 0;
  const ref = zero ? m.inv[from] + m.calls[from] : m.total[from];
  expanded[from] = 1;
  const stack = [from];
  let opened = 1;
  while (stack.length) {
    const i = stack.pop()!;
    const s = m.kidStart[i];
    for (let j = s; j < s + m.kidCount[i]; j++) {
      const c = m.kids[j];
      const v = zero ? m.inv[c] + m.calls[c] : m.total[c];
      if (v * 10 <= ref || (m.kidCount[c] === 0 && !m.params.has(c))) continue;
      if (expanded[c]) continue;
      if (++opened > budget) return false;
      expanded[c] = 1;
      stack.push(c);
    }
  }
  return true;
}

// ---- §4.7 search -----------------------------------------------------------------------------

export interface SearchResult {
  q: string;
  match: Uint8Array;     // node matches
  below: Int32Array;     // matches in the node's subtree, itself included
  count: number;
}

/** Case-insensitive substring over method strings, param names and values. */
export function searchTree(m: TreeModel, query: string): SearchResult | null {
  const q = query.trim().toLowerCase();
  if (!q) return null;
  const methodHit = new Int8Array(m.methods.length).fill(-1);
  const match = new Uint8Array(m.n);
  const below = new Int32Array(m.n);
  let count = 0;
  for (let i = 0; i < m.n; i++) {
    const mi = m.method[i];
    let h = methodHit[mi];
    if (h < 0) { h = m.methodLower(mi).includes(q) ? 1 : 0; methodHit[mi] = h; }
    if (h || (m.params.has(i) && m.paramTextOf(i).includes(q))) { match[i] = 1; count++; }
  }
  for (let k = m.n - 1; k >= 0; k--) {
    const i = m.order[k];
    below[i] += match[i];
    const p = m.parent[i];
    if (p >= 0) below[p] += below[i];
  }
  return { q, match, below, count };
}

// ---- visible rows ------------------------------------------------------------------------------

export interface ParamRow {
  node: number;
  key: string;            // stable id of the row for its open state
  name: string;
  value: string;
  duration: number;
  count: number;
  kind: 'group' | 'variant';
  group?: TreeParamGroup;
  subItems: number;       // variants + nested groups
  open: boolean;
}

export interface ViewState {
  expanded: Uint8Array;
  revealed: Uint8Array;             // skipped chain shown level by level
  paramOpen: Map<string, boolean>;  // explicit open/closed of param groups
}

export function newViewState(m: TreeModel): ViewState {
  return { expanded: new Uint8Array(m.n), revealed: new Uint8Array(m.n), paramOpen: new Map() };
}

export interface Rows {
  count: number;
  item: Int32Array;      // ≥ 0: node; < 0: -(k + 1) = params[k]
  indent: Int32Array;
  params: ParamRow[];
}

/** Sub-items of a group: variants (when they say more than the representative) + nested. */
function subItemsOf(g: TreeParamGroup): number {
  let k = 0;
  if (g.variants && (g.variants.length > 1 || (g.variants.length === 1 && g.variants[0].value !== g.value))) k += g.variants.length;
  if (g.params) for (const p of g.params) k += p.groups.length;
  return k;
}

export function isExpandable(m: TreeModel, i: number): boolean {
  return m.kidCount[i] > 0 || m.params.has(i);
}

/** When the chain under i is skipped but a search match sits among the hidden levels (or
 *  their side branches), the chain is revealed so the match can be seen (§4.4). */
function revealForSearch(s: SearchResult, i: number, target: number): boolean {
  return s.below[i] - s.below[target] - s.match[i] > 0;
}

/** The flat list of rows a tree view renders: nodes, their params right under them, then
 *  their children (skipped chains replaced by their target; search results first). */
export function buildRows(m: TreeModel, st: ViewState, s: SearchResult | null, rootShown = true): Rows {
  const item: number[] = [];
  const indent: number[] = [];
  const params: ParamRow[] = [];
  const stackN: number[] = [];
  const stackI: number[] = [];
  if (m.n === 0) return { count: 0, item: new Int32Array(0), indent: new Int32Array(0), params };
  if (rootShown) { stackN.push(0); stackI.push(0); }
  else {
    const s0 = m.kidStart[0];
    for (let j = s0 + m.kidCount[0] - 1; j >= s0; j--) { stackN.push(m.kids[j]); stackI.push(0); }
  }
  const tmp: number[] = [];
  while (stackN.length) {
    const i = stackN.pop()!;
    const ind = stackI.pop()!;
    item.push(i);
    indent.push(ind);
    const open = st.expanded[i] === 1 || (s !== null && s.below[i] - s.match[i] > 0);
    if (!open) continue;
    const ps = m.params.get(i);
    if (ps) pushParamRows(m, st, i, ps, `${i}`, ind + 1, item, indent, params);
    if (m.kidCount[i] === 0) continue;
    // children to show: the skip target, or the real children
    tmp.length = 0;
    // depth 1 would only hide the small siblings of the first child: no skip then
    const d = m.state[i];
    let reveal = st.revealed[i] === 1 || d <= 1;
    const target = d > 1 ? m.skipTarget(i) : i;
    if (!reveal && s !== null && revealForSearch(s, i, target)) reveal = true;
    if (!reveal) tmp.push(target);
    else {
      const s0 = m.kidStart[i];
      for (let j = s0; j < s0 + m.kidCount[i]; j++) tmp.push(m.kids[j]);
      if (s !== null) stableMatchFirst(tmp, s);
    }
    for (let j = tmp.length - 1; j >= 0; j--) { stackN.push(tmp[j]); stackI.push(ind + 1); }
  }
  return { count: item.length, item: Int32Array.from(item), indent: Int32Array.from(indent), params };
}

function stableMatchFirst(a: number[], s: SearchResult): void {
  const hit = a.filter((x) => s.below[x] > 0);
  if (hit.length === 0 || hit.length === a.length) return;
  const miss = a.filter((x) => s.below[x] === 0);
  a.length = 0;
  a.push(...hit, ...miss);
}

function pushParamRows(m: TreeModel, st: ViewState, node: number, ps: TreeParam[], keyBase: string, ind: number,
                       item: number[], indent: number[], out: ParamRow[]): void {
  const scale = m.paramScale ? m.paramScale[node] : 1;
  for (let pi = 0; pi < ps.length; pi++) {
    const p = ps[pi];
    const name = m.paramNames[p.param] ?? `#${p.param}`;
    for (let gi = 0; gi < p.groups.length; gi++) {
      const g = p.groups[gi];
      const key = `${keyBase}/${p.param}.${gi}`;
      const sub = subItemsOf(g);
      const open = sub > 0 && (st.paramOpen.get(key) ?? sub <= 5);
      out.push({ node, key, name, value: g.value, duration: g.duration * scale, count: g.count, kind: 'group', group: g, subItems: sub, open });
      item.push(-out.length);
      indent.push(ind);
      if (!open) continue;
      if (g.variants && sub > 0) {
        for (let vi = 0; vi < g.variants.length; vi++) {
          const v = g.variants[vi];
          if (g.variants.length === 1 && v.value === g.value) continue;
          out.push({ node, key: `${key}/v${vi}`, name, value: v.value, duration: v.duration * scale, count: v.count, kind: 'variant', subItems: 0, open: false });
          item.push(-out.length);
          indent.push(ind + 1);
        }
      }
      if (g.params) pushParamRows(m, st, node, g.params, key, ind + 1, item, indent, out);
    }
  }
}
