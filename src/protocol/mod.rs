//! MCP messages by area. Each module decodes its params and builds its results.

pub mod completion;
pub mod lifecycle;
pub mod meta;
pub mod mrtr;
pub mod prompts;
pub mod resources;
pub mod subscriptions;
pub mod tools;

use serde_json::{json, Value};

use crate::error::Error;

/// One page of a list result under `key`. Cursors are offsets, opaque to clients; without a
/// page size everything is on the first page.
pub fn page<'a>(key: &str, items: &'a [Value], params: Option<&Value>, page_size: Option<usize>) -> Result<Value, Error> {
    let start = match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => c
            .parse::<usize>()
            .ok()
            .filter(|&n| n <= items.len())
            .ok_or_else(|| Error::InvalidParams(format!("invalid cursor {c:?}")))?,
        Some(_) => return Err(Error::InvalidParams("cursor must be a string".into())),
    };
    let end = start.saturating_add(page_size.unwrap_or(usize::MAX)).min(items.len());
    let slice: &'a [Value] = items.get(start..end).unwrap_or_default();
    let mut result = serde_json::Map::new();
    result.insert(key.to_string(), json!(slice));
    if end < items.len() {
        result.insert("nextCursor".into(), json!(end.to_string()));
    }
    Ok(Value::Object(result))
}

/// A required string member of a request's params.
pub fn required_str<'a>(params: Option<&'a Value>, name: &str) -> Result<&'a str, Error> {
    params
        .and_then(|p| p.get(name))
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidParams(format!("missing string parameter {name:?}")))
}
