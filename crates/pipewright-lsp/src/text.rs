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
        let mut units = 0u32;
        for (i, c) in self.text[start..end].char_indices() {
            if units >= pos.character {
                return start + i;
            }
            units += c.len_utf16() as u32;
        }
        end
    }

    /// A range spanning the whole text (for whole-document edits).
    pub fn whole(&self) -> Range {
        Range::new(Position::new(0, 0), self.position(self.text.len()))
    }
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
}
