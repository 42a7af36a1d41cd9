//! What a step sees: the named stores (`ctx`), the incoming `pipe`, and `item`/`acc` inside
//! fan-outs and folds. Values are shared behind `Arc` so a per-item "copy" of the stores is a
//! reference count until an item writes (copy-on-write keeps items isolated).

use pipewright_ir::WorkflowId;
use pipewright_r1::{Scope, Value};
use std::sync::Arc;

#[derive(Debug, Clone)]
pub(crate) struct Frame {
    pub ctx: Arc<Value>,
    pub pipe: Arc<Value>,
    pub item: Option<Arc<Value>>,
    pub acc: Option<Arc<Value>>,
    /// Fan-out nesting depth (a top-level for_each runs its items at depth 1).
    pub depth: u64,
    /// The workflow whose schemas `schema:` names resolve against.
    pub workflow: WorkflowId,
}

impl Frame {
    pub(crate) fn scope(&self) -> Scope<'_> {
        let mut s = Scope::new().with("ctx", &self.ctx).with("pipe", &self.pipe);
        if let Some(i) = &self.item {
            s = s.with("item", i);
        }
        if let Some(a) = &self.acc {
            s = s.with("acc", a);
        }
        s
    }

    /// Writes a named store; other frames sharing the map keep their copy.
    pub(crate) fn write(&mut self, name: &str, v: Value) {
        let ctx = Arc::make_mut(&mut self.ctx);
        match ctx {
            Value::Object(m) => {
                m.insert(name.to_string(), v);
            }
            other => {
                *other = Value::Object([(name.to_string(), v)].into_iter().collect());
            }
        }
    }

    /// After a step: its result becomes the pipe and, with `output`, a named store.
    pub(crate) fn land(&mut self, output: Option<&str>, v: Value) {
        if let Some(name) = output.filter(|n| !n.is_empty()) {
            self.write(name, v.clone());
        }
        self.pipe = Arc::new(v);
    }
}
