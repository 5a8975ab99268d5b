import { describe, expect, it } from 'vitest';
import { groupHotspots, packageModule } from './hotgroups';

const row = (method: number, cat: number, self: number) => ({ method, cat, self, selfSusp: 0, inv: 1, total: self });

describe('Hotspots groups (§4.6)', () => {
  it('package modules', () => {
    expect(packageModule('org.slf4j.Logger.info')).toBe('logging');
    expect(packageModule('oracle.jdbc.driver.T4CPreparedStatement.executeQuery')).toBe('database driver');
    expect(packageModule('org.quartz.core.JobRunShell.run')).toBe('scheduler');
    expect(packageModule('jdk.internal.reflect.NativeMethodAccessorImpl.invoke0')).toBe('reflection');
    expect(packageModule('com.acme.Config$$EnhancerBySpringCGLIB$$1.get')).toBe('reflection');
    expect(packageModule('java.util.HashMap.get')).toBe('other JDK');
    expect(packageModule('com.acme.Orders.find')).toBe('other');
  });
  it('dotted categories nest, sums on every level, unsorted last', () => {
    const cats = ['db.jdbc.select', 'db.jdbc.update', 'web'];
    const g = groupHotspots([row(1, 0, 50), row(2, 2, 40), row(3, 1, 30), row(4, -1, 100)], cats, null);
    expect(g.groups.map((x) => [x.label, x.sums.self])).toEqual([['DB', 80], ['WEB', 40], ['UNSORTED', 100]]);
    const jdbc = g.groups[0].groups[0];
    expect(jdbc.label).toBe('JDBC');
    expect(jdbc.groups.map((x) => [x.label, x.sums.self, x.depth])).toEqual([['SELECT', 50, 2], ['UPDATE', 30, 2]]);
    expect(jdbc.groups[0].rows.map((r) => r.method)).toEqual([1]);
  });
  it('modules below categories', () => {
    const mods: Record<number, 'logging' | 'other'> = { 1: 'logging', 2: 'other', 3: 'logging' };
    const g = groupHotspots([row(1, -1, 5), row(2, -1, 50), row(3, -1, 10)], null, (m) => mods[m]);
    expect(g.groups.map((x) => [x.label, x.sums.self, x.rows.length])).toEqual([['logging', 15, 2], ['other', 50, 1]]);
  });
});
