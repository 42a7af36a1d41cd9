//! The leaf steps and call/match/fold.

use super::{Frame, Interp};
use indexmap::IndexMap;
use pipewright_ir::{
    Arg, ArgValue, CallRef, Expr, ListSource, Node, NodeKind, OnError, OnErrorKind, Region,
};
use pipewright_r1::Value;
use pipewright_runtime::backend::AgentRequest;
use pipewright_runtime::codes;
use pipewright_runtime::failure::{Failure, RunError};
use pipewright_runtime::tools;
use pipewright_runtime::value::python_str;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Interp {
    pub(crate) async fn dispatch(
        &self,
        node: &Node,
        frame: &Frame,
        key: &str,
    ) -> Result<Value, Failure> {
        match &node.kind {
            NodeKind::Transform { value } => self.eval(node, key, frame, value, None),
            NodeKind::Tool {
                name,
                args,
                schema,
                on_error,
            } => {
                self.tool(
                    node,
                    frame,
                    key,
                    name,
                    ToolArgs::Named(args),
                    schema.as_deref(),
                    *on_error,
                )
                .await
            }
            NodeKind::Shell(shell) => {
                let pipewright_ir::Shell {
                    command,
                    schema,
                    on_error,
                } = &**shell;
                self.tool(
                    node,
                    frame,
                    key,
                    "shell",
                    ToolArgs::Command(command),
                    schema.as_deref(),
                    *on_error,
                )
                .await
            }
            NodeKind::Agent(agent) => {
                let pipewright_ir::Agent {
                    prompt,
                    identity,
                    capabilities,
                    schema,
                    model,
                } = &**agent;
                let identity = identity
                    .clone()
                    .filter(|i| !i.is_empty())
                    .unwrap_or_else(|| self.identity.clone());
                let prev = self.spawns.fetch_add(1, Ordering::SeqCst);
                if self.caps.max_spawns > 0 && prev >= self.caps.max_spawns {
                    return Err(self
                        .fail(codes::SPAWNS, key, node, format!("would exceed the per-run agent spawn cap ({0}): {0} agent session(s) already spawned this run", self.caps.max_spawns))
                        .into());
                }
                self.record_spawns(prev + 1)
                    .map_err(|msg| self.fail(codes::STORE, key, node, msg))?;
                let text = self.render_prompt(node, key, frame, prompt)?;
                let tools = narrow(
                    capabilities.as_deref(),
                    self.envelope.as_deref(),
                    &self.tools.names(),
                );
                let schema_def = match schema {
                    Some(name) => Some(self.schema(node, key, frame, name)?),
                    None => None,
                };
                let req = AgentRequest {
                    run_id: self.session.run_id().to_string(),
                    step: key.to_string(),
                    workflow: self
                        .program
                        .workflow(frame.workflow)
                        .map(|w| w.name.clone())
                        .unwrap_or_default(),
                    prompt: text,
                    identity,
                    tools,
                    schema_name: schema.clone(),
                    schema: schema_def
                        .as_ref()
                        .map(|(s, set)| pipewright_runtime::schema::json_schema(s, set)),
                    model: model.clone(),
                    mode: None,
                    shape: None,
                };
                let reply = self.backend.complete(&req).await.map_err(|e| {
                    self.fail(
                        codes::AGENT,
                        key,
                        node,
                        format!("the {} backend failed: {}", self.backend.name(), e.message),
                    )
                    .with_raw(e.message)
                })?;
                match schema_def {
                    None => Ok(Value::Str(reply)),
                    Some((s, set)) => {
                        let json = parse_reply(&reply).map_err(|e| {
                            self.fail(codes::SCHEMA, key, node, format!("the reply is not JSON ({e}), but the step declares schema `{}`", s.name)).with_value(Value::Str(reply.clone()))
                        })?;
                        let v = Value::from_json(&json);
                        let errors = pipewright_runtime::schema::validate(&v, s, set);
                        if errors.is_empty() {
                            Ok(v)
                        } else {
                            Err(self
                                .fail(
                                    codes::SCHEMA,
                                    key,
                                    node,
                                    format!(
                                        "the reply does not conform to schema `{}`: {}",
                                        s.name,
                                        errors.join("; ")
                                    ),
                                )
                                .with_value(v)
                                .into())
                        }
                    }
                }
            }
            NodeKind::Call(c) => self.call(node, frame, key, c, "call").await,
            NodeKind::Match(matching) => {
                let pipewright_ir::Match { on, cases, default } = &**matching;
                let v = self.eval(node, key, frame, on, Some("'on'"))?;
                let label = python_str(&v);
                let target = cases
                    .iter()
                    .find(|c| c.selectable && c.label == label)
                    .map(|c| &c.target)
                    .or(default.as_ref());
                match target {
                    Some(t) => self.call(node, frame, key, t, "match").await,
                    None => {
                        let labels: Vec<String> =
                            cases.iter().map(|c| format!("'{}'", c.label)).collect();
                        Err(self
                            .fail(codes::CALL, key, node, format!("value {} (label '{label}') matched no case in [{}] and no 'default' was given", v.to_json_string(), labels.join(", ")))
                            .at(on.span)
                            .with_value(v)
                            .into())
                    }
                }
            }
            NodeKind::Fold(fold) => {
                let pipewright_ir::Fold {
                    source,
                    init,
                    body,
                    max_items,
                } = &**fold;
                self.fold(node, frame, key, source, init, body, *max_items)
                    .await
            }
            NodeKind::ForEach(each) => {
                let pipewright_ir::ForEach {
                    source,
                    max_parallel,
                    on_error,
                    body,
                    collect,
                } = &**each;
                self.for_each(
                    node,
                    frame,
                    key,
                    source,
                    *max_parallel,
                    *on_error,
                    body,
                    collect,
                )
                .await
            }
            NodeKind::Parallel {
                on_error,
                branches,
                collect,
            } => {
                self.parallel(node, frame, key, *on_error, branches, collect)
                    .await
            }
            other => Err(self
                .fail(
                    codes::UNSUPPORTED,
                    key,
                    node,
                    format!(
                        "`{}` nodes belong to a dialect whose runtime is not implemented yet",
                        other.name()
                    ),
                )
                .into()),
        }
    }

    /// Evaluates an expression; failures point at the failing sub-expression.
    pub(crate) fn eval(
        &self,
        node: &Node,
        key: &str,
        frame: &Frame,
        e: &Expr,
        what: Option<&str>,
    ) -> Result<Value, Failure> {
        let Some(ast) = e.as_r1() else {
            return Err(self.fail(codes::EVAL, key, node, not_r1(e)).into());
        };
        let scope = frame.scope();
        pipewright_r1::eval_until(ast, &scope, &self.caps.eval, self.cancel.flag()).map_err(|err| {
            if self.cancel.is_cancelled() {
                // Stopped by the cancel (or failed while the run was stopping): not a failure
                // of the step, which a resume evaluates again.
                return Failure::Cancelled {
                    key: key.to_string(),
                };
            }
            let msg = match what {
                Some(w) => format!("{w} failed: {}", err.message),
                None => err.message.clone(),
            };
            let reads = reads_within(ast, &err.range, &scope);
            self.fail(codes::EVAL, key, node, msg)
                .with_raw(err.message)
                .at(self.expr_span(e, err.range))
                .with_reads(reads)
                .into()
        })
    }

    fn schema<'p>(
        &'p self,
        node: &Node,
        key: &str,
        frame: &Frame,
        name: &str,
    ) -> Result<(&'p pipewright_ir::Schema, &'p pipewright_ir::SchemaSet), Failure> {
        let set = self
            .program
            .workflow(frame.workflow)
            .and_then(|w| self.program.schemas_of(w));
        match set.and_then(|set| set.get(name).map(|s| (s, set))) {
            Some(found) => Ok(found),
            None => Err(self
                .fail(
                    codes::SCHEMA,
                    key,
                    node,
                    format!("schema `{name}` is not declared in this file"),
                )
                .into()),
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn tool(
        &self,
        node: &Node,
        frame: &Frame,
        key: &str,
        name: &str,
        args: ToolArgs<'_>,
        schema: Option<&str>,
        on_error: Option<OnError>,
    ) -> Result<Value, Failure> {
        let policy = on_error.map(|o| o.kind);
        let attempts = match policy {
            Some(OnErrorKind::Retry(n)) => n as usize + 1,
            _ => 1,
        };
        let mut last = None;
        for _ in 0..attempts {
            if self.cancel.is_cancelled() {
                return Err(Failure::Cancelled {
                    key: key.to_string(),
                });
            }
            let once = self.tool_once(node, frame, key, name, &args, schema).await;
            let failed = once.as_ref().map_or(true, tools::is_error);
            if failed && self.cancel.is_cancelled() {
                // An argument whose evaluation the cancel stopped: the step is cancelled, not
                // failed (and never an error envelope landed under `continue`).
                return Err(Failure::Cancelled {
                    key: key.to_string(),
                });
            }
            match once {
                Ok(v)
                    if tools::is_error(&v)
                        && matches!(policy, Some(OnErrorKind::Abort | OnErrorKind::Retry(_))) =>
                {
                    let text = v
                        .as_object()
                        .and_then(|o| o.get("text"))
                        .and_then(Value::as_str)
                        .unwrap_or("error")
                        .to_string();
                    last = Some(
                        self.fail(
                            codes::TOOL,
                            key,
                            node,
                            format!("tool `{name}` reported an error: {text}"),
                        )
                        .with_raw(text)
                        .with_value(v),
                    );
                }
                Ok(v) => return Ok(v),
                Err(e) => last = Some(*e),
            }
        }
        let mut e =
            last.unwrap_or_else(|| self.fail(codes::TOOL, key, node, "the tool did not run"));
        match policy {
            // The envelope is data the pipeline reads: the raw error, as the reference binds it.
            Some(OnErrorKind::Continue) => Ok(tools::error_envelope(e.raw_text())),
            Some(p) => {
                e.raw = Some(e.raw_text().to_string());
                e.message = format!(
                    "{} (on_error='{}')",
                    e.message,
                    pipewright_ir::on_error_text(p)
                );
                Err(e.into())
            }
            None => Err(e.into()),
        }
    }

    async fn tool_once(
        &self,
        node: &Node,
        frame: &Frame,
        key: &str,
        name: &str,
        args: &ToolArgs<'_>,
        schema: Option<&str>,
    ) -> Result<Value, Box<RunError>> {
        let unwrap = |f: Failure| match f {
            Failure::Step(e) => e,
            Failure::Cancelled { .. } => Box::new(self.fail(codes::TOOL, key, node, "cancelled")),
        };
        let mut resolved = IndexMap::new();
        let mut put = |n: &str, v: &ArgValue| -> Result<(), Box<RunError>> {
            let value = self.arg_value(node, key, frame, n, v).map_err(unwrap)?;
            resolved.insert(n.to_string(), value);
            Ok(())
        };
        match args {
            ToolArgs::Named(list) => {
                for a in list.iter() {
                    put(&a.name, &a.value)?;
                }
            }
            ToolArgs::Command(c) => put("command", c)?,
        }
        let mut raw = self.tools.dispatch(name, &resolved).await.map_err(|e| {
            self.fail(codes::TOOL, key, node, e)
                .with_value(Value::Object(resolved.clone()))
        })?;
        if let Some(sname) = schema {
            let (s, set) = self.schema(node, key, frame, sname).map_err(unwrap)?;
            // Shell output is text; with a schema it is expected to be JSON.
            if let (Value::Str(text), "shell") = (&raw, name) {
                raw = serde_json::from_str::<serde_json::Value>(text.trim())
                    .map(|j| Value::from_json(&j))
                    .map_err(|e| self.fail(codes::SCHEMA, key, node, format!("the command's output is not JSON ({e}), but the step declares schema `{sname}`")).with_value(raw.clone()))?;
            }
            let errors = pipewright_runtime::schema::validate(&raw, s, set);
            if !errors.is_empty() {
                return Err(self
                    .fail(
                        codes::SCHEMA,
                        key,
                        node,
                        format!(
                            "tool `{name}` output failed schema `{sname}`: {}",
                            errors.join("; ")
                        ),
                    )
                    .with_value(raw)
                    .into());
            }
        }
        Ok(tools::normalise(raw))
    }

    async fn call(
        &self,
        node: &Node,
        frame: &Frame,
        key: &str,
        c: &CallRef,
        how: &str,
    ) -> Result<Value, Failure> {
        let calls = call_depth(key) + 1;
        let cap = self.caps.max_call_depth;
        if cap > 0 && calls > cap {
            return Err(self
                .fail(
                    codes::CALL_DEPTH,
                    key,
                    node,
                    format!(
                        "this {how} of `{}` would nest {calls} call/match frames, more than the cap of {cap} (`max_call_depth` under [run] in pipewright.toml; 0 = unlimited)",
                        c.target
                    ),
                )
                .at(c.span)
                .into());
        }
        let Some((wid, wf)) = c
            .resolved
            .and_then(|id| self.program.workflow(id).map(|w| (id, w)))
        else {
            return Err(self
                .fail(
                    codes::CALL,
                    key,
                    node,
                    format!("target pipeline '{}' is not in the loaded files", c.target),
                )
                .at(c.span)
                .into());
        };
        let mut stores = IndexMap::new();
        for (name, e) in &c.pass {
            let v = self.eval(
                node,
                key,
                frame,
                e,
                Some(&format!("pass: '{name}' = '{}'", e.src)),
            )?;
            stores.insert(name.clone(), v);
        }
        let callee = Frame {
            ctx: Arc::new(Value::Object(stores)),
            pipe: frame.pipe.clone(),
            item: None,
            acc: None,
            depth: frame.depth,
            workflow: wid,
        };
        let prefix = format!("{key}.{how}");
        let f = super::stack::GrowStack::new(self.exec_region(&wf.body, callee, &prefix))
            .await
            .map_err(|f| add_context(f, node, &format!("in {how} of `{}`", c.target)))?;
        Ok((*f.pipe).clone())
    }

    pub(crate) fn list(
        &self,
        node: &Node,
        frame: &Frame,
        key: &str,
        source: &ListSource,
    ) -> Result<Vec<Value>, Failure> {
        let (v, span) = match source {
            ListSource::Over(e) => (
                self.eval(node, key, frame, e, Some("'over'"))?,
                Some(e.span),
            ),
            ListSource::Items(v) => (v.clone(), None),
            ListSource::Pipe => ((*frame.pipe).clone(), None),
        };
        match v {
            Value::List(l) => Ok(l),
            other => {
                let mut e = self
                    .fail(
                        codes::LIST,
                        key,
                        node,
                        format!(
                            "list source resolved to a {}, not a list",
                            other.type_name()
                        ),
                    )
                    .with_value(other);
                if let Some(s) = span {
                    e = e.at(s);
                }
                Err(e.into())
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn fold(
        &self,
        node: &Node,
        frame: &Frame,
        key: &str,
        source: &ListSource,
        init: &Expr,
        body: &Region,
        max_items: Option<u64>,
    ) -> Result<Value, Failure> {
        let mut items = self.list(node, frame, key, source)?;
        if let Some(m) = max_items {
            items.truncate(usize::try_from(m).unwrap_or(usize::MAX));
        }
        let mut acc = self.eval(node, key, frame, init, Some("'init'"))?;
        let mut local = frame.clone();
        for (k, item) in items.into_iter().enumerate() {
            local.item = Some(Arc::new(item));
            local.acc = Some(Arc::new(acc));
            let (v, out) = self
                .exec_body(body, &local, format!("{key}.fold.{k}"))
                .await
                .map_err(|f| add_context(f, node, &format!("in fold iteration {k}")))?;
            if let Some(o) = out.filter(|o| !o.is_empty()) {
                local.write(&o, v.clone());
            }
            acc = v;
        }
        Ok(acc)
    }
}

/// The scope paths read inside `range` of an expression (the part that failed), each with
/// its current value; paths that do not resolve are left out. At most 8, first read first.
fn reads_within(
    ast: &pipewright_r1::Expr,
    range: &std::ops::Range<usize>,
    scope: &pipewright_r1::Scope<'_>,
) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for p in pipewright_r1::free_paths(ast) {
        if p.range.start < range.start || p.range.end > range.end {
            continue;
        }
        let Some(mut v) = scope.get(&p.root) else {
            continue;
        };
        let mut found = true;
        for seg in &p.segments {
            match v.as_object().and_then(|o| o.get(seg)) {
                Some(inner) => v = inner,
                None => {
                    found = false;
                    break;
                }
            }
        }
        let name = std::iter::once(p.root.as_str())
            .chain(p.segments.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(".");
        if found && !out.iter().any(|(n, _)| *n == name) {
            out.push((name, v.clone()));
        }
    }
    // `get(ctx, 'a.b', …)` reads `ctx` and `ctx.a.b`: keep the more precise one.
    let names: Vec<String> = out.iter().map(|(n, _)| format!("{n}.")).collect();
    out.retain(|(n, _)| {
        let prefix = format!("{n}.");
        !names
            .iter()
            .any(|m| m.len() > prefix.len() && m.starts_with(&prefix))
    });
    out.truncate(8);
    out
}

pub(crate) enum ToolArgs<'a> {
    Named(&'a [Arg]),
    Command(&'a ArgValue),
}

/// How many `call`/`match` frames enclose the step at `key`: its `call`/`match` segments
/// (`0.call.1.for_each.2.match.0` → 2). The segment after `parallel` is a branch name, which
/// may be any word, so it is skipped.
fn call_depth(key: &str) -> u64 {
    let mut n = 0;
    let mut segs = key.split('.');
    while let Some(s) = segs.next() {
        match s {
            "call" | "match" => n += 1,
            "parallel" => {
                segs.next();
            }
            _ => {}
        }
    }
    n
}

/// Adds "where" to a failure from a nested step, so the diagnostic shows the chain.
pub(crate) fn add_context(f: Failure, node: &Node, what: &str) -> Failure {
    match f {
        Failure::Step(mut e) => {
            e.context.push((node.kind_span, what.to_string()));
            Failure::Step(e)
        }
        other => other,
    }
}

/// Restrict-only: the step's tools, kept only if the invoker may use them.
fn narrow(step: Option<&[String]>, envelope: Option<&[String]>, all: &[String]) -> Vec<String> {
    let base: Vec<String> = match envelope {
        Some(e) => e.to_vec(),
        None => all.to_vec(),
    };
    match step {
        Some(s) => s.iter().filter(|t| base.contains(t)).cloned().collect(),
        None => base,
    }
}

/// Agents often wrap JSON in a Markdown fence; accept that, nothing looser.
fn parse_reply(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    let t = text.trim();
    let inner = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|r| r.trim_end().strip_suffix("```"))
        .unwrap_or(t);
    serde_json::from_str(inner.trim())
}

/// This interpreter evaluates the pipeline dialect's languages; another language reaching it is
/// a lowering bug, reported on the step rather than a panic.
pub(crate) fn not_r1(e: &Expr) -> String {
    format!(
        "internal error: a {} expression reached the R1 evaluator",
        e.lang.name()
    )
}

#[cfg(test)]
mod tests {
    use super::call_depth;

    #[test]
    fn call_depth_counts_call_and_match_frames_only() {
        assert_eq!(call_depth("0"), 0);
        assert_eq!(call_depth("0.call.1.for_each.2.match.0"), 2);
        assert_eq!(call_depth("3.parallel.call.call.0"), 1);
        assert_eq!(call_depth("3.parallel.match"), 0);
        assert_eq!(call_depth("0.fold.1.call.0.match.2.call.0"), 3);
    }
}
