//! Byte offsets (what diagnostics and the YAML tree carry) to LSP positions (0-based lines,
//! columns in UTF-16 code units, the protocol's default encoding) and back.

use lsp_types::{Position, Range};

pub struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub fn new(text: &'a str) -> LineIndex<'a> {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { text, starts }
    }

    /// The position of a byte offset, clamped to the text and moved back to a character
    /// boundary (a span never should split one, but a wrong one must not panic).
    pub fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let col: usize = self.text[self.starts[line]..offset]
            .chars()
            .map(char::len_utf16)
            .sum();
        Position::new(line as u32, col as u32)
    }

    pub fn range(&self, span: std::ops::Range<usize>) -> Range {
        Range::new(self.position(span.start), self.position(span.end))
    }

    /// The byte offset of a position; past the end of a line means its end (before the line
    /// break), past the last line the end of the text.
    pub fn offset(&self, pos: Position) -> usize {
        let Some(&start) = self.starts.get(pos.line as usize) else {
            return self.text.len();
        };
        let end = self
            .starts
            .get(pos.line as usize + 1)
            .map_or(self.text.len(), |&e| e - 1);
        start + column_offset(&self.text[start..end], pos.character)
    }

    /// A range spanning the whole text (for whole-document edits).
    pub fn whole(&self) -> Range {
        Range::new(Position::new(0, 0), self.position(self.text.len()))
    }
}

/// The byte offset inside `line` (without its line break) of a column in UTF-16 units; past
/// its end means its end.
fn column_offset(line: &str, character: u32) -> usize {
    let mut units = 0u32;
    for (i, c) in line.char_indices() {
        if units >= character {
            return i;
        }
        units += c.len_utf16() as u32;
    }
    line.len()
}

/// The byte offset of a position, as [`LineIndex::offset`] finds it, without indexing the
/// lines after it: an edit near the top of a large document costs what its line costs.
pub fn offset_of(text: &str, pos: Position) -> usize {
    let mut start = 0;
    for _ in 0..pos.line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    start + column_offset(&text[start..end], pos.character)
}

/// Applies one `didChange` content change (incremental sync) to `text`: the range, in UTF-16
/// positions, is replaced by the change's text; a change without a range replaces the whole
/// document. A range whose end comes before its start is taken the other way round.
pub fn apply_change(text: &mut String, range: Option<Range>, new_text: &str) {
    let Some(range) = range else {
        new_text.clone_into(text);
        return;
    };
    let a = offset_of(text, range.start);
    let b = offset_of(text, range.end);
    text.replace_range(a.min(b)..a.max(b), new_text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_utf16_units_both_ways() {
        // `é` is 2 bytes and 1 unit; `𝄞` is 4 bytes and 2 units.
        let text = "a: é𝄞x\nb: y\r\n";
        let idx = LineIndex::new(text);
        let x = text.find('x').unwrap_or_default();
        assert_eq!(idx.position(x), Position::new(0, 6));
        assert_eq!(idx.offset(Position::new(0, 6)), x);
        assert_eq!(
            idx.position(text.find('b').unwrap_or_default()),
            Position::new(1, 0)
        );
        assert_eq!(idx.offset(Position::new(0, 99)), x + 1);
        assert_eq!(idx.offset(Position::new(9, 0)), text.len());
        // Inside a 4-byte character: back to its start.
        assert_eq!(idx.position(x - 2), Position::new(0, 4));
        assert_eq!(idx.position(text.len() + 5), Position::new(2, 0));
    }

    /// Text with the characters that make offsets and UTF-16 columns differ: 2-, 3- and 4-byte
    /// characters (`𝄞` is two units), `\r\n` and bare `\n` line breaks.
    fn text() -> impl proptest::strategy::Strategy<Value = String> {
        proptest::collection::vec(
            proptest::sample::select(vec!["a", "é", "€", "𝄞", "\n", "\r\n", " ", "x: 1"]),
            0..40,
        )
        .prop_map(|parts| parts.concat())
    }

    /// A character boundary of `text`, picked by a fraction of its length.
    fn boundary(text: &str, at: f64) -> usize {
        let mut i = ((text.len() as f64) * at) as usize;
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    }

    use proptest::prelude::*;

    proptest! {
        /// An incremental change, its range given as the UTF-16 positions a client computes,
        /// gives the text a full replacement with the edited text gives.
        #[test]
        fn incremental_changes_match_full_replacement(
            start in text(),
            edits in proptest::collection::vec((0.0..=1.0f64, 0.0..=1.0f64, text()), 1..6),
        ) {
            let mut incremental = start.clone();
            let mut full = start;
            for (a, b, insert) in edits {
                let (a, b) = (boundary(&full, a), boundary(&full, b));
                let (a, b) = (a.min(b), a.max(b));
                // A range never splits a `\r\n`: clients count it as one line break.
                prop_assume!(!(full[..a].ends_with('\r') && full[a..].starts_with('\n')));
                prop_assume!(!(full[..b].ends_with('\r') && full[b..].starts_with('\n')));
                let idx = LineIndex::new(&full);
                let range = Range::new(idx.position(a), idx.position(b));
                apply_change(&mut incremental, Some(range), &insert);
                full.replace_range(a..b, &insert);
                prop_assert_eq!(&incremental, &full);
            }
            apply_change(&mut incremental, None, "whole");
            prop_assert_eq!(incremental, "whole");
        }

        /// `offset_of` agrees with the line index at every position, in range or past it.
        #[test]
        fn offset_of_agrees_with_the_line_index(t in text(), line in 0u32..12, col in 0u32..12) {
            let pos = Position::new(line, col);
            prop_assert_eq!(offset_of(&t, pos), LineIndex::new(&t).offset(pos));
        }
    }
}
