#![allow(dead_code)]

use pipewright_pipeline::run::run;
use pipewright_runtime::store::{SqliteStore, Store};
use pipewright_runtime::{RunOptions, RunOutcome};
use pipewright_syntax::SourceMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(super) fn load(text: &str) -> (Arc<pipewright_ir::Program>, SourceMap) {
    let mut sources = SourceMap::new();
    let file = sources.add("test.yaml", text);
    let mut diags = Vec::new();
    let f = pipewright_pipeline::load_source(file, text, &mut diags);
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:#?}");
    let ast = pipewright_pipeline::ast::Program { files: vec![f] };
    (Arc::new(pipewright_pipeline::lower::pipeline(ast)), sources)
}

pub(super) fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
}

pub(super) fn opts(dir: &Path) -> RunOptions {
    RunOptions::new(dir.to_path_buf())
}

pub(super) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

pub(super) fn exec(text: &str, o: RunOptions) -> (RunOutcome, SourceMap) {
    let (p, s) = load(text);
    let out = rt()
        .block_on(run(p, &s, o))
        .unwrap_or_else(|e| panic!("setup: {e}"));
    (out, s)
}

/// Runs and returns `--format json`.
pub(super) fn run_json(text: &str, o: RunOptions) -> serde_json::Value {
    let (out, s) = exec(text, o);
    out.to_json(&s)
}

/// The default run store of a project directory.
pub(super) fn db_path(dir: &Path) -> PathBuf {
    dir.join(".pipewright/runs.db")
}

pub(super) fn store_at(dir: &Path) -> Arc<dyn Store> {
    Arc::new(SqliteStore::open(&db_path(dir)).unwrap_or_else(|e| panic!("{e}")))
}

/// The only run of a project (`None` before the run row exists) and its `runs show` document.
pub(super) fn only_run(dir: &Path) -> Option<(String, serde_json::Value)> {
    if !db_path(dir).exists() {
        return None;
    }
    let st = SqliteStore::open(&db_path(dir)).ok()?;
    let id = st.list_runs().ok()?.into_iter().next()?.run_id;
    let state = st.state(&id).ok()?;
    Some((id, state))
}

/// This test executable again, running only the test `test` of the module at `module_path`
/// (its `module_path!()`): for the half of a test that needs a process of its own, to be
/// killed with -9 or to be given a process-wide environment variable.
pub(super) fn this_test_alone(module_path: &str, test: &str) -> std::process::Command {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    // libtest names a test by its path inside the test crate, without the crate's own name.
    let name = match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_string(),
    };
    let mut c = std::process::Command::new(exe);
    c.args(["--exact", &name, "--nocapture", "--test-threads=1"]);
    c
}

/// What a mock HTTP server received: the request head and the body its `Content-Length`
/// announces (or whatever arrived before the peer closed).
pub(super) async fn read_request<S: tokio::io::AsyncRead + Unpin>(sock: &mut S) -> String {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 65536];
    let mut got = Vec::new();
    loop {
        let n = sock.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        if let Some(end) = text.find("\r\n\r\n") {
            let len = text
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if got.len() >= end + 4 + len {
                break;
            }
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// Cancels the run when the step with this key starts.
pub(super) struct CancelAt(pub pipewright_runtime::CancelToken, pub &'static str);

impl pipewright_runtime::EventSink for CancelAt {
    fn event(&self, e: &pipewright_runtime::Event) {
        if e.kind == pipewright_runtime::EventKind::Started && e.key == self.1 {
            self.0.cancel();
        }
    }
}
