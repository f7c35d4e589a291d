//! `completion/complete`: configured values for prompt arguments and URI template variables,
//! filtered by the prefix typed so far; an upstream MCP server's prompt or template is completed
//! by that server.
//!
//! | method | params | handler |
//! |---|---|---|
//! | `completion/complete` | [`CompleteParams`] | [`complete`]; [`upstream`] says when an upstream answers it |
//!
//! What the method table gives it: see [`PROPERTIES`].

use serde::Deserialize;
use serde_json::{json, Value};

use crate::catalog::Server;
use crate::error::Error;
use crate::method::Method;

/// The spec caps a completion response at 100 values.
const MAX_VALUES: usize = 100;

/// `completion/complete`'s params. Both members are checked only where this server answers:
/// an upstream's prompt or template gets the request as sent.
#[derive(Debug, Deserialize)]
pub struct CompleteParams {
    #[serde(rename = "ref")]
    pub reference: Option<Reference>,
    pub argument: Option<Argument>,
}

/// What is completed: `ref/prompt` with its `name`, `ref/resource` with its template's `uri`.
#[derive(Debug, Deserialize)]
pub struct Reference {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub name: Option<String>,
    pub uri: Option<String>,
}

/// The argument typed into; a `value` that is not a string counts as nothing typed yet.
#[derive(Debug, Deserialize)]
pub struct Argument {
    pub name: Option<String>,
    #[serde(skip)]
    pub value: Option<Value>,
}

impl super::Params for CompleteParams {
    fn keep(&mut self, members: &serde_json::Map<String, Value>) {
        if let (Some(argument), Some(Value::Object(sent))) = (&mut self.argument, members.get("argument")) {
            argument.value = super::member(sent, "value");
        }
    }
}

impl CompleteParams {
    /// What the request completes, for logs and progress: the prompt's name or the template.
    pub fn label(&self) -> &str {
        self.reference.as_ref().and_then(|r| r.name.as_deref().or(r.uri.as_deref())).unwrap_or_default()
    }
}

/// The upstream MCP server (its index among the server's upstreams) whose prompt or template
/// the request completes, if it is one's.
pub fn upstream(server: &Server, params: &CompleteParams) -> Option<usize> {
    let reference = params.reference.as_ref()?;
    match reference.kind.as_deref()? {
        "ref/prompt" => super::prompts::upstream(server, reference.name.as_deref()?),
        "ref/resource" => {
            let uri = reference.uri.as_deref()?;
            server.resource_templates.iter().find(|t| t.uri_template() == uri)?.mcp
        }
        _ => None,
    }
}

/// The error a completion of a prompt or template the access rules hide from the caller gets:
/// the one an unknown prompt or template gets.
pub fn hidden(server: &Server, gate: &crate::catalog::Gate<'_>, params: &CompleteParams) -> Option<Error> {
    let reference = params.reference.as_ref().filter(|_| gate.has_rules())?;
    match reference.kind.as_deref()? {
        "ref/prompt" => {
            let name = reference.name.as_deref()?;
            super::prompts::hidden(server, gate, name).then(|| Error::InvalidParams(format!("unknown prompt {name:?}")))
        }
        "ref/resource" => {
            let uri = reference.uri.as_deref()?;
            let template = server.resource_templates.iter().find(|t| t.uri_template() == uri)?;
            (!gate.sees_template(template)).then(|| Error::InvalidParams(format!("unknown resource template {uri:?}")))
        }
        _ => None,
    }
}

/// The answer to a completion the upstream does not offer: nothing to suggest, which is what a
/// client typing into an argument expects, rather than an error for a capability we declared.
pub fn nothing() -> Value {
    json!({"completion": {"values": [], "total": 0, "hasMore": false}})
}

/// The configured values of the argument that start with what was typed.
pub fn complete(server: &Server, params: &CompleteParams) -> Result<Value, Error> {
    let reference = params.reference.as_ref().ok_or_else(|| Error::InvalidParams("missing ref".into()))?;
    let argument = params.argument.as_ref().ok_or_else(|| Error::InvalidParams("missing argument".into()))?;
    let arg_name = argument.name.as_deref().ok_or_else(|| Error::InvalidParams("argument.name must be a string".into()))?;
    let typed = argument.value.as_ref().and_then(Value::as_str).unwrap_or("");
    let candidates: &[(String, Vec<String>)] = match reference.kind.as_deref() {
        Some("ref/prompt") => {
            let name = reference.name.as_deref().unwrap_or("");
            &server.prompts.iter().find(|p| p.name == name).ok_or_else(|| Error::InvalidParams(format!("unknown prompt {name:?}")))?.completions
        }
        Some("ref/resource") => {
            let uri = reference.uri.as_deref().unwrap_or("");
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

/// What the method table (`crate::method`) gives this file's methods: capability, revisions,
/// whether the session's lease is kept, whether a lease serves it, cache hint, `Mcp-Name`.
/// `protocol::tests` holds it to the table, so it cannot go stale.
pub const PROPERTIES: &[(Method, &str)] = &[
    (Method::CompletionComplete, "capability completions; every revision; keeps the session: yes; lease serves it: no; cacheable: no; Mcp-Name: none"),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn values(typed: &str) -> Value {
        let text = r#"{"servers":[{"name":"s","version":"1","prompts":[{"name":"p","arguments":[{"name":"city","completions":["San Francisco","santa cruz","Österreich","Zürich"]}],"messages":[{"role":"user","content":{"type":"text","text":"{city}"}}]}]}]}"#;
        let catalog = crate::config::load(text).unwrap();
        let params = json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "city", "value": typed}});
        complete(&catalog.servers[0], &super::super::params(Some(&params)).unwrap()).unwrap()["completion"]["values"].clone()
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
