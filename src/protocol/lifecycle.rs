//! The lifecycle: `initialize` (version negotiation, capabilities and server info), `ping`,
//! and the 2026-07-28 `server/discover`.
//!
//! | method | params | handler |
//! |---|---|---|
//! | `initialize` | [`InitializeParams`] | [`hello`], then [`initialize_result`] (`dispatch::initialize` makes the session) |
//! | `ping` | none | [`ping`] |
//! | `server/discover` | none | `meta::discover` (what `initialize` answers, with the revision's fields) |
//!
//! `notifications/initialized` needs no answer. What the method table gives each method: see
//! [`PROPERTIES`].

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::catalog::Server;
use crate::negotiate::protocol_version;
use crate::method::Method;

/// What a client's `initialize` params tell us.
#[derive(Debug, Clone, PartialEq)]
pub struct Hello {
    pub protocol_version: &'static str,
    pub client_info: Value,
    pub client_capabilities: Value,
}

/// `initialize`'s params, every member as sent: none of them can make it fail.
#[derive(Debug, Deserialize)]
pub struct InitializeParams {
    #[serde(skip)]
    pub protocol_version: Value,
    #[serde(skip)]
    pub client_info: Value,
    #[serde(skip)]
    pub capabilities: Value,
}

impl super::Params for InitializeParams {
    fn keep(&mut self, members: &Map<String, Value>) {
        let member = |name| members.get(name).cloned();
        self.protocol_version = member("protocolVersion").unwrap_or_default();
        self.client_info = member("clientInfo").unwrap_or_else(empty);
        self.capabilities = member("capabilities").unwrap_or_else(empty);
    }
}

fn empty() -> Value {
    json!({})
}

impl Default for InitializeParams {
    fn default() -> InitializeParams {
        InitializeParams { protocol_version: Value::Null, client_info: empty(), capabilities: empty() }
    }
}

/// Reads `initialize` params leniently: curl recipes send `{}`, and a missing or unknown
/// version gets our latest, as the spec says.
pub fn hello(params: Option<&Value>) -> Hello {
    let params: InitializeParams = super::lenient(params);
    Hello {
        protocol_version: protocol_version(params.protocol_version.as_str()),
        client_info: params.client_info,
        client_capabilities: params.capabilities,
    }
}

/// `ping`: an empty result.
pub fn ping() -> Value {
    json!({})
}

/// What this server offers: tools always, and logging, since upstreams may send log lines; the
/// rest only when configured.
pub fn capabilities(server: &Server) -> Value {
    let changes = server.lists_change;
    let caps: Map<String, Value> = [
        ("tools", json!({"listChanged": changes})),
        ("logging", json!({})),
        ("resources", json!({"subscribe": true, "listChanged": changes})),
        ("prompts", json!({"listChanged": changes})),
        ("completions", json!({})),
    ]
    .into_iter()
    .filter(|(name, _)| offers(server, name))
    .map(|(name, value)| (name.to_string(), value))
    .collect();
    Value::Object(caps)
}

/// Whether the server has the named capability.
pub fn offers(server: &Server, capability: &str) -> bool {
    match capability {
        "tools" | "logging" => true,
        // A server whose lists change live offers them even while empty: one may be added.
        "resources" => server.lists_change || !server.resources.is_empty() || !server.resource_templates.is_empty(),
        "prompts" => server.lists_change || !server.prompts.is_empty(),
        // An upstream MCP server's prompts and templates are completed there.
        "completions" => server.prompts.iter().any(|p| !p.completions.is_empty() || p.mcp.is_some()) || server.resource_templates.iter().any(|t| !t.completions.is_empty() || t.mcp.is_some()),
        _ => false,
    }
}

pub fn initialize_result(server: &Server, version: &str) -> Value {
    let mut info = Map::new();
    info.insert("name".into(), json!(server.name));
    info.insert("version".into(), json!(server.version));
    if let Some(title) = &server.title {
        info.insert("title".into(), json!(title));
    }
    let mut result = Map::new();
    result.insert("protocolVersion".into(), json!(version));
    let mut capabilities = capabilities(server);
    if let (true, Some(map)) = (crate::tasks::offered(server, version), capabilities.as_object_mut()) {
        map.insert("tasks".into(), crate::tasks::capability());
    }
    result.insert("capabilities".into(), capabilities);
    result.insert("serverInfo".into(), Value::Object(info));
    if let Some(instructions) = &server.instructions {
        result.insert("instructions".into(), json!(instructions));
    }
    Value::Object(result)
}

/// What the method table (`crate::method`) gives this file's methods: capability, revisions,
/// whether the session's lease is kept, whether a lease serves it, cache hint, `Mcp-Name`.
/// `protocol::tests` holds it to the table, so it cannot go stale.
pub const PROPERTIES: &[(Method, &str)] = &[
    (Method::Initialize, "capability none; before 2026-07-28 only; keeps the session: no; lease serves it: no; cacheable: no; Mcp-Name: none"),
    (Method::Ping, "capability none; before 2026-07-28 only; keeps the session: yes; lease serves it: no; cacheable: no; Mcp-Name: none"),
    (Method::ServerDiscover, "capability none; 2026-07-28 only; keeps the session: no; lease serves it: no; cacheable: no; Mcp-Name: none"),
];
