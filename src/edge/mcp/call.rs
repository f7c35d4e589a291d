//! A call of an upstream MCP server's tool, in the upstream session kept for the downstream
//! session (opened at the first call; opened again, and the call made once more, when the
//! upstream has forgotten it). Its progress and log lines reach the client as they come; its
//! requests (sampling, elicitation, roots) are asked of the client and the answers posted back;
//! its result passes through unchanged, and when it fails, the result says why. A call the
//! client cancels is cancelled upstream too.

use serde_json::{json, Value};

use super::{next_id, open, post, Failure, Link, Reply};
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
    if ctx.inputs.is_none() || ctx.session.is_ephemeral() {
        return json!({});
    }
    let declared = &ctx.session.client_capabilities;
    let relayed: serde_json::Map<String, Value> = ["sampling", "elicitation", "roots"].iter().filter_map(|c| declared.get(*c).map(|v| (c.to_string(), v.clone()))).collect();
    Value::Object(relayed)
}

/// The call's result (a `CallToolResult`), and its outcome for the health figures.
pub async fn run(ctx: &CallContext<'_>, call: &PendingCall, target: &Target, secrets: &Redactor) -> (Value, Outcome) {
    let Some(source) = ctx.server.upstreams.get(target.source) else {
        return (error_result(format!("The tool {:?} has no upstream any more.", call.label())), Outcome::Network);
    };
    // A connect tool's call comes here once its user has connected: the user's lists are read
    // again, and the client told to list the tools anew.
    if super::personal::is_connect(&target.name) {
        let principal = call.connection.as_ref().map(|c| c.principal.id.as_str()).unwrap_or_default();
        let title = crate::edge::live::served().ok().and_then(|c| source.connection.as_deref().and_then(|n| crate::edge::connections::connection(&c, n).ok().map(|c| c.title.clone()))).unwrap_or_default();
        if let Some(out) = ctx.out {
            out.send(&crate::jsonrpc::notification(Method::ToolsListChanged, json!({}))).await;
        }
        return (super::personal::connected(principal, &title), Outcome::Ok);
    }
    let request = |id: u64| protocol::call_tool(id, &target.name, &call.arguments, call.progress_token.as_ref());
    match in_session(ctx, call, source, &request, secrets).await {
        Ok(Ok(result)) => (crate::upstream::reply::passthrough(result), Outcome::Ok),
        // A protocol error (unknown tool, invalid arguments): the model reads it as the tool's error.
        Ok(Err(error)) => (error_result(format!("The upstream MCP server {:?} refused the call: {}", source.name, error_text(&error))), Outcome::Ok),
        Err((why, outcome)) => (error_result(format!("The upstream MCP server {:?} failed: {why}.", source.name)), outcome),
    }
}

/// A request passed on as it is (`resources/read`, `prompts/get`): the upstream's result or
/// error object, or an error that says why there is none.
pub async fn forward(ctx: &CallContext<'_>, call: &PendingCall, source: usize, method: Method, params: &Value, secrets: &Redactor) -> (Result<Value, Value>, Outcome) {
    let Some(source) = ctx.server.upstreams.get(source) else {
        return (Err(json!({"code": -32603, "message": format!("{} has no upstream any more", call.label())})), Outcome::Network);
    };
    let request = |id: u64| protocol::request(id, method, Some(params.clone()));
    match in_session(ctx, call, source, &request, secrets).await {
        Ok(answer) => (answer, Outcome::Ok),
        Err((why, outcome)) => (Err(json!({"code": -32603, "message": format!("The upstream MCP server {:?} failed: {why}.", source.name)})), outcome),
    }
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
async fn in_session(ctx: &CallContext<'_>, call: &PendingCall, source: &Source, request: &dyn Fn(u64) -> String, secrets: &Redactor) -> Result<Result<Value, Value>, (String, Outcome)> {
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
        let (mut link, mut changed) = match known {
            Some(link) => (link, false),
            None => match open(&call.http, source.transport, &relayed(ctx), ctx.server.max_reply_bytes, secrets).await {
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
        let ended = exchange(ctx, call, source, &link, request, secrets).await;
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
async fn exchange(ctx: &CallContext<'_>, call: &PendingCall, source: &Source, link: &Link, request: &dyn Fn(u64) -> String, secrets: &Redactor) -> Result<Result<Value, Value>, Failure> {
    let id = next_id();
    let mut cancel = CancelOnDrop { call: Some((call.http.clone(), link.clone(), id)) };
    let max_bytes = ctx.server.max_reply_bytes;
    let on = |message: Message| -> futures::future::LocalBoxFuture<'_, ()> { Box::pin(relay(ctx, call, source, link, message, secrets)) };
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
    let answered = post(&http, Some(link), body, Some(id), max_bytes, Some(&on), secrets).await;
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
    if !matches!(answered, Err(Failure::Down(_, Outcome::Timeout))) {
        cancel.call = None;
    }
    match answered?.0 {
        Reply::Answer(answer) => Ok(answer),
        Reply::Accepted => Err(Failure::Down("it accepted the request without answering it".into(), Outcome::Network)),
    }
}

/// What the upstream sends during a call: notifications for the client, requests to ask it.
async fn relay(ctx: &CallContext<'_>, call: &PendingCall, source: &Source, link: &Link, message: Message, secrets: &Redactor) {
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
