//! A client's messages to its session: a POST (`Op::Message`), a legacy session's POST
//! (`Op::SseMessage`), and a lease for the Worker (`Op::Lease`). Messages are dispatched here,
//! then their calls run and their replies go out (`replies`).

use std::sync::Arc;

use worker::{Response, ResponseBuilder};

use super::{Forwarded, McpSession};
use crate::auth::{object_name, Principal};
use crate::catalog::Server;
use crate::dispatch::{self, Action, Environment};
use crate::edge::health;
use crate::edge::http::accepted;
use crate::edge::object::registry;
use crate::edge::streams::Outlet;
use crate::edge::{apart, now_ms};
use crate::error::Error;
use crate::jsonrpc::{self, Message};
use crate::method::Method;
use crate::negotiate::{at_least, Framing};
use crate::routes::RouteParams;
use crate::session::Session;

impl McpSession {
    /// A POST of messages: dispatched, then answered (as JSON, lazily, or on a stream).
    pub(super) async fn message(&self, request: &Forwarded, body: &[u8]) -> Result<Response, Error> {
        let (server, envelope) = (&request.server, &request.envelope);
        let session = self.session_for(server, Some(&request.principal)).await?;
        let session = self.touch(server, session).await?;
        // Test builds only: a panic inside the session object, after its state is stored.
        #[cfg(mcp_edge_test_hooks)]
        #[allow(clippy::panic)]
        if body.windows(21).any(|w| w == br#""mcp-edge/test-panic""#) {
            panic!("a forced panic in the session object (test build)");
        }
        // Test builds only: a trap that is no panic (no hook runs before it).
        #[cfg(mcp_edge_test_hooks)]
        if body.windows(20).any(|w| w == br#""mcp-edge/test-trap""#) {
            core::arch::wasm32::unreachable();
        }
        let parsed = jsonrpc::parse_body(body, envelope.ndjson_body)?;
        // JSON-RPC batching was removed in 2025-06-18; NDJSON lines are not a batch.
        if parsed.batch && !envelope.ndjson_body && at_least(&session.protocol_version, "2025-06-18") {
            return Err(Error::InvalidRequest(format!("batches are not supported in protocol version {}", session.protocol_version)));
        }
        let batch = parsed.batch;
        let (session, mut actions) = apart(self.dispatch_all(server, request.index(), session, parsed.messages, (request.route(), &request.principal))).await?;
        crate::edge::telemetry::adopt(&mut actions, envelope.trace.as_ref());
        let actions = match actions.iter().any(Action::is_for_tasks) {
            true => apart(self.tasks(server, &session, &request.home, actions)).await,
            false => actions,
        };
        if actions.iter().all(|a| *a == Action::Nothing) {
            return accepted(request.session_id());
        }
        if envelope.json_ok && !batch {
            if let Some(response) = apart(self.answer_lazily(server, &session, &request.home, &actions, &request.signal)).await? {
                return Ok(response);
            }
        }
        // Seed 003's progress.update lines go to NDJSON clients and the /stream alias.
        let framing = request.framing();
        let progress_update = framing == Framing::Ndjson || envelope.alias;
        apart(self.run(server, session, &request.home, (framing, progress_update, &request.signal), actions, batch)).await
    }

    /// A legacy (2024-11-05) session's POST: answered on its event stream, 202 here.
    pub(super) async fn legacy_message(&self, request: &Forwarded, body: &[u8]) -> Result<Response, Error> {
        let server = &request.server;
        let session = self.session_for(server, Some(&request.principal)).await?;
        let writer = self.standalone.borrow().clone();
        let (Some(writer), true) = (writer, session.legacy_sse) else {
            // Not a legacy session, or its stream is gone: nothing could carry the answer.
            return Err(Error::SessionNotFound);
        };
        let parsed = jsonrpc::parse_body(body, false)?;
        let (session, mut actions) = self.dispatch_all(server, request.index(), session, parsed.messages, (request.route(), &request.principal)).await?;
        crate::edge::telemetry::adopt(&mut actions, request.envelope.trace.as_ref());
        self.spawn_actions(server, session, request.home.clone(), (Outlet::Legacy(writer), None), actions, false);
        Ok(ResponseBuilder::new().with_status(202).empty())
    }

    /// A lease: the Worker serves the session's plain calls for a while, which is use too.
    pub(super) async fn lease(&self, request: &Forwarded) -> Result<Response, Error> {
        let server = &request.server;
        let session = self.session_for(server, Some(&request.principal)).await?;
        // Replies kept for the client go out with the next request the object serves: no
        // lease while there are any, so that one comes here.
        if !self.outbox.list().await.is_empty() {
            return Ok(ResponseBuilder::new().with_status(204).empty());
        }
        let session = self.touch(server, session).await?;
        match crate::lease::Lease::grant(&session, now_ms(), server.lease_ms, server.idle_timeout_ms) {
            Some(lease) => Ok(Response::from_json(&lease)?),
            None => Ok(ResponseBuilder::new().with_status(204).empty()),
        }
    }

    /// Dispatches a request's messages: answers to our requests complete the calls waiting for
    /// them, a legacy session's `initialize` renews the session, and changes are persisted.
    async fn dispatch_all(&self, server: &Arc<Server>, server_index: usize, mut session: Session, messages: Vec<jsonrpc::Parsed>, (route, principal): (&RouteParams, &Principal)) -> Result<(Session, Vec<Action>), Error> {
        let secret = |name: &str| crate::edge::secret(&self.env, name);
        let connection = |name: &str| crate::edge::connections::cached(&principal.id, name);
        let env = Environment { secret: &secret, route, principal, now_ms: now_ms(), connection: &connection };
        let before = session.clone();
        let mut actions = Vec::with_capacity(messages.len());
        for message in messages {
            match &message {
                Ok(Message::Response { id, result }) => {
                    let waiting = id.as_str().and_then(|id| self.inputs.borrow_mut().remove(id));
                    if let Some(sender) = waiting {
                        let _ = sender.send(result.clone());
                    }
                }
                // Whichever request carries it, the cancellation reaches the call: every call
                // of this session runs in this object.
                Ok(Message::Notification(n)) if n.method == Method::Cancelled => {
                    if let Some(id) = n.params.as_ref().and_then(|p| p.get("requestId")) {
                        crate::edge::context::cancel(&self.cancels, id);
                    }
                }
                // Over HTTP+SSE, initialize arrives in a session the GET already opened.
                Ok(Message::Request(r)) if r.method == Method::Initialize && session.legacy_sse => {
                    let (reply, mut fresh) = dispatch::initialize(server, r, &session.id, now_ms());
                    fresh.legacy_sse = true;
                    fresh.principal.clone_from(&session.principal);
                    fresh.streams_opened = session.streams_opened;
                    session = fresh;
                    actions.push(Action::Reply(reply));
                    continue;
                }
                _ => {}
            }
            let refusal = health::Refusal::watch(server, &message);
            let action = dispatch::handle(server, &mut session, message, &env);
            refusal.count(server, principal, &action, Some(&self.env));
            actions.push(action);
        }
        crate::edge::calls::admit(&self.cancels, (server, &principal.id), Some(&self.env), &mut actions);
        if session != before {
            self.save(&session).await?;
        }
        if session.subscriptions != before.subscriptions {
            self.subscribed.replace(session.subscriptions.clone());
            registry::record(&self.env, server, server_index, &object_name(&session.id, &session.principal), &session.subscriptions).await?;
        }
        Ok((session, actions))
    }
}
