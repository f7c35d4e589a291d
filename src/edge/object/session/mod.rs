//! The session's Durable Object: its home for state, and the writer of its response streams.
//!
//! `serve` opens the envelope the Worker sealed and hands each operation (`envelope::Op`) to the
//! one function that serves it, by concern:
//! - `lifecycle`: `initialize`, `DELETE`, and the alarm that ends an idle session;
//! - `calls`: a client's messages (a POST, a legacy session's POST, a lease), dispatched, their
//!   calls run; `replies` sends what they answer (buffered, streamed, or framed lazily);
//! - `streams`: the streams a client opens to hear from the server (GET, the legacy event stream,
//!   `subscriptions/listen`), and the notifications they carry;
//! - `results`: deferred calls' results, and replies whose stream was gone (the outbox);
//! - `tasks`: MCP Tasks, and the 2026-07-28 Tasks extension's requests;
//! - objects of the same class under other names are served by their own modules
//!   (`object::registry`, `authority`, `health`, `versions`, `counters`).
//!
//! The one import circle of this folder: the object defined here holds `tasks::Running` (the
//! tasks it runs now), and `tasks` carries out a task's steps on the object.

mod calls;
mod lifecycle;
mod replies;
mod results;
mod streams;
mod tasks;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use web_sys::AbortSignal;
use worker::worker_sys::DurableObjectStorage;
use worker::{durable_object, DurableObject, Env, Request, Response, State};

use crate::auth::Principal;
use crate::catalog::Server;
use crate::edge::context::{Cancels, Inputs};
use crate::edge::deferred::{Home, Receipts, Waiters};
use crate::edge::http::error_response;
use crate::edge::object::{authority, counters, health, registry, versions};
use crate::edge::outbox::Outbox;
use crate::edge::streams::Streams;
use crate::edge::live::served;
use crate::edge::{apart, now_ms, writer};
use crate::envelope::{Envelope, Op};
use crate::error::Error;
use crate::negotiate::Framing;
use crate::routes::RouteParams;
use crate::session::Session;

const STATE_KEY: &str = "session";

#[durable_object]
pub struct McpSession {
    state: State,
    env: Env,
    /// The stored session, read once per object lifetime; `None` inside means "known absent".
    cached: RefCell<Option<Option<Session>>>,
    /// The session ended in this object's life: a request waiting for its write stops waiting.
    ended: Cell<bool>,
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
    /// The URIs the session subscribes to now, which the open GET stream watches upstream.
    subscribed: Rc<RefCell<Vec<String>>>,
    /// The storage, for tasks that outlive the request that started them.
    raw_storage: Rc<DurableObjectStorage>,
    /// The MCP Tasks running here, and the requests waiting for their results.
    running: tasks::Running,
    /// Replies whose stream was gone, until the client's next stream carries them.
    outbox: Outbox,
    /// A limit object's memory (`rateLimits`): a bucket, or a concurrency limit's holders and queue.
    slots: super::limits::Slots,
}

impl DurableObject for McpSession {
    fn new(state: State, env: Env) -> Self {
        crate::edge::rescue::install();
        // Whatever this object sends (an alarm's too) is redacted with this environment's secrets.
        crate::edge::redaction::follow(&env);
        // Gauge changes in this isolate (streams, sessions, tasks) flush to the health object.
        crate::edge::health::home(&env);
        crate::edge::keep_env(&env);
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
            cached: RefCell::new(None), ended: Cell::new(false), busy: Rc::new(Cell::new(0)), last_activity: Rc::new(Cell::new(0)), inputs: Inputs::default(), cancels: Cancels::default(), waiters: Waiters::default(), receipts: Receipts::default(),
            standalone: Rc::default(),
            subscribed: Rc::default(),
            running: tasks::Running::default(),
            slots: super::limits::Slots::default(),
        }
    }

    async fn fetch(&self, req: Request) -> worker::Result<Response> {
        match self.serve(req).await {
            Ok(response) => Ok(response),
            Err(error) => error_response(&error),
        }
    }

    async fn alarm(&self) -> worker::Result<Response> {
        self.expire().await.map_err(|e| worker::Error::RustError(e.message()))?;
        Response::empty()
    }
}

impl McpSession {
    /// One operation, by its `Op`: each is served by one function.
    async fn serve(&self, mut req: Request) -> Result<Response, Error> {
        // Fires when the client goes away (`enable_request_signal`): the streams this request
        // opens watch it (`edge::writer`).
        let signal = req.inner().signal();
        let input = req.bytes().await?;
        let (envelope, body) = Envelope::open(&input)?;
        let op = envelope.op;
        let (index, session_id) = (envelope.server, envelope.session_id.as_str());
        match op {
            // A deferred call's result, or a question about it.
            Op::CallStatus | Op::AttemptFailed | Op::Resolve | Op::Callback => apart(self.serve_result(&envelope, body)).await,
            // Objects of this class under other names.
            Op::OAuth => apart(authority::serve(&self.state, body)).await,
            Op::Connection => apart(crate::edge::connections::store::serve(&self.state, &self.env, body)).await,
            Op::HealthFlush | Op::HealthRead | Op::MetricsRead => apart(health::serve((&self.state, &self.env), op, body)).await,
            Op::Live => apart(versions::serve(&self.state, body)).await,
            Op::ConnectionClient => apart(crate::edge::connections::discover::serve(&self.state, body)).await,
            Op::Count => apart(counters::serve(&self.state, body)).await,
            Op::Limit => apart(super::limits::serve(&self.state, &self.slots, body)).await,
            Op::Slot => apart(self.slots.serve(body)).await,
            // The registry's pins: an object of the same name, with operations of their own.
            Op::PinsCheck | Op::PinsHeld | Op::PinsDecide => apart(crate::edge::object::pins::serve(&self.state, &self.env, op, body)).await,
            Op::AuditAppend | Op::AuditRead => apart(crate::edge::audit::serve(&self.state, op, body)).await,
            Op::RegistrySet | Op::RegistryNotify | Op::RegistryListen | Op::RegistryListChanged | Op::RegistryUpstreamRead | Op::PrincipalOpen | Op::PrincipalClose | Op::PrincipalKeep => {
                apart(registry::serve(&self.state, &self.env, op, index, session_id, body)).await
            }
            #[cfg(mcp_edge_test_hooks)]
            Op::TestAlarm => {
                self.expire().await?;
                Ok(worker::ResponseBuilder::new().with_status(204).empty())
            }
            // A session's own operations.
            Op::Initialize | Op::Message | Op::SseOpen | Op::SseMessage | Op::Listen | Op::Get | Op::Notify | Op::Delete | Op::Tasks | Op::Lease => {
                let request = self.forwarded(envelope, signal).await?;
                if op != Op::Initialize {
                    self.born(request.session_id()).await?;
                }
                match op {
                    Op::Initialize => self.initialize(&request, body).await,
                    Op::Message => self.message(&request, body).await,
                    Op::SseMessage => self.legacy_message(&request, body).await,
                    Op::Lease => self.lease(&request).await,
                    Op::Get => apart(self.get(&request)).await,
                    Op::SseOpen => self.open_legacy(&request).await,
                    Op::Listen => self.listen(&request, body).await,
                    Op::Notify => self.notify(&request, body).await,
                    Op::Tasks => apart(self.serve_stateless_task(&request.server, &request.home, (request.route(), &request.principal, request.envelope.trace.as_ref()), body)).await,
                    Op::Delete => self.delete(&request).await,
                    other => Err(Error::Internal(format!("not a session operation: {other:?}"))),
                }
            }
            // In test builds only; or from a newer Worker.
            #[allow(unreachable_patterns)]
            other @ (Op::TestAlarm | Op::Unknown) => Err(Error::Internal(format!("not a session operation: {other:?}"))),
        }
    }

    /// A client's request (or the registry's notification) as the object serves it, at least
    /// at the configuration version the Worker served.
    async fn forwarded(&self, envelope: Envelope, signal: AbortSignal) -> Result<Forwarded, Error> {
        let server = crate::edge::live::fresh_catalog(&self.env, envelope.config).await?.servers.get(envelope.server).cloned().ok_or_else(|| Error::Internal("unknown server index".into()))?;
        let principal = envelope.principal.clone().unwrap_or_else(Principal::anonymous);
        let server = crate::edge::mcp::personal::served(&self.env, server, &principal).await;
        let home = Home {
            env: self.env.clone(),
            storage: self.raw_storage.clone(),
            outbox: self.outbox.clone(),
            waiters: self.waiters.clone(),
            receipts: self.receipts.clone(),
            session_id: envelope.session_id.clone(),
            object: envelope.object().to_string(),
            server_index: envelope.server,
            origin: envelope.origin.clone().unwrap_or_default(),
            task: None,
        };
        Ok(Forwarded { envelope, server, principal, home, signal })
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
}

/// A client's request to its session, as the Worker forwarded it: the envelope, and the server,
/// caller and home it names.
struct Forwarded {
    envelope: Envelope,
    server: Arc<Server>,
    principal: Principal,
    /// What the request's calls need of this object.
    home: Home,
    /// Fires when the client goes away: the streams this request opens watch it.
    signal: AbortSignal,
}

impl Forwarded {
    fn session_id(&self) -> &str {
        &self.envelope.session_id
    }

    fn index(&self) -> usize {
        self.envelope.server
    }

    fn route(&self) -> &RouteParams {
        &self.envelope.route
    }

    fn framing(&self) -> Framing {
        self.envelope.framing.unwrap_or(Framing::Json)
    }
}

/// The server at `route`, with its index (a callback's envelope names no server).
fn server_at(route: &str) -> Option<(usize, Arc<Server>)> {
    served().ok()?.servers.iter().enumerate().find(|(_, s)| s.route.as_str() == route).map(|(i, s)| (i, s.clone()))
}

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
