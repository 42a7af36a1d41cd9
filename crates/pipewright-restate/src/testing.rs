//! The switch of the suites that run a real restate-server, shared by this crate's tests and
//! the CLI's.
//!
//! restate-server 1.7.12 asks api.github.com for its latest release every time it starts
//! (unconditionally: no setting turns it off, and it ignores HTTPS_PROXY). No test may reach
//! the network, so these suites run only inside a network namespace that has nothing but
//! loopback: `.ci/run` starts them under `unshare -rn` (docs/ci.md). Outside one they refuse to
//! start a server rather than let it call out.

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

/// Whether an engine test is to be skipped: yes, after one line on stderr saying how to run
/// it, unless `PIPEWRIGHT_RESTATE_TESTS=1`. With it, a namespace that reaches the network is
/// refused with the way to run the suite.
pub fn skip_engine_test() -> bool {
    if std::env::var_os(ENGINE_TESTS).is_none_or(|v| v != "1") {
        let test = std::thread::current()
            .name()
            .unwrap_or("this engine test")
            .to_string();
        eprintln!(
            "skipped {test} (it starts a restate-server): .ci/run runs it, or: unshare -rn sh -c 'ip link set lo up && {ENGINE_TESTS}=1 cargo test …'"
        );
        return true;
    }
    assert!(
        network_isolated(),
        "{ENGINE_TESTS}=1 outside a network namespace: restate-server would call api.github.com as it starts. Run the suite under `unshare -rn sh -c 'ip link set lo up && …'` (as .ci/run does)"
    );
    false
}
