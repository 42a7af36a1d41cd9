//! The TOML document as an owned tree in which every key and value keeps its byte span, so each
//! rule can point at exactly what it is about. toml_edit parses; this is the only module that
//! knows its API.

use pipewright_syntax::{FileId, Span};

#[derive(Debug, Clone)]
pub struct Node {
    pub span: Span,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub enum Kind {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Datetime,
    Array(Vec<Node>),
    Table(Table),
}

#[derive(Debug, Clone, Default)]
pub struct Table {
    pub entries: Vec<Entry>,
}

#[derive(Debug, Clone)]
pub struct Entry {
    pub key: String,
    pub key_span: Span,
    pub value: Node,
}

impl Table {
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|e| &e.value)
    }

    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }
}

impl Node {
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_table(&self) -> Option<&Table> {
        match &self.kind {
            Kind::Table(t) => Some(t),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Node]> {
        match &self.kind {
            Kind::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.kind {
            Kind::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// What a user would call the value's type, for "expected a string, found …".
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::Str(_) => "a string",
            Kind::Int(_) => "an integer",
            Kind::Float(_) => "a float",
            Kind::Bool(_) => "a boolean",
            Kind::Datetime => "a date-time",
            Kind::Array(_) => "an array",
            Kind::Table(_) => "a table",
        }
    }

    /// The value as JSON, for the IR's defaults.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.kind {
            Kind::Str(s) => J::String(s.clone()),
            Kind::Int(i) => J::from(*i),
            Kind::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Kind::Bool(b) => J::Bool(*b),
            Kind::Datetime => J::Null,
            Kind::Array(a) => J::Array(a.iter().map(Node::to_json).collect()),
            Kind::Table(t) => J::Object(
                t.entries
                    .iter()
                    .map(|e| (e.key.clone(), e.value.to_json()))
                    .collect(),
            ),
        }
    }
}

/// A TOML syntax error: where and what.
pub struct SyntaxError {
    pub span: Span,
    pub message: String,
}

pub fn parse(file: FileId, text: &str) -> Result<Table, SyntaxError> {
    let doc = toml_edit::Document::parse(text).map_err(|e| SyntaxError {
        span: Span::new(file, e.span().unwrap_or(0..0)),
        message: e.message().trim().to_string(),
    })?;
    let b = Builder {
        file,
        len: text.len(),
    };
    Ok(b.table(doc.as_table(), 0..0).1)
}

struct Builder {
    file: FileId,
    len: usize,
}

impl Builder {
    fn span(&self, r: Option<std::ops::Range<usize>>, fallback: std::ops::Range<usize>) -> Span {
        let r = r.unwrap_or(fallback);
        let end = r.end.min(self.len);
        Span::new(self.file, r.start.min(end)..end)
    }

    fn table(&self, t: &toml_edit::Table, fallback: std::ops::Range<usize>) -> (Span, Table) {
        let mut entries = Vec::new();
        for (k, item) in t.iter() {
            let key_span = self.span(t.key(k).and_then(|k| k.span()), fallback.clone());
            if let Some(value) = self.item(item, key_span.range()) {
                entries.push(Entry {
                    key: k.to_string(),
                    key_span,
                    value,
                });
            }
        }
        (self.span(t.span(), fallback), Table { entries })
    }

    fn item(&self, item: &toml_edit::Item, fallback: std::ops::Range<usize>) -> Option<Node> {
        Some(match item {
            toml_edit::Item::None => return None,
            toml_edit::Item::Value(v) => self.value(v, fallback),
            toml_edit::Item::Table(t) => {
                let (span, table) = self.table(t, fallback);
                Node {
                    span,
                    kind: Kind::Table(table),
                }
            }
            toml_edit::Item::ArrayOfTables(a) => {
                let items = a
                    .iter()
                    .map(|t| {
                        let (span, table) = self.table(t, fallback.clone());
                        Node {
                            span,
                            kind: Kind::Table(table),
                        }
                    })
                    .collect();
                Node {
                    span: self.span(a.span(), fallback),
                    kind: Kind::Array(items),
                }
            }
        })
    }

    fn value(&self, v: &toml_edit::Value, fallback: std::ops::Range<usize>) -> Node {
        let span = self.span(v.span(), fallback.clone());
        let kind = match v {
            toml_edit::Value::String(s) => Kind::Str(s.value().clone()),
            toml_edit::Value::Integer(i) => Kind::Int(*i.value()),
            toml_edit::Value::Float(f) => Kind::Float(*f.value()),
            toml_edit::Value::Boolean(b) => Kind::Bool(*b.value()),
            toml_edit::Value::Datetime(_) => Kind::Datetime,
            toml_edit::Value::Array(a) => {
                Kind::Array(a.iter().map(|v| self.value(v, span.range())).collect())
            }
            toml_edit::Value::InlineTable(t) => {
                let mut entries = Vec::new();
                for (k, v) in t.iter() {
                    let key_span = self.span(t.key(k).and_then(|k| k.span()), span.range());
                    entries.push(Entry {
                        key: k.to_string(),
                        key_span,
                        value: self.value(v, key_span.range()),
                    });
                }
                Kind::Table(Table { entries })
            }
        };
        Node { span, kind }
    }
}
