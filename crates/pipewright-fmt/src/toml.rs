//! MEOW files are TOML. `toml_edit` keeps comments and layout; canonical form only normalises
//! the spacing around `=` (`key = value`) and strips trailing blanks, so nothing an author
//! wrote as a comment or a blank line can move.

use pipewright_syntax::{Diagnostic, FileId, Span};
use toml_edit::{DocumentMut, Item, Table};

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
    normalise(doc.as_table_mut(), 0);
    let mut out: String = doc
        .to_string()
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n");
    out.truncate(out.trim_end_matches('\n').len());
    if !out.is_empty() {
        out.push('\n');
    }
    if out.parse::<DocumentMut>().is_err() {
        return Err(vec![crate::internal_error(
            file,
            "the normalised TOML does not parse",
        )]);
    }
    Ok(out)
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
