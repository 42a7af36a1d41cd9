//! The switch of the suites that run a real restate-server, shared by this crate's tests and
//! the CLI's.
//!
//! restate-server 1.7.12 asks api.github.com for its latest release every time it starts
//! (unconditionally: no setting turns it off, and it ignores HTTPS_PROXY). No test may reach
//! the network, so these suites run only inside a network namespace that has nothing but
//! loopback: each runs itself again under `unshare -rn` when it is not in one
//! ([`skip_engine_test`]), so `PIPEWRIGHT_SLOW_TESTS=1 cargo test --workspace` runs them isolated.

/// Set to `1` to run the suites that start a restate-server.
pub const ENGINE_TESTS: &str = "PIPEWRIGHT_RESTATE_TESTS";

/// Whether this process's network namespace has no interface but loopback (`/proc/net/dev`
/// lists the namespace's own).
pub fn network_isolated() -> bool {
    let Ok(dev) = std::fs::read_to_string("/proc/net/dev") else {
        return false;
    };
    dev.lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .all(|name| name.trim() == "lo")
}

/// Whether an engine test is to be skipped here. The suites run with the other slow ones
/// (`PIPEWRIGHT_SLOW_TESTS=1`, as .ci/run runs them) or alone (`PIPEWRIGHT_RESTATE_TESTS=1`).
/// In a namespace with only loopback the test runs here (`false`). Elsewhere it runs itself
/// again, alone, under `unshare -rn` (one engine test at a time across processes), asserts that
/// it passed there, and answers `true`: its work is done. Without either variable it is
/// skipped, after one line on stderr saying how to run it.
pub fn skip_engine_test() -> bool {
    let on = |name: &str| std::env::var_os(name).is_some_and(|v| v == "1");
    if !on(ENGINE_TESTS) && !on("PIPEWRIGHT_SLOW_TESTS") {
        eprintln!(
            "skipped {} (it starts a restate-server): set PIPEWRIGHT_SLOW_TESTS=1 to run it",
            test_name()
        );
        return true;
    }
    if network_isolated() {
        return false;
    }
    let test = test_name();
    let exe = std::env::current_exe()
        .unwrap_or_else(|e| panic!("the test binary's path, to run {test} again: {e}"));
    let _turn = one_at_a_time();
    let status = std::process::Command::new("unshare")
        .args(["-rn", "sh", "-c"])
        .arg("ip link set lo up && exec \"$0\" --exact \"$1\" --test-threads 1 --nocapture")
        .arg(&exe)
        .arg(&test)
        .env(ENGINE_TESTS, "1")
        .status()
        .unwrap_or_else(|e| {
            panic!("{test} runs in a network namespace (restate-server calls api.github.com as it starts), through `unshare -rn`: {e}")
        });
    assert!(
        status.success(),
        "{test}, run again in a network namespace (`unshare -rn`), failed: {status} (its output is above; `unshare -rn` needs user namespaces or root)"
    );
    true
}

fn test_name() -> String {
    // libtest and nextest name a test's thread after the test.
    std::thread::current()
        .name()
        .unwrap_or("this engine test")
        .to_string()
}

/// An exclusive lock across processes: engine tests started from parallel test threads (or
/// test binaries) take turns, each starting a server that wants both cores for a while.
fn one_at_a_time() -> Option<std::fs::File> {
    use std::os::fd::AsRawFd as _;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(std::env::temp_dir().join("pipewright-restate-tests.lock"))
        .ok()?;
    // SAFETY: flock(2) on a descriptor this function owns; released when the file closes.
    let locked = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0;
    locked.then_some(f)
}
