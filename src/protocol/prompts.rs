//! Prompts from configuration: `prompts/list`, and `prompts/get` rendering messages from arguments.

use serde_json::{json, Map, Value};

use crate::catalog::Server;
use crate::error::Error;
use crate::upstream::request::render_json;

pub fn list(server: &Server, params: Option<&Value>) -> Result<Value, Error> {
    super::page("prompts", &server.prompt_listings, params, None)
}

/// The upstream MCP server (its index in `upstreams`) whose prompt `params` names, if it is one.
pub fn upstream(server: &Server, params: Option<&Value>) -> Option<usize> {
    let name = params?.get("name")?.as_str()?;
    server.prompts.iter().find(|p| p.name == name)?.mcp.as_ref().map(|t| t.source)
}

pub fn get(server: &Server, params: Option<&Value>) -> Result<Value, Error> {
    let name = super::required_str(params, "name")?;
    let prompt = server.prompts.iter().find(|p| p.name == name).ok_or_else(|| Error::InvalidParams(format!("unknown prompt {name:?}")))?;
    let empty = Map::new();
    let args = match params.and_then(|p| p.get("arguments")) {
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
