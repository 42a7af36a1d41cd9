//! `{{…}}` substitution (notes §2): variables of the step's scope, builtins, and
//! `{{step.outputs.field}}` references, with the spec's rules where the reference drifts: an
//! unresolved reference is an error (never left in the text), and values put into a shell
//! command are quoted.

use serde_json::{Map, Value};

/// Why a `{{…}}` reference has no value. An unresolved reference is an error, never text left
/// in place, so each says what the reference lacks in words for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum SubstError {
    #[error("undefined variable `{0}`")]
    UndefinedVariable(String),
    #[error("there is no step `{0}`")]
    NoStep(String),
    /// The step ran, but its `on_error` recovery stood in for it.
    #[error("step `{0}` failed and its `on_error` recovery stood in for it, so it has no outputs; read them from a step of the recovery (`{0}.on_error.<step>`)")]
    Recovered(String),
    #[error("step `{step}` has not finished (it is {status}); add it to `needs`")]
    NotFinished { step: String, status: &'static str },
    #[error("step `{step}` has no output `{output}`")]
    NoOutput { step: String, output: String },
    #[error("`{what}` has no field `{field}`")]
    NoField { what: String, field: String },
    #[error("`{what}` is a list; `{segment}` is not an index")]
    NotAnIndex { what: String, segment: String },
    #[error("index {index} is out of range for `{what}` ({len} items)")]
    OutOfRange {
        what: String,
        index: usize,
        len: usize,
    },
    /// A field read from a scalar.
    #[error("cannot read field `{field}` of `{what}`, which is {kind}")]
    NotAContainer {
        what: String,
        field: String,
        kind: &'static str,
    },
    /// Any of the above, naming the reference it happened in.
    #[error("`{{{{{reference}}}}}`: {error}")]
    In {
        reference: String,
        error: Box<SubstError>,
    },
}

impl SubstError {
    fn within(self, reference: &str) -> SubstError {
        SubstError::In {
            reference: reference.to_string(),
            error: Box::new(self),
        }
    }
}

impl From<SubstError> for String {
    fn from(e: SubstError) -> String {
        e.to_string()
    }
}

/// One `{{…}}` reference, parsed.
#[derive(Debug, PartialEq)]
pub(super) enum Ref<'a> {
    /// `{{name.a.0}}`: a variable and the path into it.
    Var { root: &'a str, path: Vec<&'a str> },
    /// `{{step.outputs.field.sub}}`.
    Output { step: String, path: Vec<&'a str> },
}

/// Parses the inside of `{{…}}` (already trimmed).
pub(super) fn parse(inner: &str) -> Ref<'_> {
    let segs: Vec<&str> = inner.split('.').collect();
    // The last `outputs` wins only if it is neither first nor last (step ids may hold dots).
    if let Some(i) = (1..segs.len().saturating_sub(1)).find(|&i| segs[i] == "outputs") {
        return Ref::Output {
            step: segs[..i].join("."),
            path: segs[i + 1..].to_vec(),
        };
    }
    Ref::Var {
        root: segs[0],
        path: segs[1..].to_vec(),
    }
}

/// The spans of every reference in `text`: (start, end, trimmed inside).
pub(super) fn refs(text: &str) -> Vec<(usize, usize, &str)> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(off) = text[i..].find("{{") {
        let start = i + off;
        let mut j = start + 2;
        while j < b.len() && b[j] != b'{' && b[j] != b'}' {
            j += 1;
        }
        if j + 1 < b.len() && b[j] == b'}' && b[j + 1] == b'}' && j > start + 2 {
            let inner = text[start + 2..j].trim();
            if !inner.is_empty() {
                out.push((start, j + 2, inner));
            }
            i = j + 2;
        } else {
            i = start + 2;
        }
    }
    out
}

/// Where values come from.
pub(super) trait Lookup {
    /// A variable or builtin; `None` when undefined.
    fn var(&self, name: &str) -> Option<Value>;
    /// The outputs of a step, as seen from the step being substituted; `Err` says why not.
    fn outputs(&self, step: &str) -> Result<Value, SubstError>;
}

/// What is known of a step before it runs (when its group leaves the run): its variables
/// whose values hold no `{{…}}` still to render, the run's id, and when given the step's id
/// and the prefix of its steps' ids; no step's outputs.
pub(super) struct Known<'a> {
    pub vars: &'a Map<String, Value>,
    pub run_id: &'a str,
    pub step: Option<(&'a str, String)>,
}

impl Lookup for Known<'_> {
    fn var(&self, name: &str) -> Option<Value> {
        match self.vars.get(name) {
            Some(Value::String(t)) if t.contains("{{") => None,
            Some(v) => Some(v.clone()),
            None => match (name, &self.step) {
                ("workflow_id", _) => Some(Value::from(self.run_id)),
                ("step_id", Some((id, _))) => Some(Value::from(*id)),
                ("__step_prefix__", Some((_, prefix))) => Some(Value::from(prefix.as_str())),
                _ => None,
            },
        }
    }
    fn outputs(&self, step: &str) -> Result<Value, SubstError> {
        Err(SubstError::NoStep(step.to_string()))
    }
}

/// The value a reference names.
pub(super) fn resolve(r: &Ref<'_>, cx: &dyn Lookup) -> Result<Value, SubstError> {
    match r {
        Ref::Var { root, path } => {
            let v = cx
                .var(root)
                .ok_or_else(|| SubstError::UndefinedVariable(root.to_string()))?;
            walk(v, path, root)
        }
        Ref::Output { step, path } => {
            let outs = cx.outputs(step)?;
            if path.is_empty() {
                return Ok(outs);
            }
            if outs.get(path[0]).is_none() {
                return Err(SubstError::NoOutput {
                    step: step.clone(),
                    output: path[0].to_string(),
                });
            }
            walk(outs, path, &format!("{step}.outputs"))
        }
    }
}

fn walk(mut v: Value, path: &[&str], what: &str) -> Result<Value, SubstError> {
    for seg in path {
        v = match v {
            Value::Object(mut m) => m.remove(*seg).ok_or_else(|| SubstError::NoField {
                what: what.to_string(),
                field: seg.to_string(),
            })?,
            Value::Array(mut a) => {
                let i: usize = seg.parse().map_err(|_| SubstError::NotAnIndex {
                    what: what.to_string(),
                    segment: seg.to_string(),
                })?;
                if i >= a.len() {
                    return Err(SubstError::OutOfRange {
                        what: what.to_string(),
                        index: i,
                        len: a.len(),
                    });
                }
                a.swap_remove(i)
            }
            other => {
                return Err(SubstError::NotAContainer {
                    what: what.to_string(),
                    field: seg.to_string(),
                    kind: kind(&other),
                })
            }
        };
    }
    Ok(v)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// A value as text: strings as they are, other values as compact JSON with sorted keys.
pub(super) fn to_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => sorted(other).to_string(),
    }
}

fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// `text` with every reference replaced. In a shell context (`command`, `condition`) a value
/// that is not plain (letters, digits, `_./:@%+=,-`) is single-quoted.
pub(super) fn render(text: &str, cx: &dyn Lookup, shell: bool) -> Result<String, SubstError> {
    let found = refs(text);
    if found.is_empty() {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end, inner) in found {
        out.push_str(&text[last..start]);
        let v = resolve(&parse(inner), cx).map_err(|e| e.within(inner))?;
        let t = to_text(&v);
        if shell {
            out.push_str(&quote(&t));
        } else {
            out.push_str(&t);
        }
        last = end;
    }
    out.push_str(&text[last..]);
    Ok(out)
}

/// A string that is exactly one reference yields the value itself (a map stays a map);
/// anything else renders to a string (notes §2.1, typed evaluation).
pub(super) fn typed(text: &str, cx: &dyn Lookup) -> Result<Value, SubstError> {
    let t = text.trim();
    let found = refs(t);
    if let [(0, end, inner)] = found.as_slice() {
        if *end == t.len() {
            return resolve(&parse(inner), cx).map_err(|e| e.within(inner));
        }
    }
    render(text, cx, false).map(Value::String)
}

/// Every string inside `v` substituted, typed where a string is one reference.
pub(super) fn typed_value(v: &Value, cx: &dyn Lookup) -> Result<Value, SubstError> {
    Ok(match v {
        Value::String(s) => typed(s, cx)?,
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| typed_value(x, cx))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| Ok((k.clone(), typed_value(x, cx)?)))
                .collect::<Result<_, SubstError>>()?,
        ),
        other => other.clone(),
    })
}

/// POSIX single quoting for anything that is not plainly one word.
pub(super) fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:@%+=,-".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Fixed;
    impl Lookup for Fixed {
        fn var(&self, name: &str) -> Option<Value> {
            match name {
                "who" => Some(json!("Ada Lovelace")),
                "n" => Some(json!(7)),
                "task" => Some(json!({"b": [1, 2], "a": "x"})),
                _ => None,
            }
        }
        fn outputs(&self, step: &str) -> Result<Value, SubstError> {
            match step {
                "a.b" => Ok(json!({"path": "/tmp/x"})),
                _ => Err(SubstError::NoStep(step.to_string())),
            }
        }
    }

    #[test]
    fn references_are_found_and_parsed() {
        assert_eq!(
            refs("x {{ a }} {{}} {{b.c}}"),
            vec![(2, 9, "a"), (15, 22, "b.c")]
        );
        assert_eq!(
            parse("a.b.outputs.path"),
            Ref::Output {
                step: "a.b".into(),
                path: vec!["path"]
            }
        );
        assert_eq!(
            parse("outputs.x"),
            Ref::Var {
                root: "outputs",
                path: vec!["x"]
            }
        );
    }

    #[test]
    fn rendering_quotes_in_shell_contexts_only() {
        assert_eq!(
            render("hi {{who}}", &Fixed, false).unwrap(),
            "hi Ada Lovelace"
        );
        assert_eq!(
            render("echo {{who}}", &Fixed, true).unwrap(),
            "echo 'Ada Lovelace'"
        );
        assert_eq!(render("echo {{n}}", &Fixed, true).unwrap(), "echo 7");
        assert_eq!(
            render("{{task}} {{task.b.1}}", &Fixed, false).unwrap(),
            r#"{"a":"x","b":[1,2]} 2"#
        );
        assert_eq!(
            render("{{a.b.outputs.path}}", &Fixed, true).unwrap(),
            "/tmp/x"
        );
        assert_eq!(quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn unresolved_references_are_errors() {
        assert!(render("{{nope}}", &Fixed, false)
            .unwrap_err()
            .to_string()
            .contains("undefined variable `nope`"));
        assert!(render("{{a.b.outputs.size}}", &Fixed, false)
            .unwrap_err()
            .to_string()
            .contains("has no output `size`"));
        assert!(render("{{task.b.5}}", &Fixed, false)
            .unwrap_err()
            .to_string()
            .contains("out of range"));
    }

    #[test]
    fn an_error_names_the_reference_and_what_it_lacks() {
        let e = render("x {{task.b.5}}", &Fixed, false).unwrap_err();
        assert_eq!(
            e,
            SubstError::In {
                reference: "task.b.5".into(),
                error: Box::new(SubstError::OutOfRange {
                    what: "task".into(),
                    index: 5,
                    len: 2
                }),
            }
        );
        assert_eq!(
            e.to_string(),
            "`{{task.b.5}}`: index 5 is out of range for `task` (2 items)"
        );
        assert_eq!(
            typed("{{who.first}}", &Fixed).unwrap_err().to_string(),
            "`{{who.first}}`: cannot read field `first` of `who`, which is a string"
        );
    }

    #[test]
    fn a_lone_reference_keeps_its_type() {
        assert_eq!(
            typed(" {{task}} ", &Fixed).unwrap(),
            json!({"b": [1, 2], "a": "x"})
        );
        assert_eq!(typed("n={{n}}", &Fixed).unwrap(), json!("n=7"));
    }
}
