//! Canonical JSON: object members sorted by key, no whitespace, so a value digests the same
//! however its members were ordered or spaced. Pinned definitions' fingerprints, kept results'
//! keys and a `requestState`'s argument digest are all taken over this one text (a pinned
//! fingerprint is stored: this text must not change).

use serde_json::Value;

/// `value` as canonical JSON, appended to `out`.
pub fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            // Insertion sort: objects are small, and a library sort would be code of its own in
            // the module for this one use.
            let mut keys: Vec<(&String, &Value)> = Vec::with_capacity(map.len());
            for entry in map {
                let at = keys.iter().position(|(k, _)| *k > entry.0).unwrap_or(keys.len());
                keys.insert(at, entry);
            }
            out.push('{');
            for (i, (key, value)) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// `value` as canonical JSON.
pub fn text(value: &Value) -> String {
    let mut out = String::new();
    canonical(value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_sorted_at_every_depth_and_nothing_else_changed() {
        assert_eq!(text(&json!({"b": [1, {"d": "\"", "c": null}], "a": true})), r#"{"a":true,"b":[1,{"c":null,"d":"\""}]}"#);
        assert_eq!(text(&json!({"é": 1, "e": 2, "Z": 3})), r#"{"Z":3,"e":2,"é":1}"#);
    }
}
