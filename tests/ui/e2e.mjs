// tests/ui/e2e.mjs -- the browser acceptance test of the web UI (issue 7), run by
// tests/integration/ui_browser_test.c against a server it loaded with the fixture
// conversation (test-service) and the fixture dumps.
//
// Steps, each asserting what is on the page and leaving a screenshot in CP_UI_ARTIFACTS:
// open discovery, pick the pod, see the calls of test-service, sort by duration, search
// by a parameter value, open a call's tree and find a method in it, switch to the flame
// graph, merge two calls, open a thread dump, import a foreign trace (TPTP binary) through
// the Import dialog and open its calls, a tree and the tree's Export menu. The whole walk
// runs at 1280x800 and again at 1920x1080; any console error or page error fails the run.
//
// The fixture conversation's handshake names the pod's service `esc-ui-service`; its
// streams are the `test-service.*` stream fixtures, whose 45 calls (CP_UI_FIXTURE_CALLS,
// counted by the harness from test-service.calls.expected.txt) the list must show.
//
// env: CP_UI_BASE, CP_UI_FROM, CP_UI_TO, CP_UI_NS, CP_UI_SERVICE, CP_UI_POD,
//      CP_UI_FIXTURE_CALLS, CP_UI_ARTIFACTS; NODE_PATH must reach playwright-core;
//      CP_FIXTURES_DIR (default: ../shared/fixtures next to the repository) holds
//      foreign/shop.trcbin and its expected import.
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { env, launchChromium } from './browser.mjs';

const require = createRequire(import.meta.url);

const BASE = env('CP_UI_BASE');
const FROM = env('CP_UI_FROM');
const TO = env('CP_UI_TO');
const NS = env('CP_UI_NS');
const SERVICE = env('CP_UI_SERVICE');
const POD = env('CP_UI_POD');
const ART = env('CP_UI_ARTIFACTS');
const FIXTURE_CALLS = Number(env('CP_UI_FIXTURE_CALLS'));
mkdirSync(ART, { recursive: true });
const FIXTURES = process.env.CP_FIXTURES_DIR
  || resolve(dirname(fileURLToPath(import.meta.url)), '../../../shared/fixtures');
const FOREIGN = join(FIXTURES, 'foreign/shop.trcbin');
const FOREIGN_EXPECTED = JSON.parse(readFileSync(`${FOREIGN}.expected.json`, 'utf8'));

const short = POD.replace(/_\d{10,}$/, '');
const errors = [];
let step = 0;

function log(msg) {
  console.log(`e2e: ${msg}`);
}

async function api(path) {
  const r = await fetch(BASE + '/api/v1' + path);
  assert.equal(r.status, 200, `GET ${path} -> ${r.status}`);
  return r.json();
}

function watch(page, name) {
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`${name}: console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`${name}: page error: ${e.message}`));
}

async function shot(page, size, name) {
  step++;
  const file = join(ART, `${size}-${String(step).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file });
  log(`  screenshot ${file}`);
}

const WAIT_MS = 120000;

async function walk(browser, width, height) {
  const size = `${width}x${height}`;
  step = 0;
  log(`--- ${size}`);
  const context = await browser.newContext({ viewport: { width, height }, timezoneId: 'UTC' });
  // every wait is for something the walk caused: generous bounds (a loaded machine running
  // the sanitizer build's server can be slow; only a failure waits this long)
  context.setDefaultTimeout(WAIT_MS);
  const page = await context.newPage();
  watch(page, `${size} list`);
  const win = `from=${FROM}&to=${TO}`;
  const sel = `namespace=${encodeURIComponent(NS)}&pod=${encodeURIComponent(POD)}`;

  // what the API says, to compare the pages with
  const all = await api(`/calls?${win}&${sel}&limit=1000`);
  const byDur = await api(`/calls?${win}&${sel}&limit=1000&sort=-duration_ms`);
  assert.equal(all.calls.length, FIXTURE_CALLS, 'the API lists every call of the test-service streams');

  // 1. discovery: the rail lists the namespace, test-service and its pod
  // every call: no duration floor, system calls (the capture's health probes) shown
  await page.goto(`${BASE}/calls?${win}&dur=all&hideSystem=0`);
  const svc = page.locator(`[data-testid=rail-service][data-service="${SERVICE}"]`);
  await svc.waitFor();
  assert.match(await page.locator('[data-testid=rail]').innerText(), new RegExp(NS));
  await page.getByTestId('calls-nothing-selected').waitFor();
  // open the service's pods and pick the pod
  await svc.locator('.twisty').click();
  const pod = page.locator(`[data-testid=rail-pod][data-pod="${POD}"]`);
  await pod.waitFor();
  assert.match(await pod.innerText(), new RegExp(short));
  await shot(page, size, 'discovery');
  await pod.getByTestId('rail-pod-check').check();
  await page.getByTestId('rail-apply').click();
  log('1. discovery: picked the pod');

  // 2. the calls of test-service
  await page.getByTestId('calls-row').first().waitFor();
  const url = new URL(page.url());
  assert.deepEqual(url.searchParams.getAll('pod'), [`${NS}/${SERVICE}/${POD}`]);
  const status = page.getByTestId('calls-status');
  await status.filter({ hasText: `Displaying ${FIXTURE_CALLS} of ${FIXTURE_CALLS} calls` }).waitFor();
  const firstId = await page.getByTestId('calls-row').first().getAttribute('data-id');
  assert.equal(firstId, all.calls[0].id, 'newest call first');
  await shot(page, size, 'calls');
  log(`2. calls: ${all.calls.length} calls of ${SERVICE}, newest first`);

  // 2a. the `sql` tag (ui.md §3.3) on the calls that ran SQL, and only on them
  const sqlCall = all.calls.find((c) => c.sql);
  const plainCall = all.calls.find((c) => !c.sql);
  assert.ok(sqlCall && plainCall, 'the fixture has calls with and without SQL');
  for (const [c, n] of [[sqlCall, 1], [plainCall, 0]]) {
    const r = page.locator(`[data-testid=calls-row][data-id="${c.id}"]`);
    await r.scrollIntoViewIfNeeded();
    assert.equal(await r.getByTestId('call-sql').count(), n, `sql tag on ${c.id}`);
  }
  log(`2a. sql tag: ${all.calls.filter((c) => c.sql).length} calls ran SQL`);

  // 2b. the GC overlay: the pod's pauses (the harness uploaded a GC log among its calls)
  const gcApi = await api(`/gc?${win}&namespace=${encodeURIComponent(NS)}&pod=${encodeURIComponent(POD)}`);
  assert.ok(gcApi.pauses.length >= 5, `GC pauses in the window: ${gcApi.pauses.length}`);
  await page.getByTestId('chart-gc').check();
  await page.locator(`[data-testid=calls-chart][data-gc-pauses="${gcApi.pauses.length}"]`).waitFor();
  await page.getByTestId('chart-gc-count').filter({ hasText: String(gcApi.pauses.length) }).waitFor();
  await shot(page, size, 'gc-overlay');
  await page.getByTestId('chart-gc').uncheck();
  log(`2b. GC overlay: ${gcApi.pauses.length} pauses over the calls chart`);
  // 2c. the classic timeline: a bar per loaded call, stacked in lanes
  await page.getByTestId('chart-kind-timeline').click();
  await page.locator(`[data-testid=calls-timeline][data-bars="${FIXTURE_CALLS}"]`).waitFor();
  await shot(page, size, 'timeline');
  await page.getByTestId('chart-kind-scatter').click();
  await page.getByTestId('calls-chart').waitFor();
  log(`2c. timeline: ${FIXTURE_CALLS} bars`);

  // 2d. XLSX export of the list (ui.md §3.11): a workbook a spreadsheet library opens, with
  // the calls of the page's filters, the same as the CSV
  const [xl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-xlsx').click()]);
  assert.match(xl.suggestedFilename(), /^calls_\d+_\d+\.xlsx$/);
  const xlFile = join(ART, `${size}-calls.xlsx`);
  await xl.saveAs(xlFile);
  const ExcelJS = require('exceljs');
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.readFile(xlFile);
  const sheet = wb.worksheets[0];
  const header = sheet.getRow(1).values.filter((v) => v !== undefined && v !== null);
  const idCol = header.indexOf('Id') + 1;
  assert.ok(idCol > 0, `an Id column: ${header}`);
  const xlIds = [];
  sheet.eachRow((row, n) => { if (n > 1) xlIds.push(String(row.getCell(idCol).value)); });
  const csvHref = await page.getByTestId('export-csv').getAttribute('href');
  const csvText = await (await fetch(BASE + csvHref)).text();
  const csvIds = csvText.trim().split('\n').slice(1).map((l) => l.split(';').pop());
  assert.equal(xlIds.length, FIXTURE_CALLS, 'every call of the list is a row');
  assert.deepEqual(xlIds, csvIds, 'the same rows as the CSV, in the same order');
  log(`2d. XLSX: ${xlIds.length} rows, the CSV's`);

  // 3. sort by duration (descending)
  const durHeader = page.getByTestId('calls-header-duration');
  await durHeader.click();
  if ((await durHeader.getAttribute('data-sort')) !== 'desc') await durHeader.click();
  await page.waitForFunction((id) => document.querySelector('[data-testid=calls-row]')?.getAttribute('data-id') === id,
    byDur.calls[0].id);
  const ids = await page.getByTestId('calls-row').evaluateAll((rows) => rows.slice(0, 5).map((r) => r.getAttribute('data-id')));
  assert.deepEqual(ids, byDur.calls.slice(0, ids.length).map((c) => c.id), 'the slowest calls first');
  assert.match(page.url(), /sort=/);
  await shot(page, size, 'sorted');
  log(`3. sorted by duration: ${byDur.calls[0].duration_ms} ms first`);

  // 4. search by a parameter value
  const want = all.calls.find((c) => (c.params['web.url'] || []).some((u) => u.includes('containersInfo')));
  assert.ok(want, 'the fixture has a containersInfo call');
  const q = '$web.url=containersInfo';
  const found = await api(`/calls?${win}&${sel}&limit=1000&q=${encodeURIComponent(q)}`);
  const box = page.getByTestId('query-input');
  await box.fill(q);
  await box.press('Enter');
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid=calls-row]').length === n, found.calls.length);
  const rowsText = await page.getByTestId('calls-row').allInnerTexts();
  for (const t of rowsText) assert.match(t, /containersInfo/);
  assert.equal(new URL(page.url()).searchParams.get('q'), q);
  await shot(page, size, 'search');
  log(`4. search ${q}: ${found.calls.length} calls`);
  await box.fill('');
  await box.press('Enter');
  await page.waitForFunction((id) => document.querySelector('[data-testid=calls-row]')?.getAttribute('data-id') === id,
    byDur.calls[0].id);

  // 5. open the slowest call with a trace: its tree, and find a method in it
  const withTrace = byDur.calls.filter((c) => c.trace_available && c.calls > 2);
  const target = withTrace[0];
  const tree = await api(`/calls/${target.id}/tree`);
  const deep = pickDeepMethod(tree);
  const row = page.locator(`[data-testid=calls-row][data-id="${target.id}"]`);
  await row.scrollIntoViewIfNeeded();
  const [treePage] = await Promise.all([
    context.waitForEvent('page'),
    row.getByTestId('call-link').click(),
  ]);
  watch(treePage, `${size} tree`);
  await treePage.getByTestId('tree-row').first().waitFor();
  assert.match(await treePage.getByTestId('tree-header').innerText(), new RegExp(short));
  const needle = deep.split('(')[0].split(' ').pop().split('.').slice(-2).join('.');
  await treePage.getByTestId('tree-search').fill(needle);
  await treePage.getByTestId('tree-search-count').filter({ hasText: /\d+ results?/ }).waitFor();
  await treePage.locator('[data-testid=tree-row].match').first().waitFor();
  const hit = await treePage.locator('[data-testid=tree-row].match').first().getAttribute('data-method');
  assert.ok(hit && hit.toLowerCase().includes(needle.toLowerCase()), `found ${needle}: ${hit}`);
  await shot(treePage, size, 'tree-search');
  log(`5. tree of ${target.id}: found ${needle}`);

  // 6. the flame graph
  await treePage.getByTestId('view-flame').click();
  await treePage.getByTestId('flame-frame').first().waitFor();
  const frames = await treePage.getByTestId('flame-frame').count();
  assert.ok(frames >= 2, `flame frames: ${frames}`);
  const titles = await treePage.getByTestId('flame-frame').evaluateAll((f) => f.map((x) => x.getAttribute('title') || ''));
  assert.ok(titles.some((t) => t.toLowerCase().includes(needle.toLowerCase().split('.').pop())), 'the method is a frame');
  assert.match(treePage.url(), /view=flame/);
  await shot(treePage, size, 'flame');
  log(`6. flame graph: ${frames} frames`);

  // 6b. "Download page": one HTML file that opens offline in the same state (ui.md §4.9)
  const [dl] = await Promise.all([treePage.waitForEvent('download'), treePage.getByTestId('tree-download').click()]);
  assert.match(dl.suggestedFilename(), /^\d{4}-\d{2}-\d{2}_\d{4}_.+calls.*\.html$/);
  const saved = join(ART, `${size}-tree.html`);
  await dl.saveAs(saved);
  await treePage.close();
  const offline = await browser.newContext({ viewport: { width, height }, timezoneId: 'UTC', offline: true });
  offline.setDefaultTimeout(WAIT_MS);
  const off = await offline.newPage();
  watch(off, `${size} offline`);
  const requests = [];
  off.on('request', (r) => { if (!r.url().startsWith('file:')) requests.push(r.url()); });
  await off.goto('file://' + saved);
  await off.getByTestId('flame-frame').first().waitFor();
  await off.getByTestId('view-tree').click();
  await off.getByTestId('tree-row').first().waitFor();
  assert.match(await off.getByTestId('tree-search-count').innerText(), /\d+ results?/, 'the search came along');
  await off.getByTestId('tree-search').fill('');
  await off.getByTestId('tree-search').fill(needle);
  await off.locator('[data-testid=tree-row].match').first().waitFor();
  assert.deepEqual(requests, [], 'the offline page fetches nothing');
  await shot(off, size, 'offline-tree');
  await offline.close();
  log(`6b. downloaded ${dl.suggestedFilename()}: opens offline, search works`);

  // 7. merge two calls into one tree
  await page.getByTestId('calls-row').nth(0).click();
  await page.getByTestId('calls-row').nth(1).click({ modifiers: ['Control'] });
  const merge = page.getByTestId('merge-selected');
  await merge.filter({ hasText: /2 calls/ }).waitFor();
  const [merged] = await Promise.all([context.waitForEvent('page'), merge.click()]);
  watch(merged, `${size} merged`);
  await merged.getByTestId('tree-row').first().waitFor();
  assert.match(await merged.getByTestId('tree-header').innerText(), /2 calls/);
  assert.equal(new URL(merged.url()).searchParams.getAll('call').length, 2);
  await shot(merged, size, 'merged');
  await merged.close();
  log('7. merged two calls');

  // 7b. the aggregate profile of the list's filter (ui.md §10.2): progress, then the tree,
  // the flame graph, and the difference against a baseline
  const [prof] = await Promise.all([context.waitForEvent('page'), page.getByTestId('profile-all').click()]);
  watch(prof, `${size} profile`);
  await prof.getByTestId('tree-row').first().waitFor();
  const pu = new URL(prof.url());
  assert.equal(pu.pathname, '/profile');
  const apiQ = new URLSearchParams();
  for (const k of ['from', 'to', 'namespace', 'service', 'pod', 'pods', 'hide_system', 'duration', 'method', 'q', 'error']) {
    for (const v of pu.searchParams.getAll(k)) apiQ.append(k, v);
  }
  const agg = await api(`/profile?${apiQ}`);
  assert.equal(agg.profile.merged + agg.profile.without_trace, agg.profile.matched);
  assert.ok(agg.profile.merged >= 2, `merged: ${agg.profile.merged}`);
  assert.match(await prof.getByTestId('profile-merged').innerText(), new RegExp(`aggregate of ${agg.profile.merged} calls`));
  await shot(prof, size, 'profile-tree');
  await prof.getByTestId('view-flame').click();
  await prof.getByTestId('flame-frame').first().waitFor();
  assert.match(prof.url(), /view=flame/);
  await shot(prof, size, 'profile-flame');
  log(`7b. aggregate profile: ${agg.profile.merged} calls merged (${agg.nodes} nodes), flame graph`);
  // against itself: the same period, the same pods -- no change anywhere
  await prof.getByTestId('profile-compare').click();
  await prof.getByTestId('compare-period').selectOption('same');
  await prof.getByTestId('compare-apply').click();
  await prof.getByTestId('diff-nochange').waitFor();
  await prof.getByTestId('flame-frame').first().waitFor();
  // (the grey "…" frames of narrow children aside)
  const colours = await prof.getByTestId('flame-frame').evaluateAll((f) => [...new Set(f.filter((x) => !x.classList.contains('more'))
    .map((x) => x.style.background))]);
  assert.equal(colours.length, 1, `one neutral colour: ${colours}`);
  await prof.getByTestId('diff-view-changes').click();
  await prof.getByTestId('changes-empty').waitFor();
  log('7b. difference with itself: no change');
  // against the slow calls only: frames change colour, the table lists methods
  const slowBase = new URLSearchParams({ duration: '>=10ms' }).toString();
  pu.searchParams.set('base', slowBase);
  pu.searchParams.delete('dview');
  await prof.goto(pu.toString());
  await prof.getByTestId('diff-root-delta').waitFor();
  await prof.getByTestId('flame-frame').first().waitFor();
  const tints = await prof.getByTestId('flame-frame').evaluateAll((f) => f.filter((x) => !x.classList.contains('more'))
    .map((x) => x.style.background));
  assert.ok(tints.some((c) => c !== colours[0]), `changed frames are tinted: ${tints.slice(0, 5)}`);
  await shot(prof, size, 'profile-difference');
  await prof.getByTestId('diff-view-changes').click();
  await prof.getByTestId('changes-row').first().waitFor();
  await prof.getByTestId('diff-view-tree').click();
  await prof.getByTestId('diff-tree-row').first().waitFor();
  await shot(prof, size, 'profile-difference-tree');
  await prof.close();
  log('7b. difference against the slow calls: tinted frames, largest changes, tree');

  // 7c. GC around a call: a call whose tree has suspension links to the pod's GC pauses
  // around it; a pause there opens the calls around it
  let suspended = null;
  for (const c of byDur.calls.filter((x) => x.trace_available)) {
    const t = await api(`/calls/${c.id}/tree`);
    if (t.root.suspension > 0) { suspended = c; break; }
  }
  assert.ok(suspended, 'a fixture call has suspension in its tree');
  const sp = await context.newPage();
  watch(sp, `${size} suspended tree`);
  await sp.goto(`${BASE}/tree?call=${encodeURIComponent(suspended.id)}`);
  const around = sp.getByTestId('tree-gc-around');
  await around.waitFor();
  const [gcPage] = await Promise.all([context.waitForEvent('page'), around.click()]);
  watch(gcPage, `${size} gc around`);
  await gcPage.getByTestId('gc-call-mark').waitFor();
  await sp.close();
  const gu = new URL(gcPage.url());
  assert.equal(Number(gu.searchParams.get('call_from')), suspended.ts_ms);
  await shot(gcPage, size, 'gc-around-call');
  await gcPage.close();
  log(`7c. GC around ${suspended.id}: the call marked on the pod's GC chart`);
  // the first pause (a second after the first call): its calls
  const oldest = all.calls[all.calls.length - 1];
  const gv = await context.newPage();
  watch(gv, `${size} gc view`);
  await gv.goto(`${BASE}/dump/gc?namespace=${encodeURIComponent(NS)}&pod=${encodeURIComponent(POD)}` +
    `&from=${oldest.ts_ms - 60000}&to=${oldest.ts_ms + 60000}&cpod=${encodeURIComponent(`${NS}/${SERVICE}/${POD}`)}`);
  await gv.getByTestId('gc-bar').first().waitFor();
  const bar = gv.getByTestId('gc-bar').first();
  const pauseMs = Number(await bar.getAttribute('data-time'));
  await bar.hover();
  const [jc] = await Promise.all([context.waitForEvent('page'), bar.click()]);
  watch(jc, `${size} calls of a pause`);
  await jc.locator(`[data-testid=calls-row][data-id="${oldest.id}"]`).waitFor();
  const ju = new URL(jc.url());
  assert.ok(Number(ju.searchParams.get('from')) <= pauseMs && Number(ju.searchParams.get('to')) > pauseMs, `window around the pause: ${jc.url()}`);
  await shot(jc, size, 'gc-pause-calls');
  await jc.close();
  await gv.close();
  log(`7c. the pause at ${pauseMs} opens its calls (${oldest.id} listed)`);

  // 8. open a thread dump from the pod's page
  await page.getByTestId('tab-pods').click();
  await page.getByTestId('pods-page').waitFor();
  const podRow = page.locator(`[data-testid=pods-row][data-pod="${POD}"]`);
  await podRow.waitFor();
  await podRow.getByTestId('pods-td-link').click();
  const file = page.getByTestId('dump-file-row').filter({ hasText: /2023/ }).first();
  await file.waitFor();
  await shot(page, size, 'pods');
  const tds = await api(`/dumps?${win}&type=td&pod=${encodeURIComponent(POD)}`);
  assert.equal(tds.dumps.length, 3); // the two fixtures and the harness's copy next to its second top dump
  const td = tds.dumps.find((d) => d.name === '20231219T061734UTC.td.txt');
  const [tdPage] = await Promise.all([
    context.waitForEvent('page'),
    page.locator(`[data-testid=dump-file-row]`).filter({ hasText: '20231219T061734' }).getByTestId('dump-view-link').click(),
  ]);
  watch(tdPage, `${size} td`);
  await tdPage.getByTestId('td-view').waitFor();
  await tdPage.getByTestId('td-thread-row').first().waitFor();
  assert.match(tdPage.url(), new RegExp(`/dump/td/${td.id}`));
  const threadRows = await tdPage.getByTestId('td-thread-row').count();
  assert.ok(threadRows >= 20, `thread rows: ${threadRows}`);
  assert.match(await tdPage.getByTestId('td-view').innerText(), /Thread-2/);
  await shot(tdPage, size, 'thread-dump');
  log(`8. thread dump ${td.id}: ${threadRows} thread rows, Thread-2 listed`);
  await tdPage.close();

  // 8b. hot threads across the pod's top dumps: Thread-2 used 30 CPU s in the minute between
  // the two, "Timer c+" 2 (the harness's second top dump); a cell opens the thread's stack
  const hotLink = podRow.getByTestId('pods-hot-link');
  const [hot] = await Promise.all([context.waitForEvent('page'), hotLink.click()]);
  watch(hot, `${size} hot threads`);
  await hot.getByTestId('topseries-table').waitFor();
  const hotRows = hot.getByTestId('hot-row');
  assert.equal(await hotRows.nth(0).getAttribute('data-name'), 'Thread-2');
  assert.equal(await hotRows.nth(0).getAttribute('data-tid'), '249');
  assert.equal(Number(await hotRows.nth(0).getByTestId('hot-cell').first().getAttribute('data-value')), 30);
  assert.equal(await hotRows.nth(1).getAttribute('data-name'), 'Timer c+');
  assert.equal(Number(await hotRows.nth(1).getByTestId('hot-cell').first().getAttribute('data-value')), 2);
  await shot(hot, size, 'hot-threads');
  await hotRows.nth(0).getByTestId('hot-cell-link').click();
  await hot.getByTestId('td-view').waitFor();
  await hot.getByTestId('td-thread-detail').filter({ hasText: 'Thread-2' }).waitFor();
  assert.match(hot.url(), /nid=249/);
  await shot(hot, size, 'hot-thread-stack');
  await hot.close();
  log('8b. hot threads: Thread-2 30 CPU s/min, Timer c+ 2; its cell opens its stack');

  // 8c. the pod's thread dumps as one sampled tree (one sample = one thread in one dump);
  // idle and system threads on request
  const [tdp] = await Promise.all([context.waitForEvent('page'), podRow.getByTestId('pods-td-profile').click()]);
  watch(tdp, `${size} thread-dump profile`);
  await tdp.getByTestId('tree-row').first().waitFor();
  const tq = new URL(tdp.url()).searchParams;
  const tdApi = await api(`/dumps/threads-profile?namespace=${encodeURIComponent(tq.get('namespace'))}&pod=${encodeURIComponent(tq.get('pod'))}` +
    `&from=${tq.get('from')}&to=${tq.get('to')}`);
  assert.equal(tdApi.sampled.dumps, 3, 'the three thread dumps of the pod');
  assert.match(await tdp.getByTestId('tree-header').innerText(), new RegExp(`${tdApi.sampled.threads} threads in 3 thread dumps`));
  assert.match(await tdp.getByTestId('tree-row').first().innerText(), new RegExp(`${tdApi.sampled.threads} smp`));
  await shot(tdp, size, 'thread-dump-profile');
  await tdp.getByTestId('sampled-idle').check();
  const allThreads = tdApi.sampled.threads + tdApi.sampled.excluded_idle;
  await tdp.getByTestId('tree-header').filter({ hasText: `${allThreads} threads in 3 thread dumps` }).waitFor();
  await tdp.getByTestId('view-flame').click();
  await tdp.getByTestId('flame-frame').first().waitFor();
  await shot(tdp, size, 'thread-dump-profile-flame');
  await tdp.close();
  log(`8c. thread-dump profile: ${tdApi.sampled.threads} busy threads of 3 dumps, ${allThreads} with idle ones; flame`);

  // 8d. a Go profile as a flame graph (its samples' stacks for the chosen sample type)
  const gor = await api(`/dumps?${win}&type=goroutine&pod=${encodeURIComponent(POD)}`);
  assert.equal(gor.dumps.length, 1);
  const pv = await context.newPage();
  watch(pv, `${size} pprof`);
  await pv.goto(`${BASE}/dump/profile/${gor.dumps[0].id}`);
  const [pf] = await Promise.all([context.waitForEvent('page'), pv.getByTestId('profile-flame-link').click()]);
  watch(pf, `${size} pprof flame`);
  await pf.getByTestId('flame-frame').first().waitFor();
  const pfApi = await api(`/dumps/${gor.dumps[0].id}/profile/tree`);
  assert.match(await pf.getByTestId('tree-header').innerText(), new RegExp(`${pfApi.sampled.samples} samples`));
  await shot(pf, size, 'pprof-flame');
  await pf.close();
  await pv.close();
  log(`8d. goroutine profile: flame graph of ${pfApi.sampled.samples} samples (${pfApi.root.total} goroutines)`);

  await importTrace(context, page, size, `e2e-import-${width}`);

  // 10. the audit log (admins): this walk's XLSX export and import are in it
  const me = await api('/me');
  const cfg = await api('/config');
  if (cfg.features.audit && me.role === 'admin') {
    await page.getByTestId('tab-audit').click();
    await page.getByTestId('audit-table').waitFor();
    await page.locator('[data-testid=audit-row][data-action="calls.export_xlsx"]').first().waitFor();
    await page.locator('[data-testid=audit-row][data-action="import"]').first().waitFor();
    await shot(page, size, 'audit');
    log(`10. audit log: ${await page.getByTestId('audit-row').count()} entries, the export and the import among them`);
  } else {
    assert.equal(await page.getByTestId('tab-audit').count(), 0, 'no Audit tab without an audit log or for a non-admin');
    log(`10. no audit tab (audit ${cfg.features.audit}, role ${me.role})`);
  }

  await context.close();
}

/** 9. Import trace: the TPTP binary fixture into a namespace of this pass (so the second
 *  pass imports it anew), its report, its calls list, one call's tree and the Export menu
 *  of that tree and of two calls merged. */
async function importTrace(context, page, size, ns) {
  const want = FOREIGN_EXPECTED.calls.length;
  const { service, pod } = FOREIGN_EXPECTED.identity;
  await page.getByTestId('import-open').click();
  const dialog = page.getByTestId('import-dialog');
  await dialog.waitFor();
  await page.getByTestId('import-file').setInputFiles(FOREIGN);
  await dialog.getByTestId('import-file-name').filter({ hasText: 'shop.trcbin' }).waitFor();
  await page.getByTestId('import-namespace').fill(ns);
  await shot(page, size, 'import-dialog');
  await page.getByTestId('import-start').click();
  const report = page.getByTestId('import-report');
  await report.waitFor();
  assert.equal(await report.getAttribute('data-kind'), 'ok', await report.innerText());
  assert.equal(Number(await report.getAttribute('data-calls')), want, 'the report counts every call of the file');
  assert.equal(await page.getByTestId('import-headline').innerText(), `Imported ${want} calls`);
  const text = await report.innerText();
  assert.match(text, /TPTP binary/);
  assert.ok(text.includes(`${ns} / ${service} / ${pod}`), `the identity: ${text}`);
  assert.match(await page.getByTestId('import-progress').innerText(), /100 %/);
  await shot(page, size, 'import-report');
  log(`9. imported ${FOREIGN}: ${want} calls into ${ns}`);

  // the calls list of exactly the imported calls
  await page.getByTestId('import-open-calls').click();
  await dialog.waitFor({ state: 'detached' });
  const url = new URL(page.url());
  assert.equal(url.pathname, '/calls');
  assert.deepEqual(url.searchParams.getAll('pod'), [`${ns}/${service}/${pod}`]);
  assert.equal(url.searchParams.get('dur'), 'all');
  assert.equal(url.searchParams.get('hideSystem'), '0');
  await page.getByTestId('calls-status').filter({ hasText: `Displaying ${want} of ${want} calls` }).waitFor();
  assert.equal(await page.getByTestId('calls-row').count(), want);
  assert.match(await page.getByTestId('rail').innerText(), new RegExp(ns));
  await shot(page, size, 'import-calls');
  const win = `from=${url.searchParams.get('from')}&to=${url.searchParams.get('to')}`;
  const listed = await api(`/calls?${win}&namespace=${ns}&pod=${encodeURIComponent(pod)}&limit=100`);
  assert.equal(listed.calls.length, want);
  for (const c of listed.calls) assert.deepEqual(c.params['import.format'], ['trcbin']);
  log(`9. the calls list shows the ${want} imported calls`);

  // one call's tree, its root method, the Export menu
  // the OrderController call with the most calls in its tree
  const call = listed.calls.filter((c) => c.method.startsWith('com.acme.shop.web.OrderController.'))
    .sort((a, b) => b.calls - a.calls)[0];
  assert.ok(call, 'an OrderController call was imported');
  const row = page.locator(`[data-testid=calls-row][data-id="${call.id}"]`);
  await row.scrollIntoViewIfNeeded();
  const [tree] = await Promise.all([context.waitForEvent('page'), row.getByTestId('call-link').click()]);
  watch(tree, `${size} imported tree`);
  await tree.getByTestId('tree-row').first().waitFor();
  const root = await tree.getByTestId('tree-row').first().getAttribute('data-method');
  assert.ok(root.includes('com.acme.shop.web.OrderController'), `the root method: ${root}`);
  assert.match(await tree.getByTestId('tree-header').innerText(), new RegExp(ns));
  await tree.getByTestId('tree-export').click();
  await tree.getByTestId('tree-export-menu').waitFor();
  const one = encodeURIComponent(call.id);
  assert.equal(await tree.getByTestId('tree-export-trcbin').getAttribute('href'), `/api/v1/calls/${one}/export?format=trcbin`);
  assert.equal(await tree.getByTestId('tree-export-trcxml').getAttribute('href'), `/api/v1/calls/${one}/export?format=trcxml`);
  await shot(tree, size, 'import-tree-export');
  const [xml] = await Promise.all([tree.waitForEvent('download'), tree.getByTestId('tree-export-trcxml').click()]);
  assert.match(xml.suggestedFilename(), /\.trcxml$/);
  const xmlFile = join(ART, `${size}-export.trcxml`);
  await xml.saveAs(xmlFile);
  assert.match(readFileSync(xmlFile, 'utf8'), /OrderController/, 'the exported XML holds the call');
  await tree.close();
  log(`9. tree of ${call.id}: ${root.split('(')[0]}; exported ${xml.suggestedFilename()}`);

  // two calls as one tree: the Export menu names both
  await page.getByTestId('calls-row').nth(0).click();
  await page.getByTestId('calls-row').nth(1).click({ modifiers: ['Control'] });
  const merge = page.getByTestId('merge-selected');
  await merge.filter({ hasText: /2 calls/ }).waitFor();
  const [merged] = await Promise.all([context.waitForEvent('page'), merge.click()]);
  watch(merged, `${size} imported merged`);
  await merged.getByTestId('tree-row').first().waitFor();
  const ids = new URL(merged.url()).searchParams.getAll('call');
  assert.equal(ids.length, 2);
  await merged.getByTestId('tree-export').click();
  const both = encodeURIComponent(ids.join(','));
  assert.equal(await merged.getByTestId('tree-export-trcbin').getAttribute('href'), `/api/v1/tree/export?ids=${both}&format=trcbin`);
  assert.equal(await merged.getByTestId('tree-export-trcxml').getAttribute('href'), `/api/v1/tree/export?ids=${both}&format=trcxml`);
  const [bin] = await Promise.all([merged.waitForEvent('download'), merged.getByTestId('tree-export-trcbin').click()]);
  assert.match(bin.suggestedFilename(), /\.trcbin$/);
  await merged.close();
  log(`9. two imported calls as one tree: exported ${bin.suggestedFilename()}`);
}

/** The method text of the deepest node of a tree JSON (not the root). */
function pickDeepMethod(tree) {
  let best = null;
  const visit = (n, d) => {
    if (d > 0 && (!best || d > best.d)) best = { d, m: tree.methods[n.method] };
    for (const c of n.children || []) visit(c, d + 1);
  };
  visit(tree.root, 0);
  assert.ok(best, 'the tree has a child');
  return best.m;
}

const browser = await launchChromium();
try {
  await walk(browser, 1280, 800);
  await walk(browser, 1920, 1080);
} finally {
  await browser.close();
}
if (errors.length) {
  for (const e of errors) console.error(`e2e: ${e}`);
  throw new Error(`${errors.length} console/page errors`);
}
log('ok');
