//! A static type pass over an expression, given what is known of the names in scope (usually
//! from pipeline schemas). It only reports conflicts between *known* types: anything the pass
//! cannot know is [`Type::Any`] and is never an error.

use crate::ast::{BinOp, Combinator, Expr, ExprKind, Segment};
use crate::codes;
use indexmap::IndexMap;
use pipewright_syntax::{Diagnostic, Severity, Span};
use rustc_hash::FxBuildHasher;
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    Any,
    Null,
    Bool,
    Int,
    Float,
    /// An int or a float.
    Number,
    Str,
    // Shared, not owned: a type is cloned into every scope, store and expression environment
    // that mentions it, and deep-copying a schema's object type for each was most of the time
    // the checks of a long pipeline took.
    List(Arc<Type>),
    Object(Arc<ObjectType>),
    /// One of a few types (kept small; a large union is just `Any`).
    Union(Vec<Type>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ObjectType {
    /// The schema name, for messages.
    pub name: Option<String>,
    /// Hashed with Fx, not SipHash: one of these is built and searched for every checked
    /// expression, and its keys are field names from the checked files.
    pub fields: IndexMap<String, FieldType, FxBuildHasher>,
    /// Fields not listed may exist.
    pub open: bool,
    /// Where the schema is declared.
    pub origin: Option<Span>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FieldType {
    pub ty: Type,
    /// Where the field is declared.
    pub origin: Option<Span>,
}

impl ObjectType {
    /// A closed object type with no fields yet.
    pub fn closed(name: Option<&str>) -> ObjectType {
        ObjectType {
            name: name.map(str::to_string),
            fields: IndexMap::default(),
            open: false,
            origin: None,
        }
    }

    /// An object whose fields are unknown.
    pub fn open() -> ObjectType {
        ObjectType {
            name: None,
            fields: IndexMap::default(),
            open: true,
            origin: None,
        }
    }

    pub fn with_field(mut self, name: impl Into<String>, ty: Type) -> ObjectType {
        self.fields
            .insert(name.into(), FieldType { ty, origin: None });
        self
    }

    fn describe(&self) -> String {
        match &self.name {
            Some(n) => format!("schema `{n}`"),
            None => "this object".to_string(),
        }
    }
}

const MAX_UNION: usize = 4;

impl Type {
    pub fn list(element: Type) -> Type {
        Type::List(Arc::new(element))
    }

    pub fn object(o: ObjectType) -> Type {
        Type::Object(Arc::new(o))
    }

    /// The least type covering both.
    pub fn join(a: Type, b: Type) -> Type {
        if a == b {
            return a;
        }
        match (a, b) {
            (Type::Any, _) | (_, Type::Any) => Type::Any,
            (x, y) if x.is_number() && y.is_number() => Type::Number,
            (Type::List(x), Type::List(y)) => {
                Type::list(Type::join(Arc::unwrap_or_clone(x), Arc::unwrap_or_clone(y)))
            }
            (x, y) => {
                let mut members = Vec::new();
                for t in [x, y] {
                    match t {
                        Type::Union(ms) => members.extend(ms),
                        t => members.push(t),
                    }
                }
                let mut uniq: Vec<Type> = Vec::new();
                for m in members {
                    if !uniq.contains(&m) {
                        uniq.push(m);
                    }
                }
                if uniq.len() > MAX_UNION {
                    Type::Any
                } else {
                    Type::Union(uniq)
                }
            }
        }
    }

    fn is_number(&self) -> bool {
        matches!(self, Type::Int | Type::Float | Type::Number)
    }

    /// Every value of this type satisfies `pred` (false for `Any`).
    fn surely(&self, pred: &dyn Fn(&Type) -> bool) -> bool {
        match self {
            Type::Any => false,
            Type::Union(ms) => !ms.is_empty() && ms.iter().all(|m| m.surely(pred)),
            t => pred(t),
        }
    }

    fn surely_not_list(&self) -> bool {
        self.surely(&|t| !matches!(t, Type::List(_)))
    }

    fn surely_not_object(&self) -> bool {
        self.surely(&|t| !matches!(t, Type::Object(_)))
    }

    fn surely_not_str(&self) -> bool {
        self.surely(&|t| !matches!(t, Type::Str))
    }

    /// The types a value of this type may have.
    fn members(&self) -> Vec<&Type> {
        match self {
            Type::Union(ms) => ms.iter().collect(),
            t => vec![t],
        }
    }

    fn surely_not_number(&self) -> bool {
        self.surely(&|t| !t.is_number())
    }

    fn element(&self) -> Type {
        match self {
            Type::List(e) => (**e).clone(),
            _ => Type::Any,
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Any => f.write_str("any value"),
            Type::Null => f.write_str("null"),
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Float => f.write_str("float"),
            Type::Number => f.write_str("number"),
            Type::Str => f.write_str("string"),
            Type::List(e) => write!(f, "list of {e}"),
            Type::Object(o) => match &o.name {
                Some(n) => write!(f, "object `{n}`"),
                None => f.write_str("object"),
            },
            Type::Union(ms) => {
                for (i, m) in ms.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" or ")?;
                    }
                    write!(f, "{m}")?;
                }
                Ok(())
            }
        }
    }
}

/// Types of the top-level names in scope; names not listed are `Any`.
#[derive(Debug, Clone, Default)]
pub struct TypeEnv {
    // A handful of names (`ctx`, `pipe`, `item`, `acc`), built once per checked expression: a
    // list searched in order beats hashing, and static names cost no allocation.
    vars: Vec<(Cow<'static, str>, Type)>,
}

impl TypeEnv {
    pub fn new() -> TypeEnv {
        TypeEnv::default()
    }

    pub fn with(mut self, name: impl Into<Cow<'static, str>>, ty: Type) -> TypeEnv {
        self.insert(name, ty);
        self
    }

    /// Binds `name`, replacing an earlier binding of the same name.
    pub fn insert(&mut self, name: impl Into<Cow<'static, str>>, ty: Type) {
        let name = name.into();
        match self.vars.iter_mut().find(|(n, _)| *n == name) {
            Some((_, t)) => *t = ty,
            None => self.vars.push((name, ty)),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Type> {
        self.vars.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }
}

/// A type conflict found statically.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeIssue {
    pub range: Range<usize>,
    pub code: &'static str,
    pub message: String,
    pub label: String,
    pub help: Option<String>,
    /// Places in schema files (already file spans) that explain the issue.
    pub secondary: Vec<(Span, String)>,
    pub severity: Severity,
}

impl TypeIssue {
    fn error(
        range: Range<usize>,
        code: &'static str,
        message: String,
        label: impl Into<String>,
    ) -> TypeIssue {
        TypeIssue {
            range,
            code,
            message,
            label: label.into(),
            help: None,
            secondary: Vec::new(),
            severity: Severity::Error,
        }
    }

    fn help(mut self, help: impl Into<String>) -> TypeIssue {
        self.help = Some(help.into());
        self
    }

    pub fn to_diagnostic(&self, map: impl Fn(Range<usize>) -> Span) -> Diagnostic {
        let mut d = Diagnostic::new(
            self.severity,
            self.code,
            map(self.range.clone()),
            self.message.clone(),
        )
        .with_label(self.label.clone())
        .with_optional_help(self.help.clone());
        for (span, msg) in &self.secondary {
            d = d.with_secondary(*span, msg.clone());
        }
        d
    }
}

/// Infers the type of `expr` and reports every conflict between known types.
pub fn check_types(expr: &Expr, env: &TypeEnv) -> (Type, Vec<TypeIssue>) {
    let mut cx = Checker {
        env,
        locals: Vec::new(),
        issues: Vec::new(),
    };
    let ty = cx.infer(expr);
    let mut issues = cx.issues;
    issues.sort_by_key(|i| (i.range.start, i.range.end));
    (ty, issues)
}

struct Checker<'e> {
    env: &'e TypeEnv,
    /// Lambda parameters in scope, innermost last.
    locals: Vec<(String, Type)>,
    issues: Vec<TypeIssue>,
}

impl Checker<'_> {
    fn infer(&mut self, e: &Expr) -> Type {
        match &e.kind {
            ExprKind::Null => Type::Null,
            ExprKind::Bool(_) => Type::Bool,
            ExprKind::Int(_) => Type::Int,
            ExprKind::Float(_) => Type::Float,
            ExprKind::Str(_) => Type::Str,
            ExprKind::List(items) => {
                let mut elem: Option<Type> = None;
                for i in items {
                    let t = self.infer(i);
                    elem = Some(match elem {
                        None => t,
                        Some(prev) => Type::join(prev, t),
                    });
                }
                Type::list(elem.unwrap_or(Type::Any))
            }
            ExprKind::Object(fields) => {
                let mut o = ObjectType::closed(None);
                for (k, _, v) in fields {
                    let t = self.infer(v);
                    o.fields.insert(
                        k.to_string(),
                        FieldType {
                            ty: t,
                            origin: None,
                        },
                    );
                }
                Type::object(o)
            }
            ExprKind::Path { root, segments } => self.path(root, segments, &e.span.range()),
            ExprKind::Not(x) => {
                self.infer(x);
                Type::Bool
            }
            ExprKind::Neg(x) => {
                let t = self.infer(x);
                if t.surely_not_number() {
                    self.issues.push(
                        TypeIssue::error(
                            e.span.range(),
                            codes::ARITH_TYPES,
                            format!("unary '-' needs a number, but the operand is {t}"),
                            format!("{t} cannot be negated"),
                        )
                        .help("only ints and floats can be negated"),
                    );
                    return Type::Any;
                }
                match t {
                    Type::Int | Type::Float => t,
                    _ => Type::Number,
                }
            }
            ExprKind::Binary { .. } => self.chain(e),
            ExprKind::Call { func, args } => self.call(*func, args, &e.span.range()),
            ExprKind::Lambda { body, .. } => {
                self.infer(body);
                Type::Any
            }
            ExprKind::Error => Type::Any,
        }
    }

    fn lookup(&self, name: &str) -> Type {
        if let Some((_, t)) = self.locals.iter().rev().find(|(n, _)| n == name) {
            return t.clone();
        }
        self.env.get(name).cloned().unwrap_or(Type::Any)
    }

    fn path(&mut self, root: &str, segments: &[Segment], span: &Range<usize>) -> Type {
        let mut cur = self.lookup(root);
        for (i, (seg, seg_range)) in segments.iter().enumerate() {
            // Only messages need the text of the path so far; most paths are fine.
            let prefix = || {
                let mut p = root.to_string();
                for (s, _) in &segments[..i] {
                    p.push('.');
                    p.push_str(s);
                }
                p
            };
            let next = match &cur {
                Type::Object(o) => match o.fields.get(&**seg) {
                    Some(f) => f.ty.clone(),
                    None if o.open => Type::Any,
                    None => {
                        let prefix = prefix();
                        let mut issue = TypeIssue::error(
                            seg_range.range(),
                            codes::UNKNOWN_FIELD,
                            format!("`{prefix}` has no field `{seg}`"),
                            format!("not a field of {}", o.describe()),
                        );
                        let names = o.fields.keys().map(String::as_str);
                        issue.help = Some(
                            match pipewright_syntax::suggest::did_you_mean(seg, names.clone()) {
                                Some(c) => format!("did you mean `{prefix}.{c}`?"),
                                None if o.fields.is_empty() => {
                                    format!("{} declares no fields", o.describe())
                                }
                                None => format!(
                                    "the fields are {}",
                                    names
                                        .map(|n| format!("`{n}`"))
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                            },
                        );
                        if let Some(origin) = o.origin {
                            issue
                                .secondary
                                .push((origin, format!("{} is declared here", o.describe())));
                        }
                        self.issues.push(issue);
                        return Type::Any;
                    }
                },
                t if t.surely_not_object() => {
                    let prefix = prefix();
                    self.issues.push(
                        TypeIssue::error(
                            span.start..seg_range.range().end,
                            codes::PATH_INTO_SCALAR,
                            format!("`{prefix}` is {t}, not an object, so it has no field `{seg}`"),
                            format!("`{prefix}` is {t}"),
                        )
                        .help("only objects have fields; R1 has no indexing or methods"),
                    );
                    return Type::Any;
                }
                _ => Type::Any,
            };
            cur = next;
        }
        cur
    }

    /// A left-leaning operator chain, walked in a loop.
    fn chain(&mut self, e: &Expr) -> Type {
        let mut spine = Vec::new();
        let mut cur = e;
        while let ExprKind::Binary { op, lhs, rhs } = &cur.kind {
            spine.push((*op, &**rhs, cur.span.range()));
            cur = lhs;
        }
        let mut acc = self.infer(cur);
        for (op, rhs, span) in spine.into_iter().rev() {
            let r = self.infer(rhs);
            acc = self.binary(op, acc, r, &span);
        }
        acc
    }

    fn binary(&mut self, op: BinOp, l: Type, r: Type, span: &Range<usize>) -> Type {
        match op {
            BinOp::And | BinOp::Or => Type::join(l, r),
            BinOp::Eq | BinOp::Ne => Type::Bool,
            BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge => {
                let both_num = !l.surely_not_number() && !r.surely_not_number();
                let both_str = !l.surely_not_str() && !r.surely_not_str();
                if !both_num && !both_str {
                    let mut issue = TypeIssue::error(
                        span.clone(),
                        codes::COMPARE_TYPES,
                        format!("comparison '{}' between {l} and {r}", op.as_str()),
                        "these cannot be ordered",
                    )
                    .help("`<`, `>`, `<=` and `>=` need two numbers or two strings");
                    if matches!(l, Type::Bool) || matches!(r, Type::Bool) {
                        issue.help = Some(
                            "booleans are not ordered (and never equal a number): compare with `== true` \
                             or use the boolean directly"
                                .to_string(),
                        );
                    }
                    self.issues.push(issue);
                }
                Type::Bool
            }
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div => {
                // An error only when no combination of the operands' possible types is
                // valid: `ctx.ok and 'A' or 'B'` is typed bool-or-string, yet every value it
                // really takes is a string, so a possible mismatch must not be reported.
                let plus = op == BinOp::Add;
                let valid = |a: &Type, b: &Type| match (a, b) {
                    (Type::Any, _) | (_, Type::Any) => true,
                    (x, y) if x.is_number() && y.is_number() => true,
                    (Type::Str, Type::Str) | (Type::List(_), Type::List(_)) => plus,
                    _ => false,
                };
                let known_bad = !l
                    .members()
                    .iter()
                    .any(|a| r.members().iter().any(|b| valid(a, b)));
                if known_bad {
                    self.issues.push(
                        TypeIssue::error(
                            span.clone(),
                            codes::ARITH_TYPES,
                            format!("arithmetic '{}' on {l} and {r}", op.as_str()),
                            "incompatible operands",
                        )
                        .help(
                            "arithmetic needs two numbers; `+` also joins two strings or two lists. \
                             R1 never converts between numbers and strings",
                        ),
                    );
                    return Type::Any;
                }
                match (&l, &r) {
                    (Type::Str, Type::Str) => Type::Str,
                    (Type::List(_), Type::List(_)) => Type::join(l, r),
                    (Type::Int, Type::Int) if op != BinOp::Div => Type::Int,
                    (Type::Float, t) | (t, Type::Float) if t.is_number() => Type::Float,
                    (a, b) if a.is_number() && b.is_number() => Type::Number,
                    _ => Type::Any,
                }
            }
        }
    }

    fn not_a_list(&mut self, func: Combinator, arg: &Expr, t: &Type) {
        self.issues.push(
            TypeIssue::error(
                arg.span.range(),
                codes::NOT_A_LIST,
                format!("`{}` needs a list, but this is {t}", func.name()),
                format!("{t}, not a list"),
            )
            .help(format!("usage: {}", func.signature())),
        );
    }

    fn call(&mut self, func: Combinator, args: &[Expr], span: &Range<usize>) -> Type {
        let Some(first) = args.first() else {
            return Type::Any;
        };
        let t = self.infer(first);
        let list_arg = !matches!(
            func,
            Combinator::Get | Combinator::ParseJson | Combinator::ShellQuote
        );
        if list_arg && t.surely_not_list() {
            self.not_a_list(func, first, &t);
        }
        let elem = t.element();
        match func {
            Combinator::Map
            | Combinator::Filter
            | Combinator::All
            | Combinator::Any
            | Combinator::Find => {
                let body_ty = match args.get(1).map(|a| &a.kind) {
                    Some(ExprKind::Lambda { param, body, .. }) => {
                        self.locals.push((param.to_string(), elem.clone()));
                        let bt = self.infer(body);
                        self.locals.pop();
                        bt
                    }
                    Some(_) | None => {
                        args.iter().skip(1).for_each(|a| {
                            self.infer(a);
                        });
                        Type::Any
                    }
                };
                match func {
                    Combinator::Map => Type::list(body_ty),
                    Combinator::Filter => Type::list(elem),
                    Combinator::Find => elem,
                    _ => Type::Bool,
                }
            }
            Combinator::Count => Type::Int,
            Combinator::Sum => {
                if elem.surely_not_number() {
                    self.issues.push(
                        TypeIssue::error(
                            first.span.range(),
                            codes::ARG_TYPE,
                            format!("`sum` needs a list of numbers, but the elements are {elem}"),
                            format!("list of {elem}"),
                        )
                        .help("to concatenate strings use `join(list, \"\")`"),
                    );
                    return Type::Any;
                }
                match elem {
                    Type::Int => Type::Int,
                    Type::Float => Type::Float,
                    _ => Type::Number,
                }
            }
            Combinator::Join => {
                if elem.surely_not_str() {
                    self.issues.push(
                        TypeIssue::error(
                            first.span.range(),
                            codes::ARG_TYPE,
                            format!("`join` needs a list of strings, but the elements are {elem}"),
                            format!("list of {elem}"),
                        )
                        .help("R1 never converts values to strings; join only strings"),
                    );
                }
                if let Some(sep) = args.get(1) {
                    let st = self.infer(sep);
                    if st.surely_not_str() {
                        self.issues.push(
                            TypeIssue::error(
                                sep.span.range(),
                                codes::ARG_TYPE,
                                format!(
                                    "the separator of `join` must be a string, but this is {st}"
                                ),
                                format!("{st}, not a string"),
                            )
                            .help("write the separator as a string, e.g. `\", \"`"),
                        );
                    }
                }
                Type::Str
            }
            Combinator::Get => {
                for a in args.iter().skip(1) {
                    self.infer(a);
                }
                Type::Any
            }
            Combinator::ParseJson => {
                if t.surely_not_str() {
                    self.issues.push(
                        TypeIssue::error(
                            first.span.range(),
                            codes::ARG_TYPE,
                            format!("`parse_json` needs a string, but this is {t}"),
                            format!("{t}, not a string"),
                        )
                        .help("parse_json decodes JSON text; the value is already structured"),
                    );
                }
                let _ = span;
                Type::Any
            }
            Combinator::ShellQuote => {
                if t.surely_not_str() {
                    self.issues.push(
                        TypeIssue::error(
                            first.span.range(),
                            codes::ARG_TYPE,
                            format!("`shell_quote` needs a string, but this is {t}"),
                            format!("{t}, not a string"),
                        )
                        .help("R1 never converts values to strings; quote only strings"),
                    );
                }
                Type::Str
            }
        }
    }
}

#[cfg(test)]
mod union_tests {
    use super::*;

    fn issues(src: &str, env: &TypeEnv) -> Vec<&'static str> {
        let e = crate::parse(src).expect("parses");
        check_types(&e, env).1.iter().map(|i| i.code).collect()
    }

    #[test]
    fn a_possible_mismatch_in_a_union_is_not_an_error() {
        let env = TypeEnv::new().with("ok", Type::Bool);
        assert!(issues("(ok and 'A' or 'B') + '!'", &env).is_empty());
        assert_eq!(
            issues("(ok and 'A' or 'B') * 2", &env),
            vec![codes::ARITH_TYPES]
        );
    }
}
