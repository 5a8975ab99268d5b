// PeriodBar.tsx -- the period controls (ui.md §1.2): quick ranges, typed from/to (relative,
// absolute in the display zone, or one `A .. B` field), shift and zoom, `y` to freeze a
// live window into a permalink, `r` for the last 15 minutes. Changes apply at once.

import { useEffect, useState } from 'preact/hooks';
import { useApp, type Win } from '../lib/ctx';
import { setParams } from '../lib/url';
import { QUICK_RANGES, closestQuick, fmtFull, parseRangeText, parseTimeExpr, relativeSpan, serverNow } from '../lib/time';
import { ZonePicker } from './ZonePicker';

function displayText(text: string, zone: string): string {
  // epoch ms in the URL are shown as wall-clock time in the display zone
  return /^\d{12,14}$/.test(text.trim()) ? fmtFull(Number(text), zone, false) : text;
}

export function PeriodBar({ win, onToast }: { win: Win; onToast: (msg: string) => void }) {
  const app = useApp();
  const [fromText, setFromText] = useState(displayText(win.fromText, app.zone));
  const [toText, setToText] = useState(displayText(win.toText, app.zone));
  const [bad, setBad] = useState<{ from?: boolean; to?: boolean }>({});

  useEffect(() => {
    setFromText(displayText(win.fromText, app.zone));
    setToText(displayText(win.toText, app.zone));
    setBad({});
  }, [win.fromText, win.toText, app.zone]);

  const span = relativeSpan(win.fromText, win.toText);
  const activeQuick = span !== null ? closestQuick(span).label : null;

  const apply = () => {
    const now = serverNow();
    const range = parseRangeText(fromText, app.zone, now);
    if (range && !toText.trim()) {
      setParams({ from: String(range.from), to: String(range.to) });
      return;
    }
    const f = parseTimeExpr(fromText, app.zone, now);
    const t = parseTimeExpr(toText, app.zone, now);
    const nb = { from: f === null, to: t === null || (f !== null && t <= f) };
    setBad(nb);
    if (nb.from || nb.to) return;
    const keep = (text: string, v: number) => (/^\s*now/.test(text) ? text.trim() : String(v));
    setParams({ from: keep(fromText, f!), to: keep(toText, t!) });
  };

  const setAbs = (from: number, to: number) => setParams({ from: String(Math.round(from)), to: String(Math.round(to)) });
  const width = win.to - win.from;

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement;
      if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.isContentEditable)) return;
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === 'y' && win.live) {
        setAbs(win.from, win.to);
        onToast('Window frozen: the URL now holds absolute times');
      } else if (e.key === 'r') {
        setParams({ from: 'now-15m', to: 'now' });
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [win.from, win.to, win.live]);

  return (
    <div class="period-bar" data-testid="period-bar">
      <div class="quick-ranges">
        {QUICK_RANGES.map((q) => (
          <button type="button" key={q.label} class={`chip ${activeQuick === q.label ? 'chip-on' : ''}`}
            data-testid={`quick-${q.label}`} onClick={() => setParams({ from: q.from, to: 'now' })}>{q.label}</button>
        ))}
      </div>
      <form class="period-fields" onSubmit={(e) => { e.preventDefault(); apply(); }}>
        <input class={`input period-input ${bad.from ? 'invalid' : ''}`} data-testid="period-from" value={fromText}
          title="From: now-1h, 2024-03-10 02:30 (display zone), epoch ms, or 'A .. B'"
          onInput={(e) => setFromText((e.target as HTMLInputElement).value)} onBlur={apply} />
        <span class="muted">→</span>
        <input class={`input period-input ${bad.to ? 'invalid' : ''}`} data-testid="period-to" value={toText}
          title="To: now, now-5m, 2024-03-10 03:00, epoch ms"
          onInput={(e) => setToText((e.target as HTMLInputElement).value)} onBlur={apply} />
        <button type="submit" class="btn btn-ghost" title="Apply the typed period">↵</button>
      </form>
      <div class="period-shift">
        <button type="button" class="btn btn-ghost" title="Back by half the window" data-testid="shift-back"
          onClick={() => setAbs(win.from - width / 2, win.to - width / 2)}>◀</button>
        <button type="button" class="btn btn-ghost" title="Zoom out (double)" onClick={() => setAbs(win.from - width / 2, win.to + width / 2)}>−</button>
        <button type="button" class="btn btn-ghost" title="Zoom in (half)" onClick={() => setAbs(win.from + width / 4, win.to - width / 4)}>+</button>
        <button type="button" class="btn btn-ghost" title="Forward by half the window"
          onClick={() => setAbs(win.from + width / 2, win.to + width / 2)}>▶</button>
      </div>
      {win.live && <span class="live-badge" title="The window ends now and moves on every refresh">live</span>}
      {win.error && <span class="error-text">{win.error}</span>}
      <ZonePicker atMs={win.from} />
    </div>
  );
}
