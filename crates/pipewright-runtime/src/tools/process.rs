//! Child processes for shell steps, project tools and the command backend. Output goes to
//! files (in memory on Linux), never pipes, so a chatty child cannot block on a full pipe;
//! every child runs in its own process group under a timeout and the whole group is killed on
//! expiry.
//!
//! Children die with the run: the group is killed whenever its step ends or is dropped (an
//! aborted fan-out), every live group is killed on a second SIGINT/SIGTERM, and on Linux the
//! child gets SIGKILL from the kernel when pipewright dies, even by kill -9 (PR_SET_PDEATHSIG).
//! That signal reaches the child only, not what it started: so each group is also written
//! down (`record_groups_in`), and the next run in the same store kills what a dead pipewright
//! left of its groups before anything runs (`kill_orphans`).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

#[cfg(target_os = "linux")]
#[path = "spawn.rs"]
mod spawn;
#[cfg(not(target_os = "linux"))]
#[path = "spawn_portable.rs"]
mod spawn;

/// More than this much output is cut (and says so) to keep memory bounded.
pub const MAX_OUTPUT: u64 = 16 * 1024 * 1024;

#[derive(Debug)]
pub struct ProcOutput {
    /// `None` when a signal ended the child.
    pub code: Option<i32>,
    /// The signal that ended the child, if one did.
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl ProcOutput {
    /// How the child ended, for messages: `exited with status 1`, `was killed by signal 9
    /// (SIGKILL)`.
    pub fn status_text(&self) -> String {
        match (self.code, self.signal_text()) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(s)) => format!("was killed by {s}"),
            (None, None) => "ended without an exit status".to_string(),
        }
    }

    /// `signal 9 (SIGKILL)` when a signal ended the child.
    pub fn signal_text(&self) -> Option<String> {
        self.signal.map(|s| match signal_name(s) {
            Some(n) => format!("signal {s} ({n})"),
            None => format!("signal {s}"),
        })
    }

    /// [`ProcOutput::status_text`], then what the child wrote to stderr, if anything.
    pub fn failure_text(&self) -> String {
        let status = self.status_text();
        match self.stderr.trim_end() {
            "" => status,
            err => format!("{status}: {err}"),
        }
    }
}

/// The conventional name of a signal number on this platform.
pub fn signal_name(sig: i32) -> Option<&'static str> {
    let names = [
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGILL, "SIGILL"),
        (libc::SIGTRAP, "SIGTRAP"),
        (libc::SIGABRT, "SIGABRT"),
        (libc::SIGBUS, "SIGBUS"),
        (libc::SIGFPE, "SIGFPE"),
        (libc::SIGKILL, "SIGKILL"),
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGUSR2, "SIGUSR2"),
        (libc::SIGPIPE, "SIGPIPE"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGCHLD, "SIGCHLD"),
        (libc::SIGCONT, "SIGCONT"),
        (libc::SIGSTOP, "SIGSTOP"),
        (libc::SIGTSTP, "SIGTSTP"),
        (libc::SIGTTIN, "SIGTTIN"),
        (libc::SIGTTOU, "SIGTTOU"),
        (libc::SIGURG, "SIGURG"),
        (libc::SIGXCPU, "SIGXCPU"),
        (libc::SIGXFSZ, "SIGXFSZ"),
        (libc::SIGVTALRM, "SIGVTALRM"),
        (libc::SIGPROF, "SIGPROF"),
        (libc::SIGWINCH, "SIGWINCH"),
        (libc::SIGIO, "SIGIO"),
        (libc::SIGSYS, "SIGSYS"),
    ];
    names.iter().find(|(n, _)| *n == sig).map(|(_, name)| *name)
}

/// The process groups of the children running now.
static LIVE: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Kills the process group of every child still running (the run is stopping now).
pub fn kill_all_children() {
    let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    for pgid in live.iter() {
        // SAFETY: kill(2) on a process group this process created; no memory preconditions.
        unsafe {
            libc::kill(-*pgid, libc::SIGKILL);
        }
    }
}

/// Kills the child's process group when the step is done with it, however that happens
/// (finished, timed out, or its future dropped by an aborting fan-out).
struct Group(Option<u32>);

impl Group {
    fn new(pid: Option<u32>) -> Group {
        if let Some(p) = pid.and_then(|p| i32::try_from(p).ok()) {
            LIVE.lock().unwrap_or_else(|p| p.into_inner()).insert(p);
            ledger::write(p);
        }
        Group(pid)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        kill_group(self.0);
        if let Some(p) = self.0.and_then(|p| i32::try_from(p).ok()) {
            LIVE.lock().unwrap_or_else(|p| p.into_inner()).remove(&p);
            ledger::remove(p);
        }
    }
}

/// Where this process writes down its children's process groups: a file per group in `dir`
/// (the run store's `runs/groups/`), removed when the group is killed at its step's end.
/// Without it (library use, tests in one process) nothing is written.
pub fn record_groups_in(dir: PathBuf) {
    *ledger::DIR.lock().unwrap_or_else(|p| p.into_inner()) = Some(dir);
}

/// Kills what pipewright processes that died (kill -9, a power cut) left of their steps'
/// process groups recorded in `dir`: the grandchildren PR_SET_PDEATHSIG does not reach. Groups
/// of a pipewright still running (a concurrent run) are left alone. Returns how many
/// processes were killed.
pub fn kill_orphans(dir: &Path) -> usize {
    ledger::kill_orphans(dir)
}

/// The group files: `<pgid>` holding `<recorder pid> <recorder start> <leader start> <session>`,
/// start times in clock ticks since boot (`/proc/PID/stat` field 22), so neither a reused
/// pipewright pid nor a reused group id is mistaken for the one recorded.
mod ledger {
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    pub(super) static DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

    /// `/proc/PID/stat`'s process group, session and start time.
    fn stat(pid: &str) -> Option<(i32, i32, u64)> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) may hold spaces and parentheses: count from its end.
        let rest = &text[text.rfind(')')? + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        Some((
            f.get(2)?.parse().ok()?,
            f.get(3)?.parse().ok()?,
            f.get(19)?.parse().ok()?,
        ))
    }

    #[cfg(test)]
    pub(super) fn stat_of(pid: u32) -> Option<(i32, i32, u64)> {
        stat(&pid.to_string())
    }

    fn dir() -> Option<PathBuf> {
        DIR.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(super) fn write(pgid: i32) {
        let Some(dir) = dir() else { return };
        let (Some((_, session, me)), Some((_, _, leader))) =
            (stat("self"), stat(&pgid.to_string()))
        else {
            return;
        };
        let line = format!("{} {me} {leader} {session}\n", std::process::id());
        // Best effort: a group that cannot be written down still runs, as before.
        let _ = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join(pgid.to_string()), line));
    }

    pub(super) fn remove(pgid: i32) {
        if let Some(dir) = dir() {
            let _ = std::fs::remove_file(dir.join(pgid.to_string()));
        }
    }

    pub(super) fn kill_orphans(dir: &Path) -> usize {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        let mut killed = 0;
        for e in entries.flatten() {
            let path = e.path();
            let Some(pgid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let f: Vec<u64> = text
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            let [recorder, recorder_start, leader_start, session] = f[..] else {
                let _ = std::fs::remove_file(&path);
                continue;
            };
            // Its pipewright still runs: the group is that run's.
            if stat(&recorder.to_string()).is_some_and(|(_, _, t)| t == recorder_start) {
                continue;
            }
            for pid in members(pgid, session, leader_start) {
                // SAFETY: kill(2) has no memory-safety preconditions; the pid is a member of
                // the recorded group, in the recorded session, started after its leader.
                if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                    killed += 1;
                }
            }
            let _ = std::fs::remove_file(&path);
        }
        killed
    }

    /// The processes of group `pgid` in `session` that started no earlier than its leader.
    fn members(pgid: i32, session: u64, leader_start: u64) -> Vec<i32> {
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        procs
            .flatten()
            .filter_map(|p| p.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                stat(&pid.to_string()).is_some_and(|(g, s, t)| {
                    g == pgid && u64::try_from(s).is_ok_and(|s| s == session) && t >= leader_start
                })
            })
            .collect()
    }
}

/// Why a child produced no output to judge: it never started, could not be waited for, or ran
/// out of time. How a child that ran ended is its [`ProcOutput`], not an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcessError {
    #[error("empty command")]
    EmptyCommand,
    /// The files that capture stdout and stderr.
    #[error("cannot create a temporary file: {0}")]
    TempFile(String),
    #[error("cannot duplicate a temporary file handle")]
    DupHandle,
    #[error("cannot start `{program}`: {reason}")]
    Start { program: String, reason: String },
    #[error("waiting for `{program}` failed: {reason}")]
    Wait { program: String, reason: String },
    /// The whole process group was killed.
    #[error("`{program}` timed out after {}s and was killed", .after.as_secs_f64())]
    TimedOut { program: String, after: Duration },
    #[error("cannot read captured output: {0}")]
    Capture(String),
}

impl From<ProcessError> for String {
    fn from(e: ProcessError) -> String {
        e.to_string()
    }
}

pub struct Spec<'a> {
    pub argv: &'a [String],
    pub stdin: Option<Vec<u8>>,
    pub cwd: &'a Path,
    pub timeout: Duration,
    pub env: &'a [(String, String)],
    /// Variables of pipewright's environment the child does not inherit.
    pub env_remove: &'a [String],
}

tokio::task_local! {
    /// The run and step the child processes of this task are started for.
    static STEP: (String, String);
}

/// Runs `f` with every child process it starts carrying `PIPEWRIGHT_RUN_ID` and
/// `PIPEWRIGHT_STEP_KEY` in its environment: the key a step's own side effects can be made
/// idempotent with, since a step in flight when its process dies runs again (docs/engines.md).
pub async fn for_step<F: std::future::Future>(run_id: &str, key: &str, f: F) -> F::Output {
    STEP.scope((run_id.to_string(), key.to_string()), f).await
}

/// Runs `f` on a task of its own and waits for it; dropping the wait aborts the task (and with
/// it the child it started: its group is killed when its step is dropped).
///
/// A scheduler that starts many commands from its one task starts them one after another on
/// one thread, which waits for each child's exec (the spawn borrows its memory until then) and
/// then for its turn to take in the exit. On their own tasks, the runtime's worker threads
/// start children and take in their exits side by side (issue 27: the MEOW shell DAG against
/// its floor). Each worker thread lives as long as the runtime, so the children's death signal
/// (tied to the thread that started them) still fires only when pipewright dies.
async fn on_own_task<F>(f: F) -> F::Output
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let task = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(f));
    match task.await {
        Ok(out) => out,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Cancelled without this wait being dropped: the runtime is shutting down, and this
        // wait goes with it.
        Err(_) => std::future::pending().await,
    }
}

/// Runs a child to its end, on a task of its own ([`on_own_task`]): runs side by side start
/// their children, and take in their exits, on every worker thread of the runtime.
pub async fn run(spec: Spec<'_>) -> Result<ProcOutput, ProcessError> {
    let job = Job {
        env: child_env(&spec),
        argv: spec.argv.to_vec(),
        cwd: spec.cwd.to_path_buf(),
        stdin: spec.stdin,
        timeout: spec.timeout,
    };
    on_own_task(run_job(job)).await
}

/// What [`run`] runs, owned by its task.
struct Job {
    argv: Vec<String>,
    cwd: PathBuf,
    env: Vec<(OsString, OsString)>,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
}

async fn run_job(spec: Job) -> Result<ProcOutput, ProcessError> {
    let prog = spec.argv.first().ok_or(ProcessError::EmptyCommand)?;
    let (out_file, err_file) = (capture_file()?, capture_file()?);
    let mut child = spawn::spawn(spawn::Start {
        argv: &spec.argv,
        cwd: &spec.cwd,
        env: spec.env,
        piped_stdin: spec.stdin.is_some(),
        stdout: &out_file,
        stderr: &err_file,
    })
    .map_err(|e| ProcessError::Start {
        program: prog.clone(),
        reason: e.to_string(),
    })?;
    let pid = Some(child.id());
    let _group = Group::new(pid);
    if let (Some(data), Some(mut stdin)) = (spec.stdin, child.stdin.take()) {
        // Written from a task so a child that never reads stdin cannot stall us; a child that
        // exits early makes the write fail, which is fine.
        tokio::spawn(async move {
            let _ = stdin.write_all(&data).await;
            let _ = stdin.shutdown().await;
        });
    }
    let status = match tokio::time::timeout(spec.timeout, child.wait()).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return Err(ProcessError::Wait {
                program: prog.clone(),
                reason: e.to_string(),
            })
        }
        Err(_) => {
            kill_group(pid);
            let _ = child.kill().await;
            return Err(ProcessError::TimedOut {
                program: prog.clone(),
                after: spec.timeout,
            });
        }
    };
    // The group may still hold children that inherited the output files; they are not ours
    // to wait for (`_group` kills them when this returns).
    Ok(ProcOutput {
        code: status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&status),
        stdout: read_capped(out_file)?,
        stderr: read_capped(err_file)?,
    })
}

/// The child's whole environment: pipewright's, less `env_remove`, plus the step's own
/// variables, plus the run and step key (after the step's variables: the key is pipewright's
/// to give).
fn child_env(spec: &Spec<'_>) -> Vec<(OsString, OsString)> {
    let mut env: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    for k in spec.env_remove {
        env.remove(OsStr::new(k));
    }
    for (k, v) in spec.env {
        env.insert(k.into(), v.into());
    }
    let _ = STEP.try_with(|(run_id, key)| {
        env.insert("PIPEWRIGHT_RUN_ID".into(), run_id.into());
        env.insert("PIPEWRIGHT_STEP_KEY".into(), key.into());
    });
    env.into_iter().collect()
}

/// A file for a child's stdout or stderr: in memory on Linux (`memfd_create`), a temporary
/// file elsewhere or when that fails. A file in /tmp per stream made ext4's inode allocator,
/// which skips the inodes deleted recently, the largest cost of a 1,000-step shell DAG, and a
/// growing one (issue 27). It stays a file, not a pipe: a chatty child never blocks on it; what
/// it writes is held in memory (swappable) rather than on /tmp's disk until the step ends.
fn capture_file() -> Result<std::fs::File, ProcessError> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::FromRawFd;
        // SAFETY: a NUL-terminated name and valid flags; on success the descriptor is new and
        // owned by nothing else, so the File may own it.
        let fd = unsafe { libc::memfd_create(c"pipewright-output".as_ptr(), libc::MFD_CLOEXEC) };
        if fd >= 0 {
            // SAFETY: see above.
            return Ok(unsafe { std::fs::File::from_raw_fd(fd) });
        }
    }
    tempfile::tempfile().map_err(|e| ProcessError::TempFile(e.to_string()))
}

fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) with a negative pid signals the process group we created with
        // process_group(0); it has no memory-safety preconditions.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

fn read_capped(mut f: std::fs::File) -> Result<String, ProcessError> {
    use std::io::Seek;
    let mut buf = Vec::new();
    f.seek(std::io::SeekFrom::Start(0))
        .and_then(|_| (&mut f).take(MAX_OUTPUT).read_to_end(&mut buf))
        .map_err(|e| ProcessError::Capture(e.to_string()))?;
    let mut s = String::from_utf8_lossy(&buf).into_owned();
    if buf.len() as u64 == MAX_OUTPUT {
        s.push_str("\n[output truncated]");
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_now(argv: &[&str], timeout: Duration) -> Result<ProcOutput, ProcessError> {
        let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
        let dir = std::env::temp_dir();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
            .block_on(run(Spec {
                argv: &argv,
                stdin: None,
                cwd: &dir,
                timeout,
                env: &[],
                env_remove: &[],
            }))
    }

    /// A child, run on a task of its own, gets its step's key, and dropping the wait for it (a
    /// run cancelled, a fan-out aborted) kills it.
    #[test]
    fn a_child_on_its_own_task_gets_its_key_and_dies_with_its_wait() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let note = dir.path().join("note");
        let argv: Vec<String> = [
            "sh",
            "-c",
            "echo \"$$ $PIPEWRIGHT_STEP_KEY\" > note.tmp && mv note.tmp note && exec sleep 30",
        ]
        .map(String::from)
        .into();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let cwd = dir.path().to_path_buf();
        let (waited, pid) = rt.block_on(async {
            let step = for_step(
                "r1",
                "build.3",
                run(Spec {
                    argv: &argv,
                    stdin: None,
                    cwd: &cwd,
                    timeout: Duration::from_secs(60),
                    env: &[],
                    env_remove: &[],
                }),
            );
            let noted = async {
                loop {
                    if let Ok(text) = std::fs::read_to_string(&note) {
                        return text;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            };
            tokio::select! {
                r = step => (Some(r), String::new()),
                text = noted => (None, text),
            }
        });
        assert!(waited.is_none(), "the step ended early: {waited:?}");
        let (pid, key) = pid.trim().split_once(' ').unwrap_or_default();
        assert_eq!(key, "build.3");
        let pid: libc::pid_t = pid.parse().unwrap_or_else(|e| panic!("{pid}: {e}"));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        // SAFETY: kill(2) with signal 0 only probes; a zombie answers it too.
        while unsafe { libc::kill(pid, 0) } == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: as above.
        assert_ne!(
            unsafe { libc::kill(pid, 0) },
            0,
            "the child {pid} is still there"
        );
        drop(rt);
    }

    #[test]
    fn a_child_that_cannot_start_or_overruns_is_an_error_saying_which() {
        let long = Duration::from_secs(30);
        assert_eq!(run_now(&[], long).err(), Some(ProcessError::EmptyCommand));
        let e = run_now(&["/nonexistent/pipewright-no-such-program"], long).err();
        assert!(
            matches!(&e, Some(ProcessError::Start { program, .. }) if program == "/nonexistent/pipewright-no-such-program"),
            "{e:?}"
        );
        let e = run_now(&["sleep", "5"], Duration::from_millis(200)).err();
        assert_eq!(
            e,
            Some(ProcessError::TimedOut {
                program: "sleep".into(),
                after: Duration::from_millis(200)
            })
        );
        assert_eq!(
            e.map(String::from).as_deref(),
            Some("`sleep` timed out after 0.2s and was killed")
        );
        // A child that fails is not an error: its status is the caller's to judge.
        let out = run_now(&["sh", "-c", "echo no >&2; exit 3"], long);
        assert_eq!(
            out.map(|o| o.failure_text()).ok().as_deref(),
            Some("exited with status 3: no")
        );
    }
}

#[cfg(test)]
mod ledger_tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn only_a_dead_recorders_groups_are_killed_and_bad_entries_are_dropped() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let pgid = child.id();
        let (_, session, me) =
            ledger::stat_of(std::process::id()).unwrap_or_else(|| panic!("no /proc/self/stat"));
        let (_, _, leader) = ledger::stat_of(pgid).unwrap_or_else(|| panic!("no child stat"));
        let entry = dir.path().join(pgid.to_string());
        let bad = dir.path().join("not-a-group");
        std::fs::write(&bad, "x").unwrap_or_else(|e| panic!("{e}"));
        // Recorded by this process, which runs: left alone.
        let line = format!("{} {me} {leader} {session}", std::process::id());
        std::fs::write(&entry, &line).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kill_orphans(dir.path()), 0);
        assert!(
            child.try_wait().ok().flatten().is_none(),
            "killed a live run's group"
        );
        // The same pid with another start time is another process: the recorder is gone.
        let line = format!("{} {} {leader} {session}", std::process::id(), me + 1);
        std::fs::write(&entry, &line).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kill_orphans(dir.path()), 1);
        let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
        assert!(!entry.exists());
        assert!(
            bad.exists(),
            "a file that names no group is not ours to remove"
        );
    }
}
