//! `rateLimits` around each tool call (`crate::limits`): before it runs, one take from the
//! counting object of each rate or quota it meets (`limit:<digest of server, limit, key>`),
//! given back when a later one refuses, then a slot from the slots object of each concurrency
//! limit (`slots:<digest>`), held until the call ends however it ends (a dropped `Held` gives
//! its slots back; a lease ends a slot whose isolate never could). Wraps `calls::complete`, so
//! every path that runs a call (a session's object, a lease, the stateless revision, `/stream`,
//! tasks, deferred calls) meets the same limits.

use std::cell::RefCell;

use worker::Env;

use crate::catalog::Server;
use crate::envelope::Op;
use crate::error::{Error, Refused};
use crate::limits::{Answer, Caller, Command, Limit, Rule, SlotCommand};
use crate::protocol::action::{CallKind, PendingCall};

thread_local! {
    static HOME: RefCell<Option<Env>> = const { RefCell::new(None) };
}

/// Called when a Worker's request or a Durable Object starts: the environment the objects are
/// reached through.
pub fn home(env: &Env) {
    HOME.with(|h| {
        if h.borrow().is_none() {
            *h.borrow_mut() = Some(env.clone());
        }
    });
}

fn env() -> Result<Env, Error> {
    HOME.with(|h| h.borrow().clone()).ok_or_else(|| Error::Internal("limits: no environment".into()))
}

/// How long a slot is held at the most, beyond the call's own bound: a crashed isolate's slot
/// comes back then.
const LEASE_SLACK_MS: u64 = 30_000;

/// Slots held by a running call, given back when it is dropped.
#[derive(Default)]
pub struct Held(Vec<(String, SlotCommand)>);

impl Held {
    /// Gives the slots back now (the call is over), rather than after the request ends.
    pub async fn release(mut self) {
        for (name, release) in std::mem::take(&mut self.0) {
            let _ = ask(&name, Op::Slot, &release).await;
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let held = std::mem::take(&mut self.0);
        if held.is_empty() {
            return;
        }
        wasm_bindgen_futures::spawn_local(async move {
            for (name, release) in held {
                let _ = ask(&name, Op::Slot, &release).await;
            }
        });
    }
}

/// The object of a limit and key: a digest, so no key a client chooses (its length, its bytes)
/// reaches an object's name.
fn object(prefix: &str, server: &Server, limit: &Limit, key: &str) -> String {
    let mut named = String::with_capacity(server.name.len() + limit.name.len() + key.len() + 2);
    for part in [server.name.as_str(), limit.name.as_str(), key] {
        named.push_str(part);
        named.push('\n');
    }
    let mut name = String::from(prefix);
    name.push_str(&crate::oauth::digest(&named));
    name
}

async fn ask<T: serde::Serialize>(name: &str, op: Op, command: &T) -> Result<Vec<u8>, Error> {
    let body = serde_json::to_string(command).map_err(|e| Error::Internal(e.to_string()))?;
    let mut response = crate::edge::object::registry::call(&env()?, name, op, 0, None, body).await?;
    let bytes = response.bytes().await?;
    if response.status_code() != 200 {
        return Err(Error::Internal(format!("the limit object answered {}", response.status_code())));
    }
    Ok(bytes)
}

async fn count(name: &str, command: Command) -> Result<Answer, Error> {
    serde_json::from_slice(&ask(name, Op::Limit, &command).await?).map_err(|e| Error::Internal(format!("the limit object's answer: {e}")))
}

/// The upstream a call goes to: an upstream MCP server's name, or the host (and port) of an
/// HTTP tool's request.
fn upstream<'a>(server: &'a Server, call: &'a PendingCall) -> &'a str {
    if let Some(target) = server.tool(call.label()).and_then(|t| t.mcp.as_ref()) {
        if let Some(up) = server.upstreams.get(target.source) {
            return &up.name;
        }
    }
    let url = call.http.url.as_str();
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority.rsplit_once('@').map_or(authority, |(_, host)| host)
}

fn refused(limit: &Limit, retry_after_ms: u64, now_ms: u64) -> Error {
    Error::Limited(Box::new(Refused { limit: limit.name.clone(), retry_after_ms: retry_after_ms.max(1), policy: limit.policy(now_ms) }))
}

/// Takes what the call needs from each limit it meets, or the refusal; `Held` gives its slots
/// back when dropped. Calls other than tools' are not limited.
pub async fn admit(server: &Server, principal: &str, call: &PendingCall) -> Result<Held, Error> {
    let CallKind::Tool(tool) = &call.kind else { return Ok(Held::default()) };
    let applying: Vec<&Limit> = server.rate_limits.iter().filter(|l| l.applies(tool)).collect();
    if applying.is_empty() {
        return Ok(Held::default());
    }
    let caller = Caller { principal, client: Caller::client_of(principal), tool, server: &server.name, upstream: upstream(server, call) };
    let now = crate::edge::now_ms();
    let mut taken: Vec<(String, Rule)> = Vec::new();
    let give_back = |taken: Vec<(String, Rule)>| async move {
        for (name, rule) in taken {
            let _ = count(&name, Command::Give { rule, now_ms: now }).await;
        }
    };
    for limit in applying.iter().filter(|l| l.rate.is_some() || l.quota.is_some()) {
        let name = object("limit:", server, limit, &limit.key(&caller));
        let rule = limit.rule();
        let answer = match count(&name, Command::Take { rule, now_ms: now }).await {
            Ok(answer) => answer,
            Err(e) => {
                give_back(taken).await;
                return Err(e);
            }
        };
        if !answer.allowed {
            give_back(taken).await;
            return Err(refused(limit, answer.retry_after_ms, now));
        }
        taken.push((name, rule));
    }
    let mut held = Held::default();
    for limit in &applying {
        let Some(concurrency) = limit.concurrency else { continue };
        let name = object("slots:", server, limit, &limit.key(&caller));
        let id = crate::edge::ids::random_id()?;
        let deferred_ms = server.tool(tool).and_then(|t| t.deferral).map_or(0, |(_, ms)| ms);
        let lease_ms = call.http.timeout_ms.max(deferred_ms) + LEASE_SLACK_MS;
        let granted = ask(&name, Op::Slot, &SlotCommand::Acquire { limit: concurrency, id: id.clone(), lease_ms }).await.map(|b| b == b"true");
        match granted {
            Ok(true) => held.0.push((name, SlotCommand::Release { limit: concurrency, id, lease_ms })),
            other => {
                drop(held);
                give_back(taken).await;
                other?;
                return Err(refused(limit, 1000, now));
            }
        }
    }
    Ok(held)
}

/// A principal's state under each limit of a server that counts per principal (or client):
/// `[{limit, remaining, resetMs, policy}]` for rates and quotas, `{limit, inFlight, queued}`
/// for concurrency. Limits keyed by tool or upstream are read for no particular tool.
pub async fn state(server: &Server, principal: &str) -> Result<Vec<serde_json::Value>, Error> {
    let caller = Caller { principal, client: Caller::client_of(principal), tool: "", server: &server.name, upstream: "" };
    let now = crate::edge::now_ms();
    let mut out = Vec::with_capacity(server.rate_limits.len());
    for limit in &server.rate_limits {
        let key = limit.key(&caller);
        let mut entry = serde_json::Map::new();
        entry.insert("limit".into(), limit.name.clone().into());
        entry.insert("policy".into(), limit.policy(now).into());
        if limit.rate.is_some() || limit.quota.is_some() {
            let answer = count(&object("limit:", server, limit, &key), Command::Read { rule: limit.rule(), now_ms: now }).await?;
            entry.insert("remaining".into(), answer.remaining.into());
            entry.insert("resetMs".into(), answer.reset_ms.into());
        }
        if limit.concurrency.is_some() {
            let counts: [u64; 2] = serde_json::from_slice(&ask(&object("slots:", server, limit, &key), Op::Slot, &SlotCommand::Read).await?).unwrap_or_default();
            entry.insert("inFlight".into(), counts[0].into());
            entry.insert("queued".into(), counts[1].into());
        }
        out.push(serde_json::Value::Object(entry));
    }
    Ok(out)
}
