//! The health figures at the edge: each call's outcome is counted in this isolate's window, in
//! memory, with no I/O on the call's path; a background flush sends the window to the `health`
//! object (`object::health`) at most once per `FLUSH_MS`, and `figures` reads it back when
//! someone looks.
//!
//! When the flush runs: in a Durable Object, the first call counted after a flush starts a task
//! that sleeps `FLUSH_MS` and flushes (an object lives on after its requests). In the Worker, a
//! task may only outlive its request through `waitUntil`: the end of each fetch that left
//! figures to send (or calls still running, in a streamed stateless reply) starts one, which
//! flushes every `FLUSH_MS` while there is more, for at most `WORKER_BUDGET_MS`. So figures reach
//! the object at most `FLUSH_MS` (plus the hop) after their call ends; a streamed stateless call
//! still running past the budget waits for the isolate's next request.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use worker::{Context, Delay, Env};

use crate::catalog::{Catalog, HealthSettings, Server};
use crate::dispatch::{Action, CallKind, PendingCall};
use crate::edge::now_ms;
use crate::envelope::Op;
use crate::error::Error;
use crate::health::{DataPoint, HealthView, Outcome, Window};
use crate::jsonrpc::{Message, Parsed};
use crate::method::Method;

/// How long figures wait in an isolate before they are sent: one hop per isolate per 5 s at most.
pub const FLUSH_MS: u64 = 5_000;
/// How long a Worker's flush task may keep flushing after its request: `waitUntil` gives a
/// request 30 s.
const WORKER_BUDGET_MS: u64 = 25_000;
/// The one object that keeps the figures (an instance of the sessions class).
pub const OBJECT: &str = "health";

thread_local! {
    /// Counted since the last flush.
    static PENDING: RefCell<Window> = RefCell::default();
    /// Analytics Engine data points not yet written: the Worker writes them when its request
    /// ends, where it has the environment.
    static POINTS: RefCell<Vec<DataPoint>> = const { RefCell::new(Vec::new()) };
    /// Whether a flush is due already.
    static SCHEDULED: Cell<bool> = const { Cell::new(false) };
    /// Calls running in the Worker, whose figures a flush task should wait for.
    static RUNNING: Cell<u32> = const { Cell::new(0) };
    /// Whether a failed Analytics Engine write was logged already (once per isolate).
    static WRITE_FAILED: Cell<bool> = const { Cell::new(false) };
}

fn settings() -> Option<HealthSettings> {
    crate::edge::live::served().ok().map(|c| c.health.clone()).filter(|h| h.enabled)
}

/// Whether calls are running in this Worker isolate (a streamed stateless reply's), whose
/// figures and spans a background task should wait for.
pub fn calls_running() -> bool {
    RUNNING.with(Cell::get) > 0
}

/// A call from its start: its latency, and (in the Worker) the count of calls running.
pub struct Timer {
    started_ms: u64,
    in_worker: bool,
}

impl Timer {
    /// `in_worker`: the call runs in the Worker (stateless or from a lease), not in an object.
    pub fn start(in_worker: bool) -> Timer {
        if in_worker {
            RUNNING.with(|r| r.set(r.get() + 1));
        }
        Timer { started_ms: now_ms(), in_worker }
    }

    /// Counts a finished call of a configured tool; `None`: it has no outcome to count
    /// (cancelled, deferred, a resource read). `object`: the environment of the Durable Object
    /// the call ran in; `None` in the Worker.
    pub fn finish(self, server: &Server, call: &PendingCall, outcome: Option<Outcome>, object: Option<&Env>) {
        if let (CallKind::Tool(tool), Some(outcome)) = (&call.kind, outcome) {
            record(server, tool, outcome, now_ms().saturating_sub(self.started_ms), object);
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        if self.in_worker {
            RUNNING.with(|r| r.set(r.get().saturating_sub(1)));
        }
    }
}

/// Counts one call: memory only, unless an object must start its flush task.
fn record(server: &Server, tool: &str, outcome: Outcome, latency_ms: u64, object: Option<&Env>) {
    let Some(settings) = settings() else { return };
    PENDING.with(|p| p.borrow_mut().record(&server.name, tool, outcome, latency_ms, now_ms()));
    if settings.analytics_engine.is_some() {
        POINTS.with(|p| p.borrow_mut().push(DataPoint::of(&server.name, tool, outcome, latency_ms)));
    }
    if let Some(env) = object {
        write_points(env, &settings);
        if !SCHEDULED.with(|s| s.replace(true)) {
            wasm_bindgen_futures::spawn_local(flush_task(env.clone(), None));
        }
    }
}

/// A `tools/call` of a configured tool that dispatch refuses for its arguments counts as
/// `validation`; everything else about a call is counted when it finishes (`Timer`). Applied
/// around the dispatch, by its caller: `watch` the message before it goes to dispatch (by
/// value), then `count` what dispatch made of it.
pub struct Refusal {
    tool: Option<String>,
}

impl Refusal {
    pub fn watch(server: &Server, principal: &crate::auth::Principal, message: &Parsed) -> Refusal {
        Refusal { tool: settings().and_then(|_| called_tool(server, principal, message)) }
    }

    /// `object`: the environment of the Durable Object the message was dispatched in; `None`
    /// in the Worker.
    pub fn count(self, server: &Server, action: &Action, object: Option<&Env>) {
        if let (Some(tool), Action::Reply(reply)) = (self.tool, action) {
            if crate::health::refused(reply) {
                record(server, &tool, Outcome::Validation, 0, object);
            }
        }
    }
}

/// The configured tool a `tools/call` names, directly or through catalog mode's `call_tool`,
/// if the caller may use it. Names that are not configured are never counted: anyone could
/// fill the figures with made-up ones.
fn called_tool(server: &Server, principal: &crate::auth::Principal, message: &Parsed) -> Option<String> {
    let Ok(Message::Request(req)) = message else { return None };
    if req.method != Method::ToolsCall {
        return None;
    }
    let params = req.params.as_ref()?;
    let mut name = params.get("name")?.as_str()?;
    if server.catalog_index().is_some() && crate::tools::meta::MetaTool::named(name) == Some(crate::tools::meta::MetaTool::Call) {
        name = params.pointer("/arguments/name")?.as_str()?;
    }
    server.tool(name).filter(|t| principal.may(&t.roles)).map(|t| t.name.clone())
}

/// At the end of a Worker's fetch: writes its Analytics Engine data points, and starts a flush
/// task through `waitUntil` when figures wait (or calls still run) and none is due.
pub fn after_request(env: &Env, ctx: &Context) {
    let Some(settings) = settings() else { return };
    write_points(env, &settings);
    let waiting = !PENDING.with(|p| p.borrow().is_empty()) || RUNNING.with(Cell::get) > 0;
    if waiting && !SCHEDULED.with(|s| s.replace(true)) {
        ctx.wait_until(flush_task(env.clone(), Some(WORKER_BUDGET_MS)));
    }
}

/// Sleeps, flushes, and goes on while there is more (within `budget_ms`, in the Worker) and no
/// other task took over.
async fn flush_task(env: Env, budget_ms: Option<u64>) {
    let started = now_ms();
    loop {
        Delay::from(Duration::from_millis(FLUSH_MS)).await;
        // From here on, a new call starts the next task: nothing is left behind unscheduled.
        SCHEDULED.with(|s| s.set(false));
        if let Some(settings) = settings() {
            write_points(&env, &settings);
        }
        let batch = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
        if !batch.is_empty() {
            if let Err(error) = send(&env, &batch).await {
                worker::console_error!("{}", crate::edge::redaction::line(format!("health: the figures could not be sent to the {OBJECT} object: {}", error.message())));
                // Kept for the next flush; pruning bounds what a lasting failure can hold.
                PENDING.with(|p| {
                    let mut pending = p.borrow_mut();
                    pending.merge(&batch);
                    pending.prune(now_ms());
                });
            }
        }
        let more = RUNNING.with(Cell::get) > 0 || !PENDING.with(|p| p.borrow().is_empty());
        let within = budget_ms.is_none_or(|budget| now_ms().saturating_sub(started) + FLUSH_MS <= budget);
        if !more || !within || SCHEDULED.with(|s| s.replace(true)) {
            return;
        }
    }
}

async fn send(env: &Env, batch: &Window) -> Result<(), Error> {
    let body = serde_json::to_string(batch).map_err(|e| Error::Internal(e.to_string()))?;
    let reply = crate::edge::object::registry::call(env, OBJECT, Op::HealthFlush, 0, None, body).await?;
    match reply.status_code() {
        204 => Ok(()),
        status => Err(Error::Internal(format!("the {OBJECT} object answered {status}"))),
    }
}

/// Writes the waiting data points to the configured Analytics Engine binding. `writeDataPoint`
/// only queues the point: the runtime sends it after the response, so nothing waits.
fn write_points(env: &Env, settings: &HealthSettings) {
    let Some(binding) = &settings.analytics_engine else { return };
    let points = POINTS.with(|p| std::mem::take(&mut *p.borrow_mut()));
    if points.is_empty() {
        return;
    }
    let written = env.analytics_engine(binding).and_then(|dataset| {
        points.iter().try_for_each(|p| {
            let point = worker::AnalyticsEngineDataPointBuilder::new().indexes([p.index.as_str()]).blobs(p.blobs.iter().map(String::as_str)).doubles(p.doubles).build();
            dataset.write_data_point(&point)
        })
    });
    if let Err(e) = written {
        if !WRITE_FAILED.with(|f| f.replace(true)) {
            worker::console_error!("{}", crate::edge::redaction::line(format!("health: console.health.analyticsEngine names the binding {binding}, which cannot be written: {e}")));
        }
    }
}

/// The last hour's figures: the `health` object's window (one hop), with this isolate's own
/// figures not yet sent, for the tools still configured.
pub async fn figures(env: &Env, catalog: &Catalog, now_ms: u64) -> Result<HealthView, Error> {
    let mut reply = crate::edge::object::registry::call(env, OBJECT, Op::HealthRead, 0, None, String::new()).await?;
    if reply.status_code() != 200 {
        return Err(Error::Internal(format!("the {OBJECT} object answered {}", reply.status_code())));
    }
    let mut window: Window = serde_json::from_slice(&reply.bytes().await?).map_err(|e| Error::Internal(format!("the {OBJECT} object's figures: {e}")))?;
    PENDING.with(|p| window.merge(&p.borrow()));
    let mut view = HealthView::of(&window, now_ms);
    view.retain(|server, tool| catalog.servers.iter().any(|s| s.name == server && s.tool(tool).is_some()));
    Ok(view)
}
