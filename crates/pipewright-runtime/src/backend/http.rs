//! The openai backend's HTTP exchange: one POST through `reqwest` (HTTP/1.1, one request per
//! connection), plain `http://` (local model servers, tests) or `https://` through rustls with
//! a configuration of our own (the `ring` provider; the webpki-roots trust store plus an
//! optional PEM file of extra CA certificates for self-hosted endpoints). `HTTP_PROXY`,
//! `HTTPS_PROXY` and `NO_PROXY` are honoured. Responses are read up to a size cap; a body cut
//! short of its framing is an error the caller retries.

use std::path::Path;
use std::sync::Arc;
use tokio_rustls::rustls::{
    self,
    pki_types::{pem::PemObject, CertificateDer},
    ClientConfig, RootCertStore,
};

const MAX_RESPONSE: usize = 32 * 1024 * 1024;

pub(super) struct Url {
    /// `https://`: the exchange goes through TLS.
    pub tls: bool,
    pub host: String,
    pub port: u16,
}

pub(super) fn parse_url(url: &str) -> Result<Url, String> {
    let (tls, rest) = if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else {
        return Err(format!("`{url}` is not an http:// or https:// URL"));
    };
    let authority = rest.find('/').map_or(rest, |i| &rest[..i]);
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("bad port in `{url}`"))?,
        ),
        None => (authority, if tls { 443 } else { 80 }),
    };
    if host.is_empty() {
        return Err(format!("no host in `{url}`"));
    }
    Ok(Url {
        tls,
        host: host.to_string(),
        port,
    })
}

/// A failed exchange. `retryable` is false when trying again cannot help (a certificate the
/// trust store rejects, a TLS protocol mismatch), so the caller fails fast instead of backing
/// off for a minute.
#[derive(Debug)]
pub(super) struct Error {
    pub message: String,
    pub retryable: bool,
}

impl Error {
    fn transient(message: String) -> Error {
        Error {
            message,
            retryable: true,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The client for one call to `url`. The TLS configuration is always ours, for http too, so
/// reqwest never looks for a process-wide rustls provider; only https reads `ca_file`.
pub(super) fn client(url: &Url, ca_file: Option<&Path>) -> Result<reqwest::Client, String> {
    let tls = tls_config(if url.tls { ca_file } else { None })?;
    let mut builder = reqwest::Client::builder();
    // A model server on this machine is never behind the proxy a shell exports for the
    // outside world (Go's net/http makes the same exception).
    if is_loopback(&url.host) {
        builder = builder.no_proxy();
    }
    builder
        .use_preconfigured_tls(ClientConfig::clone(&tls))
        .http1_only()
        // Header names as servers and logs usually spell them (`Authorization`, not
        // `authorization`); some self-hosted gateways compare them case-sensitively.
        .http1_title_case_headers()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| format!("HTTP client setup failed: {}", chain(&e)))
}

fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The client TLS configuration: the webpki-roots (Mozilla) trust anchors, plus every
/// certificate in `ca_file` (PEM) so an endpoint behind a private CA can be trusted without
/// touching the system store. The provider is named explicitly (ring) rather than taken from
/// the process default, so another crate enabling aws-lc-rs cannot make this ambiguous.
pub(super) fn tls_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if let Some(path) = ca_file {
        let pem = std::fs::read(path)
            .map_err(|e| format!("cannot read ca_file {}: {e}", path.display()))?;
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| format!("ca_file {}: bad PEM: {e}", path.display()))?;
            roots
                .add(cert)
                .map_err(|e| format!("ca_file {}: unusable certificate: {e}", path.display()))?;
            added += 1;
        }
        if added == 0 {
            return Err(format!(
                "ca_file {}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it",
                path.display()
            ));
        }
    }
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS setup failed: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
    Ok(Arc::new(config))
}

pub(super) struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One POST of a JSON body. The caller bounds the whole exchange (connect, handshake, read)
/// with a timeout.
pub(super) async fn post_json(
    client: &reqwest::Client,
    url: &Url,
    full_url: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Response, Error> {
    let mut req = client
        .post(full_url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .header("Connection", "close")
        .body(body.to_vec());
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let mut resp = req.send().await.map_err(|e| send_error(url, &e))?;
    let status = resp.status().as_u16();
    let headers: Vec<(String, String)> = resp
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let announced = resp.content_length();
    let mut data = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if data.len() + chunk.len() > MAX_RESPONSE {
                    return Err(Error::transient(format!(
                        "the response is larger than {MAX_RESPONSE} bytes"
                    )));
                }
                data.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            // A peer that closes early (a crash, a reset proxy, a TLS stream cut without
            // close_notify) leaves a prefix that is not the reply: retried as a transport error.
            Err(e) => {
                return Err(Error::transient(match announced {
                    Some(n) => format!(
                        "the connection closed after {} of the {n} body bytes the response announced ({})",
                        data.len(),
                        chain(&e)
                    ),
                    None => format!("receive failed: {}", chain(&e)),
                }))
            }
        }
    }
    Ok(Response {
        status,
        headers,
        body: data,
    })
}

/// An error with its causes (`error sending request: … : connection refused`): reqwest's own
/// text alone rarely says what went wrong.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !text.contains(&t) {
            text.push_str(": ");
            text.push_str(&t);
        }
        cur = c.source();
    }
    text
}

/// Whether a rustls error is among the causes. `io::Error::source` skips the error it wraps,
/// so the wrapped one is looked at too.
fn has_tls_error(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        if c.downcast_ref::<rustls::Error>().is_some() {
            return true;
        }
        if let Some(inner) = c
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            if has_tls_error(inner) {
                return true;
            }
        }
        cur = c.source();
    }
    false
}

fn send_error(url: &Url, e: &reqwest::Error) -> Error {
    // A rustls error (bad certificate, protocol mismatch) will fail the same way next time;
    // plain I/O errors (reset, refused) may not.
    if has_tls_error(e) {
        let mut message = format!(
            "TLS handshake with {}:{} failed: {}",
            url.host,
            url.port,
            chain(e)
        );
        if message.contains("certificate") {
            message.push_str(
                " (for a self-hosted endpoint with a private CA, set `ca_file` under [backend.openai] in pipewright.toml)",
            );
        }
        return Error {
            message,
            retryable: false,
        };
    }
    if e.is_connect() {
        return Error::transient(format!(
            "cannot connect to {}:{}: {}",
            url.host,
            url.port,
            chain(e)
        ));
    }
    Error::transient(format!("the exchange failed: {}", chain(e)))
}
