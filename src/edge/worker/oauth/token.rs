//! `POST /token` (the code exchange and refresh, RFC 6749 §4.1.3 and §6), `POST /revoke`
//! (RFC 7009), and our access tokens checked on MCP requests: by signature, expiry and audience,
//! with no storage hop, and against the grants revoked lately, which each isolate reads from the
//! store at most once per `REVOCATION_WINDOW_MS`.

use std::cell::RefCell;
use std::collections::HashSet;

use serde_json::{json, Value};
use worker::{Env, Response};

use super::{json, register, signing_key, store, Cx};
use crate::edge::body::{form_body, MAX_OAUTH_FORM_BYTES};
use crate::edge::ids::{nonce, random};
use crate::auth::Principal;
use crate::catalog::{Catalog, Server};
use crate::edge::http::Incoming;
use crate::edge::now_ms;
use crate::error::Error;
use crate::oauth::client::Client;
use crate::oauth::grant::{Exchange, Grant};
use crate::oauth::store::{grant_of, token_for, Command};
use crate::oauth::token::{client_credentials, opened_upstream, AccessClaims, ACCESS_PREFIX, CODE_PREFIX, REFRESH_PREFIX};
use crate::oauth::{digest, single, OAuthError};
use crate::routes::RouteParams;

/// How late another isolate may learn of a revocation: the documented revocation window.
pub const REVOCATION_WINDOW_MS: u64 = 30_000;

/// After a failed read of the revocations, how long an isolate goes on with the list it has
/// before it asks again.
const RETRY_AFTER_FAILURE_MS: u64 = 5_000;

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

/// Whether `grant` was revoked, as far as this isolate knows. When the list cannot be read, the
/// isolate goes on with the one it has (and the revocations it saw itself) and asks again
/// shortly: a failing store delays what other isolates learn of a revocation, as the window
/// does, rather than refusing every signed-in request.
async fn is_revoked(env: &Env, max_access_ttl_ms: u64, grant: &str) -> bool {
    let now = now_ms();
    if REVOKED.with(|r| now >= r.borrow().0 + REVOCATION_WINDOW_MS) {
        // Only revocations whose tokens may still be alive matter.
        let since_ms = now.saturating_sub(max_access_ttl_ms + REVOCATION_WINDOW_MS);
        match store(env, &Command::Revoked { since_ms }).await {
            Ok(answer) => {
                let ids: HashSet<String> = answer.get("revoked").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default();
                // The store's list holds every revocation that still matters, this isolate's
                // included: it replaces the set, which so stays as small as the list.
                REVOKED.with(|r| *r.borrow_mut() = (now, ids));
            }
            Err(e) => {
                worker::console_error!("{}", crate::edge::redaction::line(json!({"message": "the list of revoked grants could not be read; going on with the last one", "error": e.message()}).to_string()));
                REVOKED.with(|r| r.borrow_mut().0 = (now + RETRY_AFTER_FAILURE_MS).saturating_sub(REVOCATION_WINDOW_MS));
            }
        }
    }
    REVOKED.with(|r| r.borrow().1.contains(grant))
}

/// What an access token must have been issued for: every credential has one audience.
#[derive(Clone, Copy)]
pub enum Audience<'a> {
    /// An MCP server, at these route parameters.
    Server(&'a Server, &'a RouteParams),
    /// The admin API (`/admin/api`): a token issued for it, never one for an MCP server.
    Admin,
}

/// The principal of an access token we issued, if it is valid for this request: signed by us,
/// not expired, for `audience` on this origin, not revoked.
pub async fn verify_access(env: &Env, audience: Audience<'_>, origin: &str, credential: &str) -> Result<Principal, String> {
    let catalog: std::sync::Arc<Catalog> = crate::edge::live::served().map_err(|e| e.message())?;
    let Some(oauth) = &catalog.oauth else { return Err("this deployment has no authorization server".into()) };
    let key = signing_key(env).await.map_err(|e| e.message())?;
    let claims = AccessClaims::verify(&key, credential, now_ms())?;
    let named = crate::weburl::WebUrl::parse(&claims.aud).map(|u| crate::head::RequestUrl::of(&u)).map_err(|_| "the token names no MCP server")?;
    let ours = named.origin == origin
        && match audience {
            Audience::Server(server, route) => catalog.route(&named.path).is_some_and(|(i, _, params)| catalog.servers.get(i).is_some_and(|s| s.route == server.route) && params == *route),
            Audience::Admin => named.path == crate::paths::ADMIN_API,
        };
    if !ours {
        return Err(match audience {
            Audience::Server(..) => format!("the token is for another MCP server ({})", claims.aud),
            Audience::Admin => format!("the token is for {}, not for the admin API: ask for one with resource={origin}{}", claims.aud, crate::paths::ADMIN_API),
        });
    }
    if is_revoked(env, oauth.access_ttl_ms, &claims.grant).await {
        return Err("the token was revoked".into());
    }
    Ok(Principal { client_id: Some(claims.client_id), ..claims.principal })
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
    let pairs = form_body(&mut req, MAX_OAUTH_FORM_BYTES).await?;
    let client = authenticated_client(&req, cx, &pairs).await?;
    if client.client_id == crate::oauth::client::CONSOLE_CLIENT_ID {
        // The console's codes are exchanged by the Worker itself, at its callback.
        return Err(OAuthError::invalid_client("the console's client has no token endpoint").into());
    }
    let now = now_ms();
    let (answer, next_refresh) = match single(&pairs, "grant_type")? {
        Some("authorization_code") => {
            let code = single(&pairs, "code")?.ok_or_else(|| OAuthError::invalid_request("code is required"))?;
            let grant = grant_of(code, CODE_PREFIX).ok_or_else(|| OAuthError::invalid_grant("the code is not valid"))?.to_string();
            let exchange = Exchange {
                client_id: client.client_id.clone(),
                redirect_uri: single(&pairs, "redirect_uri")?.map(str::to_string),
                verifier: single(&pairs, "code_verifier")?.map(str::to_string),
                resource: single(&pairs, "resource")?.map(|r| canonical(cx, r)),
            };
            let next_refresh = token_for(REFRESH_PREFIX, &grant, &random(32)?);
            let command = Command::Exchange { grant, code: digest(code), exchange, refresh: digest(&next_refresh), lifetime_ms: cx.server.refresh_ttl_ms, now_ms: now };
            (store(cx.env, &command).await?, next_refresh)
        }
        Some("refresh_token") => {
            let presented = single(&pairs, "refresh_token")?.ok_or_else(|| OAuthError::invalid_request("refresh_token is required"))?;
            let grant = grant_of(presented, REFRESH_PREFIX).ok_or_else(|| OAuthError::invalid_grant("the refresh token is not valid (tokens issued before an upgrade are not: sign in again)"))?.to_string();
            let resource = single(&pairs, "resource")?.map(|r| canonical(cx, r));
            let next_refresh = token_for(REFRESH_PREFIX, &grant, &random(32)?);
            let command = Command::Refresh { grant, presented: digest(presented), client_id: client.client_id.clone(), resource, next: digest(&next_refresh), now_ms: now };
            (store(cx.env, &command).await?, next_refresh)
        }
        Some(other) => return Err(OAuthError::new(400, "unsupported_grant_type", format!("grant_type {other:?} is not supported")).into()),
        None => return Err(OAuthError::invalid_request("grant_type is required").into()),
    };
    let grant: Grant = super::answered(answer.get("grant")).ok_or_else(|| Error::Internal("the store answered no grant".into()))?;
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
                store(cx.env, &Command::Revoke { grant: grant.id.clone(), presented: None, client_id: Some(grant.client_id.clone()), now_ms: now }).await?;
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
    let pairs = form_body(&mut req, MAX_OAUTH_FORM_BYTES).await?;
    let client = authenticated_client(&req, cx, &pairs).await?;
    let token = single(&pairs, "token")?.ok_or_else(|| OAuthError::invalid_request("token is required"))?;
    let now = now_ms();
    let command = if token.starts_with(ACCESS_PREFIX) {
        let key = signing_key(cx.env).await?;
        // An expired token's grant is revoked all the same: its refresh token may still live.
        match AccessClaims::verify(&key, token, 0) {
            Ok(claims) => Some(Command::Revoke { grant: claims.grant, presented: None, client_id: Some(client.client_id.clone()), now_ms: now }),
            Err(_) => None,
        }
    } else if let Some(grant) = grant_of(token, REFRESH_PREFIX) {
        // The grant object checks that this is a token it issued: a grant id alone revokes nothing.
        Some(Command::Revoke { grant: grant.to_string(), presented: Some(digest(token)), client_id: Some(client.client_id.clone()), now_ms: now })
    } else {
        None
    };
    if let Some(command) = command {
        store(cx.env, &command).await?;
    }
    json(200, &json!({}))
}
