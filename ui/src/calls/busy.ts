// busy.ts -- "server busy" of the status line (ui.md §3.8): the length of the union of the
// calls' [start, start + duration] intervals. Starts and ends are sorted separately in
// typed arrays (a numeric sort, no comparator calls), then swept: 100 000 rows take a
// few ms, so it can be recomputed after every page.

export function busyMs(rows: ReadonlyArray<{ ts_ms: number; duration_ms: number }>): number {
  const n = rows.length;
  if (n === 0) return 0;
  const starts = new Float64Array(n);
  const ends = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    starts[i] = r.ts_ms;
    ends[i] = r.ts_ms + Math.max(0, r.duration_ms);
  }
  starts.sort();
  ends.sort();
  let busy = 0, active = 0, i = 0, j = 0, openedAt = 0;
  // a start and an end at the same instant: take the start first so touching intervals join
  while (i < n || j < n) {
    if (i < n && starts[i] <= ends[j]) {
      if (active === 0) openedAt = starts[i];
      active++;
      i++;
    } else {
      active--;
      if (active === 0) busy += ends[j] - openedAt;
      j++;
    }
  }
  return busy;
}
