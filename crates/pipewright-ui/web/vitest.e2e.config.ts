import { defineConfig } from "vitest/config";

// The browser tests drive the real `pipewright` binary and Debian's Chromium: one file at a time
// (they share the machine's two cores with everything else), generous timeouts.
export default defineConfig({
  test: {
    include: ["e2e/**/*.e2e.ts"],
    environment: "node",
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    pool: "forks",
  },
});
