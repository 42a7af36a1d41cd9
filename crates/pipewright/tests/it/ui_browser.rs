//! The web app of `pipewright ui` (crates/pipewright-ui/web): its Vitest unit tests and its
//! end-to-end tests in headless Chromium against this build of `pipewright` (docs/ui.md, "Tests").
//! Slow tests: they run only with `PIPEWRIGHT_SLOW_TESTS=1` (as .ci/run runs them), and then need
//! Node.js, the app's packages (`npm ci --prefix crates/pipewright-ui/web`) and Debian's
//! Chromium, and fail when one is missing (.ci/run installs them).

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn web() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../pipewright-ui/web")
}

/// `npm run SCRIPT` in the web app, failing the test with everything it printed.
fn npm_run(script: &str) {
    let dir = web();
    assert!(
        dir.join("node_modules").is_dir(),
        "the web app's packages are not installed: npm ci --prefix {}",
        dir.display()
    );
    let o = Command::new("npm")
        .args(["run", "--silent", script])
        .current_dir(&dir)
        .env("PIPEWRIGHT_BIN", env!("CARGO_BIN_EXE_pipewright"))
        .env("NO_COLOR", "1")
        .env("CI", "true")
        .output()
        .unwrap_or_else(|e| panic!("npm (Node.js) is needed by the UI tests: {e}"));
    assert!(
        o.status.success(),
        "npm run {script} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn the_web_app_unit_tests_pass() {
    if skip_slow_test() {
        return;
    }
    npm_run("test");
}

#[test]
fn the_ui_works_end_to_end_in_chromium() {
    if skip_slow_test() {
        return;
    }
    assert!(
        Path::new("/usr/bin/chromium").exists() || std::env::var_os("CHROMIUM").is_some(),
        "the UI's browser tests need Chromium (apt-get install chromium)"
    );
    npm_run("e2e");
}
