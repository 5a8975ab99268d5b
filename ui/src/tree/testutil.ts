// testutil.ts -- hand-built trees for the unit tests: a compact nested spec with self times
// becomes a consistent TreeResp (totals, calls and suspension computed bottom-up).

import type { TreeNodeJson, TreeParam, TreeResp } from '../lib/api';

export interface Spec {
  m: string;                 // method word
  self?: number;
  inv?: number;
  susp?: number;             // self suspension
  params?: TreeParam[];
  kids?: Spec[];
}

export function makeTree(root: Spec, paramNames: string[] = []): TreeResp {
  const methods: string[] = [];
  const index = new Map<string, number>();
  let nodes = 0;
  const conv = (s: Spec): TreeNodeJson => {
    nodes++;
    let mi = index.get(s.m);
    if (mi === undefined) { mi = methods.length; methods.push(s.m); index.set(s.m, mi); }
    const kids = (s.kids ?? []).map(conv);
    const self = s.self ?? 0;
    const selfSusp = s.susp ?? 0;
    const inv = s.inv ?? 1;
    let total = self, susp = selfSusp, calls = 0;
    for (const k of kids) { total += k.total; susp += k.suspension; calls += k.invocations + k.calls; }
    const n: TreeNodeJson = { method: mi, total, self, suspension: susp, self_suspension: selfSusp, invocations: inv, calls };
    if (kids.length) n.children = kids;
    if (s.params) n.params = s.params;
    return n;
  };
  const r = conv(root);
  return { version: 1, methods, params: paramNames, calls: [], root: r, truncated: false, nodes, start_ms: 0, end_ms: r.total };
}

/** A one-child chain: `len` frames named `x.Pass<k>.f()` ending in `last`. */
export function chain(len: number, last: Spec, selfEach = 0): Spec {
  let cur = last;
  for (let k = len - 1; k >= 0; k--) cur = { m: `void x.Pass${k}.f()`, self: selfEach, kids: [cur] };
  return cur;
}
