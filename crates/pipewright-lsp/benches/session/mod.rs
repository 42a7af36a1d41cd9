//! A language server session over an in-memory connection, timed from a `didChange` to the
//! `publishDiagnostics` of its version. Shared by the latency bench and the CLI's ratio check
//! (crates/pipewright/benches/ratios.rs).

use lsp_server::{Connection, Message, Notification, Request, RequestId};
use lsp_types::notification::{self as notif, Notification as _};
use lsp_types::request::{self as req, Request as _};
use lsp_types::*;
use std::time::Duration;

pub(crate) struct Session {
    conn: Connection,
    server: Option<std::thread::JoinHandle<Result<(), String>>>,
    uri: Url,
    version: i32,
    _dir: tempfile::TempDir,
}

impl Session {
    pub(crate) fn start(text: &str, codes: Vec<pipewright_syntax::CodeInfo>) -> Session {
        let (server, conn) = Connection::memory();
        let config = pipewright_lsp::Config { codes };
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
    pub(crate) fn change(&mut self, changes: Vec<TextDocumentContentChangeEvent>) -> usize {
        self.version += 1;
        self.notify::<notif::DidChangeTextDocument>(DidChangeTextDocumentParams {
            text_document: VersionedTextDocumentIdentifier::new(self.uri.clone(), self.version),
            content_changes: changes,
        });
        self.wait_for(self.version)
    }
}

/// The change that turns one text into the other: a comment line inserted at `line`, or taken
/// out; with `full`, the whole new text.
pub(crate) fn edit(
    full: bool,
    line: u32,
    insert: bool,
    text: &str,
) -> Vec<TextDocumentContentChangeEvent> {
    let at = Position::new(line, 0);
    vec![match (full, insert) {
        (true, _) => TextDocumentContentChangeEvent {
            range: None,
            range_length: None,
            text: text.into(),
        },
        (false, true) => TextDocumentContentChangeEvent {
            range: Some(Range::new(at, at)),
            range_length: None,
            text: COMMENT.into(),
        },
        (false, false) => TextDocumentContentChangeEvent {
            range: Some(Range::new(at, Position::new(line + 1, 0))),
            range_length: None,
            text: String::new(),
        },
    }]
}

pub(crate) const COMMENT: &str = "# edited\n";

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
