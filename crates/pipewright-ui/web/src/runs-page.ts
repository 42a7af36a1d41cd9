// The runs page (`/`): every run of the store, newest first, kept live by /api/runs/stream.
import { openStream, type Connection } from "./api";
import { esc, type Navigate } from "./dom";
import { formatCost, formatDuration, formatSteps, formatTime } from "./format";
import { STATUS_FILTERS, parseFilter, visibleRuns, type StatusFilter } from "./runs-model";
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
    `<td>${r.waiting ? '<span class="gate" data-testid="waiting-gate" title="waiting for an approval">⏸ waiting</span>' : ""}</td>` +
    `<td class="num">${esc(formatCost(r.usage))}</td>` +
    `</tr>`
  );
}

/** What a row shows: a row whose signature is unchanged is left alone on an update. */
const signature = (r: RunRow) => JSON.stringify(r);

export function mountRunsPage(root: HTMLElement, navigate: Navigate): () => void {
  let filter: StatusFilter = parseFilter(new URLSearchParams(location.search).get("status"));
  let all: RunRow[] = [];
  let shown: { id: string; sig: string }[] = [];

  root.innerHTML =
    `<header class="bar"><h1>pipewright runs</h1>` +
    `<label>Status <select data-testid="status-filter">` +
    STATUS_FILTERS.map((f) => `<option value="${f}"${f === filter ? " selected" : ""}>${f}</option>`).join("") +
    `</select></label><span class="count"></span><span class="conn" data-conn="connecting">connecting…</span></header>` +
    `<main><table class="runs"><thead><tr><th>Status</th><th>Run</th><th>Dialect</th><th>File</th><th>Workflow</th>` +
    `<th>Started (UTC)</th><th>Duration</th><th>Steps</th><th>Gate</th><th>Cost</th></tr></thead><tbody></tbody></table>` +
    `<p class="empty" hidden></p></main>`;
  const select = root.querySelector("select") as HTMLSelectElement;
  const tbody = root.querySelector("tbody") as HTMLTableSectionElement;
  const count = root.querySelector(".count") as HTMLElement;
  const conn = root.querySelector(".conn") as HTMLElement;
  const empty = root.querySelector(".empty") as HTMLElement;

  const render = (force: boolean) => {
    const rows = visibleRuns(all, filter);
    const next = rows.map((r) => ({ id: r.run_id, sig: signature(r) }));
    const sameOrder = !force && next.length === shown.length && next.every((n, i) => n.id === shown[i].id);
    const prepended =
      !force &&
      next.length >= shown.length &&
      shown.every((s, i) => s.id === next[i + next.length - shown.length].id);
    if (sameOrder || prepended) {
      const added = next.length - shown.length;
      if (added > 0) tbody.insertAdjacentHTML("afterbegin", rows.slice(0, added).map(rowHtml).join(""));
      const trs = tbody.rows;
      for (let i = added; i < next.length; i++) {
        if (next[i].sig !== shown[i - added].sig) {
          trs[i].outerHTML = rowHtml(rows[i]);
        }
      }
    } else {
      tbody.innerHTML = rows.map(rowHtml).join("");
    }
    shown = next;
    count.textContent = filter === "all" ? `${all.length} runs` : `${rows.length} of ${all.length} runs`;
    empty.hidden = rows.length > 0;
    empty.textContent =
      all.length === 0
        ? "No runs in this store yet: start one with `pipewright run FILE`."
        : `No ${filter} runs.`;
  };

  select.addEventListener("change", () => {
    filter = parseFilter(select.value);
    const url = filter === "all" ? "/" : `/?status=${filter}`;
    history.replaceState(null, "", url);
    render(true);
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
        const runs = (data as { runs?: RunRow[] }).runs;
        if (!Array.isArray(runs)) return;
        all = runs;
        render(false);
        document.body.setAttribute("data-runs-rendered", String(all.length));
      },
    },
    onConnection: (c: Connection) => {
      conn.dataset.conn = c;
      conn.textContent = c === "live" ? "live" : c === "connecting" ? "connecting…" : "reconnecting…";
    },
  });
  return close;
}
