import { describe, expect, it } from 'vitest';
import { modelFromResp } from './model';
import { nodeNumbers, numbersText } from './numbers';
import { makeTree } from './testutil';

describe('row numbers (§4.3)', () => {
  const m = modelFromResp(makeTree({
    m: 'void x.R.r()', self: 10, susp: 50, kids: [
      { m: 'void x.G.g()', self: 1000, susp: 400, inv: 10 },   // 400 ms of 1000: shown
      { m: 'void x.S.s()', self: 1000, susp: 20 },             // below 30 ms: folded
      { m: 'void x.P.p()', self: 2000, susp: 40 },             // 2 % of 2000: folded
    ],
  }));
  const node = (cls: string) => { for (let i = 0; i < m.n; i++) if (m.names.get(m.method[i]).cls === cls) return i; return -1; };

  it('smart suspension', () => {
    const g = nodeNumbers(m, node('G'));
    expect(g.gc).toBe(400);
    expect(g.total).toBe(600);
    expect(g.onlySelf).toBe(true);
    expect(g.invX).toBe(10);
    expect(nodeNumbers(m, node('S')).gc).toBe(0);
    expect(nodeNumbers(m, node('P')).gc).toBe(0);
    // the root always folds it in
    expect(nodeNumbers(m, 0).gc).toBe(0);
    expect(nodeNumbers(m, 0).total).toBe(4010);
    // "never" mode folds everything
    expect(nodeNumbers(m, node('G'), 'never').gc).toBe(0);
    expect(numbersText(m, node('G'))).toBe('600ms self + 400ms gc, 10 inv (x 10)');
    expect(numbersText(m, 0)).toBe('4010ms (10ms self), 1 inv, 12 calls');
  });
});
