//! Authenticates a request before its body is read: static tokens against secrets, the host
//! application's introspection URL (`introspection`), or OAuth JWTs whose RS256/ES256
//! signatures Web Crypto checks against the configured JWKS (cached), or the access tokens of this
//! deployment's own authorization server (`edge/worker/oauth/`). Also serves the RFC 9728
//! protected-resource metadata.

use std::cell::RefCell;
use std::collections::HashMap;

use js_sys::{Array, Function, Object, Reflect, Uint8Array};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::{Env, Response};
use crate::head::RequestUrl;

use crate::edge::now_ms;
use crate::edge::upstream;
use crate::auth::{check_claims, parse_jwt, same_secret, Auth, Jwt, Principal};
use crate::catalog::{Catalog, Server};
use crate::error::Error;
use crate::routes::RouteParams;
use crate::upstream::reply::Upstream;
use crate::upstream::Bindings;

/// Key sets are small; this many entries is plenty for one isolate.
const CACHE_ENTRIES: usize = 256;

thread_local! {
    /// JWKS documents by URL: keys and expiry.
    static KEY_SETS: RefCell<HashMap<String, (Vec<Value>, u64)>> = RefCell::new(HashMap::new());
}

/// The principal of a request to `server`, or the error that answers it (401 or 403).
pub async fn authenticate(req: &crate::edge::http::Incoming, env: &Env, server: &Server, route: &RouteParams, url: &RequestUrl) -> Result<Principal, Error> {
    let Some(auth) = &server.auth else { return Ok(Principal::anonymous()) };
    let origin = &url.origin;
    let resource = format!("{origin}{}", url.path);
    let metadata = format!("{origin}/.well-known/oauth-protected-resource{}", url.path);
    let unauthorized = |invalid: bool, why: String| Error::Unauthorized { challenge: auth.challenge(&metadata, invalid), why };
    let header = |name: &str| req.header(name);
    let Some(credential) = auth.credential(&header) else {
        return Err(unauthorized(false, "no credentials".into()));
    };
    let mut principal = verify(auth, env, server, &credential, route, &resource, &url.origin, req.trace()).await.map_err(|why| unauthorized(true, why))?;
    // Kept for a token exchange that trades it, and only then; never a static token's secret.
    if !principal.id.starts_with("token:") && crate::edge::connections::grants::exchanges_caller(server) {
        principal.caller_token = Some(credential);
    }
    if !principal.may(&auth.required_roles) {
        return Err(Error::Forbidden(format!("this server needs the role {}", auth.required_roles.join(" or "))));
    }
    Ok(principal)
}

#[allow(clippy::too_many_arguments)] // the request's parts a credential is checked against, and its span
async fn verify(auth: &Auth, env: &Env, server: &Server, credential: &str, route: &RouteParams, resource: &str, origin: &str, trace: Option<&crate::trace::Context>) -> Result<Principal, String> {
    // Static tokens first: cheap, and the credential goes nowhere.
    for (secret, principal) in &auth.tokens {
        if crate::edge::secret(env, secret).is_some_and(|v| same_secret(&v, credential)) {
            return Ok(principal.clone());
        }
    }
    // Our own authorization server's tokens say what they are.
    if auth.oauth && credential.starts_with(crate::oauth::token::ACCESS_PREFIX) {
        return crate::edge::worker::oauth::verify_access(env, crate::edge::worker::oauth::Audience::Server(server, route), origin, credential).await;
    }
    if let (Some(jwt), Some(token)) = (&auth.jwt, parse_jwt(credential)) {
        return verify_jwt(jwt, env, server, &token, resource, trace).await;
    }
    if auth.introspection.is_some() {
        return crate::edge::worker::introspection::introspect(auth, env, server, credential, route, trace).await;
    }
    Err("the credentials match no configured token".into())
}

fn secrets_of(env: &Env, names: &[String], route: &RouteParams) -> Bindings {
    crate::upstream::request::bindings(names, &|name| crate::edge::secret(env, name), route)
}

async fn verify_jwt(jwt: &Jwt, env: &Env, server: &Server, token: &crate::auth::Token, resource: &str, trace: Option<&crate::trace::Context>) -> Result<Principal, String> {
    if !matches!(token.alg.as_str(), "RS256" | "ES256") {
        return Err(format!("the token's algorithm {:?} is not RS256 or ES256", token.alg));
    }
    let keys = key_set(jwt, env, server, trace).await?;
    let key = keys
        .iter()
        .filter(|k| k.get("kty").and_then(Value::as_str) == Some(if token.alg == "RS256" { "RSA" } else { "EC" }))
        .find(|k| token.kid.is_none() || k.get("kid").and_then(Value::as_str) == token.kid.as_deref())
        .ok_or("no key in the JWKS matches the token")?;
    if !web_crypto_verify(&token.alg, key, token.signed.as_bytes(), &token.signature).await? {
        return Err("the token's signature is not valid".into());
    }
    check_claims(token, jwt, resource, now_ms())
}

async fn key_set(jwt: &Jwt, env: &Env, server: &Server, trace: Option<&crate::trace::Context>) -> Result<Vec<Value>, String> {
    let mut call = jwt.jwks.render("auth jwks", &serde_json::Map::new(), &secrets_of(env, &jwt.jwks.secrets, &RouteParams::new())).map_err(|e| e.message())?;
    call.private_upstreams.clone_from(&server.private_upstreams);
    call.trace = trace.cloned();
    let now = now_ms();
    if let Some(keys) = KEY_SETS.with(|c| c.borrow().get(&call.url).filter(|(_, until)| *until > now).map(|(k, _)| k.clone())) {
        return Ok(keys);
    }
    let keys = match upstream::perform(&call, 256 * 1024).await {
        Upstream::Reply { status: 200..=299, body, .. } => serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v.get("keys").and_then(Value::as_array).cloned())
            .ok_or("the JWKS is not a key set")?,
        _ => return Err("the JWKS could not be fetched".into()),
    };
    KEY_SETS.with(|c| {
        let mut cache = c.borrow_mut();
        if cache.len() >= CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(call.url.clone(), (keys.clone(), now + jwt.cache_ms));
    });
    Ok(keys)
}

/// `crypto.subtle.importKey("jwk", …)` then `verify(…)`: RSASSA-PKCS1-v1_5 or ECDSA P-256, SHA-256.
async fn web_crypto_verify(alg: &str, jwk: &Value, data: &[u8], signature: &[u8]) -> Result<bool, String> {
    let js = |e: JsValue| format!("Web Crypto: {}", e.as_string().or_else(|| e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message()))).unwrap_or_default());
    let subtle = Reflect::get(&Reflect::get(&js_sys::global(), &"crypto".into()).map_err(js)?, &"subtle".into()).map_err(js)?;
    let method = |name: &str| Reflect::get(&subtle, &name.into()).and_then(|f| f.dyn_into::<Function>());
    let object = |pairs: &[(&str, &str)]| {
        let o = Object::new();
        for (k, v) in pairs {
            let _ = Reflect::set(&o, &(*k).into(), &(*v).into());
        }
        o
    };
    let (import_alg, verify_alg) = if alg == "RS256" {
        (object(&[("name", "RSASSA-PKCS1-v1_5"), ("hash", "SHA-256")]), object(&[("name", "RSASSA-PKCS1-v1_5")]))
    } else {
        (object(&[("name", "ECDSA"), ("namedCurve", "P-256")]), object(&[("name", "ECDSA"), ("hash", "SHA-256")]))
    };
    // Only the public members: a JWKS entry may carry `use`, `alg` or `key_ops` that would
    // otherwise have to match exactly.
    let mut public = serde_json::Map::new();
    for member in ["kty", "n", "e", "crv", "x", "y"] {
        if let Some(v) = jwk.get(member) {
            public.insert(member.into(), v.clone());
        }
    }
    let jwk_js = js_sys::JSON::parse(&Value::Object(public).to_string()).map_err(js)?;
    let usages = Array::of1(&"verify".into());
    let args = Array::of5(&"jwk".into(), &jwk_js, &import_alg, &JsValue::FALSE, &usages);
    let import = method("importKey").map_err(js)?.apply(&subtle, &args).map_err(js)?;
    let key = JsFuture::from(js_sys::Promise::from(import)).await.map_err(js)?;
    let args = Array::of4(&verify_alg, &key, &Uint8Array::from(signature), &Uint8Array::from(data));
    let verified = method("verify").map_err(js)?.apply(&subtle, &args).map_err(js)?;
    Ok(JsFuture::from(js_sys::Promise::from(verified)).await.map_err(js)?.as_bool() == Some(true))
}

/// `GET /.well-known/oauth-protected-resource[/<route path>]`: RFC 9728 metadata of the server at
/// that path (or of the first server with OAuth, for the bare path).
pub fn metadata(catalog: &Catalog, url: &RequestUrl) -> Option<Result<Response, Error>> {
    let suffix = url.path.strip_prefix("/.well-known/oauth-protected-resource")?;
    let origin = &url.origin;
    let (server, path) = if suffix.is_empty() || suffix == "/" {
        let server = catalog.servers.iter().find(|s| s.auth.as_ref().is_some_and(Auth::is_oauth))?;
        (server, server.route.as_str().to_string())
    } else {
        let (index, _, _) = catalog.route(suffix)?;
        (catalog.servers.get(index)?, suffix.to_string())
    };
    let auth = server.auth.as_ref()?;
    let body = auth.metadata(&format!("{origin}{path}"), origin).to_string();
    Some((|| {
        let fields = [("Content-Type", "application/json"), ("Access-Control-Allow-Origin", "*"), ("Cache-Control", "max-age=3600")];
        Ok(crate::edge::http::builder(200, &fields)?.fixed(body.into_bytes()))
    })())
}
