// format.ts -- number formats of ui.md §1.4 (classic thresholds).

/** Duration in ms: `412ms` below 12 000 ms, `86s` below 1 000 s, `Xm Ys` below 100 min,
 *  `Xh Ym` below 100 h, else `Xd HH:MM`. */
export function fmtDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '';
  const neg = ms < 0;
  const v = Math.abs(Math.round(ms));
  let s: string;
  if (v < 12000) s = `${v}ms`;
  else if (v < 1000000) s = `${Math.round(v / 1000)}s`;
  else {
    const totalS = Math.round(v / 1000);
    const totalM = Math.floor(totalS / 60);
    if (totalM < 100) s = `${totalM}m ${totalS % 60}s`;
    else {
      const totalH = Math.floor(totalM / 60);
      if (totalH < 100) s = `${totalH}h ${totalM % 60}m`;
      else {
        const d = Math.floor(totalH / 24);
        s = `${d}d ${pad2(totalH % 24)}:${pad2(totalM % 60)}`;
      }
    }
  }
  return neg ? '-' + s : s;
}

export function pad2(n: number): string {
  return n < 10 ? '0' + n : String(n);
}

export function pad3(n: number): string {
  return n < 10 ? '00' + n : n < 100 ? '0' + n : String(n);
}

/** Counts: plain below 100 000, then `1234 K`. */
export function fmtCount(n: number): string {
  if (!Number.isFinite(n)) return '';
  if (Math.abs(n) < 100000) return String(Math.round(n));
  return `${Math.round(n / 1000)} K`;
}

/** Bytes in binary units. */
export function fmtBytes(n: number): string {
  if (!Number.isFinite(n)) return '';
  const a = Math.abs(n);
  if (a < 1024) return `${Math.round(n)} B`;
  if (a < 1024 * 1024) return `${(n / 1024).toFixed(a < 10 * 1024 ? 1 : 0)} KiB`;
  if (a < 1024 * 1024 * 1024) return `${(n / 1048576).toFixed(a < 10 * 1048576 ? 1 : 0)} MiB`;
  return `${(n / 1073741824).toFixed(a < 10 * 1073741824 ? 2 : 1)} GiB`;
}

/** A colour for the duration dot of the new UI: < 100 ms green, < 1 s yellow, < 3 s amber,
 *  else red. */
export function durationDot(ms: number): string {
  if (ms < 100) return 'dot-green';
  if (ms < 1000) return 'dot-yellow';
  if (ms < 3000) return 'dot-amber';
  return 'dot-red';
}

/** Pod name without the agent's `_<JVM start ms>` suffix. */
export function shortPod(pod: string): string {
  const m = /^(.*)_\d{10,}$/.exec(pod);
  return m ? m[1] : pod;
}
