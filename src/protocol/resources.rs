//! Resources: static or fetched, resource templates, reads, and a session's subscriptions.
//!
//! | method | params | handler |
//! |---|---|---|
//! | `resources/list` | [`ListParams`] | [`list`] |
//! | `resources/templates/list` | [`ListParams`] | [`templates_list`] |
//! | `resources/read` | [`ReadParams`] | [`read`] (and [`from_reply`] for a fetched one) |
//! | `resources/subscribe` | [`SubscribeParams`] | [`subscribe`] |
//! | `resources/unsubscribe` | [`SubscribeParams`] | [`unsubscribe`] |
//!
//! `notifications/resources/updated` is [`updated`]. What the method table gives each method:
//! see [`PROPERTIES`].

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::ListParams;

use crate::catalog::{Gate, ResourceSource, Server};
use crate::error::Error;
use crate::method::Method;
use crate::session::Session;
use crate::upstream::reply::Upstream;
use crate::upstream::Bindings;
use crate::upstream::HttpCall;
use crate::upstream::RequestTemplate;

/// The secrets the request of the resource at `uri` uses.
pub fn secrets_of(server: &Server, uri: &str) -> Vec<String> {
    if let Some(r) = server.resources.iter().find(|r| r.uri == uri) {
        return r.request().map(|q| q.secrets.clone()).unwrap_or_default();
    }
    server.resource_templates.iter().find(|t| t.uri_template.match_uri(uri).is_some()).map(|t| t.request.secrets.clone()).unwrap_or_default()
}

/// The resources the caller sees (`Gate`): all of them when the server has no access rules.
pub fn list(server: &Server, params: &ListParams, gate: &Gate<'_>) -> Result<Value, Error> {
    if !gate.has_rules() {
        return super::page("resources", &server.resource_listings, params, None);
    }
    let visible: Vec<Value> = server.resources.iter().filter(|r| gate.sees_resource(r)).map(|r| r.listing.clone()).collect();
    super::page("resources", &visible, params, None)
}

pub fn templates_list(server: &Server, params: &ListParams, gate: &Gate<'_>) -> Result<Value, Error> {
    if !gate.has_rules() {
        return super::page("resourceTemplates", &server.template_listings, params, None);
    }
    let visible: Vec<Value> = server.resource_templates.iter().filter(|t| gate.sees_template(t)).map(|t| t.listing.clone()).collect();
    super::page("resourceTemplates", &visible, params, None)
}

/// Whether the resource at `uri` (or the template it matches) is one the rules hide from the
/// caller: it is then as unknown as one that does not exist, to reads and subscriptions.
pub fn hidden(server: &Server, gate: &Gate<'_>, uri: &str) -> bool {
    if !gate.has_rules() {
        return false;
    }
    match server.resources.iter().find(|r| r.uri == uri) {
        Some(r) => !gate.sees_resource(r),
        None => server.resource_templates.iter().find(|t| t.matches(uri).is_some()).is_some_and(|t| !gate.sees_template(t)),
    }
}

/// What reading a resource takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    Ready(Value),
    Fetch { call: Box<HttpCall>, uri: String, mime_type: Option<String> },
    /// The resource of an upstream MCP server (its index in `upstreams`): its `resources/read`.
    Upstream { source: usize, uri: String },
}

/// The params of `resources/read`, `resources/subscribe` and `resources/unsubscribe`: one type,
/// one `Deserialize` in the module.
#[derive(Debug, Deserialize)]
pub struct UriParams {
    pub uri: String,
}

impl super::Params for UriParams {}

/// `resources/read`'s params.
pub type ReadParams = UriParams;

/// Reads a resource; `bindings` supplies the secrets and route parameters a request needs.
pub fn read(server: &Server, params: &ReadParams, bindings: &dyn Fn(&RequestTemplate) -> Bindings) -> Result<Read, Error> {
    let uri = params.uri.as_str();
    if let Some(r) = server.resources.iter().find(|r| r.uri == uri) {
        let mime = r.mime_type.as_deref();
        return Ok(match &r.source {
            // An app's `_meta.ui` (its CSP) is read from the contents too.
            ResourceSource::Text(text) => Read::Ready(with_meta(contents(uri, mime, "text", text), r.listing.get("_meta"))),
            ResourceSource::Blob(blob) => Read::Ready(contents(uri, mime, "blob", blob)),
            ResourceSource::Mcp(source) => Read::Upstream { source: *source, uri: uri.to_string() },
            ResourceSource::Http(request) => Read::Fetch {
                call: Box::new(request.render(&format!("resource {uri:?}"), &Map::new(), &bindings(request))?),
                uri: uri.to_string(),
                mime_type: r.mime_type.clone(),
            },
        });
    }
    for t in &server.resource_templates {
        if let (Some(source), Some(_)) = (t.mcp, t.matches(uri)) {
            return Ok(Read::Upstream { source, uri: uri.to_string() });
        }
        if let Some(vars) = t.matches(uri) {
            let args: Map<String, Value> = vars.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
            let call = t.request.render(&format!("resource {uri:?}"), &args, &bindings(&t.request))?;
            return Ok(Read::Fetch { call: Box::new(call), uri: uri.to_string(), mime_type: t.mime_type.clone() });
        }
    }
    Err(Error::ResourceNotFound(uri.to_string()))
}

/// `resources/subscribe`'s and `resources/unsubscribe`'s params.
pub type SubscribeParams = UriParams;

/// `resources/subscribe`: the session is told of the resource's updates from now on; an
/// unknown resource is -32002.
pub fn subscribe(server: &Server, session: &mut Session, params: SubscribeParams) -> Result<Value, Error> {
    if !exists(server, &params.uri) {
        return Err(Error::ResourceNotFound(params.uri));
    }
    if !session.subscriptions.contains(&params.uri) {
        session.subscriptions.push(params.uri);
    }
    Ok(json!({}))
}

/// `resources/unsubscribe`: no longer told; a URI the session did not subscribe to is fine.
pub fn unsubscribe(session: &mut Session, params: &SubscribeParams) -> Value {
    session.subscriptions.retain(|s| *s != params.uri);
    json!({})
}

/// `notifications/resources/updated` for one URI.
pub fn updated(uri: &str) -> String {
    crate::jsonrpc::notification(Method::ResourcesUpdated, json!({"uri": uri}))
}

/// Whether a URI names a configured resource or matches a template.
pub fn exists(server: &Server, uri: &str) -> bool {
    server.resources.iter().any(|r| r.uri == uri) || server.resource_templates.iter().any(|t| t.matches(uri).is_some())
}

fn contents(uri: &str, mime_type: Option<&str>, kind: &str, value: &str) -> Value {
    let mut item = Map::new();
    item.insert("uri".into(), json!(uri));
    if let Some(m) = mime_type {
        item.insert("mimeType".into(), json!(m));
    }
    item.insert(kind.into(), json!(value));
    json!({"contents": [item]})
}

fn with_meta(mut result: Value, meta: Option<&Value>) -> Value {
    let item = result.get_mut("contents").and_then(Value::as_array_mut).and_then(|c| c.first_mut()).and_then(Value::as_object_mut);
    if let (Some(meta), Some(item)) = (meta, item) {
        item.insert("_meta".into(), meta.clone());
    }
    result
}

/// The `resources/read` result from a fetched reply: text for text and JSON, a base64 blob
/// otherwise. The configured MIME type wins over the reply's.
pub fn from_reply(uri: &str, configured: Option<&str>, upstream: &Upstream) -> Result<Value, Error> {
    match upstream {
        Upstream::Reply { status, content_type, body, truncated_at: None } if (200..300).contains(status) => {
            let reply_mime = content_type.as_deref().map(crate::negotiate::media_type);
            let mime = configured.map(str::to_string).or(reply_mime);
            let textual = mime.as_deref().is_none_or(|m| m.starts_with("text/") || m == "application/json" || m.ends_with("+json") || m.ends_with("+xml"));
            match std::str::from_utf8(body) {
                Ok(text) if textual => Ok(contents(uri, mime.as_deref(), "text", text)),
                _ => Ok(contents(uri, mime.as_deref(), "blob", &crate::base64::encode(body))),
            }
        }
        Upstream::Reply { status, truncated_at: Some(limit), .. } => {
            Err(Error::Internal(format!("resource {uri}: the upstream reply (HTTP {status}) exceeds the {limit}-byte limit")))
        }
        Upstream::Reply { status, .. } => Err(Error::Internal(format!("resource {uri}: the upstream answered HTTP {status}"))),
        Upstream::TimedOut { after_ms } => Err(Error::Internal(format!("resource {uri}: the upstream did not answer within {after_ms} ms"))),
        Upstream::Failed(reason) => Err(Error::Internal(format!("resource {uri}: the upstream request failed: {reason}"))),
    }
}

/// What the method table (`crate::method`) gives this file's methods: capability, revisions,
/// whether the session's lease is kept, whether a lease serves it, cache hint, `Mcp-Name`.
/// `protocol::tests` holds it to the table, so it cannot go stale.
pub const PROPERTIES: &[(Method, &str)] = &[
    (Method::ResourcesList, "capability resources; every revision; keeps the session: yes; lease serves it: no; cacheable: yes; Mcp-Name: none"),
    (Method::ResourcesTemplatesList, "capability resources; every revision; keeps the session: yes; lease serves it: no; cacheable: yes; Mcp-Name: none"),
    (Method::ResourcesRead, "capability resources; every revision; keeps the session: yes; lease serves it: yes; cacheable: yes; Mcp-Name: uri"),
    (Method::ResourcesSubscribe, "capability none; before 2026-07-28 only; keeps the session: no; lease serves it: no; cacheable: no; Mcp-Name: none"),
    (Method::ResourcesUnsubscribe, "capability none; before 2026-07-28 only; keeps the session: no; lease serves it: no; cacheable: no; Mcp-Name: none"),
];
