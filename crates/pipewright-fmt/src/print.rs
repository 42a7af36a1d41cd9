//! Prints a [`Cst`] in canonical form: two-space indentation, sequences indented under their
//! key, dialect key order, flow style only where it fits and holds no comment, minimal quoting,
//! re-spaced R1 expressions, block scalars kept as block scalars.

use crate::cst::{
    after_block_header, is_block_scalar, prints_nothing, props, scalar_end, spans_its_header, Cst,
    Props,
};
use crate::quote;
use crate::rules::{DialectRules, Seg};
use crate::trivia::{self, Item, Trivia};
use crate::Canon;
use pipewright_yaml::{Entry, Node, NodeKind, ScalarStyle, ScalarValue};

/// The column limit for flow collections.
pub const WIDTH: usize = 100;
const INDENT: usize = 2;

pub fn print(cst: &mut Cst<'_>, rules: &dyn DialectRules) -> String {
    print_with(cst, rules, &Canon::default())
}

/// [`print`] with the canonical expression forms shared with the verifier.
pub fn print_with(cst: &mut Cst<'_>, rules: &dyn DialectRules, canon: &Canon) -> String {
    let triv = std::mem::take(&mut cst.trivia);
    let mut p = Printer {
        src: cst.src,
        rules,
        canon,
        triv,
        out: String::with_capacity(cst.src.len() + cst.src.len() / 8),
        orphans: Vec::new(),
        kept_end: 0,
        has_alias: has_alias(cst.src, &cst.docs),
    };
    let n = cst.docs.len();
    let mut ends_in_empty_block_scalar = false;
    for (i, doc) in cst.docs.iter().enumerate() {
        let lone_empty =
            doc.root.is_none() && !doc.trailing.iter().any(|t| matches!(t, Item::Comment(_)));
        // An explicit empty document (`---` alone) prints nothing but its marker, which must
        // stay even first, or the document is lost.
        let empty_root = doc
            .root
            .as_ref()
            .is_some_and(|r| prints_nothing(cst.src, r));
        if i > 0 && ends_in_empty_block_scalar {
            // saphyr reads a `---` line after a document's block scalar without content as
            // that scalar's first line (`>-` then `---` is the string `---`): the document end
            // marker closes it first (found by the fmt_yaml fuzz target).
            p.out.push_str("...\n");
        }
        if i > 0 || (lone_empty && n > 1) || empty_root {
            p.out.push_str("---\n");
        }
        ends_in_empty_block_scalar = doc.root.as_ref().is_some_and(|r| {
            is_block_scalar(r)
                && !props(cst.src, r).alias
                && r.as_scalar()
                    .is_some_and(|s| s.text.trim_end_matches('\n').is_empty())
        });
        let mut after = doc.trailing.clone();
        if doc
            .root
            .as_ref()
            .is_some_and(|r| is_block_scalar(r) && !props(cst.src, r).alias)
        {
            // Every line after a document's block scalar, up to the next document, is its
            // content: a comment printed there became text. They go above it.
            let comments = after
                .drain(..)
                .filter(|i| matches!(i, Item::Comment(_)))
                .collect();
            p.leading(comments, 0, true);
        }
        if let Some(root) = &doc.root {
            let mut path = vec![Seg::Doc(rules.doc_kind(root))];
            if empty_root {
                // Only what the loader attached to the empty value (it may span a character).
                let lead = p.first_leading(root, &mut path);
                p.leading(lead, 0, true);
                let trailing = p.triv.take_trailing(root);
                p.comment_lines(&trailing, 0);
            } else {
                p.top(root, &mut path);
            }
        }
        p.flush_orphans();
        p.leading(after, 0, doc.root.is_none());
    }
    // Anything not printed yet (which a correct attachment never leaves) still must not be lost.
    let mut rest: Vec<(u32, String)> = Vec::new();
    for (k, v) in p.triv.leading.drain() {
        rest.extend(v.into_iter().filter_map(|i| match i {
            Item::Comment(c) => Some((k, c)),
            Item::Blank => None,
        }));
    }
    for (k, v) in p.triv.trailing.drain() {
        rest.extend(v.into_iter().map(|c| (k, c)));
    }
    rest.sort();
    for (_, c) in rest {
        p.out.push_str(&c);
        p.out.push('\n');
    }
    let trimmed = p.out.trim_end_matches('\n').len();
    if trimmed < p.kept_end {
        // The file ends with a keeping block scalar's empty lines (it ends in a line break).
        p.out.truncate(p.kept_end);
    } else {
        p.out.truncate(trimmed);
        if !p.out.is_empty() {
            p.out.push('\n');
        }
    }
    p.out
}

/// Whether a block scalar's span `cs..end` reaches into its content lines (and not only its
/// header, as for a scalar without content).
fn body_ends_with_content(src: &str, cs: usize, end: usize) -> bool {
    // An empty span at a content line is the position of content that is all blanks.
    src.get(cs..end).is_some_and(|t| {
        !(t.starts_with(['|', '>']) && !after_block_header(src, cs) && !t.contains('\n'))
            && (!t.is_empty() || after_block_header(src, cs))
    })
}

/// A tag as it is printed: the loader decodes `%xx` escapes in the suffix (`!%60` is the tag
/// `` !` ``, `!%C3%A9` the tag `!é`), and a character outside the URI characters a tag may
/// hold is escaped again.
pub(crate) fn tag_text(t: &pipewright_yaml::Tag) -> String {
    let shown = t.display();
    // No handle: the non-specific tag `!`, or a verbatim one (`!<x>`), printed as such.
    if t.handle.is_empty() {
        return if t.suffix == "!" {
            shown
        } else {
            format!("!<{}>", t.suffix)
        };
    }
    // A tag may hold ASCII URI characters only (YAML 1.2 ns-uri-char; saphyr and PyYAML refuse
    // anything else): other characters are escaped as their UTF-8 bytes.
    // `#` too is escaped: PyYAML's tag scanner refuses it (found by the PyYAML sweep of the
    // fmt_yaml fuzz corpus).
    let plain = |c: char| c.is_ascii_alphanumeric() || "-;/?:@&=+$_.~*'()".contains(c);
    if t.suffix.chars().all(plain) {
        return shown;
    }
    let mut out = shown[..shown.len() - t.suffix.len()].to_string();
    for c in t.suffix.chars() {
        if plain(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// A block scalar's indicator (`|`, `>-`, `|2+`…) on its header line: the first `|` or `>`
/// token after which only blanks or a comment follow (a comment may hold `|` and `>`, and so
/// may a quoted key before the header).
fn block_indicator(line: &str) -> Option<&str> {
    let line = line.trim_end_matches(['\n', '\r']);
    let b = line.as_bytes();
    (0..b.len()).find_map(|i| {
        if !matches!(b[i], b'|' | b'>') || (i > 0 && !matches!(b[i - 1], b' ' | b'\t')) {
            return None;
        }
        let tok_len = line[i + 1..]
            .bytes()
            .take_while(|c| c.is_ascii_digit() || matches!(c, b'+' | b'-'))
            .count();
        let rest = line[i + 1 + tok_len..].trim_start_matches([' ', '\t']);
        let blank_before_rest = rest.len() < line.len() - (i + 1 + tok_len);
        (rest.is_empty() || (rest.starts_with('#') && blank_before_rest))
            .then(|| &line[i..i + 1 + tok_len])
    })
}

/// Whether a scalar prints as its properties alone (`&a`, `!!str` over an empty value): as a
/// key it needs a blank before its colon (`&a:` is the anchor `a:`).
fn props_only(src: &str, n: &Node) -> bool {
    n.as_scalar()
        .is_some_and(|s| s.style == ScalarStyle::Plain && s.text.is_empty())
        && {
            let p = props(src, n);
            !p.alias && (p.anchor.is_some() || n.tag.is_some())
        }
}

/// Where a flow attempt's text starts in the output and how many characters fit.
#[derive(Clone, Copy)]
struct Room {
    start: usize,
    chars: usize,
}

impl Room {
    /// Whether the text written since `start` is already wider than the room (it only grows).
    fn exceeded(self, out: &str) -> bool {
        out.len() - self.start > self.chars && out[self.start..].chars().count() > self.chars
    }
}

struct Printer<'s, 'r> {
    src: &'s str,
    rules: &'r dyn DialectRules,
    canon: &'r Canon,
    triv: Trivia,
    out: String,
    /// Comments that could not be placed where they were (printed at the document's end).
    orphans: Vec<String>,
    /// The end of the last block scalar printed with `+` chomping: its empty lines are its
    /// value, and the file's final newlines are trimmed only after it.
    kept_end: usize,
    /// Whether the file holds an alias: only then can reordering keys break one.
    has_alias: bool,
}

/// The anchors an entry defines and the aliases it uses (its key's and value's trees; an
/// alias is not walked into).
fn anchors_and_aliases<'s>(src: &'s str, e: &Entry) -> (Vec<&'s str>, Vec<&'s str>) {
    let (mut anchors, mut aliases) = (Vec::new(), Vec::new());
    let mut stack = vec![&e.key, &e.value];
    while let Some(n) = stack.pop() {
        let p = props(src, n);
        if p.alias {
            let start = n.span.start as usize;
            if let Some(name) = src.get(start + 1..(n.span.end as usize).max(start + 1)) {
                aliases.push(name);
            }
            continue;
        }
        anchors.extend(p.anchor);
        match &n.kind {
            NodeKind::Map(es) => es.iter().for_each(|e| stack.extend([&e.key, &e.value])),
            NodeKind::Seq(items) => stack.extend(items.iter()),
            NodeKind::Scalar(_) => {}
        }
    }
    (anchors, aliases)
}

/// Whether printing a mapping's entries in `order` would put an alias before the anchor it
/// names, defined in another of its entries: the output would name nothing (a recipe's
/// `description: &d …` and `name: *d`, which the key order swaps, failed with PW0900).
fn moves_alias_above_anchor(src: &str, order: &[&Entry]) -> bool {
    let sets: Vec<_> = order.iter().map(|e| anchors_and_aliases(src, e)).collect();
    sets.iter().enumerate().any(|(i, (_, aliases))| {
        aliases.iter().any(|a| {
            let defined_before = sets[..i].iter().any(|(anchors, _)| anchors.contains(a));
            let defined_after = sets[i + 1..].iter().any(|(anchors, _)| anchors.contains(a));
            !defined_before && defined_after
        })
    })
}

/// Whether any document holds an alias.
fn has_alias(src: &str, docs: &[crate::cst::CstDoc]) -> bool {
    if !src.contains('*') {
        return false;
    }
    let mut stack: Vec<&Node> = docs.iter().filter_map(|d| d.root.as_ref()).collect();
    while let Some(n) = stack.pop() {
        if src.as_bytes().get(n.span.start as usize) == Some(&b'*') && props(src, n).alias {
            return true;
        }
        match &n.kind {
            NodeKind::Map(es) => es.iter().for_each(|e| stack.extend([&e.key, &e.value])),
            NodeKind::Seq(items) => stack.extend(items.iter()),
            NodeKind::Scalar(_) => {}
        }
    }
    false
}

fn key_str(e: &Entry) -> &str {
    e.key.key_text().unwrap_or("")
}

impl<'s, 'r> Printer<'s, 'r> {
    fn spaces(&mut self, n: usize) {
        self.out.extend(std::iter::repeat_n(' ', n));
    }

    fn col(&self) -> usize {
        let start = self.out.rfind('\n').map_or(0, |i| i + 1);
        self.out[start..].chars().count()
    }

    /// After a key: a blank when the key printed as properties alone (see [`props_only`]).
    fn space_after_props_only(&mut self, key: &Node) {
        if props_only(self.src, key) {
            let kept = self.out.trim_end_matches(' ').len();
            self.out.truncate(kept);
            self.out.push(' ');
        }
    }

    fn flush_orphans(&mut self) {
        for c in std::mem::take(&mut self.orphans) {
            self.out.push_str(&c);
            self.out.push('\n');
        }
    }

    /// Leading trivia: comments at `indent`, runs of blank lines as one blank line. Blank
    /// lines that open a collection or a document (`first`) are dropped.
    fn leading(&mut self, items: Vec<Item>, indent: usize, first: bool) {
        let mut blank = false;
        let mut any = false;
        for it in items {
            match it {
                Item::Blank => blank = true,
                Item::Comment(c) => {
                    if blank && (any || !first) && !self.after_kept() {
                        self.out.push('\n');
                    }
                    blank = false;
                    any = true;
                    self.spaces(indent);
                    self.out.push_str(&c);
                    self.out.push('\n');
                }
            }
        }
        if blank && (any || !first) && !self.out.is_empty() && !self.after_kept() {
            self.out.push('\n');
        }
    }

    /// Whether the output ends with a keeping block scalar, whose value a blank line printed
    /// now would lengthen (its own empty lines are printed with it).
    fn after_kept(&self) -> bool {
        self.kept_end > 0 && self.out.len() == self.kept_end
    }

    fn comment_lines(&mut self, comments: &[String], indent: usize) {
        for c in comments {
            self.spaces(indent);
            self.out.push_str(c);
            self.out.push('\n');
        }
    }

    /// Whether a node is printed as one token (its trivia keyed by its own start); a block
    /// collection's properties are one.
    fn is_token(&self, n: &Node, p: &Props) -> bool {
        let collection = matches!(n.kind, NodeKind::Map(_) | NodeKind::Seq(_));
        p.alias
            || p.flow
            || (collection && (p.anchor.is_some() || n.tag.is_some()))
            || trivia::odd_key(self.src, n).is_some()
            || (matches!(n.kind, NodeKind::Scalar(_))
                && (!n.span.is_empty() || crate::cst::blank_block_content(n))
                && !spans_its_header(self.src, n)
                && !prints_nothing(self.src, n))
    }

    fn ordered<'n>(&self, node: &'n Node, path: &[Seg]) -> Vec<&'n Entry> {
        let Some(entries) = node.as_map() else {
            return Vec::new();
        };
        let Some(order) = self.rules.key_order(path) else {
            return entries.iter().collect();
        };
        // Each key's rank once (not per comparison); most mappings are already in order.
        let mut ranked: Vec<(usize, &Entry)> = entries
            .iter()
            .map(|e| {
                let k = key_str(e);
                (order.iter().position(|o| *o == k).unwrap_or(order.len()), e)
            })
            .collect();
        if !ranked.is_sorted_by_key(|r| r.0) {
            ranked.sort_by_key(|r| r.0);
            let sorted: Vec<&Entry> = ranked.iter().map(|r| r.1).collect();
            if self.has_alias && moves_alias_above_anchor(self.src, &sorted) {
                return entries.iter().collect();
            }
            return sorted;
        }
        ranked.into_iter().map(|r| r.1).collect()
    }

    /// The leading trivia of an entry: its key's and, when the value is printed on the key's
    /// line, the value's comments too.
    fn entry_leading(&mut self, e: &'s Entry, path: &mut Vec<Seg<'s>>) -> Vec<Item> {
        let mut lead = self.triv.take_leading(&e.key);
        let p = props(self.src, &e.value);
        if self.is_token(&e.value, &p) {
            lead.extend(
                self.own_leading(&e.value)
                    .into_iter()
                    .filter(|i| matches!(i, Item::Comment(_))),
            );
        } else if !self.is_token(&e.key, &props(self.src, &e.key)) {
            // Nothing holds the trivia above an empty key (`?` then `:`) but the value's
            // first line, which is printed below it: taken here, it stays above. Left there,
            // it moved below the `:` on the second run (found by the fmt_yaml fuzz target).
            path.push(Seg::Key(key_str(e)));
            lead.extend(self.first_leading(&e.value, path));
            path.pop();
        }
        lead
    }

    /// A token's leading trivia, where the trivia pass attached it.
    fn own_leading(&mut self, n: &Node) -> Vec<Item> {
        match trivia::odd_key(self.src, n) {
            Some(at) => self.triv.take_leading_at(at),
            None => self.triv.take_leading(n),
        }
    }

    /// Takes the trivia printed before a node's first line (a sequence item's `-` line).
    fn first_leading(&mut self, node: &'s Node, path: &mut Vec<Seg<'s>>) -> Vec<Item> {
        let p = props(self.src, node);
        let mut lead = Vec::new();
        if self.is_token(node, &p) {
            lead = self.own_leading(node);
            if p.alias || !p.flow {
                return lead;
            }
        }
        if p.anchor.is_some() || node.tag.is_some() {
            // Printed non-compact; children print their own trivia.
            return lead;
        }
        match &node.kind {
            NodeKind::Map(entries) => {
                // What stood above the item's first key in the source stays above the item
                // whichever key is printed first; the first printed key's comments join it
                // (nothing can stand between the dash and that key).
                let source_first = entries.first();
                if let Some(e) = source_first {
                    lead.extend(self.entry_leading(e, path));
                }
                // Once per entry: for an empty key, asking walks down its value (asking the same
                // entry twice per level took time exponential in the nesting of `: : : …`).
                let first = self.ordered(node, path).first().copied();
                if let Some(e) =
                    first.filter(|e| !source_first.is_some_and(|s| std::ptr::eq(*e, s)))
                {
                    lead.extend(self.entry_leading(e, path));
                }
            }
            NodeKind::Seq(items) => {
                if let Some(first) = items.first() {
                    path.push(Seg::Index(0));
                    lead.extend(self.first_leading(first, path));
                    path.pop();
                }
            }
            NodeKind::Scalar(_) => {}
        }
        lead
    }

    fn top(&mut self, root: &'s Node, path: &mut Vec<Seg<'s>>) {
        let p = props(self.src, root);
        let compact = !p.alias && !p.flow && p.anchor.is_none() && root.tag.is_none();
        match &root.kind {
            NodeKind::Map(e) if compact && !e.is_empty() => {
                // The document's header (the trivia before the first key, up to its last blank
                // line) stays at the top when that key moves; the rest moves with the key.
                if let Some(first) = e.first() {
                    let mut head = self.triv.take_leading(&first.key);
                    let split = head
                        .iter()
                        .rposition(|i| matches!(i, Item::Blank))
                        .map_or(0, |i| i + 1);
                    let own = head.split_off(split);
                    self.leading(head, 0, true);
                    if !own.is_empty() {
                        self.triv.insert_leading(first.key.span.start, own);
                    }
                }
                self.block_map(root, 0, false, path)
            }
            NodeKind::Seq(i) if compact && !i.is_empty() => self.block_seq(root, 0, false, path),
            _ => {
                let lead = self.first_leading(root, path);
                self.leading(lead, 0, true);
                self.value(root, 0, Vec::new(), path, false);
            }
        }
    }

    fn block_map(
        &mut self,
        node: &'s Node,
        indent: usize,
        inline_first: bool,
        path: &mut Vec<Seg<'s>>,
    ) {
        let entries = self.ordered(node, path);
        for (i, e) in entries.into_iter().enumerate() {
            let lead = self.entry_leading(e, path);
            if i == 0 && inline_first {
                self.orphans
                    .extend(lead.into_iter().filter_map(|t| match t {
                        Item::Comment(c) => Some(c),
                        Item::Blank => None,
                    }));
            } else {
                self.leading(lead, indent, i == 0);
                self.spaces(indent);
            }
            let empty_key = prints_nothing(self.src, &e.key).then_some(self.out.len());
            if empty_key.is_some() {
                // An empty key: YAML 1.1 readers (PyYAML, the reference runtimes) refuse a line
                // starting with `:`, and read `?` alone, then `:`, as a null key.
                self.out.push_str("?\n");
                self.spaces(indent);
            }
            // Written straight into the output: keys are the most numerous scalars.
            let mut out = std::mem::take(&mut self.out);
            self.scalar_into(&e.key, path, false, true, &mut out);
            self.out = out;
            self.space_after_props_only(&e.key);
            self.out.push(':');
            let colon = self.out.len();
            let key_trailing = self.triv.take_trailing(&e.key);
            path.push(Seg::Key(key_str(e)));
            self.value(&e.value, indent, key_trailing, path, true);
            path.pop();
            if let Some(at) = empty_key {
                self.comment_above_empty_key(at, colon);
            }
        }
    }

    /// A comment printed after an empty key's `:` (a block value's trailing comment) belongs
    /// to no token there once read back: it became the value's first line's, which the next
    /// run printed above the entry (found by the fmt_yaml fuzz target). It goes there at once.
    /// `at` is where the entry's `?` is, `colon` just after its `:`. The comment goes above the
    /// `?` line (a sequence item's dash line, when the entry starts the item), at its
    /// indentation.
    fn comment_above_empty_key(&mut self, at: usize, colon: usize) {
        let Some(rest) = self.out.get(colon..) else {
            return;
        };
        if !rest.starts_with(" #") {
            return;
        }
        let line_end = rest.find('\n').map_or(self.out.len(), |i| colon + i);
        let comment = self.out[colon + 1..line_end].to_string();
        self.out.replace_range(colon..line_end, "");
        let line = self.out[..at].rfind('\n').map_or(0, |i| i + 1);
        let indent = self.out[line..].len() - self.out[line..].trim_start_matches(' ').len();
        let mut above: String = std::iter::repeat_n(' ', indent).collect();
        above.push_str(&comment);
        above.push('\n');
        self.out.insert_str(line, &above);
    }

    fn block_seq(
        &mut self,
        node: &'s Node,
        indent: usize,
        inline_first: bool,
        path: &mut Vec<Seg<'s>>,
    ) {
        let Some(items) = node.as_seq() else { return };
        for (i, item) in items.iter().enumerate() {
            path.push(Seg::Index(i));
            if !(i == 0 && inline_first) {
                let lead = self.first_leading(item, path);
                self.leading(lead, indent, i == 0);
                self.spaces(indent);
            }
            self.out.push('-');
            self.value(item, indent, Vec::new(), path, false);
            path.pop();
        }
    }

    /// Prints a value after `key:` or `-` (the cursor is just after the colon or dash) and
    /// the lines it owns. `indent` is the indentation of the key or dash. A document's root
    /// value other than a block collection (`top`) comes here too, at the start of a line: it
    /// gets no blank before it, and a flow collection printed in block style stays at column 0
    /// (indented, it would print differently once read back as a block collection).
    fn value(
        &mut self,
        v: &'s Node,
        indent: usize,
        mut trailing: Vec<String>,
        path: &mut Vec<Seg<'s>>,
        after_key: bool,
    ) {
        let p = props(self.src, v);
        let root = matches!(path.last(), Some(Seg::Doc(_)));
        let blank = if root { "" } else { " " };
        let child = indent + INDENT;
        if is_block_scalar(v) && !p.alias {
            let (header, lines) = self.block_parts(v, &p);
            self.out.push_str(blank);
            self.out.push_str(&self.props_prefix(v, &p));
            self.out.push_str(&header);
            if let Some(c) = trailing.first() {
                self.out.push(' ');
                self.out.push_str(c);
            }
            self.orphans.extend(trailing.into_iter().skip(1));
            self.out.push('\n');
            for l in lines {
                if !l.is_empty() {
                    self.spaces(child);
                    self.out.push_str(&l);
                }
                self.out.push('\n');
            }
            if header.ends_with('+') {
                self.kept_end = self.out.len();
            }
            return;
        }
        // The value is written straight after `key: ` / `- `; a collection that does not fit
        // (or may not be flow) is taken back out and printed in block style below.
        let mark = self.out.len();
        self.out.push_str(blank);
        let col = self.col();
        let text_start = self.out.len();
        let inline = match &v.kind {
            NodeKind::Map(_) | NodeKind::Seq(_) if !p.alias => self.try_flow_into(v, &p, path, col),
            _ => {
                let mut out = std::mem::take(&mut self.out);
                self.scalar_into(v, path, false, false, &mut out);
                self.out = out;
                true
            }
        };
        if inline {
            if self.is_token(v, &p) {
                trailing.extend(self.triv.take_trailing(v));
            }
            if trailing.len() > 1 {
                // One comment per line: the first stays after the key, the value moves below.
                let text = self.out.split_off(text_start);
                self.out.truncate(mark);
                self.out.push(' ');
                self.out.push_str(&trailing[0]);
                self.out.push('\n');
                self.spaces(child);
                self.out.push_str(&text);
                self.out.push(' ');
                self.out.push_str(&trailing[1]);
                self.out.push('\n');
                let rest: Vec<String> = trailing.into_iter().skip(2).collect();
                self.comment_lines(&rest, child);
                return;
            }
            if self.out.len() == text_start {
                // An empty value: no space after the colon.
                self.out.truncate(mark);
            }
            if let Some(c) = trailing.first() {
                self.out.push(' ');
                self.out.push_str(c);
            }
            self.out.push('\n');
            return;
        }
        self.out.truncate(mark);
        // A block collection.
        let child = if root { 0 } else { child };
        let prefix = self.props_prefix(v, &p);
        let has_props = !prefix.is_empty();
        if p.flow || has_props {
            trailing.extend(self.triv.take_trailing(v));
        }
        if has_props {
            self.out.push_str(blank);
            self.out.push_str(prefix.trim_end());
        }
        let compact = !after_key && !has_props && trailing.is_empty();
        if compact {
            self.out.push_str(blank);
            match &v.kind {
                NodeKind::Map(_) => self.block_map(v, child, true, path),
                _ => self.block_seq(v, child, true, path),
            }
            return;
        }
        if let Some(c) = trailing.first() {
            if has_props || !root {
                self.out.push(' ');
            }
            self.out.push_str(c);
        }
        self.out.push('\n');
        let rest: Vec<String> = trailing.into_iter().skip(1).collect();
        self.comment_lines(&rest, child);
        match &v.kind {
            NodeKind::Map(_) => self.block_map(v, child, false, path),
            _ => self.block_seq(v, child, false, path),
        }
    }

    fn props_prefix(&self, n: &Node, p: &Props) -> String {
        let mut s = String::new();
        if p.alias {
            return s;
        }
        if let Some(a) = p.anchor {
            s.push('&');
            s.push_str(a);
            s.push(' ');
        }
        if let Some(t) = &n.tag {
            s.push_str(&tag_text(t));
            s.push(' ');
        }
        s
    }

    /// Appends the one-line flow text of a collection, if it should and can be written in flow
    /// style starting at column `col`; otherwise appends nothing and returns `false`.
    fn try_flow_into(
        &mut self,
        v: &'s Node,
        p: &Props,
        path: &mut Vec<Seg<'s>>,
        col: usize,
    ) -> bool {
        let empty = match &v.kind {
            NodeKind::Map(e) => e.is_empty(),
            NodeKind::Seq(i) => i.is_empty(),
            NodeKind::Scalar(_) => false,
        };
        if !(empty || p.flow || self.rules.prefer_flow(path)) {
            return false;
        }
        if !empty && self.has_inner_comments(v) {
            return false;
        }
        let start = self.out.len();
        let mut out = std::mem::take(&mut self.out);
        // Printing stops as soon as the text is known not to fit (nested collections that do
        // not fit are tried again on their own lines, so finishing them would be wasted).
        let room = Room {
            start,
            chars: WIDTH.saturating_sub(col),
        };
        let ok = self.flow_into(v, path, &mut out, room);
        self.out = out;
        let fits = ok && (empty || col + self.out[start..].chars().count() <= WIDTH);
        if !fits {
            self.out.truncate(start);
        }
        fits
    }

    fn has_inner_comments(&self, v: &Node) -> bool {
        let mut stack: Vec<&Node> = Vec::new();
        match &v.kind {
            NodeKind::Map(es) => es.iter().for_each(|e| {
                stack.push(&e.key);
                stack.push(&e.value);
            }),
            NodeKind::Seq(items) => stack.extend(items.iter()),
            NodeKind::Scalar(_) => {}
        }
        while let Some(n) = stack.pop() {
            let odd = trivia::odd_key(self.src, n);
            if odd.map_or_else(
                || self.triv.has_own_comment(n),
                |at| self.triv.has_comment_at(at),
            ) {
                return true;
            }
            if props(self.src, n).alias {
                continue;
            }
            match &n.kind {
                NodeKind::Map(es) => es.iter().for_each(|e| {
                    stack.push(&e.key);
                    stack.push(&e.value);
                }),
                NodeKind::Seq(items) => stack.extend(items.iter()),
                NodeKind::Scalar(_) => {}
            }
        }
        false
    }

    /// Appends the flow text of `v` to `out`; `false` when it has none (a block scalar inside).
    fn flow_into(
        &self,
        v: &'s Node,
        path: &mut Vec<Seg<'s>>,
        out: &mut String,
        room: Room,
    ) -> bool {
        let p = props(self.src, v);
        if p.alias {
            self.scalar_into(v, path, true, false, out);
            return true;
        }
        match &v.kind {
            NodeKind::Scalar(sc) => {
                if is_block_scalar(v) {
                    return false;
                }
                let start = out.len();
                self.scalar_into(v, path, true, false, out);
                // Only a scalar without properties can print as nothing.
                if out.len() == start && sc.style == ScalarStyle::Plain {
                    out.push_str("null");
                }
                // A tag alone: PyYAML reads a tag up to a blank, over the `,`, `]` or `}`
                // that follows (`[!t]` is the tag `!t]`).
                if v.tag.is_some() && props_only(self.src, v) {
                    out.push(' ');
                }
            }
            NodeKind::Map(_) => {
                self.props_into(v, &p, out);
                out.push('{');
                for (i, e) in self.ordered(v, path).into_iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    if prints_nothing(self.src, &e.key) {
                        // `{: v}` is refused by YAML 1.1 readers; `{? : v}` is a null key.
                        out.push_str("? ");
                    }
                    self.scalar_into(&e.key, path, true, true, out);
                    if props_only(self.src, &e.key) {
                        out.push(' ');
                    }
                    out.push_str(": ");
                    path.push(Seg::Key(key_str(e)));
                    let r = self.flow_into(&e.value, path, out, room);
                    path.pop();
                    if !r || room.exceeded(out) {
                        return false;
                    }
                }
                out.push('}');
            }
            NodeKind::Seq(items) => {
                self.props_into(v, &p, out);
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    path.push(Seg::Index(i));
                    let r = self.flow_into(item, path, out, room);
                    path.pop();
                    if !r || room.exceeded(out) {
                        return false;
                    }
                }
                out.push(']');
            }
        }
        true
    }

    fn props_into(&self, n: &Node, p: &Props, out: &mut String) {
        if p.alias {
            return;
        }
        if let Some(a) = p.anchor {
            out.push('&');
            out.push_str(a);
            out.push(' ');
        }
        if let Some(t) = &n.tag {
            out.push_str(&tag_text(t));
            out.push(' ');
        }
    }

    /// A scalar (or alias) on one line, properties included, appended to `out`.
    fn scalar_into(&self, n: &Node, path: &[Seg], in_flow: bool, is_key: bool, out: &mut String) {
        let p = props(self.src, n);
        // An empty plain scalar is written as nothing whatever its span: the loader gives a
        // missing value (`{k}`, `---` alone) a span over the character that follows it.
        let empty = !p.alias
            && n.as_scalar()
                .is_some_and(|s| s.style == ScalarStyle::Plain && s.text.is_empty());
        let raw = match self
            .src
            .get(p.content_start..scalar_end(self.src, n, &p).max(p.content_start))
        {
            Some(r) if !empty => r,
            _ => "",
        };
        let Some(sc) = n.as_scalar().filter(|_| !p.alias) else {
            out.push_str(raw);
            return;
        };
        let start = out.len();
        self.props_into(n, &p, out);
        let value = sc.resolve();
        if !matches!(value, ScalarValue::Str(_)) {
            if raw.is_empty() {
                let kept = out[start..].trim_end().len();
                out.truncate(start + kept);
            }
            // A tag decides the type for PyYAML too; only an untagged number may be read
            // differently by it.
            match quote::yaml11_number(&sc.text, &value).filter(|_| n.tag.is_none()) {
                Some(respelled) => out.push_str(&respelled),
                None => out.push_str(raw),
            }
            return;
        }
        let is_expr = !is_key
            && (n.tag.as_ref().is_some_and(|t| t.is_local("expr"))
                || self.rules.is_expression(path));
        if is_expr {
            let done = self.canon.with(&sc.text, |c| match c {
                Some(c) => {
                    quote::render_into(
                        c,
                        in_flow,
                        self.rules.yaml11_bool_words(),
                        sc.style == ScalarStyle::Plain,
                        out,
                    );
                    true
                }
                None => {
                    // Left exactly as written when it cannot be parsed.
                    let quoted = matches!(
                        sc.style,
                        ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted
                    );
                    if quoted && !raw.contains('\n') {
                        out.push_str(raw);
                        true
                    } else {
                        false
                    }
                }
            });
            if done {
                return;
            }
        }
        quote::render_into(
            &sc.text,
            in_flow,
            self.rules.yaml11_bool_words(),
            sc.style == ScalarStyle::Plain,
            out,
        );
    }

    /// A block scalar's header (`|`, `>-`, `|2+`…) and its content lines without indentation,
    /// taken from the source so that folding and the author's line breaks stay as written.
    fn block_parts(&self, n: &Node, p: &Props) -> (String, Vec<String>) {
        let Some(sc) = n.as_scalar() else {
            return (String::from("|"), Vec::new());
        };
        let src = self.src;
        let cs = p.content_start;
        let end = (n.span.end as usize).max(cs);
        let line_start = |i: usize| src[..i].rfind('\n').map_or(0, |j| j + 1);
        // The span starts at the header when there is no content, and at the first content
        // line otherwise, which may start with `|` or `>` too.
        let (header_line_start, content_start) =
            if src[cs..].starts_with(['|', '>']) && !after_block_header(src, cs) {
                let nl = src[cs..].find('\n').map_or(src.len(), |j| cs + j + 1);
                (line_start(cs), nl)
            } else {
                let mut ls = line_start(cs);
                // Walk back over leading empty lines to the header.
                loop {
                    if ls == 0 {
                        break (0, ls);
                    }
                    let prev = line_start(ls - 1);
                    if src[prev..ls].trim().is_empty() {
                        ls = prev;
                    } else {
                        break (prev, ls);
                    }
                }
            };
        let header_src =
            &src[header_line_start..content_start.min(src.len()).max(header_line_start)];
        let explicit =
            block_indicator(header_src).is_some_and(|h| h.contains(|c: char| c.is_ascii_digit()));
        // The loader's span ends at the last line's last non-blank, but blanks after it are
        // content too (a content line holds no comment), and so are lines of blanks after it
        // deeper than the indentation: the lines of blanks are taken, and those that are no
        // content are dropped below.
        let end = if body_ends_with_content(src, cs, end)
            || crate::cst::header_span_with_blank_content(src, n)
        {
            end + src[end..]
                .bytes()
                .take_while(|&b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
                .count()
        } else {
            end
        };
        let body = src.get(content_start.min(end)..end).unwrap_or("");
        let raw_lines: Vec<&str> = body.split('\n').map(|l| l.trim_end_matches('\r')).collect();
        let indent_of = |l: &str| l.len() - l.trim_start_matches(' ').len();
        // The first line holding anything but spaces (a tab too: `" \t"` is a tab indented by
        // one, as the loader and PyYAML read it) says the indentation.
        let nonblank = raw_lines.iter().filter(|l| l.bytes().any(|b| b != b' '));
        // Only lines of blanks: the first that holds some content says how much of it is
        // indentation (the loader's rule for such lines differs from a line with a letter:
        // `"  \t"` under `|` is a tab indented by two).
        let from_blank_lines = || {
            raw_lines
                .iter()
                .zip(sc.text.split('\n'))
                .find(|(_, v)| !v.is_empty())
                .map(|(r, v)| r.len().saturating_sub(v.len()))
        };
        let mut nonblank = nonblank;
        let n_ind = if explicit {
            // The indicator fixes the content's indentation; spaces beyond it are content. The
            // value's first line says how many: strip the rest.
            let kept = sc
                .text
                .split('\n')
                .find(|l| !l.trim().is_empty())
                .map(indent_of);
            match (nonblank.next().map(|l| indent_of(l)), kept) {
                (Some(ind), Some(kept)) if ind >= kept => Some(ind - kept),
                (None, _) => from_blank_lines(),
                (first, _) => first,
            }
        } else {
            match nonblank.next() {
                Some(l) => Some(indent_of(l)),
                None => from_blank_lines(),
            }
        }
        .unwrap_or(0);
        // A tab is no indentation: a line that starts with one ends a scalar indented by
        // spaces, and the lines from it on are not the scalar's, though the span above took
        // them as its blanks (printed as content, they changed the value: found by the fmt_yaml
        // fuzz target).
        let raw_lines = match raw_lines.iter().position(|l| l.starts_with('\t')) {
            Some(cut) if n_ind > 0 => raw_lines[..cut].to_vec(),
            _ => raw_lines,
        };
        let mut lines: Vec<String> = raw_lines
            .iter()
            .map(|l| {
                // A line of blanks longer than the indentation is content (a tab too).
                if l.trim().is_empty() && l.len() <= n_ind {
                    String::new()
                } else if indent_of(l) >= n_ind {
                    l[n_ind..].to_string()
                } else {
                    l.trim_start().to_string()
                }
            })
            .collect();
        if body.is_empty() {
            lines.clear();
        }
        // The empty lines taken after the last content line are not content: the chomping
        // below says how many line breaks end the value.
        while lines.len() > 1 && lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        let trailing_nl = sc.text.len() - sc.text.trim_end_matches('\n').len();
        if trailing_nl == sc.text.len() {
            // No content, only line breaks: chomping alone makes the value (`-` for none, `+`
            // and one empty line per break). The source's blank lines after the header are not
            // content here, and printing them too added blank lines on every run (found by the
            // fmt_yaml fuzz target).
            let style = if sc.style == ScalarStyle::Folded {
                '>'
            } else {
                '|'
            };
            let chomp = if trailing_nl == 0 { '-' } else { '+' };
            return (format!("{style}{chomp}"), vec![String::new(); trailing_nl]);
        }
        let chomp = match trailing_nl {
            0 => "-",
            1 => "",
            _ => "+",
        };
        if trailing_nl > 1 && !lines.is_empty() {
            lines.extend(std::iter::repeat_n(String::new(), trailing_nl - 1));
        }
        let needs_indicator = lines
            .iter()
            .find(|l| !l.is_empty())
            .is_some_and(|l| l.starts_with(' '));
        let style = if sc.style == ScalarStyle::Folded {
            '>'
        } else {
            '|'
        };
        let header = format!("{style}{}{chomp}", if needs_indicator { "2" } else { "" });
        (header, lines)
    }
}
