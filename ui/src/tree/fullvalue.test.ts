import { afterEach, describe, expect, it, vi } from 'vitest';
import { askOrder, fetchFullValue } from './dialogs';

afterEach(() => vi.unstubAllGlobals());

describe('view full value (§8.5)', () => {
  it('asks the tree\'s calls in turn with the param name and key', async () => {
    const urls: string[] = [];
    vi.stubGlobal('fetch', async (url: string) => {
      urls.push(url);
      if (url.includes('/calls/a/')) return new Response(JSON.stringify({ error: 'no such value', code: 'value_not_found' }), { status: 404 });
      return new Response('SELECT 1 FROM dual', { status: 200 });
    });
    expect(await fetchFullValue(['a', 'b'], 'sql', '00ff00ff00ff00ff')).toBe('SELECT 1 FROM dual');
    expect(urls).toEqual(['/api/v1/calls/a/value?param=sql&key=00ff00ff00ff00ff', '/api/v1/calls/b/value?param=sql&key=00ff00ff00ff00ff']);
  });
  it('stops at an error that is not a 404, with its message', async () => {
    vi.stubGlobal('fetch', async () => new Response(JSON.stringify({ error: 'the value is over 16 MiB', code: 'value_too_large' }), { status: 413 }));
    await expect(fetchFullValue(['a', 'b'], 'sql', 'x')).rejects.toThrow('the value is over 16 MiB');
  });
  it('asks the call the value was first seen in first: the only one a profile names', () => {
    expect(askOrder([], 'p1')).toEqual(['p1']);                 // an aggregate profile lists no calls
    expect(askOrder(['a', 'p1', 'b'], 'p1')).toEqual(['p1', 'a', 'b']);
    expect(askOrder(['a', 'b'])).toEqual(['a', 'b']);           // a tree of older servers: its calls
    expect(askOrder(['synthetic'])).toEqual([]);                // a standalone / synthetic tree: none
    expect(askOrder(['synthetic'], 'p1')).toEqual(['p1']);
  });
});
