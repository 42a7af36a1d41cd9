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
        if self.no_token(node) {
            return Vec::new();
        }
        self.leading.remove(&node.span.start).unwrap_or_default()
    }

    pub fn take_trailing(&mut self, node: &Node) -> Vec<String> {
        if self.no_token(node) {
            return Vec::new();
        }
        self.trailing.remove(&node.span.start).unwrap_or_default()
    }

    /// The leading trivia attached at `at`: a token [`odd_key`] names, which the node's own
    /// start does not find.
    pub fn take_leading_at(&mut self, at: u32) -> Vec<Item> {
        self.leading.remove(&at).unwrap_or_default()
    }

    /// Whether comments are attached above `at` (see [`Trivia::take_leading_at`]).
    pub fn has_comment_at(&self, at: u32) -> bool {
        self.leading
            .get(&at)
            .is_some_and(|v| v.iter().any(|i| matches!(i, Item::Comment(_))))
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

    /// Whether nothing can be attached to `node`'s start. A node with an empty span (an empty
    /// key or value, a null written as nothing) is no token, but its start may be the next
    /// token's: asked for its trivia, it took that token's comments, which then moved on every
    /// run (found by the fmt_yaml fuzz target).
    fn no_token(&self, node: &Node) -> bool {
        (node.span.is_empty() && !crate::cst::blank_block_content(node))
            || self.surely_none(node.span.start)
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
        if self.no_token(node) {
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
    /// Where the comment scan meets it: a block scalar's lines start after its header.
    start: usize,
    /// Where trivia is attached to it: its node's start ([`Trivia`] is looked up by node),
    /// or where [`odd_key`] says.
    key: usize,
    end: usize,
    scalar: bool,
    /// A `|+`/`>+` scalar whose value ends in blank lines: they are content, not trivia.
    keep: bool,
    /// A block scalar's content indentation (its first content character's column): lines of
    /// blanks after it deeper than that are content.
    block: Option<usize>,
}

/// The column of `at` on its line.
fn column(src: &str, at: usize) -> usize {
    at - src
        .get(..at)
        .and_then(|b| b.rfind('\n'))
        .map_or(0, |i| i + 1)
}

/// Every token of a document: non-empty scalars, aliases and, with `flow`, flow collections.
/// Aliases are not descended into: their children carry the anchored node's spans. The walk is
/// in source order (a parent before its children, keys before values), so the tokens come out
/// sorted by start already and the sort that follows only checks that.
fn tokens(src: &str, root: &Node, flow: bool, out: &mut impl Extend<Token>) {
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        out.extend(visit(src, n, flow, &mut stack));
    }
}

/// The token of one node of the walk, if it is one, with its children pushed on `stack` (last
/// child first, so that they pop in source order).
fn visit<'n>(src: &str, n: &'n Node, flow: bool, stack: &mut Vec<&'n Node>) -> Option<Token> {
    let (start, end) = (n.span.start as usize, n.span.end as usize);
    // Only a node starting with `*` can be an alias (see `props`), and only a collection
    // needs the rest of its properties (whether it is flow).
    let collection = matches!(n.kind, NodeKind::Seq(_) | NodeKind::Map(_));
    // A scalar with properties may be quoted, and then its span may run past it.
    let p = (matches!(src.as_bytes().get(start), Some(b'*' | b'&' | b'!')) || (flow && collection))
        .then(|| props(src, n));
    if p.is_some_and(|p| p.alias) {
        return Some(Token {
            start,
            key: start,
            end,
            scalar: true,
            keep: false,
            block: None,
        });
    }
    let flow_token = || {
        p.filter(|p| flow && p.flow).map(|p| Token {
            start,
            key: start,
            end: flow_end(src, n, &p),
            scalar: false,
            keep: false,
            block: None,
        })
    };
    // A block collection's anchor or tag is a token of its own: a comment above it stays
    // above it, and one after it on its line stays there. Without it both were the first
    // child's, printed below the properties, and the first moved on the first run only.
    let props_token = || {
        p.filter(|p| flow && !p.flow && (p.anchor.is_some() || n.tag.is_some()))
            .map(|_| Token {
                start,
                key: start,
                end: props_end(src, start),
                scalar: false,
                keep: false,
                block: None,
            })
    };
    match &n.kind {
        NodeKind::Scalar(_) if crate::cst::kept_breaks(src, n).is_some() => {
            // Ends on its last empty line (a comment on the next line is not after it), and
            // its range for the scan runs to that line's end (`keep`).
            let (first, end) = crate::cst::kept_breaks(src, n)?;
            Some(Token {
                start: first,
                key: first,
                end: end - 1,
                scalar: true,
                keep: true,
                block: Some(0),
            })
        }
        NodeKind::Scalar(sc) if crate::cst::blank_block_content(n) => {
            // Content of blanks alone: the loader's span is empty, inside the content. Without
            // a token there the content lines were blank lines to the scan, and a header
            // comment on a line with no other token moved below the scalar, gaining a blank
            // line on every run (found by the fmt_yaml fuzz target).
            Some(Token {
                start,
                key: start,
                end: start,
                scalar: true,
                keep: sc.text.ends_with("\n\n"),
                block: Some(column(src, start)),
            })
        }
        NodeKind::Scalar(sc) => {
            let no_token = (n.span.is_empty() || crate::cst::prints_nothing(src, n))
                && !crate::cst::empty_seq_item(src, n)
                || crate::cst::spans_its_header(src, n);
            let block = crate::cst::is_block_scalar(n);
            // A block scalar with properties is spanned from them, over its header and a
            // comment after it, which the scan then took for content: that comment was lost
            // without a word, or PW0900 once the printer moved it (found by the fmt_yaml fuzz
            // target). Its token starts at its content, as without properties.
            let key = start;
            let content = match p {
                Some(p) if block && p.content_start > start => {
                    if crate::cst::header_span_with_blank_content(src, n) {
                        blank_content_start(src, p.content_start)
                    } else {
                        block_content_start(src, p.content_start).min(end)
                    }
                }
                _ => start,
            };
            let start = if block {
                crate::cst::after_header(src, content)
            } else {
                content
            };
            (!no_token).then(|| Token {
                start,
                key,
                // A span of the header alone ends before content of blanks.
                end: p
                    .map_or(end, |p| crate::cst::scalar_end(src, n, &p))
                    .max(content),
                scalar: true,
                keep: block && sc.text.ends_with("\n\n"),
                block: block.then(|| column(src, content)),
            })
        }
        NodeKind::Seq(items) => {
            stack.extend(items.iter().rev());
            flow_token().or_else(props_token)
        }
        NodeKind::Map(entries) => {
            for e in entries.iter().rev() {
                stack.push(&e.value);
                stack.push(&e.key);
            }
            flow_token().or_else(props_token)
        }
    }
}

/// Where the trivia of a token is attached when the node's own start does not find it: an empty
/// sequence item (spanned empty, which [`Trivia`] takes for no token; nothing trails it: a
/// comment after a dash alone documents what follows), and a keeping block scalar of line
/// breaks alone (at its first empty line, where no other token starts; its span may be the
/// next key's start, or its header).
pub fn odd_key(src: &str, n: &Node) -> Option<u32> {
    if crate::cst::empty_seq_item(src, n) {
        return Some(n.span.start);
    }
    let (first, _) = crate::cst::kept_breaks(src, n)?;
    u32::try_from(first).ok()
}

/// The end of the properties (an anchor, a tag, or both) starting at `start`.
fn props_end(src: &str, start: usize) -> usize {
    let b = src.as_bytes();
    let (mut i, mut end) = (start, start);
    for _ in 0..2 {
        if !matches!(b.get(i), Some(b'&' | b'!')) {
            break;
        }
        while i < b.len() && !matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        end = i;
        while i < b.len() && matches!(b[i], b' ' | b'\t') {
            i += 1;
        }
    }
    end
}

/// The tokens of all documents in source order, walked as they are asked for: no list of them
/// is built (on a large file that list, and the lists derived from it, weighed more than the
/// trivia they serve). `disordered` is set when a token does not start after the previous one,
/// which the loader's trees never do; the caller then takes the general path.
struct Tokens<'s, 'n> {
    src: &'s str,
    flow: bool,
    docs: std::slice::Iter<'n, Document>,
    stack: Vec<&'n Node>,
    last_start: Option<usize>,
    disordered: bool,
}

impl<'s, 'n> Tokens<'s, 'n> {
    fn new(src: &'s str, docs: &'n [Document], flow: bool) -> Self {
        Tokens {
            src,
            flow,
            docs: docs.iter(),
            stack: Vec::new(),
            last_start: None,
            disordered: false,
        }
    }
}

impl Iterator for Tokens<'_, '_> {
    type Item = Token;
    fn next(&mut self) -> Option<Token> {
        loop {
            let Some(n) = self.stack.pop() else {
                let d = self.docs.next()?;
                self.stack.extend(d.root.as_ref());
                continue;
            };
            if let Some(t) = visit(self.src, n, self.flow, &mut self.stack) {
                if self.last_start.is_some_and(|s| t.start <= s) {
                    self.disordered = true;
                }
                self.last_start = Some(t.start);
                return Some(t);
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

impl Event<'_> {
    fn pos(&self) -> usize {
        match self {
            Event::Comment { pos, .. } | Event::Blank { pos } => *pos,
        }
    }
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
        .map(|t| (t.start, scalar_range_end(src, t)))
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

/// What [`collect_with_texts`] returns: the attached trivia, each document's trailing trivia,
/// and every comment text.
pub type Collected<'a> = (Trivia, Vec<Vec<Item>>, Vec<&'a str>);

/// `(end, key)` of a token.
type Ends = (usize, usize);

/// [`collect`], plus every comment text (borrowed from `src`, sorted) for the
/// comment-preservation check, so the formatter need not copy them out of the trivia.
pub fn collect_with_texts<'a>(src: &'a str, docs: &[Document]) -> Collected<'a> {
    collect_streamed(src, docs).unwrap_or_else(|| collect_listed(src, docs))
}

/// [`collect_with_texts`] in one walk over the trees that advances with the comment scan: no
/// list of all tokens exists (on a large file that list, and the lists derived from it, weighed
/// more than the trivia they serve). `None` when the tokens are not in source order or scalars
/// overlap (the loader's trees never do), for [`collect_listed`] to sort them.
fn collect_streamed<'a>(src: &'a str, docs: &[Document]) -> Option<Collected<'a>> {
    let mut walk = Tokens::new(src, docs, true);
    let next = walk.next();
    let mut sink = Streamed {
        src,
        walk,
        next,
        cur: None,
        last: None,
        prev: None,
        open: Vec::new(),
        closed: None,
        overlapping: false,
        attach: Attacher::new(src, docs),
        texts: Vec::new(),
    };
    scan_into(src, &mut sink);
    if sink.walk.disordered || sink.overlapping {
        return None;
    }
    sink.texts.sort_unstable();
    let (trivia, trailing) = sink.attach.finish();
    Some((trivia, trailing, sink.texts))
}

/// The state of [`collect_streamed`]'s walk, advanced to each position the scan asks about.
struct Streamed<'a, 'n> {
    src: &'a str,
    walk: Tokens<'a, 'n>,
    /// The first token not yet passed.
    next: Option<Token>,
    /// The range of the last scalar passed (for the scan: is a position inside a scalar?).
    cur: Option<(usize, usize)>,
    /// `(end, start)` of the last two scalars passed. Scalars do not overlap, so when the last
    /// has not ended by a position, the one before it is the last that has.
    last: Option<Ends>,
    prev: Option<Ends>,
    /// Flow collections passed that had not ended at the last event, and the latest-ending one
    /// that had (flow collections end after their items, out of order with the scalars).
    open: Vec<Ends>,
    closed: Option<Ends>,
    overlapping: bool,
    attach: Attacher,
    texts: Vec<&'a str>,
}

impl Streamed<'_, '_> {
    fn advance(&mut self, p: usize) {
        while let Some(t) = self.next.filter(|t| t.start <= p) {
            if t.scalar {
                self.cur = Some((t.start, scalar_range_end(self.src, &t)));
                self.overlapping |= self.last.is_some_and(|l| l.0 > t.start);
                self.prev = self.last;
                self.last = Some((t.end, t.key));
            } else {
                self.open.push((t.end, t.key));
            }
            self.next = self.walk.next();
        }
    }
}

impl<'a> Sink<'a> for Streamed<'a, '_> {
    fn inside(&mut self, p: usize) -> bool {
        self.advance(p);
        self.cur.is_some_and(|c| p < c.1)
    }

    fn event(&mut self, e: Event<'a>) {
        let pos = e.pos();
        self.advance(pos);
        let closed = &mut self.closed;
        self.open.retain(|f| {
            let done = f.0 <= pos;
            if done {
                *closed = (*closed).max(Some(*f));
            }
            !done
        });
        let scalar = match self.last {
            Some(l) if l.0 <= pos => Some(l),
            _ => self.prev.filter(|p| p.0 <= pos),
        };
        if let Event::Comment { text, .. } = e {
            self.texts.push(text);
        }
        self.attach
            .add(e, scalar.max(self.closed), self.next.map(|t| t.key));
    }
}

/// Where the content of a block scalar whose header starts at `header` starts: its first
/// character after the header's line and the indentation of the first line with content.
fn block_content_start(src: &str, header: usize) -> usize {
    let Some(nl) = src.get(header..).and_then(|r| r.find('\n')) else {
        return src.len();
    };
    let from = header + nl + 1;
    let blank = src[from..]
        .bytes()
        .take_while(|b| matches!(b, b' ' | b'\n' | b'\r'))
        .count();
    from + blank
}

/// Where the content of blanks alone of a block scalar whose header starts at `header` starts,
/// as the loader spans such content without properties: after the indentation of its first
/// line that is not empty (skipping blanks and line breaks, as [`block_content_start`] does,
/// ran past the content to the next key, and the content's first line became a blank line).
fn blank_content_start(src: &str, header: usize) -> usize {
    let Some(nl) = src.get(header..).and_then(|r| r.find('\n')) else {
        return src.len();
    };
    let mut line = header + nl + 1;
    while line < src.len() {
        let rest = &src[line..];
        let body = rest.split('\n').next().unwrap_or("").trim_end_matches('\r');
        if !body.is_empty() {
            return line + body.len() - body.trim_start_matches(' ').len();
        }
        line += rest.find('\n').map_or(rest.len(), |i| i + 1);
    }
    src.len()
}

/// The end of a scalar token's range for the comment scanner: a keeping block scalar owns the
/// blank lines after it.
fn scalar_range_end(src: &str, t: &Token) -> usize {
    if t.keep {
        after_blank_lines(src, t.end)
    } else if let Some(col) = t.block {
        after_content_blanks(src, col, t.end)
    } else {
        t.end
    }
}

/// The end of the lines of blanks after a block scalar (ending at `end`, its content indented
/// `col`) that are its content: up to the last one longer than that indentation, with the shorter ones
/// before it. Seen as blank lines, they were printed again after the scalar, one more on every
/// run (found by the fmt_yaml fuzz target).
fn after_content_blanks(src: &str, col: usize, end: usize) -> usize {
    let Some(nl) = src.get(end..).and_then(|r| r.find('\n')) else {
        return end;
    };
    let mut pos = end + nl + 1;
    let mut covered = end;
    while pos < src.len() {
        let line_end = src[pos..].find('\n').map_or(src.len(), |i| pos + i + 1);
        let body = src[pos..line_end].trim_end_matches(['\n', '\r']);
        if !body.bytes().all(|b| b == b' ' || b == b'\t') {
            break;
        }
        if body.len() > col {
            covered = line_end;
        }
        pos = line_end;
    }
    covered
}

/// The last `(end, start)` of a list sorted by end that ends by `pos`.
fn last_by_end(v: &[(usize, usize)], pos: usize) -> Option<(usize, usize)> {
    let i = v.partition_point(|t| t.0 <= pos);
    i.checked_sub(1).and_then(|i| v.get(i)).copied()
}

fn comment_texts_of<'a>(events: &[Event<'a>]) -> Vec<&'a str> {
    let mut texts: Vec<&'a str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Comment { text, .. } => Some(*text),
            Event::Blank { .. } => None,
        })
        .collect();
    texts.sort_unstable();
    texts
}

/// The general path of [`collect_with_texts`]: every token in a list, sorted.
fn collect_listed<'a>(src: &'a str, docs: &[Document]) -> Collected<'a> {
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
            by_end.push((t.end, t.key));
        } else {
            flow_by_end.push((t.end, t.key));
        }
    }
    if !by_end.is_sorted() {
        by_end.sort_unstable();
    }
    flow_by_end.sort_unstable();
    let events = scan(src, scalars.iter().copied());
    let texts = comment_texts_of(&events);
    let mut attach = Attacher::new(src, docs);
    for ev in events {
        let pos = ev.pos();
        let i = toks.partition_point(|t| t.start <= pos);
        attach.add(
            ev,
            last_by_end(&by_end, pos).max(last_by_end(&flow_by_end, pos)),
            toks.get(i).map(|t| t.key),
        );
    }
    let (trivia, trailing) = attach.finish();
    (trivia, trailing, texts)
}

/// Attaches events, given in source order, to tokens.
struct Attacher {
    doc_starts: Vec<usize>,
    trivia: Trivia,
    trailing: Vec<Vec<Item>>,
}

impl Attacher {
    fn new(src: &str, docs: &[Document]) -> Self {
        Attacher {
            doc_starts: docs
                .iter()
                .enumerate()
                .map(|(i, d)| if i == 0 { 0 } else { d.span.start as usize })
                .collect(),
            trivia: Trivia {
                may_have: vec![0; src.len() / 64 + 1],
                ..Trivia::default()
            },
            trailing: vec![Vec::new(); docs.len().max(1)],
        }
    }

    /// `last_ending`: `(end, start)` of the last token ending by the event; `next_start`: the
    /// start of the first token starting after it.
    fn add(&mut self, ev: Event<'_>, last_ending: Option<Ends>, next_start: Option<usize>) {
        let (pos, item) = match ev {
            Event::Comment {
                pos,
                line_start,
                text,
                after_content,
            } => {
                if after_content {
                    // The token that ends last before the comment, if it ends on this line.
                    if let Some((end, start)) = last_ending {
                        if end >= line_start {
                            self.trivia
                                .trailing
                                .entry(start as u32)
                                .or_default()
                                .push(text.to_string());
                            self.trivia.mark(start as u32);
                            return;
                        }
                    }
                }
                (pos, Item::Comment(text.to_string()))
            }
            Event::Blank { pos } => (pos, Item::Blank),
        };
        let d = self
            .doc_starts
            .partition_point(|&s| s <= pos)
            .saturating_sub(1);
        let doc_end = self.doc_starts.get(d + 1).copied().unwrap_or(usize::MAX);
        match next_start {
            Some(start) if start < doc_end => {
                self.trivia.mark(start as u32);
                self.trivia
                    .leading
                    .entry(start as u32)
                    .or_default()
                    .push(item)
            }
            _ => {
                if let Some(v) = self.trailing.get_mut(d) {
                    v.push(item);
                }
            }
        }
    }

    fn finish(self) -> (Trivia, Vec<Vec<Item>>) {
        (self.trivia, self.trailing)
    }
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
/// order: a cursor instead of a binary search per question, over ranges that may be produced
/// as they are needed.
struct Inside<I: Iterator<Item = (usize, usize)>> {
    ranges: std::iter::Peekable<I>,
    /// The last range starting at or before the last position asked.
    cur: Option<(usize, usize)>,
}

impl<I: Iterator<Item = (usize, usize)>> Inside<I> {
    fn new(ranges: I) -> Self {
        Inside {
            ranges: ranges.peekable(),
            cur: None,
        }
    }

    fn at(&mut self, p: usize) -> bool {
        while let Some(r) = self.ranges.next_if(|r| r.0 <= p) {
            self.cur = Some(r);
        }
        self.cur.is_some_and(|s| p < s.1)
    }
}

/// Finds comments and blank lines outside scalars: one pass over the bytes, looking for the
/// line end and a comment's `#` at once (runs twice per file, over the input and the output).
fn scan<'a>(src: &'a str, scalars: impl Iterator<Item = (usize, usize)>) -> Vec<Event<'a>> {
    struct Listed<'a, I: Iterator<Item = (usize, usize)>> {
        inside: Inside<I>,
        events: Vec<Event<'a>>,
    }
    impl<'a, I: Iterator<Item = (usize, usize)>> Sink<'a> for Listed<'a, I> {
        fn inside(&mut self, p: usize) -> bool {
            self.inside.at(p)
        }
        fn event(&mut self, e: Event<'a>) {
            self.events.push(e);
        }
    }
    let mut sink = Listed {
        inside: Inside::new(scalars),
        events: Vec::new(),
    };
    scan_into(src, &mut sink);
    sink.events
}

/// What the comment scan asks and tells as it goes: whether a position is inside a scalar
/// (asked with increasing positions), and each event found, in source order.
trait Sink<'a> {
    fn inside(&mut self, p: usize) -> bool;
    fn event(&mut self, e: Event<'a>);
}

/// [`scan`] into a [`Sink`].
fn scan_into<'a>(src: &'a str, sink: &mut impl Sink<'a>) {
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
                && !sink.inside(i)
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
            sink.event(comment_event(body, line_start, pos - line_start));
        } else if !ascii_content
            && (!non_ascii || body.trim().is_empty())
            && !sink.inside(line_start)
        {
            sink.event(Event::Blank { pos: line_start });
        }
        line_start = line_end;
    }
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
    if let Some(texts) = comment_slices_streamed(src, docs) {
        return texts;
    }
    // Not reached for trees the loader builds; the general path orders ties as before.
    let scalars = scalar_ranges(src, &sorted_tokens(src, docs, false));
    let mut out: Vec<&str> = scan(src, scalars.iter().copied())
        .into_iter()
        .filter_map(|e| match e {
            Event::Comment { text, .. } => Some(text),
            Event::Blank { .. } => None,
        })
        .collect();
    out.sort_unstable();
    out
}

/// The comment texts of `docs`' source, scanning with the scalar ranges produced as the scan
/// advances (no list of them).
fn comment_slices_streamed<'a>(src: &'a str, docs: &[Document]) -> Option<Vec<&'a str>> {
    struct Texts<'a, 'n> {
        src: &'a str,
        walk: Tokens<'a, 'n>,
        next: Option<Token>,
        cur: Option<(usize, usize)>,
        texts: Vec<&'a str>,
    }
    impl<'a> Sink<'a> for Texts<'a, '_> {
        fn inside(&mut self, p: usize) -> bool {
            while let Some(t) = self.next.filter(|t| t.start <= p) {
                self.cur = Some((t.start, scalar_range_end(self.src, &t)));
                self.next = self.walk.next();
            }
            self.cur.is_some_and(|c| p < c.1)
        }
        fn event(&mut self, e: Event<'a>) {
            if let Event::Comment { text, .. } = e {
                self.texts.push(text);
            }
        }
    }
    let mut walk = Tokens::new(src, docs, false);
    let next = walk.next();
    let mut sink = Texts {
        src,
        walk,
        next,
        cur: None,
        texts: Vec::new(),
    };
    scan_into(src, &mut sink);
    if sink.walk.disordered {
        return None;
    }
    sink.texts.sort_unstable();
    Some(sink.texts)
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
        let mut inside = Inside::new(scalars.iter().copied());
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

    /// Fixtures, the corpus and generated files: the streamed walk attaches exactly as the
    /// sorted token list does.
    #[test]
    fn streamed_collection_agrees_with_the_listed_one() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut texts = vec![
            crate::bench_support::pipeline_file(64 * 1024),
            "a: 1 # c\n---\n# d\n\nb: [x, {y: z}] # e\n# f\n".to_string(),
            "k: |+\n  keep\n\n\n# after\nl: *a # alias\n".to_string(),
        ];
        for dir in [
            root.join("testdata/fmt/pipeline"),
            root.join("testdata/fmt/recipe"),
            root.join("examples"),
            "/work/shared/corpus/reyn".into(),
            "/work/shared/corpus/amplifier".into(),
        ] {
            let mut stack = vec![dir];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                    let p = e.path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                        texts.extend(std::fs::read_to_string(&p));
                    }
                }
            }
        }
        assert!(texts.len() > 40);
        for text in &texts {
            let (docs, _) =
                pipewright_yaml::load(pipewright_syntax::FileId(0), text, Default::default());
            let (st, sl, sx) = collect_streamed(text, &docs).expect("loader trees are in order");
            let (lt, ll, lx) = collect_listed(text, &docs);
            assert_eq!(st.leading, lt.leading, "{text}");
            assert_eq!(st.trailing, lt.trailing, "{text}");
            assert_eq!(sl, ll, "{text}");
            assert_eq!(sx, lx, "{text}");
            let scalars = scalar_ranges(text, &sorted_tokens(text, &docs, false));
            assert_eq!(
                comment_slices_streamed(text, &docs),
                Some(comment_texts_of(&scan(text, scalars.iter().copied())))
            );
        }
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
            prop_assert_eq!(
                flat(scan(&src, scalars.iter().copied())),
                flat(scan_reference(&src, &scalars))
            );
        }
    }
}
