//! Text from a user's file, made safe for a terminal. A control character in a file (an escape
//! sequence, a bell, a carriage return that rewrites the line) must not reach the terminal or
//! the CI log that shows a diagnostic as itself: messages show it escaped (`\u{1b}`), as rustc
//! does, and source lines show its Unicode control picture (`␛`).

use std::borrow::Cow;

/// Whether `c` would act on a terminal rather than be drawn: C0 controls but tab and line
/// breaks, DEL, and C1 controls.
fn acts(c: char) -> bool {
    (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{2028}' | '\u{2029}')
}

/// `s` with every acting character written as its escape; `s` itself when it has none.
pub(crate) fn escaped(s: &str) -> Cow<'_, str> {
    if !s.chars().any(acts) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if acts(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A file's text as drawn, with its offsets: each acting character is replaced by a picture,
/// which may take more bytes than the character, so byte offsets into the file move.
pub(crate) struct Drawn {
    pub text: String,
    /// (offset in the file just after a replaced character, bytes added so far), in order.
    shifts: Vec<(usize, usize)>,
}

impl Drawn {
    /// `None` when the text has nothing to replace (the common case: no copy is made).
    pub(crate) fn of(text: &str) -> Option<Drawn> {
        if !text.chars().any(acts) {
            return None;
        }
        let mut out = String::with_capacity(text.len() + 16);
        let mut shifts = Vec::new();
        let mut added = 0;
        for (i, c) in text.char_indices() {
            if acts(c) {
                let picture = match u32::from(c) {
                    n @ 0..=0x1F => char::from_u32(0x2400 + n).unwrap_or('\u{FFFD}'),
                    0x7F => '\u{2421}',
                    _ => '\u{FFFD}',
                };
                out.push(picture);
                added += picture.len_utf8() - c.len_utf8();
                shifts.push((i + c.len_utf8(), added));
            } else {
                out.push(c);
            }
        }
        Some(Drawn { text: out, shifts })
    }

    /// Where the file's byte `offset` (on a character boundary) is in the drawn text.
    pub(crate) fn offset(&self, offset: usize) -> usize {
        let i = self.shifts.partition_point(|&(after, _)| after <= offset);
        offset + i.checked_sub(1).map_or(0, |i| self.shifts[i].1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_in_messages() {
        assert_eq!(escaped("plain é\ttab"), "plain é\ttab");
        assert_eq!(escaped("a\u{1b}[31mb\u{7}"), "a\\u{1b}[31mb\\u{7}");
        assert_eq!(escaped("\u{9b}x"), "\\u{9b}x");
    }

    #[test]
    fn drawn_offsets_follow_the_pictures() {
        let text = "a\u{1b}b\u{85}c\nd";
        let d = Drawn::of(text).expect("something to replace");
        assert_eq!(d.text, "a\u{241b}b\u{fffd}c\nd");
        for (i, c) in text.char_indices() {
            let drawn = d.text[d.offset(i)..].chars().next();
            let expected = match c {
                '\u{1b}' => '\u{241b}',
                '\u{85}' => '\u{fffd}',
                c => c,
            };
            assert_eq!(drawn, Some(expected), "offset {i}");
        }
        assert_eq!(d.offset(text.len()), d.text.len());
        assert!(Drawn::of("no controls\n").is_none());
    }
}
