import { defineConfig } from 'vite';

/**
 * The log explorer (ui/): built into dist/ui by `npm run build`, served by Berth itself at /ui/.
 * JSX through esbuild with Preact's runtime: no framework plugin needed.
 */
export default defineConfig({
  root: 'ui',
  base: '/ui/',
  publicDir: false,
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  // `npm run ui:dev`: the page with reload, the API of a Berth already running on :8080 (`npm start`).
  server: {
    port: 5173,
    proxy: Object.fromEntries(
      ['/me', '/organizations', '/cloud'].map((path) => [path, { target: 'http://127.0.0.1:8080' }]),
    ),
  },
  build: {
    outDir: '../dist/ui',
    emptyOutDir: true,
    target: 'es2022',
    // No inline script or data: URL may reach the page (CSP default-src 'self').
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});
