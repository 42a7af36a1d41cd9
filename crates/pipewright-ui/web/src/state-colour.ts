// How a step's state and a run's status look. Pure data, so the colours are unit-tested and the
// legend, the graph and the runs table cannot disagree.
import { NODE_STATES, type NodeState, type NodeStateName } from "./types";

export interface Swatch {
  fill: string;
  stroke: string;
  text: string;
  /** What a reader sees next to the colour (colour alone must not carry the meaning). */
  label: string;
}

const SWATCHES: Record<NodeStateName, Swatch> = {
  pending: { fill: "#f3f4f6", stroke: "#9ca3af", text: "#374151", label: "pending" },
  running: { fill: "#dbeafe", stroke: "#2563eb", text: "#1e3a8a", label: "running" },
  done: { fill: "#dcfce7", stroke: "#16a34a", text: "#14532d", label: "done" },
  failed: { fill: "#fee2e2", stroke: "#dc2626", text: "#7f1d1d", label: "failed" },
  skipped: { fill: "#f5f5f4", stroke: "#a8a29e", text: "#57534e", label: "skipped" },
  waiting: { fill: "#fef3c7", stroke: "#d97706", text: "#78350f", label: "waiting" },
  cancelled: { fill: "#ede9fe", stroke: "#7c3aed", text: "#4c1d95", label: "cancelled" },
};

/** A state the server may add later is drawn neutrally under its own name, never as another. */
const UNKNOWN: Omit<Swatch, "label"> = { fill: "#ffffff", stroke: "#6b7280", text: "#111827" };

export function isNodeState(s: string): s is NodeStateName {
  return (NODE_STATES as readonly string[]).includes(s);
}

export function swatchFor(state: string): Swatch {
  return isNodeState(state) ? SWATCHES[state] : { ...UNKNOWN, label: state };
}

/** A node the server sent nothing for has not started. */
export function stateOf(nodes: Record<string, NodeState>, key: string | null | undefined): string {
  if (key == null) return "pending";
  return nodes[key]?.state ?? "pending";
}

/** `37/100` for a fan-out that is under way or finished, else nothing. */
export function fanoutText(node: NodeState | undefined): string | null {
  const f = node?.fanout;
  if (!f) return null;
  return `${f.done}/${f.total}`;
}

/** A run's status shares the step palette: a run is running, done (ok), failed, waiting… */
const RUN_STATUS_AS_STATE: Record<string, NodeStateName> = {
  ok: "done",
  failed: "failed",
  cancelled: "cancelled",
  stopped: "cancelled",
  paused: "waiting",
  running: "running",
  interrupted: "skipped",
};

export function runStatusSwatch(status: string, waiting = false): Swatch {
  const state = waiting && status === "running" ? "waiting" : RUN_STATUS_AS_STATE[status];
  const base = state ? SWATCHES[state] : UNKNOWN;
  return { ...base, label: status };
}

/**
 * The stylesheet that paints steps and status badges from the table above: a step's colour
 * follows its `data-state` attribute, so a state change is one attribute write.
 */
export function stateCss(): string {
  const rules: string[] = [];
  for (const state of NODE_STATES) {
    const s = SWATCHES[state];
    rules.push(
      `g.step[data-state="${state}"] > rect.box { fill: ${s.fill}; stroke: ${s.stroke}; }`,
      `g.step[data-state="${state}"] > text { fill: ${s.text}; }`,
      `.legend .swatch[data-state="${state}"] { background: ${s.fill}; border-color: ${s.stroke}; color: ${s.text}; }`,
    );
  }
  for (const status of Object.keys(RUN_STATUS_AS_STATE)) {
    const s = runStatusSwatch(status);
    rules.push(`.badge[data-status="${status}"] { background: ${s.fill}; border-color: ${s.stroke}; color: ${s.text}; }`);
  }
  return rules.join("\n");
}
