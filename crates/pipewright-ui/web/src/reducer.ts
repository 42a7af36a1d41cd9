// The run page's model and how server messages change it. Pure: the page feeds it the detail it
// fetched and every SSE message, and draws what comes out. The server does the reduction from run
// events to node states; this only applies them.
import type { GraphDoc, NodeState, Pending, RunMessage, RunRow } from "./types";

export interface LogEntry {
  seq: number;
  event: Record<string, unknown>;
}

export interface RunPageModel {
  run: RunRow | null;
  graph: GraphDoc | null;
  nodes: Record<string, NodeState>;
  pending: Pending | null;
  /** The last LOG_LIMIT events, oldest first. */
  log: LogEntry[];
  /** Events older than `log` that were let go (a 5,000-step run has 10,000). */
  logDropped: number;
  /** The highest event sequence number applied: a replay after a reconnect is skipped. */
  lastSeq: number;
  loaded: boolean;
}

export const LOG_LIMIT = 1000;

export function emptyModel(): RunPageModel {
  return {
    run: null,
    graph: null,
    nodes: {},
    pending: null,
    log: [],
    logDropped: 0,
    lastSeq: 0,
    loaded: false,
  };
}

/** The sequence number after which a page that has no events yet asks for them. */
export function logStart(eventsSeq: number): number {
  return Math.max(0, eventsSeq - LOG_LIMIT);
}

export function applyMessage(model: RunPageModel, msg: RunMessage): RunPageModel {
  return applyMessages(model, [msg]);
}

/**
 * Applies a batch in order. The page batches what arrives within one animation frame, so the
 * node map is copied once per frame, not once per message (a big run sends thousands).
 */
export function applyMessages(model: RunPageModel, msgs: readonly RunMessage[]): RunPageModel {
  if (msgs.length === 0) return model;
  const next: RunPageModel = { ...model };
  let nodesCopied = false;
  let logCopied = false;
  for (const msg of msgs) {
    switch (msg.type) {
      case "detail": {
        const d = msg.detail;
        next.run = d.run;
        next.graph = d.graph;
        next.nodes = { ...d.nodes };
        nodesCopied = true;
        next.pending = d.pending;
        next.loaded = true;
        // A first detail of a long log: the page asks the stream only for the last LOG_LIMIT
        // events (logStart), and counts the ones before as not shown.
        if (next.lastSeq === 0 && next.log.length === 0) {
          next.lastSeq = logStart(d.events_seq);
          next.logDropped = next.lastSeq;
        }
        break;
      }
      case "node": {
        if (!nodesCopied) {
          next.nodes = { ...next.nodes };
          nodesCopied = true;
        }
        const { step_key, ...state } = msg.node;
        next.nodes[step_key] = state;
        break;
      }
      case "run":
        next.run = msg.run;
        next.pending = msg.pending;
        break;
      case "log": {
        if (msg.seq <= next.lastSeq) break;
        if (!logCopied) {
          next.log = next.log.slice();
          logCopied = true;
        }
        next.log.push({ seq: msg.seq, event: msg.event });
        next.lastSeq = msg.seq;
        break;
      }
    }
  }
  if (next.log.length > LOG_LIMIT) {
    const extra = next.log.length - LOG_LIMIT;
    next.log = next.log.slice(extra);
    next.logDropped += extra;
  }
  return next;
}

/** The step keys whose drawing a batch may change; `all` when the whole graph is redrawn. */
export function touchedKeys(msgs: readonly RunMessage[]): Set<string> | "all" {
  const keys = new Set<string>();
  for (const msg of msgs) {
    if (msg.type === "detail") return "all";
    if (msg.type === "node") keys.add(msg.node.step_key);
  }
  return keys;
}

/** Whether a run can still be cancelled from the page (a live process runs it). */
export function cancellable(run: RunRow | null): boolean {
  return run != null && run.status === "running" && run.in_progress;
}

/** One line of the event log, as a reader scans it. */
export function logLine(entry: LogEntry): string {
  const e = entry.event;
  const parts: string[] = [];
  if (typeof e.at_ms === "number") parts.push(`+${(e.at_ms / 1000).toFixed(3)}s`);
  parts.push(String(e.event ?? "event"));
  if (e.key != null) parts.push(String(e.key));
  if (typeof e.step_kind === "string") parts.push(`(${e.step_kind})`);
  if (typeof e.stage === "string") parts.push(`stage ${e.stage}`);
  if (typeof e.decision === "string") parts.push(e.decision);
  if (typeof e.elapsed_ms === "number") parts.push(`${e.elapsed_ms} ms`);
  if (typeof e.error === "string") parts.push(`— ${e.error}`);
  return parts.join(" ");
}
