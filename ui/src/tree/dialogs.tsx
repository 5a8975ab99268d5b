// dialogs.tsx -- the tree page's dialogs (ui.md §4.5): Get stacktrace (path root→node with
// numbers, Copy), the full value of a param (SQL / XML / JSON pretty-printed, Copy), and the
// rule editors of Adjust duration and Setup categories (OK / Cancel / Apply, invalid lines
// listed).

import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { apiUrl } from '../lib/api';
import { parseAdjust, parseCategories } from './derived';
import { stackLine } from './methodname';
import { tokensFor } from './syntax';
import type { TreeModel } from './model';
import { fmtInv } from './numbers';
import { fmtVal } from './units';

export function Dialog({ title, onClose, children, buttons, testid }: {
  title: string; onClose: () => void; children: ComponentChildren; buttons?: ComponentChildren; testid?: string;
}) {
  useEffect(() => {
    const h = (e: KeyboardEvent) => { if (e.key === 'Escape') { e.stopPropagation(); onClose(); } };
    window.addEventListener('keydown', h, true);
    return () => window.removeEventListener('keydown', h, true);
  }, [onClose]);
  return (
    <div class="overlay" onMouseDown={(e) => { if (e.target === e.currentTarget) onClose(); }}>
      <div class="dialog" role="dialog" aria-label={title} data-testid={testid}>
        <h2 style={{ margin: 0 }}>{title}</h2>
        <div class="dialog-body">{children}</div>
        <div class="dialog-buttons">{buttons ?? <button type="button" class="btn" onClick={onClose}>Close</button>}</div>
      </div>
    </div>
  );
}

export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // file:// pages and old browsers: the textarea fallback
    const ta = document.createElement('textarea');
    ta.value = text;
    ta.style.position = 'fixed';
    ta.style.opacity = '0';
    document.body.appendChild(ta);
    ta.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch { ok = false; }
    ta.remove();
    return ok;
  }
}

function CopyButton({ text }: { text: string }) {
  const [done, setDone] = useState<string | null>(null);
  return (
    <button type="button" class="btn btn-primary" data-testid="copy"
      onClick={() => copyText(text).then((ok) => setDone(ok ? 'Copied' : 'Copy failed'))}>{done ?? 'Copy'}</button>
  );
}

/** Root at the bottom: the node first, its callers below it (§4.5). */
export function stacktraceText(m: TreeModel, node: number): string {
  const lines: string[][] = [];
  for (let x = node; x >= 0; x = m.parent[x]) {
    const n = m.names.get(m.method[x]);
    lines.push([
      fmtVal(m.total[x]), `${fmtVal(m.self[x])} self`, `${fmtInv(m.inv[x])} inv`,
      m.calls[x] > 0 ? `${fmtInv(m.calls[x])} calls` : '', stackLine(n),
    ]);
  }
  const w = [0, 1, 2, 3].map((c) => Math.max(...lines.map((l) => l[c].length)));
  return lines.map((l) => `${l[0].padStart(w[0])} ${l[1].padStart(w[1])} ${l[2].padStart(w[2])} ${l[3].padStart(w[3])}  ${l[4]}`).join('\n');
}

export function StacktraceDialog({ model, node, onClose }: { model: TreeModel; node: number; onClose: () => void }) {
  const text = stacktraceText(model, node);
  return (
    <Dialog title="Stacktrace" onClose={onClose} testid="stacktrace-dialog"
      buttons={<><CopyButton text={text} /><button type="button" class="btn" onClick={onClose}>Close</button></>}>
      <div class="tp-stack">{text}</div>
    </Dialog>
  );
}

// ---- value viewer ------------------------------------------------------------------------

const SQL_KW = /\b(select|from|where|and|or|group by|order by|having|join|left join|right join|inner join|outer join|union( all)?|values|set|insert into|update|delete from|returning|limit|offset)\b/gi;

export function prettyValue(name: string, v: string): string {
  const t = v.trim();
  if (/json/i.test(name) || ((t.startsWith('{') || t.startsWith('[')) && !/^(sql|binds)$/.test(name))) {
    try { return JSON.stringify(JSON.parse(t), null, 2); } catch { /* not JSON */ }
  }
  if (/xml/i.test(name) || t.startsWith('<')) return prettyXml(t);
  if (/^(sql|sql\.monitor|mdx|cassandra\.query)$/.test(name)) {
    return t.replace(/\s+/g, ' ').replace(SQL_KW, (k) => '\n' + k.toUpperCase()).replace(/^\n/, '');
  }
  return v;
}

function prettyXml(x: string): string {
  const parts = x.replace(/>\s*</g, '><').split(/(?=<)/);
  let depth = 0;
  const out: string[] = [];
  for (const p of parts) {
    if (/^<\//.test(p)) depth = Math.max(0, depth - 1);
    out.push('  '.repeat(depth) + p);
    if (/^<[^!?/][^>]*[^/]>(?!.*<\/)/.test(p) && !/^<[^>]*\/>$/.test(p)) depth++;
  }
  return out.join('\n');
}

/** The text with SQL/XML colouring (syntax.ts), or plain. */
function Coloured({ name, text }: { name: string; text: string }) {
  const toks = text.length <= 500000 ? tokensFor(name, text) : null;  // a huge value stays plain: fast
  if (!toks) return <>{text}</>;
  return <>{toks.map((t, i) => (t.c ? <span key={i} class={`sx-${t.c}`}>{t.t}</span> : t.t))}</>;
}

/** The calls to ask for a trimmed value: the one the server says it was first seen in
 *  (`source`, the only one an aggregate profile names), then the tree's own calls. */
export function askOrder(treeIds: string[], source?: string): string[] {
  const own = treeIds.length && treeIds[0] !== 'synthetic' ? treeIds : [];
  return source ? [source, ...own.filter((id) => id !== source)] : own;
}

/** The whole text of a trimmed value (GET /calls/{id}/value): the tree's calls are asked
 *  in turn, the first that has the value answers. */
export async function fetchFullValue(ids: string[], param: string, key: string): Promise<string> {
  let last = 'no call of this tree has the value';
  for (const id of ids.slice(0, 20)) {
    const res = await fetch(apiUrl(`/calls/${encodeURIComponent(id)}/value`, { param, key }), { headers: { Accept: 'text/plain, application/json' } });
    if (res.ok) return res.text();
    try { const b = await res.json(); last = typeof b.error === 'string' ? b.error : `HTTP ${res.status}`; } catch { last = `HTTP ${res.status}`; }
    if (res.status !== 404) break;
  }
  throw new Error(last);
}

export function ValueDialog({ name, value: shownValue, fullKey, ids: treeIds, source, onClose }: {
  name: string; value: string; fullKey?: string; ids?: string[]; source?: string; onClose: () => void;
}) {
  const [raw, setRaw] = useState(false);
  const [full, setFull] = useState<{ text: string | null; busy: boolean; error: string | null }>({ text: null, busy: false, error: null });
  const ids = askOrder(treeIds ?? [], source);
  const canFetch = !!fullKey && ids.length > 0;
  const value = full.text ?? shownValue;
  const pretty = prettyValue(name, value);
  const load = () => {
    if (!canFetch) return;
    setFull({ text: null, busy: true, error: null });
    fetchFullValue(ids, name, fullKey!).then((t) => setFull({ text: t, busy: false, error: null }))
      .catch((e) => setFull({ text: null, busy: false, error: String((e as Error)?.message ?? e) }));
  };
  return (
    <Dialog title={`${name} (${value.length} characters)`} onClose={onClose} testid="value-dialog"
      buttons={<>
        {pretty !== value && <button type="button" class="btn" onClick={() => setRaw(!raw)}>{raw ? 'Formatted' : 'View source'}</button>}
        <CopyButton text={value} /><button type="button" class="btn" onClick={onClose}>Close</button>
      </>}>
      {fullKey && full.text === null && (
        <div class="banner banner-amber" data-testid="value-trimmed">The tree shows the first 15 000 characters of this value.
          {canFetch
            ? <button type="button" class="btn btn-small" data-testid="value-load-full" disabled={full.busy} onClick={load}>
                {full.busy ? 'Loading…' : 'View full value'}</button>
            : <span class="muted"> (the whole text is fetched from a call of the tree; this one names none)</span>}
          {full.error && <span class="red"> {full.error}</span>}
        </div>
      )}
      <div class="tp-value" data-testid="value-text"><Coloured name={name} text={raw ? value : pretty} /></div>
    </Dialog>
  );
}

// ---- rule editors ---------------------------------------------------------------------------

export function RulesDialog({ kind, text, onApply, onClose }: {
  kind: 'adjust' | 'categories'; text: string; onApply: (t: string) => void; onClose: () => void;
}) {
  const [t, setT] = useState(text);
  const invalid = kind === 'adjust' ? parseAdjust(t).invalid : parseCategories(t).invalid;
  const saved = localStorage.getItem(`cloudprof.tree.${kind}`);
  const help = kind === 'adjust'
    ? 'One rule per line: <factor> <method pattern>. Factor: a number or a fraction a/b. * matches any text; the pattern may match anywhere in the full method string; the longest matching pattern wins; nested matches multiply. # starts a comment.'
    : 'One rule per line: <category> <method pattern>. A pattern starting with > applies to the method\'s children (and below) only. The longest pattern wins; a category covers the subtree until a deeper match.';
  return (
    <Dialog title={kind === 'adjust' ? 'Adjust duration' : 'Setup categories'} onClose={onClose} testid={`${kind}-dialog`}
      buttons={<>
        {kind === 'categories' && <>
          <button type="button" class="btn" onClick={() => localStorage.setItem(`cloudprof.tree.${kind}`, t)} title="Keep this rule set in this browser">Save set</button>
          <button type="button" class="btn" disabled={!saved} onClick={() => saved !== null && setT(saved)}>Load saved</button>
          <span class="spacer" />
        </>}
        <button type="button" class="btn btn-primary" onClick={() => { onApply(t); onClose(); }}>OK</button>
        <button type="button" class="btn" onClick={onClose}>Cancel</button>
        <button type="button" class="btn" onClick={() => onApply(t)}>Apply</button>
      </>}>
      <p class="muted small" style={{ marginTop: 0 }}>{help}</p>
      <textarea class="input" rows={10} value={t} spellcheck={false} data-testid={`${kind}-text`}
        onInput={(e) => setT((e.currentTarget as HTMLTextAreaElement).value)}
        placeholder={kind === 'adjust' ? '1/10 *OrderDao.find*\n2 *PaymentService*' : 'db *.dao.*\njdbc >*Hikari*'} />
      {invalid.length > 0 && <div class="tp-warn">Ignored (invalid): {invalid.join('; ')}</div>}
    </Dialog>
  );
}
