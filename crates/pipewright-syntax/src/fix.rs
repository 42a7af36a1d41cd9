//! Fixes: the text changes that resolve a diagnostic. One place computes them for every user —
//! the language server's quick fixes and `pipewright check --fix` — so an editor and the command
//! line always offer the same change.
//!
//! A diagnostic's fixes are the ones its emitter attached ([`Diagnostic::with_fix`]) followed by
//! the did-you-mean replacements read from its help and secondary labels (what
//! [`crate::suggest`] writes): "did you mean `X`?" replaces the text it points at, when that is a
//! single word on one line of the diagnostic's own file.

use crate::diagnostic::Diagnostic;
use crate::source::Span;
use serde::Serialize;

/// One replacement of source text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Edit {
    pub span: Span,
    pub text: String,
}

/// A change that resolves a diagnostic, applied as a whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// What an editor shows: "Replace `setps` with `steps`".
    pub title: String,
    pub edits: Vec<Edit>,
}

impl Fix {
    pub fn replace(title: impl Into<String>, span: Span, text: impl Into<String>) -> Fix {
        Fix {
            title: title.into(),
            edits: vec![Edit {
                span,
                text: text.into(),
            }],
        }
    }
}

/// Every fix of `d` whose edits all fall in `d`'s own file, whose text is `text`.
pub fn fixes(d: &Diagnostic, text: &str) -> Vec<Fix> {
    let file = d.span().file;
    let mut out: Vec<Fix> = d
        .fixes
        .iter()
        .filter(|f| {
            !f.edits.is_empty()
                && f.edits
                    .iter()
                    .all(|e| e.span.file == file && text.get(e.span.range()).is_some())
        })
        .cloned()
        .collect();
    let mut offer = |span: Span, said: &str| {
        let Some(new) = suggestion(said) else {
            return;
        };
        let Some(old) = text.get(span.range()) else {
            return;
        };
        let word = |s: &str| !s.is_empty() && !s.contains(['\n', ' ', ':', '{', '[', ',']);
        // A quoted scalar's span includes its quotes: replace inside them.
        let (span, old) = match old.as_bytes().first() {
            Some(b'"' | b'\'') if old.len() >= 2 && old.ends_with(&old[..1]) => {
                (span.sub(1..old.len() - 1), &old[1..old.len() - 1])
            }
            _ => (span, old),
        };
        let taken = out
            .iter()
            .any(|f| f.edits.len() == 1 && f.edits[0].span == span);
        if span.file == file && word(old) && old != new && !taken {
            out.push(Fix::replace(
                format!("Replace `{old}` with `{new}`"),
                span,
                new,
            ));
        }
    };
    if let Some(h) = &d.help {
        offer(d.span(), h);
    }
    for l in &d.secondary {
        offer(l.span, &l.message);
    }
    out
}

/// The fix `check --fix` applies for `d`: its only one. A diagnostic with several candidate
/// fixes (two did-you-means) is left for a person to choose.
pub fn automatic(d: &Diagnostic, text: &str) -> Option<Fix> {
    let mut all = fixes(d, text);
    (all.len() == 1).then(|| all.remove(0))
}

/// `text` with the fixes applied, and how many were. Fixes are taken in order of their first
/// edit; one whose edits overlap an edit already taken (or each other) is skipped, to be
/// reconsidered after the next check.
pub fn apply(text: &str, fixes: &[Fix]) -> (String, usize) {
    let mut order: Vec<&Fix> = fixes.iter().filter(|f| !f.edits.is_empty()).collect();
    order.sort_by_key(|f| f.edits.iter().map(|e| e.span.start).min());
    let mut taken: Vec<&Edit> = Vec::new();
    let mut applied = 0;
    for f in order {
        let mut mine: Vec<&Edit> = f.edits.iter().collect();
        mine.sort_by_key(|e| (e.span.start, e.span.end));
        let overlaps = |a: &Edit, b: &Edit| {
            (a.span.start < b.span.end && b.span.start < a.span.end) || a.span.start == b.span.start
        };
        let clash = mine.windows(2).any(|w| overlaps(w[0], w[1]))
            || mine.iter().any(|e| taken.iter().any(|t| overlaps(e, t)))
            || mine.iter().any(|e| text.get(e.span.range()).is_none());
        if clash {
            continue;
        }
        taken.extend(mine);
        applied += 1;
    }
    taken.sort_by_key(|e| e.span.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for e in taken {
        out.push_str(&text[at..e.span.start as usize]);
        out.push_str(&e.text);
        at = e.span.end as usize;
    }
    out.push_str(&text[at..]);
    (out, applied)
}

fn suggestion(said: &str) -> Option<&str> {
    let rest = said.strip_prefix("did you mean `")?;
    let (word, after) = rest.split_once('`')?;
    after.starts_with('?').then_some(word)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FileId;

    #[test]
    fn did_you_mean_becomes_a_replacement_of_the_word_only() {
        let text = "a: \"ctx.nmae\"\nb: setps\n";
        let f = FileId(0);
        let d = Diagnostic::error("PW0000", Span::new(f, 3..13), "x")
            .with_help("did you mean `ctx.name`? Otherwise add it");
        let got = fixes(&d, text);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].edits[0].span.range(), 4..12);
        assert_eq!(got[0].edits[0].text, "ctx.name");
        assert_eq!(got[0].title, "Replace `ctx.nmae` with `ctx.name`");
        let d = Diagnostic::error("PW0000", Span::new(f, 0..1), "x")
            .with_secondary(Span::new(f, 17..22), "did you mean `steps`?");
        assert_eq!(fixes(&d, text)[0].edits[0].span.range(), 17..22);
        // Not a suggestion, a list, or a span over more than a word: nothing offered.
        for help in ["expected one of: `a`, `b`", "did you mean `x`", "use `y`"] {
            let d = Diagnostic::error("PW0000", Span::new(f, 17..22), "x").with_help(help);
            assert!(fixes(&d, text).is_empty(), "{help}");
        }
        let d =
            Diagnostic::error("PW0000", Span::new(f, 0..13), "x").with_help("did you mean `q`?");
        assert!(fixes(&d, text).is_empty());
    }

    #[test]
    fn attached_fixes_come_first_and_only_in_the_diagnostics_file() {
        let text = "parallel: no\n";
        let f = FileId(0);
        let d = Diagnostic::warning("PW0000", Span::new(f, 10..12), "x")
            .with_fix(Fix::replace("Write `false`", Span::new(f, 10..12), "false"))
            .with_fix(Fix::replace("elsewhere", Span::new(FileId(1), 0..1), "y"));
        let got = fixes(&d, text);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].title, "Write `false`");
        assert_eq!(automatic(&d, text), Some(got[0].clone()));
        // Two candidates: a person chooses.
        let two = d
            .clone()
            .with_fix(Fix::replace("quote", Span::new(f, 10..12), "\"no\""));
        assert_eq!(fixes(&two, text).len(), 2);
        assert_eq!(automatic(&two, text), None);
    }

    #[test]
    fn apply_skips_overlapping_fixes_and_keeps_the_rest() {
        let f = FileId(0);
        let text = "a: setps\nb: nmae\n";
        let fixes = [
            Fix::replace("1", Span::new(f, 3..8), "steps"),
            Fix::replace("2", Span::new(f, 4..6), "zz"),
            Fix::replace("3", Span::new(f, 12..16), "name"),
            Fix::replace("4", Span::new(f, 90..95), "out of range"),
        ];
        let (out, n) = apply(text, &fixes);
        assert_eq!((out.as_str(), n), ("a: steps\nb: name\n", 2));
        assert_eq!(apply(text, &[]), (text.to_string(), 0));
    }
}
