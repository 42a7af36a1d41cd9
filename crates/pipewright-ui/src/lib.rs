//! `pipewright ui`: a project's run store served to a browser (docs/ui.md). The JSON API and
//! its server-sent event streams (`api`, `streams`), what they compute from the store (`rows`,
//! `reduce`, `graphs`, `db`), who may call them (`security`), the store's change notifications
//! (`watch`) and the web app's built files, embedded (`assets`). Decisions and cancels run the
//! code `pipewright approve|deny|cancel` runs (`pipewright_registry::decide_local`,
//! `pipewright_runtime::stop::cancel_local`). On a run engine (`engine`), the same reads are
//! served from a mirror of the engine's runs (`mirror`), and decisions and cancels go to the
//! engine.

mod api;
mod assets;
mod db;
mod engine;
mod graphs;
mod mirror;
mod reduce;
mod rows;
mod security;
mod streams;
mod watch;

pub use engine::{Engine, EngineRun, Listed, Refusal};
use pipewright_runtime::store::SqliteStore;
use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What `pipewright ui` serves, and where.
#[derive(Debug, Clone)]
pub struct Options {
    pub listen: SocketAddr,
    /// Required of every request when set. A non-loopback address without one gets a random
    /// one ([`Server::bind`]).
    pub token: Option<String>,
    /// The run store (it may not exist yet).
    pub store: PathBuf,
    /// Where live runs keep their directories (a MEOW run's orchestrator socket).
    pub runs_dir: PathBuf,
    /// Where a run's file, as given to `pipewright run`, is looked up.
    pub project_root: PathBuf,
    /// Serve this engine's runs instead of `store`'s (`runs_dir` is then unused).
    pub engine: Option<Arc<dyn Engine>>,
}

/// What every request handler shares.
pub(crate) struct App {
    pub local: SocketAddr,
    pub token: Option<String>,
    pub store_path: PathBuf,
    pub runs_dir: PathBuf,
    pub graphs: graphs::Graphs,
    /// Opened once the store exists (the UI never creates one).
    store: Mutex<Option<Arc<SqliteStore>>>,
    /// Bumped whenever the store may have changed.
    pub changes: tokio::sync::watch::Receiver<u64>,
    /// The runs list as of a change count, shared by every request and stream.
    runs_cache: Mutex<Option<(u64, RunsList)>>,
    /// What the last list computed of each run.
    rows_cache: Mutex<rows::RowsCache>,
    /// One decision at a time per run, so two browsers deciding at once get one answer each in
    /// turn (the second finds nothing waiting any more).
    deciding: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// Set when the server serves a run engine (the store is then its mirror).
    pub engine: Option<Arc<engine::EngineSide>>,
}

impl App {
    pub(crate) fn store(&self) -> Result<Option<Arc<SqliteStore>>, String> {
        let mut s = self.store.lock().unwrap_or_else(|p| p.into_inner());
        if s.is_none() && self.store_path.exists() {
            *s = Some(Arc::new(SqliteStore::open(&self.store_path)?));
        }
        Ok(s.clone())
    }

    pub(crate) fn db(&self) -> Result<Option<db::Db>, String> {
        db::Db::open(&self.store_path)
    }

    /// Every run's row, computed once per store change.
    pub(crate) fn runs(&self) -> Result<RunsList, String> {
        let generation = *self.changes.borrow();
        {
            let cache = self.runs_cache.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((g, list)) = cache.as_ref() {
                if *g == generation {
                    return Ok(list.clone());
                }
            }
        }
        let rows = Arc::new(match self.db()? {
            None => Vec::new(),
            Some(db) => rows::all(
                &db,
                self.store()?.as_deref(),
                &self.graphs,
                self.live(),
                &mut self.rows_cache.lock().unwrap_or_else(|p| p.into_inner()),
            )?,
        });
        let mut all = rows::document(&rows, None);
        engine::annotate_text(self, &mut all);
        let all = Arc::from(all);
        let list = RunsList { rows, all };
        *self.runs_cache.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((generation, list.clone()));
        Ok(list)
    }

    /// Where what a live run waits for inside it is asked.
    pub(crate) fn live(&self) -> rows::Live<'_> {
        match &self.engine {
            Some(side) => rows::Live::Engine(side),
            None => rows::Live::Here(&self.runs_dir),
        }
    }

    pub(crate) fn decision_lock(&self, run_id: &str) -> Arc<Mutex<()>> {
        self.deciding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(run_id.to_string())
            .or_default()
            .clone()
    }
}

/// The token a server listening on `listen` requires: the given one, else a generated one
/// for any address but loopback (none for loopback).
fn token_in_force(listen: SocketAddr, given: Option<String>) -> std::io::Result<Option<String>> {
    match given {
        Some(t) => Ok(Some(t)),
        None if listen.ip().is_loopback() => Ok(None),
        None => security::new_token().map(Some),
    }
}

/// The runs list, and its unfiltered document (`{"runs": […]}`) as sent.
#[derive(Clone)]
pub(crate) struct RunsList {
    pub rows: Arc<Vec<Arc<rows::ListedRow>>>,
    pub all: Arc<str>,
}

/// A bound server, not serving yet.
pub struct Server {
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    changes: Changes,
    /// Ends the store's watcher, the mirror's refreshes and the open streams.
    stop: (
        tokio::sync::watch::Sender<bool>,
        tokio::sync::watch::Receiver<bool>,
    ),
}

/// Where the server hears that its runs changed.
enum Changes {
    /// The local store's watcher, started as the server is bound.
    Store(watch::Watcher),
    /// The engine's mirror, the directory that holds it (removed with the server), and the
    /// change counter its refreshes bump once the server runs.
    Mirror(
        Box<(
            mirror::Mirror,
            tempfile::TempDir,
            tokio::sync::watch::Sender<u64>,
        )>,
    ),
}

impl Server {
    /// Binds the address. A non-loopback address without a token gets a generated one.
    ///
    /// A local store's runs list is computed before this returns (each run's file lowered,
    /// every run read: about 0.2 s for 10,000 runs), so the address, once printed, serves the
    /// runs page at once rather than make its first load wait for that. The store's watcher
    /// starts first, so a change made meanwhile is not missed. (Not for a store yet to be
    /// made: there is nothing to compute. Not for an engine's mirror: its first refresh,
    /// once the server runs, fills it.)
    pub async fn bind(mut opts: Options) -> std::io::Result<Server> {
        opts.token = token_in_force(opts.listen, opts.token)?;
        let listener = tokio::net::TcpListener::bind(opts.listen).await?;
        let local = listener.local_addr()?;
        let (tx, rx) = tokio::sync::watch::channel(0u64);
        let (mut store_path, mut runs_dir) = (opts.store, opts.runs_dir);
        let mirror = match &opts.engine {
            Some(_) => {
                let dir = tempfile::Builder::new()
                    .prefix("pipewright-ui-mirror")
                    .tempdir()?;
                store_path = dir.path().join("runs.db");
                // Never created: a run on the engine has no directory on this host.
                runs_dir = dir.path().join("runs");
                let m = mirror::Mirror::create(&store_path).map_err(std::io::Error::other)?;
                Some((m, dir))
            }
            None => None,
        };
        let app = Arc::new(App {
            local,
            token: opts.token,
            store_path,
            runs_dir,
            graphs: graphs::Graphs::new(opts.project_root),
            store: Mutex::new(None),
            changes: rx,
            runs_cache: Mutex::new(None),
            rows_cache: Mutex::default(),
            deciding: Mutex::default(),
            engine: opts.engine.map(|e| Arc::new(engine::EngineSide::new(e))),
        });
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let changes = match mirror {
            Some((m, dir)) => Changes::Mirror(Box::new((m, dir, tx))),
            None => {
                let watcher = watch::start(&app.store_path, tx, stop_rx.clone());
                if app.store_path.exists() {
                    let warm = app.clone();
                    // An error here is the first request's to report.
                    let _ = tokio::task::spawn_blocking(move || warm.runs().map(drop)).await;
                }
                Changes::Store(watcher)
            }
        };
        Ok(Server {
            listener,
            app,
            changes,
            stop: (stop_tx, stop_rx),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.app.local
    }

    /// The engine served, when it is one.
    pub fn engine(&self) -> Option<Arc<dyn Engine>> {
        self.app.engine.as_ref().map(|s| s.engine.clone())
    }

    pub fn token(&self) -> Option<&str> {
        self.app.token.as_deref()
    }

    /// The address to open: `http://HOST:PORT/`, with `?token=T` when a token is in force.
    pub fn url(&self) -> String {
        let local = self.app.local;
        let host = if local.ip().is_unspecified() {
            SocketAddr::new([127, 0, 0, 1].into(), local.port()).to_string()
        } else {
            local.to_string()
        };
        match &self.app.token {
            Some(t) => format!("http://{host}/?token={t}"),
            None => format!("http://{host}/"),
        }
    }

    /// Serves until `shutdown` completes; open event streams end then too.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let (stop_tx, stop_rx) = self.stop;
        // Held while serving: the watcher's notifications, the mirror's directory.
        let _held = match self.changes {
            Changes::Mirror(parts) => {
                let (m, dir, tx) = *parts;
                // (A mirror is made only for an engine.)
                if let Some(side) = &self.app.engine {
                    mirror::start(m, side.clone(), tx, stop_rx.clone());
                }
                (None, Some(dir))
            }
            Changes::Store(w) => (Some(w), None),
        };
        let router = api::router(self.app.clone(), stop_rx);
        let served = axum::serve(self.listener, router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                let _ = stop_tx.send(true);
            })
            .await;
        served
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_server_has_its_stores_runs_list_before_it_serves() {
        use pipewright_runtime::store::{NewRun, Store};
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("runs.db");
        let st = SqliteStore::open(&path).unwrap_or_else(|e| panic!("{e}"));
        st.create_run(&NewRun {
            run_id: "ab12".into(),
            file: "f.yaml".into(),
            workflow: "p".into(),
            source_hash: String::new(),
            input: serde_json::json!({}),
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let bind = |store: PathBuf| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap_or_else(|e| panic!("{e}"));
            let server = rt
                .block_on(Server::bind(Options {
                    listen: ([127, 0, 0, 1], 0).into(),
                    token: None,
                    store,
                    runs_dir: dir.path().join("runs"),
                    project_root: dir.path().to_path_buf(),
                    engine: None,
                }))
                .unwrap_or_else(|e| panic!("{e}"));
            let cached = server
                .app
                .runs_cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map(|(_, list)| list.rows.len());
            drop(server);
            cached
        };
        assert_eq!(bind(path), Some(1), "the list is computed as it binds");
        assert_eq!(
            bind(dir.path().join("none.db")),
            None,
            "nothing to compute for a store yet to be made"
        );
    }

    #[test]
    fn any_address_but_loopback_gets_a_token() {
        let at = |a: &str| a.parse::<SocketAddr>().unwrap_or_else(|e| panic!("{e}"));
        let t = |a: &str, g: Option<&str>| {
            token_in_force(at(a), g.map(str::to_string)).unwrap_or_else(|e| panic!("{e}"))
        };
        assert_eq!(t("127.0.0.1:0", None), None);
        assert_eq!(t("[::1]:0", None), None);
        assert_eq!(t("127.0.0.1:0", Some("x")), Some("x".into()));
        assert_eq!(t("0.0.0.0:4610", Some("x")), Some("x".into()));
        for exposed in ["0.0.0.0:4610", "192.0.2.1:80", "[::]:80"] {
            let token = t(exposed, None).unwrap_or_default();
            assert_eq!(token.len(), 64, "{exposed}");
            assert!(token.chars().all(|c| c.is_ascii_hexdigit()));
        }
    }
}
