//! The exact bytes of each framing: an SSE event, an NDJSON line, a buffered JSON body.

use crate::negotiate::Framing;
use crate::redact::Redacted;

/// One Server-Sent Event. Fields are written in the order the SSE spec's examples use.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SseEvent<'a> {
    pub id: Option<&'a str>,
    pub event: Option<&'a str>,
    pub retry_ms: Option<u64>,
    pub data: &'a str,
}

impl SseEvent<'_> {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = String::with_capacity(self.data.len() + 16);
        if let Some(id) = self.id {
            out.push_str("id: ");
            out.push_str(id);
            out.push('\n');
        }
        if let Some(event) = self.event {
            out.push_str("event: ");
            out.push_str(event);
            out.push('\n');
        }
        if let Some(retry) = self.retry_ms {
            out.push_str(&format!("retry: {retry}\n"));
        }
        // A data value with line breaks must become several `data:` lines, or the client would
        // read the rest as new fields. Our JSON never has raw newlines; other payloads may.
        for line in self.data.split('\n') {
            out.push_str("data: ");
            out.push_str(line.strip_suffix('\r').unwrap_or(line));
            out.push('\n');
        }
        out.push('\n');
        out.into_bytes()
    }
}

/// An SSE comment line, used as a keepalive that clients ignore.
pub fn sse_comment(text: &str) -> Vec<u8> {
    format!(": {text}\n\n").into_bytes()
}

/// A bare `retry:` field: sets the client's reconnection delay without dispatching an event.
pub fn sse_retry(ms: u64) -> Vec<u8> {
    format!("retry: {ms}\n\n").into_bytes()
}

/// One NDJSON line.
pub fn ndjson_line(json: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() + 1);
    out.extend_from_slice(json.as_bytes());
    out.push(b'\n');
    out
}

/// One message in a streaming framing.
pub fn stream_chunk(framing: Framing, json: &str) -> Vec<u8> {
    match framing {
        Framing::Sse => SseEvent { data: json, ..Default::default() }.to_bytes(),
        Framing::Ndjson | Framing::Json => ndjson_line(json),
    }
}

/// Bytes that carry no message: an SSE comment, or an empty line between NDJSON lines (which
/// NDJSON readers skip). Written where a stream must show whether its client is still there.
pub fn probe(framing: Framing) -> Vec<u8> {
    match framing {
        Framing::Sse => sse_comment("keepalive"),
        Framing::Ndjson | Framing::Json => b"\n".to_vec(),
    }
}

/// The buffered JSON body for a set of replies: the reply itself, or an array for a batch.
/// Redacted replies only: a buffered body is an exit (`crate::redact`).
pub fn json_body(replies: &[Redacted], batch: bool) -> Vec<u8> {
    match replies {
        [single] if !batch => single.as_str().as_bytes().to_vec(),
        many => format!("[{}]", many.iter().map(Redacted::as_str).collect::<Vec<_>>().join(",")).into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ndjson_bytes() {
        assert_eq!(ndjson_line(r#"{"a":1}"#), b"{\"a\":1}\n");
        assert_eq!(stream_chunk(Framing::Ndjson, "{}"), b"{}\n");
    }

    #[test]
    fn sse_bytes() {
        assert_eq!(stream_chunk(Framing::Sse, r#"{"a":1}"#), b"data: {\"a\":1}\n\n");
        assert_eq!(probe(Framing::Sse), b": keepalive\n\n");
        assert_eq!(probe(Framing::Ndjson), b"\n");
        let full = SseEvent { id: Some("7"), event: Some("message"), retry_ms: Some(1000), data: "x" };
        assert_eq!(full.to_bytes(), b"id: 7\nevent: message\nretry: 1000\ndata: x\n\n");
        let endpoint = SseEvent { event: Some("endpoint"), data: "/messages?sessionId=a", ..Default::default() };
        assert_eq!(endpoint.to_bytes(), b"event: endpoint\ndata: /messages?sessionId=a\n\n");
        let multi = SseEvent { data: "a\nb\r\nc", ..Default::default() };
        assert_eq!(multi.to_bytes(), b"data: a\ndata: b\ndata: c\n\n");
        assert_eq!(sse_comment("keepalive"), b": keepalive\n\n");
        assert_eq!(sse_retry(1500), b"retry: 1500\n\n");
    }

    #[test]
    fn json_bodies() {
        let none = crate::redact::Redactor::default();
        let sealed = |texts: &[&str]| texts.iter().map(|t| none.seal(t.to_string())).collect::<Vec<_>>();
        assert_eq!(json_body(&sealed(&["{}"]), false), b"{}");
        assert_eq!(json_body(&sealed(&["{}"]), true), b"[{}]");
        assert_eq!(json_body(&sealed(&["1", "2"]), true), b"[1,2]");
    }
}
