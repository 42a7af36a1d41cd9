//! `--format concise`: one line per diagnostic, `FILE:LINE:COL: CODE [*] severity: message`, as
//! ruff's concise output and compilers' one-line form (which editors and `grep` read). `[*]`
//! marks a diagnostic `check --fix` would fix ([`crate::fix::automatic`]).

use super::locate;
use super::printable::escaped;
use crate::diagnostic::Diagnostic;
use crate::source::SourceMap;

pub fn concise(diags: &[Diagnostic], sources: &SourceMap) -> String {
    let mut out = String::new();
    for d in diags {
        let at = locate(sources, d.primary.span);
        match (at.file_name(), at.start_lc) {
            (Some(name), Some(lc)) => {
                out.push_str(&format!("{}:{}:{}: ", escaped(name), lc.line, lc.col))
            }
            _ => out.push_str("<unknown>: "),
        }
        let fixable = at
            .file
            .is_some_and(|f| crate::fix::automatic(d, &f.text).is_some());
        out.push_str(d.code);
        out.push(' ');
        if fixable {
            out.push_str("[*] ");
        }
        out.push_str(d.severity.as_str());
        out.push_str(": ");
        // One line: a message never holds a line break today, but a label could.
        out.push_str(&escaped(&d.message).replace('\n', " "));
        out.push('\n');
    }
    out
}
