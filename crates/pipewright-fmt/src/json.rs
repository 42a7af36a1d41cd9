//! State-machine files are JSON: no comments, so canonical form is the layout alone — two-space
//! indentation, one member or element per line, `": "` after keys, empty collections as `{}` /
//! `[]`, a final newline. Strings and numbers are copied as written: re-printing a parsed value
//! would turn `12345678901234567890123` into a float and `1E2` into `100.0`.

use pipewright_syntax::{Diagnostic, FileId, Span};

pub(crate) fn format(file: FileId, text: &str) -> Result<String, Vec<Diagnostic>> {
    // serde_json is the validator (and gives the error position); the layout pass below
    // only ever sees well-formed JSON.
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| vec![parse_error(file, text, &e)])?;
    let out = relayout(text);
    let again: serde_json::Value =
        serde_json::from_str(&out).map_err(|e| vec![crate::internal_error(file, e.to_string())])?;
    if again != value || literals(&out) != literals(text) {
        return Err(vec![crate::internal_error(
            file,
            "the re-indented JSON reads back differently",
        )]);
    }
    Ok(out)
}

/// Every string and number literal in order, as written.
fn literals(text: &str) -> Vec<&str> {
    tokens(text)
        .filter(|t| !matches!(*t, "{" | "}" | "[" | "]" | "," | ":"))
        .collect()
}

/// The tokens of well-formed JSON: punctuation, whole string literals, numbers and keywords.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        let start = i;
        match *b.get(i)? {
            b'{' | b'}' | b'[' | b']' | b',' | b':' => i += 1,
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
            }
            _ => {
                while i < b.len()
                    && !matches!(
                        b[i],
                        b'{' | b'}' | b'[' | b']' | b',' | b':' | b' ' | b'\t' | b'\n' | b'\r'
                    )
                {
                    i += 1;
                }
            }
        }
        text.get(start..i)
    })
}

fn relayout(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    let mut depth = 0usize;
    let mut toks = tokens(text).peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    while let Some(t) = toks.next() {
        match t {
            "{" | "[" => {
                out.push_str(t);
                if matches!(toks.peek(), Some(&"}") | Some(&"]")) {
                    if let Some(close) = toks.next() {
                        out.push_str(close);
                    }
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            "}" | "]" => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push_str(t);
            }
            "," => {
                out.push(',');
                newline(&mut out, depth);
            }
            ":" => out.push_str(": "),
            _ => out.push_str(t),
        }
    }
    out.push('\n');
    out
}

fn parse_error(file: FileId, text: &str, e: &serde_json::Error) -> Diagnostic {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(e.line().saturating_sub(1))
        .map(str::len)
        .sum();
    let at = (line_start + e.column().saturating_sub(1)).min(text.len());
    Diagnostic::error(
        "PW0001",
        Span::new(file, at..at),
        format!("invalid JSON: {e}"),
    )
    .with_label("the JSON parser stopped here")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_strings_are_copied_as_written() {
        let src = r#"{"z": 1, "a": 12345678901234567890123, "f": 0.10000000000000000555, "e": 1E2, "s": "caf\u00e9 \"q\" ]"}"#;
        assert_eq!(
            format(FileId(0), src).ok().as_deref(),
            Some(
                "{\n  \"z\": 1,\n  \"a\": 12345678901234567890123,\n  \"f\": 0.10000000000000000555,\n  \"e\": 1E2,\n  \"s\": \"caf\\u00e9 \\\"q\\\" ]\"\n}\n"
            )
        );
    }

    #[test]
    fn nesting_and_empty_collections() {
        let src = "{\"a\":[1,[],{}],\"b\":{\"c\":null,\"d\":[true,false]}}";
        let want = "{\n  \"a\": [\n    1,\n    [],\n    {}\n  ],\n  \"b\": {\n    \"c\": null,\n    \"d\": [\n      true,\n      false\n    ]\n  }\n}\n";
        assert_eq!(format(FileId(0), src).ok().as_deref(), Some(want));
        assert_eq!(format(FileId(0), want).ok().as_deref(), Some(want));
        assert_eq!(format(FileId(0), "[ ]").ok().as_deref(), Some("[]\n"));
        assert_eq!(format(FileId(0), " 7 ").ok().as_deref(), Some("7\n"));
    }

    #[test]
    fn invalid_json_is_reported_not_rewritten() {
        let errs = format(FileId(0), "{\"a\": [1,}").err().unwrap_or_default();
        assert_eq!(errs.first().map(|d| d.code), Some("PW0001"));
    }
}
