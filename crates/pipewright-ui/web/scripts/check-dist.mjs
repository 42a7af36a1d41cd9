// Rebuilds the app into a scratch folder and fails when the committed dist/ differs from it:
// the pipewright binary embeds dist/, so a source change without `npm run build` would ship a
// stale UI. Run by .ci/run (after `npm ci`).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const web = fileURLToPath(new URL("..", import.meta.url));
const committed = join(web, "dist");
const scratch = mkdtempSync(join(tmpdir(), "pipewright-ui-dist-"));

function files(dir) {
  const out = [];
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

try {
  execFileSync(join(web, "node_modules", ".bin", "vite"), ["build", "--outDir", scratch, "--emptyOutDir", "--logLevel", "warn"], {
    cwd: web,
    stdio: ["ignore", "inherit", "inherit"],
  });
  const want = files(scratch);
  let have = [];
  try {
    have = files(committed);
  } catch {
    // No dist/ at all: every built file is reported missing below.
  }
  const problems = [];
  for (const f of want) {
    if (!have.includes(f)) problems.push(`missing from dist/: ${f}`);
    else if (!readFileSync(join(scratch, f)).equals(readFileSync(join(committed, f)))) problems.push(`stale: dist/${f}`);
  }
  for (const f of have) if (!want.includes(f)) problems.push(`not built any more: dist/${f}`);
  if (problems.length > 0) {
    console.error(
      `crates/pipewright-ui/web/dist is not the build of its sources:\n  ${problems.join("\n  ")}\n` +
        "run `npm run build --prefix crates/pipewright-ui/web` and commit dist/",
    );
    process.exitCode = 1;
  } else {
    console.log(`dist/ is up to date (${want.length} files)`);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
