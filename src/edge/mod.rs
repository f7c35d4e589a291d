//! The edge: the only code that imports `worker`. It carries out what the core decides.
//!
//! Split by where the code runs:
//! - `worker/`: the Worker's fetch and queue handlers, and the transports they serve.
//! - `object/`: the Durable Objects: a session's (`session/`: `serve` hands each operation to
//!   the file of its concern), the registries', and the authorization server's store
//!   (`authority`).
//! - Shared by both, here, in the order a session's `tools/call` meets them: `live` (the
//!   catalog a request is served from, brought up to date: `fresh_catalog`; the live version
//!   asked for at most every 2 s) over `configured` (the bundled file, or the live version
//!   installed: below all that reads the catalog), `body` (bodies
//!   within their limits, form posts within theirs), `forward` (a session's request sent from
//!   the Worker to its object) over `hop` (the hop to any object), `calls` (one upstream call
//!   carried out, in an object, or in the Worker for stateless requests and leases) with
//!   `context` below it (what a call runs with, and what it may ask of the client; `mcp::call`
//!   uses it too), `upstream` (the fetch), `streams` and `writer` (a response's stream and the
//!   messages written to it), `http` (a reply's headers and body); and `deferred` (queued and
//!   callback calls), `outbox` (replies kept for the client's next stream), `mcp` (upstream MCP
//!   servers: their tool lists, sessions and calls), `connections` (each principal's tokens of
//!   the connections its calls use, the connect page, and a call that waits for its user to
//!   connect), `health` (each call's outcome counted in the
//!   isolate, around the call by its callers, flushed to the `health` object), `telemetry`
//!   (spans made, queued in the isolate and sent to the OTLP collector after the reply), `ids` (fresh ids,
//!   random tokens and nonces), `rescue` (what a trap interrupted, answered), `redaction` (the
//!   deployment's secrets hidden at every exit: what the streams, buffered bodies, stores and log
//!   lines take), and here: the environment's secrets, the clock and stored JSON, which every file
//!   uses and which use none of them: so this file names none of its children.

mod audit;
mod body;
mod calls;
mod code;
mod configured;
mod connections;
mod context;
mod deferred;
mod forward;
mod health;
mod hop;
mod http;
mod ids;
mod limits;
mod live;
mod mcp;
mod object;
mod outbox;
mod redaction;
mod rescue;
mod results_cache;
mod streams;
mod telemetry;
mod upstream;
// The Worker's own code; the `worker` crate is `::worker` in this file.
mod worker;
mod writer;

use std::future::Future;
use std::pin::Pin;

use crate::config;

/// A route's future, polled through a pointer. Without it the compiler inlines every route's
/// state machine into its caller's poll: one function of some 150 KB, which V8 compiles whole on
/// an isolate's first request, whichever route that request takes (docs/performance.md).
pub(crate) fn apart<'a, T>(future: impl Future<Output = T> + 'a) -> Pin<Box<dyn Future<Output = T> + 'a>> {
    Box::pin(future)
}

/// `mcp-edge check`: what `check-config` prints for a file, from this module, so the command
/// needs no Rust and says exactly what the Worker would. `ok\n` or `fault\n` before the lines.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn check_config(label: &str, text: &str) -> String {
    match config::check(label, text) {
        Ok(report) => format!("ok\n{report}"),
        Err(fault) => format!("fault\n{fault}"),
    }
}

/// A Worker secret or var by name (both are plain strings in the environment). Read once per
/// isolate: an isolate serves one deployment, whose environment never changes, and tool calls
/// look their secrets up on every request (for templates and for redaction).
pub(crate) fn secret(env: &::worker::Env, name: &str) -> Option<String> {
    thread_local! {
        static SECRETS: std::cell::RefCell<std::collections::HashMap<String, Option<String>>> = Default::default();
    }
    if let Some(known) = SECRETS.with(|s| s.borrow().get(name).cloned()) {
        return known;
    }
    let value = env.var(name).ok().map(|v| v.to_string());
    SECRETS.with(|s| s.borrow_mut().insert(name.to_string(), value.clone()));
    value
}

/// The deployment's own keys, checked when an isolate starts: one that is set but too short is
/// a fault every request answers with (as a faulty configuration is), never a weak signature.
pub(crate) fn keys_checked(env: &::worker::Env) -> Result<(), crate::error::Error> {
    thread_local! {
        static FAULT: std::cell::OnceCell<Option<String>> = const { std::cell::OnceCell::new() };
    }
    let fault = FAULT.with(|f| f.get_or_init(|| crate::keys::OWN_KEYS.iter().find_map(|name| crate::keys::too_short(name, &secret(env, name)?))).clone());
    fault.map_or(Ok(()), |why| Err(crate::error::Error::Config(why)))
}

#[wasm_bindgen::prelude::wasm_bindgen(module = "/src/edge/glue.js")]
extern "C" {
    /// A stored or received value as JSON text, for the module's one JSON parser; what
    /// earlier builds stored as structured objects reads as the same JSON.
    fn json_text(value: &wasm_bindgen::JsValue) -> Option<String>;
}

/// What a value read from storage or a queue holds: session state, a queued call or a call's
/// record, each kept as JSON text. `None` when it holds nothing this build can read.
pub(crate) fn from_json_text<T: serde::de::DeserializeOwned>(value: &wasm_bindgen::JsValue) -> Option<T> {
    serde_json::from_slice(json_text(value)?.as_bytes()).ok()
}

/// The value stored under `key` in a Durable Object, read as `from_json_text` reads it: `Ok(None)`
/// when nothing is stored there, or nothing this build can read.
pub(crate) async fn stored<T: serde::de::DeserializeOwned>(storage: &::worker::worker_sys::DurableObjectStorage, key: &str) -> Result<Option<T>, wasm_bindgen::JsValue> {
    let value = wasm_bindgen_futures::JsFuture::from(storage.get(key)?).await?;
    Ok(from_json_text(&value))
}

/// A thrown JS value as text: an Error's message, or the value itself.
pub(crate) fn js_text(value: &wasm_bindgen::JsValue) -> String {
    ::worker::Error::from(value.clone()).to_string()
}

/// The stored entries of a Durable Object whose keys start with `prefix`, as a JS `Map`.
/// Straight on the runtime's storage: `worker`'s list converts its options with
/// serde-wasm-bindgen, which this module otherwise does without.
pub(crate) async fn listed(storage: &::worker::worker_sys::DurableObjectStorage, prefix: &str) -> Result<js_sys::Map, wasm_bindgen::JsValue> {
    let options = js_sys::Object::new();
    js_sys::Reflect::set(&options, &"prefix".into(), &prefix.into())?;
    let map = wasm_bindgen_futures::JsFuture::from(storage.list_with_options(options)?).await?;
    Ok(js_sys::Map::from(map))
}

thread_local! {
    static KEPT_ENV: std::cell::RefCell<Option<::worker::Env>> = const { std::cell::RefCell::new(None) };
}

/// Kept by a Worker's first request, or a Durable Object when it starts: the environment that
/// work without one at hand (a limit's count, an audit event) reaches bindings through. An
/// isolate serves one deployment, so its bindings do not change.
pub(crate) fn keep_env(env: &::worker::Env) {
    KEPT_ENV.with(|k| {
        if k.borrow().is_none() {
            *k.borrow_mut() = Some(env.clone());
        }
    });
}

pub(crate) fn kept_env() -> Option<::worker::Env> {
    KEPT_ENV.with(|k| k.borrow().clone())
}

pub(crate) fn now_ms() -> u64 {
    // `Date.now()`: `worker::Date::now()` builds a `Date` object to read the same number.
    js_sys::Date::now() as u64
}

/// Makes sure the object's alarm rings by `at_ms` (a deferred call's deadline).
pub(crate) async fn arm_by(storage: &::worker::worker_sys::DurableObjectStorage, at_ms: u64) {
    let current = match storage.get_alarm(js_sys::Object::new()) {
        Ok(promise) => wasm_bindgen_futures::JsFuture::from(promise).await.ok().and_then(|v| v.as_f64()),
        Err(_) => None,
    };
    if current.is_none_or(|at| at as u64 > at_ms) {
        arm_alarm(storage, at_ms.saturating_sub(now_ms())).await;
    }
}

/// Sets the object's alarm `in_ms` from now, from a task that has no `State`.
pub(crate) async fn arm_alarm(storage: &::worker::worker_sys::DurableObjectStorage, in_ms: u64) {
    let when = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64((now_ms() + in_ms) as f64));
    if let Ok(promise) = storage.set_alarm(when, js_sys::Object::new()) {
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    }
}
