// tests/ui/browser.mjs -- what the browser tests share (tests/ui/e2e.mjs and
// tests/oidc/login.mjs): reading their env and starting Debian's chromium the same way.
// NODE_PATH must reach playwright-core.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');

// The value of the environment variable k; a test cannot run without it.
export const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};

// Headless chromium (CP_CHROMIUM, default /usr/bin/chromium), without sandbox, GPU or
// background traffic: a container on a busy machine.
export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CP_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}
