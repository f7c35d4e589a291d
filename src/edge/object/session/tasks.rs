//! The session's tasks (MCP Tasks, 2025-11-25): a call the client asked to run as a task is
//! answered at once with its handle and runs on in this object, detached from its request; its
//! record (`crate::tasks::Record`, one storage key per task) keeps its state and, once it ends,
//! its result, for the task's `ttl`. A queued or callback call's result ends its task whenever
//! it arrives, even after this object was evicted or the runtime restarted (`results`); a direct
//! call that such a restart cut short ends its task as failed, saying so. What a `tasks/*`
//! request does is decided in `protocol::tasks`; here it is carried out.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{select, Either};
use serde_json::{json, Value};
use worker::worker_sys::DurableObjectStorage;
use worker::{Delay, Response, ResponseBuilder};

use super::{BusyGuard, McpSession};
use crate::auth::{object_name, Principal};
use crate::catalog::Server;
use crate::dispatch::{self, Action, Environment, PendingCall, TaskRequest};
use crate::edge::context::{CallContext, Inputs};
use crate::edge::deferred::Home;
use crate::edge::object::registry;
use crate::edge::streams::Outlet;
use crate::edge::{now_ms, writer};
use crate::error::Error;
use crate::framing;
use crate::jsonrpc::{self, Message};
use crate::method::Method;
use crate::negotiate::Framing;
use crate::routes::RouteParams;
use crate::session::Session;
use crate::protocol::tasks::{self as protocol, TaskCall};
use crate::tasks::{self, Outcome, Record};

/// The tasks this object is running now, and the `tasks/result` requests waiting for them.
#[derive(Clone, Default)]
pub(super) struct Running {
    /// Stops a running task's call (its sender is dropped when the call ends on its own).
    aborts: Rc<RefCell<HashMap<String, oneshot::Sender<()>>>>,
    /// Woken when the task ends.
    waiting: Rc<RefCell<HashMap<String, Vec<oneshot::Sender<()>>>>>,
}

impl Running {
    fn wake(&self, id: &str) {
        for waiter in self.waiting.borrow_mut().remove(id).unwrap_or_default() {
            let _ = waiter.send(());
        }
    }
}

impl McpSession {
    /// Answers the actions that concern tasks (a call to run as one, a `tasks/*` request), and
    /// leaves the rest as they were.
    pub(super) async fn tasks(&self, server: &Arc<Server>, session: &Session, home: &Home, actions: Vec<Action>) -> Vec<Action> {
        let mut out = Vec::with_capacity(actions.len());
        for action in actions {
            out.push(match action {
                Action::Call(call) if call.task.is_some() => Action::Reply(self.start_task(server, session, home, *call).await),
                Action::Task(request) => Action::Reply(self.task_request(server, crate::dispatch::stateless_revision(session), *request).await),
                other => other,
            });
        }
        out
    }

    /// Keeps the task's record, starts its call detached, and answers with its handle.
    async fn start_task(&self, server: &Arc<Server>, session: &Session, home: &Home, call: PendingCall) -> String {
        let settings = server.tasks;
        if let Err(e) = protocol::admit(self.task_records().await.len(), &settings) {
            return jsonrpc::failure(&call.id, &e);
        }
        let id = match crate::edge::ids::random_id() {
            Ok(id) => id,
            Err(e) => return jsonrpc::failure(&call.id, &e),
        };
        let now = now_ms();
        let record = Record::new(&id, call.label(), call.task.and_then(|t| t.ttl_ms), now, &settings);
        if let Err(e) = registry::open_task(&self.env, server, home.server_index, &session.principal, &home.object, &id).await {
            return jsonrpc::failure(&call.id, &e);
        }
        let reply = jsonrpc::success(&call.id, protocol::created(&record, &settings, crate::dispatch::stateless_revision(session)));
        self.run_task(server, session, home, &record, call).await;
        crate::edge::arm_by(&self.raw_storage, record.expires_ms()).await;
        reply
    }

    /// Stores the task as it is and runs its call detached; the call's end ends the task.
    async fn run_task(&self, server: &Arc<Server>, session: &Session, home: &Home, record: &Record, call: PendingCall) {
        // Running before it is stored: the alarm fails a stored working task nothing runs.
        let (abort, aborted) = oneshot::channel::<()>();
        self.running.aborts.borrow_mut().insert(record.id.clone(), abort);
        self.store_task(record).await;
        let this = TaskRunner {
            server: server.clone(),
            session: session.clone(),
            home: Home { task: Some((record.id.clone(), record.expires_ms())), ..home.clone() },
            inputs: self.inputs.clone(),
            standalone: self.standalone.clone(),
            running: self.running.clone(),
            storage: self.raw_storage.clone(),
            busy: BusyGuard::enter(&self.busy, &self.last_activity),
        };
        wasm_bindgen_futures::spawn_local(this.run(record.id.clone(), call, aborted));
    }

    /// 2026-07-28 `tasks/update`: the answers to a waiting task's requests, kept; once every one
    /// is answered, its call goes on with them (the `tools/call` retry of the extension-less
    /// flow, made here), and the task is working again. Acknowledged either way, once applied.
    /// What it does is `protocol::tasks::update`'s decision; here it is carried out.
    pub(super) async fn update_task(&self, server: &Arc<Server>, session: &Session, home: &Home, env: &Environment<'_>, request: TaskRequest) -> String {
        let TaskCall::Update { task_id, responses } = &request.call else { return protocol::acknowledged(&request.id) };
        let mut record = self.task(task_id).await;
        let arguments = record.as_ref().and_then(|r| r.input.as_ref()).map(|w| w.arguments.clone()).unwrap_or(Value::Null);
        match protocol::update(&request.id, record.as_mut(), responses, now_ms()) {
            protocol::Update::Refused(reply) => return reply,
            protocol::Update::Kept => {}
            protocol::Update::Retry(retry) => {
                let Some(mut record) = record else { return protocol::acknowledged(&request.id) };
                let mut own = session.clone();
                match dispatch::handle(server, &mut own, Ok(Message::Request(retry)), env) {
                    Action::Call(call) => {
                        self.run_task(server, session, home, &record, *call).await;
                        return protocol::acknowledged(&request.id);
                    }
                    // Asked again at once, or refused (a state that no longer verifies).
                    Action::Reply(reply) => {
                        let outcome = protocol::outcome_of(&reply);
                        let parked = matches!(&outcome, Outcome::Result(r) if record.park(r, &arguments, now_ms()));
                        if !parked {
                            let keeper = Keeper { env: &self.env, server, index: home.server_index, principal: &session.principal, object: &home.object, storage: &self.raw_storage };
                            keeper.conclude(&mut record, outcome).await;
                        }
                    }
                    Action::Task(_) | Action::Nothing => {}
                }
                self.store_task(&record).await;
                return protocol::acknowledged(&request.id);
            }
        }
        if let Some(record) = &record {
            self.store_task(record).await;
        }
        protocol::acknowledged(&request.id)
    }

    /// 2026-07-28: a request of the Tasks extension, in the object that keeps the principal's
    /// tasks: a session of its own, made at the first, stands for the principal (its alarm keeps
    /// it while it keeps tasks, and deferred results find it); each request brings its own
    /// client capabilities. Answered as one JSON body.
    pub(super) async fn serve_stateless_task(&self, server: &Arc<Server>, home: &Home, (route, principal, trace): (&RouteParams, &Principal, Option<&crate::trace::Context>), body: &[u8]) -> Result<Response, Error> {
        let wrapped: Value = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(e.to_string()))?;
        let now = now_ms();
        let mut session = match self.load().await? {
            Some(session) if session.principal == principal.id => session,
            Some(_) => return Err(Error::SessionNotFound),
            None => {
                let mut session = Session::new(&home.session_id, server.route.as_str(), crate::versions::STATELESS_VERSION, Value::Null, json!({}), now);
                session.belongs_to(principal);
                self.save(&session).await?;
                self.state.storage().set_alarm(Duration::from_millis(server.idle_timeout_ms)).await?;
                session
            }
        };
        session = self.touch(server, session).await?;
        session.client_capabilities = wrapped.get("clientCapabilities").cloned().unwrap_or_else(|| json!({}));
        session.client_info = wrapped.get("clientInfo").cloned().unwrap_or(Value::Null);
        let message = wrapped.get("message").map(Value::to_string).unwrap_or_default();
        let parsed = jsonrpc::parse_body(message.as_bytes(), false)?;
        let secret = |name: &str| crate::edge::secret(&self.env, name);
        let connection = |name: &str| crate::edge::connections::cached(&principal.id, name);
        let env = Environment { secret: &secret, route, principal, now_ms: now, connection: &connection };
        let mut mutable = session.clone();
        let mut actions = Vec::new();
        for message in parsed.messages {
            actions.push(match dispatch::handle(server, &mut mutable, message, &env) {
                Action::Task(request) if request.call.method() == Method::TasksUpdate => Action::Reply(self.update_task(server, &session, home, &env, *request).await),
                other => other,
            });
        }
        crate::edge::telemetry::adopt(&mut actions, trace);
        let actions = self.tasks(server, &session, home, actions).await;
        let replies: Vec<String> = actions.into_iter().filter_map(|a| match a {
            Action::Reply(reply) => Some(reply),
            _ => None,
        }).collect();
        let status = match replies.as_slice() {
            [reply] => crate::jsonrpc::error_code(reply).map_or(200, crate::protocol::meta::error_status),
            _ => 200,
        };
        let headers = crate::edge::http::framing_headers(Framing::Json);
        let replies: Vec<_> = replies.into_iter().map(crate::edge::redaction::seal).collect();
        Ok(ResponseBuilder::new().with_status(status).with_headers(headers).fixed(framing::json_body(&replies, false)))
    }

    /// `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`: `protocol::tasks` decides
    /// from the records; here they are read, written, and its steps carried out.
    async fn task_request(&self, server: &Server, stateless: bool, request: TaskRequest) -> String {
        let settings = &server.tasks;
        let Some(id) = request.call.task_id() else {
            let TaskCall::List(cursor) = &request.call else { return protocol::acknowledged(&request.id) };
            return protocol::list(&request.id, self.task_records().await, cursor.as_deref(), settings);
        };
        loop {
            match protocol::one(&request.id, &request.call, stateless, self.task(id).await, settings, now_ms()) {
                protocol::Step::Answer { reply, store, stop, notify: tell } => {
                    if let Some(record) = &store {
                        self.store_task(record).await;
                    }
                    // Stops the call: its fetch is aborted, and a deferred call's late result is refused.
                    if let Some(abort) = stop.then(|| self.running.aborts.borrow_mut().remove(id)).flatten() {
                        let _ = abort.send(());
                    }
                    if let (true, Some(record)) = (tell, &store) {
                        notify(&self.standalone, record, settings).await;
                    }
                    if stop {
                        self.running.wake(id);
                    }
                    return reply;
                }
                protocol::Step::Wait => {
                    let (sender, receiver) = oneshot::channel();
                    self.running.waiting.borrow_mut().entry(id.to_string()).or_default().push(sender);
                    // Woken when it ends here; or, should it end where nobody wakes us (a
                    // result applied by another instance of this object), at the next look.
                    let _ = select(receiver, Delay::from(Duration::from_millis(settings.poll_interval_ms.max(1_000)))).await;
                }
            }
        }
    }

    /// Tells the client (on the GET stream, when one is open) and the waiting `tasks/result`
    /// requests that the task ended.
    async fn ended(&self, record: &Record, settings: &crate::catalog::TaskSettings) {
        notify(&self.standalone, record, settings).await;
        self.running.wake(&record.id);
    }

    /// Ends a task with how its deferred call ended, where no running call of this instance
    /// does it (the object was evicted, or the runtime restarted, since the task started).
    pub(super) async fn finish_task(&self, (index, server): (usize, &Server), session: &Session, id: &str, outcome: Outcome) {
        let Some(mut record) = self.task(id).await else { return };
        let object = object_name(&session.id, &session.principal);
        let keeper = Keeper { env: &self.env, server, index, principal: &session.principal, object: &object, storage: &self.raw_storage };
        if keeper.conclude(&mut record, outcome).await {
            self.store_task(&record).await;
            self.ended(&record, &server.tasks).await;
        }
    }

    /// At the alarm: deletes the tasks whose `ttl` is over, and fails those still working with
    /// nothing left to end them (a direct call that a restart cut short). Returns when the
    /// next task expires, if any is kept.
    pub(super) async fn sweep_tasks(&self, (index, server): (usize, &Server), session: &Session, object: &str, deferred: &[String], now: u64) -> Option<u64> {
        let mut next: Option<u64> = None;
        for mut record in self.task_records().await {
            if record.expires_ms() <= now {
                self.delete_task(&record.id).await;
                crate::edge::health::task_moved(Some(record.status), None);
                let _ = registry::close_task(&self.env, server, index, &session.principal, object, &record.id).await;
                continue;
            }
            let running = self.running.aborts.borrow().contains_key(&record.id) || deferred.contains(&record.id);
            if protocol::orphaned(&mut record, running, &server.tasks, now) {
                self.store_task(&record).await;
                self.ended(&record, &server.tasks).await;
            }
            next = Some(next.map_or(record.expires_ms(), |n| n.min(record.expires_ms())));
        }
        next
    }

    /// Forgets the session's tasks in its principal's count, as the session ends.
    pub(super) async fn close_tasks(&self, (index, server): (usize, &Server), session: &Session, object: &str) {
        for record in self.task_records().await {
            let _ = registry::close_task(&self.env, server, index, &session.principal, object, &record.id).await;
            // The session's storage goes next, and its tasks with it.
            crate::edge::health::task_moved(Some(record.status), None);
        }
    }

    /// Every task this session keeps.
    pub(super) async fn task_records(&self) -> Vec<Record> {
        let Ok(map) = crate::edge::listed(&self.raw_storage, &tasks::key("")).await else { return Vec::new() };
        let mut records = Vec::new();
        map.for_each(&mut |value, _| {
            if let Some(record) = crate::edge::from_json_text(&value) {
                records.push(record);
            }
        });
        records
    }

    async fn task(&self, id: &str) -> Option<Record> {
        // Expired but not yet swept: as good as gone.
        crate::edge::stored::<Record>(&self.raw_storage, &tasks::key(id)).await.ok().flatten().filter(|r| r.expires_ms() > now_ms())
    }

    async fn store_task(&self, record: &Record) {
        store(&self.raw_storage, record).await;
    }

    async fn delete_task(&self, id: &str) {
        if let Ok(promise) = self.raw_storage.delete(&tasks::key(id)) {
            let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
        }
    }
}

/// Stores a task's record, redacted: it holds the task's result and what it asked the client.
/// The tasks gauge moves from the stored state to this one (a read of a key the object's
/// storage has just read or written: its cache answers).
async fn store(storage: &DurableObjectStorage, record: &Record) {
    let was = crate::edge::stored::<Record>(storage, &tasks::key(&record.id)).await.ok().flatten().map(|r| r.status);
    crate::edge::health::task_moved(was, Some(record.status));
    let Ok(text) = serde_json::to_string(record) else { return };
    let text = crate::edge::redaction::seal(text).into_string();
    if let Ok(promise) = storage.put(&tasks::key(&record.id), text.into()) {
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    }
}

/// `notifications/tasks/status` on the GET stream, when one is open (clients poll regardless).
async fn notify(standalone: &Rc<RefCell<Option<Rc<writer::LineWriter>>>>, record: &Record, settings: &crate::catalog::TaskSettings) {
    let writer = standalone.borrow().clone();
    if let Some(writer) = writer {
        writer.send_line(&crate::edge::redaction::seal(tasks::status_notification(record, settings))).await;
    }
}

/// Where a task's result is counted against `tasks.maxTotalResultBytes`: the principal's
/// registry when it is authenticated; the object's own tasks for an anonymous one.
struct Keeper<'a> {
    env: &'a worker::Env,
    server: &'a Server,
    index: usize,
    principal: &'a str,
    object: &'a str,
    storage: &'a DurableObjectStorage,
}

impl Keeper<'_> {
    /// Ends the task with its call's outcome, or, when its principal's tasks have no room for
    /// the result, with an error that says so. Whether the task changed.
    async fn conclude(&self, record: &mut Record, outcome: Outcome) -> bool {
        if record.status.terminal() {
            return false;
        }
        let settings = &self.server.tasks;
        let bytes = outcome.bytes();
        let room = if self.principal == crate::auth::ANONYMOUS {
            let map = crate::edge::listed(self.storage, &tasks::key("")).await.ok();
            let mut others = 0;
            if let Some(map) = map {
                map.for_each(&mut |value, _| {
                    if let Some(other) = crate::edge::from_json_text::<Record>(&value).filter(|r| r.id != record.id) {
                        others += other.outcome.as_ref().map_or(0, Outcome::bytes);
                    }
                });
            }
            others + bytes <= settings.max_total_result_bytes
        } else {
            // Unreachable registry: the result is kept rather than lost.
            registry::keep_result(self.env, self.server, self.index, self.principal, self.object, &record.id, bytes).await.unwrap_or(true)
        };
        let outcome = if room { outcome } else { outcome.no_room(settings) };
        record.finish(outcome, now_ms(), settings)
    }
}

/// What a task's call needs of the object, owned, for as long as it runs.
struct TaskRunner {
    server: Arc<Server>,
    session: Session,
    home: Home,
    inputs: Inputs,
    standalone: Rc<RefCell<Option<Rc<writer::LineWriter>>>>,
    running: Running,
    storage: Rc<DurableObjectStorage>,
    /// The object is busy, and its session kept, while the call runs.
    #[allow(dead_code)]
    busy: BusyGuard,
}

impl TaskRunner {
    /// Runs the call to its end (or until the task is cancelled), and ends the task with it.
    async fn run(self, id: String, call: PendingCall, aborted: oneshot::Receiver<()>) {
        let out = Outlet::Task { standalone: self.standalone.clone(), task: id.clone() };
        let ctx = CallContext { server: &self.server, session: &self.session, out: Some(&out), inputs: Some(&self.inputs), cancels: None, home: Some(&self.home), progress_update: false, deadline_ms: None };
        let ended = select(Box::pin(crate::edge::calls::complete(&ctx, &call)), aborted).await;
        self.running.aborts.borrow_mut().remove(&id);
        // Cancelled: `tasks/cancel` already ended the task.
        let Either::Left((Some(reply), _)) = ended else {
            self.home.delivered(&call.id).await;
            return;
        };
        let outcome = protocol::outcome_of(&reply);
        let Some(mut record) = crate::edge::stored::<Record>(&self.storage, &tasks::key(&id)).await.ok().flatten() else { return };
        // 2026-07-28: the upstream asks for input; the task waits for `tasks/update`.
        if matches!(&outcome, Outcome::Result(r) if record.park(r, &call.arguments, now_ms())) {
            store(&self.storage, &record).await;
            return;
        }
        let keeper = Keeper { env: &self.home.env, server: &self.server, index: self.home.server_index, principal: &self.session.principal, object: &self.home.object, storage: &self.storage };
        if keeper.conclude(&mut record, outcome).await {
            store(&self.storage, &record).await;
            notify(&self.standalone, &record, &self.server.tasks).await;
            self.running.wake(&id);
        }
        // The task keeps the result now: a deferred call's kept result is done with.
        self.home.delivered(&call.id).await;
    }
}
