import { describe, expect, it } from "vitest";
import { keepRun, parseFilter, visibleRuns } from "./runs-model";
import type { RunRow } from "./types";

const row = (id: string, status: string, created: number, waiting = false): RunRow => ({
  run_id: id,
  status,
  dialect: "recipe",
  file: "r.yaml",
  workflow: "r",
  created_ms: created,
  updated_ms: created,
  duration_ms: 0,
  steps_done: 0,
  steps_total: 1,
  waiting,
  in_progress: false,
  usage: null,
});

describe("the runs list", () => {
  const rows = [row("a", "ok", 1), row("b", "failed", 3), row("c", "paused", 2, true), row("d", "running", 4, true)];

  it("lists the newest first", () => {
    expect(visibleRuns(rows, "all").map((r) => r.run_id)).toEqual(["d", "b", "c", "a"]);
  });

  it("filters by status, and `waiting` by the gate marker whatever the status", () => {
    expect(visibleRuns(rows, "failed").map((r) => r.run_id)).toEqual(["b"]);
    expect(visibleRuns(rows, "waiting").map((r) => r.run_id)).toEqual(["d", "c"]);
    expect(keepRun(rows[0], "waiting")).toBe(false);
  });

  it("keeps the server's order for runs started in the same millisecond", () => {
    const same = [row("x", "ok", 5), row("y", "ok", 5), row("z", "ok", 5)];
    expect(visibleRuns(same, "all").map((r) => r.run_id)).toEqual(["x", "y", "z"]);
  });

  it("reads an unknown filter from the address as all", () => {
    expect(parseFilter("failed")).toBe("failed");
    expect(parseFilter("bogus")).toBe("all");
    expect(parseFilter(null)).toBe("all");
  });
});
