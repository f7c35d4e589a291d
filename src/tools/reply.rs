//! Mapping an upstream HTTP reply (or its failure) into an MCP `CallToolResult`.

use serde_json::{json, Value};

/// How the upstream call ended, as the edge observed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream {
    Reply {
        status: u16,
        content_type: Option<String>,
        body: Vec<u8>,
        /// The body was longer than the reply limit and was cut there.
        truncated_at: Option<u64>,
    },
    TimedOut { after_ms: u64 },
    /// Network error, refused connection, or a body that failed mid-read.
    Failed(String),
}

/// How much of a failing body an error message quotes.
const EXCERPT_BYTES: usize = 512;

/// How a tool's successful upstream reply becomes its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultMode {
    /// JSON → structuredContent and text, text → text, images and audio → their content.
    Map,
    /// The upstream's JSON body is itself a `CallToolResult`, validated and passed through.
    Passthrough,
}

/// Builds the tool result. `structured` is false for sessions older than 2025-06-18, which
/// predate `structuredContent`.
pub fn to_result(upstream: &Upstream, structured: bool) -> Value {
    to_result_with(upstream, ResultMode::Map, structured)
}

pub fn to_result_with(upstream: &Upstream, mode: ResultMode, structured: bool) -> Value {
    match upstream {
        Upstream::TimedOut { after_ms } => error_result(format!("The upstream did not answer within {after_ms} ms.")),
        Upstream::Failed(reason) => error_result(format!("The upstream request failed: {reason}")),
        Upstream::Reply { truncated_at: Some(limit), status, .. } => {
            error_result(format!("The upstream reply (HTTP {status}) exceeds the {limit}-byte limit."))
        }
        Upstream::Reply { status, content_type, body, .. } if !(200..300).contains(status) => {
            let ct = content_type.as_deref().unwrap_or("no content type");
            error_result(format!("The upstream answered HTTP {status} ({ct}): {}", excerpt(body)))
        }
        Upstream::Reply { content_type, body, status, .. } => match mode {
            ResultMode::Map => success(*status, content_type.as_deref(), body, structured),
            ResultMode::Passthrough => match serde_json::from_slice::<Value>(body) {
                Ok(value) => passthrough(value, structured),
                Err(e) => error_result(format!("The upstream answered HTTP {status} with invalid JSON ({e}): {}", excerpt(body))),
            },
        },
    }
}

/// What a whole (non-streamed) reply means for the call: its result, or, for passthrough tools,
/// possibly a request for client input.
pub fn outcome(upstream: &Upstream, mode: ResultMode, structured: bool) -> super::stream::Event {
    if let (ResultMode::Passthrough, Upstream::Reply { status: 200..=299, body, truncated_at: None, .. }) = (mode, upstream) {
        if let Ok(value) = serde_json::from_slice::<Value>(body) {
            if value.get("input").is_some() {
                if let Some(event) = super::stream::classify(&value, structured) {
                    return event;
                }
            }
        }
    }
    super::stream::Event::Result(to_result_with(upstream, mode, structured))
}

/// Validates an upstream's `CallToolResult` and passes it through.
pub fn passthrough(mut value: Value, structured: bool) -> Value {
    if let Err(why) = check_call_tool_result(&value) {
        return error_result(format!("The upstream returned an invalid CallToolResult: {why}"));
    }
    if !structured {
        if let Some(obj) = value.as_object_mut() {
            obj.remove("structuredContent");
        }
    }
    value
}

fn check_call_tool_result(value: &Value) -> Result<(), String> {
    let obj = value.as_object().ok_or("it is not an object")?;
    let content = obj.get("content").and_then(Value::as_array).ok_or("\"content\" must be an array")?;
    for (i, item) in content.iter().enumerate() {
        check_content(item).map_err(|why| format!("content[{i}]: {why}"))?;
    }
    if obj.get("isError").is_some_and(|v| !v.is_boolean()) {
        return Err("\"isError\" must be a boolean".into());
    }
    if obj.get("structuredContent").is_some_and(|v| !v.is_object()) {
        return Err("\"structuredContent\" must be an object".into());
    }
    Ok(())
}

/// Checks one content block against the shapes MCP defines.
pub fn check_content(item: &Value) -> Result<(), String> {
    let field = |name: &str| item.get(name).and_then(Value::as_str);
    let base64 = |name: &str| field(name).is_some_and(crate::base64::is_valid);
    match field("type") {
        Some("text") if field("text").is_some() => Ok(()),
        Some("image" | "audio") if base64("data") && field("mimeType").is_some() => Ok(()),
        Some("resource_link") if field("uri").is_some() && field("name").is_some() => Ok(()),
        Some("resource") => {
            let r = item.get("resource").ok_or("a resource block needs \"resource\"")?;
            let has_uri = r.get("uri").and_then(Value::as_str).is_some();
            let text = r.get("text").and_then(Value::as_str).is_some();
            let blob = r.get("blob").and_then(Value::as_str).is_some_and(crate::base64::is_valid);
            if has_uri && (text ^ blob) {
                Ok(())
            } else {
                Err("an embedded resource needs \"uri\" and either \"text\" or base64 \"blob\"".into())
            }
        }
        Some(kind @ ("text" | "image" | "audio" | "resource_link")) => Err(format!("a {kind} block is missing a required field")),
        Some(other) => Err(format!("unknown content type {other:?}")),
        None => Err("missing \"type\"".into()),
    }
}

fn success(status: u16, content_type: Option<&str>, body: &[u8], structured: bool) -> Value {
    let media = content_type.map(crate::negotiate::media_type).unwrap_or_default();
    let is_json = media == "application/json" || media.ends_with("+json");
    if media.starts_with("image/") || media.starts_with("audio/") {
        let kind = if media.starts_with("image/") { "image" } else { "audio" };
        return json!({"content": [{"type": kind, "data": crate::base64::encode(body), "mimeType": media}]});
    }
    let Ok(text) = std::str::from_utf8(body) else {
        let ct = content_type.unwrap_or("no content type");
        return error_result(format!("The upstream answered HTTP {status} with {} bytes of {ct} that are not UTF-8 text.", body.len()));
    };
    if is_json {
        return match serde_json::from_str::<Value>(text) {
            Ok(value @ Value::Object(_)) if structured => json!({
                "content": [{"type": "text", "text": value.to_string()}],
                "structuredContent": value,
            }),
            Ok(value) => text_result(value.to_string()),
            Err(e) => error_result(format!("The upstream answered HTTP {status} with invalid JSON ({e}): {}", excerpt(body))),
        };
    }
    text_result(text.to_string())
}

pub fn text_result(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

pub fn error_result(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// The start of a body as text, cut on a character boundary, for error messages.
fn excerpt(body: &[u8]) -> String {
    if body.is_empty() {
        return "(empty body)".into();
    }
    let text = String::from_utf8_lossy(body);
    let mut end = text.len().min(EXCERPT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text.get(..end).unwrap_or("");
    if end < text.len() {
        format!("{cut}…")
    } else {
        cut.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16, ct: &str, body: &[u8]) -> Upstream {
        Upstream::Reply { status, content_type: Some(ct.into()), body: body.to_vec(), truncated_at: None }
    }

    #[test]
    fn json_objects_become_structured_content() {
        let r = to_result(&reply(200, "application/json; charset=utf-8", br#"{"b":1,"a":"x"}"#), true);
        assert_eq!(r.to_string(), r#"{"content":[{"type":"text","text":"{\"b\":1,\"a\":\"x\"}"}],"structuredContent":{"b":1,"a":"x"}}"#);
        let r = to_result(&reply(200, "application/json", br#"{"a":1}"#), false);
        assert_eq!(r.to_string(), r#"{"content":[{"type":"text","text":"{\"a\":1}"}]}"#);
        let r = to_result(&reply(200, "application/json", b"[1, 2]"), true);
        assert_eq!(r.to_string(), r#"{"content":[{"type":"text","text":"[1,2]"}]}"#);
    }

    #[test]
    fn images_and_audio_become_their_content() {
        let r = to_result(&reply(200, "image/png", &[1, 2, 3]), true);
        assert_eq!(r, json!({"content": [{"type": "image", "data": "AQID", "mimeType": "image/png"}]}));
        let r = to_result(&reply(200, "audio/wav; codecs=1", &[0xff]), true);
        assert_eq!(r, json!({"content": [{"type": "audio", "data": "/w==", "mimeType": "audio/wav"}]}));
    }

    #[test]
    fn passthrough_validates_the_result() {
        let body = br#"{"content":[{"type":"text","text":"a"},{"type":"image","data":"AQID","mimeType":"image/png"},
            {"type":"resource","resource":{"uri":"x://y","mimeType":"application/json","text":"{}"}}],"structuredContent":{"k":1}}"#;
        let r = to_result_with(&reply(200, "application/json", body), ResultMode::Passthrough, true);
        assert_eq!(r["content"].as_array().unwrap().len(), 3);
        assert_eq!(r["structuredContent"], json!({"k": 1}));
        let r = to_result_with(&reply(200, "application/json", body), ResultMode::Passthrough, false);
        assert!(r.get("structuredContent").is_none());
        let err = to_result_with(&reply(200, "application/json", br#"{"isError":true,"content":[{"type":"text","text":"bad"}]}"#), ResultMode::Passthrough, true);
        assert_eq!(err, json!({"isError": true, "content": [{"type": "text", "text": "bad"}]}));
        let cases = [
            (r#"{"content":"x"}"#, "\"content\" must be an array"),
            (r#"{"content":[{"type":"image","data":"!!","mimeType":"image/png"}]}"#, "content[0]: a image block is missing a required field"),
            (r#"{"content":[{"type":"video"}]}"#, "content[0]: unknown content type \"video\""),
            (r#"{"content":[{"type":"resource","resource":{"uri":"a://b"}}]}"#, "content[0]: an embedded resource needs"),
            (r#"{"content":[],"isError":"yes"}"#, "\"isError\" must be a boolean"),
        ];
        for (body, why) in cases {
            let r = to_result_with(&reply(200, "application/json", body.as_bytes()), ResultMode::Passthrough, true);
            assert_eq!(r["isError"], true);
            let text = r["content"][0]["text"].as_str().unwrap();
            assert!(text.starts_with(&format!("The upstream returned an invalid CallToolResult: {why}")), "{text}");
        }
    }

    #[test]
    fn text_stays_text() {
        let r = to_result(&reply(200, "text/plain", b"hello"), true);
        assert_eq!(r.to_string(), r#"{"content":[{"type":"text","text":"hello"}]}"#);
        let r = to_result(&Upstream::Reply { status: 204, content_type: None, body: vec![], truncated_at: None }, true);
        assert_eq!(r.to_string(), r#"{"content":[{"type":"text","text":""}]}"#);
    }

    #[test]
    fn failures_are_error_results_with_status_and_excerpt() {
        let r = to_result(&reply(500, "text/plain", b"boom"), true);
        assert_eq!(r.to_string(), r#"{"content":[{"type":"text","text":"The upstream answered HTTP 500 (text/plain): boom"}],"isError":true}"#);
        let long = "é".repeat(600);
        let r = to_result(&reply(502, "text/html", long.as_bytes()), true);
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(text.ends_with('…') && text.len() < 600, "{text}");
        let r = to_result(&reply(200, "application/json", b"{not json"), true);
        assert!(r["content"][0]["text"].as_str().unwrap().starts_with("The upstream answered HTTP 200 with invalid JSON"));
        assert_eq!(r["isError"], true);
        let r = to_result(&Upstream::TimedOut { after_ms: 250 }, true);
        assert_eq!(r["content"][0]["text"], "The upstream did not answer within 250 ms.");
        let r = to_result(&Upstream::Failed("connection refused".into()), true);
        assert_eq!(r["content"][0]["text"], "The upstream request failed: connection refused");
        let r = to_result(&reply(200, "application/octet-stream", &[0xff, 0x00]), true);
        assert_eq!(r["isError"], true);
        let r = to_result(&Upstream::Reply { status: 200, content_type: None, body: vec![], truncated_at: Some(10) }, true);
        assert_eq!(r["content"][0]["text"], "The upstream reply (HTTP 200) exceeds the 10-byte limit.");
    }
}
