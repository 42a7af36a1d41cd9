//! The balancers the engine tests put in front of several workers, or of a cluster's
//! ingresses, on loopback.

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// A TCP balancer: each connection goes to the first backend, in turn, that accepts it
/// (enough in front of a cluster's ingresses, which any node answers).
pub(crate) async fn per_connection(listener: TcpListener, backends: Vec<u16>) {
    let mut next = 0usize;
    loop {
        let Ok((mut inbound, _)) = listener.accept().await else {
            continue;
        };
        let _ = inbound.set_nodelay(true);
        let order: Vec<u16> = (0..backends.len())
            .map(|k| backends[(next + k) % backends.len()])
            .collect();
        next += 1;
        tokio::spawn(async move {
            for port in order {
                if let Ok(mut out) = TcpStream::connect(("127.0.0.1", port)).await {
                    let _ = out.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                    return;
                }
            }
        });
    }
}

/// An HTTP/2 balancer, as Envoy or nginx's `grpc_pass` would be in front of several workers,
/// with a route for each handler (`/invoke/Service/handler`): each request (one attempt of one
/// invocation) goes to the next backend in turn on its route, so the invocations of each kind
/// (a run's pass, its members) alternate over the workers, whatever connections Restate keeps
/// open. A TCP balancer would not spread them: Restate sends many invocations over one
/// connection. A backend found down, by a health check every 50 ms or by refusing a
/// connection (a killed worker), is passed over until the check finds it up; a request it
/// refused is answered 502, which Restate retries.
pub(crate) async fn per_request(listener: TcpListener, backends: Vec<u16>) {
    let balancer = Arc::new(Balancer {
        client: Client::builder(TokioExecutor::new())
            .http2_only(true)
            .build_http(),
        down: backends.iter().map(|_| AtomicBool::new(false)).collect(),
        turns: Mutex::new(HashMap::new()),
        backends,
    });
    let checked = balancer.clone();
    tokio::spawn(async move {
        loop {
            for (b, port) in checked.backends.iter().enumerate() {
                let up = TcpStream::connect(("127.0.0.1", *port)).await.is_ok();
                checked.down[b].store(!up, Relaxed);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    loop {
        let Ok((inbound, _)) = listener.accept().await else {
            continue;
        };
        let _ = inbound.set_nodelay(true);
        let balancer = balancer.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let balancer = balancer.clone();
                async move { Ok::<_, std::convert::Infallible>(balancer.forward(request).await) }
            });
            let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(inbound), service)
                .await;
        });
    }
}

struct Balancer {
    client: Client<HttpConnector, Incoming>,
    backends: Vec<u16>,
    down: Vec<AtomicBool>,
    /// Each route's turn: the backend its next request goes to, if that one is up.
    turns: Mutex<HashMap<String, usize>>,
}

impl Balancer {
    /// The backend whose turn it is on `route`, or the next one up after it (the one whose
    /// turn it is, if none is up).
    fn pick(&self, route: &str) -> usize {
        let n = self.backends.len();
        let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        let turn = turns.entry(route.to_string()).or_insert(0);
        let b = (0..n)
            .map(|k| (*turn + k) % n)
            .find(|&b| !self.down[b].load(Relaxed))
            .unwrap_or(*turn % n);
        *turn = b + 1;
        b
    }

    async fn forward(
        &self,
        mut request: hyper::Request<Incoming>,
    ) -> hyper::Response<BoxBody<Bytes, hyper::Error>> {
        let b = self.pick(request.uri().path());
        let path = request
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string();
        if let Ok(uri) = format!("http://127.0.0.1:{}{path}", self.backends[b]).parse() {
            *request.uri_mut() = uri;
        }
        match self.client.request(request).await {
            Ok(response) => response.map(BodyExt::boxed),
            Err(err) => {
                if err.is_connect() {
                    self.down[b].store(true, Relaxed);
                }
                let mut response =
                    hyper::Response::new(Empty::new().map_err(|never| match never {}).boxed());
                *response.status_mut() = hyper::StatusCode::BAD_GATEWAY;
                response
            }
        }
    }
}
