//! Starting a child where there is no `PR_SET_PDEATHSIG` (not Linux): tokio's spawn, with the
//! interface of the Linux spawner (spawn.rs). A child here does not die with a killed
//! pipewright; its process group is still killed at its step's end and by the next run.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::Path;
use std::process::{ExitStatus, Stdio};

pub(super) struct Start<'a> {
    pub argv: &'a [String],
    pub cwd: &'a Path,
    pub env: Vec<(OsString, OsString)>,
    pub piped_stdin: bool,
    pub stdout: &'a File,
    pub stderr: &'a File,
}

pub(super) struct Child {
    inner: tokio::process::Child,
    pub stdin: Option<tokio::process::ChildStdin>,
}

pub(super) fn spawn(start: Start<'_>) -> io::Result<Child> {
    let (prog, args) = start
        .argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let mut cmd = tokio::process::Command::new(prog);
    cmd.args(args)
        .current_dir(start.cwd)
        .env_clear()
        .envs(start.env)
        .stdin(if start.piped_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::from(start.stdout.try_clone()?))
        .stderr(Stdio::from(start.stderr.try_clone()?))
        .kill_on_drop(true)
        .process_group(0);
    let mut inner = cmd.spawn()?;
    let stdin = inner.stdin.take();
    Ok(Child { inner, stdin })
}

impl Child {
    pub(super) fn id(&self) -> u32 {
        self.inner.id().unwrap_or(0)
    }

    pub(super) async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.inner.wait().await
    }

    pub(super) async fn kill(&mut self) -> io::Result<ExitStatus> {
        self.inner.kill().await?;
        self.inner.wait().await
    }
}
