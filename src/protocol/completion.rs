//! `completion/complete`: configured values for prompt arguments and URI template variables,
//! filtered by the prefix typed so far.

use serde_json::{json, Value};

use crate::config::Server;
use crate::error::Error;

/// The spec caps a completion response at 100 values.
const MAX_VALUES: usize = 100;

pub fn complete(server: &Server, params: Option<&Value>) -> Result<Value, Error> {
    let reference = params.and_then(|p| p.get("ref")).ok_or_else(|| Error::InvalidParams("missing ref".into()))?;
    let argument = params.and_then(|p| p.get("argument")).ok_or_else(|| Error::InvalidParams("missing argument".into()))?;
    let arg_name = argument.get("name").and_then(Value::as_str).ok_or_else(|| Error::InvalidParams("argument.name must be a string".into()))?;
    let typed = argument.get("value").and_then(Value::as_str).unwrap_or("");
    let candidates: &[(String, Vec<String>)] = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = reference.get("name").and_then(Value::as_str).unwrap_or("");
            &server.prompts.iter().find(|p| p.name == name).ok_or_else(|| Error::InvalidParams(format!("unknown prompt {name:?}")))?.completions
        }
        Some("ref/resource") => {
            let uri = reference.get("uri").and_then(Value::as_str).unwrap_or("");
            &server
                .resource_templates
                .iter()
                .find(|t| t.uri_template() == uri)
                .ok_or_else(|| Error::InvalidParams(format!("unknown resource template {uri:?}")))?
                .completions
        }
        _ => return Err(Error::InvalidParams("ref.type must be ref/prompt or ref/resource".into())),
    };
    let lowered = typed.to_lowercase();
    let matching: Vec<&String> = candidates
        .iter()
        .find(|(name, _)| name == arg_name)
        .map(|(_, values)| values.iter().filter(|v| v.to_lowercase().starts_with(&lowered)).collect())
        .unwrap_or_default();
    let values: Vec<&String> = matching.iter().take(MAX_VALUES).copied().collect();
    Ok(json!({"completion": {"values": values, "total": matching.len(), "hasMore": matching.len() > MAX_VALUES}}))
}
