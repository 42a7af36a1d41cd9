import { describe, expect, it } from "vitest";
import { engineLine, noRunsText } from "./engine";

describe("what the pages say about the engine", () => {
  const at = "the Restate engine at http://127.0.0.1:8080 (admin http://127.0.0.1:9070)";

  it("says nothing for the local store", () => {
    expect(engineLine(undefined)).toBeNull();
    expect(noRunsText(undefined)).toContain("pipewright run FILE`");
  });

  it("names the engine it reads", () => {
    expect(engineLine({ at, error: null, refreshed_ms: 1 })).toEqual({
      text: `Runs of ${at}, read every second.`,
      error: false,
    });
    expect(noRunsText({ at, error: null, refreshed_ms: null })).toContain("--engine restate");
  });

  it("says why it cannot read the engine, and as of when the runs are", () => {
    const line = engineLine({ at, error: "cannot reach X: connection refused", refreshed_ms: 0 });
    expect(line?.error).toBe(true);
    expect(line?.text).toContain("cannot reach X: connection refused.");
    expect(line?.text).toContain("as of 1970-01-01 00:00:00 UTC");
    const never = engineLine({ at, error: "cannot reach X", refreshed_ms: null });
    expect(never?.text).not.toContain("as of");
  });
});
