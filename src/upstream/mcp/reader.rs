//! An upstream MCP server's replies as the messages they carry. A POST is answered with one JSON
//! body (a message, or a batch) or with an SSE stream of messages, read as bytes arrive.

use serde_json::Value;

/// One SSE event: its `event` field (absent: `message`), its joined `data` lines, its `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
    pub id: Option<String>,
}

/// Reads an SSE stream chunk by chunk (WHATWG event-stream parsing: `\n`, `\r\n` or `\r` line
/// ends, `data` lines joined with `\n`, comments and unknown fields ignored).
#[derive(Debug, Default)]
pub struct SseReader {
    buffer: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
    id: Option<String>,
    /// The last byte was `\r`: a `\n` right after it ends no second line.
    after_cr: bool,
}

impl SseReader {
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &byte in chunk {
            if self.after_cr && byte == b'\n' {
                self.after_cr = false;
                continue;
            }
            self.after_cr = byte == b'\r';
            if byte == b'\n' || byte == b'\r' {
                let line = String::from_utf8_lossy(&std::mem::take(&mut self.buffer)).into_owned();
                events.extend(self.line(&line));
            } else {
                self.buffer.push(byte);
            }
        }
        events
    }

    /// The stream ended: an event without its closing blank line is dropped, as the spec says.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        Vec::new()
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            if self.data.is_empty() {
                self.event = None;
                return None;
            }
            return Some(SseEvent { event: self.event.take(), data: std::mem::take(&mut self.data).join("\n"), id: self.id.clone() });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = line.split_once(':').map_or((line, ""), |(f, v)| (f, v.strip_prefix(' ').unwrap_or(v)));
        match field {
            "data" => self.data.push(value.to_string()),
            "event" => self.event = Some(value.to_string()),
            "id" if !value.contains('\0') => self.id = Some(value.to_string()),
            _ => {}
        }
        None
    }
}

/// A JSON-RPC message from the upstream, by its kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The answer to one of our requests: its id, and its result or error object.
    Response { id: Value, outcome: Result<Value, Value> },
    /// The upstream asks something of the client (sampling, elicitation, roots, ping).
    Request { id: Value, method: String, params: Value },
    Notification { method: String, params: Value },
}

/// The messages one JSON text carries: a message, or a batch of them. Anything else is the
/// upstream speaking nonsense, said in `Err`.
pub fn messages(text: &str) -> Result<Vec<Message>, String> {
    let value: Value = serde_json::from_slice(text.as_bytes()).map_err(|e| format!("it sent something that is not JSON ({e})"))?;
    match value {
        Value::Array(batch) => batch.into_iter().map(message).collect(),
        single => Ok(vec![message(single)?]),
    }
}

fn message(value: Value) -> Result<Message, String> {
    let Value::Object(mut obj) = value else { return Err("it sent a JSON-RPC message that is not an object".into()) };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err("it sent a message that is not JSON-RPC 2.0".into());
    }
    let params = obj.remove("params").unwrap_or(Value::Null);
    match (obj.remove("id"), obj.remove("method")) {
        (Some(id), Some(Value::String(method))) => Ok(Message::Request { id, method, params }),
        (None, Some(Value::String(method))) => Ok(Message::Notification { method, params }),
        (Some(id), None) => match (obj.remove("result"), obj.remove("error")) {
            (Some(result), None) => Ok(Message::Response { id, outcome: Ok(result) }),
            (None, Some(error)) if error.is_object() => Ok(Message::Response { id, outcome: Err(error) }),
            _ => Err("it sent a response with neither a result nor an error".into()),
        },
        _ => Err("it sent a JSON-RPC message with no method and no id".into()),
    }
}

/// An error object's message, for the `isError` result that says what went wrong.
pub fn error_text(error: &Value) -> String {
    let message = error.get("message").and_then(Value::as_str).unwrap_or("an error");
    match error.get("code").and_then(Value::as_i64) {
        Some(code) => format!("{message} (JSON-RPC error {code})"),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sse_events_across_chunks_and_line_ends() {
        let mut reader = SseReader::default();
        let mut events = reader.feed(b": comment\nevent: message\nid: 1\ndata: {\"a\":");
        assert!(events.is_empty());
        events.extend(reader.feed(b"1}\n\ndata: x\r\ndata: y\r\n\r"));
        events.extend(reader.feed(b"\nevent: endpoint\rdata: /message?sessionId=9\r\r"));
        assert_eq!(
            events,
            vec![
                SseEvent { event: Some("message".into()), data: "{\"a\":1}".into(), id: Some("1".into()) },
                SseEvent { event: None, data: "x\ny".into(), id: Some("1".into()) },
                SseEvent { event: Some("endpoint".into()), data: "/message?sessionId=9".into(), id: Some("1".into()) },
            ]
        );
        // An event with no data dispatches nothing; an unfinished one is dropped at the end.
        assert!(reader.feed(b"event: ping\n\ndata: half").is_empty());
        assert!(reader.finish().is_empty());
    }

    #[test]
    fn messages_by_kind() {
        let text = r#"[{"jsonrpc":"2.0","id":1,"result":{"ok":true}},{"jsonrpc":"2.0","id":"e","error":{"code":-32601,"message":"nope"}},
                      {"jsonrpc":"2.0","id":9,"method":"elicitation/create","params":{"message":"?"}},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}]"#;
        assert_eq!(
            messages(text).unwrap(),
            vec![
                Message::Response { id: json!(1), outcome: Ok(json!({"ok": true})) },
                Message::Response { id: json!("e"), outcome: Err(json!({"code": -32601, "message": "nope"})) },
                Message::Request { id: json!(9), method: "elicitation/create".into(), params: json!({"message": "?"}) },
                Message::Notification { method: "notifications/progress".into(), params: json!({"progress": 1}) },
            ]
        );
        assert!(messages("<html>").unwrap_err().contains("not JSON"));
        assert!(messages(r#"{"id":1,"result":{}}"#).unwrap_err().contains("not JSON-RPC 2.0"));
        assert!(messages(r#"{"jsonrpc":"2.0","id":1}"#).unwrap_err().contains("neither a result nor an error"));
        assert!(messages(r#"{"jsonrpc":"2.0"}"#).unwrap_err().contains("no method and no id"));
        assert!(messages("3").is_err());
        assert_eq!(error_text(&json!({"code": -32602, "message": "bad args"})), "bad args (JSON-RPC error -32602)");
    }
}
