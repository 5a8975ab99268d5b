// DumpPage.tsx -- the full-page dump viewers of ui.md §9, opened in their own tab from the
// Pods Info file lists: /dump/td/<id>, /dump/top/<id>, /dump/profile/<id> and
// /dump/gc?namespace=&pod=&from=&to=. This file routes and draws the common frame (top bar
// with the back link to Pods Info, frame.tsx); each viewer lives in its own file.

import type { Route } from '../lib/url';
import { ViewerFrame } from './frame';
import { GcView } from './GcView';
import { ProfileView } from './ProfileView';
import { TdView } from './TdView';
import { TopView } from './TopView';
import { TopSeriesView } from './TopSeriesView';
import './pods.css';

export function DumpPage({ route }: { route: Route }) {
  const parts = route.path.replace(/\/+$/, '').split('/').slice(2).map(safeDecode);
  const [kind, id] = parts;
  if (kind === 'td' && id) return <TdView id={id} route={route} />;
  if (kind === 'top' && id) return <TopView id={id} route={route} />;
  if (kind === 'profile' && id) return <ProfileView id={id} route={route} />;
  if (kind === 'gc') return <GcView route={route} />;
  if (kind === 'topseries') return <TopSeriesView route={route} />;
  return (
    <ViewerFrame route={route} title="Unknown viewer" testid="dump-unknown">
      <div class="state">There is no viewer at {route.path}. Viewers: /dump/td/&lt;id&gt;, /dump/top/&lt;id&gt;,
        /dump/profile/&lt;id&gt;, /dump/gc?pod=…, /dump/topseries?pod=…</div>
    </ViewerFrame>
  );
}

function safeDecode(s: string): string {
  try { return decodeURIComponent(s); } catch { return s; }
}
