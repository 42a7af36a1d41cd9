// The UI's performance benchmark (docs/ui.md, "Performance"), not a test: it prints figures.
//   npm run bench            (PIPEWRIGHT_BIN picks the binary; RUNS, ROUNDS change the sizes)
// 1. A store of 10,000 runs: three real runs (ok, failed, paused) copied in SQLite
//    (fill-store.py); the runs page is loaded in Chromium and timed from navigation to its rows
//    in the page. Goal: 300 ms.
// 2. A pipeline of 5,000 transform steps, run for real; its run page is timed from navigation
//    to the first steps drawn and to the whole graph laid out. Goal: drawn in 1 s.
// 3. A for_each over 5,000 items, run for real, the same way.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { REPO, WEB, launchBrowser, makeProject, runJson, startUi } from "../e2e/harness.mjs";

const RUNS = Number(process.env.RUNS ?? 10_000);
const STEPS = Number(process.env.STEPS ?? 5_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const fmt = (xs) => `median ${Math.round(median(xs))} ms (min ${Math.round(Math.min(...xs))}, max ${Math.round(Math.max(...xs))})`;

function write(dir, name, text) {
  writeFileSync(join(dir, name), text);
}

/** A write to the store that changes no run's row but its time: what a run in progress does. */
function touchStore(store) {
  execFileSync("python3", [
    "-c",
    "import sqlite3, sys\n" +
      "db = sqlite3.connect(sys.argv[1])\n" +
      "db.execute('UPDATE runs SET updated_ms = updated_ms + 1 WHERE seq = (SELECT MIN(seq) FROM runs)')\n" +
      "db.commit()",
    store,
  ]);
}

async function mustRun(dir, args, wantCode = 0) {
  const r = await runJson(dir, args);
  if (r.code !== wantCode) throw new Error(`pipewright run ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r.report.run_id;
}

/**
 * Loads `url` and waits for the app's performance mark `mark` (src/runs-page.ts, run-page.ts);
 * returns every mark the page set, in milliseconds from navigation.
 */
async function marksAfterLoad(page, url, mark, waitSelector) {
  await page.goto(url);
  await page.waitForFunction((m) => performance.getEntriesByName(m).length > 0, mark, { timeout: 600_000 });
  if (waitSelector) await page.waitForSelector(waitSelector, { timeout: 600_000 });
  return page.evaluate(() => Object.fromEntries(performance.getEntriesByType("mark").map((m) => [m.name, m.startTime])));
}

const project = makeProject("pipewright-ui-bench-");
let ui;
let browser;
const results = { machine: { loadavg_at_start: loadavg().map((l) => l.toFixed(2)) } };
try {
  // 1. 10,000 runs.
  await mustRun(project.dir, ["ok.yaml"]);
  await mustRun(project.dir, ["fail.yaml"], 1);
  await mustRun(project.dir, ["gate.yaml"], 3);
  const store = join(project.dir, ".pipewright", "runs.db");
  execFileSync("python3", [join(WEB, "bench", "fill-store.py"), store, String(RUNS - 3)], { stdio: "inherit" });

  // 2. and 3.: 5,000 steps, and a 5,000-item fan-out.
  write(
    project.dir,
    "steps.yaml",
    `pipeline: steps\nsteps:\n${Array.from({ length: STEPS }, (_, i) => `  - transform: {value: "${i}"}\n`).join("")}`,
  );
  write(
    project.dir,
    "fanout.yaml",
    `pipeline: fanout\nsteps:\n  - for_each:\n      items: [${Array.from({ length: STEPS }, (_, i) => i).join(", ")}]\n` +
      `      on_error: abort\n      do: {transform: {value: "item * 2"}}\n` +
      `      collect: {transform: {value: "count(pipe)"}}\n`,
  );
  let t = performance.now();
  const stepsRun = await mustRun(project.dir, ["steps.yaml"]);
  results.steps_run_ms = Math.round(performance.now() - t);
  t = performance.now();
  const fanoutRun = await mustRun(project.dir, ["fanout.yaml"]);
  results.fanout_run_ms = Math.round(performance.now() - t);

  ui = await startUi(project.dir);
  browser = await launchBrowser();
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on("pageerror", (e) => console.error(`page error: ${e.message}`));

  // Each figure: from navigation, and the part of it after the server's answer arrived (what
  // the page itself costs).
  // The first load after the server started (it lowers each run's file once), then loads
  // while the server has the list, then loads each after a write to the store (the server
  // computes the list again): the page is left first, so no open stream recomputes it early.
  const runsLoad = async (into) => {
    const m = await marksAfterLoad(page, ui.url, "runs-rendered", '[data-testid="run-row"]');
    into.rendered.push(m["runs-rendered"]);
    into.after_answer.push(m["runs-rendered"] - m["runs-received"]);
  };
  const runsFirst = { rendered: [], after_answer: [] };
  await runsLoad(runsFirst);
  const runsPage = { rendered: [], after_answer: [] };
  for (let i = 0; i < ROUNDS; i++) await runsLoad(runsPage);
  const runsChanged = { rendered: [], after_answer: [] };
  for (let i = 0; i < ROUNDS; i++) {
    await page.goto("about:blank");
    touchStore(store);
    // The file notification reaches the server first.
    await new Promise((r) => setTimeout(r, 300));
    await runsLoad(runsChanged);
  }
  results.runs_page = {
    runs: await page.textContent(".count"),
    rows_in_page: await page.locator('[data-testid="run-row"]').count(),
    ms: runsPage,
    first_ms: runsFirst,
    after_change_ms: runsChanged,
  };

  const graphPage = async (id) => {
    const r = { first_drawn: [], laid_out: [], detail: [], first_after_detail: [], laid_out_after_detail: [] };
    for (let i = 0; i < ROUNDS; i++) {
      const url = new URL(`/runs/${id}`, ui.url).toString();
      await marksAfterLoad(page, url, "graph-drawn", '[data-testid="step-node"]');
      const m = await page.evaluate(() => Object.fromEntries(performance.getEntriesByType("mark").map((x) => [x.name, x.startTime])));
      r.detail.push(m["detail-received"]);
      r.first_drawn.push(m["graph-first-drawn"]);
      r.laid_out.push(m["graph-drawn"]);
      r.first_after_detail.push(m["graph-first-drawn"] - m["detail-received"]);
      r.laid_out_after_detail.push(m["graph-drawn"] - m["detail-received"]);
    }
    return {
      steps: await page.getAttribute("body", "data-graph-drawn"),
      step_nodes_in_page: await page.locator('[data-testid="step-node"]').count(),
      ms: r,
    };
  };
  results.steps_page = await graphPage(stepsRun);
  results.fanout_page = await graphPage(fanoutRun);
  results.machine.loadavg_at_end = loadavg().map((l) => l.toFixed(2));

  const rp = results.runs_page;
  console.log(`runs page, ${rp.runs} (${rp.rows_in_page} rows in the page; goal 300 ms):`);
  console.log(`  first load after the server started: ${fmt(rp.first_ms.rendered)}`);
  console.log(`  navigation to rows shown (the server has the list): ${fmt(rp.ms.rendered)}`);
  console.log(`  of which after the server's list arrived: ${fmt(rp.ms.after_answer)}`);
  console.log(`  navigation to rows shown, after a write to the store: ${fmt(rp.after_change_ms.rendered)}`);
  console.log(`  of which after the server's list arrived: ${fmt(rp.after_change_ms.after_answer)}`);
  for (const [name, g] of [
    [`run page, ${STEPS} transform steps`, results.steps_page],
    [`run page, a fan-out of ${STEPS} items`, results.fanout_page],
  ]) {
    console.log(`${name} (${g.steps} graph nodes, ${g.step_nodes_in_page} in the page; goal 1 s):`);
    console.log(`  navigation to the run's detail received: ${fmt(g.ms.detail)}`);
    console.log(`  navigation to first steps drawn: ${fmt(g.ms.first_drawn)}; after the detail: ${fmt(g.ms.first_after_detail)}`);
    console.log(`  navigation to whole graph laid out: ${fmt(g.ms.laid_out)}; after the detail: ${fmt(g.ms.laid_out_after_detail)}`);
  }
  console.log(`load average ${results.machine.loadavg_at_start.join(" ")} → ${results.machine.loadavg_at_end.join(" ")}`);
  const out = join(REPO, "target", "ui-bench.json");
  mkdirSync(join(REPO, "target"), { recursive: true });
  writeFileSync(out, JSON.stringify(results, null, 2));
  console.log(`figures: ${out}`);
} finally {
  await browser?.close();
  await ui?.stop();
  project.remove();
}
