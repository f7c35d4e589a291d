//! Resources, resource templates and prompts compiled: URIs, sources, URI templates and
//! message templates checked, and their list entries built once.

use serde_json::{json, Map, Value};

use super::model::{PromptConfig, ResourceConfig, ResourceTemplateConfig};
use super::request::Scope;
use super::ConfigError;
use crate::catalog::Prompt;
use crate::catalog::{Resource, ResourceSource, ResourceTemplate};
use crate::upstream::template::{Context, Template};

fn listing(fields: &[(&str, Option<&String>)]) -> Value {
    let mut map = Map::new();
    for (key, value) in fields {
        if let Some(v) = value {
            map.insert((*key).to_string(), json!(v));
        }
    }
    Value::Object(map)
}

/// A configured resource compiled.
pub fn resource(r: &ResourceConfig, path: &str, route_params: &[String]) -> Result<Resource, ConfigError> {
    let scope = Scope { path, arguments: &[], route_params, meta: false, meta_auth: false, principal: false, upstream_token: false, connection: None, reads: None };
    if !r.uri.contains(':') {
        return Err(scope.error("uri", format!("{:?} is not an absolute URI", r.uri)));
    }
    let source = match (&r.text, &r.blob, &r.http) {
        (Some(text), None, None) => ResourceSource::Text(text.clone()),
        (None, Some(blob), None) if crate::base64::is_valid(blob) => ResourceSource::Blob(blob.clone()),
        (None, Some(_), None) => return Err(scope.error("blob", "must be padded standard base64")),
        (None, None, Some(http)) => ResourceSource::Http(Box::new(super::request::request(http, &scope, "http")?)),
        _ => return Err(scope.error("uri", "a resource needs exactly one of text, blob or http")),
    };
    let listing = listing(&[
        ("uri", Some(&r.uri)),
        ("name", Some(&r.name)),
        ("title", r.title.as_ref()),
        ("description", r.description.as_ref()),
        ("mimeType", r.mime_type.as_ref()),
    ]);
    Ok(Resource { uri: r.uri.clone(), listing, mime_type: r.mime_type.clone(), source })
}

/// A configured resource template compiled.
pub fn resource_template(r: &ResourceTemplateConfig, path: &str, route_params: &[String]) -> Result<ResourceTemplate, ConfigError> {
    let uri_template = Template::parse(&r.uri_template, Context::Url).map_err(|e| ConfigError::at(format!("{path}.uriTemplate"), e))?;
    let variables: Vec<String> = uri_template.variables().map(str::to_string).collect();
    if !uri_template.is_matchable() {
        // Reads match URIs against the template, which needs separated simple expressions.
        return Err(ConfigError::at(format!("{path}.uriTemplate"), "only literals and simple {var} expressions separated by literals can be matched"));
    }
    let scope = Scope { path, arguments: &variables, route_params, meta: false, meta_auth: false, principal: false, upstream_token: false, connection: None, reads: None };
    let request = super::request::request(&r.http, &scope, "http")?;
    for name in r.completions.keys() {
        if !variables.contains(name) {
            return Err(scope.error(&format!("completions.{name}"), format!("{name:?} is not a variable of the URI template")));
        }
    }
    let listing = listing(&[
        ("uriTemplate", Some(&r.uri_template)),
        ("name", Some(&r.name)),
        ("title", r.title.as_ref()),
        ("description", r.description.as_ref()),
        ("mimeType", r.mime_type.as_ref()),
    ]);
    Ok(ResourceTemplate {
        uri_template,
        listing,
        mime_type: r.mime_type.clone(),
        request,
        completions: r.completions.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        mcp: None,
    })
}

/// A configured prompt compiled.
pub fn prompt(p: &PromptConfig, path: &str) -> Result<Prompt, ConfigError> {
    let names: Vec<String> = p.arguments.iter().map(|a| a.name.clone()).collect();
    let scope = Scope { path, arguments: &names, route_params: &[], meta: false, meta_auth: false, principal: false, upstream_token: false, connection: None, reads: None };
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
        mcp: None,
    })
}
