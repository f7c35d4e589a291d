//! The pinned tool definitions of a server's upstream MCP servers, kept in the server's registry
//! object (one per server, whichever isolate reads): each upstream's pins, the changes held for
//! approval, the fingerprints an admin rejected, and whether the upstream was read before.
//! `crate::pins` decides; the storage is read and written by `glue.js` (`pins_*`, one crossing
//! each); this file tells the sessions when an approval changes a list.

use serde_json::{Map, Value};
use wasm_bindgen::prelude::wasm_bindgen;
use worker::worker_sys::DurableObjectStorage;
use worker::{Env, Response, ResponseBuilder, State};

use crate::audit::{Action, Event, SYSTEM};
use crate::envelope::Op;
use crate::error::Error;
use crate::pins::{Known, Mode};

#[wasm_bindgen(module = "/src/edge/glue.js")]
extern "C" {
    fn pins_read(storage: &DurableObjectStorage, source: &str) -> js_sys::Promise;
    fn store_all(storage: &DurableObjectStorage, puts: &str) -> js_sys::Promise;
    fn pins_held(storage: &DurableObjectStorage, about: &str) -> js_sys::Promise;
    fn pins_decide(storage: &DurableObjectStorage, key: &str, fingerprint: &str, approve: bool) -> js_sys::Promise;
}

/// A glue promise's text (`None`: it resolved to nothing).
async fn text(promise: js_sys::Promise) -> Result<Option<String>, Error> {
    Ok(wasm_bindgen_futures::JsFuture::from(promise).await.map_err(worker::Error::from)?.as_string())
}

fn answer(status: u16, body: String) -> Response {
    ResponseBuilder::new().with_status(status).fixed(body.into_bytes())
}

/// The registry's pin operations, inside its object.
pub async fn serve(state: &State, env: &Env, op: Op, body: &[u8]) -> Result<Response, Error> {
    let storage = state.storage();
    let raw = storage.as_raw();
    let request: Value = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(format!("pins: {e}")))?;
    let field = |name: &str| request.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
    let (source, tool) = (field("upstream"), field("tool"));
    match op {
        Op::PinsCheck => {
            let known = Known::from_json(&serde_json::from_str(&text(pins_read(raw, &source)).await?.unwrap_or_default()).unwrap_or_default());
            let listed = request.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            let outcome = crate::pins::check(Mode::parse(&field("mode")), listed, &known);
            let now = crate::edge::now_ms();
            let mut puts = Map::new();
            for (kind, list) in [("pin", &outcome.pin), ("held", &outcome.hold)] {
                for (name, pin) in list {
                    puts.insert(format!("{kind}:{source}\n{name}"), Value::String(pin.to_json(now)));
                }
            }
            if !known.seen {
                puts.insert(format!("seen:{source}"), Value::String("1".into()));
            }
            if !puts.is_empty() {
                text(store_all(raw, &Value::Object(puts).to_string())).await?;
            }
            // Recorded after the answer, so that the read never waits on the audit log.
            for (name, pin) in &outcome.hold {
                let old = known.pins.get(name).and_then(|p| p.get("definition"));
                let fields = old.map_or_else(|| "a new tool".to_string(), |old| format!("changed: {}", crate::pins::changed(old, &pin.definition).join(", ")));
                let detail = format!("upstream {source}: {fields}; held for approval (fingerprint {})", pin.fingerprint.get(..12).unwrap_or_default());
                crate::edge::audit::record_later(env, None, Event { at_ms: now, actor: SYSTEM.into(), action: Action::DefinitionHeld, server: field("server"), target: format!("{}{name}", field("prefix")), detail });
            }
            let mut served = Map::new();
            served.insert("tools".into(), Value::Array(outcome.serve));
            Ok(answer(200, Value::Object(served).to_string()))
        }
        Op::PinsHeld => Ok(answer(200, text(pins_held(raw, &String::from_utf8_lossy(body))).await?.unwrap_or_default())),
        Op::PinsDecide => {
            let approve = request.get("approve").and_then(Value::as_bool).unwrap_or(false);
            let Some(decided) = text(pins_decide(raw, &format!("{source}\n{tool}"), &field("fingerprint"), approve)).await? else {
                return Ok(answer(404, String::new()));
            };
            Ok(answer(200, decided))
        }
        _ => Err(Error::Internal("not a pins operation".into())),
    }
}
