//! Mapping an upstream HTTP reply (or its failure) into an MCP `CallToolResult`. Where a result
//! quotes a cut piece of the reply (an error's excerpt, a truncated text), the reply is redacted
//! whole first (`crate::redact`), so the cut never shows the beginning of a secret.

use serde_json::{json, Value};

use crate::redact::Redactor;

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
    /// JSON → structuredContent and text, text → text, images and audio → their content,
    /// other binary → an embedded resource.
    Map,
    /// The upstream's JSON body is itself a `CallToolResult`, validated and passed through.
    Passthrough,
}

/// A tool's reply mapping, compiled from its configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyPlan {
    pub mode: ResultMode,
    /// JSON Pointer to the part of a JSON reply that is the result.
    pub pick: Option<String>,
    pub output_schema: Option<Value>,
    /// Replies longer than this are cut here (and the rest never read).
    pub max_bytes: u64,
    /// Whether a cut text reply is still a result (with a note), rather than an error.
    pub truncate: bool,
    /// The URI of the embedded resource a binary reply becomes.
    pub resource_uri: String,
}

impl ReplyPlan {
    /// The plain mapping: no pick, no schema, errors on oversize.
    pub fn map(max_bytes: u64) -> ReplyPlan {
        ReplyPlan { mode: ResultMode::Map, pick: None, output_schema: None, max_bytes, truncate: false, resource_uri: String::new() }
    }
}

/// Builds the tool result from the whole reply (or how the exchange failed); `secrets` are
/// redacted from what it quotes before it is cut.
pub fn to_result(upstream: &Upstream, plan: &ReplyPlan, secrets: &Redactor) -> Value {
    let quote = |body: &[u8]| excerpt(body, secrets);
    match upstream {
        Upstream::TimedOut { after_ms } => error_result(format!("The upstream did not answer within {after_ms} ms.")),
        Upstream::Failed(reason) => error_result(format!("The upstream request failed: {reason}")),
        Upstream::Reply { status, content_type, body, .. } if !(200..300).contains(status) => {
            let ct = content_type.as_deref().unwrap_or("no content type");
            error_result(format!("The upstream answered HTTP {status} ({ct}): {}", quote(body)))
        }
        Upstream::Reply { truncated_at: Some(limit), status, content_type, body } => {
            let media = content_type.as_deref().map(crate::negotiate::media_type).unwrap_or_default();
            if plan.truncate && plan.mode == ResultMode::Map && is_textual(&media) {
                let text = String::from_utf8_lossy(body);
                // The rest was never read: a secret the cut split shows only its beginning, which
                // is redacted as the tail of an unread text.
                let text = secrets.redact_unread(text.trim_end_matches('\u{FFFD}'));
                text_result(format!("{text}\n\n[mcp-edge: the reply was truncated at {limit} bytes]"))
            } else {
                let ct = content_type.as_deref().unwrap_or("no content type");
                error_result(format!("The upstream reply (HTTP {status}, {ct}) exceeds the {limit}-byte limit."))
            }
        }
        Upstream::Reply { content_type, body, status, .. } => match plan.mode {
            ResultMode::Map => success(*status, content_type.as_deref(), body, plan, secrets),
            ResultMode::Passthrough => match serde_json::from_slice::<Value>(body) {
                Ok(value) => passthrough(value),
                Err(e) => error_result(format!("The upstream answered HTTP {status} with invalid JSON ({e}): {}", quote(body))),
            },
        },
    }
}

/// The last step of every tool result, however it was made: the structured result is checked
/// against the tool's `outputSchema`, and sessions older than 2025-06-18, which predate
/// `structuredContent`, do not get it.
pub fn finalize(mut result: Value, plan: &ReplyPlan, structured: bool) -> Value {
    let failed = result.get("isError") == Some(&Value::Bool(true));
    if let (Some(schema), false) = (&plan.output_schema, failed) {
        let verdict = match result.get("structuredContent") {
            Some(content) => crate::schema::validate(schema, content).map_err(|v| format!("the structured result breaks the tool's outputSchema at {v}")),
            None => Err("the tool declares an outputSchema, but the reply has no structured (JSON object) result".to_string()),
        };
        if let Err(why) = verdict {
            return error_result(format!("The upstream reply does not fit: {why}."));
        }
    }
    if !structured {
        if let Some(obj) = result.as_object_mut() {
            obj.remove("structuredContent");
        }
    }
    result
}

/// Validates an upstream's `CallToolResult` and passes it through.
pub fn passthrough(value: Value) -> Value {
    match check_call_tool_result(&value) {
        Ok(()) => value,
        Err(why) => error_result(format!("The upstream returned an invalid CallToolResult: {why}")),
    }
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

/// Media types whose bodies are text, whatever their charset.
fn is_textual(media: &str) -> bool {
    media.is_empty()
        || media.starts_with("text/")
        || media.ends_with("json")
        || media.ends_with("xml")
        || media.contains("javascript")
        || media == "application/x-www-form-urlencoded"
        || media == "application/x-ndjson"
}

/// Whether a reply's `Content-Type` says its body is UTF-8: a `charset=utf-8` parameter, or a
/// JSON media type (RFC 8259).
fn declares_utf8(content_type: &str, media: &str) -> bool {
    let charset = content_type.split(';').skip(1).filter_map(|p| p.split_once('=')).find(|(k, _)| k.trim().eq_ignore_ascii_case("charset"));
    match charset {
        Some((_, v)) => v.trim().trim_matches('"').eq_ignore_ascii_case("utf-8"),
        None => media == "application/json" || media.ends_with("+json"),
    }
}

fn success(status: u16, content_type: Option<&str>, body: &[u8], plan: &ReplyPlan, secrets: &Redactor) -> Value {
    let quote = |body: &[u8]| excerpt(body, secrets);
    let media = content_type.map(crate::negotiate::media_type).unwrap_or_default();
    if media.starts_with("image/") || media.starts_with("audio/") {
        let kind = if media.starts_with("image/") { "image" } else { "audio" };
        return json!({"content": [{"type": kind, "data": crate::base64::encode(body), "mimeType": media}]});
    }
    let text = match std::str::from_utf8(body) {
        Ok(text) if is_textual(&media) => text,
        // Text that says it is UTF-8 (by its charset, or as JSON, which is UTF-8 by definition)
        // and is not: a broken upstream, whose bytes would mean nothing to the client.
        Err(e) if declares_utf8(content_type.unwrap_or_default(), &media) => {
            return error_result(format!(
                "The upstream's reply is not valid UTF-8, as its Content-Type ({}) says it is: an invalid byte at offset {}.",
                content_type.unwrap_or_default(),
                e.valid_up_to()
            ));
        }
        // Binary: a PDF, a zip, a text/* body in another charset or none.
        _ => {
            let mime = if media.is_empty() { "application/octet-stream" } else { media.as_str() };
            let resource = json!({"uri": plan.resource_uri, "mimeType": mime, "blob": crate::base64::encode(body)});
            return json!({"content": [{"type": "resource", "resource": resource}]});
        }
    };
    if media != "application/json" && !media.ends_with("+json") {
        return text_result(text.to_string());
    }
    let value = match serde_json::from_slice::<Value>(text.as_bytes()) {
        Ok(value) => value,
        Err(e) => return error_result(format!("The upstream answered HTTP {status} with invalid JSON ({e}): {}", quote(body))),
    };
    let value = match &plan.pick {
        None => value,
        Some(pointer) => match value.pointer(pointer) {
            Some(part) => part.clone(),
            None => return error_result(format!("The upstream reply has nothing at {pointer} (response.pick): {}", quote(body))),
        },
    };
    match value {
        Value::Object(_) => structured_result(value),
        Value::String(text) => text_result(text),
        other => text_result(other.to_string()),
    }
}

/// A JSON object as a mapped reply carries it: `structuredContent`, and the same JSON as text.
pub fn structured_result(value: Value) -> Value {
    json!({"content": [{"type": "text", "text": value.to_string()}], "structuredContent": value})
}

pub fn text_result(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

pub fn error_result(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// The start of a body as text, for error messages: redacted whole, then cut on a character
/// boundary.
fn excerpt(body: &[u8], secrets: &Redactor) -> String {
    if body.is_empty() {
        return "(empty body)".into();
    }
    let text = String::from_utf8_lossy(body);
    let text = secrets.redact(&text);
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

    fn plan() -> ReplyPlan {
        ReplyPlan { resource_uri: "mcp-edge://tools/t/reply".into(), ..ReplyPlan::map(1000) }
    }

    fn map(upstream: &Upstream) -> Value {
        to_result(upstream, &plan())
    }

    fn to_result(upstream: &Upstream, plan: &ReplyPlan) -> Value {
        super::to_result(upstream, plan, &Redactor::default())
    }

    #[test]
    fn json_objects_become_structured_content() {
        let r = map(&reply(200, "application/json; charset=utf-8", br#"{"b":1,"a":"x"}"#));
        assert_eq!(r.to_string(), r#"{"content":[{"type":"text","text":"{\"b\":1,\"a\":\"x\"}"}],"structuredContent":{"b":1,"a":"x"}}"#);
        let r = finalize(map(&reply(200, "application/json", br#"{"a":1}"#)), &plan(), false);
        assert_eq!(r.to_string(), r#"{"content":[{"type":"text","text":"{\"a\":1}"}]}"#);
        let r = map(&reply(200, "application/json", b"[1, 2]"));
        assert_eq!(r.to_string(), r#"{"content":[{"type":"text","text":"[1,2]"}]}"#);
    }

    #[test]
    fn pick_takes_the_part_that_matters() {
        let body = br#"{"ok":true,"data":{"items":[{"id":7,"name":"a"}],"note":"hi"}}"#;
        let picked = |pointer: &str| to_result(&reply(200, "application/json", body), &ReplyPlan { pick: Some(pointer.into()), ..plan() });
        assert_eq!(picked("/data/items/0"), json!({"content": [{"type": "text", "text": r#"{"id":7,"name":"a"}"#}], "structuredContent": {"id": 7, "name": "a"}}));
        assert_eq!(picked("/data/note"), json!({"content": [{"type": "text", "text": "hi"}]}));
        assert_eq!(picked("/data/items"), json!({"content": [{"type": "text", "text": r#"[{"id":7,"name":"a"}]"#}]}));
        let missing = picked("/result");
        assert_eq!(missing["isError"], true);
        assert!(missing["content"][0]["text"].as_str().unwrap().starts_with("The upstream reply has nothing at /result (response.pick): {\"ok\""));
    }

    #[test]
    fn output_schema_is_enforced() {
        let schema = json!({"type": "object", "properties": {"temp": {"type": "number"}}, "required": ["temp"]});
        let strict = ReplyPlan { output_schema: Some(schema), ..plan() };
        let ok = finalize(map(&reply(200, "application/json", br#"{"temp": 21.5}"#)), &strict, true);
        assert_eq!(ok["structuredContent"], json!({"temp": 21.5}));
        let bad = finalize(map(&reply(200, "application/json", br#"{"temp": "warm"}"#)), &strict, true);
        assert_eq!(bad, error_result("The upstream reply does not fit: the structured result breaks the tool's outputSchema at /temp: expected number, got string (type).".into()));
        let text = finalize(map(&reply(200, "text/plain", b"21.5")), &strict, true);
        assert_eq!(text, error_result("The upstream reply does not fit: the tool declares an outputSchema, but the reply has no structured (JSON object) result.".into()));
        let failed = finalize(map(&reply(500, "text/plain", b"down")), &strict, true);
        assert_eq!(failed["content"][0]["text"], "The upstream answered HTTP 500 (text/plain): down", "a failure stays the failure");
    }

    #[test]
    fn images_audio_and_binary_become_their_content() {
        let r = map(&reply(200, "image/png", &[1, 2, 3]));
        assert_eq!(r, json!({"content": [{"type": "image", "data": "AQID", "mimeType": "image/png"}]}));
        let r = map(&reply(200, "audio/wav; codecs=1", &[0xff]));
        assert_eq!(r, json!({"content": [{"type": "audio", "data": "/w==", "mimeType": "audio/wav"}]}));
        let r = map(&reply(200, "application/pdf", b"%PDF"));
        assert_eq!(r, json!({"content": [{"type": "resource", "resource": {"uri": "mcp-edge://tools/t/reply", "mimeType": "application/pdf", "blob": "JVBERg=="}}]}));
        let r = map(&Upstream::Reply { status: 200, content_type: None, body: vec![0xff, 0], truncated_at: None });
        assert_eq!(r["content"][0]["resource"]["mimeType"], "application/octet-stream");
        assert_eq!(check_content(&r["content"][0]), Ok(()));
    }

    #[test]
    fn text_that_claims_utf8_and_is_not_is_a_tool_error() {
        let bad = [b'o', b'k', b' ', 0xff, 0xfe];
        let r = map(&reply(200, "text/plain; charset=UTF-8", &bad));
        assert_eq!(r, error_result("The upstream's reply is not valid UTF-8, as its Content-Type (text/plain; charset=UTF-8) says it is: an invalid byte at offset 3.".into()));
        assert_eq!(map(&reply(200, "application/json", &bad))["isError"], true);
        assert_eq!(map(&reply(200, "text/csv; charset=\"utf-8\"", &bad))["isError"], true);
        // Another charset, or none: the bytes as they came, for the client to read.
        assert_eq!(map(&reply(200, "text/plain; charset=latin1", &bad))["content"][0]["resource"]["blob"], "b2sg//4=");
        assert_eq!(map(&reply(200, "text/plain", &bad))["content"][0]["type"], "resource");
    }

    #[test]
    fn oversize_replies_are_cut_or_refused() {
        let cut = |ct: &str, body: &[u8]| Upstream::Reply { status: 200, content_type: Some(ct.into()), body: body.to_vec(), truncated_at: Some(4) };
        let truncating = ReplyPlan { truncate: true, ..plan() };
        let r = to_result(&cut("text/plain", b"abcd"), &truncating);
        assert_eq!(r, text_result("abcd\n\n[mcp-edge: the reply was truncated at 4 bytes]".into()));
        // A cut inside a UTF-8 sequence drops the partial character.
        let r = to_result(&cut("application/json", &"aé".as_bytes()[..2]), &truncating);
        assert_eq!(r["content"][0]["text"], "a\n\n[mcp-edge: the reply was truncated at 4 bytes]");
        let r = to_result(&cut("image/png", b"abcd"), &truncating);
        assert_eq!(r["content"][0]["text"], "The upstream reply (HTTP 200, image/png) exceeds the 4-byte limit.");
        let r = to_result(&cut("text/plain", b"abcd"), &plan());
        assert_eq!(r, error_result("The upstream reply (HTTP 200, text/plain) exceeds the 4-byte limit.".into()));
    }

    #[test]
    fn passthrough_validates_the_result() {
        let through = |body: &[u8]| to_result(&reply(200, "application/json", body), &ReplyPlan { mode: ResultMode::Passthrough, ..plan() });
        let body = br#"{"content":[{"type":"text","text":"a"},{"type":"image","data":"AQID","mimeType":"image/png"},
            {"type":"resource","resource":{"uri":"x://y","mimeType":"application/json","text":"{}"}}],"structuredContent":{"k":1}}"#;
        let r = through(body);
        assert_eq!(r["content"].as_array().unwrap().len(), 3);
        assert_eq!(r["structuredContent"], json!({"k": 1}));
        assert!(finalize(r, &plan(), false).get("structuredContent").is_none());
        let err = through(br#"{"isError":true,"content":[{"type":"text","text":"bad"}]}"#);
        assert_eq!(err, json!({"isError": true, "content": [{"type": "text", "text": "bad"}]}));
        let cases = [
            (r#"{"content":"x"}"#, "\"content\" must be an array"),
            (r#"{"content":[{"type":"image","data":"!!","mimeType":"image/png"}]}"#, "content[0]: a image block is missing a required field"),
            (r#"{"content":[{"type":"video"}]}"#, "content[0]: unknown content type \"video\""),
            (r#"{"content":[{"type":"resource","resource":{"uri":"a://b"}}]}"#, "content[0]: an embedded resource needs"),
            (r#"{"content":[],"isError":"yes"}"#, "\"isError\" must be a boolean"),
        ];
        for (body, why) in cases {
            let r = through(body.as_bytes());
            assert_eq!(r["isError"], true);
            let text = r["content"][0]["text"].as_str().unwrap();
            assert!(text.starts_with(&format!("The upstream returned an invalid CallToolResult: {why}")), "{text}");
        }
    }

    #[test]
    fn text_stays_text() {
        let r = map(&reply(200, "text/plain", b"hello"));
        assert_eq!(r.to_string(), r#"{"content":[{"type":"text","text":"hello"}]}"#);
        let r = map(&Upstream::Reply { status: 204, content_type: None, body: vec![], truncated_at: None });
        assert_eq!(r.to_string(), r#"{"content":[{"type":"text","text":""}]}"#);
    }

    #[test]
    fn failures_are_error_results_with_status_and_excerpt() {
        let r = map(&reply(500, "text/plain", b"boom"));
        assert_eq!(r.to_string(), r#"{"content":[{"type":"text","text":"The upstream answered HTTP 500 (text/plain): boom"}],"isError":true}"#);
        let long = "é".repeat(600);
        let r = map(&reply(502, "text/html", long.as_bytes()));
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(text.ends_with('…') && text.len() < 600, "{text}");
        let r = map(&reply(200, "application/json", b"{not json"));
        assert!(r["content"][0]["text"].as_str().unwrap().starts_with("The upstream answered HTTP 200 with invalid JSON"));
        assert_eq!(r["isError"], true);
        let r = map(&Upstream::TimedOut { after_ms: 250 });
        assert_eq!(r["content"][0]["text"], "The upstream did not answer within 250 ms.");
        let r = map(&Upstream::Failed("connection refused".into()));
        assert_eq!(r["content"][0]["text"], "The upstream request failed: connection refused");
    }

    #[test]
    fn what_a_result_quotes_is_redacted_before_it_is_cut() {
        let secrets = Redactor::new(["s3cr3t-key"]);
        // The secret straddles the excerpt's 512th byte: redacted whole, then cut.
        let body = format!("{}s3cr3t-key{}", "x".repeat(500), "y".repeat(100));
        let r = super::to_result(&reply(500, "text/plain", body.as_bytes()), &plan(), &secrets);
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(text.ends_with(&format!("{}[redacted]yy…", "x".repeat(500))), "{text}");
        // A reply cut at the limit inside the secret: its unread rest cannot be matched, so the
        // beginning it shows goes as an unread tail.
        let cut = Upstream::Reply { status: 200, content_type: Some("text/plain".into()), body: b"key: s3cr3t-".to_vec(), truncated_at: Some(12) };
        let r = super::to_result(&cut, &ReplyPlan { truncate: true, ..plan() }, &secrets);
        assert_eq!(r, text_result("key: [redacted]\n\n[mcp-edge: the reply was truncated at 12 bytes]".into()));
    }
}
