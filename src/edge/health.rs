//! The health figures and the cumulative metrics at the edge: each call's outcome is counted in
//! this isolate's window and totals, in memory, with no I/O on the call's path; a background
//! flush sends both to the `health` object (`object::health`) at most once per `FLUSH_MS`, and
//! `figures` and `totals` read them back when someone looks. Deployment events (`count`) and
//! gauge changes (`change`, `upstream`) ride the same flush.
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
use crate::metrics::{Call, Counter, Gauge, Totals};

/// How long figures wait in an isolate before they are sent: one hop per isolate per 5 s at most.
pub const FLUSH_MS: u64 = 5_000;
/// How long a Worker's flush task may keep flushing after its request: `waitUntil` gives a
/// request 30 s.
const WORKER_BUDGET_MS: u64 = 25_000;
/// The one object that keeps the figures (an instance of the sessions class).
pub const OBJECT: &str = "health";

/// What an isolate sends the `health` object: the last hour's figures and the totals since the
/// last flush. On the wire, the window's JSON, a line feed, and the totals' JSON (JSON text has
/// no raw line feed, and a batch of a build before the totals is its window alone).
#[derive(Debug, Default)]
pub struct Batch {
    pub window: Window,
    pub totals: Totals,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.window.is_empty() && self.totals.is_empty()
    }

    fn to_body(&self) -> Result<String, Error> {
        let json = |e: serde_json::Error| Error::Internal(e.to_string());
        Ok(format!("{}\n{}", serde_json::to_string(&self.window).map_err(json)?, serde_json::to_string(&self.totals.0).map_err(json)?))
    }

    pub fn of_body(body: &[u8]) -> Result<Batch, Error> {
        let bad = |e: serde_json::Error| Error::InvalidRequest(format!("health figures: {e}"));
        let (window, totals) = match body.iter().position(|b| *b == b'\n') {
            Some(at) => (body.get(..at).unwrap_or_default(), body.get(at + 1..).unwrap_or_default()),
            None => (body, &b""[..]),
        };
        let totals = if totals.is_empty() { Totals::default() } else { Totals(serde_json::from_slice(totals).map_err(bad)?) };
        Ok(Batch { window: serde_json::from_slice(window).map_err(bad)?, totals })
    }
}

thread_local! {
    /// Counted since the last flush.
    static PENDING: RefCell<Batch> = RefCell::default();
    /// Analytics Engine data points not yet written: the Worker writes them when its request
    /// ends, where it has the environment.
    static POINTS: RefCell<Vec<DataPoint>> = const { RefCell::new(Vec::new()) };
    /// Whether a flush is due already.
    static SCHEDULED: Cell<bool> = const { Cell::new(false) };
    /// Calls running in the Worker, whose figures a flush task should wait for.
    static RUNNING: Cell<u32> = const { Cell::new(0) };
    /// Whether a failed Analytics Engine write was logged already (once per isolate).
    static WRITE_FAILED: Cell<bool> = const { Cell::new(false) };
    /// In a Durable Object's isolate: its environment, with which a gauge's change (a stream
    /// dropped, say, where no environment is at hand) starts the flush task.
    static HOME: RefCell<Option<Env>> = const { RefCell::new(None) };
}

/// Called when a Durable Object starts: gauge changes in this isolate flush with `env`.
pub fn home(env: &Env) {
    HOME.with(|h| *h.borrow_mut() = Some(env.clone()));
}

/// What is counted: the last hour's figures (`console.health`), and the totals that `/metrics`
/// and the OTLP export read (with the figures, or for a scrape token or a collector).
struct Counting {
    health: Option<HealthSettings>,
    principal_label: bool,
}

fn counting() -> Option<Counting> {
    // The configured catalog: the settings are top-level, which upstream lists never change.
    let catalog = crate::edge::configured::base_catalog().ok()?;
    let health = Some(catalog.health.clone()).filter(|h| h.enabled);
    // Without the health figures, the totals are still counted for whoever reads them: a
    // scraper with its own token, or the OTLP export.
    let metrics = &catalog.telemetry.metrics;
    if health.is_none() && metrics.scrape_token_secret.is_none() && catalog.telemetry.otlp.is_none() {
        return None;
    }
    Some(Counting { health, principal_label: metrics.principal_label })
}

fn settings() -> Option<HealthSettings> {
    counting().and_then(|c| c.health)
}

/// What a call measured on its way: its upstream exchanges' time, and whether its result is an
/// error. Filled by `edge::calls` as the call runs.
#[derive(Default)]
pub struct Measured {
    pub upstream_ms: Cell<Option<u64>>,
    pub is_error: Cell<bool>,
}

impl Measured {
    /// Adds one upstream exchange that began at `began_ms`.
    pub fn upstream_since(&self, began_ms: u64) {
        let ms = now_ms().saturating_sub(began_ms);
        self.upstream_ms.set(Some(self.upstream_ms.get().unwrap_or(0) + ms));
    }
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
    /// (deferred, a resource read). `object`: the environment of the Durable Object the call ran
    /// in; `None` in the Worker.
    /// Returns how it ended, and when, for its log line.
    pub fn finish(self, server: &Server, call: &PendingCall, principal: &str, (outcome, measured): (Option<Outcome>, &Measured), object: Option<&Env>) -> Option<(crate::metrics::Outcome, u64)> {
        let (CallKind::Tool(tool), Some(outcome)) = (&call.kind, outcome) else { return None };
        let ms = now_ms().saturating_sub(self.started_ms);
        let metric = crate::metrics::Outcome::of(outcome, measured.is_error.get());
        record(server, tool, Some(outcome), Ended { principal, outcome: metric, duration_ms: Some(ms), upstream_ms: measured.upstream_ms.get() }, object);
        Some((metric, ms))
    }

    /// Counts a call the client cancelled: no health figure (it has no outcome), a metric.
    pub fn cancelled(self, server: &Server, call: &PendingCall, principal: &str, measured: &Measured, object: Option<&Env>) -> Option<(crate::metrics::Outcome, u64)> {
        let CallKind::Tool(tool) = &call.kind else { return None };
        let ms = now_ms().saturating_sub(self.started_ms);
        record(server, tool, None, Ended { principal, outcome: crate::metrics::Outcome::Cancelled, duration_ms: Some(ms), upstream_ms: measured.upstream_ms.get() }, object);
        Some((crate::metrics::Outcome::Cancelled, ms))
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        if self.in_worker {
            RUNNING.with(|r| r.set(r.get().saturating_sub(1)));
        }
    }
}

/// How a call ended, as the metrics count it.
struct Ended<'a> {
    principal: &'a str,
    outcome: crate::metrics::Outcome,
    duration_ms: Option<u64>,
    upstream_ms: Option<u64>,
}

/// Counts one call: memory only, unless an object must start its flush task. `outcome`: the
/// health figures' kind, `None` for what they do not count (cancelled, refused for who asked).
fn record(server: &Server, tool: &str, outcome: Option<Outcome>, ended: Ended<'_>, object: Option<&Env>) {
    let Some(counting) = counting() else { return };
    let latency_ms = ended.duration_ms.unwrap_or(0);
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if let (Some(_), Some(outcome)) = (&counting.health, outcome) {
            p.window.record(&server.name, tool, outcome, latency_ms, now_ms());
        }
        let principal = if counting.principal_label { ended.principal } else { "" };
        p.totals.record(&Call { server: &server.name, tool, principal, outcome: ended.outcome, duration_ms: ended.duration_ms, upstream_ms: ended.upstream_ms });
    });
    if let (Some(settings), Some(outcome)) = (&counting.health, outcome) {
        if settings.analytics_engine.is_some() {
            POINTS.with(|p| p.borrow_mut().push(DataPoint::of(&server.name, tool, outcome, latency_ms)));
        }
    }
    if let Some(env) = object {
        if let Some(settings) = &counting.health {
            write_points(env, settings);
        }
        schedule_in_object(env);
    }
}

/// In a Durable Object: starts the flush task unless one is due.
fn schedule_in_object(env: &Env) {
    if !SCHEDULED.with(|s| s.replace(true)) {
        wasm_bindgen_futures::spawn_local(flush_task(env.clone(), None));
    }
}

/// Counts `n` of a deployment event (an OAuth grant, a failed sign-in, dropped OTLP data):
/// memory only. `object`: the environment of the Durable Object it happened in, which starts
/// the flush; in the Worker, the end of the request does.
pub fn count(counter: Counter, n: u64, object: Option<&Env>) {
    if n == 0 || counting().is_none() {
        return;
    }
    PENDING.with(|p| p.borrow_mut().totals.count(counter, n));
    if let Some(env) = object {
        schedule_in_object(env);
    }
}

/// A gauge's change (+1 when a session, stream or task state begins, -1 when it ends):
/// memory only; in a Durable Object's isolate (`home`), it starts the flush task.
pub fn change(gauge: Gauge, delta: i64) {
    if delta == 0 || counting().is_none() {
        return;
    }
    PENDING.with(|p| p.borrow_mut().totals.change(gauge, delta));
    if let Some(env) = HOME.with(|h| h.borrow().clone()) {
        schedule_in_object(&env);
    }
}

/// A task's move from one state to another (`None`: it begins, or it is gone).
pub fn task_moved(from: Option<crate::tasks::Status>, to: Option<crate::tasks::Status>) {
    if from == to {
        return;
    }
    if let Some(gauge) = from.and_then(|s| Gauge::tasks(s.name())) {
        change(gauge, -1);
    }
    if let Some(gauge) = to.and_then(|s| Gauge::tasks(s.name())) {
        change(gauge, 1);
    }
}

/// An upstream MCP server's lists read (`up`) or not: memory only; the request's end flushes.
pub fn upstream(server: &str, upstream: &str, up: bool) {
    if counting().is_none() {
        return;
    }
    PENDING.with(|p| p.borrow_mut().totals.upstream(server, upstream, up, now_ms()));
}

/// A `tools/call` of a configured tool that dispatch refuses for its arguments counts as
/// `validation`; everything else about a call is counted when it finishes (`Timer`). Applied
/// around the dispatch, by its caller: `watch` the message before it goes to dispatch (by
/// value), then `count` what dispatch made of it.
///
/// A call of a configured tool the principal's roles or the server's access rules hide is
/// refused by dispatch as an unknown tool, and one whose arguments a rule refuses as invalid
/// arguments naming the rule; the metrics count both as `denied` (the health figures do not:
/// it says nothing of the upstream), and the audit log records them.
pub struct Refusal {
    tool: Option<String>,
}

impl Refusal {
    pub fn watch(server: &Server, message: &Parsed) -> Refusal {
        // Denials are audited whether or not calls are counted; without metrics or rules, a
        // call is not looked at twice.
        let looked = counting().is_some() || !server.policies.is_empty();
        Refusal { tool: looked.then(|| called_tool(server, message)).flatten() }
    }

    /// `object`: the environment of the Durable Object the message was dispatched in; `None`
    /// in the Worker. A denial is also an audit event. Whether the caller may see the tool is
    /// asked only of a refusal: a call that goes ahead does not evaluate the rules again.
    pub fn count(self, server: &Server, caller: &crate::auth::Principal, action: &Action, object: Option<&Env>) {
        let (Some(name), Action::Reply(reply)) = (self.tool, action) else { return };
        if !crate::health::refused(reply) {
            return;
        }
        let (tool, principal) = (name.as_str(), caller.id.as_str());
        let allowed = server.tool(tool).is_some_and(|t| server.gate(caller, crate::edge::now_ms()).sees(t));
        // Hidden by its roles or the access rules, or its arguments refused by a rule.
        if !allowed || crate::health::by_policy(reply) {
            record(server, tool, None, Ended { principal, outcome: crate::metrics::Outcome::Denied, duration_ms: None, upstream_ms: None }, object);
            let detail = if allowed { "its arguments were refused by a policy" } else { "the tool is hidden from the caller" };
            crate::edge::audit::refused((principal, &server.name), crate::audit::Action::PolicyDenied, tool, detail.to_string());
        } else {
            record(server, tool, Some(Outcome::Validation), Ended { principal, outcome: crate::metrics::Outcome::ToolError, duration_ms: Some(0), upstream_ms: None }, object);
        }
    }
}

/// The configured tool a `tools/call` names, directly or through catalog mode's `call_tool`,
/// and whether the caller may use it. Names that are not configured are never counted: anyone
/// could fill the figures with made-up ones.
fn called_tool(server: &Server, message: &Parsed) -> Option<String> {
    let Ok(Message::Request(req)) = message else { return None };
    if req.method != Method::ToolsCall {
        return None;
    }
    let params = req.params.as_ref()?;
    let mut name = params.get("name")?.as_str()?;
    if server.meta_tool(name).map(|(_, m)| m) == Some(crate::tools::meta::MetaTool::Call) {
        name = params.pointer("/arguments/name")?.as_str()?;
    }
    server.tool(name).map(|t| t.name.clone())
}

/// Counts a call a limit refused before it ran (`limits.maxCallsInFlight`) as `rate_limited`.
pub fn rate_limited(server: &Server, call: &PendingCall, principal: &str, object: Option<&Env>) {
    if let CallKind::Tool(tool) = &call.kind {
        record(server, tool, None, Ended { principal, outcome: crate::metrics::Outcome::RateLimited, duration_ms: None, upstream_ms: None }, object);
    }
}

/// At the end of a Worker's fetch: writes its Analytics Engine data points, and starts a flush
/// task through `waitUntil` when figures wait (or calls still run) and none is due.
pub fn after_request(env: &Env, ctx: &Context) {
    let Some(counting) = counting() else { return };
    take_drops();
    if let Some(settings) = &counting.health {
        write_points(env, settings);
    }
    let waiting = !PENDING.with(|p| p.borrow().is_empty()) || RUNNING.with(Cell::get) > 0;
    if waiting && !SCHEDULED.with(|s| s.replace(true)) {
        ctx.wait_until(flush_task(env.clone(), Some(WORKER_BUDGET_MS)));
    }
}

/// The OTLP spans this isolate dropped since the last look, counted.
fn take_drops() {
    let dropped = crate::edge::telemetry::take_dropped();
    if dropped > 0 {
        PENDING.with(|p| p.borrow_mut().totals.count(Counter::OtlpSpansDropped, dropped));
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
        take_drops();
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
                    pending.window.merge(&batch.window);
                    pending.window.prune(now_ms());
                    pending.totals.merge(&batch.totals);
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

async fn send(env: &Env, batch: &Batch) -> Result<(), Error> {
    let body = batch.to_body()?;
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
    PENDING.with(|p| window.merge(&p.borrow().window));
    let mut view = HealthView::of(&window, now_ms);
    view.retain(|server, tool| catalog.servers.iter().any(|s| s.name == server && s.tool(tool).is_some()));
    Ok(view)
}

/// The totals since the `health` object was created (one hop), with this isolate's own not yet
/// sent.
pub async fn totals(env: &Env) -> Result<Totals, Error> {
    let mut reply = crate::edge::object::registry::call(env, OBJECT, Op::MetricsRead, 0, None, String::new()).await?;
    if reply.status_code() != 200 {
        return Err(Error::Internal(format!("the {OBJECT} object answered {}", reply.status_code())));
    }
    let mut totals = Totals(serde_json::from_slice(&reply.bytes().await?).map_err(|e| Error::Internal(format!("the {OBJECT} object's totals: {e}")))?);
    PENDING.with(|p| totals.merge(&p.borrow().totals));
    Ok(totals)
}
