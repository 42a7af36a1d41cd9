//! Go-style durations (`100ms`, `30s`, `5m`, `1h30m`), as MEOW's `timeout` fields write them.

use std::time::Duration;

/// Why a text is not a duration; it names the text as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("`{0}` is not a duration (write e.g. `30s`, `5m`, `1h30m`, `500ms`)")]
    NotADuration(String),
}

impl From<DurationError> for String {
    fn from(e: DurationError) -> String {
        e.to_string()
    }
}

pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let t = text.trim();
    let bad = || DurationError::NotADuration(text.to_string());
    if t.is_empty() {
        return Err(bad());
    }
    let mut total = 0f64;
    let mut rest = t;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if n == 0 {
            return Err(bad());
        }
        let num: f64 = rest[..n].parse().map_err(|_| bad())?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..u] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += num * unit;
        rest = &rest[u..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

pub(super) fn show(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) || ms == 0 {
        format!("{ms}ms")
    } else {
        format!("{}s", ms / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("250ms").unwrap(), Duration::from_millis(250));
        assert!(parse("5 minutes").is_err());
        assert!(parse("").is_err());
        assert_eq!(
            parse("10"),
            Err(DurationError::NotADuration("10".to_string()))
        );
        assert!(parse("99999999999999999999999999h").is_err());
        assert_eq!(show(Duration::from_secs(2)), "2s");
    }
}
