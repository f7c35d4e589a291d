//! The audit log at the edge: `record` writes an event's log line, keeps it in the audit object
//! (`audit`, an instance of the sessions class: capped at `audit::KEPT`, read newest first by
//! `GET /admin/api/audit`), and sends it as an OTLP log record to `{endpoint}/v1/logs` when
//! telemetry has an endpoint. Callable from the Worker and from any object. Refusals
//! (`Action::sampled`) are logged each time, but kept and sent once per minute for each
//! (action, actor, server, target) in an isolate, so a burst writes no row per refusal.

use std::cell::RefCell;
use std::collections::HashMap;

use worker::{Env, Response, ResponseBuilder, State};

use crate::audit::{Event, DROP_BATCH, KEPT, MAX_PAGE};
use crate::envelope::Op;
use crate::error::Error;

/// The audit object's name in the sessions namespace.
pub const OBJECT: &str = "audit";
const PREFIX: &str = "a:";

thread_local! {
    /// The minute each sampled (action, actor, server, target) was last kept in.
    static SAMPLED: RefCell<HashMap<String, u64>> = RefCell::new(HashMap::new());
}

/// Records `event`: redacted, logged, kept, and exported. Never fails: what cannot be kept or
/// sent is logged as an error. A Worker on a hot path runs it through `waitUntil`.
pub async fn record(env: &Env, event: Event) {
    let secrets = crate::edge::redaction::current();
    let event = event.redacted(&secrets);
    worker::console_log!("{}", event.line());
    if event.action.sampled() {
        let minute = event.at_ms / 60_000;
        let key = format!("{}\n{}\n{}\n{}", event.action.name(), event.actor, event.server, event.target);
        let fresh = SAMPLED.with(|s| {
            let mut s = s.borrow_mut();
            s.retain(|_, m| *m == minute);
            s.insert(key, minute).is_none()
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
    let task = async move { record(&env, event).await };
    match ctx {
        Some(ctx) => ctx.wait_until(task),
        None => wasm_bindgen_futures::spawn_local(task),
    }
}

/// Sends an event to the audit object (straight through `hop`: the registries record events too).
async fn keep(env: &Env, body: String) -> worker::Result<Response> {
    let stub = crate::edge::hop::object_stub(env, OBJECT)?;
    let envelope = crate::envelope::Envelope { op: Op::AuditAppend, object: Some(OBJECT.into()), ..crate::envelope::Envelope::default() };
    crate::edge::hop::send_to_object(&stub, &envelope.seal(body.as_bytes())).await
}

/// The kept events' keys and texts, `limit` at most, from the start or (`reverse`) from the end
/// before `end`.
async fn list(state: &State, limit: u64, reverse: bool, end: Option<&str>) -> Result<Vec<(String, String)>, Error> {
    let set = |o: &js_sys::Object, k: &str, v: wasm_bindgen::JsValue| js_sys::Reflect::set(o, &k.into(), &v).map(|_| ()).map_err(worker::Error::from);
    let options = js_sys::Object::new();
    set(&options, "prefix", PREFIX.into())?;
    set(&options, "limit", (limit as f64).into())?;
    set(&options, "reverse", reverse.into())?;
    if let Some(end) = end {
        set(&options, "end", end.into())?;
    }
    let raw = state.storage();
    let promise = raw.as_raw().list_with_options(options).map_err(worker::Error::from)?;
    let map = js_sys::Map::from(wasm_bindgen_futures::JsFuture::from(promise).await.map_err(worker::Error::from)?);
    let mut out = Vec::new();
    for entry in map.entries() {
        let pair = js_sys::Array::from(&entry.map_err(worker::Error::from)?);
        if let (Some(k), Some(v)) = (pair.get(0).as_string(), pair.get(1).as_string()) {
            out.push((k, v));
        }
    }
    Ok(out)
}

/// The audit object's operations: `AuditAppend` (`<key>\n<event JSON>`) and `AuditRead`
/// (`<limit>\n<before>`: a page, newest first, and the cursor of the next).
pub async fn serve(state: &State, op: Op, body: &[u8]) -> Result<Response, Error> {
    let text = String::from_utf8_lossy(body);
    let (head, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let storage = state.storage();
    match op {
        Op::AuditAppend => {
            if !head.starts_with(PREFIX) {
                return Err(Error::InvalidRequest("audit: not an event".into()));
            }
            storage.put_raw(head, wasm_bindgen::JsValue::from_str(rest)).await?;
            let mut count = storage.get::<String>("count").await.ok().flatten().and_then(|c| c.parse::<u64>().ok()).unwrap_or(0) + 1;
            if count > KEPT + DROP_BATCH {
                for (key, _) in list(state, DROP_BATCH, false, None).await? {
                    storage.delete(&key).await?;
                    count -= 1;
                }
            }
            storage.put_raw("count", wasm_bindgen::JsValue::from_str(&count.to_string())).await?;
            Ok(ResponseBuilder::new().with_status(204).empty())
        }
        Op::AuditRead => {
            let limit = head.parse::<u64>().unwrap_or(50).clamp(1, MAX_PAGE);
            let before = Some(rest).filter(|b| b.starts_with(PREFIX));
            let mut page = list(state, limit + 1, true, before).await?;
            let next = if page.len() as u64 > limit { page.truncate(limit as usize); page.last().map(|(k, _)| k.clone()) } else { None };
            let entries: Vec<&str> = page.iter().map(|(_, v)| v.as_str()).collect();
            let next = next.map_or_else(|| "null".to_string(), |k| serde_json::Value::String(k).to_string());
            let text = format!("{{\"entries\":[{}],\"next\":{next}}}", entries.join(","));
            Ok(ResponseBuilder::new().with_status(200).fixed(text.into_bytes()))
        }
        _ => Err(Error::Internal("not an audit operation".into())),
    }
}
