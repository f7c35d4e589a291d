//! The session's Durable Object: its home for state, and the writer of its response streams.
//!
//! `replies` sends a request's replies (buffered, streamed, or framed lazily); `get` serves the
//! GET stream and the legacy event stream.

mod get;
mod replies;
mod results;
mod tasks;

use std::sync::Arc;
use crate::method::Method;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use futures::StreamExt;
use worker::worker_sys::DurableObjectStorage;
use crate::edge::arm_alarm;
use worker::{durable_object, Delay, DurableObject, Env, Headers, Request, Response, ResponseBuilder, State};

use crate::edge::http::{accepted, error_response, respond, session_headers};
use crate::envelope::{Envelope, Op};
use crate::auth::{object_name, Principal};
use crate::edge::calls::{self, CallContext, Cancels, Inputs};
use crate::edge::deferred::{Home, Receipts, Waiters};
use crate::edge::outbox::Outbox;
use crate::edge::streams::{parse_event_id, Outlet, Streams};
use crate::edge::catalog;
use crate::edge::now_ms;
use crate::edge::object::registry;
use crate::edge::writer;
use crate::catalog::Server;
use crate::dispatch::{self, Action, Environment};
use crate::error::Error;
use crate::framing;
use crate::jsonrpc::{self, Message};
use crate::negotiate::{at_least, Framing};
use crate::routes::RouteParams;
use crate::session::Session;

const STATE_KEY: &str = "session";

#[durable_object]
pub struct McpSession {
    state: State,
    env: Env,
    /// The stored session, read once per object lifetime; `None` inside means "known absent".
    cached: RefCell<Option<Option<Session>>>,
    /// Requests being served, including streams still writing: a busy session never expires.
    busy: Rc<Cell<u32>>,
    /// When the last request finished. Idle time counts from here, not from its start.
    last_activity: Rc<Cell<u64>>,
    /// Requests sent to the client whose answers calls are waiting for.
    inputs: Inputs,
    /// Calls in flight, which `notifications/cancelled` stops.
    cancels: Cancels,
    /// Deferred (queued and callback) calls waiting for their results.
    waiters: Waiters,
    /// Results of deferred calls that a call here has in hand, not yet delivered.
    receipts: Receipts,
    /// SSE streams and their event logs, for resumption.
    streams: Streams,
    /// The standalone GET stream (or a legacy session's event stream), if one is open:
    /// server-initiated messages go there.
    standalone: Rc<RefCell<Option<Rc<writer::LineWriter>>>>,
    /// The storage, for tasks that outlive the request that started them.
    raw_storage: Rc<DurableObjectStorage>,
    /// The MCP Tasks running here, and the requests waiting for their results.
    running: tasks::Running,
    /// Replies whose stream was gone, until the client's next stream carries them.
    outbox: Outbox,
}

impl DurableObject for McpSession {
    fn new(state: State, env: Env) -> Self {
        crate::edge::rescue::install();
        // Whatever this object sends (an alarm's too) is redacted with this environment's secrets.
        crate::edge::redaction::follow(&env);
        // The JS storage object is shared, not copied: every handle writes the same storage.
        let storage = state.storage();
        let raw: &wasm_bindgen::JsValue = storage.as_raw().as_ref();
        let raw_storage: Rc<DurableObjectStorage> = Rc::new(wasm_bindgen::JsCast::unchecked_into(raw.clone()));
        McpSession {
            streams: Streams::new(raw_storage.clone()),
            outbox: Outbox::new(raw_storage.clone()),
            raw_storage,
            state,
            env,
            cached: RefCell::new(None), busy: Rc::new(Cell::new(0)), last_activity: Rc::new(Cell::new(0)), inputs: Inputs::default(), cancels: Cancels::default(), waiters: Waiters::default(), receipts: Receipts::default(),
            standalone: Rc::default(),
            running: tasks::Running::default(),
        }
    }

    async fn fetch(&self, req: Request) -> worker::Result<Response> {
        match self.serve(req).await {
            Ok(response) => Ok(response),
            Err(error) => error_response(&error),
        }
    }

    async fn alarm(&self) -> worker::Result<Response> {
        let Some(mut session) = self.load().await.map_err(|e| worker::Error::RustError(e.message()))? else {
            // An object of the same class that is no session: a counting object's windows end,
            // and the authorization server's objects drop what has expired.
            let storage = self.state.storage();
            let rust = |e: Error| worker::Error::RustError(e.message());
            if !crate::edge::object::counters::sweep(&storage, now_ms()).await.map_err(rust)? {
                crate::edge::object::authority::sweep(&storage, now_ms()).await.map_err(rust)?;
            }
            return Response::empty();
        };
        let found = catalog().ok().and_then(|c| c.servers.iter().enumerate().find(|(_, s)| s.route.as_str() == session.server).map(|(i, s)| (i, s.clone())));
        let idle = found.as_ref().map(|(_, s)| s.idle_timeout_ms);
        let now = now_ms();
        let next_call = match &found {
            Some((index, server)) => self.sweep_calls((*index, server), &session, now).await.map_err(|e| worker::Error::RustError(e.message()))?,
            None => None,
        };
        // Tasks outlive their requests: the session is kept while it keeps one.
        let object = object_name(&session.id, &session.principal);
        let deferred: Vec<String> = self.records().await.into_iter().filter(|r| r.state == crate::pending::State::Waiting).filter_map(|r| r.task).collect();
        let next_task = match &found {
            Some((index, server)) => self.sweep_tasks((*index, server), &session, &object, &deferred, now).await,
            None => None,
        };
        // Replies kept for the client keep the session until they are due to go.
        let next_kept = self.outbox.sweep(&session.id, now).await;
        // A session waiting for a deferred result is in use.
        let busy = self.busy.get() > 0 || next_call.is_some();
        // A legacy session and a listen stream's object live only as long as their stream.
        let stream_bound = session.legacy_sse || session.listen_id.is_some();
        let idle = idle.filter(|_| !(stream_bound && self.standalone.borrow().is_none() && !busy));
        if busy || self.last_activity.get() > session.last_used_ms {
            // Persist what only memory knew, so an eviction does not shorten the session.
            session.touch(if busy { now } else { self.last_activity.get() });
            self.save(&session).await.map_err(|e| worker::Error::RustError(e.message()))?;
        }
        match idle {
            Some(idle) if !session.is_expired(now, idle, busy) || next_task.is_some() || next_kept.is_some() => {
                let live = (!session.is_expired(now, idle, busy)).then(|| session.expires_at(idle));
                let at = [live, next_call, next_task, next_kept].into_iter().flatten().min().unwrap_or(now);
                let wait = at.saturating_sub(now).max(if next_call.is_some() { 1 } else { 1_000 });
                self.state.storage().set_alarm(Duration::from_millis(wait)).await?;
            }
            // Expired, or its server is no longer configured: the session ends.
            _ => {
                if let Some((index, server)) = found {
                    let rust = |e: Error| worker::Error::RustError(e.message());
                    self.close_tasks((index, &server), &session, &object).await;
                    registry::forget(&self.env, &server, index, &object, &session).await.map_err(rust)?;
                    registry::close_session(&self.env, &server, index, &session.principal, &session.id).await.map_err(rust)?;
                }
                self.end(&session.id).await.map_err(|e| worker::Error::RustError(e.message()))?
            }
        }
        Response::empty()
    }
}

impl McpSession {
    async fn serve(&self, mut req: Request) -> Result<Response, Error> {
        // Fires when the client goes away (`enable_request_signal`): the streams this request
        // opens watch it (`edge::writer`).
        let signal = req.inner().signal();
        let input = req.bytes().await?;
        let (envelope, body) = Envelope::open(&input)?;
        let op = envelope.op;
        if op.is_call_result() {
            return crate::edge::apart(self.serve_result(&envelope, body)).await;
        }
        #[cfg(mcp_edge_test_hooks)]
        if op == Op::TestAlarm {
            self.alarm().await.map_err(|e| Error::Internal(format!("alarm: {e:?}")))?;
            return Ok(ResponseBuilder::new().with_status(204).empty());
        }
        let session_id = envelope.session_id.clone();
        let server_index = envelope.server;
        if op == Op::OAuth {
            return crate::edge::apart(crate::edge::object::authority::serve(&self.state, body)).await;
        }
        if matches!(op, Op::HealthFlush | Op::HealthRead) {
            return crate::edge::apart(crate::edge::object::health::serve(&self.state, op, body)).await;
        }
        if op == Op::Live {
            return crate::edge::apart(crate::edge::object::versions::serve(&self.state, body)).await;
        }
        if op == Op::Count {
            return crate::edge::apart(crate::edge::object::counters::serve(&self.state, body)).await;
        }
        if matches!(op, Op::RegistrySet | Op::RegistryNotify | Op::RegistryListen | Op::RegistryListChanged | Op::RegistryUpstreamRead | Op::PrincipalOpen | Op::PrincipalClose | Op::PrincipalKeep) {
            return crate::edge::apart(registry::serve(&self.state, &self.env, op, server_index, &session_id, body)).await;
        }
        // Serve at least the configuration version the Worker served.
        crate::edge::live::refresh(&self.env, envelope.config).await;
        crate::edge::mcp::discovery::refresh(&self.env).await;
        let framing = envelope.framing.unwrap_or(Framing::Json);
        let ndjson_body = envelope.ndjson_body;
        // Seed 003's progress.update lines go to NDJSON clients and the /stream alias.
        let progress_update = framing == Framing::Ndjson || envelope.alias;
        let json_ok = envelope.json_ok;
        let route: &RouteParams = &envelope.route;
        let server = catalog()?.servers.get(server_index).cloned().ok_or_else(|| Error::Internal("unknown server index".into()))?;
        let server = &server;
        let principal: Principal = envelope.principal.clone().unwrap_or_else(Principal::anonymous);
        let home = Home {
            env: self.env.clone(),
            storage: self.raw_storage.clone(),
            outbox: self.outbox.clone(),
            waiters: self.waiters.clone(),
            receipts: self.receipts.clone(),
            session_id: session_id.clone(),
            object: envelope.object().to_string(),
            server_index,
            origin: envelope.origin.clone().unwrap_or_default(),
            task: None,
        };

        match op {
            Op::Initialize => {
                let parsed = jsonrpc::parse_body(body, false)?;
                let Some(Ok(Message::Request(request))) = parsed.messages.into_iter().next() else {
                    return Err(Error::InvalidRequest("initialize expected".into()));
                };
                let now = now_ms();
                let (reply, mut session) = dispatch::initialize(server, &request, &session_id, now);
                session.principal.clone_from(&principal.id);
                self.save(&session).await?;
                self.state.storage().set_alarm(Duration::from_millis(server.idle_timeout_ms)).await?;
                // Nothing to stream for initialize: JSON when the client takes it.
                respond(if json_ok { Framing::Json } else { framing }, &session_id, vec![reply], false)
            }
            Op::Tasks => crate::edge::apart(self.serve_stateless_task(server, &home, (route, &principal), body)).await,
            Op::Lease => {
                // The Worker serves the session's plain calls for a while: that is use too.
                let session = self.session_for(server, Some(&principal)).await?;
                // Replies kept for the client go out with the next request the object serves:
                // no lease while there are any, so that one comes here.
                if !self.outbox.list().await.is_empty() {
                    return Ok(ResponseBuilder::new().with_status(204).empty());
                }
                let session = self.touch(server, session).await?;
                match crate::lease::Lease::grant(&session, now_ms(), server.lease_ms, server.idle_timeout_ms) {
                    Some(lease) => Ok(Response::from_json(&lease)?),
                    None => Ok(ResponseBuilder::new().with_status(204).empty()),
                }
            }
            Op::Message => {
                let session = self.session_for(server, Some(&principal)).await?;
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
                let parsed = jsonrpc::parse_body(body, ndjson_body)?;
                // JSON-RPC batching was removed in 2025-06-18; NDJSON lines are not a batch.
                if parsed.batch && !ndjson_body && at_least(&session.protocol_version, "2025-06-18") {
                    return Err(Error::InvalidRequest(format!("batches are not supported in protocol version {}", session.protocol_version)));
                }
                let batch = parsed.batch;
                let (session, actions) = crate::edge::apart(self.dispatch_all(server, server_index, session, parsed.messages, (route, &principal))).await?;
                let actions = crate::edge::apart(self.tasks(server, &session, &home, actions)).await;
                if actions.iter().all(|a| *a == Action::Nothing) {
                    return accepted(&session_id);
                }
                if json_ok && !batch {
                    if let Some(response) = crate::edge::apart(self.answer_lazily(server, &session, &home, &actions, &signal)).await? {
                        return Ok(response);
                    }
                }
                crate::edge::apart(self.run(server, session, &home, (framing, progress_update, &signal), actions, batch)).await
            }
            Op::SseOpen => {
                let now = now_ms();
                let mut session = Session::new(&session_id, server.route.as_str(), "2024-11-05", serde_json::json!({}), serde_json::json!({}), now);
                session.legacy_sse = true;
                session.principal.clone_from(&principal.id);
                self.save(&session).await?;
                self.state.storage().set_alarm(Duration::from_millis(server.idle_timeout_ms)).await?;
                let endpoint = envelope.endpoint.clone().unwrap_or_default();
                self.open_legacy(server, &session_id, endpoint, &signal)
            }
            Op::SseMessage => {
                let session = self.session_for(server, Some(&principal)).await?;
                let writer = self.standalone.borrow().clone();
                let (Some(writer), true) = (writer, session.legacy_sse) else {
                    // Not a legacy session, or its stream is gone: nothing could carry the answer.
                    return Err(Error::SessionNotFound);
                };
                let parsed = jsonrpc::parse_body(body, false)?;
                let (session, actions) = self.dispatch_all(server, server_index, session, parsed.messages, (route, &principal)).await?;
                self.spawn_actions(server, session, home, (Outlet::Legacy(writer), None), actions, false);
                Ok(ResponseBuilder::new().with_status(202).empty())
            }
            Op::Listen => {
                let body: serde_json::Value = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(e.to_string()))?;
                let now = now_ms();
                let field = |name: &str| body.get(name).cloned().unwrap_or(serde_json::Value::Null);
                let mut session = Session::new(&session_id, server.route.as_str(), crate::versions::STATELESS_VERSION, field("clientInfo"), field("clientCapabilities"), now);
                session.principal.clone_from(&principal.id);
                session.subscriptions = crate::protocol::subscriptions::honored(server, body.get("params"));
                session.lists = crate::protocol::subscriptions::honored_lists(server, body.get("params"));
                session.listen_id = Some(field("id"));
                self.save(&session).await?;
                if !session.subscriptions.is_empty() {
                    registry::record(&self.env, server, server_index, &home.object, &session.subscriptions).await?;
                }
                if !session.lists.is_empty() {
                    registry::listen(&self.env, server, server_index, &home.object, &session.lists).await?;
                }
                // Should the object be evicted with the stream, the alarm unregisters it.
                self.state.storage().set_alarm(Duration::from_millis(server.idle_timeout_ms)).await?;
                self.open_listen(server, server_index, &session, home.object.clone(), &signal)
            }
            Op::Get => {
                let mut session = self.session_for(server, Some(&principal)).await?;
                session.touch(now_ms());
                // The first GET stream of a session whose server's lists may change: from now on
                // the stream (or the next one) gets every list notification.
                let listens = server.lists_change && session.lists.is_empty() && !session.legacy_sse && session.takes_list_stream();
                if listens {
                    session.lists = crate::protocol::subscriptions::LIST_NOTIFICATIONS.iter().map(|m| m.name().to_string()).collect();
                }
                let last_event_id = envelope.last_event_id.clone();
                // The queued messages go out on this stream.
                let pending = if last_event_id.is_none() { std::mem::take(&mut session.pending) } else { Vec::new() };
                // Saved before the registry is told: a request the object serves while that call
                // is out (the client's `logging/setLevel`, sent as its GET opens) saves its own
                // change, which this copy, saved after, would undo.
                self.save(&session).await?;
                if listens {
                    registry::listen(&self.env, server, server_index, &home.object, &session.lists).await?;
                }
                crate::edge::apart(self.get(server, &session, &session_id, last_event_id.as_deref(), pending, &signal)).await
            }
            Op::Notify => {
                // An upstream announced a change. A subscribed session gets it on its GET
                // stream, or at its next GET when none is open.
                let session = self.session_for(server, None).await?;
                // Relayed to the client, and kept for its next GET: redacted from the start.
                let body = crate::edge::redaction::seal(String::from_utf8_lossy(body).into_owned()).into_string();
                let message = serde_json::from_slice::<serde_json::Value>(body.as_bytes()).ok();
                let uri = message.as_ref().and_then(|v| v.pointer("/params/uri").and_then(|u| u.as_str()).map(str::to_string));
                let method = message.as_ref().and_then(|v| v.get("method")).and_then(|m| m.as_str()).unwrap_or_default();
                // What the client lists next, it lists through this object: as the upstreams
                // list now, not as this isolate read them last.
                if uri.is_none() {
                    crate::edge::mcp::discovery::stale_all(server);
                }
                let wanted = match uri {
                    Some(uri) => session.subscriptions.contains(&uri),
                    None => session.lists.iter().any(|l| l == method),
                };
                if !wanted {
                    return Ok(ResponseBuilder::new().with_status(204).empty());
                }
                // One list notification waiting for the next GET says all it needs to.
                if session.listen_id.is_none() && session.pending.contains(&body) && self.standalone.borrow().is_none() {
                    return Ok(ResponseBuilder::new().with_status(202).empty());
                }
                let stream = self.standalone.borrow().clone();
                let line = match &session.listen_id {
                    Some(id) => crate::protocol::subscriptions::tag(&body, id),
                    None => body.clone(),
                };
                let delivered = match stream {
                    Some(stream) => stream.send_line(&crate::edge::redaction::seal(line)).await,
                    None => false,
                };
                // A listen stream that is gone has no later GET to catch up with.
                if !delivered && session.listen_id.is_none() {
                    // Read again: the delivery was awaited, and the session may have changed since.
                    let mut session = self.session_for(server, None).await?;
                    session.queue(body);
                    self.save(&session).await?;
                }
                Ok(ResponseBuilder::new().with_status(if delivered { 200 } else { 202 }).empty())
            }
            Op::Delete => {
                let session = self.session_for(server, Some(&principal)).await?;
                self.close_tasks((server_index, server), &session, &home.object).await;
                registry::forget(&self.env, server, server_index, &home.object, &session).await?;
                registry::close_session(&self.env, server, server_index, &session.principal, &session.id).await?;
                self.end(&session.id).await?;
                Ok(ResponseBuilder::new().with_status(200).with_headers(session_headers(&session_id, None)?).empty())
            }
            // Served above, by a registry, or in test builds only; or from a newer Worker.
            other @ (Op::CallStatus | Op::AttemptFailed | Op::Resolve | Op::Callback | Op::RegistrySet | Op::RegistryNotify | Op::PrincipalOpen | Op::PrincipalClose | Op::PrincipalKeep | Op::OAuth | Op::Live | Op::Count | Op::RegistryListen | Op::RegistryListChanged | Op::RegistryUpstreamRead | Op::HealthFlush | Op::HealthRead | Op::TestAlarm | Op::Unknown) => {
                Err(Error::Internal(format!("not a session operation: {other:?}")))
            }
        }
    }

    /// Dispatches a request's messages: answers to our requests complete the calls waiting for
    /// them, a legacy session's `initialize` renews the session, and changes are persisted.
    async fn dispatch_all(&self, server: &Arc<Server>, server_index: usize, mut session: Session, messages: Vec<jsonrpc::Parsed>, (route, principal): (&RouteParams, &Principal)) -> Result<(Session, Vec<Action>), Error> {
        let secret = |name: &str| crate::edge::secret(&self.env, name);
        let env = Environment { secret: &secret, route, principal, now_ms: now_ms() };
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
                        calls::cancel(&self.cancels, id);
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
            actions.push(crate::edge::health::handle(server, &mut session, message, &env, Some(&self.env)));
        }
        calls::admit(&self.cancels, server.limits.max_calls_in_flight, &mut actions);
        if session != before {
            self.save(&session).await?;
        }
        if session.subscriptions != before.subscriptions {
            registry::record(&self.env, server, server_index, &object_name(&session.id, &session.principal), &session.subscriptions).await?;
        }
        Ok((session, actions))
    }

    /// Records a request's use of the session. Last use is kept in memory (the alarm persists
    /// it); storage hears of it only when it is a tenth of the idle timeout old, which saves a
    /// write per request. An eviction can then shorten the session by at most that tenth.
    async fn touch(&self, server: &Server, mut session: Session) -> Result<Session, Error> {
        let now = now_ms();
        let stale = now.saturating_sub(session.last_used_ms) > server.idle_timeout_ms / 10;
        session.touch(now);
        if stale {
            self.save(&session).await?;
        } else if let Some(Some(cached)) = self.cached.borrow_mut().as_mut() {
            // The session was read from this cache: touching it in place saves a copy.
            cached.touch(now);
        }
        Ok(session)
    }

    /// The session this request names, if it is alive, belongs to this server and, for a
    /// client's request, to the principal that created it (`None`: an internal operation).
    async fn session_for(&self, server: &Server, principal: Option<&Principal>) -> Result<Session, Error> {
        match self.load().await? {
            Some(session) if session.server == server.route.as_str() && session.is_compatible() && principal.is_none_or(|p| p.id == session.principal) => Ok(session),
            _ => Err(Error::SessionNotFound),
        }
    }

    async fn load(&self) -> Result<Option<Session>, Error> {
        if let Some(known) = self.cached.borrow().as_ref() {
            return Ok(known.clone());
        }
        // A state this build cannot read is a session it cannot serve: the client starts anew.
        let stored: Option<Session> = crate::edge::stored(&self.raw_storage, STATE_KEY).await.map_err(worker::Error::from)?;
        *self.cached.borrow_mut() = Some(stored.clone());
        Ok(stored)
    }

    /// A new SSE stream id, unique in the session: the count of streams opened, persisted.
    async fn allocate_stream(&self) -> Result<u64, Error> {
        let mut session = self.load().await?.ok_or(Error::SessionNotFound)?;
        session.streams_opened += 1;
        self.save(&session).await?;
        Ok(session.streams_opened)
    }

    async fn save(&self, session: &Session) -> Result<(), Error> {
        *self.cached.borrow_mut() = Some(Some(session.clone()));
        let text = serde_json::to_string(session).map_err(|e| Error::Internal(e.to_string()))?;
        self.state.storage().put_raw(STATE_KEY, text).await?;
        Ok(())
    }

    async fn end(&self, session_id: &str) -> Result<(), Error> {
        self.outbox.ending(session_id).await;
        *self.cached.borrow_mut() = Some(None);
        // Calls still waiting for a result end with the session; their records go with the storage.
        self.waiters.borrow_mut().clear();
        crate::edge::mcp::call::end_kept(&self.env, &self.raw_storage).await;
        let storage = self.state.storage();
        storage.delete_alarm().await?;
        storage.delete_all().await?;
        Ok(())
    }
}

/// The server at `route`, with its index (a callback's envelope names no server).
fn server_at(route: &str) -> Option<(usize, Arc<Server>)> {
    catalog().ok()?.servers.iter().enumerate().find(|(_, s)| s.route.as_str() == route).map(|(i, s)| (i, s.clone()))
}

/// How long a legacy session outlives its event stream, for POSTs already under way.
const LEGACY_GRACE_MS: u64 = 10_000;

/// Counts a request as in flight for as long as it lives, and notes when it ended.
struct BusyGuard {
    busy: Rc<Cell<u32>>,
    last_activity: Rc<Cell<u64>>,
}

impl BusyGuard {
    fn enter(busy: &Rc<Cell<u32>>, last_activity: &Rc<Cell<u64>>) -> BusyGuard {
        busy.set(busy.get() + 1);
        BusyGuard { busy: busy.clone(), last_activity: last_activity.clone() }
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.busy.set(self.busy.get().saturating_sub(1));
        self.last_activity.set(now_ms());
    }
}
