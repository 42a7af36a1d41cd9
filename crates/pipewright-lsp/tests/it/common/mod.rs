//! A client for protocol tests: the server runs on a thread over an in-memory connection and
//! the test speaks LSP to it, message by message.

#![allow(dead_code)]

use lsp_server::{Connection, Message, Notification, Request, RequestId};
use lsp_types::notification::{self as notif, Notification as _};
use lsp_types::*;
use std::path::Path;
use std::time::{Duration, Instant};

/// Long enough for a debug build's check on a loaded machine; a missing message fails the test.
const WAIT: Duration = Duration::from_secs(20);

pub(crate) fn config() -> pipewright_lsp::Config {
    let tables: &[&[pipewright_syntax::CodeInfo]] = &[
        pipewright_syntax::codes::GENERAL,
        pipewright_r1::CODES,
        pipewright_pipeline::codes::CODES,
        pipewright_recipe::CODES,
        pipewright_meow::CODES,
        pipewright_statemachine::CODES,
        pipewright_fmt::CODES,
    ];
    pipewright_lsp::Config {
        codes: tables.iter().flat_map(|t| t.iter().copied()).collect(),
    }
}

pub(crate) struct Client {
    conn: Connection,
    server: Option<std::thread::JoinHandle<Result<(), String>>>,
    next_id: i32,
    /// Notifications received while waiting for something else.
    pending: Vec<Notification>,
}

impl Client {
    pub(crate) fn start() -> Client {
        let (server, client) = Connection::memory();
        let handle = std::thread::spawn(move || pipewright_lsp::serve(server, config()));
        let mut c = Client {
            conn: client,
            server: Some(handle),
            next_id: 0,
            pending: Vec::new(),
        };
        let init: InitializeResult = c.request::<request::Initialize>(InitializeParams::default());
        assert!(init.capabilities.hover_provider.is_some());
        c.notify::<notif::Initialized>(InitializedParams {});
        c
    }

    pub(crate) fn notify<N: notif::Notification>(&self, params: N::Params) {
        self.conn
            .sender
            .send(Message::Notification(Notification::new(
                N::METHOD.to_string(),
                params,
            )))
            .expect("server gone");
    }

    pub(crate) fn request<R: request::Request>(&mut self, params: R::Params) -> R::Result {
        let value = self.request_raw(R::METHOD, serde_json::to_value(params).expect("params"));
        serde_json::from_value(value).expect("result shape")
    }

    /// The number of the last request sent (its id).
    pub(crate) fn last_id(&self) -> i32 {
        self.next_id
    }

    /// Sends a request without waiting for its answer.
    pub(crate) fn send_request(&mut self, method: &str, params: serde_json::Value) -> RequestId {
        self.next_id += 1;
        let id = RequestId::from(self.next_id);
        self.conn
            .sender
            .send(Message::Request(Request::new(
                id.clone(),
                method.to_string(),
                params,
            )))
            .expect("server gone");
        id
    }

    /// The responses received until `count` have come (at most [`WAIT`]), and any arriving
    /// in the 300 ms after (a duplicate answer would). Notifications are kept for later.
    pub(crate) fn responses(&mut self, count: usize) -> Vec<lsp_server::Response> {
        let mut deadline = Instant::now() + WAIT;
        let mut out = Vec::new();
        while let Ok(m) = self
            .conn
            .receiver
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            match m {
                Message::Response(r) => out.push(r),
                Message::Notification(n) => self.pending.push(n),
                Message::Request(r) => panic!("unexpected request {r:?}"),
            }
            if out.len() == count {
                deadline = Instant::now() + Duration::from_millis(300);
            }
        }
        out
    }

    pub(crate) fn request_raw(
        &mut self,
        method: &str,
        params: serde_json::Value,
    ) -> serde_json::Value {
        let id = self.send_request(method, params);
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.conn.receiver.recv_timeout(left) {
                Ok(Message::Response(r)) if r.id == id => {
                    if let Some(e) = r.error {
                        panic!("{method} failed: {} {}", e.code, e.message);
                    }
                    return r.result.unwrap_or(serde_json::Value::Null);
                }
                Ok(Message::Notification(n)) => self.pending.push(n),
                Ok(other) => panic!("unexpected message {other:?}"),
                Err(e) => panic!("no answer to {method}: {e}"),
            }
        }
    }

    pub(crate) fn open(&self, uri: &Url, version: i32, text: &str) {
        self.notify::<notif::DidOpenTextDocument>(DidOpenTextDocumentParams {
            text_document: TextDocumentItem::new(uri.clone(), "yaml".into(), version, text.into()),
        });
    }

    pub(crate) fn change(&self, uri: &Url, version: i32, text: &str) {
        self.notify::<notif::DidChangeTextDocument>(DidChangeTextDocumentParams {
            text_document: VersionedTextDocumentIdentifier::new(uri.clone(), version),
            content_changes: vec![TextDocumentContentChangeEvent {
                range: None,
                range_length: None,
                text: text.into(),
            }],
        });
    }

    /// One `didChange` of incremental edits, applied in order (each to the text the ones
    /// before it left).
    pub(crate) fn edit(&self, uri: &Url, version: i32, edits: &[(Range, &str)]) {
        self.notify::<notif::DidChangeTextDocument>(DidChangeTextDocumentParams {
            text_document: VersionedTextDocumentIdentifier::new(uri.clone(), version),
            content_changes: edits
                .iter()
                .map(|(range, text)| TextDocumentContentChangeEvent {
                    range: Some(*range),
                    range_length: None,
                    text: (*text).into(),
                })
                .collect(),
        });
    }

    pub(crate) fn close(&self, uri: &Url) {
        self.notify::<notif::DidCloseTextDocument>(DidCloseTextDocumentParams {
            text_document: TextDocumentIdentifier::new(uri.clone()),
        });
    }

    /// The next diagnostics published for `uri` (earlier ones for it are skipped when
    /// `version` is given and they carry another).
    pub(crate) fn diagnostics(
        &mut self,
        uri: &Url,
        version: Option<i32>,
    ) -> PublishDiagnosticsParams {
        let wanted = |p: &PublishDiagnosticsParams| {
            p.uri == *uri && (version.is_none() || p.version == version)
        };
        while let Some(i) = self.pending.iter().position(|n| {
            n.method == notif::PublishDiagnostics::METHOD
                && serde_json::from_value::<PublishDiagnosticsParams>(n.params.clone())
                    .is_ok_and(|p| p.uri == *uri)
        }) {
            let n = self.pending.remove(i);
            let p: PublishDiagnosticsParams = serde_json::from_value(n.params).expect("params");
            if wanted(&p) {
                return p;
            }
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.conn.receiver.recv_timeout(left) {
                Ok(Message::Notification(n)) if n.method == notif::PublishDiagnostics::METHOD => {
                    let p: PublishDiagnosticsParams =
                        serde_json::from_value(n.params).expect("params");
                    if wanted(&p) {
                        return p;
                    }
                    if p.uri != *uri {
                        self.pending.push(Notification::new(
                            notif::PublishDiagnostics::METHOD.into(),
                            p,
                        ));
                    }
                }
                Ok(Message::Notification(n)) => self.pending.push(n),
                Ok(other) => panic!("unexpected message {other:?}"),
                Err(e) => panic!("no diagnostics for {uri}: {e}"),
            }
        }
    }

    /// Every publish received within `window`, in order.
    pub(crate) fn publishes_within(&mut self, window: Duration) -> Vec<PublishDiagnosticsParams> {
        let mut out: Vec<PublishDiagnosticsParams> = self
            .pending
            .drain(..)
            .filter(|n| n.method == notif::PublishDiagnostics::METHOD)
            .filter_map(|n| serde_json::from_value(n.params).ok())
            .collect();
        let deadline = Instant::now() + window;
        while let Ok(m) = self
            .conn
            .receiver
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            if let Message::Notification(n) = m {
                if n.method == notif::PublishDiagnostics::METHOD {
                    out.extend(serde_json::from_value(n.params).ok());
                }
            }
        }
        out
    }

    pub(crate) fn shutdown(mut self) {
        let _: () = self.request::<request::Shutdown>(());
        self.notify::<notif::Exit>(());
        let result = self
            .server
            .take()
            .expect("server")
            .join()
            .expect("server thread");
        assert_eq!(result, Ok(()));
    }
}

pub(crate) fn uri(path: &Path) -> Url {
    Url::from_file_path(path).expect("absolute path")
}

pub(crate) fn at(line: u32, character: u32, uri: &Url) -> TextDocumentPositionParams {
    TextDocumentPositionParams::new(
        TextDocumentIdentifier::new(uri.clone()),
        Position::new(line, character),
    )
}

/// The repository's testdata directory.
pub(crate) fn testdata(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(rel)
}

pub(crate) fn codes(p: &PublishDiagnosticsParams) -> Vec<String> {
    p.diagnostics
        .iter()
        .map(|d| match &d.code {
            Some(NumberOrString::String(s)) => s.clone(),
            _ => String::new(),
        })
        .collect()
}
