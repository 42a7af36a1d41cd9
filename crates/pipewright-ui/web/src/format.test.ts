import { describe, expect, it } from "vitest";
import { formatCost, formatDuration, formatSteps, formatTime, formatValue } from "./format";

describe("formatting", () => {
  it("writes durations at a reader's scale", () => {
    expect(formatDuration(850)).toBe("850 ms");
    expect(formatDuration(12_340)).toBe("12.3 s");
    expect(formatDuration(245_000)).toBe("4 min 05 s");
    expect(formatDuration(7_380_000)).toBe("2 h 03 min");
    expect(formatDuration(null)).toBe("");
    expect(formatDuration(-1)).toBe("");
  });

  it("writes times in UTC like `pipewright runs`", () => {
    expect(formatTime(Date.UTC(2026, 10, 29, 11, 33, 10))).toBe("2026-11-29 11:33:10");
  });

  it("writes costs as the CLI does: - without agent calls, ? when unknown", () => {
    expect(formatCost(null)).toBe("-");
    expect(formatCost({ input_tokens: 0, output_tokens: 0, cost_usd: null, agent_calls: 0, wall_ms: 0 })).toBe("-");
    expect(formatCost({ input_tokens: 1, output_tokens: 1, cost_usd: null, agent_calls: 2, wall_ms: 1 })).toBe("?");
    expect(formatCost({ input_tokens: 1, output_tokens: 1, cost_usd: 1.5, agent_calls: 2, wall_ms: 1 })).toBe("$1.50");
    expect(formatCost({ input_tokens: 1, output_tokens: 1, cost_usd: 0.0012, agent_calls: 1, wall_ms: 1 })).toBe("$0.0012");
  });

  it("writes steps done of total, and values as text", () => {
    expect(formatSteps(3, 5)).toBe("3/5");
    expect(formatSteps(null, 5)).toBe("0/5");
    expect(formatSteps(null, null)).toBe("");
    expect(formatValue("plain")).toBe("plain");
    expect(formatValue({ a: 1 })).toBe('{\n  "a": 1\n}');
  });
});
