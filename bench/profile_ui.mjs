// bench/profile_ui.mjs -- time to the first flame graph of an aggregate profile in the web
// UI (issue 19's benchmark): headless chromium opens /profile?<filter>&view=flame on a
// running cloudprof and waits for the flame view's first frames (FlameView sets
// window.__cpFlameTiming.pageMs: performance.now() at its first paint, i.e. from the
// navigation's start: the server's merge, the JSON's transfer and parse, the model and
// the layout). Each run is a fresh page (no cache).
//
//   NODE_PATH=tests/tools/node_modules node bench/profile_ui.mjs BASE_URL QUERY [RUNS]
//
// Prints one JSON line: {"runs":[ms,...],"median_ms":..,"frames":..,"nodes":..}.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');
const [base, query, runsArg] = process.argv.slice(2);
if (!base || query === undefined) {
  console.error('usage: node bench/profile_ui.mjs BASE_URL QUERY [RUNS]');
  process.exit(2);
}
const runs = Number(runsArg || 3);
const browser = await chromium.launch({
  executablePath: process.env.CP_CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
});
const times = [];
let last = null;
try {
  for (let r = 0; r < runs; r++) {
    const ctx = await browser.newContext({ viewport: { width: 1600, height: 900 } });
    const page = await ctx.newPage();
    await page.goto(`${base}/profile?${query}&view=flame`);
    await page.waitForFunction(() => window.__cpFlameTiming, null, { timeout: 600000, polling: 50 });
    last = await page.evaluate(() => window.__cpFlameTiming);
    times.push(last.pageMs);
    await ctx.close();
  }
} finally {
  await browser.close();
}
const sorted = [...times].sort((a, b) => a - b);
console.log(JSON.stringify({ runs: times, median_ms: sorted[Math.floor((sorted.length - 1) / 2)], frames: last.frames, nodes: last.nodes }));
