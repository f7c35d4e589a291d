//! The catalog's prompts, resources and resource templates, compiled from the configuration:
//! what `protocol::prompts` and `protocol::resources` serve.

use serde_json::Value;

use crate::upstream::request::JsonTemplate;
use crate::upstream::template::Template;
use crate::upstream::RequestTemplate;

#[derive(Debug, Clone)]
pub struct Prompt {
    pub name: String,
    pub listing: Value,
    pub(crate) description: Option<String>,
    pub(crate) arguments: Vec<(String, bool)>,
    pub(crate) messages: Vec<JsonTemplate>,
    pub completions: Vec<(String, Vec<String>)>,
    /// A prompt of an upstream MCP server: which, and its name there.
    pub mcp: Option<crate::upstream::mcp::Target>,
}

#[derive(Debug, Clone)]
pub struct Resource {
    pub uri: String,
    pub listing: Value,
    pub(crate) mime_type: Option<String>,
    pub(crate) source: ResourceSource,
}

#[derive(Debug, Clone)]
pub enum ResourceSource {
    Text(String),
    Blob(String),
    Http(Box<RequestTemplate>),
    /// A resource of an upstream MCP server (its index in the server's `upstreams`).
    Mcp(usize),
}

#[derive(Debug, Clone)]
pub struct ResourceTemplate {
    pub(crate) uri_template: Template,
    pub listing: Value,
    pub(crate) mime_type: Option<String>,
    pub(crate) request: RequestTemplate,
    pub completions: Vec<(String, Vec<String>)>,
    /// A template of an upstream MCP server (its index in the server's `upstreams`).
    pub mcp: Option<usize>,
}

impl Resource {
    /// The request a fetched resource makes.
    pub fn request(&self) -> Option<&RequestTemplate> {
        match &self.source {
            ResourceSource::Http(request) => Some(request),
            ResourceSource::Text(_) | ResourceSource::Blob(_) | ResourceSource::Mcp(_) => None,
        }
    }
}

impl ResourceTemplate {
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        self.uri_template.match_uri(uri)
    }

    pub fn uri_template(&self) -> &str {
        self.listing.get("uriTemplate").and_then(Value::as_str).unwrap_or("")
    }

    pub fn request(&self) -> &RequestTemplate {
        &self.request
    }
}
