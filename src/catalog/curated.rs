//! Curated servers: entries a server takes by reference (`include`) from a server of the same
//! deployment — its own tools (OpenAPI-imported ones among them), prompts and resources, and
//! those its upstream MCP servers list — transformed FastMCP-style: renamed, retitled,
//! redescribed, re-annotated; arguments hidden with a value the server sets, given defaults, or
//! their enum narrowed. An alias is a copy of its source tool (its request, auth templates,
//! upstream and reply), with the listed definition and a [`Curation`] of its own, so a call runs
//! as the source would with the merged arguments.
//!
//! A reference takes a server's own and discovered entries, never what that server includes in
//! turn, so there are no chains and no cycles. Tools built on other tools' results would be a
//! further kind of include here (a tool whose call is a plan over other entries' calls), beside
//! `tool`, `prompt` and `resource`; none exists yet.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::Server;
use crate::tools::{Curation, Tool};

/// One `include` entry, kept as the file's JSON object (its fields are checked by [`shape`]):
/// the source (`server`, and one of `tool`, `prompt` or `resource`, a resource by its URI), and
/// what changes: `as` (a tool's or prompt's name here), `title`, `description`; a tool's
/// `annotations` (merged over the source's, member by member), `roles` (the source's when
/// absent), and `arguments`: its top-level arguments by name, each with `hidden` and `value`
/// (left out of the listed schema, set by the server), `default`, `enum` (a subset of the values
/// the source allows) and `description`. Read as JSON, not as a struct of its own, so the module
/// carries no parser for it.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct Include(pub Map<String, Value>);

/// Each field an entry may have, with its type: `s` a string, `o` an object, `a` an array of
/// strings, `b` a boolean, `*` any value; then an argument's.
const FIELDS: &[(&str, u8)] = &[("server", b's'), ("tool", b's'), ("prompt", b's'), ("resource", b's'), ("as", b's'), ("title", b's'), ("description", b's'), ("annotations", b'o'), ("roles", b'a'), ("arguments", b'o')];
const ARGUMENT_FIELDS: &[(&str, u8)] = &[("hidden", b'b'), ("value", b'*'), ("default", b'*'), ("enum", b'*'), ("description", b's')];

/// The first member of `object` that `fields` does not have, or whose value is not of its type.
fn misfit<'a>(object: &'a Map<String, Value>, fields: &[(&str, u8)]) -> Option<&'a String> {
    object.iter().find_map(|(key, value)| {
        let fits = fields.iter().find(|(name, _)| name == key).is_some_and(|(_, kind)| match kind {
            b's' => value.is_string(),
            b'o' => value.is_object(),
            b'a' => value.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            b'b' => value.is_boolean(),
            _ => true,
        });
        (!fits).then_some(key)
    })
}

/// Why a reference does not resolve: the field of its `include` entry, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub field: String,
    pub message: String,
}

fn fault(field: impl Into<String>, message: impl Into<String>) -> Fault {
    Fault { field: field.into(), message: message.into() }
}

impl Include {
    fn text(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    /// The server it comes from.
    pub fn server(&self) -> &str {
        self.text("server").unwrap_or_default()
    }

    /// What it names (`tool`, `prompt` or `resource`), and the name (a resource: the URI).
    pub fn kind(&self) -> (&'static str, &str) {
        ["tool", "prompt", "resource"].into_iter().find_map(|k| Some((k, self.text(k)?))).unwrap_or(("tool", ""))
    }

    /// The name (a resource: the URI) it is served under.
    pub fn served_as(&self) -> &str {
        self.text("as").unwrap_or(self.kind().1)
    }

    fn arguments(&self) -> impl Iterator<Item = (&String, &Map<String, Value>)> {
        self.0.get("arguments").and_then(Value::as_object).into_iter().flatten().filter_map(|(k, v)| Some((k, v.as_object()?)))
    }
}

/// Checks an entry's fields and their types, before any source is looked up.
pub fn shape(include: &Include) -> Result<(), Fault> {
    if let Some(key) = misfit(&include.0, FIELDS) {
        return Err(fault(key.as_str(), "is not a field of an include entry, or not of its type"));
    }
    for (name, argument) in include.0.get("arguments").and_then(Value::as_object).into_iter().flatten() {
        let key = argument.as_object().map_or(Some(None), |a| misfit(a, ARGUMENT_FIELDS).map(Some));
        if let Some(key) = key {
            let at = key.map_or_else(|| format!("arguments.{name}"), |key| format!("arguments.{name}.{key}"));
            return Err(fault(at, "is not a field of an argument's transform, or not of its type"));
        }
    }
    if include.text("server").is_none() {
        return Err(fault("server", "missing field `server`"));
    }
    let named = ["tool", "prompt", "resource"].iter().filter(|k| include.0.contains_key(**k)).count();
    if named != 1 {
        return Err(fault("tool", "name exactly one of \"tool\", \"prompt\" or \"resource\""));
    }
    let tool = include.0.contains_key("tool");
    if !tool && ["arguments", "annotations", "roles"].iter().any(|k| include.0.contains_key(*k)) {
        return Err(fault("arguments", "arguments, annotations and roles transform tools only"));
    }
    let resource = include.0.contains_key("resource");
    if resource && include.0.contains_key("as") {
        return Err(fault("as", "a resource keeps its URI"));
    }
    let name = include.served_as();
    let valid = !name.is_empty() && name.len() <= 128 && (resource || name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')));
    if !valid {
        return Err(fault(if include.0.contains_key("as") { "as" } else { "tool" }, format!("{name:?} must be 1 to 128 of A-Z a-z 0-9 _ - .")));
    }
    Ok(())
}

/// Whether the entry may name what `from`'s upstream MCP servers list once they answer: a name
/// with one of their prefixes whose rest their filter takes.
pub fn may_arrive(include: &Include, from: &Server) -> bool {
    let (kind, name) = include.kind();
    from.upstreams.iter().any(|u| match kind {
        "tool" => name.strip_prefix(u.prefix.as_str()).is_some_and(|rest| u.tools.takes(rest)),
        "prompt" => u.roles.is_empty() && name.strip_prefix(u.prefix.as_str()).is_some_and(|rest| u.prompts.takes(rest)),
        _ => u.roles.is_empty(),
    })
}

/// Takes `include`'s entry from `from` into `into`. `Ok(false)`: `from` has no such entry (yet).
pub fn take(include: &Include, from: &Server, into: &mut Server) -> Result<bool, Fault> {
    let (kind, name) = include.kind();
    let served = include.served_as();
    match kind {
        "tool" => {
            // Only the source server's own and discovered tools: never its aliases.
            let Some(source) = from.tools.iter().find(|t| t.name == name && t.curation.is_none()) else { return Ok(false) };
            if into.tools.iter().any(|t| t.name == served) || into.meta_tool(served).is_some() {
                return Err(fault(if include.0.contains_key("as") { "as" } else { "tool" }, format!("{served:?} is the name of another tool of this server")));
            }
            if into.stateless.is_some() && source.deferral.is_some() {
                return Err(fault("tool", "a queued or callback tool needs sessions: a stateless server has nowhere to deliver its results"));
            }
            let mut tool = transform(include, source)?;
            if let Some(curation) = tool.curation.as_mut() {
                curation.private_upstreams.clone_from(&from.private_upstreams);
            }
            if let Some(target) = tool.mcp.as_mut() {
                target.source = borrow(from, target.source, into);
            }
            into.tools.push(tool);
        }
        "prompt" => {
            let Some(source) = from.prompts.iter().find(|p| p.name == name) else { return Ok(false) };
            if into.prompts.iter().any(|p| p.name == served) {
                return Err(fault(if include.0.contains_key("as") { "as" } else { "prompt" }, format!("{served:?} is the name of another prompt of this server")));
            }
            let mut prompt = source.clone();
            prompt.name = served.to_string();
            relabel(&mut prompt.listing, include, served);
            if let Some(target) = prompt.mcp.as_mut() {
                target.source = borrow(from, target.source, into);
            }
            if let Some(text) = include.text("description") {
                prompt.description = Some(text.to_string());
            }
            into.prompts.push(prompt);
        }
        _ => {
            let Some(source) = from.resources.iter().find(|r| r.uri == name) else { return Ok(false) };
            if into.resources.iter().any(|r| r.uri == name) {
                return Err(fault("resource", format!("{name:?} is the URI of another resource of this server")));
            }
            let mut resource = source.clone();
            for key in ["title", "description"] {
                if let Some(text) = include.0.get(key) {
                    set(&mut resource.listing, key, text.clone());
                }
            }
            if let super::ResourceSource::Mcp(index) = &mut resource.source {
                *index = borrow(from, *index, into);
            }
            into.resources.push(resource);
        }
    }
    Ok(true)
}

/// `from`'s upstream number `index` among `into`'s, added when it is not there: an alias of its
/// entry is served through it. `into` never reads its lists (discovery reads the bundled
/// servers' own upstreams only), and the edge finds it by this index.
fn borrow(from: &Server, index: usize, into: &mut Server) -> usize {
    let Some(source) = from.upstreams.get(index) else { return index };
    if let Some(at) = into.upstreams.iter().position(|u| Arc::ptr_eq(u, source)) {
        return at;
    }
    into.upstreams.push(source.clone());
    into.upstreams.len() - 1
}

fn set(listing: &mut Value, key: &str, value: Value) {
    if let Some(fields) = listing.as_object_mut() {
        fields.insert(key.into(), value);
    }
}

/// The listing's name, title and description as the entry says.
fn relabel(listing: &mut Value, include: &Include, served: &str) {
    set(listing, "name", Value::String(served.to_string()));
    for key in ["title", "description"] {
        if let Some(text) = include.0.get(key) {
            set(listing, key, text.clone());
        }
    }
}

/// The alias of `source` the entry describes: its listing, its narrowed schema and its curation.
pub fn transform(include: &Include, source: &Tool) -> Result<Tool, Fault> {
    let mut tool = source.clone();
    let mut schema = source.input_schema.clone();
    let mut curation = Curation::default();
    for (name, argument) in include.arguments() {
        let at = format!("arguments.{name}");
        let Some(property) = schema.get_mut("properties").and_then(|p| p.get_mut(name.as_str())) else {
            return Err(fault(at, format!("{name:?} is not an argument of the tool {:?} (not in its inputSchema's properties)", source.name)));
        };
        if let Some(allowed) = argument.get("enum").map(|e| e.as_array().map_or(&[][..], Vec::as_slice)) {
            let theirs = property.get("enum").and_then(Value::as_array);
            let outside = allowed.iter().find(|v| theirs.map_or_else(|| crate::schema::validate(property, v).is_err(), |e| !e.contains(v)));
            if allowed.is_empty() || outside.is_some() {
                let what = outside.map_or_else(|| "is empty".to_string(), |v| format!("holds {v}, which the source's schema does not allow"));
                return Err(fault(format!("{at}.enum"), format!("{what}: it may only narrow the values allowed")));
            }
            set(property, "enum", Value::Array(allowed.to_vec()));
        }
        let (value, default) = (argument.get("value"), argument.get("default"));
        for (key, given) in [("value", value), ("default", default)] {
            if let Some(Err(v)) = given.map(|given| crate::schema::validate(property, given)) {
                return Err(fault(format!("{at}.{key}"), format!("does not fit the argument's schema: {v}")));
            }
        }
        if let Some(text) = argument.get("description") {
            set(property, "description", text.clone());
        }
        let hidden = argument.get("hidden") == Some(&Value::Bool(true));
        match (hidden, value, default) {
            (true, Some(value), None) => {
                curation.pinned.insert(name.clone(), value.clone());
            }
            (true, _, _) => return Err(fault(at, "a hidden argument needs its \"value\", and no \"default\"")),
            (false, Some(_), _) => return Err(fault(format!("{at}.value"), "pins a hidden argument: add \"hidden\": true")),
            (false, None, Some(value)) => {
                set(property, "default", value.clone());
                curation.defaults.insert(name.clone(), value.clone());
            }
            (false, None, None) => {}
        }
        if let (true, Some(required)) = (hidden || default.is_some(), schema.get_mut("required").and_then(Value::as_array_mut)) {
            required.retain(|r| r.as_str() != Some(name.as_str()));
        }
        if hidden {
            if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
                properties.remove(name.as_str());
            }
        }
    }
    let served = include.served_as();
    tool.name = served.to_string();
    relabel(&mut tool.listing, include, served);
    if let Some(annotations) = include.0.get("annotations").and_then(Value::as_object) {
        let mut merged = tool.listing.get("annotations").and_then(Value::as_object).cloned().unwrap_or_default();
        merged.extend(annotations.iter().map(|(k, v)| (k.clone(), v.clone())));
        set(&mut tool.listing, "annotations", Value::Object(merged));
    }
    set(&mut tool.listing, "inputSchema", schema.clone());
    tool.header_params = crate::tools::header_params(&schema);
    tool.input_schema = schema;
    if let Some(roles) = include.0.get("roles").and_then(Value::as_array) {
        tool.roles = roles.iter().filter_map(Value::as_str).map(str::to_string).collect();
    }
    curation.from = include.server().to_string();
    tool.curation = Some(Box::new(curation));
    Ok(tool)
}

/// Takes every entry of `pending` (indices into `servers[at].include`) that `servers` now hold:
/// what is left (not there yet), and the faults of those that are there but cannot be taken.
pub fn resolve(servers: &mut [Arc<Server>], at: usize, pending: &[usize]) -> (Vec<usize>, Vec<(usize, Fault)>) {
    let mut left = Vec::new();
    let mut faults = Vec::new();
    for &j in pending {
        let Some(include) = servers.get(at).and_then(|s| s.include.get(j)).cloned() else { continue };
        let Some(from) = servers.iter().find(|s| s.name == include.server()).cloned() else {
            faults.push((j, fault("server", format!("{:?} is not a server of this deployment", include.server()))));
            continue;
        };
        let Some(into) = servers.get_mut(at) else { continue };
        match take(&include, &from, Arc::make_mut(into)) {
            Ok(true) => {}
            Ok(false) => left.push(j),
            Err(f) => faults.push((j, f)),
        }
    }
    (left, faults)
}
