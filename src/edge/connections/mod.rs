//! Connections at the edge: a principal's tokens for the connections its calls use, read from
//! the isolate's cache or the principal's object (`connection:<digest>`, `store.rs`), which
//! refreshes them before they expire; what a call does when its user has not connected
//! (`call.rs`); the connect page, its callback and disconnecting (`pages.rs`).

pub(crate) mod call;
pub(crate) mod discover;
pub(crate) mod grants;
pub(crate) mod pages;
pub(crate) mod store;

use std::cell::RefCell;

use serde_json::Value;
use worker::Env;

use crate::auth::Principal;
use crate::catalog::Catalog;
use crate::connections::flow::{self, Form, TokenError};
use crate::connections::sealed::Keys;
use crate::connections::{Command, Connection, Provider, Token, REFRESH_MARGIN_MS};
use crate::error::Error;
use crate::upstream::reply::Upstream;

/// How long this isolate uses a token without asking the object again, when the token names no
/// expiry: the budget is one storage read per principal, connection and period.
const CACHE_MS: u64 = 5 * 60 * 1000;
/// Tokens kept in an isolate at most: past it the cache starts again. A list rather than a hash
/// map: a few hundred entries are searched as fast, in less of the module.
const CACHE_ENTRIES: usize = 500;

thread_local! {
    /// `principal\nconnection` → the access token, until when it is used.
    static TOKENS: RefCell<Vec<(String, String, u64)>> = const { RefCell::new(Vec::new()) };
}

fn key(principal: &str, connection: &str) -> String {
    format!("{principal}\n{connection}")
}

/// The token this isolate holds for `principal`'s `connection`, if still good: what templates
/// get (`dispatch::Environment::connection`).
pub(crate) fn cached(principal: &str, connection: &str) -> Option<String> {
    let now = crate::edge::now_ms();
    let key = key(principal, connection);
    TOKENS.with(|t| t.borrow().iter().find(|(k, _, until)| *k == key && *until > now).map(|(_, token, _)| token.clone()))
}

fn remember(principal: &str, connection: &str, token: &Token) {
    let now = crate::edge::now_ms();
    let until = token.expires_at_ms.map_or(now + CACHE_MS, |at| at.saturating_sub(REFRESH_MARGIN_MS).min(now + CACHE_MS));
    TOKENS.with(|t| {
        let mut t = t.borrow_mut();
        if t.len() >= CACHE_ENTRIES {
            t.retain(|(_, _, until)| *until > now);
            if t.len() >= CACHE_ENTRIES {
                t.clear();
            }
        }
        let key = key(principal, connection);
        t.retain(|(k, _, _)| *k != key);
        t.push((key, token.access_token.clone(), until));
    });
}

pub(crate) fn forget(principal: &str, connection: &str) {
    let key = key(principal, connection);
    TOKENS.with(|t| t.borrow_mut().retain(|(k, _, _)| *k != key));
}

pub(crate) fn connection<'a>(catalog: &'a Catalog, name: &str) -> Result<&'a Connection, Error> {
    catalog.connections.iter().find(|c| c.name == name).map(|c| c.as_ref()).ok_or_else(|| Error::Internal(format!("no connection {name:?}")))
}

/// The token of connection `name` for `principal`; `None`: not connected (the caller asks the
/// user to connect). One read of the principal's object per isolate and refresh period.
pub(crate) async fn token(env: &Env, catalog: &Catalog, principal: &Principal, name: &str) -> Result<Option<Token>, Error> {
    if let Some(access_token) = cached(&principal.id, name) {
        return Ok(Some(Token { access_token, ..Token::default() }));
    }
    fetch(env, catalog, principal, name, false).await
}

/// The token after a refresh the upstream asked for (it answered 401): `None` when the grant is
/// gone, and the user must connect again.
pub(crate) async fn refreshed(env: &Env, catalog: &Catalog, principal: &Principal, name: &str) -> Result<Option<Token>, Error> {
    forget(&principal.id, name);
    fetch(env, catalog, principal, name, true).await
}

async fn fetch(env: &Env, catalog: &Catalog, principal: &Principal, name: &str, force: bool) -> Result<Option<Token>, Error> {
    let c = connection(catalog, name)?;
    // Tokens without a browser: the deployment's, or the caller's exchanged (`grants`).
    if c.grant != crate::connections::Grant::AuthorizationCode {
        if force {
            grants::forget(c, principal);
        }
        let token = grants::for_call(env, c, principal).await?;
        remember(&principal.id, name, &token);
        return Ok(Some(token));
    }
    let provider = crate::edge::apart(provider(env, c)).await?;
    let command = Command::Get { principal: principal.id.clone(), connection: name.into(), provider: Some(provider), private_hosts: c.private_hosts.clone(), force, now_ms: crate::edge::now_ms() };
    let answer = crate::edge::apart(ask(env, &principal.id, &command)).await?;
    crate::edge::health::count(crate::metrics::Counter::ConnectionTokenReads, 1, None);
    let token = answer.get("token").and_then(Token::from_json);
    if let Some(t) = &token {
        remember(&principal.id, name, t);
    }
    Ok(token)
}

/// One command to the principal's object, and its answer.
pub(crate) async fn ask(env: &Env, principal: &str, command: &Command) -> Result<Value, Error> {
    let body = command.to_json();
    let (status, text) = crate::edge::object::registry::ask(env, &crate::connections::object(principal), crate::envelope::Op::Connection, 0, body).await?;
    if status != 200 {
        return Err(Error::Internal(format!("the connections store answered HTTP {status}")));
    }
    serde_json::from_slice(text.as_bytes()).map_err(|e| Error::Internal(format!("the connections store's answer: {e}")))
}

/// The keys records and states are sealed with: `CONNECTIONS_KEY`, else one derived from the
/// authorization server's signing key (which a per-user connection needs anyway). Both are read
/// with `CONNECTIONS_KEY_PREVIOUS`, and the signing key's, so that setting or rotating the key
/// loses no connection.
pub(crate) async fn keys(env: &Env) -> Result<Keys, Error> {
    let signing = crate::edge::apart(crate::edge::worker::oauth::signing_key(env)).await?;
    let own = crate::edge::secret(env, crate::keys::CONNECTIONS_KEY).filter(|k| !k.is_empty());
    let previous = crate::edge::secret(env, crate::keys::CONNECTIONS_KEY_PREVIOUS).filter(|k| !k.is_empty()).map(String::into_bytes);
    Ok(match own {
        Some(own) => Keys::new(own.as_bytes(), previous.into_iter().chain([signing]).collect()),
        None => Keys::new(&signing, previous.into_iter().collect()),
    })
}

/// The connection's provider: its configured endpoints, those its issuer's metadata names, or
/// the upstream MCP server's (`discover::of`).
pub(crate) async fn provider(env: &Env, c: &Connection) -> Result<Provider, Error> {
    discover::of(env, c, &discover::noted_origin()).await
}

/// POSTs a form to a provider; its answer read as a token (`refresh_token`: the one a refresh
/// sent). Revocation answers are read the same way: 200 and nothing is success.
pub(crate) async fn post(private_hosts: &[String], form: &Form, now_ms: u64, refresh_token: Option<&str>) -> Result<Token, TokenError> {
    let mut headers = vec![("Content-Type".to_string(), "application/x-www-form-urlencoded".to_string()), ("Accept".to_string(), "application/json".to_string())];
    if let Some(a) = &form.authorization {
        headers.push(("Authorization".into(), a.clone()));
    }
    let http = crate::upstream::HttpCall {
        method: "POST".into(),
        url: form.url.clone(),
        headers,
        body: Some(form.body.clone()),
        timeout_ms: 15_000,
        redirects: crate::upstream::retry::RedirectPolicy { max: 0, hosts: Vec::new() },
        retry: None,
        private_upstreams: private_hosts.to_vec(),
        trace: None,
    };
    match crate::edge::upstream::perform(&http, 256 * 1024).await {
        Upstream::Reply { status, body, .. } => flow::token_answer(status, &body, now_ms, refresh_token),
        Upstream::TimedOut { .. } => Err(TokenError { error: "temporarily_unavailable".into(), description: Some("the provider did not answer in time".into()) }),
        Upstream::Failed(why) => Err(TokenError { error: "temporarily_unavailable".into(), description: Some(format!("the provider could not be reached: {why}")) }),
    }
}
