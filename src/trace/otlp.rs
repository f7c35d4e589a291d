//! Spans as OTLP's `ExportTraceServiceRequest`, in protobuf (`application/x-protobuf`) or in
//! OTLP's JSON encoding (`application/json`: ids in hex, 64-bit numbers as strings, enums as
//! numbers). Every text that leaves goes through the deployment's redactor here, the one exit:
//! span names, attribute values, event attributes, status messages.

use crate::redact::Redactor;
use crate::trace::span::{Event, Span, Status, Value};
use crate::trace::wire::Writer;
use crate::trace::Context;

/// Who exported the spans: the `Resource`'s attributes, and the instrumentation scope.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    pub attributes: Vec<(&'static str, String)>,
    pub scope: &'static str,
    pub version: &'static str,
}

impl Source {
    /// mcp-edge as a service: `service.name` as configured, `service.version` this build's.
    pub fn mcp_edge(service_name: &str) -> Source {
        let version = env!("CARGO_PKG_VERSION");
        Source {
            attributes: vec![(crate::trace::names::SERVICE_NAME, service_name.to_string()), (crate::trace::names::SERVICE_VERSION, version.to_string())],
            scope: "mcp-edge",
            version,
        }
    }
}

/// The status codes OTLP numbers.
const STATUS_ERROR: u64 = 2;

/// A `KeyValue` message.
pub fn key_value(w: &mut Writer, field: u32, key: &str, value: &Value, secrets: &Redactor) {
    w.message(field, |kv| {
        kv.string(1, key);
        kv.message(2, |any| match value {
            Value::Str(s) => any.string(1, &secrets.redact(s)),
            Value::Bool(b) => any.bool(2, *b),
            Value::Int(n) => any.int(3, *n),
        });
    });
}

/// `spans` as a protobuf `ExportTraceServiceRequest`.
pub fn protobuf(source: &Source, spans: &[Span], secrets: &Redactor) -> Vec<u8> {
    let mut w = Writer::new();
    w.message(1, |rs| {
        rs.message(1, |resource| {
            for (key, value) in &source.attributes {
                key_value(resource, 1, key, &Value::Str(value.clone()), secrets);
            }
        });
        rs.message(2, |ss| {
            ss.message(1, |scope| {
                scope.string(1, source.scope);
                scope.string(2, source.version);
            });
            for span in spans {
                ss.message(2, |s| span_message(s, span, secrets));
            }
        });
    });
    w.into_bytes()
}

fn span_message(s: &mut Writer, span: &Span, secrets: &Redactor) {
    s.bytes(1, &span.trace_id.0);
    s.bytes(2, &span.span_id.0);
    if let Some(state) = &span.state {
        s.string(3, state);
    }
    if let Some(parent) = &span.parent {
        s.bytes(4, &parent.0);
    }
    s.string(5, &secrets.redact(&span.name));
    s.uint(6, span.kind as u64);
    s.fixed64(7, span.start_ns);
    s.fixed64(8, span.end_ns);
    for (key, value) in &span.attributes {
        key_value(s, 9, key, value, secrets);
    }
    for event in &span.events {
        s.message(11, |e| event_message(e, event, secrets));
    }
    for link in &span.links {
        s.message(13, |l| link_message(l, link));
    }
    if let Status::Error(message) = &span.status {
        s.message(15, |status| {
            status.string(2, &secrets.redact(message));
            status.uint(3, STATUS_ERROR);
        });
    }
    s.fixed32(16, u32::from(span.flags & 1));
}

fn event_message(e: &mut Writer, event: &Event, secrets: &Redactor) {
    e.fixed64(1, event.time_ns);
    e.string(2, event.name);
    for (key, value) in &event.attributes {
        key_value(e, 3, key, value, secrets);
    }
}

fn link_message(l: &mut Writer, link: &Context) {
    l.bytes(1, &link.trace_id.0);
    l.bytes(2, &link.span_id.0);
    if let Some(state) = &link.state {
        l.string(3, state);
    }
    l.fixed32(6, u32::from(link.flags & 1));
}

/// A JSON string, escaped as JSON needs.
fn string(out: &mut String, text: &str) {
    out.push_str(&serde_json::to_string(text).unwrap_or_default());
}

fn field(out: &mut String, name: &str) {
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
}

/// `[{"key":…,"value":{"stringValue":…}}, …]`: 64-bit integers as strings, as OTLP/JSON writes.
fn attributes<'a>(out: &mut String, attributes: impl Iterator<Item = (&'a str, &'a Value)>, secrets: &Redactor) {
    out.push('[');
    for (i, (key, value)) in attributes.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"key\":");
        string(out, key);
        out.push_str(",\"value\":{");
        match value {
            Value::Str(s) => {
                field(out, "stringValue");
                string(out, &secrets.redact(s));
            }
            Value::Bool(b) => {
                field(out, "boolValue");
                out.push_str(if *b { "true" } else { "false" });
            }
            Value::Int(n) => {
                field(out, "intValue");
                string(out, &n.to_string());
            }
        }
        out.push_str("}}");
    }
    out.push(']');
}

fn hex_field(out: &mut String, name: &str, bytes: &[u8]) {
    field(out, name);
    string(out, &crate::hex::encode(bytes));
    out.push(',');
}

/// `spans` in OTLP's JSON encoding, written straight out: ids in hex, times as strings.
pub fn json(source: &Source, spans: &[Span], secrets: &Redactor) -> String {
    let mut out = String::with_capacity(512 * spans.len() + 256);
    out.push_str("{\"resourceSpans\":[{\"resource\":{\"attributes\":");
    let resource: Vec<(&str, Value)> = source.attributes.iter().map(|(k, v)| (*k, Value::Str(v.clone()))).collect();
    attributes(&mut out, resource.iter().map(|(k, v)| (*k, v)), secrets);
    out.push_str("},\"scopeSpans\":[{\"scope\":{\"name\":");
    string(&mut out, source.scope);
    out.push_str(",\"version\":");
    string(&mut out, source.version);
    out.push_str("},\"spans\":[");
    for (i, span) in spans.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('{');
        hex_field(&mut out, "traceId", &span.trace_id.0);
        hex_field(&mut out, "spanId", &span.span_id.0);
        if let Some(parent) = &span.parent {
            hex_field(&mut out, "parentSpanId", &parent.0);
        }
        if let Some(state) = &span.state {
            field(&mut out, "traceState");
            string(&mut out, state);
            out.push(',');
        }
        field(&mut out, "name");
        string(&mut out, &secrets.redact(&span.name));
        out.push_str(&format!(",\"kind\":{},\"flags\":{},\"startTimeUnixNano\":\"{}\",\"endTimeUnixNano\":\"{}\",\"attributes\":", span.kind as u8, span.flags & 1, span.start_ns, span.end_ns));
        attributes(&mut out, span.attributes.iter().map(|(k, v)| (*k, v)), secrets);
        if !span.events.is_empty() {
            out.push_str(",\"events\":[");
            for (i, e) in span.events.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&format!("{{\"timeUnixNano\":\"{}\",\"name\":", e.time_ns));
                string(&mut out, e.name);
                out.push_str(",\"attributes\":");
                attributes(&mut out, e.attributes.iter().map(|(k, v)| (*k, v)), secrets);
                out.push('}');
            }
            out.push(']');
        }
        if !span.links.is_empty() {
            out.push_str(",\"links\":[");
            for (i, l) in span.links.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push('{');
                hex_field(&mut out, "traceId", &l.trace_id.0);
                hex_field(&mut out, "spanId", &l.span_id.0);
                out.push_str(&format!("\"flags\":{}}}", l.flags & 1));
            }
            out.push(']');
        }
        if let Status::Error(message) = &span.status {
            out.push_str(&format!(",\"status\":{{\"code\":{STATUS_ERROR},\"message\":"));
            string(&mut out, &secrets.redact(message));
            out.push('}');
        }
        out.push('}');
    }
    out.push_str("]}]}]}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value as Json};
    use crate::trace::span::Kind;
    use crate::trace::{SpanId, TraceId};

    fn sample() -> Span {
        let context = Context { trace_id: TraceId([1; 16]), span_id: SpanId([2; 8]), flags: 1, state: None };
        let mut span = Span::start("tools/call echo", Kind::Server, &context, Some(SpanId([3; 8])), 1_000);
        span.set("mcp.method.name", "tools/call");
        span.set("server.port", 443i64);
        span.set("secret.carrier", "Bearer hunter22");
        span.event("retry", 1_001, vec![("http.request.resend_count", Value::Int(1))]);
        span.fail("tool_error", "upstream said hunter22");
        span.end(1_002);
        span
    }

    #[test]
    fn protobuf_is_byte_exact() {
        let source = Source { attributes: vec![("service.name", "e".into())], scope: "s", version: "1" };
        let mut span = Span::start("n", Kind::Client, &Context { trace_id: TraceId([1; 16]), span_id: SpanId([2; 8]), flags: 1, state: None }, None, 0);
        span.end_ns = 5;
        let bytes = protobuf(&source, &[span], &Redactor::default());
        let span_bytes: Vec<u8> = [vec![0x0a, 16], vec![1; 16], vec![0x12, 8], vec![2; 8], vec![0x2a, 1, b'n', 0x30, 3, 0x41, 5, 0, 0, 0, 0, 0, 0, 0, 0x85, 0x01, 1, 0, 0, 0]].concat();
        let resource = [vec![0x0a, 19, 0x0a, 12], b"service.name".to_vec(), vec![0x12, 3, 0x0a, 1, b'e']].concat();
        let scope = vec![0x0a, 6, 0x0a, 1, b's', 0x12, 1, b'1'];
        let scope_spans = [scope, vec![0x12, span_bytes.len() as u8], span_bytes].concat();
        let resource_spans = [vec![0x0a, resource.len() as u8], resource, vec![0x12, scope_spans.len() as u8], scope_spans].concat();
        let expected = [vec![0x0a, resource_spans.len() as u8], resource_spans].concat();
        assert_eq!(bytes, expected);
    }

    #[test]
    fn every_text_is_redacted_on_the_way_out() {
        let secrets = Redactor::new(["hunter22"]);
        let source = Source::mcp_edge("mcp-edge");
        let bytes = protobuf(&source, &[sample()], &secrets);
        assert!(!bytes.windows(8).any(|w| w == b"hunter22"));
        let text = json(&source, &[sample()], &secrets);
        assert!(!text.contains("hunter22"), "{text}");
    }

    #[test]
    fn json_follows_otlp_json() {
        let text = json(&Source::mcp_edge("edge"), &[sample()], &Redactor::default());
        let value: Json = serde_json::from_str(&text).unwrap();
        let span = &value["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        assert_eq!(span["traceId"], "01010101010101010101010101010101");
        assert_eq!(span["spanId"], "0202020202020202");
        assert_eq!(span["parentSpanId"], "0303030303030303");
        assert_eq!(span["kind"], 2);
        assert_eq!(span["startTimeUnixNano"], "1000000000");
        assert_eq!(span["attributes"][1], json!({"key": "server.port", "value": {"intValue": "443"}}));
        assert_eq!(span["events"][0]["name"], "retry");
        assert_eq!(span["status"], json!({"code": 2, "message": "upstream said hunter22"}));
        assert_eq!(value["resourceSpans"][0]["resource"]["attributes"][0], json!({"key": "service.name", "value": {"stringValue": "edge"}}));
    }
}
