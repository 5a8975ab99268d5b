// derived.ts -- client-side operations on a merged tree (ui.md §4.5, §4.6), pure TS:
// adjusted durations (what-if), categories, the derived trees Outgoing calls, Incoming calls
// and Find usages, the Hotspots flat profile, the Parameters summary and the SQL signature.
// Everything works on TreeModel arrays and returns new models; the base tree is never
// modified, so re-applying a rule set always starts from the server's numbers.

import type { TreeParam, TreeParamGroup } from '../lib/api';
import { TreeModel, type ModelArrays } from './model';

// ---- rules (adjust duration, categories) ----------------------------------------------------

export interface PatternRule {
  pattern: string;
  re: RegExp;
  line: number;        // 1-based line in the text
}
export interface AdjustRule extends PatternRule { factor: number; text: string }
export interface CategoryRule extends PatternRule { name: string; children: boolean }

/** `*` matches any text, everything else is literal; the pattern may match anywhere. */
export function patternRegex(p: string): RegExp {
  const esc = p.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  return new RegExp(esc, 's');
}

/** `1/10`, `2`, `0.5`; null when not a non-negative finite number or fraction. */
export function parseFactor(s: string): number | null {
  let m = /^(\d+(?:\.\d+)?|\.\d+)$/.exec(s);
  if (m) return Number(m[1]);
  m = /^(\d+(?:\.\d+)?)\/(\d+(?:\.\d+)?)$/.exec(s);
  if (m && Number(m[2]) !== 0) return Number(m[1]) / Number(m[2]);
  return null;
}

function splitRuleLine(raw: string): [string, string] | null {
  const m = /^(\S+)\s+(.+?)\s*$/.exec(raw.trim());
  return m ? [m[1], m[2]] : null;
}

export function parseAdjust(text: string): { rules: AdjustRule[]; invalid: string[] } {
  const rules: AdjustRule[] = [];
  const invalid: string[] = [];
  text.split('\n').forEach((raw, k) => {
    const t = raw.trim();
    if (!t || t.startsWith('#')) return;
    const sp = splitRuleLine(t);
    const f = sp ? parseFactor(sp[0]) : null;
    if (!sp || f === null) { invalid.push(`line ${k + 1}: ${t}`); return; }
    rules.push({ factor: f, pattern: sp[1], re: patternRegex(sp[1]), line: k + 1, text: t });
  });
  return { rules, invalid };
}

export function parseCategories(text: string): { rules: CategoryRule[]; invalid: string[] } {
  const rules: CategoryRule[] = [];
  const invalid: string[] = [];
  text.split('\n').forEach((raw, k) => {
    const t = raw.trim();
    if (!t || t.startsWith('#')) return;
    const sp = splitRuleLine(t);
    if (!sp) { invalid.push(`line ${k + 1}: ${t}`); return; }
    const children = sp[1].startsWith('>');
    const pattern = children ? sp[1].slice(1).trim() : sp[1];
    if (!pattern) { invalid.push(`line ${k + 1}: ${t}`); return; }
    rules.push({ name: sp[0], pattern, re: patternRegex(pattern), line: k + 1, children });
  });
  return { rules, invalid };
}

/** Per dictionary entry: the index of the rule with the longest matching pattern, or -1. */
export function bestRules<R extends PatternRule>(methods: string[], rules: R[]): Int32Array {
  const best = new Int32Array(methods.length).fill(-1);
  if (!rules.length) return best;
  for (let m = 0; m < methods.length; m++) {
    let bl = -1;
    for (let r = 0; r < rules.length; r++) {
      const p = rules[r];
      if (p.pattern.length > bl && p.re.test(methods[m])) { best[m] = r; bl = p.pattern.length; }
    }
  }
  return best;
}

// ---- adjust duration (§4.5) ----------------------------------------------------------------

/** Walking down from the root with k = 1, a matched node multiplies k by its factor; each
 *  node's self, self suspension and invocations are scaled by its k and the totals rebuilt
 *  bottom-up. Matched nodes are pinned (they stop skipped chains). Param group durations
 *  are scaled by new total / old total of their node. */
export function applyAdjust(m: TreeModel, rules: AdjustRule[]): TreeModel {
  if (!rules.length) return m;
  const best = bestRules(m.methods, rules);
  const n = m.n;
  const k = new Float64Array(n);
  const pinned = new Uint8Array(n);
  const self = new Float64Array(n), selfSusp = new Float64Array(n), inv = new Float64Array(n);
  const total = new Float64Array(n), susp = new Float64Array(n), calls = new Float64Array(n);
  for (let o = 0; o < n; o++) {
    const i = m.order[o];
    const p = m.parent[i];
    let kk = p >= 0 ? k[p] : 1;
    const r = best[m.method[i]];
    if (r >= 0) { kk *= rules[r].factor; pinned[i] = 1; }
    k[i] = kk;
    self[i] = total[i] = m.self[i] * kk;
    selfSusp[i] = susp[i] = m.selfSusp[i] * kk;
    inv[i] = m.inv[i] * kk;
  }
  for (let o = n - 1; o > 0; o--) {
    const i = m.order[o];
    const p = m.parent[i];
    total[p] += total[i];
    susp[p] += susp[i];
    calls[p] += inv[i] + calls[i];
  }
  const paramScale = new Float64Array(n);
  for (let i = 0; i < n; i++) paramScale[i] = m.total[i] > 0 ? total[i] / m.total[i] : 1;
  return new TreeModel({
    methods: m.methods, paramNames: m.paramNames, n, method: m.method, parent: m.parent,
    total, self, susp, selfSusp, inv, calls, first: m.first, last: m.last, params: m.params, pinned, paramScale,
  }, m.bottomUp, m.names);
}

// ---- categories (§4.5) -----------------------------------------------------------------------

export interface Categories {
  names: string[];       // category index -> name
  cat: Int32Array;       // node -> category index, -1 = unsorted
}

/** A category applies to the matched node and its whole subtree until a deeper match sets
 *  another; a `>` rule applies to the children (and below) only. Longest pattern wins. */
export function applyCategories(m: TreeModel, rules: CategoryRule[]): Categories | null {
  if (!rules.length) return null;
  const names: string[] = [];
  const idx = new Map<string, number>();
  const ruleCat = rules.map((r) => {
    let c = idx.get(r.name);
    if (c === undefined) { c = names.length; names.push(r.name); idx.set(r.name, c); }
    return c;
  });
  const best = bestRules(m.methods, rules);
  const cat = new Int32Array(m.n);
  const down = new Int32Array(m.n);
  for (let o = 0; o < m.n; o++) {
    const i = m.order[o];
    const p = m.parent[i];
    const inherited = p >= 0 ? down[p] : -1;
    const r = best[m.method[i]];
    if (r < 0) { cat[i] = down[i] = inherited; continue; }
    if (rules[r].children) { cat[i] = inherited; down[i] = ruleCat[r]; }
    else cat[i] = down[i] = ruleCat[r];
  }
  return { names, cat };
}

/** Pastel colour of category k: hue = k × 150° mod 360, full saturation, 95 % lightness. */
export function categoryColor(k: number): string {
  return `hsl(${(k * 150) % 360}, 100%, 95%)`;
}

// ---- building derived trees -------------------------------------------------------------------

/** Growable node arrays for a derived tree; children found by (parent, method). */
class Builder {
  n = 0;
  method: number[] = [];
  parent: number[] = [];
  total: number[] = [];
  self: number[] = [];
  susp: number[] = [];
  selfSusp: number[] = [];
  inv: number[] = [];
  calls: number[] = [];
  paramLists = new Map<number, TreeParam[][]>();
  private index = new Map<number, number>();
  constructor(private readonly nm: number) {}

  add(parent: number, method: number): number {
    const i = this.n++;
    this.method.push(method);
    this.parent.push(parent);
    this.total.push(0); this.self.push(0); this.susp.push(0); this.selfSusp.push(0);
    this.inv.push(0); this.calls.push(0);
    if (parent >= 0) this.index.set(parent * this.nm + method, i);
    return i;
  }

  child(parent: number, method: number): number {
    const i = this.index.get(parent * this.nm + method);
    return i === undefined ? this.add(parent, method) : i;
  }

  addParams(i: number, ps: TreeParam[] | undefined): void {
    if (!ps) return;
    const l = this.paramLists.get(i);
    if (l) l.push(ps);
    else this.paramLists.set(i, [ps]);
  }

  arrays(base: TreeModel): ModelArrays {
    const params = new Map<number, TreeParam[]>();
    for (const [i, lists] of this.paramLists) params.set(i, lists.length === 1 ? lists[0] : mergeParams(lists));
    return {
      methods: base.methods, paramNames: base.paramNames, n: this.n,
      method: Int32Array.from(this.method), parent: Int32Array.from(this.parent),
      total: Float64Array.from(this.total), self: Float64Array.from(this.self),
      susp: Float64Array.from(this.susp), selfSusp: Float64Array.from(this.selfSusp),
      inv: Float64Array.from(this.inv), calls: Float64Array.from(this.calls), params,
    };
  }

  /** total = self + Σ children, suspension likewise, calls = Σ children's executions.
   *  Children always have larger indexes than their parent here. */
  rebuildTotals(): void {
    for (let i = 0; i < this.n; i++) { this.total[i] = this.self[i]; this.susp[i] = this.selfSusp[i]; this.calls[i] = 0; }
    for (let i = this.n - 1; i > 0; i--) {
      const p = this.parent[i];
      this.total[p] += this.total[i];
      this.susp[p] += this.susp[i];
      this.calls[p] += this.inv[i] + this.calls[i];
    }
  }
}

/** Merges param lists of several nodes: groups by (param, value), durations and counts
 *  summed, variants and nested params merged the same way. */
export function mergeParams(lists: TreeParam[][]): TreeParam[] {
  const byParam = new Map<number, Map<string, { g: TreeParamGroup; vs: Map<string, { value: string; duration: number; count: number }>; nested: TreeParam[][] }>>();
  for (const ps of lists) for (const p of ps) {
    let groups = byParam.get(p.param);
    if (!groups) { groups = new Map(); byParam.set(p.param, groups); }
    for (const g of p.groups) {
      let acc = groups.get(g.value);
      if (!acc) {
        acc = { g: { value: g.value, duration: 0, count: 0, unresolved: g.unresolved, trimmed: g.trimmed, length: g.length, ref: g.ref, key: g.key, source: g.source }, vs: new Map(), nested: [] };
        groups.set(g.value, acc);
      }
      acc.g.duration += g.duration;
      acc.g.count += g.count;
      for (const v of g.variants ?? []) {
        const x = acc.vs.get(v.value);
        if (x) { x.duration += v.duration; x.count += v.count; }
        else acc.vs.set(v.value, { ...v });
      }
      if (g.params) acc.nested.push(g.params);
    }
  }
  const out: TreeParam[] = [];
  for (const [param, groups] of byParam) {
    const gs: TreeParamGroup[] = [];
    for (const acc of groups.values()) {
      if (acc.vs.size) acc.g.variants = [...acc.vs.values()].sort((a, b) => b.duration - a.duration);
      if (acc.nested.length) acc.g.params = mergeParams(acc.nested);
      gs.push(acc.g);
    }
    gs.sort(groupOrder);
    out.push({ param, groups: gs });
  }
  return out;
}

function groupOrder(a: { value: string; duration: number }, b: { value: string; duration: number }): number {
  const ao = a.value === '::other' ? 1 : 0;
  const bo = b.value === '::other' ? 1 : 0;
  return ao - bo || b.duration - a.duration;
}

/** Does node i have an ancestor running the same method (a recursive occurrence)? */
function nestedOccurrence(m: TreeModel, i: number, target: number): boolean {
  for (let a = m.parent[i]; a >= 0; a = m.parent[a]) if (m.method[a] === target) return true;
  return false;
}

/** Outgoing calls (§4.5): every occurrence of the method merged into one root (recursive
 *  occurrences too), with the combined subtree below; totals recomputed. null if absent. */
export function outgoing(m: TreeModel, target: number): TreeModel | null {
  const b = new Builder(m.methods.length);
  const map = new Int32Array(m.n).fill(-1);
  let found = false;
  for (let o = 0; o < m.n; o++) {
    const i = m.order[o];
    const p = m.parent[i];
    let x: number;
    if (m.method[i] === target) {
      if (!found) { b.add(-1, target); found = true; }
      x = 0;
    } else if (p >= 0 && map[p] >= 0) x = b.child(map[p], m.method[i]);
    else continue;
    map[i] = x;
    b.self[x] += m.self[i];
    b.selfSusp[x] += m.selfSusp[i];
    b.inv[x] += m.inv[i];
    b.addParams(x, m.params.get(i));
  }
  if (!found) return null;
  b.rebuildTotals();
  return new TreeModel(b.arrays(m), false, m.names);
}

/** Incoming calls (§4.5), bottom-up: the root is the method with the combined numbers of
 *  all its occurrences, its children its callers, up to the tree root. Every node on a path
 *  carries the target's numbers that arrived through it; a recursive occurrence adds only
 *  its self numbers (its total is inside the outer one). `calls` on a caller = the
 *  caller's own invocations. `only` restricts the occurrences (Hotspots by category). */
export function incoming(m: TreeModel, target: number, only?: (node: number) => boolean): TreeModel | null {
  const b = new Builder(m.methods.length);
  let found = false;
  for (let i = 0; i < m.n; i++) {
    if (m.method[i] !== target || (only && !only(i))) continue;
    if (!found) { b.add(-1, target); found = true; }
    const nested = nestedOccurrence(m, i, target);
    const t = nested ? 0 : m.total[i];
    const u = nested ? 0 : m.susp[i];
    let x = 0;
    addNumbers(b, x, t, m.self[i], u, m.selfSusp[i], m.inv[i]);
    for (let a = m.parent[i]; a >= 0; a = m.parent[a]) {
      x = b.child(x, m.method[a]);
      addNumbers(b, x, t, m.self[i], u, m.selfSusp[i], m.inv[i]);
      b.calls[x] += m.inv[a];
    }
  }
  if (!found) return null;
  return new TreeModel(b.arrays(m), true, m.names);
}

function addNumbers(b: Builder, x: number, total: number, self: number, susp: number, selfSusp: number, inv: number): void {
  b.total[x] += total;
  b.self[x] += self;
  b.susp[x] += susp;
  b.selfSusp[x] += selfSusp;
  b.inv[x] += inv;
}

/** Find usages (§4.5), top-down: the tree pruned to the paths that lead to the method; each
 *  path node carries the target's numbers beneath it and `calls` = its own invocations. */
export function usages(m: TreeModel, target: number): TreeModel | null {
  const b = new Builder(m.methods.length);
  const map = new Int32Array(m.n).fill(-1);
  const path: number[] = [];
  let found = false;
  for (let o = 0; o < m.n; o++) {
    const i = m.order[o];
    if (m.method[i] !== target) continue;
    found = true;
    const nested = nestedOccurrence(m, i, target);
    const t = nested ? 0 : m.total[i];
    const u = nested ? 0 : m.susp[i];
    path.length = 0;
    for (let a = i; a >= 0; a = m.parent[a]) path.push(a);
    for (let k = path.length - 1; k >= 0; k--) {
      const a = path[k];
      if (map[a] < 0) {
        map[a] = b.add(k === path.length - 1 ? -1 : map[m.parent[a]], m.method[a]);
        b.calls[map[a]] = m.inv[a];
      }
      addNumbers(b, map[a], t, m.self[i], u, m.selfSusp[i], m.inv[i]);
    }
    b.addParams(map[i], m.params.get(i));
  }
  if (!found) return null;
  return new TreeModel(b.arrays(m), false, m.names, true);
}

// ---- Hotspots (§4.6) --------------------------------------------------------------------------

export interface HotRow {
  method: number;
  cat: number;           // category index or -1
  self: number;
  selfSusp: number;
  inv: number;
  total: number;         // outermost occurrences only
}

/** Per method (and category when categories exist): Σ self, Σ self suspension,
 *  Σ invocations; Σ total only where the method is not already on the stack. Sorted by
 *  self (or total); methods with 0 ms self are counted in `zero` and left out. */
export function hotspots(m: TreeModel, cats: Categories | null, by: 'self' | 'total' = 'self'): { rows: HotRow[]; zero: number } {
  const M = m.methods.length;
  const rows = new Map<number, HotRow>();
  const onStack = new Int32Array(M);
  const stack: number[] = [];
  for (let o = 0; o < m.n; o++) {
    const i = m.order[o];
    const d = m.depth[i];
    while (stack.length > d) onStack[m.method[stack.pop()!]]--;
    const mi = m.method[i];
    const c = cats ? cats.cat[i] : -1;
    const key = (c + 1) * M + mi;
    let r = rows.get(key);
    if (!r) { r = { method: mi, cat: c, self: 0, selfSusp: 0, inv: 0, total: 0 }; rows.set(key, r); }
    r.self += m.self[i];
    r.selfSusp += m.selfSusp[i];
    r.inv += m.inv[i];
    if (onStack[mi] === 0) r.total += m.total[i];
    onStack[mi]++;
    stack.push(i);
  }
  const all = [...rows.values()];
  const shown = all.filter((r) => Math.round(r.self) > 0);
  shown.sort(by === 'total' ? (a, b) => b.total - a.total || b.self - a.self : (a, b) => b.self - a.self || b.total - a.total);
  return { rows: shown, zero: all.length - shown.length };
}

// ---- Parameters summary (§4.6) --------------------------------------------------------------

export interface SumGroup {
  name: string;
  value: string;         // representative (first seen)
  duration: number;
  count: number;
  unresolved: boolean;
  trimmed: boolean;
  key?: string;          // a trimmed value's key (the full value endpoint)
  source?: string;       // the call to ask for it (trees that list no calls: a profile)
  variants: { value: string; duration: number; count: number; key?: string; source?: string }[];
  nested: SumParam[];
}
export interface SumParam { name: string; duration: number; groups: SumGroup[] }

const SQL_NAMES = new Set(['sql', 'sql.monitor', 'mdx', 'cassandra.query', 'binds']);

/** The exact-text view of a summary (§4.6, §11 item 8): a group that stands for several
 *  texts (SQL differing only in literals) becomes one group per text with its own duration
 *  and count; its binds stay with the shape, so they are not repeated under each text. */
export function exactGroups(ps: SumParam[]): SumParam[] {
  return ps.map((p) => ({
    ...p,
    groups: p.groups.flatMap((g) => (g.variants.length
      // each text with its own key (and call) for "view full value", not the shape's representative's
      ? g.variants.map((v) => ({ ...g, value: v.value, duration: v.duration, count: v.count, key: v.key, source: v.source, trimmed: !!v.key, variants: [], nested: [] }))
      : [{ ...g, nested: exactGroups(g.nested) }]))
      .sort((a, b) => b.duration - a.duration),
  }));
}

export function isSqlLike(name: string, g?: TreeParamGroup): boolean {
  return SQL_NAMES.has(name) || !!(g && g.variants && g.variants.length);
}

interface GAcc { g: SumGroup; vs: Map<string, { value: string; duration: number; count: number; key?: string; source?: string }>; nested: Map<string, Map<string, GAcc>> }

/** The call's params over the whole tree: by (name, value), SQL-like values by signature
 *  with their texts (top 20 + ::other), binds nested under their SQL. */
export function paramsSummary(m: TreeModel): SumParam[] {
  const root = new Map<string, Map<string, GAcc>>();
  const add = (into: Map<string, Map<string, GAcc>>, ps: TreeParam[], scale: number) => {
    for (const p of ps) {
      const name = m.paramNames[p.param] ?? `#${p.param}`;
      let groups = into.get(name);
      if (!groups) { groups = new Map(); into.set(name, groups); }
      for (const g of p.groups) {
        const sql = isSqlLike(name, g);
        const key = g.value === '::other' ? '::other' : sql ? 's:' + sqlSignature(g.value) : 'v:' + g.value;
        let acc = groups.get(key);
        if (!acc) {
          acc = { g: { name, value: g.value, duration: 0, count: 0, unresolved: !!g.unresolved, trimmed: !!g.trimmed, key: g.key, source: g.source, variants: [], nested: [] }, vs: new Map(), nested: new Map() };
          groups.set(key, acc);
        }
        acc.g.duration += g.duration * scale;
        acc.g.count += g.count;
        if (sql) {
          const vs = g.variants && g.variants.length ? g.variants : [{ value: g.value, duration: g.duration, count: g.count, key: g.key, source: g.source }];
          for (const v of vs) {
            const x = acc.vs.get(v.value);
            if (x) { x.duration += v.duration * scale; x.count += v.count; }
            else acc.vs.set(v.value, { value: v.value, duration: v.duration * scale, count: v.count, key: v.key, source: v.source });
          }
        }
        if (g.params) add(acc.nested, g.params, scale);
      }
    }
  };
  for (const [i, ps] of m.params) add(root, ps, m.paramScale ? m.paramScale[i] : 1);
  return finishParams(root);
}

function finishParams(into: Map<string, Map<string, GAcc>>): SumParam[] {
  const out: SumParam[] = [];
  for (const [name, groups] of into) {
    const gs: SumGroup[] = [];
    for (const acc of groups.values()) {
      const vs = [...acc.vs.values()].sort((a, b) => b.duration - a.duration);
      if (vs.length > 20) {
        const rest = vs.splice(20);
        vs.push({ value: '::other', duration: rest.reduce((s, v) => s + v.duration, 0), count: rest.reduce((s, v) => s + v.count, 0) });
      }
      acc.g.variants = vs.length > 1 ? vs : [];
      acc.g.nested = finishParams(acc.nested);
      gs.push(acc.g);
    }
    gs.sort(groupOrder);
    out.push({ name, duration: gs.reduce((s, g) => s + g.duration, 0), groups: gs });
  }
  out.sort((a, b) => b.duration - a.duration || (a.name < b.name ? -1 : 1));
  return out;
}

/** SQL signature (§4.1): commas and whitespace removed, single-quoted literals removed (a
 *  doubled quote belongs to the literal), digits removed, every word cut to its first
 *  character. */
export function sqlSignature(s: string): string {
  let out = '';
  const n = s.length;
  let i = 0;
  while (i < n) {
    const ch = s.charCodeAt(i);
    if (ch === 44 /* , */) { i++; continue; }
    if (ch === 39 /* ' */) {
      i++;
      while (i < n) {
        if (s.charCodeAt(i) === 39) {
          if (s.charCodeAt(i + 1) === 39) { i += 2; continue; }
          i++;
          break;
        }
        i++;
      }
      continue;
    }
    if (isWord(ch)) {
      let first = '';
      while (i < n && isWord(s.charCodeAt(i))) {
        const c = s.charCodeAt(i);
        if (!first && !(c >= 48 && c <= 57)) first = s[i];
        i++;
      }
      out += first;
      continue;
    }
    if (ch === 32 || ch === 9 || ch === 10 || ch === 13 || ch === 12 || ch === 11) { i++; continue; }
    out += s[i];
    i++;
  }
  return out;
}

function isWord(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
}
