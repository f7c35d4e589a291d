//! A call of an upstream MCP server's tool, in the upstream session kept for the downstream
//! session (opened at the first call; opened again, and the call made once more, when the
//! upstream has forgotten it). Its progress and log lines reach the client as they come; its
//! requests (sampling, elicitation, roots) are asked of the client and the answers posted back;
//! its result passes through unchanged, and when it fails, the result says why. A call the
//! client cancels is cancelled upstream too.
//!
//! A 2026-07-28 client cannot be asked on a stream: what the upstream asks becomes an
//! `InputRequiredResult` (`protocol::mrtr`, its state signed and bound to the request and the
//! principal). An upstream that speaks 2026-07-28 too (`server/discover` says so) asks the same
//! way, and its state rides inside ours; one that speaks a session-based revision asks during
//! the call, which then stops (cancelled there), and is made again with the client's answers,
//! each request answered by its key (its method and a digest of its params).
//!
//! Tasks (the 2026-07-28 extension): a 2026-07-28 upstream runs its tool as a task for a client
//! that declares the extension; its task id reaches the client namespaced and signed
//! (`tasks::upstream_id`), and the client's `tasks/*` with that id come back here (`forward`).

use std::cell::RefCell;

use futures::channel::oneshot;
use serde_json::{json, Map, Value};

use super::{next_id, open, post, Failure, Link, Reply};
use crate::protocol::mrtr;
use crate::upstream::stream::{InputAsk, InputRequest};
use crate::edge::context::{ask, CallContext};
use crate::health::Outcome;
use crate::method::Method;
use crate::upstream::mcp::reader::{error_text, Message};
use crate::upstream::mcp::{self as protocol, Source, Target};
use crate::upstream::reply::error_result;
use crate::dispatch::PendingCall;
use crate::redact::Redactor;

/// The client capabilities an upstream may use through mcp-edge: those the client declared that
/// mcp-edge relays, when the client can be asked at all.
fn relayed(ctx: &CallContext<'_>) -> Value {
    // A 2026-07-28 client is asked with an `InputRequiredResult`, in its retry.
    let stateless = crate::dispatch::stateless_revision(ctx.session);
    if !stateless && (ctx.inputs.is_none() || ctx.session.is_ephemeral()) {
        return json!({});
    }
    let declared = &ctx.session.client_capabilities;
    let mut relayed: serde_json::Map<String, Value> = ["sampling", "elicitation", "roots"].iter().filter_map(|c| declared.get(*c).map(|v| (c.to_string(), v.clone()))).collect();
    // The Tasks extension: a 2026-07-28 upstream runs its tools as tasks for the client, whose
    // ids come back namespaced (`namespaced`).
    if stateless && crate::tasks::declared(declared) {
        relayed.insert("extensions".into(), json!({crate::tasks::EXTENSION: {}}));
    }
    Value::Object(relayed)
}

/// The call's result (a `CallToolResult`), and its outcome for the health figures.
pub async fn run(ctx: &CallContext<'_>, call: &PendingCall, target: &Target, secrets: &Redactor) -> (Answer, Outcome) {
    let Some(source) = ctx.server.upstreams.get(target.source) else {
        return (Answer::Result(error_result(format!("The tool {:?} has no upstream any more.", call.label()))), Outcome::Network);
    };
    // A connect tool's call comes here once its user has connected: the user's lists are read
    // again, and the client told to list the tools anew.
    if super::personal::is_connect(&target.name) {
        let principal = call.connection.as_ref().map(|c| c.principal.id.as_str()).unwrap_or_default();
        let title = crate::edge::live::served().ok().and_then(|c| source.connection.as_deref().and_then(|n| crate::edge::connections::connection(&c, n).ok().map(|c| c.title.clone()))).unwrap_or_default();
        if let Some(out) = ctx.out {
            out.send(&crate::jsonrpc::notification(Method::ToolsListChanged, json!({}))).await;
        }
        return (Answer::Result(super::personal::connected(principal, &title)), Outcome::Ok);
    }
    let request = |id: u64| protocol::call_tool(id, &target.name, &call.arguments, call.progress_token.as_ref());
    let relaying = Relaying::new(ctx, call);
    let answer = in_session(ctx, call, source, &request, secrets, relaying.as_ref()).await;
    if let Some(asked) = relaying.as_ref().and_then(|r| r.input_required(ctx, &answer)) {
        return (Answer::AsIs(asked), Outcome::Ok);
    }
    match answer {
        // The Tasks extension: the upstream's task, under an id of mcp-edge's.
        Ok(Ok(result)) if relaying.is_some() && result.get("resultType").and_then(Value::as_str) == Some("task") => (Answer::AsIs(Ok(namespaced(call, source, result))), Outcome::Ok),
        Ok(Ok(result)) => (Answer::Result(crate::upstream::reply::passthrough(unstamped(result))), Outcome::Ok),
        // A 2026-07-28 upstream that the client cannot answer: the client is told as it would be.
        Ok(Err(error)) if relaying.is_some() && error.get("code").and_then(Value::as_i64) == Some(crate::error::code::MISSING_REQUIRED_CLIENT_CAPABILITY) => {
            // An extension is named under `extensions` (`extensions/<name>`), as mcp-edge names its own.
            let required = error.pointer("/data/requiredCapabilities").and_then(Value::as_object).cloned().unwrap_or_default();
            let names = required
                .iter()
                .flat_map(|(name, value)| match value.as_object().filter(|_| name == "extensions") {
                    Some(extensions) => extensions.keys().map(|e| format!("extensions/{e}")).collect(),
                    None => vec![name.clone()],
                })
                .collect();
            (Answer::AsIs(Err(crate::error::Error::MissingClientCapability(names))), Outcome::Client)
        }
        // A protocol error (unknown tool, invalid arguments): the model reads it as the tool's error.
        Ok(Err(error)) => (Answer::Result(error_result(format!("The upstream MCP server {:?} refused the call: {}", source.name, error_text(&error)))), Outcome::Ok),
        Err((why, outcome)) => (Answer::Result(error_result(format!("The upstream MCP server {:?} failed: {why}.", source.name))), outcome),
    }
}

/// What a call of an upstream's tool comes to: a `CallToolResult` to finish, or (2026-07-28) a
/// reply as it is: an `InputRequiredResult`, or the error that the client cannot answer it.
pub enum Answer {
    Result(Value),
    AsIs(Result<Value, crate::error::Error>),
}

/// An upstream's result without a `resultType` of its own: mcp-edge says what its results are.
fn unstamped(mut result: Value) -> Value {
    if let Some(obj) = result.as_object_mut() {
        obj.remove("resultType");
    }
    result
}

/// A 2026-07-28 client's request: what the upstream asks is answered from the client's retry,
/// or ends the request with an `InputRequiredResult`.
struct Relaying<'a> {
    binding: &'a mrtr::Binding,
    /// Answers by key: those of earlier rounds (carried in the signed state) and the retry's.
    answers: Map<String, Value>,
    /// A 2026-07-28 upstream's own retry: the client's answers and the upstream's state.
    upstream_retry: Option<(Value, Value)>,
    /// What a session-based upstream asked that has no answer yet: the call stops there.
    asked: RefCell<Vec<InputRequest>>,
    stop: RefCell<Option<oneshot::Sender<()>>>,
    stopped: RefCell<Option<oneshot::Receiver<()>>>,
}

impl<'a> Relaying<'a> {
    fn new(ctx: &CallContext<'_>, call: &'a PendingCall) -> Option<Relaying<'a>> {
        let binding = call.mrtr.as_ref().filter(|_| crate::dispatch::stateless_revision(ctx.session))?;
        let mut answers = Map::new();
        let mut upstream_retry = None;
        if let Some(answered) = &binding.answered {
            match answered.upstream.get("state") {
                Some(state) => upstream_retry = Some((Value::Object(answered.responses.clone()), state.clone())),
                None => {
                    if let Some(Value::Object(earlier)) = answered.upstream.get("answers") {
                        answers.extend(earlier.clone());
                    }
                    answers.extend(answered.responses.clone());
                }
            }
        }
        let (stop, stopped) = oneshot::channel();
        Some(Relaying { binding, answers, upstream_retry, asked: RefCell::new(Vec::new()), stop: RefCell::new(Some(stop)), stopped: RefCell::new(Some(stopped)) })
    }

    /// The answer to a session-based upstream's request, or `None`: the request is noted, and
    /// the call stops.
    fn answer(&self, method: Method, params: &Value) -> Option<Value> {
        let key = mrtr::ask_key(method, params);
        if let Some(answer) = self.answers.get(&key) {
            return Some(answer.clone());
        }
        self.asked.borrow_mut().push(InputRequest { key, method, params: params.clone() });
        if let Some(stop) = self.stop.borrow_mut().take() {
            let _ = stop.send(());
        }
        None
    }

    fn has_asked(&self) -> bool {
        !self.asked.borrow().is_empty()
    }

    /// The `InputRequiredResult` the request ends with, if it asks: for what a session-based
    /// upstream asked, or what a 2026-07-28 upstream's own `InputRequiredResult` asks. One that
    /// is malformed ends the request with an error.
    fn input_required(&self, ctx: &CallContext<'_>, answer: &Result<Result<Value, Value>, (String, Outcome)>) -> Option<Result<Value, crate::error::Error>> {
        let ask = if self.has_asked() {
            InputAsk { requests: self.asked.borrow().clone(), keyed: true, state: json!({"answers": self.answers}) }
        } else {
            let result = answer.as_ref().ok()?.as_ref().ok()?;
            if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                return None;
            }
            match upstream_ask(result) {
                Some(ask) => ask,
                None => return Some(Err(crate::error::Error::Internal("the upstream MCP server asked for input with a malformed InputRequiredResult".into()))),
            }
        };
        Some(mrtr::input_required(self.binding, &ask, &ctx.session.client_capabilities, crate::edge::now_ms()))
    }
}

/// A 2026-07-28 upstream's `InputRequiredResult` as what to ask: every request one mcp-edge
/// relays (sampling, elicitation, roots, with params), its state a string if it has one.
fn upstream_ask(result: &Value) -> Option<InputAsk> {
    let requests = result.get("inputRequests")?.as_object().filter(|r| !r.is_empty())?;
    let state = match result.get("requestState") {
        None => Value::Null,
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(_) => return None,
    };
    let requests = requests.iter().map(|(key, r)| crate::upstream::stream::input_request(key, r)).collect::<Option<Vec<_>>>()?;
    Some(InputAsk { requests, keyed: true, state: json!({"state": state}) })
}

/// A request passed on as it is (`resources/read`, `prompts/get`): the upstream's result or
/// error object, or an error that says why there is none.
pub async fn forward(ctx: &CallContext<'_>, call: &PendingCall, source: usize, method: Method, params: &Value, secrets: &Redactor) -> (Result<Value, Value>, Outcome) {
    let Some(source) = ctx.server.upstreams.get(source) else {
        return (Err(json!({"code": -32603, "message": format!("{} has no upstream any more", call.label())})), Outcome::Network);
    };
    let relaying = Relaying::new(ctx, call);
    // Its params as the client sent them, for a 2026-07-28 upstream (which gets the protocol's
    // `_meta` anew); without what only 2026-07-28 carries, for one that speaks a session-based revision.
    // A task's request (2026-07-28 only) goes as it came, `tasks/update`'s answers with it.
    let task = matches!(method, Method::TasksGet | Method::TasksUpdate | Method::TasksCancel);
    let session_params = if task { params.clone() } else { mrtr::session_params(params) };
    let request = |id: u64| protocol::request(id, method, Some(session_params.clone()));
    let answer = in_session(ctx, call, source, &request, secrets, relaying.as_ref()).await;
    if let Some(asked) = relaying.as_ref().and_then(|r| r.input_required(ctx, &answer)) {
        return (asked.map_err(|e| serde_json::to_value(e.to_object()).unwrap_or_default()), Outcome::Ok);
    }
    match answer {
        Ok(answer) if task => (answer.map(|r| namespaced(call, source, unstamped(r))), Outcome::Ok),
        Ok(answer) => (answer.map(unstamped), Outcome::Ok),
        Err((why, outcome)) => (Err(json!({"code": -32603, "message": format!("The upstream MCP server {:?} failed: {why}.", source.name)})), outcome),
    }
}

/// An upstream's task (a `CreateTaskResult`, or `tasks/get`'s answer) with the id its client
/// knows it by: namespaced by the upstream and signed for the principal (`tasks::upstream_id`).
fn namespaced(call: &PendingCall, source: &Source, mut result: Value) -> Value {
    if let (Some(binding), Some(task)) = (&call.mrtr, result.as_object_mut()) {
        if let Some(id) = task.get("taskId").and_then(Value::as_str) {
            let ours = crate::tasks::upstream_id(&binding.key, &binding.server, &binding.principal, &source.name, id);
            task.insert("taskId".into(), Value::String(ours));
        }
    }
    result
}

/// Where a session's object keeps an upstream session: this, the server's route, a line break,
/// and the source's name.
const KEPT: &str = "upstream:";

/// Ends the upstream sessions kept in an ending session's storage (read now, before the
/// storage goes): a `DELETE` to each, in the background, so that the client's own `DELETE` or
/// the session's expiry waits for none of them. An upstream that misses it expires the session
/// itself.
pub async fn end_kept(env: &worker::Env, storage: &worker::worker_sys::DurableObjectStorage) {
    let Ok(kept) = crate::edge::listed(storage, KEPT).await else { return };
    let Ok(catalog) = crate::edge::configured::base_catalog() else { return };
    let mut ending = Vec::new();
    for entry in kept.entries().into_iter().flatten() {
        let pair = js_sys::Array::from(&entry);
        let (Some(key), Some(link)) = (pair.get(0).as_string(), crate::edge::from_json_text::<super::StoredLink>(&pair.get(1))) else { continue };
        let Some((route, name)) = key.trim_start_matches(KEPT).split_once('\n') else { continue };
        let Some(server) = catalog.servers.iter().find(|s| s.route.as_str() == route) else { continue };
        let Some(source) = server.upstreams.iter().find(|s| s.name == name) else { continue };
        if let Ok(call) = super::discovery::base_call(env, server, source) {
            ending.push((call, Link::from(link)));
        }
    }
    if !ending.is_empty() {
        wasm_bindgen_futures::spawn_local(async move {
            for (call, link) in &ending {
                super::close(call, link).await;
            }
        });
    }
}

/// The upstream's answer to the request `request(id)` makes, in the upstream session kept for
/// this client session: opened if there is none, and opened again, with the request made once
/// more, when the upstream has forgotten it. `Err`: why there is no answer, and its outcome.
async fn in_session(ctx: &CallContext<'_>, call: &PendingCall, source: &Source, request: &dyn Fn(u64) -> String, secrets: &Redactor, relaying: Option<&Relaying<'_>>) -> Result<Result<Value, Value>, (String, Outcome)> {
    // Kept in the session object's storage (under the server and source), the one place every
    // call of the session reads it from, so an evicted or restarted object goes on in the same
    // upstream session. A legacy upstream's session lives as long as its event stream, and a
    // stateless request has no object: theirs last one operation.
    let key = format!("{KEPT}{}\n{}", ctx.server.route.as_str(), source.name);
    let lasting = !ctx.session.is_ephemeral() && source.transport == crate::upstream::mcp::Transport::StreamableHttp;
    let storage = ctx.home.filter(|_| lasting).map(|h| h.storage.clone());
    for attempt in 0..2 {
        let known = match &storage {
            Some(storage) => crate::edge::stored::<super::StoredLink>(storage, &key).await.ok().flatten().map(super::Link::from),
            None => None,
        };
        let stateless = match relaying {
            Some(_) if source.transport == crate::upstream::mcp::Transport::StreamableHttp => discovered(ctx, call, source, secrets).await,
            _ => None,
        };
        let (mut link, mut changed) = match (stateless, known) {
            (Some(link), _) => (link, false),
            (None, Some(link)) => (link, false),
            (None, None) => match open(&call.http, source.transport, &relayed(ctx), ctx.server.max_reply_bytes, secrets).await {
                Ok(link) => (link, true),
                Err(Failure::Down(why, outcome)) => return Err((why, outcome)),
                Err(Failure::Gone) => return Err(("it forgot the session it had just opened".into(), Outcome::Network)),
            },
        };
        changed |= pass_level(ctx, call, &mut link, secrets).await;
        if let (true, Some(storage), Some(Ok(text))) = (changed, &storage, link.stored().map(|s| serde_json::to_string(&s))) {
            if let Ok(promise) = storage.put(&key, text.into()) {
                let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
            }
        }
        let ended = exchange(ctx, call, source, &link, request, secrets, relaying).await;
        if storage.is_none() {
            super::close(&call.http, &link).await;
        }
        match ended {
            Ok(answer) => return Ok(answer),
            // Forgotten (the upstream restarted, or expired the session): once more, anew.
            Err(Failure::Gone) if attempt == 0 => {
                if let Some(Ok(promise)) = storage.as_ref().map(|s| s.delete(&key)) {
                    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
                }
            }
            Err(Failure::Gone) => return Err(("it forgot the session again".into(), Outcome::Network)),
            Err(Failure::Down(why, outcome)) => return Err((why, outcome)),
        }
    }
    Err(("it forgot the session again".into(), Outcome::Network))
}

/// Passes the client's log level on (`logging/setLevel`) when the upstream logs and has another,
/// so that the upstream sends what the client asked for, and no more. Whether it changed.
async fn pass_level(ctx: &CallContext<'_>, call: &PendingCall, link: &mut Link, secrets: &Redactor) -> bool {
    let Some(level) = &ctx.session.log_level else { return false };
    if link.level.as_ref() == Some(level) || link.capabilities.get("logging").is_none_or(Value::is_null) {
        return false;
    }
    let id = next_id();
    let set = protocol::request(id, Method::LoggingSetLevel, Some(json!({"level": level})));
    // Best effort: an upstream that refuses it logs as it would have.
    let done = matches!(post(&call.http, Some(link), set, Some(id), 4096, None, secrets).await, Ok((Reply::Answer(Ok(_)), _)));
    if done {
        link.level = Some(level.clone());
    }
    done
}

/// One exchange, with everything the upstream sends before its answer.
async fn exchange(ctx: &CallContext<'_>, call: &PendingCall, source: &Source, link: &Link, request: &dyn Fn(u64) -> String, secrets: &Redactor, relaying: Option<&Relaying<'_>>) -> Result<Result<Value, Value>, Failure> {
    let id = next_id();
    // A 2026-07-28 upstream: the protocol's `_meta` in the request, and a retry's answers.
    let stateless_request = |id: u64| {
        let capabilities = relayed(ctx);
        let retry = relaying.and_then(|r| r.upstream_retry.as_ref()).map(|(responses, state)| (responses, state));
        mrtr::stateless(&request(id), &capabilities, retry)
    };
    let request: &dyn Fn(u64) -> String = if link.is_stateless() { &stateless_request } else { request };
    let mut cancel = CancelOnDrop { call: Some((call.http.clone(), link.clone(), id)) };
    let max_bytes = ctx.server.max_reply_bytes;
    let on = |message: Message| -> futures::future::LocalBoxFuture<'_, ()> { Box::pin(relay(ctx, call, source, link, message, secrets, relaying)) };
    // Traced: an MCP client span, whose context the upstream gets in `_meta` (and its HTTP
    // request's span, a child, in the header).
    let (span, traced) = match crate::edge::telemetry::mcp_client(&call.http, &request(id)) {
        Some((span, http, body)) => (Some(span), Some((http, body))),
        None => (None, None),
    };
    let (http, body) = match traced {
        Some((http, body)) => (std::borrow::Cow::Owned(http), body),
        None => (std::borrow::Cow::Borrowed(&call.http), request(id)),
    };
    let posting = post(&http, Some(link), body, Some(id), max_bytes, Some(&on), secrets);
    // A session-based upstream that asks a 2026-07-28 client something: the call stops, and is
    // made again with the answer.
    let answered = match relaying.and_then(|r| r.stopped.borrow_mut().take()) {
        Some(stopped) => match futures::future::select(Box::pin(posting), stopped).await {
            futures::future::Either::Left((answered, _)) => answered,
            futures::future::Either::Right(_) => Err(Failure::Down("it asked the client for input".into(), Outcome::Ok)),
        },
        None => posting.await,
    };
    if let Some(span) = span {
        let ended = match &answered {
            Ok((Reply::Answer(Ok(result)), _)) => Ok(Some(result)),
            Ok((Reply::Answer(Err(error)), _)) => Err(crate::trace::mcp::error_of(error)),
            Ok((Reply::Accepted, _)) => Ok(None),
            Err(Failure::Gone) => Err(("session_gone".to_string(), "the upstream forgot the session".to_string())),
            Err(Failure::Down(why, outcome)) => Err((outcome.kind().to_string(), why.clone())),
        };
        crate::edge::telemetry::mcp_client_ended(span, ended);
    }
    // Answered, or failed without the upstream still working on it: nothing to cancel. A call
    // that ran out of time is still running there, and is cancelled as the guard drops.
    if !matches!(answered, Err(Failure::Down(_, Outcome::Timeout))) && !relaying.is_some_and(Relaying::has_asked) {
        cancel.call = None;
    }
    match answered?.0 {
        Reply::Answer(answer) => Ok(answer),
        Reply::Accepted => Err(Failure::Down("it accepted the request without answering it".into(), Outcome::Network)),
    }
}

/// What the upstream sends during a call: notifications for the client, requests to ask it.
async fn relay(ctx: &CallContext<'_>, call: &PendingCall, source: &Source, link: &Link, message: Message, secrets: &Redactor, relaying: Option<&Relaying<'_>>) {
    match message {
        Message::Notification { method, params } => {
            let passes = match Method::parse(&method) {
                // Sent with the client's own token, so it is the client's progress as it is.
                Some(Method::Progress) => call.progress_token.is_some(),
                Some(Method::LogMessage) => {
                    let level = params.get("level").and_then(Value::as_str).unwrap_or("info");
                    ctx.session.log_level.is_some() && crate::logging::passes(ctx.session.log_level.as_deref(), level)
                }
                // Read again before the call's result is released, so that a list the client
                // asks for after it is the new one; the registry tells the clients listening
                // (`discovery`). Passed on: the client may list at once.
                Some(Method::ToolsListChanged | Method::ResourcesListChanged | Method::PromptsListChanged) => {
                    super::discovery::stale(ctx.server, source);
                    if let Some(env) = ctx.home.map(|home| home.env.clone()).or_else(crate::edge::kept_env) {
                        super::discovery::refresh(&env).await;
                    }
                    true
                }
                _ => false,
            };
            // Sent on the call's outlet, which redacts it (`Outlet::send`).
            if let (true, Some(out)) = (passes, ctx.out) {
                out.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()).await;
            }
        }
        Message::Request { id, method, params } => {
            let outcome = match Method::parse(&method) {
                Some(Method::Ping) => Ok(json!({})),
                known => match known.filter(|m| matches!(m, Method::SamplingCreateMessage | Method::ElicitationCreate | Method::RootsList)) {
                    // A 2026-07-28 client: answered from its retry, or not at all (the call stops).
                    Some(m) if relaying.is_some() => match relaying.and_then(|r| r.answer(m, &params)) {
                        Some(answer) => Ok(answer),
                        None => return,
                    },
                    Some(m) => match ask(ctx, m, params, call.http.timeout_ms).await {
                        Ok(answer) => answer,
                        Err(why) => Err(json!({"code": -32603, "message": why})),
                    },
                    None => Err(json!({"code": -32601, "message": format!("mcp-edge does not relay {method}")})),
                },
            };
            // The answer is a message of its own in the same session; the call's stream goes on.
            let _ = post(&call.http, Some(link), protocol::answer(&id, &outcome), None, 64 * 1024, None, secrets).await;
        }
        Message::Response { .. } => {}
    }
}

thread_local! {
    /// Whether each upstream (by server route and source name) speaks 2026-07-28, as its
    /// `server/discover` said, with what it serves: asked once per isolate.
    /// A list, not a map: a server has a few upstreams, and a list costs the module less.
    static DISCOVERED: RefCell<Vec<(String, Option<Value>)>> = const { RefCell::new(Vec::new()) };
}

/// A link to the upstream in 2026-07-28 when it speaks it (`server/discover` lists the
/// revision): no session to open. `None`: it speaks a session-based revision only.
async fn discovered(ctx: &CallContext<'_>, call: &PendingCall, source: &Source, secrets: &Redactor) -> Option<Link> {
    let key = format!("{}\n{}", ctx.server.route.as_str(), source.name);
    let known = DISCOVERED.with(|d| d.borrow().iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone()));
    let capabilities = match known {
        Some(known) => known,
        None => {
            let id = next_id();
            let probe = Link::stateless(json!({}));
            let body = mrtr::stateless(&protocol::request(id, Method::ServerDiscover, None), &relayed(ctx), None);
            let found = match post(&call.http, Some(&probe), body, Some(id), 256 * 1024, None, secrets).await {
                Ok((Reply::Answer(Ok(result)), _)) => result
                    .get("supportedVersions")
                    .and_then(Value::as_array)
                    .is_some_and(|v| v.iter().any(|v| v.as_str() == Some(crate::versions::STATELESS_VERSION)))
                    .then(|| result.get("capabilities").cloned().unwrap_or_else(|| json!({}))),
                // Refused, unknown, or down: the session-based revisions, as before (a down
                // upstream is asked again next time).
                Err(Failure::Down(_, Outcome::Timeout | Outcome::Network)) => return None,
                _ => None,
            };
            DISCOVERED.with(|d| d.borrow_mut().push((key, found.clone())));
            found
        }
    };
    capabilities.map(Link::stateless)
}

/// Tells the upstream the call was cancelled when the call is dropped before its answer (the
/// client cancelled it, or its time ran out): the fetch is aborted, and this says why.
struct CancelOnDrop {
    call: Option<(crate::upstream::HttpCall, Link, u64)>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some((http, link, id)) = self.call.take() {
            wasm_bindgen_futures::spawn_local(async move {
                // Its answer is not looked at: nothing of it is quoted.
                let _ = post(&http, Some(&link), protocol::cancelled(id, "the client cancelled the call"), None, 4096, None, &Redactor::default()).await;
            });
        }
    }
}
