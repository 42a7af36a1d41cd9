//! PW0263: a string-form shell command that splices a value in unquoted. `sh -c` reads the
//! whole string as shell code, so an input such as `x; touch pwned` spliced by `+` runs as a
//! command. The list form runs without a shell; `shell_quote` makes a value one literal word.

use crate::ast::Expr;
use crate::codes;
use pipewright_r1::{BinOp, Combinator, ExprKind};
use pipewright_syntax::Diagnostic;

type R1 = pipewright_r1::Expr;

/// Warns when the `command` expression `e` concatenates a string literal with an operand that
/// is neither a literal nor a `shell_quote(…)` call.
pub(super) fn check_command(e: &Expr, source: &str, diags: &mut Vec<Diagnostic>) {
    let Some(leaves) = unquoted_chain(&e.ast) else {
        return;
    };
    let Some(bad) = leaves.iter().find(|l| unquoted(l)) else {
        return;
    };
    let src = |x: &R1| e.src.get(x.span.range()).unwrap_or("value").to_string();
    let quoted = leaves
        .iter()
        .map(|l| match unquoted(l) {
            true => format!("shell_quote({})", src(l)),
            false => src(l),
        })
        .collect::<Vec<_>>()
        .join(" + ");
    let help = match list_form(&leaves, &src) {
        Some(list) => format!(
            "give `command` a list, which runs without a shell: `{list}`; or quote each value: `{quoted}`"
        ),
        None => format!(
            "quote each value: `{quoted}`; or give `command` a list that passes the values to the script as arguments: `['sh', '-c', 'script using \"$1\"', 'sh', {}]`",
            src(bad)
        ),
    };
    diags.push(
        Diagnostic::warning(
            codes::UNQUOTED_SPLICE,
            e.span_of(source, bad.span.range()),
            "a shell command string splices in a value without quoting it",
        )
        .with_label("the shell reads this value as code: `x; touch pwned` would run `touch`")
        .with_help(help),
    );
}

fn unquoted(l: &R1) -> bool {
    !matches!(
        l.kind,
        ExprKind::Str(_)
            | ExprKind::Call {
                func: Combinator::ShellQuote,
                ..
            }
    )
}

/// The operands, in order, of the first `+` chain that joins a string literal with an unquoted
/// operand. The operands of `and`/`or` are followed (`ctx.ok and 'ls ' + ctx.x or 'ls'` may
/// yield either); `+` chains are left-leaning and as long as the input, so both walks use a
/// stack.
fn unquoted_chain(root: &R1) -> Option<Vec<&R1>> {
    let mut results = vec![root];
    while let Some(e) = results.pop() {
        match &e.kind {
            ExprKind::Binary {
                op: BinOp::And | BinOp::Or,
                lhs,
                rhs,
            } => {
                results.push(rhs);
                results.push(lhs);
            }
            ExprKind::Binary { op: BinOp::Add, .. } => {
                let mut leaves = Vec::new();
                let mut stack = vec![e];
                while let Some(x) = stack.pop() {
                    match &x.kind {
                        ExprKind::Binary {
                            op: BinOp::Add,
                            lhs,
                            rhs,
                        } => {
                            stack.push(rhs);
                            stack.push(lhs);
                        }
                        _ => leaves.push(x),
                    }
                }
                // Without a string literal the `+` may join lists (the list form) or numbers.
                let text = leaves.iter().any(|l| matches!(l.kind, ExprKind::Str(_)));
                if text && leaves.iter().any(|l| unquoted(l)) {
                    return Some(leaves);
                }
            }
            _ => {}
        }
    }
    None
}

/// The same command as an R1 list (words split at the literals' spaces, a value glued to a
/// literal stays one element), when the literals hold no shell syntax that a list would lose.
fn list_form(leaves: &[&R1], src: &dyn Fn(&R1) -> String) -> Option<String> {
    let mut words: Vec<String> = Vec::new();
    let mut parts: Vec<String> = Vec::new();
    let mut lit = String::new();
    let flush_lit = |lit: &mut String, parts: &mut Vec<String>| {
        if !lit.is_empty() {
            parts.push(r1_string(lit));
            lit.clear();
        }
    };
    for l in leaves {
        match &l.kind {
            ExprKind::Str(s) => {
                for c in s.chars() {
                    if "|&;<>()$`\\\"'*?[]#~{}\n".contains(c) {
                        return None;
                    }
                    if c.is_whitespace() {
                        flush_lit(&mut lit, &mut parts);
                        if !parts.is_empty() {
                            words.push(parts.join(" + "));
                            parts.clear();
                        }
                    } else {
                        lit.push(c);
                    }
                }
            }
            _ => {
                flush_lit(&mut lit, &mut parts);
                parts.push(src(l));
            }
        }
    }
    flush_lit(&mut lit, &mut parts);
    if !parts.is_empty() {
        words.push(parts.join(" + "));
    }
    Some(format!("[{}]", words.join(", ")))
}

fn r1_string(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        if c == '\'' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}
