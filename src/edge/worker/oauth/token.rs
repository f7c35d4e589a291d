//! `POST /token` (the code exchange and refresh, RFC 6749 §4.1.3 and §6), `POST /revoke`
//! (RFC 7009), and our access tokens checked on MCP requests: by signature, expiry and audience,
//! with no storage hop, and against the grants revoked lately, which each isolate reads from the
//! store at most once per `REVOCATION_WINDOW_MS`.

use std::cell::RefCell;
use std::collections::HashSet;

use serde_json::{json, Value};
use worker::{Env, Response};

use super::{form_body, json, nonce, random, register, signing_key, store, Cx};
use crate::auth::Principal;
use crate::catalog::{Catalog, Server};
use crate::edge::http::Incoming;
use crate::edge::now_ms;
use crate::error::Error;
use crate::oauth::client::Client;
use crate::oauth::grant::{Exchange, Grant};
use crate::oauth::store::Command;
use crate::oauth::token::{client_credentials, opened_upstream, AccessClaims, ACCESS_PREFIX, REFRESH_PREFIX};
use crate::oauth::{digest, single, OAuthError};
use crate::routes::RouteParams;

/// How late another isolate may learn of a revocation: the documented revocation window.
pub const REVOCATION_WINDOW_MS: u64 = 30_000;
/// Token and revocation requests are small.
const MAX_FORM_BYTES: u64 = 16 * 1024;

thread_local! {
    /// Grants revoked lately, and when the list was read.
    static REVOKED: RefCell<(u64, HashSet<String>)> = RefCell::new((0, HashSet::new()));
}

/// Records a revocation this isolate saw: its tokens stop working here at once.
pub fn note_revoked(grant: &str) {
    REVOKED.with(|r| {
        r.borrow_mut().1.insert(grant.to_string());
    });
}

async fn is_revoked(env: &Env, max_access_ttl_ms: u64, grant: &str) -> Result<bool, Error> {
    let now = now_ms();
    if REVOKED.with(|r| now >= r.borrow().0 + REVOCATION_WINDOW_MS) {
        // Only revocations whose tokens may still be alive matter.
        let since_ms = now.saturating_sub(max_access_ttl_ms + REVOCATION_WINDOW_MS);
        let answer = store(env, &Command::Revoked { since_ms }).await?;
        let ids: HashSet<String> = answer.get("revoked").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default();
        // The store's list holds every revocation that still matters, this isolate's included:
        // it replaces the set, which so stays as small as the list.
        REVOKED.with(|r| *r.borrow_mut() = (now, ids));
    }
    Ok(REVOKED.with(|r| r.borrow().1.contains(grant)))
}

/// The principal of an access token we issued, if it is valid for this request: signed by us,
/// not expired, for this server (and these route parameters) on this origin, not revoked.
/// `None` for the server: the token may be for any of this deployment's servers on this origin
/// (the admin API, where the principal's roles decide).
pub async fn verify_access(env: &Env, server: Option<(&Server, &RouteParams)>, origin: &str, credential: &str) -> Result<Principal, String> {
    let catalog: std::sync::Arc<Catalog> = crate::edge::catalog().map_err(|e| e.message())?;
    let Some(oauth) = &catalog.oauth else { return Err("this deployment has no authorization server".into()) };
    let key = signing_key(env).await.map_err(|e| e.message())?;
    let claims = AccessClaims::verify(&key, credential, now_ms())?;
    let audience = crate::head::RequestUrl::parse(&claims.aud).ok_or("the token names no MCP server")?;
    let same_server = audience.origin == origin
        && catalog.route(&audience.path).is_some_and(|(i, _, params)| match server {
            Some((server, route)) => catalog.servers.get(i).is_some_and(|s| s.route == server.route) && params == *route,
            None => true,
        });
    if !same_server {
        return Err(format!("the token is for another MCP server ({})", claims.aud));
    }
    if is_revoked(env, oauth.access_ttl_ms, &claims.grant).await.map_err(|e| e.message())? {
        return Err("the token was revoked".into());
    }
    Ok(claims.principal)
}

/// A `resource` as `/authorize` resolved it (no trailing slash, the origin as this server spells
/// it), so the two endpoints compare the same string; one that is not ours stays as it is.
fn canonical(cx: &Cx<'_>, resource: &str) -> String {
    super::resource(cx.catalog, &cx.url.origin, resource).unwrap_or_else(|| resource.to_string())
}

/// The client a token or revocation request comes from, authenticated.
async fn authenticated_client(req: &Incoming, cx: &Cx<'_>, pairs: &[(String, String)]) -> Result<Client, Error> {
    let credentials = client_credentials(pairs, req.header("authorization").as_deref())?;
    let client = register::find(cx, &credentials.client_id).await?.ok_or_else(|| OAuthError::invalid_client("the client is not registered (or was deleted); register again"))?;
    let named = register::named_secret(cx, &client);
    client.authenticate(credentials.method, credentials.secret.as_deref(), named.as_deref())?;
    Ok(client)
}

/// `POST /token`.
pub async fn token(mut req: Incoming, cx: &Cx<'_>) -> Result<Response, Error> {
    let pairs = form_body(&mut req, MAX_FORM_BYTES).await?;
    let client = authenticated_client(&req, cx, &pairs).await?;
    if client.client_id == crate::console::session::CLIENT_ID {
        // The console's codes are exchanged by the Worker itself, at its callback.
        return Err(OAuthError::invalid_client("the console's client has no token endpoint").into());
    }
    let now = now_ms();
    let next_refresh = format!("{REFRESH_PREFIX}{}", random(32)?);
    let answer = match single(&pairs, "grant_type")? {
        Some("authorization_code") => {
            let code = single(&pairs, "code")?.ok_or_else(|| OAuthError::invalid_request("code is required"))?;
            let exchange = Exchange {
                client_id: client.client_id.clone(),
                redirect_uri: single(&pairs, "redirect_uri")?.map(str::to_string),
                verifier: single(&pairs, "code_verifier")?.map(str::to_string),
                resource: single(&pairs, "resource")?.map(|r| canonical(cx, r)),
            };
            let command = Command::Exchange { code: digest(code), exchange, grant_id: random(16)?, refresh: digest(&next_refresh), lifetime_ms: cx.server.refresh_ttl_ms, now_ms: now };
            store(cx.env, &command).await?
        }
        Some("refresh_token") => {
            let presented = single(&pairs, "refresh_token")?.ok_or_else(|| OAuthError::invalid_request("refresh_token is required"))?;
            let resource = single(&pairs, "resource")?.map(|r| canonical(cx, r));
            let command = Command::Refresh { presented: digest(presented), client_id: client.client_id.clone(), resource, next: digest(&next_refresh), now_ms: now };
            store(cx.env, &command).await?
        }
        Some(other) => return Err(OAuthError::new(400, "unsupported_grant_type", format!("grant_type {other:?} is not supported")).into()),
        None => return Err(OAuthError::invalid_request("grant_type is required").into()),
    };
    let grant: Grant = answer.get("grant").cloned().and_then(|g| serde_json::from_value(g).ok()).ok_or_else(|| Error::Internal("the store answered no grant".into()))?;
    let key = signing_key(cx.env).await?;
    // Stored encrypted; `mint` encrypts it again, with a fresh nonce, inside the token. After a
    // change of signing key it cannot be decrypted, and the grant goes on without it.
    let stored = opened_upstream(&grant.principal, &key).unwrap_or_else(|| Principal { upstream_token: None, ..grant.principal.clone() });
    let mut principal = stored.clone();
    // A configured user's roles and email are read anew at each refresh; a user removed from
    // the configuration ends their grants.
    if let crate::oauth::SignIn::Users(users) = &cx.server.sign_in {
        match super::signin::current(users, &principal) {
            Some(now_configured) => principal = Principal { upstream_token: stored.upstream_token, ..now_configured },
            None => {
                store(cx.env, &Command::Revoke { refresh: None, grant: Some(grant.id.clone()), client_id: grant.client_id.clone(), now_ms: now }).await?;
                return Err(OAuthError::invalid_grant("the user no longer exists; sign in again").into());
            }
        }
    }
    let ttl = cx.server.access_ttl_ms.min(grant.expires_ms.saturating_sub(now));
    let claims = AccessClaims { aud: grant.resource.clone(), principal, client_id: grant.client_id.clone(), grant: grant.id.clone(), scope: grant.scope.clone(), exp_ms: now + ttl };
    let mut body = json!({
        "access_token": claims.mint(&key, nonce()?),
        "token_type": "Bearer",
        "expires_in": ttl / 1000,
        "refresh_token": next_refresh,
    });
    if let (false, Some(obj)) = (grant.scope.is_empty(), body.as_object_mut()) {
        obj.insert("scope".into(), json!(grant.scope.join(" ")));
    }
    json(200, &body)
}

/// `POST /revoke`: either token revokes its whole grant. The answer is 200 whatever the token
/// was (RFC 7009 §2.2), once the client is authenticated.
pub async fn revoke(mut req: Incoming, cx: &Cx<'_>) -> Result<Response, Error> {
    let pairs = form_body(&mut req, MAX_FORM_BYTES).await?;
    let client = authenticated_client(&req, cx, &pairs).await?;
    let token = single(&pairs, "token")?.ok_or_else(|| OAuthError::invalid_request("token is required"))?;
    let now = now_ms();
    let command = if token.starts_with(ACCESS_PREFIX) {
        let key = signing_key(cx.env).await?;
        // An expired token's grant is revoked all the same: its refresh token may still live.
        match AccessClaims::verify(&key, token, 0) {
            Ok(claims) => Some(Command::Revoke { refresh: None, grant: Some(claims.grant), client_id: client.client_id.clone(), now_ms: now }),
            Err(_) => None,
        }
    } else if token.starts_with(REFRESH_PREFIX) {
        Some(Command::Revoke { refresh: Some(digest(token)), grant: None, client_id: client.client_id.clone(), now_ms: now })
    } else {
        None
    };
    if let Some(command) = command {
        store(cx.env, &command).await?;
    }
    json(200, &json!({}))
}
