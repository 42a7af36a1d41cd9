//! Builds the node tree from parser events, iteratively so that nesting depth never turns into
//! recursion depth.

use crate::node::{Entry, Node, NodeKind, Tag};
use crate::scalar::{Scalar, ScalarStyle};
use pipewright_syntax::{Diagnostic, FileId, Span};
use saphyr_parser::{Event, Parser, ScalarStyle as SaphyrStyle};
use std::collections::{HashMap, HashSet};

/// Bounds that keep hostile input from exhausting the stack or memory.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_depth: usize,
    /// Total nodes an alias expansion may add to one file ("billion laughs").
    pub max_alias_nodes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_depth: 128,
            max_alias_nodes: 100_000,
        }
    }
}

/// One `---`-separated document. `root` is `None` for an empty document.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub root: Option<Node>,
    /// Where the document starts (its `---` marker or its first node).
    pub span: Span,
}

enum Frame {
    Seq {
        start: usize,
        tag: Option<Box<Tag>>,
        anchor: usize,
        flow: bool,
        items: Vec<Node>,
    },
    Map {
        start: usize,
        tag: Option<Box<Tag>>,
        anchor: usize,
        flow: bool,
        entries: Vec<Entry>,
        key: Option<Node>,
    },
}

/// Parses every document of `text`. On a YAML syntax error the documents are dropped and a
/// single `PW0001` explains where the parser gave up (the YAML layer cannot recover).
pub fn load(file: FileId, text: &str, limits: Limits) -> (Vec<Document>, Vec<Diagnostic>) {
    if let Some(done) = crate::fast::load(file, text, limits) {
        return done;
    }
    load_reference(file, text, limits)
}

/// The `saphyr-parser` path alone: the reference the fast path is tested against.
#[doc(hidden)]
pub fn load_reference(
    file: FileId,
    text: &str,
    limits: Limits,
) -> (Vec<Document>, Vec<Diagnostic>) {
    if let Some(d) = crate::printable::unprintable_diagnostic(file, text) {
        return (Vec::new(), vec![d]);
    }
    let mut b = Builder {
        file,
        offsets: CharOffsets::new(text),
        limits,
        diags: Vec::new(),
        anchors: HashMap::new(),
        alias_budget: limits.max_alias_nodes,
    };
    let docs = match b.run(text) {
        Ok(docs) => docs,
        Err(d) => {
            b.diags.push(d);
            Vec::new()
        }
    };
    (docs, b.diags)
}

struct Builder {
    file: FileId,
    offsets: CharOffsets,
    limits: Limits,
    diags: Vec<Diagnostic>,
    anchors: HashMap<usize, Node>,
    alias_budget: usize,
}

impl Builder {
    fn span(&self, start_char: usize, end_char: usize) -> Span {
        Span::new(
            self.file,
            self.offsets.byte(start_char)..self.offsets.byte(end_char),
        )
    }

    // The error ends the load, once per file; its size does not matter.
    #[allow(clippy::result_large_err)]
    fn run(&mut self, text: &str) -> Result<Vec<Document>, Diagnostic> {
        let mut docs = Vec::new();
        let mut stack: Vec<Frame> = Vec::new();
        let mut doc_start = 0usize;
        let mut root: Option<Node> = None;
        for ev in Parser::new_from_str(text) {
            let (event, sp) = ev.map_err(|e| {
                let at = self.offsets.byte(self.offsets.char_index(e.marker()));
                let len = text
                    .get(at..)
                    .and_then(|s| s.chars().next())
                    .map_or(0, char::len_utf8);
                if e.info().contains("recursion limit") {
                    return Diagnostic::error(
                        "PW0003",
                        Span::new(self.file, at..at + len),
                        "nesting is too deep",
                    )
                    .with_label("the YAML parser's nesting limit is reached here")
                    .with_help("flatten this structure");
                }
                Diagnostic::error(
                    "PW0001",
                    Span::new(self.file, at..at + len),
                    format!("invalid YAML: {}", e.info()),
                )
                .with_label("the YAML parser stopped here")
            })?;
            let (s, e) = (
                self.offsets.char_index(&sp.start),
                self.offsets.char_index(&sp.end),
            );
            let completed: Option<(Node, usize)> = match event {
                Event::StreamStart | Event::StreamEnd | Event::Nothing => None,
                Event::DocumentStart(_) => {
                    doc_start = s;
                    root = None;
                    self.anchors.clear();
                    None
                }
                Event::DocumentEnd => {
                    docs.push(Document {
                        root: root.take(),
                        span: self.span(doc_start, doc_start),
                    });
                    None
                }
                Event::Alias(id) => {
                    let Some(node) = self.anchors.get(&id).cloned() else {
                        return Err(Diagnostic::error(
                            "PW0004",
                            self.span(s, e),
                            "alias to an unknown anchor",
                        ));
                    };
                    let mut n = 0usize;
                    node.walk(|_| n += 1);
                    if n > self.alias_budget {
                        return Err(Diagnostic::error(
                            "PW0003",
                            self.span(s, e),
                            "aliases expand to too many nodes",
                        )
                        .with_label("this alias exceeds the expansion budget")
                        .with_note(format!(
                            "at most {} nodes may be created through aliases in one file",
                            self.limits.max_alias_nodes
                        )));
                    }
                    self.alias_budget -= n;
                    let mut node = node;
                    node.span = self.span(s, e);
                    Some((node, 0))
                }
                Event::Scalar(value, style, anchor, tag) => {
                    let style = match style {
                        SaphyrStyle::Plain => ScalarStyle::Plain,
                        SaphyrStyle::SingleQuoted => ScalarStyle::SingleQuoted,
                        SaphyrStyle::DoubleQuoted => ScalarStyle::DoubleQuoted,
                        SaphyrStyle::Literal => ScalarStyle::Literal,
                        SaphyrStyle::Folded => ScalarStyle::Folded,
                    };
                    let span = self.scalar_span(text, s, e, style);
                    let node = Node {
                        kind: NodeKind::Scalar(Scalar {
                            text: value.into_owned().into(),
                            style,
                        }),
                        span,
                        tag: tag.map(|t| Box::new(convert_tag(&t))),
                        flow: false,
                    };
                    Some((node, anchor))
                }
                Event::SequenceStart(anchor, tag) => {
                    self.push(
                        &mut stack,
                        Frame::Seq {
                            start: s,
                            tag: tag.map(|t| Box::new(convert_tag(&t))),
                            anchor,
                            flow: text_at(text, &self.offsets, s) == Some('['),
                            items: Vec::new(),
                        },
                        s,
                        e,
                    )?;
                    None
                }
                Event::MappingStart(anchor, tag) => {
                    self.push(
                        &mut stack,
                        Frame::Map {
                            start: s,
                            tag: tag.map(|t| Box::new(convert_tag(&t))),
                            anchor,
                            flow: text_at(text, &self.offsets, s) == Some('{'),
                            entries: Vec::new(),
                            key: None,
                        },
                        s,
                        e,
                    )?;
                    None
                }
                Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                    Some(Frame::Seq {
                        start,
                        tag,
                        anchor,
                        flow,
                        items,
                    }) => {
                        let end = items
                            .last()
                            .map_or(self.offsets.byte(e), |n| n.span.end as usize)
                            .max(if flow { self.offsets.byte(e) } else { 0 });
                        let span = Span::new(self.file, self.offsets.byte(start)..end);
                        Some((
                            Node {
                                kind: NodeKind::Seq(items.into_boxed_slice()),
                                span,
                                tag,
                                flow,
                            },
                            anchor,
                        ))
                    }
                    Some(Frame::Map {
                        start,
                        tag,
                        anchor,
                        flow,
                        entries,
                        ..
                    }) => {
                        self.check_duplicates(&entries);
                        let end = entries
                            .last()
                            .map_or(self.offsets.byte(e), |en| {
                                en.value.span.end.max(en.key.span.end) as usize
                            })
                            .max(if flow { self.offsets.byte(e) } else { 0 });
                        let span = Span::new(self.file, self.offsets.byte(start)..end);
                        Some((
                            Node {
                                kind: NodeKind::Map(entries.into_boxed_slice()),
                                span,
                                tag,
                                flow,
                            },
                            anchor,
                        ))
                    }
                    None => None,
                },
            };
            if let Some((node, anchor)) = completed {
                if anchor != 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                match stack.last_mut() {
                    None => root = Some(node),
                    Some(Frame::Seq { items, .. }) => items.push(node),
                    Some(Frame::Map { entries, key, .. }) => match key.take() {
                        None => {
                            if !matches!(node.kind, NodeKind::Scalar(_)) {
                                self.diags.push(
                                    Diagnostic::error(
                                        "PW0004",
                                        node.span,
                                        "a mapping key must be a plain value",
                                    )
                                    .with_label("complex key")
                                    .with_help("use a string as the key"),
                                );
                            }
                            *key = Some(node);
                        }
                        Some(k) => entries.push(Entry {
                            key: k,
                            value: node,
                        }),
                    },
                }
            }
        }
        Ok(docs)
    }

    #[allow(clippy::result_large_err)]
    fn push(
        &mut self,
        stack: &mut Vec<Frame>,
        frame: Frame,
        s: usize,
        e: usize,
    ) -> Result<(), Diagnostic> {
        if stack.len() >= self.limits.max_depth {
            return Err(Diagnostic::error(
                "PW0003",
                self.span(s, e.max(s + 1)),
                format!("nesting deeper than {} levels", self.limits.max_depth),
            )
            .with_label("too deep")
            .with_help("flatten this structure"));
        }
        stack.push(frame);
        Ok(())
    }

    /// saphyr reports a quoted scalar's span from its opening quote and a block scalar's from
    /// its first content line. Its end is where the scanner stopped, which may include trailing blanks and
    /// newlines, so trim to the last non-blank character.
    fn scalar_span(&self, text: &str, s: usize, e: usize, style: ScalarStyle) -> Span {
        let start = self.offsets.byte(s);
        let mut end = self.offsets.byte(e).max(start);
        // In block context saphyr's end for a quoted scalar can run on over a trailing
        // comment; the scalar really ends at its closing quote.
        if let Some(close) = text
            .get(start..end)
            .and_then(|slice| closing_quote(slice, style))
        {
            return Span::new(self.file, start..start + close);
        }
        if let Some(slice) = text.get(start..end) {
            let trimmed = if matches!(style, ScalarStyle::Literal | ScalarStyle::Folded) {
                slice.trim_end()
            } else {
                slice.trim_end_matches([' ', '\t', '\r', '\n'])
            };
            end = start + trimmed.len();
        }
        Span::new(self.file, start..end)
    }

    fn check_duplicates(&mut self, entries: &[Entry]) {
        duplicate_diagnostics(entries, &mut self.diags);
    }
}

/// `PW0005` for every key of `entries` that repeats an earlier one.
pub(crate) fn duplicate_diagnostics(entries: &[Entry], diags: &mut Vec<Diagnostic>) {
    {
        let mut seen: HashMap<&str, Span> = HashMap::new();
        let mut reported = HashSet::new();
        for en in entries {
            let Some(k) = en.key.key_text() else { continue };
            if let Some(first) = seen.get(k) {
                if reported.insert(en.key.span) {
                    diags.push(duplicate_key(k, en.key.span, *first));
                }
            } else {
                seen.insert(k, en.key.span);
            }
        }
    }
}

/// `PW0005` for the key `k` at `at`, first defined at `first`.
pub(crate) fn duplicate_key(k: &str, at: Span, first: Span) -> Diagnostic {
    Diagnostic::error("PW0005", at, format!("duplicate key `{k}`"))
        .with_label("this key repeats an earlier one")
        .with_secondary(first, "first defined here")
        .with_help(
            "YAML keeps only the last value, so the first one would be lost; remove one of them",
        )
}

/// The byte just past the closing quote of a quoted scalar that starts at `slice[0]`.
fn closing_quote(slice: &str, style: ScalarStyle) -> Option<usize> {
    let bytes = slice.as_bytes();
    match style {
        ScalarStyle::DoubleQuoted if bytes.first() == Some(&b'"') => {
            let mut i = 1;
            while i < bytes.len() {
                match bytes[i] {
                    b'\\' => i += 2,
                    b'"' => return Some(i + 1),
                    _ => i += 1,
                }
            }
            None
        }
        ScalarStyle::SingleQuoted if bytes.first() == Some(&b'\'') => {
            let mut i = 1;
            while i < bytes.len() {
                if bytes[i] == b'\'' {
                    if bytes.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    return Some(i + 1);
                }
                i += 1;
            }
            None
        }
        _ => None,
    }
}

fn convert_tag(t: &saphyr_parser::Tag) -> Tag {
    Tag {
        handle: t.handle.clone(),
        suffix: t.suffix.chars().map(utf8_escape).collect(),
    }
}

/// saphyr-parser (0.3.4, `scan_uri_escapes`) decodes a tag's `%xx` escapes of a multi-byte
/// UTF-8 character by concatenating the bytes into one number (`!%C3%A9` became U+C3A9, not
/// `é`). A tag holds no non-ASCII character written as such (saphyr, like PyYAML, refuses it),
/// so every one came from escapes and its bytes are recovered and decoded.
fn utf8_escape(c: char) -> char {
    let code = u32::from(c);
    if code < 0x80 {
        return c;
    }
    let bytes = code.to_be_bytes();
    let first = bytes.iter().position(|&b| b != 0).unwrap_or(3);
    match std::str::from_utf8(&bytes[first..]).map(|s| s.chars()) {
        Ok(mut chars) => match (chars.next(), chars.next()) {
            (Some(d), None) => d,
            _ => c,
        },
        Err(_) => c,
    }
}

fn text_at(text: &str, offsets: &CharOffsets, char_idx: usize) -> Option<char> {
    text.get(offsets.byte(char_idx)..)?.chars().next()
}

/// saphyr counts positions in characters; spans are bytes. ASCII text needs no table.
struct CharOffsets {
    table: Option<Vec<u32>>,
    len: usize,
    /// The character index where each line starts, kept only for text whose marker indices
    /// drift: saphyr-parser (0.3.4, `StrInput::fetch_while_is_yaml_non_space`) advances the
    /// index by bytes, not characters, over a directive's name and parameters, so every
    /// position after a directive holding non-ASCII characters was off by the difference and
    /// could fall inside a character. Lines and columns stay right, so such text is mapped
    /// through them.
    line_chars: Option<Vec<u32>>,
    bom: bool,
}

impl CharOffsets {
    fn new(text: &str) -> CharOffsets {
        let table = if text.is_ascii() {
            None
        } else {
            let mut t: Vec<u32> = text
                .char_indices()
                .map(|(i, _)| u32::try_from(i).unwrap_or(u32::MAX))
                .collect();
            t.push(u32::try_from(text.len()).unwrap_or(u32::MAX));
            Some(t)
        };
        let drifts = table.is_some()
            && text
                .split(['\n', '\r'])
                .any(|l| l.trim_start_matches('\u{feff}').starts_with('%') && !l.is_ascii());
        let line_chars = drifts.then(|| {
            let mut starts = vec![0u32];
            let mut chars = text.chars().enumerate().peekable();
            while let Some((i, c)) = chars.next() {
                let next = match c {
                    '\r' if chars.peek().is_some_and(|&(_, c)| c == '\n') => {
                        chars.next();
                        i + 2
                    }
                    '\r' | '\n' => i + 1,
                    _ => continue,
                };
                starts.push(u32::try_from(next).unwrap_or(u32::MAX));
            }
            starts
        });
        CharOffsets {
            table,
            len: text.len(),
            line_chars,
            bom: text.starts_with('\u{feff}'),
        }
    }

    /// The character index of a saphyr position.
    fn char_index(&self, m: &saphyr_parser::Marker) -> usize {
        let Some(lines) = &self.line_chars else {
            return m.index();
        };
        match m.line().checked_sub(1).and_then(|l| lines.get(l)) {
            // saphyr does not count a byte order mark as a column.
            Some(&start) => start as usize + m.col() + usize::from(self.bom && m.line() == 1),
            None => m.index(),
        }
    }

    fn byte(&self, char_idx: usize) -> usize {
        match &self.table {
            None => char_idx.min(self.len),
            Some(t) => t.get(char_idx).map_or(self.len, |&b| b as usize),
        }
    }
}
