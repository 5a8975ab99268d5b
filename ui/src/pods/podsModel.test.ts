// podsModel.test.ts -- the calls/dumps join of Pods Info (ui.md §5, dumps-http.md §5).

import { describe, expect, it } from 'vitest';
import type { DumpPodSummary, ServicesResp } from '../lib/api';
import { buildRows, groupRows, selectionScopes, summaryFilter, totals } from './podsModel';
import { heapFilters } from './HeapsPage';
import { middleEllipsis } from './PodsPage';

const disc: ServicesResp = {
  partial: false,
  namespaces: [{
    namespace: 'shop', calls: 30, services: [
      { service: 'orders', calls: 20, pods: [
        { pod: 'orders-7d9f-abcde_1700000000000', calls: 20, restarts: [
          { restart_ms: 1700000001000, first_ms: 1700000100000, last_ms: 1700000200000, calls: 15 },
          { restart_ms: 1700000500000, first_ms: 1700000500000, last_ms: 1700000600000, calls: 5 },
        ] },
      ] },
      { service: 'billing', calls: 10, pods: [
        { pod: 'billing-55-xyz_1700000000001', calls: 10, restarts: [
          { restart_ms: 1700000002000, first_ms: 1700000050000, last_ms: 1700000090000, calls: 10 },
        ] },
      ] },
    ],
  }],
};

function dump(p: Partial<DumpPodSummary>): DumpPodSummary {
  return {
    namespace: 'shop', pod: 'x', service: 'x', restart_pod: null, restart_ms: 0, first_ms: 1700000300000,
    last_ms: 1700000400000, bytes: 100, online: false, last_received_ms: 1700000400000, bitrate_bps: 10,
    types: { td: { count: 2, bytes: 100, first_ms: 1700000300000, last_ms: 1700000400000 } }, ...p,
  };
}

const none = { services: [], pods: [] };

describe('buildRows', () => {
  it('one row per restart; pods without dumps have empty types', () => {
    const rows = buildRows(disc, [], none, 0, 2e12);
    expect(rows).toHaveLength(3);
    expect(rows.every((r) => Object.keys(r.types).length === 0 && r.hasCalls && !r.hasDumps)).toBe(true);
    expect(rows.find((r) => r.service === 'billing')!.dumpPods).toEqual(['billing-55-xyz_1700000000001']);
  });

  it('joins on restart_pod and the matching restart time', () => {
    const rows = buildRows(disc, [dump({ pod: 'orders-7d9f-abcde_1700000000000', restart_pod: 'orders-7d9f-abcde_1700000000000',
      restart_ms: 1700000500000, service: 'orders' })], none, 0, 2e12);
    expect(rows).toHaveLength(3);
    const r = rows.find((x) => x.restartMs === 1700000500000)!;
    expect(r.types.td.count).toBe(2);
    expect(r.dumpPods).toEqual(['orders-7d9f-abcde_1700000000000']);
    expect(rows.find((x) => x.restartMs === 1700000001000)!.hasDumps).toBe(false);
  });

  it('joins a bare host name to the calls pod by short name, and keeps it as the filter', () => {
    const rows = buildRows(disc, [dump({ pod: 'billing-55-xyz', service: 'billing-55' })], none, 0, 2e12);
    expect(rows).toHaveLength(3);
    const r = rows.find((x) => x.service === 'billing')!;
    expect(r.hasDumps).toBe(true);
    expect(r.dumpPods).toEqual(['billing-55-xyz']);
  });

  it('merges the bare and the full name of one restart into one row', () => {
    const rows = buildRows(disc, [
      dump({ pod: 'billing-55-xyz', restart_pod: 'billing-55-xyz_1700000000001', restart_ms: 1700000002000 }),
      dump({ pod: 'billing-55-xyz_1700000000001', restart_pod: 'billing-55-xyz_1700000000001', restart_ms: 1700000002000,
        types: { gc: { count: 1, bytes: 5, first_ms: 1700000000000, last_ms: 1700000000000 } } }),
    ], none, 0, 2e12);
    const r = rows.find((x) => x.service === 'billing')!;
    expect(r.types.td.count).toBe(2);
    expect(r.types.gc.count).toBe(1);
    expect(r.dumpPods).toEqual(['billing-55-xyz_1700000000001']);
    expect(r.bytes).toBe(200);
  });

  it('dump-only pods get their own row; calls-only pods stay', () => {
    const rows = buildRows(disc, [dump({ pod: 'gopher-1-aa', service: 'gopher-1' })], none, 0, 2e12);
    expect(rows).toHaveLength(4);
    const g = rows.find((x) => x.pod === 'gopher-1-aa')!;
    expect(g.hasCalls).toBe(false);
    expect(g.restartMs).toBeNull();
    expect(g.dumpPods).toEqual(['gopher-1-aa']);
    expect(buildRows(null, [dump({ pod: 'gopher-1-aa' })], none, 0, 2e12)).toHaveLength(1);
  });

  it('clips the data range to the window', () => {
    const rows = buildRows(disc, [], none, 1700000150000, 1700000180000);
    const r = rows.find((x) => x.restartMs === 1700000001000)!;
    expect([r.from, r.to]).toEqual([1700000150000, 1700000180000]);
  });

  it('filters by the selection', () => {
    const d = [dump({ pod: 'gopher-1-aa', service: 'gopher-1' })];
    expect(buildRows(disc, d, { services: ['shop/orders'], pods: [] }, 0, 2e12).map((r) => r.service)).toEqual(['orders', 'orders']);
    expect(buildRows(disc, d, { services: [], pods: ['shop/billing/billing-55-xyz_1700000000001'] }, 0, 2e12)).toHaveLength(1);
  });
});

describe('grouping and scopes', () => {
  it('groups namespace → service, sorted', () => {
    const g = groupRows(buildRows(disc, [], none, 0, 2e12));
    expect(g.map((n) => n.namespace)).toEqual(['shop']);
    expect(g[0].services.map((s) => s.service)).toEqual(['billing', 'orders']);
    expect(totals(g[0].services[1].rows)).toMatchObject({ pods: 2, calls: 20 });
  });

  it('summary filter is as narrow as single-valued params allow', () => {
    expect(summaryFilter(none)).toEqual({});
    expect(summaryFilter({ services: ['shop/orders'], pods: [] })).toEqual({ namespace: 'shop', service: 'orders' });
    expect(summaryFilter({ services: ['shop/orders', 'shop/billing'], pods: [] })).toEqual({ namespace: 'shop' });
    expect(summaryFilter({ services: ['a/x', 'b/y'], pods: [] })).toEqual({});
  });

  it('download scopes: one zip per service or lone pod', () => {
    const rows = buildRows(disc, [], none, 0, 2e12);
    expect(selectionScopes(none, rows)).toEqual([{ label: 'namespace shop', filter: { namespace: 'shop' } }]);
    expect(selectionScopes({ services: ['shop/orders'], pods: ['shop/orders/p1', 'shop/billing/billing-55-xyz_1700000000001'] }, rows))
      .toEqual([
        { label: 'shop / orders', filter: { namespace: 'shop', service: 'orders' } },
        { label: 'shop / billing-55-xyz', filter: { namespace: 'shop', pod: 'billing-55-xyz_1700000000001' } },
      ]);
  });

  it('heap filters: one request per service or lone pod', () => {
    expect(heapFilters(none)).toEqual([{}]);
    expect(heapFilters({ services: ['shop/orders'], pods: ['shop/orders/a', 'shop/billing/b'] }))
      .toEqual([{ namespace: 'shop', service: 'orders' }, { namespace: 'shop', pod: 'b' }]);
  });

  it('middle ellipsis keeps the tail', () => {
    expect(middleEllipsis('short', 10)).toBe('short');
    const s = middleEllipsis('orders-service-hvls4zgj86-2gfdj-very-long-name', 20);
    expect(s).toHaveLength(20);
    expect(s.endsWith('long-name')).toBe(true);
  });
});
