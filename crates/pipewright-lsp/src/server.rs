//! The main loop: document state, notifications, request dispatch, publishing.

use crate::analysis::Input;
use crate::features::{self, Doc};
use crate::worker::{self, Job, Outcome};
use crate::Config;
use crossbeam_channel::{select, Receiver, Sender};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{self as notif, Notification as _};
use lsp_types::request::{self as req, Request as _};
use lsp_types::*;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub(crate) fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                ..TextDocumentSyncOptions::default()
            },
        )),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![".".into(), "{".into(), " ".into()]),
            ..CompletionOptions::default()
        }),
        document_formatting_provider: Some(OneOf::Left(true)),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        ..ServerCapabilities::default()
    }
}

pub(crate) struct Server {
    conn: Connection,
    config: Arc<Config>,
    docs: HashMap<Url, Doc>,
    /// The diagnostics last published for each document (hover explains their codes); shared
    /// with the request snapshots, which are taken at every request.
    published: HashMap<Url, Arc<Vec<lsp_types::Diagnostic>>>,
    /// Per directory, how many edits it has seen (checks started before the last are stale).
    generations: HashMap<PathBuf, Arc<AtomicU64>>,
    /// Requests being answered (a cancelled one is answered by the cancel, and its thread's
    /// answer dropped).
    in_flight: Arc<Mutex<HashSet<RequestId>>>,
    jobs: Option<Sender<Job>>,
    done: Receiver<Outcome>,
    worker: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    pub(crate) fn new(conn: Connection, config: Config) -> Server {
        let config = Arc::new(config);
        let (jobs_tx, jobs_rx) = crossbeam_channel::unbounded();
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let codes = config.clone();
        let known: Arc<dyn Fn(&str) -> bool + Send + Sync> =
            Arc::new(move |c: &str| codes.codes.iter().any(|i| i.code == c));
        let worker = worker::spawn(known, jobs_rx, done_tx);
        Server {
            conn,
            config,
            docs: HashMap::new(),
            published: HashMap::new(),
            generations: HashMap::new(),
            in_flight: Arc::default(),
            jobs: Some(jobs_tx),
            done: done_rx,
            worker: Some(worker),
        }
    }

    pub(crate) fn run(mut self) -> Result<(), String> {
        let result = self.main_loop();
        // Closing the job channel ends the check thread once its current job is done.
        self.jobs = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
        result
    }

    fn main_loop(&mut self) -> Result<(), String> {
        loop {
            select! {
                recv(self.conn.receiver) -> msg => {
                    let Ok(msg) = msg else {
                        return Err("the client closed the connection without `shutdown` and `exit`".into());
                    };
                    match msg {
                        Message::Request(r) => {
                            if self.conn.handle_shutdown(&r).map_err(|e| e.to_string())? {
                                return Ok(());
                            }
                            self.request(r);
                        }
                        // The LSP: `exit` without `shutdown` first exits with code 1.
                        Message::Notification(n) if n.method == notif::Exit::METHOD => {
                            return Err("`exit` came before `shutdown`".into());
                        }
                        Message::Notification(n) => self.notification(n),
                        Message::Response(_) => {}
                    }
                }
                recv(self.done) -> outcome => {
                    if let Ok(o) = outcome {
                        self.publish(o);
                    }
                }
            }
        }
    }

    fn send(&self, msg: Message) {
        // The client has gone when this fails; the loop ends when its receiver closes.
        let _ = self.conn.sender.send(msg);
    }

    fn notification(&mut self, n: Notification) {
        match n.method.as_str() {
            notif::Cancel::METHOD => self.cancel(n),
            notif::DidOpenTextDocument::METHOD => {
                if let Ok(p) = serde_json::from_value::<DidOpenTextDocumentParams>(n.params) {
                    let d = p.text_document;
                    let doc = Doc::new(&d.uri, d.version, d.text);
                    self.docs.insert(d.uri.clone(), doc);
                    self.schedule(&d.uri);
                }
            }
            notif::DidChangeTextDocument::METHOD => {
                if let Ok(p) = serde_json::from_value::<DidChangeTextDocumentParams>(n.params) {
                    let uri = p.text_document.uri;
                    let Some(doc) = self.docs.get_mut(&uri) else {
                        return;
                    };
                    // Incremental sync: each change applies to the text the ones before it
                    // left (a change without a range is the whole text).
                    let mut text = String::from(&*doc.text);
                    for change in p.content_changes {
                        crate::text::apply_change(&mut text, change.range, &change.text);
                    }
                    doc.text = text.into();
                    doc.version = p.text_document.version;
                    self.schedule(&uri);
                }
            }
            notif::DidSaveTextDocument::METHOD => {
                // What other directories' documents read from disk (files they reference,
                // include directories) may have changed: check every open document again.
                let dirs: Vec<Url> = self.docs.keys().cloned().collect();
                for uri in dirs {
                    self.schedule(&uri);
                }
            }
            notif::DidCloseTextDocument::METHOD => {
                if let Ok(p) = serde_json::from_value::<DidCloseTextDocumentParams>(n.params) {
                    let uri = p.text_document.uri;
                    if let Some(doc) = self.docs.remove(&uri) {
                        self.bump(&doc.dir());
                        self.publish_one(uri, Vec::new(), None);
                        // Its siblings now see the file as saved on disk.
                        if let Some(other) = self
                            .docs
                            .iter()
                            .find(|(_, d)| d.dir() == doc.dir())
                            .map(|(u, _)| u.clone())
                        {
                            self.schedule(&other);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn bump(&mut self, dir: &Path) -> (u64, Arc<AtomicU64>) {
        let counter = self
            .generations
            .entry(dir.to_path_buf())
            .or_insert_with(|| Arc::new(AtomicU64::new(0)))
            .clone();
        (counter.fetch_add(1, Ordering::SeqCst) + 1, counter)
    }

    /// Queues a check of every open document in `uri`'s directory (cross-file results there
    /// are refreshed with it), cancelling the one in flight.
    fn schedule(&mut self, uri: &Url) {
        let Some(dir) = self.docs.get(uri).map(Doc::dir) else {
            return;
        };
        let (generation, counter) = self.bump(&dir);
        let mut docs: Vec<(Url, i32, Input)> = self
            .docs
            .iter()
            .filter(|(_, d)| d.dir() == dir)
            .map(|(u, d)| {
                (
                    u.clone(),
                    d.version,
                    Input {
                        path: d.path.clone(),
                        text: d.text.clone(),
                        kept: Some(d.kept.clone()),
                    },
                )
            })
            .collect();
        docs.sort_by(|a, b| a.2.path.cmp(&b.2.path));
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job {
                dir,
                generation,
                counter,
                docs,
            });
        }
    }

    fn publish(&mut self, o: Outcome) {
        let mut diagnostics = o.diagnostics;
        for (uri, version) in o.checked {
            let Some(doc) = self.docs.get(&uri) else {
                continue;
            };
            if doc.version != version {
                // A newer text is being checked; this result would show stale positions.
                continue;
            }
            let diags = diagnostics.remove(&doc.path).unwrap_or_default();
            self.publish_one(uri, diags, Some(version));
        }
        // The project config (a broken `pipewright.toml`) is the one other file reported.
        for (path, diags) in diagnostics {
            if path
                .file_name()
                .is_some_and(|n| n == pipewright_project::FILE_NAME)
            {
                if let Ok(uri) = Url::from_file_path(&path) {
                    self.publish_one(uri, diags, None);
                }
            }
        }
    }

    fn publish_one(
        &mut self,
        uri: Url,
        diagnostics: Vec<lsp_types::Diagnostic>,
        version: Option<i32>,
    ) {
        if self.docs.contains_key(&uri) {
            self.published
                .insert(uri.clone(), Arc::new(diagnostics.clone()));
        } else {
            self.published.remove(&uri);
        }
        let params = PublishDiagnosticsParams {
            uri,
            diagnostics,
            version,
        };
        self.send(Message::Notification(Notification::new(
            notif::PublishDiagnostics::METHOD.to_string(),
            params,
        )));
    }

    /// Answers a request on a thread of its own over a snapshot of the documents, so a slow
    /// one (formatting a large file) never holds up the next message; `$/cancelRequest`
    /// answers it as cancelled if it is still running.
    fn request(&mut self, r: Request) {
        let id = r.id.clone();
        let known = [
            req::HoverRequest::METHOD,
            req::GotoDefinition::METHOD,
            req::References::METHOD,
            req::Completion::METHOD,
            req::Formatting::METHOD,
            req::CodeActionRequest::METHOD,
        ];
        if !known.contains(&r.method.as_str()) {
            self.send(Message::Response(Response::new_err(
                id,
                ErrorCode::MethodNotFound as i32,
                format!("unsupported request `{}`", r.method),
            )));
            return;
        }
        let snap = Snapshot {
            docs: self.docs.clone(),
            published: self.published.clone(),
            config: self.config.clone(),
        };
        lock(&self.in_flight).insert(id.clone());
        let in_flight = self.in_flight.clone();
        let sender = self.conn.sender.clone();
        let spawned = std::thread::Builder::new().spawn(move || {
            let response = snap.answer(r);
            if lock(&in_flight).remove(&response.id) {
                let _ = sender.send(Message::Response(response));
            }
        });
        if spawned.is_err() {
            lock(&self.in_flight).remove(&id);
            self.send(Message::Response(Response::new_err(
                id,
                ErrorCode::InternalError as i32,
                "no thread for the request".to_string(),
            )));
        }
    }

    fn cancel(&mut self, n: Notification) {
        let Ok(p) = serde_json::from_value::<CancelParams>(n.params) else {
            return;
        };
        let id = match p.id {
            NumberOrString::Number(n) => RequestId::from(n),
            NumberOrString::String(s) => RequestId::from(s),
        };
        if lock(&self.in_flight).remove(&id) {
            self.send(Message::Response(Response::new_err(
                id,
                ErrorCode::RequestCanceled as i32,
                "cancelled".to_string(),
            )));
        }
    }
}

fn lock(set: &Mutex<HashSet<RequestId>>) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
    // A request thread that panicked left the set as it was: still usable.
    set.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a request is answered from: the documents as they were when it arrived.
struct Snapshot {
    docs: HashMap<Url, Doc>,
    published: HashMap<Url, Arc<Vec<lsp_types::Diagnostic>>>,
    config: Arc<Config>,
}

impl Snapshot {
    fn answer(&self, r: Request) -> Response {
        match r.method.as_str() {
            req::HoverRequest::METHOD => self.with::<req::HoverRequest>(r, |s, p| {
                let at = &p.text_document_position_params;
                s.docs.get(&at.text_document.uri).and_then(|d| {
                    let published = s.published.get(&d.uri).map_or(&[][..], |p| p.as_slice());
                    features::hover::hover(d, at.position, &s.config, published)
                })
            }),
            req::GotoDefinition::METHOD => self.with::<req::GotoDefinition>(r, |s, p| {
                let at = &p.text_document_position_params;
                s.docs
                    .get(&at.text_document.uri)
                    .and_then(|d| features::navigate::definition(d, at.position, &s.docs))
                    .map(GotoDefinitionResponse::Array)
            }),
            req::References::METHOD => self.with::<req::References>(r, |s, p| {
                let at = &p.text_document_position;
                s.docs
                    .get(&at.text_document.uri)
                    .and_then(|d| features::navigate::references(d, at.position, &s.docs))
            }),
            req::Completion::METHOD => self.with::<req::Completion>(r, |s, p| {
                let at = &p.text_document_position;
                s.docs
                    .get(&at.text_document.uri)
                    .map(|d| features::complete::complete(d, at.position))
                    .map(CompletionResponse::Array)
            }),
            req::Formatting::METHOD => self.with::<req::Formatting>(r, |s, p| {
                s.docs
                    .get(&p.text_document.uri)
                    .and_then(features::format::format)
            }),
            _ => {
                self.with::<req::CodeActionRequest>(r, |_, p| Some(features::actions::actions(&p)))
            }
        }
    }

    fn with<R: req::Request>(
        &self,
        r: Request,
        f: impl FnOnce(&Snapshot, R::Params) -> R::Result,
    ) -> Response {
        match serde_json::from_value::<R::Params>(r.params) {
            Ok(params) => Response::new_ok(r.id, f(self, params)),
            Err(e) => Response::new_err(
                r.id,
                ErrorCode::InvalidParams as i32,
                format!("invalid parameters: {e}"),
            ),
        }
    }
}
