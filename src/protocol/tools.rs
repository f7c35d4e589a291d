//! `tools/list` (with cursors) and decoding `tools/call` params.

use serde_json::{Map, Value};

use crate::auth::Principal;
use crate::catalog::Server;
use crate::error::Error;

/// The tools the principal may see: role-gated tools are absent for everyone else. A catalog
/// server lists its three catalog tools to everyone; roles gate what they find.
pub fn list(server: &Server, params: Option<&Value>, principal: &Principal) -> Result<Value, Error> {
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

/// The decoded params of `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallParams {
    pub name: String,
    pub arguments: Value,
    pub progress_token: Option<Value>,
}

pub fn call_params(params: Option<&Value>) -> Result<CallParams, Error> {
    let params = params.and_then(Value::as_object).ok_or_else(|| Error::InvalidParams(format!("{} needs params", crate::method::Method::ToolsCall)))?;
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidParams("missing tool name in params".into()))?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(a) => a.clone(),
    };
    let progress_token = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .filter(|t| t.is_string() || t.is_number())
        .cloned();
    Ok(CallParams { name: name.to_string(), arguments, progress_token })
}
