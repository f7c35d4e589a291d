//! Signing in to the console, and what a console sign-in is good for.
//!
//! - `GET /console/signin`: to this deployment's `/authorize`, as the console's own client with
//!   PKCE; `GET /console/callback` takes the code back and exchanges it here (never at `/token`).
//! - `POST /console/signin`: the admin token, typed into the page's form.
//! - `POST /console/signout`: the grant revoked, the cookie cleared.
//! - `POST /console/token`: an access token for a server with `auth.oauth`, so the page's "Try a
//!   tool" panels call it as the signed-in person.
//!
//! The session cookie is `HttpOnly` and `SameSite=Strict`, and whatever uses it must come from
//! the console itself (`session::from_console`). Each request re-checks it: a revoked or expired
//! grant, a rotated admin token, or a user gone from the file ends it.

use serde_json::{json, Value};
use worker::{Env, Method, Response};

use crate::auth::Principal;
use crate::catalog::Catalog;
use crate::console::session::{self, Login, Session, Via, COOKIE, LOGIN_COOKIE, LOGIN_TTL_MS, TTL_MS};
use crate::oauth::client::CONSOLE_CLIENT_ID as CLIENT_ID;
use crate::paths::{CONSOLE_CALLBACK as CALLBACK_PATH, CONSOLE_SIGNIN as SIGNIN_PATH, CONSOLE_SIGNOUT as SIGNOUT_PATH, CONSOLE_TOKEN as TOKEN_PATH};
use crate::edge::http::Incoming;
use crate::edge::now_ms;
use crate::edge::body::{form_body, read_limited, MAX_CONSOLE_FORM_BYTES};
use crate::edge::ids::{nonce, random};
use crate::edge::worker::oauth::{answered, redirect, signing_key, store};
use crate::error::Error;
use crate::head::RequestUrl;
use crate::oauth::grant::{Exchange, Grant};
use crate::oauth::store::Command;
use crate::oauth::token::{opened_upstream, AccessClaims};
use crate::oauth::{digest, SignIn};

/// A sign-in or sign-out form that another site sent (login CSRF, forced sign-out).
const FOREIGN: &str = "This form was sent from another site, and nothing was done.";

/// The sign-in paths, by method.
pub async fn serve(req: Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Response, Error> {
    match (req.method(), url.path.as_str()) {
        (Method::Get, SIGNIN_PATH) => start(&req, env, catalog, url).await,
        (Method::Post, SIGNIN_PATH) => admin_token(req, env, catalog, url).await,
        (Method::Get, CALLBACK_PATH) => callback(&req, env, catalog, url).await,
        (Method::Post, SIGNOUT_PATH) => sign_out(&req, env, catalog, url).await,
        (Method::Post, TOKEN_PATH) => access_token(req, env, catalog, url).await,
        (_, SIGNIN_PATH) => Err(Error::MethodNotAllowed("GET, POST")),
        (_, CALLBACK_PATH) => Err(Error::MethodNotAllowed("GET")),
        (_, _) => Err(Error::MethodNotAllowed("POST")),
    }
}

/// The session the request's cookie carries, if it is still good.
pub async fn session(req: &Incoming, env: &Env, catalog: &Catalog) -> Result<Option<Session>, Error> {
    let Some(sealed) = req.header("cookie").and_then(|c| crate::auth::cookie(&c, COOKIE)).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let key = signing_key(env).await?;
    let Some(mut session) = Session::open(&key, &sealed, now_ms()) else {
        return Ok(None);
    };
    match &session.via {
        Via::AdminToken(signed_with) => {
            let current = crate::edge::live::admin_token(env).map(|t| digest(&t));
            if !current.is_some_and(|d| crate::auth::same_secret(&d, signed_with)) {
                return Ok(None);
            }
        }
        Via::Grant(id) => {
            let Some(oauth) = &catalog.oauth else {
                return Ok(None);
            };
            let alive = store(env, &Command::GrantAlive { grant: id.clone(), now_ms: now_ms() }).await?;
            if alive.get("alive").and_then(Value::as_bool) != Some(true) {
                return Ok(None);
            }
            // A configured user's roles are read anew; a user gone from the file is signed out.
            if let SignIn::Users(users) = &oauth.sign_in {
                let Some(now) = crate::edge::worker::oauth::configured_user(users, &session.principal) else {
                    return Ok(None);
                };
                session.principal = Principal { upstream_token: session.principal.upstream_token.take(), ..now };
            }
        }
    }
    Ok(Some(session))
}

/// The session, for a request that uses it to act: it must come from the console itself.
async fn acting(req: &Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Option<Session>, Error> {
    if !from_console(req, url) {
        return Ok(None);
    }
    session(req, env, catalog).await
}

pub fn from_console(req: &Incoming, url: &RequestUrl) -> bool {
    session::from_console(req.header("origin").as_deref(), req.header("sec-fetch-site").as_deref(), &url.origin)
}

fn https(url: &RequestUrl) -> bool {
    url.origin.starts_with("https://")
}

fn session_cookie(url: &RequestUrl, value: &str, max_age_s: u64) -> String {
    crate::auth::set_cookie(COOKIE, value, max_age_s, https(url), "Strict")
}

/// `GET /console/signin`: off to `/authorize`, with the state and PKCE verifier in a short-lived
/// cookie. `Lax`, unlike the session's: the callback may arrive at the end of redirects that an
/// identity provider's site started.
async fn start(req: &Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Response, Error> {
    if catalog.oauth.is_none() {
        return super::page(req, env, catalog, url, Some("This deployment has no authorization server to sign in with; use the admin token."), 404).await;
    }
    let key = signing_key(env).await?;
    let back = url.query_param("return").and_then(|r| session::back(&r));
    let login = Login { state: random(24)?, verifier: random(32)?, exp_ms: now_ms() + LOGIN_TTL_MS, back };
    let challenge = {
        use sha2::{Digest, Sha256};
        crate::base64::encode_url(&Sha256::digest(login.verifier.as_bytes()))
    };
    let callback = format!("{}{CALLBACK_PATH}", url.origin);
    let console = format!("{}/", url.origin);
    let authorize = crate::oauth::uri::with_params(
        &format!("{}/authorize", url.origin),
        &[
            ("response_type", "code"),
            ("client_id", CLIENT_ID),
            ("redirect_uri", &callback),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("state", &login.state),
            ("resource", &console),
        ],
    );
    let cookie = crate::auth::set_cookie(LOGIN_COOKIE, &login.seal(&key), LOGIN_TTL_MS / 1000, https(url), "Lax");
    redirect(&authorize, &[cookie])
}

/// `GET /console/callback`: the code exchanged for the grant that the session rides on.
async fn callback(req: &Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Response, Error> {
    let Some(oauth) = &catalog.oauth else {
        return super::page(req, env, catalog, url, Some("This deployment has no authorization server."), 404).await;
    };
    let pairs = crate::oauth::form(&url.query);
    let field = |name: &str| crate::oauth::single(&pairs, name).ok().flatten().map(str::to_string);
    let clear_login = crate::auth::set_cookie(LOGIN_COOKIE, "", 0, https(url), "Lax");
    let failed = |why: String| async move {
        crate::edge::health::count(crate::metrics::Counter::SigninFailures, 1, None);
        super::page(req, env, catalog, url, Some(&why), 400).await
    };
    if let Some(error) = field("error") {
        let said = field("error_description").unwrap_or(error);
        return failed(format!("Sign-in did not complete: {said}")).await;
    }
    if field("iss").is_some_and(|iss| iss != url.origin) {
        return failed("Sign-in did not complete: the answer came from another issuer.".into()).await;
    }
    let key = signing_key(env).await?;
    let cookie = req.header("cookie").and_then(|c| crate::auth::cookie(&c, LOGIN_COOKIE)).unwrap_or_default();
    let (Some(code), Some(state)) = (field("code"), field("state")) else {
        return failed("Sign-in did not complete: the answer carries no code.".into()).await;
    };
    let Some(login) = Login::open(&key, &cookie, &state, now_ms()) else {
        return failed("This sign-in was not started in this browser, or took too long. Sign in again.".into()).await;
    };
    let now = now_ms();
    let exchange = Exchange { client_id: CLIENT_ID.into(), redirect_uri: Some(format!("{}{CALLBACK_PATH}", url.origin)), verifier: Some(login.verifier), resource: Some(format!("{}/", url.origin)) };
    // The grant has a refresh token no one holds: the session is the grant, for its lifetime.
    let Some(grant) = crate::oauth::store::grant_of(&code, crate::oauth::token::CODE_PREFIX).map(str::to_string) else {
        return failed("Sign-in did not complete: the answer carries no valid code.".into()).await;
    };
    let command = Command::Exchange { grant, code: digest(&code), exchange, refresh: digest(&random(32)?), lifetime_ms: oauth.refresh_ttl_ms.min(TTL_MS), now_ms: now };
    let answer = match store(env, &command).await {
        Ok(a) => a,
        Err(Error::Wire(e)) => return failed(format!("Sign-in did not complete: {}", e.description)).await,
        Err(e) => return Err(e),
    };
    let grant: Grant = answered(answer.get("grant")).ok_or_else(|| Error::Internal("the store answered no grant".into()))?;
    let principal = opened_upstream(&grant.principal, &key).unwrap_or_else(|| Principal { upstream_token: None, ..grant.principal.clone() });
    // The identity provider's token stays out of the cookie: the console never needs it.
    let principal = Principal { upstream_token: None, ..principal };
    let session = Session { principal, via: Via::Grant(grant.id), exp_ms: grant.expires_ms };
    let cookies = [session_cookie(url, &session.seal(&key), grant.expires_ms.saturating_sub(now) / 1000), clear_login];
    back_to(req, &cookies, login.back.as_deref().unwrap_or("/"))
}

/// `POST /console/signin`: the admin token from the page's form.
async fn admin_token(mut req: Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Response, Error> {
    if !from_console(&req, url) {
        return super::page(&req, env, catalog, url, Some(FOREIGN), 403).await;
    }
    // Guessing the admin token is counted per address, with the authorization server's sign-in
    // attempts where a binding counts those too.
    match crate::edge::worker::admission::per_address(&req, env, catalog).await {
        Err(Error::RateLimited(seconds)) => {
            return super::page(&req, env, catalog, url, Some(&format!("Too many attempts from this address. Try again in {seconds} seconds.")), 429).await;
        }
        other => other?,
    }
    if let Some((binding, period)) = catalog.oauth.as_ref().and_then(|o| o.rate_limit.as_ref()) {
        let ip = crate::edge::worker::admission::client_address(&req, env);
        crate::edge::worker::admission::within_rate(env, binding, *period, &format!("console:{ip}")).await?;
    }
    let pairs = form_body(&mut req, MAX_CONSOLE_FORM_BYTES).await?;
    let typed = crate::oauth::single(&pairs, "token").ok().flatten().unwrap_or_default().to_string();
    let Some(token) = crate::edge::live::admin_token(env) else {
        return super::page(&req, env, catalog, url, Some("No admin token is set for this deployment (the secret MCP_EDGE_ADMIN_TOKEN)."), 404).await;
    };
    if typed.is_empty() || !crate::auth::same_secret(&token, &typed) {
        crate::edge::health::count(crate::metrics::Counter::SigninFailures, 1, None);
        return super::page(&req, env, catalog, url, Some("That is not the admin token."), 401).await;
    }
    let key = signing_key(env).await?;
    let session = Session { principal: session::admin_token_principal(), via: Via::AdminToken(digest(&token)), exp_ms: now_ms() + TTL_MS };
    back_home(&req, &[session_cookie(url, &session.seal(&key), TTL_MS / 1000)])
}

/// `POST /console/signout`.
async fn sign_out(req: &Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Response, Error> {
    if !from_console(req, url) {
        return super::page(req, env, catalog, url, Some(FOREIGN), 403).await;
    }
    if let Some(Session { via: Via::Grant(id), .. }) = session(req, env, catalog).await? {
        store(env, &Command::Revoke { grant: id, presented: None, client_id: Some(CLIENT_ID.into()), now_ms: now_ms() }).await?;
    }
    // The authorization server's own password sign-in ends too: otherwise the next "Sign in"
    // would go straight through as the same person, and signing out would mean nothing.
    let password = crate::auth::set_cookie(crate::edge::worker::oauth::SIGNED_IN_COOKIE, "", 0, https(url), "Lax");
    back_home(req, &[session_cookie(url, "", 0), password])
}

/// `POST /console/token` with `{"route": "/path"}`: an access token for the server there, for the
/// signed-in person, if that server takes this deployment's tokens and their roles.
async fn access_token(mut req: Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Response, Error> {
    let refuse = |status: u16, why: &str| json_reply(status, &json!({"error": why}));
    let Some(session) = acting(&req, env, catalog, url).await? else {
        return refuse(401, "sign in to the console first");
    };
    let (Some(oauth), Via::Grant(grant)) = (&catalog.oauth, &session.via) else {
        return refuse(403, "only a sign-in through this deployment's authorization server gets tokens; the admin token does not");
    };
    let body = read_limited(&mut req, MAX_CONSOLE_FORM_BYTES).await?;
    let route = serde_json::from_slice::<Value>(&body).ok().and_then(|v| v.get("route").and_then(Value::as_str).map(str::to_string)).unwrap_or_default();
    let server = catalog.route(&route).and_then(|(i, _, _)| catalog.servers.get(i).cloned());
    let Some(auth) = server.as_ref().and_then(|s| s.auth.as_ref()).filter(|a| a.oauth) else {
        return refuse(404, "no server at that route takes this deployment's tokens");
    };
    if !session.principal.may(&auth.required_roles) {
        return refuse(403, &format!("this server needs the role {}", auth.required_roles.join(" or ")));
    }
    let key = signing_key(env).await?;
    let now = now_ms();
    let ttl = oauth.access_ttl_ms.min(session.exp_ms.saturating_sub(now));
    let claims = AccessClaims { aud: format!("{}{route}", url.origin), principal: session.principal.clone(), client_id: CLIENT_ID.into(), grant: grant.clone(), scope: Vec::new(), exp_ms: now + ttl };
    json_reply(200, &json!({"access_token": claims.mint(&key, nonce()?), "token_type": "Bearer", "expires_in": ttl / 1000}))
}

fn json_reply(status: u16, value: &Value) -> Result<Response, Error> {
    Ok(crate::edge::http::builder(status, &crate::edge::http::NO_STORE_JSON)?.fixed(value.to_string().into_bytes()))
}

/// Back to the page with the cookies set. Not a redirect: after a chain of redirects that an
/// identity provider's site started, a browser would not send a `SameSite=Strict` cookie on the
/// next one. A page of this origin that moves on by itself starts a navigation of its own.
fn back_home(req: &Incoming, cookies: &[String]) -> Result<Response, Error> {
    back_to(req, cookies, "/")
}

/// The page that moves on to `path` (this origin's: `/`, or a connect page).
fn back_to(req: &Incoming, cookies: &[String], path: &str) -> Result<Response, Error> {
    let to = crate::html::escape(path);
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url={to}\"><title>Signed in · mcp-edge</title></head>\
                <body><p>Done. <a href=\"{to}\">Go on</a>.</p></body></html>"
    );
    super::respond(req, 200, crate::html::page_headers("", "'none'"), body, cookies)
}
