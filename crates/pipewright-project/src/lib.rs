//! `pipewright.toml` (docs/config.md):
//!
//! ```toml
//! [tools.lint]
//! command = ["python3", "lint.py"]   # JSON args on stdin, a JSON result on stdout
//! timeout_secs = 30
//!
//! [safety.spawn]
//! max_pipeline_fan_out_depth = 5     # 0 = unlimited
//! max_pipeline_spawns = 100          # 0 = unlimited
//!
//! [backend.openai]
//! url = "http://127.0.0.1:8080/v1/chat/completions"
//! api_key_env = "OPENAI_API_KEY"
//! model = "gpt-4o-mini"
//! ca_file = "certs/private-ca.pem"   # optional: extra CAs for an https endpoint
//!
//! [backend.command]
//! profile = "claude"                 # or: argv = ["my-agent", "--json", "{prompt}"]
//! timeout_secs = 600
//!
//! [run]
//! identity = "release-bot"           # the agent identity of agent steps that name none
//! max_call_depth = 64                # call/match frames that may nest (0 = unlimited)
//! max_eval_steps = 50000000          # per expression evaluation
//! max_eval_bytes = 268435456         # bytes one expression evaluation may build
//!
//! [meow]
//! max_expansion_depth = 10           # expansions inside expansions of a MEOW run
//! max_total_steps = 1000             # steps of a MEOW run, expanded ones included
//! max_recovery_depth = 3             # `on_error` recoveries inside recoveries
//! max_message_bytes = 16777216       # the longest line the orchestrator socket takes
//!
//! [store]
//! path = "state/runs.db"             # the run store (default .pipewright/runs.db)
//!
//! [check]
//! invoker = "alice"                  # the identity `check --inline` compares agent steps with
//! include = ["lib/pipelines"]        # registered pipelines call/match targets may name
//! ignore = ["PW0528"]                # codes not reported (also: warn = [...], error = [...])
//!
//! [[check.per-path]]                 # overrides for the files these globs match
//! paths = ["legacy/**"]
//! ignore = ["PW0100"]
//!
//! [fmt]
//! key_order = "preserve"             # or "canonical": each dialect's documented key order
//! ```
//!
//! One parser for the file, used by `check` (tool names, invoker) and `run` (everything).

mod comments;
mod rules;

pub use comments::toml_comments;
pub use rules::{glob_matches, is_code_shape, CheckRules, CodeLevels, Level, PathRules};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item, Table};

#[derive(Debug, Clone, PartialEq)]
pub struct ProjectConfig {
    pub tools: BTreeMap<String, ProjectToolConfig>,
    pub max_fan_out_depth: u64,
    pub max_spawns: u64,
    /// `[meow] max_expansion_depth` and `max_total_steps`.
    pub meow_max_depth: u64,
    pub meow_max_steps: u64,
    /// `[meow] max_recovery_depth`.
    pub meow_max_recovery: u64,
    /// `[meow] max_message_bytes`: the longest request the orchestrator socket takes.
    pub meow_max_message: u64,
    pub openai: Option<OpenAiConfig>,
    pub command: Option<CommandConfig>,
    pub invoker: Option<String>,
    /// `[run] identity`: the default agent identity of `run` (`--identity` overrides it).
    pub identity: Option<String>,
    /// `[run] max_call_depth`: how many `call`/`match` frames may nest; 0 = unlimited.
    pub max_call_depth: u64,
    /// `[run] max_eval_steps`: sub-expressions one evaluation may evaluate.
    pub max_eval_steps: u64,
    /// `[run] max_eval_bytes`: bytes of values one evaluation may build.
    pub max_eval_bytes: u64,
    /// Directories of registered pipelines, relative to the config file.
    pub include: Vec<String>,
    /// `[store] path`: the run store database, relative to this file (resolved by `load`).
    pub store_path: Option<PathBuf>,
    /// `[run] pass_secrets`: shell steps and project tools see the API key's variable
    /// ([`ProjectConfig::secret_env`]); by default it is removed from their environment.
    pub pass_secrets: bool,
    /// `[check] ignore/warn/error` and `[[check.per-path]]`: what `check` reports, per code.
    pub check: CheckRules,
    /// `[fmt] key_order`.
    pub key_order: KeyOrder,
    /// `[engine]`: which engine runs and records the project's runs.
    pub engine: EngineConfig,
    /// `[run] max_cost_usd`, `max_tokens`, `max_agent_calls`: a run's budgets (the `run`
    /// flags of the same names override them).
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    pub max_agent_calls: Option<u64>,
    /// `[prices]`: what a model's tokens cost, for backends that report tokens but no cost.
    pub prices: BTreeMap<String, Price>,
}

/// `[prices] "model" = { input_per_mtok = …, output_per_mtok = … }`: US dollars per million
/// tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

/// `[engine] kind = "local" | "restate"`, with the Restate server's `ingress` and `admin`
/// URLs (docs/engines.md). Unset fields are `None`: the CLI's flags and defaults fill them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineConfig {
    pub kind: Option<String>,
    pub ingress: Option<String>,
    pub admin: Option<String>,
}

/// Why `pipewright.toml` was refused, in the words its author needs: the key and what it must
/// be. `load` adds the file ([`ConfigError::In`]); callers that only report it take the message
/// (`String::from`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read (a missing file means the defaults).
    #[error("cannot read {}: {reason}", path.display())]
    Read { path: PathBuf, reason: String },
    /// What [`ProjectConfig::parse`] refused in the file at `path`.
    #[error("{}: {error}", path.display())]
    In {
        path: PathBuf,
        error: Box<ConfigError>,
    },
    /// Not TOML: toml_edit's message, which shows the line and column.
    #[error("{0}")]
    Toml(String),
    #[error("`{0}` must be a table")]
    NotATable(String),
    #[error("[tools.{0}] must be a table")]
    ToolNotATable(String),
    #[error("[tools.{0}] needs `command = [\"prog\", …]`")]
    ToolWithoutCommand(String),
    #[error("tools.{0}.command is empty")]
    ToolCommandEmpty(String),
    #[error("[backend.openai] needs `url`")]
    OpenAiWithoutUrl,
    #[error("`{0}` must be a string")]
    NotAString(&'static str),
    #[error("`{0}` must not be empty")]
    Empty(&'static str),
    #[error("`{0}` must be a non-negative integer")]
    NotAnUnsigned(String),
    /// A limit where 0 would mean "nothing may run" rather than "unlimited".
    #[error("`{0}` must be at least 1")]
    Zero(String),
    #[error("`{0}` must be true or false")]
    NotABool(String),
    #[error("`{0}` must be an array of strings")]
    NotStrings(String),
    #[error("`fmt.key_order` must be \"preserve\" or \"canonical\"")]
    KeyOrder,
    #[error("`engine.kind` is \"local\" or \"restate\", not \"{0}\"")]
    EngineKind(String),
    #[error("`{0}` must be a non-negative number of US dollars")]
    NotACost(&'static str),
    #[error("[prices] \"{0}\" must be a table: {{ input_per_mtok = …, output_per_mtok = … }}")]
    PriceNotATable(String),
    #[error("[prices] \"{model}\" needs `{key}`, a non-negative number of US dollars per million tokens")]
    PriceWithout { model: String, key: String },
    /// A `[check]` list names something that is not a code.
    #[error("`{list}` lists `{code}`, which is not a diagnostic code (like \"PW0528\")")]
    NotACode { list: String, code: String },
    /// One table of `[check]` puts a code in two lists.
    #[error("`{at}` lists `{code}` in both `{first}` and `{second}`")]
    TwoLevels {
        at: String,
        code: String,
        first: &'static str,
        second: &'static str,
    },
    #[error("`check.per-path` must be an array of tables ([[check.per-path]])")]
    PerPathNotTables,
    #[error("`{at}` has an unknown key `{key}` (expected paths, ignore, warn, error)")]
    PerPathUnknownKey { at: String, key: String },
    #[error("`{0}` needs `paths = [\"glob\", …]`")]
    PerPathWithoutPaths(String),
}

impl From<ConfigError> for String {
    fn from(e: ConfigError) -> String {
        e.to_string()
    }
}

/// Whether `fmt` moves the keys of a mapping into the dialect's canonical order or keeps the
/// order the author wrote (the default: reordering a repository's existing files makes a diff
/// of nearly every file, which blocks adopting the formatter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KeyOrder {
    #[default]
    Preserve,
    Canonical,
}

impl KeyOrder {
    /// The spelling in `pipewright.toml` and on the command line.
    pub fn parse(s: &str) -> Option<KeyOrder> {
        match s {
            "preserve" => Some(KeyOrder::Preserve),
            "canonical" => Some(KeyOrder::Canonical),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProjectToolConfig {
    pub command: Vec<String>,
    pub timeout_secs: u64,
    /// `[tools.NAME] pass_secrets`: this tool sees the API key's variable even when `[run]
    /// pass_secrets` is off.
    pub pass_secrets: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    pub url: String,
    pub api_key_env: String,
    pub model: String,
    pub timeout_secs: u64,
    pub max_retries: u32,
    /// A PEM file of extra CA certificates for an `https://` endpoint behind a private CA.
    /// [`ProjectConfig::load`] resolves a relative path against the config file's directory.
    pub ca_file: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CommandConfig {
    pub profile: Option<String>,
    pub argv: Option<Vec<String>>,
    pub timeout_secs: u64,
}

impl Default for ProjectConfig {
    fn default() -> ProjectConfig {
        ProjectConfig {
            tools: BTreeMap::new(),
            max_fan_out_depth: 5,
            max_spawns: 100,
            meow_max_depth: 10,
            meow_max_steps: 1000,
            meow_max_recovery: 3,
            meow_max_message: 16 * 1024 * 1024,
            openai: None,
            command: None,
            invoker: None,
            identity: None,
            max_call_depth: DEFAULT_MAX_CALL_DEPTH,
            max_eval_steps: DEFAULT_MAX_EVAL_STEPS,
            max_eval_bytes: DEFAULT_MAX_EVAL_BYTES,
            include: Vec::new(),
            store_path: None,
            pass_secrets: false,
            check: CheckRules::default(),
            key_order: KeyOrder::default(),
            engine: EngineConfig::default(),
            max_cost_usd: None,
            max_tokens: None,
            max_agent_calls: None,
            prices: BTreeMap::new(),
        }
    }
}

/// The default `[backend.openai] api_key_env`.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";

pub const FILE_NAME: &str = "pipewright.toml";

/// The default `[run] max_call_depth`: deeper than any pipeline written by hand nests, shallow
/// enough that a runaway recursion stops at once.
pub const DEFAULT_MAX_CALL_DEPTH: u64 = 64;

/// The default `[run] max_eval_steps` (the same as `pipewright_r1::Limits::default()`, which this
/// crate does not depend on): a few seconds of evaluation.
pub const DEFAULT_MAX_EVAL_STEPS: u64 = 50_000_000;

/// The default `[run] max_eval_bytes`: 256 MiB built by one expression.
pub const DEFAULT_MAX_EVAL_BYTES: u64 = 256 * 1024 * 1024;

impl ProjectConfig {
    /// The variable holding the API key (`[backend.openai] api_key_env`, else its default):
    /// its value is redacted from what `run` records and prints, and the variable is kept from
    /// child processes unless `pass_secrets` says otherwise.
    pub fn secret_env(&self) -> &str {
        self.openai
            .as_ref()
            .map_or(DEFAULT_API_KEY_ENV, |o| o.api_key_env.as_str())
    }

    /// The nearest `pipewright.toml` in `start` (a file's directory, or a directory) or above it.
    pub fn find(start: &Path) -> Option<PathBuf> {
        let abs = std::fs::canonicalize(start).ok()?;
        let dir = if abs.is_file() { abs.parent()? } else { &abs };
        dir.ancestors()
            .map(|d| d.join(FILE_NAME))
            .find(|p| p.is_file())
    }

    /// Reads `dir/pipewright.toml`; a missing file is the default configuration.
    pub fn load(dir: &Path) -> Result<ProjectConfig, ConfigError> {
        let path = dir.join(FILE_NAME);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let mut cfg = ProjectConfig::parse(&text).map_err(|e| ConfigError::In {
                    path: path.clone(),
                    error: Box::new(e),
                })?;
                // Like `include`, a relative ca_file means "next to pipewright.toml", not the
                // directory `run` happens to be started from.
                if let Some(ca) = cfg.openai.as_mut().and_then(|o| o.ca_file.as_mut()) {
                    if ca.is_relative() {
                        *ca = dir.join(&*ca);
                    }
                }
                if let Some(p) = cfg.store_path.as_mut().filter(|p| p.is_relative()) {
                    *p = dir.join(&*p);
                }
                Ok(cfg)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ProjectConfig::default()),
            Err(e) => Err(ConfigError::Read {
                path,
                reason: e.to_string(),
            }),
        }
    }

    pub fn parse(text: &str) -> Result<ProjectConfig, ConfigError> {
        let doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
            ConfigError::Toml(e.to_string().trim().to_string())
        })?;
        let mut cfg = ProjectConfig::default();
        if let Some(tools) = table(doc.as_table(), "tools")? {
            for (name, item) in tools.iter() {
                let t = item
                    .as_table_like()
                    .ok_or_else(|| ConfigError::ToolNotATable(name.to_string()))?;
                let command = strings(t.get("command"), &format!("tools.{name}.command"))?
                    .ok_or_else(|| ConfigError::ToolWithoutCommand(name.to_string()))?;
                if command.is_empty() {
                    return Err(ConfigError::ToolCommandEmpty(name.to_string()));
                }
                let timeout_secs =
                    uint(t.get("timeout_secs"), &format!("tools.{name}.timeout_secs"))?
                        .unwrap_or(60);
                let pass_secrets =
                    boolean(t.get("pass_secrets"), &format!("tools.{name}.pass_secrets"))?
                        .unwrap_or(false);
                cfg.tools.insert(
                    name.to_string(),
                    ProjectToolConfig {
                        command,
                        timeout_secs,
                        pass_secrets,
                    },
                );
            }
        }
        if let Some(spawn) = table(doc.as_table(), "safety")?
            .map(|s| table(s, "spawn"))
            .transpose()?
            .flatten()
        {
            if let Some(n) = uint(
                spawn.get("max_pipeline_fan_out_depth"),
                "safety.spawn.max_pipeline_fan_out_depth",
            )? {
                cfg.max_fan_out_depth = n;
            }
            if let Some(n) = uint(
                spawn.get("max_pipeline_spawns"),
                "safety.spawn.max_pipeline_spawns",
            )? {
                cfg.max_spawns = n;
            }
        }
        if let Some(backend) = table(doc.as_table(), "backend")? {
            if let Some(o) = table(backend, "openai")? {
                let s = |k: &str| o.get(k).and_then(Item::as_str).map(str::to_string);
                cfg.openai = Some(OpenAiConfig {
                    url: s("url").ok_or(ConfigError::OpenAiWithoutUrl)?,
                    api_key_env: s("api_key_env").unwrap_or_else(|| DEFAULT_API_KEY_ENV.into()),
                    model: s("model").unwrap_or_else(|| "gpt-4o-mini".into()),
                    timeout_secs: uint(o.get("timeout_secs"), "backend.openai.timeout_secs")?
                        .unwrap_or(120),
                    max_retries: uint(o.get("max_retries"), "backend.openai.max_retries")?
                        .unwrap_or(5)
                        .min(20) as u32,
                    ca_file: match o.get("ca_file") {
                        None => None,
                        Some(v) => Some(PathBuf::from(
                            v.as_str()
                                .ok_or(ConfigError::NotAString("backend.openai.ca_file"))?,
                        )),
                    },
                });
            }
            if let Some(c) = table(backend, "command")? {
                cfg.command = Some(CommandConfig {
                    profile: c.get("profile").and_then(Item::as_str).map(str::to_string),
                    argv: strings(c.get("argv"), "backend.command.argv")?,
                    timeout_secs: uint(c.get("timeout_secs"), "backend.command.timeout_secs")?
                        .unwrap_or(600),
                });
            }
        }
        if let Some(prices) = table(doc.as_table(), "prices")? {
            for (model, item) in prices.iter() {
                let t = item
                    .as_table_like()
                    .ok_or_else(|| ConfigError::PriceNotATable(model.to_string()))?;
                let rate = |k: &str| -> Result<f64, ConfigError> {
                    let v = t.get(k).ok_or_else(|| ConfigError::PriceWithout {
                        model: model.to_string(),
                        key: k.to_string(),
                    })?;
                    v.as_float()
                        .or_else(|| v.as_integer().map(|i| i as f64))
                        .filter(|r| *r >= 0.0 && r.is_finite())
                        .ok_or_else(|| ConfigError::PriceWithout {
                            model: model.to_string(),
                            key: k.to_string(),
                        })
                };
                let price = Price {
                    input_per_mtok: rate("input_per_mtok")?,
                    output_per_mtok: rate("output_per_mtok")?,
                };
                cfg.prices.insert(model.to_string(), price);
            }
        }
        if let Some(engine) = table(doc.as_table(), "engine")? {
            let text = |k: &str, at: &'static str| -> Result<Option<String>, ConfigError> {
                match engine.get(k) {
                    None => Ok(None),
                    Some(v) => v
                        .as_str()
                        .map(|s| Some(s.to_string()))
                        .ok_or(ConfigError::NotAString(at)),
                }
            };
            cfg.engine.kind = text("kind", "engine.kind")?;
            if let Some(k) = cfg.engine.kind.as_deref() {
                if k != "local" && k != "restate" {
                    return Err(ConfigError::EngineKind(k.to_string()));
                }
            }
            cfg.engine.ingress = text("ingress", "engine.ingress")?;
            cfg.engine.admin = text("admin", "engine.admin")?;
        }
        if let Some(run) = table(doc.as_table(), "run")? {
            if let Some(id) = run.get("identity") {
                let id = id.as_str().ok_or(ConfigError::NotAString("run.identity"))?;
                if id.trim().is_empty() {
                    return Err(ConfigError::Empty("run.identity"));
                }
                cfg.identity = Some(id.to_string());
            }
            if let Some(n) = uint(run.get("max_call_depth"), "run.max_call_depth")? {
                cfg.max_call_depth = n;
            }
            cfg.max_tokens = uint(run.get("max_tokens"), "run.max_tokens")?;
            cfg.max_agent_calls = uint(run.get("max_agent_calls"), "run.max_agent_calls")?;
            if let Some(v) = run.get("max_cost_usd") {
                let usd = v
                    .as_float()
                    .or_else(|| v.as_integer().map(|i| i as f64))
                    .filter(|c| *c >= 0.0 && c.is_finite())
                    .ok_or(ConfigError::NotACost("run.max_cost_usd"))?;
                cfg.max_cost_usd = Some(usd);
            }
            if let Some(b) = boolean(run.get("pass_secrets"), "run.pass_secrets")? {
                cfg.pass_secrets = b;
            }
            for (key, slot) in [
                ("max_eval_steps", &mut cfg.max_eval_steps),
                ("max_eval_bytes", &mut cfg.max_eval_bytes),
            ] {
                match uint(run.get(key), &format!("run.{key}"))? {
                    Some(0) => return Err(ConfigError::Zero(format!("run.{key}"))),
                    Some(n) => *slot = n,
                    None => {}
                }
            }
        }
        if let Some(meow) = table(doc.as_table(), "meow")? {
            for (key, slot) in [
                ("max_expansion_depth", &mut cfg.meow_max_depth),
                ("max_total_steps", &mut cfg.meow_max_steps),
                ("max_recovery_depth", &mut cfg.meow_max_recovery),
                ("max_message_bytes", &mut cfg.meow_max_message),
            ] {
                match uint(meow.get(key), &format!("meow.{key}"))? {
                    Some(0) => return Err(ConfigError::Zero(format!("meow.{key}"))),
                    Some(n) => *slot = n,
                    None => {}
                }
            }
        }
        if let Some(store) = table(doc.as_table(), "store")? {
            if let Some(p) = store.get("path") {
                let p = p.as_str().ok_or(ConfigError::NotAString("store.path"))?;
                if p.trim().is_empty() {
                    return Err(ConfigError::Empty("store.path"));
                }
                cfg.store_path = Some(PathBuf::from(p));
            }
        }
        if let Some(check) = table(doc.as_table(), "check")? {
            if let Some(dirs) = strings(check.get("include"), "check.include")? {
                cfg.include = dirs;
            }
            if let Some(inv) = check.get("invoker") {
                cfg.invoker = Some(
                    inv.as_str()
                        .ok_or(ConfigError::NotAString("check.invoker"))?
                        .to_string(),
                );
            }
            cfg.check = CheckRules::parse(check)?;
        }
        if let Some(fmt) = table(doc.as_table(), "fmt")? {
            if let Some(order) = fmt.get("key_order") {
                cfg.key_order = order
                    .as_str()
                    .and_then(KeyOrder::parse)
                    .ok_or(ConfigError::KeyOrder)?;
            }
        }
        Ok(cfg)
    }
}

fn table<'a>(item: &'a Table, key: &str) -> Result<Option<&'a Table>, ConfigError> {
    match item.get(key) {
        None => Ok(None),
        Some(i) => i
            .as_table()
            .map(Some)
            .ok_or_else(|| ConfigError::NotATable(key.to_string())),
    }
}

fn uint(item: Option<&Item>, what: &str) -> Result<Option<u64>, ConfigError> {
    match item {
        None => Ok(None),
        Some(i) => match i.as_integer() {
            Some(n) if n >= 0 => Ok(Some(n as u64)),
            _ => Err(ConfigError::NotAnUnsigned(what.to_string())),
        },
    }
}

fn boolean(item: Option<&Item>, what: &str) -> Result<Option<bool>, ConfigError> {
    match item {
        None => Ok(None),
        Some(i) => i
            .as_bool()
            .map(Some)
            .ok_or_else(|| ConfigError::NotABool(what.to_string())),
    }
}

fn strings(item: Option<&Item>, what: &str) -> Result<Option<Vec<String>>, ConfigError> {
    match item {
        None => Ok(None),
        Some(i) => {
            let arr = i
                .as_array()
                .ok_or_else(|| ConfigError::NotStrings(what.to_string()))?;
            arr.iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| ConfigError::NotStrings(what.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_which_key_and_load_names_the_file() {
        let err = |t: &str| ProjectConfig::parse(t).err();
        assert_eq!(
            err("[run]\nmax_eval_steps = 0\n"),
            Some(ConfigError::Zero("run.max_eval_steps".into()))
        );
        assert_eq!(
            err("[store]\npath = 1\n"),
            Some(ConfigError::NotAString("store.path"))
        );
        assert!(matches!(
            err("[check]\nwarn = [\"E501\"]\n"),
            Some(ConfigError::NotACode { list, code }) if list == "check.warn" && code == "E501"
        ));
        assert!(matches!(err("not toml ="), Some(ConfigError::Toml(_))));
        let dir = std::env::temp_dir().join(format!("pw-project-err-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join(FILE_NAME), "[run]\nidentity = \"\"\n");
        let loaded = ProjectConfig::load(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        let Err(ConfigError::In { path, error }) = loaded else {
            panic!("{loaded:?}");
        };
        assert_eq!(path, dir.join(FILE_NAME));
        assert_eq!(*error, ConfigError::Empty("run.identity"));
        assert_eq!(
            String::from(ConfigError::In { path, error }),
            format!(
                "{}: `run.identity` must not be empty",
                dir.join(FILE_NAME).display()
            )
        );
    }

    #[test]
    fn fmt_key_order_defaults_to_preserve() {
        let k = |t: &str| ProjectConfig::parse(t).map(|c| c.key_order);
        assert_eq!(k(""), Ok(KeyOrder::Preserve));
        assert_eq!(k("[fmt]\n"), Ok(KeyOrder::Preserve));
        assert_eq!(
            k("[fmt]\nkey_order = \"preserve\"\n"),
            Ok(KeyOrder::Preserve)
        );
        assert_eq!(
            k("[fmt]\nkey_order = \"canonical\"\n"),
            Ok(KeyOrder::Canonical)
        );
        assert!(k("[fmt]\nkey_order = \"sorted\"\n")
            .is_err_and(|e| e.to_string().contains("fmt.key_order")));
        assert!(k("[fmt]\nkey_order = true\n").is_err());
    }

    #[test]
    fn run_max_call_depth() {
        let m = |t: &str| ProjectConfig::parse(t).map(|c| c.max_call_depth);
        assert_eq!(m(""), Ok(64));
        assert_eq!(m("[run]\nmax_call_depth = 5000\n"), Ok(5000));
        assert_eq!(m("[run]\nmax_call_depth = 0\n"), Ok(0));
        assert!(m("[run]\nmax_call_depth = -1\n").is_err());
        assert!(m("[run]\nmax_call_depth = \"deep\"\n").is_err());
    }

    #[test]
    fn run_eval_budget() {
        let b = |t: &str| ProjectConfig::parse(t).map(|c| (c.max_eval_steps, c.max_eval_bytes));
        assert_eq!(b(""), Ok((50_000_000, 256 * 1024 * 1024)));
        assert_eq!(
            b("[run]\nmax_eval_steps = 1000\nmax_eval_bytes = 4096\n"),
            Ok((1000, 4096))
        );
        assert!(b("[run]\nmax_eval_bytes = 0\n").is_err());
        assert!(b("[run]\nmax_eval_steps = -5\n").is_err());
    }

    #[test]
    fn run_identity_is_a_non_empty_string() {
        let id = |t: &str| ProjectConfig::parse(t).map(|c| c.identity);
        assert_eq!(id("[run]\nidentity = \"bot\"\n"), Ok(Some("bot".into())));
        let budgets = |t: &str| {
            ProjectConfig::parse(t).map(|c| (c.max_cost_usd, c.max_tokens, c.max_agent_calls))
        };
        assert_eq!(
            budgets("[run]\nmax_cost_usd = 2.5\nmax_tokens = 1000\nmax_agent_calls = 3\n"),
            Ok((Some(2.5), Some(1000), Some(3)))
        );
        assert_eq!(
            budgets("[run]\nmax_cost_usd = 2\n"),
            Ok((Some(2.0), None, None))
        );
        assert_eq!(
            budgets("[run]\nmax_cost_usd = -1.0\n"),
            Err(ConfigError::NotACost("run.max_cost_usd"))
        );
        let engine = |t: &str| ProjectConfig::parse(t).map(|c| c.engine);
        assert_eq!(
            engine("[engine]\nkind = \"restate\"\ningress = \"http://h:8080\"\n"),
            Ok(EngineConfig {
                kind: Some("restate".into()),
                ingress: Some("http://h:8080".into()),
                admin: None,
            })
        );
        assert_eq!(
            engine("[engine]\nkind = \"temporal\"\n"),
            Err(ConfigError::EngineKind("temporal".into()))
        );
        assert!(engine("[engine]\ningress = 8080\n").is_err());
        assert_eq!(id(""), Ok(None));
        assert!(id("[run]\nidentity = 5\n").is_err());
        assert!(id("[run]\nidentity = \" \"\n").is_err());
    }

    #[test]
    fn store_path_is_a_non_empty_string_resolved_next_to_the_file() {
        let path = |t: &str| ProjectConfig::parse(t).map(|c| c.store_path);
        assert_eq!(path(""), Ok(None));
        assert_eq!(
            path("[store]\npath = \"state/runs.db\"\n"),
            Ok(Some(PathBuf::from("state/runs.db")))
        );
        assert!(
            path("[store]\npath = 1\n").is_err_and(|e| e.to_string().contains("must be a string"))
        );
        assert!(path("[store]\npath = \"\"\n")
            .is_err_and(|e| e.to_string().contains("must not be empty")));
        let dir = std::env::temp_dir().join(format!("pw-project-store-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join(FILE_NAME), "[store]\npath = \"x/runs.db\"\n");
        let cfg = ProjectConfig::load(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(cfg.map(|c| c.store_path), Ok(Some(dir.join("x/runs.db"))));
    }

    #[test]
    fn pass_secrets_and_the_secret_variable() {
        let cfg = |t: &str| ProjectConfig::parse(t).unwrap_or_else(|e| panic!("{e}"));
        let d = cfg("");
        assert_eq!((d.pass_secrets, d.secret_env()), (false, "OPENAI_API_KEY"));
        let c = cfg("[run]\npass_secrets = true\n[tools.t]\ncommand = [\"t\"]\npass_secrets = true\n[backend.openai]\nurl = \"http://x/\"\napi_key_env = \"MY_KEY\"\n");
        assert_eq!((c.pass_secrets, c.secret_env()), (true, "MY_KEY"));
        assert!(c.tools["t"].pass_secrets);
        assert!(!cfg("[tools.t]\ncommand = [\"t\"]\n").tools["t"].pass_secrets);
        assert!(ProjectConfig::parse("[run]\npass_secrets = \"yes\"\n")
            .is_err_and(|e| e.to_string().contains("run.pass_secrets")));
    }

    #[test]
    fn parses_every_section() {
        let cfg = ProjectConfig::parse(
            "[tools.lint]\ncommand = [\"python3\", \"lint.py\"]\ntimeout_secs = 5\n[safety.spawn]\nmax_pipeline_fan_out_depth = 2\nmax_pipeline_spawns = 0\n[backend.openai]\nurl = \"http://127.0.0.1:1/v1/chat/completions\"\n[backend.command]\nargv = [\"agent\", \"{prompt}\"]\n",
        );
        let cfg = cfg.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cfg.tools["lint"].command, ["python3", "lint.py"]);
        assert_eq!((cfg.max_fan_out_depth, cfg.max_spawns), (2, 0));
        assert_eq!(
            cfg.openai.map(|o| o.api_key_env),
            Some("OPENAI_API_KEY".into())
        );
        assert_eq!(
            cfg.command.and_then(|c| c.argv),
            Some(vec!["agent".into(), "{prompt}".into()])
        );
    }

    #[test]
    fn defaults_are_finite_and_errors_are_clear() {
        assert_eq!(
            ProjectConfig::parse("").map(|c| (c.max_fan_out_depth, c.max_spawns)),
            Ok((5, 100))
        );
        assert!(ProjectConfig::parse("[tools.x]\ncommand = 3")
            .is_err_and(|e| e.to_string().contains("array of strings")));
        assert!(ProjectConfig::parse("[safety.spawn]\nmax_pipeline_spawns = -1").is_err());
        assert!(ProjectConfig::parse("not toml =").is_err());
        assert!(ProjectConfig::parse("tools = [\"x\"]")
            .is_err_and(|e| e.to_string().contains("must be a table")));
        assert_eq!(
            ProjectConfig::parse("[check]\ninvoker = \"alice\"\ninclude = [\"lib\"]")
                .map(|c| (c.invoker, c.include)),
            Ok((Some("alice".into()), vec!["lib".to_string()]))
        );
    }

    #[test]
    fn openai_ca_file_is_optional_and_resolved_next_to_the_file() {
        let url = "[backend.openai]\nurl = \"https://llm.internal/v1/chat/completions\"\n";
        assert_eq!(
            ProjectConfig::parse(url).map(|c| c.openai.and_then(|o| o.ca_file)),
            Ok(None)
        );
        assert!(ProjectConfig::parse(&format!("{url}ca_file = 3\n"))
            .is_err_and(|e| e.to_string().contains("ca_file` must be a string")));
        let dir = std::env::temp_dir().join(format!("pw-project-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            dir.join(FILE_NAME),
            format!("{url}ca_file = \"certs/ca.pem\"\n"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let loaded = ProjectConfig::load(&dir).map(|c| c.openai.and_then(|o| o.ca_file));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(loaded, Ok(Some(dir.join("certs/ca.pem"))));
        assert_eq!(
            ProjectConfig::parse(&format!("{url}ca_file = \"/etc/ca.pem\"\n"))
                .map(|c| c.openai.and_then(|o| o.ca_file)),
            Ok(Some(PathBuf::from("/etc/ca.pem")))
        );
    }
}
