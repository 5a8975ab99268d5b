// download.ts -- "Download page" (ui.md §4.9): one standalone HTML file with the page's own
// JS and CSS inlined, the tree JSON (the bytes the API returned) and the view state embedded
// in <script type="application/json" id="cp-offline">. offline.tsx finds that element at
// boot and renders the tree page from it without any fetch.

import { saveText } from '../lib/save';

export interface OfflinePayload {
  v: 1;
  state: string;          // the view state as a query string (tab, q, view, adj, cat, dt, red, …)
  zone: string;           // display zone choice at export
  ids: string[];
  tree: unknown;          // the TreeResp, verbatim
}

export const OFFLINE_ID = 'cp-offline';

// Built from pieces so that this module's own bundled code never contains the sequence:
// an HTML comment opener inside an inline script switches the HTML parser into the
// "double escaped" state, where the closing script tag no longer ends the element.
const COMMENT_OPEN = new RegExp('<' + '!--', 'g');

/** JSON that is safe inside a <script> element: `</` and `<!--` cannot occur in it. Both
 *  replacements are valid JSON escapes (they only ever occur inside strings). */
export function scriptSafeJson(json: string): string {
  return json.replace(/<\//g, '<\\/').replace(COMMENT_OPEN, '\\u003c!--');
}

/** Inline JS may contain neither a closing script tag nor a comment opener. `<\!--` reads
 *  the same in strings, templates and (non-unicode) regular expressions. */
export function scriptSafeJs(js: string): string {
  return js.replace(/<\/(script)/gi, '<\\/$1').replace(COMMENT_OPEN, '<\\!--');
}

async function fetchText(url: string): Promise<string> {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`cannot read ${url}: HTTP ${r.status}`);
  return r.text();
}

/** The page's own code and styles: the module script and stylesheet links of this
 *  document (production build), plus inline <style> elements (the dev server's). */
async function ownAssets(): Promise<{ js: string; css: string }> {
  const scripts = [...document.querySelectorAll<HTMLScriptElement>('script[type="module"][src]')];
  const links = [...document.querySelectorAll<HTMLLinkElement>('link[rel="stylesheet"][href]')];
  const js = (await Promise.all(scripts.map((s) => fetchText(s.src)))).join('\n');
  const css = (await Promise.all(links.map((l) => fetchText(l.href)))).join('\n') +
    [...document.querySelectorAll('style')].map((s) => s.textContent ?? '').join('\n');
  return { js, css };
}

export function offlineHtml(title: string, rawTreeJson: string, p: Omit<OfflinePayload, 'tree' | 'v'>, js: string, css: string): string {
  const head = JSON.stringify({ v: 1, state: p.state, zone: p.zone, ids: p.ids });
  // splice the raw tree bytes in without re-serialising them
  const payload = `${head.slice(0, -1)},"tree":${rawTreeJson}}`;
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const close = '</' + 'script>';
  return [
    '<!doctype html>', '<html lang="en">', '<head>', '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${esc(title)}</title>`, '<link rel="icon" href="data:,">',
    `<style>${css.replace(/<\/(style)/gi, '<\\/$1')}</style>`, '</head>', '<body>', '<div id="app"></div>',
    `<script type="application/json" id="${OFFLINE_ID}">${scriptSafeJson(payload)}${close}`,
    `<script type="module">${scriptSafeJs(js)}${close}`, '</body>', '</html>', '',
  ].join('\n');
}

export async function downloadStandalone(fileName: string, title: string, rawTreeJson: string,
                                         p: Omit<OfflinePayload, 'tree' | 'v'>): Promise<void> {
  const { js, css } = await ownAssets();
  const html = offlineHtml(title, rawTreeJson, p, js, css);
  saveText(fileName, html, 'text/html');
}

/** `<yyyy-MM-dd_HHmm>_<duration>_<N>calls[_<title>].html` (wall clock of the display zone). */
export function offlineFileName(stamp: { y: number; mo: number; d: number; h: number; mi: number }, duration: string,
                                calls: number, title: string): string {
  const p2 = (n: number) => String(n).padStart(2, '0');
  const t = title.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 60);
  return `${stamp.y}-${p2(stamp.mo)}-${p2(stamp.d)}_${p2(stamp.h)}${p2(stamp.mi)}_${duration.replace(/\s+/g, '')}_${calls}calls${t ? '_' + t : ''}.html`;
}
