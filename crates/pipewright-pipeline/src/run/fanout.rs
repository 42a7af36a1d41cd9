//! for_each and parallel: isolated per-item frames, bounded concurrency, results in
//! declaration order, continue/abort/retry(N), the fan-out depth cap.

use super::steps::add_context;
use super::{Frame, Interp};
use futures_util::stream::{FuturesUnordered, StreamExt};
use indexmap::IndexMap;
use pipewright_ir::{
    on_error_text, BranchRegion, ListSource, Node, NodeKind, OnError, OnErrorKind, Region,
};
use pipewright_r1::Value;
use pipewright_runtime::codes;
use pipewright_runtime::failure::Failure;
use pipewright_runtime::store::Landed;
use pipewright_runtime::tools;
use std::sync::Arc;

impl Interp {
    fn enter_fan_out(&self, node: &Node, frame: &Frame, key: &str) -> Result<u64, Failure> {
        let depth = frame.depth + 1;
        let cap = self.caps.max_fan_out_depth;
        if cap > 0 && depth > cap {
            return Err(self
                .fail(codes::DEPTH, key, node, format!("fan-out depth {depth} exceeds the operator cap {cap} (max_pipeline_fan_out_depth)"))
                .into());
        }
        Ok(depth)
    }

    /// Runs one item or branch with retries. `Ok(None)`: dropped in an earlier attempt of the
    /// run (replayed from the store). `node` is the fan-out step: its content hash identifies
    /// the drops it recorded.
    pub(super) async fn run_member(
        &self,
        node: &Node,
        body: &Region,
        frame: &Frame,
        key: String,
        attempts: usize,
    ) -> Result<Option<Value>, Failure> {
        if self.dropped(&key, node).is_some() {
            return Ok(None);
        }
        if let Some(members) = &self.members {
            if self.sends(body) && !self.landed_whole(body, &key) {
                return self
                    .run_elsewhere(members, node, body, frame, key, attempts)
                    .await;
            }
        }
        let body_is_tool = body
            .entry
            .and_then(|n| body.node(n))
            .is_some_and(|n| matches!(n.kind, NodeKind::Tool { .. } | NodeKind::Shell { .. }));
        let mut last = None;
        for attempt in 0..attempts.max(1) {
            if attempt > 0 {
                // A retry runs the whole item again: the steps of its body that landed in the
                // failed attempt are forgotten, not replayed.
                self.forget_under(&key)
                    .map_err(|msg| self.fail(codes::STORE, &key, node, msg))?;
            }
            match self.exec_body(body, frame, key.clone()).await {
                // An error-flagged tool result fails the item even under the tool's own
                // `on_error: continue` (§6.8).
                Ok((v, _)) if body_is_tool && tools::is_error(&v) => {
                    self.forget_under(&key)
                        .map_err(|msg| self.fail(codes::STORE, &key, node, msg))?;
                    let node = body.entry.and_then(|n| body.node(n));
                    let text = v
                        .as_object()
                        .and_then(|o| o.get("text"))
                        .and_then(Value::as_str)
                        .unwrap_or("error")
                        .to_string();
                    last = node.map(|n| {
                        Failure::from(
                            self.fail(
                                codes::TOOL,
                                &key,
                                n,
                                format!("the tool reported an error: {text}"),
                            )
                            .with_raw(text)
                            .with_value(v),
                        )
                    });
                }
                Ok((v, _)) => return Ok(Some(v)),
                Err(Failure::Cancelled { key }) => return Err(Failure::Cancelled { key }),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(Failure::Cancelled { key }))
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn for_each(
        &self,
        node: &Node,
        frame: &Frame,
        key: &str,
        source: &ListSource,
        max_parallel: Option<u64>,
        on_error: OnError,
        body: &Region,
        collect: &Region,
    ) -> Result<Value, Failure> {
        let items = self.list(node, frame, key, source)?;
        let depth = self.enter_fan_out(node, frame, key)?;
        let n = items.len();
        let limit = match max_parallel {
            Some(m) => usize::try_from(m).unwrap_or(usize::MAX),
            None => n.min(self.default_max_parallel),
        }
        .max(1);
        let attempts = attempts(on_error);
        let base = Frame {
            item: None,
            acc: None,
            depth,
            ..frame.clone()
        };
        let mut results: Vec<Option<Value>> = Vec::with_capacity(n);
        results.resize_with(n, || None);
        let mut pending = items.into_iter().enumerate();
        let mut running = FuturesUnordered::new();
        loop {
            while running.len() < limit {
                let Some((k, item)) = pending.next() else {
                    break;
                };
                let f = Frame {
                    item: Some(Arc::new(item)),
                    ..base.clone()
                };
                let item_key = format!("{key}.for_each.{k}");
                running.push(async move {
                    (k, self.run_member(node, body, &f, item_key, attempts).await)
                });
            }
            let Some((k, r)) = running.next().await else {
                break;
            };
            match r {
                Ok(v) => results[k] = v,
                Err(Failure::Cancelled { key: at }) => {
                    self.drain_cancelled(node, &mut running, on_error, |k| {
                        format!("{key}.for_each.{k}")
                    })
                    .await;
                    return Err(Failure::Cancelled { key: at });
                }
                Err(e) => match on_error.kind {
                    OnErrorKind::Continue => {
                        self.land_dropped(node, &format!("{key}.for_each.{k}"), e.raw_text())?
                    }
                    policy => {
                        // Returning drops `running`: the still-pending items are cancelled.
                        return Err(self.member_failed(node, key, &format!("item {k}"), policy, e));
                    }
                },
            }
        }
        drop(running);
        let list = Value::List(results.into_iter().flatten().collect());
        let cf = Frame {
            pipe: Arc::new(list),
            item: None,
            acc: None,
            depth,
            ..frame.clone()
        };
        let (v, _) = self
            .exec_body(collect, &cf, format!("{key}.for_each.collect"))
            .await
            .map_err(|f| add_context(f, node, "in collect"))?;
        Ok(v)
    }

    pub(crate) async fn parallel(
        &self,
        node: &Node,
        frame: &Frame,
        key: &str,
        on_error: OnError,
        branches: &[BranchRegion],
        collect: &Region,
    ) -> Result<Value, Failure> {
        let depth = self.enter_fan_out(node, frame, key)?;
        let attempts = attempts(on_error);
        let base = Frame {
            item: None,
            acc: None,
            depth,
            ..frame.clone()
        };
        let mut running: FuturesUnordered<_> = branches
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let f = base.clone();
                let bkey = format!("{key}.parallel.{}", b.name);
                async move {
                    (
                        i,
                        self.run_member(node, &b.region, &f, bkey, attempts).await,
                    )
                }
            })
            .collect();
        let mut results: Vec<Option<Result<Option<Value>, String>>> = vec![None; branches.len()];
        while let Some((i, r)) = running.next().await {
            match r {
                Ok(v) => results[i] = Some(Ok(v)),
                Err(Failure::Cancelled { key: at }) => {
                    self.drain_cancelled(node, &mut running, on_error, |i| {
                        format!("{key}.parallel.{}", branches[i].name)
                    })
                    .await;
                    return Err(Failure::Cancelled { key: at });
                }
                Err(e) => match on_error.kind {
                    OnErrorKind::Continue => {
                        let msg = e.raw_text();
                        self.land_dropped(
                            node,
                            &format!("{key}.parallel.{}", branches[i].name),
                            msg.clone(),
                        )?;
                        results[i] = Some(Err(msg));
                    }
                    policy => {
                        return Err(self.member_failed(
                            node,
                            key,
                            &format!("branch '{}'", branches[i].name),
                            policy,
                            e,
                        ))
                    }
                },
            }
        }
        drop(running);
        let mut map = IndexMap::new();
        let mut errors = IndexMap::new();
        for (b, r) in branches.iter().zip(results) {
            match r {
                Some(Ok(Some(v))) => {
                    map.insert(b.name.clone(), v);
                }
                Some(Err(msg)) => {
                    errors.insert(b.name.clone(), Value::Str(msg));
                }
                // Dropped in an earlier attempt: the reason is in the store.
                Some(Ok(None)) | None => {
                    let msg = self
                        .dropped(&format!("{key}.parallel.{}", b.name), node)
                        .unwrap_or_default();
                    errors.insert(b.name.clone(), Value::Str(msg));
                }
            }
        }
        if !errors.is_empty() {
            map.insert("__branch_errors__".into(), Value::Object(errors));
        }
        let cf = Frame {
            pipe: Arc::new(Value::Object(map)),
            item: None,
            acc: None,
            depth,
            ..frame.clone()
        };
        let (v, _) = self
            .exec_body(collect, &cf, format!("{key}.parallel.collect"))
            .await
            .map_err(|f| add_context(f, node, "in collect"))?;
        Ok(v)
    }

    /// After a cancel, waits for the other members: those in flight stop at once (their
    /// steps race the cancel), members not yet started see the cancel flag and return, and a
    /// member that completed meanwhile lands, so nothing done is lost.
    async fn drain_cancelled<F>(
        &self,
        node: &Node,
        running: &mut FuturesUnordered<F>,
        on_error: OnError,
        member_key: impl Fn(usize) -> String,
    ) where
        F: std::future::Future<Output = (usize, Result<Option<Value>, Failure>)>,
    {
        while let Some((i, r)) = running.next().await {
            if let (Err(e @ Failure::Step(_)), OnErrorKind::Continue) = (r, on_error.kind) {
                // Dropped under `continue` stays dropped on resume, as without the cancel. A
                // store failure here is remembered and fails the run at its end.
                let _ = self.land_dropped(node, &member_key(i), e.raw_text());
            }
        }
    }

    /// Records a member dropped under `on_error: continue`, apart from the values.
    fn land_dropped(&self, node: &Node, key: &str, error: String) -> Result<(), Failure> {
        self.land(
            key,
            self.step_hash(node),
            Landed::Dropped(error),
            None,
            false,
        )
        .map_err(|msg| self.fail(codes::STORE, key, node, msg).into())
    }

    fn member_failed(
        &self,
        node: &Node,
        key: &str,
        what: &str,
        policy: OnErrorKind,
        cause: Failure,
    ) -> Failure {
        let mut e = self.fail(
            codes::FAN_OUT,
            key,
            node,
            format!(
                "{what} failed (on_error='{}'): {}",
                on_error_text(policy),
                cause.message()
            ),
        );
        e.raw = Some(cause.raw_text());
        if let Failure::Step(inner) = cause {
            e.value = inner.value.clone();
            e.reads = inner.reads.clone();
            e.context.push((
                inner.detail_span.unwrap_or(inner.span),
                format!("{what} failed here: {}", inner.message),
            ));
            e.context.extend(inner.context.iter().cloned());
        }
        e.into()
    }
}

fn attempts(on_error: OnError) -> usize {
    match on_error.kind {
        OnErrorKind::Retry(n) => n as usize + 1,
        _ => 1,
    }
}
