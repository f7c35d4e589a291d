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
use crate::limits::{self, Answer, Caller, Command, Limit, Op as Count, Rule, SlotCommand};
use crate::protocol::action::{CallKind, PendingCall};

thread_local! {
    /// Batches of a fast rate this isolate took from their objects: the object's name, the calls
    /// left, and until when they may be spent (`limits::batch`, `limits::BATCH_MS`).
    static BATCHES: RefCell<Vec<(String, u32, u64)>> = const { RefCell::new(Vec::new()) };
}

/// One call from this isolate's batch for `name`, if it holds one still good.
fn from_batch(name: &str, now: u64) -> bool {
    BATCHES.with(|b| match b.borrow_mut().iter_mut().find(|(n, left, until)| n == name && *left > 0 && *until > now) {
        Some(batch) => {
            batch.1 -= 1;
            true
        }
        None => false,
    })
}

/// Keeps what is left of a batch just taken, beside what a call at the same time took for
/// the same object; spent and stale batches go.
fn keep_batch(name: &str, left: u32, now: u64) {
    BATCHES.with(|b| {
        let mut b = b.borrow_mut();
        b.retain(|(_, l, until)| *until > now && *l > 0);
        if let Some(batch) = b.iter_mut().find(|(n, ..)| n == name) {
            batch.1 = batch.1.saturating_add(left);
        } else if left > 0 && b.len() < 1024 {
            b.push((name.to_string(), left, now + limits::BATCH_MS));
        }
    });
}

/// The environment the counting objects are reached through.
fn env() -> Result<Env, Error> {
    crate::edge::kept_env().ok_or_else(|| Error::Internal("limits: no environment".into()))
}

/// How long a slot is held at the most, beyond the call's own bound: a crashed isolate's slot
/// comes back then.
const LEASE_SLACK_MS: u64 = 30_000;

/// Slots held by a running call, given back when it is dropped.
#[derive(Default)]
pub struct Held(Vec<(String, SlotCommand)>);

async fn give_slots(held: Vec<(String, SlotCommand)>) {
    for (name, release) in held {
        let _ = ask(&name, Op::Slot, release.line()).await;
    }
}

impl Held {
    /// Gives the slots back now (the call is over), rather than after the request ends.
    pub async fn release(mut self) {
        give_slots(std::mem::take(&mut self.0)).await;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            wasm_bindgen_futures::spawn_local(give_slots(std::mem::take(&mut self.0)));
        }
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

/// One command to a limit's object; boxed, so each caller's state machine holds a pointer.
fn ask<'a>(name: &'a str, op: Op, body: String) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<u8>, Error>> + 'a>> {
    crate::edge::apart(async move {
        let mut response = crate::edge::object::registry::call(&env()?, name, op, 0, None, body).await?;
        let bytes = response.bytes().await?;
        if response.status_code() != 200 {
            return Err(Error::Internal("the limit object failed".into()));
        }
        Ok(bytes)
    })
}

async fn count(name: &str, op: Count, rule: Rule, now_ms: u64) -> Result<Answer, Error> {
    let answer = ask(name, Op::Limit, Command { op, rule, now_ms }.line()).await?;
    std::str::from_utf8(&answer).ok().and_then(Answer::parse).ok_or_else(|| Error::Internal("the limit object's answer".into()))
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
pub async fn admit(server: &Server, (principal, client): (&str, Option<&str>), call: &PendingCall) -> Result<Held, Error> {
    let CallKind::Tool(tool) = &call.kind else { return Ok(Held::default()) };
    let applying: Vec<&Limit> = server.rate_limits.iter().filter(|l| l.applies(tool)).collect();
    if applying.is_empty() {
        return Ok(Held::default());
    }
    let caller = Caller { principal, client: Caller::client_of(principal, client), tool, server: &server.name, upstream: upstream(server, call) };
    let now = crate::edge::now_ms();
    let mut taken: Vec<(String, Rule)> = Vec::new();
    let give_back = |taken: Vec<(String, Rule)>| async move {
        for (name, rule) in taken {
            let _ = count(&name, Count::Give, rule, now).await;
        }
    };
    for limit in applying.iter().filter(|l| l.rate.is_some() || l.quota.is_some()) {
        let name = object("limit:", server, limit, &limit.key(&caller));
        let rule = limit.rule();
        // A fast rate alone is taken by the batch: most calls spend this isolate's share.
        let batched = limit.quota.is_none() && limit.rate.is_some_and(|r| limits::batch(r) > 1);
        if batched && from_batch(&name, now) {
            taken.push((name, rule));
            continue;
        }
        let answer = match count(&name, if batched { Count::Batch } else { Count::Take }, rule, now).await {
            Ok(answer) => answer,
            Err(e) => {
                give_back(taken).await;
                return Err(e);
            }
        };
        // Refused, while a call at the same time brought a batch: the call spends it.
        if !answer.allowed && batched && from_batch(&name, now) {
            taken.push((name, rule));
            continue;
        }
        if !answer.allowed {
            give_back(taken).await;
            return Err(refused(limit, answer.retry_after_ms, now));
        }
        if batched {
            keep_batch(&name, answer.granted.saturating_sub(1), now);
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
        let granted = ask(&name, Op::Slot, SlotCommand::Acquire { limit: concurrency, id: id.clone(), lease_ms }.line()).await.map(|b| b == b"1");
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

/// A principal's state under the `rateLimits` of `servers`, as JSON text:
/// `{"principal", "servers": [{"server", "limits": [{limit, policy, remaining, resetMs} for rates
/// and quotas, {limit, policy, inFlight, queued} for concurrency]}]}`. Limits keyed by tool or
/// upstream are read for no particular tool or upstream. Limit names need no escaping: the
/// configuration allows no `"` or `\\` in them.
pub async fn state<'a>(servers: impl Iterator<Item = &'a Server>, principal: &str) -> Result<String, Error> {
    let now = crate::edge::now_ms();
    let quoted = |text: &str| serde_json::to_string(text).unwrap_or_default();
    let mut out = ["{\"principal\":", &quoted(principal), ",\"servers\":["].concat();
    for (i, server) in servers.filter(|s| !s.rate_limits.is_empty()).enumerate() {
        let caller = Caller { principal, client: Caller::client_of(principal, None), tool: "", server: &server.name, upstream: "" };
        out.push_str(if i > 0 { ",{\"server\":" } else { "{\"server\":" });
        out.push_str(&quoted(&server.name));
        out.push_str(",\"limits\":[");
        for (j, limit) in server.rate_limits.iter().enumerate() {
            let key = limit.key(&caller);
            out.push_str(if j > 0 { ",{\"limit\":\"" } else { "{\"limit\":\"" });
            out.push_str(&limit.name);
            out.push_str("\",\"policy\":");
            out.push_str(&quoted(&limit.policy(now)));
            if limit.rate.is_some() || limit.quota.is_some() {
                let answer = count(&object("limit:", server, limit, &key), Count::Read, limit.rule(), now).await?;
                out.push_str(",\"remaining\":");
                out.push_str(&answer.remaining.to_string());
                out.push_str(",\"resetMs\":");
                out.push_str(&answer.reset_ms.to_string());
            }
            if limit.concurrency.is_some() {
                let counts = ask(&object("slots:", server, limit, &key), Op::Slot, SlotCommand::Read.line()).await?;
                let counts = String::from_utf8_lossy(&counts);
                let (held, waiting) = counts.split_once(' ').unwrap_or(("0", "0"));
                out.push_str(",\"inFlight\":");
                out.push_str(held);
                out.push_str(",\"queued\":");
                out.push_str(waiting);
            }
            out.push('}');
        }
        out.push_str("]}");
    }
    out.push_str("]}");
    Ok(out)
}
