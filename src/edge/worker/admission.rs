//! Who is let in before anything else is read: the Host check (DNS rebinding), the client's
//! address as far as it can be trusted, rate limits through the Rate Limiting binding, and the
//! built-in per-address limit counted in a Durable Object per address (`crate::admission`).

use worker::Env;

use crate::admission::{Budget, Command, Taken};
use crate::catalog::{Catalog, Server};
use crate::edge::http::Incoming;
use crate::envelope::Op;
use crate::error::Error;
use crate::policy;

/// The var a launcher sets to say the Worker runs locally (`npm start`, `mcp-edge dev`, the
/// tests): the Host check then always applies, whatever a request claims.
pub const LOCAL: &str = "MCP_EDGE_LOCAL";

/// Whether the request came through Cloudflare's edge (`policy::at_edge`).
pub fn at_edge(req: &Incoming, env: &Env) -> bool {
    let local = crate::edge::secret(env, LOCAL).is_some_and(|v| !v.is_empty() && v != "0");
    policy::at_edge(local, req.header("cf-connecting-ip").as_deref(), req.header("host").as_deref())
}

/// The client's address, where it can be trusted; one address for every local client.
pub fn client_address(req: &Incoming, env: &Env) -> String {
    policy::client_address(at_edge(req, env), req.header("cf-connecting-ip").as_deref())
}

/// The Host check for a server's routes.
pub fn host_allowed(req: &Incoming, env: &Env, server: &Server) -> Result<(), Error> {
    let host = req.header("host");
    if !policy::host_allowed(host.as_deref(), at_edge(req, env), &server.allowed_hosts) {
        return Err(Error::HostForbidden(host.unwrap_or_default()));
    }
    Ok(())
}

/// The Host check for the routes of the deployment rather than of one server: a host some
/// server allows.
pub fn any_host_allowed(req: &Incoming, env: &Env, catalog: &Catalog) -> Result<(), Error> {
    let host = req.header("host");
    let edge = at_edge(req, env);
    if !catalog.servers.iter().any(|s| policy::host_allowed(host.as_deref(), edge, &s.allowed_hosts)) {
        return Err(Error::HostForbidden(host.unwrap_or_default()));
    }
    Ok(())
}

/// One more request with `key` through the Rate Limiting binding, or `RateLimited`.
pub async fn within(limiter: &wasm_bindgen::JsValue, period: u64, key: &str) -> Result<(), Error> {
    let failed = |e: wasm_bindgen::JsValue| Error::Internal(format!("rate limiter: {}", crate::edge::js_text(&e)));
    let outcome = wasm_bindgen_futures::JsFuture::from(rate_limit(limiter, key).map_err(failed)?).await.map_err(failed)?;
    if outcome.as_bool() != Some(true) {
        return Err(Error::RateLimited(period));
    }
    Ok(())
}

/// The same, for a binding named in the configuration.
pub async fn within_rate(env: &Env, binding: &str, period: u64, key: &str) -> Result<(), Error> {
    let limiter = env.rate_limiter(binding).map_err(|_| Error::Config(format!("rateLimit names the binding {binding}, which this Worker does not have")))?;
    within(limiter.as_ref(), period, key).await
}

/// The built-in per-address limit (`admission`): one more request from this client's address to
/// the authorization server, the console's sign-in or the admin API, or `RateLimited`.
pub async fn per_address(req: &Incoming, env: &Env, catalog: &Catalog) -> Result<(), Error> {
    per_address_with(req, env, catalog, None).await
}

/// The same, with one more budget of the address's to take from (registrations, say).
pub async fn per_address_with(req: &Incoming, env: &Env, catalog: &Catalog, extra: Option<Budget>) -> Result<(), Error> {
    let Some(limit) = catalog.admission else { return Ok(()) };
    let address = client_address(req, env);
    let budgets = std::iter::once(limit.budget()).chain(extra).collect();
    let taken = take(env, &format!("admission:{}", crate::oauth::digest(&address)), budgets).await?;
    if !taken.allowed {
        return Err(Error::RateLimited(taken.retry_after_ms.div_ceil(1000).max(1)));
    }
    Ok(())
}

/// The 429 an endpoint answers when the address's limit is spent, in the endpoint's own shape
/// (an OAuth error, the admin API's error), with `Retry-After`.
pub fn too_many(seconds: u64, body: &serde_json::Value, cors: bool) -> Result<worker::Response, Error> {
    let [content_type, no_store] = crate::edge::http::NO_STORE_JSON;
    let seconds = seconds.to_string();
    let fields = [content_type, no_store, ("Retry-After", &seconds), ("Access-Control-Allow-Origin", "*")];
    let fields = if cors { &fields[..] } else { &fields[..3] };
    Ok(crate::edge::http::builder(429, fields)?.fixed(body.to_string().into_bytes()))
}

/// Takes one from each budget in the counting object `name`, all or none.
pub async fn take(env: &Env, name: &str, budgets: Vec<Budget>) -> Result<Taken, Error> {
    let answer = count(env, name, &Command::Take { budgets, now_ms: crate::edge::now_ms() }).await?;
    serde_json::from_slice(&answer).map_err(|e| Error::Internal(format!("the counting object's answer: {e}")))
}

/// Starts these counts of the counting object `name` again.
pub async fn reset(env: &Env, name: &str, keys: Vec<String>) -> Result<(), Error> {
    count(env, name, &Command::Reset { keys }).await.map(|_| ())
}

async fn count(env: &Env, name: &str, command: &Command) -> Result<Vec<u8>, Error> {
    let body = serde_json::to_string(command).map_err(|e| Error::Internal(e.to_string()))?;
    let mut response = crate::edge::object::registry::call(env, name, Op::Count, 0, None, body).await?;
    let bytes = response.bytes().await?;
    if response.status_code() != 200 {
        return Err(Error::Internal(format!("the counting object {name} answered {}: {}", response.status_code(), String::from_utf8_lossy(&bytes))));
    }
    Ok(bytes)
}

#[wasm_bindgen::prelude::wasm_bindgen(module = "/src/edge/glue.js")]
extern "C" {
    /// Whether the Rate Limiting binding lets one more request with `key` through. Straight on
    /// the binding: `worker`'s wrapper converts with serde-wasm-bindgen.
    #[wasm_bindgen(catch)]
    fn rate_limit(limiter: &wasm_bindgen::JsValue, key: &str) -> Result<js_sys::Promise, wasm_bindgen::JsValue>;
}
