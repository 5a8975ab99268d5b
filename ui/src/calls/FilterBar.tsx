// FilterBar.tsx -- the filters of the calls list (ui.md §3.4–§3.6): duration chips and the
// expression field (validated with the §3.4 grammar; an invalid text is marked red and the
// last valid filter stays), the query box (§3.5: commit on Enter and on clear, Esc clears,
// `/`, `s` or `.` focus it), the Errors-only and Hide-system toggles (§3.6). Everything is written to the URL.

import { useEffect, useRef, useState } from 'preact/hooks';
import { setParams } from '../lib/url';
import { chipFor, DUR_CHIPS, parseDur } from './durfilter';

export interface FilterBarProps {
  dur: string;               // the URL value in force (default applied)
  defaultDur: string;
  q: string;
  errorsOnly: boolean;
  hideSystem: boolean;
  /** server 400 errors that name a parameter */
  durError?: string;
  qError?: string;
}

function isTextField(t: HTMLElement): boolean {
  return t.tagName === 'INPUT' && !['checkbox', 'radio', 'button', 'submit'].includes((t as HTMLInputElement).type);
}

/** The URL value for a committed duration text: the default preset leaves the URL clean. */
function durParam(text: string, defaultDur: string): string | null {
  const t = text.replace(/\s+/g, '');
  const v = t === '' ? 'all' : t;
  return v === defaultDur ? null : v;
}

export function FilterBar(p: FilterBarProps) {
  const shownDur = p.dur === 'all' ? '' : p.dur;
  const [durText, setDurText] = useState(shownDur);
  const [durBad, setDurBad] = useState(parseDur(p.dur) === null);
  const [qText, setQText] = useState(p.q);
  const qRef = useRef<HTMLInputElement>(null);

  useEffect(() => { setDurText(shownDur); setDurBad(parseDur(p.dur) === null); }, [p.dur]);
  useEffect(() => { setQText(p.q); }, [p.q]);

  // `/`, `s` or `.` anywhere outside a text field focuses the query box (§1.6)
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement;
      if (t && (isTextField(t) || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable)) return;
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === '/' || e.key === 's' || e.key === '.') {
        e.preventDefault();
        qRef.current?.focus();
        qRef.current?.select();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const commitDur = (text: string) => {
    if (parseDur(text) === null) { setDurBad(true); return; }
    setDurBad(false);
    setParams({ dur: durParam(text, p.defaultDur) });
  };
  const commitQ = (text: string) => { if (text.trim() !== p.q) setParams({ q: text.trim() || null }); };

  // chips light up only for the committed filter; typing a different text un-selects them
  const editing = durText.replace(/\s+/g, '') !== shownDur.replace(/\s+/g, '');
  const activeChip = editing ? undefined : chipFor(p.dur);

  return (
    <div class="cl-filters">
      <div class="cl-chips" role="group" aria-label="Duration presets">
        {DUR_CHIPS.map((c) => (
          <button type="button" key={c.key} data-testid={`dur-chip-${c.key}`}
            class={`chip ${activeChip?.key === c.key ? 'chip-on' : ''}`}
            onClick={() => { setDurText(c.value === 'all' ? '' : c.value); commitDur(c.value); }}>{c.label}</button>
        ))}
      </div>
      <span class="cl-field">
        <input class={`input cl-dur-input ${durBad || p.durError ? 'invalid' : ''}`} data-testid="dur-input"
          value={durText} placeholder="any duration" spellcheck={false}
          title={'Duration filter: 500ms, >=1s, 3 (seconds), <100ms, =250ms, 100ms..2s'}
          onInput={(e) => { setDurText((e.target as HTMLInputElement).value); setDurBad(false); }}
          onKeyDown={(e) => { if (e.key === 'Enter') commitDur(durText); if (e.key === 'Escape') { setDurText(shownDur); setDurBad(false); } }}
          onBlur={() => { if (editing || durBad) commitDur(durText); }} />
        {(durBad || p.durError) && (
          <span class="cl-field-error" data-testid="dur-error">
            {durBad ? 'not a duration filter (e.g. 500ms, <1s, 100ms..2s)' : p.durError}
          </span>
        )}
      </span>
      <span class="cl-field cl-query">
        <input ref={qRef} class={`input cl-q-input ${p.qError ? 'invalid' : ''}`} data-testid="query-input"
          value={qText} maxLength={1000} spellcheck={false} placeholder="Search: word +required -excluded $param=value"
          onInput={(e) => {
            const v = (e.target as HTMLInputElement).value;
            setQText(v);
            if (v === '' && p.q !== '') commitQ('');
          }}
          onKeyDown={(e) => {
            if (e.key === 'Enter') commitQ(qText);
            else if (e.key === 'Escape') {
              if (qText !== '') { setQText(''); commitQ(''); } else qRef.current?.blur();
            }
          }} />
        <span class="cl-help" tabIndex={0} aria-label="Search syntax">?
          <div class="cl-help-pop popover">
            <b>Search</b> (case-insensitive substrings of method, pod, param names and values)
            <table>
              <tbody>
                <tr><td><code>sysadm admin</code></td><td>either word</td></tr>
                <tr><td><code>+abcde sysadm</code></td><td>must contain abcde</td></tr>
                <tr><td><code>+get -health</code></td><td>get, but not health</td></tr>
                <tr><td><code>"test page"</code></td><td>a phrase (also '…' or `…`)</td></tr>
                <tr><td><code>$nc.user=sysadm</code></td><td>value of one param</td></tr>
                <tr><td><code>$method=health</code></td><td>the method signature</td></tr>
                <tr><td><code>$node.name=billing</code></td><td>the pod name</td></tr>
              </tbody>
            </table>
            <div class="muted small">Enter applies, Esc clears; <code>/</code>, <code>s</code> or <code>.</code> jump here.</div>
          </div>
        </span>
        {p.qError && <span class="cl-field-error" data-testid="query-error">{p.qError}</span>}
      </span>
      <label class="check cl-errors">
        <input type="checkbox" data-testid="errors-toggle" checked={p.errorsOnly}
          onChange={(e) => setParams({ errors: (e.target as HTMLInputElement).checked ? '1' : null })} />
        Errors only
      </label>
      <label class="check cl-errors" title="Hide health probes, scheduler loops, listener threads and other housekeeping calls (evaluated by the server)">
        <input type="checkbox" data-testid="hide-system-toggle" checked={p.hideSystem}
          onChange={(e) => setParams({ hideSystem: (e.target as HTMLInputElement).checked ? null : '0' })} />
        Hide system calls
      </label>
    </div>
  );
}
