//! The authorization server's endpoints in the Worker: metadata, `/register`, `/authorize` (with
//! the identity provider's `/oauth/callback`), `/token` and `/revoke`; and the check of our access
//! tokens on MCP requests. `oauth::*` decides; this folder fetches, signs, stores and answers.
//!
//! - `register.rs`: Dynamic Client Registration, its deletion, and finding any client.
//! - `authorize.rs`: the authorization request, sign-in and consent, the code.
//! - `signin.rs`: the three ways a person signs in: passwords, an identity provider, the host
//!   application's session (introspection).
//! - `token.rs`: the token and revocation endpoints, and access tokens checked on requests.
//!
//! The one import circle of this folder: this file routes each endpoint to its file, and holds
//! what they share (the signing key, the store call, `Cx`, error pages and redirects); `authorize`
//! and `token` also sign the browser in through `signin` and find clients through `register`.

mod authorize;
mod register;
mod signin;
mod token;

use std::cell::RefCell;

use serde_json::Value;
use worker::{Env, Headers, Response, ResponseBuilder};

use crate::catalog::Catalog;
use crate::edge::http::{self, Incoming};
use crate::edge::worker::admission;
use crate::envelope::Op;
use crate::error::Error;
use crate::head::RequestUrl;
use crate::metrics::Counter;
use crate::oauth::store::Command;
use crate::paths;
use crate::weburl::WebUrl;
use crate::oauth::{AuthServer, SIGNING_KEY};

pub use token::{verify_access, Audience};
pub(crate) use signin::{current as configured_user, SIGNED_IN_COOKIE};

thread_local! {
    /// The signing key, read once per isolate (a secret, or the key the store keeps).
    static KEY: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// The authorization server's endpoints.
enum Endpoint {
    Metadata,
    OpenIdMetadata,
    /// OpenID Discovery requires a `jwks_uri`; no ID token is ever signed, so its set is empty.
    Jwks,
    Register,
    Client(String),
    Authorize,
    Callback,
    Token,
    Revoke,
}

fn endpoint(path: &str) -> Option<Endpoint> {
    let under = |prefix: &str| path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'));
    Some(match path {
        paths::AUTHORIZE => Endpoint::Authorize,
        paths::TOKEN => Endpoint::Token,
        paths::REGISTER => Endpoint::Register,
        paths::REVOKE => Endpoint::Revoke,
        paths::OAUTH_CALLBACK => Endpoint::Callback,
        paths::JWKS => Endpoint::Jwks,
        _ if under("/.well-known/oauth-authorization-server") => Endpoint::Metadata,
        _ if under("/.well-known/openid-configuration") => Endpoint::OpenIdMetadata,
        _ => Endpoint::Client(path.strip_prefix("/register/").filter(|id| !id.is_empty() && !id.contains('/'))?.to_string()),
    })
}

/// Whether the path is one of the authorization server's, when there is one.
pub fn serves(catalog: &Catalog, path: &str) -> bool {
    catalog.oauth.is_some() && endpoint(path).is_some()
}

/// Answers a request to one of the authorization server's endpoints.
pub async fn serve(req: Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Response, Error> {
    let (Some(server), Some(which)) = (catalog.oauth.as_ref(), endpoint(&url.path)) else {
        return Err(Error::RouteNotFound(url.path.clone()));
    };
    let method = req.method();
    if method == worker::Method::Options {
        return preflight();
    }
    // Every endpoint that reads or writes the store, or checks a password, counts against the
    // client address: the built-in limit, and a Rate Limiting binding's where one is named.
    let limited = !matches!(which, Endpoint::Metadata | Endpoint::OpenIdMetadata | Endpoint::Jwks);
    if limited {
        let registering = matches!((&method, &which), (worker::Method::Post, Endpoint::Register));
        let extra = registering.then(|| crate::admission::registration_budget(catalog.admission.unwrap_or_default()));
        match admission::per_address_with(&req, env, catalog, extra).await {
            Err(Error::RateLimited(seconds)) => {
                let description = format!("too many requests from this address; retry after {seconds} s");
                return match which {
                    // A person's browser: a page.
                    Endpoint::Authorize | Endpoint::Callback => error_page(429, &description),
                    _ => admission::too_many(seconds, &serde_json::json!({"error": "temporarily_unavailable", "error_description": description}), true),
                };
            }
            other => other?,
        }
    }
    if let (true, Some((binding, period))) = (limited, &server.rate_limit) {
        let address = admission::client_address(&req, env);
        admission::within_rate(env, binding, *period, &format!("oauth|ip:{address}")).await?;
    }
    let cx = Cx { env, catalog, server, url, trace: req.trace().cloned() };
    use worker::Method::{Delete, Get, Post};
    match (method, which) {
        (Get, Endpoint::Metadata) => json(200, &crate::oauth::metadata::document(&url.origin, server)),
        (Get, Endpoint::OpenIdMetadata) => {
            let mut doc = crate::oauth::metadata::document(&url.origin, server);
            // OpenID Discovery's required members. No ID token is ever issued (the code flow
            // without `openid`), which is what `none` says.
            if let Some(obj) = doc.as_object_mut() {
                obj.insert("subject_types_supported".into(), serde_json::json!(["public"]));
                obj.insert("id_token_signing_alg_values_supported".into(), serde_json::json!(["none"]));
                obj.insert("jwks_uri".into(), serde_json::json!(format!("{}/.well-known/jwks.json", url.origin)));
            }
            json(200, &doc)
        }
        (Get, Endpoint::Jwks) => json(200, &serde_json::json!({"keys": []})),
        (Get, Endpoint::Authorize) => authorize::page(req, &cx).await,
        (Post, Endpoint::Authorize) => authorize::submit(req, &cx).await,
        (Get, Endpoint::Callback) => authorize::callback(req, &cx).await,
        (Post, Endpoint::Register) => register::register(req, &cx).await,
        (Delete, Endpoint::Client(id)) => register::delete(req, &cx, &id).await,
        (Post, Endpoint::Token) => {
            let answer = token::token(req, &cx).await;
            let issued = answer.as_ref().is_ok_and(|r| r.status_code() == 200);
            crate::edge::health::count(if issued { Counter::OauthGrantsIssued } else { Counter::OauthGrantsRefused }, 1, None);
            answer
        }
        (Post, Endpoint::Revoke) => token::revoke(req, &cx).await,
        (_, Endpoint::Metadata | Endpoint::OpenIdMetadata | Endpoint::Jwks | Endpoint::Callback) => Err(Error::MethodNotAllowed("GET, OPTIONS")),
        (_, Endpoint::Authorize) => Err(Error::MethodNotAllowed("GET, POST, OPTIONS")),
        (_, Endpoint::Client(_)) => Err(Error::MethodNotAllowed("DELETE, OPTIONS")),
        (_, Endpoint::Register | Endpoint::Token | Endpoint::Revoke) => Err(Error::MethodNotAllowed("POST, OPTIONS")),
    }
}

/// What every endpoint works with.
struct Cx<'a> {
    env: &'a Env,
    catalog: &'a Catalog,
    server: &'a AuthServer,
    url: &'a RequestUrl,
    /// The request's server span, when traced: the identity provider's and metadata
    /// documents' fetches are its children.
    trace: Option<crate::trace::Context>,
}

impl Cx<'_> {
    fn issuer(&self) -> &str {
        &self.url.origin
    }

    /// Cookies are `Secure` on https; `wrangler dev` serves plain http on loopback.
    fn cookie(&self, name: &str, value: &str, max_age_s: u64) -> String {
        crate::auth::set_cookie(name, value, max_age_s, self.url.origin.starts_with("https://"), "Lax")
    }
}

/// One command to the authorization server's Durable Object it concerns, and its answer. A
/// refusal comes back as the OAuth error it is. Whatever grants the store says it revoked
/// (`revoked`: one id or a list), this isolate refuses the tokens of at once, and the list of
/// revocations that every isolate reads within the revocation window is told.
pub(crate) async fn store(env: &Env, command: &Command) -> Result<Value, Error> {
    let answer = ask(env, command).await?;
    let revoked: Vec<String> = match answer.get("revoked") {
        Some(Value::String(grant)) => vec![grant.clone()],
        Some(Value::Array(grants)) if !matches!(command, Command::Revoked { .. }) => grants.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    };
    if !revoked.is_empty() {
        revoked.iter().for_each(|g| token::note_revoked(g));
        ask(env, &Command::NoteRevoked { grants: revoked, now_ms: crate::edge::now_ms() }).await?;
    }
    if let Some(refused) = answer.get("refused") {
        let error: crate::oauth::OAuthError = serde_json::from_value(refused.clone()).map_err(|e| Error::Internal(e.to_string()))?;
        return Err(error.into());
    }
    Ok(answer)
}

/// A member of a store's answer as the type it holds; `None` when it is absent or not one. Read
/// from its JSON text, the way the object read it from storage, so that the module has one
/// deserializer of the type (serde_json's, for text) rather than a second one for a `Value`.
pub(crate) fn answered<T: serde::de::DeserializeOwned>(member: Option<&Value>) -> Option<T> {
    serde_json::from_slice(&serde_json::to_vec(member?).ok()?).ok()
}

/// One command to its object, and the answer as it came.
async fn ask(env: &Env, command: &Command) -> Result<Value, Error> {
    let body = serde_json::to_string(command).map_err(|e| Error::Internal(e.to_string()))?;
    let name = command.object().name();
    let mut response = crate::edge::object::registry::call(env, &name, Op::OAuth, 0, None, body).await?;
    let bytes = response.bytes().await?;
    if response.status_code() != 200 {
        return Err(Error::Internal(format!("the authorization server's store ({name}) answered {}: {}", response.status_code(), String::from_utf8_lossy(&bytes))));
    }
    serde_json::from_slice(&bytes).map_err(|e| Error::Internal(format!("the store's answer: {e}")))
}

/// The key that signs tokens, sealed forms and cookies.
pub(crate) async fn signing_key(env: &Env) -> Result<Vec<u8>, Error> {
    if let Some(key) = KEY.with(|k| k.borrow().clone()) {
        return Ok(key);
    }
    let key = match crate::edge::secret(env, SIGNING_KEY).filter(|v| !v.is_empty()) {
        Some(v) => match crate::keys::too_short(SIGNING_KEY, &v) {
            None => v.into_bytes(),
            Some(why) => return Err(Error::Config(why)),
        },
        None => {
            let answer = store(env, &Command::Key { generated: crate::edge::ids::random(32)? }).await?;
            let key = answer.get("key").and_then(Value::as_str).ok_or_else(|| Error::Internal("the store kept no signing key".into()))?;
            // In no environment variable, so no catalog names it: redacted all the same.
            crate::edge::redaction::hide(key);
            key.as_bytes().to_vec()
        }
    };
    KEY.with(|k| *k.borrow_mut() = Some(key.clone()));
    Ok(key)
}

/// A request the authorization server makes itself (an identity provider, a metadata document):
/// through the SSRF guard with the configured `privateHosts`, never redirected, never retried.
fn outbound(cx: &Cx<'_>, method: &str, url: &str, headers: Vec<(String, String)>, body: Option<String>, timeout_ms: u64) -> crate::upstream::HttpCall {
    crate::upstream::HttpCall {
        method: method.into(),
        url: url.into(),
        headers,
        body,
        timeout_ms,
        redirects: crate::upstream::retry::RedirectPolicy { max: 0, hosts: Vec::new() },
        retry: None,
        private_upstreams: cx.server.private_hosts.clone(),
        trace: cx.trace.clone(),
    }
}

/// A JSON answer: never cached, readable from any origin (browser-based clients register and
/// exchange codes cross-origin, with no cookies involved).
fn json(status: u16, value: &Value) -> Result<Response, Error> {
    let [content_type, no_store] = http::NO_STORE_JSON;
    Ok(http::builder(status, &[content_type, no_store, ("Access-Control-Allow-Origin", "*")])?.fixed(value.to_string().into_bytes()))
}

fn preflight() -> Result<Response, Error> {
    let fields = [
        ("Access-Control-Allow-Origin", "*"),
        ("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"),
        ("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version"),
        ("Access-Control-Max-Age", "86400"),
    ];
    Ok(http::builder(204, &fields)?.empty())
}

/// An HTML page with its headers, and cookies to set.
pub(crate) fn html(status: u16, body: String, redirect_origin: Option<&str>, cookies: &[String]) -> Result<Response, Error> {
    let headers = Headers::new();
    for (name, value) in crate::oauth::page::headers(redirect_origin) {
        headers.set(name, &value)?;
    }
    for c in cookies {
        headers.append("Set-Cookie", c)?;
    }
    Ok(ResponseBuilder::new().with_status(status).with_headers(headers).fixed(body.into_bytes()))
}

fn error_page(status: u16, message: &str) -> Result<Response, Error> {
    html(status, crate::oauth::page::error_page(message), None, &[])
}

/// A 302 to `location`, with cookies to set.
pub(crate) fn redirect(location: &str, cookies: &[String]) -> Result<Response, Error> {
    let headers = Headers::new();
    headers.set("Location", location)?;
    headers.set("Cache-Control", "no-store")?;
    headers.set("Referrer-Policy", "no-referrer")?;
    for c in cookies {
        headers.append("Set-Cookie", c)?;
    }
    Ok(ResponseBuilder::new().with_status(302).with_headers(headers).empty())
}

/// The canonical URL of the resource a `resource` names, if it is one of ours that accepts
/// this authorization server's tokens: the same origin as parsed, no query, fragment or user
/// info, and a server's route with `"auth": {"oauth": true}`, or the admin API (its own
/// audience: a token for it is for nothing else, and a person grants it on a page that says it
/// gives admin rights).
fn resource(catalog: &Catalog, origin: &str, named: &str) -> Option<String> {
    let url = WebUrl::parse(named).ok()?;
    let ours = WebUrl::parse(origin).ok()?;
    if !url.same_origin(&ours) || url.query().is_some() || url.fragment().is_some() || url.has_credentials() {
        return None;
    }
    let path = if url.path().len() > 1 { url.path().trim_end_matches('/') } else { url.path() };
    if path == crate::paths::ADMIN_API {
        return Some(admin_resource(origin));
    }
    let (index, _, _) = catalog.route(path)?;
    catalog.servers.get(index)?.auth.as_ref().filter(|a| a.oauth)?;
    canonical(&ours, path)
}

/// The admin API as a resource: the audience of the only access tokens it takes.
pub(crate) fn admin_resource(origin: &str) -> String {
    format!("{origin}{}", crate::paths::ADMIN_API)
}

/// The resource when a client names none: the only OAuth server, when its route has no
/// parameters.
fn default_resource(catalog: &Catalog, origin: &str) -> Option<String> {
    let mut oauth = catalog.servers.iter().filter(|s| s.auth.as_ref().is_some_and(|a| a.oauth));
    match (oauth.next(), oauth.next()) {
        (Some(only), None) if !only.route.as_str().contains('{') => canonical(&WebUrl::parse(origin).ok()?, only.route.as_str()),
        _ => None,
    }
}

/// A resource as both endpoints spell it: `path` on `origin`, serialized by the URL parser, so
/// `/authorize`, `/token` and an audience compare the same string.
fn canonical(origin: &WebUrl, path: &str) -> Option<String> {
    WebUrl::on_origin(&origin.origin(), path).ok().map(|u| u.as_str().to_string())
}
