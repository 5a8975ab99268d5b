// ColumnSettings.tsx -- the column-settings popover (ui.md §3.2): show/hide each column,
// move it up or down, Reset to the default layout. The last visible column cannot be
// hidden.

import { useEffect, useRef, useState } from 'preact/hooks';
import { COL_BY_KEY, type Layout } from './columns';

export function ColumnSettings({ layout, onChange, onReset }: {
  layout: Layout; onChange: (l: Layout) => void; onReset: () => void;
}) {
  const [open, setOpen] = useState(false);
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (!open) return;
    const onDoc = (e: MouseEvent) => { if (box.current && !box.current.contains(e.target as Node)) setOpen(false); };
    const onKey = (e: KeyboardEvent) => { if (e.key === 'Escape') setOpen(false); };
    document.addEventListener('mousedown', onDoc);
    document.addEventListener('keydown', onKey);
    return () => { document.removeEventListener('mousedown', onDoc); document.removeEventListener('keydown', onKey); };
  }, [open]);

  const visibleCount = layout.order.filter((k) => !layout.hidden.includes(k)).length;
  const toggle = (k: string) => {
    const hidden = layout.hidden.includes(k) ? layout.hidden.filter((x) => x !== k) : [...layout.hidden, k];
    onChange({ ...layout, hidden });
  };
  const move = (i: number, d: number) => {
    const order = [...layout.order];
    const j = i + d;
    if (j < 0 || j >= order.length) return;
    [order[i], order[j]] = [order[j], order[i]];
    onChange({ ...layout, order });
  };

  return (
    <div class="cl-colset" ref={box}>
      <button type="button" class={`btn ${open ? 'btn-on' : ''}`} data-testid="columns-button"
        title="Show, hide, reorder columns" onClick={() => setOpen(!open)}>Columns ▾</button>
      {open && (
        <div class="popover cl-colset-pop" data-testid="columns-popover">
          <ul>
            {layout.order.map((k, i) => {
              const shown = !layout.hidden.includes(k);
              return (
                <li key={k}>
                  <label class="check">
                    <input type="checkbox" checked={shown} disabled={shown && visibleCount <= 1}
                      data-testid={`column-toggle-${k}`} onChange={() => toggle(k)} />
                    {COL_BY_KEY.get(k)!.label}
                  </label>
                  <span class="spacer" />
                  <button type="button" class="btn btn-ghost btn-small" title="Move up" disabled={i === 0}
                    data-testid={`column-up-${k}`} onClick={() => move(i, -1)}>↑</button>
                  <button type="button" class="btn btn-ghost btn-small" title="Move down" disabled={i === layout.order.length - 1}
                    data-testid={`column-down-${k}`} onClick={() => move(i, 1)}>↓</button>
                </li>
              );
            })}
          </ul>
          <div class="cl-colset-foot">
            <span class="muted small">Drag a header's right edge to resize.</span>
            <button type="button" class="btn btn-small" data-testid="columns-reset" onClick={onReset}>Reset</button>
          </div>
        </div>
      )}
    </div>
  );
}
