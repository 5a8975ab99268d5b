// app.tsx -- the router: the path picks the screen (ui.md §1.1 routes); everything else
// is in the query string. The list screens sit in the Shell; the tree and the dump
// viewers are full pages opened in their own browser tabs.

import { useEffect, useState } from 'preact/hooks';
import { apiGet, type ServerConfig } from './lib/api';
import type { Me } from './lib/auth';
import { AppContext, type AppState } from './lib/ctx';
import { loadZone, resolveZone, saveZone, setServerNow } from './lib/time';
import { buildUrl, navigate, useRoute } from './lib/url';
import { Shell } from './shell/Shell';
import { CallsPage } from './calls/CallsPage';
import { PodsPage } from './pods/PodsPage';
import { HeapsPage } from './pods/HeapsPage';
import { AuditPage } from './shell/AuditPage';
import { DumpPage } from './pods/DumpPage';
import { TreePage } from './tree/TreePage';
import { ProfilePage } from './tree/ProfilePage';

export function App() {
  const route = useRoute();
  const [zoneChoice, setZoneChoice] = useState(loadZone());
  const [config, setConfig] = useState<ServerConfig | null>(null);
  const [me, setMe] = useState<Me | null>(null);
  const [, setClockTick] = useState(0);

  useEffect(() => {
    // who is logged in first: a 401 of --auth oidc goes to the login page (lib/api.ts)
    apiGet<Me>('/me').then(setMe).catch(() => {});
    apiGet<{ now_ms: number }>('/time').then((t) => { setServerNow(t.now_ms); setClockTick(1); }).catch(() => {});
    apiGet<ServerConfig>('/config').then(setConfig).catch(() => {});
  }, []);

  const app: AppState = {
    zoneChoice,
    zone: resolveZone(zoneChoice),
    setZone: (z) => { saveZone(z); setZoneChoice(z); },
    config,
    me,
  };

  let page;
  const path = route.path.replace(/\/+$/, '') || '/';
  if (path === '/') {
    navigate(buildUrl('/calls', route.params), { replace: true });
    page = null;
  } else if (path === '/calls') page = <Shell route={route} screen={(p) => <CallsPage {...p} />} />;
  else if (path === '/pods') page = <Shell route={route} screen={(p) => <PodsPage {...p} />} />;
  else if (path === '/heaps') page = <Shell route={route} screen={(p) => <HeapsPage {...p} />} />;
  else if (path === '/audit') page = <Shell route={route} screen={(p) => <AuditPage {...p} />} />;
  else if (path === '/tree') page = <TreePage route={route} />;
  else if (path === '/profile') page = <ProfilePage route={route} />;
  else if (path.startsWith('/dump/')) page = <DumpPage route={route} />;
  else page = (
    <div class="notfound" data-testid="not-found">
      <h1>Page not found</h1>
      <p><a href="/calls">Open the calls list</a></p>
    </div>
  );
  return <AppContext.Provider value={app}>{page}</AppContext.Provider>;
}
