//! A minimal HTTP/1.1 client (one request per connection, `Connection: close`) over tokio,
//! enough for an OpenAI-compatible endpoint: plain `http://` (local model servers, tests) or
//! `https://` through rustls (the `ring` provider; the webpki-roots trust store plus an
//! optional PEM file of extra CA certificates for self-hosted endpoints). Responses are read up
//! to a size cap, with `Content-Length`, chunked, or close-delimited bodies.

use std::path::Path;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_rustls::rustls::{
    self,
    pki_types::{pem::PemObject, CertificateDer, ServerName},
    ClientConfig, RootCertStore,
};

const MAX_RESPONSE: usize = 32 * 1024 * 1024;

pub struct Url {
    /// `https://`: the exchange goes through TLS.
    pub tls: bool,
    pub host: String,
    pub port: u16,
    pub path: String,
}

pub fn parse_url(url: &str) -> Result<Url, String> {
    let (tls, rest) = if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else {
        return Err(format!("`{url}` is not an http:// or https:// URL"));
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
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
        path: path.to_string(),
    })
}

/// A failed exchange. `retryable` is false when trying again cannot help (a certificate the
/// trust store rejects, a TLS protocol mismatch), so the caller fails fast instead of backing
/// off for a minute.
#[derive(Debug)]
pub struct Error {
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

/// The client TLS configuration: the webpki-roots (Mozilla) trust anchors, plus every
/// certificate in `ca_file` (PEM) so an endpoint behind a private CA can be trusted without
/// touching the system store. The provider is named explicitly (ring) rather than taken from
/// the process default, so another crate enabling aws-lc-rs cannot make this ambiguous.
pub fn tls_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
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

pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One POST. `tls` is required for an `https://` URL (see [`tls_config`]) and ignored for
/// `http://`. The caller bounds the whole exchange (connect, handshake, read) with a timeout.
pub async fn post_json(
    url: &Url,
    tls: Option<&Arc<ClientConfig>>,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Response, Error> {
    let stream = tokio::net::TcpStream::connect((url.host.as_str(), url.port))
        .await
        .map_err(|e| {
            Error::transient(format!("cannot connect to {}:{}: {e}", url.host, url.port))
        })?;
    let mut req = format!(
        "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\nAccept: application/json\r\nConnection: close\r\nContent-Length: {}\r\n",
        url.path,
        url.host,
        url.port,
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    if !url.tls {
        let (raw, _) = exchange(stream, req.as_bytes(), body).await?;
        return parse_response(&raw).map_err(Error::transient);
    }
    let config = tls.ok_or_else(|| Error {
        message: "internal: an https URL without a TLS configuration".into(),
        retryable: false,
    })?;
    // SNI and certificate verification use the URL's host (an IP address is checked
    // against the certificate's IP SANs instead, and sends no SNI).
    let name = ServerName::try_from(url.host.clone()).map_err(|e| Error {
        message: format!("`{}` is not a valid TLS server name: {e}", url.host),
        retryable: false,
    })?;
    let stream = tokio_rustls::TlsConnector::from(Arc::clone(config))
        .connect(name, stream)
        .await
        .map_err(|e| handshake_error(url, e))?;
    let (raw, unclean) = exchange(stream, req.as_bytes(), body).await?;
    let resp = parse_response(&raw).map_err(Error::transient)?;
    // A TLS peer that closes without close_notify may have been cut off by an attacker or
    // the network; that is only harmless when the body's own framing shows it is complete.
    if unclean && !framing_complete(&raw, &resp) {
        return Err(Error::transient(
            "the TLS connection closed before the response was complete".into(),
        ));
    }
    Ok(resp)
}

fn handshake_error(url: &Url, e: std::io::Error) -> Error {
    // A rustls error (bad certificate, protocol mismatch) will fail the same way next time;
    // plain I/O errors (reset, refused) may not.
    let tls_error = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .is_some();
    let mut message = format!("TLS handshake with {}:{} failed: {e}", url.host, url.port);
    if message.contains("certificate") {
        message.push_str(
            " (for a self-hosted endpoint with a private CA, set `ca_file` under [backend.openai] in pipewright.toml)",
        );
    }
    Error {
        message,
        retryable: !tls_error,
    }
}

/// Sends the request and reads the response to the end (capped). The flag says the peer
/// ended a TLS stream without close_notify, which many HTTPS servers do after
/// `Connection: close`; the caller decides whether the data is complete anyway.
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    head: &[u8],
    body: &[u8],
) -> Result<(Vec<u8>, bool), Error> {
    let send = |e: std::io::Error| Error::transient(format!("send failed: {e}"));
    stream.write_all(head).await.map_err(send)?;
    stream.write_all(body).await.map_err(send)?;
    // TLS buffers records; make sure the request actually leaves before waiting for a reply.
    stream.flush().await.map_err(send)?;
    let mut raw = Vec::new();
    let mut unclean = false;
    match (&mut stream)
        .take(MAX_RESPONSE as u64 + 1)
        .read_to_end(&mut raw)
        .await
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => {
            unclean = true
        }
        Err(e) => return Err(Error::transient(format!("receive failed: {e}"))),
    }
    if raw.len() > MAX_RESPONSE {
        return Err(Error::transient(format!(
            "the response is larger than {MAX_RESPONSE} bytes"
        )));
    }
    Ok((raw, unclean))
}

/// Whether the response carried its own end marker: a full `Content-Length` body or a chunked
/// body (whose terminating chunk `dechunk` already required).
fn framing_complete(raw: &[u8], resp: &Response) -> bool {
    if resp
        .header("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        return true;
    }
    let Some(n) = resp
        .header("content-length")
        .and_then(|n| n.parse::<usize>().ok())
    else {
        return false;
    };
    let head_len = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(raw.len(), |i| i + 4);
    raw.len() - head_len >= n
}

fn parse_response(raw: &[u8]) -> Result<Response, String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("malformed HTTP response (no header end)")?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("malformed status line `{status_line}`"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| {
            l.split_once(':')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        })
        .collect();
    let mut body = raw[end + 4..].to_vec();
    let resp = Response {
        status,
        headers,
        body: Vec::new(),
    };
    if resp
        .header("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        body = dechunk(&body)?;
    } else if let Some(n) = resp
        .header("content-length")
        .and_then(|n| n.parse::<usize>().ok())
    {
        // The peer closed before sending what it announced (a crash, a reset proxy): the
        // prefix is not the reply, and the caller retries it as a transport error.
        if body.len() < n {
            return Err(format!(
                "the connection closed after {} of the {n} body bytes the response announced",
                body.len()
            ));
        }
        body.truncate(n);
    }
    Ok(Response { body, ..resp })
}

fn dechunk(mut data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("malformed chunked body")?;
        let size_text = String::from_utf8_lossy(&data[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| "malformed chunk size")?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if data.len() < size {
            return Err("truncated chunked body".into());
        }
        out.extend_from_slice(&data[..size]);
        data = data.get(size + 2..).unwrap_or(&[]);
    }
}
