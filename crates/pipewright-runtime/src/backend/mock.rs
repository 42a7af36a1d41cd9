//! The default backend: offline and deterministic. With a schema (or the shape a recipe's later
//! steps read) it replies with JSON that satisfies it; without, a short text naming the step.
//! Any pipeline or recipe can be dry-run.

use super::{counted_usage, AgentBackend, AgentRequest, BackendError, BoxFuture, Reply};
use serde_json::{json, Value};

#[derive(Debug, Default, Clone)]
pub struct MockBackend;

impl AgentBackend for MockBackend {
    fn name(&self) -> &str {
        "mock"
    }

    fn reproducible(&self) -> bool {
        true
    }

    fn complete<'a>(
        &'a self,
        req: &'a AgentRequest,
    ) -> BoxFuture<'a, Result<String, BackendError>> {
        Box::pin(async move {
            Ok(match (&req.schema, &req.shape) {
                (Some(s), _) | (None, Some(s)) => synthesize(s, &req.step, 0).to_string(),
                (None, None) => format!("mock reply for step {} of {}", req.step, req.workflow),
            })
        })
    }

    fn reply<'a>(&'a self, req: &'a AgentRequest) -> BoxFuture<'a, Result<Reply, BackendError>> {
        Box::pin(async move {
            let text = self.complete(req).await?;
            let usage = counted_usage(&req.prompt, &text);
            Ok(Reply {
                text,
                usage,
                model: None,
            })
        })
    }
}

/// A value satisfying a JSON Schema of the shape `schema::json_schema` produces.
pub fn synthesize(schema: &Value, seed: &str, depth: usize) -> Value {
    if depth > 32 {
        return Value::Null;
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.first().cloned().unwrap_or(Value::Null);
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => json!(true),
        Some("string") => json!(format!("mock {seed}")),
        Some("number") => {
            let x = schema
                .get("minimum")
                .or_else(|| schema.get("maximum"))
                .and_then(Value::as_f64)
                .unwrap_or(1.0);
            if x.fract() == 0.0 && x.abs() < 1e15 {
                json!(x as i64)
            } else {
                json!(x)
            }
        }
        Some("array") => json!([synthesize(
            schema.get("items").unwrap_or(&Value::Null),
            &format!("{seed}[0]"),
            depth + 1
        )]),
        Some("object") => {
            let mut o = serde_json::Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    o.insert(k.clone(), synthesize(v, &format!("{seed}.{k}"), depth + 1));
                }
            }
            Value::Object(o)
        }
        _ => Value::Null,
    }
}
