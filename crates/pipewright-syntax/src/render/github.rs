//! GitHub Actions workflow commands (`::error file=…::message`), which the runner turns into
//! annotations on the pull request.

use super::locate;
use crate::diagnostic::{Diagnostic, Severity};
use crate::source::SourceMap;

/// One workflow command per diagnostic, each on its own line.
pub fn github(diags: &[Diagnostic], sources: &SourceMap) -> String {
    let mut out = String::new();
    for d in diags {
        let command = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "notice",
        };
        let at = locate(sources, d.primary.span);
        let mut props: Vec<(&str, String)> = Vec::new();
        if let (Some(name), Some(start)) = (at.file_name(), at.start_lc) {
            props.push(("file", name.replace('\\', "/")));
            props.push(("line", start.line.to_string()));
            // GitHub drops columns on annotations that span several lines, and its end column is
            // inclusive (the last character), unlike our exclusive span end.
            let last = if at.end > at.start {
                locate_last_char(sources, d, at.end)
            } else {
                None
            };
            let end_line = last.map_or(start.line, |lc| lc.line);
            if end_line == start.line {
                props.push(("col", start.col.to_string()));
                props.push(("endLine", end_line.to_string()));
                props.push(("endColumn", last.map_or(start.col, |lc| lc.col).to_string()));
            } else {
                props.push(("endLine", end_line.to_string()));
            }
        }
        props.push(("title", d.code.to_string()));

        let mut message = d.message.clone();
        if !d.primary.message.is_empty() {
            message.push_str(": ");
            message.push_str(&d.primary.message);
        }
        for note in &d.notes {
            message.push_str("\nnote: ");
            message.push_str(note);
        }
        if let Some(help) = &d.help {
            message.push_str("\nhelp: ");
            message.push_str(help);
        }

        let props: Vec<String> = props
            .iter()
            .map(|(k, v)| format!("{k}={}", escape_property(v)))
            .collect();
        out.push_str(&format!(
            "::{command} {}::{}\n",
            props.join(","),
            escape_data(&message)
        ));
    }
    out
}

/// Line and column of the last character of a non-empty span ending at byte `end`.
fn locate_last_char(sources: &SourceMap, d: &Diagnostic, end: usize) -> Option<crate::LineCol> {
    let file = sources.get(d.primary.span.file)?;
    let last_start = file
        .text
        .get(..end)?
        .char_indices()
        .next_back()
        .map(|(i, _)| i)?;
    Some(file.line_col(last_start))
}

fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}
