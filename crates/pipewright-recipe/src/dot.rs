//! `recipe_to_dot`: an Amplifier recipe drawn as Graphviz DOT, byte for byte what the reference
//! tool's `recipe_to_dot` prints (notes/recipe-runtime.md §6).
//!
//! Like the reference this reads the raw YAML, not the typed AST: the mode comes from key
//! presence, values are judged with Python truthiness, and plain scalars are typed the way
//! PyYAML's `safe_load` (YAML 1.1) types them, because `parallel: no` is false there. Where the
//! reference would die with an uncaught TypeError/AttributeError (a number where it slices or
//! sanitizes a string, a step that is not a mapping, …) this returns an error instead.

use crate::runtime::{is_py_space, py_strip};
use pipewright_yaml::yaml11::{self, Plain};
use pipewright_yaml::{Entry, Node, NodeKind, ScalarStyle};
use sha2::{Digest, Sha256};

/// Draws the recipe whose YAML root is `root`. Errors are the reference's input errors (without
/// the file path, which this signature does not know) or a description of what the reference
/// would crash on.
pub fn recipe_to_dot(root: &Node) -> Result<String, String> {
    render(Some(root), None)
}

/// The same for a whole document: `root` is `None` for an empty one, and `path` is the path the
/// reference puts at the end of its input errors.
pub fn recipe_to_dot_at(root: Option<&Node>, path: &str) -> Result<String, String> {
    render(root, Some(path))
}

/// SHA-256 of `text` as lowercase hex (the `source_hash` of a body; of the whole DOT it is the
/// reference's `recipe_dot_hash`).
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn render(root: Option<&Node>, path: Option<&str>) -> Result<String, String> {
    let at = |msg: &str| match path {
        Some(p) => format!("{msg}: {p}"),
        None => msg.to_string(),
    };
    if let Some(root) = root {
        check_constructible(root).map_err(|e| match path {
            Some(p) => format!("Invalid YAML in {p}: {e}"),
            None => format!("Invalid YAML: {e}"),
        })?;
    }
    // `yaml.safe_load(fh) or {}`: any falsy document (empty, null, [], "", 0, false) becomes an
    // empty mapping and so fails on the missing name, not on its type.
    let data = match root.map(py) {
        None => None,
        Some(v) if !v.truthy() => None,
        Some(Py::Dict(m)) => Some(m),
        Some(v) => {
            return Err(format!(
                "Recipe YAML must be a mapping, got {}",
                v.type_name()
            ))
        }
    };
    let Some(data) = data else {
        return Err(at("Recipe YAML missing required 'name' key"));
    };
    let Some(name) = data.get("name") else {
        return Err(at("Recipe YAML missing required 'name' key"));
    };
    if data.get("steps").is_none() && data.get("stages").is_none() {
        return Err(at("Recipe YAML must have either 'steps' or 'stages'"));
    }
    let name = text(py(name), "the recipe's `name`")?;
    let description = field(data, "description");
    let graph_id = sanitize(name);
    let title = make_title(name, description)?;

    let mut used = Used::default();
    let body = if let Some(stages) = data.get("stages") {
        let (stage_body, exit) = render_staged(py(stages), &mut used)?;
        format!("{stage_body}\n    {exit} -> done")
    } else {
        // An empty `steps` gives an empty block, so the body starts with a blank line.
        let steps = step_nodes(field(data, "steps"), "`steps`")?;
        let (block, last) = render_steps_block(steps, "start", "    ", &mut used)?;
        format!("{block}\n    {last} -> done")
    };
    let hash = sha256_hex(&body);
    let out = [
        format!("digraph {graph_id} {{"),
        "    rankdir=TB".into(),
        "    fontname=\"Helvetica\"".into(),
        "    fontsize=12".into(),
        format!("    label={}", q(&title)),
        "    labelloc=t".into(),
        "    labeljust=c".into(),
        "    compound=true".into(),
        "    nodesep=0.6".into(),
        "    ranksep=0.7".into(),
        "    bgcolor=\"white\"".into(),
        format!("    source_hash=\"{hash}\""),
        String::new(),
        "    node [fontname=\"Helvetica\", fontsize=11, style=\"filled,rounded\"]".into(),
        "    edge [fontname=\"Helvetica\", fontsize=9]".into(),
        String::new(),
        format!("    start [label=\"Start\", shape=oval, fillcolor=\"{COLOR_START_END}\"]"),
        format!("    done  [label=\"Done!\", shape=oval, fillcolor=\"{COLOR_START_END}\"]"),
        String::new(),
        body,
        String::new(),
        legend(&used),
        "}".into(),
    ];
    Ok(out.join("\n"))
}

const COLOR_START_END: &str = "#e0e0e0";
const COLOR_BASH: &str = "#bbdefb";
const COLOR_AGENT: &str = "#c8e6c9";
const COLOR_RECIPE: &str = "#e0e0e0";
const COLOR_APPROVAL: &str = "#ffe0b2";
const COLOR_CONDITION: &str = "#fff9c4";
const COLOR_CLUSTER_FILL: &str = "#f9f9f9";
const COLOR_CLUSTER_BORDER: &str = "#999999";

/// Which legend entries the drawing needs (start/end always).
#[derive(Default)]
struct Used {
    bash: bool,
    agent: bool,
    recipe: bool,
    condition: bool,
    approval: bool,
}

// ── Python values ────────────────────────────────────────────────────────────────────────────

/// A YAML node as the Python value `yaml.safe_load` would build, as far as drawing needs it.
#[derive(Clone, Copy)]
enum Py<'a> {
    None,
    Bool(bool),
    /// `true` when the number is not zero.
    Int(bool),
    Float(bool),
    /// A `datetime.date` (`"date"`) or `datetime.datetime` (`"datetime"`).
    Date(&'static str),
    Str(&'a str),
    List(&'a [Node]),
    Dict(&'a Node),
}

impl Py<'_> {
    fn truthy(&self) -> bool {
        match *self {
            Py::None => false,
            Py::Bool(b) | Py::Int(b) | Py::Float(b) => b,
            Py::Date(_) => true,
            Py::Str(s) => !s.is_empty(),
            Py::List(l) => !l.is_empty(),
            Py::Dict(m) => m.as_map().is_some_and(|m| !m.is_empty()),
        }
    }

    fn type_name(&self) -> &'static str {
        match *self {
            Py::None => "NoneType",
            Py::Bool(_) => "bool",
            Py::Int(_) => "int",
            Py::Float(_) => "float",
            Py::Date(t) => t,
            Py::Str(_) => "str",
            Py::List(_) => "list",
            Py::Dict(_) => "dict",
        }
    }
}

fn py(n: &Node) -> Py<'_> {
    match &n.kind {
        NodeKind::Seq(items) => Py::List(items),
        NodeKind::Map(_) => Py::Dict(n),
        // A standard tag types the scalar whatever its quoting (`!!int "5"` is a number);
        // without one, only plain scalars are resolved.
        NodeKind::Scalar(s) => match n.tag.as_deref() {
            Some(t) if t.handle == YAML_TAG && t.suffix == "str" => Py::Str(&s.text),
            Some(t) if t.handle == YAML_TAG => resolve_plain(&s.text),
            _ if s.style != ScalarStyle::Plain => Py::Str(&s.text),
            _ => resolve_plain(&s.text),
        },
    }
}

/// `d.get(key)`, with an absent key as `None` (the reference never distinguishes the two except
/// where it uses a default, handled at those places).
fn field<'a>(d: &'a Node, key: &str) -> Py<'a> {
    d.get(key).map_or(Py::None, py)
}

/// A value the reference uses as a `str`; anything else makes it crash.
fn text<'a>(v: Py<'a>, what: &str) -> Result<&'a str, String> {
    match v {
        Py::Str(s) => Ok(s),
        other => Err(format!(
            "{what} must be a string, found {} (the reference tool crashes here)",
            other.type_name()
        )),
    }
}

/// The keys of a mapping in Python's dict order: first occurrence, the last value wins.
fn dict_keys(m: &Node) -> Vec<&Node> {
    let mut keys: Vec<&Node> = Vec::new();
    for Entry { key, .. } in m.as_map().unwrap_or_default() {
        if !keys.iter().any(|k| k.key_text() == key.key_text()) {
            keys.push(key);
        }
    }
    keys
}

const YAML_TAG: &str = "tag:yaml.org,2002:";

/// What `yaml.safe_load` refuses although the YAML parses: tags it has no constructor for, the
/// `=` value scalar, and collections as mapping keys.
fn check_constructible(root: &Node) -> Result<(), String> {
    let mut err = None;
    root.walk(|n| {
        if err.is_some() {
            return;
        }
        if let Some(t) = &n.tag {
            let known = t.handle == YAML_TAG
                && matches!(
                    t.suffix.as_str(),
                    "null"
                        | "bool"
                        | "int"
                        | "float"
                        | "binary"
                        | "timestamp"
                        | "omap"
                        | "pairs"
                        | "set"
                        | "str"
                        | "seq"
                        | "map"
                );
            if !known {
                err = Some(format!(
                    "could not determine a constructor for the tag '{}{}'",
                    t.handle, t.suffix
                ));
            }
        }
        let plain = |s: &pipewright_yaml::Scalar| n.tag.is_none() && s.style == ScalarStyle::Plain;
        match &n.kind {
            NodeKind::Scalar(s) if plain(s) && &*s.text == "=" => {
                err = Some(
                    "could not determine a constructor for the tag 'tag:yaml.org,2002:value'"
                        .into(),
                );
            }
            NodeKind::Map(entries) if entries.iter().any(|e| e.key.as_scalar().is_none()) => {
                err = Some("found unhashable key".into());
            }
            _ => {}
        }
    });
    err.map_or(Ok(()), Err)
}

/// The Python value PyYAML's implicit resolvers (YAML 1.1) give an untagged plain scalar. The
/// merge key `<<` is drawn as the string it reads as to YAML 1.2, and a plain `=` never gets
/// here (see [`check_constructible`]).
fn resolve_plain(t: &str) -> Py<'_> {
    match yaml11::resolve(t) {
        Plain::Null => Py::None,
        Plain::Bool(b) => Py::Bool(b),
        Plain::Float => {
            let mantissa = t.split(['e', 'E']).next().unwrap_or(t);
            let special = t.contains(['i', 'I', 'n', 'N']);
            Py::Float(special || mantissa.contains(|c: char| ('1'..='9').contains(&c)))
        }
        Plain::Int(_) => {
            let body = t.trim_start_matches(['-', '+']);
            let digits = body
                .strip_prefix("0b")
                .or_else(|| body.strip_prefix("0x"))
                .unwrap_or(body);
            Py::Int(digits.chars().any(|c| !matches!(c, '0' | '_' | ':')))
        }
        Plain::Date => Py::Date("date"),
        Plain::DateTime => Py::Date("datetime"),
        Plain::Merge | Plain::Value | Plain::Str => Py::Str(t),
    }
}

// ── Python string helpers ────────────────────────────────────────────────────────────────────

fn in_ranges(table: &[(char, char)], c: char) -> bool {
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Python's `\w`: letters and numbers of any script and `_`, but not the combining marks that
/// Rust's Alphabetic property counts (so a Devanagari vowel sign is dropped, as Python drops it).
fn is_py_word(c: char) -> bool {
    c == '_' || (c.is_alphanumeric() && !in_ranges(NOT_PY_WORD, c))
}

fn py_isdigit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && in_ranges(PY_DIGITS, c))
}

/// The titlecase letters (Lt): cased for Python although neither upper nor lower case.
fn is_titlecase_letter(c: char) -> bool {
    matches!(c,
        '\u{1c5}' | '\u{1c8}' | '\u{1cb}' | '\u{1f2}' | '\u{1f88}'..='\u{1f8f}'
        | '\u{1f98}'..='\u{1f9f}' | '\u{1fa8}'..='\u{1faf}' | '\u{1fbc}' | '\u{1fcc}' | '\u{1ffc}')
}

fn is_cased(c: char) -> bool {
    c.is_lowercase() || c.is_uppercase() || is_titlecase_letter(c)
}

/// Python's titlecase mapping of one character, which differs from uppercasing for the Latin
/// digraphs, Georgian and the Greek letters with ypogegrammeni.
fn push_title(c: char, out: &mut String) {
    let special = match c {
        '\u{1c4}'..='\u{1c6}' => Some('\u{1c5}'),
        '\u{1c7}'..='\u{1c9}' => Some('\u{1c8}'),
        '\u{1ca}'..='\u{1cc}' => Some('\u{1cb}'),
        '\u{1f1}'..='\u{1f3}' => Some('\u{1f2}'),
        '\u{10d0}'..='\u{10fa}' | '\u{10fd}'..='\u{10ff}' => Some(c),
        '\u{1f80}'..='\u{1f87}' | '\u{1f90}'..='\u{1f97}' | '\u{1fa0}'..='\u{1fa7}' => {
            char::from_u32(c as u32 + 8)
        }
        '\u{1fb3}' => Some('\u{1fbc}'),
        '\u{1fc3}' => Some('\u{1fcc}'),
        '\u{1ff3}' => Some('\u{1ffc}'),
        _ if is_titlecase_letter(c) => Some(c),
        _ => None,
    };
    if let Some(t) = special {
        out.push(t);
        return;
    }
    // A character that uppercases to several (ß → SS) titlecases to the first one followed by
    // the rest in lower case (ß → Ss).
    let mut up = c.to_uppercase();
    if let Some(first) = up.next() {
        out.push(first);
    }
    for rest in up {
        out.extend(rest.to_lowercase());
    }
}

/// Python's `str.title()`: a cased character that follows a cased one is lowercased, every other
/// character titlecased, so `phase1x` → `Phase1X` and `don't` → `Don'T`.
fn py_title(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut prev_cased = false;
    for (i, &c) in chars.iter().enumerate() {
        if !prev_cased {
            push_title(c, &mut out);
        } else if c == 'Σ' {
            // Python lowercases a capital sigma to the final form at the end of a word.
            let final_form = !chars.get(i + 1).is_some_and(|&n| is_cased(n));
            out.push(if final_form { 'ς' } else { 'σ' });
        } else {
            out.extend(c.to_lowercase());
        }
        prev_cased = is_cased(c);
    }
    out
}

/// The first `n` characters (Python's `s[:n]`).
fn take_chars(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

// ── The reference's helpers (§6) ─────────────────────────────────────────────────────────────

fn sanitize(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| {
            if c == '-' || c == '.' || is_py_space(c) {
                '_'
            } else {
                c
            }
        })
        .filter(|&c| is_py_word(c))
        .collect();
    s = s.trim_matches('_').to_string();
    if s.is_empty() {
        s = "node".into();
    }
    if s.chars().next().is_some_and(py_isdigit) {
        s.insert_str(0, "n_");
    }
    s
}

/// Raw newlines stay raw: the reference only escapes `\` and `"`.
fn q(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn title_words(s: &str) -> Vec<String> {
    s.split(['-', '_'])
        .filter(|w| !w.is_empty())
        .map(py_title)
        .collect()
}

/// The recipe name and stage names as shown: words split on `-`/`_`, title-cased, spaced.
fn title_case(s: &str) -> String {
    title_words(s).join(" ")
}

fn make_title(name: &str, description: Py) -> Result<String, String> {
    let pretty = title_case(name);
    if !description.truthy() {
        return Ok(pretty);
    }
    let description = text(description, "the recipe's `description`")?;
    let stripped = py_strip(description);
    let first = stripped.split(['.', '\n']).next().unwrap_or("");
    let mut sentence = py_strip(first).to_string();
    if sentence.chars().count() > 80 {
        sentence = format!("{}...", take_chars(&sentence, 77));
    }
    Ok(if sentence.is_empty() {
        pretty
    } else {
        format!("{pretty} \u{2014} {sentence}")
    })
}

fn auto_label(step_id: &str) -> String {
    let words = title_words(step_id);
    match words.len() {
        0 => py_title(step_id),
        1 | 2 => words.join("\n"),
        3 => format!("{} {}\n{}", words[0], words[1], words[2]),
        n => {
            let mid = n.div_ceil(2);
            format!("{}\n{}", words[..mid].join(" "), words[mid..].join(" "))
        }
    }
}

/// `re.sub(r"\{\{|\}\}", "", c)`: one left-to-right pass, so `}{{}` keeps `}}`.
fn simplify_condition(condition: &str) -> String {
    let mut cleaned = String::with_capacity(condition.len());
    let mut rest = condition;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("{{") || rest.starts_with("}}") {
            rest = &rest[2..];
        } else {
            cleaned.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    let cleaned = py_strip(&cleaned);
    if cleaned.chars().count() > 30 {
        format!("{}...", take_chars(cleaned, 27))
    } else {
        cleaned.to_string()
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Bash,
    Recipe,
    Agent,
}

fn step_kind(step: &Node, i: usize) -> Result<Kind, String> {
    let ty = field(step, "type");
    let t = if ty.truthy() {
        text(ty, &format!("`type` of step {i}"))?.to_lowercase()
    } else {
        String::new()
    };
    Ok(
        if t == "bash" || (t.is_empty() && step.get("command").is_some()) {
            Kind::Bash
        } else if t == "recipe" || (t.is_empty() && step.get("recipe").is_some()) {
            Kind::Recipe
        } else {
            Kind::Agent
        },
    )
}

/// `step.get(key, "")[:100]` as a term of the tooltip's `or` chain: `Ok(None)` when falsy.
fn sliced<'a>(step: &'a Node, key: &str, i: usize) -> Result<Option<&'a str>, String> {
    let Some(n) = step.get(key) else {
        return Ok(None);
    };
    match py(n) {
        Py::Str(s) => Ok(Some(take_chars(s, 100)).filter(|s| !s.is_empty())),
        Py::List([]) => Ok(None),
        other => Err(format!(
            "`{key}` of step {i} must be a string, found {} (the reference tool crashes here)",
            other.type_name()
        )),
    }
}

fn tooltip(step: &Node, i: usize) -> Result<String, String> {
    let agent = field(step, "agent");
    let raw = if agent.truthy() {
        text(agent, &format!("`agent` of step {i}"))?
    } else if let Some(p) = sliced(step, "prompt", i)? {
        p
    } else if let Some(c) = sliced(step, "command", i)? {
        c
    } else {
        // The last term of the `or` chain is taken whatever its truthiness.
        match step.get("id") {
            None => "",
            Some(n) => text(py(n), &format!("`id` of step {i}"))?,
        }
    };
    Ok(take_chars(&raw.replace('"', "'").replace('\n', " "), 100).to_string())
}

/// `for d in depends_on`: a string gives its characters, a mapping its keys.
fn depends_on(v: Py, i: usize) -> Result<Vec<String>, String> {
    let what = || format!("`depends_on` of step {i}");
    match v {
        _ if !v.truthy() => Ok(Vec::new()),
        Py::Str(s) => Ok(s.chars().map(String::from).collect()),
        Py::List(items) => items
            .iter()
            .map(|n| text(py(n), &what()).map(String::from))
            .collect(),
        Py::Dict(m) => dict_keys(m)
            .into_iter()
            .map(|k| text(py(k), &what()).map(String::from))
            .collect(),
        other => Err(format!(
            "{} must be a list, found {} (the reference tool crashes here)",
            what(),
            other.type_name()
        )),
    }
    .map(|ds| ds.iter().map(|d| format!("step_{}", sanitize(d))).collect())
}

/// A step as the reference's node descriptor.
struct NodeDef {
    nid: String,
    kind: Kind,
    label: String,
    tooltip: String,
    condition: Option<String>,
    sources: Vec<String>,
    while_loop: bool,
}

fn node_def(step: &Node, i: usize) -> Result<NodeDef, String> {
    let id = field(step, "id");
    let sid = if id.truthy() {
        text(id, &format!("`id` of step {i}"))?.to_string()
    } else {
        format!("step_{i}")
    };
    let kind = step_kind(step, i)?;
    let mut label = auto_label(&sid);
    if kind == Kind::Recipe {
        label.push_str("\n(sub-recipe)");
    }
    if field(step, "foreach").truthy() {
        label.push_str("\n(for each)");
    } else if field(step, "parallel").truthy() {
        label.push_str("\n(parallel)");
    }
    let condition = field(step, "condition");
    let condition = if condition.truthy() {
        Some(text(condition, &format!("`condition` of step {i}"))?.to_string())
    } else {
        None
    };
    Ok(NodeDef {
        nid: format!("step_{}", sanitize(&sid)),
        kind,
        label,
        tooltip: tooltip(step, i)?,
        condition,
        sources: depends_on(field(step, "depends_on"), i)?,
        while_loop: field(step, "while_condition").truthy(),
    })
}

/// The steps as a list of mappings, or why the reference would crash on them.
fn step_nodes<'a>(steps: Py<'a>, what: &str) -> Result<&'a [Node], String> {
    if !steps.truthy() {
        return Ok(&[]);
    }
    let Py::List(items) = steps else {
        return Err(format!(
            "{what} must be a list, found {} (the reference tool crashes here)",
            steps.type_name()
        ));
    };
    if let Some((i, n)) = items.iter().enumerate().find(|(_, n)| n.as_map().is_none()) {
        return Err(format!(
            "step {i} of {what} must be a mapping, found {} (the reference tool crashes here)",
            py(n).type_name()
        ));
    }
    Ok(items)
}

/// The nodes and edges of one list of steps, and the node the next element connects from.
fn render_steps_block(
    steps: &[Node],
    prev_node: &str,
    indent: &str,
    used: &mut Used,
) -> Result<(String, String), String> {
    if steps.is_empty() {
        return Ok((String::new(), prev_node.to_string()));
    }
    let defs = steps
        .iter()
        .enumerate()
        .map(|(i, s)| node_def(s, i))
        .collect::<Result<Vec<_>, _>>()?;
    let mut lines = Vec::new();
    for nd in &defs {
        match nd.kind {
            Kind::Bash => used.bash = true,
            Kind::Recipe => used.recipe = true,
            Kind::Agent => used.agent = true,
        }
        if let Some(cond) = &nd.condition {
            used.condition = true;
            lines.push(format!(
                "{indent}cond_{} [label={}, shape=diamond, fillcolor=\"{COLOR_CONDITION}\"]",
                nd.nid,
                q(&simplify_condition(cond))
            ));
        }
        let (fill, style) = match nd.kind {
            Kind::Bash => (COLOR_BASH, "filled,rounded"),
            Kind::Recipe => (COLOR_RECIPE, "filled,rounded,dashed"),
            Kind::Agent => (COLOR_AGENT, "filled,rounded"),
        };
        let tooltip = if nd.tooltip.is_empty() {
            String::new()
        } else {
            format!(", tooltip={}", q(&nd.tooltip))
        };
        lines.push(format!(
            "{indent}{} [label={}, shape=box, fillcolor=\"{fill}\", style=\"{style}\"{tooltip}]",
            nd.nid,
            q(&nd.label)
        ));
    }
    lines.push(String::new());

    // Conditional steps branch off `last_uncond` without advancing it, so the next step still
    // connects from the last unconditional one.
    let mut last_uncond = prev_node.to_string();
    let mut skip_edges: Vec<(String, String)> = Vec::new();
    let mut to_diamond: Vec<String> = Vec::new();
    for (i, nd) in defs.iter().enumerate() {
        let sources = if nd.sources.is_empty() {
            vec![last_uncond.clone()]
        } else {
            nd.sources.clone()
        };
        if let Some(cond) = &nd.condition {
            let cid = format!("cond_{}", nd.nid);
            for src in &sources {
                let edge = format!("{src} -> {cid}");
                if !to_diamond.contains(&edge) {
                    lines.push(format!("{indent}{edge}"));
                    to_diamond.push(edge);
                }
            }
            let label = simplify_condition(cond);
            lines.push(format!(
                "{indent}{cid} -> {} [label={}]",
                nd.nid,
                q(take_chars(&label, 25))
            ));
            // Block-local: inside a stage a skip with no later unconditional step goes to
            // `done`, not to the next stage.
            let target = defs[i + 1..]
                .iter()
                .find(|d| d.condition.is_none())
                .map_or("done", |d| d.nid.as_str())
                .to_string();
            let skip = (cid, target);
            if !skip_edges.contains(&skip) {
                skip_edges.push(skip);
            }
        } else {
            for src in &sources {
                lines.push(format!("{indent}{src} -> {}", nd.nid));
            }
            last_uncond = nd.nid.clone();
        }
        if nd.while_loop {
            lines.push(format!(
                "{indent}{0} -> {0} [label=\"loop\", style=dashed, color=\"{COLOR_CLUSTER_BORDER}\"]",
                nd.nid
            ));
        }
    }
    for (cid, target) in skip_edges {
        lines.push(format!(
            "{indent}{cid} -> {target} [label=\"skip\", style=dashed]"
        ));
    }
    Ok((lines.join("\n"), last_uncond))
}

fn render_staged(stages: Py, used: &mut Used) -> Result<(String, String), String> {
    if !stages.truthy() {
        return Ok(("    start -> done".into(), "start".into()));
    }
    let Py::List(stages) = stages else {
        return Err(format!(
            "`stages` must be a list, found {} (the reference tool crashes here)",
            stages.type_name()
        ));
    };
    let mut lines = Vec::new();
    let mut prev = "start".to_string();
    for (i, stage) in stages.iter().enumerate() {
        if stage.as_map().is_none() {
            return Err(format!(
                "stage {i} must be a mapping, found {} (the reference tool crashes here)",
                py(stage).type_name()
            ));
        }
        let name = field(stage, "name");
        let sname = if name.truthy() {
            text(name, &format!("`name` of stage {i}"))?.to_string()
        } else {
            format!("stage_{i}")
        };
        let sid = sanitize(&sname);
        let approval = field(stage, "approval");
        let required = match approval {
            _ if !approval.truthy() => false,
            Py::Dict(a) => field(a, "required").truthy(),
            other => {
                return Err(format!(
                    "`approval` of stage {i} must be a mapping, found {} (the reference tool crashes here)",
                    other.type_name()
                ))
            }
        };
        // The gate is drawn before the stage that owns it (the engine pauses after it): the
        // reference's drawing, kept.
        if let Py::Dict(a) = approval {
            if required {
                used.approval = true;
                let prompt = field(a, "prompt");
                let tooltip = if prompt.truthy() {
                    let p = text(prompt, &format!("`approval.prompt` of stage {i}"))?;
                    format!(", tooltip={}", q(&take_chars(p, 100).replace('\n', " ")))
                } else {
                    String::new()
                };
                let gate = format!("gate_{sid}");
                lines.push(format!(
                    "    {gate} [label={}, shape=diamond, fillcolor=\"{COLOR_APPROVAL}\"{tooltip}]",
                    q("Human\nApproves?")
                ));
                lines.push(format!("    {prev} -> {gate}"));
                prev = gate;
            }
        }
        let label = q(&title_case(&sname));
        lines.push(format!("    subgraph cluster_{sid} {{"));
        lines.push(format!("        label={label}"));
        lines.push("        style=\"filled,rounded\"".into());
        lines.push(format!("        fillcolor=\"{COLOR_CLUSTER_FILL}\""));
        lines.push(format!("        color=\"{COLOR_CLUSTER_BORDER}\""));
        lines.push(String::new());
        let steps = field(stage, "steps");
        if steps.truthy() {
            let what = format!("`steps` of stage {i}");
            let steps = step_nodes(steps, &what)?;
            let (block, last) = render_steps_block(steps, &prev, "        ", used)?;
            lines.push(block);
            lines.push("    }".into());
            prev = last;
        } else {
            // An invisible placeholder keeps an empty cluster drawn.
            let ph = format!("ph_{sid}");
            lines.push(format!("        {ph} [label={label}, style=invis]"));
            lines.push("    }".into());
            lines.push(format!("    {prev} -> {ph} [style=invis]"));
            prev = ph;
        }
        lines.push(String::new());
    }
    Ok((lines.join("\n"), prev))
}

fn legend(used: &Used) -> String {
    let entries = [
        (used.bash, "leg_bash", "Script Step", "box", COLOR_BASH, ""),
        (
            used.agent,
            "leg_agent",
            "AI Agent Step",
            "box",
            COLOR_AGENT,
            "",
        ),
        (
            used.recipe,
            "leg_sub",
            "Sub-Recipe Call",
            "box",
            COLOR_RECIPE,
            ", style=\"filled,rounded,dashed\"",
        ),
        (
            used.condition,
            "leg_cond",
            "Condition",
            "diamond",
            COLOR_CONDITION,
            "",
        ),
        (
            used.approval,
            "leg_gate",
            "Approval Gate",
            "diamond",
            COLOR_APPROVAL,
            "",
        ),
        (
            true,
            "leg_start",
            "Start / End",
            "oval",
            COLOR_START_END,
            "",
        ),
    ];
    let mut lines = vec![
        "    subgraph cluster_legend {".to_string(),
        "        label=\"Legend\"".into(),
        "        style=\"filled,rounded\"".into(),
        "        fillcolor=\"white\"".into(),
        "        color=\"#cccccc\"".into(),
        "        fontsize=10".into(),
        "        node [shape=box, fontsize=9, width=1.6]".into(),
    ];
    let mut ids = Vec::new();
    for (on, id, label, shape, fill, extra) in entries {
        if on {
            lines.push(format!(
                "        {id} [label={}, shape={shape}, fillcolor=\"{fill}\"{extra}]",
                q(label)
            ));
            ids.push(id);
        }
    }
    if ids.len() > 1 {
        lines.push(format!("        {} [style=invis]", ids.join(" -> ")));
    }
    lines.push("    }".into());
    lines.join("\n")
}

// ── Unicode tables ───────────────────────────────────────────────────────────────────────────

/// Characters `char::is_alphanumeric` accepts that Python's `\w` does not: combining marks
/// (Mn, Mc) and symbols (So) with the Other_Alphabetic property. Generated with Python 3.11
/// (Unicode 14) against Rust's tables; characters assigned after Unicode 14 are left out.
const NOT_PY_WORD: &[(char, char)] = &[
    ('\u{345}', '\u{345}'),
    ('\u{363}', '\u{36f}'),
    ('\u{5b0}', '\u{5bd}'),
    ('\u{5bf}', '\u{5bf}'),
    ('\u{5c1}', '\u{5c2}'),
    ('\u{5c4}', '\u{5c5}'),
    ('\u{5c7}', '\u{5c7}'),
    ('\u{610}', '\u{61a}'),
    ('\u{64b}', '\u{657}'),
    ('\u{659}', '\u{65f}'),
    ('\u{670}', '\u{670}'),
    ('\u{6d6}', '\u{6dc}'),
    ('\u{6e1}', '\u{6e4}'),
    ('\u{6e7}', '\u{6e8}'),
    ('\u{6ed}', '\u{6ed}'),
    ('\u{711}', '\u{711}'),
    ('\u{730}', '\u{73f}'),
    ('\u{7a6}', '\u{7b0}'),
    ('\u{816}', '\u{817}'),
    ('\u{81b}', '\u{823}'),
    ('\u{825}', '\u{827}'),
    ('\u{829}', '\u{82c}'),
    ('\u{8d4}', '\u{8df}'),
    ('\u{8e3}', '\u{8e9}'),
    ('\u{8f0}', '\u{903}'),
    ('\u{93a}', '\u{93b}'),
    ('\u{93e}', '\u{94c}'),
    ('\u{94e}', '\u{94f}'),
    ('\u{955}', '\u{957}'),
    ('\u{962}', '\u{963}'),
    ('\u{981}', '\u{983}'),
    ('\u{9be}', '\u{9c4}'),
    ('\u{9c7}', '\u{9c8}'),
    ('\u{9cb}', '\u{9cc}'),
    ('\u{9d7}', '\u{9d7}'),
    ('\u{9e2}', '\u{9e3}'),
    ('\u{a01}', '\u{a03}'),
    ('\u{a3e}', '\u{a42}'),
    ('\u{a47}', '\u{a48}'),
    ('\u{a4b}', '\u{a4c}'),
    ('\u{a51}', '\u{a51}'),
    ('\u{a70}', '\u{a71}'),
    ('\u{a75}', '\u{a75}'),
    ('\u{a81}', '\u{a83}'),
    ('\u{abe}', '\u{ac5}'),
    ('\u{ac7}', '\u{ac9}'),
    ('\u{acb}', '\u{acc}'),
    ('\u{ae2}', '\u{ae3}'),
    ('\u{afa}', '\u{afc}'),
    ('\u{b01}', '\u{b03}'),
    ('\u{b3e}', '\u{b44}'),
    ('\u{b47}', '\u{b48}'),
    ('\u{b4b}', '\u{b4c}'),
    ('\u{b56}', '\u{b57}'),
    ('\u{b62}', '\u{b63}'),
    ('\u{b82}', '\u{b82}'),
    ('\u{bbe}', '\u{bc2}'),
    ('\u{bc6}', '\u{bc8}'),
    ('\u{bca}', '\u{bcc}'),
    ('\u{bd7}', '\u{bd7}'),
    ('\u{c00}', '\u{c04}'),
    ('\u{c3e}', '\u{c44}'),
    ('\u{c46}', '\u{c48}'),
    ('\u{c4a}', '\u{c4c}'),
    ('\u{c55}', '\u{c56}'),
    ('\u{c62}', '\u{c63}'),
    ('\u{c81}', '\u{c83}'),
    ('\u{cbe}', '\u{cc4}'),
    ('\u{cc6}', '\u{cc8}'),
    ('\u{cca}', '\u{ccc}'),
    ('\u{cd5}', '\u{cd6}'),
    ('\u{ce2}', '\u{ce3}'),
    ('\u{d00}', '\u{d03}'),
    ('\u{d3e}', '\u{d44}'),
    ('\u{d46}', '\u{d48}'),
    ('\u{d4a}', '\u{d4c}'),
    ('\u{d57}', '\u{d57}'),
    ('\u{d62}', '\u{d63}'),
    ('\u{d81}', '\u{d83}'),
    ('\u{dcf}', '\u{dd4}'),
    ('\u{dd6}', '\u{dd6}'),
    ('\u{dd8}', '\u{ddf}'),
    ('\u{df2}', '\u{df3}'),
    ('\u{e31}', '\u{e31}'),
    ('\u{e34}', '\u{e3a}'),
    ('\u{e4d}', '\u{e4d}'),
    ('\u{eb1}', '\u{eb1}'),
    ('\u{eb4}', '\u{eb9}'),
    ('\u{ebb}', '\u{ebc}'),
    ('\u{ecd}', '\u{ecd}'),
    ('\u{f71}', '\u{f83}'),
    ('\u{f8d}', '\u{f97}'),
    ('\u{f99}', '\u{fbc}'),
    ('\u{102b}', '\u{1036}'),
    ('\u{1038}', '\u{1038}'),
    ('\u{103b}', '\u{103e}'),
    ('\u{1056}', '\u{1059}'),
    ('\u{105e}', '\u{1060}'),
    ('\u{1062}', '\u{1064}'),
    ('\u{1067}', '\u{106d}'),
    ('\u{1071}', '\u{1074}'),
    ('\u{1082}', '\u{108d}'),
    ('\u{108f}', '\u{108f}'),
    ('\u{109a}', '\u{109d}'),
    ('\u{1712}', '\u{1713}'),
    ('\u{1732}', '\u{1733}'),
    ('\u{1752}', '\u{1753}'),
    ('\u{1772}', '\u{1773}'),
    ('\u{17b6}', '\u{17c8}'),
    ('\u{1885}', '\u{1886}'),
    ('\u{18a9}', '\u{18a9}'),
    ('\u{1920}', '\u{192b}'),
    ('\u{1930}', '\u{1938}'),
    ('\u{1a17}', '\u{1a1b}'),
    ('\u{1a55}', '\u{1a5e}'),
    ('\u{1a61}', '\u{1a74}'),
    ('\u{1abf}', '\u{1ac0}'),
    ('\u{1acc}', '\u{1ace}'),
    ('\u{1b00}', '\u{1b04}'),
    ('\u{1b35}', '\u{1b43}'),
    ('\u{1b80}', '\u{1b82}'),
    ('\u{1ba1}', '\u{1ba9}'),
    ('\u{1bac}', '\u{1bad}'),
    ('\u{1be7}', '\u{1bf1}'),
    ('\u{1c24}', '\u{1c36}'),
    ('\u{1dd3}', '\u{1df4}'),
    ('\u{24b6}', '\u{24e9}'),
    ('\u{2de0}', '\u{2dff}'),
    ('\u{a674}', '\u{a67b}'),
    ('\u{a69e}', '\u{a69f}'),
    ('\u{a802}', '\u{a802}'),
    ('\u{a80b}', '\u{a80b}'),
    ('\u{a823}', '\u{a827}'),
    ('\u{a880}', '\u{a881}'),
    ('\u{a8b4}', '\u{a8c3}'),
    ('\u{a8c5}', '\u{a8c5}'),
    ('\u{a8ff}', '\u{a8ff}'),
    ('\u{a926}', '\u{a92a}'),
    ('\u{a947}', '\u{a952}'),
    ('\u{a980}', '\u{a983}'),
    ('\u{a9b4}', '\u{a9bf}'),
    ('\u{a9e5}', '\u{a9e5}'),
    ('\u{aa29}', '\u{aa36}'),
    ('\u{aa43}', '\u{aa43}'),
    ('\u{aa4c}', '\u{aa4d}'),
    ('\u{aa7b}', '\u{aa7d}'),
    ('\u{aab0}', '\u{aab0}'),
    ('\u{aab2}', '\u{aab4}'),
    ('\u{aab7}', '\u{aab8}'),
    ('\u{aabe}', '\u{aabe}'),
    ('\u{aaeb}', '\u{aaef}'),
    ('\u{aaf5}', '\u{aaf5}'),
    ('\u{abe3}', '\u{abea}'),
    ('\u{fb1e}', '\u{fb1e}'),
    ('\u{10376}', '\u{1037a}'),
    ('\u{10a01}', '\u{10a03}'),
    ('\u{10a05}', '\u{10a06}'),
    ('\u{10a0c}', '\u{10a0f}'),
    ('\u{10d24}', '\u{10d27}'),
    ('\u{10eab}', '\u{10eac}'),
    ('\u{11000}', '\u{11002}'),
    ('\u{11038}', '\u{11045}'),
    ('\u{11073}', '\u{11074}'),
    ('\u{11080}', '\u{11082}'),
    ('\u{110b0}', '\u{110b8}'),
    ('\u{110c2}', '\u{110c2}'),
    ('\u{11100}', '\u{11102}'),
    ('\u{11127}', '\u{11132}'),
    ('\u{11145}', '\u{11146}'),
    ('\u{11180}', '\u{11182}'),
    ('\u{111b3}', '\u{111bf}'),
    ('\u{111ce}', '\u{111cf}'),
    ('\u{1122c}', '\u{11234}'),
    ('\u{11237}', '\u{11237}'),
    ('\u{1123e}', '\u{1123e}'),
    ('\u{112df}', '\u{112e8}'),
    ('\u{11300}', '\u{11303}'),
    ('\u{1133e}', '\u{11344}'),
    ('\u{11347}', '\u{11348}'),
    ('\u{1134b}', '\u{1134c}'),
    ('\u{11357}', '\u{11357}'),
    ('\u{11362}', '\u{11363}'),
    ('\u{11435}', '\u{11441}'),
    ('\u{11443}', '\u{11445}'),
    ('\u{114b0}', '\u{114c1}'),
    ('\u{115af}', '\u{115b5}'),
    ('\u{115b8}', '\u{115be}'),
    ('\u{115dc}', '\u{115dd}'),
    ('\u{11630}', '\u{1163e}'),
    ('\u{11640}', '\u{11640}'),
    ('\u{116ab}', '\u{116b5}'),
    ('\u{1171d}', '\u{1172a}'),
    ('\u{1182c}', '\u{11838}'),
    ('\u{11930}', '\u{11935}'),
    ('\u{11937}', '\u{11938}'),
    ('\u{1193b}', '\u{1193c}'),
    ('\u{11940}', '\u{11940}'),
    ('\u{11942}', '\u{11942}'),
    ('\u{119d1}', '\u{119d7}'),
    ('\u{119da}', '\u{119df}'),
    ('\u{119e4}', '\u{119e4}'),
    ('\u{11a01}', '\u{11a0a}'),
    ('\u{11a35}', '\u{11a39}'),
    ('\u{11a3b}', '\u{11a3e}'),
    ('\u{11a51}', '\u{11a5b}'),
    ('\u{11a8a}', '\u{11a97}'),
    ('\u{11c2f}', '\u{11c36}'),
    ('\u{11c38}', '\u{11c3e}'),
    ('\u{11c92}', '\u{11ca7}'),
    ('\u{11ca9}', '\u{11cb6}'),
    ('\u{11d31}', '\u{11d36}'),
    ('\u{11d3a}', '\u{11d3a}'),
    ('\u{11d3c}', '\u{11d3d}'),
    ('\u{11d3f}', '\u{11d41}'),
    ('\u{11d43}', '\u{11d43}'),
    ('\u{11d47}', '\u{11d47}'),
    ('\u{11d8a}', '\u{11d8e}'),
    ('\u{11d90}', '\u{11d91}'),
    ('\u{11d93}', '\u{11d96}'),
    ('\u{11ef3}', '\u{11ef6}'),
    ('\u{16f4f}', '\u{16f4f}'),
    ('\u{16f51}', '\u{16f87}'),
    ('\u{16f8f}', '\u{16f92}'),
    ('\u{16ff0}', '\u{16ff1}'),
    ('\u{1bc9e}', '\u{1bc9e}'),
    ('\u{1e000}', '\u{1e006}'),
    ('\u{1e008}', '\u{1e018}'),
    ('\u{1e01b}', '\u{1e021}'),
    ('\u{1e023}', '\u{1e024}'),
    ('\u{1e026}', '\u{1e02a}'),
    ('\u{1e947}', '\u{1e947}'),
    ('\u{1f130}', '\u{1f149}'),
    ('\u{1f150}', '\u{1f169}'),
    ('\u{1f170}', '\u{1f189}'),
];
/// Where Python's `str.isdigit` is true (Nd and the other Numeric_Type=Digit characters such
/// as superscripts), generated with Python 3.11 (Unicode 14).
const PY_DIGITS: &[(char, char)] = &[
    ('\u{30}', '\u{39}'),
    ('\u{b2}', '\u{b3}'),
    ('\u{b9}', '\u{b9}'),
    ('\u{660}', '\u{669}'),
    ('\u{6f0}', '\u{6f9}'),
    ('\u{7c0}', '\u{7c9}'),
    ('\u{966}', '\u{96f}'),
    ('\u{9e6}', '\u{9ef}'),
    ('\u{a66}', '\u{a6f}'),
    ('\u{ae6}', '\u{aef}'),
    ('\u{b66}', '\u{b6f}'),
    ('\u{be6}', '\u{bef}'),
    ('\u{c66}', '\u{c6f}'),
    ('\u{ce6}', '\u{cef}'),
    ('\u{d66}', '\u{d6f}'),
    ('\u{de6}', '\u{def}'),
    ('\u{e50}', '\u{e59}'),
    ('\u{ed0}', '\u{ed9}'),
    ('\u{f20}', '\u{f29}'),
    ('\u{1040}', '\u{1049}'),
    ('\u{1090}', '\u{1099}'),
    ('\u{1369}', '\u{1371}'),
    ('\u{17e0}', '\u{17e9}'),
    ('\u{1810}', '\u{1819}'),
    ('\u{1946}', '\u{194f}'),
    ('\u{19d0}', '\u{19da}'),
    ('\u{1a80}', '\u{1a89}'),
    ('\u{1a90}', '\u{1a99}'),
    ('\u{1b50}', '\u{1b59}'),
    ('\u{1bb0}', '\u{1bb9}'),
    ('\u{1c40}', '\u{1c49}'),
    ('\u{1c50}', '\u{1c59}'),
    ('\u{2070}', '\u{2070}'),
    ('\u{2074}', '\u{2079}'),
    ('\u{2080}', '\u{2089}'),
    ('\u{2460}', '\u{2468}'),
    ('\u{2474}', '\u{247c}'),
    ('\u{2488}', '\u{2490}'),
    ('\u{24ea}', '\u{24ea}'),
    ('\u{24f5}', '\u{24fd}'),
    ('\u{24ff}', '\u{24ff}'),
    ('\u{2776}', '\u{277e}'),
    ('\u{2780}', '\u{2788}'),
    ('\u{278a}', '\u{2792}'),
    ('\u{a620}', '\u{a629}'),
    ('\u{a8d0}', '\u{a8d9}'),
    ('\u{a900}', '\u{a909}'),
    ('\u{a9d0}', '\u{a9d9}'),
    ('\u{a9f0}', '\u{a9f9}'),
    ('\u{aa50}', '\u{aa59}'),
    ('\u{abf0}', '\u{abf9}'),
    ('\u{ff10}', '\u{ff19}'),
    ('\u{104a0}', '\u{104a9}'),
    ('\u{10a40}', '\u{10a43}'),
    ('\u{10d30}', '\u{10d39}'),
    ('\u{10e60}', '\u{10e68}'),
    ('\u{11052}', '\u{1105a}'),
    ('\u{11066}', '\u{1106f}'),
    ('\u{110f0}', '\u{110f9}'),
    ('\u{11136}', '\u{1113f}'),
    ('\u{111d0}', '\u{111d9}'),
    ('\u{112f0}', '\u{112f9}'),
    ('\u{11450}', '\u{11459}'),
    ('\u{114d0}', '\u{114d9}'),
    ('\u{11650}', '\u{11659}'),
    ('\u{116c0}', '\u{116c9}'),
    ('\u{11730}', '\u{11739}'),
    ('\u{118e0}', '\u{118e9}'),
    ('\u{11950}', '\u{11959}'),
    ('\u{11c50}', '\u{11c59}'),
    ('\u{11d50}', '\u{11d59}'),
    ('\u{11da0}', '\u{11da9}'),
    ('\u{16a60}', '\u{16a69}'),
    ('\u{16ac0}', '\u{16ac9}'),
    ('\u{16b50}', '\u{16b59}'),
    ('\u{1d7ce}', '\u{1d7ff}'),
    ('\u{1e140}', '\u{1e149}'),
    ('\u{1e2f0}', '\u{1e2f9}'),
    ('\u{1e950}', '\u{1e959}'),
    ('\u{1f100}', '\u{1f10a}'),
    ('\u{1fbf0}', '\u{1fbf9}'),
];
