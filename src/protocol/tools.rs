//! `tools/list` (with cursors) and decoding `tools/call` params.

use serde_json::{json, Map, Value};

use crate::config::Server;
use crate::error::Error;

/// One page of `tools/list`. Cursors are offsets, opaque to clients.
pub fn list(server: &Server, params: Option<&Value>) -> Result<Value, Error> {
    let cursor = params.and_then(|p| p.get("cursor"));
    let start = match cursor {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => c
            .parse::<usize>()
            .ok()
            .filter(|&n| n <= server.tools.len())
            .ok_or_else(|| Error::InvalidParams(format!("invalid cursor {c:?}")))?,
        Some(_) => return Err(Error::InvalidParams("cursor must be a string".into())),
    };
    let size = server.tools_page_size.unwrap_or(usize::MAX);
    let end = start.saturating_add(size).min(server.tools.len());
    let tools: Vec<&Value> = server.tools.get(start..end).unwrap_or_default().iter().map(|t| &t.listing).collect();
    Ok(if end < server.tools.len() {
        json!({"tools": tools, "nextCursor": end.to_string()})
    } else {
        json!({"tools": tools})
    })
}

/// The decoded params of `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallParams {
    pub name: String,
    pub arguments: Value,
    pub progress_token: Option<Value>,
}

pub fn call_params(params: Option<&Value>) -> Result<CallParams, Error> {
    let params = params.and_then(Value::as_object).ok_or_else(|| Error::InvalidParams("tools/call needs params".into()))?;
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidParams("missing tool name in params".into()))?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(a) => a.clone(),
    };
    let progress_token = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .filter(|t| t.is_string() || t.is_number())
        .cloned();
    Ok(CallParams { name: name.to_string(), arguments, progress_token })
}
