import { defineConfig } from 'vite';

// One JS and one CSS file (no code splitting): `cloudprof serve` embeds dist/ in its
// binary, and the tree page's "Download page" inlines both into a standalone HTML file.
// `npx vite` (development) proxies the API to a running `cloudprof serve`: set CP_API
// (default http://127.0.0.1:8080).
declare const process: { env: Record<string, string | undefined> };
const api = process.env.CP_API || 'http://127.0.0.1:8080';

export default defineConfig({
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    target: 'es2022',
    assetsInlineLimit: 0,
    cssCodeSplit: false,
    modulePreload: false,
    reportCompressedSize: false,
    rollupOptions: { output: { codeSplitting: false } },
  },
  server: { proxy: { '/api': api } },
  test: { include: ['src/**/*.test.ts'] },
} as any);
