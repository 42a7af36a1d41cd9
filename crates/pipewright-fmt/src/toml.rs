//! MEOW files are TOML. `toml_edit` keeps comments and layout; canonical form only normalises
//! the spacing around `=` (`key = value`) and strips trailing blanks, so nothing an author
//! wrote as a comment or a blank line can move. The result is read back and compared value by
//! value with the input before it is returned.

use pipewright_syntax::{Diagnostic, FileId, Span};
use toml_edit::{DocumentMut, Item, Table, Value};

pub fn format(file: FileId, text: &str) -> Result<String, Vec<Diagnostic>> {
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let at = e.span().map_or(0, |r| r.start);
        vec![Diagnostic::error(
            "PW0001",
            Span::new(file, at..at),
            format!("invalid TOML: {}", e.message()),
        )
        .with_label("the TOML parser stopped here")]
    })?;
    let before = canonical_doc(&doc);
    normalise(doc.as_table_mut(), 0);
    let spaced = doc.to_string();
    // Trailing blanks are trivia everywhere except inside a multi-line string, where they are
    // the value: the trimmed text is kept only if it still holds the same data.
    let trimmed = trim_lines(&spaced);
    let out = match trimmed.parse::<DocumentMut>() {
        Ok(d) if canonical_doc(&d) == before => trimmed,
        _ => end_with_one_newline(&spaced),
    };
    match out.parse::<DocumentMut>() {
        Ok(d) if canonical_doc(&d) == before => Ok(out),
        Ok(_) => Err(vec![crate::internal_error(
            file,
            "the normalised TOML reads back differently",
        )]),
        Err(_) => Err(vec![crate::internal_error(
            file,
            "the normalised TOML does not parse",
        )]),
    }
}

fn trim_lines(text: &str) -> String {
    let out = text
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n");
    end_with_one_newline(&out)
}

fn end_with_one_newline(text: &str) -> String {
    let mut out = text.trim_end_matches(['\n', '\r']).to_string();
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// The document's data with layout and comments dropped, as text: two documents with the same
/// rendering hold the same values.
fn canonical_doc(doc: &DocumentMut) -> String {
    let mut out = String::new();
    canonical_table(doc.as_table(), &mut out, 0);
    out
}

/// TOML's own parser bounds nesting far below this; the bound keeps the walk finite anyway.
const MAX_DEPTH: usize = 256;

fn canonical_table(t: &Table, out: &mut String, depth: usize) {
    out.push('{');
    for (k, item) in t.iter() {
        out.push_str(&format!("{k:?}:"));
        canonical_item(item, out, depth + 1);
        out.push(',');
    }
    out.push('}');
}

fn canonical_item(item: &Item, out: &mut String, depth: usize) {
    if depth > MAX_DEPTH {
        out.push('…');
        return;
    }
    match item {
        Item::None => out.push_str("none"),
        Item::Value(v) => canonical_value(v, out, depth),
        Item::Table(t) => canonical_table(t, out, depth),
        Item::ArrayOfTables(a) => {
            out.push('[');
            for t in a.iter() {
                canonical_table(t, out, depth + 1);
                out.push(',');
            }
            out.push(']');
        }
    }
}

fn canonical_value(v: &Value, out: &mut String, depth: usize) {
    if depth > MAX_DEPTH {
        out.push('…');
        return;
    }
    match v {
        Value::String(s) => out.push_str(&format!("s{:?}", s.value())),
        Value::Integer(i) => out.push_str(&format!("i{}", i.value())),
        Value::Float(f) => out.push_str(&format!("f{:?}", f.value())),
        Value::Boolean(b) => out.push_str(&format!("b{}", b.value())),
        Value::Datetime(d) => out.push_str(&format!("d{}", d.value())),
        Value::Array(a) => {
            out.push('[');
            for v in a.iter() {
                canonical_value(v, out, depth + 1);
                out.push(',');
            }
            out.push(']');
        }
        Value::InlineTable(t) => {
            out.push('{');
            for (k, v) in t.iter() {
                out.push_str(&format!("{k:?}:"));
                canonical_value(v, out, depth + 1);
                out.push(',');
            }
            out.push('}');
        }
    }
}

fn normalise(t: &mut Table, depth: usize) {
    if depth > 128 {
        return;
    }
    for (mut key, item) in t.iter_mut() {
        match item {
            Item::Value(v) => {
                // The prefix of a key holds the comments above it: only the gap before `=`
                // and the one after it are normalised.
                key.leaf_decor_mut().set_suffix(" ");
                v.decor_mut().set_prefix(" ");
            }
            Item::Table(sub) => normalise(sub, depth + 1),
            Item::ArrayOfTables(arr) => arr.iter_mut().for_each(|sub| normalise(sub, depth + 1)),
            Item::None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(s: &str) -> DocumentMut {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn blanks_that_end_lines_of_a_multi_line_string_are_kept() {
        let src = "[main]\ntext = \"\"\"\nline   \nend\"\"\"\nlit = '''\nraw  \n'''\nx=1   \n";
        let out = format(FileId(0), src).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(canonical_doc(&doc(&out)), canonical_doc(&doc(src)));
        assert!(out.contains("x = 1"), "{out}");
        assert_eq!(format(FileId(0), &out).ok().as_deref(), Some(out.as_str()));
    }

    #[test]
    fn blanks_outside_strings_are_trimmed() {
        let src = "# c   \n[main]  \nx=1   \n\n\n";
        assert_eq!(
            format(FileId(0), src).ok().as_deref(),
            Some("# c\n[main]\nx = 1\n")
        );
    }

    #[test]
    fn the_comparison_ignores_layout_but_not_values() {
        let a = doc("a = 1\n[t]\nb = \"x\"\n");
        let b = doc("a=1 # c\n\n[t]\nb='x'\n");
        let c = doc("a = 1\n[t]\nb = \"x \"\n");
        assert_eq!(canonical_doc(&a), canonical_doc(&b));
        assert_ne!(canonical_doc(&a), canonical_doc(&c));
    }
}
