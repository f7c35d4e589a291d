//! Prompts from configuration: `prompts/list`, and `prompts/get` rendering messages from
//! arguments; an upstream MCP server's prompt is got there.
//!
//! | method | params | handler |
//! |---|---|---|
//! | `prompts/list` | [`ListParams`] | [`list`] |
//! | `prompts/get` | [`GetParams`] | [`get`]; [`upstream`] says when an upstream answers it |
//!
//! What the method table gives each method: see [`PROPERTIES`].

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::ListParams;

use crate::catalog::{Gate, Server};
use crate::error::Error;
use crate::upstream::request::render_json;
use crate::method::Method;

/// The prompts the caller sees (`Gate`): all of them when the server has no access rules.
pub fn list(server: &Server, params: &ListParams, gate: &Gate<'_>) -> Result<Value, Error> {
    if !gate.has_rules() {
        return super::page("prompts", &server.prompt_listings, params, None);
    }
    let visible: Vec<Value> = server.prompts.iter().filter(|p| gate.sees_prompt(p)).map(|p| p.listing.clone()).collect();
    super::page("prompts", &visible, params, None)
}

/// Whether the rules hide the prompt `name` from the caller: it is then unknown to `prompts/get`
/// and to completions.
pub fn hidden(server: &Server, gate: &Gate<'_>, name: &str) -> bool {
    gate.has_rules() && server.prompts.iter().find(|p| p.name == name).is_some_and(|p| !gate.sees_prompt(p))
}

/// `prompts/get`'s params. The arguments stay as sent: an upstream's prompt gets them so.
#[derive(Debug, Deserialize)]
pub struct GetParams {
    pub name: String,
    #[serde(skip)]
    pub arguments: Option<Value>,
}

impl super::Params for GetParams {
    fn keep(&mut self, members: &Map<String, Value>) {
        self.arguments = super::member(members, "arguments");
    }
}

/// The upstream MCP server (its index in `upstreams`) whose prompt is `name`, if it is one.
pub fn upstream(server: &Server, name: &str) -> Option<usize> {
    server.prompts.iter().find(|p| p.name == name)?.mcp.as_ref().map(|t| t.source)
}

/// A configured prompt's messages, its arguments checked against what it declares.
pub fn get(server: &Server, params: &GetParams) -> Result<Value, Error> {
    let name = params.name.as_str();
    let prompt = server.prompts.iter().find(|p| p.name == name).ok_or_else(|| Error::InvalidParams(format!("unknown prompt {name:?}")))?;
    let empty = Map::new();
    let args = match &params.arguments {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(a)) => a,
        Some(_) => return Err(Error::InvalidParams("arguments must be an object".into())),
    };
    for (name, required) in &prompt.arguments {
        match args.get(name) {
            None if *required => return Err(Error::InvalidParams(format!("missing required argument {name:?}"))),
            Some(v) if !v.is_string() => return Err(Error::InvalidParams(format!("argument {name:?} must be a string"))),
            _ => {}
        }
    }
    if let Some(extra) = args.keys().find(|k| !prompt.arguments.iter().any(|(n, _)| n == *k)) {
        return Err(Error::InvalidParams(format!("unknown argument {extra:?}")));
    }
    let messages: Vec<Value> = prompt.messages.iter().filter_map(|m| render_json(m, &|n: &str| args.get(n))).collect();
    let mut result = Map::new();
    if let Some(d) = &prompt.description {
        result.insert("description".into(), json!(d));
    }
    result.insert("messages".into(), Value::Array(messages));
    Ok(Value::Object(result))
}

/// What the method table (`crate::method`) gives this file's methods: capability, revisions,
/// whether the session's lease is kept, whether a lease serves it, cache hint, `Mcp-Name`.
/// `protocol::tests` holds it to the table, so it cannot go stale.
pub const PROPERTIES: &[(Method, &str)] = &[
    (Method::PromptsList, "capability prompts; every revision; keeps the session: yes; lease serves it: no; cacheable: yes; Mcp-Name: none"),
    (Method::PromptsGet, "capability prompts; every revision; keeps the session: yes; lease serves it: no; cacheable: no; Mcp-Name: name"),
];
