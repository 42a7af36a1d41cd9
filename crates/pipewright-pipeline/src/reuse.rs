//! Loading an edited file from its previous load (the language server, issue 27): when an edit
//! lies inside one top-level step of a pipeline, only that step's lines are parsed again, and
//! the rest of the previous AST is kept, its spans moved by the edit's length. The result is
//! exactly what [`crate::load_source`] gives for the new text; anything this cannot be sure of
//! (an edit across steps, a previous load with diagnostics, a re-parsed step with any, anchors,
//! a step the text cannot be cut around) falls back to loading the whole text.

use crate::ast::{
    Arg, ArgValue, Branch, CallTarget, Expr, Field, FieldKind, FieldType, ListSource, MatchCase,
    Name, OnError, Pass, Pipeline, PipelineFile, Prompt, Schema, Step, StepKind,
};
use pipewright_syntax::{Diagnostic, FileId, Span};
use pipewright_yaml::{Node, NodeKind};
use std::sync::Arc;

/// A clean load of one version of a file, kept for loading the next version.
pub struct Kept {
    pub text: Arc<str>,
    pub file: PipelineFile,
}

/// Loads `text` as [`crate::load_source`] does, reusing `prev` (the load of an earlier text of
/// the same file, which had no diagnostics) where the edit allows it.
pub fn load_reusing(
    file: FileId,
    text: &str,
    prev: Option<Kept>,
    diags: &mut Vec<Diagnostic>,
) -> PipelineFile {
    if let Some(prev) = prev {
        if let Some(reused) = try_reuse(file, text, prev) {
            return reused;
        }
    }
    crate::load_source(file, text, diags)
}

/// The reusing path alone: `None` where [`load_reusing`] loads the whole text (public for the
/// tests that the common edits do reuse).
#[doc(hidden)]
pub fn try_reuse(file: FileId, text: &str, prev: Kept) -> Option<PipelineFile> {
    reuse(file, text, prev)
}

/// The byte range `[start, old_end)` of the old text became `[start, new_end)` of the new one.
#[derive(Debug, Clone, Copy)]
struct Edit {
    start: usize,
    old_end: usize,
    new_end: usize,
}

/// The smallest edit that turns `old` into `new`: their common prefix and suffix stay.
fn edit_between(old: &str, new: &str) -> Edit {
    let (o, n) = (old.as_bytes(), new.as_bytes());
    let prefix = common_prefix(o, n);
    let most = o.len().min(n.len()) - prefix;
    let suffix = common_suffix(&o[o.len() - most..], &n[n.len() - most..]);
    Edit {
        start: prefix,
        old_end: o.len() - suffix,
        new_end: n.len() - suffix,
    }
}

/// Compared a block at a time (`==` on slices is a `memcmp`), then byte by byte in the first
/// block that differs: a keystroke's check compares a whole document this way.
const BLOCK: usize = 256;

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let same_blocks = a
        .chunks(BLOCK)
        .zip(b.chunks(BLOCK))
        .take_while(|(x, y)| x == y)
        .count();
    // The last block may be short: the same blocks cover at most the shorter slice.
    let from = (same_blocks * BLOCK).min(a.len().min(b.len()));
    from + a[from..]
        .iter()
        .zip(&b[from..])
        .take_while(|(x, y)| x == y)
        .count()
}

fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let same_blocks = a
        .rchunks(BLOCK)
        .zip(b.rchunks(BLOCK))
        .take_while(|(x, y)| x == y)
        .count();
    let from = (same_blocks * BLOCK).min(a.len().min(b.len()));
    from + a[..a.len() - from]
        .iter()
        .rev()
        .zip(b[..b.len() - from].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

fn reuse(file: FileId, text: &str, prev: Kept) -> Option<PipelineFile> {
    let old: &str = &prev.text;
    if old == text {
        let mut f = prev.file;
        relocate_file(&mut f, &Move::none(file));
        return Some(f);
    }
    let edit = edit_between(old, text);
    let mut f = prev.file;
    // The step whose lines (from its `-` line to the next step's) the edit starts in.
    let p = f
        .pipelines
        .iter()
        .position(|pl| pl.span.start as usize <= edit.start && edit.start < pl.span.end as usize)?;
    let steps = &f.pipelines[p].steps;
    let after = steps.partition_point(|s| s.span.start as usize <= edit.start);
    let k = match steps.get(after) {
        Some(s) if item_start(old, s.span.start as usize)? <= edit.start => after,
        _ => after.checked_sub(1)?,
    };
    let region_start = item_start(old, steps[k].span.start as usize)?;
    let next = steps.get(k + 1)?;
    let region_end = item_start(old, next.span.start as usize)?;
    if edit.old_end >= region_end || edit.start < region_start {
        return None;
    }
    let delta = edit.new_end as i64 - edit.old_end as i64;
    let new_region_end = usize::try_from(region_end as i64 + delta).ok()?;
    let old_region = old.get(region_start..region_end)?;
    let new_region = text.get(region_start..new_region_end)?;
    // An anchor in the step could be aliased by a later one, whose AST holds what it named.
    if old_region.contains('&') || new_region.contains('&') {
        return None;
    }
    // The item must stay at its column: another one would not be an item of these steps.
    let dash = old
        .get(region_start..steps[k].span.start as usize)?
        .rfind('-')?;
    let line = old
        .get(..region_start + dash)?
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let column = region_start + dash - line;
    let step = load_step(file, text, region_start, new_region_end, column)?;
    let mv = Move {
        at: region_end,
        delta,
        file,
    };
    relocate_file(&mut f, &mv);
    f.pipelines[p].steps[k] = step;
    Some(f)
}

/// Where the line of a block sequence item starts, if `step_start` (its mapping) follows only
/// indentation and the item's `-` on that line.
fn item_start(text: &str, step_start: usize) -> Option<usize> {
    let before = text.get(..step_start)?;
    let line = before.rfind('\n').map_or(0, |i| i + 1);
    let lead = &before[line..];
    let rest = lead.trim_start_matches(' ').strip_prefix('-')?;
    (!rest.is_empty() && rest.bytes().all(|b| b == b' ')).then_some(line)
}

/// Parses the item in `text[start..end]` alone and loads it as a step, its spans then moved
/// to where the item is in the file; `None` unless that gives exactly one item, its `-` at
/// `column`, and one step, without any diagnostic.
fn load_step(file: FileId, text: &str, start: usize, end: usize, column: usize) -> Option<Step> {
    // `start` is a line's start: the item's columns, and so its parse, are the same alone.
    let region = text.get(start..end)?;
    let limits = pipewright_yaml::Limits::default();
    let (docs, yaml_diags) = pipewright_yaml::load(file, region, limits);
    if !yaml_diags.is_empty() || docs.len() != 1 {
        return None;
    }
    let root = docs.into_iter().next()?.root?;
    let NodeKind::Seq(items) = &root.kind else {
        return None;
    };
    let at = root.span.start as usize;
    let line = region.get(..at)?.rfind('\n').map_or(0, |i| i + 1);
    if at - line != column {
        return None;
    }
    let [item] = &items[..] else {
        return None;
    };
    // Alone, the item nests a few levels less deep than in its document (under the root
    // mapping and `steps:`): one near the nesting limit is left to the whole load, which
    // says whether it goes past it.
    if depth(item) + DEPTH_MARGIN >= limits.max_depth {
        return None;
    }
    let mut diags = Vec::new();
    let mut loaded = crate::load::Loader {
        source: region,
        diags: &mut diags,
    }
    .step(item, "step")?;
    if !diags.is_empty() {
        return None;
    }
    step(
        &mut loaded,
        &Move {
            at: 0,
            delta: i64::try_from(start).ok()?,
            file,
        },
    );
    Some(loaded)
}

/// More than the levels above a top-level step in its document (the root mapping, `steps`).
const DEPTH_MARGIN: usize = 4;

/// How many levels of collections `n` nests, itself included.
fn depth(n: &Node) -> usize {
    1 + match &n.kind {
        NodeKind::Scalar(_) => 0,
        NodeKind::Seq(items) => items.iter().map(depth).max().unwrap_or(0),
        NodeKind::Map(entries) => entries
            .iter()
            .map(|e| depth(&e.key).max(depth(&e.value)))
            .max()
            .unwrap_or(0),
    }
}

/// Positions at or after `at` move by `delta`; every span moves to `file`.
struct Move {
    at: usize,
    delta: i64,
    file: FileId,
}

impl Move {
    fn none(file: FileId) -> Move {
        Move {
            at: usize::MAX,
            delta: 0,
            file,
        }
    }

    fn pos(&self, p: u32) -> u32 {
        if (p as usize) < self.at {
            p
        } else {
            u32::try_from(i64::from(p) + self.delta).unwrap_or(u32::MAX)
        }
    }

    fn span(&self, s: &mut Span) {
        s.file = self.file;
        s.start = self.pos(s.start);
        s.end = self.pos(s.end);
    }
}

fn relocate_file(f: &mut PipelineFile, m: &Move) {
    f.file = m.file;
    for s in &mut f.schemas {
        schema(s, m);
    }
    for p in &mut f.pipelines {
        pipeline(p, m);
    }
}

fn schema(s: &mut Schema, m: &Move) {
    name(&mut s.name, m);
    m.span(&mut s.span);
    for f in &mut s.fields {
        field(f, m);
    }
}

fn field(f: &mut Field, m: &Move) {
    name(&mut f.name, m);
    field_type(&mut f.ty, m);
}

fn field_type(t: &mut FieldType, m: &Move) {
    m.span(&mut t.span);
    match &mut t.kind {
        FieldKind::List(inner) => field_type(inner, m),
        FieldKind::Object(fields) => fields.iter_mut().for_each(|f| field(f, m)),
        FieldKind::Ref(n) => name(n, m),
        FieldKind::Bool | FieldKind::String | FieldKind::Number { .. } | FieldKind::Enum(_) => {}
    }
}

fn pipeline(p: &mut Pipeline, m: &Move) {
    name(&mut p.name, m);
    m.span(&mut p.span);
    for s in &mut p.steps {
        step(s, m);
    }
}

fn name(n: &mut Name, m: &Move) {
    m.span(&mut n.span);
}

fn expr(e: &mut Expr, m: &Move) {
    // The expression's own tree is relative to its source: only the scalar moves.
    m.span(&mut e.span);
}

fn prompt(p: &mut Prompt, m: &Move) {
    m.span(&mut p.span);
}

fn node(n: &mut Node, m: &Move) {
    m.span(&mut n.span);
    match &mut n.kind {
        NodeKind::Scalar(_) => {}
        NodeKind::Seq(items) => items.iter_mut().for_each(|i| node(i, m)),
        NodeKind::Map(entries) => {
            for e in entries.iter_mut() {
                node(&mut e.key, m);
                node(&mut e.value, m);
            }
        }
    }
}

fn opt_name(n: &mut Option<Name>, m: &Move) {
    if let Some(n) = n {
        name(n, m);
    }
}

fn step(s: &mut Step, m: &Move) {
    m.span(&mut s.span);
    m.span(&mut s.kind_span);
    opt_name(&mut s.output, m);
    match &mut s.kind {
        StepKind::Transform { value } => expr(value, m),
        StepKind::Tool(t) => {
            name(&mut t.name, m);
            t.args.iter_mut().for_each(|a| arg(a, m));
            opt_name(&mut t.schema, m);
            opt_on_error(&mut t.on_error, m);
        }
        StepKind::Shell(sh) => {
            arg_value(&mut sh.command, m);
            opt_name(&mut sh.schema, m);
            opt_on_error(&mut sh.on_error, m);
        }
        StepKind::Agent(a) => {
            prompt(&mut a.prompt, m);
            opt_name(&mut a.identity, m);
            if let Some(caps) = &mut a.capabilities {
                caps.iter_mut().for_each(|c| name(c, m));
            }
            opt_name(&mut a.schema, m);
            opt_name(&mut a.model, m);
        }
        StepKind::Call(c) => call(c, m),
        StepKind::Match(ms) => {
            expr(&mut ms.on, m);
            for c in &mut ms.cases {
                case(c, m);
            }
            if let Some(d) = &mut ms.default {
                call(d, m);
            }
        }
        StepKind::Fold(fold) => {
            list_source(&mut fold.source, m);
            expr(&mut fold.init, m);
            step(&mut fold.body, m);
        }
        StepKind::ForEach(each) => {
            list_source(&mut each.source, m);
            on_error(&mut each.on_error, m);
            step(&mut each.body, m);
            step(&mut each.collect, m);
        }
        StepKind::Parallel {
            on_error: policy,
            branches,
            collect,
        } => {
            on_error(policy, m);
            branches.iter_mut().for_each(|b| branch(b, m));
            step(collect, m);
        }
    }
}

fn on_error(o: &mut OnError, m: &Move) {
    if let Some(s) = &mut o.span {
        m.span(s);
    }
}

fn opt_on_error(o: &mut Option<OnError>, m: &Move) {
    if let Some(o) = o {
        on_error(o, m);
    }
}

fn arg(a: &mut Arg, m: &Move) {
    name(&mut a.name, m);
    arg_value(&mut a.value, m);
}

fn arg_value(v: &mut ArgValue, m: &Move) {
    match v {
        ArgValue::Literal(n) => node(n, m),
        ArgValue::Expr(e) => expr(e, m),
    }
}

fn call(c: &mut CallTarget, m: &Move) {
    name(&mut c.pipeline, m);
    m.span(&mut c.span);
    for p in &mut c.pass {
        pass(p, m);
    }
}

fn pass(p: &mut Pass, m: &Move) {
    name(&mut p.name, m);
    expr(&mut p.value, m);
}

fn case(c: &mut MatchCase, m: &Move) {
    name(&mut c.label, m);
    call(&mut c.target, m);
}

fn list_source(s: &mut ListSource, m: &Move) {
    match s {
        ListSource::Over(e) => expr(e, m),
        ListSource::Items(n) => node(n, m),
        ListSource::Pipe => {}
    }
}

fn branch(b: &mut Branch, m: &Move) {
    name(&mut b.name, m);
    step(&mut b.step, m);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edit_is_the_difference_between_the_texts() {
        let e = edit_between("abcdef", "abXYef");
        assert_eq!((e.start, e.old_end, e.new_end), (2, 4, 4));
        let e = edit_between("aaa", "aaaa");
        assert_eq!((e.start, e.old_end, e.new_end), (3, 3, 4));
        let e = edit_between("abab", "ab");
        assert_eq!((e.start, e.old_end, e.new_end), (2, 4, 2));
        // Across block boundaries, from either end.
        let long = "x".repeat(3 * BLOCK + 7);
        for at in [
            0,
            1,
            BLOCK - 1,
            BLOCK,
            BLOCK + 1,
            2 * BLOCK + 3,
            long.len() - 1,
        ] {
            let mut edited = long.clone();
            edited.replace_range(at..at + 1, "yz");
            let e = edit_between(&long, &edited);
            assert_eq!(
                (e.start, e.old_end, e.new_end),
                (at, at + 1, at + 2),
                "{at}"
            );
            let e = edit_between(&edited, &long);
            assert_eq!(
                (e.start, e.old_end, e.new_end),
                (at, at + 2, at + 1),
                "{at}"
            );
        }
        let e = edit_between(&long, &long[..long.len() - BLOCK]);
        assert_eq!(e.start, long.len() - BLOCK);
        // Equal to the end: a short last block.
        let e = edit_between(&long, &format!("x{long}"));
        assert_eq!(
            (e.start, e.old_end, e.new_end),
            (long.len(), long.len(), long.len() + 1)
        );
        let e = edit_between(&long, &long);
        assert_eq!(
            (e.start, e.old_end, e.new_end),
            (long.len(), long.len(), long.len())
        );
    }

    #[test]
    fn an_item_starts_on_its_dash_line() {
        let t = "steps:\n  - transform: {}\n  -   x: 1\n  y: - z\n";
        assert_eq!(item_start(t, t.find("transform").unwrap_or(0)), Some(7));
        assert_eq!(item_start(t, t.find("x:").unwrap_or(0)), Some(25));
        assert_eq!(item_start(t, t.find("z").unwrap_or(0)), None);
        assert_eq!(item_start(t, t.find("steps").unwrap_or(0)), None);
    }
}
