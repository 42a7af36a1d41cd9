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
    // Everything in one script and one stylesheet: the server embeds a fixed, short list.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    rollupOptions: {
      output: {
        entryFileNames: "assets/app.js",
        chunkFileNames: "assets/[name].js",
        assetFileNames: "assets/[name][extname]",
        inlineDynamicImports: true,
      },
    },
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
