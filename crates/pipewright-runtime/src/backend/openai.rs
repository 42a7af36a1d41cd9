//! An OpenAI-compatible chat-completions endpoint. JSON mode (`response_format`) when the
//! step has a schema, the schema itself in the system message; 429 and 5xx are retried with
//! exponential back-off and jitter (honouring `Retry-After` in seconds).

use super::http;
use super::{AgentBackend, AgentRequest, BackendError, BoxFuture};
use crate::secrets;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct OpenAiBackend {
    pub url: String,
    pub model: String,
    /// Read from the environment variable named in the config, never from the file.
    pub api_key: Option<String>,
    pub timeout: Duration,
    pub max_retries: u32,
    /// The first back-off delay; doubles per retry.
    pub base_delay: Duration,
    /// A PEM file of CA certificates trusted for `https://` in addition to webpki-roots.
    pub ca_file: Option<PathBuf>,
}

impl OpenAiBackend {
    fn body(&self, req: &AgentRequest) -> Value {
        let mut system = format!(
            "You are `{}`, running one step of a pipewright pipeline.",
            req.identity
        );
        if let Some(s) = &req.schema {
            system.push_str(&format!(
                " Reply with only a JSON object that satisfies this JSON Schema: {s}"
            ));
        }
        let mut body = json!({
            "model": req.model.clone().unwrap_or_else(|| self.model.clone()),
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": req.prompt},
            ],
        });
        if req.schema.is_some() {
            body["response_format"] = json!({"type": "json_object"});
        }
        body
    }
}

/// Full jitter: a delay uniformly spread over [d/2, d], without a random-number dependency.
fn jittered(base: Duration, attempt: u32) -> Duration {
    let d = base.saturating_mul(1u32 << attempt.min(16));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|t| t.subsec_nanos())
        .unwrap_or(0);
    let frac = 0.5 + f64::from(nanos % 1000) / 2000.0;
    d.mul_f64(frac).min(Duration::from_secs(60))
}

impl AgentBackend for OpenAiBackend {
    fn name(&self) -> &str {
        "openai"
    }

    fn complete<'a>(
        &'a self,
        req: &'a AgentRequest,
    ) -> BoxFuture<'a, Result<String, BackendError>> {
        Box::pin(async move { self.reply(req).await.map(|r| r.text) })
    }

    fn reply<'a>(
        &'a self,
        req: &'a AgentRequest,
    ) -> BoxFuture<'a, Result<super::Reply, BackendError>> {
        // Every error and reply leaves through here, redacted: the one place that knows the key.
        Box::pin(async move {
            self.exchange(req)
                .await
                .map(|(text, usage)| super::Reply {
                    text: self.hide(&text),
                    usage,
                    model: Some(req.model.clone().unwrap_or_else(|| self.model.clone())),
                })
                .map_err(|e| BackendError::new(self.hide(&e.message)))
        })
    }
}

/// The `usage` of a chat completion: prompt and completion tokens as the server counts them
/// (no cost: an OpenAI-compatible server does not say one).
fn usage_of(v: &Value) -> crate::usage::Usage {
    let n = |k: &str| v.pointer(&format!("/usage/{k}")).and_then(Value::as_u64);
    crate::usage::Usage {
        input_tokens: n("prompt_tokens"),
        output_tokens: n("completion_tokens"),
        // Counted inside `prompt_tokens` already: this says how many of them were cached.
        cache_read_tokens: v
            .pointer("/usage/prompt_tokens_details/cached_tokens")
            .and_then(Value::as_u64),
        ..crate::usage::Usage::unknown()
    }
}

impl OpenAiBackend {
    /// `text` without the API key: a server may echo the `Authorization` header in an error
    /// body (or a reply), and whatever this backend returns is recorded and printed.
    fn hide(&self, text: &str) -> String {
        secrets::redact_with(text, self.api_key.as_deref()).into_owned()
    }

    async fn exchange(
        &self,
        req: &AgentRequest,
    ) -> Result<(String, crate::usage::Usage), BackendError> {
        let url = http::parse_url(&self.url).map_err(BackendError::new)?;
        // Built per call rather than cached: it costs little next to a network round trip,
        // and a fixed ca_file is picked up without restarting. Only https reads the CA file.
        let client = http::client(&url, self.ca_file.as_deref()).map_err(BackendError::new)?;
        let body = self.body(req).to_string().into_bytes();
        let mut headers = Vec::new();
        if let Some(k) = &self.api_key {
            headers.push(("Authorization".to_string(), format!("Bearer {k}")));
        }
        let mut attempt = 0;
        loop {
            let resp = tokio::time::timeout(
                self.timeout,
                http::post_json(&client, &url, &self.url, &headers, &body),
            )
            .await
            .map_err(|_| {
                BackendError::new(format!(
                    "no response within {}s",
                    self.timeout.as_secs_f64()
                ))
            })?;
            let retryable = match &resp {
                Ok(r) => r.status == 429 || r.status >= 500,
                Err(e) => e.retryable,
            };
            if retryable && attempt < self.max_retries {
                let hinted = resp
                    .as_ref()
                    .ok()
                    .and_then(|r| r.header("retry-after"))
                    .and_then(|s| s.parse::<u64>().ok())
                    .map(|s| Duration::from_secs(s.min(60)));
                tokio::time::sleep(hinted.unwrap_or_else(|| jittered(self.base_delay, attempt)))
                    .await;
                attempt += 1;
                continue;
            }
            let resp = resp.map_err(|e| BackendError::new(e.message))?;
            let text = String::from_utf8_lossy(&resp.body).into_owned();
            if resp.status != 200 {
                // Redacted before it is cut, so a cut cannot leave a prefix of the key.
                return Err(BackendError::new(format!(
                    "HTTP {} after {} attempt(s): {}",
                    resp.status,
                    attempt + 1,
                    self.hide(&text).chars().take(300).collect::<String>()
                )));
            }
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| BackendError::new(format!("the response is not JSON: {e}")))?;
            return v
                .pointer("/choices/0/message/content")
                .and_then(Value::as_str)
                .map(|text| (text.to_string(), usage_of(&v)))
                .ok_or_else(|| {
                    BackendError::new("the response has no choices[0].message.content")
                });
        }
    }
}
