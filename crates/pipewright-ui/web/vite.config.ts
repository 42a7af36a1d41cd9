/// <reference types="vitest/config" />
import { defineConfig } from "vite";

// dist/ is committed and embedded in the pipewright binary, so its file names must not change
// from build to build (no content hashes): the Rust side names them, and a rebuild of the same
// sources must give byte-identical files (`npm run check-dist`).
export default defineConfig({
  base: "/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    // elkjs alone is 1.4 MB; it is served from the binary on loopback, not over a slow link.
    chunkSizeWarningLimit: 2000,
    // Fixed names: the app, its stylesheet, and the layout chunk (ELK) the run page loads.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    rollupOptions: {
      output: {
        entryFileNames: "assets/app.js",
        chunkFileNames: "assets/[name].js",
        assetFileNames: "assets/[name][extname]",
      },
    },
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
