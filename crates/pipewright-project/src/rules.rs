//! `[check]` rule configuration: codes to ignore, per-code severity, and per-path overrides.
//!
//! ```toml
//! [check]
//! ignore = ["PW0528"]
//! warn = ["PW0253"]                  # reported as a warning whatever its usual severity
//! error = ["PW0611"]                 # reported as an error
//!
//! [[check.per-path]]
//! paths = ["legacy/**", "vendor"]    # relative to pipewright.toml; a directory covers its files
//! ignore = ["PW0100"]
//! ```

use crate::ConfigError;
use toml_edit::Table;

/// What the configuration makes of one code in one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Ignore,
    Warn,
    Error,
}

/// One table of code lists: `[check]` itself or one `[[check.per-path]]` entry.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CodeLevels {
    pub ignore: Vec<String>,
    pub warn: Vec<String>,
    pub error: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct PathRules {
    /// Glob patterns over `/`-separated paths relative to the config file's directory.
    pub paths: Vec<String>,
    pub levels: CodeLevels,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct CheckRules {
    pub levels: CodeLevels,
    /// In file order: a later entry that matches overrides an earlier one and `[check]` itself.
    pub per_path: Vec<PathRules>,
}

impl CodeLevels {
    fn level(&self, code: &str) -> Option<Level> {
        let has = |list: &[String]| list.iter().any(|c| c == code);
        if has(&self.ignore) {
            Some(Level::Ignore)
        } else if has(&self.error) {
            Some(Level::Error)
        } else if has(&self.warn) {
            Some(Level::Warn)
        } else {
            None
        }
    }

    fn codes(&self) -> impl Iterator<Item = &str> {
        self.ignore
            .iter()
            .chain(&self.warn)
            .chain(&self.error)
            .map(String::as_str)
    }

    fn parse(t: &dyn toml_edit::TableLike, at: &str) -> Result<CodeLevels, ConfigError> {
        let list = |key: &str| -> Result<Vec<String>, ConfigError> {
            let what = format!("{at}.{key}");
            let codes = crate::strings(t.get(key), &what)?.unwrap_or_default();
            for c in &codes {
                if !is_code_shape(c) {
                    return Err(ConfigError::NotACode {
                        list: what,
                        code: c.clone(),
                    });
                }
            }
            Ok(codes)
        };
        let levels = CodeLevels {
            ignore: list("ignore")?,
            warn: list("warn")?,
            error: list("error")?,
        };
        // One code in two lists of the same table has no meaningful order.
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for (key, list) in [
            ("ignore", &levels.ignore),
            ("warn", &levels.warn),
            ("error", &levels.error),
        ] {
            for c in list {
                if let Some((other, _)) = seen.iter().find(|(_, s)| *s == c.as_str()) {
                    if *other != key {
                        return Err(ConfigError::TwoLevels {
                            at: at.to_string(),
                            code: c.clone(),
                            first: other,
                            second: key,
                        });
                    }
                }
                seen.push((key, c));
            }
        }
        Ok(levels)
    }
}

impl CheckRules {
    /// The configured level of `code` in the file at `rel` (relative to the config's directory,
    /// `/`-separated; `None` for a file outside it or read from standard input, which only
    /// `[check]` itself covers). `None`: as the checker reported it.
    pub fn level(&self, code: &str, rel: Option<&str>) -> Option<Level> {
        let mut level = self.levels.level(code);
        if let Some(rel) = rel {
            for p in &self.per_path {
                if p.paths.iter().any(|g| glob_matches(g, rel)) {
                    level = p.levels.level(code).or(level);
                }
            }
        }
        level
    }

    /// Every code the rules name, for the caller to compare with the codes that exist.
    pub fn codes(&self) -> impl Iterator<Item = &str> {
        self.levels
            .codes()
            .chain(self.per_path.iter().flat_map(|p| p.levels.codes()))
    }

    pub(crate) fn parse(check: &Table) -> Result<CheckRules, ConfigError> {
        let mut rules = CheckRules {
            levels: CodeLevels::parse(check, "check")?,
            per_path: Vec::new(),
        };
        if let Some(item) = check.get("per-path") {
            let entries = item
                .as_array_of_tables()
                .ok_or(ConfigError::PerPathNotTables)?;
            for (i, t) in entries.iter().enumerate() {
                let at = format!("check.per-path[{i}]");
                for (key, _) in t.iter() {
                    if !matches!(key, "paths" | "ignore" | "warn" | "error") {
                        return Err(ConfigError::PerPathUnknownKey {
                            at,
                            key: key.to_string(),
                        });
                    }
                }
                let paths = crate::strings(t.get("paths"), &format!("{at}.paths"))?
                    .filter(|p| !p.is_empty())
                    .ok_or_else(|| ConfigError::PerPathWithoutPaths(at.clone()))?;
                rules.per_path.push(PathRules {
                    paths,
                    levels: CodeLevels::parse(t, &at)?,
                });
            }
        }
        Ok(rules)
    }
}

/// `PW` and four digits.
pub fn is_code_shape(s: &str) -> bool {
    s.len() == 6 && s.starts_with("PW") && s[2..].bytes().all(|b| b.is_ascii_digit())
}

/// Whether `pattern` matches `path` or one of its parent directories (so `legacy` and
/// `legacy/**` both cover every file under `legacy/`). `*` and `?` stay within one path
/// component; `**` as a whole component matches any number of components.
pub fn glob_matches(pattern: &str, path: &str) -> bool {
    let pat: Vec<&str> = pattern
        .trim_start_matches("./")
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let comps: Vec<&str> = path
        .trim_start_matches("./")
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    (1..=comps.len()).any(|n| components_match(&pat, &comps[..n]))
}

fn components_match(pat: &[&str], comps: &[&str]) -> bool {
    match pat.split_first() {
        None => comps.is_empty(),
        Some((&"**", rest)) => (0..=comps.len()).any(|i| components_match(rest, &comps[i..])),
        Some((p, rest)) => comps
            .split_first()
            .is_some_and(|(c, more)| component_matches(p, c) && components_match(rest, more)),
    }
}

fn component_matches(pat: &str, s: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    // Classic wildcard matching with one backtrack point for the last `*`.
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProjectConfig;

    fn rules(t: &str) -> Result<CheckRules, ConfigError> {
        ProjectConfig::parse(t).map(|c| c.check)
    }

    #[test]
    fn globs() {
        assert!(glob_matches("legacy/**", "legacy/a/b.yaml"));
        assert!(glob_matches("legacy", "legacy/a.yaml"));
        assert!(glob_matches("legacy/*.yaml", "legacy/a.yaml"));
        assert!(!glob_matches("legacy/*.yaml", "legacy/x/a.yaml"));
        assert!(glob_matches("**/*.meow.toml", "a/b/c.meow.toml"));
        assert!(glob_matches("**/*.meow.toml", "c.meow.toml"));
        assert!(glob_matches("p?.yaml", "p1.yaml"));
        assert!(!glob_matches("legacy/**", "legacyx/a.yaml"));
        assert!(!glob_matches("*.yaml", "sub/a.yaml"));
        assert!(glob_matches("./a/*", "a/b"));
        assert!(glob_matches("a*b*c", "aXXbYYc"));
        assert!(!glob_matches("a*b*c", "aXXbYY"));
    }

    #[test]
    fn levels_and_per_path_precedence() {
        let r = rules(
            "[check]\nignore = [\"PW0001\"]\nwarn = [\"PW0002\"]\nerror = [\"PW0003\"]\n\
             [[check.per-path]]\npaths = [\"legacy/**\"]\nignore = [\"PW0002\"]\nwarn = [\"PW0001\"]\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.level("PW0001", Some("a.yaml")), Some(Level::Ignore));
        assert_eq!(r.level("PW0002", Some("a.yaml")), Some(Level::Warn));
        assert_eq!(r.level("PW0003", None), Some(Level::Error));
        assert_eq!(r.level("PW0004", Some("a.yaml")), None);
        assert_eq!(
            r.level("PW0002", Some("legacy/x.yaml")),
            Some(Level::Ignore)
        );
        assert_eq!(r.level("PW0001", Some("legacy/x.yaml")), Some(Level::Warn));
        assert_eq!(r.level("PW0003", Some("legacy/x.yaml")), Some(Level::Error));
        // A file outside the config's directory: only [check] applies.
        assert_eq!(r.level("PW0002", None), Some(Level::Warn));
        assert_eq!(r.codes().count(), 5);
    }

    #[test]
    fn bad_values_are_errors() {
        let err = |t: &str| rules(t).err().map(String::from).unwrap_or_default();
        assert!(err("[check]\nignore = \"PW0001\"\n").contains("array of strings"));
        assert!(err("[check]\nignore = [1]\n").contains("array of strings"));
        assert!(err("[check]\nwarn = [\"E501\"]\n").contains("not a diagnostic code"));
        assert!(err("[check]\nwarn = [\"PW1\"]\n").contains("not a diagnostic code"));
        assert!(
            err("[check]\nignore = [\"PW0001\"]\nerror = [\"PW0001\"]\n")
                .contains("in both `ignore` and `error`")
        );
        assert!(err("[check]\nper-path = 3\n").contains("array of tables"));
        assert!(err("[[check.per-path]]\nignore = [\"PW0001\"]\n").contains("needs `paths"));
        assert!(err("[[check.per-path]]\npaths = []\n").contains("needs `paths"));
        assert!(
            err("[[check.per-path]]\npaths = [\"a\"]\nignroe = [\"PW0001\"]\n")
                .contains("unknown key `ignroe`")
        );
        assert!(
            err("[[check.per-path]]\npaths = [\"a\"]\nerror = [\"x\"]\n")
                .contains("check.per-path[0].error")
        );
        assert_eq!(rules(""), Ok(CheckRules::default()));
    }
}
