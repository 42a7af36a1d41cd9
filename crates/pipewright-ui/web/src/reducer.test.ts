import { describe, expect, it } from "vitest";
import {
  applyMessage,
  applyMessages,
  cancellable,
  emptyModel,
  LOG_LIMIT,
  logLine,
  logStart,
  touchedKeys,
} from "./reducer";
import type { NodeState, RunDetail, RunMessage, RunRow } from "./types";

const row = (over: Partial<RunRow> = {}): RunRow => ({
  run_id: "r1",
  status: "running",
  dialect: "pipeline",
  file: "p.yaml",
  workflow: "p",
  created_ms: 1000,
  updated_ms: 2000,
  duration_ms: 1000,
  steps_done: 0,
  steps_total: 3,
  waiting: false,
  in_progress: true,
  usage: null,
  ...over,
});

const ns = (state: NodeState["state"], over: Partial<NodeState> = {}): NodeState => ({
  state,
  started_ms: null,
  elapsed_ms: null,
  attempts: 1,
  fanout: null,
  input: null,
  prompt: null,
  output: null,
  error: null,
  ...over,
});

const detail = (over: Partial<RunDetail> = {}): RunDetail => ({
  run: row(),
  graph: null,
  nodes: { "0": ns("done"), "1": ns("running") },
  pending: null,
  events_seq: 4,
  ...over,
});

const nodeMsg = (key: string, state: NodeState["state"], over: Partial<NodeState> = {}): RunMessage => ({
  type: "node",
  node: { step_key: key, ...ns(state, over) },
});
const logMsg = (seq: number, event = "step_started"): RunMessage => ({
  type: "log",
  seq,
  event: { event, key: String(seq) },
});

describe("the run page reducer", () => {
  it("starts a long run's log at its last LOG_LIMIT events and counts the others as not shown", () => {
    const seq = LOG_LIMIT + 250;
    expect(logStart(seq)).toBe(250);
    expect(logStart(4)).toBe(0);
    let m = applyMessage(emptyModel(), { type: "detail", detail: detail({ events_seq: seq }) });
    expect(m.lastSeq).toBe(250);
    expect(m.logDropped).toBe(250);
    // What the stream sends from there is listed; an older event is not.
    m = applyMessages(m, [logMsg(250), logMsg(251), logMsg(seq)]);
    expect(m.log.map((e) => e.seq)).toEqual([251, seq]);
    // A detail fetched again (after a reconnect) changes nothing of the log.
    m = applyMessage(m, { type: "detail", detail: detail({ events_seq: seq + 5 }) });
    expect(m.lastSeq).toBe(seq);
    expect(m.logDropped).toBe(250);
  });

  it("loads a detail: run, nodes, pending, and marks the page loaded", () => {
    const m = applyMessage(emptyModel(), { type: "detail", detail: detail() });
    expect(m.loaded).toBe(true);
    expect(m.run?.run_id).toBe("r1");
    expect(m.nodes["1"].state).toBe("running");
    expect(m.pending).toBeNull();
  });

  it("turns a node from running to done without touching the others or the old model", () => {
    const before = applyMessage(emptyModel(), { type: "detail", detail: detail() });
    const after = applyMessage(before, nodeMsg("1", "done", { elapsed_ms: 1200 }));
    expect(after.nodes["1"]).toEqual(ns("done", { elapsed_ms: 1200 }));
    expect(after.nodes["0"]).toBe(before.nodes["0"]);
    expect(before.nodes["1"].state).toBe("running");
    expect("step_key" in after.nodes["1"]).toBe(false);
  });

  it("adds a node the detail did not have (a fan-out item)", () => {
    const m = applyMessages(emptyModel(), [
      { type: "detail", detail: detail() },
      nodeMsg("2", "running", { fanout: { done: 37, total: 100 } }),
    ]);
    expect(m.nodes["2"].fanout).toEqual({ done: 37, total: 100 });
  });

  it("applies a batch in order: the last state of a node wins", () => {
    const m = applyMessages(emptyModel(), [nodeMsg("3", "running"), nodeMsg("3", "failed", { error: "boom" }), nodeMsg("4", "skipped")]);
    expect(m.nodes["3"].state).toBe("failed");
    expect(m.nodes["3"].error).toBe("boom");
    expect(m.nodes["4"].state).toBe("skipped");
  });

  it("a detail fetched after a reconnect replaces the nodes and keeps the log", () => {
    let m = applyMessages(emptyModel(), [{ type: "detail", detail: detail() }, logMsg(1), logMsg(2)]);
    m = applyMessage(m, { type: "detail", detail: detail({ nodes: { "0": ns("done"), "1": ns("done") } }) });
    expect(m.nodes["1"].state).toBe("done");
    expect(m.log.map((e) => e.seq)).toEqual([1, 2]);
  });

  it("a run message changes the status and the pending approval", () => {
    const pending = { step_key: "1", kind: "gate", prompt: "Ship it?", continues: "resume" };
    let m = applyMessage(emptyModel(), { type: "run", run: row({ status: "paused", waiting: true }), pending });
    expect(m.run?.status).toBe("paused");
    expect(m.pending).toEqual(pending);
    m = applyMessage(m, { type: "run", run: row({ status: "failed" }), pending: null });
    expect(m.pending).toBeNull();
    expect(m.run?.status).toBe("failed");
  });

  it("appends log events once: a replay after a reconnect is skipped", () => {
    let m = applyMessages(emptyModel(), [logMsg(1), logMsg(2), logMsg(3)]);
    m = applyMessages(m, [logMsg(2), logMsg(3), logMsg(4)]);
    expect(m.log.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(m.lastSeq).toBe(4);
  });

  it("keeps the last LOG_LIMIT events and counts the ones let go", () => {
    const msgs = Array.from({ length: LOG_LIMIT + 25 }, (_, i) => logMsg(i + 1));
    const m = applyMessages(emptyModel(), msgs);
    expect(m.log.length).toBe(LOG_LIMIT);
    expect(m.log[0].seq).toBe(26);
    expect(m.logDropped).toBe(25);
  });

  it("returns the same model for an empty batch", () => {
    const m = emptyModel();
    expect(applyMessages(m, [])).toBe(m);
  });

  it("says which steps a batch touched, or all after a detail", () => {
    expect(touchedKeys([nodeMsg("1", "done"), logMsg(1), nodeMsg("2.for_each.0", "done")])).toEqual(
      new Set(["1", "2.for_each.0"]),
    );
    expect(touchedKeys([nodeMsg("1", "done"), { type: "detail", detail: detail() }])).toBe("all");
  });

  it("offers Cancel only for a run a live process is running", () => {
    expect(cancellable(row())).toBe(true);
    expect(cancellable(row({ in_progress: false }))).toBe(false);
    expect(cancellable(row({ status: "paused", in_progress: false }))).toBe(false);
    expect(cancellable(null)).toBe(false);
  });

  it("writes an event as one readable line", () => {
    expect(
      logLine({
        seq: 7,
        event: { event: "step_failed", key: "2", step_kind: "shell", at_ms: 1534, elapsed_ms: 12, error: "exit status 3" },
      }),
    ).toBe("+1.534s step_failed 2 (shell) 12 ms — exit status 3");
    expect(logLine({ seq: 8, event: { event: "approval_decided", key: "1", stage: "build", decision: "approved" } })).toBe(
      "approval_decided 1 stage build approved",
    );
  });
});
