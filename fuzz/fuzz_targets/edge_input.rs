//! Other hostile input the edge reads: bearer JWTs, cookies, `Retry-After`, upstream URLs for the
//! SSRF guard, and JSON Schemas with instances (including `$ref` cycles).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_edge::{auth, schema, time, upstream};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = auth::parse_jwt(&text);
    let _ = auth::cookie(&text, "session_id");
    let _ = time::parse_retry_after(&text, 1_700_000_000_000);
    let _ = upstream::address::check(&text, &["127.0.0.1".to_string()]);
    let _ = upstream::address::check(&format!("http://{text}/"), &[]);
    if let Some((schema, instance)) = text.split_once('\n') {
        if let (Ok(schema), Ok(instance)) = (serde_json::from_str(schema), serde_json::from_str(instance)) {
            let _ = schema::lint(&schema);
            if let Err(v) = schema::validate(&schema, &instance) {
                assert!(!v.to_string().is_empty());
            }
        }
    }
});
