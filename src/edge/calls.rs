//! Carries out one pending call: the upstream fetch, its streamed progress and logs, and the
//! round trips to the client when the upstream asks for input (sampling, elicitation).

use std::sync::Arc;
use std::time::Duration;

use futures::future::{select, Either};
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use serde_json::Value;
use worker::Delay;

use crate::catalog::Server;
use crate::dispatch::{self, Action, CallKind, PendingCall};
use crate::edge::context::{ask, CallContext, Cancels};
use crate::edge::deferred::{self, Home};
use crate::edge::health;
use crate::edge::streams::Outlet;
use crate::edge::upstream::{self, ToolReading};
use crate::error::Error;
use crate::health::Outcome;
use crate::jsonrpc;
use crate::method::Method;
use crate::negotiate::at_least;
use crate::redact::Redactor;
use crate::upstream::reply::{self, error_result};
use crate::upstream::stream::{follow_up_body, Event, InputAsk, LineReader};

/// Refuses, each with its own error, the calls beyond `limits.maxCallsInFlight` at once
/// (counting those already running); the metrics count each as `rate_limited`. `object`: the
/// environment of the Durable Object the calls run in; `None` in the Worker.
pub fn admit(cancels: &Cancels, (server, principal): (&Server, &str), object: Option<&worker::Env>, actions: &mut [Action]) {
    let max = server.limits.max_calls_in_flight;
    let mut in_flight = cancels.borrow().len();
    for action in actions {
        if let Action::Call(call) = action {
            if in_flight >= max {
                health::rate_limited(server, call, principal, object);
                let busy = Error::Busy(format!("at most {max} calls may run at once in a session; wait for one to finish"));
                *action = Action::Reply(jsonrpc::failure(&call.id, &busy));
            } else {
                in_flight += 1;
            }
        }
    }
}

/// How many input round trips one call may make before it is stopped.
const MAX_ROUNDS: usize = 8;

/// Replies in request order, with the calls run concurrently: a buffered JSON answer.
pub async fn collect(ctx: &CallContext<'_>, actions: Vec<Action>) -> Vec<String> {
    let replies = futures::future::join_all(actions.into_iter().map(|action| async move {
        match action {
            Action::Reply(text) => Some(text),
            Action::Call(call) => complete(ctx, &call).await,
            Action::Task(request) => Some(elsewhere(&request.id)),
            Action::Nothing => None,
        }
    }))
    .await;
    replies.into_iter().flatten().collect()
}

/// A task request that reached a path without the session's object, where tasks are kept
/// (the session's object turns them into replies before it runs the rest).
fn elsewhere(id: &serde_json::Value) -> String {
    jsonrpc::failure(id, &crate::error::Error::Internal("tasks are kept by the session's object, which this request did not reach".into()))
}

/// Writes each reply to `out` as soon as it is ready, then finishes the outlet. A reply the
/// outlet cannot carry (its client left, and cannot resume the stream) goes to the session's
/// outbox, for the client's next stream.
pub async fn deliver(ctx: &CallContext<'_>, out: &Outlet, actions: Vec<Action>) {
    let mut pending = FuturesUnordered::new();
    for action in actions {
        match action {
            Action::Reply(text) => send_or_keep(ctx.home, ctx.server, out, text, 0).await,
            Action::Call(call) => pending.push(async move { (complete(ctx, &call).await, call) }),
            Action::Task(request) => send_or_keep(ctx.home, ctx.server, out, elsewhere(&request.id), 0).await,
            Action::Nothing => {}
        }
    }
    while let Some((reply, call)) = pending.next().await {
        if let Some(reply) = reply {
            send_or_keep(ctx.home, ctx.server, out, reply, pending_timeout(ctx.server, &call)).await;
        }
        // Written, kept, or cancelled: a deferred call's kept result is done with.
        if let Some(home) = ctx.home {
            home.delivered(&call.id).await;
        }
    }
    out.finish().await;
}

/// Sends a reply on `out`, or keeps it in the session's outbox when `out` cannot carry it; a
/// deferred call's reply is kept its `pendingTimeoutMs` longer (`waits`). Replies kept earlier go
/// first: only now is it known that the client still reads this stream (a client that drops a
/// stream before its reply leaves them kept). Requests served without the session's object
/// (stateless ones, leases) have no outbox: they make no deferred calls.
pub async fn send_or_keep(home: Option<&Home>, server: &Server, out: &Outlet, reply: String, waits: u64) {
    // Nothing goes out before the client is known to read this stream (as well as it can be).
    if out.probe(waits > 0).await {
        if let Some(home) = home {
            for (key, kept) in home.outbox.take().await {
                if !out.send(&kept.message).await {
                    home.outbox.put_back(&key, &kept).await;
                }
            }
        }
        if out.send(&reply).await {
            return;
        }
    }
    if let Some(home) = home {
        let kept = crate::outbox::Kept::new(crate::edge::redaction::seal(reply), crate::edge::now_ms(), waits, server.idle_timeout_ms);
        home.outbox.keep(&kept).await;
    }
}

/// How long a call's result may take to arrive: a deferred tool's `pendingTimeoutMs`, else 0.
pub fn pending_timeout(server: &Server, call: &PendingCall) -> u64 {
    server.tool(call.label()).and_then(|t| t.deferral).map_or(0, |(_, ms)| ms)
}

/// Runs the call to its end, or to the context's deadline, and returns its JSON-RPC reply;
/// `None` when the client cancelled it, which gets no reply.
pub async fn complete(ctx: &CallContext<'_>, call: &PendingCall) -> Option<String> {
    // A connection this isolate holds no token of: found, or the user asked to connect first.
    if call.connection.as_ref().is_some_and(|c| c.token.is_none()) {
        return match crate::edge::apart(crate::edge::connections::call::ready(ctx, call)).await {
            Ok(ready) => Box::pin(complete(ctx, &ready)).await,
            Err(reply) => Some(reply),
        };
    }
    // The server's `rateLimits` wrap the call: taken before it runs, its slots given back after.
    // Boxed: its state machine stays out of the call's, which every path awaits.
    let held = match crate::edge::apart(crate::edge::limits::admit(ctx.server, (&ctx.session.principal, ctx.session.client.as_deref()), call)).await {
        Ok(held) => held,
        Err(error) => {
            if let Error::Limited(refused) = &error {
                health::rate_limited(ctx.server, call, &ctx.session.principal, ctx.home.map(|h| &h.env));
                let detail = format!("{} refused; retry after {} ms", call.label(), refused.retry_after_ms);
                crate::edge::audit::refused((&ctx.session.principal, &ctx.server.name), crate::audit::Action::LimitRefused, &refused.limit, detail);
            }
            return Some(jsonrpc::failure(&call.id, &error));
        }
    };
    let reply = limited(ctx, call).await;
    held.release().await;
    reply
}

/// `complete`, boxed: what a program's calls are carried out with (`code::execute`).
fn complete_boxed<'c, 'a>(ctx: &'c CallContext<'a>, call: &'c PendingCall) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<String>> + 'c>> {
    Box::pin(complete(ctx, call))
}

async fn limited(ctx: &CallContext<'_>, call: &PendingCall) -> Option<String> {
    // In an object, a traced call has a span of its own, the hop's (`telemetry::hop`), and runs
    // as its copy whose upstream request is the span's child. One await of the call either way:
    // its state machine is large, and two would be compiled twice.
    let hop = match ctx.home {
        Some(_) => crate::edge::telemetry::hop(call, ctx.session, ctx.server.tool(call.label())),
        None => None,
    };
    let (mut span, traced) = hop.map_or((None, None), |(span, traced)| (Some(span), Some(traced)));
    // A task's run is this span: the trace of the request that made the task goes on in it.
    if let (Some(span), Some((task, _))) = (span.as_mut(), ctx.home.and_then(|h| h.task.as_ref())) {
        span.set(crate::trace::names::MCP_EDGE_TASK_ID, task.clone());
    }
    let running = traced.as_ref().unwrap_or(call);
    let reply = complete_within(ctx, running).await;
    let tool = ctx.server.tool(call.label());
    match (span, ctx.home) {
        (Some(span), home) => {
            crate::edge::telemetry::hop_ended(span, running, reply.as_deref(), tool);
            if let Some(home) = home {
                crate::edge::telemetry::after_object_work(&home.env);
            }
        }
        // In the Worker, a buffered reply's outcome goes on its request's server span.
        (None, None) if ctx.out.is_none() => {
            if let Some(reply) = &reply {
                crate::edge::telemetry::worker_call_ended(call, reply, tool);
            }
        }
        (None, _) => {}
    }
    reply
}

async fn complete_within(ctx: &CallContext<'_>, call: &PendingCall) -> Option<String> {
    // A call's latency and outcome count for the health figures and the metrics; a cancelled
    // one for the metrics only.
    let timer = health::Timer::start(ctx.home.is_none());
    let measured = health::Measured::default();
    let object = ctx.home.map(|h| &h.env);
    let principal = ctx.session.principal.as_str();
    let counted = |(reply, outcome): (String, Option<Outcome>), timer: health::Timer| {
        let ended = timer.finish(ctx.server, call, principal, (outcome, &measured), object);
        crate::edge::telemetry::call_line(ctx.server, ctx.session, call, ended, measured.upstream_ms.get());
        reply
    };
    let Some(cancels) = ctx.cancels else {
        return Some(counted(bounded(ctx, call, &measured).await, timer));
    };
    let key = call.id.to_string();
    let mut resolve = None;
    let cancelled = js_sys::Promise::new(&mut |r, _| resolve = Some(r));
    if let Some(resolve) = resolve {
        cancels.borrow_mut().insert(key.clone(), resolve);
    }
    let reply = match select(Box::pin(bounded(ctx, call, &measured)), wasm_bindgen_futures::JsFuture::from(cancelled)).await {
        Either::Left((ended, _)) => Some(counted(ended, timer)),
        // Dropping the call's future drops its fetch, whose guard aborts it.
        Either::Right(_) => {
            let ended = timer.cancelled(ctx.server, call, principal, &measured, object);
            crate::edge::telemetry::call_line(ctx.server, ctx.session, call, ended, measured.upstream_ms.get());
            None
        }
    };
    // Once the call is over, nothing may resolve its dropped promise.
    cancels.borrow_mut().remove(&key);
    reply
}

/// The call's reply, and its outcome for the health figures (`None`: not counted).
async fn bounded(ctx: &CallContext<'_>, call: &PendingCall, measured: &health::Measured) -> (String, Option<Outcome>) {
    let Some(timeout_ms) = ctx.deadline_ms else {
        return run(ctx, call, measured).await;
    };
    // A call that cannot wait for the client is one upstream exchange, which its own timeout
    // ends by the deadline (the default tool timeout equals the default collection timeout):
    // a second timer would only race the first.
    if ctx.inputs.is_none() && call.http.timeout_ms <= timeout_ms {
        return run(ctx, call, measured).await;
    }
    match select(Box::pin(run(ctx, call, measured)), Delay::from(Duration::from_millis(timeout_ms))).await {
        Either::Left((reply, _)) => reply,
        Either::Right(_) => (jsonrpc::failure(&call.id, &Error::Internal(format!("the request did not finish within {timeout_ms} ms"))), Some(Outcome::Timeout)),
    }
}

/// The call, wrapped in its redaction: the deployment's secrets are redacted wherever its reply
/// and its messages leave (`edge::redaction`), and the caller's own credentials (a forwarded
/// `_meta` credential, the caller's upstream token), which only this call knows, are redacted
/// here, from its reply and from every message it sends on its stream. Whatever the call quotes
/// and cuts is redacted with both first.
async fn run(ctx: &CallContext<'_>, call: &PendingCall, measured: &health::Measured) -> (String, Option<Outcome>) {
    let (reply, outcome) = redacted(ctx, call, measured).await;
    // An upstream that refuses a connection's token: refreshed once, and the call made again.
    if outcome == Some(Outcome::Upstream(401)) {
        match crate::edge::apart(crate::edge::connections::call::refreshed(ctx, call)).await {
            Some(Ok(again)) => return Box::pin(redacted(ctx, &again, measured)).await,
            Some(Err(reply)) => return (reply, outcome),
            None => {}
        }
    }
    (reply, outcome)
}

async fn redacted(ctx: &CallContext<'_>, call: &PendingCall, measured: &health::Measured) -> (String, Option<Outcome>) {
    let (secrets, own) = crate::edge::redaction::for_call(call);
    if !own {
        return run_within(ctx, call, &secrets, measured).await;
    }
    let out = ctx.out.map(|out| Outlet::Call { to: Box::new(out.clone()), secrets: secrets.clone() });
    let ctx = CallContext { out: out.as_ref(), ..*ctx };
    let (reply, outcome) = run_within(&ctx, call, &secrets, measured).await;
    (secrets.redact_owned(reply), outcome)
}

/// `measured`: where the upstream exchanges' time and an error result are noted, for the
/// metrics.
async fn run_within(ctx: &CallContext<'_>, call: &PendingCall, secrets: &Arc<Redactor>, measured: &health::Measured) -> (String, Option<Outcome>) {
    // A resource or prompt of an upstream MCP server: its answer as it gave it.
    if let CallKind::Upstream { source, method, params, .. } = &call.kind {
        let (answer, _) = crate::edge::mcp::call::forward(ctx, call, *source, *method, params, secrets).await;
        let offered = |e: &serde_json::Value| !(*method == Method::CompletionComplete && e.get("code").and_then(serde_json::Value::as_i64) == Some(-32601));
        let reply = match answer.or_else(|e| if offered(&e) { Err(e) } else { Ok(crate::protocol::completion::nothing()) }) {
            // 2026-07-28: what the upstream asks, as an `InputRequiredResult` (`mcp::call`).
            Ok(result) if result.get("resultType").and_then(serde_json::Value::as_str) == Some("input_required") => jsonrpc::success(&call.id, result),
            Ok(mut result) => {
                if let (Method::ResourcesRead, Some(up)) = (*method, ctx.server.upstreams.get(*source)) {
                    crate::apps::rename_contents(&up.name, &mut result);
                }
                jsonrpc::success(&call.id, dispatch::decorate(ctx.server, ctx.session, *method, result))
            }
            Err(error) => serde_json::json!({"jsonrpc": "2.0", "id": call.id, "error": error}).to_string(),
        };
        return (reply, None);
    }
    let name = match &call.kind {
        CallKind::Tool(name) => name.as_str(),
        CallKind::Program(_) => call.label(),
        _ => {
            let upstream = upstream::perform(&call.http, ctx.server.max_reply_bytes).await;
            return (dispatch::finish(ctx.server, ctx.session, call, &upstream, secrets), None);
        }
    };
    let tool = ctx.server.tool(name);
    let plan = ctx.server.reply_plan(name);
    let structured = at_least(&ctx.session.protocol_version, "2025-06-18");
    let finished = |result: Value| {
        measured.is_error.set(result.get("isError").and_then(Value::as_bool) == Some(true));
        jsonrpc::success(&call.id, dispatch::decorate(ctx.server, ctx.session, Method::ToolsCall, reply::finalize(result, &plan, structured)))
    };
    // Code mode's program: its own isolate, its calls each carried out as a call of the caller's.
    if let CallKind::Program(program) = &call.kind {
        return (finished(crate::edge::apart(crate::edge::code::execute(ctx, call, program, complete_boxed)).await), Some(Outcome::Ok));
    }
    // An upstream MCP server's tool: its own session, its own messages.
    if let Some(target) = tool.and_then(|t| t.mcp.as_ref()) {
        let began = crate::edge::now_ms();
        let (answer, outcome) = crate::edge::mcp::call::run(ctx, call, target, secrets).await;
        measured.upstream_since(began);
        return (match answer {
            crate::edge::mcp::call::Answer::Result(result) => finished(result),
            // 2026-07-28: an `InputRequiredResult`, or why the client cannot answer it, as it is.
            crate::edge::mcp::call::Answer::AsIs(Ok(asks)) => jsonrpc::success(&call.id, asks),
            crate::edge::mcp::call::Answer::AsIs(Err(error)) => jsonrpc::failure(&call.id, &error),
        }, Some(outcome));
    }
    // Deferred calls are not counted: their upstream answers elsewhere (`crate::health`).
    if let (Some(tool), Some((deferral, timeout_ms))) = (tool, tool.and_then(|t| t.deferral)) {
        return (finished(match ctx.home {
            // Run as a task, the result is waited for as long as the task is kept: a workflow
            // longer than `pendingTimeoutMs` needs no tuning to be a task.
            Some(home) => {
                let timeout_ms = home.task.as_ref().map_or(timeout_ms, |(_, until)| until.saturating_sub(crate::edge::now_ms()).max(timeout_ms));
                deferred::run(home, call, tool, deferral, timeout_ms).await
            }
            None => error_result(format!("The tool {name:?} is {}, which needs a session.", deferral.name())),
        }), None);
    }
    // A tool whose results are kept: a fresh one answers, a stale one is revalidated.
    // (One path to `finished` for all three: each of its uses is compiled in full.)
    let kept = crate::edge::apart(crate::edge::results_cache::Kept::open(ctx, name, &call.arguments, &call.http)).await;
    let mut fresh = kept.as_ref().and_then(crate::edge::results_cache::Kept::fresh);
    let mut http = kept.as_ref().map_or_else(|| call.http.clone(), |k| k.request(&call.http));
    let mut last = Outcome::Ok;
    for round in 0..MAX_ROUNDS {
        let reader = LineReader::new(false, call.progress_token.clone(), ctx.session.log_level.clone(), secrets.clone());
        let span = ctx.home.and(call.http.trace.as_ref()).filter(|c| c.sampled()).map(|c| c.span_id);
        let hit = fresh.take();
        // Only a first answer from the upstream is kept: one after the client's input depends on it.
        let kept = kept.as_ref().filter(|_| round == 0 && hit.is_none());
        let reading = ToolReading { plan: &plan, out: ctx.out, reader: if ctx.progress_update { reader.with_progress_update() } else { reader }, secrets, span, etag: kept.map(|k| &k.etag) };
        let (event, outcome) = match hit {
            Some(hit) => (Event::Result(hit), Outcome::Ok),
            None => {
                let began = crate::edge::now_ms();
                let performed = upstream::perform_tool(&http, reading).await;
                measured.upstream_since(began);
                performed
            }
        };
        last = outcome;
        match event {
            // 2026-07-28: no requests to the client; the result asks, and the retry answers.
            Event::Input(input) if dispatch::stateless_revision(ctx.session) => {
                let Some(binding) = &call.mrtr else {
                    return (finished(error_result(format!("This tool asks the client for input, which needs the {} secret to sign the request state.", crate::signing::SIGNING_KEY))), Some(outcome));
                };
                return match crate::protocol::mrtr::input_required(binding, &input, &ctx.session.client_capabilities, crate::edge::now_ms()) {
                    Ok(result) => (jsonrpc::success(&call.id, result), Some(outcome)),
                    Err(error) => (jsonrpc::failure(&call.id, &error), Some(Outcome::Client)),
                };
            }
            Event::Input(input) => match ask_all(ctx, &input, http.timeout_ms).await {
                Ok(answers) => http = call.http.follow_up(follow_up_body(&call.arguments, &input, &answers)),
                Err(why) => return (finished(error_result(why)), Some(Outcome::Client)),
            },
            Event::Result(result) => {
                let (result, outcome) = match kept {
                    Some(kept) => crate::edge::apart(kept.after(reply::finalize(result, &plan, true), outcome)).await,
                    None => (result, outcome),
                };
                return (finished(result), Some(outcome));
            }
            Event::Error(error) => return (jsonrpc::failure_object(&call.id, error), Some(outcome)),
            Event::Notify(_) => {}
        }
    }
    (finished(error_result(format!("The upstream asked for input more than {MAX_ROUNDS} times."))), Some(last))
}

/// Asks the client each request in turn; the answers by key.
async fn ask_all(ctx: &CallContext<'_>, input: &InputAsk, timeout_ms: u64) -> Result<Vec<(String, Result<Value, Value>)>, String> {
    let mut answers = Vec::new();
    for request in &input.requests {
        answers.push((request.key.clone(), ask(ctx, request.method, request.params.clone(), timeout_ms).await?));
    }
    Ok(answers)
}
