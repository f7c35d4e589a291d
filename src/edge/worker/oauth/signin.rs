//! The three ways a person signs in at `/authorize`: (c) a configured user's password, checked
//! with PBKDF2 in Web Crypto and locked after repeated failures; (a) an identity provider, with
//! its own code flow and PKCE, whose claims become the principal; (b) the host application's
//! session cookie, checked by the resource server's introspection.

use std::cell::RefCell;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use worker::Response;

use super::{redirect, Cx};
use crate::edge::ids::{nonce, random};
use crate::auth::{same_secret, Principal};
use crate::edge::http::Incoming;
use crate::edge::now_ms;
use crate::error::Error;
use crate::oauth::authorize::AuthorizationRequest;
use crate::oauth::signin::{oidc_principal, user, user_principal, Password};
use crate::oauth::token::{opened_upstream, sealed_upstream};
use crate::oauth::{digest, encode, Oidc, User};
use crate::upstream::reply::Upstream;
use crate::signing::{seal, sign, unseal};
use crate::upstream::HttpCall;

/// The cookie that keeps a password sign-in for `SIGNED_IN_S`.
pub const SIGNED_IN_COOKIE: &str = "mcp_edge_signin";
pub const SIGNED_IN_S: u64 = 12 * 3600;
/// The cookie that binds an identity provider's answer to the browser that went there.
const LOGIN_COOKIE: &str = "mcp_edge_login";
/// Discovered provider endpoints are kept this long.
const DISCOVERY_MS: u64 = 3600 * 1000;

thread_local! {
    /// A provider's endpoints by issuer (only the configured one), and until when.
    static ENDPOINTS: RefCell<HashMap<String, (Endpoints, u64)>> = RefCell::new(HashMap::new());
}

/// The cookie that marks a browser a username signed in on: its password attempts have a
/// budget of their own, which nobody else's failures spend (`admission::sign_in_budgets`).
const DEVICE_COOKIE: &str = "mcp_edge_device";
/// Browsers keep a cookie at most 400 days.
const DEVICE_S: u64 = 400 * 24 * 3600;

/// What a device cookie says: which username signed in on this browser, and the browser's id.
#[derive(Serialize, Deserialize)]
struct Device {
    user: String,
    id: String,
}

/// The id of this browser, if `username` signed in on it before.
fn known_device(req: &Incoming, key: &[u8], username: &str) -> Option<String> {
    let sealed = crate::auth::cookie(&req.header("cookie")?, DEVICE_COOKIE)?;
    let device: Device = serde_json::from_slice(&unseal(key, "oauth.device", &sealed)?).ok()?;
    same_secret(&device.user, &digest(username)).then_some(device.id)
}

#[wasm_bindgen::prelude::wasm_bindgen(module = "/src/edge/glue.js")]
extern "C" {
    #[wasm_bindgen(catch)]
    fn pbkdf2(password: &str, salt: &[u8], iterations: u32) -> Result<js_sys::Promise, wasm_bindgen::JsValue>;
}

async fn derive(password: &str, salt: &[u8], iterations: u32) -> Result<Vec<u8>, Error> {
    let failed = |e: wasm_bindgen::JsValue| Error::Internal(format!("PBKDF2: {}", crate::edge::js_text(&e)));
    let bytes = wasm_bindgen_futures::JsFuture::from(pbkdf2(password, salt, iterations).map_err(failed)?).await.map_err(failed)?;
    Ok(js_sys::Uint8Array::new(&bytes).to_vec())
}

/// Checks a username and password: `Ok(Ok((principal, cookies)))` signs in, with the cookies to
/// set; `Ok(Err(message))` is refused, with what the page says.
///
/// The attempt is counted before the password is derived, in one command to the username's
/// counting object, so N attempts at once get the budget's worth of checks, not N. The budget
/// is per address (per known device, for a browser the username signed in on), so an attacker
/// spends their own. Known and unknown usernames cost the same: one derivation of the presented
/// password, and a comparison in constant time.
pub async fn password(req: &Incoming, cx: &Cx<'_>, key: &[u8], users: &[User], username: &str, password: &str) -> Result<Result<(Principal, Vec<String>), String>, Error> {
    let device = known_device(req, key, username);
    let budgets = crate::admission::sign_in_budgets(device.as_deref(), &crate::edge::worker::admission::client_address(req, cx.env));
    let counter = format!("signin:{}", digest(username));
    let taken = crate::edge::worker::admission::take(cx.env, &counter, budgets.clone()).await?;
    if !taken.allowed {
        let minutes = taken.retry_after_ms.div_ceil(60_000).max(1);
        return Ok(Err(format!("Too many sign-in attempts for this user from here. Try again in {minutes} minute{}.", if minutes == 1 { "" } else { "s" })));
    }
    let known = user(users, username);
    let secret = known.and_then(|u| crate::edge::secret(cx.env, &u.password_secret)).filter(|s| !s.is_empty());
    let spec = match &secret {
        Some(secret) => Some(Password::parse(secret).map_err(|why| Error::Config(format!("the password secret of user {username:?} {why}")))?),
        None => None,
    };
    // An unknown username is derived like a plain secret's: the same work as a known one.
    let (iterations, salt) = spec.as_ref().map_or_else(|| Password::Plain(String::new()).derivation(username), |s| s.derivation(username));
    let presented = derive(password, &salt, iterations).await?;
    let matches = match &spec {
        Some(Password::Hashed { hash, .. }) => crate::auth::same_bytes(&presented, hash),
        Some(Password::Plain(plain)) => same_secret(password, plain),
        None => false,
    };
    let Some(user) = known.filter(|_| matches) else {
        crate::edge::health::count(crate::metrics::Counter::SigninFailures, 1, None);
        return Ok(Err("Wrong username or password.".to_string()));
    };
    crate::edge::worker::admission::reset(cx.env, &counter, crate::admission::sign_in_reset(&budgets)).await?;
    let mut cookies = Vec::new();
    if device.is_none() {
        let mark = Device { user: digest(username), id: random(16)? };
        let sealed = seal(key, "oauth.device", serde_json::to_string(&mark).unwrap_or_default().as_bytes());
        cookies.push(crate::auth::set_cookie(DEVICE_COOKIE, &sealed, DEVICE_S, cx.url.origin.starts_with("https://"), "Lax"));
    }
    Ok(Ok((user_principal(user), cookies)))
}

/// What a sealed principal carries: who, and until when; bound to `bound` (a request, or
/// nothing for the sign-in cookie).
#[derive(Serialize, Deserialize)]
struct Sealed {
    principal: Principal,
    bound: String,
    exp_ms: u64,
}

/// A principal sealed for a cookie or a form field; an upstream token inside is encrypted.
pub fn seal_principal(key: &[u8], purpose: &str, principal: &Principal, bound: &str, ttl_ms: u64) -> Result<String, Error> {
    let principal = sealed_upstream(principal, key, nonce()?);
    let sealed = Sealed { principal, bound: bound.into(), exp_ms: now_ms() + ttl_ms };
    Ok(seal(key, purpose, serde_json::to_string(&sealed).unwrap_or_default().as_bytes()))
}

pub fn unseal_principal(key: &[u8], purpose: &str, sealed: &str, bound: &str) -> Option<Principal> {
    let s: Sealed = serde_json::from_slice(&unseal(key, purpose, sealed)?).ok()?;
    if s.exp_ms <= now_ms() || s.bound != bound {
        return None;
    }
    opened_upstream(&s.principal, key)
}

/// The user a password sign-in cookie names, while it lasts and while the user is configured.
pub fn signed_in(req: &Incoming, key: &[u8], users: &[User]) -> Option<Principal> {
    let value = crate::auth::cookie(&req.header("cookie")?, SIGNED_IN_COOKIE)?;
    current(users, &unseal_principal(key, "oauth.signin", &value, "")?)
}

/// A configured user's principal as the configuration says it now (roles and email may have
/// changed); `None` once the user is gone from it.
pub fn current(users: &[User], principal: &Principal) -> Option<Principal> {
    let still = user(users, &principal.subject).filter(|u| principal.id == user_principal(u).id)?;
    Some(user_principal(still))
}

/// (b) Who the browser is to the host application: its cookie, checked by the introspection of
/// the server the request is for.
pub async fn browser_session(req: &Incoming, cx: &Cx<'_>, resource: &str) -> Result<Option<Principal>, Error> {
    let Ok(url) = crate::weburl::WebUrl::parse(resource) else { return Ok(None) };
    let Some((index, _, params)) = cx.catalog.route(url.path()) else { return Ok(None) };
    let Some(server) = cx.catalog.servers.get(index) else { return Ok(None) };
    let Some(auth) = server.auth.as_ref() else { return Ok(None) };
    let header = |name: &str| req.header(name);
    let Some(credential) = auth.credential(&header) else { return Ok(None) };
    Ok(crate::edge::worker::introspection::introspect(auth, cx.env, server, &credential, &params, cx.trace.as_ref()).await.ok())
}

/// Why `who` may not use the server `resource` names, if they may not: a token would only be
/// refused there, so the page says it now.
pub fn refusal(cx: &Cx<'_>, resource: &str, who: &Principal) -> Option<String> {
    let name = who.email.clone().unwrap_or_else(|| who.subject.clone());
    if resource == super::admin_resource(&cx.url.origin) {
        let admin = crate::console::session::ADMIN_ROLE;
        return (!who.roles.iter().any(|r| r == admin)).then(|| format!("You are signed in as {name}, who may not administer this deployment: that needs the role {admin}."));
    }
    let url = crate::weburl::WebUrl::parse(resource).ok()?;
    let (index, _, _) = cx.catalog.route(url.path())?;
    let auth = cx.catalog.servers.get(index)?.auth.as_ref()?;
    (!who.may(&auth.required_roles)).then(|| format!("You are signed in as {name}, who may not use this server: it needs the role {}.", auth.required_roles.join(" or ")))
}

/// (b) The host application's sign-in page, told to come back to this `/authorize`.
pub fn login_redirect(login_url: &str, cx: &Cx<'_>) -> String {
    let back = format!("{}{}?{}", cx.url.origin, cx.url.path, cx.url.query);
    let target = if login_url.starts_with('/') { format!("{}{login_url}", cx.url.origin) } else { login_url.to_string() };
    target.replace("{return}", &encode(&back))
}

/// A provider's endpoints.
#[derive(Debug, Clone)]
struct Endpoints {
    authorization: String,
    token: String,
    userinfo: Option<String>,
}

/// The identity provider's endpoints answer within 10 s.
fn fetch(method: &str, url: &str, headers: Vec<(String, String)>, body: Option<String>, cx: &Cx<'_>) -> HttpCall {
    super::outbound(cx, method, url, headers, body, 10_000)
}

async fn fetch_json(call: &HttpCall, what: &str) -> Result<Value, String> {
    match crate::edge::upstream::perform(call, 256 * 1024).await {
        Upstream::Reply { status: 200..=299, body, .. } => serde_json::from_slice(&body).map_err(|_| format!("the identity provider's {what} is not JSON")),
        Upstream::Reply { status, body, .. } => {
            let said = serde_json::from_slice::<Value>(&body).ok().and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_string)).unwrap_or_default();
            Err(format!("the identity provider's {what} answered HTTP {status} {said}"))
        }
        Upstream::TimedOut { .. } => Err(format!("the identity provider's {what} did not answer in time")),
        Upstream::Failed(why) => Err(format!("the identity provider's {what} could not be reached: {why}")),
    }
}

/// The configured endpoints, or those the provider's OpenID discovery document names (cached).
async fn endpoints(cx: &Cx<'_>, oidc: &Oidc) -> Result<Endpoints, String> {
    if let (Some(authorization), Some(token)) = (&oidc.authorization_endpoint, &oidc.token_endpoint) {
        return Ok(Endpoints { authorization: authorization.clone(), token: token.clone(), userinfo: oidc.userinfo_endpoint.clone() });
    }
    let now = now_ms();
    if let Some(e) = ENDPOINTS.with(|c| c.borrow().get(&oidc.issuer).filter(|(_, until)| *until > now).map(|(e, _)| e.clone())) {
        return Ok(e);
    }
    let url = format!("{}/.well-known/openid-configuration", oidc.issuer);
    let doc = fetch_json(&fetch("GET", &url, vec![("Accept".into(), "application/json".into())], None, cx), "discovery document").await?;
    if doc.get("issuer").and_then(Value::as_str).map(|i| i.trim_end_matches('/')) != Some(oidc.issuer.as_str()) {
        return Err("the identity provider's discovery document names another issuer".into());
    }
    // A discovered endpoint is checked as configured ones are when the file loads: https, or
    // http for a local provider in `privateHosts`.
    let field = |name: &str| doc.get(name).and_then(Value::as_str).map(|e| crate::oauth::signin::discovered_endpoint(&oidc.issuer, e, &cx.server.private_hosts)).transpose();
    let endpoints = Endpoints {
        authorization: oidc.authorization_endpoint.clone().map_or_else(|| field("authorization_endpoint"), |e| Ok(Some(e)))?.ok_or("the discovery document names no authorization_endpoint")?,
        token: oidc.token_endpoint.clone().map_or_else(|| field("token_endpoint"), |e| Ok(Some(e)))?.ok_or("the discovery document names no token_endpoint")?,
        userinfo: oidc.userinfo_endpoint.clone().map_or_else(|| field("userinfo_endpoint"), |e| Ok(Some(e)))?,
    };
    ENDPOINTS.with(|c| c.borrow_mut().insert(oidc.issuer.clone(), (endpoints.clone(), now + DISCOVERY_MS)));
    Ok(endpoints)
}

/// Where the identity provider sends the browser back: `/oauth/callback` on the request's
/// origin, as the runtime serialized it after the Host check, read again by the URL parser.
fn callback_uri(cx: &Cx<'_>) -> Result<String, Error> {
    crate::weburl::WebUrl::on_origin(&cx.url.origin, crate::paths::OAUTH_CALLBACK).map(|u| u.as_str().to_string()).map_err(|why| Error::Internal(format!("no callback URI on this origin: {why}")))
}

/// What travels through the provider as `state`: the sealed authorization request, bound to
/// the browser's login cookie.
#[derive(Serialize, Deserialize)]
struct ProviderState {
    request: String,
    browser: String,
}

/// (a) Sends the browser to the identity provider, with PKCE and a nonce derived from a fresh
/// login cookie that only this browser holds.
pub async fn provider_redirect(cx: &Cx<'_>, oidc: &Oidc, key: &[u8], request: &AuthorizationRequest) -> Result<Response, Error> {
    let endpoints = match endpoints(cx, oidc).await {
        Ok(e) => e,
        Err(why) => return super::error_page(502, &format!("Sign-in is unavailable: {why}.")),
    };
    let login = random(24)?;
    let state = ProviderState { request: request.seal(key), browser: digest(&login) };
    let state = seal(key, "oauth.provider", serde_json::to_string(&state).unwrap_or_default().as_bytes());
    let challenge = {
        use sha2::{Digest, Sha256};
        crate::base64::encode_url(&Sha256::digest(sign(key, "oauth.pkce", &login).as_bytes()))
    };
    let params = [
        ("response_type", "code".to_string()),
        ("client_id", oidc.client_id.clone()),
        ("redirect_uri", callback_uri(cx)?),
        ("scope", oidc.scopes.join(" ")),
        ("state", state),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256".into()),
        ("nonce", sign(key, "oauth.nonce", &login)),
    ];
    let refs: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let location = crate::oauth::uri::with_params(&endpoints.authorization, &refs);
    redirect(&location, &[cx.cookie(LOGIN_COOKIE, &login, 900)])
}

/// (a) The provider's redirect back: its code exchanged (with our client secret and the PKCE
/// verifier), the user's claims read, and the principal they make. `Err`: what the page says.
pub async fn provider_callback(req: &Incoming, cx: &Cx<'_>, oidc: &Oidc, key: &[u8]) -> Result<Result<(AuthorizationRequest, Principal), String>, Error> {
    let pairs = crate::oauth::form(&cx.url.query);
    let get = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let Some(state) = get("state").and_then(|s| unseal(key, "oauth.provider", &s)).and_then(|b| serde_json::from_slice::<ProviderState>(&b).ok()) else {
        return Ok(Err("The identity provider's answer is not one this server asked for.".into()));
    };
    let login = req.header("cookie").and_then(|c| crate::auth::cookie(&c, LOGIN_COOKIE)).unwrap_or_default();
    if login.is_empty() || !same_secret(&digest(&login), &state.browser) {
        return Ok(Err("The identity provider's answer came to another browser than the one that went there.".into()));
    }
    let Some(request) = AuthorizationRequest::unseal(key, &state.request, now_ms()) else {
        return Ok(Err("The sign-in took too long. Start again from the application.".into()));
    };
    if let Some(error) = get("error") {
        return Ok(Err(format!("The identity provider refused the sign-in: {error} {}", get("error_description").unwrap_or_default())));
    }
    let Some(code) = get("code") else { return Ok(Err("The identity provider sent no code.".into())) };
    let endpoints = match endpoints(cx, oidc).await {
        Ok(e) => e,
        Err(why) => return Ok(Err(why)),
    };
    let Some(client_secret) = crate::edge::secret(cx.env, &oidc.secret).filter(|s| !s.is_empty()) else {
        return Ok(Err(format!("Sign-in is not set up: the secret {} (the identity provider's client secret) is not set.", oidc.secret)));
    };
    let mut body = format!(
        "grant_type=authorization_code&code={}&redirect_uri={}&code_verifier={}",
        encode(&code),
        encode(&callback_uri(cx)?),
        sign(key, "oauth.pkce", &login)
    );
    let mut headers = vec![
        ("Content-Type".into(), "application/x-www-form-urlencoded".into()),
        // GitHub answers form-encoded unless asked for JSON.
        ("Accept".into(), "application/json".into()),
    ];
    if oidc.post_secret {
        body.push_str(&format!("&client_id={}&client_secret={}", encode(&oidc.client_id), encode(&client_secret)));
    } else {
        let basic = crate::base64::encode(format!("{}:{}", encode(&oidc.client_id), encode(&client_secret)).as_bytes());
        headers.push(("Authorization".into(), format!("Basic {basic}")));
    }
    let tokens = match fetch_json(&fetch("POST", &endpoints.token, headers, Some(body), cx), "token endpoint").await {
        Ok(t) => t,
        Err(why) => return Ok(Err(why)),
    };
    let Some(access_token) = tokens.get("access_token").and_then(Value::as_str).map(str::to_string) else {
        return Ok(Err("The identity provider issued no access token.".into()));
    };
    // The ID token came straight from the provider's token endpoint over TLS, which OpenID
    // Connect Core §3.1.3.7 accepts in place of its signature; its claims are still checked.
    let mut claims = serde_json::Map::new();
    if let Some(id_token) = tokens.get("id_token").and_then(Value::as_str) {
        let Some(token) = crate::auth::parse_jwt(id_token) else { return Ok(Err("The identity provider's ID token is malformed.".into())) };
        let c = &token.claims;
        let audience_ok = match c.get("aud") {
            Some(Value::String(a)) => *a == oidc.client_id,
            Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(&oidc.client_id)),
            _ => false,
        };
        let issuer_ok = c.get("iss").and_then(Value::as_str).is_some_and(|i| crate::oauth::signin::same_issuer(i, &oidc.issuer));
        let nonce_ok = c.get("nonce").and_then(Value::as_str) == Some(sign(key, "oauth.nonce", &login).as_str());
        if !(audience_ok && issuer_ok && nonce_ok) {
            return Ok(Err("The identity provider's ID token is not for this sign-in.".into()));
        }
        if let Some(obj) = c.as_object() {
            claims.extend(obj.clone());
        }
    }
    if let Some(userinfo) = &endpoints.userinfo {
        let headers = vec![("Authorization".into(), format!("Bearer {access_token}")), ("Accept".into(), "application/json".into()), ("User-Agent".into(), "mcp-edge".into())];
        match fetch_json(&fetch("GET", userinfo, headers, None, cx), "userinfo endpoint").await {
            Ok(Value::Object(info)) => {
                // An ID token's subject and the userinfo's must agree (OpenID Connect Core §5.3.2).
                if claims.get("sub").is_some_and(|s| info.get("sub").is_some_and(|t| t != s)) {
                    return Ok(Err("The identity provider's userinfo is about another user.".into()));
                }
                claims.extend(info);
            }
            Ok(_) => return Ok(Err("The identity provider's userinfo is not an object.".into())),
            Err(why) => return Ok(Err(why)),
        }
    }
    let mut principal = match oidc_principal(oidc, &Value::Object(claims)) {
        Ok(p) => p,
        Err(why) => return Ok(Err(why)),
    };
    principal.upstream_token = Some(access_token);
    Ok(Ok((request, principal)))
}
