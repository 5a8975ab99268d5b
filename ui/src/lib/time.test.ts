// The test vectors of ui.md §1.2 and §1.3.
import { describe, expect, it } from 'vitest';
import {
  closestQuick, fmtFull, fmtListTs, fmtOffset, fmtTs, offsetMin, parseAbsolute, parseRangeText, parseRelative,
  parseTimeExpr, parseUnix, zoneOptions,
} from './time';
import { fmtBytes, fmtDuration, shortPod } from './format';
import { selectionFilter } from './ctx';

const T = 1700000000000;

describe('display zones (§1.3)', () => {
  it('formats the reference instant in three zones', () => {
    expect(fmtFull(T, 'UTC')).toBe('2023-11-14 22:13:20.000');
    expect(fmtFull(T, 'Asia/Kolkata') + ' ' + fmtOffset(offsetMin(T, 'Asia/Kolkata'))).toBe('2023-11-15 03:43:20.000 +05:30');
    expect(fmtFull(T, 'America/New_York') + ' ' + fmtOffset(offsetMin(T, 'America/New_York'))).toBe('2023-11-14 17:13:20.000 -05:00');
  });

  it('moves a time in the spring-forward gap forward by the gap', () => {
    const t = parseAbsolute('2024-03-10 02:30', 'America/New_York')!;
    expect(fmtTs(t, 'America/New_York')).toBe('2024-03-10 03:30:00 -04:00');
  });

  it('resolves an ambiguous fall-back time to the earlier instant', () => {
    const t = parseAbsolute('2024-11-03 01:30', 'America/New_York')!;
    expect(fmtTs(t, 'America/New_York')).toBe('2024-11-03 01:30:00 -04:00');
    expect(t).toBe(Date.UTC(2024, 10, 3, 5, 30));
  });

  it('reads the three absolute formats and refuses roll-overs', () => {
    expect(parseAbsolute('2023-11-15 03:43:20', 'Asia/Kolkata')).toBe(T);
    expect(parseAbsolute('2023-11-15 03:43', 'Asia/Kolkata')).toBe(T - 20000);
    expect(parseAbsolute('2023-11-15', 'UTC')).toBe(Date.UTC(2023, 10, 15));
    expect(parseAbsolute('2023-13-01', 'UTC')).toBeNull();
    expect(parseAbsolute('2023-02-30', 'UTC')).toBeNull();
    expect(parseAbsolute('2023-01-40', 'UTC')).toBeNull();
    expect(parseAbsolute('yesterday', 'UTC')).toBeNull();
  });

  it('labels Etc/GMT-3 with the conventional sign', () => {
    const o = zoneOptions(T).find((z) => z.value === 'Etc/GMT-3');
    expect(o?.label).toBe('+03:00 Etc/GMT-3');
    const opts = zoneOptions(T);
    expect(opts[0].value).toBe('Browser');
    expect(opts[1].value).toBe('UTC');
  });

  it('prefixes the date when the instant is not today', () => {
    expect(fmtListTs(T, 'UTC', T + 1000)).toBe('22:13:20.000 +00:00');
    expect(fmtListTs(T, 'UTC', T + 2 * 86400000)).toBe('2023/11/14 22:13:20.000 +00:00');
  });
});

describe('the period (§1.2)', () => {
  it('reads relative expressions', () => {
    expect(parseRelative('now', T)).toBe(T);
    expect(parseRelative('now-6h', T)).toBe(T - 6 * 3600000);
    expect(parseRelative('now+1d', T)).toBe(T + 86400000);
    expect(parseRelative('now-1M', T)).toBe(Date.UTC(2023, 9, 14, 22, 13, 20));
    expect(parseRelative('now-5x', T)).toBeNull();
  });

  it('reads epoch ms, a classic A .. B range and scaled Unix stamps', () => {
    expect(parseTimeExpr(String(T), 'UTC', T)).toBe(T);
    expect(parseRangeText('2023-11-14 22:00 .. now', 'UTC', T)).toEqual({ from: Date.UTC(2023, 10, 14, 22), to: T });
    expect(parseUnix('1700000000', T)).toBe(T);
    expect(parseUnix('170000000000', T)).toBe(T);
  });

  it('refuses dates more than 7 years back or 2 years ahead', () => {
    expect(parseTimeExpr('2010-01-01', 'UTC', T)).toBeNull();
    expect(parseTimeExpr('2027-01-01', 'UTC', T)).toBeNull();
  });

  it('picks the quick range closest to a live span', () => {
    expect(closestQuick(50 * 60000).label).toBe('1h');
  });
});

describe('formats (§1.4)', () => {
  it('uses the classic duration thresholds', () => {
    expect(fmtDuration(412)).toBe('412ms');
    expect(fmtDuration(11999)).toBe('11999ms');
    expect(fmtDuration(86000)).toBe('86s');
    expect(fmtDuration(1500000)).toBe('25m 0s');
    expect(fmtDuration(5400000)).toBe('90m 0s');
    expect(fmtDuration(7200000)).toBe('2h 0m');
    expect(fmtDuration(7 * 3600000)).toBe('7h 0m');
    expect(fmtDuration(120 * 3600000)).toBe('5d 00:00');
  });

  it('uses binary byte units and strips the restart suffix', () => {
    expect(fmtBytes(512)).toBe('512 B');
    expect(fmtBytes(2048)).toBe('2.0 KiB');
    expect(shortPod('orders-7d9f-abcde_1700000000000')).toBe('orders-7d9f-abcde');
  });
});

describe('selection filters', () => {
  const disc = {
    partial: false,
    namespaces: [{ namespace: 'ns', calls: 3, services: [
      { service: 'a', calls: 2, pods: [{ pod: 'a-1_1700000000000', calls: 2, restarts: [] }] },
      { service: 'b', calls: 1, pods: [{ pod: 'b-1_1700000000000', calls: 1, restarts: [] }] },
    ] }],
  };
  it('maps one service or one pod to exact filters and several to a pod list', () => {
    expect(selectionFilter({ services: ['ns/a'], pods: [] }, disc)).toEqual({ namespace: 'ns', service: 'a' });
    expect(selectionFilter({ services: [], pods: ['ns/a/a-1_1700000000000'] }, disc))
      .toEqual({ namespace: 'ns', service: 'a', pod: 'a-1_1700000000000' });
    expect(selectionFilter({ services: ['ns/a', 'ns/b'], pods: [] }, disc))
      .toEqual({ namespace: 'ns', pods: 'a-1_1700000000000,b-1_1700000000000' });
    expect(selectionFilter({ services: [], pods: [] }, disc)).toBeNull();
  });
});
