//! A span as mcp-edge records it: a name, a kind, its place in a trace, when it ran, its
//! attributes and events, and how it ended. Times are Unix nanoseconds; a Worker's clock moves
//! only across I/O, so a span's length is its waiting, which is what a gateway's spans measure.

use crate::trace::context::{Context, SpanId, TraceId};

/// OpenTelemetry's span kinds, numbered as OTLP numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Internal = 1,
    Server = 2,
    Client = 3,
    Consumer = 5,
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Bool(bool),
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Str(s)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(n)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

/// How a span ended: unset (the conventions' choice for success) or an error with its message.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Status {
    #[default]
    Unset,
    Error(String),
}

/// Something that happened during a span: a retry, a redirect.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: &'static str,
    pub time_ns: u64,
    pub attributes: Vec<(&'static str, Value)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub parent: Option<SpanId>,
    pub state: Option<String>,
    pub flags: u8,
    pub name: String,
    pub kind: Kind,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attributes: Vec<(&'static str, Value)>,
    pub events: Vec<Event>,
    /// Other traces this span belongs with: a server span's HTTP context when `_meta` named
    /// another parent, as the MCP conventions ask.
    pub links: Vec<Context>,
    pub status: Status,
}

/// Milliseconds (what a Worker's clock gives) as Unix nanoseconds.
pub fn nanos(ms: u64) -> u64 {
    ms.saturating_mul(1_000_000)
}

impl Span {
    /// A span starting now under `parent`'s context (its trace and flags), with the id `span_id`.
    /// `parent` is `None` for a new trace's root, whose context is `root`.
    pub fn start(name: impl Into<String>, kind: Kind, context: &Context, parent: Option<SpanId>, now_ms: u64) -> Span {
        Span {
            trace_id: context.trace_id,
            span_id: context.span_id,
            parent,
            state: context.state.clone(),
            flags: context.flags,
            name: name.into(),
            kind,
            start_ns: nanos(now_ms),
            end_ns: nanos(now_ms),
            attributes: Vec::new(),
            events: Vec::new(),
            links: Vec::new(),
            status: Status::Unset,
        }
    }

    /// This span's context, as the next hop's parent.
    pub fn context(&self) -> Context {
        Context { trace_id: self.trace_id, span_id: self.span_id, flags: self.flags, state: self.state.clone() }
    }

    /// Whether the span is sampled: only a sampled span is sent, so only it records anything
    /// beyond its context (an unsampled one costs its ids and no attribute).
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    pub fn set(&mut self, key: &'static str, value: impl Into<Value>) {
        if !self.sampled() {
            return;
        }
        let value = value.into();
        match self.attributes.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.attributes.push((key, value)),
        }
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.attributes.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    pub fn event(&mut self, name: &'static str, now_ms: u64, attributes: Vec<(&'static str, Value)>) {
        if !self.sampled() {
            return;
        }
        self.events.push(Event { name, time_ns: nanos(now_ms), attributes });
    }

    /// Ends the span in error: `error.type` (a low-cardinality class) and the status message.
    pub fn fail(&mut self, error_type: impl Into<String>, message: impl Into<String>) {
        if !self.sampled() {
            return;
        }
        self.set(crate::trace::names::ERROR_TYPE, error_type.into());
        self.status = Status::Error(message.into());
    }

    pub fn end(&mut self, now_ms: u64) {
        self.end_ns = nanos(now_ms).max(self.start_ns);
    }
}
