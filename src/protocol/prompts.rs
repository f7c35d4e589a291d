//! Prompts from configuration: `prompts/list`, and `prompts/get` rendering messages from arguments.

use serde_json::{json, Map, Value};

use crate::config::model::PromptConfig;
use crate::config::{ConfigError, Server};
use crate::error::Error;
use crate::tools::request::{render_json, JsonTemplate};
use crate::tools::Scope;

#[derive(Debug, Clone)]
pub struct Prompt {
    pub name: String,
    pub listing: Value,
    description: Option<String>,
    arguments: Vec<(String, bool)>,
    messages: Vec<JsonTemplate>,
    pub completions: Vec<(String, Vec<String>)>,
}

impl Prompt {
    pub fn compile(p: &PromptConfig, path: &str) -> Result<Prompt, ConfigError> {
        let names: Vec<String> = p.arguments.iter().map(|a| a.name.clone()).collect();
        let scope = Scope { path, arguments: &names, route_params: &[], meta: false, meta_auth: false };
        if p.name.is_empty() {
            return Err(scope.error("name", "must not be empty"));
        }
        if p.messages.is_empty() {
            return Err(scope.error("messages", "a prompt needs at least one message"));
        }
        let mut secrets = Vec::new();
        let mut messages = Vec::new();
        for (i, m) in p.messages.iter().enumerate() {
            let role = m.get("role").and_then(Value::as_str);
            if !matches!(role, Some("user" | "assistant")) || !m.get("content").is_some_and(Value::is_object) {
                return Err(scope.error(&format!("messages[{i}]"), "needs \"role\" (user or assistant) and a \"content\" object"));
            }
            messages.push(scope.json(m, &format!("messages[{i}]"), &mut secrets)?);
        }
        if let Some(secret) = secrets.first() {
            // Prompt text goes to the client: a secret in it would leak.
            return Err(scope.error("messages", format!("prompts cannot use secrets (env.{secret})")));
        }
        let mut listing = Map::new();
        listing.insert("name".into(), json!(p.name));
        for (key, value) in [("title", &p.title), ("description", &p.description)] {
            if let Some(v) = value {
                listing.insert(key.into(), json!(v));
            }
        }
        if !p.arguments.is_empty() {
            let args: Vec<Value> = p
                .arguments
                .iter()
                .map(|a| {
                    let mut arg = Map::new();
                    arg.insert("name".into(), json!(a.name));
                    for (key, value) in [("title", &a.title), ("description", &a.description)] {
                        if let Some(v) = value {
                            arg.insert(key.into(), json!(v));
                        }
                    }
                    arg.insert("required".into(), json!(a.required));
                    Value::Object(arg)
                })
                .collect();
            listing.insert("arguments".into(), Value::Array(args));
        }
        Ok(Prompt {
            name: p.name.clone(),
            listing: Value::Object(listing),
            description: p.description.clone(),
            arguments: p.arguments.iter().map(|a| (a.name.clone(), a.required)).collect(),
            messages,
            completions: p.arguments.iter().filter(|a| !a.completions.is_empty()).map(|a| (a.name.clone(), a.completions.clone())).collect(),
        })
    }
}

pub fn list(server: &Server, params: Option<&Value>) -> Result<Value, Error> {
    super::page("prompts", &server.prompt_listings, params, None)
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
