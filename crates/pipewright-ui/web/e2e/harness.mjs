// What the browser tests and the benchmark share: the real `pipewright` binary in a temporary
// project, `pipewright ui` started on it, and Debian's Chromium driven by playwright-core.
// Every process started here is ended by its own handle; every folder made here is removed.
import { execFile, spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const WEB = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const REPO = resolve(WEB, "../../..");
export const FIXTURES = join(WEB, "e2e", "fixtures");

/** The binary under test: PIPEWRIGHT_BIN, else the workspace's debug build. */
export function pipewrightBin() {
  const bin = process.env.PIPEWRIGHT_BIN ?? join(REPO, "target", "debug", "pipewright");
  if (!existsSync(bin)) {
    throw new Error(`no pipewright binary at ${bin}: run \`cargo build -p pipewright\` or set PIPEWRIGHT_BIN`);
  }
  return bin;
}

export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

/**
 * The flags this machine needs (docs/ui.md, "Tests"): without the background-networking ones
 * Chromium tries Google's hosts at every start and the closed network refuses them.
 */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Chromium with a new, empty profile (playwright-core makes a temporary --user-data-dir). */
export async function launchBrowser() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM)`);
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

/** A project folder (a pipewright.toml makes it the root, so its store is .pipewright/runs.db). */
export function makeProject(prefix = "pipewright-ui-e2e-") {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(join(dir, "pipewright.toml"), "");
  cpSync(FIXTURES, dir, { recursive: true });
  return {
    dir,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Runs `pipewright ARGS` in `dir` to its end: `{code, stdout, stderr}`. */
export function pw(dir, args, { timeoutMs = 120_000, env = {} } = {}) {
  return new Promise((resolvePromise) => {
    execFile(
      pipewrightBin(),
      args,
      { cwd: dir, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NO_COLOR: "1", ...env } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : null) : 0;
        resolvePromise({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

/** `pipewright run --format json FILE…` to its end, with the report parsed. */
export async function runJson(dir, args) {
  const r = await pw(dir, ["run", "--format", "json", ...args]);
  let report = null;
  try {
    report = JSON.parse(r.stdout);
  } catch {
    // A refusal prints no report: the caller reads stderr.
  }
  return { ...r, report };
}

/** A `pipewright run` left running: `done` resolves with its exit code and output. */
export function runInBackground(dir, args) {
  const child = spawn(pipewrightBin(), ["run", "--format", "json", ...args], {
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1" },
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (b) => (stdout += b));
  child.stderr.on("data", (b) => (stderr += b));
  const done = new Promise((resolvePromise) => {
    child.on("exit", (code, signal) => resolvePromise({ code, signal, stdout, stderr }));
  });
  return { child, done, stop: () => child.exitCode === null && child.kill("SIGKILL") };
}

/** The runs of the store, newest first (`pipewright runs --format json`). */
export async function listRuns(dir) {
  const r = await pw(dir, ["runs", "--format", "json"]);
  if (r.code !== 0) return [];
  try {
    return JSON.parse(r.stdout);
  } catch {
    return [];
  }
}

export async function waitFor(what, check, { timeoutMs = 30_000, everyMs = 100 } = {}) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The id of the first run (newest first) that `pred` accepts, once the store has one. */
export function waitForRun(dir, pred, opts) {
  return waitFor("a run in the store", async () => (await listRuns(dir)).find(pred)?.run_id, opts);
}

/** A free loopback port (for a server that must come back on the same port after a restart). */
export function freePort() {
  return new Promise((resolvePromise, reject) => {
    const s = createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolvePromise(port));
    });
  });
}

/**
 * Starts `pipewright ui --listen LISTEN` in `dir` and reads its URL from the first stdout line
 * (`pipewright ui: http://HOST:PORT/[?token=T]`).
 */
export function startUi(dir, { listen = "127.0.0.1:0", extra = [], timeoutMs = 30_000 } = {}) {
  const child = spawn(pipewrightBin(), ["ui", "--listen", listen, ...extra], {
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1" },
  });
  let stderr = "";
  child.stderr.on("data", (b) => (stderr += b));
  return new Promise((resolvePromise, reject) => {
    let out = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`pipewright ui printed no URL within ${timeoutMs} ms; stdout: ${out}; stderr: ${stderr}`));
    }, timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`pipewright ui exited (${code}) before printing its URL; stderr: ${stderr}`));
    });
    child.stdout.on("data", (b) => {
      out += b;
      const nl = out.indexOf("\n");
      if (nl < 0) return;
      const m = /^pipewright ui: (\S+)\s*$/.exec(out.slice(0, nl));
      clearTimeout(timer);
      child.removeAllListeners("exit");
      if (!m) {
        child.kill("SIGKILL");
        reject(new Error(`unexpected first line from pipewright ui: ${out.slice(0, nl)}`));
        return;
      }
      const url = new URL(m[1]);
      const token = url.searchParams.get("token");
      resolvePromise({
        url: m[1],
        origin: url.origin,
        port: Number(url.port),
        token,
        child,
        stderr: () => stderr,
        stop: () =>
          new Promise((r) => {
            if (child.exitCode !== null || child.signalCode !== null) return r();
            child.once("exit", () => r());
            child.kill("SIGTERM");
            setTimeout(() => child.kill("SIGKILL"), 5000).unref();
          }),
      });
    });
  });
}
