//! The evaluator. Values found in the scope are borrowed, not copied: a path such as
//! `ctx.reviews` yields a reference into the caller's data, and a lambda parameter is a reference
//! to the list element, so iterating a large list never clones the context.

use crate::ast::{BinOp, Combinator, Expr, ExprKind, Segment};
use crate::value::{num_cmp, Number, Value};
use indexmap::IndexMap;
use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

/// How much one evaluation may do. Without a bound, `acc + acc` folded a few dozen times asks
/// for more memory than the machine has and the process aborts; nested maps over large lists
/// run for minutes. Both limits fail the evaluation with an error instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Sub-expressions evaluated, lambda bodies once per element (default 50,000,000: a few
    /// seconds).
    pub max_steps: u64,
    /// Bytes of the values the evaluation builds (strings, lists, objects, copies of values it
    /// read; a value merely read is not counted). Default 256 MiB.
    pub max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_steps: 50_000_000,
            max_bytes: 256 * 1024 * 1024,
        }
    }
}

/// What one evaluation has used of its [`Limits`].
struct Budget<'a> {
    limits: Limits,
    steps: Cell<u64>,
    bytes: Cell<u64>,
    /// Set when the step limit tripped: the error then names the whole expression, not the
    /// sub-expression that happened to take the last step.
    out_of_steps: Cell<bool>,
    /// Polled every [`STOP_EVERY`] steps: once set, the evaluation ends with an error.
    stop: Option<&'a AtomicBool>,
}

/// How many steps go between two looks at the stop flag: a few microseconds of work, so a
/// cancelled run stops at once without a load on every step.
const STOP_EVERY: u64 = 4096;

/// The bookkeeping size of one value slot (a list element, an object entry's value).
const SLOT: u64 = std::mem::size_of::<Value>() as u64;

impl Budget<'_> {
    fn tick(&self, span: &Range<usize>) -> Result<(), EvalError> {
        let n = self.steps.get() + 1;
        self.steps.set(n);
        if n.is_multiple_of(STOP_EVERY) && self.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            self.out_of_steps.set(true);
            return err(span, "evaluation stopped: the run was cancelled");
        }
        if n > self.limits.max_steps {
            self.out_of_steps.set(true);
            return err(
                span,
                format!(
                    "evaluation budget exceeded: the expression takes more than {} steps (max_eval_steps under [run] in pipewright.toml)",
                    self.limits.max_steps
                ),
            );
        }
        Ok(())
    }

    /// Charges `n` bytes about to be built by the sub-expression at `span`; called before the
    /// allocation so that an oversized value is never attempted.
    fn charge(&self, n: u64, span: &Range<usize>) -> Result<(), EvalError> {
        let total = self.bytes.get().saturating_add(n);
        self.bytes.set(total);
        if total > self.limits.max_bytes {
            return err(
                span,
                format!(
                    "evaluation budget exceeded: this builds more than {} bytes (max_eval_bytes under [run] in pipewright.toml)",
                    self.limits.max_bytes
                ),
            );
        }
        Ok(())
    }

    /// Charges a copy of `v` (its size, counted only as far as the budget allows).
    fn charge_copy(&self, v: &Value, span: &Range<usize>) -> Result<(), EvalError> {
        let room = self.limits.max_bytes.saturating_sub(self.bytes.get());
        self.charge(approx_bytes(v, room), span)
    }
}

/// The size of `v` in memory, roughly; the walk stops once it passes `cap`.
fn approx_bytes(v: &Value, cap: u64) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        total += SLOT;
        match v {
            Value::Str(s) => total += s.len() as u64,
            Value::List(l) => stack.extend(l.iter()),
            Value::Object(o) => {
                for (k, v) in o {
                    total += k.len() as u64 + SLOT;
                    stack.push(v);
                }
            }
            _ => {}
        }
        if total > cap {
            break;
        }
    }
    total
}

/// A runtime failure; `range` is the byte range of the failing sub-expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    pub range: Range<usize>,
    pub message: String,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EvalError {}

fn err<T>(range: &Range<usize>, message: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError {
        range: range.clone(),
        message: message.into(),
    })
}

/// The top-level names an expression can see (`ctx`, `pipe`, `item`, `acc`, …). Values may be
/// borrowed from the caller, so building a scope for every step or item is cheap.
#[derive(Debug, Clone, Default)]
pub struct Scope<'a> {
    vars: Vec<(String, Cow<'a, Value>)>,
}

impl<'a> Scope<'a> {
    pub fn new() -> Scope<'a> {
        Scope { vars: Vec::new() }
    }

    /// Binds `name` to a borrowed value (replacing an earlier binding of the same name).
    pub fn with(mut self, name: impl Into<String>, value: &'a Value) -> Scope<'a> {
        self.insert(name, Cow::Borrowed(value));
        self
    }

    /// Binds `name` to an owned value.
    pub fn with_owned(mut self, name: impl Into<String>, value: Value) -> Scope<'a> {
        self.insert(name, Cow::Owned(value));
        self
    }

    pub fn insert(&mut self, name: impl Into<String>, value: Cow<'a, Value>) {
        let name = name.into();
        match self.vars.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.vars.push((name, value)),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.vars.iter().find(|(n, _)| n == name).map(|(_, v)| &**v)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.vars.iter().map(|(n, _)| n.as_str())
    }
}

/// Evaluates `expr` against `scope` under the default [`Limits`].
pub fn eval(expr: &Expr, scope: &Scope<'_>) -> Result<Value, EvalError> {
    eval_with(expr, scope, &Limits::default())
}

/// Evaluates `expr` against `scope`; going past `limits` is an error.
pub fn eval_with(expr: &Expr, scope: &Scope<'_>, limits: &Limits) -> Result<Value, EvalError> {
    eval_budgeted(expr, scope, limits, None)
}

/// [`eval_with`] that also ends (with an error naming the whole expression) soon after `stop`
/// is set: a cancelled run does not wait for a long evaluation. The caller tells this error
/// from others by its flag.
pub fn eval_until(
    expr: &Expr,
    scope: &Scope<'_>,
    limits: &Limits,
    stop: &AtomicBool,
) -> Result<Value, EvalError> {
    eval_budgeted(expr, scope, limits, Some(stop))
}

fn eval_budgeted(
    expr: &Expr,
    scope: &Scope<'_>,
    limits: &Limits,
    stop: Option<&AtomicBool>,
) -> Result<Value, EvalError> {
    let budget = Budget {
        limits: *limits,
        steps: Cell::new(0),
        bytes: Cell::new(0),
        out_of_steps: Cell::new(false),
        stop,
    };
    let env = Env {
        scope,
        bind: None,
        parent: None,
        budget: &budget,
    };
    eval_in(expr, &env).map(Cow::into_owned).map_err(|mut e| {
        if budget.out_of_steps.get() {
            e.range = expr.span.range();
        }
        e
    })
}

/// Names visible at one point: the scope plus the chain of enclosing lambda parameters.
struct Env<'a> {
    scope: &'a Scope<'a>,
    bind: Option<(&'a str, &'a Value)>,
    parent: Option<&'a Env<'a>>,
    budget: &'a Budget<'a>,
}

impl<'a> Env<'a> {
    fn lookup(&self, name: &str) -> Option<&'a Value> {
        let mut env = Some(self);
        while let Some(e) = env {
            if let Some((n, v)) = e.bind {
                if same_name(n, name) {
                    return Some(v);
                }
            }
            env = e.parent;
        }
        self.scope
            .vars
            .iter()
            .find(|(n, _)| same_name(n, name))
            .map(|(_, v)| match v {
                Cow::Borrowed(b) => *b,
                Cow::Owned(o) => o,
            })
    }
}

type Out<'a> = Result<Cow<'a, Value>, EvalError>;

/// `v` as an owned value, charging the copy when it was borrowed.
fn owned_charged(
    v: Cow<'_, Value>,
    env: &Env<'_>,
    span: &Range<usize>,
) -> Result<Value, EvalError> {
    if let Cow::Borrowed(b) = &v {
        env.budget.charge_copy(b, span)?;
    }
    Ok(v.into_owned())
}

fn eval_in<'a>(expr: &Expr, env: &Env<'a>) -> Out<'a> {
    let owned = |v: Value| Ok(Cow::Owned(v));
    env.budget.tick(&expr.span.range())?;
    match &expr.kind {
        ExprKind::Null => owned(Value::Null),
        ExprKind::Bool(b) => owned(Value::Bool(*b)),
        ExprKind::Int(n) => owned(Value::Int(*n)),
        ExprKind::Float(x) => owned(Value::Float(*x)),
        ExprKind::Str(s) => {
            env.budget.charge(s.len() as u64, &expr.span.range())?;
            owned(Value::Str(s.to_string()))
        }
        ExprKind::List(items) => {
            env.budget
                .charge(items.len() as u64 * SLOT, &expr.span.range())?;
            let mut out = Vec::with_capacity(items.len());
            for i in items {
                out.push(owned_charged(eval_in(i, env)?, env, &i.span.range())?);
            }
            owned(Value::List(out))
        }
        ExprKind::Object(fields) => {
            env.budget
                .charge(fields.len() as u64 * 2 * SLOT, &expr.span.range())?;
            let mut out = IndexMap::with_capacity(fields.len());
            for (k, _, v) in fields {
                let v = owned_charged(eval_in(v, env)?, env, &v.span.range())?;
                // A repeated key keeps its first position but takes the last value.
                out.insert(k.to_string(), v);
            }
            owned(Value::Object(out))
        }
        ExprKind::Path { root, segments } => eval_path(root, segments, &expr.span.range(), env),
        ExprKind::Not(e) => owned(Value::Bool(!eval_in(e, env)?.truthy())),
        ExprKind::Neg(e) => {
            let v = eval_in(e, env)?;
            match &*v {
                Value::Int(n) => match n.checked_neg() {
                    Some(n) => owned(Value::Int(n)),
                    None => err(&expr.span.range(), "integer overflow in unary '-'"),
                },
                Value::Float(x) => owned(Value::Float(-x)),
                other => err(
                    &expr.span.range(),
                    format!("unary '-' requires a number, got {}", other.type_name()),
                ),
            }
        }
        ExprKind::Binary { .. } => eval_chain(expr, env),
        ExprKind::Call { func, args } => eval_call(*func, args, &expr.span.range(), env),
        ExprKind::Lambda { .. } => err(&expr.span.range(), "a lambda is not a value"),
        ExprKind::Error => err(&expr.span.range(), "the expression did not parse"),
    }
}

/// Evaluates a left-leaning operator chain by walking its spine in a loop.
fn eval_chain<'a>(expr: &Expr, env: &Env<'a>) -> Out<'a> {
    if let ExprKind::Binary { op, lhs, rhs } = &expr.kind {
        // Most chains have a single operator: no spine list needed.
        if !matches!(lhs.kind, ExprKind::Binary { .. }) {
            let acc = eval_in(lhs, env)?;
            return chain_step(*op, acc, rhs, &expr.span.range(), env);
        }
    }
    let mut spine = Vec::new();
    let mut cur = expr;
    while let ExprKind::Binary { op, lhs, rhs } = &cur.kind {
        spine.push((*op, &**rhs, cur.span.range()));
        cur = lhs;
    }
    let mut acc = eval_in(cur, env)?;
    for (op, rhs, span) in spine.into_iter().rev() {
        acc = chain_step(op, acc, rhs, &span, env)?;
    }
    Ok(acc)
}

/// Applies `op` to the value of the chain so far and `rhs`.
fn chain_step<'a>(
    op: BinOp,
    acc: Cow<'a, Value>,
    rhs: &Expr,
    span: &Range<usize>,
    env: &Env<'a>,
) -> Out<'a> {
    Ok(match op {
        BinOp::And if !acc.truthy() => acc,
        BinOp::Or if acc.truthy() => acc,
        BinOp::And | BinOp::Or => eval_in(rhs, env)?,
        _ => {
            if let Some(lit) = literal_str(rhs, env)? {
                return lit_step(op, acc, lit, span, env);
            }
            let r = eval_in(rhs, env)?;
            if op == BinOp::Add {
                match (&*acc, &*r) {
                    (Value::Str(a), Value::Str(b)) => {
                        env.budget.charge((a.len() + b.len()) as u64, span)?
                    }
                    (Value::List(_), Value::List(_)) => {
                        env.budget.charge_copy(&acc, span)?;
                        env.budget.charge_copy(&r, span)?;
                    }
                    _ => {}
                }
                // A chain `a + b + c + …` of strings grows the string it built so far instead
                // of copying it into a new one at each `+`.
                if let (Cow::Owned(Value::Str(_)), Value::Str(b)) = (&acc, &*r) {
                    if let Cow::Owned(Value::Str(mut a)) = acc {
                        a.push_str(b);
                        return Ok(Cow::Owned(Value::Str(a)));
                    }
                }
            }
            Cow::Owned(apply(op, &acc, &r, span)?)
        }
    })
}

/// The text of `expr` if it is a string literal, taking the evaluation step and the bytes its
/// evaluation would: operators and calls that only read a string use it where it stands in the
/// tree, without building a value for it at each evaluation.
fn literal_str<'e>(expr: &'e Expr, env: &Env<'_>) -> Result<Option<&'e str>, EvalError> {
    let ExprKind::Str(s) = &expr.kind else {
        return Ok(None);
    };
    env.budget.tick(&expr.span.range())?;
    env.budget.charge(s.len() as u64, &expr.span.range())?;
    Ok(Some(s))
}

/// [`chain_step`] for a string literal on the right: what [`apply`] gives, for the operators
/// that take a string, without the literal's copy.
fn lit_step<'a>(
    op: BinOp,
    acc: Cow<'a, Value>,
    lit: &str,
    span: &Range<usize>,
    env: &Env<'a>,
) -> Out<'a> {
    use std::cmp::Ordering;
    let Value::Str(a) = &*acc else {
        // A type error, or `==` between a string and another type: rare, so the literal is
        // built and the general path says what it says.
        let r = Value::Str(lit.to_string());
        return Ok(Cow::Owned(apply(op, &acc, &r, span)?));
    };
    let ord = a.as_str().cmp(lit);
    let b = match op {
        BinOp::Add => {
            env.budget.charge((a.len() + lit.len()) as u64, span)?;
            return Ok(Cow::Owned(Value::Str(match acc {
                Cow::Owned(Value::Str(mut a)) => {
                    a.push_str(lit);
                    a
                }
                _ => {
                    // Room for a few more pieces: a literal is most often one link of a chain
                    // that goes on (`a + ' (' + b + ')'`).
                    let mut s = String::with_capacity(a.len() + lit.len() + 32);
                    s.push_str(a);
                    s.push_str(lit);
                    s
                }
            })));
        }
        BinOp::Eq => ord == Ordering::Equal,
        BinOp::Ne => ord != Ordering::Equal,
        BinOp::Lt => ord == Ordering::Less,
        BinOp::Gt => ord == Ordering::Greater,
        BinOp::Le => ord != Ordering::Greater,
        BinOp::Ge => ord != Ordering::Less,
        _ => {
            let r = Value::Str(lit.to_string());
            return Ok(Cow::Owned(apply(op, &acc, &r, span)?));
        }
    };
    Ok(Cow::Owned(Value::Bool(b)))
}

/// `a == b` for the short names of scopes and objects, compared in place: the call into the C
/// library's `memcmp` that `==` makes cost more than the comparison itself, a tenth of an
/// evaluation's time over a mix of expressions.
#[inline]
fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    if a.len() > 16 {
        return a == b;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// `o.get(key)`, scanning small objects instead of hashing: keys are unique, so the first
/// match is the entry, and a few string comparisons cost less than SipHash.
fn field<'v>(o: &'v IndexMap<String, Value>, key: &str) -> Option<&'v Value> {
    if o.len() <= 8 {
        o.iter().find(|(k, _)| same_name(k, key)).map(|(_, v)| v)
    } else {
        o.get(key)
    }
}

fn apply(op: BinOp, l: &Value, r: &Value, span: &Range<usize>) -> Result<Value, EvalError> {
    use std::cmp::Ordering;
    match op {
        BinOp::Eq => return Ok(Value::Bool(l.deep_eq(r))),
        BinOp::Ne => return Ok(Value::Bool(!l.deep_eq(r))),
        BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge => {
            let ord = match (l, r) {
                (Value::Str(a), Value::Str(b)) => Some(a.cmp(b)),
                _ => match (l.as_number(), r.as_number()) {
                    (Some(a), Some(b)) => num_cmp(a, b),
                    _ => {
                        return err(
                            span,
                            format!(
                            "comparison '{}' requires two numbers or two strings, got {} and {}",
                            op.as_str(),
                            l.type_name(),
                            r.type_name()
                        ),
                        )
                    }
                },
            };
            let b = match (op, ord) {
                (_, None) => false,
                (BinOp::Lt, Some(o)) => o == Ordering::Less,
                (BinOp::Gt, Some(o)) => o == Ordering::Greater,
                (BinOp::Le, Some(o)) => o != Ordering::Greater,
                (_, Some(o)) => o != Ordering::Less,
            };
            return Ok(Value::Bool(b));
        }
        _ => {}
    }
    match (l, r) {
        (Value::Str(a), Value::Str(b)) if op == BinOp::Add => {
            let mut s = String::with_capacity(a.len() + b.len());
            s.push_str(a);
            s.push_str(b);
            return Ok(Value::Str(s));
        }
        (Value::List(a), Value::List(b)) if op == BinOp::Add => {
            return Ok(Value::List(a.iter().chain(b).cloned().collect()));
        }
        _ => {}
    }
    let (Some(a), Some(b)) = (l.as_number(), r.as_number()) else {
        return err(
            span,
            format!(
                "arithmetic '{}' requires two numbers (or '+' on two strings/lists), got {} and {}",
                op.as_str(),
                l.type_name(),
                r.type_name()
            ),
        );
    };
    arith(op, a, b, span)
}

fn arith(op: BinOp, a: Number, b: Number, span: &Range<usize>) -> Result<Value, EvalError> {
    let overflow = || err(span, format!("integer overflow in '{}'", op.as_str()));
    if op == BinOp::Div && b.as_f64() == 0.0 {
        return err(span, "division by zero");
    }
    match (a, b) {
        (Number::Int(x), Number::Int(y)) => {
            let r = match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                BinOp::Mul => x.checked_mul(y),
                _ => match x.checked_rem(y) {
                    Some(0) => x.checked_div(y),
                    Some(_) => return Ok(Value::Float(x as f64 / y as f64)),
                    None => None,
                },
            };
            match r {
                Some(n) => Ok(Value::Int(n)),
                None => overflow(),
            }
        }
        _ => {
            let (x, y) = (a.as_f64(), b.as_f64());
            Ok(Value::Float(match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                _ => x / y,
            }))
        }
    }
}

fn eval_path<'a>(root: &str, segments: &[Segment], span: &Range<usize>, env: &Env<'a>) -> Out<'a> {
    let full = || {
        let mut s = root.to_string();
        for (seg, _) in segments {
            s.push('.');
            s.push_str(seg);
        }
        s
    };
    let Some(mut cur) = env.lookup(root) else {
        let mut msg = format!("path '{}' is absent: no field '{root}' in context", full());
        let in_ctx = env
            .lookup("ctx")
            .and_then(Value::as_object)
            .is_some_and(|o| o.contains_key(root));
        if in_ctx {
            msg.push_str(&format!(
                " (named stores are read through ctx: write 'ctx.{root}')"
            ));
        }
        return err(span, msg);
    };
    for (i, (seg, _)) in segments.iter().enumerate() {
        let prefix = || {
            let mut s = root.to_string();
            for (p, _) in &segments[..i] {
                s.push('.');
                s.push_str(p);
            }
            s
        };
        match cur {
            Value::Object(o) => match field(o, seg) {
                Some(v) => cur = v,
                None => {
                    let mut msg = format!(
                        "path '{}' is absent: no field '{}.{seg}' in context",
                        full(),
                        prefix()
                    );
                    if &**seg == "structured" && o.contains_key("text") {
                        msg.push_str(&format!(
                            "; a tool result has no 'structured' field when the tool returned no structured \
                             content: read '{}.text', or use get({}, \"structured\") to get null instead",
                            prefix(),
                            prefix()
                        ));
                    }
                    return err(span, msg);
                }
            },
            other => {
                return err(
                    span,
                    format!(
                    "path '{}' is absent: {} is not an object (it is {}), cannot access '{seg}'",
                    full(),
                    prefix(),
                    other.type_name()
                ),
                )
            }
        }
    }
    Ok(Cow::Borrowed(cur))
}

fn lambda_parts(e: &Expr) -> Result<(&str, &Expr), EvalError> {
    match &e.kind {
        ExprKind::Lambda { param, body, .. } => Ok((param, body)),
        _ => err(&e.span.range(), "expected a lambda"),
    }
}

fn arg<'e>(
    args: &'e [Expr],
    i: usize,
    span: &Range<usize>,
    func: Combinator,
) -> Result<&'e Expr, EvalError> {
    match args.get(i) {
        Some(a) => Ok(a),
        None => err(span, format!("{}() is missing an argument", func.name())),
    }
}

fn eval_call<'a>(func: Combinator, args: &[Expr], span: &Range<usize>, env: &Env<'a>) -> Out<'a> {
    let first = arg(args, 0, span, func)?;
    match func {
        Combinator::Map
        | Combinator::Filter
        | Combinator::All
        | Combinator::Any
        | Combinator::Find => {
            let (param, body) = lambda_parts(arg(args, 1, span, func)?)?;
            let list = eval_in(first, env)?;
            match list {
                Cow::Borrowed(v) => {
                    let items = require_list(v, func, &first.span.range())?;
                    Ok(match iterate(func, items, param, body, env)? {
                        Found::Value(v) => Cow::Owned(v),
                        Found::Item(i) => Cow::Borrowed(i),
                    })
                }
                Cow::Owned(v) => {
                    let items = require_list(&v, func, &first.span.range())?;
                    Ok(Cow::Owned(match iterate(func, items, param, body, env)? {
                        Found::Value(v) => v,
                        Found::Item(i) => i.clone(),
                    }))
                }
            }
        }
        Combinator::Count => {
            let v = eval_in(first, env)?;
            let items = require_list(&v, func, &first.span.range())?;
            Ok(Cow::Owned(Value::Int(
                i64::try_from(items.len()).unwrap_or(i64::MAX),
            )))
        }
        Combinator::Sum => {
            let v = eval_in(first, env)?;
            let items = require_list(&v, func, &first.span.range())?;
            let mut acc = Number::Int(0);
            for item in items {
                let Some(n) = item.as_number() else {
                    return err(
                        &first.span.range(),
                        format!(
                            "sum() requires a list of numbers, found {}",
                            item.type_name()
                        ),
                    );
                };
                acc = match arith(BinOp::Add, acc, n, span)? {
                    Value::Int(i) => Number::Int(i),
                    Value::Float(f) => Number::Float(f),
                    _ => acc,
                };
            }
            Ok(Cow::Owned(match acc {
                Number::Int(i) => Value::Int(i),
                Number::Float(f) => Value::Float(f),
            }))
        }
        Combinator::Join => {
            let v = eval_in(first, env)?;
            let items = require_list(&v, func, &first.span.range())?;
            let sep_expr = arg(args, 1, span, func)?;
            let sep_value;
            let sep: &str = match literal_str(sep_expr, env)? {
                Some(lit) => lit,
                None => {
                    sep_value = eval_in(sep_expr, env)?;
                    let Value::Str(sep) = &*sep_value else {
                        return err(
                            &sep_expr.span.range(),
                            format!(
                                "join() separator must be a string, got {}",
                                sep_value.type_name()
                            ),
                        );
                    };
                    sep
                }
            };
            let len: usize = items
                .iter()
                .map(|i| i.as_str().map_or(0, str::len) + sep.len())
                .sum();
            env.budget.charge(len as u64, span)?;
            let mut out = String::with_capacity(len);
            for (i, item) in items.iter().enumerate() {
                let Value::Str(s) = item else {
                    return err(
                        &first.span.range(),
                        format!(
                            "join() requires a list of strings, found {}",
                            item.type_name()
                        ),
                    );
                };
                if i > 0 {
                    out.push_str(sep);
                }
                out.push_str(s);
            }
            Ok(Cow::Owned(Value::Str(out)))
        }
        Combinator::Get => {
            let base = eval_in(first, env)?;
            let path_expr = arg(args, 1, span, func)?;
            let ExprKind::Str(path) = &path_expr.kind else {
                return err(
                    &path_expr.span.range(),
                    "get() path must be a string literal",
                );
            };
            // The default is evaluated before the lookup, whether or not it is needed.
            let default = match args.get(2) {
                Some(d) => Some(eval_in(d, env)?),
                None => None,
            };
            let fallback = || default.clone().unwrap_or(Cow::Owned(Value::Null));
            Ok(match base {
                Cow::Borrowed(b) => match get_path(b, path) {
                    Some(v) => Cow::Borrowed(v),
                    None => fallback(),
                },
                Cow::Owned(b) => match get_path(&b, path) {
                    Some(v) => {
                        env.budget.charge_copy(v, span)?;
                        Cow::Owned(v.clone())
                    }
                    None => fallback(),
                },
            })
        }
        Combinator::ParseJson => {
            let v = eval_in(first, env)?;
            let Value::Str(s) = &*v else {
                return err(
                    &first.span.range(),
                    format!("parse_json() requires a string, got {}", v.type_name()),
                );
            };
            // The decoded value takes a few times the text's bytes (two trees while converting).
            env.budget.charge(s.len() as u64 * 4, span)?;
            match serde_json::from_str::<serde_json::Value>(s) {
                Ok(j) => Ok(Cow::Owned(Value::from_json(&j))),
                Err(e) => err(span, format!("parse_json() failed to decode: {e}")),
            }
        }
        Combinator::ShellQuote => {
            let v = eval_in(first, env)?;
            let Value::Str(s) = &*v else {
                return err(
                    &first.span.range(),
                    format!("shell_quote() requires a string, got {}", v.type_name()),
                );
            };
            env.budget.charge(s.len() as u64 + 2, span)?;
            Ok(Cow::Owned(Value::Str(shell_quote(s))))
        }
    }
}

/// One POSIX shell word that stands for `s` literally, as Python's `shlex.quote` writes it: `s`
/// itself when it holds only characters no shell treats specially, else `s` in single quotes
/// with each `'` written `'"'"'` (inside single quotes nothing else is special).
pub fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\"'\"'");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// Safe navigation through objects only; `""` segments are literal empty keys.
fn get_path<'v>(base: &'v Value, path: &str) -> Option<&'v Value> {
    let mut cur = base;
    for seg in path.split('.') {
        cur = field(cur.as_object()?, seg)?;
    }
    Some(cur)
}

fn require_list<'v>(
    v: &'v Value,
    func: Combinator,
    span: &Range<usize>,
) -> Result<&'v [Value], EvalError> {
    match v {
        Value::List(l) => Ok(l),
        other => err(
            span,
            format!(
                "{}() requires a list, got {}",
                func.name(),
                other.type_name()
            ),
        ),
    }
}

enum Found<'l> {
    Value(Value),
    Item(&'l Value),
}

fn iterate<'l>(
    func: Combinator,
    items: &'l [Value],
    param: &str,
    body: &Expr,
    env: &Env<'l>,
) -> Result<Found<'l>, EvalError> {
    let run = |item: &'l Value| -> Result<Cow<'_, Value>, EvalError> {
        let child = Env {
            scope: env.scope,
            bind: Some((param, item)),
            parent: Some(env),
            budget: env.budget,
        };
        let v = eval_in(body, &child)?;
        owned_charged(v, env, &body.span.range()).map(Cow::Owned)
    };
    let test = |item: &'l Value| -> Result<bool, EvalError> {
        let child = Env {
            scope: env.scope,
            bind: Some((param, item)),
            parent: Some(env),
            budget: env.budget,
        };
        eval_in(body, &child).map(|c| c.truthy())
    };
    Ok(match func {
        Combinator::Map => {
            env.budget
                .charge(items.len() as u64 * SLOT, &body.span.range())?;
            let mut out = Vec::with_capacity(items.len());
            for i in items {
                out.push(run(i)?.into_owned());
            }
            Found::Value(Value::List(out))
        }
        Combinator::Filter => {
            let mut out = Vec::new();
            for i in items {
                if test(i)? {
                    env.budget.charge_copy(i, &body.span.range())?;
                    out.push(i.clone());
                }
            }
            Found::Value(Value::List(out))
        }
        Combinator::All => {
            for i in items {
                if !test(i)? {
                    return Ok(Found::Value(Value::Bool(false)));
                }
            }
            Found::Value(Value::Bool(true))
        }
        Combinator::Any => {
            for i in items {
                if test(i)? {
                    return Ok(Found::Value(Value::Bool(true)));
                }
            }
            Found::Value(Value::Bool(false))
        }
        _ => {
            for i in items {
                if test(i)? {
                    return Ok(Found::Item(i));
                }
            }
            Found::Value(Value::Null)
        }
    })
}

#[cfg(all(test, unix))]
mod shell_quote_tests {
    use super::shell_quote;

    /// The quoted word, given to a real `sh`, comes back as exactly the original string.
    #[test]
    fn sh_reads_the_quoted_word_back_unchanged() {
        let cases = [
            "x; touch pwned",
            "it's",
            "",
            "$(id) `id` $HOME",
            "a\nb\tc",
            "-n",
            "*",
            "'",
            "\\'\"",
            "plain",
        ];
        for s in cases {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf '%s' {}", shell_quote(s)))
                .output()
                .unwrap_or_else(|e| panic!("sh: {e}"));
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                s,
                "{:?}",
                shell_quote(s)
            );
        }
    }
}
