// frame.tsx -- the frame of a full-page dump viewer: a slim top bar with the product name,
// the back link to the Pods Info view it came from, the title and a subtitle.

import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import { buildUrl, type Route } from '../lib/url';
import { safeBack } from './common';

/** Where "back" goes: the Pods Info URL the viewer was opened from, else Pods Info with
 *  the window of this viewer. */
export function backUrl(route: Route): string {
  const p = route.params;
  const fallback = buildUrl('/pods', { from: p.get('from'), to: p.get('to') });
  return safeBack(p.get('back'), fallback);
}

export function ViewerFrame(p: {
  route: Route; title: string; sub?: ComponentChildren; testid: string; children: ComponentChildren; docTitle?: string;
}) {
  useEffect(() => { document.title = `${p.docTitle ?? p.title} · cloudprof`; }, [p.docTitle, p.title]);
  return (
    <div class="viewer" data-testid={p.testid}>
      <header class="viewer-top">
        <a class="brand" href="/calls">cloudprof</a>
        <a href={backUrl(p.route)} data-testid="viewer-back">← Pods Info</a>
        <h1>{p.title}</h1>
        {p.sub && <span class="muted small ellipsis">{p.sub}</span>}
      </header>
      <div class="viewer-body">{p.children}</div>
    </div>
  );
}
