// Builds the web app (API.md 8.8) into dist/app: hashed assets under /assets, served immutable by
// svc serve (src/web/app.plugin.ts), index.html for every other non-API path.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  // JSX through Vite's own transform, with Preact's runtime: no babel, no preset plugin.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/app', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    // No inline data: URLs for assets: the CSP allows nothing but 'self'.
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: true,
  },
  server: { proxy: { '/v1': 'http://127.0.0.1:8080', '/device': 'http://127.0.0.1:8080' } },
});
