//! 2026-07-28: the headers that mirror a request's body, `Mcp-Name` and `Mcp-Param-*` values
//! (plain, or Base64 in the `=?base64?…?=` sentinel), checked against the tool arguments its
//! schema marks for headers (`tools::header_params`).

use serde_json::Value;

use crate::error::Error;

/// A header value as sent, or the text inside the `=?base64?…?=` sentinel; `None` when the
/// value has characters a header may not carry, or the Base64 is broken.
pub fn decode_header_value(value: &str) -> Option<String> {
    // Whitespace around a field value is not part of it (RFC 9110 §5.5).
    let value = value.trim_matches([' ', '\t']);
    if !value.bytes().all(|b| b == b'\t' || (0x20..=0x7e).contains(&b)) {
        return None;
    }
    match value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) {
        Some(encoded) => String::from_utf8(crate::base64::decode(encoded)?).ok(),
        None => Some(value.to_string()),
    }
}

/// Every annotated argument present in the body must arrive, equal, in its `Mcp-Param-*`
/// header; a header for an argument the body lacks is as wrong as a missing one.
pub(super) fn check_param_headers(params: &[(String, Vec<String>)], arguments: &Value, header: &dyn Fn(&str) -> Option<String>) -> Result<(), Error> {
    for (name, path) in params {
        let body = path.iter().try_fold(arguments, |v, key| v.get(key)).filter(|v| !v.is_null());
        let sent = header(&format!("mcp-param-{}", name.to_ascii_lowercase()));
        let decoded = sent.as_deref().map(decode_header_value);
        let matches = match (body, decoded) {
            (None, None) => true,
            (Some(value), Some(Some(text))) => header_equals(value, &text),
            _ => false,
        };
        if !matches {
            return Err(Error::HeaderMismatch(format!("Mcp-Param-{name} does not match arguments.{}", path.join("."))));
        }
    }
    Ok(())
}

/// Strings compare as text, integers by value (`42.0` is `42`), booleans as `true`/`false`.
fn header_equals(value: &Value, text: &str) -> bool {
    match value {
        Value::String(s) => s == text,
        Value::Bool(b) => text == if *b { "true" } else { "false" },
        // Read as a JSON number: the module has that parser already, and not Rust's float parser.
        Value::Number(n) => match serde_json::from_slice::<Value>(text.trim().as_bytes()) {
            Ok(Value::Number(h)) => h.as_f64().zip(n.as_f64()).is_some_and(|(a, b)| a == b),
            _ => false,
        },
        _ => false,
    }
}
