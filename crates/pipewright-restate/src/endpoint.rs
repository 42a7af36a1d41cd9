//! Serves a restate-sdk [`Endpoint`] from our own accept loop: HTTP/2 cleartext (h2c, what
//! Restate speaks to a deployment) with TCP_NODELAY on every connection.
//!
//! Why not the SDK's `HttpServer`: it never sets TCP_NODELAY, so each journal message waits out
//! Nagle's algorithm against the server's delayed ACK (~40 ms per awaited step on Linux).

use hyper::server::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::graceful::GracefulShutdown;
use restate_sdk::endpoint::Endpoint;
use restate_sdk::hyper::HyperEndpoint;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// An endpoint being served. Dropping it stops accepting and aborts the connections (as
/// [`Serving::abort`]); [`Serving::shutdown`] lets running handlers finish first.
#[derive(Debug)]
pub struct Serving {
    addr: SocketAddr,
    stop: watch::Sender<Stop>,
    task: Option<JoinHandle<()>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Running,
    /// Stop accepting, tell clients (GOAWAY), wait for open requests up to the duration.
    Graceful(Duration),
    /// Stop now: every connection and the handler it drives is dropped.
    Abort,
}

/// Serves `endpoint` on `listener` (bind it to 127.0.0.1:0 for a free port) from a task of the
/// current tokio runtime.
pub fn serve(endpoint: Endpoint, listener: TcpListener) -> std::io::Result<Serving> {
    let addr = listener.local_addr()?;
    let (stop, stopped) = watch::channel(Stop::Running);
    let task = tokio::spawn(accept_loop(HyperEndpoint::new(endpoint), listener, stopped));
    Ok(Serving {
        addr,
        stop,
        task: Some(task),
    })
}

/// [`serve`] on `addr` (its port reused at once after a previous worker died: tokio's bind sets
/// SO_REUSEADDR).
pub async fn bind_and_serve(endpoint: Endpoint, addr: SocketAddr) -> std::io::Result<Serving> {
    serve(endpoint, TcpListener::bind(addr).await?)
}

impl Serving {
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URI to register with the admin API: `http://ADDR`.
    pub fn uri(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, asks the server to stop sending requests on open connections, and waits
    /// up to `grace` for the handlers running to finish; what still runs then is dropped (and
    /// Restate retries it on another worker or later).
    pub async fn shutdown(mut self, grace: Duration) {
        let _ = self.stop.send(Stop::Graceful(grace));
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// Stops now: the listener closes and every connection, with the handler it drives, is
    /// dropped (the closest an in-process worker gets to dying).
    pub async fn abort(mut self) {
        let _ = self.stop.send(Stop::Abort);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.stop.send(Stop::Abort);
    }
}

async fn accept_loop(
    endpoint: HyperEndpoint,
    listener: TcpListener,
    mut stop: watch::Receiver<Stop>,
) {
    let graceful = GracefulShutdown::new();
    let mut connections = tokio::task::JoinSet::new();
    let how = loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _peer)) = accepted else {
                    // Out of file descriptors and the like: wait instead of spinning on it.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                // Best effort: a socket that refuses it still works, only slower.
                let _ = stream.set_nodelay(true);
                let conn = http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), endpoint.clone());
                let conn = graceful.watch(conn);
                connections.spawn(async move {
                    // A connection the server closed or reset is its business; it retries.
                    let _ = conn.await;
                });
                // Finished connections are reaped as we go.
                while connections.try_join_next().is_some() {}
            }
            changed = stop.changed() => {
                // The sender gone means the Serving was dropped: abort.
                let how = if changed.is_ok() { *stop.borrow() } else { Stop::Abort };
                if how != Stop::Running {
                    break how;
                }
            }
        }
    };
    drop(listener);
    match how {
        Stop::Graceful(grace) => {
            let _ = tokio::time::timeout(grace, graceful.shutdown()).await;
            connections.shutdown().await;
        }
        Stop::Abort | Stop::Running => {
            drop(graceful);
            connections.shutdown().await;
        }
    }
}
