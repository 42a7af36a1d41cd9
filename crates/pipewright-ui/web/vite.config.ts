/// <reference types="vitest/config" />
import { defineConfig } from "vite";

// dist/ is committed and embedded in the pipewright binary. Vite names each built file by a hash
// of its content: the same sources give byte-identical files under the same names (`npm run
// check-dist` relies on it), and the server may let browsers cache them for good, since a new
// build of a file is a new name.
export default defineConfig({
  base: "/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    // elkjs alone is 1.4 MB; it is served from the binary on loopback, not over a slow link.
    chunkSizeWarningLimit: 2000,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
