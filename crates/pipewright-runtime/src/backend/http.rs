//! The openai backend's HTTP exchange: one POST through `reqwest` (HTTP/1.1, one request per
//! connection), plain `http://` (local model servers, tests) or `https://` through rustls with
//! a configuration of our own (the `ring` provider; the webpki-roots trust store plus an
//! optional PEM file of extra CA certificates for self-hosted endpoints). `HTTP_PROXY`,
//! `HTTPS_PROXY` and `NO_PROXY` are honoured. Responses are read up to a size cap; a body cut
//! short of its framing is an error the caller retries.

use std::path::{Path, PathBuf};
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

/// Why no request could be made: the configured URL or CA file is unusable, or the TLS or
/// HTTP client could not be set up. Trying again cannot help, unlike an [`Error`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum SetupError {
    #[error("`{0}` is not an http:// or https:// URL")]
    NotHttp(String),
    #[error("bad port in `{0}`")]
    BadPort(String),
    #[error("no host in `{0}`")]
    NoHost(String),
    #[error("cannot read ca_file {}: {reason}", path.display())]
    ReadCaFile { path: PathBuf, reason: String },
    #[error("ca_file {}: bad PEM: {reason}", path.display())]
    BadPem { path: PathBuf, reason: String },
    #[error("ca_file {}: unusable certificate: {reason}", path.display())]
    BadCertificate { path: PathBuf, reason: String },
    #[error("ca_file {}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it", .0.display())]
    NoCertificate(PathBuf),
    #[error("TLS setup failed: {0}")]
    Tls(String),
    #[error("HTTP client setup failed: {0}")]
    Client(String),
}

impl From<SetupError> for String {
    fn from(e: SetupError) -> String {
        e.to_string()
    }
}

pub(super) fn parse_url(url: &str) -> Result<Url, SetupError> {
    let (tls, rest) = if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else {
        return Err(SetupError::NotHttp(url.to_string()));
    };
    let authority = rest.find('/').map_or(rest, |i| &rest[..i]);
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .map_err(|_| SetupError::BadPort(url.to_string()))?,
        ),
        None => (authority, if tls { 443 } else { 80 }),
    };
    if host.is_empty() {
        return Err(SetupError::NoHost(url.to_string()));
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
pub(super) fn client(url: &Url, ca_file: Option<&Path>) -> Result<reqwest::Client, SetupError> {
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
        .map_err(|e| SetupError::Client(chain(&e)))
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
pub(super) fn tls_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, SetupError> {
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if let Some(path) = ca_file {
        let pem = std::fs::read(path).map_err(|e| SetupError::ReadCaFile {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| SetupError::BadPem {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
            roots.add(cert).map_err(|e| SetupError::BadCertificate {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
            added += 1;
        }
        if added == 0 {
            return Err(SetupError::NoCertificate(path.to_path_buf()));
        }
    }
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| SetupError::Tls(e.to_string()))?
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unusable_url_or_ca_file_says_which() {
        let url = |u: &str| parse_url(u).err();
        assert_eq!(
            url("ftp://x/"),
            Some(SetupError::NotHttp("ftp://x/".into()))
        );
        assert_eq!(
            url("http://x:99999/"),
            Some(SetupError::BadPort("http://x:99999/".into()))
        );
        assert_eq!(
            url("https:///v1"),
            Some(SetupError::NoHost("https:///v1".into()))
        );
        assert!(parse_url("https://h/v1").is_ok_and(|u| u.tls && u.port == 443));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let pem = dir.path().join("ca.pem");
        std::fs::write(&pem, "not a certificate\n").unwrap_or_else(|e| panic!("{e}"));
        let e = tls_config(Some(&pem)).err();
        assert_eq!(e, Some(SetupError::NoCertificate(pem.clone())));
        assert_eq!(
            e.map(String::from),
            Some(format!(
                "ca_file {}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it",
                pem.display()
            ))
        );
        assert!(matches!(
            tls_config(Some(&dir.path().join("missing.pem"))),
            Err(SetupError::ReadCaFile { .. })
        ));
    }
}
