//! The bytes we write (SSE events, NDJSON lines) read back as a client reads them, the upstream
//! line reader fed arbitrary chunks, and any text through the redactor.
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use mcp_edge::framing::{ndjson_line, SseEvent};
use mcp_edge::redact::Redactor;
use mcp_edge::upstream::stream::LineReader;

/// Secrets with the characters every spelling treats specially, and one that looks like base64.
const SECRETS: [&str; 2] = ["s3cr3t-k3y/+&\"<\\ ~", "QUJDREVG"];

/// An SSE parser per the HTML spec: the `data` of the first event.
fn sse_data(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut data: Option<String> = None;
    for line in text.split('\n') {
        if line.is_empty() {
            return data;
        }
        if let Some(value) = line.strip_prefix("data:") {
            let value = value.strip_prefix(' ').unwrap_or(value);
            data = Some(match data {
                Some(d) => format!("{d}\n{value}"),
                None => value.to_string(),
            });
        }
    }
    None
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // What we send is JSON text: it never holds a raw line break.
    let json = serde_json::to_string(&text.to_string()).unwrap_or_default();
    let event = SseEvent { id: Some("3-7"), data: &json, ..SseEvent::default() }.to_bytes();
    assert_eq!(sse_data(&event).as_deref(), Some(json.as_str()));
    let line = ndjson_line(&json);
    assert!(line.ends_with(b"\n") && line.iter().filter(|b| **b == b'\n').count() == 1);
    // Any text through the redactor: nothing panics, no secret as written survives, and an unread
    // text never ends with more than a secret's first character.
    let redactor = Arc::new(Redactor::new(SECRETS));
    let whole = redactor.redact(&text);
    let unread = redactor.redact_unread(&text);
    for secret in SECRETS {
        assert!(!whole.contains(secret) && !unread.contains(secret), "{text:?}");
        for k in 2..secret.len() {
            assert!(!unread.ends_with(&secret[..k]), "{text:?}");
        }
    }
    // The upstream line protocol: any bytes, split anywhere, in both framings.
    let split = data.first().map_or(0, |b| *b as usize) % (data.len() + 1);
    for sse in [false, true] {
        let mut reader = LineReader::new(sse, Some(serde_json::json!(1)), Some("debug".into()), redactor.clone()).with_progress_update();
        let (a, b) = data.split_at(split);
        let _ = reader.feed(a);
        let _ = reader.feed(b);
        let _ = reader.finish();
    }
});
