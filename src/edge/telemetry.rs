//! Spans at the edge: made with the isolate's clock and ids, queued in the isolate (bounded:
//! past `telemetry.traces.maxQueuedSpans` a span is dropped and counted), and sent to the OTLP
//! collector after the reply, never before it: through `waitUntil` at the end of a Worker's
//! fetch, and from a task in a Durable Object, which lives on after its requests.
//!
//! Tracing off (no `telemetry.otlp`) makes no span and reads no header: every function here
//! answers `None` at the cost of one look at the catalog.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::Duration;

use wasm_bindgen::JsCast;
use worker::{Delay, Env};

use crate::catalog::telemetry::{Otlp, Part, Telemetry};
use crate::catalog::Catalog;
use crate::edge::now_ms;
use crate::trace::otlp::Source;
use crate::trace::{Context, Ids, Kind, Span};

/// A batch sent at once at most: a collector takes far more, and a bounded body bounds the
/// time and memory one send costs.
const MAX_BATCH: usize = 512;
/// A send the collector has not answered in this long is abandoned, its spans counted dropped.
const SEND_TIMEOUT_MS: u64 = 10_000;
/// How long an isolate gathers spans before it sends them: under load, one send a second per
/// isolate rather than one per request (a send is a fetch, whose CPU a request would pay).
const GATHER_MS: u64 = 1_000;
/// How long a Worker's send task may go on after its request (`waitUntil` gives 30 s), waiting
/// for calls of a streamed reply that are still running.
const WORKER_BUDGET_MS: u64 = 25_000;

thread_local! {
    static IDS: RefCell<Option<Ids>> = const { RefCell::new(None) };
    static QUEUE: RefCell<Vec<Span>> = const { RefCell::new(Vec::new()) };
    /// Spans dropped (queue full, collector failing) and not yet counted in the metrics.
    static DROPPED: Cell<u64> = const { Cell::new(0) };
    /// A send task is running or due: the next span waits for it.
    static SENDING: Cell<bool> = const { Cell::new(false) };
    /// Whether a failed send was logged already (once per isolate).
    static FAILED_LOGGED: Cell<bool> = const { Cell::new(false) };
}

/// The served catalog, when it traces.
pub fn tracing() -> Option<Arc<Catalog>> {
    // The catalog as configured: `telemetry` is the deployment's, never an upstream server's.
    crate::edge::configured::base_catalog().ok().filter(|c| c.telemetry.tracing())
}

fn with_ids<T>(f: impl FnOnce(&mut Ids) -> T) -> T {
    IDS.with(|ids| {
        let mut ids = ids.borrow_mut();
        let ids = ids.get_or_insert_with(|| {
            let mut seed = [0u8; 8];
            // Without randomness the clock seeds: ids must differ, not be unguessable.
            if getrandom::fill(&mut seed).is_err() {
                seed = now_ms().to_le_bytes();
            }
            Ids::seeded(u64::from_le_bytes(seed))
        });
        f(ids)
    })
}

/// A span under `parent` (a remote caller's context, or one of ours), or the root of a new
/// trace, sampled by the configured ratio. Unsampled spans are made too, so their context
/// travels on with its flag off; they are never sent.
pub fn start(telemetry: &Telemetry, name: impl Into<String>, kind: Kind, parent: Option<&Context>) -> Span {
    let span_id = with_ids(Ids::span_id);
    let context = match parent {
        Some(parent) => parent.child(span_id),
        None => {
            let trace_id = with_ids(Ids::trace_id);
            let sampled = crate::trace::sampled(None, &trace_id, telemetry.sample_ratio);
            Context { trace_id, span_id, flags: u8::from(sampled), state: None }
        }
    };
    Span::start(name, kind, &context, parent.map(|p| p.span_id), now_ms())
}

/// A child of `parent` in the same trace, when tracing is on.
pub fn child(name: impl Into<String>, kind: Kind, parent: Option<&Context>) -> Option<Span> {
    let parent = parent?;
    let catalog = tracing()?;
    Some(start(&catalog.telemetry, name, kind, Some(parent)))
}

/// Ends `span` now and queues it for the collector, if it is sampled.
pub fn finish(mut span: Span) {
    if !span.sampled() {
        return;
    }
    span.end(now_ms());
    let Some(catalog) = tracing() else { return };
    QUEUE.with(|q| {
        let mut queue = q.borrow_mut();
        if queue.len() >= catalog.telemetry.max_queued_spans {
            DROPPED.with(|d| d.set(d.get() + 1));
        } else {
            queue.push(span);
        }
    });
}

/// Spans dropped since the last look, for the metrics: taken, so each is counted once.
pub fn take_dropped() -> u64 {
    DROPPED.with(|d| d.replace(0))
}

/// Whether calls still run in this isolate, whose spans a send task should wait for.
pub type Running = fn() -> bool;

/// At the end of a Worker's fetch: sends what is queued through `waitUntil`, and goes on while
/// calls of a streamed reply still run (`running`: the health figures count them).
pub fn after_request(env: &Env, ctx: &worker::Context, running: Running) {
    if tracing().is_none() || QUEUE.with(|q| q.borrow().is_empty()) && !running() {
        return;
    }
    if !SENDING.with(|s| s.replace(true)) {
        ctx.wait_until(send_task(env.clone(), Some((WORKER_BUDGET_MS, running))));
    }
}

/// In a Durable Object, after it queued spans: a task sends them shortly.
pub fn after_object_work(env: &Env) {
    if tracing().is_none() || QUEUE.with(|q| q.borrow().is_empty()) {
        return;
    }
    if !SENDING.with(|s| s.replace(true)) {
        wasm_bindgen_futures::spawn_local(send_task(env.clone(), None));
    }
}

/// Gathers spans for `GATHER_MS`, sends them, and (in the Worker, within `budget`) goes on
/// while calls still run or spans still come.
async fn send_task(env: Env, budget: Option<(u64, Running)>) {
    let started = now_ms();
    Delay::from(Duration::from_millis(GATHER_MS)).await;
    loop {
        while let Some(batch) = next_batch() {
            let Some(catalog) = tracing() else { break };
            let Some(otlp) = &catalog.telemetry.otlp else { break };
            let count = batch.len() as u64;
            if let Err(why) = send(&env, otlp, &catalog.telemetry, batch).await {
                DROPPED.with(|d| d.set(d.get() + count));
                if !FAILED_LOGGED.with(|f| f.replace(true)) {
                    worker::console_error!("{}", crate::edge::redaction::line(format!("telemetry: spans could not be sent to the collector: {why}; they are dropped and counted")));
                }
            }
        }
        let Some((budget_ms, running)) = budget else { break };
        let within = now_ms().saturating_sub(started) + GATHER_MS <= budget_ms;
        if !within || !running() && QUEUE.with(|q| q.borrow().is_empty()) {
            break;
        }
        Delay::from(Duration::from_millis(GATHER_MS)).await;
    }
    SENDING.with(|s| s.set(false));
    // A span queued after the last look and before the flag fell waits for the next request.
}

fn next_batch() -> Option<Vec<Span>> {
    QUEUE.with(|q| {
        let mut queue = q.borrow_mut();
        if queue.is_empty() {
            return None;
        }
        let take = queue.len().min(MAX_BATCH);
        Some(queue.drain(..take).collect())
    })
}

/// One batch to `{endpoint}/v1/traces`, in the configured encoding, redacted as it is encoded.
async fn send(env: &Env, otlp: &Otlp, telemetry: &Telemetry, spans: Vec<Span>) -> Result<(), String> {
    let source = Source::mcp_edge(&telemetry.service_name);
    let secrets = crate::edge::redaction::current();
    let body = match otlp.encoding {
        crate::catalog::telemetry::Encoding::Protobuf => js_sys::Uint8Array::from(crate::trace::otlp::protobuf(&source, &spans, &secrets).as_slice()).into(),
        crate::catalog::telemetry::Encoding::Json => wasm_bindgen::JsValue::from_str(&crate::trace::otlp::json(&source, &spans, &secrets)),
    };
    post(env, otlp, "/v1/traces", otlp.encoding.content_type(), body).await
}

/// POSTs an OTLP body of `content_type` to the collector, with the configured headers, within
/// `SEND_TIMEOUT_MS`.
pub async fn post(env: &Env, otlp: &Otlp, path: &str, content_type: &str, body: wasm_bindgen::JsValue) -> Result<(), String> {
    let text = |e: wasm_bindgen::JsValue| crate::edge::js_text(&e);
    let headers = web_sys::Headers::new().map_err(text)?;
    headers.set("content-type", content_type).map_err(text)?;
    for (name, parts) in &otlp.headers {
        let mut value = String::new();
        for part in parts {
            match part {
                Part::Text(t) => value.push_str(t),
                Part::Env(secret) => value.push_str(&crate::edge::secret(env, secret).ok_or_else(|| format!("the secret {secret} that header {name} names is not set"))?),
            }
        }
        headers.set(name, &value).map_err(text)?;
    }
    let controller = web_sys::AbortController::new().map_err(text)?;
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_headers(&headers);
    init.set_body(&body);
    init.set_signal(Some(&controller.signal()));
    let global: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
    let sent = wasm_bindgen_futures::JsFuture::from(global.fetch_with_str_and_init(&format!("{}{path}", otlp.endpoint), &init));
    let timeout = Delay::from(Duration::from_millis(SEND_TIMEOUT_MS));
    match futures::future::select(std::pin::pin!(sent), std::pin::pin!(timeout)).await {
        futures::future::Either::Left((Ok(response), _)) => {
            let response: web_sys::Response = response.unchecked_into();
            // The body is not needed; cancelling it frees the connection.
            if let Some(body) = response.body() {
                let _ = body.cancel();
            }
            match response.status() {
                200..=299 => Ok(()),
                status => Err(format!("the collector answered {status}")),
            }
        }
        futures::future::Either::Left((Err(e), _)) => Err(text(e)),
        futures::future::Either::Right(_) => {
            controller.abort();
            Err(format!("the collector did not answer within {SEND_TIMEOUT_MS} ms"))
        }
    }
}

/// The Worker's server span for a request, when tracing is on: named by HTTP's conventions
/// (`POST /mcp`) until the MCP message it carries names it (`describe_message`), and parented
/// on the request's `traceparent` header when it has a valid one.
pub fn server_span(req: &crate::edge::http::Incoming) -> Option<Span> {
    let catalog = tracing()?;
    let head = req.head();
    let parent = req.trace_headers();
    let mut span = start(&catalog.telemetry, head.method.as_str(), Kind::Server, parent.as_ref());
    span.set(crate::trace::names::HTTP_REQUEST_METHOD, head.method.as_str());
    span.set("url.path", head.path());
    Some(span)
}

/// The server span named and attributed after the MCP message the request carries. A valid
/// `traceparent` in the message's `_meta` is its parent (it wins over the header, which stays
/// as a link, as the MCP conventions ask).
pub fn describe_message(span: &mut Span, method: &str, params: Option<&serde_json::Value>, id: Option<&serde_json::Value>, version: Option<&str>) {
    if let Some(parent) = crate::trace::mcp::from_meta(params).filter(|p| span.parent != Some(p.span_id) || span.trace_id != p.trace_id) {
        // The header's context, when there was one, stays as a link.
        if let Some(header_parent) = span.parent {
            span.links.push(Context { trace_id: span.trace_id, span_id: header_parent, flags: span.flags, state: span.state.take() });
        }
        span.trace_id = parent.trace_id;
        span.parent = Some(parent.span_id);
        span.flags = parent.flags;
        span.state = parent.state;
    }
    crate::trace::mcp::describe(span, method, params, id);
    // The header names the version after initialize; initialize names the one it asks for.
    let asked = params.and_then(|p| p.get("protocolVersion")).and_then(serde_json::Value::as_str);
    if let Some(version) = version.or(asked) {
        span.set(crate::trace::names::MCP_PROTOCOL_VERSION, version);
    }
}

/// The response as it leaves, with the server span ended: its status, the session, the
/// outcome of a call the Worker ran. The log line gets the ids when the trace is sampled (an
/// unsampled one is in no backend to join).
pub fn served(mut span: Span, response: &worker::Response, log: &mut crate::edge::worker::log::RequestLog) {
    if !span.sampled() {
        return;
    }
    let status = response.status_code();
    take_ended(&mut span);
    span.set(crate::trace::names::HTTP_RESPONSE_STATUS_CODE, i64::from(status));
    if let Some(session) = &log.session_id {
        span.set(crate::trace::names::MCP_SESSION_ID, session.clone());
    }
    // A server span is in error for a 5xx; a 4xx is the client's (HTTP conventions). An MCP
    // error inside a 200 is marked by whoever read the reply.
    let mcp = span.get(crate::trace::names::MCP_METHOD_NAME).is_some();
    if (status >= 500 || mcp && status >= 400) && span.get(crate::trace::names::ERROR_TYPE).is_none() {
        span.fail(status.to_string(), log.error.clone().unwrap_or_default());
    }
    log.trace_id = Some(span.trace_id.hex());
    log.span_id = Some(span.span_id.hex());
    finish(span);
}

/// Makes the calls among `actions` children of `parent` (the server span), when traced.
pub fn adopt(actions: &mut [crate::dispatch::Action], parent: Option<&Context>) {
    let Some(parent) = parent else { return };
    for action in actions {
        if let crate::dispatch::Action::Call(call) = action {
            call.http.trace = Some(parent.clone());
        }
    }
}

/// A call's span in the session object, the hop from the Worker: a child of the server span,
/// named after the call (`session tools/call echo`), over the call's whole run there. Its call
/// is a copy whose upstream request is the span's child. `None` untraced, and in the Worker,
/// where the server span is the call's parent itself.
pub fn hop(call: &crate::dispatch::PendingCall, session: &crate::session::Session, tool: Option<&crate::tools::Tool>) -> Option<(Span, crate::dispatch::PendingCall)> {
    let parent = call.http.trace.as_ref().filter(|p| p.sampled())?;
    let catalog = tracing()?;
    use crate::dispatch::CallKind;
    let method = match &call.kind {
        CallKind::Tool(_) => crate::method::Method::ToolsCall,
        CallKind::Resource { .. } => crate::method::Method::ResourcesRead,
        CallKind::Upstream { method, .. } => *method,
        CallKind::Program(_) => crate::method::Method::ToolsCall,
    };
    let params = match &call.kind {
        CallKind::Tool(name) => serde_json::json!({"name": name}),
        CallKind::Resource { uri, .. } => serde_json::json!({"uri": uri}),
        CallKind::Upstream { params, .. } => params.clone(),
        CallKind::Program(_) => serde_json::json!({"name": call.label()}),
    };
    let mut span = start(&catalog.telemetry, String::new(), Kind::Internal, Some(parent));
    crate::trace::mcp::describe(&mut span, method.name(), Some(&params), Some(&call.id));
    span.name = format!("session {}", span.name);
    span.set(crate::trace::names::MCP_SESSION_ID, session.id.clone());
    span.set(crate::trace::names::MCP_PROTOCOL_VERSION, session.protocol_version.clone());
    if let Some(arguments) = opted_arguments(call, tool) {
        span.set(crate::trace::names::GEN_AI_TOOL_CALL_ARGUMENTS, arguments);
    }
    let mut traced = call.clone();
    traced.http.trace = Some(span.context());
    Some((span, traced))
}

/// Spans of calls still running, with the times their progress lines were forwarded: at most
/// `MAX_PROGRESS` events a span, and as many spans as calls run in an object at once.
const MAX_PROGRESS: usize = 100;

thread_local! {
    static PROGRESS: RefCell<Vec<(crate::trace::SpanId, Vec<u64>)>> = const { RefCell::new(Vec::new()) };
}

/// A progress line of the call under `span` went to the client: an event of its span.
pub fn progressed(span: crate::trace::SpanId) {
    let now = now_ms();
    PROGRESS.with(|p| {
        let mut progress = p.borrow_mut();
        match progress.iter_mut().find(|(s, _)| *s == span) {
            Some((_, times)) if times.len() < MAX_PROGRESS => times.push(now),
            Some(_) => {}
            None => progress.push((span, vec![now])),
        }
    });
}

/// The call's arguments, redacted as replies are, when its tool opts in (`trace.arguments`).
fn opted_arguments(call: &crate::dispatch::PendingCall, tool: Option<&crate::tools::Tool>) -> Option<String> {
    tool.filter(|t| t.trace.arguments)?;
    Some(crate::edge::redaction::for_call(call).0.redact_owned(call.arguments.to_string()))
}

/// The result its reply carries, redacted as replies are, when its tool opts in
/// (`trace.results`).
fn opted_result(call: &crate::dispatch::PendingCall, reply: &str, tool: Option<&crate::tools::Tool>) -> Option<String> {
    tool.filter(|t| t.trace.results)?;
    let result = serde_json::from_slice::<serde_json::Value>(reply.as_bytes()).ok()?.get("result")?.to_string();
    Some(crate::edge::redaction::for_call(call).0.redact_owned(result))
}

/// Ends a call's span with how its reply ended (and its result, when its tool opts in), its
/// progress as events.
pub fn hop_ended(mut span: Span, call: &crate::dispatch::PendingCall, reply: Option<&str>, tool: Option<&crate::tools::Tool>) {
    let times = PROGRESS.with(|p| {
        let mut progress = p.borrow_mut();
        let at = progress.iter().position(|(s, _)| *s == span.span_id)?;
        Some(progress.swap_remove(at).1)
    });
    for (i, at) in times.unwrap_or_default().into_iter().enumerate() {
        span.event("progress", at, vec![("mcp_edge.progress.index", crate::trace::Value::Int(i as i64 + 1))]);
    }
    match reply {
        Some(reply) if span.sampled() => {
            crate::trace::mcp::ended(&mut span, reply);
            if span.get(crate::trace::names::ERROR_TYPE).is_none() {
                if let Some(result) = opted_result(call, reply, tool) {
                    span.set(crate::trace::names::GEN_AI_TOOL_CALL_RESULT, result);
                }
            }
        }
        Some(_) => {}
        None => span.fail("cancelled", "the client cancelled the request"),
    }
    finish(span);
}

/// An MCP client span for a request to an upstream MCP server (`tools/call echo`, kind
/// CLIENT), when its call is traced: the span, the call's HTTP request made its child, and the
/// message with the span's context in `params._meta` (SEP-414).
pub fn mcp_client(http: &crate::upstream::HttpCall, message: &str) -> Option<(Span, crate::upstream::HttpCall, String)> {
    let parent = http.trace.as_ref().filter(|p| p.sampled())?;
    let catalog = tracing()?;
    let mut value: serde_json::Value = serde_json::from_slice(message.as_bytes()).ok()?;
    let method = value.get("method")?.as_str()?.to_string();
    let mut span = start(&catalog.telemetry, String::new(), Kind::Client, Some(parent));
    crate::trace::mcp::describe(&mut span, &method, value.get("params"), value.get("id"));
    if let Ok(url) = crate::weburl::WebUrl::parse(&http.url) {
        if let Some(host) = url.host() {
            span.set(crate::trace::names::SERVER_ADDRESS, host.to_string());
        }
        if let Some(port) = url.port_or_default() {
            span.set(crate::trace::names::SERVER_PORT, i64::from(port));
        }
    }
    let context = span.context();
    match value.get_mut("params") {
        Some(params) => crate::trace::mcp::into_meta(params, &context),
        None => {
            let mut params = serde_json::json!({});
            crate::trace::mcp::into_meta(&mut params, &context);
            value.as_object_mut()?.insert("params".into(), params);
        }
    }
    let mut http = http.clone();
    http.trace = Some(context);
    Some((span, http, value.to_string()))
}

/// Ends an MCP client span: `Ok` with the result (a tool result with `isError` is a
/// `tool_error`), or `Err` with `error.type` and the message.
pub fn mcp_client_ended(mut span: Span, ended: Result<Option<&serde_json::Value>, (String, String)>) {
    match ended {
        Ok(Some(result)) if result.get("isError") == Some(&serde_json::Value::Bool(true)) => span.fail(crate::trace::names::TOOL_ERROR, "the tool's result is an error"),
        Ok(_) => {}
        Err((error_type, message)) => crate::trace::mcp::fail(&mut span, error_type, message),
    }
    finish(span);
}

/// An HTTP client span for an upstream request (kind CLIENT, named by its method, as HTTP's
/// conventions name client spans), when the call is traced.
pub fn http_client(call: &crate::upstream::HttpCall) -> Option<Span> {
    // An unsampled call makes no span: its parent's context is passed on as it is.
    let parent = call.trace.as_ref().filter(|p| p.sampled())?;
    let catalog = tracing()?;
    let mut span = start(&catalog.telemetry, call.method.clone(), Kind::Client, Some(parent));
    if span.sampled() {
        use crate::trace::names::*;
        span.set(HTTP_REQUEST_METHOD, call.method.clone());
        match crate::weburl::WebUrl::parse(&call.url) {
            Ok(url) => {
                span.set(URL_FULL, url_full_of(&url, &crate::edge::redaction::current()));
                if let Some(host) = url.host() {
                    span.set(SERVER_ADDRESS, host.to_string());
                }
                if let Some(port) = url.port_or_default() {
                    span.set(SERVER_PORT, i64::from(port));
                }
            }
            Err(_) => span.set(URL_FULL, REDACTED),
        }
    }
    Some(span)
}

/// The request's `traceparent` and `tracestate`, as `context` says (any the configuration
/// wrote are replaced: the upstream's parent is the span that calls it).
pub fn inject(headers: &mut Vec<(String, String)>, context: &Context) {
    headers.retain(|(name, _)| !name.eq_ignore_ascii_case("traceparent") && !name.eq_ignore_ascii_case("tracestate"));
    headers.push(("traceparent".into(), context.traceparent()));
    if let Some(state) = &context.state {
        headers.push(("tracestate".into(), state.clone()));
    }
}

/// A redirect followed, as an event of the client span.
pub fn redirected(span: &mut Span, status: u16, to: &str) {
    if span.sampled() {
        let to = crate::trace::names::url_full(to, &crate::edge::redaction::current());
        span.event("redirect", now_ms(), vec![(crate::trace::names::HTTP_RESPONSE_STATUS_CODE, i64::from(status).into()), (crate::trace::names::URL_FULL, to.into())]);
    }
}

/// An attempt's end: its status on the span, and an event when it is tried again.
pub fn attempted(span: &mut Span, made: u32, attempt: &Result<web_sys::Response, String>, retried: bool) {
    if !span.sampled() {
        return;
    }
    if let Ok(response) = attempt {
        span.set(crate::trace::names::HTTP_RESPONSE_STATUS_CODE, i64::from(response.status()));
    }
    if made > 1 {
        span.set(crate::trace::names::HTTP_REQUEST_RESEND_COUNT, i64::from(made - 1));
    }
    if retried {
        let why: crate::trace::Value = match attempt {
            Ok(response) => response.status().to_string().into(),
            Err(_) => "network".into(),
        };
        span.event("retry", now_ms(), vec![(crate::trace::names::HTTP_REQUEST_RESEND_COUNT, i64::from(made).into()), (crate::trace::names::ERROR_TYPE, why)]);
    }
}

/// Ends an HTTP client span: in error for a failed exchange (`timeout`, or the failure in
/// words) and for a status of 400 and up (HTTP's conventions for a client).
pub fn http_client_ended(mut span: Span, failed: Option<&crate::upstream::reply::Upstream>) {
    use crate::upstream::reply::Upstream;
    match failed {
        Some(Upstream::TimedOut { after_ms }) => span.fail("timeout", format!("no answer within {after_ms} ms")),
        Some(Upstream::Failed(why)) => span.fail("network", why.clone()),
        _ => {}
    }
    if let Some(crate::trace::Value::Int(status)) = span.get(crate::trace::names::HTTP_RESPONSE_STATUS_CODE).cloned() {
        if status >= 400 && span.get(crate::trace::names::ERROR_TYPE).is_none() {
            span.fail(status.to_string(), String::new());
        }
    }
    finish(span);
}

/// A queued call's delivery (kind CONSUMER, `process {queue}` as the messaging conventions
/// name it), in the trace of the call that queued it; its upstream request is its child.
pub fn delivery(http: &crate::upstream::HttpCall, queue: &str) -> Option<(Span, crate::upstream::HttpCall)> {
    let mut span = child(format!("process {queue}"), Kind::Consumer, http.trace.as_ref())?;
    use crate::trace::names::*;
    span.set(MESSAGING_SYSTEM, "cloudflare_queues");
    span.set(MESSAGING_OPERATION_TYPE, "process");
    span.set(MESSAGING_DESTINATION_NAME, queue);
    let mut traced = http.clone();
    traced.trace = Some(span.context());
    Some((span, traced))
}

/// Ends a delivery's span: in error when the queue is asked to deliver it again.
pub fn delivered(mut span: Span, settled: bool) {
    if !settled {
        span.fail("retry", "delivered again later");
    }
    finish(span);
}

/// A callback's arrival, as a span in the trace of the call that waits for it (the callback's
/// own request, in a trace of its own unless the upstream continued ours, is linked).
pub fn called_back(tool: &str, call: Option<&Context>, request: Option<&Context>, env: &Env) {
    let Some(mut span) = child(format!("callback {tool}"), Kind::Internal, call) else { return };
    span.set(crate::trace::names::GEN_AI_TOOL_NAME, tool);
    if let Some(request) = request.filter(|r| r.trace_id != span.trace_id) {
        span.links.push(request.clone());
    }
    finish(span);
    after_object_work(env);
}

/// How a call that ran in the Worker ended, for its request's server span: in the Worker a
/// call has no span of its own (no hop), so the server span carries its outcome, as the MCP
/// conventions put it on the span of the request.
struct Ended {
    span: crate::trace::SpanId,
    failure: Option<(String, String)>,
    arguments: Option<String>,
    result: Option<String>,
}

/// At most this many outcomes wait for their server span: a streamed reply's call ends after
/// its span, which never takes its outcome, and must not hold memory.
const MAX_ENDED: usize = 64;

thread_local! {
    static ENDED: RefCell<Vec<Ended>> = const { RefCell::new(Vec::new()) };
}

/// A call that ran in the Worker has ended with `reply`: kept for its server span.
pub fn worker_call_ended(call: &crate::dispatch::PendingCall, reply: &str, tool: Option<&crate::tools::Tool>) {
    let Some(parent) = call.http.trace.as_ref().filter(|p| p.sampled()) else { return };
    if tracing().is_none() {
        return;
    }
    let failure = crate::trace::mcp::failure(reply);
    let arguments = opted_arguments(call, tool);
    let result = if failure.is_none() { opted_result(call, reply, tool) } else { None };
    ENDED.with(|e| {
        let mut ended = e.borrow_mut();
        if ended.len() >= MAX_ENDED {
            ended.remove(0);
        }
        ended.push(Ended { span: parent.span_id, failure, arguments, result });
    });
}

/// The outcome of the Worker's call that `span` served, if one ended under it.
fn take_ended(span: &mut Span) {
    let Some(ended) = ENDED.with(|e| {
        let mut ended = e.borrow_mut();
        let at = ended.iter().position(|x| x.span == span.span_id)?;
        Some(ended.remove(at))
    }) else {
        return;
    };
    use crate::trace::names::*;
    if let Some(arguments) = ended.arguments {
        span.set(GEN_AI_TOOL_CALL_ARGUMENTS, arguments);
    }
    if let Some(result) = ended.result {
        span.set(GEN_AI_TOOL_CALL_RESULT, result);
    }
    if let Some((error_type, message)) = ended.failure {
        crate::trace::mcp::fail(span, error_type, message);
    }
}

/// A tool call's own log line, written where the call ends (the session's object, or the
/// Worker): its outcome and latency, which the request's line cannot know when the reply
/// streams, and the trace and span it ran in, so it joins both the request's line and its trace.
/// Written as `log` says: every call (`requests`), the calls that did not end `ok`
/// (`failures`), or none (`off`).
pub fn call_line(server: &crate::catalog::Server, session: &crate::session::Session, call: &crate::dispatch::PendingCall, ended: Option<(crate::metrics::Outcome, u64)>, upstream_ms: Option<u64>) {
    let Some((outcome, duration_ms)) = ended else { return };
    let Ok(catalog) = crate::edge::configured::base_catalog() else { return };
    let wanted = match catalog.log {
        crate::catalog::RequestLogging::Requests => true,
        crate::catalog::RequestLogging::Failures => outcome != crate::metrics::Outcome::Ok,
        crate::catalog::RequestLogging::Off => false,
    };
    if !wanted {
        return;
    }
    let mut line = serde_json::json!({"message": "tool call", "server": server.name, "tool": call.label(), "outcome": outcome.name(), "durationMs": duration_ms});
    if let Some(fields) = line.as_object_mut() {
        if !session.id.is_empty() {
            fields.insert("sessionId".into(), session.id.clone().into());
        }
        if let Some(ms) = upstream_ms {
            fields.insert("upstreamMs".into(), ms.into());
        }
        if let Some(context) = call.http.trace.as_ref().filter(|c| c.sampled()) {
            fields.insert("traceId".into(), context.trace_id.hex().into());
            fields.insert("spanId".into(), context.span_id.hex().into());
        }
    }
    worker::console_log!("{}", crate::edge::redaction::line(line.to_string()));
}
