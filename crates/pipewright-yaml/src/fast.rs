//! A byte-oriented fast path for the YAML that workflow files actually use.
//!
//! It builds the very same tree (kinds, texts, styles, tags, byte spans, duplicate-key
//! diagnostics) as the `saphyr-parser` path in `load.rs`, which stays the reference. Whenever
//! the input holds anything this parser does not handle with certainty (anchors, aliases,
//! directives, complex keys, tabs, any syntax error, unusual indentation, ...) it returns
//! `None` and `load` runs the reference path, so errors and rare constructs behave exactly as
//! before. The differential tests (`tests/it/differential.rs`) hold both paths equal.
//!
//! Nesting is parsed by recursion bounded by `Limits::max_depth`, capped at 64 (one level per
//! open collection); deeper input goes to the iterative reference path, which reports
//! anything past its limit.

use crate::load::{duplicate_diagnostics, duplicate_key, Document, Limits};
use crate::node::{Entry, Node, NodeKind, Tag};
use crate::scalar::{Scalar, ScalarStyle};
use pipewright_syntax::{Diagnostic, FileId, Span};

/// The fast path cannot vouch for this input; use the reference path.
struct Unsupported;

type FastResult<T> = Result<T, Unsupported>;

/// The greatest nesting the fast path follows; it bounds its recursion (a few frames per
/// level), so it stays well below the default limit of 128 that the reference path enforces
/// iteratively. Real workflow files nest a dozen levels at most.
const MAX_FAST_DEPTH: usize = 64;

/// The longest simple key (saphyr forgets a possible simple key after 1024 characters).
const MAX_KEY_LEN: usize = 1000;

/// Parses `text` like `load::load` would, or returns `None` when the reference path must.
pub(crate) fn load(
    file: FileId,
    text: &str,
    limits: Limits,
) -> Option<(Vec<Document>, Vec<Diagnostic>)> {
    if u32::try_from(text.len()).is_err()
        || !plausible(text.as_bytes())
        || crate::printable::first_unprintable(text).is_some()
    {
        return None;
    }
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        line_start: 0,
        file,
        diags: Vec::new(),
        depth: 0,
        max_depth: limits.max_depth.min(MAX_FAST_DEPTH),
        items: Vec::new(),
        entries: Vec::new(),
        closer_min: 0,
        strict_closer: false,
        flow_plain_seen: false,
    };
    let docs = parser.documents().ok()?;
    Some((docs, parser.diags))
}

/// Whole-input rejections: tabs, NULs, lone carriage returns and byte order marks after the
/// first character all need the reference path.
fn plausible(bytes: &[u8]) -> bool {
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    // Eight bytes at a time, skipping words with none of the interesting bytes.
    const LOW_BITS: u64 = 0x0101_0101_0101_0101;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let has_byte = |word: u64, byte: u8| {
        let x = word ^ (LOW_BITS * u64::from(byte));
        x.wrapping_sub(LOW_BITS) & !x & HIGH_BITS != 0
    };
    let mut i = 0;
    while i + 8 <= body.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&body[i..i + 8]);
        let chunk = u64::from_le_bytes(word);
        if has_byte(chunk, b'\t')
            || has_byte(chunk, 0)
            || has_byte(chunk, b'\r')
            || has_byte(chunk, 0xEF)
        {
            break;
        }
        i += 8;
    }
    while i < body.len() {
        match body[i] {
            b'\t' | 0 => return false,
            b'\r' if body.get(i + 1) != Some(&b'\n') => return false,
            0xEF if body.get(i + 1) == Some(&0xBB) && body.get(i + 2) == Some(&0xBF) => {
                return false
            }
            _ => {}
        }
        i += 1;
    }
    true
}

fn is_break(b: u8) -> bool {
    b == b'\n' || b == b'\r'
}

/// Blank, line break or end of input (`0`: NUL bytes are rejected up front).
fn blank_or_breakz(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | 0)
}

fn is_flow(b: u8) -> bool {
    matches!(b, b',' | b'[' | b']' | b'{' | b'}')
}

/// Where a node appears, which decides what may start there.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    /// First content of a line (or after `---` on its own line).
    NewLine,
    /// After `- ` on the same line: compact collections may start here.
    Entry,
    /// After `key: ` or `--- ` on the same line: only scalars and flow collections.
    Inline,
}

enum Plain {
    /// A plain key ending just before `:`; `pos` is at the `:`.
    Key(Node),
    Value(Node),
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// Start of the line that holds `pos`.
    line_start: usize,
    file: FileId,
    diags: Vec<Diagnostic>,
    depth: usize,
    max_depth: usize,
    /// Children of the open collections, innermost last: each collection gathers its own at
    /// the top and moves them out in one exact-size allocation when it closes.
    items: Vec<Node>,
    entries: Vec<Entry>,
    /// The least column a closing bracket on its own line may have in the current flow
    /// collection (saphyr's "invalid indentation" check).
    closer_min: isize,
    /// The next flow collection follows a tag in a sequence entry or on its own line, not a
    /// mapping's `:`, so it must close past `parent` (we only know the lenient rule for values).
    strict_closer: bool,
    /// A plain scalar has been scanned in the current outermost flow collection: saphyr then
    /// drops the extra column it adds after a `:`, and a closer may sit at the key's indent.
    flow_plain_seen: bool,
}

impl Parser<'_> {
    fn byte_at(&self, at: usize) -> u8 {
        self.bytes.get(at).copied().unwrap_or(0)
    }

    fn eof(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn column(&self, at: usize) -> isize {
        // Only asked about positions on the current line; widths fit (checked in `load`).
        (at - self.line_start) as isize
    }

    fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.file, start..end)
    }

    /// Steps over the line break at `pos`.
    fn newline(&mut self) {
        if self.byte_at(self.pos) == b'\r' && self.byte_at(self.pos + 1) == b'\n' {
            self.pos += 2;
        } else {
            self.pos += 1;
        }
        self.line_start = self.pos;
    }

    fn skip_spaces(&mut self) {
        while self.byte_at(self.pos) == b' ' {
            self.pos += 1;
        }
    }

    fn skip_comment(&mut self) {
        while !self.eof() && !is_break(self.bytes[self.pos]) {
            self.pos += 1;
        }
    }

    /// Skips blanks, comments and line breaks up to the next content (or the end).
    fn skip_to_content(&mut self) -> FastResult<()> {
        loop {
            self.skip_spaces();
            match self.byte_at(self.pos) {
                b'#' => {
                    // A comment must be separated from a preceding token.
                    if self.pos > self.line_start && self.bytes[self.pos - 1] != b' ' {
                        return Err(Unsupported);
                    }
                    self.skip_comment();
                }
                b'\n' | b'\r' => self.newline(),
                _ => return Ok(()),
            }
        }
    }

    /// `pos` is the first non-blank of its line.
    fn first_on_line(&self) -> bool {
        self.bytes[self.line_start..self.pos]
            .iter()
            .all(|&b| b == b' ')
    }

    fn is_doc_marker(&self, at: usize) -> bool {
        at == self.line_start
            && (self.bytes[at..].starts_with(b"---") || self.bytes[at..].starts_with(b"..."))
            && blank_or_breakz(self.byte_at(at + 3))
    }

    /// `---` or `...` at byte `at`, wherever the line starts.
    fn is_doc_marker_at(&self, at: usize) -> bool {
        (self.bytes[at..].starts_with(b"---") || self.bytes[at..].starts_with(b"..."))
            && blank_or_breakz(self.byte_at(at + 3))
    }

    fn is_seq_entry(&self, at: usize) -> bool {
        self.byte_at(at) == b'-' && blank_or_breakz(self.byte_at(at + 1))
    }

    fn enter(&mut self) -> FastResult<()> {
        if self.depth >= self.max_depth {
            return Err(Unsupported);
        }
        self.depth += 1;
        Ok(())
    }

    fn empty(&self, start: usize, end: usize, tag: Option<Tag>) -> Node {
        Node {
            kind: NodeKind::Scalar(Scalar {
                text: Box::default(),
                style: ScalarStyle::Plain,
            }),
            span: self.span(start, end),
            tag: tag.map(Box::new),
            flow: false,
        }
    }

    fn documents(&mut self) -> FastResult<Vec<Document>> {
        let mut docs = Vec::new();
        if self.bytes.starts_with(b"\xEF\xBB\xBF") {
            // saphyr does not count the byte order mark as a column.
            self.pos = 3;
            self.line_start = 3;
        }
        loop {
            self.skip_to_content()?;
            if self.eof() {
                return Ok(docs);
            }
            if !self.first_on_line() {
                return Err(Unsupported);
            }
            let p = self.pos;
            if self.byte_at(p) == b'%' {
                return Err(Unsupported);
            }
            if self.is_doc_marker(p) && self.byte_at(p) == b'.' {
                self.pos += 3;
                self.skip_to_content()?;
                if !self.eof() && !self.first_on_line() {
                    return Err(Unsupported);
                }
                continue;
            }
            let root = if self.is_doc_marker(p) {
                self.pos += 3;
                self.skip_to_content()?;
                if self.eof() {
                    self.empty(self.bytes.len(), self.bytes.len(), None)
                } else if self.is_doc_marker(self.pos) {
                    self.empty(self.pos, self.pos + 3, None)
                } else if self.byte_at(self.pos) == b'%' {
                    return Err(Unsupported);
                } else if self.first_on_line() {
                    self.node(-1, Context::NewLine)?
                } else {
                    self.node(-1, Context::Inline)?
                }
            } else {
                self.node(-1, Context::NewLine)?
            };
            // An implicit document starts at its first token, which for a block scalar is its
            // first content line.
            let p = match &root.kind {
                NodeKind::Scalar(Scalar {
                    style: ScalarStyle::Literal | ScalarStyle::Folded,
                    ..
                }) if root.tag.is_none() && !self.is_doc_marker_at(p) => root.span.start as usize,
                _ => p,
            };
            self.skip_to_content()?;
            let at_marker = self.first_on_line() && self.is_doc_marker(self.pos);
            if !self.eof() && !at_marker {
                return Err(Unsupported);
            }
            docs.push(Document {
                root: Some(root),
                span: self.span(p, p),
            });
        }
    }

    /// A node in block context starting at `pos` (which is at content). `parent` is the indent
    /// of the enclosing block collection (-1 at the top).
    fn node(&mut self, parent: isize, ctx: Context) -> FastResult<Node> {
        let start = self.pos;
        if self.byte_at(start) == b'!' {
            let tag = self.tag()?;
            let tag_end = self.pos;
            self.skip_spaces();
            let c = self.byte_at(self.pos);
            if c == b'#' || is_break(c) || c == 0 {
                if c == b'#' && self.pos == tag_end {
                    return Err(Unsupported);
                }
                let (saved_pos, saved_line_start) = (tag_end, self.line_start);
                self.skip_to_content()?;
                if !self.eof() && !self.is_doc_marker(self.pos) && self.column(self.pos) > parent {
                    // The tagged node is on the lines below.
                    let n = self.untagged(parent, Context::NewLine)?;
                    return Ok(self.tagged(n, start, tag));
                }
                (self.pos, self.line_start) = (saved_pos, saved_line_start);
                return Ok(self.empty(start, tag_end, Some(tag)));
            }
            // A tag then content on the same line: a scalar or a flow collection only.
            self.strict_closer = ctx != Context::Inline;
            let n = self.untagged(parent, Context::Inline)?;
            return Ok(self.tagged(n, start, tag));
        }
        self.untagged(parent, ctx)
    }

    /// Puts `tag` (written at `start`) on `n`, which ends at `pos`, as saphyr spans it.
    fn tagged(&self, mut n: Node, start: usize, tag: Tag) -> Node {
        if let NodeKind::Scalar(Scalar {
            style: ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted,
            ..
        }) = n.kind
        {
            // saphyr's span of a tagged quoted scalar runs to the end of its token, which
            // takes in the blanks and a comment after the closing quote.
            let token_end = self.comma_token_end_from(self.pos);
            let end = start
                + self.text[start..token_end]
                    .trim_end_matches([' ', '\t', '\r', '\n'])
                    .len();
            n.span = self.span(start, end);
            n.tag = Some(Box::new(tag));
            return n;
        }
        self.retag(n, start, tag)
    }

    /// Puts `tag` (written at `start`) on `n`. A tagged collection no longer starts at its
    /// bracket, so saphyr's builder ends it at its last child rather than at the bracket.
    fn retag(&self, n: Node, start: usize, tag: Tag) -> Node {
        let end = match &n.kind {
            NodeKind::Seq(items) if n.flow => items.last().map(|i| i.span.end),
            NodeKind::Map(entries) if n.flow => {
                entries.last().map(|e| e.value.span.end.max(e.key.span.end))
            }
            _ => None,
        }
        .unwrap_or(n.span.end);
        Node {
            kind: n.kind,
            span: self.span(start, end as usize),
            tag: Some(Box::new(tag)),
            flow: false,
        }
    }

    fn untagged(&mut self, parent: isize, ctx: Context) -> FastResult<Node> {
        let start = self.pos;
        let block_ok = ctx != Context::Inline;
        match self.byte_at(start) {
            b'-' if blank_or_breakz(self.byte_at(start + 1)) => {
                if !block_ok {
                    return Err(Unsupported);
                }
                self.block_seq(self.column(start))
            }
            b'[' | b'{' => {
                // A mapping value's flow collection may close at the mapping's own indent.
                let strict = std::mem::take(&mut self.strict_closer);
                self.closer_min = if ctx == Context::Inline && !strict {
                    parent
                } else {
                    parent + 1
                };
                self.flow_plain_seen = false;
                let n = self.flow_node(parent)?;
                let mut after_blanks = self.pos;
                while self.byte_at(after_blanks) == b' ' {
                    after_blanks += 1;
                }
                if self.byte_at(after_blanks) == b':' {
                    // A flow collection as a key.
                    return Err(Unsupported);
                }
                Ok(n)
            }
            b'|' | b'>' => self.block_scalar(parent),
            b'"' | b'\'' => {
                let (n, multiline) = self.quoted(parent)?;
                let mut after_blanks = self.pos;
                while self.byte_at(after_blanks) == b' ' {
                    after_blanks += 1;
                }
                if self.byte_at(after_blanks) == b':' {
                    if !block_ok
                        || multiline
                        || !blank_or_breakz(self.byte_at(after_blanks + 1))
                        || after_blanks - start > MAX_KEY_LEN
                    {
                        return Err(Unsupported);
                    }
                    self.pos = after_blanks;
                    let col = self.column(start);
                    return self.block_map(col, n);
                }
                Ok(n)
            }
            b'?' | b':' if blank_or_breakz(self.byte_at(start + 1)) => Err(Unsupported),
            b'&' | b'*' | b'%' | b'@' | b'`' | b',' | b']' | b'}' | b'#' | b'!' => Err(Unsupported),
            0 | b' ' | b'\n' | b'\r' => Err(Unsupported),
            _ => match self.plain_block(parent, block_ok)? {
                Plain::Key(k) => {
                    let col = self.column(start);
                    self.block_map(col, k)
                }
                Plain::Value(n) => Ok(n),
            },
        }
    }

    /// `!name` or `!!name`, followed by a blank or the end of the line.
    fn tag(&mut self) -> FastResult<Tag> {
        self.pos += 1;
        let secondary = self.byte_at(self.pos) == b'!';
        if secondary {
            self.pos += 1;
        }
        let from = self.pos;
        while matches!(self.byte_at(self.pos), b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.')
        {
            self.pos += 1;
        }
        if self.pos == from || !blank_or_breakz(self.byte_at(self.pos)) {
            return Err(Unsupported);
        }
        Ok(Tag {
            handle: if secondary {
                "tag:yaml.org,2002:".to_string()
            } else {
                "!".to_string()
            },
            suffix: self.text[from..self.pos].to_string(),
        })
    }

    /// A block mapping whose first key has been read; `pos` is at that key's `:`.
    fn block_map(&mut self, indent: isize, first_key: Node) -> FastResult<Node> {
        self.enter()?;
        let start = first_key.span.start as usize;
        let base = self.entries.len();
        let mut key = first_key;
        loop {
            let colon = self.pos;
            self.pos += 1;
            let (saved_pos, saved_line_start) = (self.pos, self.line_start);
            self.skip_spaces();
            let c = self.byte_at(self.pos);
            let value = if c == b'#' || is_break(c) || c == 0 {
                self.skip_to_content()?;
                if self.eof() || self.is_doc_marker(self.pos) {
                    (self.pos, self.line_start) = (saved_pos, saved_line_start);
                    self.empty(colon, colon, None)
                } else {
                    let col = self.column(self.pos);
                    if col > indent {
                        self.node(indent, Context::NewLine)?
                    } else if col == indent && self.is_seq_entry(self.pos) {
                        self.indentless_seq(indent)?
                    } else {
                        (self.pos, self.line_start) = (saved_pos, saved_line_start);
                        self.empty(colon, colon, None)
                    }
                }
            } else {
                self.node(indent, Context::Inline)?
            };
            self.entries.push(Entry { key, value });
            if self.next_entry_at(indent)?.is_none() {
                break;
            }
            key = self.block_key()?;
        }
        self.depth -= 1;
        let entries: Vec<Entry> = self.entries.drain(base..).collect();
        duplicates(&entries, &mut self.diags);
        let end = entries
            .last()
            .map_or(start, |e| e.value.span.end.max(e.key.span.end) as usize);
        Ok(Node {
            kind: NodeKind::Map(entries.into_boxed_slice()),
            span: self.span(start, end),
            tag: None,
            flow: false,
        })
    }

    /// After an entry of a block collection at column `indent`: `Some(where the entry ended)` when
    /// another entry follows at that column (positioned on it). At the end of input, before a
    /// document marker or at a smaller indent the collection ends (`None`, positioned back
    /// before the skipped trivia except at the end of input); a deeper indent is not a shape
    /// the fast path follows.
    fn next_entry_at(&mut self, indent: isize) -> FastResult<Option<(usize, usize)>> {
        let (saved_pos, saved_line_start) = (self.pos, self.line_start);
        self.skip_to_content()?;
        if self.eof() {
            return Ok(None);
        }
        if !self.first_on_line() {
            return Err(Unsupported);
        }
        let col = self.column(self.pos);
        if self.is_doc_marker(self.pos) || col < indent {
            (self.pos, self.line_start) = (saved_pos, saved_line_start);
            return Ok(None);
        }
        if col > indent {
            return Err(Unsupported);
        }
        Ok(Some((saved_pos, saved_line_start)))
    }

    /// The next key of a block mapping; leaves `pos` at its `:`.
    fn block_key(&mut self) -> FastResult<Node> {
        let start = self.pos;
        match self.byte_at(start) {
            b'"' | b'\'' => {
                let (k, multiline) = self.quoted(-1)?;
                self.skip_spaces();
                if multiline
                    || self.byte_at(self.pos) != b':'
                    || !blank_or_breakz(self.byte_at(self.pos + 1))
                    || self.pos - start > MAX_KEY_LEN
                {
                    return Err(Unsupported);
                }
                Ok(k)
            }
            b'-' | b'?' | b':' if blank_or_breakz(self.byte_at(start + 1)) => Err(Unsupported),
            b'&' | b'*' | b'%' | b'@' | b'`' | b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'!'
            | b'|' | b'>' => Err(Unsupported),
            _ => match self.plain_block(-1, true)? {
                Plain::Key(k) => Ok(k),
                Plain::Value(_) => Err(Unsupported),
            },
        }
    }

    /// A block sequence whose first `-` is at `pos`, column `indent`.
    fn block_seq(&mut self, indent: isize) -> FastResult<Node> {
        self.enter()?;
        let start = self.pos;
        let (items, _) = self.seq_items(indent, false)?;
        self.depth -= 1;
        let end = items.last().map_or(start, |i| i.span.end as usize);
        Ok(Node {
            kind: NodeKind::Seq(items.into_boxed_slice()),
            span: self.span(start, end),
            tag: None,
            flow: false,
        })
    }

    /// A sequence at the indent of its parent mapping's keys (`key:\n- a\n- b`). saphyr starts
    /// its span at the first entry's content.
    fn indentless_seq(&mut self, indent: isize) -> FastResult<Node> {
        self.enter()?;
        let (items, start) = self.seq_items(indent, true)?;
        self.depth -= 1;
        let end = items.last().map_or(start, |i| i.span.end as usize);
        Ok(Node {
            kind: NodeKind::Seq(items.into_boxed_slice()),
            span: self.span(start, end),
            tag: None,
            flow: false,
        })
    }

    fn seq_items(&mut self, indent: isize, indentless: bool) -> FastResult<(Vec<Node>, usize)> {
        let base = self.items.len();
        let mut first_mark = self.pos;
        loop {
            // At `-`.
            self.pos += 1;
            self.skip_spaces();
            let c = self.byte_at(self.pos);
            let item = if c == b'#' || is_break(c) || c == 0 {
                self.skip_comment();
                let mark = self.pos;
                if self.items.len() == base {
                    first_mark = mark;
                }
                let (saved_pos, saved_line_start) = (self.pos, self.line_start);
                self.skip_to_content()?;
                if !self.eof() && !self.is_doc_marker(self.pos) && self.column(self.pos) > indent {
                    self.node(indent, Context::NewLine)?
                } else {
                    (self.pos, self.line_start) = (saved_pos, saved_line_start);
                    self.empty(mark, mark, None)
                }
            } else {
                if self.items.len() == base {
                    first_mark = self.pos;
                    if indentless && matches!(self.byte_at(self.pos), b'[' | b'{') {
                        // saphyr's builder would take this sequence for a flow one.
                        return Err(Unsupported);
                    }
                }
                self.node(indent, Context::Entry)?
            };
            self.items.push(item);
            let Some((saved_pos, saved_line_start)) = self.next_entry_at(indent)? else {
                break;
            };
            if !self.is_seq_entry(self.pos) {
                if indentless {
                    // The parent mapping's next key.
                    (self.pos, self.line_start) = (saved_pos, saved_line_start);
                    break;
                }
                return Err(Unsupported);
            }
        }
        Ok((self.items.drain(base..).collect(), first_mark))
    }

    /// One line of a plain scalar from `from`: the end of its content (trailing blanks
    /// dropped), and where and why it stopped.
    fn plain_line(&self, from: usize, flow: bool) -> (usize, usize, Stop) {
        let bytes = self.bytes;
        let mut i = from;
        let mut last = from;
        loop {
            let Some(&b) = bytes.get(i) else {
                return (last, i, Stop::Eof);
            };
            match b {
                b'\n' | b'\r' => return (last, i, Stop::Break),
                b' ' => {
                    i += 1;
                    if self.byte_at(i) == b'#' {
                        return (last, i, Stop::Comment);
                    }
                    if flow && self.byte_at(i) == b'-' && is_flow(self.byte_at(i + 1)) {
                        // saphyr rejects `-` then a flow indicator after blanks in flow.
                        return (last, i, Stop::Bad);
                    }
                }
                b':' if blank_or_breakz(self.byte_at(i + 1))
                    || (flow && is_flow(self.byte_at(i + 1))) =>
                {
                    return (last, i, Stop::Colon)
                }
                b',' | b'[' | b']' | b'{' | b'}' if flow => return (last, i, Stop::Flow),
                _ => {
                    i += 1;
                    last = i;
                }
            }
        }
    }

    /// A plain scalar in block context (maybe several lines), or a plain key when it is
    /// followed by `: ` on its first line and `key_ok`.
    fn plain_block(&mut self, parent: isize, key_ok: bool) -> FastResult<Plain> {
        let start = self.pos;
        let (mut end, mut stop_at, mut stop) = self.plain_line(start, false);
        if end == start {
            return Err(Unsupported);
        }
        if stop == Stop::Colon {
            if !key_ok || stop_at - start > MAX_KEY_LEN {
                return Err(Unsupported);
            }
            self.pos = stop_at;
            return Ok(Plain::Key(Node {
                kind: NodeKind::Scalar(Scalar {
                    text: self.text[start..end].into(),
                    style: ScalarStyle::Plain,
                }),
                span: self.span(start, end),
                tag: None,
                flow: false,
            }));
        }
        let mut owned: Option<String> = None;
        while stop == Stop::Break {
            // Look for a continuation line.
            let mut next = stop_at;
            let mut breaks = 0usize;
            let mut line = self.line_start;
            loop {
                match self.byte_at(next) {
                    b'\r' => {
                        next += 2;
                        breaks += 1;
                        line = next;
                    }
                    b'\n' => {
                        next += 1;
                        breaks += 1;
                        line = next;
                    }
                    b' ' => next += 1,
                    _ => break,
                }
            }
            let col = (next - line) as isize;
            let doc_marker = next == line
                && (self.bytes[next..].starts_with(b"---")
                    || self.bytes[next..].starts_with(b"..."))
                && blank_or_breakz(self.byte_at(next + 3));
            if next >= self.bytes.len() || col <= parent || self.byte_at(next) == b'#' || doc_marker
            {
                break;
            }
            let (end2, stop_at2, stop2) = self.plain_line(next, false);
            if stop2 == Stop::Colon || end2 == next {
                return Err(Unsupported);
            }
            let joined = owned.get_or_insert_with(|| self.text[start..end].to_string());
            if breaks == 1 {
                joined.push(' ');
            } else {
                for _ in 1..breaks {
                    joined.push('\n');
                }
            }
            joined.push_str(&self.text[next..end2]);
            self.line_start = line;
            end = end2;
            stop_at = stop_at2;
            stop = stop2;
        }
        self.pos = end;
        Ok(Plain::Value(Node {
            kind: NodeKind::Scalar(Scalar {
                text: owned.map_or_else(|| self.text[start..end].into(), String::into_boxed_str),
                style: ScalarStyle::Plain,
            }),
            span: self.span(start, end),
            tag: None,
            flow: false,
        }))
    }

    /// A single- or double-quoted scalar at `pos`; continuation lines must be indented past
    /// `parent`. Returns the node and whether it spans lines.
    fn quoted(&mut self, parent: isize) -> FastResult<(Node, bool)> {
        let start = self.pos;
        let quote = self.bytes[start];
        let single = quote == b'\'';
        // Most quoted scalars are one line without escapes: their value is their body.
        let mut close = start + 1;
        while let Some(&b) = self.bytes.get(close) {
            if b == quote || b == b'\\' || is_break(b) {
                break;
            }
            close += 1;
        }
        if self.byte_at(close) == quote && !(single && self.byte_at(close + 1) == b'\'') {
            self.pos = close + 1;
            return Ok((
                Node {
                    kind: NodeKind::Scalar(Scalar {
                        text: self.text[start + 1..close].into(),
                        style: if single {
                            ScalarStyle::SingleQuoted
                        } else {
                            ScalarStyle::DoubleQuoted
                        },
                    }),
                    span: self.span(start, close + 1),
                    tag: None,
                    flow: false,
                },
                false,
            ));
        }
        self.pos += 1;
        let mut out = String::new();
        let mut leading_break = false;
        let mut trailing = 0usize;
        let mut whitespaces = 0usize;
        let mut multiline = false;
        loop {
            if self.is_doc_marker(self.pos) {
                return Err(Unsupported);
            }
            let mut leading_blanks = false;
            // Non-blank characters.
            loop {
                let run = self.pos;
                while let Some(&b) = self.bytes.get(self.pos) {
                    if matches!(b, b' ' | b'\n' | b'\r' | b'\'' | b'"' | b'\\') {
                        break;
                    }
                    self.pos += 1;
                }
                out.push_str(&self.text[run..self.pos]);
                match self.byte_at(self.pos) {
                    b'\'' if single => {
                        if self.byte_at(self.pos + 1) == b'\'' {
                            out.push('\'');
                            self.pos += 2;
                        } else {
                            break;
                        }
                    }
                    b'"' if !single => break,
                    b'\\' if !single => {
                        if is_break(self.byte_at(self.pos + 1)) {
                            self.pos += 1;
                            self.newline();
                            multiline = true;
                            leading_blanks = true;
                            break;
                        }
                        out.push(self.escape()?);
                    }
                    b'\'' | b'"' | b'\\' => {
                        out.push(char::from(self.bytes[self.pos]));
                        self.pos += 1;
                    }
                    _ => break,
                }
            }
            let c = self.byte_at(self.pos);
            if c == quote {
                self.pos += 1;
                break;
            }
            if c == 0 {
                return Err(Unsupported);
            }
            // Blanks and line breaks.
            let ws_from = self.pos;
            loop {
                match self.byte_at(self.pos) {
                    b' ' => {
                        if !leading_blanks {
                            whitespaces += 1;
                        }
                        self.pos += 1;
                    }
                    b'\n' | b'\r' => {
                        if leading_blanks {
                            trailing += 1;
                        } else {
                            whitespaces = 0;
                            leading_break = true;
                            leading_blanks = true;
                        }
                        multiline = true;
                        self.newline();
                    }
                    _ => break,
                }
            }
            if leading_blanks && self.column(self.pos) <= parent {
                return Err(Unsupported);
            }
            if leading_blanks {
                if !leading_break {
                    for _ in 0..trailing {
                        out.push('\n');
                    }
                } else {
                    if trailing == 0 {
                        out.push(' ');
                    } else {
                        for _ in 0..trailing {
                            out.push('\n');
                        }
                    }
                    leading_break = false;
                }
                trailing = 0;
            } else {
                out.push_str(&self.text[ws_from..ws_from + whitespaces]);
                whitespaces = 0;
            }
        }
        Ok((
            Node {
                kind: NodeKind::Scalar(Scalar {
                    text: out.into(),
                    style: if single {
                        ScalarStyle::SingleQuoted
                    } else {
                        ScalarStyle::DoubleQuoted
                    },
                }),
                span: self.span(start, self.pos),
                tag: None,
                flow: false,
            },
            multiline,
        ))
    }

    /// The escape sequence at `pos` (a `\` inside a double-quoted scalar).
    fn escape(&mut self) -> FastResult<char> {
        let letter = self.byte_at(self.pos + 1);
        let len = match letter {
            b'x' => 2,
            b'u' => 4,
            b'U' => 8,
            _ => 0,
        };
        let c = match letter {
            b'0' => '\0',
            b'a' => '\x07',
            b'b' => '\x08',
            b't' => '\t',
            b'n' => '\n',
            b'v' => '\x0b',
            b'f' => '\x0c',
            b'r' => '\r',
            b'e' => '\x1b',
            b' ' => ' ',
            b'"' => '"',
            b'/' => '/',
            b'\\' => '\\',
            b'N' => '\u{85}',
            b'_' => '\u{a0}',
            b'L' => '\u{2028}',
            b'P' => '\u{2029}',
            b'x' | b'u' | b'U' => {
                let digits = self
                    .bytes
                    .get(self.pos + 2..self.pos + 2 + len)
                    .ok_or(Unsupported)?;
                let mut code_point = 0u32;
                for &d in digits {
                    let nibble = char::from(d).to_digit(16).ok_or(Unsupported)?;
                    code_point = (code_point << 4) | nibble;
                }
                char::from_u32(code_point).ok_or(Unsupported)?
            }
            _ => return Err(Unsupported),
        };
        self.pos += 2 + len;
        Ok(c)
    }

    /// `|` or `>` with its header at `pos`; `parent` is the enclosing block indent.
    fn block_scalar(&mut self, parent: isize) -> FastResult<Node> {
        let literal = self.bytes[self.pos] == b'|';
        self.pos += 1;
        let mut chomp = 0i8; // -1 strip, 0 clip, 1 keep
        let mut increment = 0usize;
        for _ in 0..2 {
            match self.byte_at(self.pos) {
                b'-' if chomp == 0 => chomp = -1,
                b'+' if chomp == 0 => chomp = 1,
                d @ b'1'..=b'9' if increment == 0 => increment = usize::from(d - b'0'),
                _ => break,
            }
            self.pos += 1;
        }
        let header_end = self.pos;
        self.skip_spaces();
        if self.byte_at(self.pos) == b'#' {
            if self.pos == header_end {
                return Err(Unsupported);
            }
            self.skip_comment();
        }
        if !is_break(self.byte_at(self.pos)) {
            return Err(Unsupported);
        }
        self.newline();
        let mut trailing = 0usize;
        let indent: usize = if increment > 0 {
            let i = if parent >= 0 {
                parent as usize + increment
            } else {
                increment
            };
            // Leading empty lines, then the first content line must reach the indent.
            loop {
                while self.column(self.pos) < i as isize && self.byte_at(self.pos) == b' ' {
                    self.pos += 1;
                }
                if is_break(self.byte_at(self.pos)) {
                    trailing += 1;
                    self.newline();
                } else {
                    break;
                }
            }
            if self.column(self.pos) != i as isize {
                return Err(Unsupported);
            }
            i
        } else {
            let mut max = 0usize;
            loop {
                self.skip_spaces();
                max = max.max(self.pos - self.line_start);
                if is_break(self.byte_at(self.pos)) {
                    trailing += 1;
                    self.newline();
                } else {
                    break;
                }
            }
            let i = max.max(usize::try_from(parent + 1).unwrap_or(0));
            if self.pos - self.line_start != i {
                return Err(Unsupported);
            }
            i
        };
        if indent == 0 || self.eof() {
            return Err(Unsupported);
        }
        let content_start = self.pos;
        let mut out = String::new();
        let mut leading_break = false;
        let mut leading_blank = false;
        while self.column(self.pos) == indent as isize
            && !self.eof()
            && !is_break(self.bytes[self.pos])
        {
            let trailing_blank = self.bytes[self.pos] == b' ';
            if !literal && leading_break && !leading_blank && !trailing_blank {
                if trailing == 0 {
                    out.push(' ');
                } else {
                    for _ in 0..trailing {
                        out.push('\n');
                    }
                }
            } else {
                if leading_break {
                    out.push('\n');
                }
                for _ in 0..trailing {
                    out.push('\n');
                }
            }
            leading_break = false;
            trailing = 0;
            leading_blank = trailing_blank;
            let from = self.pos;
            while !self.eof() && !is_break(self.bytes[self.pos]) {
                self.pos += 1;
            }
            out.push_str(&self.text[from..self.pos]);
            if self.eof() {
                break;
            }
            self.newline();
            leading_break = true;
            loop {
                while self.column(self.pos) < indent as isize && self.byte_at(self.pos) == b' ' {
                    self.pos += 1;
                }
                if is_break(self.byte_at(self.pos)) {
                    trailing += 1;
                    self.newline();
                } else {
                    break;
                }
            }
        }
        if chomp >= 0 {
            if leading_break {
                out.push('\n');
            }
            if self.eof() && self.pos - self.line_start >= indent.max(1) {
                out.push('\n');
            }
        }
        if chomp > 0 {
            for _ in 0..trailing {
                out.push('\n');
            }
        }
        let end = content_start + self.text[content_start..self.pos].trim_end().len();
        Ok(Node {
            kind: NodeKind::Scalar(Scalar {
                text: out.into(),
                style: if literal {
                    ScalarStyle::Literal
                } else {
                    ScalarStyle::Folded
                },
            }),
            span: self.span(content_start, end),
            tag: None,
            flow: false,
        })
    }

    // ---- flow context ------------------------------------------------------------------

    /// Blanks, comments and line breaks inside a flow collection. Content on a new line must
    /// be indented past `parent`, except a closing bracket.
    fn skip_flow_trivia(&mut self, parent: isize) -> FastResult<()> {
        let line = self.line_start;
        self.skip_to_content()?;
        if self.line_start != line {
            if self.is_doc_marker(self.pos) {
                return Err(Unsupported);
            }
            let min = if matches!(self.byte_at(self.pos), b']' | b'}') {
                if self.flow_plain_seen {
                    self.closer_min
                } else {
                    parent + 1
                }
            } else {
                parent + 1
            };
            if self.column(self.pos) < min {
                return Err(Unsupported);
            }
        }
        Ok(())
    }

    /// A node inside a flow collection.
    fn flow_node(&mut self, parent: isize) -> FastResult<Node> {
        let start = self.pos;
        match self.byte_at(start) {
            b'[' => self.flow_seq(parent),
            b'{' => self.flow_map(parent),
            b'!' => {
                let tag = self.tag()?;
                let tag_end = self.pos;
                self.skip_spaces();
                match self.byte_at(self.pos) {
                    b',' | b']' | b'}' => Ok(self.empty(start, tag_end, Some(tag))),
                    b'!' => Err(Unsupported),
                    b'"' | b'\'' => {
                        let mut n = self.flow_node(parent)?;
                        // The token runs over blanks and a comment after the quote.
                        let mut after_blanks = self.pos;
                        while self.byte_at(after_blanks) == b' ' {
                            after_blanks += 1;
                        }
                        if self.byte_at(after_blanks) == b'#' {
                            return Err(Unsupported);
                        }
                        n.span = self.span(start, n.span.end as usize);
                        n.tag = Some(Box::new(tag));
                        Ok(n)
                    }
                    c if c == b'#' || is_break(c) || c == 0 => Err(Unsupported),
                    _ => {
                        let n = self.flow_node(parent)?;
                        Ok(self.retag(n, start, tag))
                    }
                }
            }
            b'"' | b'\'' => Ok(self.quoted(parent)?.0),
            b'&' | b'*' | b'|' | b'>' | b'%' | b'@' | b'`' | b'#' | b',' | b']' | b'}' => {
                Err(Unsupported)
            }
            b'-' | b'?' | b':'
                if blank_or_breakz(self.byte_at(start + 1)) || is_flow(self.byte_at(start + 1)) =>
            {
                Err(Unsupported)
            }
            0 | b' ' | b'\n' | b'\r' => Err(Unsupported),
            _ => {
                let (end, stop_at, stop) = self.plain_line(start, true);
                if end == start || stop == Stop::Bad {
                    return Err(Unsupported);
                }
                if stop == Stop::Break {
                    // Would the scalar continue on the next line?
                    let mut next = stop_at;
                    let mut line = self.line_start;
                    loop {
                        match self.byte_at(next) {
                            b'\r' => {
                                next += 2;
                                line = next;
                            }
                            b'\n' => {
                                next += 1;
                                line = next;
                            }
                            b' ' => next += 1,
                            _ => break,
                        }
                    }
                    let c = self.byte_at(next);
                    let ends = c == 0
                        || c == b'#'
                        || is_flow(c)
                        || (c == b':'
                            && (blank_or_breakz(self.byte_at(next + 1))
                                || is_flow(self.byte_at(next + 1))))
                        || (next == line
                            && (self.bytes[next..].starts_with(b"---")
                                || self.bytes[next..].starts_with(b"...")));
                    if !ends {
                        return Err(Unsupported);
                    }
                }
                self.pos = end;
                self.flow_plain_seen = true;
                Ok(Node {
                    kind: NodeKind::Scalar(Scalar {
                        text: self.text[start..end].into(),
                        style: ScalarStyle::Plain,
                    }),
                    span: self.span(start, end),
                    tag: None,
                    flow: false,
                })
            }
        }
    }

    fn flow_seq(&mut self, parent: isize) -> FastResult<Node> {
        self.enter()?;
        let start = self.pos;
        self.pos += 1;
        let base = self.items.len();
        let mut need_sep = false;
        loop {
            self.skip_flow_trivia(parent)?;
            let c = self.byte_at(self.pos);
            if c == b']' {
                self.pos += 1;
                break;
            }
            if need_sep {
                if c != b',' {
                    return Err(Unsupported);
                }
                self.pos += 1;
                need_sep = false;
                continue;
            }
            let item_start = self.pos;
            let item = self.flow_node(parent)?;
            let mut after_blanks = self.pos;
            while self.byte_at(after_blanks) == b' ' {
                after_blanks += 1;
            }
            if self.byte_at(after_blanks) == b':' {
                // A single-pair mapping, `[a: 1]`.
                let quoted_key = matches!(
                    &item.kind,
                    NodeKind::Scalar(Scalar {
                        style: ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted,
                        ..
                    })
                );
                if !matches!(item.kind, NodeKind::Scalar(_))
                    || item.tag.is_some()
                    || quoted_key
                    || !blank_or_breakz(self.byte_at(after_blanks + 1))
                    || self.byte_at(item_start) == b'!'
                {
                    return Err(Unsupported);
                }
                self.pos = after_blanks + 1;
                self.skip_spaces();
                if matches!(
                    self.byte_at(self.pos),
                    b',' | b']' | b'#' | b'\n' | b'\r' | 0
                ) {
                    return Err(Unsupported);
                }
                self.enter()?;
                let value = self.flow_node(parent)?;
                self.depth -= 1;
                if matches!(
                    &value.kind,
                    NodeKind::Scalar(Scalar {
                        style: ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted,
                        ..
                    })
                ) && !matches!(self.byte_at(self.pos), b',' | b']')
                {
                    return Err(Unsupported);
                }
                let span = self.span(item_start, value.span.end.max(item.span.end) as usize);
                let entries = vec![Entry { key: item, value }];
                self.items.push(Node {
                    kind: NodeKind::Map(entries.into_boxed_slice()),
                    span,
                    tag: None,
                    flow: false,
                });
            } else {
                self.items.push(item);
            }
            need_sep = true;
        }
        self.depth -= 1;
        let items: Vec<Node> = self.items.drain(base..).collect();
        // The `]` token runs over the blanks and a comment after it.
        let end = self.comma_token_end_from(self.pos);
        Ok(Node {
            kind: NodeKind::Seq(items.into_boxed_slice()),
            span: self.span(start, end),
            tag: None,
            flow: true,
        })
    }

    fn flow_map(&mut self, parent: isize) -> FastResult<Node> {
        self.enter()?;
        let start = self.pos;
        self.pos += 1;
        let base = self.entries.len();
        let mut need_sep = false;
        // End of the last `,` token (it runs over blanks and a comment), if it came last.
        let mut comma_end: Option<usize> = None;
        let event_end;
        loop {
            self.skip_flow_trivia(parent)?;
            let c = self.byte_at(self.pos);
            if c == b'}' {
                event_end = comma_end.unwrap_or_else(|| self.comma_token_end_from(self.pos + 1));
                self.pos += 1;
                break;
            }
            if need_sep {
                if c != b',' {
                    return Err(Unsupported);
                }
                self.pos += 1;
                comma_end = Some(self.comma_token_end());
                need_sep = false;
                continue;
            }
            if c == b',' {
                return Err(Unsupported);
            }
            comma_end = None;
            let key = self.flow_node(parent)?;
            if !matches!(key.kind, NodeKind::Scalar(_)) {
                return Err(Unsupported);
            }
            self.skip_spaces();
            let value = match self.byte_at(self.pos) {
                b':' => {
                    let after_colon = self.byte_at(self.pos + 1);
                    if !(blank_or_breakz(after_colon) || after_colon == b',' || after_colon == b'}')
                    {
                        return Err(Unsupported);
                    }
                    let colon = self.pos;
                    self.pos += 1;
                    self.skip_flow_trivia(parent)?;
                    match self.byte_at(self.pos) {
                        b',' | b'}' => self.empty(colon, colon, None),
                        _ => self.flow_node(parent)?,
                    }
                }
                b',' | b'}' => {
                    let token_end = self.comma_token_end_from(self.pos + 1);
                    let end = self.pos
                        + self.text[self.pos..token_end]
                            .trim_end_matches([' ', '\t', '\r', '\n'])
                            .len();
                    self.empty(self.pos, end, None)
                }
                _ => return Err(Unsupported),
            };
            self.entries.push(Entry { key, value });
            need_sep = true;
        }
        self.depth -= 1;
        let entries: Vec<Entry> = self.entries.drain(base..).collect();
        duplicates(&entries, &mut self.diags);
        let end = entries
            .last()
            .map_or(0, |e| e.value.span.end.max(e.key.span.end) as usize)
            .max(event_end);
        Ok(Node {
            kind: NodeKind::Map(entries.into_boxed_slice()),
            span: self.span(start, end),
            tag: None,
            flow: true,
        })
    }

    /// Where a `,` token that ended just before `pos` ends: saphyr runs it over the blanks
    /// and a comment that follow on its line.
    fn comma_token_end(&self) -> usize {
        self.comma_token_end_from(self.pos)
    }

    fn comma_token_end_from(&self, mut end: usize) -> usize {
        while self.byte_at(end) == b' ' {
            end += 1;
        }
        if self.byte_at(end) == b'#' {
            while end < self.bytes.len() && !is_break(self.bytes[end]) {
                end += 1;
            }
        }
        end
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Eof,
    Break,
    Comment,
    Colon,
    Flow,
    /// Input the reference path rejects.
    Bad,
}

/// The same diagnostics as `duplicate_diagnostics`, without hashing for the small mappings
/// that make up almost all of a file (every key span is distinct on the fast path).
fn duplicates(entries: &[Entry], diags: &mut Vec<Diagnostic>) {
    if entries.len() > 16 {
        duplicate_diagnostics(entries, diags);
        return;
    }
    for (i, entry) in entries.iter().enumerate() {
        let Some(k) = entry.key.key_text() else {
            continue;
        };
        if let Some(first) = entries[..i].iter().find(|e| e.key.key_text() == Some(k)) {
            diags.push(duplicate_key(k, entry.key.span, first.key.span));
        }
    }
}
