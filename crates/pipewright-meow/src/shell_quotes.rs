//! Where each `{{…}}` of a shell script sits in the shell's quoting. Values substituted into a
//! shell context are escaped already, so quotes written around a placeholder work against the
//! escaping (PW0633). Only what decides that is lexed: quotes, backslashes, `$(…)` (which opens
//! a fresh context inside double quotes), comments and heredoc bodies (whose quotes are text).

use crate::ast::{Step, Text};
use crate::check::Ctx;
use crate::codes;
use crate::executor::Executor;
use crate::steps;
use crate::toml_string::Mapped;
use crate::vars;
use pipewright_syntax::fix::Fix;
use pipewright_syntax::{Diagnostic, Span};

/// A placeholder inside one quoted string of the script.
#[derive(Debug, PartialEq)]
pub(crate) struct Quoted {
    /// The placeholder, `{{` to `}}`, as byte offsets in the script.
    pub at: usize,
    pub end: usize,
    /// `'` or `"`.
    pub quote: char,
    /// Offsets of the opening quote and of the closing one (`None`: the string never closes).
    pub open: usize,
    pub close: Option<usize>,
}

enum Frame {
    /// Shell code; `depth` counts the parentheses opened in it, so the `)` that ends a `$(`
    /// is told from a subshell's.
    Code { depth: usize },
    /// A double-quoted string opened at `open`; `inside` holds its placeholders so far.
    Double { open: usize, inside: Vec<usize> },
}

/// The quoted placeholders of `script`; `placeholders` are the (start, end) byte ranges of its
/// `{{…}}` references, in order.
pub(crate) fn quoted(script: &str, placeholders: &[(usize, usize)]) -> Vec<Quoted> {
    let b = script.as_bytes();
    let mut out: Vec<Quoted> = Vec::new();
    let mut stack = vec![Frame::Code { depth: 0 }];
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    let mut next_ref = 0;
    let mut i = 0;
    while i < b.len() {
        // A placeholder is one opaque word.
        while next_ref < placeholders.len() && placeholders[next_ref].0 < i {
            next_ref += 1;
        }
        if let Some(&(start, end)) = placeholders.get(next_ref) {
            if start == i {
                if let Some(Frame::Double { inside, .. }) = stack.last_mut() {
                    inside.push(next_ref);
                }
                next_ref += 1;
                i = end;
                continue;
            }
        }
        let c = b[i];
        match stack.last_mut() {
            Some(Frame::Double { open, inside }) => match c {
                b'\\' => i += 1,
                b'"' => {
                    let open = *open;
                    for &k in inside.iter() {
                        let (at, end) = placeholders[k];
                        out.push(Quoted {
                            at,
                            end,
                            quote: '"',
                            open,
                            close: Some(i),
                        });
                    }
                    stack.pop();
                }
                b'$' if b.get(i + 1) == Some(&b'(') => {
                    stack.push(Frame::Code { depth: 0 });
                    i += 1;
                }
                _ => {}
            },
            Some(Frame::Code { depth }) => match c {
                b'\\' => i += 1,
                b'\'' => {
                    let close = script[i + 1..].find('\'').map(|p| i + 1 + p);
                    let stop = close.unwrap_or(b.len());
                    while let Some(&(at, end)) = placeholders.get(next_ref) {
                        if at >= stop {
                            break;
                        }
                        if at > i {
                            out.push(Quoted {
                                at,
                                end,
                                quote: '\'',
                                open: i,
                                close,
                            });
                        }
                        next_ref += 1;
                    }
                    i = stop;
                }
                b'"' => stack.push(Frame::Double {
                    open: i,
                    inside: Vec::new(),
                }),
                b'(' => *depth += 1,
                b')' if *depth > 0 => *depth -= 1,
                // The end of a `$(…)`.
                b')' if stack.len() > 1 => {
                    stack.pop();
                }
                b'#' if i == 0 || b" \t\n;&|(".contains(&b[i - 1]) => {
                    i = script[i..].find('\n').map_or(b.len(), |p| i + p);
                    continue;
                }
                b'<' if b.get(i + 1) == Some(&b'<') && b.get(i + 2) != Some(&b'<') => {
                    let (delim, strip, after) = heredoc_word(script, i + 2);
                    if !delim.is_empty() {
                        heredocs.push((delim, strip));
                    }
                    i = after;
                    continue;
                }
                b'\n' if !heredocs.is_empty() => {
                    // The bodies start on the next line, one after another.
                    i += 1;
                    for (delim, strip) in std::mem::take(&mut heredocs) {
                        loop {
                            let line_end = script[i..].find('\n').map_or(b.len(), |p| i + p);
                            let line = &script[i..line_end];
                            let line = if strip {
                                line.trim_start_matches('\t')
                            } else {
                                line
                            };
                            i = (line_end + 1).min(b.len());
                            if line == delim || line_end >= b.len() {
                                break;
                            }
                        }
                    }
                    continue;
                }
                _ => {}
            },
            None => break,
        }
        i += 1;
    }
    // An unterminated double-quoted string still holds its placeholders.
    for f in stack {
        if let Frame::Double { open, inside } = f {
            for k in inside {
                let (at, end) = placeholders[k];
                out.push(Quoted {
                    at,
                    end,
                    quote: '"',
                    open,
                    close: None,
                });
            }
        }
    }
    out.sort_by_key(|q| q.at);
    out
}

/// The delimiter word after `<<` (at `from`): its text without quotes, whether `<<-` strips
/// leading tabs, and where the word ends.
fn heredoc_word(script: &str, from: usize) -> (String, bool, usize) {
    let b = script.as_bytes();
    let mut i = from;
    let strip = b.get(i) == Some(&b'-');
    if strip {
        i += 1;
    }
    while b.get(i).is_some_and(|c| *c == b' ' || *c == b'\t') {
        i += 1;
    }
    let mut word = String::new();
    while let Some(&c) = b.get(i) {
        match c {
            b'\'' | b'"' => {
                let close = script[i + 1..]
                    .find(c as char)
                    .map_or(b.len(), |p| i + 1 + p);
                word.push_str(&script[i + 1..close]);
                i = (close + 1).min(b.len());
            }
            b'\\' => i += 1,
            c if c.is_ascii_whitespace() || b";&|<>()".contains(&c) => break,
            _ => {
                let ch = script[i..].chars().next().unwrap_or(' ');
                word.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    (word, strip, i)
}

/// One edit of the fix: replace `range` of the script by `with`.
#[derive(Debug, PartialEq)]
pub(crate) struct Edit {
    pub at: usize,
    pub end: usize,
    pub with: char,
    /// `true`: insert `with` at `at`; `false`: remove the quote at `at..end`.
    pub insert: bool,
}

/// For each quoted placeholder, the edits that take it out of its quotes and leave the rest of
/// the quoted text quoted: a quote that only surrounds placeholders goes; where quoted text
/// meets a placeholder the quote is closed before it and reopened after it. Every edit belongs
/// to exactly one placeholder, so applying all of them together is consistent. `None` for a
/// string that never closes.
pub(crate) fn fixes(quoted: &[Quoted]) -> Vec<Option<Vec<Edit>>> {
    quoted
        .iter()
        .enumerate()
        .map(|(k, q)| {
            let close = q.close?;
            let mut edits = Vec::new();
            // The placeholders of the same string before and after this one.
            let prev = k
                .checked_sub(1)
                .map(|p| &quoted[p])
                .filter(|p| p.open == q.open);
            let next = quoted.get(k + 1).filter(|n| n.open == q.open);
            let before = prev.map_or(q.open + 1, |p| p.end);
            let after = next.map_or(close, |n| n.at);
            if before < q.at {
                edits.push(Edit {
                    at: q.at,
                    end: q.at,
                    with: q.quote,
                    insert: true,
                });
            } else if prev.is_none() {
                edits.push(Edit {
                    at: q.open,
                    end: q.open + 1,
                    with: q.quote,
                    insert: false,
                });
            }
            if q.end < after {
                edits.push(Edit {
                    at: q.end,
                    end: q.end,
                    with: q.quote,
                    insert: true,
                });
            } else if next.is_none() {
                edits.push(Edit {
                    at: close,
                    end: close + 1,
                    with: q.quote,
                    insert: false,
                });
            }
            Some(edits)
        })
        .collect()
}

/// The script with every edit applied (for the help text and the tests).
pub(crate) fn apply(script: &str, edits: &[&Edit]) -> String {
    let mut sorted: Vec<&&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.at, !e.insert));
    let mut out = String::with_capacity(script.len() + edits.len());
    let mut last = 0;
    for e in sorted {
        out.push_str(&script[last..e.at]);
        if e.insert {
            out.push(e.with);
        }
        last = e.end;
    }
    out.push_str(&script[last..]);
    out
}

/// PW0633 for the shell contexts of a step: a shell step's `command`, a branch's `condition`,
/// and the same fields of its inline steps.
pub(crate) fn check(cx: &mut Ctx, step: &Step) {
    let inlines = steps::inline_steps_of(step);
    let scripts = std::iter::once(step)
        .chain(&inlines)
        .filter_map(|s| match &s.executor {
            Executor::Shell(shell) => shell.command.script.as_ref(),
            Executor::Branch(branch) => branch.condition.script.as_ref(),
            _ => None,
        });
    for n in scripts {
        script(cx, n);
    }
}

fn script(cx: &mut Ctx, n: &Text) {
    let value = n.text.as_str();
    let refs: Vec<(usize, usize)> = vars::references_in(value)
        .iter()
        .map(|r| (r.at, r.at + r.inner.len() + 4))
        .collect();
    let found = quoted(value, &refs);
    if found.is_empty() {
        return;
    }
    let raw = cx.text.get(n.span.range()).unwrap_or("");
    let mapped = Mapped::new(raw, value);
    let to_src = |j: usize| mapped.as_ref().and_then(|m| m.starts.get(j).copied());
    let all_edits = fixes(&found);
    for (q, edits) in found.iter().zip(all_edits) {
        let placeholder = &value[q.at..q.end];
        let span = match (to_src(q.at), to_src(q.end)) {
            (Some(a), Some(b)) => n.span.sub(a..b),
            _ => n.span,
        };
        let (kind, effect) = if q.quote == '\'' {
            ("single", "a value with a space is split into several words")
        } else {
            (
                "double",
                "the quotes that escaping puts around a value with a space stay in the text",
            )
        };
        let mut d = Diagnostic::warning(
            codes::QUOTED_PLACEHOLDER,
            span,
            format!("`{placeholder}` is inside {kind} quotes, but its value is shell-escaped already"),
        )
        .with_label(format!("inside `{}…{}`", q.quote, q.quote))
        .with_note(format!("a value substituted into a shell context is single-quoted unless it is one plain word; inside {kind} quotes {effect}"))
        .with_note("the reference `meow` inserts values raw, so there the quotes were needed; the spec and `pipewright run` escape them");
        let fixed = edits
            .as_ref()
            .map(|e| apply(value, &e.iter().collect::<Vec<_>>()));
        if let (Some(edits), Some(m)) = (&edits, &mapped) {
            if let Some((span, new)) = source_edit(cx.text, n, m, edits) {
                d = d
                    .with_secondary(span, format!("replace with `{new}`"))
                    .with_fix(Fix::replace(
                        "Remove the quotes around the placeholder",
                        span,
                        new,
                    ));
            }
        }
        let help = match (&edits, fixed) {
            (Some(e), Some(f)) if e.iter().all(|e| !e.insert) => {
                format!(
                    "remove the quotes, the value is escaped already: `{}`",
                    excerpt(&f, q.open, q.at)
                )
            }
            (Some(_), Some(f)) => format!(
                "end the quotes around it, the value is escaped already: `{}`",
                excerpt(&f, q.open, q.at)
            ),
            _ => "remove the quotes around it: the value is escaped already".to_string(),
        };
        cx.diags.push(d.with_help(help));
    }
}

/// The edits of one placeholder as one replacement of the source between the first and the
/// last, written the way the TOML string writes quotes: the fix for `--fix` and quick fixes.
fn source_edit(text: &str, n: &Text, m: &Mapped, edits: &[Edit]) -> Option<(Span, String)> {
    let from = edits.iter().map(|e| e.at).min()?;
    let to = edits.iter().map(|e| e.end).max()?;
    let (a, b) = (*m.starts.get(from)?, *m.starts.get(to)?);
    let raw = text.get(n.span.range())?;
    let mut new = String::new();
    let mut last = a;
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.at, !e.insert));
    for e in sorted {
        let at = *m.starts.get(e.at)?;
        new.push_str(raw.get(last..at)?);
        if e.insert {
            new.push_str(m.write(e.with)?);
            last = at;
        } else {
            last = *m.starts.get(e.end)?;
        }
    }
    new.push_str(raw.get(last..b)?);
    if new.contains('\n') {
        return None;
    }
    Some((n.span.sub(a..b), new))
}

/// The line of the fixed script around the placeholder, for the help.
fn excerpt(fixed: &str, open: usize, at: usize) -> String {
    let near = open.min(at).min(fixed.len());
    let start = fixed[..near].rfind('\n').map_or(0, |p| p + 1);
    let end = fixed[near..].find('\n').map_or(fixed.len(), |p| near + p);
    fixed[start..end].trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(s: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut from = 0;
        while let Some(p) = s[from..].find("{{") {
            let at = from + p;
            let end = at + s[at..].find("}}").map_or(2, |e| e + 2);
            out.push((at, end));
            from = end;
        }
        out
    }

    /// The script with all fixes applied, and the quote of each quoted placeholder.
    fn fixed(s: &str) -> (String, String) {
        let q = quoted(s, &refs(s));
        let f = fixes(&q);
        let edits: Vec<&Edit> = f.iter().flatten().flatten().collect();
        (apply(s, &edits), q.iter().map(|q| q.quote).collect())
    }

    #[test]
    fn placeholders_in_quotes_are_found_with_their_fix() {
        assert_eq!(
            fixed("test '{{x}}' = 'true'"),
            ("test {{x}} = 'true'".into(), "'".into())
        );
        assert_eq!(
            fixed(r#"git commit -m "Merge {{name}} track""#),
            (
                r#"git commit -m "Merge "{{name}}" track""#.into(),
                "\"".into()
            )
        );
        assert_eq!(
            fixed(r#"echo "{{a}}-{{b}}" '{{c}}{{d}}' "x{{e}}""#),
            (
                r#"echo {{a}}"-"{{b}} {{c}}{{d}} "x"{{e}}"#.into(),
                "\"\"''\"".into()
            )
        );
    }

    #[test]
    fn unquoted_commented_heredoc_and_substituted_placeholders_are_not_quoted() {
        for s in [
            "echo {{x}} \\'{{y}}\\'",
            "echo hi # it's '{{x}}'",
            "cat <<EOF\necho '{{x}}' \"{{y}}\"\nEOF\necho {{z}}",
            "cat <<-'END' > f\n\techo '{{x}}'\n\tEND\n",
            r#"echo "$(basename {{x}})""#,
        ] {
            assert_eq!(fixed(s).1, "", "{s}");
        }
        // After the heredoc, quoting counts again.
        assert_eq!(fixed("cat <<EOF\nx\nEOF\necho '{{z}}'").1, "'");
        assert_eq!(fixed(r#"echo "$(cat '{{x}}')""#).1, "'");
    }

    #[test]
    fn an_unclosed_quote_has_no_fix() {
        let s = "echo '{{x}}";
        let q = quoted(s, &refs(s));
        assert_eq!(q.len(), 1);
        assert_eq!(fixes(&q), vec![None]);
    }
}
