//! MEOW files are TOML. `toml_edit` keeps comments and layout; canonical form normalises the
//! spacing around `=` (`key = value`), puts exactly one blank line before every table header
//! (`[[main.steps]]`) but the first, collapses runs of blank lines to one and strips trailing
//! blanks. Keys keep the order they were written in (authors order them by hand) and every
//! comment stays where it was, above the key or header it describes. The result is read back
//! and compared value by value with the input before it is returned.

use pipewright_syntax::{Diagnostic, FileId, Span};
use toml_edit::{DocumentMut, Item, Table, Value};

pub(crate) fn format(file: FileId, text: &str) -> Result<String, Vec<Diagnostic>> {
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
    normalise(doc.as_table_mut(), 0, false);
    // The first header gets a blank line like the others: no blank line may open the file.
    let spaced = without_leading_blank_lines(&doc.to_string()).to_string();
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

/// The text from its first line that is not blank (blank lines before the first key, comment or
/// header are never data).
fn without_leading_blank_lines(text: &str) -> &str {
    let mut rest = text;
    while let Some(nl) = rest.find('\n') {
        if !rest[..nl].trim().is_empty() {
            break;
        }
        rest = &rest[nl + 1..];
    }
    if rest.trim().is_empty() {
        ""
    } else {
        rest
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

/// `in_element`: `t` is (inside) an element of an array of tables, a step: its sub-tables
/// (`[main.steps.variables]`) belong to it and stay where they were written, only their blank
/// lines collapsed.
fn normalise(t: &mut Table, depth: usize, in_element: bool) {
    if depth > 128 {
        return;
    }
    for (mut key, item) in t.iter_mut() {
        match item {
            Item::Value(v) => {
                // The prefix of a key holds the comments above it: its blank lines are
                // collapsed, and the gap before `=` and the one after it are normalised.
                let decor = key.leaf_decor_mut();
                if let Some(p) = decor
                    .prefix()
                    .and_then(|p| p.as_str())
                    .map(collapse_blank_lines)
                {
                    decor.set_prefix(p);
                }
                decor.set_suffix(" ");
                v.decor_mut().set_prefix(" ");
            }
            Item::Table(sub) => {
                header(sub, !in_element);
                normalise(sub, depth + 1, in_element);
            }
            Item::ArrayOfTables(arr) => arr.iter_mut().for_each(|sub| {
                header(sub, true);
                normalise(sub, depth + 1, true);
            }),
            Item::None => {}
        }
    }
}

/// With `separate`: one blank line, then the comments written above the header (their own
/// blank lines collapsed), then the header; without, only the blank lines collapsed. An
/// implicit table (`a` of `[a.b]`) has no header.
fn header(t: &mut Table, separate: bool) {
    if t.is_implicit() {
        return;
    }
    let decor = t.decor_mut();
    let Some(raw) = decor.prefix().and_then(|p| p.as_str()).map(str::to_string) else {
        return;
    };
    if separate {
        let comments = collapse_blank_lines(raw.trim_start_matches(|c: char| c.is_whitespace()));
        decor.set_prefix(format!("\n{comments}"));
    } else {
        decor.set_prefix(collapse_blank_lines(&raw));
    }
}

/// Runs of blank lines become one; lines keep their text (comments) and the text after the
/// last newline (the indentation before what follows) is kept.
fn collapse_blank_lines(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len());
    let mut blank_run = 0;
    let mut lines = prefix.split('\n').peekable();
    while let Some(line) = lines.next() {
        if lines.peek().is_none() {
            // The part after the last newline: indentation, not a line of its own.
            out.push_str(line);
            break;
        }
        if line.trim().is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
            out.push('\n');
        } else {
            blank_run = 0;
            out.push_str(line);
            out.push('\n');
        }
    }
    out
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

    /// One blank line before every header but the first, comments kept above what they
    /// describe, runs of blank lines collapsed, keys in the order written.
    #[test]
    fn step_tables_are_separated_by_one_blank_line() {
        let src = "# module\n[main]\nname=\"demo\"\n[[main.steps]]\nid  =   \"a\"\nexecutor=\"shell\"\n\n\n\n# the second step\n\n\n[[main.steps]]\n\n\n\nid = \"b\" # b\n\n\n# runs last\nexecutor = \"shell\"\n";
        let out = format(FileId(0), src).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(
            out,
            "# module\n[main]\nname = \"demo\"\n\n[[main.steps]]\nid = \"a\"\nexecutor = \"shell\"\n\n# the second step\n\n[[main.steps]]\n\nid = \"b\" # b\n\n# runs last\nexecutor = \"shell\"\n"
        );
        assert_eq!(format(FileId(0), &out).ok().as_deref(), Some(out.as_str()));
        assert_eq!(canonical_doc(&doc(&out)), canonical_doc(&doc(src)));
    }

    /// A line of blanks before a comment opening the file is dropped at once, not on a
    /// second run (fuzz_toml finding, `" \n#"`).
    #[test]
    fn blank_lines_opening_the_file_go_in_one_run() {
        for src in [
            " \n#",
            "\n \n# c\n[main]\n",
            "  \n\t\n[[main.steps]]\nid = \"a\"\n",
            " ",
        ] {
            let out = format(FileId(0), src).unwrap_or_else(|d| panic!("{d:?}"));
            assert!(!out.starts_with(['\n', ' ', '\t']), "{src:?} -> {out:?}");
            assert_eq!(
                format(FileId(0), &out).ok().as_deref(),
                Some(out.as_str()),
                "{src:?}"
            );
        }
    }

    /// A step's own sub-tables stay against it; a workflow's do not.
    #[test]
    fn a_steps_sub_tables_stay_with_it() {
        let src = "[main]\nname = \"m\"\n[main.variables]\nx = { default = 1 }\n\n[[main.steps]]\nid = \"a\"\nexecutor = \"expand\"\n[main.steps.variables]\ny = \"{{x}}\"\n";
        let out = format(FileId(0), src).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(
            out,
            "[main]\nname = \"m\"\n\n[main.variables]\nx = { default = 1 }\n\n[[main.steps]]\nid = \"a\"\nexecutor = \"expand\"\n[main.steps.variables]\ny = \"{{x}}\"\n"
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
