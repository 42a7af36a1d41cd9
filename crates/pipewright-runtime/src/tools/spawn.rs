//! Starting a child without copying pipewright (Linux). A child must die with pipewright, even
//! on kill -9 (`PR_SET_PDEATHSIG`), and only the child can ask for that, between its creation
//! and its exec. std runs such a hook (`pre_exec`) after a full `fork`: the kernel copies every
//! page table of pipewright and the child faults on copy-on-write pages until it execs, which
//! cost more than everything else a 1,000-step shell DAG does (docs/performance.md, "MEOW shell
//! DAG"). This module does what glibc's `posix_spawn` does instead: `clone(CLONE_VM |
//! CLONE_VFORK)`, a child that borrows pipewright's memory and runs on a stack of its own until
//! it execs, with the calling thread suspended until then, plus the death signal, which
//! `posix_spawn` has no attribute for.
//!
//! What the child may do is what a vfork child may: only system calls, on data the parent
//! prepared (no allocation, no lock, no panic), and no signal handler of pipewright's may run
//! in it, since it would run on pipewright's memory: every signal is blocked around the clone,
//! the child resets caught signals to their default and only then unblocks them, as glibc does.
//! Its exit is waited for through a pidfd (`CLONE_PIDFD`), so no SIGCHLD handling is needed.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use tokio::io::unix::AsyncFd;

/// What the child is started with. The environment is the whole of it (not changes to
/// pipewright's); the program is looked up in its `PATH` when it names no directory.
pub(super) struct Start<'a> {
    pub argv: &'a [String],
    pub cwd: &'a Path,
    pub env: Vec<(OsString, OsString)>,
    /// A pipe for stdin (its write end is [`Child::stdin`]); otherwise /dev/null.
    pub piped_stdin: bool,
    pub stdout: &'a File,
    pub stderr: &'a File,
}

/// A started child, not yet waited for until [`Child::wait`] returns. Dropping it kills the
/// child and reaps it (in the background when it has not died yet).
pub(super) struct Child {
    pid: libc::pid_t,
    pidfd: Option<AsyncFd<OwnedFd>>,
    pub stdin: Option<tokio::net::unix::pipe::Sender>,
}

/// The child's stack: it borrows pipewright's memory but needs a stack of its own, since the
/// suspended parent's frames are still in use. What it runs is a few system calls.
const STACK_BYTES: usize = 64 * 1024;

/// Everything the child reads, prepared by the parent, and the one thing it writes: why it
/// could not exec.
struct ChildArgs {
    /// Where the program may be, in `PATH` order: tried one by one, as `execvp` does.
    candidates: Vec<*const libc::c_char>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    cwd: *const libc::c_char,
    /// Descriptors that become the child's 0, 1 and 2.
    stdio: [RawFd; 3],
    parent: libc::pid_t,
    /// errno of the step that failed, 0 while none did.
    error: libc::c_int,
}

pub(super) fn spawn(start: Start<'_>) -> io::Result<Child> {
    let (prog, _) = start
        .argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let argv = c_strings(start.argv.iter().map(|a| a.as_bytes()))?;
    let envp = c_strings(start.env.iter().map(|(k, v)| {
        let mut kv = Vec::with_capacity(k.len() + v.len() + 1);
        kv.extend_from_slice(k.as_bytes());
        kv.push(b'=');
        kv.extend_from_slice(v.as_bytes());
        kv
    }))?;
    let path = start
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str());
    let candidates = candidates(prog, path)?;
    let cwd = c_string(start.cwd.as_os_str().as_bytes())?;

    let (stdin_read, stdin_write) = if start.piped_stdin {
        let (r, w) = pipe()?;
        (r, Some(w))
    } else {
        (open_dev_null()?, None)
    };
    // A source that is itself 0, 1 or 2 could be overwritten by an earlier dup2 in the child:
    // keep every source above them.
    let stdin_src = above_stdio(stdin_read)?;
    let stdout_src = above_stdio(start.stdout.try_clone()?.into())?;
    let stderr_src = above_stdio(start.stderr.try_clone()?.into())?;

    let mut args = ChildArgs {
        candidates: pointers(&candidates),
        argv: pointers(&argv),
        envp: pointers(&envp),
        cwd: cwd.as_ptr(),
        stdio: [
            stdin_src.as_raw_fd(),
            stdout_src.as_raw_fd(),
            stderr_src.as_raw_fd(),
        ],
        // The parent the child checks it still has once its death signal is set.
        parent: std::process::id() as libc::pid_t,
        error: 0,
    };
    let mut stack = vec![0u128; STACK_BYTES / 16];
    let (pid, pidfd) = clone_child(&mut args, &mut stack)?;
    // SAFETY: the child has exec'd or exited (CLONE_VFORK): nothing writes `error` any more.
    let error = unsafe { std::ptr::read_volatile(&args.error) };
    if error != 0 {
        // It exited without exec'ing: reap it now (it is dead) and say why.
        let _ = wait_blocking(pid);
        return Err(io::Error::from_raw_os_error(error));
    }
    let mut child = Child {
        pid,
        pidfd: None,
        stdin: None,
    };
    // From here on, dropping `child` kills and reaps it.
    // SAFETY: the OwnedFd keeps the pidfd open, and it is the only owner, for the AsyncFd's
    // whole life.
    let registered =
        unsafe { AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE) };
    let pidfd = match registered {
        Ok(fd) => fd,
        Err(e) => {
            let (_, e) = e.into_parts();
            // SAFETY: kill(2) of our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let _ = wait_blocking(pid);
            return Err(e);
        }
    };
    child.pidfd = Some(pidfd);
    if let Some(w) = stdin_write {
        child.stdin = Some(tokio::net::unix::pipe::Sender::from_owned_fd(w)?);
    }
    Ok(child)
}

impl Child {
    pub(super) fn id(&self) -> u32 {
        self.pid as u32
    }

    /// Waits for the child to end and reaps it.
    pub(super) async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            let Some(fd) = &self.pidfd else {
                return Err(io::Error::other("the child was already waited for"));
            };
            let mut ready = fd.readable().await?;
            if let Some(status) = try_wait(self.pid)? {
                self.pidfd = None;
                self.pid = 0;
                return Ok(status);
            }
            ready.clear_ready();
        }
    }

    /// SIGKILL, then reap it.
    pub(super) async fn kill(&mut self) -> io::Result<ExitStatus> {
        if self.pid > 0 {
            // SAFETY: kill(2) of our own child, not yet reaped, so the pid is still its.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
        self.wait().await
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let (pid, Some(fd)) = (self.pid, self.pidfd.take()) else {
            return;
        };
        // SAFETY: as in `kill`.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        if matches!(try_wait(pid), Ok(Some(_))) {
            return;
        }
        // Not dead yet (SIGKILL is delivered asynchronously): reap it when it is, without
        // blocking the task that dropped it. Not from a task of the runtime: a runtime dropped
        // meanwhile (a member's, once it was cancelled) would drop that task unrun and leave
        // the child a zombie for as long as pipewright lives.
        drop(fd);
        reap_later(pid);
    }
}

/// Hands `pid`, killed, to the one thread that waits for such children.
fn reap_later(pid: libc::pid_t) {
    use std::sync::mpsc::{channel, Sender};
    use std::sync::{Mutex, OnceLock};
    static REAPER: OnceLock<Option<Mutex<Sender<libc::pid_t>>>> = OnceLock::new();
    let reaper = REAPER.get_or_init(|| {
        let (tx, rx) = channel::<libc::pid_t>();
        // Any thread of the process may wait for a child another thread started.
        std::thread::Builder::new()
            .name("pipewright-reaper".into())
            .spawn(move || {
                for pid in rx {
                    let _ = wait_blocking(pid);
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let sent = reaper.as_ref().is_some_and(|tx| {
        tx.lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(pid)
            .is_ok()
    });
    if !sent {
        // No thread could be started: wait here; the child has been sent SIGKILL.
        let _ = wait_blocking(pid);
    }
}

fn try_wait(pid: libc::pid_t) -> io::Result<Option<ExitStatus>> {
    let mut status = 0;
    loop {
        // SAFETY: waitpid of our own child with a pointer to a live local.
        let got = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if got == pid {
            return Ok(Some(ExitStatus::from_raw(status)));
        }
        if got == 0 {
            return Ok(None);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn wait_blocking(pid: libc::pid_t) -> io::Result<ExitStatus> {
    let mut status = 0;
    loop {
        // SAFETY: as in `try_wait`.
        if unsafe { libc::waitpid(pid, &mut status, 0) } == pid {
            return Ok(ExitStatus::from_raw(status));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Clones the child with every signal blocked (no handler of pipewright's may run on the
/// memory the child borrows), then restores the caller's mask. Returns its pid and pidfd.
fn clone_child(args: &mut ChildArgs, stack: &mut [u128]) -> io::Result<(libc::pid_t, OwnedFd)> {
    let mut pidfd: libc::c_int = -1;
    let all = full_sigset();
    // SAFETY: zeroed is a valid sigset_t; the raw system call blocks glibc's internal signals
    // too, which pthread_sigmask leaves unblocked.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe { sigprocmask(libc::SIG_BLOCK, &all, &mut old) };
    // The stack grows down on every architecture Linux runs Rust on here: its top, 16-byte
    // aligned since the elements are u128.
    let top = stack.as_mut_ptr_range().end.cast::<libc::c_void>();
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD;
    // SAFETY: `child_main` only makes system calls on `args`, which lives until clone returns,
    // and never returns (exec or _exit); the calling thread is suspended until then
    // (CLONE_VFORK), so `args` and `stack` outlive the child's use of them. `pidfd` receives
    // the pidfd (CLONE_PIDFD uses the parent_tid argument).
    let pid = unsafe {
        libc::clone(
            child_main,
            top,
            flags,
            (args as *mut ChildArgs).cast(),
            &mut pidfd as *mut libc::c_int,
        )
    };
    let clone_error = io::Error::last_os_error();
    // SAFETY: restores the mask saved above.
    unsafe { sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    if pid < 0 {
        return Err(clone_error);
    }
    // SAFETY: CLONE_PIDFD gave us this new descriptor, owned by nothing else.
    Ok((pid, unsafe { OwnedFd::from_raw_fd(pidfd) }))
}

fn full_sigset() -> libc::sigset_t {
    // SAFETY: sigfillset initialises the set it is given.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        set
    }
}

/// rt_sigprocmask itself: glibc's wrappers refuse to block its two internal signals.
///
/// # Safety
/// `set` and `old` point to valid sigsets (`old` may be null).
unsafe fn sigprocmask(how: libc::c_int, set: *const libc::sigset_t, old: *mut libc::sigset_t) {
    // The kernel's sigset is 64 bits wide (_NSIG / 8), smaller than glibc's sigset_t.
    unsafe { libc::syscall(libc::SYS_rt_sigprocmask, how, set, old, 8usize) };
}

/// The child: reset caught signals, join a new process group, ask for SIGKILL when the
/// parent dies, move to the directory, set up stdio, unblock signals, exec. On any failure it
/// leaves the errno in `error` and exits 127.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY (the whole function): `arg` is the parent's `ChildArgs`, alive and not touched by
    // the suspended parent; every call is a system call on the prepared data, which is what a
    // vfork child may do; nothing here allocates, locks or can panic.
    unsafe {
        let args = &mut *arg.cast::<ChildArgs>();
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        for sig in 1..NSIG {
            let mut old: libc::sigaction = std::mem::zeroed();
            // glibc's own signals (32, 33) are refused here: pipewright never raises them
            // at a thread (no setuid, no pthread_cancel).
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            // Caught signals get their default; ignored ones stay ignored across exec, as
            // std leaves them, except SIGPIPE, which the Rust runtime ignores for itself.
            let caught = old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN;
            if caught || sig == libc::SIGPIPE {
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
            }
        }
        if libc::setpgid(0, 0) != 0 {
            fail(args);
        }
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
            fail(args);
        }
        // pipewright died before the prctl took effect: nobody would kill us later.
        if libc::getppid() != args.parent {
            libc::_exit(137);
        }
        if libc::chdir(args.cwd) != 0 {
            fail(args);
        }
        for (target, &src) in args.stdio.iter().enumerate() {
            // dup2 clears close-on-exec on the copy; the sources are all above 2.
            if libc::dup2(src, target as libc::c_int) < 0 {
                fail(args);
            }
        }
        let none: libc::sigset_t = std::mem::zeroed();
        sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        // execvp's search: a candidate that is missing or not ours to run makes way for the
        // next; EACCES is reported if nothing else worked.
        let mut denied = false;
        for &path in &args.candidates {
            if path.is_null() {
                break;
            }
            libc::execve(path, args.argv.as_ptr(), args.envp.as_ptr());
            match *libc::__errno_location() {
                libc::EACCES => denied = true,
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ETIMEDOUT | libc::ENODEV => {}
                _ => fail(args),
            }
        }
        if denied {
            *libc::__errno_location() = libc::EACCES;
        }
        fail(args)
    }
}

/// Signals are 1 to 64 on Linux.
const NSIG: libc::c_int = 65;

/// Leaves errno in `error` for the parent and exits.
///
/// # Safety
/// Called in the child only, `args` being the parent's.
unsafe fn fail(args: &mut ChildArgs) -> ! {
    unsafe {
        let e = *libc::__errno_location();
        std::ptr::write_volatile(&mut args.error, if e == 0 { libc::EINVAL } else { e });
        libc::_exit(127)
    }
}

/// Where `execvp` would look for `prog`: itself when it names a directory, else each
/// directory of `PATH` (an empty entry is the current directory; without a `PATH`, glibc's
/// default).
fn candidates(prog: &str, path: Option<&OsStr>) -> io::Result<Vec<CString>> {
    if prog.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    if prog.contains('/') {
        return Ok(vec![c_string(prog.as_bytes())?]);
    }
    let path = path.map_or(&b"/bin:/usr/bin"[..], |p| p.as_bytes());
    path.split(|&b| b == b':')
        .map(|dir| {
            let dir = if dir.is_empty() { &b"."[..] } else { dir };
            let mut full = Vec::with_capacity(dir.len() + prog.len() + 1);
            full.extend_from_slice(dir);
            full.push(b'/');
            full.extend_from_slice(prog.as_bytes());
            c_string(&full)
        })
        .collect()
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in provided data",
        )
    })
}

fn c_strings<B: AsRef<[u8]>>(items: impl Iterator<Item = B>) -> io::Result<Vec<CString>> {
    items.map(|b| c_string(b.as_ref())).collect()
}

/// The NULL-terminated pointer array of `strings` (which must outlive it).
fn pointers(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both are new descriptors owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn open_dev_null() -> io::Result<OwnedFd> {
    Ok(File::open("/dev/null")?.into())
}

fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor we own returns a new one or -1.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: new and owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek};

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn file() -> File {
        tempfile::tempfile().unwrap_or_else(|e| panic!("{e}"))
    }

    fn read(mut f: &File) -> String {
        let mut s = String::new();
        f.rewind()
            .and_then(|()| f.read_to_string(&mut s))
            .unwrap_or_else(|e| panic!("{e}"));
        s
    }

    fn env() -> Vec<(OsString, OsString)> {
        std::env::vars_os().collect()
    }

    /// Runs `sh -c script` to its end: its exit status, stdout and stderr.
    fn sh(script: &str, cwd: &Path, env: Vec<(OsString, OsString)>) -> (ExitStatus, String) {
        let (out, err) = (file(), file());
        let argv = ["sh", "-c", script].map(String::from);
        let status = rt().block_on(async {
            let mut child = spawn(Start {
                argv: &argv,
                cwd,
                env,
                piped_stdin: false,
                stdout: &out,
                stderr: &err,
            })
            .unwrap_or_else(|e| panic!("{e}"));
            child.wait().await.unwrap_or_else(|e| panic!("{e}"))
        });
        (status, read(&out) + &read(&err))
    }

    #[test]
    fn the_child_gets_its_directory_environment_group_and_a_clean_signal_state() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut vars = env();
        vars.push(("PW_SPAWN_TEST".into(), "a b=c".into()));
        // Process group (field 5 of stat) equal to its pid; signal mask empty; SIGPIPE not
        // ignored though the Rust runtime ignores it in this process. The shell reads its own
        // status with builtins only: a `grep` it forks could read it while the shell blocks
        // every signal around that fork (dash does), which failed this test once in four runs.
        let (status, out) = sh(
            "pwd; echo \"$PW_SPAWN_TEST\"; set -- $(sed 's/.*) //' /proc/$$/stat); \
             [ \"$3\" = $$ ] && echo own-group; \
             while read -r l; do case $l in SigBlk*|SigIgn*) echo \"$l\";; esac; done < /proc/$$/status",
            dir.path(),
            vars,
        );
        assert!(status.success(), "{status:?}: {out}");
        let canonical = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let mut lines = out.lines();
        assert_eq!(lines.next().map(Path::new), Some(canonical.as_path()));
        assert_eq!(lines.next(), Some("a b=c"));
        assert_eq!(lines.next(), Some("own-group"));
        assert_eq!(lines.next(), Some("SigBlk:\t0000000000000000"));
        let ignored = lines
            .next()
            .and_then(|l| l.strip_prefix("SigIgn:\t"))
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .unwrap_or_else(|| panic!("no SigIgn in {out}"));
        assert_eq!(ignored & (1 << (libc::SIGPIPE - 1)), 0, "{out}");
    }

    #[test]
    fn the_program_is_found_in_the_childs_path_and_failures_say_why() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let tool = dir.path().join("pw-spawn-tool");
        std::fs::write(&tool, "#!/bin/sh\necho found \"$@\"\n").unwrap_or_else(|e| panic!("{e}"));
        let not_executable = dir.path().join("pw-spawn-plain");
        std::fs::write(&not_executable, "#!/bin/sh\n").unwrap_or_else(|e| panic!("{e}"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut vars: Vec<_> = env().into_iter().filter(|(k, _)| k != "PATH").collect();
        let path = format!("/nonexistent:{}:/usr/bin:/bin", dir.path().display());
        vars.push(("PATH".into(), path.into()));
        let start = |argv: &[String]| {
            let (out, err) = (file(), file());
            let got = rt().block_on(async {
                let mut child = spawn(Start {
                    argv,
                    cwd: dir.path(),
                    env: vars.clone(),
                    piped_stdin: false,
                    stdout: &out,
                    stderr: &err,
                })?;
                child.wait().await
            });
            got.map(|s| (s.code(), read(&out)))
                .map_err(|e| e.raw_os_error())
        };
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            start(&argv(&["pw-spawn-tool", "x"])),
            Ok((Some(0), "found x\n".into()))
        );
        assert_eq!(
            start(&argv(&["pw-spawn-no-such-tool"])),
            Err(Some(libc::ENOENT))
        );
        assert_eq!(start(&argv(&["pw-spawn-plain"])), Err(Some(libc::EACCES)));
        let by_path = start(&[not_executable.display().to_string()]);
        assert_eq!(by_path, Err(Some(libc::EACCES)));
        let (out, err) = (file(), file());
        let gone = dir.path().join("gone");
        let e = rt().block_on(async {
            spawn(Start {
                argv: &argv(&["true"]),
                cwd: &gone,
                env: env(),
                piped_stdin: false,
                stdout: &out,
                stderr: &err,
            })
            .err()
            .and_then(|e| e.raw_os_error())
        });
        assert_eq!(e, Some(libc::ENOENT), "a missing directory");
    }

    #[test]
    fn stdin_is_the_pipe_when_asked_and_dev_null_otherwise() {
        use tokio::io::AsyncWriteExt;
        let dir = std::env::temp_dir();
        let (out, err) = (file(), file());
        let argv = ["sh", "-c", "cat; echo end"].map(String::from);
        let status = rt().block_on(async {
            let mut child = spawn(Start {
                argv: &argv,
                cwd: &dir,
                env: env(),
                piped_stdin: true,
                stdout: &out,
                stderr: &err,
            })
            .unwrap_or_else(|e| panic!("{e}"));
            let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
            stdin
                .write_all(b"given\n")
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            drop(stdin);
            child.wait().await.unwrap_or_else(|e| panic!("{e}"))
        });
        assert!(status.success());
        assert_eq!(read(&out), "given\nend\n");
        let (status, out) = sh("cat; echo end", &dir, env());
        assert!(status.success());
        assert_eq!(out, "end\n");
    }

    /// The death signal: the kernel sends it when the thread that started the child ends, the
    /// way it does when pipewright dies.
    #[test]
    fn the_child_is_killed_when_the_thread_that_started_it_ends() {
        let dir = std::env::temp_dir();
        let pid = std::thread::spawn(move || {
            let (out, err) = (file(), file());
            let argv = ["sleep", "30"].map(String::from);
            rt().block_on(async {
                let child = spawn(Start {
                    argv: &argv,
                    cwd: &dir,
                    env: env(),
                    piped_stdin: false,
                    stdout: &out,
                    stderr: &err,
                })
                .unwrap_or_else(|e| panic!("{e}"));
                let pid = child.pid;
                // Not killed by our own Drop: only the kernel's signal may end it.
                std::mem::forget(child);
                pid
            })
        })
        .join()
        .unwrap_or_else(|_| panic!("the spawning thread panicked"));
        let status = wait_blocking(pid).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    }

    /// `sleep 30`, started in the temporary directory, writing to `out` and `err`; it must be
    /// started from inside a runtime.
    fn sleeper(out: &File, err: &File) -> Child {
        let argv = ["sleep", "30"].map(String::from);
        spawn(Start {
            argv: &argv,
            cwd: &std::env::temp_dir(),
            env: env(),
            piped_stdin: false,
            stdout: out,
            stderr: err,
        })
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A runtime dropped right after the child (a member's, when it is cancelled) still leaves
    /// no zombie: the reaping does not depend on it.
    #[test]
    fn a_child_dropped_with_its_runtime_is_reaped() {
        let (out, err) = (file(), file());
        let pids: Vec<libc::pid_t> = (0..20)
            .map(|_| {
                let runtime = rt();
                let pid = runtime.block_on(async {
                    let child = sleeper(&out, &err);
                    let pid = child.pid;
                    drop(child);
                    pid
                });
                drop(runtime);
                pid
            })
            .collect();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        // SAFETY: kill(2) with signal 0 only probes; a zombie answers it too.
        let there = |pid: &libc::pid_t| unsafe { libc::kill(*pid, 0) } == 0;
        while pids.iter().any(there) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let left: Vec<_> = pids.iter().filter(|p| there(p)).collect();
        assert!(
            left.is_empty(),
            "children left running or as zombies: {left:?}"
        );
    }

    #[test]
    fn dropping_a_running_child_kills_and_reaps_it() {
        let (out, err) = (file(), file());
        let pid = rt().block_on(async {
            let child = sleeper(&out, &err);
            let pid = child.pid;
            drop(child);
            // The reaper thread reaps it once the kill has taken effect.
            for _ in 0..200 {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                if unsafe { libc::kill(pid, 0) } != 0 {
                    break;
                }
            }
            pid
        });
        // SAFETY: kill(2) with signal 0 only probes.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        assert!(
            !alive,
            "the child {pid} is still there (running or a zombie)"
        );
    }
}
