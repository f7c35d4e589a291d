//! Tokens without a browser: a `client_credentials` connection's, one for the deployment, and a
//! `token_exchange` connection's, one per principal and subject token. Each is asked for at the
//! provider's token endpoint when this isolate has none unexpired, and kept in the isolate's
//! bounded cache (`connections::exchange::Cache`) until shortly before it expires; an upstream's
//! 401 forgets it (`forget`), so the call's one retry gets a fresh one.

use std::cell::RefCell;

use crate::auth::Principal;
use crate::connections::exchange::{self, Cache};
use crate::connections::{Connection, Grant, Provider, SubjectToken, Token};
use crate::error::Error;
use crate::upstream::reply::Upstream;

/// At most this many principals' exchanged tokens per isolate, and this many per principal
/// (one per connection and subject token), the least recently used going first.
const PRINCIPALS: usize = 512;
const PER_PRINCIPAL: usize = 8;
/// How long a token whose answer gave no `expires_in` is kept.
const UNDATED_MS: u64 = 300_000;

thread_local! {
    static TOKENS: RefCell<Cache<Token>> = const { RefCell::new(Cache::new(PRINCIPALS, PER_PRINCIPAL)) };
}

fn failed(name: &str, why: impl std::fmt::Display) -> Error {
    Error::Internal(format!("connection {name:?}: {why}"))
}

/// The token of a `client_credentials` or `token_exchange` connection for this call.
pub(crate) async fn token(connection: &Connection, provider: &Provider, principal: &Principal) -> Result<Token, Error> {
    let place = exchange::place(connection, principal).map_err(|why| failed(&connection.name, why))?;
    let now = crate::edge::now_ms();
    if let Some(token) = TOKENS.with(|t| t.borrow_mut().get(&place.owner, &place.key, now)) {
        return Ok(token);
    }
    let owned = exchange::form(connection, provider, &place);
    let form = crate::connections::flow::form(provider, &provider.token_endpoint, owned.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect());
    let mut headers = vec![("Content-Type".to_string(), "application/x-www-form-urlencoded".to_string()), ("Accept".to_string(), "application/json".to_string())];
    headers.extend(form.authorization.map(|a| ("Authorization".to_string(), a)));
    let call = crate::upstream::HttpCall {
        method: "POST".into(),
        url: form.url,
        headers,
        body: Some(form.body),
        timeout_ms: 10_000,
        redirects: crate::upstream::retry::RedirectPolicy { max: 0, hosts: Vec::new() },
        retry: None,
        private_upstreams: connection.private_hosts.clone(),
        trace: None,
    };
    let token = match crate::edge::upstream::perform(&call, 64 * 1024).await {
        Upstream::Reply { status, body, truncated_at: None, .. } => crate::connections::flow::token_answer(status, &body, now, None).map_err(|e| format!("the token endpoint refused: {e}")),
        Upstream::Reply { .. } => Err("the token endpoint's answer is too large".into()),
        Upstream::TimedOut { .. } => Err("the token endpoint did not answer in time".into()),
        Upstream::Failed(why) => Err(format!("the token endpoint could not be reached: {why}")),
    };
    let token = token.map_err(|why| {
        // A discovered provider may have changed (a registration dropped): found again next time.
        if connection.from_upstream() {
            super::discover::forget(&connection.name);
        }
        failed(&connection.name, why)
    })?;
    let until = token.expires_at_ms.unwrap_or(now + UNDATED_MS);
    TOKENS.with(|t| t.borrow_mut().put(&place.owner, &place.key, token.clone(), until));
    Ok(token)
}

/// Forgets the token this call used: the upstream refused it.
pub(crate) fn forget(connection: &Connection, principal: &Principal) {
    if let Ok(place) = exchange::place(connection, principal) {
        TOKENS.with(|t| t.borrow_mut().forget(&place.owner, &place.key));
    }
}

/// The token of a `client_credentials` or `token_exchange` connection for `principal`'s call.
pub(crate) async fn for_call(env: &::worker::Env, connection: &Connection, principal: &Principal) -> Result<Token, Error> {
    let provider = super::discover::of(env, connection, "").await?;
    token(connection, &provider, principal).await
}

/// The deployment's bearer for reading the lists of upstream MCP server `source`, when its
/// connection is a client credentials one.
pub(crate) async fn listing_bearer(env: &::worker::Env, catalog: &crate::catalog::Catalog, source: &crate::upstream::mcp::Source) -> Result<Option<String>, String> {
    let Some(connection) = source.connection.as_ref().and_then(|name| catalog.connections.iter().find(|c| &c.name == name)) else { return Ok(None) };
    if connection.grant != Grant::ClientCredentials {
        return Ok(None);
    }
    let token = for_call(env, connection, &Principal::anonymous()).await.map_err(|e| e.message())?;
    Ok(Some(token.access_token))
}

/// Forgets the deployment's token the lists of `source` were read with: it was refused.
pub(crate) fn listing_refused(catalog: &crate::catalog::Catalog, source: &crate::upstream::mcp::Source) {
    if let Some(connection) = source.connection.as_ref().and_then(|name| catalog.connections.iter().find(|c| &c.name == name)) {
        forget(connection, &Principal::anonymous());
    }
}

/// Whether a call to `server` may exchange the caller's own credential: one of its tools or
/// upstreams uses a token exchange connection with `subjectToken: "caller"`.
pub(crate) fn exchanges_caller(server: &crate::catalog::Server) -> bool {
    let Ok(catalog) = crate::edge::configured::base_catalog() else { return false };
    let trades = |name: &String| catalog.connections.iter().any(|c| &c.name == name && c.exchange.as_ref().is_some_and(|e| e.subject_token == SubjectToken::Caller));
    server.tools.iter().filter_map(|t| t.connection.as_ref()).any(trades) || server.upstreams.iter().filter_map(|s| s.connection.as_ref()).any(trades)
}
