// durfilter.test.ts -- every row of the ui.md §3.4 table.
import { describe, expect, it } from 'vitest';
import { chipFor, durApiValue, parseDur } from './durfilter';

const at = (min: number | null, max: number | null) => ({ min, max });

describe('parseDur (ui.md §3.4)', () => {
  it.each([
    ['500ms', at(500, null)],
    ['>500ms', at(500, null)],
    ['>=500ms', at(500, null)],
    ['3', at(3000, null)],
    ['3s', at(3000, null)],
    ['1.5', at(1500, null)],
    ['<100ms', at(null, 100)],
    ['<=100ms', at(null, 100)],
    ['=250ms', at(250, 250)],
    ['100ms..2s', at(100, 2000)],
    ['100ms...2s', at(100, 2000)],
    ['2s..100ms', at(100, 2000)],
    [' >= 1 s ', at(1000, null)],
    ['0.0004', at(0, null)],
    ['1.2345ms', at(1, null)],
    ['', at(null, null)],
    ['all', at(null, null)],
  ])('%s', (text, want) => {
    expect(parseDur(text)).toEqual(want);
  });

  it.each(['abc', '>', '1..', '5m', '..1s', '1.', '.5', '>=<1', '1..2..3', '1 ms s', '=', '<', '-1', '5MS'])(
    'invalid: %s', (text) => {
      expect(parseDur(text)).toBeNull();
    });

  it('the API value drops spaces and the "all" word', () => {
    expect(durApiValue(' >= 500 ms')).toBe('>=500ms');
    expect(durApiValue('all')).toBeUndefined();
    expect(durApiValue('')).toBeUndefined();
    expect(durApiValue('abc')).toBeUndefined();
  });

  it('chips match their URL value', () => {
    expect(chipFor('>=500ms')?.key).toBe('500ms');
    expect(chipFor('all')?.key).toBe('all');
    expect(chipFor('')?.key).toBe('all');
    expect(chipFor('>500ms')).toBeUndefined();
  });
});
