// Rail.tsx -- the discovery rail (ui.md §2): namespace → service → pod for the window,
// tri-state service checkboxes, a search box, freshness dots, and draft edits that wait
// for Apply. The applied selection lives in the URL (service=ns/svc, pod=ns/svc/pod).

import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ServicesResp } from '../lib/api';
import { useApp, type Selection, type Win } from '../lib/ctx';
import { fmtCount, shortPod } from '../lib/format';
import { fmtTs, serverNow } from '../lib/time';
import { setParams } from '../lib/url';

const FRESH_MS = 2 * 60000;

function sameSel(a: Selection, b: Selection): boolean {
  const k = (s: Selection) => [...s.services].sort().join('|') + '#' + [...s.pods].sort().join('|');
  return k(a) === k(b);
}

interface Props {
  win: Win;
  applied: Selection;
  disc: ServicesResp | null;
  loading: boolean;
  error: string | null;
  collapsed: boolean;
  onCollapse: (c: boolean) => void;
}

export function Rail({ win, applied, disc, loading, error, collapsed, onCollapse }: Props) {
  const app = useApp();
  const [draft, setDraft] = useState<Selection>(applied);
  const [search, setSearch] = useState('');
  const [closedNs, setClosedNs] = useState<Set<string>>(new Set());
  const [openSvc, setOpenSvc] = useState<Set<string>>(new Set());

  useEffect(() => setDraft(applied), [applied.services.join('|'), applied.pods.join('|')]);

  const now = serverNow();
  const q = search.trim().toLowerCase();
  const tree = useMemo(() => {
    if (!disc) return [];
    return disc.namespaces.map((n) => ({
      ns: n.namespace,
      calls: n.calls,
      services: n.services.map((s) => {
        const key = `${n.namespace}/${s.service}`;
        const pods = s.pods.map((p) => {
          const last = Math.max(...p.restarts.map((r) => r.last_ms));
          return { key: `${key}/${p.pod}`, pod: p.pod, calls: p.calls, restarts: p.restarts, last };
        });
        const last = Math.max(0, ...pods.map((p) => p.last));
        const restarts = pods.reduce((a, p) => a + p.restarts.length, 0);
        return { key, service: s.service, calls: s.calls, pods, last, restarts };
      }),
    })).map((n) => {
      if (!q) return n;
      const nsHit = n.ns.toLowerCase().includes(q);
      const services = n.services.map((s) => {
        if (nsHit || s.service.toLowerCase().includes(q)) return s;
        const pods = s.pods.filter((p) => p.pod.toLowerCase().includes(q));
        return pods.length ? { ...s, pods, forcedOpen: true } : null;
      }).filter((s): s is NonNullable<typeof s> => s !== null);
      return { ...n, services };
    }).filter((n) => n.services.length > 0);
  }, [disc, q]);

  const svcState = (key: string): 'all' | 'some' | 'none' => {
    if (draft.services.includes(key)) return 'all';
    return draft.pods.some((p) => p.startsWith(key + '/')) ? 'some' : 'none';
  };

  const toggleService = (key: string) => {
    const st = svcState(key);
    const pods = draft.pods.filter((p) => !p.startsWith(key + '/'));
    const services = draft.services.filter((s) => s !== key);
    setDraft(st === 'all' ? { services, pods } : { services: [...services, key], pods });
  };

  const togglePod = (svcKey: string, podKey: string, allPods: string[]) => {
    if (draft.services.includes(svcKey)) {
      // a checked service becomes partial: every other pod of it stays selected
      setDraft({ services: draft.services.filter((s) => s !== svcKey),
        pods: [...draft.pods, ...allPods.filter((p) => p !== podKey)] });
      return;
    }
    const has = draft.pods.includes(podKey);
    setDraft({ services: draft.services, pods: has ? draft.pods.filter((p) => p !== podKey) : [...draft.pods, podKey] });
  };

  const dirty = !sameSel(draft, applied);

  if (collapsed) {
    return (
      <aside class="rail rail-collapsed">
        <button type="button" class="btn btn-ghost" title="Show the services" onClick={() => onCollapse(false)}>»</button>
      </aside>
    );
  }

  return (
    <aside class="rail" data-testid="rail">
      <div class="rail-head">
        <input class="input" data-testid="rail-search" placeholder="Search namespace, service, pod"
          value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
          onKeyDown={(e) => { if (e.key === 'Escape') setSearch(''); }} />
        <button type="button" class="btn btn-ghost" title="Hide the rail" onClick={() => onCollapse(true)}>«</button>
      </div>
      {dirty && (
        <div class="rail-apply">
          <button type="button" class="btn btn-primary" data-testid="rail-apply"
            onClick={() => setParams({ service: draft.services, pod: draft.pods })}>Apply</button>
          <button type="button" class="btn btn-ghost" onClick={() => setDraft(applied)}>Cancel</button>
        </div>
      )}
      {loading && !disc && <div class="muted pad">Loading services…</div>}
      {error && <div class="banner banner-red">{error}</div>}
      {disc && tree.length === 0 && (
        <div class="muted pad" data-testid="rail-empty">
          {q ? 'Nothing matches the search.' : `No services sent data between ${fmtTs(win.from, app.zone)} and ${fmtTs(win.to, app.zone)}.`}
        </div>
      )}
      <div class="rail-tree">
        {tree.map((n) => {
          const nsOpen = !closedNs.has(n.ns) || !!q;
          return (
            <div key={n.ns} class="rail-ns" data-testid="rail-ns" data-ns={n.ns}>
              <div class="rail-row rail-ns-row" onClick={() => {
                const c = new Set(closedNs);
                if (c.has(n.ns)) c.delete(n.ns); else c.add(n.ns);
                setClosedNs(c);
              }}>
                <span class="twisty">{nsOpen ? '▾' : '▸'}</span>
                <span class="rail-name">{n.ns}</span>
                <span class="rail-count">{fmtCount(n.calls)}</span>
              </div>
              {nsOpen && n.services.map((s) => {
                const st = svcState(s.key);
                const fresh = now - s.last < FRESH_MS;
                const open = openSvc.has(s.key) || 'forcedOpen' in s || st === 'some';
                return (
                  <div key={s.key} class="rail-svc" data-testid="rail-service" data-service={s.service}>
                    <div class="rail-row" title={`last data received ${s.last ? fmtTs(s.last, app.zone) : '—'}; ${s.pods.length} pods, ${s.restarts} pod restarts in the window`}>
                      <span class="twisty" onClick={() => {
                        const o = new Set(openSvc);
                        if (o.has(s.key)) o.delete(s.key); else o.add(s.key);
                        setOpenSvc(o);
                      }}>{open ? '▾' : '▸'}</span>
                      <input type="checkbox" data-testid="rail-service-check" checked={st === 'all'}
                        ref={(el) => { if (el) el.indeterminate = st === 'some'; }}
                        onChange={() => toggleService(s.key)} />
                      <span class={`dot ${fresh ? 'dot-green' : 'dot-grey'}`} />
                      <span class="rail-name" onClick={() => toggleService(s.key)}>{s.service}</span>
                      <span class="rail-count" title="pod restarts in the window">{s.restarts}</span>
                    </div>
                    {open && s.pods.map((p) => (
                      <div key={p.key} class="rail-row rail-pod" data-testid="rail-pod" data-pod={p.pod}
                        title={`${p.pod}\nrestarts: ${p.restarts.map((r) => fmtTs(r.restart_ms, app.zone)).join(', ')}\n${fmtCount(p.calls)} calls`}>
                        <input type="checkbox" data-testid="rail-pod-check"
                          checked={st === 'all' || draft.pods.includes(p.key)}
                          onChange={() => togglePod(s.key, p.key, s.pods.map((x) => x.key))} />
                        <span class={`dot ${now - p.last < FRESH_MS ? 'dot-green' : 'dot-grey'}`} />
                        <span class="rail-name" onClick={() => togglePod(s.key, p.key, s.pods.map((x) => x.key))}>{shortPod(p.pod)}</span>
                        <span class="rail-count">{fmtCount(p.calls)}</span>
                      </div>
                    ))}
                  </div>
                );
              })}
            </div>
          );
        })}
      </div>
    </aside>
  );
}
