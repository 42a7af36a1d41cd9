//! The characters a YAML stream may hold (YAML 1.2 `c-printable`, the same set PyYAML's reader
//! accepts). saphyr reads control characters inside scalars and comments without a word, but
//! PyYAML, which the reference runtimes load workflows with, refuses the whole file; and a
//! control character left in a value reaches terminals and logs through the diagnostics that
//! quote it.

use pipewright_syntax::{Diagnostic, FileId, Span};

const LOW_BITS: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Whether `c` may appear in a YAML stream.
pub(crate) fn printable(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
        || c >= '\u{10000}'
}

/// The first character of `text` that may not appear in YAML, with its byte offset.
pub(crate) fn first_unprintable(text: &str) -> Option<(usize, char)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    // Eight bytes at a time while they are printable ASCII: most words of a workflow file. A
    // word with a byte under 0x20 (often a line's `\n`), DEL or a non-ASCII byte is looked at
    // character by character, and the scan goes on by words after it. `i` stays on a
    // character boundary.
    'words: while i < bytes.len() {
        if let Some(chunk) = bytes.get(i..i + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let w = u64::from_le_bytes(word);
            let under_space = w.wrapping_sub(LOW_BITS * 0x20) & !w & HIGH_BITS;
            let del = {
                let x = w ^ (LOW_BITS * 0x7F);
                x.wrapping_sub(LOW_BITS) & !x & HIGH_BITS
            };
            if under_space | del | (w & HIGH_BITS) == 0 {
                i += 8;
                continue;
            }
        }
        let end = i + 8;
        for (at, c) in text.get(i..)?.char_indices() {
            if i + at >= end {
                i += at;
                continue 'words;
            }
            if !printable(c) {
                return Some((i + at, c));
            }
        }
        return None;
    }
    None
}

/// The error for a file holding a character YAML does not allow, at its first such character.
pub(crate) fn unprintable_diagnostic(file: FileId, text: &str) -> Option<Diagnostic> {
    let (at, c) = first_unprintable(text)?;
    let count = text.chars().filter(|&c| !printable(c)).count();
    let more = match count {
        1 => String::new(),
        n => format!(" (and {} more in this file)", n - 1),
    };
    Some(
        Diagnostic::error(
            "PW0001",
            Span::new(file, at..at + c.len_utf8()),
            format!(
                "invalid YAML: the {} U+{:04X} is not allowed{more}",
                // U+FFFE and U+FFFF are noncharacters, not controls.
                if c.is_control() { "control character" } else { "character" },
                u32::from(c)
            ),
        )
        .with_label("this character")
        .with_help(
            "remove it, or write it as an escape inside a double-quoted string (`\"\\x1b\"`, `\"\\u0085\"`); PyYAML, which the reference runtimes load files with, refuses the whole file",
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time scan finds what a plain walk over the characters finds, wherever the
    /// character stands in its word.
    #[test]
    fn the_scan_finds_the_first_unprintable_character() {
        let bad = [
            '\0', '\u{7}', '\u{1b}', '\u{7f}', '\u{80}', '\u{9f}', '\u{fffe}', '\u{ffff}',
        ];
        let good = [
            '\t', '\n', '\r', ' ', '~', '\u{85}', '\u{a0}', 'é', '\u{feff}', '😀',
        ];
        for pad in 0..17 {
            let prefix = "a".repeat(pad);
            for c in bad {
                let text = format!("{prefix}{c}x\u{1}");
                assert_eq!(first_unprintable(&text), Some((pad, c)), "{text:?}");
            }
            for c in good {
                let text = format!("{prefix}{c}{prefix}");
                assert_eq!(first_unprintable(&text), None, "{text:?}");
            }
            // After lines, tabs and wide characters, which the scan looks at one by one
            // before it goes on by words.
            let lines = format!("k: v\n\t東京 é {prefix}\n{prefix}").repeat(3);
            for c in bad {
                let text = format!("{lines}{c}{prefix}\u{1}");
                assert_eq!(first_unprintable(&text), Some((lines.len(), c)), "{text:?}");
            }
            assert_eq!(first_unprintable(&lines), None, "{lines:?}");
        }
    }
}
