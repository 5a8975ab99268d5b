// tests/oidc/login.mjs -- the browser part of tests/integration/oidc_test.c (issue 17 item 3): a
// person logs in to cloudprof's UI through the OpenID provider (tests/oidc/provider.mjs), sees only
// the namespaces of its groups, opens a call tree and logs out.
//
// Steps (screenshots in CP_UI_ARTIFACTS):
//  1. open the calls page: the app asks /api/v1/me, gets 401 and goes to /auth/login, which sends
//     the browser to the provider's login page;
//  2. log in as alice (groups team-a, viewer; any password on the provider's development page):
//     back on the page asked for, with the cookie cp_session (HttpOnly, Secure, SameSite=Lax);
//  3. /api/v1/me says alice, viewer, namespaces [CP_UI_NS]; /services lists CP_UI_NS and never
//     CP_UI_OTHER_NS; the user badge shows alice;
//  4. pick the pod of CP_UI_NS and open a call's tree;
//  5. log out (the badge's link): the provider's end-session page, then back; the cookie is gone,
//     the API answers 401 and the app asks for a login again;
//  6. bob logs in through /auth/login?return=//evil.example/x: he lands on the app, not elsewhere,
//     and sees CP_UI_OTHER_NS only.
//
// env: CP_UI_BASE, CP_OIDC_ISSUER, CP_UI_FROM, CP_UI_TO, CP_UI_NS, CP_UI_OTHER_NS,
//      CP_UI_ARTIFACTS; NODE_PATH must reach playwright-core.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { env, launchChromium } from '../ui/browser.mjs';

const BASE = env('CP_UI_BASE');
const ISSUER = env('CP_OIDC_ISSUER');
const FROM = env('CP_UI_FROM');
const TO = env('CP_UI_TO');
const NS = env('CP_UI_NS');
const OTHER = env('CP_UI_OTHER_NS');
const ART = env('CP_UI_ARTIFACTS');
mkdirSync(ART, { recursive: true });
const WAIT_MS = 120000;
const log = (m) => console.log(`login: ${m}`);
let step = 0;
const shot = async (page, name) => {
  const file = join(ART, `${String(++step).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file });
  log(`  screenshot ${file}`);
};

// Logs in as user on the provider's development login page (any password), then passes its
// consent page when it shows one (a "Continue" button), until the browser is back at BASE.
async function providerLogin(page, user) {
  await page.locator('input[name=login]').fill(user);
  await page.locator('input[name=password]').fill('any-password');
  await page.locator('button[type=submit]').click();
  await page.locator('input[name=login]').waitFor({ state: 'detached' });
  const consent = page.locator('button[autofocus]', { hasText: 'Continue' });
  while (!page.url().startsWith(BASE)) {
    const next = await Promise.race([
      page.waitForURL((u) => u.href.startsWith(BASE), { timeout: WAIT_MS }).then(() => 'back', () => 'timeout'),
      consent.waitFor({ timeout: WAIT_MS }).then(() => 'consent', () => 'timeout'), // the loser must not throw later
    ]);
    if (next === 'timeout') throw new Error(`the login of ${user} did not come back: ${page.url()}`);
    if (next === 'consent' && !page.url().startsWith(BASE)) {
      await shot(page, `provider-consent-${user}`);
      await consent.click();
      await consent.waitFor({ state: 'detached' });
    }
  }
}

const browser = await launchChromium();
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'UTC' });
  context.setDefaultTimeout(WAIT_MS);
  const page = await context.newPage();
  page.on('pageerror', (e) => log(`page error: ${e.message}`));
  const api = async (path) => {
    const r = await context.request.get(BASE + path, { maxRedirects: 0 });
    return { status: r.status(), body: r.status() === 200 ? await r.json() : await r.text() };
  };

  // 1. the app sends an anonymous visitor to the provider's login page
  const win = `from=${FROM}&to=${TO}`;
  const want = `/calls?${win}&dur=all&hideSystem=0`;
  assert.equal((await api('/api/v1/me')).status, 401, 'no session yet: /api/v1/me is 401');
  const logins = [], callbacks = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (r.url().startsWith(BASE) && u.pathname === '/auth/login') logins.push(u.searchParams.get('return'));
    if (r.url().startsWith(ISSUER) && u.pathname === '/auth') logins.push(u.searchParams);
    if (r.url().startsWith(BASE) && u.pathname === '/auth/callback') callbacks.push(u.pathname + u.search);
  });
  await page.goto(BASE + want, { waitUntil: 'commit' }); // the app goes on to the login at once
  const toLogin = () => page.waitForURL((u) => u.href.startsWith(ISSUER), { timeout: WAIT_MS });
  await toLogin();
  assert.equal(logins[0], want, 'the app went to /auth/login?return=<the page>');
  const q = logins[1];
  assert.equal(q.get('response_type'), 'code');
  assert.equal(q.get('client_id'), 'cloudprof-ui');
  assert.equal(q.get('redirect_uri'), `${BASE}/auth/callback`);
  assert.equal(q.get('code_challenge_method'), 'S256');
  assert.ok(q.get('state') && q.get('nonce') && q.get('code_challenge'), 'state, nonce, PKCE');
  const authUrl = new URL(page.url());
  log(`1. the app went to /auth/login, then to the provider: ${authUrl.origin}${authUrl.pathname}`);
  await shot(page, 'provider-login');

  // 2. log in as alice on the provider's page
  await providerLogin(page, 'alice');
  const back = new URL(page.url());
  assert.equal(back.pathname + back.search, want, 'back on the page asked for');
  const cookie = (await context.cookies(BASE)).find((c) => c.name === 'cp_session');
  assert.ok(cookie, 'the session cookie is set');
  assert.equal(cookie.httpOnly, true, 'HttpOnly');
  assert.equal(cookie.secure, true, 'Secure');
  assert.equal(cookie.sameSite, 'Lax', 'SameSite=Lax');
  // the callback's state is good once: the same code and state again are refused
  assert.equal(callbacks.length, 1);
  const replay = await context.request.get(BASE + callbacks[0], { maxRedirects: 0, headers: { cookie: '' } });
  assert.equal(replay.status(), 400, `a replayed callback: ${replay.status()}`);
  log(`2. logged in as alice: cookie cp_session (HttpOnly, Secure, SameSite=${cookie.sameSite}) on ${back.host}`);

  // 3. who the server says alice is, and what it lets her see
  const me = await api('/api/v1/me');
  assert.equal(me.status, 200, `/api/v1/me: ${me.status} ${JSON.stringify(me.body)}`);
  assert.equal(me.body.user, 'alice');
  assert.equal(me.body.role, 'viewer');
  assert.deepEqual(me.body.namespaces, [NS]);
  assert.equal(me.body.auth, 'oidc');
  assert.equal(me.body.logout, '/auth/logout');
  const seen = new Set();
  for (const w of [win, 'from=1795000000000&to=1797000000000']) {
    const s = await api(`/api/v1/services?${w}`);
    assert.equal(s.status, 200);
    for (const n of s.body.namespaces) seen.add(n.namespace);
  }
  assert.deepEqual([...seen], [NS], `alice sees ${[...seen]}`);
  const other = await api(`/api/v1/calls?from=1795000000000&to=1797000000000&namespace=${encodeURIComponent(OTHER)}`);
  assert.ok(other.status === 404 || (other.status === 200 && other.body.calls.length === 0),
    `${OTHER} is invisible: ${other.status}`);
  const badge = page.getByTestId('user-badge');
  await badge.waitFor();
  assert.match(await badge.innerText(), /alice/);
  assert.match(await badge.innerText(), /viewer/);
  const rail = page.getByTestId('rail');
  await page.locator('[data-testid=rail-service]').first().waitFor();
  const railText = await rail.innerText();
  assert.match(railText, new RegExp(NS));
  assert.doesNotMatch(railText, new RegExp(OTHER));
  await shot(page, 'logged-in');
  log(`3. /api/v1/me: alice, viewer, namespaces [${NS}]; the rail lists ${NS} only`);

  // 4. the pod of NS, its calls, a call's tree
  const svc = page.locator('[data-testid=rail-service]').first();
  await svc.locator('.twisty').click();
  const pod = page.locator('[data-testid=rail-pod]').first();
  await pod.waitFor();
  await pod.getByTestId('rail-pod-check').check();
  await page.getByTestId('rail-apply').click();
  await page.getByTestId('calls-row').first().waitFor();
  const href = await page.getByTestId('calls-row').first().getByTestId('call-link').getAttribute('href');
  assert.ok(href, 'a call link');
  await page.goto(new URL(href, BASE).href);
  await page.getByTestId('tree-row').first().waitFor();
  await shot(page, 'tree');
  log(`4. opened the tree ${href}`);

  // 5. log out through the badge's link: the provider's end-session page, then back
  await page.goto(BASE + want);
  await page.getByTestId('logout').click();
  await page.waitForURL((u) => u.href.startsWith(ISSUER), { timeout: WAIT_MS });
  assert.equal((await context.cookies(BASE)).find((c) => c.name === 'cp_session'), undefined, 'the cookie is cleared');
  await shot(page, 'provider-logout');
  // oidc-provider asks to confirm the end of its own session, then sends the browser back to
  // post_logout_redirect_uri (the server's /), where the app, without a session, goes to the
  // login again: the navigations are recorded, not raced
  const navs = [];
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) navs.push(f.url()); });
  const nlogins = logins.length;
  await page.locator('button[autofocus]').click();
  await page.waitForURL((u) => u.href.startsWith(ISSUER) && u.pathname.startsWith('/interaction'), { timeout: WAIT_MS });
  await page.locator('input[name=login]').waitFor();
  const home = navs.find((u) => u.startsWith(BASE));
  assert.ok(home && ['/', '/calls'].includes(new URL(home).pathname), `back at the post-logout URI: ${navs}`);
  log(`5. logged out: back at ${home}`);
  assert.equal((await api('/api/v1/me')).status, 401, 'the API is 401 again');
  assert.equal((await api(`/api/v1/services?${win}`)).status, 401);
  assert.ok(logins.length > nlogins, 'the app went to /auth/login again');
  await shot(page, 'login-again');
  log('5. after the logout the app asks for a login again');

  // 6. bob, through a login whose return is not a local path: he lands on the app's own page,
  // and sees the other namespace only
  await page.goto(`${BASE}/auth/login?return=${encodeURIComponent('//evil.example/x')}`);
  await page.waitForURL((u) => u.href.startsWith(ISSUER), { timeout: WAIT_MS });
  await page.locator('input[name=login]').waitFor();
  await providerLogin(page, 'bob');
  assert.ok(['/', '/calls'].includes(new URL(page.url()).pathname), `bob lands on the app: ${page.url()}`);
  const bob = await api('/api/v1/me');
  assert.equal(bob.status, 200);
  assert.equal(bob.body.user, 'bob');
  assert.deepEqual(bob.body.namespaces, [OTHER]);
  await shot(page, 'bob');
  log(`6. bob (return=//evil.example/x ignored) sees [${bob.body.namespaces}]`);
  await context.close();
} finally {
  await browser.close();
}
log('ok');
