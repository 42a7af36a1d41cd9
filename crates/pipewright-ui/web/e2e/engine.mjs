// The web app on the Restate engine, in headless Chromium. Not a Vitest file: the Rust test
// crates/pipewright/tests/it/ui_engine.rs starts a restate-server, a worker, the runs and
// `pipewright ui --engine restate` in a network namespace, then runs this with UI_URL (the
// printed URL), OK_RUN (a finished pipeline) and GATED_RUN (a recipe at its gate). It checks
// what a person sees, approves the gate from the page, and exits non-zero saying what failed.
// Screenshots go to target/ui-screenshots/engine-runs.png and engine-run.png.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { REPO, launchBrowser } from "./harness.mjs";

const { UI_URL: url, OK_RUN: ok, GATED_RUN: gated } = process.env;
if (!url || !ok || !gated) {
  console.error("UI_URL, OK_RUN and GATED_RUN are required");
  process.exit(2);
}
const WAIT = { timeout: 60_000 };
const shots = join(REPO, "target", "ui-screenshots");
mkdirSync(shots, { recursive: true });
const row = (id, status) => `[data-testid="run-row"][data-run-id="${id}"][data-status="${status}"]`;

function expectText(what, text, part) {
  if (!text?.includes(part)) throw new Error(`${what}: ${JSON.stringify(text)} does not say ${JSON.stringify(part)}`);
}

const browser = await launchBrowser();
let failed = false;
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  page.on("pageerror", (err) => console.error(`page error: ${err.message}`));
  await page.goto(url);
  await page.waitForSelector(row(gated, "paused"), WAIT);
  await page.waitForSelector(row(ok, "ok"), WAIT);
  expectText("the engine line", await page.textContent('[data-testid="engine-status"]'), "Runs of the Restate engine at");
  if ((await page.locator(`${row(gated, "paused")} [data-testid="waiting-gate"]`).count()) !== 1) {
    throw new Error("the gated run has no waiting marker");
  }
  await page.screenshot({ path: join(shots, "engine-runs.png") });

  await page.click(`${row(gated, "paused")} a`);
  await page.waitForSelector('[data-testid="step-node"][data-step-key="1"][data-state="waiting"]', WAIT);
  await page.waitForSelector('[data-testid="step-node"][data-step-key="0.0"][data-state="done"]', WAIT);
  expectText(
    "who continues the run",
    await page.textContent('[data-testid="pending-continues"]'),
    "the engine continues it by itself",
  );
  await page.fill('[data-testid="approval-message"]', "from-chromium");
  await page.click('[data-testid="approve-button"]');
  // The decision's line says what happens next on the engine (not a resume by hand).
  await page.waitForFunction(
    () => document.querySelector(".decision")?.textContent?.includes("continues it by itself"),
    undefined,
    WAIT,
  );
  // The engine runs the rest by itself; the page follows it there, live.
  await page.waitForSelector('[data-testid="run-status"][data-status="ok"]', WAIT);
  await page.waitForSelector('[data-testid="step-node"][data-step-key="2.0"][data-state="done"]', WAIT);
  await page.screenshot({ path: join(shots, "engine-run.png") });
  console.log("the web view on the engine: ok");
} catch (err) {
  failed = true;
  console.error(err instanceof Error ? err.stack ?? err.message : String(err));
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
