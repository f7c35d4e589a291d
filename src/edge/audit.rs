//! The audit log at the edge: `record` writes an event's log line, keeps it in the audit object
//! (`audit`, an instance of the sessions class: capped at `audit::KEPT`, read newest first by
//! `GET /admin/api/audit`), and sends it as an OTLP log record to `{endpoint}/v1/logs` when
//! telemetry has an endpoint. Callable from the Worker and from any object. Refusals
//! (`Action::sampled`) are logged each time, but kept and sent once per minute for each
//! (action, actor, server, target) in an isolate, so a burst writes no row per refusal.

use std::cell::RefCell;

use wasm_bindgen::prelude::wasm_bindgen;
use worker::worker_sys::DurableObjectStorage;
use worker::{Env, Response, ResponseBuilder, State};

use crate::audit::{Event, DROP_BATCH, KEPT, MAX_PAGE};
use crate::envelope::Op;
use crate::error::Error;

/// The audit object's name in the sessions namespace.
pub const OBJECT: &str = "audit";

#[wasm_bindgen(module = "/src/edge/glue.js")]
extern "C" {
    fn audit_append(storage: &DurableObjectStorage, key: &str, text: &str, kept: u32, batch: u32) -> js_sys::Promise;
    fn audit_page(storage: &DurableObjectStorage, limit: u32, before: &str) -> js_sys::Promise;
}

thread_local! {
    /// The sampled (action, actor, server, target) kept this minute, and the minute.
    static SAMPLED: RefCell<(u64, Vec<String>)> = const { RefCell::new((0, Vec::new())) };
}

/// Records `event`: redacted, logged, kept, and exported. Never fails: what cannot be kept or
/// sent is logged as an error. On a hot path, `record_later`.
pub async fn record(env: &Env, event: Event) {
    let secrets = crate::edge::redaction::current();
    let event = event.redacted(&secrets);
    worker::console_log!("{}", event.line());
    if event.action.sampled() {
        let minute = event.at_ms / 60_000;
        let key = format!("{}\n{}\n{}\n{}", event.action.name(), event.actor, event.server, event.target);
        let fresh = SAMPLED.with(|s| {
            let mut s = s.borrow_mut();
            if s.0 != minute {
                *s = (minute, Vec::new());
            }
            let fresh = !s.1.contains(&key);
            if fresh {
                s.1.push(key);
            }
            fresh
        });
        if !fresh {
            return;
        }
    }
    let nonce = crate::edge::ids::random(4).unwrap_or_default();
    let body = format!("{}\n{}", event.key(&nonce), event.to_json());
    if let Err(e) = keep(env, body).await {
        worker::console_error!("{}", crate::edge::redaction::line(format!("audit: an event could not be kept: {e}")));
    }
    let Ok(catalog) = crate::edge::configured::base_catalog() else { return };
    if let Some(otlp) = &catalog.telemetry.otlp {
        let source = crate::trace::otlp::Source::mcp_edge(&catalog.telemetry.service_name);
        let bytes = crate::audit::otlp(&source, std::slice::from_ref(&event), &secrets);
        if let Err(why) = crate::edge::telemetry::post(env, otlp, "/v1/logs", "application/x-protobuf", js_sys::Uint8Array::from(bytes.as_slice()).into()).await {
            worker::console_error!("{}", crate::edge::redaction::line(format!("audit: an event could not be sent to the collector: {why}")));
        }
    }
}

/// Records `event` after the current request's answer: through `waitUntil` in the Worker
/// (`ctx`), on a task of its own in a Durable Object (`None`), so that neither the store nor a
/// slow collector delays the answer.
pub fn record_later(env: &Env, ctx: Option<&worker::Context>, event: Event) {
    let env = env.clone();
    // Boxed: one copy of the task's code, whichever way it runs.
    let task: std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> = Box::pin(async move { record(&env, event).await });
    match ctx {
        Some(ctx) => ctx.wait_until(task),
        None => wasm_bindgen_futures::spawn_local(task),
    }
}

/// A refusal (a policy's denial, a limit's) of `actor`'s call on `server`, recorded after the
/// answer with the isolate's environment: sampled per minute (`Action::sampled`), so a burst
/// costs one stored event.
pub fn refused((actor, server): (&str, &str), action: crate::audit::Action, target: &str, detail: String) {
    let Some(env) = crate::edge::kept_env() else { return };
    let event = Event { at_ms: crate::edge::now_ms(), actor: actor.to_string(), action, server: server.to_string(), target: target.to_string(), detail };
    record_later(&env, None, event);
}

/// Sends an event to the audit object (straight through `hop`: the registries record events too).
async fn keep(env: &Env, body: String) -> worker::Result<Response> {
    let stub = crate::edge::hop::object_stub(env, OBJECT)?;
    let envelope = crate::envelope::Envelope { op: Op::AuditAppend, object: Some(OBJECT.into()), ..crate::envelope::Envelope::default() };
    crate::edge::hop::send_to_object(&stub, &envelope.seal(body.as_bytes())).await
}

/// The audit object's operations (its storage through `glue.js`): `AuditAppend`
/// (`<key>\n<event JSON>`) and `AuditRead` (`<limit>\n<before>`: a page, newest first, and the
/// cursor of the next).
pub async fn serve(state: &State, op: Op, body: &[u8]) -> Result<Response, Error> {
    let text = String::from_utf8_lossy(body);
    let (head, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let storage = state.storage();
    let promise = match op {
        Op::AuditAppend if head.starts_with("a:") => audit_append(storage.as_raw(), head, rest, KEPT as u32, DROP_BATCH as u32),
        Op::AuditRead => audit_page(storage.as_raw(), head.parse::<u64>().unwrap_or(50).clamp(1, MAX_PAGE) as u32, rest),
        _ => return Err(Error::InvalidRequest("not an audit operation".into())),
    };
    let page = wasm_bindgen_futures::JsFuture::from(promise).await.map_err(worker::Error::from)?.as_string().unwrap_or_default();
    Ok(ResponseBuilder::new().with_status(200).fixed(page.into_bytes()))
}
