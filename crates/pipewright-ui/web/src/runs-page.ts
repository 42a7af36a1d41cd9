// The runs page (`/`): every run of the store, newest first, kept live by /api/runs/stream.
import { openStream, type Connection } from "./api";
import { esc, type Navigate } from "./dom";
import { formatCost, formatDuration, formatSteps, formatTime } from "./format";
import { FULL_TABLE_ROWS, STATUS_FILTERS, parseFilter, rowWindow, visibleRuns, type StatusFilter } from "./runs-model";
import { engineLine, noRunsText, type EngineInfo } from "./engine";
import type { RunRow } from "./types";

function rowHtml(r: RunRow): string {
  const href = `/runs/${encodeURIComponent(r.run_id)}`;
  const duration = r.duration_ms == null && r.in_progress ? "running" : formatDuration(r.duration_ms);
  return (
    `<tr data-testid="run-row" data-run-id="${esc(r.run_id)}" data-status="${esc(r.status)}">` +
    `<td><span class="badge" data-status="${esc(r.status)}">${esc(r.status)}</span></td>` +
    `<td class="id"><a href="${href}" data-nav>${esc(r.run_id)}</a></td>` +
    `<td>${esc(r.dialect ?? "")}</td>` +
    `<td class="file" title="${esc(r.file)}">${esc(r.file)}</td>` +
    `<td>${esc(r.workflow)}</td>` +
    `<td class="num">${esc(formatTime(r.created_ms))}</td>` +
    `<td class="num">${esc(duration)}</td>` +
    `<td class="num">${esc(formatSteps(r.steps_done, r.steps_total))}</td>` +
    `<td>${r.waiting ? '<span class="gate" data-testid="waiting-gate" title="waiting for an approval">waiting</span>' : ""}</td>` +
    `<td class="num">${esc(formatCost(r.usage))}</td>` +
    `</tr>`
  );
}

export function mountRunsPage(root: HTMLElement, navigate: Navigate): () => void {
  let filter: StatusFilter = parseFilter(new URLSearchParams(location.search).get("status"));
  let all: RunRow[] = [];
  let engine: EngineInfo | undefined;
  let rows: RunRow[] = [];
  // The CSS row height; measured on the first big draw, since fonts may make it differ.
  let rowHeight = 28;
  let measured = false;
  let drawn = { start: -1, end: -1 };

  root.innerHTML =
    `<header class="bar"><h1>pipewright runs</h1>` +
    `<label>Status <select data-testid="status-filter">` +
    STATUS_FILTERS.map((f) => `<option value="${f}"${f === filter ? " selected" : ""}>${f}</option>`).join("") +
    `</select></label><span class="count"></span><span class="conn" data-conn="connecting">connecting…</span></header>` +
    `<main><p class="engine" data-testid="engine-status" hidden></p><table class="runs"><thead><tr><th>Status</th><th>Run</th><th>Dialect</th><th>File</th><th>Workflow</th>` +
    `<th>Started (UTC)</th><th>Duration</th><th>Steps</th><th>Gate</th><th>Cost</th></tr></thead><tbody></tbody></table>` +
    `<p class="empty" hidden></p></main>`;
  const select = root.querySelector("select") as HTMLSelectElement;
  const tbody = root.querySelector("tbody") as HTMLTableSectionElement;
  const count = root.querySelector(".count") as HTMLElement;
  const conn = root.querySelector(".conn") as HTMLElement;
  const empty = root.querySelector(".empty") as HTMLElement;
  const engineStatus = root.querySelector(".engine") as HTMLElement;

  /** Fills the table with the rows near the screen (all of them in a small store). */
  const drawWindow = (force: boolean) => {
    const top = -tbody.getBoundingClientRect().top;
    const win = rowWindow(rows.length, rowHeight, top, window.innerHeight);
    if (!force && win.start === drawn.start && win.end === drawn.end) return;
    drawn = win;
    const spacer = (n: number) =>
      n > 0 ? `<tr class="spacer" aria-hidden="true" style="height:${n * rowHeight}px"><td colspan="10"></td></tr>` : "";
    tbody.innerHTML =
      spacer(win.start) + rows.slice(win.start, win.end).map(rowHtml).join("") + spacer(rows.length - win.end);
    if (!measured && rows.length > FULL_TABLE_ROWS) {
      measured = true;
      const real = tbody.querySelector("tr:not(.spacer)")?.getBoundingClientRect().height ?? 0;
      if (real > 0 && Math.abs(real - rowHeight) > 0.1) {
        rowHeight = real;
        drawWindow(true);
      }
    }
  };

  const render = () => {
    rows = visibleRuns(all, filter);
    drawWindow(true);
    count.textContent = filter === "all" ? `${all.length} runs` : `${rows.length} of ${all.length} runs`;
    empty.hidden = rows.length > 0;
    empty.textContent = all.length === 0 ? noRunsText(engine) : `No ${filter} runs.`;
    const line = engineLine(engine);
    engineStatus.hidden = line == null;
    engineStatus.textContent = line?.text ?? "";
    engineStatus.dataset.error = String(line?.error ?? false);
    engineStatus.setAttribute("role", line?.error ? "alert" : "status");
  };

  let scrollFrame = 0;
  const onScroll = () => {
    if (scrollFrame) return;
    scrollFrame = requestAnimationFrame(() => {
      scrollFrame = 0;
      drawWindow(false);
    });
  };
  window.addEventListener("scroll", onScroll, { passive: true });
  window.addEventListener("resize", onScroll);

  select.addEventListener("change", () => {
    filter = parseFilter(select.value);
    const url = filter === "all" ? "/" : `/?status=${filter}`;
    history.replaceState(null, "", url);
    render();
  });
  tbody.addEventListener("click", (ev) => {
    const target = ev.target as Element;
    if (target.closest("a")) return; // the link navigates by itself (main.ts)
    const tr = target.closest("tr");
    const id = tr?.getAttribute("data-run-id");
    if (id) navigate(`/runs/${encodeURIComponent(id)}`);
  });

  const close = openStream(() => "/api/runs/stream", {
    on: {
      runs: (data) => {
        if (performance.getEntriesByName("runs-received").length === 0) performance.mark("runs-received");
        const doc = data as { runs?: RunRow[]; engine?: EngineInfo };
        if (!Array.isArray(doc.runs)) return;
        all = doc.runs;
        engine = doc.engine;
        render();
        if (performance.getEntriesByName("runs-rendered").length === 0) performance.mark("runs-rendered");
        document.body.setAttribute("data-runs-rendered", String(all.length));
      },
    },
    onConnection: (c: Connection) => {
      conn.dataset.conn = c;
      conn.textContent = c === "live" ? "live" : c === "connecting" ? "connecting…" : "reconnecting…";
    },
  });
  return () => {
    close();
    window.removeEventListener("scroll", onScroll);
    window.removeEventListener("resize", onScroll);
    if (scrollFrame) cancelAnimationFrame(scrollFrame);
  };
}
