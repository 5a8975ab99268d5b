// ZonePicker.tsx -- the display-zone picker (ui.md §1.3): Browser first, then UTC, then
// every zone by its offset at the window start; typing filters by name or offset text.

import { useMemo, useRef, useState } from 'preact/hooks';
import { useApp } from '../lib/ctx';
import { BROWSER, fmtOffset, offsetMin, zoneOptions } from '../lib/time';

export function ZonePicker({ atMs }: { atMs: number }) {
  const app = useApp();
  const [open, setOpen] = useState(false);
  const [filter, setFilter] = useState('');
  const input = useRef<HTMLInputElement>(null);
  const options = useMemo(() => (open ? zoneOptions(atMs) : []), [open, atMs]);
  const f = filter.trim().toLowerCase();
  const shown = f ? options.filter((o) => o.label.toLowerCase().includes(f)) : options;
  const label = app.zoneChoice === BROWSER ? `Browser ${fmtOffset(offsetMin(atMs, app.zone))}` : app.zoneChoice;

  const choose = (v: string) => {
    app.setZone(v);
    setOpen(false);
    setFilter('');
  };

  return (
    <div class="zone-picker">
      <button type="button" class="btn btn-ghost" data-testid="zone-button" title={`Display time zone: ${app.zone}`}
        onClick={() => { setOpen(!open); setTimeout(() => input.current?.focus(), 0); }}>
        Zone: {label}
      </button>
      {open && (
        <div class="popover zone-popover" data-testid="zone-popover">
          <input ref={input} class="input" placeholder="Filter zones by name or offset" value={filter}
            onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
            onKeyDown={(e) => {
              if (e.key === 'Escape') setOpen(false);
              if (e.key === 'Enter' && shown.length) choose(shown[0].value);
            }} />
          <ul class="zone-list">
            {shown.slice(0, 400).map((o) => (
              <li key={o.value} class={o.value === app.zoneChoice ? 'selected' : ''}
                data-zone={o.value} onClick={() => choose(o.value)}>{o.label}</li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}
