//! The host application's introspection: a credential it issued, sent to its introspection URL,
//! becomes a principal (answers cached briefly, per credential and route). How an MCP request
//! with such a credential is authenticated (`auth`), and how sign-in mode (b) at `/authorize`
//! learns who the browser is (`oauth::signin`).

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::Value;
use worker::Env;

use crate::auth::{introspected, Auth, Principal};
use crate::catalog::Server;
use crate::edge::now_ms;
use crate::edge::upstream;
use crate::routes::RouteParams;
use crate::upstream::reply::Upstream;

/// Answers are small; this many entries is plenty for one isolate.
const CACHE_ENTRIES: usize = 256;

thread_local! {
    /// Introspection answers by digest of (credential, route): principal and expiry.
    static INTROSPECTED: RefCell<HashMap<String, (Principal, u64)>> = RefCell::new(HashMap::new());
}

/// The host application's answer for `credential`: also how sign-in mode (b) learns who the
/// browser at `/authorize` is.
pub async fn introspect(auth: &Auth, env: &Env, server: &Server, credential: &str, route: &RouteParams, trace: Option<&crate::trace::Context>) -> Result<Principal, String> {
    let Some(introspection) = &auth.introspection else { return Err("no introspection".into()) };
    let key = {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(credential.as_bytes());
        h.update(serde_json::to_string(route).unwrap_or_default().as_bytes());
        crate::hex::encode(&h.finalize())
    };
    let now = now_ms();
    if let Some(principal) = INTROSPECTED.with(|c| c.borrow().get(&key).filter(|(_, until)| *until > now).map(|(p, _)| p.clone())) {
        return Ok(principal);
    }
    let mut args = serde_json::Map::new();
    args.insert("token".into(), Value::String(credential.to_string()));
    let mut call = introspection.request.render("auth introspection", &args, &crate::upstream::request::bindings(&introspection.request.secrets, &|name| crate::edge::secret(env, name), route)).map_err(|e| e.message())?;
    call.private_upstreams.clone_from(&server.private_upstreams);
    call.trace = trace.cloned();
    let answer = match upstream::perform(&call, 64 * 1024).await {
        Upstream::Reply { status: 200..=299, body, .. } => serde_json::from_slice::<Value>(&body).map_err(|_| "the introspection answer is not JSON".to_string())?,
        Upstream::Reply { status, .. } => return Err(format!("the host application refused the credentials (HTTP {status})")),
        Upstream::TimedOut { .. } | Upstream::Failed(_) => return Err("the introspection request failed".into()),
    };
    let principal = introspected(&answer, introspection).ok_or("the introspection answer names no subject")?;
    INTROSPECTED.with(|c| {
        let mut cache = c.borrow_mut();
        if cache.len() >= CACHE_ENTRIES {
            cache.retain(|_, (_, until)| *until > now);
        }
        if cache.len() < CACHE_ENTRIES && introspection.cache_ms > 0 {
            cache.insert(key, (principal.clone(), now + introspection.cache_ms));
        }
    });
    Ok(principal)
}
