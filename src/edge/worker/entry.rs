//! The Worker's fetch handler: preflight, Origin check, routing, and one log line per request.

use crate::edge::worker::log::RequestLog;
use worker::{console_log, event, Context, Env, Method, Response, ResponseBuilder};

use crate::edge::http::{error_response, with_headers, Incoming};
use crate::edge::live::served;
use crate::edge::now_ms;
use crate::edge::worker::{admission, streamable};
use crate::catalog::Endpoint;
use crate::auth::Principal;
use crate::error::Error;
use crate::policy::{self, OriginDecision};

impl From<worker::Error> for Error {
    fn from(e: worker::Error) -> Self {
        Error::Internal(e.to_string())
    }
}

#[event(fetch)]
pub async fn fetch(req: web_sys::Request, env: Env, ctx: Context) -> worker::Result<Response> {
    crate::edge::rescue::install();
    crate::edge::keep_env(&env);
    let started = now_ms();
    let mut req = Incoming::from(req);
    let mut log = RequestLog {
        request_id: req.header("cf-ray").unwrap_or_default(),
        http: [req.head().method.as_str(), req.head().path()].join(" "),
        ..RequestLog::default()
    };
    log.span = crate::edge::telemetry::server_span(&req);
    req.set_trace(log.span.as_ref().map(crate::trace::Span::context));
    let response = match handle(req, &env, &ctx, &mut log).await {
        Ok(response) => response,
        Err(error) => {
            log.error = Some(error.message());
            error_response(&error)?
        }
    };
    log.status = response.status_code();
    if let Some(span) = log.span.take() {
        crate::edge::telemetry::served(span, &response, &mut log);
    }
    let wanted = served().map_or(true, |c| c.log.logs(log.status));
    if wanted {
        log.duration_ms = now_ms().saturating_sub(started);
        if log.request_id.is_empty() {
            log.request_id = crate::edge::ids::random_id().unwrap_or_default();
        }
        console_log!("{}", log.line());
    }
    // The health figures this request counted go to their object in the background, and its
    // spans to the collector.
    crate::edge::health::after_request(&env, &ctx);
    crate::edge::telemetry::after_request(&env, &ctx, crate::edge::health::calls_running);
    Ok(response)
}

/// Header size, auth, then the request rate: who the caller is, or why they are turned away.
async fn admit(req: &Incoming, env: &Env, server: &crate::catalog::Server, params: &crate::routes::RouteParams, url: &crate::head::RequestUrl) -> Result<Principal, Error> {
    let header_bytes = req.head().header_bytes();
    if header_bytes > server.limits.max_header_bytes {
        return Err(Error::HeadersTooLarge(server.limits.max_header_bytes));
    }
    let principal = crate::edge::worker::auth::authenticate(req, env, server, params, url).await?;
    if let Some((binding, period)) = &server.limits.rate_limit {
        let limiter = env.rate_limiter(binding).map_err(|_| Error::Config(format!("limits.rateLimit names the binding {binding}, which this Worker does not have")))?;
        let session = req.header("mcp-session-id").or_else(|| url.query_param("sessionId"));
        // The anonymous principal is everyone: its requests count per client address instead.
        let caller = if principal.id == crate::auth::ANONYMOUS { format!("ip:{}", admission::client_address(req, env)) } else { principal.id.clone() };
        let route = server.route.as_str();
        let keys = std::iter::once(format!("{route}|principal|{caller}")).chain(session.map(|s| format!("{route}|session|{s}")));
        for key in keys {
            admission::within(limiter.as_ref(), *period, &key).await?;
        }
    }
    Ok(principal)
}

async fn handle(req: Incoming, env: &Env, ctx: &Context, log: &mut RequestLog) -> Result<Response, Error> {
    // Test builds only: proves that a panic resets the instance and nothing else.
    #[cfg(mcp_edge_test_hooks)]
    #[allow(clippy::panic)]
    if req.header("x-mcp-edge-test-panic").as_deref() == Some("worker") {
        panic!("a forced panic in the Worker (test build)");
    }
    // Test builds only: fires a session's alarm now, as Cloudflare may (more than once).
    #[cfg(mcp_edge_test_hooks)]
    if req.header("x-mcp-edge-test-hook").as_deref() == Some("alarm") {
        let sid = req.header("mcp-session-id").unwrap_or_default();
        let envelope = crate::envelope::Envelope { op: crate::envelope::Op::TestAlarm, session_id: sid, principal: Some(Principal::anonymous()), ..Default::default() };
        return crate::edge::forward::forward(env, envelope, &[]).await;
    }
    let catalog = crate::edge::live::fresh_catalog(env, 0).await?;
    let catalog = &catalog;
    crate::edge::keys_checked(env)?;
    let url = req.url()?;
    if let Some(token) = url.path.strip_prefix(crate::paths::CALLBACKS) {
        return crate::edge::apart(crate::edge::worker::callbacks::receive(req, env, token)).await;
    }
    // mcp-edge's Client ID Metadata Document, read by upstream MCP servers' authorization servers.
    if url.path == crate::paths::CONNECTION_CLIENT && !catalog.connections.is_empty() {
        admission::any_host_allowed(&req, env, catalog)?;
        return crate::edge::connections::discover::client_document(&url.origin);
    }
    // The authorization server's endpoints are meant for other origins (browser-based clients
    // register and exchange codes cross-origin, without cookies), so the Origin allowlist of the
    // MCP routes does not apply; the Host check does.
    if crate::edge::worker::oauth::serves(catalog, &url.path) {
        admission::any_host_allowed(&req, env, catalog)?;
        return crate::edge::apart(crate::edge::worker::oauth::serve(req, env, catalog, &url)).await;
    }
    // The metrics: a scraper's bearer credential, from no browser.
    if crate::edge::worker::metrics::serves(catalog, &url.path) {
        admission::any_host_allowed(&req, env, catalog)?;
        return crate::edge::apart(crate::edge::worker::metrics::serve(req, env, catalog, &url)).await;
    }
    // The admin API: bearer credentials only, from automation or the console on this origin.
    if crate::edge::worker::admin::serves(&url.path) {
        admission::any_host_allowed(&req, env, catalog)?;
        match admission::per_address(&req, env, catalog).await {
            Err(Error::RateLimited(seconds)) => {
                let message = format!("too many requests from this address; retry after {seconds} s");
                return admission::too_many(seconds, &serde_json::json!({"error": {"code": "too_many_requests", "message": message}}), false);
            }
            other => other?,
        }
        return crate::edge::apart(crate::edge::worker::admin::serve(req, env, ctx, catalog, &url)).await;
    }
    // Connections' pages: a browser's, signed in to the console.
    if !catalog.connections.is_empty() {
        crate::edge::connections::call::note_origin(&url.origin);
        if crate::paths::answers(crate::paths::Owner::Connections, &url.path) {
            admission::any_host_allowed(&req, env, catalog)?;
            admission::per_address(&req, env, catalog).await?;
            return crate::edge::apart(crate::edge::connections::pages::serve(req, env, catalog, &url)).await;
        }
    }
    // The status page: a browser's top-level navigation, which sends no Origin.
    if crate::console::serves(catalog, &url.path) && crate::edge::worker::console::takes(&req, &url.path) {
        return crate::edge::apart(crate::edge::worker::console::serve(req, env, catalog, &url)).await;
    }
    let route = catalog.route(&url.path);
    let server_index = route.as_ref().map_or(0, |r| r.0);
    let Some(server) = catalog.servers.get(server_index) else {
        return Err(Error::RouteNotFound(url.path.clone()));
    };
    // Host and Origin checks come before anything reads the body: DNS rebinding defence.
    admission::host_allowed(&req, env, server)?;
    let origin = req.header("origin");
    let decision = policy::check_origin(origin.as_deref(), &server.origins, &url.origin);
    if let OriginDecision::Forbidden(o) = &decision {
        return Err(Error::OriginForbidden(o.clone()));
    }
    if let Some(metadata) = crate::edge::worker::auth::metadata(catalog, &url) {
        return metadata;
    }
    if req.method() == Method::Options {
        let headers = worker::Headers::new();
        for (name, value) in policy::preflight_headers(&decision) {
            headers.set(name, &value)?;
        }
        return Ok(ResponseBuilder::new().with_status(204).with_headers(headers).empty());
    }
    let response = match route {
        None => error_response(&Error::RouteNotFound(url.path.clone()))?,
        Some((index, endpoint, params)) => {
            // Limits and auth come before the body is read or anything is dispatched; the
            // notify route has its own token.
            let principal = match endpoint {
                Endpoint::Notify => Ok(Principal::anonymous()),
                _ => admit(&req, env, server, &params, &url).await,
            };
            // 2026-07-28 has no GET stream and no sessions to end; its clients' session ids and
            // event ids are never looked at.
            let revision = crate::protocol::meta::is_stateless(req.header("mcp-protocol-version").as_deref(), None, req.header(crate::edge::http::SESSION_ID).is_some());
            let result = match (req.method(), endpoint, principal) {
                (_, _, Err(error)) => Err(error),
                (Method::Post, Endpoint::Mcp | Endpoint::Stream, Ok(p)) => crate::edge::apart(streamable::post(req, (env, ctx), (index, &p), endpoint, params, log)).await,
                // Stateless servers have no session to stream to or to end.
                (Method::Get | Method::Delete, Endpoint::Mcp, _) if server.stateless.is_some() || revision => Err(Error::MethodNotAllowed("POST, OPTIONS")),
                (Method::Delete, Endpoint::Mcp, Ok(p)) => crate::edge::apart(streamable::delete(req, env, index, &p, log)).await,
                (Method::Get, Endpoint::Mcp, Ok(p)) => crate::edge::apart(streamable::get(req, env, index, &p, log)).await,
                (_, Endpoint::Mcp, _) => Err(Error::MethodNotAllowed("GET, POST, DELETE, OPTIONS")),
                (Method::Post, Endpoint::Notify, _) => crate::edge::apart(crate::edge::object::registry::announce(req, env, server, index)).await,
                (Method::Get, Endpoint::LegacySse, Ok(p)) => crate::edge::apart(crate::edge::worker::legacy_sse::open(req, env, index, &p, log)).await,
                (Method::Post, Endpoint::LegacyMessages, Ok(p)) => crate::edge::apart(crate::edge::worker::legacy_sse::message(req, env, index, &p, log)).await,
                (_, Endpoint::LegacySse, _) => Err(Error::MethodNotAllowed("GET, OPTIONS")),
                (_, Endpoint::Stream | Endpoint::Notify | Endpoint::LegacyMessages, _) => Err(Error::MethodNotAllowed("POST, OPTIONS")),
            };
            match result {
                Ok(response) => response,
                Err(error) => {
                    log.error = Some(error.message());
                    error_response(&error)?
                }
            }
        }
    };
    Ok(with_headers(response, &policy::cors_headers(&decision))?)
}
