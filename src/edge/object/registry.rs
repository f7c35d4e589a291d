//! Indexes across sessions, each kept in a Durable Object of its own: who subscribed to which
//! resource (and the fan-out of `notifications/resources/updated` when an upstream announces a
//! change), whose streams want list changes (and the fan-out of `notifications/tools/list_changed`
//! and its kin after a live change, or when an upstream MCP server's lists change), and which sessions each authenticated principal has open
//! (for its session limit).

use std::collections::HashMap;

use worker::{Env, Response, ResponseBuilder, State};

use crate::envelope::{Envelope, Op};
use crate::catalog::Server;
use crate::error::Error;
use crate::upstream::mcp::changes::Read;

const PREFIX: &str = "sub:";
const SESSIONS_PREFIX: &str = "session:";
const LISTS_PREFIX: &str = "lists:";
/// The size of each task result a principal keeps, by `<object>|<task>`.
const BYTES_PREFIX: &str = "bytes:";
/// The newest read of each upstream MCP server's lists, by its name.
const READS_PREFIX: &str = "reads:";

/// Sends one operation to a Durable Object of the sessions namespace.
pub async fn call(env: &Env, name: &str, op: Op, server_index: usize, session_id: Option<&str>, body: String) -> Result<Response, Error> {
    // Test builds only: the objects a test names fail, as a store that is down would.
    #[cfg(mcp_edge_test_hooks)]
    if crate::edge::secret(env, "MCP_EDGE_TEST_FAILING_OBJECTS").is_some_and(|names| names.split(',').any(|n| n == name)) {
        return Err(Error::Internal(format!("the object {name} is down (test build)")));
    }
    let stub = crate::edge::hop::object_stub(env, name)?;
    let envelope = Envelope { op, server: server_index, session_id: session_id.unwrap_or_default().into(), object: Some(name.into()), ..Envelope::default() };
    Ok(crate::edge::hop::send_to_object(&stub, &envelope.seal(body.as_bytes())).await?)
}

/// An answer's status and text, to come.
type Answer<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(u16, String), Error>> + 'a>>;

/// `call`, and the answer's status and text: boxed, so that its code is in the module once
/// however many callers await it.
pub fn ask<'a>(env: &'a Env, name: &'a str, op: Op, server_index: usize, body: String) -> Answer<'a> {
    Box::pin(async move {
        let mut reply = call(env, name, op, server_index, None, body).await?;
        Ok((reply.status_code(), reply.text().await?))
    })
}

/// The registry object's name for a server.
pub fn name(server: &Server) -> String {
    format!("registry:{}", server.route.as_str())
}

/// Records the URIs a session is subscribed to (none: forget the session).
pub async fn record(env: &Env, server: &Server, server_index: usize, session_id: &str, uris: &[String]) -> Result<(), Error> {
    let body = serde_json::to_string(uris).unwrap_or_default();
    call(env, &name(server), Op::RegistrySet, server_index, Some(session_id), body).await?;
    Ok(())
}

/// Records which list notifications a session's stream wants (none: forget the session).
pub async fn listen(env: &Env, server: &Server, server_index: usize, object: &str, methods: &[String]) -> Result<(), Error> {
    let body = serde_json::to_string(methods).unwrap_or_default();
    call(env, &name(server), Op::RegistryListen, server_index, Some(object), body).await?;
    Ok(())
}

/// Forgets an ending session's resource subscriptions and list interest, where it had any.
pub async fn forget(env: &Env, server: &Server, server_index: usize, object: &str, session: &crate::session::Session) -> Result<(), Error> {
    if !session.subscriptions.is_empty() {
        record(env, server, server_index, object, &[]).await?;
    }
    if !session.lists.is_empty() {
        listen(env, server, server_index, object, &[]).await?;
    }
    Ok(())
}

/// Sessions told at once: a change reaches every listener in the time of a few hops, not one
/// hop per session in turn (which outlasted the time a request's `waitUntil` is given once a
/// server had a few dozen listening sessions), and no more requests are open at a time than a
/// runtime allows one invocation.
const FAN_OUT_AT_ONCE: usize = 16;

/// Sends each of `methods` to every session whose stream wants it, up to [`FAN_OUT_AT_ONCE`] at
/// once; a session that is gone is forgotten. Returns how many sessions were told.
async fn fan_out(storage: &worker::Storage, env: &Env, server_index: usize, methods: &[String]) -> Result<usize, Error> {
    let listeners = super::keys(storage, LISTS_PREFIX).await?;
    let mut told = 0;
    for batch in listeners.chunks(FAN_OUT_AT_ONCE) {
        let outcomes = futures::future::join_all(batch.iter().map(|(key, text)| tell(env, server_index, methods, key, text))).await;
        for (key, outcome) in batch.iter().map(|(key, _)| key).zip(outcomes) {
            match outcome {
                Told::Gone => {
                    storage.delete(key).await?;
                }
                Told::Reached => told += 1,
                Told::Not => {}
            }
        }
    }
    Ok(told)
}

enum Told {
    Reached,
    /// The session's object answered 404: it is gone, and forgotten.
    Gone,
    /// Not now: the object may be busy moving; the next change tries again.
    Not,
}

/// Tells one listening session (its registry `key`, the methods it wants as `text`).
async fn tell(env: &Env, server_index: usize, methods: &[String], key: &str, text: &str) -> Told {
    let wanted: Vec<String> = serde_json::from_slice(text.as_bytes()).unwrap_or_default();
    let object = key.trim_start_matches(LISTS_PREFIX);
    let mut told = Told::Not;
    for method in methods.iter().filter(|m| wanted.contains(m)).filter_map(|m| crate::method::Method::parse(m)) {
        let notification = crate::jsonrpc::notification(method, serde_json::json!({}));
        match call(env, object, Op::Notify, server_index, Some(object), notification).await {
            Ok(reply) if reply.status_code() == 404 => return Told::Gone,
            Ok(reply) if reply.status_code() < 300 => told = Told::Reached,
            _ => {}
        }
    }
    told
}

/// How a principal's objects are named after it: as before session objects had a prefix (the
/// anonymous principal, whose tasks are counted per session object, has none).
fn principal_key(principal: &str) -> String {
    if principal == crate::auth::ANONYMOUS {
        return String::new();
    }
    format!(":{}", crate::auth::principal_digest(principal))
}

/// The object that counts a principal's sessions on a server.
fn principal_object(server: &Server, principal: &str) -> String {
    format!("principal:{}|{}", server.route.as_str(), principal_key(principal))
}

/// Records a new session of `principal`, unless it already has `max` open: then `Busy`.
pub async fn open_session(env: &Env, server: &Server, server_index: usize, principal: &str, session_id: &str) -> Result<(), Error> {
    if principal == crate::auth::ANONYMOUS {
        return Ok(());
    }
    let max = server.limits.max_sessions_per_principal;
    let reply = call(env, &principal_object(server, principal), Op::PrincipalOpen, server_index, Some(session_id), max.to_string()).await?;
    if reply.status_code() == 429 {
        return Err(Error::Busy(format!("at most {max} sessions may be open per principal; end one (DELETE) or let it expire")));
    }
    Ok(())
}

/// The object that counts a principal's tasks on a server (as the other counts its sessions).
fn tasks_object(server: &Server, principal: &str) -> String {
    format!("principal-tasks:{}|{}", server.route.as_str(), principal_key(principal))
}

/// Records a new task of `principal` (kept by the session object `object`), unless it already
/// keeps `tasks.maxPerPrincipal`: then `Busy`. An anonymous principal's tasks are counted by
/// their session alone.
pub async fn open_task(env: &Env, server: &Server, server_index: usize, principal: &str, object: &str, task: &str) -> Result<(), Error> {
    if principal == crate::auth::ANONYMOUS {
        return Ok(());
    }
    let max = server.tasks.max_per_principal;
    let reply = call(env, &tasks_object(server, principal), Op::PrincipalOpen, server_index, Some(&format!("{object}|{task}")), max.to_string()).await?;
    if reply.status_code() == 429 {
        return Err(Error::Busy(format!("at most {max} tasks may be kept per principal; cancel one, or wait until one expires")));
    }
    Ok(())
}

/// Whether the principal's tasks have room for a result of `bytes` more (`tasks.
/// maxTotalResultBytes`); recorded if they have. An anonymous principal's are counted by its
/// session, so the registry is not asked.
pub async fn keep_result(env: &Env, server: &Server, server_index: usize, principal: &str, object: &str, task: &str, bytes: usize) -> Result<bool, Error> {
    let body = format!("{bytes} {}", server.tasks.max_total_result_bytes);
    let reply = call(env, &tasks_object(server, principal), Op::PrincipalKeep, server_index, Some(&format!("{object}|{task}")), body).await?;
    Ok(reply.status_code() != 429)
}

/// Forgets a task of `principal` that expired, or ended with its session.
pub async fn close_task(env: &Env, server: &Server, server_index: usize, principal: &str, object: &str, task: &str) -> Result<(), Error> {
    if principal != crate::auth::ANONYMOUS {
        call(env, &tasks_object(server, principal), Op::PrincipalClose, server_index, Some(&format!("{object}|{task}")), String::new()).await?;
    }
    Ok(())
}

/// Forgets an ended session of `principal`.
pub async fn close_session(env: &Env, server: &Server, server_index: usize, principal: &str, session_id: &str) -> Result<(), Error> {
    if principal != crate::auth::ANONYMOUS {
        call(env, &principal_object(server, principal), Op::PrincipalClose, server_index, Some(session_id), String::new()).await?;
    }
    Ok(())
}

/// Serves the registry's own operations, inside its Durable Object.
pub async fn serve(state: &State, env: &Env, op: Op, server_index: usize, session_id: &str, body: &[u8]) -> Result<Response, Error> {
    let storage = state.storage();
    match op {
        Op::RegistrySet => {
            let uris: Vec<String> = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(e.to_string()))?;
            let key = format!("{PREFIX}{session_id}");
            if uris.is_empty() {
                storage.delete(&key).await?;
            } else {
                // Stored as an array of strings (`put` would convert it with serde-wasm-bindgen).
                storage.put_raw(&key, uris.iter().map(|u| wasm_bindgen::JsValue::from_str(u)).collect::<js_sys::Array>()).await?;
            }
            Ok(ResponseBuilder::new().with_status(204).empty())
        }
        Op::RegistryNotify => {
            let uri = String::from_utf8_lossy(body).to_string();
            let entries = crate::edge::listed(storage.as_raw(), PREFIX).await.map_err(worker::Error::from)?;
            let mut subscribers = Vec::new();
            for entry in entries.entries() {
                let Ok(pair) = entry else { continue };
                let pair = js_sys::Array::from(&pair);
                let key = pair.get(0).as_string().unwrap_or_default();
                let uris: Vec<String> = serde_wasm_uris(&pair.get(1));
                if uris.contains(&uri) {
                    subscribers.push(key.trim_start_matches(PREFIX).to_string());
                }
            }
            let notification = crate::protocol::resources::updated(&uri);
            let mut delivered = 0;
            for session in &subscribers {
                let reply = call(env, session, Op::Notify, server_index, Some(session), notification.clone()).await;
                if matches!(reply, Ok(ref r) if r.status_code() == 200) {
                    delivered += 1;
                }
            }
            let counts: HashMap<&str, usize> = [("subscribers", subscribers.len()), ("delivered", delivered)].into();
            Ok(Response::from_json(&counts)?)
        }
        Op::RegistryListen => {
            let methods: Vec<String> = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(e.to_string()))?;
            let key = format!("{LISTS_PREFIX}{session_id}");
            if methods.is_empty() {
                storage.delete(&key).await?;
            } else {
                super::write(&storage, &key, &methods).await?;
            }
            Ok(ResponseBuilder::new().with_status(204).empty())
        }
        Op::RegistryListChanged => {
            let methods: Vec<String> = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(e.to_string()))?;
            let told = fan_out(&storage, env, server_index, &methods).await?;
            Ok(Response::from_json(&HashMap::from([("told", told)]))?)
        }
        Op::RegistryUpstreamRead => {
            let read = Read::from_json(body).ok_or_else(|| Error::InvalidRequest("not a read of an upstream's lists".into()))?;
            let key = format!("{READS_PREFIX}{}", read.source);
            let last = storage.get::<String>(&key).await.ok().flatten().and_then(|text| Read::from_json(text.as_bytes()));
            let Some(changes) = read.changes(last.as_ref()) else {
                return Ok(Response::from_json(&HashMap::from([("told", 0)]))?);
            };
            storage.put_raw(&key, wasm_bindgen::JsValue::from_str(&read.to_json())).await?;
            let methods: Vec<String> = changes.iter().map(|m| m.name().to_string()).collect();
            let told = if methods.is_empty() { 0 } else { fan_out(&storage, env, server_index, &methods).await? };
            Ok(Response::from_json(&HashMap::from([("told", told)]))?)
        }
        Op::PrincipalOpen => {
            let max: usize = String::from_utf8_lossy(body).parse().unwrap_or(usize::MAX);
            let open = crate::edge::listed(storage.as_raw(), SESSIONS_PREFIX).await.map_err(worker::Error::from)?.size() as usize;
            if open >= max {
                return Ok(ResponseBuilder::new().with_status(429).empty());
            }
            storage.put_raw(&format!("{SESSIONS_PREFIX}{session_id}"), crate::edge::now_ms() as f64).await?;
            Ok(ResponseBuilder::new().with_status(204).empty())
        }
        Op::PrincipalKeep => {
            // "<bytes> <max>": this entry's result, kept if the others' and it fit.
            let text = String::from_utf8_lossy(body);
            // Integers: a float parser would bring its tables into the module.
            let mut numbers = text.split(' ').map(|n| n.parse::<u64>().unwrap_or(u64::MAX));
            let (bytes, max) = (numbers.next().unwrap_or(u64::MAX) as f64, numbers.next().unwrap_or(0) as f64);
            let key = format!("{BYTES_PREFIX}{session_id}");
            let mut others = 0.0;
            crate::edge::listed(storage.as_raw(), BYTES_PREFIX).await.map_err(worker::Error::from)?.for_each(&mut |value, name| {
                if name.as_string().as_deref() != Some(key.as_str()) {
                    others += value.as_f64().unwrap_or(0.0);
                }
            });
            if others + bytes > max {
                return Ok(ResponseBuilder::new().with_status(429).empty());
            }
            storage.put_raw(&key, bytes).await?;
            Ok(ResponseBuilder::new().with_status(204).empty())
        }
        Op::PrincipalClose => {
            storage.delete(&format!("{SESSIONS_PREFIX}{session_id}")).await?;
            storage.delete(&format!("{BYTES_PREFIX}{session_id}")).await?;
            Ok(ResponseBuilder::new().with_status(204).empty())
        }
        other => Err(Error::Internal(format!("not a registry operation: {other:?}"))),
    }
}

/// Reads a stored list of URIs from the JS value storage returned.
fn serde_wasm_uris(value: &wasm_bindgen::JsValue) -> Vec<String> {
    js_sys::Array::from(value).iter().filter_map(|v| v.as_string()).collect()
}

/// `POST` on a server's notify route: an upstream announces that a resource changed.
pub async fn announce(mut req: crate::edge::http::Incoming, env: &Env, server: &Server, server_index: usize) -> Result<Response, Error> {
    let Some((_, secret_name)) = &server.notify else {
        return Err(Error::RouteNotFound(req.head().path().to_string()));
    };
    let secret = crate::edge::secret(env, secret_name).ok_or_else(|| Error::Config(format!("the secret {secret_name} is not set")))?;
    if !crate::auth::bearer_matches(req.header("authorization").as_deref(), &secret) {
        return Err(Error::Unauthorized { challenge: "Bearer realm=\"mcp-edge-notify\"".into(), why: "wrong notify token".into() });
    }
    let body = req.bytes().await?;
    if body.len() as u64 > server.max_body_bytes {
        return Err(Error::PayloadTooLarge(server.max_body_bytes));
    }
    let value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| Error::Parse(e.to_string()))?;
    let uri = value.get("uri").and_then(|u| u.as_str()).ok_or_else(|| Error::InvalidRequest("the body must be {\"uri\": \"<resource URI>\"}".into()))?;
    call(env, &name(server), Op::RegistryNotify, server_index, None, uri.to_string()).await
}
