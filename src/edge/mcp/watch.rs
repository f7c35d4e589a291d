//! An upstream MCP server's own stream, held for a client that listens: an upstream session
//! opened for it, `resources/subscribe` there for each of the client's URIs that upstream owns,
//! and the upstream's `GET` stream read for `notifications/resources/updated` of those URIs
//! (handed to the client's stream) and for list changes (its lists read again at once, so the
//! registry tells every listening client). A stream that breaks off, or is refused, is opened
//! again after a backoff (`changes::backoff_ms`); one that lasts is opened anew every
//! [`HOLD_MS`], so no fetch outlives a bound. The holder (the listen stream's object) drops
//! the watch when its client leaves, and ends the upstream sessions it opened (`DELETE`), which
//! ends their subscriptions.

use std::cell::RefCell;

use futures::future::LocalBoxFuture;
use serde_json::{json, Value};
use worker::Env;

use super::{close, next_id, open, post, Failure, Link, Reply};
use crate::health::Outcome;
use crate::catalog::Server;
use crate::method::Method;
use crate::upstream::mcp::reader::Message;
use crate::upstream::mcp::{self as protocol, Transport};
use crate::upstream::HttpCall;

/// One hold of the upstream's stream lasts at most this long; then it is opened again.
const HOLD_MS: u64 = 240_000;

/// Why a hold ended when the upstream answers its `GET` with 405: it serves no stream.
const NO_STREAM: &str = "it serves no stream (405)";

/// Where an update for one URI goes: the client's stream.
pub type Deliver<'a> = &'a dyn Fn(String) -> LocalBoxFuture<'a, ()>;

/// The upstream sessions a watch holds open now, to end when the client leaves.
pub type Held = RefCell<Vec<(HttpCall, Link)>>;

/// Watches `uris` of the upstream `source` of `server` until dropped: it never ends. A legacy
/// (HTTP+SSE) upstream has no stream to hold beside a request: nothing is watched there.
pub async fn watch(env: &Env, server: &Server, source: usize, uris: &[String], deliver: Deliver<'_>, held: &Held) {
    if !server.upstreams.get(source).is_some_and(|s| s.transport == Transport::StreamableHttp) {
        return futures::future::pending().await;
    }
    let mut failures = 0u32;
    loop {
        let began = crate::edge::now_ms();
        let held_now = hold(env, server, source, uris, deliver, held).await;
        // An upstream that serves no stream has nothing to watch for as long as this one lasts.
        if held_now.as_ref().err().is_some_and(|why| why == NO_STREAM) {
            return futures::future::pending().await;
        }
        if let Err(why) = held_now {
            warn(server, source, "its stream for resource updates broke off", &why);
        }
        // A hold that lasted was no failure: open again at once.
        failures = if crate::edge::now_ms().saturating_sub(began) >= HOLD_MS { 0 } else { failures.saturating_add(1) };
        let wait = if failures == 0 { 0 } else { crate::upstream::mcp::changes::backoff_ms(failures - 1) };
        worker::Delay::from(std::time::Duration::from_millis(wait)).await;
    }
}

/// One hold: a session, the subscriptions, the stream read until it ends.
async fn hold(env: &Env, server: &Server, source: usize, uris: &[String], deliver: Deliver<'_>, held: &Held) -> Result<(), String> {
    let upstream = server.upstreams.get(source).ok_or("no upstream any more")?;
    let secrets = crate::edge::redaction::current();
    let call = super::discovery::base_call(env, server, upstream)?;
    let link = open(&call, Transport::StreamableHttp, &json!({}), server.max_reply_bytes, &secrets).await.map_err(super::discovery::down)?;
    held.borrow_mut().push((call.clone(), link.clone()));
    let ended = listen(env, server, source, &call, &link, uris, deliver).await;
    held.borrow_mut().retain(|(_, l)| l.session_id != link.session_id);
    close(&call, &link).await;
    ended
}

/// The upstream's `GET` stream, read until it ends (or [`HOLD_MS`] has passed), and the
/// subscriptions beside it: the stream is asked for first, as an update sent before it is open
/// would have nowhere to go.
async fn listen(env: &Env, server: &Server, source: usize, call: &HttpCall, link: &Link, uris: &[String], deliver: Deliver<'_>) -> Result<(), String> {
    let mut get = call.clone();
    get.timeout_ms = HOLD_MS;
    let on = |message: Message| -> LocalBoxFuture<'_, ()> { Box::pin(heard(env, server, source, uris, deliver, message)) };
    let secrets = crate::edge::redaction::current();
    let subscribing = async {
        for uri in uris {
            subscribe(server, source, call, link, uri).await;
        }
    };
    match futures::future::join(post(&get, Some(link), String::new(), None, server.max_reply_bytes, Some(&on), &secrets), subscribing).await.0 {
        Ok(_) | Err(Failure::Down(_, Outcome::Timeout)) => Ok(()),
        Err(Failure::Down(_, Outcome::Upstream(405))) => Err(NO_STREAM.to_string()),
        Err(failure) => Err(super::discovery::down(failure)),
    }
}

/// `resources/subscribe` of `uri` in the upstream session `link`. A refusal is logged: the
/// stream is still held, for its other URIs and its list changes.
async fn subscribe(server: &Server, source: usize, call: &HttpCall, link: &Link, uri: &str) {
    let id = next_id();
    let request = protocol::request(id, Method::ResourcesSubscribe, Some(json!({"uri": uri})));
    let why = match post(call, Some(link), request, Some(id), 64 * 1024, None, &crate::edge::redaction::current()).await {
        Ok((Reply::Answer(Ok(_)) | Reply::Accepted, _)) => return,
        Ok((Reply::Answer(Err(e)), _)) => crate::upstream::mcp::reader::error_text(&e),
        Err(failure) => super::discovery::down(failure),
    };
    warn(server, source, "it refused a resource subscription", &format!("{uri}: {why}"));
}

/// One message of the upstream's stream.
async fn heard(env: &Env, server: &Server, source: usize, uris: &[String], deliver: Deliver<'_>, message: Message) {
    let Message::Notification { method, params } = message else { return };
    match Method::parse(&method) {
        Some(Method::ResourcesUpdated) => {
            if let Some(uri) = params.get("uri").and_then(Value::as_str).filter(|u| uris.iter().any(|w| w == u)) {
                deliver(uri.to_string()).await;
            }
        }
        Some(Method::ToolsListChanged | Method::ResourcesListChanged | Method::PromptsListChanged) => {
            if let Some(upstream) = server.upstreams.get(source) {
                super::discovery::stale(server, upstream);
                super::discovery::refresh(env).await;
            }
        }
        _ => {}
    }
}

/// Ends the upstream sessions a dropped watch held.
pub async fn end(held: &Held) {
    let ending = held.take();
    for (call, link) in &ending {
        close(call, link).await;
    }
}

/// Logs what went wrong with the upstream `source`'s stream.
fn warn(server: &Server, source: usize, what: &str, why: &str) {
    let upstream = server.upstreams.get(source).map_or("", |s| s.name.as_str());
    worker::console_warn!("{}", crate::edge::redaction::line(json!({"message": format!("upstream MCP server: {what}"), "server": server.name, "upstream": upstream, "error": why}).to_string()));
}
