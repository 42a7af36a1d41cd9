//! What a step was given — its rendered prompt or command, and its input — as its
//! `step_started` event records it, so `pipewright ui` can show it (docs/ui.md, "Step
//! detail"). It is bounded and redacted here, where it is made: a prompt rendered from the
//! input can hold a registered secret (an API key a step passed on), and a fan-out of
//! thousands of agent steps must not store megabytes per item.

use crate::secrets;
use serde_json::Value as Json;

/// The most bytes of each text (a prompt, a command, an input's JSON) an event keeps.
pub const MAX_TEXT: usize = 8 * 1024;

/// What a step was given. A dialect fills what it has: an agent step's rendered prompt, a
/// shell or bash step's rendered command, and its input where the dialect has one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Given {
    pub prompt: Option<String>,
    pub command: Option<String>,
    pub input: Option<Json>,
}

impl Given {
    /// An agent step's rendered prompt.
    pub fn prompt(text: &str) -> Given {
        Given {
            prompt: Some(bounded(text)),
            ..Given::default()
        }
    }

    /// A shell step's rendered command.
    pub fn command(text: &str) -> Given {
        Given {
            command: Some(bounded(text)),
            ..Given::default()
        }
    }

    /// The same, with the step's input.
    pub fn with_input(mut self, input: &Json) -> Given {
        self.input = Some(bounded_json(input));
        self
    }

    /// Its fields as `(name, value)`, in the order events write them.
    pub fn fields(&self) -> impl Iterator<Item = (&'static str, Json)> + '_ {
        [
            ("prompt", self.prompt.clone().map(Json::String)),
            ("command", self.command.clone().map(Json::String)),
            ("input", self.input.clone()),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k, v?)))
    }

    /// What an event line holds of it (`None`: nothing).
    pub fn from_json(event: &Json) -> Option<Given> {
        let text = |k: &str| event.get(k).and_then(Json::as_str).map(str::to_string);
        let g = Given {
            prompt: text("prompt"),
            command: text("command"),
            input: event.get("input").cloned(),
        };
        (g != Given::default()).then_some(g)
    }
}

/// `text` with every registered secret redacted, then cut to [`MAX_TEXT`] bytes (at a
/// character boundary) with a marker saying how long it was. Redacted first, so a cut never
/// leaves part of a secret.
pub fn bounded(text: &str) -> String {
    let text = secrets::redact(text);
    if text.len() <= MAX_TEXT {
        return text.into_owned();
    }
    let mut end = MAX_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [truncated: {} bytes in all]", &text[..end], text.len())
}

/// A JSON value redacted, kept as it is when its text fits in [`MAX_TEXT`], else the
/// [`bounded`] text of it (a string).
pub fn bounded_json(v: &Json) -> Json {
    let text = v.to_string();
    let redacted = secrets::redact(&text);
    if redacted.len() <= MAX_TEXT {
        if matches!(redacted, std::borrow::Cow::Borrowed(_)) {
            return v.clone();
        }
        // A secret inside a string is replaced inside it: the text is still JSON.
        if let Ok(back) = serde_json::from_str(&redacted) {
            return back;
        }
    }
    Json::String(bounded(&redacted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_texts_are_cut_at_a_character_with_a_marker() {
        assert_eq!(bounded("echo hi"), "echo hi");
        let long = "é".repeat(MAX_TEXT);
        let cut = bounded(&long);
        assert!(cut.ends_with(&format!("… [truncated: {} bytes in all]", long.len())));
        assert!(cut.len() < MAX_TEXT + 40, "{}", cut.len());
        assert!(long.starts_with(cut.split('…').next().unwrap_or_default()));
    }

    #[test]
    fn a_registered_secret_is_redacted_before_the_cut() {
        let key = "sk-given-0123456789abcdef";
        secrets::register(key);
        assert_eq!(
            Given::prompt(&format!("use {key}")).prompt.as_deref(),
            Some("use [REDACTED]")
        );
        // A secret across the cut would leave its start behind if the cut came first.
        let text = format!("{}{key}", "x".repeat(MAX_TEXT - 5));
        assert!(!bounded(&text).contains("sk-gi"));
        let input = bounded_json(&json!({"token": key, "n": 1}));
        assert_eq!(input, json!({"token": "[REDACTED]", "n": 1}));
    }

    #[test]
    fn a_large_input_becomes_its_cut_text() {
        let big = json!({"xs": vec![1; MAX_TEXT]});
        let Json::String(s) = bounded_json(&big) else {
            panic!("a string")
        };
        assert!(s.starts_with("{\"xs\":[1,1,"));
        assert!(s.contains("[truncated: "));
        let small = json!({"a": [1, 2]});
        assert_eq!(bounded_json(&small), small);
    }

    #[test]
    fn it_reads_back_from_an_event_line() {
        let g = Given::command("ls").with_input(&json!({"a": 1}));
        let mut e = json!({"event": "step_started"});
        for (k, v) in g.fields() {
            e[k] = v;
        }
        assert_eq!(Given::from_json(&e), Some(g));
        assert_eq!(Given::from_json(&json!({"event": "step_started"})), None);
    }
}
