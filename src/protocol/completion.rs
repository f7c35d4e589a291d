//! `completion/complete`: configured values for prompt arguments and URI template variables,
//! filtered by the prefix typed so far; an upstream MCP server's prompt or template is completed
//! by that server.

use serde_json::{json, Value};

use crate::catalog::Server;
use crate::error::Error;

/// The spec caps a completion response at 100 values.
const MAX_VALUES: usize = 100;

/// The upstream MCP server (its index among the server's upstreams) whose prompt or template
/// the request completes, if it is one's.
pub fn upstream(server: &Server, params: Option<&Value>) -> Option<usize> {
    let reference = params?.get("ref")?;
    match reference.get("type")?.as_str()? {
        "ref/prompt" => super::prompts::upstream(server, Some(reference)),
        "ref/resource" => {
            let uri = reference.get("uri")?.as_str()?;
            server.resource_templates.iter().find(|t| t.uri_template() == uri)?.mcp
        }
        _ => None,
    }
}

/// The answer to a completion the upstream does not offer: nothing to suggest, which is what a
/// client typing into an argument expects, rather than an error for a capability we declared.
pub fn nothing() -> Value {
    json!({"completion": {"values": [], "total": 0, "hasMore": false}})
}

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
    // ASCII letters match in either case; other characters as typed. Unicode's case tables
    // would be 8 KB of the module's gzip size.
    let lowered = typed.to_ascii_lowercase();
    let matching: Vec<&String> = candidates
        .iter()
        .find(|(name, _)| name == arg_name)
        .map(|(_, values)| values.iter().filter(|v| v.to_ascii_lowercase().starts_with(&lowered)).collect())
        .unwrap_or_default();
    let values: Vec<&String> = matching.iter().take(MAX_VALUES).copied().collect();
    Ok(json!({"completion": {"values": values, "total": matching.len(), "hasMore": matching.len() > MAX_VALUES}}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(typed: &str) -> Value {
        let text = r#"{"servers":[{"name":"s","version":"1","prompts":[{"name":"p","arguments":[{"name":"city","completions":["San Francisco","santa cruz","Österreich","Zürich"]}],"messages":[{"role":"user","content":{"type":"text","text":"{city}"}}]}]}]}"#;
        let catalog = crate::config::load(text).unwrap();
        let params = json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "city", "value": typed}});
        complete(&catalog.servers[0], Some(&params)).unwrap()["completion"]["values"].clone()
    }

    #[test]
    fn ascii_letters_match_in_either_case_and_other_characters_as_typed() {
        assert_eq!(values("SAN"), json!(["San Francisco", "santa cruz"]));
        assert_eq!(values("zü"), json!(["Zürich"]));
        assert_eq!(values("Ö"), json!(["Österreich"]));
        assert_eq!(values("ö"), json!([]));
        assert_eq!(values(""), json!(["San Francisco", "santa cruz", "Österreich", "Zürich"]));
    }
}
