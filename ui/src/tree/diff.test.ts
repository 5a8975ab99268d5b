import { describe, expect, it } from 'vitest';
import type { TreeResp } from '../lib/api';
import { deltaColor, diffTrees, methodChanges, netDeltas } from './diff';
import { modelFromResp } from './model';
import { makeTree } from './testutil';
import merged6Raw from './fixtures/merged6.json?raw';

const models = (a: TreeResp, b: TreeResp, ka = 1, kb = 1) => {
  const d = diffTrees(a, b, ka, kb);
  return { d, after: modelFromResp(d.after), before: modelFromResp(d.before) };
};
const byName = (m: ReturnType<typeof modelFromResp>, cls: string) => {
  for (let i = 0; i < m.n; i++) if (m.names.get(m.method[i]).cls === cls) return i;
  return -1;
};

describe('difference of two merged trees (§10.2)', () => {
  it('a profile against itself is all zero', () => {
    const t = JSON.parse(merged6Raw) as TreeResp;
    const { d, after, before } = models(t, t);
    expect(d.nodes).toBe(after.n);
    expect(after.n).toBe(modelFromResp(t).n);
    const { delta, max } = netDeltas(after, before);
    expect(max).toBe(0);
    expect(delta.every((x) => x === 0)).toBe(true);
    expect(methodChanges(after, before)).toEqual([]);
    expect(after.total[0]).toBe(t.root.total);
    expect(deltaColor(0, 0)).toBe('hsl(0, 0%, 88%)');
  });

  it('merges by method text: grown, new and vanished frames', () => {
    const a = makeTree({ m: '2 calls', kids: [{ m: 'void x.X.x()', self: 60 }, { m: 'void x.Y.y()', self: 40 }] });
    const b = makeTree({ m: '5 calls', kids: [{ m: 'void x.Z.z()', self: 10 }, { m: 'void x.X.x()', self: 30 }] });
    const { after, before } = models(a, b);
    expect(after.n).toBe(4);
    const { delta, max } = netDeltas(after, before);
    expect(delta[0]).toBe(60);           // 100 against 40
    expect(delta[byName(after, 'X')]).toBe(30);
    expect(delta[byName(after, 'Y')]).toBe(40);
    expect(delta[byName(after, 'Z')]).toBe(-10);
    expect(max).toBe(60);
    expect(before.total[byName(before, 'Y')]).toBe(0);
    const ch = methodChanges(after, before);
    expect(ch.map((c) => after.names.get(c.method).cls)).toEqual(['Y', 'X', 'Z']);
    expect(deltaColor(30, 60)).toMatch(/^hsl\(4,/);
    expect(deltaColor(-10, 60)).toMatch(/^hsl\(215,/);
  });

  it('scales each side, e.g. per call', () => {
    const a = makeTree({ m: '2 calls', kids: [{ m: 'void x.X.x()', self: 60 }] });
    const b = makeTree({ m: '4 calls', kids: [{ m: 'void x.X.x()', self: 120 }] });
    const { after, before } = models(a, b, 1 / 2, 1 / 4);
    const { max } = netDeltas(after, before);
    expect(max).toBe(0);
    expect(after.total[0]).toBe(30);
  });

  it('suspension is not net time', () => {
    const a = makeTree({ m: 'r', kids: [{ m: 'void x.X.x()', self: 50, susp: 20 }] });
    const b = makeTree({ m: 'r', kids: [{ m: 'void x.X.x()', self: 30 }] });
    const { after, before } = models(a, b);
    expect(netDeltas(after, before).delta[byName(after, 'X')]).toBe(0);
  });
});
