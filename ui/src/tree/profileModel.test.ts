import { describe, expect, it } from 'vitest';
import { baselineOf, filterOf, mergeFraction, mergeText, previousPeriod, stoppedText, treeParams, treePatch } from './profileModel';

describe('aggregate profile URL (§10.2)', () => {
  const p = new URLSearchParams('from=1000&to=5000&service=orders&q=%24user%3Dbob&tq=Dao&view=flame&base=from%3D0%26to%3D1000%26pods%3Da%2Cb');

  it('the filter is the calls list\'s, view state left out', () => {
    expect(filterOf(p)).toEqual({ from: '1000', to: '5000', service: 'orders', q: '$user=bob' });
  });

  it('the baseline replaces what base names and keeps the rest', () => {
    expect(baselineOf(p)).toEqual({ from: '0', to: '1000', service: 'orders', q: '$user=bob', pods: 'a,b' });
    expect(baselineOf(new URLSearchParams('from=1&to=2&pod=x&base=pod%3D'))).toEqual({ from: '1', to: '2' });
    expect(baselineOf(new URLSearchParams('from=1&to=2&base=same%3D1'))).toEqual({ from: '1', to: '2' });
    expect(baselineOf(new URLSearchParams('from=1'))).toBeNull();
  });

  it('the tree\'s search is tq under the profile\'s URL', () => {
    const t = treeParams(p);
    expect(t.get('q')).toBe('Dao');
    expect(t.get('view')).toBe('flame');
    expect(t.has('tq')).toBe(false);
    expect(treePatch({ q: 'x', view: null })).toEqual({ tq: 'x', view: null });
  });

  it('previous period, stop reasons, merge progress', () => {
    expect(previousPeriod(3600000, 7200000)).toEqual({ from: 0, to: 3600000 });
    expect(stoppedText({ matched: 10, merged: 10, without_trace: 0, stopped: null })).toBeNull();
    expect(stoppedText({ matched: 10, merged: 10, without_trace: 0, stopped: 'max_calls' })).toMatch(/limit/);
    const pr = { files_done: 0, files_total: 0, windows_done: 0, windows_total: 0, scanned: 0, elapsed_ms: 5, phase: 'merge', merged: 250, to_merge: 1000, nodes: 40 };
    expect(mergeText(pr)).toBe('Merging 250 / 1000 calls (40 nodes)');
    expect(mergeFraction(pr)).toBe(0.25);
    expect(mergeText({ ...pr, phase: undefined })).toBeNull();
  });
});
