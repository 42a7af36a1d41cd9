// `pipewright ui` end to end: the real binary serving a temporary project whose runs are made
// by real `pipewright run`s, driven in headless Chromium (harness.mjs). Screenshots of the runs
// page and a run page are written to target/ui-screenshots/, or to docs/ with
// PIPEWRIGHT_UI_SCREENSHOTS=docs (how docs/ui-runs.png and docs/ui-run.png are made).
import { createServer, type Server } from "node:http";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  REPO,
  freePort,
  launchBrowser,
  listRuns,
  makeProject,
  pipewrightBin,
  pw,
  runInBackground,
  runJson,
  startUi,
  waitForRun,
} from "./harness.mjs";

type Ui = Awaited<ReturnType<typeof startUi>>;

const SHOTS =
  process.env.PIPEWRIGHT_UI_SCREENSHOTS === "docs" ? join(REPO, "docs") : join(REPO, "target", "ui-screenshots");
const WAIT = { timeout: 30_000 };

let project: ReturnType<typeof makeProject>;
let ui: Ui;
let browser: Browser;
const background: ReturnType<typeof runInBackground>[] = [];
const otherServers: (Ui | Server)[] = [];

const sel = {
  row: (id: string) => `[data-testid="run-row"][data-run-id="${id}"]`,
  node: (key: string, state?: string) =>
    `[data-testid="step-node"][data-step-key="${key}"]${state ? `[data-state="${state}"]` : ""}`,
  status: (s: string) => `[data-testid="run-status"][data-status="${s}"]`,
};

async function openPage(path: string, base = ui.url): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on("pageerror", (err) => console.error(`page error on ${path}: ${err.message}`));
  await page.goto(new URL(path, base).toString());
  return page;
}

async function pausedRecipe(): Promise<string> {
  const r = await runJson(project.dir, ["gate.yaml"]);
  expect(r.code, r.stderr).toBe(3);
  expect(r.report?.status).toBe("paused");
  return r.report.run_id as string;
}

beforeAll(async () => {
  project = makeProject();
  mkdirSync(SHOTS, { recursive: true });
  ui = await startUi(project.dir);
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  for (const b of background) b.stop();
  for (const s of otherServers) {
    if ("stop" in s) await s.stop();
    else await new Promise((r) => s.close(() => r(undefined)));
  }
  await ui?.stop();
  project?.remove();
});

describe("pipewright ui in Chromium", () => {
  it("lists a finished, a failed and a paused run, newest first, with a status filter", async () => {
    const ok = await runJson(project.dir, ["ok.yaml"]);
    expect(ok.code, ok.stderr).toBe(0);
    const failed = await runJson(project.dir, ["fail.yaml"]);
    expect(failed.code).toBe(1);
    const paused = await pausedRecipe();
    const okId = ok.report.run_id as string;
    const failedId = failed.report.run_id as string;

    const page = await openPage("/");
    await page.waitForSelector(sel.row(paused), WAIT);
    expect(await page.getAttribute(sel.row(okId), "data-status")).toBe("ok");
    expect(await page.getAttribute(sel.row(failedId), "data-status")).toBe("failed");
    expect(await page.getAttribute(sel.row(paused), "data-status")).toBe("paused");
    const order = await page.$$eval('[data-testid="run-row"]', (rows) => rows.map((r) => r.getAttribute("data-run-id")));
    expect(order.indexOf(paused)).toBeLessThan(order.indexOf(failedId));
    expect(order.indexOf(failedId)).toBeLessThan(order.indexOf(okId));
    // The paused recipe carries the waiting-gate marker, the others do not.
    expect(await page.locator(`${sel.row(paused)} [data-testid="waiting-gate"]`).count()).toBe(1);
    expect(await page.locator(`${sel.row(okId)} [data-testid="waiting-gate"]`).count()).toBe(0);
    const okText = await page.textContent(sel.row(okId));
    expect(okText).toContain("ok.yaml");
    expect(okText).toContain("pipeline");
    expect(await page.textContent(sel.row(paused))).toContain("recipe");

    await page.selectOption('[data-testid="status-filter"]', "failed");
    await page.waitForSelector(sel.row(okId), { state: "detached", ...WAIT });
    const shown = await page.$$eval('[data-testid="run-row"]', (rows) => rows.map((r) => r.getAttribute("data-status")));
    expect(shown.length).toBeGreaterThan(0);
    expect(new Set(shown)).toEqual(new Set(["failed"]));
    // A run that starts while the page is open appears without a reload.
    await page.selectOption('[data-testid="status-filter"]', "all");
    const again = await runJson(project.dir, ["ok.yaml"]);
    await page.waitForSelector(sel.row(again.report.run_id), WAIT);
    await page.close();
  });

  it("shows a running pipeline's steps turn from running to done, live", async () => {
    const run = runInBackground(project.dir, ["slow.yaml"]);
    background.push(run);
    const id = await waitForRun(project.dir, (r: { workflow: string; status: string }) => r.workflow === "slow" && r.status === "running");
    const page = await openPage(`/runs/${id}`);
    await page.waitForSelector(sel.status("running"), WAIT);
    await page.waitForSelector('[data-testid="cancel-button"]', { state: "visible", ...WAIT });
    // Step 1 starts after step 0's three seconds: the page is open before, so both changes
    // arrive through the stream.
    await page.waitForSelector(sel.node("1", "running"), WAIT);
    expect(await page.getAttribute(sel.node("2"), "data-state")).toBe("pending");
    await page.waitForSelector(sel.node("1", "done"), WAIT);
    await page.waitForSelector(sel.node("2", "done"), WAIT);
    await page.waitForSelector(sel.status("ok"), WAIT);
    expect(await page.getAttribute(sel.node("0"), "data-state")).toBe("done");
    const log = await page.textContent('[data-testid="event-log"]');
    expect(log).toContain("step_started 1 (shell)");
    expect(log).toContain("step_completed 2 (shell)");
    expect((await run.done).code).toBe(0);

    // The detail of a step: its command, output and duration.
    await page.click(sel.node("1"));
    const detail = page.locator('[data-testid="step-detail"]');
    await detail.waitFor({ state: "visible", ...WAIT });
    const text = (await detail.textContent()) ?? "";
    expect(text).toContain("done");
    expect(text).toContain("sleep 3; echo second");
    expect(text).toMatch(/\d(\.\d)? s/);
    await page.close();
  });

  it("approving a paused recipe in the page, then `run --resume`, finishes it", async () => {
    const id = await pausedRecipe();
    const page = await openPage(`/runs/${id}`);
    await page.waitForSelector('[data-testid="approve-button"]', { state: "visible", ...WAIT });
    const continues = await page.textContent('[data-testid="pending-continues"]');
    expect(continues).toContain(`pipewright run --resume ${id}`);
    expect(await page.textContent(".approval")).toContain("Ship plan-for-web");
    await page.fill('[data-testid="approval-message"]', "ship it");
    await page.click('[data-testid="approve-button"]');
    await page.waitForSelector('.decision[data-outcome="ok"]', WAIT);
    expect(await page.textContent(".decision")).toContain("approved");
    await page.waitForSelector(".approval", { state: "hidden", ...WAIT });

    const resumed = await runJson(project.dir, ["--resume", id]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.report.status).toBe("ok");
    expect(resumed.report.stores.shipped).toBe("shipped-with-ship it\n");
    await page.waitForSelector(sel.status("ok"), WAIT);
    await page.close();
  });

  it("denying a paused recipe fails it with the reason", async () => {
    const id = await pausedRecipe();
    const page = await openPage(`/runs/${id}`);
    await page.waitForSelector('[data-testid="deny-button"]', { state: "visible", ...WAIT });
    await page.fill('[data-testid="approval-message"]', "not this week");
    await page.click('[data-testid="deny-button"]');
    await page.waitForSelector('.decision[data-outcome="ok"]', WAIT);
    expect(await page.textContent(".decision")).toContain("denied");

    const resumed = await runJson(project.dir, ["--resume", id]);
    expect(resumed.code).toBe(1);
    expect(resumed.report?.status).toBe("failed");
    const error = JSON.stringify(resumed.report?.error);
    expect(error).toContain("PW0813");
    expect(error).toContain("not this week");
    // The page follows: the run failed at its gate, whose detail gives the reason.
    await page.waitForSelector(sel.status("failed"), WAIT);
    await page.click(sel.node("1", "failed"));
    await page.waitForSelector('[data-testid="step-detail"]', { state: "visible", ...WAIT });
    expect(await page.textContent('[data-testid="step-detail"]')).toContain("not this week");
    await page.close();
  });

  it("approving a MEOW approval step lets the live run go on by itself", async () => {
    const run = runInBackground(project.dir, ["approve.meow.toml", "--var", `pw=${pipewrightBin()}`]);
    background.push(run);
    const id = await waitForRun(project.dir, (r: { file: string; status: string }) => r.file.endsWith("approve.meow.toml") && r.status === "running");
    const page = await openPage(`/runs/${id}`);
    await page.waitForSelector('[data-testid="approve-button"]', { state: "visible", ...WAIT });
    expect(await page.getAttribute(sel.node("release"), "data-state")).toBe("waiting");
    expect(await page.textContent('[data-testid="pending-continues"]')).toContain("goes on by itself");
    await page.click('[data-testid="approve-button"]');
    await page.waitForSelector('.decision[data-outcome="ok"]', WAIT);
    const ended = await run.done;
    expect(ended.code, ended.stderr).toBe(0);
    await page.waitForSelector(sel.status("ok"), WAIT);
    await page.waitForSelector(sel.node("release", "done"), WAIT);
    await page.close();
  });

  it("two pages approving at once give exactly one decision", async () => {
    const id = await pausedRecipe();
    const [a, b] = await Promise.all([openPage(`/runs/${id}`), openPage(`/runs/${id}`)]);
    for (const p of [a, b]) await p.waitForSelector('[data-testid="approve-button"]', { state: "visible", ...WAIT });
    await a.fill('[data-testid="approval-message"]', "from a");
    await b.fill('[data-testid="approval-message"]', "from b");
    // Dispatched rather than clicked: the first decision hides the other page's panel as soon as
    // the store says so, and a real click would wait for a button that is gone. Both requests
    // leave together either way.
    await Promise.all([
      a.dispatchEvent('[data-testid="approve-button"]', "click"),
      b.dispatchEvent('[data-testid="approve-button"]', "click"),
    ]);
    for (const p of [a, b]) await p.waitForSelector(".decision[data-outcome]", WAIT);
    const outcomes = await Promise.all([a, b].map((p) => p.getAttribute(".decision", "data-outcome")));
    expect([...outcomes].sort()).toEqual(["ok", "refused"]);
    const winner = outcomes[0] === "ok" ? "from a" : "from b";
    const loser = outcomes[0] === "ok" ? b : a;
    // The other page hears the CLI's refusal: the gate was decided already.
    expect(await loser.textContent(".decision")).toMatch(/\S/);

    const resumed = await runJson(project.dir, ["--resume", id]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.report.stores.shipped).toBe(`shipped-with-${winner}\n`);
    await Promise.all([a.close(), b.close()]);
  });

  it("cancels a running run from the page, as Ctrl-C would", async () => {
    const run = runInBackground(project.dir, ["long.yaml"]);
    background.push(run);
    const id = await waitForRun(project.dir, (r: { workflow: string; status: string }) => r.workflow === "long" && r.status === "running");
    const page = await openPage(`/runs/${id}`);
    await page.waitForSelector(sel.node("1", "running"), WAIT);
    await page.click('[data-testid="cancel-button"]');
    await page.waitForSelector(sel.status("cancelled"), WAIT);
    const ended = await Promise.race([
      run.done,
      new Promise<null>((r) => setTimeout(() => r(null), 30_000)),
    ]);
    expect(ended, "pipewright run did not stop after the cancel").not.toBeNull();
    expect(ended!.code).not.toBe(0);
    const row = (await listRuns(project.dir)).find((r: { run_id: string }) => r.run_id === id);
    expect(row?.status).toBe("cancelled");
    await page.waitForSelector('[data-testid="cancel-button"]', { state: "hidden", ...WAIT });
    await page.close();
  });

  it("follows a run through a reload and a restart of the server", async () => {
    const port = await freePort();
    const own = await startUi(project.dir, { listen: `127.0.0.1:${port}` });
    otherServers.push(own);
    const run = runInBackground(project.dir, ["slow.yaml"]);
    background.push(run);
    const id = await waitForRun(project.dir, (r: { workflow: string; status: string }) => r.workflow === "slow" && r.status === "running");
    const page = await openPage(`/runs/${id}`, own.url);
    await page.waitForSelector(sel.status("running"), WAIT);
    await page.reload();
    await page.waitForSelector(sel.status("running"), WAIT);
    await own.stop();
    await page.waitForSelector('.conn[data-conn="reconnecting"]', WAIT);
    const back = await startUi(project.dir, { listen: `127.0.0.1:${port}` });
    otherServers.push(back);
    await page.waitForSelector(sel.status("ok"), { timeout: 60_000 });
    await page.waitForSelector(sel.node("2", "done"), WAIT);
    await page.waitForSelector('.conn[data-conn="live"]', WAIT);
    expect((await run.done).code).toBe(0);
    await page.close();
  });

  it("refuses a cross-origin POST", async () => {
    const id = await pausedRecipe();
    const port = await freePort();
    const other = createServer((_req, res) => {
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end("<!doctype html><title>elsewhere</title><p>another site</p>");
    });
    otherServers.push(other);
    await new Promise<void>((r) => other.listen(port, "127.0.0.1", () => r()));
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${port}/`);
    const target = `${ui.origin}/api/runs/${id}/approve`;
    // A simple request (no preflight): the browser sends it with this page's Origin.
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url() === target && r.request().method() === "POST", WAIT),
      page.evaluate(
        (url) =>
          fetch(url, { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: '{"message":"csrf"}' })
            .then(() => "sent")
            .catch((e) => String(e)),
        target,
      ),
    ]);
    expect(response.status()).toBe(403);
    // The same request as a script sends it, to read the answer (the page may not).
    const scripted = await fetch(target, {
      method: "POST",
      headers: { Origin: `http://127.0.0.1:${port}`, "Content-Type": "application/json" },
      body: '{"message":"csrf"}',
    });
    expect(scripted.status).toBe(403);
    expect((await scripted.json()).error).toBe("cross-origin request refused");
    // A JSON request needs a preflight the server does not grant: it never arrives.
    const preflighted = await page.evaluate(
      (url) =>
        fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"message":"csrf"}' })
          .then((r) => `status ${r.status}`)
          .catch(() => "blocked"),
      target,
    );
    expect(preflighted).toBe("blocked");
    // The gate still waits: neither request decided it.
    const detail = await (await fetch(`${ui.origin}/api/runs/${id}`)).json();
    expect(detail.pending?.step_key).toBeTruthy();
    const approved = await pw(project.dir, ["approve", id, "--message", "real"]);
    expect(approved.code, approved.stderr).toBe(0);
    await page.close();
  });

  it("on a non-loopback address, refuses requests without the token and works with the printed URL", async () => {
    const open = await startUi(project.dir, { listen: "0.0.0.0:0" });
    otherServers.push(open);
    expect(open.token, `printed URL: ${open.url}`).toBeTruthy();
    const base = `http://127.0.0.1:${open.port}`;
    for (const path of ["/", "/api/runs"]) {
      const res = await fetch(`${base}${path}`);
      expect(res.status, path).toBe(401);
    }
    const wrong = await fetch(`${base}/api/runs`, { headers: { Authorization: "Bearer nope" } });
    expect(wrong.status).toBe(401);
    const right = await fetch(`${base}/api/runs`, { headers: { Authorization: `Bearer ${open.token}` } });
    expect(right.status).toBe(200);

    const page = await browser.newPage();
    await page.goto(`${base}/?token=${encodeURIComponent(open.token!)}`);
    await page.waitForSelector('[data-testid="run-row"]', WAIT);
    // The token moved into a cookie: the address bar no longer shows it.
    expect(new URL(page.url()).searchParams.get("token")).toBeNull();
    await page.close();
  });

  it("takes the screenshots of the runs page and of a run page", async () => {
    const page = await openPage("/");
    await page.waitForSelector('[data-testid="run-row"]', WAIT);
    await page.screenshot({ path: join(SHOTS, "ui-runs.png") });
    const id = await pausedRecipe();
    await page.goto(new URL(`/runs/${id}`, ui.url).toString());
    await page.waitForSelector('[data-testid="approve-button"]', { state: "visible", ...WAIT });
    await page.waitForSelector('[data-testid="step-node"]', WAIT);
    await page.click(sel.node("0.0"));
    await page.waitForSelector('[data-testid="step-detail"]', { state: "visible", ...WAIT });
    await page.screenshot({ path: join(SHOTS, "ui-run.png"), fullPage: true });
    await page.close();
  });
});
