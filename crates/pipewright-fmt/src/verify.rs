//! The safety net: a formatted file must load to the same values and carry the same comments
//! as its input. R1 expressions are compared after canonical printing (re-spacing them is the
//! point); everything else must be equal apart from spans and styles.

use crate::rules::{DialectRules, Seg};
use crate::trivia;
use crate::Canon;
use pipewright_syntax::FileId;
use pipewright_yaml::{Document, Entry, Limits, Node, NodeKind, ScalarStyle, ScalarValue};

/// `Err` says what differs (for the internal-error diagnostic and for tests).
pub fn check(
    file: FileId,
    before: &[Option<&Node>],
    before_comments: &[&str],
    after: &str,
    rules: &dyn DialectRules,
    canon: &Canon,
) -> Result<(), String> {
    let (docs, diags) = pipewright_yaml::load(file, after, Limits::default());
    if let Some(d) = diags.iter().find(|d| d.is_error() && d.code != "PW0005") {
        return Err(format!("the output does not load: {}", d.message));
    }
    let after_comments = trivia::comment_slices(after, &docs);
    if after_comments != before_comments {
        return Err(format!(
            "comments changed: {} before, {} after",
            before_comments.len(),
            after_comments.len()
        ));
    }
    same_docs_with(before, &docs, rules, canon)
}

pub fn same_docs(
    before: &[Option<&Node>],
    after: &[Document],
    rules: &dyn DialectRules,
) -> Result<(), String> {
    same_docs_with(before, after, rules, &Canon::default())
}

fn same_docs_with(
    before: &[Option<&Node>],
    after: &[Document],
    rules: &dyn DialectRules,
    canon: &Canon,
) -> Result<(), String> {
    let cx = Cx { rules, canon };
    if before.len() != after.len() {
        return Err(format!(
            "{} documents before, {} after",
            before.len(),
            after.len()
        ));
    }
    for (i, (a, b)) in before.iter().zip(after).enumerate() {
        match (a, &b.root) {
            (None, None) => {}
            (Some(a), Some(b)) => {
                let mut path = vec![Seg::Doc(rules.doc_kind(a))];
                same(a, b, &mut path, &cx).map_err(|e| format!("document {}: {e}", i + 1))?;
            }
            _ => return Err(format!("document {} became empty or non-empty", i + 1)),
        }
    }
    Ok(())
}

fn show(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Doc(_) => {}
            Seg::Key(k) => {
                s.push('.');
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// What the comparison needs besides the two trees.
struct Cx<'r> {
    rules: &'r dyn DialectRules,
    canon: &'r Canon,
}

/// Loader depth limits bound the recursion.
fn same<'a>(a: &'a Node, b: &'a Node, path: &mut Vec<Seg<'a>>, cx: &Cx) -> Result<(), String> {
    let at = || show(path);
    // `Tag` equality implies equal display; only unequal tags need the (allocating) display.
    let same_tag = match (&a.tag, &b.tag) {
        (None, None) => true,
        (Some(x), Some(y)) => x == y || x.display() == y.display(),
        _ => false,
    };
    if !same_tag {
        return Err(format!("tag changed at {}", at()));
    }
    match (&a.kind, &b.kind) {
        (NodeKind::Scalar(x), NodeKind::Scalar(y)) => {
            if y.style == ScalarStyle::Plain
                && b.tag.is_none()
                && crate::quote::yaml11_misread(y, cx.rules.yaml11_bool_words())
            {
                return Err(format!(
                    "YAML 1.1 loaders (the reference runtimes) would misread {:?} at {}",
                    y.text,
                    at()
                ));
            }
            // The same text read the same way (both plain, or both quoted/block: strings) is
            // the same value; only a changed text or style needs resolving.
            if x.text == y.text
                && (x.style == ScalarStyle::Plain) == (y.style == ScalarStyle::Plain)
            {
                return Ok(());
            }
            let (rx, ry) = (x.resolve(), y.resolve());
            let equal = match (rx, ry) {
                (ScalarValue::Str(p), ScalarValue::Str(q)) => {
                    // Locating the path is only worth it when the texts differ.
                    p == q
                        || ((a.tag.as_ref().is_some_and(|t| t.is_local("expr"))
                            || cx.rules.is_expression(path))
                            && cx.canon.same(p, q))
                }
                (ScalarValue::Float(p), ScalarValue::Float(q)) => {
                    p == q || (p.is_nan() && q.is_nan())
                }
                (p, q) => p == q,
            };
            if !equal {
                return Err(format!(
                    "value changed at {}: {:?} became {:?}",
                    at(),
                    x.text,
                    y.text
                ));
            }
        }
        (NodeKind::Seq(xs), NodeKind::Seq(ys)) => {
            if xs.len() != ys.len() {
                return Err(format!("list length changed at {}", at()));
            }
            for (i, (x, y)) in xs.iter().zip(ys).enumerate() {
                path.push(Seg::Index(i));
                same(x, y, path, cx)?;
                path.pop();
            }
        }
        (NodeKind::Map(xs), NodeKind::Map(ys)) => {
            if xs.len() != ys.len() {
                return Err(format!("mapping size changed at {}", at()));
            }
            // Key order is not meaning; the relative order of duplicate keys is (last wins).
            // When both sides list the keys in the same order, stable-sorting both would pair
            // the same entries, so pair them directly without sorting (the usual case once a
            // file is formatted).
            let same_order = xs
                .iter()
                .zip(ys)
                .all(|(x, y)| x.key.key_text() == y.key.key_text());
            if same_order {
                for (x, y) in xs.iter().zip(ys) {
                    same_entry(x, y, path, cx)?;
                }
            } else {
                let mut xs: Vec<_> = xs.iter().collect();
                let mut ys: Vec<_> = ys.iter().collect();
                xs.sort_by(|p, q| p.key.key_text().cmp(&q.key.key_text()));
                ys.sort_by(|p, q| p.key.key_text().cmp(&q.key.key_text()));
                for (x, y) in xs.into_iter().zip(ys) {
                    same_entry(x, y, path, cx)?;
                }
            }
        }
        _ => return Err(format!("node kind changed at {}", at())),
    }
    Ok(())
}

fn same_entry<'a>(
    x: &'a Entry,
    y: &'a Entry,
    path: &mut Vec<Seg<'a>>,
    cx: &Cx,
) -> Result<(), String> {
    same(&x.key, &y.key, path, cx)?;
    path.push(Seg::Key(x.key.key_text().unwrap_or("")));
    same(&x.value, &y.value, path, cx)?;
    path.pop();
    Ok(())
}
