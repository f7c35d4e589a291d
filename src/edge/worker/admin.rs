//! The admin API under `/admin/api`: the servers' tools, resources, resource templates and
//! prompts read and changed live, versions and rollback (`crate::live` decides; this file reads
//! the request, checks who asks, and stores through `object::versions`).
//!
//! Who may: a bearer of the admin token (`MCP_EDGE_ADMIN_TOKEN`, for automation such as an n8n
//! HTTP Request node); a bearer of one of our authorization server's access tokens issued for
//! the admin API itself (its own audience: `resource=<origin>/admin/api`, granted on a consent
//! page that says it gives admin rights; never a token for an MCP server) whose principal has
//! the `admin` role; or the console's own sign-in, from the console. Bearer credentials travel
//! only in `Authorization`, so another site cannot make a browser send them; a request from
//! another origin is refused anyway. Every request counts against its address's limit.

use std::time::Duration;

use serde_json::{json, Value};
use worker::{Context, Env, Method, Response};

use crate::audit::{Action, Event};
use crate::auth::Principal;
use crate::catalog::Catalog;
use crate::console::session::ADMIN_ROLE;
use crate::edge::http::{self, Incoming};
use crate::edge::live::{self, parse, sync};
use crate::error::Error;
use crate::head::RequestUrl;
use crate::live::api::{etag, if_match, route, AdminError, Route, MAX_BODY_BYTES};
use crate::live::edit::{self, Edit};
use crate::live::store::{Command, Current, Stored};
use crate::live::Layer;

/// How many times a change without `If-Match` is computed again when another change landed
/// between its read and its write.
const ATTEMPTS: usize = 3;

/// Whether `path` is the admin API's.
pub fn serves(path: &str) -> bool {
    crate::paths::answers(crate::paths::Owner::Admin, path)
}

pub async fn serve(req: Incoming, env: &Env, ctx: &Context, catalog: &Catalog, url: &RequestUrl) -> Result<Response, Error> {
    let bundled = crate::edge::configured::bundled()?;
    if !live::enabled(env, &bundled) {
        return Err(AdminError::not_found(format!("the admin API is off: set the secret {} (or configure \"oauth\" and sign in with the {ADMIN_ROLE} role) to turn it on", live::ADMIN_TOKEN)).into());
    }
    // Automation sends no Origin; a browser on another site does, and is turned away.
    if let Some(origin) = req.header("origin") {
        if origin != url.origin {
            return Err(AdminError::forbidden(format!("the admin API answers its own origin only, not {origin}")).into());
        }
    }
    let who = admin(&req, env, catalog, url).await?;
    let route = route(&url.path).ok_or_else(|| AdminError::not_found(format!("no admin API route is {}", url.path)))?;
    let method = req.method();
    let expected = req.header("if-match").map(|v| if_match(&v)).transpose()?.flatten();
    // Rollback is a POST without a body.
    let body = match (&method, &route) {
        (Method::Post, Route::Entries(..) | Route::Decide(..)) | (Method::Put, _) => Some(read_json(req).await?),
        _ => None,
    };
    let (mut version, mut layer) = sync(env).await?;
    let file = crate::edge::configured::bundled_file()?;
    let edit = match (method, route) {
        (Method::Get, Route::Health) => {
            let view = crate::edge::health::figures(env, catalog, crate::edge::now_ms()).await?;
            return respond(200, &serde_json::to_value(&view).map_err(|e| Error::Internal(e.to_string()))?, version);
        }
        (Method::Get, Route::Limits(server, principal)) => {
            let server = catalog.servers.iter().find(|s| s.name == server).ok_or_else(|| AdminError::not_found(format!("no server is named {server:?}")))?;
            return respond(200, &parse::<Value>(&crate::edge::apart(crate::edge::limits::state(std::iter::once(&**server), &principal)).await?)?, version);
        }
        (method, route @ (Route::Pins | Route::Audit | Route::Decide(..))) => return respond_text(200, super::pins::serve((env, ctx), catalog, &who, (method, route, &url.query), body.unwrap_or_default()).await?, version),
        (Method::Delete, Route::Connection(name, principal)) => {
            if !catalog.connections.iter().any(|c| c.name == name) {
                return Err(AdminError::not_found(format!("no connection is named {name:?}")).into());
            }
            let removed = crate::edge::apart(crate::edge::connections::pages::remove(env, catalog, &principal, &name)).await?;
            return respond(200, &serde_json::json!({"removed": removed}), version);
        }
        (_, Route::Connection(..)) => return Err(AdminError::method_not_allowed("DELETE").into()),
        (Method::Get, route) => return read(env, file, version, &layer, route).await,
        (Method::Put, Route::Server(server)) => (server, Edit::ReplaceServer(body.unwrap_or_default())),
        (Method::Delete, Route::Server(server)) => (server, Edit::ResetServer),
        (Method::Post, Route::Entries(server, kind)) => (server, Edit::Create(kind, body.unwrap_or_default())),
        (Method::Put, Route::Entry(server, kind, name)) => (server, Edit::Put(kind, name, body.unwrap_or_default())),
        (Method::Delete, Route::Entry(server, kind, name)) => (server, Edit::Delete(kind, name)),
        (Method::Post, Route::Rollback(target)) => return rollback(env, ctx, &who, expected, target).await,
        (_, Route::Servers | Route::Versions | Route::Version(_) | Route::Health | Route::Limits(..)) => return Err(AdminError::method_not_allowed("GET").into()),
        (_, Route::Server(_)) => return Err(AdminError::method_not_allowed("GET, PUT, DELETE").into()),
        (_, Route::Entries(..)) => return Err(AdminError::method_not_allowed("GET, POST").into()),
        (_, Route::Entry(..)) => return Err(AdminError::method_not_allowed("GET, PUT, DELETE").into()),
        (_, Route::Rollback(_)) => return Err(AdminError::method_not_allowed("POST").into()),
    };
    let (server, edit) = edit;
    let mut attempt = 0;
    loop {
        if attempt > 0 {
            (version, layer) = sync(env).await?;
        }
        if expected.is_some_and(|e| e != version) {
            return Err(stale(version));
        }
        let applied = edit::apply(file, &layer, &server, edit.clone())?;
        let status = if applied.created { 201 } else { 200 };
        match store(env, ctx, (&who, Action::ConfigChanged), (version, &layer), (applied.layer, applied.catalog), applied.summary).await? {
            Ok(answer) => return respond(status, &answer, answer.get("version").and_then(Value::as_u64).unwrap_or(version)),
            Err(current) if expected.is_some() || attempt + 1 >= ATTEMPTS => return Err(stale(current)),
            Err(_) => attempt += 1,
        }
    }
}

/// Who asks, if they may: the admin token's bearer, or an access token's principal with the
/// admin role.
async fn admin(req: &Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Principal, Error> {
    let header = req.header("authorization");
    let Some(credential) = header.as_deref().and_then(|h| crate::auth::authorization(h, "Bearer")) else {
        return console(req, env, catalog, url).await;
    };
    bearer(env, catalog, url, &credential).await
}

/// A bearer credential's admin, if it is one: the admin token, or an access token for the
/// admin API whose principal has the admin role. `GET /metrics` takes these too.
pub(crate) async fn bearer(env: &Env, catalog: &Catalog, url: &RequestUrl, credential: &str) -> Result<Principal, Error> {
    if live::admin_token(env).is_some_and(|token| crate::auth::same_secret(&token, credential)) {
        return Ok(crate::console::session::admin_token_principal());
    }
    if catalog.oauth.is_some() && credential.starts_with(crate::oauth::token::ACCESS_PREFIX) {
        let principal = crate::edge::worker::oauth::verify_access(env, crate::edge::worker::oauth::Audience::Admin, &url.origin, credential).await.map_err(|why| unauthorized(&why))?;
        if !principal.roles.iter().any(|r| r == ADMIN_ROLE) {
            return Err(AdminError::forbidden(format!("{} does not have the {ADMIN_ROLE} role", principal.id)).into());
        }
        return Ok(principal);
    }
    Err(unauthorized("the token is not the admin token, nor an access token of this deployment"))
}

/// The console's session, for the console's own requests: the cookie is ambient, so a request
/// from anywhere else may not use it.
async fn console(req: &Incoming, env: &Env, catalog: &Catalog, url: &RequestUrl) -> Result<Principal, Error> {
    let cookie = req.header("cookie").and_then(|c| crate::auth::cookie(&c, crate::console::session::COOKIE)).is_some();
    if !cookie {
        return Err(unauthorized("send Authorization: Bearer with the admin token or an access token with the admin role"));
    }
    if !crate::edge::worker::console::signin::from_console(req, url) {
        return Err(AdminError::forbidden("the console's sign-in works from the console only: send Authorization: Bearer instead").into());
    }
    let Some(session) = crate::edge::worker::console::signin::session(req, env, catalog).await? else {
        return Err(unauthorized("the console's sign-in has ended: sign in again"));
    };
    if !session.is_admin() {
        return Err(AdminError::forbidden(format!("{} does not have the {ADMIN_ROLE} role", session.principal.id)).into());
    }
    Ok(session.principal)
}

fn unauthorized(why: &str) -> Error {
    AdminError::unauthorized(why).into()
}

fn stale(current: u64) -> Error {
    AdminError::stale(format!("the configuration changed since the version you read; the current one is {}: read it, then send its ETag in If-Match", etag(current))).into()
}

/// The request's JSON body, within the limit.
async fn read_json(mut req: Incoming) -> Result<Value, Error> {
    let media = req.header("content-type").map(|c| crate::negotiate::media_type(&c));
    if media.as_deref() != Some("application/json") {
        return Err(AdminError::unsupported_media_type().into());
    }
    let bytes = crate::edge::body::read_limited(&mut req, MAX_BODY_BYTES).await.map_err(|e| match e {
        Error::PayloadTooLarge(_) => AdminError::too_large().into(),
        other => other,
    })?;
    serde_json::from_slice(&bytes).map_err(|e| AdminError::bad_request(format!("the body is not JSON: {e}")).into())
}

/// Stores `layer` as the version after `base`; `Err` with the current version when another
/// change got there first. Once stored, this isolate serves it at once, and the sessions of the
/// servers whose lists changed are told, after every other isolate has had time to serve it too.
async fn store(env: &Env, ctx: &Context, (who, action): (&Principal, Action), (base, before): (u64, &Layer), (layer, catalog): (Layer, Catalog), summary: String) -> Result<Result<Value, u64>, Error> {
    let file = crate::edge::configured::bundled_file()?;
    let changes = crate::live::changes(file, before, &layer);
    let servers: Vec<String> = crate::live::server_names(file).filter(|n| before.get(*n) != layer.get(*n)).map(str::to_string).collect();
    let command = Command::Write { base, layer: layer.clone(), by: who.id.clone(), summary: summary.clone(), servers: servers.clone() };
    let written: Current = parse(&live::ask(env, &command).await?)?;
    if !written.stored {
        return Ok(Err(written.version));
    }
    let pinned = super::pins::pinned_by_edit(file, before, &layer, &servers);
    live::install(written.version, layer, Some(catalog));
    worker::console_log!("{}", crate::edge::redaction::line(json!({"message": "live configuration changed", "version": written.version, "by": who.id, "summary": summary}).to_string()));
    let detail = format!("version {}: {summary}{pinned}", written.version);
    crate::edge::audit::record_later(env, Some(ctx), Event { at_ms: written.at_ms, actor: who.id.clone(), action, server: servers.join(", "), target: format!("v{}", written.version), detail });
    let catalog = crate::edge::live::served()?;
    let mut tell = Vec::new();
    for (name, methods) in changes {
        if let Some((index, server)) = catalog.servers.iter().enumerate().find(|(_, s)| s.name == name) {
            let methods: Vec<&str> = methods.iter().map(|m| m.name()).collect();
            tell.push((crate::edge::object::registry::name(server), index, serde_json::to_string(&methods).unwrap_or_default()));
        }
    }
    if !tell.is_empty() {
        let env = env.clone();
        ctx.wait_until(async move {
            worker::Delay::from(Duration::from_millis(live::REFRESH_MS + 500)).await;
            for (registry, index, methods) in tell {
                if let Err(e) = crate::edge::object::registry::call(&env, &registry, crate::envelope::Op::RegistryListChanged, index, None, methods).await {
                    worker::console_error!("{}", crate::edge::redaction::line(json!({"message": "live configuration: sessions were not told of a change", "error": e.message()}).to_string()));
                }
            }
        });
    }
    Ok(Ok(json!({"version": written.version, "atMs": written.at_ms, "by": who.id, "summary": summary, "servers": servers})))
}

/// `POST /versions/{n}/rollback`: a new version that serves what version `n` served.
async fn rollback(env: &Env, ctx: &Context, who: &Principal, expected: Option<u64>, target: u64) -> Result<Response, Error> {
    let stored: Stored = parse(&live::ask(env, &Command::Get { version: target }).await?)?;
    let catalog = crate::live::compile(crate::edge::configured::bundled_file()?, &stored.layer).map_err(|fault| AdminError::located(fault, ""))?;
    edit::check_layer(crate::edge::configured::bundled_file()?, &stored.layer, &catalog)?;
    let (version, layer) = sync(env).await?;
    if expected.is_some_and(|e| e != version) {
        return Err(stale(version));
    }
    let summary = if target == 0 { "rolled back to the bundled file (version 0)".to_string() } else { format!("rolled back to version {target}") };
    match store(env, ctx, (who, Action::Rollback), (version, &layer), (stored.layer, catalog), summary).await? {
        Ok(answer) => respond(200, &answer, answer.get("version").and_then(Value::as_u64).unwrap_or(version)),
        Err(current) => Err(stale(current)),
    }
}

/// The reads: what is served now, or the history.
async fn read(env: &Env, file: &Value, version: u64, layer: &Layer, route: Route) -> Result<Response, Error> {
    let missing = |what: String| -> Error { AdminError::not_found(what).into() };
    let body = match route {
        Route::Servers => {
            let servers: Vec<Value> = crate::live::server_names(file)
                .map(|name| {
                    let config = crate::live::server_config(file, layer, name).cloned().unwrap_or_default();
                    let count = |kind: crate::live::Kind| config.get(kind.field()).and_then(Value::as_array).map_or(0, Vec::len);
                    json!({"name": name, "route": config.get("route").and_then(Value::as_str).unwrap_or(crate::config::model::DEFAULT_ROUTE), "live": layer.contains_key(name), "tools": count(crate::live::Kind::Tools), "resources": count(crate::live::Kind::Resources), "resourceTemplates": count(crate::live::Kind::ResourceTemplates), "prompts": count(crate::live::Kind::Prompts)})
                })
                .collect();
            json!({"version": version, "servers": servers})
        }
        Route::Server(name) => crate::live::server_config(file, layer, &name).cloned().ok_or_else(|| missing(format!("no server is called {name:?}")))?,
        Route::Entries(name, kind) => Value::Array(edit::entries(file, layer, &name, kind).ok_or_else(|| missing(format!("no server is called {name:?}")))?.into_iter().cloned().collect()),
        Route::Entry(name, kind, entry) => edit::entry(file, layer, &name, kind, &entry).cloned().ok_or_else(|| missing(format!("{name:?} has no {} called {entry:?}", kind.field())))?,
        Route::Versions => parse(&live::ask(env, &Command::History).await?)?,
        Route::Version(n) => parse(&live::ask(env, &Command::Get { version: n }).await?)?,
        Route::Rollback(_) | Route::Health | Route::Limits(..) | Route::Pins | Route::Audit | Route::Decide(..) | Route::Connection(..) => return Err(AdminError::method_not_allowed("POST").into()),
    };
    respond(200, &body, version)
}

/// A JSON answer with the current version's `ETag`; never cached, never framed.
fn respond(status: u16, body: &Value, version: u64) -> Result<Response, Error> {
    respond_text(status, body.to_string(), version)
}

fn respond_text(status: u16, body: String, version: u64) -> Result<Response, Error> {
    let [content_type, no_store] = http::NO_STORE_JSON;
    let etag = etag(version);
    Ok(http::builder(status, &[content_type, no_store, ("ETag", &etag), ("X-Content-Type-Options", "nosniff")])?.fixed(body.into_bytes()))
}
