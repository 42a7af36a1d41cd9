//! The safety net: a formatted file must load to the same values and carry the same comments
//! as its input. R1 expressions are compared after canonical printing (re-spacing them is the
//! point); everything else must be equal apart from spans and styles.

use crate::rules::{DialectRules, ExprChildren, Seg};
use crate::trivia;
use crate::Canon;
use pipewright_syntax::FileId;
use pipewright_yaml::{Document, Entry, Limits, Node, NodeKind, ScalarStyle, ScalarValue};
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::Hasher;

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

/// What the formatter checks, without both trees in memory at once: `before` is the input's
/// [`digest`] (its tree already dropped), `after` the formatted text. Loads `after`, compares the
/// comments, and compares its digest with `before`. A different digest is reported as
/// [`Verdict::Differs`], for the caller to find what changed by comparing the trees.
pub fn check_digest(
    file: FileId,
    before: u64,
    before_comments: &[&str],
    after: &str,
    rules: &dyn DialectRules,
    canon: &Canon,
) -> Verdict {
    let (docs, diags) = pipewright_yaml::load(file, after, Limits::default());
    if let Some(d) = diags.iter().find(|d| d.is_error() && d.code != "PW0005") {
        return Verdict::Failed(format!("the output does not load: {}", d.message));
    }
    let after_comments = trivia::comment_slices(after, &docs);
    if after_comments != before_comments {
        return Verdict::Failed(format!(
            "comments changed: {} before, {} after",
            before_comments.len(),
            after_comments.len()
        ));
    }
    let roots: Vec<Option<&Node>> = docs.iter().map(|d| d.root.as_ref()).collect();
    match digest_with(&roots, rules, canon, true) {
        Err(why) => Verdict::Failed(why),
        Ok(d) if d == before => Verdict::Same,
        Ok(_) => Verdict::Differs(docs),
    }
}

/// The outcome of [`check_digest`].
pub enum Verdict {
    Same,
    /// The values differ; the formatted text's documents, to compare with the input's.
    Differs(Vec<Document>),
    Failed(String),
}

/// A hash of what the documents mean, equal for two sets of documents exactly when
/// [`same_docs`] finds them equal (up to hash collisions): tags, resolved scalar values (R1
/// expressions in canonical form), sequences in order, mappings in any key order but with
/// duplicate keys in their relative order (keys compared by value: `010` and `10` are one key,
/// as the printer may respell a number).
pub fn digest(roots: &[Option<&Node>], rules: &dyn DialectRules, canon: &Canon) -> u64 {
    // Without the YAML 1.1 check nothing fails.
    digest_with(roots, rules, canon, false).unwrap_or(0)
}

/// [`digest`]; `yaml11`: also fail on a plain scalar that YAML 1.1 loaders read differently
/// (checked on the formatter's output, not on its input).
fn digest_with(
    roots: &[Option<&Node>],
    rules: &dyn DialectRules,
    canon: &Canon,
    yaml11: bool,
) -> Result<u64, String> {
    let cx = Cx { rules, canon };
    // A fast streaming hash (the digest is computed over every node of two trees per file);
    // it is a net for formatter bugs, not a defence against chosen inputs.
    let mut h = FxHasher::default();
    h.write_usize(roots.len());
    for (i, r) in roots.iter().enumerate() {
        match r {
            None => h.write_u8(0),
            Some(n) => {
                h.write_u8(1);
                let mut path = vec![Seg::Doc(rules.doc_kind(n))];
                let expr = rules.is_expression(&path);
                feed(n, &mut path, &cx, yaml11, expr, None, &mut h)
                    .map_err(|e| format!("document {}: {e}", i + 1))?;
            }
        }
    }
    Ok(mix(h.finish()))
}

/// A full-avalanche finish (MurmurHash3's), so that sums of entry hashes stay spread.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Feeds what `n` means into `h`. `expr`: the dialect places an R1 expression at `path` (the
/// parent asks once for all its children). `known`: the dialect's
/// [`DialectRules::expression_children`] for `n`, when the caller has it (the items of a
/// sequence share it). Loader depth limits bound the recursion.
fn feed<'a>(
    n: &'a Node,
    path: &mut Vec<Seg<'a>>,
    cx: &Cx,
    yaml11: bool,
    expr: bool,
    known: Option<ExprChildren>,
    h: &mut FxHasher,
) -> Result<(), String> {
    match &n.tag {
        // As displayed: tags that display alike are the same tag (see `same`).
        Some(t) => {
            h.write_u8(1);
            if t.handle == "tag:yaml.org,2002:" {
                h.write(b"!!");
            } else {
                h.write(t.handle.as_bytes());
            }
            h.write(t.suffix.as_bytes());
            h.write_u8(0xff);
        }
        None => h.write_u8(0),
    }
    match &n.kind {
        NodeKind::Scalar(sc) => {
            // A plain `no` the runner reads as False is kept plain (`quote::render_into`): the
            // digest tells it from a quoted "no", so neither reader's value can change.
            let bool_word = cx.rules.yaml11_bool_words()
                && sc.style == ScalarStyle::Plain
                && n.tag.is_none()
                && crate::quote::pyyaml_bool_word(&sc.text);
            if bool_word {
                h.write_u8(0xb0);
            }
            if yaml11
                && !bool_word
                && sc.style == ScalarStyle::Plain
                && n.tag.is_none()
                && crate::quote::yaml11_misread(sc, cx.rules.yaml11_bool_words())
            {
                return Err(format!(
                    "YAML 1.1 loaders (the reference runtimes) would misread {:?} at {}",
                    sc.text,
                    show(path)
                ));
            }
            // Plain text that cannot be null, a boolean or a number is a string: known without
            // resolving it (most scalars; see `quote::plain_ok`).
            let value = match sc.text.as_bytes().first() {
                Some(b)
                    if sc.style != ScalarStyle::Plain
                        || !matches!(
                            b,
                            b'0'..=b'9'
                                | b'+'
                                | b'-'
                                | b'.'
                                | b'~'
                                | b'n'
                                | b'N'
                                | b't'
                                | b'T'
                                | b'f'
                                | b'F'
                        ) =>
                {
                    ScalarValue::Str(&sc.text)
                }
                _ => sc.resolve(),
            };
            match value {
                ScalarValue::Null => h.write_u8(2),
                ScalarValue::Bool(b) => h.write_u16(0x300 | u16::from(b)),
                ScalarValue::Int(i) => {
                    h.write_u8(4);
                    h.write_i64(i);
                }
                ScalarValue::Float(f) => {
                    // Equal as `same` compares floats: NaN equals NaN, -0.0 equals 0.0.
                    let bits = if f.is_nan() {
                        f64::NAN.to_bits()
                    } else if f == 0.0 {
                        0
                    } else {
                        f.to_bits()
                    };
                    h.write_u8(5);
                    h.write_u64(bits);
                }
                ScalarValue::Str(t) => {
                    h.write_u8(6);
                    let expr = expr || n.tag.as_ref().is_some_and(|t| t.is_local("expr"));
                    let text = |h: &mut FxHasher, t: &str| {
                        h.write_usize(t.len());
                        h.write(t.as_bytes());
                    };
                    if expr {
                        cx.canon.with(t, |c| text(h, c.unwrap_or(t)));
                    } else {
                        text(h, t);
                    }
                }
            }
        }
        NodeKind::Seq(items) => {
            h.write_u8(7);
            h.write_usize(items.len());
            let exprs = known.unwrap_or_else(|| cx.rules.expression_children(path, true));
            // What the items' own children are does not depend on the item's index: asked
            // once per sequence for the mapping items and once for the sequence items.
            let (mut of_maps, mut of_seqs) = (None, None);
            for (i, item) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                let expr = exprs.has(None, || cx.rules.is_expression(path));
                let known = match &item.kind {
                    NodeKind::Map(_) => {
                        *of_maps.get_or_insert_with(|| cx.rules.expression_children(path, false))
                    }
                    NodeKind::Seq(_) => {
                        *of_seqs.get_or_insert_with(|| cx.rules.expression_children(path, true))
                    }
                    NodeKind::Scalar(_) => ExprChildren::None,
                };
                feed(item, path, cx, yaml11, expr, Some(known), h)?;
                path.pop();
            }
        }
        NodeKind::Map(entries) => {
            h.write_u8(8);
            h.write_usize(entries.len());
            // Key order is not meaning, so entries are summed; the relative order of duplicate
            // keys is (the last wins), so each entry counts which occurrence of its key it is.
            // Keys are told apart by value, counted in a small array, or a map for large
            // mappings.
            let exprs = known.unwrap_or_else(|| cx.rules.expression_children(path, false));
            let mut small = [0u64; 8];
            let mut seen: FxHashMap<u64, u32> = FxHashMap::default();
            let mut sum = 0u64;
            for (i, e) in entries.iter().enumerate() {
                let mut eh = FxHasher::default();
                // Keys are never expressions.
                feed(&e.key, path, cx, yaml11, false, None, &mut eh)?;
                let key = eh.finish();
                let nth = if entries.len() <= small.len() {
                    small[i] = key;
                    small[..i].iter().filter(|&&p| p == key).count() as u32
                } else {
                    let c = seen.entry(key).or_default();
                    *c += 1;
                    *c - 1
                };
                eh.write_u32(nth);
                let k = e.key.key_text().unwrap_or("");
                path.push(Seg::Key(k));
                let expr = exprs.has(Some(k), || cx.rules.is_expression(path));
                feed(&e.value, path, cx, yaml11, expr, None, &mut eh)?;
                path.pop();
                sum = sum.wrapping_add(mix(eh.finish()));
            }
            h.write_u64(sum);
        }
    }
    Ok(())
}

pub fn same_docs(
    before: &[Option<&Node>],
    after: &[Document],
    rules: &dyn DialectRules,
) -> Result<(), String> {
    same_docs_with(before, after, rules, &Canon::default())
}

pub(crate) fn same_docs_with(
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

/// What a key sorts by when the two sides list their keys in different orders: its value, not
/// its text, so that a key the formatter respelled for YAML 1.1 readers (`00` → `0`, `010` →
/// `10`) pairs with itself (sorted by text, `0#`, `00` paired `0#` with `0`; found by the
/// fmt_yaml fuzz target).
fn key_rank(key: &Node) -> (u8, String) {
    match &key.kind {
        NodeKind::Scalar(s) => match s.resolve() {
            ScalarValue::Str(t) => (0, t.to_string()),
            ScalarValue::Int(i) => (1, i.to_string()),
            ScalarValue::Float(f) => (2, format!("{f:?}")),
            ScalarValue::Bool(b) => (3, b.to_string()),
            ScalarValue::Null => (4, String::new()),
        },
        NodeKind::Seq(_) | NodeKind::Map(_) => (5, String::new()),
    }
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
            // A plain `no` that PyYAML reads as False may stay plain, only where it was plain
            // (see `feed`): then neither reader's value changed.
            let words = cx.rules.yaml11_bool_words();
            let bool_word = |n: &Node, s: &pipewright_yaml::Scalar| {
                words
                    && s.style == ScalarStyle::Plain
                    && n.tag.is_none()
                    && crate::quote::pyyaml_bool_word(&s.text)
            };
            if bool_word(b, y) != bool_word(a, x) {
                return Err(format!(
                    "a plain YAML 1.1 boolean word was quoted or unquoted at {}",
                    at()
                ));
            }
            if !bool_word(b, y)
                && y.style == ScalarStyle::Plain
                && b.tag.is_none()
                && crate::quote::yaml11_misread(y, words)
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
                xs.sort_by_cached_key(|e| key_rank(&e.key));
                ys.sort_by_cached_key(|e| key_rank(&e.key));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{CstPath, DialectRules};
    use proptest::prelude::*;

    /// A dialect whose `value` keys hold R1 expressions, as a pipeline's `transform` does (the
    /// dialects' own rules live in their crates, above this one).
    struct ValueIsExpression;

    impl DialectRules for ValueIsExpression {
        fn doc_kind(&self, _root: &Node) -> &'static str {
            "test"
        }
        fn key_order(&self, _path: &CstPath) -> Option<&'static [&'static str]> {
            None
        }
        fn is_expression(&self, path: &CstPath) -> bool {
            path.last() == Some(&Seg::Key("value"))
        }
        fn prefer_flow(&self, _path: &CstPath) -> bool {
            false
        }
    }

    fn agree(a: &str, b: &str) -> (bool, bool) {
        let load = |t: &str| pipewright_yaml::load(FileId(0), t, Limits::default()).0;
        let (x, y) = (load(a), load(b));
        let rx: Vec<_> = x.iter().map(|d| d.root.as_ref()).collect();
        let ry: Vec<_> = y.iter().map(|d| d.root.as_ref()).collect();
        let canon = Canon::default();
        let rules = ValueIsExpression;
        let by_tree = same_docs(&rx, &y, &rules).is_ok();
        let by_digest = digest(&rx, &rules, &canon) == digest(&ry, &rules, &canon);
        (by_tree, by_digest)
    }

    #[test]
    fn digests_agree_with_the_tree_comparison() {
        let step = |v: &str| format!("pipeline: p\nsteps:\n  - transform: {{value: {v}}}\n");
        for (a, b, same) in [
            ("a: 1\nb: 2\n", "b: 2\na: 1\n", true),
            ("a: 0x10\n", "a: 16\n", true),
            ("a: 'x'\n", "a: x\n", true),
            ("a: -0.0\n", "a: 0.0\n", true),
            ("a: .nan\n", "a: .NaN\n", true),
            ("a: 010\n", "a: 10\n", true),
            ("a: 1e3\n", "a: 1.0e+3\n", true),
            ("a: !expr x+1\n", "a: !expr x + 1\n", true),
            ("a: [1, 2]\n", "a:\n  - 1\n  - 2\n", true),
            ("a: 1\n---\nb: 2\n", "a: 1\n---\nb: 2\n", true),
            ("a: 1\na: 2\n", "a: 1\na: 2\n", true),
            ("a: 1\nb: 2\na: 3\n", "b: 2\na: 1\na: 3\n", true),
            ("010: a\n", "10: a\n", true),
            ("1: a\n", "'1': a\n", false),
            ("a: 1\na: 2\n", "a: 2\na: 1\n", false),
            ("a: 1\n", "a: 2\n", false),
            ("a: 1\n", "a: '1'\n", false),
            ("a: x+1\n", "a: x + 1\n", false),
            ("a: !expr x\n", "a: x\n", false),
            ("a: [1, 2]\n", "a: [2, 1]\n", false),
            ("a: {b: 1}\n", "a: {c: 1}\n", false),
            ("a: 1\n---\nb: 2\n", "b: 2\n---\na: 1\n", false),
            ("a: 1\n", "a: 1\n---\n", false),
        ] {
            assert_eq!(agree(a, b), (same, same), "{a:?} vs {b:?}");
        }
        // Expressions where the dialect says so, and only there.
        assert_eq!(agree(&step("a+b"), &step("a + b")), (true, true));
        assert_eq!(agree(&step("a+b"), &step("a - b")), (false, false));
    }

    proptest! {
        #[test]
        fn digests_agree_on_generated_mappings(
            a in prop::collection::vec(("[abc]", "[0-9x'+]{1,3}", any::<bool>()), 0..6),
            b in prop::collection::vec(("[abc]", "[0-9x'+]{1,3}", any::<bool>()), 0..6),
        ) {
            // Plain values resolve to numbers or strings, quoted ones stay strings.
            let doc = |v: &[(String, String, bool)]| {
                let mut s = String::from("m:\n");
                for (k, x, plain) in v {
                    let x = if *plain && !x.contains('\'') {
                        x.clone()
                    } else {
                        crate::quote::double(x)
                    };
                    s.push_str(&format!("  {k}: {x}\n"));
                }
                s
            };
            let (t, d) = agree(&doc(&a), &doc(&b));
            prop_assert_eq!(t, d);
        }
    }
}

#[cfg(test)]
mod digest_check_tests {
    use super::*;
    use crate::rules::GenericRules;

    fn verdict(before: &str, after: &str) -> Verdict {
        let (docs, _) = pipewright_yaml::load(FileId(0), before, Limits::default());
        let roots: Vec<_> = docs.iter().map(|d| d.root.as_ref()).collect();
        let canon = Canon::default();
        let d = digest(&roots, &GenericRules, &canon);
        let (_, _, comments) = trivia::collect_with_texts(before, &docs);
        check_digest(FileId(0), d, &comments, after, &GenericRules, &canon)
    }

    #[test]
    fn check_digest_tells_same_changed_and_broken_apart() {
        assert!(matches!(
            verdict("a: 1 # c\nb: x\n", "b: x\na: 1 # c\n"),
            Verdict::Same
        ));
        assert!(matches!(verdict("a: 1\n", "a: 2\n"), Verdict::Differs(_)));
        let failed = |before: &str, after: &str| match verdict(before, after) {
            Verdict::Failed(why) => why,
            _ => String::from("not failed"),
        };
        assert!(failed("a: 1 # c\n", "a: 1\n").contains("comments changed"));
        assert!(failed("a: 1\n", "a: [\n").contains("does not load"));
        assert!(failed("a: 'y'\n", "a: y\n").contains("YAML 1.1"));
        // A quoted `yes` unquoted becomes the runner's True: never the same (PW0541).
        assert!(!matches!(verdict("a: 'yes'\n", "a: yes\n"), Verdict::Same));
    }
}
