// units.ts -- what the numbers of the tree page are (ui.md §1.4, §9.4, §10.7): time in ms
// for call trees (the default), and for sampled trees (thread-dump series, pprof) the
// sample type's unit: samples (as counts, as a share of all samples, or as time at a
// chosen ms per sample -- the personal setting, default 1000), bytes, counts, nanoseconds.
// One tree page shows one tree, so the unit is set once per page by the page that loads it
// (TreePage) and every view formats node values with fmtVal.

import { fmtBytes, fmtCount, fmtDuration } from '../lib/format';

export type SampleShow = 'count' | 'pct' | 'time';
export interface TreeUnit {
  kind: 'ms' | 'samples' | 'bytes' | 'count' | 'ns';
  show: SampleShow;        // samples only
  msPerSample: number;     // samples shown as time
  total: number;           // the root's value (samples shown as a share)
}

export const TIME: TreeUnit = { kind: 'ms', show: 'time', msPerSample: 1000, total: 0 };
let cur: TreeUnit = TIME;

export function setTreeUnit(u: TreeUnit): void { cur = u; }
export function treeUnit(): TreeUnit { return cur; }

/** The pprof unit names (`nanoseconds`, `bytes`, `count`, …) and "samples" → a kind. */
export function unitKind(unit: string | undefined): TreeUnit['kind'] {
  switch (unit) {
    case 'samples': return 'samples';
    case 'bytes': return 'bytes';
    case 'nanoseconds': return 'ns';
    case 'count': case 'objects': return 'count';
    default: return unit ? 'count' : 'ms';
  }
}

export function fmtWith(u: TreeUnit, v: number): string {
  switch (u.kind) {
    case 'ms': return fmtDuration(v);
    case 'ns': return fmtDuration(v / 1e6);
    case 'bytes': return fmtBytes(v);
    case 'count': return fmtCount(Math.round(v));
    case 'samples':
      if (u.show === 'time') return fmtDuration(v * u.msPerSample);
      if (u.show === 'pct') return u.total > 0 ? `${((v / u.total) * 100).toFixed(v / u.total < 0.1 ? 2 : 1)} %` : '0 %';
      return `${fmtCount(Math.round(v))} smp`;
  }
}

/** A node value (total, self, …) in the page's unit. */
export function fmtVal(v: number): string { return fmtWith(cur, v); }

/** The personal setting for sampled trees (§1.4): how samples show, ms per sample. */
export function loadSampleShow(): { show: SampleShow; msPerSample: number } {
  const s = localStorage.getItem('cloudprof.tree.sampleShow');
  const ms = Number(localStorage.getItem('cloudprof.tree.msPerSample'));
  return { show: s === 'pct' || s === 'time' ? s : 'count', msPerSample: Number.isFinite(ms) && ms > 0 ? ms : 1000 };
}

export function saveSampleShow(show: SampleShow, msPerSample: number): void {
  localStorage.setItem('cloudprof.tree.sampleShow', show);
  localStorage.setItem('cloudprof.tree.msPerSample', String(msPerSample));
}
