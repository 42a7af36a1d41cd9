//! A child process's peak resident set, as the kernel counts it (`wait4`): what
//! `/usr/bin/time -v` reports. Shared by the memory bench and the ratio check.

use std::process::{Command, Stdio};

/// Runs the CLI with `args`; its exit code and peak resident set in KiB.
pub(crate) fn peak_kib(args: &[&str]) -> (i32, i64) {
    let child = Command::new(env!("CARGO_BIN_EXE_pipewright"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("pipewright: {e}"));
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: zeroed `rusage` is a valid value of a plain C struct of integers.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for (`Child` is never waited on or
    // dropped with a wait); both pointers are to live locals.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(
        got,
        pid,
        "wait4 failed: {}",
        std::io::Error::last_os_error()
    );
    std::mem::forget(child);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    // Linux reports `ru_maxrss` in KiB.
    (code, usage.ru_maxrss)
}
