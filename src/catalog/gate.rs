//! Who sees and may call which of a server's entries: each tool's roles, and the server's
//! access rules (`crate::access`), decided by one gate per list or call so that every path to
//! an entry (lists, calls, catalog search and describe, `call_tool`, tasks, reads, prompts,
//! the console) asks the same question.

use serde_json::Value;

use super::{Prompt, Resource, ResourceSource, ResourceTemplate, Server};
use crate::access::{Context, Denial, Entry};
use crate::auth::Principal;
use crate::tools::Tool;

pub struct Gate<'a> {
    server: &'a Server,
    principal: &'a Principal,
    /// `None` when the server has no rules: nothing to evaluate.
    rules: Option<Context>,
}

impl Server {
    /// The gate of one list or call by `principal` at `now_ms`.
    pub fn gate<'a>(&'a self, principal: &'a Principal, now_ms: u64) -> Gate<'a> {
        let rules = (!self.policies.is_empty()).then(|| self.policies.context(principal, now_ms));
        Gate { server: self, principal, rules }
    }

    fn upstream_name(&self, source: Option<usize>) -> &str {
        source.and_then(|i| self.upstreams.get(i)).map_or("", |s| s.name.as_str())
    }
}

impl Gate<'_> {
    /// Whether every tool is shown to everyone: no roles and no rules.
    pub fn is_open(&self) -> bool {
        self.rules.is_none() && self.server.tools.iter().all(|t| t.roles.is_empty())
    }

    fn shows(&self, entry: Entry<'_>) -> bool {
        self.rules.as_ref().is_none_or(|cx| self.server.policies.shows(cx, &entry))
    }

    fn tool_entry<'t>(&'t self, tool: &'t Tool) -> Entry<'t> {
        let upstream = self.server.upstream_name(tool.mcp.as_ref().map(|t| t.source));
        let (server, source) = match (&tool.curation, tool.mcp.is_some()) {
            (Some(c), _) => (c.from.as_str(), "alias"),
            (None, true) => (self.server.name.as_str(), "mcp"),
            (None, false) => (self.server.name.as_str(), "http"),
        };
        Entry { kind: "tool", name: &tool.name, tags: &tool.tags, upstream, server, source }
    }

    /// An entry that is not a tool: a resource, template or prompt, its own or an upstream's.
    fn other<'t>(&'t self, kind: &'static str, name: &'t str, source: Option<usize>) -> Entry<'t> {
        let upstream = self.server.upstream_name(source);
        Entry { kind, name, tags: &[], upstream, server: &self.server.name, source: if source.is_some() { "mcp" } else { "http" } }
    }

    /// Whether the caller sees the tool in lists, searches and descriptions, and may call it.
    pub fn sees(&self, tool: &Tool) -> bool {
        self.principal.may(&tool.roles) && self.shows(self.tool_entry(tool))
    }

    /// Whether the rules let a tool the caller sees be called with these arguments (validated
    /// against its schema already).
    pub fn admits(&self, tool: &Tool, args: &Value) -> Result<(), Denial> {
        self.rules.as_ref().map_or(Ok(()), |cx| self.server.policies.admits(cx, &self.tool_entry(tool), args))
    }

    pub fn sees_resource(&self, resource: &Resource) -> bool {
        let source = match resource.source {
            ResourceSource::Mcp(i) => Some(i),
            _ => None,
        };
        self.shows(self.other("resource", &resource.uri, source))
    }

    pub fn sees_template(&self, template: &ResourceTemplate) -> bool {
        self.shows(self.other("resource", template.uri_template(), template.mcp))
    }

    pub fn sees_prompt(&self, prompt: &Prompt) -> bool {
        self.shows(self.other("prompt", &prompt.name, prompt.mcp.as_ref().map(|t| t.source)))
    }

    /// Whether the server has access rules; without them, every resource and prompt is shown
    /// (only tools have roles).
    pub fn has_rules(&self) -> bool {
        self.rules.is_some()
    }
}
