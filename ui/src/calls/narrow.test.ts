import { describe, expect, it } from 'vitest';
import { narrowingChips } from './narrow';

describe('too-wide narrowing chips (§1.5)', () => {
  it('offers the next duration floor, errors only, a quarter of the period, one pod', () => {
    const c = narrowingChips({ dur: '>=500ms', errorsOnly: false, from: 0, to: 4 * 3600000, pods: ['ns/svc/a-1_1700000000000', 'ns/svc/b'] });
    expect(c.map((x) => x.key)).toEqual(['dur', 'errors', 'period', 'pods']);
    expect(c[0].patch).toEqual({ dur: '>=1s' });
    expect(c[2]).toEqual({ key: 'period', label: 'the last 60 minutes only', patch: { from: String(3 * 3600000), to: String(4 * 3600000) } });
    expect(c[3].label).toBe('one pod: a-1');
    expect(c[3].patch).toEqual({ pod: ['ns/svc/a-1_1700000000000'] });
  });
  it('leaves out what is already narrow', () => {
    const c = narrowingChips({ dur: '>=30s', errorsOnly: true, from: 0, to: 60000, pods: ['ns/svc/a'] });
    expect(c).toEqual([]);
    expect(narrowingChips({ dur: 'all', errorsOnly: true, from: 0, to: 60000, pods: [] })[0].patch).toEqual({ dur: '>=10ms' });
    expect(narrowingChips({ dur: '<=5s', errorsOnly: true, from: 0, to: 60000, pods: [] })).toEqual([]);
  });
});
