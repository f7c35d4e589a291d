//! Streamable HTTP at the edge: POST and DELETE on `/mcp`, and the `/stream` alias. The Worker
//! checks headers, limits and JSON-RPC shape, then hands the body to the session's object.

use crate::method::Method;
use worker::{Context, Env, Response};

use crate::edge::body::{check_depth, read_limited};
use crate::edge::worker::log::RequestLog;
use crate::edge::forward::forward;
use crate::edge::http::{failure_response, Incoming, LAST_EVENT_ID, SESSION_ID};
use crate::envelope::{Envelope, Op};
use crate::auth::Principal;
use crate::edge::live::served;
use crate::catalog::Endpoint;
use crate::error::Error;
use crate::jsonrpc::{self, Message};
use crate::negotiate::{self, is_ndjson_type, media_type};
use crate::protocol::meta;
use crate::routes::RouteParams;

pub async fn post(mut req: Incoming, (env, ctx): (&Env, &Context), (server_index, principal): (usize, &Principal), endpoint: Endpoint, params: RouteParams, log: &mut RequestLog) -> Result<Response, Error> {
    let server = served()?.servers.get(server_index).cloned().ok_or_else(|| Error::Internal("server index".into()))?;
    let server = crate::edge::mcp::personal::served(env, server, principal).await;
    let server = &server;
    let content_type = req.header("content-type");
    let media = content_type.as_deref().map(media_type);
    let ndjson_body = media.as_deref().is_some_and(is_ndjson_type);
    if !matches!(media.as_deref(), None | Some("application/json")) && !ndjson_body {
        return Err(Error::UnsupportedMediaType(content_type.unwrap_or_default()));
    }
    let accept = req.header("accept");
    let framing = negotiate::framing(accept.as_deref(), content_type.as_deref(), endpoint == Endpoint::Stream)?;
    let json_ok = framing == negotiate::Framing::Sse && endpoint == Endpoint::Mcp && negotiate::json_acceptable(accept.as_deref());
    let session_header = req.header(SESSION_ID);
    let version_header = req.header("mcp-protocol-version");
    let declared = req.header("content-length").and_then(|l| l.parse::<u64>().ok());
    if declared.is_some_and(|len| len > server.max_body_bytes) {
        return Err(Error::PayloadTooLarge(server.max_body_bytes));
    }
    let body = read_limited(&mut req, server.max_body_bytes).await?;
    check_depth(&body, server.limits.max_json_depth)?;
    let parsed = jsonrpc::parse_body(&body, ndjson_body)?;
    let first = parsed.messages.first();
    let message_params = match first {
        Some(Ok(Message::Request(r))) => {
            log.method = Some(if parsed.batch { "batch".into() } else { r.method.as_str().to_string() });
            if r.method == Method::ToolsCall {
                log.tool = crate::discovery::called_tool(server, r.params.as_ref()).map(str::to_string);
            }
            if let Some(span) = log.span.as_mut() {
                crate::edge::telemetry::describe_message(span, r.method.as_str(), r.params.as_ref(), Some(&r.id), version_header.as_deref());
            }
            r.params.as_ref()
        }
        Some(Ok(Message::Notification(n))) => {
            log.method = Some(n.method.as_str().to_string());
            if let Some(span) = log.span.as_mut() {
                crate::edge::telemetry::describe_message(span, n.method.as_str(), n.params.as_ref(), None, version_header.as_deref());
            }
            n.params.as_ref()
        }
        _ => None,
    };
    // What the calls this request makes are children of: the server span, parented anew when
    // the message's `_meta` named its own parent.
    let trace = log.span.as_ref().map(crate::trace::Span::context);
    if meta::is_stateless(version_header.as_deref(), message_params, session_header.is_some()) {
        let progress_update = framing == negotiate::Framing::Ndjson || endpoint == Endpoint::Stream;
        let how = Revision { framing, json_ok, progress_update, route: params, principal: principal.clone(), trace };
        return revision(env, &req, (server_index, server), parsed, how, log).await;
    }
    check_protocol_version(&req)?;
    // One malformed message is answered here; it needs no session.
    if let (false, Some(Err((id, error)))) = (parsed.batch, first) {
        let status = if error.code() == crate::error::code::PARSE_ERROR { 400 } else { error.http_status() };
        return Ok(failure_response(id, error, status)?);
    }
    if let Some(timeout_ms) = server.stateless {
        // Nothing can stream to a stateless client but progress: without a progress token, a
        // client that takes JSON gets one JSON body, the cheapest answer.
        let wants_progress = parsed.messages.iter().any(|m| matches!(m, Ok(Message::Request(r)) if r.params.as_ref().and_then(|p| p.pointer("/_meta/progressToken")).is_some()));
        let framing = if json_ok && !wants_progress { negotiate::Framing::Json } else { framing };
        let version = version_header.unwrap_or_else(|| "2025-03-26".to_string());
        let progress_update = framing == negotiate::Framing::Ndjson || endpoint == Endpoint::Stream;
        let post = crate::edge::worker::stateless::Post { framing, progress_update, body: parsed, version, route: params, principal: principal.clone(), trace };
        return crate::edge::worker::stateless::serve(server, timeout_ms, env, post).await;
    }
    let initialize = match first {
        Some(Ok(Message::Request(r))) if !parsed.batch && r.method == Method::Initialize => Some(r),
        _ => None,
    };
    let session_id = match initialize {
        // Named by `initialize::answer`.
        Some(_) => String::new(),
        None => {
            let id = session_header.ok_or(Error::SessionRequired)?;
            crate::edge::worker::initialize::check(env, &id, principal).await?;
            id
        }
    };
    let envelope = Envelope {
        op: Op::Message,
        server: server_index,
        session_id,
        principal: Some(principal.clone()),
        route: params,
        framing: Some(framing),
        ndjson_body,
        alias: endpoint == Endpoint::Stream,
        json_ok,
        origin: Some(req.url()?.origin),
        trace,
        ..Envelope::default()
    };
    if let Some(request) = initialize {
        let (response, id) = crate::edge::worker::initialize::answer(env, ctx, server, request, envelope).await?;
        log.session_id = Some(id);
        return Ok(response);
    }
    log.session_id = Some(envelope.session_id.clone());
    crate::edge::worker::leases::serve_or_forward((env, ctx), server, envelope, parsed, &body, log).await
}

/// How a 2026-07-28 request is to be answered, and for whom.
struct Revision {
    framing: negotiate::Framing,
    json_ok: bool,
    progress_update: bool,
    route: RouteParams,
    principal: Principal,
    trace: Option<crate::trace::Context>,
}

/// A 2026-07-28 POST: one message, checked against its headers, served without a session
/// (`subscriptions/listen` excepted, whose stream lives in an object of its own).
async fn revision(env: &Env, req: &Incoming, (server_index, server): (usize, &std::sync::Arc<crate::catalog::Server>), parsed: jsonrpc::Body, how: Revision, log: &mut RequestLog) -> Result<Response, Error> {
    let header = |name: &str| req.header(name);
    let reject = |id: &serde_json::Value, error: Error| Ok(failure_response(id, &error, meta::error_status(error.code()))?);
    if parsed.batch {
        return reject(&serde_json::Value::Null, Error::InvalidRequest("a 2026-07-28 POST carries exactly one JSON-RPC message".into()));
    }
    let request = match parsed.messages.into_iter().next() {
        Some(Ok(Message::Request(request))) => request,
        Some(Ok(Message::Notification(_))) => return Ok(worker::ResponseBuilder::new().with_status(202).empty()),
        Some(Ok(Message::Response { id, .. })) => return reject(&id, Error::InvalidRequest("clients do not send responses in 2026-07-28".into())),
        Some(Err((id, error))) => return reject(&id, error),
        None => return reject(&serde_json::Value::Null, Error::InvalidRequest("empty body".into())),
    };
    let checked = match meta::check(&request, &header, server) {
        Ok(checked) => checked,
        Err(error) => return reject(&request.id, error),
    };
    if request.method == Method::SubscriptionsListen && meta::offered(server, Method::SubscriptionsListen) {
        return crate::edge::worker::listen::open(env, server_index, request, checked, &how.principal, log).await;
    }
    let origin = req.url()?.origin;
    let r = crate::edge::worker::stateless::RevisionRequest { request, meta: checked, framing: how.framing, json_ok: how.json_ok, progress_update: how.progress_update, route: how.route, principal: how.principal, server_index, origin, trace: how.trace };
    crate::edge::worker::stateless::serve_revision(server, env, r).await
}

pub async fn delete(req: Incoming, env: &Env, server_index: usize, principal: &Principal, log: &mut RequestLog) -> Result<Response, Error> {
    let id = session_of(&req, env, principal, log).await?;
    crate::edge::worker::leases::forget(&id);
    forward(env, Envelope { op: Op::Delete, server: server_index, session_id: id, principal: Some(principal.clone()), ..Envelope::default() }, &[]).await
}

/// `GET /mcp`: the server-to-client stream, or a stream resumed with `Last-Event-ID`.
pub async fn get(req: Incoming, env: &Env, server_index: usize, principal: &Principal, log: &mut RequestLog) -> Result<Response, Error> {
    let accept = req.header("accept").unwrap_or_default();
    if !accept.to_ascii_lowercase().contains("text/event-stream") {
        return Err(Error::NotAcceptable(accept));
    }
    let id = session_of(&req, env, principal, log).await?;
    let last_event_id = req.header(LAST_EVENT_ID);
    forward(env, Envelope { op: Op::Get, server: server_index, session_id: id, last_event_id, principal: Some(principal.clone()), ..Envelope::default() }, &[]).await
}

/// The session a request names, after the checks every session-bound request gets.
async fn session_of(req: &Incoming, env: &Env, principal: &Principal, log: &mut RequestLog) -> Result<String, Error> {
    check_protocol_version(req)?;
    let id = req.header(SESSION_ID).ok_or(Error::SessionRequired)?;
    crate::edge::worker::initialize::check(env, &id, principal).await?;
    log.session_id = Some(id.clone());
    Ok(id)
}

/// `MCP-Protocol-Version`, when sent, must name a version we speak. It need not equal the
/// negotiated one: the session's own version decides how we answer.
fn check_protocol_version(req: &Incoming) -> Result<(), Error> {
    match req.header("mcp-protocol-version") {
        Some(v) if !crate::versions::SUPPORTED_VERSIONS.contains(&v.as_str()) => Err(Error::UnsupportedVersion(v)),
        _ => Ok(()),
    }
}
