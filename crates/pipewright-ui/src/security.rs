//! Who may talk to the server (docs/ui.md, "Security"): the token (header or cookie), the Host
//! header (DNS rebinding), the Origin of a POST (cross-site requests), and POST bodies (JSON,
//! at most 64 KiB).

use crate::App;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::sync::Arc;

pub(crate) const MAX_BODY: usize = 64 * 1024;
pub(crate) const COOKIE: &str = "pw_token";

pub(crate) fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({"error": message}))).into_response()
}

/// A random token: 32 bytes from the kernel, in hex.
pub(crate) fn new_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares without an early exit, so the time taken says nothing of where a guess went wrong.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The Host values a request may carry: the listen address, and for a loopback bind the
/// names of loopback. A bind to every interface (`0.0.0.0`) names no host: any is taken,
/// and the token (always in force there) guards it.
pub(crate) fn host_allowed(host: &str, local: SocketAddr) -> bool {
    if local.ip().is_unspecified() {
        return true;
    }
    let port = local.port();
    let host = host.to_ascii_lowercase();
    if host == local.to_string() {
        return true;
    }
    local.ip().is_loopback()
        && ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .any(|name| host == format!("{name}:{port}"))
}

fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

/// `?token=T` with the rest of the query, for the redirect that drops it.
fn query_token(query: Option<&str>) -> Option<(String, String)> {
    let query = query?;
    let mut token = None;
    let mut rest = Vec::new();
    for pair in query.split('&') {
        match pair.strip_prefix("token=") {
            Some(t) => token = Some(t.to_string()),
            None if !pair.is_empty() => rest.push(pair),
            None => {}
        }
    }
    Some((token?, rest.join("&")))
}

pub(crate) async fn guard(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !host_allowed(host, app.local) {
        return error(
            StatusCode::MISDIRECTED_REQUEST,
            "this server answers only requests addressed to the host it listens on",
        );
    }
    if let Some(token) = &app.token {
        // Opening the printed URL: the token moves into a cookie and out of the address bar.
        if req.method() == Method::GET {
            if let Some((given, rest)) = query_token(req.uri().query()) {
                if !same(&given, token) {
                    return error(StatusCode::UNAUTHORIZED, "wrong token");
                }
                let path = req.uri().path();
                let to = if rest.is_empty() {
                    path.to_string()
                } else {
                    format!("{path}?{rest}")
                };
                let cookie = format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
                let mut r = Response::new(Body::empty());
                *r.status_mut() = StatusCode::SEE_OTHER;
                if let (Ok(loc), Ok(c)) =
                    (HeaderValue::from_str(&to), HeaderValue::from_str(&cookie))
                {
                    r.headers_mut().insert(header::LOCATION, loc);
                    r.headers_mut().insert(header::SET_COOKIE, c);
                }
                return r;
            }
        }
        let given = bearer(headers)
            .map(str::to_string)
            .or_else(|| cookie_token(headers));
        match given {
            Some(g) if same(&g, token) => {}
            Some(_) => return error(StatusCode::UNAUTHORIZED, "wrong token"),
            None => {
                return error(
                    StatusCode::UNAUTHORIZED,
                    "this server needs its token: open the URL `pipewright ui` printed, or send `Authorization: Bearer TOKEN`",
                )
            }
        }
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        match headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
            Some(origin) => {
                if origin != format!("http://{host}") {
                    return error(StatusCode::FORBIDDEN, "cross-origin request refused");
                }
            }
            // No Origin: not a browser's request. With a token in force only a script that
            // sends it as a header may act (a cookie alone could be a browser's).
            None => {
                if app.token.is_some() && bearer(headers).is_none() {
                    return error(StatusCode::FORBIDDEN, "cross-origin request refused");
                }
            }
        }
        let json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|c| c.to_str().ok())
            .and_then(|c| c.split(';').next())
            .is_some_and(|c| c.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "the body must be JSON (Content-Type: application/json)",
            );
        }
        let too_long = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|l| l.to_str().ok())
            .and_then(|l| l.parse::<usize>().ok())
            .is_some_and(|n| n > MAX_BODY);
        if too_long {
            return error(StatusCode::PAYLOAD_TOO_LARGE, "the body is over 64 KiB");
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_of_a_loopback_bind() {
        let local: SocketAddr = "127.0.0.1:4610".parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(host_allowed("127.0.0.1:4610", local));
        assert!(host_allowed("localhost:4610", local));
        assert!(host_allowed("LOCALHOST:4610", local));
        assert!(host_allowed("[::1]:4610", local));
        assert!(!host_allowed("localhost:4611", local));
        assert!(!host_allowed("evil.example:4610", local));
        assert!(!host_allowed("", local));
        let other: SocketAddr = "192.0.2.7:80".parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(host_allowed("192.0.2.7:80", other));
        assert!(!host_allowed("localhost:80", other));
        let any: SocketAddr = "0.0.0.0:80".parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(host_allowed("whatever:80", any));
    }

    #[test]
    fn tokens_from_queries_and_cookies() {
        assert_eq!(
            query_token(Some("token=abc&x=1")),
            Some(("abc".into(), "x=1".into()))
        );
        assert_eq!(query_token(Some("x=1")), None);
        assert_eq!(query_token(None), None);
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; pw_token=xyz; b=2"),
        );
        assert_eq!(cookie_token(&h).as_deref(), Some("xyz"));
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
        let t = new_token().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.len(), 64);
        assert_ne!(t, new_token().unwrap_or_else(|e| panic!("{e}")));
    }
}
