import { describe, expect, it } from 'vitest';
import { collapsedStacks, layoutFlame } from './flame';
import { modelFromResp } from './model';
import { makeTree } from './testutil';

const tree = () => modelFromResp(makeTree({
  m: 'void x.Root.run()', kids: [
    { m: 'void x.A.a()', self: 600, kids: Array.from({ length: 50 }, (_, j) => ({ m: `void x.T${j}.t()`, self: 0.02 })) },
    { m: 'void x.B.b()', self: 400 },
  ],
}));

describe('flame layout (§10.1)', () => {
  it('a root spending 60 % in A and 40 % in B shows two frames in a 3:2 ratio', () => {
    const m = tree();
    const lay = layoutFlame(m, 0, 'total', 1000);
    const w = (cls: string) => {
      for (let k = 0; k < lay.count; k++) if (!lay.more[k] && m.names.get(m.method[lay.node[k]]).cls === cls) return lay.w[k];
      return -1;
    };
    expect(w('A') / w('B')).toBeCloseTo(1.5, 2);
    expect(lay.level[0]).toBe(0);
    expect(lay.w[0]).toBe(1000);
  });

  it('zooming on A makes A full width', () => {
    const m = tree();
    const a = m.kids[m.kidStart[0]];
    const lay = layoutFlame(m, a, 'total', 1000);
    expect(lay.node[0]).toBe(a);
    expect(lay.w[0]).toBe(1000);
  });

  it('narrow children fold into one "…" frame per parent', () => {
    const m = tree();
    const lay = layoutFlame(m, 0, 'total', 1000);
    // 50 × 0.02 ms of 1001 ms at 1000 px: together < 1 px: dropped
    expect(Array.from(lay.more).filter((x) => x).length).toBe(0);
    const wide = layoutFlame(m, 0, 'total', 100000);
    // at 100 000 px each is ~2 px: shown; at 50 000 px each is ~1 px − ε: folded into one frame
    expect(Array.from(wide.more).filter((x) => x).length).toBe(0);
    const mid = layoutFlame(m, 0, 'total', 50000);
    const moreIdx = Array.from(mid.more).indexOf(1);
    expect(moreIdx).toBeGreaterThan(0);
    expect(mid.w[moreIdx]).toBeCloseTo(50 * 0.02 * 50000 / 1001, 3);
  });

  it('exports collapsed stacks', () => {
    const m = tree();
    const txt = collapsedStacks(m, 0, 'total');
    expect(txt).toContain('x.Root.run;x.A.a 600\n');
    expect(txt).toContain('x.Root.run;x.B.b 400\n');
  });
});
