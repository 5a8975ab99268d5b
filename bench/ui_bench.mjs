#!/usr/bin/env node
// ui_bench.mjs -- the browser side of bench/ui.sh: the web UI served by `cloudprof serve`
// driven by headless Debian chromium (playwright-core from tests/tools/node_modules, found
// through NODE_PATH), with the API answers replaced by synthetic data of the issue 7 sizes
// (page.route, rewritten to a loopback HTTP server of this script; see sideServer), each
// figure next to a baseline measured in the same run.
//
//   node bench/ui_bench.mjs --base http://127.0.0.1:PORT [--reps N] [--nodes N] [--rows N]
//                           [--frames N] [--jumps N]
//
// 1. Tree of --nodes nodes (default 100 000): GET /calls/{id}/tree answers a synthetic tree
//    in the docs/API.md shape (a few thousand method strings, consistent numbers: self =
//    total - sum of children's totals, calls = sum of descendants' invocations, depth up to
//    30, mixed fan-out, some SQL params). Per repetition, in fresh pages:
//      baseline  fetch + JSON.parse of the same body in a page of the same origin with the
//                same route (`await (await fetch(url)).json()`), and JSON.parse alone
//      open      navigation start -> first [data-testid=tree-row] in the DOM at a frame
//                (a requestAnimationFrame poller installed before the app runs), plus the
//                app's own window.__cpTreeTiming.firstPaintMs (JSON text complete -> paint);
//                Resource Timing splits it: start-up until the request, the response, after
//      flame     click [data-testid=view-flame] -> first [data-testid=flame-frame]
//      search    Enter in [data-testid=tree-search] -> [data-testid=tree-search-count] shows
//                "N results" (N checked against the generator); Enter skips the 180 ms
//                debounce of typing, which is not work
// 2. Calls list of --rows rows (default 100 000): /calls (pages honouring limit, cursor and
//    sort; next_cursor = the next row offset), /calls/stats (300 points, total = rows) and
//    /services (one namespace/service/pod) are answered with synthetic Call objects. The
//    table container is scrolled to the bottom until every row is loaded (aria-rowcount and
//    the status line), then per repetition:
//      scroll    +400 px per frame for --frames frames (default 300): requestAnimationFrame
//                deltas (median, p95) and main-thread task time per frame (CDP
//                Performance.getMetrics TaskDuration, summed over the frames)
//      jumps     a random scrollTop every frame for --jumps frames (default 100), same figures
//      sort      click [data-testid=calls-header-duration] -> row 0 shows the call the new
//                order starts with (the list is reloaded to all rows before every click)
//    Baseline in the same run: the same scroll and jump loops on a page built with
//    page.setContent: 100 rows of similar markup in a scroll container of the same size
//    (positions wrap at its end). Heap: CDP Runtime.getHeapUsage after a forced GC, and
//    performance.memory.usedJSHeapSize (coarse in Chromium without precise-memory flags).
//
// Output: "UI <name> key=value ..." lines (parsed by bench/ui.sh; values have no spaces),
// progress on stderr. Exit status 1 on any error or failed check.
import { createRequire } from 'node:module';
import http from 'node:http';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');

// ---- arguments ---------------------------------------------------------------------------
function parseArgs(argv) {
  const o = { base: '', reps: 5, nodes: 100000, rows: 100000, frames: 300, jumps: 100 };
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i].replace(/^--/, '');
    const v = argv[++i];
    if (!(k in o) || v === undefined) throw new Error(`unknown or incomplete option ${argv[i - 1]}`);
    o[k] = k === 'base' ? v : Number(v);
    if (k !== 'base' && !(Number.isInteger(o[k]) && o[k] > 0)) throw new Error(`--${k} wants a positive integer`);
  }
  if (!o.base) throw new Error('--base URL is required');
  return o;
}
const opt = parseArgs(process.argv);
const say = (m) => process.stderr.write(`ui_bench: ${m}\n`);
const out = (name, kv) => console.log(`UI ${name} ${Object.entries(kv).map(([k, v]) => `${k}=${v}`).join(' ')}`);

function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >> 17;
    s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}
const median = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.ceil(p / 100 * s.length) - 1)]; };
const f1 = (x) => (Math.round(x * 10) / 10).toFixed(1);
const f2 = (x) => (Math.round(x * 100) / 100).toFixed(2);
function stats(name, xs, extra = {}) {
  out(name, { median: f1(median(xs)), min: f1(Math.min(...xs)), max: f1(Math.max(...xs)), n: xs.length,
    all: xs.map(f1).join(','), ...extra });
}

// ---- synthetic tree (docs/API.md GET /calls/{id}/tree) ------------------------------------
const NOW = Date.now();
const FROM = NOW - 3600000;
const TO = NOW;

function genTree(N, seed = 11) {
  const rand = rng(seed);
  const NM = Math.max(64, Math.min(4000, Math.floor(N / 25)));
  const rets = ['void', 'int', 'java.lang.String', 'java.util.List', 'boolean', 'com.acme.model.Order'];
  const args = ['int', '', 'java.lang.String', 'long,java.util.Map', 'com.acme.model.Order,boolean'];
  const jars = ['app.jar', 'app.jar', 'app.jar', 'spring-core-6.1.jar', 'hibernate-core-6.4.jar'];
  const methods = [];
  for (let k = 0; k < NM; k++) {
    const cls = `Class${(k * 7) % 250}`;
    methods.push(`${rets[k % rets.length]} com.acme.pkg${k % 40}.${cls}.method${k}(${args[(k >> 2) % args.length]}) ` +
      `(${cls}.java:${10 + (k * 13) % 900}) [${jars[(k >> 4) % jars.length]}]`);
  }
  const params = ['web.url', 'web.method', 'sql', 'binds'];
  const parent = new Int32Array(N), depth = new Int32Array(N), method = new Int32Array(N);
  const wide = new Uint8Array(N);
  parent[0] = -1;
  const used = new Map();
  const path = [0];
  for (let n = 1; n < N; n++) {
    // pop back up: a fair random walk (so every depth to the cap occurs), a hard cap at
    // depth 30, and "loop" nodes (0.3 %) whose children are mostly leaves: wide fan-out
    for (;;) {
      if (path.length <= 1) break;
      const top = path[path.length - 1];
      const pw = parent[top] >= 0 && wide[parent[top]];
      if (depth[top] >= 30 || rand() < (pw ? 0.97 : 0.5)) path.pop(); else break;
    }
    const p = path[path.length - 1];
    let s = used.get(p);
    if (!s) { s = new Set(); used.set(p, s); }
    if (s.size >= NM - 1) { path.pop(); n--; continue; }
    let mi = Math.floor(rand() * NM);
    while (s.has(mi)) mi = (mi + 1) % NM;      // siblings are distinct methods, as in a real tree
    s.add(mi);
    parent[n] = p;
    depth[n] = depth[p] + 1;
    method[n] = mi;
    wide[n] = rand() < 0.003 ? 1 : 0;
    path.push(n);
  }
  const self = new Float64Array(N), inv = new Float64Array(N), selfSusp = new Float64Array(N);
  for (let i = 0; i < N; i++) {
    const r = rand();
    self[i] = r < 0.5 ? 0 : Math.floor(-Math.log(1 - rand()) * 20);
    inv[i] = i === 0 ? 1 : r < 0.85 ? 1 : 1 + Math.floor(rand() * 50);
    selfSusp[i] = rand() < 0.02 ? Math.min(self[i], 30) : 0;
  }
  const total = Float64Array.from(self), susp = Float64Array.from(selfSusp), calls = new Float64Array(N);
  const nkids = new Int32Array(N);
  for (let i = N - 1; i > 0; i--) {           // children have larger indexes than their parent
    const p = parent[i];
    total[p] += total[i];
    susp[p] += susp[i];
    calls[p] += inv[i] + calls[i];
    nkids[p]++;
  }
  const nodes = new Array(N);
  const cursor = new Float64Array(N);         // children laid out one after another
  let maxDepth = 0, maxFan = 0, withParams = 0;
  for (let i = 0; i < N; i++) {
    const p = parent[i];
    const first = p < 0 ? 0 : cursor[p];
    if (p >= 0) cursor[p] += total[i];
    cursor[i] = first;
    const node = { method: method[i], total: total[i], self: self[i], suspension: susp[i], self_suspension: selfSusp[i],
      invocations: inv[i], calls: calls[i], first, last: first + total[i] };
    if (i === 0) {
      node.params = [{ param: 0, groups: [{ value: '/orders/4711', duration: total[0], count: 1 }] },
        { param: 1, groups: [{ value: 'GET', duration: total[0], count: 1 }] }];
    } else if (i % 97 === 3) {
      withParams++;
      node.params = [{ param: 2, groups: [{
        value: `SELECT o.id, o.status, o.total FROM orders o WHERE o.customer_id = :1 AND o.region = '${i % 13}'`,
        duration: total[i], count: inv[i],
        params: [{ param: 3, groups: [{ value: `[${i}]`, duration: total[i], count: inv[i] }] }] }] }];
    }
    nodes[i] = node;
    if (p >= 0) (nodes[p].children ??= []).push(node);
    if (depth[i] > maxDepth) maxDepth = depth[i];
    if (nkids[i] > maxFan) maxFan = nkids[i];
  }
  const start = FROM + 600000;
  const call = makeCall(0, start, total[0], methods[0]);
  const resp = { version: 1, methods, params, calls: [call], root: nodes[0], truncated: false, nodes: N,
    start_ms: start, end_ms: start + total[0] };
  // what the search box must count for a query: nodes whose method contains it
  const countOf = (q) => { let c = 0; for (let i = 0; i < N; i++) if (methods[method[i]].toLowerCase().includes(q)) c++; return c; };
  return { body: Buffer.from(JSON.stringify(resp)), methods: NM, maxDepth, maxFan, withParams, countOf };
}

// ---- synthetic calls (docs/API.md Call, /calls, /calls/stats, /services) -------------------
const NS = 'bench', SVC = 'orders-service', POD = `orders-service-7d9f5c-x2k4q_${FROM - 86400000}`;
const RESTART = FROM - 86400000;

function makeCall(i, ts, dur, method, rand = Math.random) {
  const url = ['/orders', '/invoices', '/customers', '/payments', '/tickets'][i % 5];
  const params = { 'web.url': [`${url}/${i % 9973}`], 'web.method': [i % 7 ? 'GET' : 'POST'] };
  if (i % 11 === 0) params['profiler.title'] = [`${params['web.method'][0]} ${url}, client: 10.5.${i % 250}.${i % 199}`];
  const err = i % 53 === 0;
  if (err) params['call.red'] = ['org.springframework.web.client.HttpClientErrorException'];
  return {
    id: `${ts}-${RESTART}-${1 + (i >> 12)}-${(i * 173) % 1000003}-${i % 7}-084efd3d976132d1`, ts_ms: ts, duration_ms: dur, method,
    namespace: NS, service: SVC, pod: POD, restart_ms: RESTART, thread: `http-nio-8080-exec-${1 + (i % 40)}`,
    cpu_time: Math.floor(dur * rand() * 0.8), wait_time: Math.floor(dur * rand() * 0.1), memory_used: Math.floor(rand() * 50e6),
    suspend_ms: rand() < 0.05 ? Math.floor(rand() * 40) : 0, calls: Math.floor(rand() * 5000), transactions: Math.floor(rand() * 4),
    queue_wait_ms: rand() < 0.1 ? Math.floor(rand() * 200) : 0, logs_generated: Math.floor(rand() * 4000),
    logs_written: Math.floor(rand() * 2000), file_read: Math.floor(rand() * 300000), file_written: Math.floor(rand() * 100000),
    net_read: Math.floor(rand() * 2e6), net_written: Math.floor(rand() * 5e5), error: err, params,
    trace_available: i % 101 !== 0, trace_dropped_reason: i % 101 !== 0 ? null : 'backlog',
  };
}

function genCalls(n, seed = 5) {
  const rand = rng(seed);
  const meths = [];
  for (let k = 0; k < 200; k++) {
    meths.push(`org.springframework.http.ResponseEntity com.acme.orders.web.${['Order', 'Invoice', 'Customer', 'Payment'][k % 4]}` +
      `Controller${k % 9}.${['process', 'find', 'save', 'list'][(k >> 2) % 4]}${['Order', 'Invoice', 'Customer', 'Payment'][k % 4]}` +
      `(java.lang.String,int) (Controller${k % 9}.java:${40 + k}) [app.jar]`);
  }
  const rows = new Array(n);
  for (let i = 0; i < n; i++) {
    const ts = FROM + Math.floor(rand() * (TO - FROM - 60000));
    const dur = Math.floor(Math.exp(rand() * 9.5));    // 1 ms .. ~13 s, log-uniform
    rows[i] = makeCall(i, ts, dur, meths[Math.floor(rand() * meths.length)], rand);
  }
  const orders = new Map();
  const order = (sort) => {
    let o = orders.get(sort);
    if (o) return o;
    const desc = sort.startsWith('-');
    let key = sort.replace(/^[-+ ]/, '');
    key = key === 'ts' ? 'ts_ms' : key === 'duration' ? 'duration_ms' : key;
    // the API's order: the column, ties by start time descending, then the id
    o = [...rows].sort((a, b) => {
      const x = a[key], y = b[key];
      if (x !== y) return (x < y ? -1 : 1) * (desc ? -1 : 1);
      if (a.ts_ms !== b.ts_ms) return b.ts_ms - a.ts_ms;
      return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    });
    orders.set(sort, o);
    return o;
  };
  const pts = [];
  const sorted = order('-ts_ms');
  for (let k = 0; k < 300; k++) {
    const c = sorted[Math.floor(k * n / 300)];
    pts.push({ ts_ms: c.ts_ms, duration_ms: c.duration_ms, calls: c.calls, id: c.id });
  }
  pts.sort((a, b) => a.ts_ms - b.ts_ms);
  const sum = (k) => rows.reduce((a, c) => a + c[k], 0);
  const statsBody = JSON.stringify({ points: pts, total: n, sampled: true, sum_duration_ms: sum('duration_ms'),
    sum_suspend_ms: sum('suspend_ms'), sum_queue_wait_ms: sum('queue_wait_ms'), sum_transactions: sum('transactions'),
    scanned: n, partial: false, partial_reasons: [] });
  const servicesBody = JSON.stringify({ namespaces: [{ namespace: NS, calls: n, services: [{ service: SVC, calls: n,
    pods: [{ pod: POD, calls: n, restarts: [{ restart_ms: RESTART, first_ms: FROM, last_ms: TO, calls: n }] }] }] }], partial: false });
  return { rows, order, statsBody, servicesBody };
}

// The synthetic answers come from a small HTTP server of this process on loopback: the
// routes rewrite the app's /api/v1 requests to it (route.continue with another URL, not
// observable by the page), so the bodies travel as real HTTP responses. Fulfilling them
// through the DevTools protocol instead costs ~2 s per 14 MB body (base64 over the pipe),
// which would swamp what is measured.
function sideServer(handlers) {
  return new Promise((resolve) => {
    const srv = http.createServer((req, res) => {
      const u = new URL(req.url, 'http://x');
      const h = handlers[u.pathname];
      if (!h) { res.writeHead(404); res.end(); return; }
      const body = h(u.searchParams);
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
      res.end(body);
    });
    srv.listen(0, '127.0.0.1', () => resolve({ srv, url: `http://127.0.0.1:${srv.address().port}` }));
  });
}

function callsHandlers(data) {
  return {
    '/api/v1/calls': (q) => {
      const limit = Math.max(1, Math.min(1000, Number(q.get('limit') ?? 100)));
      const off = Number(q.get('cursor') ?? 0);
      const o = data.order(q.get('sort') ?? '-ts_ms');
      const calls = o.slice(off, off + limit);
      const next = off + limit < o.length ? String(off + limit) : null;   // the cursor: the next row offset
      return JSON.stringify({ calls, next_cursor: next, scanned: calls.length, cold_files: 0, cold_files_skipped: 0,
        partial: false, partial_reasons: [] });
    },
    '/api/v1/calls/stats': () => data.statsBody,
    '/api/v1/services': () => data.servicesBody,
  };
}

async function routeTo(page, side, match, path) {
  await page.route(match, (route) => {
    const u = new URL(route.request().url());
    return route.continue({ url: side + (path ?? u.pathname) + u.search });
  });
}

// ---- in-page helpers ------------------------------------------------------------------------
// waitFrame(pred): resolves with performance.now() at the first animation frame where
// pred() holds (rAF callbacks run just before the frame is painted)
const HELPERS = `
window.__uib = {
  waitFrame(pred, timeout = 60000) {
    const t0 = performance.now();
    return new Promise((res, rej) => {
      const tick = () => {
        let ok = false;
        try { ok = pred(); } catch (e) { /* not there yet */ }
        if (ok) res(performance.now());
        else if (performance.now() - t0 > timeout) rej(new Error('timeout waiting for the page'));
        else requestAnimationFrame(tick);
      };
      tick();
    });
  },
  visible(sel) {
    const el = document.querySelector(sel);
    if (!el) return false;
    const r = el.getBoundingClientRect();
    return r.height > 0 && r.width > 0;
  },
};`;

async function newPage(ctx) {
  const page = await ctx.newPage();
  await page.addInitScript(HELPERS);
  page.on('pageerror', (e) => { say(`page error: ${e.message}`); failed = true; });
  page.on('console', (m) => { if (m.type() === 'error') { say(`console error: ${m.text()}`); failed = true; } });
  return page;
}
let failed = false;
function check(ok, what) {
  if (!ok) { say(`CHECK FAILED: ${what}`); failed = true; }
}

async function cdpTask(cdp) {
  const m = await cdp.send('Performance.getMetrics');
  const g = (k) => m.metrics.find((x) => x.name === k)?.value ?? 0;
  return { task: g('TaskDuration') * 1000, script: g('ScriptDuration') * 1000, layout: g('LayoutDuration') * 1000,
    style: g('RecalcStyleDuration') * 1000 };
}
async function heap(cdp, page) {
  await cdp.send('HeapProfiler.collectGarbage');
  const h = await cdp.send('Runtime.getHeapUsage');
  const pm = await page.evaluate(() => performance.memory?.usedJSHeapSize ?? 0);
  return { used: h.usedSize, pm };
}

// ---- 1. the tree ----------------------------------------------------------------------------
async function benchTree(browser) {
  const t0 = Date.now();
  const tree = genTree(opt.nodes);
  const query = `class${(17 * 7) % 250}.`;   // a class of method 17: always in the dictionary
  const expect = tree.countOf(query);
  say(`tree: ${opt.nodes} nodes, ${tree.methods} methods, depth ${tree.maxDepth}, max fan-out ${tree.maxFan}, ` +
      `${(tree.body.length / 1e6).toFixed(1)} MB JSON, generated in ${Date.now() - t0} ms; '${query}' matches ${expect} nodes`);
  out('tree_input', { nodes: opt.nodes, methods: tree.methods, max_depth: tree.maxDepth, max_fanout: tree.maxFan,
    json_bytes: tree.body.length, search_hits: expect });
  const side = await sideServer({ '/tree': () => tree.body });
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'UTC' });
  const route = (page) => routeTo(page, side.url, '**/api/v1/calls/*/tree', '/tree');
  const R = { fetchParse: [], parse: [], open: [], app: [], flame: [], back: [], search: [], boot: [], dl: [], after: [] };
  for (let rep = 0; rep < opt.reps; rep++) {
    // baseline: the same body fetched through the same route and parsed, in a page of the
    // same origin that runs no app code
    let page = await newPage(ctx);
    await route(page);
    await page.goto(`${opt.base}/api/v1/health`);
    const b = await page.evaluate(async () => {
      const t0 = performance.now();
      const j = await (await fetch('/api/v1/calls/bench-call/tree')).json();
      const t1 = performance.now();
      const text = await (await fetch('/api/v1/calls/bench-call/tree')).text();
      const t2 = performance.now();
      const k = JSON.parse(text);
      const t3 = performance.now();
      return { fetchParse: t1 - t0, parse: t3 - t2, n: Math.min(j.nodes, k.nodes) };
    });
    check(b.n === opt.nodes, 'the baseline parsed the whole tree');
    R.fetchParse.push(b.fetchParse); R.parse.push(b.parse);
    await page.close();

    // open: navigation start (performance.timeOrigin) -> the first tree row at a frame
    page = await newPage(ctx);
    await route(page);
    await page.addInitScript(() => {
      window.__uib.waitFrame(() => window.__uib.visible('[data-testid=tree-row]'), 120000)
        .then((t) => { window.__uibOpen = t; }, () => { window.__uibOpen = -1; });
    });
    await page.goto(`${opt.base}/tree?call=bench-call`, { waitUntil: 'commit' });
    await page.waitForFunction(() => window.__uibOpen !== undefined, null, { timeout: 120000, polling: 100 });
    const open = await page.evaluate(() => {
      // where the time went: app start-up until the request, the response, after it
      const r = performance.getEntriesByType('resource').find((e) => e.name.includes('/tree'));
      return { t: window.__uibOpen, app: window.__cpTreeTiming?.firstPaintMs ?? -1,
        req: r ? r.startTime : -1, resp: r ? r.responseEnd : -1 };
    });
    check(open.t > 0 && open.req > 0, 'the tree shows rows');
    R.open.push(open.t); R.app.push(open.app);
    R.boot.push(open.req); R.dl.push(open.resp - open.req); R.after.push(open.t - open.resp);

    // flame view, then back to the tree
    const fl = await page.evaluate(async () => {
      const t0 = performance.now();
      document.querySelector('[data-testid=view-flame]').click();
      const t1 = await window.__uib.waitFrame(() => window.__uib.visible('[data-testid=flame-frame]'));
      const t2 = performance.now();
      document.querySelector('[data-testid=view-tree]').click();
      const t3 = await window.__uib.waitFrame(() => window.__uib.visible('[data-testid=tree-row]'));
      return { flame: t1 - t0, back: t3 - t2 };
    });
    R.flame.push(fl.flame); R.back.push(fl.back);

    // search: type the query (rendered), then Enter -> "N results"
    const box = page.locator('[data-testid=tree-search]');
    await box.fill(query);
    const se = await page.evaluate(async (q) => {
      const el = document.querySelector('[data-testid=tree-search]');
      const cnt = () => document.querySelector('[data-testid=tree-search-count]')?.textContent ?? '';
      if (el.value !== q) throw new Error('the search box did not take the text');
      const t0 = performance.now();
      el.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
      const t1 = await window.__uib.waitFrame(() => /result/.test(cnt()));
      return { ms: t1 - t0, text: cnt() };
    }, query);
    check(se.text === `${expect} result${expect === 1 ? '' : 's'}`, `search count '${se.text}', expected ${expect} results`);
    R.search.push(se.ms);
    await page.close();
    say(`tree rep ${rep + 1}: fetch+parse ${f1(b.fetchParse)} ms (parse ${f1(b.parse)}), open ${f1(open.t)} ms ` +
        `(request at ${f1(open.req)}, response end ${f1(open.resp)}, app JSON->paint ${open.app}), flame ${f1(fl.flame)}, back to tree ${f1(fl.back)}, search ${f1(se.ms)} ms (${se.text})`);
  }
  await ctx.close();
  side.srv.close();
  stats('tree_baseline_fetch_parse', R.fetchParse);
  stats('tree_baseline_parse', R.parse);
  stats('tree_open', R.open, { ratio: f2(median(R.open) / median(R.fetchParse)) });
  stats('tree_app_json_to_paint', R.app);
  stats('tree_open_until_request', R.boot);
  stats('tree_open_response', R.dl);
  stats('tree_open_after_response', R.after);
  stats('tree_flame', R.flame, { ratio: f2(median(R.flame) / median(R.fetchParse)) });
  stats('tree_back_to_tree', R.back);
  stats('tree_search', R.search, { ratio: f2(median(R.search) / median(R.fetchParse)) });
}

// ---- 2. the calls list ----------------------------------------------------------------------
// scroll loop run in the page: `frames` frames, each moving scrollTop by `step` (step 0 =
// a random position each frame); positions wrap at the end of the scroll range
async function scrollRun(page, cdp, sel, frames, step, seed) {
  await page.bringToFront();
  await page.evaluate((s) => { const el = document.querySelector(s); el.scrollTop = 0; }, sel);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 50)))));
  const m0 = await cdpTask(cdp);
  const d = await page.evaluate(({ s, frames, step, seed }) => new Promise((resolve) => {
    const el = document.querySelector(s);
    let x = seed >>> 0 || 1;
    const rand = () => { x ^= x << 13; x >>>= 0; x ^= x >> 17; x ^= x << 5; x >>>= 0; return x / 4294967296; };
    const max = el.scrollHeight - el.clientHeight;
    const deltas = [];
    let last = -1, k = 0, pos = 0;
    const tick = (t) => {
      if (last >= 0) deltas.push(t - last);
      last = t;
      if (k++ >= frames) { resolve({ deltas, max }); return; }
      pos = step ? (pos + step) % (max + 1) : Math.floor(rand() * max);
      el.scrollTop = pos;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  }), { s: sel, frames, step, seed });
  const m1 = await cdpTask(cdp);
  const n = d.deltas.length;
  return { deltas: d.deltas, max: d.max, task: (m1.task - m0.task) / n, script: (m1.script - m0.script) / n,
    layout: (m1.layout - m0.layout + m1.style - m0.style) / n };
}

function staticTable(rows) {
  const cells = (i) => [`2026-11-22 08:${String(i % 60).padStart(2, '0')}:06.032`, `${(i * 37) % 900} ms`, `${(i * 13) % 300} ms`,
    '0 ms', '0 ms', String((i * 7) % 5000), '1', '12.3 KiB', '1.2 MiB', '4.5 MiB', 'orders-service-7d9f5c-x2k4q',
    `GET /orders/${i} com.acme.orders.web.OrderController3.processOrder(java.lang.String,int)`];
  const w = [160, 84, 66, 62, 62, 56, 58, 70, 70, 72, 136, 320];
  const row = (i) => `<div class="r${i % 2 ? ' o' : ''}" role="row">${cells(i).map((c, j) =>
    `<div class="c${j > 0 && j < 10 ? ' n' : ''}" style="width:${w[j]}px">${c}</div>`).join('')}</div>`;
  return `<!doctype html><html><head><style>
    html,body{margin:0;height:100%;font:13px system-ui,sans-serif}
    .page{display:flex;flex-direction:column;height:100%;padding:6px 10px 0;box-sizing:border-box}
    .top{height:230px;flex:none}
    .s{flex:1;min-height:120px;overflow:auto;border:1px solid #ddd;position:relative}
    .h{position:sticky;top:0;display:flex;background:#f6f7f9;border-bottom:1px solid #ddd;font-weight:600}
    .r{display:flex;height:24px;line-height:24px;border-bottom:1px solid #f0f0f0}
    .o{background:#fafbfc}
    .c{flex:none;padding:0 6px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;box-sizing:border-box}
    .n{text-align:right}
  </style></head><body><div class="page"><div class="top">static baseline: ${rows} rows</div>
  <div class="s" data-testid="static-table"><div class="h">${w.map((x, j) => `<div class="c" style="width:${x}px">col ${j}</div>`).join('')}</div>
  ${Array.from({ length: rows }, (_, i) => row(i)).join('')}</div></div></body></html>`;
}

async function benchCalls(browser) {
  const t0 = Date.now();
  const data = genCalls(opt.rows);
  say(`calls: ${opt.rows} rows generated in ${Date.now() - t0} ms`);
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'UTC' });
  const side = await sideServer(callsHandlers(data));
  const page = await newPage(ctx);
  const api = ['/api/v1/calls', '/api/v1/calls/stats', '/api/v1/services'];
  await routeTo(page, side.url, (u) => api.includes(u.pathname));
  const cdp = await ctx.newCDPSession(page);
  await cdp.send('Performance.enable');
  const SEL = '[data-testid=calls-table]';
  const url = `${opt.base}/calls?from=${FROM}&to=${TO}&service=${encodeURIComponent(`${NS}/${SVC}`)}&dur=all&hideSystem=0`;

  // open + load every row by scrolling to the bottom
  const load = async () => {
    await page.goto(url, { waitUntil: 'commit' });
    const first = await page.evaluate(() => window.__uib.waitFrame(() => window.__uib.visible('[data-testid=calls-row]')));
    const h1 = await heap(cdp, page);
    const l0 = await page.evaluate(() => performance.now());
    const { rows, pages } = await page.evaluate(async ({ sel, want }) => {
      const el = document.querySelector(sel);
      const count = () => Number(el.getAttribute('aria-rowcount'));
      const pages = [];
      for (let i = 0; i < 5000 && count() < want; i++) {
        el.scrollTop = el.scrollHeight;
        const n = count();
        const t0 = performance.now();
        await window.__uib.waitFrame(() => count() > n || count() >= want, 30000);
        pages.push(performance.now() - t0);
      }
      return { rows: count(), pages };
    }, { sel: SEL, want: opt.rows });
    const l1 = await page.evaluate(() => performance.now());
    // time per page (scroll to the bottom -> the next page's rows counted) at the start
    // and at the end of the list: flat when nothing costs in proportion to the rows loaded
    const k = Math.min(10, pages.length >> 1);
    const avg = (a) => a.reduce((x, y) => x + y, 0) / Math.max(1, a.length);
    return { first, rows, loadMs: l1 - l0, heap1000: h1, pageFirst: avg(pages.slice(0, k)), pageLast: avg(pages.slice(-k)) };
  };
  const L = await load();
  const status = await page.locator('[data-testid=calls-status]').innerText();
  check(L.rows === opt.rows, `all ${opt.rows} rows loaded (aria-rowcount ${L.rows})`);
  const k = opt.rows >= 100000 ? `${Math.round(opt.rows / 1000)} K` : String(opt.rows);
  check(status.includes(`Displaying ${k} of ${k} calls`), `status line '${status.split('\n')[0]}'`);
  say(`calls: first rows ${f1(L.first)} ms after navigation; ${L.rows} rows loaded by scrolling in ${f1(L.loadMs)} ms ` +
      `(${f1(L.pageFirst)} ms per page at the start, ${f1(L.pageLast)} at the end); ` +
      `status '${status.split('\n')[0]}'`);
  const H = await heap(cdp, page);
  out('calls_load', { first_rows_ms: f1(L.first), load_all_ms: f1(L.loadMs), rows: L.rows,
    page_ms_first10: f1(L.pageFirst), page_ms_last10: f1(L.pageLast) });
  out('calls_heap', { used_bytes_1000_rows: L.heap1000.used, used_bytes: H.used, perf_memory_used: H.pm,
    bytes_per_row: Math.round((H.used - L.heap1000.used) / Math.max(1, L.rows - 1000)) });
  const dom = await page.evaluate(() => document.querySelectorAll('[data-testid=calls-row]').length);
  out('calls_dom', { row_elements: dom });

  // the baseline page: same browser, same viewport
  // (its own context: a second page in the same one would put the calls page in the
  // background, where chromium runs animation frames once a second)
  const bctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'UTC' });
  const bpage = await newPage(bctx);
  const bcdp = await bctx.newCDPSession(bpage);
  await bcdp.send('Performance.enable');
  await bpage.setContent(staticTable(100));
  const BSEL = '[data-testid=static-table]';
  const BH = await heap(bcdp, bpage);
  out('static_heap', { used_bytes: BH.used, perf_memory_used: BH.pm });

  const S = { our: [], base: [] };
  const J = { our: [], base: [] };
  for (let rep = 0; rep < opt.reps; rep++) {
    // interleaved: ours, baseline, so both see the same host noise
    const a = await scrollRun(page, cdp, SEL, opt.frames, 400, 0);
    const b = await scrollRun(bpage, bcdp, BSEL, opt.frames, 400, 0);
    const c = await scrollRun(page, cdp, SEL, opt.jumps, 0, 1000 + rep);
    const d = await scrollRun(bpage, bcdp, BSEL, opt.jumps, 0, 1000 + rep);
    S.our.push(a); S.base.push(b); J.our.push(c); J.base.push(d);
    // the list kept up: the rows in the DOM cover the final position
    const cover = await page.evaluate((s) => {
      const el = document.querySelector(s);
      const idx = [...el.querySelectorAll('[data-testid=calls-row]')].map((r) => Number(r.dataset.index));
      const top = Math.floor(el.scrollTop / 24);
      return idx.includes(top) && idx.includes(top + Math.floor((el.clientHeight - 30) / 24));
    }, SEL);
    check(cover, 'after jumping, the rows in the DOM are the ones in view');
    say(`calls rep ${rep + 1}: scroll frame median ${f1(median(a.deltas))} p95 ${f1(pct(a.deltas, 95))} ms, task ${f2(a.task)} ms/frame ` +
        `(static: ${f1(median(b.deltas))} / ${f1(pct(b.deltas, 95))}, ${f2(b.task)}); jumps ${f1(median(c.deltas))} / ` +
        `${f1(pct(c.deltas, 95))}, task ${f2(c.task)} (static ${f1(median(d.deltas))} / ${f1(pct(d.deltas, 95))}, ${f2(d.task)})`);
  }
  const summary = (name, runs) => {
    const all = runs.flatMap((r) => r.deltas);
    out(name, { frames: all.length, frame_median: f1(median(all)), frame_p95: f1(pct(all, 95)), frame_max: f1(Math.max(...all)),
      task_ms_per_frame: f2(median(runs.map((r) => r.task))), script_ms_per_frame: f2(median(runs.map((r) => r.script))),
      layout_style_ms_per_frame: f2(median(runs.map((r) => r.layout))),
      task_all: runs.map((r) => f2(r.task)).join(','), p95_all: runs.map((r) => f1(pct(r.deltas, 95))).join(','),
      scroll_range_px: runs[0].max });
    return { med: median(all), p95: pct(all, 95), task: median(runs.map((r) => r.task)) };
  };
  const so = summary('calls_scroll', S.our), sb = summary('static_scroll', S.base);
  const jo = summary('calls_jumps', J.our), jb = summary('static_jumps', J.base);
  out('calls_scroll_ratio', { frame_median: f2(so.med / sb.med), frame_p95: f2(so.p95 / sb.p95), task: f2(so.task / sb.task) });
  out('calls_jumps_ratio', { frame_median: f2(jo.med / jb.med), frame_p95: f2(jo.p95 / jb.p95), task: f2(jo.task / jb.task) });
  await bctx.close();

  // sort by duration with every row loaded: click -> row 0 is the slowest call
  const sortMs = [];
  const want = data.order('-duration_ms')[0].id;
  for (let rep = 0; rep < opt.reps; rep++) {
    if (rep > 0) {
      const L2 = await load();
      check(L2.rows === opt.rows, 'rows reloaded before the sort click');
    }
    const r = await page.evaluate(async (id) => {
      const row0 = () => document.querySelector('[data-testid=calls-row][data-index="0"]')?.getAttribute('data-id');
      const t0 = performance.now();
      document.querySelector('[data-testid=calls-header-duration]').click();
      const t1 = await window.__uib.waitFrame(() => row0() === id);
      return t1 - t0;
    }, want);
    sortMs.push(r);
    const u = new URL(page.url());
    check(u.searchParams.get('sort') === 'duration_ms' && u.searchParams.get('order') === 'desc', `sorted by duration desc (${u.search})`);
    say(`calls sort rep ${rep + 1}: ${f1(r)} ms`);
  }
  stats('calls_sort', sortMs);
  await ctx.close();
  side.srv.close();
}

// ---- main ---------------------------------------------------------------------------------
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'] });
try {
  out('browser', { version: browser.version(), reps: opt.reps, frames: opt.frames, jumps: opt.jumps });
  await benchTree(browser);
  await benchCalls(browser);
} catch (e) {
  say(`error: ${e.stack ?? e}`);
  failed = true;
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
