import { describe, expect, it } from 'vitest';
import {
  applyAdjust, applyCategories, categoryColor, exactGroups, hotspots, incoming, outgoing, paramsSummary, parseAdjust, parseCategories,
  parseFactor, sqlSignature, usages,
} from './derived';
import { modelFromResp, type TreeModel } from './model';
import { makeTree } from './testutil';

function node(m: TreeModel, word: string): number {
  for (let i = 0; i < m.n; i++) if (m.methods[m.method[i]] === word) return i;
  return -1;
}
const mi = (m: TreeModel, word: string) => m.methods.indexOf(word);

// ---- §4.5 adjust duration test -------------------------------------------------------------

describe('adjust duration', () => {
  const base = () => modelFromResp(makeTree({
    m: 'void x.Root.run()', self: 100, kids: [{ m: 'void x.Alpha.go()', self: 600 }, { m: 'void x.Beta.go()', self: 300 }],
  }));

  it('reproduces the §4.5 numbers', () => {
    const m = base();
    expect(m.total[0]).toBe(1000);
    const a1 = applyAdjust(m, parseAdjust('1/10 *Alpha*').rules);
    expect(a1.total[node(a1, 'void x.Alpha.go()')]).toBeCloseTo(60);
    expect(a1.total[0]).toBeCloseTo(460);
    const a2 = applyAdjust(m, parseAdjust('1/10 *Alpha*\n2 *Beta*').rules);
    expect(a2.total[node(a2, 'void x.Beta.go()')]).toBeCloseTo(600);
    expect(a2.total[0]).toBeCloseTo(760);
    const a3 = applyAdjust(m, parseAdjust('').rules);
    expect(a3.total[0]).toBe(1000);
    expect(a3.total[node(a3, 'void x.Alpha.go()')]).toBe(600);
    expect(a3.total[node(a3, 'void x.Beta.go()')]).toBe(300);
    // the adjusted tree is re-sorted: Beta (600) before Alpha (60)
    expect(a2.methods[a2.method[a2.firstKid(0)]]).toBe('void x.Beta.go()');
  });

  it('nested matches multiply, the longest pattern wins, bad lines are listed', () => {
    const m = modelFromResp(makeTree({ m: 'void x.Root.run()', kids: [{ m: 'void x.Outer.o()', self: 10, kids: [{ m: 'void x.Inner.i()', self: 100 }] }] }));
    const r = parseAdjust('# comment\n\n2 *Outer*\n3 x.Inner\n1/2 *x.Inner.i*\nnonsense\n1/0 *Root*');
    expect(r.invalid).toEqual(['line 6: nonsense', 'line 7: 1/0 *Root*']);
    const a = applyAdjust(m, r.rules);
    // Outer ×2 (self 20); Inner: "*x.Inner.i*" (longer) wins → ×1/2 under ×2 → 100
    expect(a.total[node(a, 'void x.Inner.i()')]).toBeCloseTo(100);
    expect(a.total[0]).toBeCloseTo(120);
    expect(a.pinned![node(a, 'void x.Outer.o()')]).toBe(1);
    expect(parseFactor('0.5')).toBe(0.5);
    expect(parseFactor('-1')).toBe(null);
  });
});

// ---- categories ------------------------------------------------------------------------------

describe('categories', () => {
  it('apply to the subtree; `>` rules to the children only; longest wins', () => {
    const m = modelFromResp(makeTree({
      m: 'void x.Root.run()', kids: [{ m: 'void x.Dao.find()', self: 1, kids: [{ m: 'void x.Jdbc.exec()', self: 5, kids: [{ m: 'void x.Net.read()', self: 1 }] }] }],
    }));
    const c = applyCategories(m, parseCategories('db >x.Dao\njdbc x.Jdbc.exec').rules)!;
    expect(c.names).toEqual(['db', 'jdbc']);
    expect(c.cat[0]).toBe(-1);
    expect(c.cat[node(m, 'void x.Dao.find()')]).toBe(-1);
    expect(c.cat[node(m, 'void x.Jdbc.exec()')]).toBe(1);
    expect(c.cat[node(m, 'void x.Net.read()')]).toBe(1);
    expect(categoryColor(1)).toBe('hsl(150, 100%, 95%)');
  });
});

// ---- derived trees -----------------------------------------------------------------------------

// Root ─┬ A ── X ── Target(10) ── Y(5)
//       └ B ─┬ Target(20) ── Target(7)   (recursive)
//            └ C ── Target(3)
const derivedTree = () => modelFromResp(makeTree({
  m: 'void x.Root.run()', kids: [
    { m: 'void x.A.a()', kids: [{ m: 'void x.X.x()', kids: [{ m: 'void x.T.target()', self: 10, kids: [{ m: 'void x.Y.y()', self: 5 }] }] }] },
    { m: 'void x.B.b()', kids: [
      { m: 'void x.T.target()', self: 20, inv: 2, kids: [{ m: 'void x.T.target()', self: 7 }] },
      { m: 'void x.C.c()', kids: [{ m: 'void x.T.target()', self: 3 }] },
    ] },
  ],
}));

describe('derived trees', () => {
  it('Outgoing merges every occurrence (recursive ones too) into one root', () => {
    const m = derivedTree();
    const o = outgoing(m, mi(m, 'void x.T.target()'))!;
    expect(o.methods[o.method[0]]).toBe('void x.T.target()');
    // self 10 + 20 + 7 + 3, plus Y 5
    expect(o.total[0]).toBe(45);
    expect(o.self[0]).toBe(40);
    expect(o.inv[0]).toBe(5);
    expect(o.kidCount[0]).toBe(1);
    expect(o.calls[0]).toBe(1);
  });

  it('Incoming is bottom-up with the target numbers per caller path', () => {
    const m = derivedTree();
    const t = incoming(m, mi(m, 'void x.T.target()'))!;
    expect(t.bottomUp).toBe(true);
    // outermost totals: 15 + 27 + 3; the nested occurrence adds its self only
    expect(t.total[0]).toBe(45);
    expect(t.self[0]).toBe(40);
    const callers = Array.from(t.kids.subarray(t.kidStart[0], t.kidStart[0] + t.kidCount[0])).map((k) => t.names.get(t.method[k]).cls);
    // sorted by self: B (20), X (10), T (7, recursive), C (3)
    expect(callers).toEqual(['B', 'X', 'T', 'C']);
    const b = node(t, 'void x.B.b()');
    expect(t.total[b]).toBe(27);
    expect(t.calls[b]).toBe(1);
    // every chain goes up to the tree root
    const x = node(t, 'void x.X.x()');
    expect(t.names.get(t.method[t.firstKid(t.firstKid(x))]).cls).toBe('Root');
  });

  it('Find usages prunes the tree to the paths that reach the method', () => {
    const m = derivedTree();
    const u = usages(m, mi(m, 'void x.T.target()'))!;
    expect(u.total[0]).toBe(45);
    expect(node(u, 'void x.Y.y()')).toBe(-1);
    const c = node(u, 'void x.C.c()');
    expect(u.total[c]).toBe(3);
    expect(u.calls[c]).toBe(1);
  });

  it('Hotspots: Σ self and Σ total of outermost occurrences; zero-self methods counted apart', () => {
    const m = derivedTree();
    const h = hotspots(m, null);
    const t = h.rows.find((r) => m.methods[r.method] === 'void x.T.target()')!;
    expect(t.self).toBe(40);
    expect(t.total).toBe(45);
    expect(t.inv).toBe(5);
    expect(h.rows[0].method).toBe(mi(m, 'void x.T.target()'));
    expect(h.zero).toBe(5);  // Root, A, X, B, C
  });
});

// ---- SQL signature and params summary ----------------------------------------------------------

describe('params', () => {
  it('SQL signature test vectors (§4.1)', () => {
    expect(sqlSignature('SELECT * FROM orders WHERE id = 123')).toBe('S*FoWi=');
    expect(sqlSignature("WHERE name = 'John''s', age = 7")).toBe('Wn=a=');
    expect(sqlSignature('UPDATE t1 SET x2 = ?')).toBe('UtSx=?');
    expect(sqlSignature('SELECT ab1cd FROM t')).toBe('SaFt');
  });

  it('summary groups SQL by signature with their texts and nests binds', () => {
    const m = modelFromResp(makeTree({
      m: 'void x.Root.run()', kids: [
        { m: 'void x.A.a()', self: 10, params: [{ param: 0, groups: [{ value: 'SELECT * FROM t WHERE id = 1', duration: 10, count: 1, params: [{ param: 1, groups: [{ value: '[1]', duration: 10, count: 1 }] }] }] }] },
        { m: 'void x.B.b()', self: 5, params: [{ param: 0, groups: [{ value: 'SELECT * FROM t WHERE id = 2', duration: 5, count: 1 }] }, { param: 2, groups: [{ value: '/x', duration: 5, count: 1 }] }] },
      ],
    }, ['sql', 'binds', 'web.url']));
    const s = paramsSummary(m);
    const sql = s.find((p) => p.name === 'sql')!;
    expect(sql.groups.length).toBe(1);
    expect(sql.groups[0].duration).toBe(15);
    expect(sql.groups[0].count).toBe(2);
    expect(sql.groups[0].variants.map((v) => v.value)).toEqual(['SELECT * FROM t WHERE id = 1', 'SELECT * FROM t WHERE id = 2']);
    expect(sql.groups[0].nested[0].name).toBe('binds');
    expect(s.find((p) => p.name === 'web.url')!.groups[0].value).toBe('/x');
    // the exact-text toggle splits the shape into its texts again
    const ex = exactGroups(s).find((p) => p.name === 'sql')!;
    expect(ex.groups.map((g) => [g.value, g.duration, g.count])).toEqual([
      ['SELECT * FROM t WHERE id = 1', 10, 1], ['SELECT * FROM t WHERE id = 2', 5, 1]]);
    expect(ex.groups.every((g) => g.variants.length === 0)).toBe(true);
  });

  it('trimmed values keep their key and the call to fetch them from, in the summary and its exact texts', () => {
    const long1 = 'SELECT a FROM t WHERE x = 1', long2 = 'SELECT a FROM t WHERE x = 2';
    const m = modelFromResp(makeTree({
      m: 'void x.Root.run()', kids: [
        { m: 'void x.A.a()', self: 10, params: [{ param: 0, groups: [{
          value: long1, duration: 10, count: 2, trimmed: true, key: 'k1', source: 'call-1',
          variants: [{ value: long1, duration: 6, count: 1, trimmed: true, key: 'k1', source: 'call-1' },
            { value: long2, duration: 4, count: 1, trimmed: true, key: 'k2', source: 'call-2' }] }] }] },
      ],
    }, ['sql']));
    const g = paramsSummary(m).find((p) => p.name === 'sql')!.groups[0];
    expect([g.key, g.source]).toEqual(['k1', 'call-1']);
    expect(g.variants.map((v) => [v.value, v.key, v.source])).toEqual([[long1, 'k1', 'call-1'], [long2, 'k2', 'call-2']]);
    const ex = exactGroups(paramsSummary(m)).find((p) => p.name === 'sql')!;
    expect(ex.groups.map((x) => [x.value, x.key, x.source])).toEqual([[long1, 'k1', 'call-1'], [long2, 'k2', 'call-2']]);
  });
});

describe('find usages view', () => {
  it('does not skip over a branch of paths', () => {
    const m = derivedTree();
    const u = usages(m, mi(m, 'void x.T.target()'))!;
    // Root has two branches (A… and B…): its chain must not hide one of them
    expect(u.state[0]).toBeLessThan(2);
  });
});
