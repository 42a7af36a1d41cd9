import { describe, expect, it } from "vitest";
import { FULL_TABLE_ROWS, keepRun, parseFilter, rowWindow, visibleRuns } from "./runs-model";
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

  it("draws a small table whole and a big one as a window around the screen", () => {
    expect(rowWindow(FULL_TABLE_ROWS, 28, 5000, 800)).toEqual({ start: 0, end: FULL_TABLE_ROWS });
    // Not scrolled yet: the first screen and the overscan below it.
    expect(rowWindow(10_000, 28, -120, 800, 30)).toEqual({ start: 0, end: 60 });
    // Scrolled 100 rows down.
    expect(rowWindow(10_000, 28, 2800, 800, 30)).toEqual({ start: 70, end: 160 });
    // At the very end the window stops at the last row.
    expect(rowWindow(10_000, 28, 28 * 9_990, 800, 30)).toEqual({ start: 9_960, end: 10_000 });
    // Row height not measured yet: everything (the first draw measures it).
    expect(rowWindow(10_000, 0, 0, 800)).toEqual({ start: 0, end: 10_000 });
  });
});
