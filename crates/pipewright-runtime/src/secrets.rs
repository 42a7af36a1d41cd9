//! Secret values (the openai backend's API key) that must never reach a message pipewright
//! records or prints. A server may echo the `Authorization` header back in an error body, and
//! that body becomes a step's error, its events, a store row and the `--format json` report.
//!
//! The backend redacts where its errors are made (it knows its key); this process-wide list is
//! for the defensive pass where events and outcomes are recorded, which cannot know which
//! backend produced a text. Process-wide because a value registered once must be hidden from
//! every run of the process, whichever options it was started with.

use serde_json::Value as Json;
use std::borrow::Cow;
use std::sync::RwLock;

/// What a redacted secret reads as.
pub const REDACTED: &str = "[REDACTED]";

/// Shorter values are not secrets worth the name and would match ordinary text.
pub const MIN_LEN: usize = 8;

/// Each secret with its JSON-escaped form (the same text for a key without `"`, `\\` or
/// control characters), computed once: events are redacted one by one.
static SECRETS: RwLock<Vec<(String, String)>> = RwLock::new(Vec::new());

/// Hides `value` from every message recorded or printed from now on (see [`redact`]).
pub fn register(value: &str) {
    if value.len() < MIN_LEN {
        return;
    }
    let mut list = SECRETS.write().unwrap_or_else(|p| p.into_inner());
    if !list.iter().any(|(s, _)| s == value) {
        list.push((value.to_string(), escaped(value)));
    }
}

/// `text` with every registered secret replaced by [`REDACTED`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let list = SECRETS.read().unwrap_or_else(|p| p.into_inner());
    let mut out = Cow::Borrowed(text);
    for (plain, escaped) in list.iter() {
        for form in [plain, escaped] {
            if out.contains(form.as_str()) {
                out = Cow::Owned(out.replace(form.as_str(), REDACTED));
            }
        }
    }
    out
}

fn escaped(s: &str) -> String {
    let quoted = Json::String(s.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// `text` with each of `secrets` (those of at least [`MIN_LEN`] bytes) replaced, and also its
/// JSON-escaped form, since an echoed header often comes back inside a JSON string.
pub fn redact_with<'t, 's>(
    text: &'t str,
    secrets: impl IntoIterator<Item = &'s str>,
) -> Cow<'t, str> {
    let mut out = Cow::Borrowed(text);
    for s in secrets {
        if s.len() < MIN_LEN {
            continue;
        }
        if out.contains(s) {
            out = Cow::Owned(out.replace(s, REDACTED));
        }
        let escaped = escaped(s);
        if escaped != s && out.contains(escaped.as_str()) {
            out = Cow::Owned(out.replace(escaped.as_str(), REDACTED));
        }
    }
    out
}

/// Redacts every string (and object key) inside `v`.
pub fn redact_json(v: &mut Json) {
    if SECRETS.read().unwrap_or_else(|p| p.into_inner()).is_empty() {
        return;
    }
    redact_json_inner(v);
}

fn redact_json_inner(v: &mut Json) {
    match v {
        Json::String(s) => {
            if let Cow::Owned(r) = redact(s) {
                *s = r;
            }
        }
        Json::Array(a) => a.iter_mut().for_each(redact_json_inner),
        Json::Object(m) => {
            let keys_leak = m.keys().any(|k| matches!(redact(k), Cow::Owned(_)));
            if keys_leak {
                let old = std::mem::take(m);
                for (k, mut val) in old {
                    redact_json_inner(&mut val);
                    m.insert(redact(&k).into_owned(), val);
                }
            } else {
                m.values_mut().for_each(redact_json_inner);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_plain_and_json_escaped_forms() {
        let key = "sk-unit-\"quoted\"-0123456789";
        let plain = format!("HTTP 401: Bearer {key}");
        assert_eq!(redact_with(&plain, [key]), "HTTP 401: Bearer [REDACTED]");
        let body = serde_json::json!({ "echo": format!("Bearer {key}") }).to_string();
        assert_eq!(
            redact_with(&body, [key]),
            "{\"echo\":\"Bearer [REDACTED]\"}"
        );
        assert!(matches!(
            redact_with("nothing here", [key]),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn short_values_are_not_redacted() {
        assert_eq!(redact_with("a bcd a", ["a"]), "a bcd a");
        register("short");
        assert_eq!(redact("short text"), "short text");
    }

    #[test]
    fn registered_values_are_redacted_in_json_values_and_keys() {
        let key = "sk-registered-0123456789abcdef";
        register(key);
        let mut v = serde_json::json!({
            "a": [format!("x {key} y")],
            key: 1,
        });
        redact_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"a": ["x [REDACTED] y"], "[REDACTED]": 1})
        );
    }
}
