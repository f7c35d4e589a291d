//! `GET /admin/api/health`: the health figures as JSON (`crate::health::HealthView`), for a
//! caller with `Authorization: Bearer <MCP_EDGE_ADMIN_TOKEN>`. Without that Worker var (or
//! secret) the path does not exist: a 404, as for any unknown path.

use worker::{Env, Headers, Method, Response, ResponseBuilder};

use crate::catalog::Catalog;
use crate::edge::http::Incoming;
use crate::error::Error;
use crate::policy;

pub const PATH: &str = "/admin/api/health";
/// The Worker var or secret an admin presents as a bearer token.
pub const ADMIN_TOKEN: &str = "MCP_EDGE_ADMIN_TOKEN";

pub async fn serve(req: &Incoming, env: &Env, catalog: &Catalog) -> Result<Response, Error> {
    let Some(token) = crate::edge::secret(env, ADMIN_TOKEN).filter(|t| !t.is_empty()) else {
        return Err(Error::RouteNotFound(PATH.into()));
    };
    // DNS rebinding defence, as for every other path: only a host some server allows.
    let host = req.header("host");
    if !catalog.servers.iter().any(|s| policy::host_allowed(host.as_deref(), req.header("cf-connecting-ip").as_deref(), &s.allowed_hosts)) {
        return Err(Error::HostForbidden(host.unwrap_or_default()));
    }
    if req.method() != Method::Get {
        return Err(Error::MethodNotAllowed("GET"));
    }
    if !crate::auth::bearer_matches(req.header("authorization").as_deref(), &token) {
        return Err(Error::Unauthorized { challenge: "Bearer realm=\"mcp-edge-admin\"".into(), why: format!("{PATH} needs the admin token ({ADMIN_TOKEN}) as a bearer token") });
    }
    let view = crate::edge::health::figures(env, catalog, crate::edge::now_ms()).await?;
    let headers = Headers::new();
    headers.set("Content-Type", "application/json")?;
    // The figures change every few seconds, and are for admins only.
    headers.set("Cache-Control", "no-store")?;
    let body = serde_json::to_vec(&view).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(ResponseBuilder::new().with_status(200).with_headers(headers).fixed(body))
}
