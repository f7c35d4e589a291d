//! JSON-RPC bodies as they arrive: single messages, batches and NDJSON, then the replies built
//! for them. Nothing may panic, and every reply must be valid JSON.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_edge::jsonrpc::{self, Message};
use mcp_edge::method::Named;

fuzz_target!(|data: &[u8]| {
    let _ = jsonrpc::depth_within(data, 64);
    for ndjson in [false, true] {
        let Ok(body) = jsonrpc::parse_body(data, ndjson) else { continue };
        for parsed in body.messages {
            let replies = match parsed {
                Ok(Message::Request(r)) => {
                    // A method name reads back as the same name, known or not.
                    assert_eq!(Named::parse(r.method.as_str()), r.method);
                    let mut replies = vec![jsonrpc::success(&r.id, serde_json::json!({"method": r.method.as_str()}))];
                    if let Some(method) = r.method.known() {
                        replies.push(jsonrpc::request(&r.id.to_string(), method, r.params.unwrap_or_default()));
                    }
                    replies
                }
                Ok(Message::Notification(n)) => {
                    assert_eq!(Named::parse(n.method.as_str()), n.method);
                    let params = n.params.unwrap_or_default();
                    match n.method.known() {
                        Some(method) => vec![jsonrpc::notification(method, params)],
                        // Only known methods are ever sent; an unknown one is still echoed as data.
                        None => vec![jsonrpc::success(&serde_json::Value::Null, serde_json::json!({"method": n.method.as_str(), "params": params}))],
                    }
                }
                Ok(Message::Response { id, .. }) => vec![jsonrpc::success(&id, serde_json::Value::Null)],
                Err((id, error)) => vec![jsonrpc::failure(&id, &error)],
            };
            for reply in replies {
                assert!(serde_json::from_str::<serde_json::Value>(&reply).is_ok(), "invalid reply {reply}");
            }
        }
    }
});
