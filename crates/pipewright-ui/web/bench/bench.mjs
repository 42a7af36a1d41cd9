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
const fmt = (xs) => `median ${Math.round(median(xs))} ms (min ${Math.round(Math.min(...xs))}, max ${Math.round(Math.max(...xs))}, n=${xs.length})`;

function write(dir, name, text) {
  writeFileSync(join(dir, name), text);
}

async function mustRun(dir, args, wantCode = 0) {
  const r = await runJson(dir, args);
  if (r.code !== wantCode) throw new Error(`pipewright run ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r.report.run_id;
}

/** Milliseconds from navigation to a performance mark the app sets (src/runs-page.ts, run-page.ts). */
async function markAfterLoad(page, url, mark, waitSelector) {
  await page.goto(url);
  await page.waitForFunction((m) => performance.getEntriesByName(m).length > 0, mark, { timeout: 600_000 });
  if (waitSelector) await page.waitForSelector(waitSelector, { timeout: 600_000 });
  return page.evaluate((m) => performance.getEntriesByName(m)[0].startTime, mark);
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

  const runsPage = [];
  for (let i = 0; i < ROUNDS; i++) {
    runsPage.push(await markAfterLoad(page, ui.url, "runs-rendered", '[data-testid="run-row"]'));
  }
  const shown = await page.locator('[data-testid="run-row"]').count();
  const counted = await page.textContent(".count");
  results.runs_page = { runs: counted, rows_in_page: shown, ms: runsPage.map(Math.round) };

  const graphPage = async (id) => {
    const first = [];
    const whole = [];
    for (let i = 0; i < ROUNDS; i++) {
      const url = new URL(`/runs/${id}`, ui.url).toString();
      first.push(await markAfterLoad(page, url, "graph-first-drawn", '[data-testid="step-node"]'));
      await page.waitForFunction(() => performance.getEntriesByName("graph-drawn").length > 0, null, { timeout: 600_000 });
      whole.push(await page.evaluate(() => performance.getEntriesByName("graph-drawn")[0].startTime));
    }
    const steps = await page.getAttribute("body", "data-graph-drawn");
    const inPage = await page.locator('[data-testid="step-node"]').count();
    return { steps, step_nodes_in_page: inPage, first_drawn_ms: first.map(Math.round), laid_out_ms: whole.map(Math.round) };
  };
  results.steps_page = await graphPage(stepsRun);
  results.fanout_page = await graphPage(fanoutRun);
  results.machine.loadavg_at_end = loadavg().map((l) => l.toFixed(2));

  console.log(`runs page, ${results.runs_page.runs}: rows in the page ${fmt(results.runs_page.ms)} (goal 300 ms)`);
  console.log(
    `run page, ${results.steps_page.steps} steps: first steps drawn ${fmt(results.steps_page.first_drawn_ms)}; ` +
      `whole graph laid out ${fmt(results.steps_page.laid_out_ms)} (goal 1 s)`,
  );
  console.log(
    `run page, fan-out of ${STEPS} items (${results.fanout_page.steps} steps): drawn ${fmt(results.fanout_page.first_drawn_ms)}`,
  );
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
