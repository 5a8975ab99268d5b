// offline.tsx -- the standalone (downloaded) tree page (ui.md §4.9). main.tsx calls
// offlineRoot() before booting the app: when the document embeds tree data in
// <script type="application/json" id="cp-offline">, the tree page renders from it, with the
// view state in memory (the file's URL is not used) and nothing fetched. The reader can
// change the display zone (the one in force at export is the default).

import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { TreeResp } from '../lib/api';
import { AppContext, type AppState } from '../lib/ctx';
import { BROWSER, resolveZone } from '../lib/time';
import { OFFLINE_ID, type OfflinePayload } from './download';
import { TreeScreen, type StateIO } from './TreeScreen';

/** The standalone page's root when this document embeds tree data, else null. */
export function offlineRoot(): JSX.Element | null {
  const el = typeof document !== 'undefined' ? document.getElementById(OFFLINE_ID) : null;
  if (!el) return null;
  let payload: OfflinePayload;
  try {
    payload = JSON.parse(el.textContent ?? '');
  } catch (e) {
    return <div class="state">This saved page is damaged: {(e as Error).message}</div>;
  }
  return <OfflineApp payload={payload} />;
}

function OfflineApp({ payload }: { payload: OfflinePayload }) {
  const resp = payload.tree as TreeResp;
  const [params, setP] = useState(() => new URLSearchParams(payload.state));
  const [zoneChoice, setZoneChoice] = useState(payload.zone || BROWSER);
  const [raw] = useState(() => JSON.stringify(payload.tree));
  const io: StateIO = {
    params,
    set: (patch) => {
      setP((old) => {
        const next = new URLSearchParams(old);
        for (const [k, v] of Object.entries(patch)) {
          if (v === null || v === '') next.delete(k);
          else next.set(k, v);
        }
        return next;
      });
    },
  };
  const app: AppState = { zoneChoice, zone: resolveZone(zoneChoice), setZone: setZoneChoice, config: null, me: null };
  const zones = [...new Set([payload.zone || BROWSER, BROWSER, 'UTC'])];
  const zonePicker = (
    <label class="muted small" title="Display time zone">zone&nbsp;
      <select class="input" value={zoneChoice} data-testid="offline-zone"
        onChange={(e) => setZoneChoice((e.currentTarget as HTMLSelectElement).value)}>
        {zones.map((z) => <option key={z} value={z}>{z === BROWSER ? `Browser (${resolveZone(BROWSER)})` : z}</option>)}
      </select>
      <span class="tag" title="A saved page: nothing is fetched">offline</span>
    </label>
  );
  return (
    <AppContext.Provider value={app}>
      <TreeScreen data={{ resp, raw, ids: payload.ids }} io={io} offline={zonePicker} />
    </AppContext.Provider>
  );
}
