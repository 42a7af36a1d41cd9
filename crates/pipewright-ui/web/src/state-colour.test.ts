import { describe, expect, it } from "vitest";
import { fanoutText, runStatusSwatch, stateCss, stateOf, swatchFor } from "./state-colour";
import { NODE_STATES, type NodeState } from "./types";

const node = (over: Partial<NodeState>): NodeState => ({
  state: "pending",
  started_ms: null,
  elapsed_ms: null,
  attempts: null,
  fanout: null,
  input: null,
  prompt: null,
  output: null,
  error: null,
  ...over,
});

describe("state colouring", () => {
  it("gives every state its own fill and stroke, labelled with the state's name", () => {
    const fills = new Set<string>();
    const strokes = new Set<string>();
    for (const s of NODE_STATES) {
      const sw = swatchFor(s);
      expect(sw.label).toBe(s);
      fills.add(sw.fill);
      strokes.add(sw.stroke);
    }
    expect(fills.size).toBe(NODE_STATES.length);
    expect(strokes.size).toBe(NODE_STATES.length);
  });

  it("paints the states a reader must tell apart in the expected hues", () => {
    expect(swatchFor("running").stroke).toBe("#2563eb");
    expect(swatchFor("done").stroke).toBe("#16a34a");
    expect(swatchFor("failed").stroke).toBe("#dc2626");
    expect(swatchFor("waiting").stroke).toBe("#d97706");
  });

  it("draws a state it does not know neutrally, under its own name", () => {
    const sw = swatchFor("frozen");
    expect(sw.label).toBe("frozen");
    for (const s of NODE_STATES) expect(sw.stroke).not.toBe(swatchFor(s).stroke);
  });

  it("takes a step the server has said nothing about as pending", () => {
    const nodes = { "1": node({ state: "running" }) };
    expect(stateOf(nodes, "1")).toBe("running");
    expect(stateOf(nodes, "2")).toBe("pending");
    expect(stateOf(nodes, null)).toBe("pending");
    expect(stateOf(nodes, undefined)).toBe("pending");
  });

  it("writes fan-out progress as done/total", () => {
    expect(fanoutText(node({ fanout: { done: 37, total: 100 } }))).toBe("37/100");
    expect(fanoutText(node({}))).toBeNull();
    expect(fanoutText(undefined)).toBeNull();
  });

  it("colours run statuses with the step palette, and a running run at a gate as waiting", () => {
    expect(runStatusSwatch("ok").fill).toBe(swatchFor("done").fill);
    expect(runStatusSwatch("failed").fill).toBe(swatchFor("failed").fill);
    expect(runStatusSwatch("paused").fill).toBe(swatchFor("waiting").fill);
    expect(runStatusSwatch("running").fill).toBe(swatchFor("running").fill);
    expect(runStatusSwatch("running", true).fill).toBe(swatchFor("waiting").fill);
    expect(runStatusSwatch("running", true).label).toBe("running");
  });

  it("emits one CSS rule per state keyed on data-state, with the table's colours", () => {
    const css = stateCss();
    for (const s of NODE_STATES) {
      expect(css).toContain(`g.step[data-state="${s}"] > rect.box { fill: ${swatchFor(s).fill}; stroke: ${swatchFor(s).stroke}; }`);
    }
    expect(css).toContain(`.badge[data-status="ok"]`);
  });
});
