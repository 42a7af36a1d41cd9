//! The Restate server as a child process: the pinned `restate-server` binary, started on
//! loopback ports with a generated config in a data directory, killed with its process group.
//!
//! Loopback only: every address the config names is 127.0.0.1. One thing this cannot turn off:
//! restate-server 1.7.12 asks api.github.com for its latest release once at start
//! (`check_if_latest_version` in its server/src/build_info.rs, spawned unconditionally, through
//! octocrab, which reads no proxy variables), whatever `disable-telemetry` says. Without a route
//! out it logs `octocrab: failed with error client error (Connect)` and carries on.

use std::fmt::Write as _;
use std::io::Read as _;
use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to answer its admin `/health` (it takes ~0.3 s here; a node of a
/// cluster waits for the others).
pub const HEALTH_DEADLINE: Duration = Duration::from_secs(30);

/// The variable naming the `restate-server` binary to run.
pub const SERVER_ENV: &str = "PIPEWRIGHT_RESTATE_SERVER";

/// Where `npm ci --prefix tools/restate` puts the binary, from the workspace root.
const NPM_BINARY: &str =
    "tools/restate/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server";

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(
        "no restate-server found: {SERVER_ENV} is not set, {npm} does not exist (run `npm ci --prefix tools/restate`), and none is on PATH",
        npm = .npm.display()
    )]
    NotFound { npm: PathBuf },
    #[error("cannot start {}: {source}", .binary.display())]
    Spawn {
        binary: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no free loopback port: {0}")]
    Port(std::io::Error),
    #[error("restate-server exited ({status}) before it was healthy; the end of {}:\n{tail}", .log.display())]
    Exited {
        status: String,
        log: PathBuf,
        tail: String,
    },
    #[error("restate-server did not answer {url} within {}s; the end of {}:\n{tail}", .after.as_secs(), .log.display())]
    Unhealthy {
        url: String,
        after: Duration,
        log: PathBuf,
        tail: String,
    },
}

/// Finds the `restate-server` binary: `$PIPEWRIGHT_RESTATE_SERVER`, else the npm install under
/// this workspace's `tools/restate`, else `restate-server` on PATH.
pub fn find_binary() -> Result<PathBuf, ServerError> {
    if let Some(p) = std::env::var_os(SERVER_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let npm = workspace_root().join(NPM_BINARY);
    if npm.is_file() {
        return Ok(npm);
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("restate-server"))
            .find(|p| p.is_file())
    });
    on_path.ok_or(ServerError::NotFound { npm })
}

/// The workspace this crate was built in (an installed pipewright has none: PATH is its way).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The loopback ports of one node: its message fabric (node to node), ingress and admin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ports {
    pub node: u16,
    pub ingress: u16,
    pub admin: u16,
}

impl Ports {
    /// Three ports free on 127.0.0.1 now. Another process may take one before the server binds
    /// it; [`RestateServer::start`] then tries again with new ones.
    pub fn free() -> Result<Ports, ServerError> {
        // All three listeners are open at once so the kernel gives three different ports.
        let bind = || TcpListener::bind("127.0.0.1:0").map_err(ServerError::Port);
        let (a, b, c) = (bind()?, bind()?, bind()?);
        let port = |l: &TcpListener| l.local_addr().map(|a| a.port()).map_err(ServerError::Port);
        Ok(Ports {
            node: port(&a)?,
            ingress: port(&b)?,
            admin: port(&c)?,
        })
    }
}

/// One node's configuration: where it lives and what it listens on. The config file and the
/// server's log are in `dir`, its data in `dir/data`.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub dir: PathBuf,
    pub name: String,
    pub ports: Ports,
    /// Lines added at the top level of the TOML (a cluster's settings), before any table.
    pub extra: String,
    /// Tables appended after the generated ones (`[metadata-client]` of a cluster node).
    pub extra_tables: String,
}

impl NodeConfig {
    /// A single node in `dir` on free loopback ports.
    pub fn single(dir: &Path) -> Result<NodeConfig, ServerError> {
        Ok(NodeConfig {
            dir: dir.to_path_buf(),
            name: "n1".into(),
            ports: Ports::free()?,
            extra: String::new(),
            extra_tables: String::new(),
        })
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.join("restate.toml")
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    pub fn admin_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.admin)
    }

    pub fn ingress_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.ingress)
    }

    /// The message fabric's address, which the other nodes of a cluster dial.
    pub fn node_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.node)
    }

    /// The TOML restate-server reads. `node-name` is explicit: the default is the host name,
    /// which every node of a cluster on one machine would share.
    pub fn toml(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(t, "node-name = {}", toml_str(&self.name));
        let _ = writeln!(
            t,
            "base-dir = {}",
            toml_str(&self.dir.join("data").to_string_lossy())
        );
        let _ = writeln!(t, "bind-address = \"127.0.0.1:{}\"", self.ports.node);
        let _ = writeln!(t, "advertised-address = {}", toml_str(&self.node_url()));
        t.push_str("disable-telemetry = true\n");
        t.push_str(&self.extra);
        let _ = writeln!(
            t,
            "\n[ingress]\nbind-address = \"127.0.0.1:{}\"",
            self.ports.ingress
        );
        let _ = writeln!(
            t,
            "\n[admin]\nbind-address = \"127.0.0.1:{}\"",
            self.ports.admin
        );
        // Each partition's invoker makes a directory there, left behind by a kill: in /tmp by
        // default (24 a start), in the node's own directory here.
        let _ = writeln!(
            t,
            "\n[worker.invoker]\ntmp-dir = {}",
            toml_str(&self.dir.join("tmp").to_string_lossy())
        );
        t.push_str(&self.extra_tables);
        t
    }

    /// Writes the config file (and creates `dir`).
    pub fn write(&self) -> Result<(), ServerError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ServerError::Io { path, source }
        };
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let path = self.config_path();
        std::fs::write(&path, self.toml()).map_err(io(&path))
    }
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The configs of a cluster of `n` nodes on this machine, each in `dir/nK`: one cluster name,
/// `default-replication = 2`, every node's fabric address as the metadata servers, and
/// `auto-provision` on the first node only (two nodes provisioning at once would make two
/// clusters). Each config is written.
pub fn cluster_configs(dir: &Path, n: usize) -> Result<Vec<NodeConfig>, ServerError> {
    let mut nodes = Vec::with_capacity(n);
    for k in 1..=n {
        nodes.push(NodeConfig {
            dir: dir.join(format!("n{k}")),
            name: format!("n{k}"),
            ports: Ports::free()?,
            extra: String::new(),
            extra_tables: String::new(),
        });
    }
    let addresses = nodes
        .iter()
        .map(|c| toml_str(&c.node_url()))
        .collect::<Vec<_>>()
        .join(", ");
    for (i, node) in nodes.iter_mut().enumerate() {
        node.extra = format!(
            "cluster-name = \"pipewright\"\ndefault-replication = 2\nauto-provision = {}\n",
            i == 0
        );
        node.extra_tables = format!("\n[metadata-client]\naddresses = [{addresses}]\n");
        node.write()?;
    }
    Ok(nodes)
}

/// A running restate-server. Dropping it kills it (and everything in its process group).
#[derive(Debug)]
pub struct RestateServer {
    binary: PathBuf,
    config: NodeConfig,
    child: Option<Child>,
}

impl RestateServer {
    /// A single node in `dir` (created if missing), healthy when this returns.
    pub async fn start(dir: &Path) -> Result<RestateServer, ServerError> {
        let binary = find_binary()?;
        // A port taken between choosing it and the server binding it ends the server at once;
        // new ports then.
        let mut attempt = 0;
        loop {
            attempt += 1;
            let config = NodeConfig::single(dir)?;
            config.write()?;
            let mut server = RestateServer::spawn(binary.clone(), config)?;
            match server.wait_healthy(HEALTH_DEADLINE).await {
                Err(ServerError::Exited { tail, .. })
                    if attempt < 3 && tail.contains("ddress already in use") =>
                {
                    continue;
                }
                Err(e) => return Err(e),
                Ok(()) => return Ok(server),
            }
        }
    }

    /// Starts the node `config` describes (its file already written) without waiting for it:
    /// the nodes of a cluster are started together, then waited for.
    pub fn spawn(binary: PathBuf, config: NodeConfig) -> Result<RestateServer, ServerError> {
        let mut server = RestateServer {
            binary,
            config,
            child: None,
        };
        server.launch()?;
        Ok(server)
    }

    fn launch(&mut self) -> Result<(), ServerError> {
        let log_path = self.config.log_path();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|source| ServerError::Io {
                path: log_path.clone(),
                source,
            })?;
        let log2 = log.try_clone().map_err(|source| ServerError::Io {
            path: log_path,
            source,
        })?;
        let child = Command::new(&self.binary)
            .arg("--config-file")
            .arg(self.config.config_path())
            .arg("--no-logo")
            // Its log is read by people, in a file, not a terminal.
            .env("RESTATE_LOG_DISABLE_ANSI_CODES", "true")
            .current_dir(&self.config.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2))
            // Its own group, so that kill() reaches whatever it starts and a Ctrl-C meant for
            // pipewright does not reach it.
            .process_group(0)
            .spawn()
            .map_err(|source| ServerError::Spawn {
                binary: self.binary.clone(),
                source,
            })?;
        self.child = Some(child);
        Ok(())
    }

    /// Waits until the admin API answers `/health` with 200, the server exits, or `deadline`.
    pub async fn wait_healthy(&mut self, deadline: Duration) -> Result<(), ServerError> {
        let start = Instant::now();
        let addr = format!("127.0.0.1:{}", self.config.ports.admin);
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(ServerError::Exited {
                        status: status.to_string(),
                        log: self.config.log_path(),
                        tail: self.log_tail(),
                    });
                }
            }
            if health_ok(&addr).await {
                return Ok(());
            }
            if start.elapsed() >= deadline {
                return Err(ServerError::Unhealthy {
                    url: format!("{}/health", self.config.admin_url()),
                    after: deadline,
                    log: self.config.log_path(),
                    tail: self.log_tail(),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL to the server's process group, as a crash or `kill -9` would; its data directory
    /// stays for [`RestateServer::restart`]. Does nothing when it is not running.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Ok(pid) = i32::try_from(child.id()) {
                // SAFETY: kill(2) on the process group this process created for the server;
                // no memory-safety preconditions.
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                }
            }
            // Reaped, so no zombie is left and the ports are free when this returns.
            let _ = child.wait();
        }
    }

    /// Kills the server if it runs, then starts it again on the same data directory and ports,
    /// healthy when this returns.
    pub async fn restart(&mut self) -> Result<(), ServerError> {
        self.kill();
        self.launch()?;
        self.wait_healthy(HEALTH_DEADLINE).await
    }

    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    pub fn admin_url(&self) -> String {
        self.config.admin_url()
    }

    pub fn ingress_url(&self) -> String {
        self.config.ingress_url()
    }

    /// The process id (and process group) while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The last lines of the server's log, for error messages.
    pub fn log_tail(&self) -> String {
        tail(&self.config.log_path(), 30)
    }
}

impl Drop for RestateServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether `GET /health` on `addr` answers 200. Plain HTTP/1.1 over a socket: this runs before
/// anything else of the engine is set up, and a refused connection is the usual answer.
async fn health_ok(addr: &str) -> bool {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let probe = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
        let req = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.ok()?;
        let mut buf = [0u8; 16];
        let mut n = 0;
        while n < buf.len() {
            match s.read(&mut buf[n..]).await.ok()? {
                0 => break,
                k => n += k,
            }
        }
        Some(buf[..n].starts_with(b"HTTP/1.1 200"))
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(2), probe).await,
        Ok(Some(true))
    )
}

/// The last `lines` lines of a file (empty when it cannot be read).
fn tail(path: &Path, lines: usize) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let mut buf = Vec::new();
        let _ = f.read_to_end(&mut buf);
        text = String::from_utf8_lossy(&buf).into_owned();
    }
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_node_listens_on_loopback_only() {
        let c = NodeConfig {
            dir: PathBuf::from("/tmp/x \"y\""),
            name: "n1".into(),
            ports: Ports {
                node: 1,
                ingress: 2,
                admin: 3,
            },
            extra: String::new(),
            extra_tables: String::new(),
        };
        assert_eq!(
            c.toml(),
            "node-name = \"n1\"\n\
             base-dir = \"/tmp/x \\\"y\\\"/data\"\n\
             bind-address = \"127.0.0.1:1\"\n\
             advertised-address = \"http://127.0.0.1:1\"\n\
             disable-telemetry = true\n\
             \n[ingress]\nbind-address = \"127.0.0.1:2\"\n\
             \n[admin]\nbind-address = \"127.0.0.1:3\"\n\
             \n[worker.invoker]\ntmp-dir = \"/tmp/x \\\"y\\\"/tmp\"\n"
        );
    }

    #[test]
    fn a_cluster_provisions_from_one_node_and_lists_every_node() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let nodes = cluster_configs(dir.path(), 3).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(nodes.len(), 3);
        let fabric: Vec<String> = nodes.iter().map(NodeConfig::node_url).collect();
        for (i, n) in nodes.iter().enumerate() {
            let text = std::fs::read_to_string(n.config_path()).unwrap_or_else(|e| panic!("{e}"));
            assert!(text.contains("cluster-name = \"pipewright\"\n"), "{text}");
            assert!(text.contains("default-replication = 2\n"), "{text}");
            assert!(
                text.contains(&format!("auto-provision = {}\n", i == 0)),
                "{text}"
            );
            for f in &fabric {
                assert!(text.contains(&format!("\"{f}\"")), "{text}");
            }
            assert_eq!(text.matches("127.0.0.1:").count(), 4 + 3, "{text}");
        }
    }
}
