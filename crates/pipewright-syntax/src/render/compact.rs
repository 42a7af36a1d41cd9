//! A compact plain-text form of diagnostics, one line per diagnostic and one per detail, with
//! file paths relative to a root: what the dialects' fixture snapshots record (stable across
//! machines and free of the human renderer's layout).

use crate::diagnostic::Diagnostic;
use crate::source::{SourceMap, Span};
use std::path::Path;

/// `file:line:col code severity message`, then indented `label: MESSAGE `first line of the
/// primary span``, `secondary: POS MESSAGE`, `note: …` and `help: …` lines. File names under
/// `root` are shown relative to it.
pub fn compact(diags: &[Diagnostic], sources: &SourceMap, root: &Path) -> String {
    let pos = |sp: Span| {
        sources.get(sp.file).map_or("?".to_string(), |f| {
            let lc = f.line_col(sp.start as usize);
            let name = Path::new(&f.name)
                .strip_prefix(root)
                .map_or(f.name.clone(), |p| p.display().to_string());
            format!("{name}:{}:{}", lc.line, lc.col)
        })
    };
    let mut out = String::new();
    for d in diags {
        let text = sources.get(d.span().file).map_or("", |f| f.slice(d.span()));
        out.push_str(&format!(
            "{} {} {} {}\n",
            pos(d.span()),
            d.code,
            d.severity.as_str(),
            d.message
        ));
        out.push_str(&format!(
            "    label: {} `{}`\n",
            d.primary.message,
            text.lines().next().unwrap_or("")
        ));
        for s in &d.secondary {
            out.push_str(&format!("    secondary: {} {}\n", pos(s.span), s.message));
        }
        for n in &d.notes {
            out.push_str(&format!("    note: {n}\n"));
        }
        if let Some(h) = &d.help {
            out.push_str(&format!("    help: {h}\n"));
        }
    }
    out
}
