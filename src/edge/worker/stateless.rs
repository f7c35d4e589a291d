//! Requests served in the Worker alone, with no session id and no Durable Object hop: stateless
//! mode (seed 002's REST transport), and every 2026-07-28 request, which carries its protocol
//! information itself. A stateless-mode request not finished within the collection timeout is
//! answered with a -32603 timeout error.

use std::sync::Arc;
use crate::method::Method;
use std::rc::Rc;

use worker::{Env, Response, ResponseBuilder};

use crate::edge::calls;
use crate::edge::health;
use crate::edge::context::CallContext;
use crate::edge::http::framing_headers;
use crate::edge::streams::Outlet;
use crate::edge::now_ms;
use crate::edge::writer;
use crate::catalog::Server;
use crate::dispatch::{self, Action, Environment};
use crate::error::Error;
use crate::framing;
use crate::jsonrpc::{Body, Message};
use crate::negotiate::Framing;
use crate::routes::RouteParams;
use crate::session::Session;

/// What one stateless POST brings.
pub struct Post {
    pub framing: Framing,
    pub progress_update: bool,
    pub body: Body,
    /// `MCP-Protocol-Version`, or 2025-03-26 when absent, as the spec says.
    pub version: String,
    pub route: RouteParams,
    pub principal: crate::auth::Principal,
    /// The server span, when traced: the calls' spans are its children.
    pub trace: Option<crate::trace::Context>,
}

pub async fn serve(server: &Arc<Server>, timeout_ms: u64, env: &Env, post: Post) -> Result<Response, Error> {
    // A session that lives for this request only: nothing is stored, nothing is shared.
    let mut session = Session::new("", server.route.as_str(), &post.version, serde_json::json!({}), serde_json::json!({}), now_ms());
    let secret = |name: &str| crate::edge::secret(env, name);
    let connection = |name: &str| crate::edge::connections::cached(&post.principal.id, name);
    let environment = Environment { secret: &secret, route: &post.route, principal: &post.principal, now_ms: now_ms(), connection: &connection };
    let batch = post.body.batch;
    let mut actions: Vec<Action> = post
        .body
        .messages
        .into_iter()
        .map(|m| match m {
            Ok(Message::Request(r)) if r.method == Method::Initialize => Action::Reply(dispatch::initialize(server, &r, "", now_ms()).0),
            other => {
                let refusal = health::Refusal::watch(server, &other);
                let action = dispatch::handle(server, &mut session, other, &environment);
                refusal.count(server, &post.principal, &action, None);
                action
            }
        })
        .collect();
    crate::edge::telemetry::adopt(&mut actions, post.trace.as_ref());
    respond(server, Some(timeout_ms), &session, actions, batch, post.framing, post.progress_update).await
}

/// One 2026-07-28 request, already checked against its headers: a session of one request whose
/// version, capabilities and log level are the request's own.
pub struct RevisionRequest {
    pub request: crate::jsonrpc::Request,
    pub meta: crate::protocol::meta::RequestMeta,
    pub framing: Framing,
    /// The client takes a JSON body, which is the answer unless something must stream.
    pub json_ok: bool,
    pub progress_update: bool,
    pub route: RouteParams,
    pub principal: crate::auth::Principal,
    pub server_index: usize,
    /// The public origin, for the callback URLs of tasks.
    pub origin: String,
    /// The server span, when traced.
    pub trace: Option<crate::trace::Context>,
}

pub async fn serve_revision(server: &Arc<Server>, env: &Env, r: RevisionRequest) -> Result<Response, Error> {
    let now = now_ms();
    let mut session = Session::new("", server.route.as_str(), &r.meta.version, r.meta.client_info, r.meta.client_capabilities, now);
    session.log_level = r.meta.log_level;
    session.belongs_to(&r.principal);
    let secret = |name: &str| crate::edge::secret(env, name);
    let connection = |name: &str| crate::edge::connections::cached(&r.principal.id, name);
    let environment = Environment { secret: &secret, route: &r.route, principal: &r.principal, now_ms: now, connection: &connection };
    // Progress and log lines need a stream; anything else is one JSON body when allowed.
    let streams = r.request.params.as_ref().and_then(|p| p.get("_meta")).is_some_and(|m| m.get("progressToken").is_some()) || session.log_level.is_some();
    let framing = if r.json_ok && !streams { Framing::Json } else { r.framing };
    let request = r.request.clone();
    let message = Ok(Message::Request(r.request));
    let refusal = health::Refusal::watch(server, &message);
    let action = dispatch::handle(server, &mut session, message, &environment);
    refusal.count(server, &r.principal, &action, None);
    if action.is_for_tasks() {
        return to_tasks(env, (r.server_index, server), &request, (&session.client_info, &session.client_capabilities), (r.route, r.principal, r.origin, r.trace)).await;
    }
    let mut actions = vec![action];
    crate::edge::telemetry::adopt(&mut actions, r.trace.as_ref());
    respond(server, server.stateless, &session, actions, false, framing, r.progress_update).await
}

/// A request of the Tasks extension goes to the object that keeps the principal's tasks (the
/// object of a session named for the server and principal), which answers it; the request is
/// dispatched there again, with the capabilities it brought.
async fn to_tasks(env: &Env, (server_index, server): (usize, &Server), request: &crate::jsonrpc::Request, (client_info, capabilities): (&serde_json::Value, &serde_json::Value), (route, principal, origin, trace): (RouteParams, crate::auth::Principal, String, Option<crate::trace::Context>)) -> Result<Response, Error> {
    let message = serde_json::json!({"jsonrpc": "2.0", "id": request.id, "method": request.method.as_str(), "params": request.params});
    let body = serde_json::json!({"message": message, "clientInfo": client_info, "clientCapabilities": capabilities}).to_string();
    let envelope = crate::envelope::Envelope { op: crate::envelope::Op::Tasks, server: server_index, session_id: format!("tasks:{}", server.route.as_str()), principal: Some(principal), route, origin: Some(origin), trace, ..crate::envelope::Envelope::default() };
    crate::edge::forward::forward(env, envelope, body.as_bytes()).await
}

/// Answers the actions: 202 when nothing goes back, one JSON body, or a stream of lines.
async fn respond(server: &Arc<Server>, deadline_ms: Option<u64>, session: &Session, actions: Vec<Action>, batch: bool, framing: Framing, progress_update: bool) -> Result<Response, Error> {
    if actions.iter().all(|a| *a == Action::Nothing) {
        return Ok(ResponseBuilder::new().with_status(202).empty());
    }
    if !framing.is_stream() {
        let ctx = CallContext { server, session, out: None, inputs: None, cancels: None, home: None, progress_update: false, deadline_ms };
        let replies = calls::collect(&ctx, actions).await;
        // 2026-07-28 gives a lone error its own HTTP status: 404 for unknown methods, 400 for
        // malformed or mismatched requests.
        let status = match (dispatch::stateless_revision(session), replies.as_slice()) {
            (true, [reply]) => crate::jsonrpc::error_code(reply).map_or(200, crate::protocol::meta::error_status),
            _ => 200,
        };
        let headers = crate::edge::http::json_headers();
        let replies: Vec<_> = replies.into_iter().map(crate::edge::redaction::seal).collect();
        return Ok(ResponseBuilder::new().with_status(status).with_headers(headers).fixed(framing::json_body(&replies, batch)));
    }
    // No outbox here to keep a reply for a client that left: nothing to watch for.
    let (writer, readable) = writer::open(framing, None)?;
    let out = Outlet::Lines(Rc::new(writer));
    let session = session.clone();
    let server = server.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let ctx = CallContext { server: &server, session: &session, out: Some(&out), inputs: None, cancels: None, home: None, progress_update, deadline_ms };
        calls::deliver(&ctx, &out, actions).await;
    });
    Ok(ResponseBuilder::new().with_status(200).with_headers(framing_headers(framing)).stream(readable))
}
