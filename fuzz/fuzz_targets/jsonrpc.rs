//! JSON-RPC bodies as they arrive: single messages, batches and NDJSON, then the replies built
//! for them. Nothing may panic, and every reply must be valid JSON.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_edge::jsonrpc::{self, Message};

fuzz_target!(|data: &[u8]| {
    let _ = jsonrpc::depth_within(data, 64);
    for ndjson in [false, true] {
        let Ok(body) = jsonrpc::parse_body(data, ndjson) else { continue };
        for parsed in body.messages {
            let reply = match parsed {
                Ok(Message::Request(r)) => jsonrpc::success(&r.id, serde_json::json!({"method": r.method})),
                Ok(Message::Notification(n)) => jsonrpc::notification(&n.method, n.params.unwrap_or_default()),
                Ok(Message::Response { id, .. }) => jsonrpc::success(&id, serde_json::Value::Null),
                Err((id, error)) => jsonrpc::failure(&id, &error),
            };
            assert!(serde_json::from_str::<serde_json::Value>(&reply).is_ok(), "invalid reply {reply}");
        }
    }
});
