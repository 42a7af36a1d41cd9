//! Recovers comments and blank lines from the source and attaches each to a node.
//!
//! A comment that shares its line with earlier content *trails* the last token before it (a
//! scalar or a flow collection's closing bracket); every other comment, and every blank line,
//! *leads* the first token after it in the same document. Comments after a document's last
//! token belong to the document. Attaching by token keeps comments with their node when the
//! printer reorders keys or switches between flow and block style.

use crate::cst::{flow_end, props};
use pipewright_yaml::{Document, Node, NodeKind};
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Comment(String),
    Blank,
}

/// Trivia keyed by the start byte of the token it is attached to.
#[derive(Debug, Default)]
pub struct Trivia {
    pub leading: HashMap<u32, Vec<Item>, ByOffset>,
    pub trailing: HashMap<u32, Vec<String>, ByOffset>,
    /// One bit per source byte: set where trivia was ever attached, so that the printer's
    /// questions for every node (`take_*`, and [`Trivia::has_own_comment`] for every node of
    /// every flow attempt) skip the map lookups for the many tokens without any. Bits are never
    /// cleared; empty means "unknown" (look every offset up).
    may_have: Vec<u64>,
}

/// Hashing for byte offsets: the printer looks trivia up for every node, and SipHash (built for
/// untrusted keys) cost more than the lookups themselves. Offsets are not chosen by an
/// attacker beyond the file's own shape, and each key is distinct, so a multiplicative hash
/// spreads them well.
#[derive(Debug, Default, Clone, Copy)]
pub struct ByOffset;

impl std::hash::BuildHasher for ByOffset {
    type Hasher = OffsetHasher;
    fn build_hasher(&self) -> OffsetHasher {
        OffsetHasher(0)
    }
}

#[derive(Debug, Default)]
pub struct OffsetHasher(u64);

impl std::hash::Hasher for OffsetHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(n)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Trivia {
    pub fn take_leading(&mut self, node: &Node) -> Vec<Item> {
        if self.surely_none(node.span.start) {
            return Vec::new();
        }
        self.leading.remove(&node.span.start).unwrap_or_default()
    }

    pub fn take_trailing(&mut self, node: &Node) -> Vec<String> {
        if self.surely_none(node.span.start) {
            return Vec::new();
        }
        self.trailing.remove(&node.span.start).unwrap_or_default()
    }

    /// Puts back leading trivia (taken from the same offset) and keeps the bits right.
    pub fn insert_leading(&mut self, at: u32, items: Vec<Item>) {
        self.mark(at);
        self.leading.insert(at, items);
    }

    fn mark(&mut self, at: u32) {
        let w = at as usize / 64;
        if let Some(word) = self.may_have.get_mut(w) {
            *word |= 1 << (at % 64);
        } else if !self.may_have.is_empty() {
            // Past the source it was sized for: back to looking every offset up.
            self.may_have = Vec::new();
        }
    }

    /// Whether no trivia was ever attached at `at` (`false` when unknown).
    fn surely_none(&self, at: u32) -> bool {
        self.may_have
            .get(at as usize / 64)
            .is_some_and(|w| w & (1 << (at % 64)) == 0)
    }

    /// Whether a comment is attached to `node`'s own token.
    pub fn has_own_comment(&self, node: &Node) -> bool {
        let k = node.span.start;
        if self.surely_none(k) {
            return false;
        }
        self.trailing.get(&k).is_some_and(|v| !v.is_empty())
            || self
                .leading
                .get(&k)
                .is_some_and(|v| v.iter().any(|i| matches!(i, Item::Comment(_))))
    }
}

#[derive(Clone, Copy)]
struct Token {
    start: usize,
    end: usize,
    scalar: bool,
    /// A `|+`/`>+` scalar whose value ends in blank lines: they are content, not trivia.
    keep: bool,
}

/// Every token of a document: non-empty scalars, aliases and, with `flow`, flow collections.
/// Aliases are not descended into: their children carry the anchored node's spans. The walk is
/// in source order (a parent before its children, keys before values), so the tokens come out
/// sorted by start already and the sort that follows only checks that.
fn tokens(src: &str, root: &Node, flow: bool, out: &mut impl Extend<Token>) {
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        let (start, end) = (n.span.start as usize, n.span.end as usize);
        // Only a node starting with `*` can be an alias (see `props`), and only a collection
        // needs the rest of its properties (whether it is flow).
        let collection = matches!(n.kind, NodeKind::Seq(_) | NodeKind::Map(_));
        let p = (src.as_bytes().get(start) == Some(&b'*') || (flow && collection))
            .then(|| props(src, n));
        if p.is_some_and(|p| p.alias) {
            out.extend(Some(Token {
                start,
                end,
                scalar: true,
                keep: false,
            }));
            continue;
        }
        let flow_token = |out: &mut dyn FnMut(Token)| {
            if let Some(p) = p.filter(|p| flow && p.flow) {
                out(Token {
                    start,
                    end: flow_end(src, n, &p),
                    scalar: false,
                    keep: false,
                });
            }
        };
        match &n.kind {
            NodeKind::Scalar(sc) => {
                if !n.span.is_empty() {
                    let keep = crate::cst::is_block_scalar(n) && sc.text.ends_with("\n\n");
                    out.extend(Some(Token {
                        start,
                        end,
                        scalar: true,
                        keep,
                    }));
                }
            }
            NodeKind::Seq(items) => {
                flow_token(&mut |t| out.extend(Some(t)));
                stack.extend(items.iter().rev());
            }
            NodeKind::Map(entries) => {
                flow_token(&mut |t| out.extend(Some(t)));
                for e in entries.iter().rev() {
                    stack.push(&e.value);
                    stack.push(&e.key);
                }
            }
        }
    }
}

/// A comment or blank line found in the source.
enum Event<'a> {
    Comment {
        pos: usize,
        line_start: usize,
        text: &'a str,
        after_content: bool,
    },
    Blank {
        pos: usize,
    },
}

/// Returns the attached trivia and, per document, the trivia after its last token.
pub fn collect(src: &str, docs: &[Document]) -> (Trivia, Vec<Vec<Item>>) {
    let (t, trailing, _) = collect_with_texts(src, docs);
    (t, trailing)
}

/// The ranges the comment scanner must skip (scalar and alias tokens, a keeping block scalar
/// extended over its content blank lines), sorted by start.
fn scalar_ranges(src: &str, toks: &[Token]) -> Vec<(usize, usize)> {
    toks.iter()
        .filter(|t| t.scalar)
        .map(|t| {
            (
                t.start,
                if t.keep {
                    after_blank_lines(src, t.end)
                } else {
                    t.end
                },
            )
        })
        .collect()
}

fn sorted_tokens(src: &str, docs: &[Document], flow: bool) -> Vec<Token> {
    // About one token per 12 bytes of a typical workflow file; reserving avoids regrowing (and
    // faulting in fresh pages for) a large vector several times.
    let mut toks = Vec::with_capacity(src.len() / 12);
    for d in docs {
        if let Some(r) = &d.root {
            tokens(src, r, flow, &mut toks);
        }
    }
    let key = |t: &Token| (t.start, std::cmp::Reverse(t.end));
    if !toks.is_sorted_by_key(key) {
        toks.sort_by_key(key);
    }
    toks
}

/// [`collect`], plus every comment text (borrowed from `src`, sorted) for the
/// comment-preservation check, so the formatter need not copy them out of the trivia.
pub fn collect_with_texts<'a>(
    src: &'a str,
    docs: &[Document],
) -> (Trivia, Vec<Vec<Item>>, Vec<&'a str>) {
    let toks = sorted_tokens(src, docs, true);
    let scalars = scalar_ranges(src, &toks);
    // `(end, start)` of every token, sorted, in two lists: scalars and aliases never overlap,
    // so in start order they are in end order too; flow collections (which end after their
    // items) are few and sorted apart. The last token ending before a position is the later
    // of the two lists' answers.
    let mut by_end: Vec<(usize, usize)> = Vec::with_capacity(toks.len());
    let mut flow_by_end: Vec<(usize, usize)> = Vec::new();
    for t in &toks {
        if t.scalar {
            by_end.push((t.end, t.start));
        } else {
            flow_by_end.push((t.end, t.start));
        }
    }
    if !by_end.is_sorted() {
        by_end.sort_unstable();
    }
    flow_by_end.sort_unstable();
    let last_ending_by = |pos: usize| {
        let last = |v: &[(usize, usize)]| {
            let i = v.partition_point(|t| t.0 <= pos);
            i.checked_sub(1).and_then(|i| v.get(i)).copied()
        };
        last(&by_end).max(last(&flow_by_end))
    };
    let events = scan(src, &scalars);
    let mut texts: Vec<&'a str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Comment { text, .. } => Some(*text),
            Event::Blank { .. } => None,
        })
        .collect();
    texts.sort_unstable();

    let doc_starts: Vec<usize> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| if i == 0 { 0 } else { d.span.start as usize })
        .collect();
    let doc_of = |p: usize| doc_starts.partition_point(|&s| s <= p).saturating_sub(1);
    let doc_end = |i: usize| doc_starts.get(i + 1).copied().unwrap_or(usize::MAX);

    let mut trivia = Trivia {
        may_have: vec![0; src.len() / 64 + 1],
        ..Trivia::default()
    };
    let mut trailing: Vec<Vec<Item>> = vec![Vec::new(); docs.len().max(1)];
    for ev in events {
        let (pos, item) = match ev {
            Event::Comment {
                pos,
                line_start,
                text,
                after_content,
            } => {
                if after_content {
                    // The token that ends last before the comment, if it ends on this line.
                    if let Some((end, start)) = last_ending_by(pos) {
                        if end >= line_start {
                            trivia
                                .trailing
                                .entry(start as u32)
                                .or_default()
                                .push(text.to_string());
                            trivia.mark(start as u32);
                            continue;
                        }
                    }
                }
                (pos, Item::Comment(text.to_string()))
            }
            Event::Blank { pos } => (pos, Item::Blank),
        };
        let d = doc_of(pos);
        let i = toks.partition_point(|t| t.start <= pos);
        match toks.get(i) {
            Some(t) if t.start < doc_end(d) => {
                trivia.mark(t.start as u32);
                trivia.leading.entry(t.start as u32).or_default().push(item)
            }
            _ => {
                if let Some(v) = trailing.get_mut(d) {
                    v.push(item);
                }
            }
        }
    }
    (trivia, trailing, texts)
}

/// The end of the blank lines that follow `at`'s line.
fn after_blank_lines(src: &str, at: usize) -> usize {
    let mut pos = src[at..].find('\n').map_or(src.len(), |i| at + i + 1);
    while pos < src.len() {
        let line_end = src[pos..].find('\n').map_or(src.len(), |i| pos + i + 1);
        if !src[pos..line_end].trim().is_empty() {
            break;
        }
        pos = line_end;
    }
    pos
}

/// Whether positions fall inside the scalar ranges (sorted by start), asked in increasing
/// order: a cursor instead of a binary search per question.
struct Inside<'r> {
    scalars: &'r [(usize, usize)],
    i: usize,
}

impl Inside<'_> {
    fn at(&mut self, p: usize) -> bool {
        while self.scalars.get(self.i).is_some_and(|s| s.0 <= p) {
            self.i += 1;
        }
        self.i
            .checked_sub(1)
            .and_then(|i| self.scalars.get(i))
            .is_some_and(|s| p < s.1)
    }
}

/// Finds comments and blank lines outside scalars: one pass over the bytes, looking for the
/// line end and a comment's `#` at once (runs twice per file, over the input and the output).
fn scan<'a>(src: &'a str, scalars: &[(usize, usize)]) -> Vec<Event<'a>> {
    let mut events = Vec::new();
    let mut inside = Inside { scalars, i: 0 };
    let b = src.as_bytes();
    let mut line_start = 0usize;
    while line_start < b.len() {
        let mut i = line_start;
        // Content other than ASCII blanks; non-ASCII content may still be Unicode blanks.
        let (mut ascii_content, mut non_ascii) = (false, false);
        let mut hash = None;
        while i < b.len() && b[i] != b'\n' {
            let c = b[i];
            if c == b'#'
                && hash.is_none()
                && (i == line_start || matches!(b[i - 1], b' ' | b'\t'))
                && !inside.at(i)
            {
                hash = Some(i);
            }
            match c {
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c => {}
                0x80.. => non_ascii = true,
                _ => ascii_content = true,
            }
            i += 1;
        }
        let line_end = if i < b.len() { i + 1 } else { i };
        let body = src[line_start..line_end].trim_end_matches(['\n', '\r']);
        if let Some(pos) = hash {
            events.push(comment_event(body, line_start, pos - line_start));
        } else if !ascii_content && (!non_ascii || body.trim().is_empty()) && !inside.at(line_start)
        {
            events.push(Event::Blank { pos: line_start });
        }
        line_start = line_end;
    }
    events
}

/// The comment texts of a YAML source, for the comment-preservation check.
pub fn comment_texts(src: &str, docs: &[Document]) -> Vec<String> {
    comment_slices(src, docs)
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// The comment texts of a YAML source, sorted, borrowed from it. Every comment the scanner
/// finds is attached somewhere, so the multiset does not depend on attachment: this skips it
/// (and flow collections, which only matter for trailing comments) and is one linear scan.
pub fn comment_slices<'a>(src: &'a str, docs: &[Document]) -> Vec<&'a str> {
    let scalars = scalar_ranges_of(src, docs);
    let mut out: Vec<&str> = scan(src, &scalars)
        .into_iter()
        .filter_map(|e| match e {
            Event::Comment { text, .. } => Some(text),
            Event::Blank { .. } => None,
        })
        .collect();
    out.sort_unstable();
    out
}

/// [`scalar_ranges`] of the scalar and alias tokens of `docs`, straight from the source-order
/// walk without a token list (what the verifier's scan of the output needs).
fn scalar_ranges_of(src: &str, docs: &[Document]) -> Vec<(usize, usize)> {
    struct Ranges<'s> {
        src: &'s str,
        out: Vec<(usize, usize)>,
    }
    impl Extend<Token> for Ranges<'_> {
        fn extend<I: IntoIterator<Item = Token>>(&mut self, iter: I) {
            for t in iter {
                let end = if t.keep {
                    after_blank_lines(self.src, t.end)
                } else {
                    t.end
                };
                self.out.push((t.start, end));
            }
        }
    }
    let mut r = Ranges {
        src,
        out: Vec::with_capacity(src.len() / 16),
    };
    for d in docs {
        if let Some(root) = &d.root {
            tokens(src, root, false, &mut r);
        }
    }
    if r.out.windows(2).all(|w| w[0].0 < w[1].0) {
        r.out
    } else {
        // Not reached for trees the loader builds; the general path orders ties as before.
        scalar_ranges(src, &sorted_tokens(src, docs, false))
    }
}

/// The comment starting at byte `i` of the line `body` (which starts at `line_start`).
fn comment_event(body: &str, line_start: usize, i: usize) -> Event<'_> {
    let before = body[..i].trim();
    // A comment after only sequence dashes or a document marker documents what follows, not
    // what precedes.
    let after_content =
        !(before.is_empty() || before.chars().all(|c| c == '-' || c == ' ') || before == "...");
    Event::Comment {
        pos: line_start + i,
        line_start,
        text: body[i..].trim_end(),
        after_content,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The former line-by-line scanner, the reference for the one-pass [`scan`].
    fn scan_reference<'a>(src: &'a str, scalars: &[(usize, usize)]) -> Vec<Event<'a>> {
        let mut events = Vec::new();
        let mut inside = Inside { scalars, i: 0 };
        let mut line_start = 0usize;
        for line in src.split_inclusive('\n') {
            let body = line.trim_end_matches(['\n', '\r']);
            if body.trim().is_empty() {
                if !inside.at(line_start) {
                    events.push(Event::Blank { pos: line_start });
                }
            } else {
                let bytes = body.as_bytes();
                for (i, &b) in bytes.iter().enumerate() {
                    if b != b'#' || (i > 0 && !matches!(bytes[i - 1], b' ' | b'\t')) {
                        continue;
                    }
                    let pos = line_start + i;
                    if inside.at(pos) {
                        continue;
                    }
                    events.push(comment_event(body, line_start, i));
                    break;
                }
            }
            line_start += line.len();
        }
        events
    }

    fn flat(events: Vec<Event<'_>>) -> Vec<(usize, usize, String, bool)> {
        events
            .into_iter()
            .map(|e| match e {
                Event::Comment {
                    pos,
                    line_start,
                    text,
                    after_content,
                } => (pos, line_start, text.to_string(), after_content),
                Event::Blank { pos } => (pos, usize::MAX, String::new(), false),
            })
            .collect()
    }

    proptest! {
        #[test]
        fn one_pass_scan_agrees_with_the_reference(
            src in "[ a#\t\r\n\u{b}\u{c}\u{a0}\u{3000}é.-]{0,40}",
            cuts in proptest::collection::vec((0usize..40, 0usize..6), 0..4),
        ) {
            let mut scalars: Vec<(usize, usize)> =
                cuts.into_iter().map(|(s, l)| (s, s + l)).collect();
            scalars.sort_by_key(|s| s.0);
            prop_assert_eq!(flat(scan(&src, &scalars)), flat(scan_reference(&src, &scalars)));
        }
    }
}
