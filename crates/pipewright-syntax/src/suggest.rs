//! "Did you mean …?" suggestions.

/// The candidate closest to `word`, if it is close enough to be a plausible typo.
pub fn did_you_mean<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut best: Option<(f64, &'a str)> = None;
    for cand in candidates {
        if cand == word {
            continue;
        }
        let score = strsim::jaro_winkler(&word.to_lowercase(), &cand.to_lowercase());
        let dist = strsim::levenshtein(word, cand);
        let plausible = score >= 0.8 || (dist <= 2 && word.len() > 2);
        if plausible && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, cand));
        }
    }
    best.map(|(_, c)| c)
}

/// `help` text for an unknown name: the closest candidate, or the full list when short.
pub fn help_for_unknown<'a, I>(word: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str> + Clone,
{
    if let Some(c) = did_you_mean(word, candidates.clone()) {
        return Some(format!("did you mean `{c}`?"));
    }
    let all: Vec<&str> = candidates.into_iter().collect();
    if all.is_empty() {
        None
    } else if all.len() <= 12 {
        Some(format!(
            "expected one of: {}",
            all.iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_words_only() {
        assert_eq!(
            did_you_mean("trasform", ["transform", "tool", "agent"]),
            Some("transform")
        );
        assert_eq!(did_you_mean("xyz", ["transform", "tool", "agent"]), None);
    }
}
