//! RFC 6570 templates: parsing, expansion in both contexts, and matching URIs against them.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_edge::upstream::template::{Context, Template};
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (source, uri) = text.split_once('\n').unwrap_or((&text, ""));
    let vars: std::collections::HashMap<&str, Value> =
        [("a", json!("x/y z")), ("b", json!(["1", "2"])), ("c", json!({"k": "v"})), ("n", json!(7))].into();
    for context in [Context::Url, Context::Text] {
        if let Ok(template) = Template::parse(source, context) {
            let _ = template.expand(context, |name| vars.get(name));
            let _ = template.variables().count();
            if template.is_matchable() {
                if let Some(found) = template.match_uri(uri) {
                    // What matched expands back to the same URI.
                    let values: std::collections::HashMap<String, Value> = found.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
                    let _ = template.expand(Context::Url, |name| values.get(name));
                }
            }
        }
    }
});
