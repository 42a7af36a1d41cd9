// The run page (`/runs/RUN_ID`): the graph coloured by live state, the step detail, the
// approval panel, Cancel, and the event log. Survives a reload (everything comes from the server)
// and a server restart (the stream reopens and the detail is fetched again).
import { getJson, HttpError, openStream, postJson, runUrl, type Connection } from "./api";
import { esc, type Navigate } from "./dom";
import { formatCost, formatDuration, formatSteps, formatTime, formatValue } from "./format";
import { countNodes, pickWorkflow, writtenText, type Layout } from "./graph-model";
import { GraphView, kindLabel } from "./graph-view";
import {
  applyMessages,
  cancellable,
  emptyModel,
  logLine,
  logStart,
  touchedKeys,
  type RunPageModel,
} from "./reducer";
import { engineLine, type EngineInfo } from "./engine";
import { NODE_STATES } from "./types";
import type { GraphNode, NodeState, Pending, RunDetail, RunMessage, RunRow } from "./types";

/** The sentence under a pending approval: who carries the run on after the decision. */
export function continuesSentence(p: Pending, runId: string): string {
  if (p.continues === "live") {
    return "The `pipewright run` process that started this run is waiting at this step: it goes on by itself once you decide.";
  }
  if (p.continues === "engine") {
    return `This run waits on the Restate engine: once you decide, the engine continues it by itself (\`pipewright run --resume ${runId} --engine restate\` follows it; a denied run fails with the reason).`;
  }
  if (p.continues === "resume") {
    return `This run is paused. After you approve, continue it with \`pipewright run --resume ${runId}\` (a denied run fails when resumed).`;
  }
  return "";
}

interface Decision {
  decided: string;
  continues: string;
  message: string;
}

export function mountRunPage(root: HTMLElement, runId: string, _navigate: Navigate): () => void {
  let model: RunPageModel = emptyModel();
  let queue: RunMessage[] = [];
  let frame = 0;
  let disposed = false;
  let graphSig = "";
  let laidGraph: RunDetail["graph"] | undefined;
  let layoutRun = 0;
  let selected: GraphNode | null = null;
  let renderedSeq = 0;
  let firstDetail: RunDetail | null = null;

  root.innerHTML =
    `<header class="bar"><a href="/" data-nav class="back">← runs</a>` +
    `<h1>run <code>${esc(runId)}</code></h1>` +
    `<span class="badge" data-testid="run-status" data-status="">loading</span>` +
    `<button type="button" data-testid="cancel-button" class="danger" hidden>Cancel run</button>` +
    `<span class="action-result" role="status"></span>` +
    `<span class="conn" data-conn="connecting">connecting…</span></header>` +
    `<main class="run"><p class="facts"></p><p class="load-error" role="alert" hidden></p>` +
    `<section class="approval" hidden><h2>Waiting for a decision</h2>` +
    `<p class="where"></p><pre class="prompt"></pre><p data-testid="pending-continues"></p>` +
    `<label>Message <textarea data-testid="approval-message" rows="2" placeholder="sent with the decision (a denial's reason)"></textarea></label>` +
    `<div class="buttons"><button type="button" data-testid="approve-button" class="primary">Approve</button>` +
    `<button type="button" data-testid="deny-button" class="danger">Deny</button></div>` +
    `</section>` +
    // Outside the panel: the panel goes when the decision reaches the store, the answer stays.
    `<p class="decision" role="status" hidden></p>` +
    `<div class="legend">${NODE_STATES.map((s) => `<span class="swatch" data-state="${s}">${s}</span>`).join("")}</div>` +
    `<div class="split"><div class="graph-wrap"><p class="graph-note"></p></div>` +
    `<aside data-testid="step-detail" hidden></aside></div>` +
    `<section class="events"><h2>Events</h2><p class="dropped" hidden></p><ol data-testid="event-log"></ol></section></main>`;
  const q = <T extends Element>(sel: string) => root.querySelector(sel) as T;
  const status = q<HTMLElement>('[data-testid="run-status"]');
  const cancelButton = q<HTMLButtonElement>('[data-testid="cancel-button"]');
  const actionResult = q<HTMLElement>(".action-result");
  const conn = q<HTMLElement>(".conn");
  const facts = q<HTMLElement>(".facts");
  const loadError = q<HTMLElement>(".load-error");
  const approval = q<HTMLElement>(".approval");
  const approveButton = q<HTMLButtonElement>('[data-testid="approve-button"]');
  const denyButton = q<HTMLButtonElement>('[data-testid="deny-button"]');
  const messageField = q<HTMLTextAreaElement>('[data-testid="approval-message"]');
  const decision = q<HTMLElement>(".decision");
  const graphWrap = q<HTMLElement>(".graph-wrap");
  const graphNote = q<HTMLElement>(".graph-note");
  const detail = q<HTMLElement>('[data-testid="step-detail"]');
  const log = q<HTMLOListElement>('[data-testid="event-log"]');
  const dropped = q<HTMLElement>(".dropped");

  const graphHost = document.createElement("div");
  graphWrap.appendChild(graphHost);
  const view = new GraphView(graphHost, graphWrap, (node) => {
    selected = node;
    renderDetail();
  });

  const enqueue = (msg: RunMessage) => {
    queue.push(msg);
    if (!frame) frame = requestAnimationFrame(flush);
  };

  function flush() {
    frame = 0;
    if (disposed) return;
    const batch = queue;
    queue = [];
    model = applyMessages(model, batch);
    const touched = touchedKeys(batch);
    renderRun(model.run);
    renderPending(model.pending);
    maybeLayout();
    view.update(model.nodes, touched);
    if (selected && (touched === "all" || (selected.step_key != null && touched.has(selected.step_key)))) {
      renderDetail();
    }
    renderLog();
  }

  function renderRun(run: RunRow | null) {
    if (!run) return;
    status.dataset.status = run.status;
    status.textContent = run.waiting && run.status === "running" ? "running · waiting" : run.status;
    cancelButton.hidden = !cancellable(run);
    facts.innerHTML = [
      run.dialect ? `<span>${esc(run.dialect)}</span>` : "",
      `<span title="file">${esc(run.file)}</span>`,
      `<span title="workflow">${esc(run.workflow)}</span>`,
      `<span>started ${esc(formatTime(run.created_ms))} UTC</span>`,
      run.duration_ms != null ? `<span>${esc(formatDuration(run.duration_ms))}</span>` : "",
      run.steps_total != null ? `<span>steps ${esc(formatSteps(run.steps_done, run.steps_total))}</span>` : "",
      `<span>cost ${esc(formatCost(run.usage))}</span>`,
    ]
      .filter(Boolean)
      .join(" · ");
  }

  function renderPending(p: Pending | null) {
    approval.hidden = p == null;
    if (!p) return;
    q<HTMLElement>(".where").textContent = `${p.kind === "gate" ? "Gate" : "Approval"} at step ${p.step_key}`;
    q<HTMLElement>(".prompt").textContent = p.prompt;
    q<HTMLElement>('[data-testid="pending-continues"]').textContent = continuesSentence(p, runId);
  }

  function maybeLayout() {
    if (!model.loaded || model.graph === laidGraph) return;
    // A detail fetched again (after a reconnect) brings an equal graph as a new object: lay it
    // out again only when it differs (the file changed under a resumed run).
    laidGraph = model.graph;
    const wf = pickWorkflow(model.graph, model.run?.workflow);
    const sig = wf ? JSON.stringify(wf) : "";
    if (sig === graphSig) return;
    graphSig = sig;
    const mine = ++layoutRun;
    view.reset(wf ? countNodes(wf.body) : 0);
    if (!wf) {
      graphNote.textContent = "No graph: the run's file is gone or no longer loads.";
      return;
    }
    graphNote.textContent = "laying out…";
    const started = performance.now();
    let first = true;
    const onPart = (part: Layout) => {
      if (mine !== layoutRun || disposed) return;
      view.append(part, model.nodes);
      if (first) {
        first = false;
        // For the benchmark (bench/bench.mjs): when the first steps were drawn.
        performance.mark("graph-first-drawn");
        document.body.setAttribute("data-graph-first-ms", String(Math.round(performance.now() - started)));
      }
    };
    // ELK is loaded with the first graph, so the runs page never waits for it.
    import("./graph-layout")
      .then(({ layoutGraph }) => layoutGraph(wf, onPart, () => mine !== layoutRun || disposed))
      .then((whole) => {
        if (mine !== layoutRun || disposed) return;
        // States may have changed while ELK worked: paint them all once.
        view.finish();
        view.update(model.nodes, "all");
        performance.mark("graph-drawn");
        graphNote.textContent = `${whole.nodes.length} steps`;
        document.body.setAttribute("data-graph-drawn", String(whole.nodes.length));
      })
      .catch((err) => {
        graphNote.textContent = `The graph could not be laid out: ${String(err)}`;
      });
  }

  function renderDetail() {
    if (!selected) {
      detail.hidden = true;
      return;
    }
    const n = selected;
    const ns: NodeState | undefined = n.step_key != null ? model.nodes[n.step_key] : undefined;
    const row = (label: string, value: string) =>
      value === "" ? "" : `<dt>${esc(label)}</dt><dd>${esc(value)}</dd>`;
    const block = (label: string, value: unknown, cls = "") => {
      const text = formatValue(value);
      return value == null || text === "" ? "" : `<h3>${esc(label)}</h3><pre class="${cls}">${esc(text)}</pre>`;
    };
    const by = ns?.given_by ?? null;
    const isCommand = ["shell", "command", "tool"].includes(by ? by.step_kind : n.kind);
    const ofItem = by ? ` (item ${by.key})` : "";
    const written = writtenText(n);
    detail.hidden = false;
    detail.innerHTML =
      `<header><h2>${esc(kindLabel(n))}</h2><button type="button" class="close" aria-label="close">×</button></header>` +
      `<dl>` +
      row("state", ns?.state ?? "pending") +
      row("step key", n.step_key ?? "") +
      row("node", n.id) +
      row("started", ns?.started_ms != null ? `${formatTime(ns.started_ms)} UTC` : "") +
      row("duration", formatDuration(ns?.elapsed_ms)) +
      row("attempts", ns?.attempts != null ? String(ns.attempts) : "") +
      row("fan-out", ns?.fanout ? `${ns.fanout.done}/${ns.fanout.total}` : "") +
      row("summary", n.summary ?? "") +
      `</dl>` +
      block(`input${ofItem}`, ns?.input) +
      (ns?.prompt != null
        ? block(`${isCommand ? "command" : "prompt"}${ofItem}`, ns.prompt)
        : written
          ? block(written.label, written.text)
          : "") +
      block("output", ns?.output) +
      block("error", ns?.error, "error");
    detail.querySelector(".close")?.addEventListener("click", () => {
      selected = null;
      renderDetail();
    });
  }

  function renderLog() {
    if (model.logDropped > 0) {
      dropped.hidden = false;
      dropped.textContent = `${model.logDropped} earlier events not shown (pipewright runs events ${runId} lists them all)`;
    }
    const fresh = model.log.filter((e) => e.seq > renderedSeq);
    if (fresh.length === 0) return;
    const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 8;
    log.insertAdjacentHTML(
      "beforeend",
      fresh
        .map((e) => `<li data-seq="${e.seq}" data-event="${esc(e.event.event)}">${esc(logLine(e))}</li>`)
        .join(""),
    );
    renderedSeq = fresh[fresh.length - 1].seq;
    while (log.childElementCount > model.log.length) log.firstElementChild?.remove();
    if (atBottom) log.scrollTop = log.scrollHeight;
  }

  /** A server that cannot read its engine shows the run as it last read it, and says so. */
  const showEngine = (e: EngineInfo | undefined) => {
    const line = engineLine(e);
    loadError.hidden = !line?.error;
    loadError.textContent = line?.error ? line.text : "";
  };

  /** Whether the run was found (a missing run gets no event stream: it would retry forever). */
  const fetchDetail = async (): Promise<boolean> => {
    try {
      const d = await getJson<RunDetail>(runUrl(runId));
      firstDetail ??= d;
      // For the benchmark: the server's share of a page load ends here.
      if (performance.getEntriesByName("detail-received").length === 0) performance.mark("detail-received");
      showEngine(d.engine);
      enqueue({ type: "detail", detail: d });
      return true;
    } catch (err) {
      loadError.hidden = false;
      loadError.textContent =
        err instanceof HttpError && err.status === 404
          ? `No run ${runId} in this store.`
          : `Could not load the run: ${err instanceof Error ? err.message : String(err)}`;
      if (err instanceof HttpError && err.status === 404) {
        status.textContent = "not found";
        return false;
      }
      // Any other failure (the server restarting): the stream's reconnect fetches it again.
      return true;
    }
  };

  const act = async (
    path: "approve" | "deny" | "cancel",
    body: unknown,
    out: HTMLElement,
    buttons: HTMLButtonElement[],
  ) => {
    for (const b of buttons) b.disabled = true;
    out.removeAttribute("data-outcome");
    out.hidden = false;
    try {
      const res = await postJson<Decision | { message: string }>(`${runUrl(runId)}/${path}`, body);
      out.dataset.outcome = "ok";
      out.textContent = res.message;
    } catch (err) {
      out.dataset.outcome = "refused";
      out.textContent = err instanceof Error ? err.message : String(err);
    } finally {
      for (const b of buttons) b.disabled = false;
    }
    await fetchDetail();
  };

  approveButton.addEventListener("click", () =>
    act("approve", { message: messageField.value }, decision, [approveButton, denyButton]),
  );
  denyButton.addEventListener("click", () =>
    act("deny", { reason: messageField.value }, decision, [approveButton, denyButton]),
  );
  cancelButton.addEventListener("click", () => act("cancel", {}, actionResult, [cancelButton]));

  // Fetch ELK and warm it up while the server answers; a failure shows when the graph is drawn.
  import("./graph-layout")
    .then(({ warmUp }) => warmUp())
    .catch(() => undefined);

  let closeStream: (() => void) | null = null;
  void fetchDetail().then((found) => {
    if (disposed || !found) return;
    closeStream = openStream(
      // The first time, only the events the log keeps (a 5,000-step run has 10,000: parsing
      // and listing them all held the page's thread for as long as the graph took).
      (last) => {
        const after = last || (firstDetail ? String(logStart(firstDetail.events_seq)) : "");
        return `${runUrl(runId)}/events${after && after !== "0" ? `?after=${encodeURIComponent(after)}` : ""}`;
      },
      {
        on: {
          log: (data, id) => {
            const seq = Number(id);
            if (Number.isFinite(seq) && data && typeof data === "object") {
              enqueue({ type: "log", seq, event: data as Record<string, unknown> });
            }
          },
          node: (data) => {
            const node = data as NodeState & { step_key?: unknown };
            if (node && typeof node.step_key === "string") {
              enqueue({ type: "node", node: node as NodeState & { step_key: string } });
            }
          },
          run: (data) => {
            const d = data as { run?: RunRow; pending?: Pending | null; engine?: EngineInfo };
            if (d && d.run) enqueue({ type: "run", run: d.run, pending: d.pending ?? null });
            if (d && d.engine) showEngine(d.engine);
          },
        },
        onConnection: (c: Connection, reconnected: boolean) => {
          conn.dataset.conn = c;
          conn.textContent = c === "live" ? "live" : c === "connecting" ? "connecting…" : "reconnecting…";
          // What happened while the stream was down is in the detail, not in the stream (and a
          // first fetch that failed is retried here).
          if (c === "live" && (reconnected || !model.loaded)) void fetchDetail();
        },
      },
    );
  });

  return () => {
    disposed = true;
    if (frame) cancelAnimationFrame(frame);
    closeStream?.();
  };
}
