// dumpModel.test.ts -- pure logic of the dump viewers (ui.md §9).

import { describe, expect, it } from 'vitest';
import {
  buildMonitors, closestInMinute, deadlockedThreads, fmtProfileValue, fmtTopTime, fullState, groupStacks, isFullGc,
  isSystemThread, niceTicks, pct, timeTicks, topByNid, type TdThread, type TopRow,
} from './dumpModel';

function th(name: string, p: Partial<TdThread> = {}): TdThread {
  return {
    name, seq: 1, daemon: false, priority: 5, os_priority: 0, cpu_ms: 1, elapsed_s: 1, tid: '0x1', nid: 1,
    state: 'RUNNABLE', state_detail: '', header_state: 'runnable', frames: ['a.B.c(B.java:1)'], locks_held: [], locks_waited: [], ...p,
  };
}

describe('thread dump', () => {
  it('state keys match the API states map', () => {
    expect(fullState(th('x', { state: 'WAITING', state_detail: 'parking' }))).toBe('WAITING (parking)');
    expect(fullState(th('x'))).toBe('RUNNABLE');
    expect(fullState(th('x', { state: '' }))).toBe('');
  });

  it('JVM threads: non-Java ones and the well-known names', () => {
    expect(isSystemThread(th('VM Thread', { state: '' }))).toBe(true);
    expect(isSystemThread(th('C2 CompilerThread0'))).toBe(true);
    expect(isSystemThread(th('Reference Handler'))).toBe(true);
    expect(isSystemThread(th('Signal Dispatcher'))).toBe(true);
    expect(isSystemThread(th('pool-4-thread-2'))).toBe(false);
    expect(isSystemThread(th('Thread-2'))).toBe(false);
  });

  it('groups identical stacks, largest first', () => {
    const ts = [th('a', { frames: ['x', 'y'] }), th('b', { frames: ['z'] }), th('c', { frames: ['x', 'y'] })];
    const g = groupStacks(ts, [0, 1, 2]);
    expect(g.map((x) => x.threads)).toEqual([[0, 2], [1]]);
    expect(groupStacks(ts, [1])).toHaveLength(1);
  });

  it('Object.wait() does not hold the monitor it waits on', () => {
    const fin = th('Finalizer', {
      locks_held: [{ addr: '0xa', class: 'L', frame: 1 }],
      locks_waited: [{ kind: 'waiting_on', addr: '0xa', class: 'L', frame: 0 }],
    });
    const m = buildMonitors([fin]);
    expect(m).toHaveLength(1);
    expect(m[0].holders).toEqual([]);
    expect(m[0].waiters).toEqual([{ t: 0, kind: 'waiting_on' }]);
  });

  it('finds the deadlock cycle and leaves a bystander out', () => {
    const a = th('A', { locks_held: [{ addr: '0x1', class: 'O', frame: 0 }], locks_waited: [{ kind: 'waiting_to_lock', addr: '0x2', class: 'O', frame: 0 }] });
    const b = th('B', { locks_held: [{ addr: '0x2', class: 'O', frame: 0 }], locks_waited: [{ kind: 'waiting_to_lock', addr: '0x1', class: 'O', frame: 0 }] });
    const c = th('C', { locks_waited: [{ kind: 'waiting_to_lock', addr: '0x1', class: 'O', frame: 0 }] });
    const ts = [a, b, c];
    const mons = buildMonitors(ts);
    expect([...deadlockedThreads(ts, mons)].sort()).toEqual([0, 1]);
    expect(mons[0].addr).toBe('0x1'); // contended monitors with a holder and the most waiters first
    expect(deadlockedThreads([c], buildMonitors([c])).size).toBe(0);
  });

  it('joins top rows by native id, and picks the file of the same minute', () => {
    const rows = [{ pid: 249, cpu_pct: 5.9 }, { pid: 250, cpu_pct: 0 }] as TopRow[];
    expect(topByNid(rows).get(249)?.cpu_pct).toBe(5.9);
    const c = [{ time_ms: 1000, capture_ms: null, id: 'a' }, { time_ms: 61000 + 1000, capture_ms: null, id: 'b' }];
    expect(closestInMinute(c, 1500, null)?.id).toBe('a');
    expect(closestInMinute(c, 200000, null)).toBeNull();
    expect(closestInMinute([{ time_ms: 0, capture_ms: 5000, id: 'x' }], 90000, 6000)?.id).toBe('x');
  });
});

describe('GC, top, pprof formats', () => {
  it('marks full collections', () => {
    expect(isFullGc({ kind: 'Pause Full', cause: 'System.gc()' } as any)).toBe(true);
    expect(isFullGc({ kind: 'Pause Young', cause: 'Allocation Failure' } as any)).toBe(false);
  });

  it('nice ticks', () => {
    expect(niceTicks(0, 63.3, 5)).toEqual([0, 20, 40, 60]);
    expect(niceTicks(0, 1, 5)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    const t = timeTicks(0, 3600000, 6);
    expect(t[1] - t[0]).toBe(600000);
  });

  it('TIME+ like top', () => {
    expect(fmtTopTime(1072.72)).toBe('17:52.72');
    expect(fmtTopTime(5.5)).toBe('0:05.50');
  });

  it('pprof values by unit and percentages', () => {
    expect(fmtProfileValue(1048576, 'bytes')).toBe('1.0 MiB');
    expect(fmtProfileValue(10000000, 'nanoseconds')).toBe('10ms');
    expect(fmtProfileValue(81, 'count')).toBe('81');
    expect(pct(1, 8)).toBe('12.5%');
    expect(pct(1, 0)).toBe('');
  });
});
