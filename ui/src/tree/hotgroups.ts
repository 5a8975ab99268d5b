// hotgroups.ts -- the group rows of Hotspots (ui.md §4.6), pure TS: methods grouped first by
// category, whose dotted names nest (`db.jdbc.select` sits in DB > JDBC > SELECT), then
// optionally by package module (logging, database driver, profiler, scheduler, reflection,
// other JDK, other). Each group carries the sums of what it holds.

import type { HotRow } from './derived';

export const MODULES = ['logging', 'database driver', 'profiler', 'scheduler', 'reflection', 'other JDK', 'other'] as const;
export type Module = (typeof MODULES)[number];

const MODULE_PREFIXES: [Module, string[]][] = [
  ['logging', ['org.slf4j.', 'ch.qos.logback.', 'org.apache.log4j.', 'org.apache.logging.', 'java.util.logging.', 'org.jboss.logging.',
    'org.apache.commons.logging.']],
  ['database driver', ['oracle.jdbc.', 'oracle.sql.', 'org.postgresql.', 'com.mysql.', 'org.mariadb.', 'com.microsoft.sqlserver.', 'org.h2.',
    'org.hsqldb.', 'com.ibm.db2.', 'net.sourceforge.jtds.', 'com.zaxxer.hikari.', 'org.apache.commons.dbcp', 'com.mchange.v2.c3p0.',
    'com.datastax.', 'org.mongodb.', 'com.mongodb.', 'redis.clients.', 'io.lettuce.', 'java.sql.', 'javax.sql.']],
  ['profiler', ['com.netcracker.profiler.', 'org.qubership.profiler.', 'io.cloudprof.']],
  ['scheduler', ['org.quartz.', 'org.springframework.scheduling.', 'java.util.concurrent.ScheduledThreadPoolExecutor', 'java.util.Timer']],
  ['reflection', ['java.lang.reflect.', 'sun.reflect.', 'jdk.internal.reflect.', 'java.lang.invoke.', 'net.sf.cglib.',
    'org.springframework.cglib.', 'net.bytebuddy.', 'javassist.']],
  ['other JDK', ['java.', 'javax.', 'jdk.', 'sun.', 'com.sun.', 'jakarta.']],
];

/** The package module of a fully qualified method (`pkg.Class.method`). CGLIB proxies
 *  (`$$EnhancerBy…`) count as reflection whatever their package. */
export function packageModule(fqn: string): Module {
  if (/\$\$(EnhancerBy|FastClassBy)/.test(fqn)) return 'reflection';
  for (const [mod, prefixes] of MODULE_PREFIXES) if (prefixes.some((p) => fqn.startsWith(p))) return mod;
  return 'other';
}

export interface HotSums { self: number; selfSusp: number; inv: number; total: number }

export interface HotGroup {
  key: string;          // unique path, e.g. "c:DB/JDBC" or "c:DB/m:logging"
  label: string;        // DB, JDBC, logging, UNSORTED …
  depth: number;
  sums: HotSums;
  groups: HotGroup[];
  rows: HotRow[];
}

const add = (s: HotSums, r: HotRow) => { s.self += r.self; s.selfSusp += r.selfSusp; s.inv += r.inv; s.total += r.total; };

/** Groups the rows (already sorted) by category path and, when `moduleOf` is given, by
 *  module; groups sorted like their rows (by self or total), UNSORTED and `other` last. */
export function groupHotspots(rows: HotRow[], catNames: string[] | null, moduleOf: ((method: number) => Module) | null,
                              by: 'self' | 'total' = 'self'): HotGroup {
  const root: HotGroup = { key: '', label: '', depth: -1, sums: { self: 0, selfSusp: 0, inv: 0, total: 0 }, groups: [], rows: [] };
  const child = (g: HotGroup, key: string, label: string): HotGroup => {
    let c = g.groups.find((x) => x.key === key);
    if (!c) { c = { key, label, depth: g.depth + 1, sums: { self: 0, selfSusp: 0, inv: 0, total: 0 }, groups: [], rows: [] }; g.groups.push(c); }
    return c;
  };
  for (const r of rows) {
    let g = root;
    add(g.sums, r);
    if (catNames) {
      const parts = r.cat >= 0 ? catNames[r.cat].split('.').filter(Boolean) : [];
      const path = parts.length ? parts : ['UNSORTED'];
      let key = 'c:';
      for (const p of path) { key += `/${p}`; g = child(g, key, p.toUpperCase()); add(g.sums, r); }
    }
    if (moduleOf) { const m = moduleOf(r.method); g = child(g, `${g.key}/m:${m}`, m); add(g.sums, r); }
    g.rows.push(r);
  }
  const last = (g: HotGroup) => (g.label === 'UNSORTED' || g.label === 'other' ? 1 : 0);
  const sortRec = (g: HotGroup) => {
    g.groups.sort((a, b) => last(a) - last(b) || (by === 'total' ? b.sums.total - a.sums.total : b.sums.self - a.sums.self));
    g.groups.forEach(sortRec);
  };
  sortRec(root);
  return root;
}
