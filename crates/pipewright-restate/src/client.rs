//! A typed HTTP client for a Restate server's admin API (deployments, SQL queries) and ingress
//! (submitting, attaching to and calling workflows). Shapes as restate-server 1.7.12 answers;
//! the ingress paths are the `/restate/{send,call,attach,output}/…` ones restate-sdk 0.13's own
//! ingress client uses (Restate 1.7 and later).

use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("HTTP client setup failed: {0}")]
    Setup(String),
    /// The server could not be reached, or the connection broke before an answer.
    #[error("{method} {url}: {message}")]
    Transport {
        method: &'static str,
        url: String,
        message: String,
    },
    /// The server answered with an error status.
    #[error("{method} {url} answered {status}: {body}")]
    Status {
        method: &'static str,
        url: String,
        status: u16,
        body: String,
    },
    /// The server answered 2xx with a body this client does not understand.
    #[error("{method} {url} answered an unexpected body ({message}): {body}")]
    Body {
        method: &'static str,
        url: String,
        message: String,
        body: String,
    },
}

impl ClientError {
    /// The HTTP status of a [`ClientError::Status`].
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// A deployment the admin API registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployment {
    /// `dp_…`
    pub id: String,
    /// The names of the services it serves.
    pub services: Vec<String>,
}

/// What submitting a workflow run answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submission {
    /// A new run started.
    Accepted { invocation_id: String },
    /// A run of this workflow with this key was already submitted: that run's invocation, no
    /// new run.
    PreviouslyAccepted { invocation_id: String },
}

impl Submission {
    pub fn invocation_id(&self) -> &str {
        match self {
            Submission::Accepted { invocation_id }
            | Submission::PreviouslyAccepted { invocation_id } => invocation_id,
        }
    }
}

/// The client. Cheap to clone (one connection pool).
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
}

/// How long a request other than [`Client::attach`] may take (an admin query over a large
/// journal is the slowest).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The ingress's status for "the invocation exists but has not completed yet".
const NOT_READY: u16 = 470;

impl Client {
    pub fn new() -> Result<Client, ClientError> {
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(tls_config()?)
            // Restate's admin and ingress are the team's own servers; a shell's HTTP(S)_PROXY is
            // for the outside world, and would swallow a loopback address.
            .no_proxy()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| ClientError::Setup(chain(&e)))?;
        Ok(Client { http })
    }

    /// Registers the deployment at `worker_uri` (the worker's endpoint, e.g.
    /// `http://127.0.0.1:9080`) with the admin API at `admin`. Registering the same URI again
    /// with the same services is accepted as is; when its services changed (a new pipewright
    /// on the same address), it is registered again with `"force": true`, which replaces it.
    pub async fn register(&self, admin: &str, worker_uri: &str) -> Result<Deployment, ClientError> {
        let url = format!("{}/deployments", trim(admin));
        let first = self
            .post_json(&url, &serde_json::json!({ "uri": worker_uri }))
            .await;
        let body = match first {
            Err(e) if e.status() == Some(409) => {
                self.post_json(
                    &url,
                    &serde_json::json!({ "uri": worker_uri, "force": true }),
                )
                .await?
            }
            other => other?,
        };
        #[derive(Deserialize)]
        struct Registered {
            id: String,
            services: Vec<Named>,
        }
        #[derive(Deserialize)]
        struct Named {
            name: String,
        }
        let r: Registered = parse("POST", &url, &body)?;
        Ok(Deployment {
            id: r.id,
            services: r.services.into_iter().map(|s| s.name).collect(),
        })
    }

    /// Submits a run of `workflow` keyed `key` with `input` as its JSON body, without waiting
    /// for it. The key makes submission idempotent: resubmitting it answers
    /// [`Submission::PreviouslyAccepted`] with the first run's invocation, whatever the new
    /// input (the server does not compare it).
    pub async fn send(
        &self,
        ingress: &str,
        workflow: &str,
        key: &str,
        input: &Value,
    ) -> Result<Submission, ClientError> {
        let url = format!(
            "{}/restate/send/{}/{}/run",
            trim(ingress),
            segment(workflow),
            segment(key)
        );
        let body = self.post_json(&url, input).await?;
        submission("POST", url, &body)
    }

    /// Submits an invocation of a service's `handler` with `input`, without waiting for it,
    /// under `idempotency_key`: sending it again with that key answers
    /// [`Submission::PreviouslyAccepted`] with the first invocation (to attach to).
    pub async fn send_once(
        &self,
        ingress: &str,
        service: &str,
        handler: &str,
        input: &Value,
        idempotency_key: &str,
    ) -> Result<Submission, ClientError> {
        let url = format!(
            "{}/restate/send/{}/{}",
            trim(ingress),
            segment(service),
            segment(handler)
        );
        let req = self
            .http
            .post(&url)
            .header("content-type", "application/json")
            .header("idempotency-key", idempotency_key)
            .body(input.to_string())
            .timeout(REQUEST_TIMEOUT);
        let body = self.finish("POST", &url, req).await?;
        submission("POST", url, &body)
    }

    /// Waits for the invocation to finish and returns its JSON result. A run that failed
    /// answers an error status with Restate's message. No timeout: a run may wait days at a
    /// gate; the caller bounds it (`tokio::time::timeout`) when it must.
    pub async fn attach(&self, ingress: &str, invocation_id: &str) -> Result<Value, ClientError> {
        let url = format!(
            "{}/restate/attach/{}",
            trim(ingress),
            segment(invocation_id)
        );
        let req = self.http.get(&url);
        let body = self.finish("GET", &url, req).await?;
        parse("GET", &url, &body)
    }

    /// The invocation's JSON result if it finished, `None` while it runs (the ingress answers
    /// 470 then), without waiting.
    pub async fn output(
        &self,
        ingress: &str,
        invocation_id: &str,
    ) -> Result<Option<Value>, ClientError> {
        let url = format!(
            "{}/restate/output/{}",
            trim(ingress),
            segment(invocation_id)
        );
        let req = self.http.get(&url).timeout(REQUEST_TIMEOUT);
        match self.finish("GET", &url, req).await {
            Err(e) if e.status() == Some(NOT_READY) => Ok(None),
            Err(e) => Err(e),
            Ok(body) => parse("GET", &url, &body).map(Some),
        }
    }

    /// The invocation of the workflow `workflow` keyed `key` (its `run`), for [`Client::output`]
    /// and [`Client::attach`]; a 404 status when no such run was submitted.
    pub async fn lookup_workflow(
        &self,
        ingress: &str,
        workflow: &str,
        key: &str,
    ) -> Result<String, ClientError> {
        let url = format!("{}/restate/lookup", trim(ingress));
        let body = serde_json::json!({
            "target": "workflow",
            "workflowName": workflow,
            "workflowKey": key,
        });
        let answer = self.post_json(&url, &body).await?;
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Found {
            invocation_id: String,
        }
        let f: Found = parse("POST", &url, &answer)?;
        Ok(f.invocation_id)
    }

    /// Calls another handler of the workflow `workflow` keyed `key` (a shared handler: a query
    /// or a signal such as an approval) and returns its JSON result (`null` for none). `input`
    /// is `None` for a handler that takes none: it then gets no body at all.
    pub async fn call(
        &self,
        ingress: &str,
        workflow: &str,
        key: &str,
        handler: &str,
        input: Option<&Value>,
    ) -> Result<Value, ClientError> {
        self.call_once(ingress, workflow, key, handler, input, None)
            .await
    }

    /// [`Client::call`] under an idempotency key: the server runs the call once however many
    /// times it is sent with that key (and answers a repeat with the first call's result), so a
    /// call whose answer was lost can be sent again safely.
    pub async fn call_once(
        &self,
        ingress: &str,
        workflow: &str,
        key: &str,
        handler: &str,
        input: Option<&Value>,
        idempotency_key: Option<&str>,
    ) -> Result<Value, ClientError> {
        let url = format!(
            "{}/restate/call/{}/{}/{}",
            trim(ingress),
            segment(workflow),
            segment(key),
            segment(handler)
        );
        let mut req = self.http.post(&url).timeout(REQUEST_TIMEOUT);
        if let Some(k) = idempotency_key {
            req = req.header("idempotency-key", k);
        }
        let body = match input {
            Some(input) => {
                let req = req
                    .header("content-type", "application/json")
                    .body(input.to_string());
                self.finish("POST", &url, req).await?
            }
            None => self.finish("POST", &url, req).await?,
        };
        if body.is_empty() {
            return Ok(Value::Null);
        }
        parse("POST", &url, &body)
    }

    /// Runs `sql` on the admin API's query endpoint (tables `sys_invocation`, `sys_journal`,
    /// `sys_promise`, `state`…) and returns its rows, each a JSON object keyed by column (a
    /// column whose value is NULL is left out of its row).
    pub async fn query(
        &self,
        admin: &str,
        sql: &str,
    ) -> Result<Vec<Map<String, Value>>, ClientError> {
        let url = format!("{}/query", trim(admin));
        // Without `Accept: application/json` the answer is Arrow IPC.
        let req = self
            .http
            .post(&url)
            .header("accept", "application/json")
            .header("content-type", "application/json")
            .body(serde_json::json!({ "query": sql }).to_string())
            .timeout(REQUEST_TIMEOUT);
        let body = self.finish("POST", &url, req).await?;
        #[derive(Deserialize)]
        struct Rows {
            rows: Vec<Map<String, Value>>,
        }
        let r: Rows = parse("POST", &url, &body)?;
        Ok(r.rows)
    }

    async fn post_json(&self, url: &str, body: &Value) -> Result<Vec<u8>, ClientError> {
        let req = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .timeout(REQUEST_TIMEOUT);
        self.finish("POST", url, req).await
    }

    async fn finish(
        &self,
        method: &'static str,
        url: &str,
        req: reqwest::RequestBuilder,
    ) -> Result<Vec<u8>, ClientError> {
        let transport = |e: reqwest::Error| ClientError::Transport {
            method,
            url: url.to_string(),
            message: chain(&e),
        };
        let resp = req.send().await.map_err(transport)?;
        let status = resp.status();
        let body = resp.bytes().await.map_err(transport)?.to_vec();
        if !status.is_success() {
            return Err(ClientError::Status {
                method,
                url: url.to_string(),
                status: status.as_u16(),
                body: error_text(&body),
            });
        }
        Ok(body)
    }
}

/// What a `send` answered.
fn submission(method: &'static str, url: String, body: &[u8]) -> Result<Submission, ClientError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Sent {
        invocation_id: String,
        status: String,
    }
    let s: Sent = parse(method, &url, body)?;
    match s.status.as_str() {
        "Accepted" => Ok(Submission::Accepted {
            invocation_id: s.invocation_id,
        }),
        "PreviouslyAccepted" => Ok(Submission::PreviouslyAccepted {
            invocation_id: s.invocation_id,
        }),
        other => Err(ClientError::Body {
            method,
            url,
            message: format!("status {other:?} is neither Accepted nor PreviouslyAccepted"),
            body: String::from_utf8_lossy(body).into_owned(),
        }),
    }
}

/// Restate's error bodies are JSON with a `message` (the ingress adds `code` and `source`, the
/// admin API may add `restate_code`); the message is what a user needs.
fn error_text(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Failure {
        message: String,
        #[serde(default)]
        restate_code: Option<String>,
    }
    match serde_json::from_slice::<Failure>(body) {
        Ok(Failure {
            message,
            restate_code: Some(code),
        }) => format!("{message} ({code})"),
        Ok(Failure { message, .. }) => message,
        Err(_) => String::from_utf8_lossy(body).trim().to_string(),
    }
}

fn parse<T: serde::de::DeserializeOwned>(
    method: &'static str,
    url: &str,
    body: &[u8],
) -> Result<T, ClientError> {
    serde_json::from_slice(body).map_err(|e| ClientError::Body {
        method,
        url: url.to_string(),
        message: e.to_string(),
        body: String::from_utf8_lossy(body).into_owned(),
    })
}

fn trim(base: &str) -> &str {
    base.trim_end_matches('/')
}

/// `s` as one path segment: percent-encodes what would end or split it (a key is the user's).
fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The error and its sources, one line (reqwest's own message omits the cause).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

/// Our own TLS configuration (ring, the web's roots), so reqwest never looks for a process-wide
/// rustls provider, which pipewright does not install; plain http does not use it.
fn tls_config() -> Result<tokio_rustls::rustls::ClientConfig, ClientError> {
    use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
    let roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    Ok(
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| ClientError::Setup(format!("TLS: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_one_path_segment() {
        assert_eq!(segment("run-1_a.b~"), "run-1_a.b~");
        assert_eq!(segment("a/b c?#%"), "a%2Fb%20c%3F%23%25");
        assert_eq!(segment("é"), "%C3%A9");
    }

    #[test]
    fn an_error_body_gives_its_message() {
        assert_eq!(
            error_text(br#"{"message":"no such service"}"#),
            "no such service"
        );
        assert_eq!(
            error_text(br#"{"message":"conflict","restate_code":"META0006"}"#),
            "conflict (META0006)"
        );
        assert_eq!(error_text(b" plain text \n"), "plain text");
    }
}
