//! The provider of a connection that names none (no issuer, no endpoints): the one the upstream
//! MCP server it is used by names, found as the MCP authorization spec's client. The server's
//! 401 and its challenge, its protected-resource metadata (RFC 9728), its authorization
//! server's metadata (RFC 8414, else OpenID discovery), each checked (`connections::discovery`);
//! then mcp-edge's registration there: the configured client, its own Client ID Metadata
//! Document, or one Dynamic Client Registration for the whole deployment, kept in the object
//! `connection-client:<name>`. Found once per isolate and hour; forgotten when a token request
//! fails, so that a changed server is found again.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::connections::discovery::{self, ResourceMetadata, ServerMetadata, MAX_METADATA_BYTES};
use crate::connections::register::{self, Registered};
use crate::connections::{AuthMethod, Connection, Grant, Provider};
use crate::envelope::Op;
use crate::error::Error;
use crate::upstream::reply::Upstream;
use crate::upstream::HttpCall;
use crate::weburl::WebUrl;

const KEPT_MS: u64 = 3600 * 1000;

thread_local! {
    /// The public origin of the Worker's latest request (empty in an object that has seen none).
    static ORIGIN: RefCell<String> = const { RefCell::new(String::new()) };
    static FOUND: RefCell<HashMap<String, (Provider, u64)>> = RefCell::new(HashMap::new());
}

pub(crate) fn note_origin(origin: &str) {
    ORIGIN.with(|o| {
        if *o.borrow() != origin {
            *o.borrow_mut() = origin.to_string();
        }
    });
}

pub(crate) fn noted_origin() -> String {
    ORIGIN.with(|o| o.borrow().clone())
}

/// Forgets what was found for connection `name`.
pub(crate) fn forget(name: &str) {
    FOUND.with(|f| f.borrow_mut().remove(name));
}

fn failed(name: &str, why: String) -> Error {
    Error::Internal(format!("connection {name:?}: the upstream MCP server's authorization: {why}"))
}

fn call(method: &str, url: &str, headers: Vec<(String, String)>, body: Option<String>, private_hosts: &[String]) -> HttpCall {
    HttpCall {
        method: method.into(),
        url: url.into(),
        headers,
        body,
        timeout_ms: 10_000,
        redirects: crate::upstream::retry::RedirectPolicy { max: 0, hosts: Vec::new() },
        retry: None,
        private_upstreams: private_hosts.to_vec(),
        trace: None,
    }
}

/// A metadata document: `Ok(None)` when it is not there (the next place is tried), refused when
/// it is larger than a metadata document has any reason to be.
async fn document(url: &WebUrl, private_hosts: &[String]) -> Result<Option<Vec<u8>>, String> {
    crate::upstream::address::check(url.as_str(), private_hosts)?;
    match crate::edge::upstream::perform(&call("GET", url.as_str(), vec![("Accept".into(), "application/json".into())], None, private_hosts), MAX_METADATA_BYTES).await {
        Upstream::Reply { truncated_at: Some(_), .. } => Err(format!("{} is larger than {MAX_METADATA_BYTES} bytes", url.as_str())),
        Upstream::Reply { status: 200, body, .. } => Ok(Some(body)),
        Upstream::Reply { status: 404 | 405 | 400 | 401 | 403, .. } => Ok(None),
        Upstream::Reply { status, .. } => Err(format!("{} answered HTTP {status}", url.as_str())),
        Upstream::TimedOut { .. } => Err(format!("{} did not answer in time", url.as_str())),
        Upstream::Failed(why) => Err(format!("{} could not be reached: {why}", url.as_str())),
    }
}

/// The upstream's challenge: an unauthenticated `ping`, answered 401 with `WWW-Authenticate`.
async fn challenge(upstream: &WebUrl, private_hosts: &[String]) -> Option<discovery::Challenge> {
    let headers = vec![("Content-Type".into(), "application/json".into()), ("Accept".into(), "application/json, text/event-stream".into())];
    let ping = crate::upstream::mcp::request(0, crate::method::Method::Ping, None);
    let probe = call("POST", upstream.as_str(), headers, Some(ping), private_hosts);
    let seen = crate::edge::upstream::exchange(&probe, async |response| ((response.status(), crate::edge::upstream::header(&response, "www-authenticate")), false)).await;
    match seen {
        Ok((401, Some(header))) => discovery::challenge(&header),
        _ => None,
    }
}

async fn resource_metadata(upstream: &WebUrl, private_hosts: &[String]) -> Result<(ResourceMetadata, Option<String>), String> {
    let challenged = challenge(upstream, private_hosts).await;
    let named = challenged.as_ref().and_then(|c| c.resource_metadata.clone());
    for url in discovery::resource_metadata_urls(upstream, named.as_deref()) {
        // A URL the challenge names is checked as any other the server names.
        let url = discovery::allowed_url(&url, private_hosts).map_err(|why| format!("its resource_metadata {why}"))?;
        if let Some(body) = document(&url, private_hosts).await? {
            return discovery::resource_metadata(&body, upstream, private_hosts).map(|m| (m, challenged.and_then(|c| c.scope)));
        }
    }
    Err("it publishes no protected-resource metadata (RFC 9728)".into())
}

async fn server_metadata(issuer: &str, private_hosts: &[String], pkce_required: bool) -> Result<ServerMetadata, String> {
    let parsed = discovery::allowed_url(issuer, private_hosts)?;
    for url in discovery::server_metadata_urls(&parsed) {
        let url = WebUrl::parse(&url)?;
        if let Some(body) = document(&url, private_hosts).await? {
            return discovery::server_metadata(&body, issuer, private_hosts, pkce_required);
        }
    }
    Err(format!("its authorization server {issuer} publishes no metadata (RFC 8414, OpenID discovery)"))
}

/// The registration kept for the deployment, or the one `fresh` makes (kept unless another
/// isolate's came first, which then wins).
async fn kept_registration(env: &::worker::Env, name: &str, issuer: &str) -> Option<Registered> {
    let mut answer = crate::edge::object::registry::call(env, &format!("connection-client:{name}"), Op::ConnectionClient, 0, None, String::new()).await.ok()?;
    let bytes = answer.bytes().await.ok()?;
    register::response(&bytes, None).ok().filter(|r| r.issuer == issuer)
}

async fn keep_registration(env: &::worker::Env, name: &str, registered: &Registered) -> Result<Registered, String> {
    let text = registered.to_json();
    let mut answer = crate::edge::object::registry::call(env, &format!("connection-client:{name}"), Op::ConnectionClient, 0, None, text).await.map_err(|e| e.message())?;
    let bytes = answer.bytes().await.map_err(|e| e.to_string())?;
    register::response(&bytes, None).map_err(|_| "the registration store's answer is unreadable".into())
}

async fn registration(env: &::worker::Env, connection: &Connection, server: &ServerMetadata, origin: &str, scope: Option<&str>) -> Result<Registered, String> {
    if let Some(client_id) = &connection.client_id {
        let secret = connection.client_secret.as_deref().and_then(|n| crate::edge::secret(env, n));
        let method = match connection.auth_method {
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::None => "none",
        };
        return Ok(Registered { issuer: server.issuer.clone(), client_id: client_id.clone(), client_secret: secret, auth_method: method.into() });
    }
    // The one kept for the deployment first: an isolate without the origin (a session's
    // object refreshing a token) must use the client the connect page used.
    if let Some(kept) = kept_registration(env, &connection.name, &server.issuer).await {
        return Ok(kept);
    }
    let per_user = connection.grant == Grant::AuthorizationCode;
    let document = WebUrl::on_origin(origin, crate::paths::CONNECTION_CLIENT).map(|u| u.as_str().to_string()).unwrap_or_default();
    if register::use_metadata_document(server.client_id_metadata_document_supported, per_user, &document) {
        let own = Registered { issuer: server.issuer.clone(), client_id: document, client_secret: None, auth_method: "none".into() };
        return keep_registration(env, &connection.name, &own).await;
    }
    let endpoint = server.registration_endpoint.as_deref().ok_or("its authorization server offers neither Client ID Metadata Documents nor Dynamic Client Registration; configure a clientId")?;
    let redirect = WebUrl::on_origin(origin, crate::paths::CONNECTIONS_CALLBACK).map(|u| u.as_str().to_string()).unwrap_or_default();
    let headers = vec![("Content-Type".into(), "application/json".into()), ("Accept".into(), "application/json".into())];
    let request = call("POST", endpoint, headers, Some(register::request(&redirect, per_user, scope)), &connection.private_hosts);
    let fresh = match crate::edge::upstream::perform(&request, MAX_METADATA_BYTES).await {
        Upstream::Reply { status: 200 | 201, body, truncated_at: None, .. } => register::response(&body, Some(&server.issuer))?,
        Upstream::Reply { status, .. } => return Err(format!("its registration endpoint answered HTTP {status}")),
        Upstream::TimedOut { .. } => return Err("its registration endpoint did not answer in time".into()),
        Upstream::Failed(why) => return Err(format!("its registration endpoint could not be reached: {why}")),
    };
    keep_registration(env, &connection.name, &fresh).await
}

/// The provider of `connection`, found from the upstream MCP server at `upstream` (its URL as
/// rendered for the call); `origin`: mcp-edge's own, where its client document and callback are.
pub(crate) async fn provider(env: &::worker::Env, connection: &Connection, upstream: &str, origin: &str) -> Result<Provider, Error> {
    let name = &connection.name;
    let now = crate::edge::now_ms();
    if let Some(found) = FOUND.with(|f| f.borrow().get(name).filter(|(_, until)| *until > now).map(|(p, _)| p.clone())) {
        return Ok(found);
    }
    let private_hosts = &connection.private_hosts;
    let upstream = WebUrl::parse(upstream).map_err(|why| failed(name, why))?;
    let (resource, challenged_scope) = resource_metadata(&upstream, private_hosts).await.map_err(|why| failed(name, why))?;
    let issuer = resource.authorization_servers.first().cloned().unwrap_or_default();
    let per_user = connection.grant == Grant::AuthorizationCode;
    let server = server_metadata(&issuer, private_hosts, per_user).await.map_err(|why| failed(name, why))?;
    // Scopes: the configured ones, else the challenge's, else what the resource lists (the
    // MCP spec's order).
    let scopes: Vec<String> = if !connection.scopes.is_empty() {
        connection.scopes.clone()
    } else if let Some(scope) = challenged_scope {
        scope.split_whitespace().map(str::to_string).collect()
    } else {
        resource.scopes_supported.clone()
    };
    let joined = (!scopes.is_empty()).then(|| scopes.join(" "));
    let client = registration(env, connection, &server, origin, joined.as_deref()).await.map_err(|why| failed(name, why))?;
    let provider = Provider {
        authorization_endpoint: server.authorization_endpoint.clone().unwrap_or_default(),
        token_endpoint: server.token_endpoint.clone(),
        revocation_endpoint: server.revocation_endpoint.clone(),
        client_id: client.client_id,
        client_secret: client.client_secret,
        auth_method: AuthMethod::parse(&client.auth_method).unwrap_or(AuthMethod::None),
        scopes,
        resource: Some(connection.resource.clone().unwrap_or(resource.resource)),
        extra: connection.extra.clone(),
    };
    FOUND.with(|f| f.borrow_mut().insert(name.clone(), (provider.clone(), now + KEPT_MS)));
    Ok(provider)
}

/// mcp-edge's Client ID Metadata Document, served at `paths::CONNECTION_CLIENT` on its origin.
pub(crate) fn client_document(origin: &str) -> Result<::worker::Response, Error> {
    let at = |path: &str| WebUrl::on_origin(origin, path).map(|u| u.as_str().to_string()).map_err(Error::Internal);
    let doc = register::metadata_document(&at(crate::paths::CONNECTION_CLIENT)?, &at(crate::paths::CONNECTIONS_CALLBACK)?);
    let mut response = ::worker::Response::from_bytes(doc.to_string().into_bytes())?;
    let headers = response.headers_mut();
    headers.set("Content-Type", "application/json")?;
    headers.set("Cache-Control", "public, max-age=3600")?;
    Ok(response)
}

/// The object `connection-client:<name>`: an empty body reads the registration kept; a
/// registration is kept unless one is already, and the one kept is answered either way, so
/// that two isolates registering at once end up using the same client.
pub(crate) async fn serve(state: &::worker::State, body: &[u8]) -> Result<::worker::Response, Error> {
    let storage = state.storage();
    let kept: Option<String> = storage.get("client").await?;
    let answer = match kept {
        Some(text) => text,
        None if body.is_empty() => "null".into(),
        None => {
            let text = register::response(body, None).map_err(Error::InvalidRequest)?.to_json();
            storage.put("client", text.clone()).await?;
            text
        }
    };
    Ok(::worker::ResponseBuilder::new().with_status(200).fixed(answer.into_bytes()))
}

/// The URL of the first upstream MCP server that uses connection `name`, as its requests go.
pub(crate) fn upstream_url(env: &::worker::Env, catalog: &crate::catalog::Catalog, name: &str) -> Option<String> {
    catalog.servers.iter().find_map(|server| {
        let source = server.upstreams.iter().find(|s| s.connection.as_deref() == Some(name))?;
        // Rendered as its lists are read: with the deployment's secrets, no caller.
        let bindings = crate::upstream::request::bindings(&source.request.secrets, &|n| crate::edge::secret(env, n), &[]);
        source.request.render(&format!("upstream {:?}", source.name), &serde_json::Map::new(), &bindings).ok().map(|c| c.url)
    })
}

/// The provider of `connection`: its configured endpoints, its issuer's metadata (RFC 8414 with
/// the issuer's path inserted, else OpenID discovery; the `issuer` checked), or, with neither,
/// the authorization server of the upstream MCP server that uses it (`provider`). `origin`:
/// mcp-edge's own, where its client document and callback are (empty where none is known).
pub(crate) async fn of(env: &::worker::Env, connection: &Connection, origin: &str) -> Result<Provider, Error> {
    let name = &connection.name;
    let secret = match &connection.client_secret {
        Some(n) => Some(crate::edge::secret(env, n).ok_or_else(|| Error::Config(format!("connection {name:?} names the secret {n}, which is not set")))?),
        None => None,
    };
    if let Some(provider) = connection.provider(secret.clone()) {
        return Ok(provider);
    }
    let Some(issuer) = connection.issuer.as_deref() else {
        let catalog = crate::edge::configured::base_catalog()?;
        let url = upstream_url(env, &catalog, name).ok_or_else(|| failed(name, "no upstream MCP server uses it".into()))?;
        return provider(env, connection, &url, origin).await;
    };
    let now = crate::edge::now_ms();
    if let Some(found) = FOUND.with(|f| f.borrow().get(name).filter(|(_, until)| *until > now).map(|(p, _)| p.clone())) {
        return Ok(found);
    }
    let server = server_metadata(issuer, &connection.private_hosts, false).await.map_err(|why| Error::Internal(format!("connection {name:?}: {why}")))?;
    let discovered = Connection {
        authorization_endpoint: connection.authorization_endpoint.clone().or(server.authorization_endpoint),
        token_endpoint: connection.token_endpoint.clone().or(Some(server.token_endpoint)),
        revocation_endpoint: connection.revocation_endpoint.clone().or(server.revocation_endpoint),
        ..connection.clone()
    };
    let provider = discovered.provider(secret).ok_or_else(|| Error::Internal(format!("connection {name:?}: the provider's metadata names no authorization endpoint")))?;
    FOUND.with(|f| f.borrow_mut().insert(name.clone(), (provider.clone(), now + KEPT_MS)));
    Ok(provider)
}
