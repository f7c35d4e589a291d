//! MCP's part of tracing: the trace context a message carries in `params._meta` (SEP-414,
//! unprefixed `traceparent` and `tracestate`), and an MCP span's name and attributes from its
//! message, as OpenTelemetry's MCP conventions write them.

use serde_json::Value;

use crate::method::Method;
use crate::trace::names::*;
use crate::trace::{Context, Span};

/// The context in a message's `params._meta`, when it holds a valid one.
pub fn from_meta(params: Option<&Value>) -> Option<Context> {
    let meta = params?.get("_meta")?;
    let parent = meta.get("traceparent")?.as_str()?;
    Context::parse(parent, meta.get("tracestate").and_then(Value::as_str))
}

/// `params` with `_meta.traceparent` (and `tracestate`) set to `context`, for a request to an
/// upstream MCP server: what it sees as its caller is our client span.
pub fn into_meta(params: &mut Value, context: &Context) {
    let Some(params) = params.as_object_mut() else { return };
    let meta = params.entry("_meta").or_insert_with(|| Value::Object(Default::default()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert("traceparent".into(), Value::String(context.traceparent()));
        match &context.state {
            Some(state) => meta.insert("tracestate".into(), Value::String(state.clone())),
            None => meta.remove("tracestate"),
        };
    }
}

/// The conventions' span name, `{mcp.method.name} {target}`: the tool's or prompt's name when
/// the method has one (a resource's URI is left out of the name, as it may be of any number).
pub fn span_name(method: &str, params: Option<&Value>) -> String {
    match target(method, params) {
        Some(target) => format!("{method} {target}"),
        None => method.to_string(),
    }
}

fn target<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    match Method::parse(method) {
        Some(Method::ToolsCall | Method::PromptsGet) => params?.get("name")?.as_str(),
        _ => None,
    }
}

/// Names `span` after the message and sets what the conventions ask of an MCP span: the
/// method, the request id, the tool, prompt or resource, and the transport (HTTP over TCP).
pub fn describe(span: &mut Span, method: &str, params: Option<&Value>, id: Option<&Value>) {
    // An unsampled span is never sent: its name and attributes would be work thrown away.
    if !span.sampled() {
        return;
    }
    span.name = span_name(method, params);
    span.set(MCP_METHOD_NAME, method);
    if let Some(id) = id.filter(|id| !id.is_null()) {
        span.set(JSONRPC_REQUEST_ID, match id {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    }
    let known = Method::parse(method);
    match (known, target(method, params)) {
        (Some(Method::ToolsCall), Some(tool)) => {
            span.set(GEN_AI_TOOL_NAME, tool);
            span.set(GEN_AI_OPERATION_NAME, EXECUTE_TOOL);
        }
        (Some(Method::PromptsGet), Some(prompt)) => span.set(GEN_AI_PROMPT_NAME, prompt),
        _ => {}
    }
    if method.starts_with("resources/") || known == Some(Method::ResourcesUpdated) {
        if let Some(uri) = params.and_then(|p| p.get("uri")).and_then(Value::as_str) {
            span.set(MCP_RESOURCE_URI, uri);
        }
    }
    span.set(NETWORK_TRANSPORT, "tcp");
    span.set(NETWORK_PROTOCOL_NAME, "http");
}

/// What a JSON-RPC reply says of how its request ended: `error.type` (the error's code, or
/// `tool_error` for a tool result with `isError`) and the message for the span's status; `None`
/// when it succeeded. Read only when the span is sampled.
pub fn failure(reply: &str) -> Option<(String, String)> {
    let value: Value = serde_json::from_slice(reply.as_bytes()).ok()?;
    if let Some(error) = value.get("error") {
        return Some(error_of(error));
    }
    (value.pointer("/result/isError") == Some(&Value::Bool(true))).then(|| (TOOL_ERROR.to_string(), "the tool's result is an error".to_string()))
}

/// A JSON-RPC error object as `error.type` (its code, or `_OTHER` without one) and its message.
pub fn error_of(error: &Value) -> (String, String) {
    let code = error.get("code").and_then(Value::as_i64).map_or_else(|| "_OTHER".to_string(), |c| c.to_string());
    let message = error.get("message").and_then(Value::as_str).unwrap_or_default().to_string();
    (code, message)
}

/// Marks `span` failed with `error_type`; one that is a JSON-RPC error's code is also its
/// `rpc.response.status_code`, as the conventions ask.
pub fn fail(span: &mut Span, error_type: String, message: String) {
    if error_type.parse::<i64>().is_ok() {
        span.set(RPC_RESPONSE_STATUS_CODE, error_type.clone());
    }
    span.fail(error_type, message);
}

/// Marks a span with how its reply ended.
pub fn ended(span: &mut Span, reply: &str) {
    if let Some((error_type, message)) = failure(reply) {
        fail(span, error_type, message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Kind, SpanId, TraceId};
    use serde_json::json;

    #[test]
    fn meta_carries_a_context_both_ways() {
        let params = json!({"name": "echo", "_meta": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "a=1"}});
        let context = from_meta(Some(&params)).unwrap();
        assert_eq!(context.state.as_deref(), Some("a=1"));
        assert!(from_meta(Some(&json!({"_meta": {"traceparent": "garbage"}}))).is_none());
        assert!(from_meta(Some(&json!({"_meta": {"traceparent": 7}}))).is_none());
        assert!(from_meta(None).is_none());
        let mut out = json!({"name": "echo", "_meta": {"progressToken": 1, "tracestate": "old=1"}});
        let ours = Context { trace_id: TraceId([1; 16]), span_id: SpanId([2; 8]), flags: 1, state: None };
        into_meta(&mut out, &ours);
        assert_eq!(out, json!({"name": "echo", "_meta": {"progressToken": 1, "traceparent": ours.traceparent()}}));
        let mut bare = json!({});
        into_meta(&mut bare, &ours);
        assert_eq!(bare["_meta"]["traceparent"], ours.traceparent());
    }

    #[test]
    fn spans_are_named_and_attributed_by_the_conventions() {
        let context = Context { trace_id: TraceId([1; 16]), span_id: SpanId([2; 8]), flags: 1, state: None };
        let mut span = Span::start("POST /mcp", Kind::Server, &context, None, 0);
        describe(&mut span, "tools/call", Some(&json!({"name": "echo", "arguments": {"message": "secret words"}})), Some(&json!(7)));
        assert_eq!(span.name, "tools/call echo");
        assert_eq!(span.get(GEN_AI_TOOL_NAME), Some(&"echo".into()));
        assert_eq!(span.get(GEN_AI_OPERATION_NAME), Some(&"execute_tool".into()));
        assert_eq!(span.get(JSONRPC_REQUEST_ID), Some(&"7".into()));
        assert!(span.attributes.iter().all(|(_, v)| *v != "secret words".into()));
        let mut read = Span::start("x", Kind::Server, &context, None, 0);
        describe(&mut read, "resources/read", Some(&json!({"uri": "file:///a"})), Some(&json!("r1")));
        assert_eq!((read.name.as_str(), read.get(MCP_RESOURCE_URI), read.get(JSONRPC_REQUEST_ID)), ("resources/read", Some(&"file:///a".into()), Some(&"r1".into())));
        assert_eq!(span_name("prompts/get", Some(&json!({"name": "p"}))), "prompts/get p");
        assert_eq!(span_name("notifications/initialized", None), "notifications/initialized");
    }

    #[test]
    fn failures_are_read_from_replies() {
        assert_eq!(failure(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#), Some(("-32602".into(), "bad".into())));
        assert_eq!(failure(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#).map(|f| f.0), Some("tool_error".into()));
        assert_eq!(failure(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#), None);
    }
}
