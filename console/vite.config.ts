/** The console's build: Preact + TypeScript bundled by Vite into dist/console, served at /console. */
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  build: {
    outDir: '../dist/console',
    emptyOutDir: true,
    target: 'es2022',
    // The gateway's CSP allows no inline script or style: every asset is a file.
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
});
