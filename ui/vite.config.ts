import { defineConfig } from 'vitest/config';

// The daemon serves `/` (dist/index.html) and `/assets/*` (dist/assets/*)
// and nothing else, so every built file must land under assets/ and there
// is no public/ folder (the favicon is an inline data: URL in index.html).
export default defineConfig({
  base: '/',
  publicDir: false,
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    // No inlined assets tricks needed; keep fonts/images (none today) as files.
    assetsInlineLimit: 0,
  },
  test: {
    environment: 'node',
    include: ['src/**/*.test.ts'],
  },
});
