//! The concrete syntax tree the printer works on: the span-keeping node tree of
//! `pipewright-yaml` (which saphyr builds correctly for every YAML corner case) plus what that
//! tree forgets — comments, blank lines, anchors, aliases and document markers — recovered from
//! the source text between the nodes' spans.

use crate::trivia::{self, Trivia};
use pipewright_syntax::{Diagnostic, FileId, Span};
use pipewright_yaml::{Limits, Node, NodeKind, ScalarStyle};

/// One `---` document with the comments that follow its last node.
pub struct CstDoc {
    pub root: Option<Node>,
    /// Trivia after the document's last node (before the next `---` or the end of file).
    pub trailing: Vec<trivia::Item>,
}

pub struct Cst<'a> {
    pub src: &'a str,
    pub docs: Vec<CstDoc>,
    pub trivia: Trivia,
    /// How many of `docs` the loader produced (a comment-only file gets one more).
    pub loaded: usize,
    /// Every comment of the source, sorted: what the output must carry too.
    pub comments: Vec<&'a str>,
}

/// What the source says about a node beyond the loader's tree: its anchor, whether it is an
/// alias, where its content starts after the properties, and whether it is a flow collection.
#[derive(Debug, Clone, Copy)]
pub struct Props<'a> {
    pub anchor: Option<&'a str>,
    pub alias: bool,
    pub content_start: usize,
    pub flow: bool,
}

pub fn props<'a>(src: &'a str, node: &Node) -> Props<'a> {
    let start = node.span.start as usize;
    let end = (node.span.end as usize).max(start);
    let text = src.get(start..end).unwrap_or("");
    // Most nodes start with their content: nothing below applies to them (the printer asks
    // for every node, several times).
    if !matches!(
        text.as_bytes().first(),
        Some(b'*' | b'&' | b'!' | b'{' | b'[' | b' ' | b'\t' | b'\r' | b'\n')
    ) {
        return Props {
            anchor: None,
            alias: false,
            content_start: start,
            flow: false,
        };
    }
    // An alias's span is its `*name` token. A block scalar's span starts at its first content
    // line, which may start with `*` too (`|` then `**/.git/**`): that is no alias.
    // No properties either when it starts with `&` or `!`.
    let content_line = is_block_scalar(node) && after_block_header(src, start);
    if content_line {
        return Props {
            anchor: None,
            alias: false,
            content_start: start,
            flow: false,
        };
    }
    if text.starts_with('*') {
        return Props {
            anchor: None,
            alias: true,
            content_start: start,
            flow: false,
        };
    }
    if let NodeKind::Map(es) = &node.kind {
        // A block mapping is spanned from its first key, properties included: `&a k: v`
        // anchors the key, not the mapping.
        if es
            .first()
            .is_some_and(|e| e.key.span.start == node.span.start)
        {
            return Props {
                anchor: None,
                alias: false,
                content_start: start,
                flow: false,
            };
        }
    }
    let mut anchor = None;
    let mut i = 0usize;
    let bytes = text.as_bytes();
    // A block collection's properties end where its first child starts: `&a\n&b k: 1` anchors
    // the mapping `a` and its key `b` (read as one run, `b` was printed for both; found by the
    // fmt_yaml fuzz target).
    let first_child = match &node.kind {
        NodeKind::Map(es) => es.first().map(|e| e.key.span.start as usize),
        NodeKind::Seq(items) => items.first().map(|n| n.span.start as usize),
        NodeKind::Scalar(_) => None,
    }
    // A collection spanned from its first child on has no properties of its own: the loader
    // spans a block sequence at its parent key's indentation (`x:` then `- &a [1]`) from its
    // first item's, and `&a` was printed for both (found by the fmt_yaml fuzz target).
    .map_or(usize::MAX, |c| c.saturating_sub(start));
    // Properties (`&anchor`, `!tag`) precede the content, separated by blanks or line breaks.
    loop {
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'\r' | b'\n') {
            i += 1;
        }
        if i >= first_child {
            break;
        }
        let Some(&c) = bytes.get(i) else { break };
        if c != b'&' && c != b'!' {
            break;
        }
        // An anchor or tag also ends at a flow indicator (`&a{}` is the anchor `a` on `{}`).
        // A verbatim tag (`!<tag:yaml.org,2002:str>`) ends at its `>`.
        let verbatim = text[i..].starts_with("!<");
        let tok_end = if verbatim {
            text[i..].find('>').map(|j| i + j + 1)
        } else {
            None
        }
        .or_else(|| {
            text[i..]
                .find([' ', '\t', '\r', '\n', ',', '[', ']', '{', '}'])
                .map(|j| i + j)
        })
        .unwrap_or(text.len());
        if c == b'&' {
            anchor = text.get(i + 1..tok_end);
        }
        i = tok_end;
    }
    if i == 0 {
        // No properties: the content starts at the span (block scalars' spans start at their
        // first content line, which is not a property).
        let flow = matches!(node.kind, NodeKind::Map(_) | NodeKind::Seq(_))
            && matches!(bytes.first(), Some(b'{' | b'['));
        return Props {
            anchor: None,
            alias: false,
            content_start: start,
            flow,
        };
    }
    let flow = matches!(node.kind, NodeKind::Map(_) | NodeKind::Seq(_))
        && matches!(bytes.get(i), Some(b'{' | b'['));
    Props {
        anchor,
        alias: false,
        content_start: start + i,
        flow,
    }
}

/// Where a scalar ends. The loader spans a quoted scalar with properties (`&a "x"`,
/// `!!str 'x'`) to the end of its line, over a comment after it, which then counted as
/// text and was dropped: such a scalar ends at its closing quote.
pub fn scalar_end(src: &str, node: &Node, p: &Props) -> usize {
    let end = node.span.end as usize;
    let quoted = matches!(&node.kind, NodeKind::Scalar(s)
        if matches!(s.style, ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted));
    if p.alias || !quoted || p.content_start <= node.span.start as usize {
        return end;
    }
    closing_quote(src, p.content_start).map_or(end, |e| e.min(end).max(p.content_start))
}

/// The end of the quoted scalar starting at `start` (just after its closing quote).
fn closing_quote(src: &str, start: usize) -> Option<usize> {
    let b = src.as_bytes();
    let q = *b.get(start)?;
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' if q == b'"' => i += 2,
            c if c == q => {
                // `''` is an escaped quote inside single quotes.
                if q == b'\'' && b.get(i + 1) == Some(&b'\'') {
                    i += 2;
                } else {
                    return Some(i + 1);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// Whether `at` starts a line's content (only blanks before it) whose previous non-blank line
/// ends with a block scalar header (`|`, `>-`, `|2+`, a comment after it allowed).
pub(crate) fn after_block_header(src: &str, at: usize) -> bool {
    let Some(before) = src.get(..at) else {
        return false;
    };
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    if !before[line_start..]
        .bytes()
        .all(|b| b == b' ' || b == b'\t')
    {
        return false;
    }
    let mut end = line_start;
    while end > 0 {
        let prev = &before[..end - 1];
        let prev_start = prev.rfind('\n').map_or(0, |i| i + 1);
        let line = prev[prev_start..].trim_end_matches('\r');
        if line.trim().is_empty() {
            end = prev_start;
            continue;
        }
        // `# |` is no header.
        let code = line[..comment_start(line).unwrap_or(line.len())].trim_end();
        let tok = code.rsplit([' ', '\t']).next().unwrap_or("");
        return tok.starts_with(['|', '>'])
            && tok[1..]
                .bytes()
                .all(|b| b.is_ascii_digit() || b == b'+' || b == b'-');
    }
    false
}

/// Whether a node prints as nothing: an empty plain scalar (a null written as nothing) without
/// tag or anchor. The loader may span it over the character after it (`{k}`, `? `), so it is
/// no token either.
pub fn prints_nothing(src: &str, n: &Node) -> bool {
    n.tag.is_none()
        && n.as_scalar()
            .is_some_and(|s| s.style == ScalarStyle::Plain && s.text.is_empty())
        && {
            let p = props(src, n);
            !p.alias && p.anchor.is_none()
        }
}

/// Where a comment starts on a line outside any scalar: a `#` starting it or after a blank.
fn comment_start(line: &str) -> Option<usize> {
    let b = line.as_bytes();
    (0..b.len()).find(|&i| b[i] == b'#' && (i == 0 || matches!(b[i - 1], b' ' | b'\t')))
}

/// Whether a node is an empty block sequence item (`-` alone, or with a comment after it). The
/// loader spans it empty at the end of the dash's line (after a comment there), where no other
/// token starts, so it is a token there: without one, the comments above it were the next
/// token's and moved below it (found by the fmt_yaml fuzz target).
pub fn empty_seq_item(src: &str, n: &Node) -> bool {
    if !(n.span.is_empty() && prints_nothing(src, n)) {
        return false;
    }
    let start = n.span.start as usize;
    // At the end of its line: an empty key after a dash (`- : x`) is spanned at its colon.
    let Some(before) = src
        .get(..start)
        .filter(|_| matches!(src.as_bytes().get(start), None | Some(b'\n' | b'\r')))
    else {
        return false;
    };
    let line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
    // The comment after the dash, if any.
    let code = line[..comment_start(line).unwrap_or(line.len())].trim_end_matches([' ', '\t']);
    code.strip_suffix('-')
        .is_some_and(|rest| rest.is_empty() || rest.ends_with([' ', '\t']))
}

pub fn is_block_scalar(node: &Node) -> bool {
    matches!(&node.kind, NodeKind::Scalar(s) if matches!(s.style, ScalarStyle::Literal | ScalarStyle::Folded))
}

/// Whether a block scalar's span is its header (properties, indicator and a comment after it)
/// and nothing else: the loader spans a block scalar without content that way.
/// Such a span holds no content, so it is no token, and a `#` in it is a comment like any other
/// (taken as the scalar's text, a header comment vanished from the comment count).
/// A block scalar whose content is lines of blanks alone (`"|1\n  \n"` is `" \n"`): the
/// loader spans it empty, inside its content, yet it is a token there.
pub fn blank_block_content(node: &Node) -> bool {
    node.span.is_empty()
        && is_block_scalar(node)
        && node
            .as_scalar()
            .is_some_and(|sc| !sc.text.trim_end_matches('\n').is_empty())
}

pub fn spans_its_header(src: &str, node: &Node) -> bool {
    header_span(src, node) && !blank_content_past_span(node)
}

/// Whether the loader spans a block scalar over its header and no further: it has no content,
/// or (with properties) content of blanks alone.
fn header_span(src: &str, node: &Node) -> bool {
    if !is_block_scalar(node) {
        return false;
    }
    let cs = props(src, node).content_start;
    let end = (node.span.end as usize).max(cs);
    // A document's block scalar is spanned from its properties to its last content line.
    src.get(cs..end)
        .is_some_and(|t| t.starts_with(['|', '>']) && !t.contains('\n'))
        && !after_block_header(src, cs)
}

/// Whether a block scalar's value holds more than line breaks: then a span of its header alone
/// leaves out content lines of blanks (`! |` then ` \t` is a tab), which are still its value.
fn blank_content_past_span(node: &Node) -> bool {
    node.as_scalar()
        .is_some_and(|s| !s.text.trim_end_matches('\n').is_empty())
}

/// Where a block scalar's lines start for the comment scan, given its first content character:
/// the line after its header, so that the empty lines before its first content line are its
/// content too (seen as blank lines, one was printed above a sequence item or a document's
/// scalar with a comment before it, where there was none).
pub(crate) fn after_header(src: &str, content: usize) -> usize {
    let line_start = |i: usize| src[..i].rfind('\n').map_or(0, |j| j + 1);
    let mut ls = line_start(content.min(src.len()));
    while ls > 0 {
        let prev = line_start(ls - 1);
        if !src[prev..ls].trim().is_empty() {
            break;
        }
        ls = prev;
    }
    ls
}

/// The lines a keeping block scalar (`|+`, `>+`) whose value is line breaks alone holds: its
/// empty lines after the header, `(start of the first, end of the last)`. The loader spans such
/// a scalar empty after them, or over its header alone (with properties): without this range
/// they were blank lines to the comment scan, printed again after the scalar when no key
/// followed it at once (found by the fmt_yaml fuzz target).
pub fn kept_breaks(src: &str, node: &Node) -> Option<(usize, usize)> {
    let text = &node.as_scalar()?.text;
    if !is_block_scalar(node) || text.is_empty() || !text.bytes().all(|b| b == b'\n') {
        return None;
    }
    let header = if header_span(src, node) {
        props(src, node).content_start
    } else if node.span.is_empty() {
        // The line break ending the header's line.
        after_header(src, node.span.start as usize).checked_sub(1)?
    } else {
        return None;
    };
    let first = header + src.get(header..)?.find('\n')? + 1;
    let mut end = first;
    while end < src.len() {
        let next = src[end..].find('\n').map_or(src.len(), |j| end + j + 1);
        if !src[end..next].trim().is_empty() {
            break;
        }
        end = next;
    }
    (end > first).then_some((first, end))
}

/// Whether a block scalar is spanned over its header alone though it has content (lines of
/// blanks, found by the fmt_yaml fuzz target): its content lines follow the header's line.
pub fn header_span_with_blank_content(src: &str, node: &Node) -> bool {
    header_span(src, node) && blank_content_past_span(node)
}

/// The end of a flow collection, just after its closing bracket. The loader's span stops at the
/// last item when the collection carries a tag, so find the bracket in the text.
pub fn flow_end(src: &str, node: &Node, p: &Props) -> usize {
    let from = match &node.kind {
        // A missing value (`{x}`) is spanned from after its key over what follows, the closing
        // bracket and a comment after it too: searched from there, the bracket was missed and
        // the collection ran on, so that comment went to the key inside it.
        NodeKind::Map(e) => e.last().map(|e| {
            let value_end = if prints_nothing(src, &e.value) {
                e.value.span.start
            } else {
                e.value.span.end
            };
            value_end.max(e.key.span.end) as usize
        }),
        NodeKind::Seq(items) => items.last().map(|n| n.span.end as usize),
        NodeKind::Scalar(_) => None,
    }
    .unwrap_or(p.content_start + 1);
    let bytes = src.as_bytes();
    let mut i = from.max(p.content_start + 1);
    let mut in_comment = false;
    while i < bytes.len() {
        let c = bytes[i];
        if in_comment {
            if c == b'\n' {
                in_comment = false;
            }
        } else if c == b'#' && i > 0 && matches!(bytes[i - 1], b' ' | b'\t' | b'\n') {
            in_comment = true;
        } else if c == b'}' || c == b']' {
            return i + 1;
        }
        i += 1;
    }
    (node.span.end as usize).max(from)
}

/// Loads `text` and recovers its trivia. Errors are the loader's (the file is not YAML, or is
/// too deep) or a feature the printer cannot reproduce.
pub fn build(file: FileId, src: &str) -> Result<Cst<'_>, Vec<Diagnostic>> {
    let (docs, diags) = pipewright_yaml::load(file, src, Limits::default());
    // Duplicate keys are the checker's business; the formatter keeps them (in order), so only
    // errors that make the tree unreliable stop it.
    let fatal: Vec<Diagnostic> = diags
        .into_iter()
        .filter(|d| d.is_error() && d.code != "PW0005")
        .collect();
    if !fatal.is_empty() {
        return Err(fatal);
    }
    if let Some(at) = directive_line(src) {
        return Err(vec![Diagnostic::error(
            "PW0901",
            Span::new(file, at..at + 1),
            "YAML directives (`%YAML`, `%TAG`) are not supported by the formatter",
        )
        .with_label("directive")
        .with_help("remove the directive; pipewright files never need one")]);
    }
    match unprintable(src, &docs) {
        Some(Unprintable::CommentInsideScalar(at)) => {
            return Err(vec![Diagnostic::error(
                "PW0901",
                Span::new(file, at..at + 1),
                "a comment between a scalar's anchor or tag and its value is not supported by the formatter",
            )
            .with_label("comment")
            .with_help("move the comment above the key, or after the value")]);
        }
        Some(Unprintable::LongKey(start, end)) => {
            return Err(vec![Diagnostic::error(
                "PW0901",
                Span::new(file, start..end),
                format!("a mapping key that may print longer than {LONGEST_KEY} characters is not supported by the formatter"),
            )
            .with_label("this key")
            .with_note("YAML limits a key written without `?` to 1024 characters, which quoting (`\\t`, `\\\"`) could pass")
            .with_help("use a shorter key")]);
        }
        None => {}
    }
    let (trivia, mut trailing, comments) = trivia::collect_with_texts(src, &docs);
    let mut docs: Vec<CstDoc> = docs
        .into_iter()
        .zip(trailing.iter_mut())
        .map(|(d, t)| CstDoc {
            root: d.root,
            trailing: std::mem::take(t),
        })
        .collect();
    let loaded = docs.len();
    if docs.is_empty() {
        // A file of comments only has no document to hang them on.
        docs.push(CstDoc {
            root: None,
            trailing: trailing.into_iter().flatten().collect(),
        });
    }
    Ok(Cst {
        src,
        docs,
        trivia,
        loaded,
        comments,
    })
}

/// What the printer cannot reproduce in a node of the tree.
enum Unprintable {
    /// A comment between a scalar's anchor or tag and its value, at this offset.
    CommentInsideScalar(usize),
    /// A mapping key (span) that may print longer than YAML's 1024-character limit on an
    /// implicit key: quoted, a key of tabs and quotes doubles, and the output would not load
    /// (found by the fmt_yaml fuzz target).
    LongKey(usize, usize),
}

/// The longest key the formatter rewrites, in characters as it may print (properties and the
/// longer quoting of its value), under YAML's 1024. Measured on what the key loads to, not on
/// its source, so a key the formatter printed is accepted again: measured on the source, a key
/// of 490 characters holding tabs printed past the limit and its output was refused (found by
/// the fmt_yaml fuzz target).
pub const LONGEST_KEY: usize = 1000;

/// An upper bound of the characters `key` prints as.
fn printed_key_bound(src: &str, key: &Node) -> usize {
    let p = props(src, key);
    let (start, end) = (key.span.start as usize, key.span.end as usize);
    let NodeKind::Scalar(sc) = &key.kind else {
        return 0;
    };
    if p.alias {
        return src.get(start..end).map_or(0, |t| t.chars().count());
    }
    let anchor = p.anchor.map_or(0, |a| a.chars().count() + 2);
    let tag = key
        .tag
        .as_ref()
        .map_or(0, |t| crate::print::tag_text(t).chars().count() + 1);
    anchor + tag + crate::quote::quoted_len_bound(&sc.text)
}

fn unprintable(src: &str, docs: &[pipewright_yaml::Document]) -> Option<Unprintable> {
    let mut stack: Vec<&Node> = docs.iter().filter_map(|d| d.root.as_ref()).collect();
    while let Some(n) = stack.pop() {
        let first = src.as_bytes().get(n.span.start as usize);
        // An alias's children carry the anchored node's spans (and may be many): not walked.
        if first == Some(&b'*') && props(src, n).alias {
            continue;
        }
        match &n.kind {
            NodeKind::Map(es) => {
                for e in es {
                    // Six characters at most per character of the value (`\u2028`).
                    let short = e.key.as_scalar().is_none_or(|s| s.text.len() * 6 < 800)
                        && e.key.span.len() < 100;
                    if !short && printed_key_bound(src, &e.key) > LONGEST_KEY {
                        let (start, end) = (e.key.span.start as usize, e.key.span.end as usize);
                        return Some(Unprintable::LongKey(start, end));
                    }
                    stack.extend([&e.key, &e.value]);
                }
            }
            NodeKind::Seq(items) => stack.extend(items.iter()),
            NodeKind::Scalar(_) => {
                if !matches!(src.as_bytes().get(n.span.start as usize), Some(b'&' | b'!')) {
                    continue;
                }
                let p = props(src, n);
                if !p.alias && src.as_bytes().get(p.content_start) == Some(&b'#') {
                    return Some(Unprintable::CommentInsideScalar(p.content_start));
                }
            }
        }
    }
    None
}

fn directive_line(src: &str) -> Option<usize> {
    let mut pos = 0usize;
    for line in src.split_inclusive('\n') {
        if line.starts_with('%') {
            return Some(pos);
        }
        if line.starts_with("---") {
            // Directives only appear before the first document marker.
            return None;
        }
        pos += line.len();
        let t = line.trim();
        if !(t.is_empty() || t.starts_with('#')) {
            return None;
        }
    }
    None
}
