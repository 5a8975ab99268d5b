import singleRaw from './fixtures/single.json?raw';
import merged6Raw from './fixtures/merged6.json?raw';
import { describe, expect, it } from 'vitest';
import type { TreeNodeJson, TreeResp } from '../lib/api';
import {
  ST_BROKEN, ST_FANOUT, ST_PINNED, TreeModel, autoExpand, buildRows, modelFromResp, newViewState, searchTree,
} from './model';
import { syntheticTree } from './synthetic';
import { chain, makeTree, type Spec } from './testutil';

const FIXTURES: Record<string, string> = { 'single.json': singleRaw, 'merged6.json': merged6Raw };
const fixture = (name: string): TreeResp => JSON.parse(FIXTURES[name]);

function byMethod(m: TreeModel, word: string): number {
  for (let i = 0; i < m.n; i++) if (m.methods[m.method[i]] === word) return i;
  throw new Error(`no node ${word}`);
}

function kidsOf(m: TreeModel, i: number): number[] {
  return Array.from(m.kids.subarray(m.kidStart[i], m.kidStart[i] + m.kidCount[i]));
}

// ---- invariants on server data (§11 item 7) ----------------------------------------------

function checkJson(n: TreeNodeJson): number {
  let sumTotal = 0, sumSusp = 0, sumExec = 0, descInv = 0;
  for (const c of n.children ?? []) {
    sumTotal += c.total;
    sumSusp += c.suspension;
    sumExec += c.invocations + c.calls;
    descInv += c.invocations + checkJson(c);
  }
  expect(n.self).toBe(n.total - sumTotal);
  expect(n.self_suspension).toBe(n.suspension - sumSusp);
  expect(n.calls).toBe(sumExec);
  expect(n.calls).toBe(descInv);
  return descInv;
}

describe('server trees', () => {
  for (const f of ['single.json', 'merged6.json']) {
    it(`${f}: self = total − Σ children.total, calls = Σ descendants' invocations`, () => {
      const t = fixture(f);
      checkJson(t.root);
      const m = modelFromResp(t);
      // `nodes` does not count the synthetic root of a merged tree
      expect(m.n - t.nodes).toBeLessThanOrEqual(1);
      for (let i = 0; i < m.n; i++) {
        let st = 0, ex = 0;
        for (const c of kidsOf(m, i)) { st += m.total[c]; ex += m.inv[c] + m.calls[c]; }
        expect(m.self[i]).toBe(m.total[i] - st);
        expect(m.calls[i]).toBe(ex);
      }
    });
  }

  it('merged tree has a synthetic "N calls" root', () => {
    const t = fixture('merged6.json');
    expect(t.methods[t.root.method]).toBe('6 calls');
    expect(t.calls.length).toBe(6);
  });
});

// ---- ordering (§4.1) ------------------------------------------------------------------------

describe('child order', () => {
  it('sorts by total, then self, suspension, self suspension, inv+calls, inv, method', () => {
    const t = makeTree({
      m: 'void x.R.r()', kids: [
        { m: 'void x.A.a()', self: 10 },
        { m: 'void x.B.b()', self: 30 },
        { m: 'void x.C.c()', self: 20, kids: [{ m: 'void x.D.d()', self: 10 }] },  // total 30, self 20
        { m: 'void x.E.e()', self: 10, inv: 3 },
        { m: 'void x.F.f()', self: 10, susp: 2 },
      ],
    });
    const m = modelFromResp(t);
    const names = kidsOf(m, 0).map((k) => m.names.get(m.method[k]).cls);
    expect(names).toEqual(['B', 'C', 'F', 'E', 'A']);
  });
});

// ---- collapse depth (§4.4) -------------------------------------------------------------------

const branching: Spec = { m: 'void x.Work.split()', kids: [{ m: 'void x.A.a()', self: 500 }, { m: 'void x.B.b()', self: 500 }] };

describe('collapse depth', () => {
  it('a 20-frame pass-through chain gets depth 20 at its top and lands on the branching node', () => {
    const m = modelFromResp(makeTree(chain(20, branching)));
    const top = 0;
    expect(m.methods[m.method[top]]).toBe('void x.Pass0.f()');
    expect(m.state[top]).toBe(20);
    expect(m.methods[m.method[m.skipTarget(top)]]).toBe('void x.Work.split()');
    // depths decrease along the chain
    expect(m.state[byMethod(m, 'void x.Pass1.f()')]).toBe(19);
    expect(m.state[byMethod(m, 'void x.Pass19.f()')]).toBe(1);
    expect(m.state[byMethod(m, 'void x.Work.split()')]).toBe(ST_BROKEN);
  });

  it('a fan-out cuts the chain above it', () => {
    const fan: Spec = { m: 'void x.Loop.each()', inv: 1, kids: [{ m: 'void x.Item.f()', inv: 50, kids: [{ m: 'void x.Work.w()', inv: 50, self: 900 }] }] };
    const m = modelFromResp(makeTree(chain(10, fan)));
    const loop = byMethod(m, 'void x.Loop.each()');
    expect(m.state[loop]).toBe(ST_FANOUT);
    expect(m.state[0]).toBe(10);
    expect(m.skipTarget(0)).toBe(loop);
  });

  it('a node with params stops the chain; its parent still lands on it', () => {
    const withParams: Spec = { m: 'void x.Dao.q()', params: [{ param: 0, groups: [{ value: 'select 1', duration: 1000, count: 1 }] }], kids: [{ m: 'void x.Jdbc.exec()', self: 1000 }] };
    const m = modelFromResp(makeTree(chain(5, withParams), ['sql']));
    const dao = byMethod(m, 'void x.Dao.q()');
    expect(m.state[dao]).toBe(ST_PINNED);
    expect(m.state[0]).toBe(5);
    expect(m.skipTarget(0)).toBe(dao);
  });

  it('a heavy sibling (> 10 %) or a heavy first-child self breaks the chain', () => {
    const m = modelFromResp(makeTree({
      m: 'void x.R.r()', kids: [{ m: 'void x.P.p()', kids: [branching] }, { m: 'void x.Side.s()', self: 200 }],
    }));
    expect(m.state[0]).toBe(ST_BROKEN);
    const p = byMethod(m, 'void x.P.p()');
    expect(m.state[p]).toBe(1);
    // the first child's own self time counts too
    const m2 = modelFromResp(makeTree({ m: 'void x.R.r()', kids: [{ m: 'void x.W.w()', self: 1000 }] }));
    expect(m2.state[0]).toBe(ST_BROKEN);
  });

  it('within 10 % still merges', () => {
    const m = modelFromResp(makeTree({
      m: 'void x.R.r()', kids: [{ m: 'void x.P.p()', self: 50, kids: [branching] }, { m: 'void x.Side.s()', self: 50 }],
    }));
    // (P.self 50 + Side 50) * 10 = 1000 <= total 1100
    expect(m.state[0]).toBe(2);
  });

  it('zero-duration nodes compare executions (rule b)', () => {
    const leafs = (k: number): Spec[] => Array.from({ length: k }, (_, j) => ({ m: `void x.L${j}.l()` }));
    // R -> P -> Q(20 children), all 0 ms: R.calls = 22, P.calls = 21, P.inv = 1
    // R: (22 - 21 + 1) * 10 = 20 < 23 -> merge; P: (21 - 20 + 1) * 10 = 20 < 22 -> merge
    const m = modelFromResp(makeTree({ m: 'void x.R.r()', kids: [{ m: 'void x.P.p()', kids: [{ m: 'void x.Q.q()', kids: leafs(20) }] }] }));
    expect(m.state[0]).toBe(2);
    // with few executions below the same shape does not merge
    const m2 = modelFromResp(makeTree({ m: 'void x.R.r()', kids: [{ m: 'void x.P.p()', kids: [{ m: 'void x.Q.q()', kids: leafs(2) }] }] }));
    expect(m2.state[0]).toBe(ST_BROKEN);
  });
});

// ---- initial expansion (§4.3) ------------------------------------------------------------------

describe('initial expansion', () => {
  it('opens the root and every node above 10 % of the root total', () => {
    const m = modelFromResp(makeTree({
      m: 'void x.R.r()', kids: [
        { m: 'void x.Big.b()', kids: [{ m: 'void x.BigKid.k()', self: 300 }, { m: 'void x.Tiny.t()', self: 50, kids: [{ m: 'void x.U.u()', self: 5 }] }] },
        { m: 'void x.Small.s()', self: 60, kids: [{ m: 'void x.V.v()', self: 40 }] },
        { m: 'void x.Mid.m()', self: 300, kids: [{ m: 'void x.W.w()', self: 300 }] },
      ],
    }));
    const st = newViewState(m);
    expect(autoExpand(m, 0, st.expanded)).toBe(true);
    const open = (w: string) => st.expanded[byMethod(m, w)] === 1;
    expect(st.expanded[0]).toBe(1);
    expect(open('void x.Big.b()')).toBe(true);      // 355 of 1055
    expect(open('void x.Mid.m()')).toBe(true);
    expect(open('void x.Small.s()')).toBe(false);   // 100 of 1055 < 10 %
    expect(open('void x.Tiny.t()')).toBe(false);
  });

  it('zero-duration trees use invocations + calls', () => {
    const m = modelFromResp(makeTree({
      m: 'void x.R.r()', kids: [
        { m: 'void x.A.a()', kids: Array.from({ length: 30 }, (_, j) => ({ m: `void x.K${j}.k()` })) },
        { m: 'void x.B.b()', kids: [{ m: 'void x.C.c()' }] },
      ],
    }));
    const st = newViewState(m);
    autoExpand(m, 0, st.expanded);
    expect(st.expanded[byMethod(m, 'void x.A.a()')]).toBe(1);   // 31 of 34
    expect(st.expanded[byMethod(m, 'void x.B.b()')]).toBe(0);   // 2 of 34
  });
});

// ---- rows and search ----------------------------------------------------------------------------

describe('rows and search', () => {
  const sqlParam = {
    param: 0, groups: [{
      value: 'SELECT 1', duration: 100, count: 2,
      variants: [{ value: 'SELECT 1', duration: 60, count: 1 }, { value: 'SELECT 2', duration: 40, count: 1 }],
      params: [{ param: 1, groups: [{ value: "['needle-bind']", duration: 100, count: 2 }] }],
    }],
  };
  const spec: Spec = chain(6, { m: 'void x.Work.split()', kids: [
    { m: 'void x.A.a()', self: 500 },
    { m: 'void x.B.b()', self: 400, params: [sqlParam] },
  ] });
  // a small side branch inside the skipped chain
  spec.kids![0].kids![0].kids!.push({ m: 'void x.Hidden.target()', self: 1 });

  it('an expanded skipped chain shows its target right under it', () => {
    const m = modelFromResp(makeTree(spec, ['sql', 'binds']));
    const st = newViewState(m);
    autoExpand(m, 0, st.expanded);
    const rows = buildRows(m, st, null);
    const shown = Array.from(rows.item).filter((x) => x >= 0).map((i) => m.names.get(m.method[i]).cls);
    expect(shown.slice(0, 2)).toEqual(['Pass0', 'Work']);
    expect(shown).not.toContain('Hidden');
  });

  it('search finds a bind value and reveals a match inside a skipped chain', () => {
    const m = modelFromResp(makeTree(spec, ['sql', 'binds']));
    const st = newViewState(m);
    autoExpand(m, 0, st.expanded);
    const s = searchTree(m, 'NEEDLE-bind')!;
    expect(s.count).toBe(1);
    expect(s.match[byMethod(m, 'void x.B.b()')]).toBe(1);
    const h = searchTree(m, 'hidden.TARGET')!;
    expect(h.count).toBe(1);
    const rows = buildRows(m, st, h);
    const shown = Array.from(rows.item).filter((x) => x >= 0).map((i) => m.names.get(m.method[i]).cls);
    expect(shown).toContain('Hidden');
    expect(searchTree(m, 'nothing-like-this')!.count).toBe(0);
  });

  it('params rows come right after their node, groups with ≤ 5 sub-items open', () => {
    const m = modelFromResp(makeTree({ m: 'void x.R.r()', kids: [{ m: 'void x.B.b()', self: 10, params: [sqlParam] }] }, ['sql', 'binds']));
    const st = newViewState(m);
    st.expanded[0] = 1;
    st.expanded[1] = 1;
    const rows = buildRows(m, st, null);
    const kinds = Array.from(rows.item).map((x) => (x >= 0 ? `n${x}` : `${rows.params[-x - 1].kind}:${rows.params[-x - 1].name}`));
    expect(kinds).toEqual(['n0', 'n1', 'group:sql', 'variant:sql', 'variant:sql', 'group:binds']);
  });
});

// ---- size: a 100 000-node tree ----------------------------------------------------------------

describe('performance', () => {
  it('builds a 100 000-node tree fast', () => {
    const t = syntheticTree(100000);
    const text = JSON.stringify(t);
    const t0 = performance.now();
    const parsed = JSON.parse(text) as TreeResp;
    const t1 = performance.now();
    const m = modelFromResp(parsed);
    const t2 = performance.now();
    const st = newViewState(m);
    autoExpand(m, 0, st.expanded);
    const rows = buildRows(m, st, null);
    const t3 = performance.now();
    const s = searchTree(m, 'invoice');
    const t4 = performance.now();
    console.log(`100k tree: JSON ${(text.length / 1e6).toFixed(1)} MB, parse ${(t1 - t0).toFixed(0)} ms, model ${(t2 - t1).toFixed(0)} ms, ` +
      `expand+rows ${(t3 - t2).toFixed(0)} ms (${rows.count} rows), search ${(t4 - t3).toFixed(0)} ms (${s?.count} hits)`);
    expect(m.n).toBe(100000);
    expect(t3 - t1).toBeLessThan(1000);
    // the synthetic tree is consistent, too
    for (let i = 0; i < m.n; i += 97) {
      let st2 = 0;
      for (const c of kidsOf(m, i)) st2 += m.total[c];
      expect(m.self[i]).toBe(m.total[i] - st2);
    }
    // the chain under the root collapses
    const c0 = byMethod(m, 'void com.example.chain.Pass0.next() (Pass0.java:10) [chain.jar]');
    expect(m.state[c0]).toBe(19);
  });

  it('expanding everything of a 50 000-node tree builds the row list quickly', () => {
    const m = modelFromResp(syntheticTree(50000, 3));
    const st = newViewState(m);
    st.expanded.fill(1);
    st.revealed.fill(1);
    const t0 = performance.now();
    const rows = buildRows(m, st, null);
    const ms = performance.now() - t0;
    console.log(`50k fully expanded: ${rows.count} rows in ${ms.toFixed(0)} ms`);
    expect(rows.count).toBeGreaterThanOrEqual(50000);
  });
});
