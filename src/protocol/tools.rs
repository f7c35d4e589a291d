//! Tools: `tools/list` and `tools/call`'s params.
//!
//! | method | params | handler |
//! |---|---|---|
//! | `tools/list` | [`ListParams`] | [`list`] (and [`list_cache`], the hint of a 2026-07-28 list) |
//! | `tools/call` | [`CallParams`] | `dispatch/call.rs` `call` |
//!
//! What the method table gives each: see [`PROPERTIES`].

use serde::Deserialize;
use serde_json::{Map, Value};

use super::ListParams;

use crate::auth::Principal;
use crate::catalog::Server;
use crate::error::Error;
use crate::method::Method;

/// The tools the principal may see: role-gated tools are absent for everyone else. A catalog
/// server lists its three catalog tools to everyone; roles gate what they find.
pub fn list(server: &Server, params: &ListParams, principal: &Principal) -> Result<Value, Error> {
    if server.catalog_index().is_some() || server.tools.iter().all(|t| t.roles.is_empty()) {
        return super::page("tools", &server.tool_listings, params, server.tools_page_size);
    }
    let visible: Vec<Value> = server.tools.iter().filter(|t| principal.may(&t.roles)).map(|t| t.listing.clone()).collect();
    super::page("tools", &visible, params, server.tools_page_size)
}

/// The cache hint of the principal's `tools/list`: the server's, narrowed by the hints of the
/// tools it lists (in catalog mode, of the tools its search may find).
pub fn list_cache(server: &Server, principal: &Principal) -> crate::cache::CacheHint {
    server.tools.iter().filter(|t| principal.may(&t.roles)).filter_map(|t| t.cache).fold(server.cache, crate::cache::CacheHint::and)
}

/// `tools/call`'s params. The call itself (the tool found for the caller, its arguments
/// validated, its request rendered, a task or a retry) is `dispatch/call.rs`, which needs the
/// dispatch's `Action`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CallParams {
    pub name: String,
    /// Kept as sent, checked against the tool's input schema. Absent or null: none.
    #[serde(skip)]
    pub arguments: Option<Value>,
    /// `_meta`, kept as sent: the progress token, and values a request template may name.
    #[serde(skip)]
    pub meta: Option<Value>,
    /// 2025-11-25: run as a task (kept as sent: a `ttl` that is not a number is none).
    #[serde(skip)]
    pub task: Option<Value>,
    /// 2026-07-28: a retry's state and answers, kept as sent and checked where they are used
    /// (`mrtr`).
    #[serde(skip)]
    pub request_state: Option<Value>,
    #[serde(skip)]
    pub input_responses: Option<Value>,
}

impl super::Params for CallParams {
    fn keep(&mut self, members: &Map<String, Value>) {
        let member = |name| super::member(members, name);
        (self.arguments, self.meta, self.task) = (member("arguments"), member("_meta"), member("task"));
        (self.request_state, self.input_responses) = (member("requestState"), member("inputResponses"));
    }
}

impl CallParams {
    /// The arguments, `{}` when there are none.
    pub fn arguments(&self) -> Value {
        self.arguments.clone().unwrap_or_else(|| Value::Object(Map::new()))
    }

    /// The client's progress token: a string or a number in `_meta.progressToken`.
    pub fn progress_token(&self) -> Option<Value> {
        self.meta.as_ref().and_then(|m| m.get("progressToken")).filter(|t| t.is_string() || t.is_number()).cloned()
    }
}

/// What the method table (`crate::method`) gives this file's methods: capability, revisions,
/// whether the session's lease is kept, whether a lease serves it, cache hint, `Mcp-Name`.
/// `protocol::tests` holds it to the table, so it cannot go stale.
pub const PROPERTIES: &[(Method, &str)] = &[
    (Method::ToolsList, "capability none; every revision; keeps the session: yes; lease serves it: no; cacheable: no; Mcp-Name: none"),
    (Method::ToolsCall, "capability none; every revision; keeps the session: yes; lease serves it: yes; cacheable: no; Mcp-Name: name"),
];
