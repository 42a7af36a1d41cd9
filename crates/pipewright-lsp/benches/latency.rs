//! Diagnostics latency: from a `didChange` sent by the client to the `publishDiagnostics` of
//! that version, through the whole server (in-memory connection, check thread, conversion).
//! The targets (issue 16): 10 ms for a typical 500-line file, 100 ms for a 1 MB file.
//!
//! `cargo bench -p pipewright-lsp --bench latency`

use criterion::{criterion_group, criterion_main, Criterion};
use lsp_server::{Connection, Message, Notification, Request, RequestId};
use lsp_types::notification::{self as notif, Notification as _};
use lsp_types::request::{self as req, Request as _};
use lsp_types::*;
use std::time::Duration;

// What `pipewright lsp` runs on (crates/pipewright/src/lib.rs): the figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

// The pipeline `check` bench's generated input: a realistic mix of step kinds.
#[path = "../../pipewright-pipeline/benches/common/mod.rs"]
mod common;

struct Session {
    conn: Connection,
    server: Option<std::thread::JoinHandle<Result<(), String>>>,
    uri: Url,
    version: i32,
    _dir: tempfile::TempDir,
}

impl Session {
    fn start(text: &str) -> Session {
        let (server, conn) = Connection::memory();
        let config = pipewright_lsp::Config {
            codes: pipewright_pipeline::codes::CODES.to_vec(),
        };
        let handle = std::thread::spawn(move || pipewright_lsp::serve(server, config));
        let dir = tempfile::tempdir().expect("tempdir");
        let uri = Url::from_file_path(dir.path().join("big.yaml")).expect("path");
        let init = Request::new(
            RequestId::from(1),
            req::Initialize::METHOD.into(),
            InitializeParams::default(),
        );
        conn.sender.send(init.into()).expect("send");
        while !matches!(conn.receiver.recv(), Ok(Message::Response(_))) {}
        let s = Session {
            conn,
            server: Some(handle),
            uri,
            version: 0,
            _dir: dir,
        };
        s.notify::<notif::Initialized>(InitializedParams {});
        s.notify::<notif::DidOpenTextDocument>(DidOpenTextDocumentParams {
            text_document: TextDocumentItem::new(s.uri.clone(), "yaml".into(), 0, text.into()),
        });
        s.wait_for(0);
        s
    }

    fn notify<N: notif::Notification>(&self, params: N::Params) {
        let n = Notification::new(N::METHOD.into(), params);
        self.conn.sender.send(n.into()).expect("send");
    }

    fn wait_for(&self, version: i32) -> usize {
        loop {
            match self.conn.receiver.recv_timeout(Duration::from_secs(60)) {
                Ok(Message::Notification(n)) if n.method == notif::PublishDiagnostics::METHOD => {
                    let p: PublishDiagnosticsParams =
                        serde_json::from_value(n.params).expect("params");
                    if p.version == Some(version) {
                        return p.diagnostics.len();
                    }
                }
                Ok(_) => {}
                Err(e) => panic!("no diagnostics for version {version}: {e}"),
            }
        }
    }

    /// One edit and the wait for its diagnostics.
    fn change(&mut self, text: &str) -> usize {
        self.version += 1;
        self.notify::<notif::DidChangeTextDocument>(DidChangeTextDocumentParams {
            text_document: VersionedTextDocumentIdentifier::new(self.uri.clone(), self.version),
            content_changes: vec![TextDocumentContentChangeEvent {
                range: None,
                range_length: None,
                text: text.into(),
            }],
        });
        self.wait_for(self.version)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let shutdown = Request::new(RequestId::from(2), req::Shutdown::METHOD.into(), ());
        let _ = self.conn.sender.send(shutdown.into());
        let _ = self.conn.receiver.recv_timeout(Duration::from_secs(10));
        self.notify::<notif::Exit>(());
        if let Some(h) = self.server.take() {
            let _ = h.join();
        }
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("diagnostics_after_change");
    for (name, bytes, samples) in [("500_lines", 23_000, 50), ("1_MiB", 1 << 20, 10)] {
        let text = common::generate(bytes);
        // Two texts that differ, so every change is a real one; both check clean.
        let edited = format!("{text}# edited\n");
        let mut s = Session::start(&text);
        assert_eq!(s.change(&edited), 0, "the generated pipeline checks clean");
        let label = format!(
            "{name} ({} lines, {} bytes)",
            text.lines().count(),
            text.len()
        );
        g.sample_size(samples);
        let mut flip = false;
        g.bench_function(label, |b| {
            b.iter(|| {
                flip = !flip;
                s.change(if flip { &text } else { &edited })
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
