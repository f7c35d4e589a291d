//! The pinned tool definitions of a server's upstream MCP servers, kept in the server's registry
//! object (one per server, whichever isolate reads): each source's pins (`pin:<source>\n<tool>`),
//! the changes held for approval (`held:…`), the fingerprints an admin rejected (`rejected:…`),
//! and whether the source was read before (`seen:<source>`). `crate::pins` decides; this file
//! reads and writes what it decides, and tells the sessions when an approval changes a list.

use serde_json::{json, Value};
use worker::{Env, Response, ResponseBuilder, State, Storage};

use super::keys;
use crate::audit::{Action, Event, SYSTEM};
use crate::error::Error;
use crate::pins::{Known, Mode, Pin};

const PIN: &str = "pin:";
const HELD: &str = "held:";
const REJECTED: &str = "rejected:";
const SEEN: &str = "seen:";

fn stored(text: &str) -> Option<(Pin, u64)> {
    let v: Value = serde_json::from_str(text).ok()?;
    let fingerprint = v.get("fingerprint")?.as_str()?.to_string();
    Some((Pin { fingerprint, definition: v.get("definition").cloned().unwrap_or_default() }, v.get("atMs").and_then(Value::as_u64).unwrap_or(0)))
}

async fn put(storage: &Storage, key: &str, pin: &Pin) -> Result<(), Error> {
    let text = json!({"fingerprint": pin.fingerprint, "definition": pin.definition, "atMs": crate::edge::now_ms()}).to_string();
    storage.put_raw(key, wasm_bindgen::JsValue::from_str(&text)).await?;
    Ok(())
}

fn answer(status: u16, body: &Value) -> Response {
    ResponseBuilder::new().with_status(status).fixed(body.to_string().into_bytes())
}

/// What is kept of one source's tools.
async fn known(storage: &Storage, source: &str) -> Result<Known, Error> {
    let mut known = Known { seen: storage.get::<String>(&format!("{SEEN}{source}")).await.ok().flatten().is_some(), ..Known::default() };
    let of = |prefix: &str| format!("{prefix}{source}\n");
    for (key, text) in keys(storage, &of(PIN)).await? {
        if let (Some(name), Some((pin, _))) = (key.strip_prefix(&of(PIN)), stored(&text)) {
            known.pins.insert(name.to_string(), pin);
        }
    }
    for (key, text) in keys(storage, &of(HELD)).await? {
        if let (Some(name), Some((pin, _))) = (key.strip_prefix(&of(HELD)), stored(&text)) {
            known.held.insert(name.to_string(), pin.fingerprint);
        }
    }
    for (key, text) in keys(storage, &of(REJECTED)).await? {
        if let Some(name) = key.strip_prefix(&of(REJECTED)) {
            known.rejected.insert(name.to_string(), text);
        }
    }
    Ok(known)
}

/// The registry's pin operations, inside its object.
pub async fn serve(state: &State, env: &Env, op: crate::envelope::Op, server_index: usize, body: &[u8]) -> Result<Response, Error> {
    use crate::envelope::Op;
    let storage = state.storage();
    let request: Value = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(format!("pins: {e}")))?;
    let text = |name: &str| request.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
    match op {
        Op::PinsCheck => {
            let (source, server, prefix) = (text("source"), text("server"), text("prefix"));
            let listed = request.get("tools").and_then(Value::as_array).cloned().unwrap_or_default();
            let known = known(&storage, &source).await?;
            let outcome = crate::pins::check(Mode::parse(&text("mode")), &listed, &known);
            for (name, pin) in &outcome.pin {
                put(&storage, &format!("{PIN}{source}\n{name}"), pin).await?;
            }
            for (name, pin) in &outcome.hold {
                put(&storage, &format!("{HELD}{source}\n{name}"), pin).await?;
            }
            if !known.seen {
                storage.put_raw(&format!("{SEEN}{source}"), wasm_bindgen::JsValue::from_str("1")).await?;
            }
            // Recorded after the answer, so that the read never waits on the audit log.
            for (name, pin) in &outcome.hold {
                let fields = known.pins.get(name).map_or_else(|| "a new tool".to_string(), |old| format!("changed: {}", crate::pins::changed(&old.definition, &pin.definition).join(", ")));
                let detail = format!("upstream {source}: {fields}; held for approval (fingerprint {})", pin.fingerprint.get(..12).unwrap_or_default());
                crate::edge::audit::record_later(env, None, Event { at_ms: crate::edge::now_ms(), actor: SYSTEM.into(), action: Action::DefinitionHeld, server: server.clone(), target: format!("{prefix}{name}"), detail });
            }
            Ok(answer(200, &json!({"tools": outcome.serve})))
        }
        Op::PinsHeld => {
            let mut held = Vec::new();
            for (key, text) in keys(&storage, HELD).await? {
                let Some((source, name)) = key.strip_prefix(HELD).and_then(|k| k.split_once('\n')) else { continue };
                let Some((pin, at_ms)) = stored(&text) else { continue };
                let old = storage.get::<String>(&format!("{PIN}{source}\n{name}")).await.ok().flatten().and_then(|t| stored(&t)).map(|(p, _)| p.definition);
                held.push(json!({"upstream": source, "tool": name, "fingerprint": pin.fingerprint, "atMs": at_ms, "old": old, "new": pin.definition}));
            }
            Ok(answer(200, &Value::Array(held)))
        }
        Op::PinsDecide => {
            let (source, name, fingerprint) = (text("upstream"), text("tool"), text("fingerprint"));
            let key = format!("{source}\n{name}");
            let held = storage.get::<String>(&format!("{HELD}{key}")).await.ok().flatten().and_then(|t| stored(&t)).map(|(p, _)| p);
            let Some(held) = held.filter(|h| crate::auth::same_secret(&h.fingerprint, &fingerprint)) else {
                return Ok(answer(404, &json!({})));
            };
            let old = storage.get::<String>(&format!("{PIN}{key}")).await.ok().flatten().and_then(|t| stored(&t)).map(|(p, _)| p.definition);
            storage.delete(&format!("{HELD}{key}")).await?;
            let approve = request.get("approve").and_then(Value::as_bool).unwrap_or(false);
            if approve {
                put(&storage, &format!("{PIN}{key}"), &held).await?;
                storage.delete(&format!("{REJECTED}{key}")).await?;
                // The sessions list it again, through the upstream's newest read.
                super::registry::fan_out(&storage, env, server_index, &[crate::method::Method::ToolsListChanged.name().to_string()]).await?;
            } else {
                storage.put_raw(&format!("{REJECTED}{key}"), wasm_bindgen::JsValue::from_str(&held.fingerprint)).await?;
            }
            Ok(answer(200, &json!({"old": old, "new": held.definition})))
        }
        _ => Err(Error::Internal("not a pins operation".into())),
    }
}
