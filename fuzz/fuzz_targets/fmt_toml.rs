//! The MEOW (TOML) formatter: whatever formats, formats again to the same text, and the output
//! holds the same data (compared through a walk of `toml_edit`'s tree written here, not the
//! formatter's own comparison).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pipewright_fmt::{format_source, Options, Syntax};
use pipewright_syntax::FileId;
use std::collections::BTreeMap;
use toml_edit::{DocumentMut, Item, Value};

#[derive(Debug, PartialEq)]
enum Data {
    /// An item `toml_edit` holds as a placeholder (nothing was written).
    Nothing,
    Str(String),
    Int(i64),
    /// Bits, so NaN equals itself and -0.0 differs from 0.0.
    Float(u64),
    Bool(bool),
    Datetime(String),
    List(Vec<Data>),
    Map(BTreeMap<String, Data>),
}

fn value(v: &Value) -> Data {
    match v {
        Value::String(s) => Data::Str(s.value().clone()),
        Value::Integer(i) => Data::Int(*i.value()),
        Value::Float(f) => Data::Float(f.value().to_bits()),
        Value::Boolean(b) => Data::Bool(*b.value()),
        Value::Datetime(d) => Data::Datetime(d.value().to_string()),
        Value::Array(a) => Data::List(a.iter().map(value).collect()),
        Value::InlineTable(t) => {
            Data::Map(t.iter().map(|(k, v)| (k.to_string(), value(v))).collect())
        }
    }
}

fn item(i: &Item) -> Data {
    match i {
        Item::None => Data::Nothing,
        Item::Value(v) => value(v),
        Item::Table(t) => Data::Map(t.iter().map(|(k, v)| (k.to_string(), item(v))).collect()),
        Item::ArrayOfTables(a) => Data::List(
            a.iter()
                .map(|t| Data::Map(t.iter().map(|(k, v)| (k.to_string(), item(v))).collect()))
                .collect(),
        ),
    }
}

fn data(text: &str) -> Result<Data, String> {
    let doc: DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    Ok(item(doc.as_item()))
}

fuzz_target!(|data_in: &[u8]| {
    let Ok(text) = std::str::from_utf8(data_in) else {
        return;
    };
    let formatted = match format_source(FileId(0), text, Syntax::Toml, Options::CANONICAL) {
        Ok(f) => f,
        Err(diags) => {
            pipewright_fuzz::no_internal_error(&diags, text, "meow");
            return;
        }
    };
    let out = &formatted.output;
    match format_source(FileId(0), out, Syntax::Toml, Options::CANONICAL) {
        Ok(again) => assert!(
            again.output == *out,
            "not idempotent on {text:?}\nfirst: {out:?}\nsecond: {:?}",
            again.output
        ),
        Err(d) => panic!("the output of {text:?} does not format: {out:?}\n{d:#?}"),
    }
    match (data(text), data(out)) {
        (Ok(a), Ok(b)) => assert!(
            a == b,
            "{text:?} formatted as {out:?} reads differently\n{a:?}\n{b:?}"
        ),
        (a, b) => panic!("{text:?} formatted as {out:?}: {a:?} / {b:?}"),
    }
});
