//! The document as text: the word under the cursor, whole-word occurrences, `{{…}}`
//! templates. Answers that must not wait for a parse (the text is often broken mid-edit).

use std::ops::Range;

/// The identifier-like word (letters, digits, `_`, `-`, `.`, `/`, `$`) around `offset`, with
/// its range.
pub fn word_at(text: &str, offset: usize) -> Option<(Range<usize>, &str)> {
    let is_word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '$');
    let offset = offset.min(text.len());
    if !text.is_char_boundary(offset) {
        return None;
    }
    let start = text[..offset]
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_word(*c))
        .last()
        .map_or(offset, |(i, _)| i);
    let end = text[offset..]
        .char_indices()
        .find(|(_, c)| !is_word(*c))
        .map_or(text.len(), |(i, _)| offset + i);
    (start < end).then(|| (start..end, &text[start..end]))
}

/// The start of the line holding `offset`.
pub fn line_start(text: &str, offset: usize) -> usize {
    text[..offset].rfind('\n').map_or(0, |i| i + 1)
}

/// The 1-based number of the line holding `offset`, as messages quote it.
pub fn line_number(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Whole-word occurrences of `needle` in `text` (not preceded or followed by a name character).
pub fn occurrences(text: &str, needle: &str) -> Vec<Range<usize>> {
    let name_char = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(needle)
        .filter(|(i, _)| {
            let before = text[..*i].chars().next_back();
            let after = text[i + needle.len()..].chars().next();
            !before.is_some_and(|c| name_char(c) || c == '.') && !after.is_some_and(name_char)
        })
        .map(|(i, _)| i..i + needle.len())
        .collect()
}

/// Whether `offset` is inside a `{{ … }}` template of `text` (on its line).
pub fn in_template(text: &str, offset: usize) -> bool {
    let before = &text[line_start(text, offset)..offset];
    before
        .rfind("{{")
        .is_some_and(|open| before.rfind("}}").is_none_or(|close| close < open))
}

/// A template's variable read: `{{plan.items}}` gives `plan`.
pub fn template_var(word: &str) -> &str {
    word.split('.').next().unwrap_or(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_stop_at_spaces_and_operators() {
        assert_eq!(word_at("a ctx.b_c + 1", 7).map(|w| w.1), Some("ctx.b_c"));
        assert_eq!(word_at("a  b", 2), None);
        assert_eq!(line_number("a\nb\n", 2), 2);
        assert_eq!(line_number("a\nb\n", 99), 3);
    }

    #[test]
    fn a_template_is_open_until_it_closes_on_the_line() {
        let text = "a: \"{{x}} {{y\"\nb: z";
        assert!(!in_template(text, text.find('x').unwrap_or(0) + 3));
        assert!(in_template(text, text.find('y').unwrap_or(0)));
        assert!(!in_template(text, text.find('z').unwrap_or(0)));
        assert_eq!(template_var("plan.items"), "plan");
        assert_eq!(occurrences("x ctx.x x_y x", "x"), [0..1, 12..13]);
    }
}
