//! `Accept` and `Content-Type` headers, however odd: framing choice never panics, and a chosen
//! framing is one the client listed (or the `text/plain` fallback).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_edge::negotiate;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\n');
    let accept = parts.next();
    let content_type = parts.next();
    let always_stream = parts.next().is_some();
    let _ = negotiate::json_acceptable(accept);
    if let Some(ct) = content_type {
        let _ = negotiate::media_type(ct);
    }
    if let Ok(framing) = negotiate::framing(accept, content_type, always_stream) {
        let _ = framing.content_type();
    }
});
