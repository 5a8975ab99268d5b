// exportLinks.test.ts -- the Export menu's download URLs.
import { describe, expect, it } from 'vitest';
import { exportHref } from './exportLinks';

describe('exportHref', () => {
  it('exports one call through its own resource', () => {
    expect(exportHref(['1711546931169-1711546836682-0-15690-11-79e96112be6b0f3e'], 'trcbin'))
      .toBe('/api/v1/calls/1711546931169-1711546836682-0-15690-11-79e96112be6b0f3e/export?format=trcbin');
    expect(exportHref(['a b/c'], 'trcxml')).toBe('/api/v1/calls/a%20b%2Fc/export?format=trcxml');
  });

  it('exports several calls as one file', () => {
    const href = exportHref(['id1', 'id2', 'id3'], 'trcxml')!;
    expect(href).toBe('/api/v1/tree/export?ids=id1%2Cid2%2Cid3&format=trcxml');
    const u = new URL(href, 'http://x');
    expect(u.searchParams.get('ids')!.split(',')).toEqual(['id1', 'id2', 'id3']);
  });

  it('has nothing to export without calls', () => {
    expect(exportHref([], 'trcbin')).toBeNull();
  });
});
