// The JSON the server sends (docs/ui.md, "HTTP API"): field names as on the wire.
import type { EngineInfo } from "./engine";

export interface Usage {
  input_tokens: number | null;
  output_tokens: number | null;
  cost_usd: number | null;
  agent_calls: number;
  wall_ms: number | null;
}

export interface RunRow {
  run_id: string;
  status: string;
  dialect: string | null;
  file: string;
  workflow: string;
  created_ms: number;
  updated_ms: number;
  duration_ms: number | null;
  steps_done: number | null;
  steps_total: number | null;
  waiting: boolean;
  in_progress: boolean;
  usage: Usage | null;
}

export const NODE_STATES = [
  "pending",
  "running",
  "done",
  "failed",
  "skipped",
  "waiting",
  "cancelled",
] as const;
export type NodeStateName = (typeof NODE_STATES)[number];

export interface Fanout {
  done: number;
  total: number;
}

export interface NodeState {
  state: NodeStateName;
  started_ms: number | null;
  elapsed_ms: number | null;
  attempts: number | null;
  fanout: Fanout | null;
  input: unknown;
  prompt: string | null;
  /** Set when `input` and `prompt` are a fan-out item's latest start, not the node's own. */
  given_by?: { key: string; step_kind: string } | null;
  output: unknown;
  error: string | null;
}

export interface Pending {
  step_key: string;
  kind: "gate" | "approval" | string;
  prompt: string;
  continues: "resume" | "live" | "engine" | string;
}

export interface RunDetail {
  run: RunRow;
  /** Set when the server serves a run engine (docs/ui.md, "On the Restate engine"). */
  engine?: EngineInfo;
  graph: GraphDoc | null;
  nodes: Record<string, NodeState>;
  pending: Pending | null;
  events_seq: number;
}

/** One message of `/api/runs/RUN_ID/events`, tagged with its SSE event name. */
export type RunMessage =
  | { type: "detail"; detail: RunDetail }
  | { type: "node"; node: NodeState & { step_key: string } }
  | { type: "run"; run: RunRow; pending: Pending | null }
  | { type: "log"; seq: number; event: Record<string, unknown> };

// `pipewright graph --format json`, version 1 (docs/graph-json.md), plus the server's step_key.
export interface GraphDoc {
  format: string;
  version: number;
  workflows: GraphWorkflow[];
}

export interface GraphWorkflow {
  id: string;
  name: string;
  dialect: string;
  description: string | null;
  body: GraphRegion;
}

export interface GraphRegion {
  id: string;
  entry: string | null;
  nodes: GraphNode[];
  edges: GraphEdge[];
}

export interface GraphNode {
  id: string;
  kind: string;
  summary: string;
  name?: string;
  dialect_kind?: string;
  agent?: boolean;
  condition?: string;
  step_key?: string | null;
  /** Kind-specific fields (docs/graph-json.md): a shell step's `command`, an agent's `prompt`… */
  details?: Record<string, unknown>;
  regions: { role: string; region: GraphRegion }[];
}

export interface GraphEdge {
  from: string;
  to: string;
  kind: string;
  label: string | null;
}
