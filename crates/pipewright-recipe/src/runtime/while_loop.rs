//! The bookkeeping of a `while` loop (notes §5.8), driven by the executor, which does what
//! needs I/O (cancellation checks, events, running the body). One iteration, in order:
//!
//! 1. [`WhileLoop::at_limit`]: stop silently once `max_while_iterations` iterations ran.
//! 2. The executor's cancellation check.
//! 3. [`WhileLoop::enter`]: render and evaluate `while_condition`; false stops the loop; true
//!    sets `_loop_index` (0-based) and `_loop_iteration` (1-based).
//! 4. The executor emits `recipe:loop_iteration` and runs the body (a single step: dispatch,
//!    process the result, store `output` every iteration; or the `steps:` body). A body error
//!    other than skip-remaining or cancellation becomes [`WhileLoop::body_error`]; no
//!    `on_error` applies.
//! 5. [`WhileLoop::after_body`]: keep the result, apply `update_context`, evaluate
//!    `break_when`.
//!
//! On every exit, errors included, [`WhileLoop::finish`] removes the loop variables and
//! stores `collect` (all results) or `output` (the last one).

use super::condition::{break_when, condition_rendered, BreakWhen, ConditionError};
use super::context::apply_update_context;
use super::render::RenderError;
use super::Context;
use crate::value::Value;

/// Why the loop ended normally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhileStop {
    /// `max_while_iterations` iterations ran; not an error.
    MaxIterations,
    /// `while_condition` was false before an iteration.
    ConditionFalse,
    /// `break_when` was true after an iteration.
    BreakWhen,
}

#[derive(Debug, Clone)]
pub struct WhileLoop {
    step_id: String,
    max_iterations: u64,
    iteration: u64,
    results: Vec<Value>,
}

/// What [`WhileLoop::after_body`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AfterBody {
    /// `Some(BreakWhen)` when `break_when` held.
    pub stop: Option<WhileStop>,
    /// An expression error in `break_when`: the runner shows it as a progress warning and
    /// goes on with the next iteration.
    pub warning: Option<String>,
}

impl WhileLoop {
    /// `max_while_iterations` defaults to 100 in the schema; the caller passes the step's value.
    pub fn new(step_id: &str, max_while_iterations: u64) -> WhileLoop {
        WhileLoop {
            step_id: step_id.to_owned(),
            max_iterations: max_while_iterations,
            iteration: 0,
            results: Vec::new(),
        }
    }

    /// The 0-based index of the current (or next) iteration.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// Step 1: true once the limit is reached; the loop ends without an error.
    pub fn at_limit(&self) -> bool {
        self.iteration >= self.max_iterations
    }

    /// Step 3: `Ok(false)` ends the loop ([`WhileStop::ConditionFalse`]); `Ok(true)` means the
    /// loop variables are set and the body runs. An error fails the recipe as it is (neither
    /// kind is a warning here).
    pub fn enter(
        &mut self,
        ctx: &mut Context,
        while_condition: &str,
    ) -> Result<bool, ConditionError> {
        if !condition_rendered(while_condition, ctx)? {
            return Ok(false);
        }
        let index = i64::try_from(self.iteration).unwrap_or(i64::MAX);
        ctx.insert("_loop_index".into(), Value::Int(index));
        ctx.insert(
            "_loop_iteration".into(),
            Value::Int(index.saturating_add(1)),
        );
        Ok(true)
    }

    /// The error a failed body becomes: `Step '<id>' iteration <i> failed: <e>` (`i` 0-based).
    pub fn body_error(&self, error: &str) -> String {
        format!(
            "Step '{}' iteration {} failed: {error}",
            self.step_id, self.iteration
        )
    }

    /// Steps 7–9 after the body returned `result`: `update_context` (in mapping order, values
    /// rendered to strings), then `break_when`. An `Err` (an undefined variable in either)
    /// fails the step.
    pub fn after_body(
        &mut self,
        ctx: &mut Context,
        result: Value,
        update_context: &[(String, Value)],
        break_when_src: Option<&str>,
    ) -> Result<AfterBody, RenderError> {
        self.results.push(result);
        apply_update_context(ctx, update_context)?;
        let mut after = AfterBody {
            stop: None,
            warning: None,
        };
        if let Some(src) = break_when_src {
            match break_when(src, ctx)? {
                BreakWhen::Break => after.stop = Some(WhileStop::BreakWhen),
                BreakWhen::Continue => {}
                BreakWhen::Warning(m) => after.warning = Some(m),
            }
        }
        if after.stop.is_none() {
            self.iteration += 1;
        }
        Ok(after)
    }

    /// On every exit: removes `_loop_index` and `_loop_iteration`; then `collect` gets every
    /// result, or else `output` gets the last one (left unset when no iteration ran). Returns
    /// the results.
    pub fn finish(
        self,
        ctx: &mut Context,
        output: Option<&str>,
        collect: Option<&str>,
    ) -> Vec<Value> {
        ctx.shift_remove("_loop_index");
        ctx.shift_remove("_loop_iteration");
        if let Some(c) = collect {
            ctx.insert(c.to_owned(), Value::List(self.results.clone()));
        } else if let (Some(o), Some(last)) = (output, self.results.last()) {
            ctx.insert(o.to_owned(), last.clone());
        }
        self.results
    }
}
