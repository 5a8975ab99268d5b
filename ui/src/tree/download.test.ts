import { describe, expect, it } from 'vitest';
import { offlineFileName, offlineHtml, scriptSafeJs, scriptSafeJson } from './download';

describe('standalone page', () => {
  it('keeps script elements closed', () => {
    const tree = JSON.stringify({ root: { v: '</script><!-- <script>' } });
    const js = 'const a = "</script>"; const b = /<!--/; const c = `<script>`;';
    const html = offlineHtml('t', tree, { state: 'q=x', zone: 'UTC', ids: ['a'] }, js, 'b{}</style>');
    expect(html.match(/<\/script>/g)!.length).toBe(2);
    expect(html.includes('<' + '!--')).toBe(false);
    const json = /<script type="application\/json" id="cp-offline">([\s\S]*?)<\/script>/.exec(html)![1];
    const back = JSON.parse(json);
    expect(back.tree.root.v).toBe('</script><!-- <script>');
    expect(back.state).toBe('q=x');
    expect(scriptSafeJson('"</x"')).toBe('"<\\/x"');
    // the escaped JS still means the same
    expect(new Function(`${scriptSafeJs(js)}; return [a, b.test('<!--'), c];`)()).toEqual(['</script>', true, '<script>']);
  });

  it('names the file after start, duration, calls and title', () => {
    expect(offlineFileName({ y: 2026, mo: 1, d: 5, h: 9, mi: 7 }, '1m 5s', 3, 'GET /orders/42?x=1'))
      .toBe('2026-01-05_0907_1m5s_3calls_GET_orders_42_x_1.html');
    expect(offlineFileName({ y: 2026, mo: 11, d: 22, h: 15, mi: 47 }, '412ms', 1, '')).toBe('2026-11-22_1547_412ms_1calls.html');
  });
});
