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

/// Builds the tool result. `structured` is false for sessions older than 2025-06-18, which
/// predate `structuredContent`.
pub fn to_result(upstream: &Upstream, structured: bool) -> Value {
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
        Upstream::Reply { content_type, body, status, .. } => success(*status, content_type.as_deref(), body, structured),
    }
}

fn success(status: u16, content_type: Option<&str>, body: &[u8], structured: bool) -> Value {
    let media = content_type.map(crate::negotiate::media_type).unwrap_or_default();
    let is_json = media == "application/json" || media.ends_with("+json");
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
