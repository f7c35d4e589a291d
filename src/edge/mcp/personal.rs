//! The lists of upstream MCP servers reached with each user's own token (a per-user connection):
//! read with the calling principal's token, kept per principal in this isolate (at most
//! [`PRINCIPALS`] principals, each for the source's `catalogTtlSeconds`), and served to that
//! principal only, in a copy of the server made for it. A principal who has not connected gets
//! one tool in their place, `<prefix>connect`, whose call asks them to connect
//! (`connections::call`) and then says so, with `notifications/tools/list_changed`. Lists are
//! read again when due, and when this isolate no longer holds the token they were read with
//! (it expired from the cache, or the user disconnected): so the token is read from storage no
//! more often than for calls. Servers without such upstreams are served as they are, no copy.

use std::cell::RefCell;
use std::sync::Arc;

use serde_json::{json, Value};
use worker::Env;

use super::discovery::{self, Lists};
use crate::auth::Principal;
use crate::catalog::{Catalog, Server};
use crate::edge::now_ms;
use crate::upstream::mcp::Source;

/// Principals (per server) whose lists an isolate keeps; the least recently served goes first.
const PRINCIPALS: usize = 300;
/// A principal who has not connected is looked up again after this (one read of their object).
const UNCONNECTED_MS: u64 = 5_000;

/// One principal's lists of one server's per-user sources (`None`: not connected), and the
/// server built with them from `base`.
struct Own {
    key: String,
    lists: Vec<(usize, Option<Lists>)>,
    due_ms: u64,
    base: Arc<Server>,
    served: Arc<Server>,
}

thread_local! {
    /// Most recently served last.
    static OWN: RefCell<Vec<Own>> = const { RefCell::new(Vec::new()) };
}

/// The server as `principal` is served it: `server` itself when none of its upstreams lists per
/// user, else a copy with that principal's lists (read when due) or connect tools.
pub async fn served(env: &Env, server: Arc<Server>, principal: &Principal) -> Arc<Server> {
    let Ok(catalog) = crate::edge::configured::base_catalog() else { return server };
    if !server.upstreams.iter().any(|s| discovery::per_user(&catalog, s)) {
        return server;
    }
    let key = format!("{}\n{}", server.route.as_str(), principal.id);
    let now = now_ms();
    let known = OWN.with(|o| {
        let mut o = o.borrow_mut();
        o.iter().position(|e| e.key == key).map(|at| o.remove(at))
    });
    // Lists read with a token this isolate no longer holds (it expired here, or the user
    // disconnected) are read again: with the token read anew, or as the connect tool.
    let held = |own: &Own| own.lists.iter().filter(|(_, l)| l.is_some()).all(|(i, _)| server.upstreams.get(*i).and_then(|s| s.connection.as_deref()).is_none_or(|name| crate::edge::connections::cached(&principal.id, name).is_some()));
    let own = match known {
        Some(own) if own.due_ms > now && held(&own) && Arc::ptr_eq(&own.base, &server) => own,
        Some(own) if own.due_ms > now && held(&own) => Own { served: build(&catalog, &server, &own.lists), base: server, ..own },
        known => {
            let mut lists = Vec::new();
            let mut due_ms = u64::MAX;
            for (index, source) in server.upstreams.iter().enumerate().filter(|(_, s)| discovery::per_user(&catalog, s)) {
                let read = crate::edge::apart(read(env, &catalog, &server, source, principal)).await;
                let (listed, wait) = match read {
                    Ok(Some(listed)) => (Some(listed), source.catalog_ttl_ms),
                    Ok(None) => (None, UNCONNECTED_MS),
                    Err(why) => {
                        worker::console_error!("{}", crate::edge::redaction::line(json!({"message": "upstream MCP server: its tool list could not be read with the user's token", "server": server.name, "upstream": source.name, "error": why}).to_string()));
                        // What this principal was last served stays, else nothing.
                        let last = known.as_ref().and_then(|k| k.lists.iter().find(|(i, _)| *i == index)).and_then(|(_, l)| l.clone());
                        (Some(last.unwrap_or_default()), discovery::RETRY_MS)
                    }
                };
                lists.push((index, listed));
                due_ms = due_ms.min(now_ms() + wait);
            }
            Own { served: build(&catalog, &server, &lists), key, lists, due_ms, base: server }
        }
    };
    let served = own.served.clone();
    OWN.with(|o| {
        let mut o = o.borrow_mut();
        if o.len() >= PRINCIPALS {
            o.remove(0);
        }
        o.push(own);
    });
    served
}

/// Every server's lists of `principal` are read again at its next request: they connected.
pub fn stale(principal: &str) {
    let tail = format!("\n{principal}");
    OWN.with(|o| o.borrow_mut().iter_mut().filter(|e| e.key.ends_with(&tail)).for_each(|e| e.due_ms = 0));
}

/// `source`'s lists read with `principal`'s token, refreshed once when the upstream refuses it;
/// `None`: the principal has not connected (or is no signed-in user).
async fn read(env: &Env, catalog: &Catalog, server: &Server, source: &Source, principal: &Principal) -> Result<Option<Lists>, String> {
    let Some(name) = source.connection.as_deref() else { return Ok(None) };
    let grant = crate::edge::connections::connection(catalog, name).map_err(|e| e.message())?.grant;
    if grant == crate::connections::Grant::AuthorizationCode && (principal.id == crate::auth::ANONYMOUS || principal.id.starts_with("token:")) {
        return Ok(None);
    }
    let mut call = discovery::base_call(env, server, source)?;
    for attempt in 0..2 {
        let token = match attempt {
            0 => crate::edge::connections::token(env, catalog, principal, name).await,
            _ => crate::edge::connections::refreshed(env, catalog, principal, name).await,
        };
        let Some(token) = token.map_err(|e| e.message())? else { return Ok(None) };
        discovery::bearer(&mut call, &token.access_token);
        match discovery::read(&call, server, source).await {
            Err(failure) if attempt == 0 && discovery::refused(&failure) => continue,
            read => return read.map(Some).map_err(discovery::down),
        }
    }
    Ok(None)
}

/// A copy of `server` with each per-user source's lists, or its connect tool.
fn build(catalog: &Catalog, server: &Server, lists: &[(usize, Option<Lists>)]) -> Arc<Server> {
    let mut own = server.clone();
    let mut skipped = Vec::new();
    for (index, listed) in lists {
        let Some(source) = server.upstreams.get(*index) else { continue };
        match listed {
            Some(listed) => discovery::add(&mut own, *index, source, listed, &mut skipped),
            None => {
                // Listed whatever the source's filter takes; its target names no upstream tool,
                // so its call stops at mcp-edge (`call::run`).
                let unfiltered = Source { tools: Default::default(), ..(**source).clone() };
                let (tools, why) = crate::catalog::mcp::tools(&unfiltered, *index, &[connect_tool(catalog, source)], &|n| own.tools.iter().any(|t| t.name == n), own.max_reply_bytes);
                own.tools.extend(tools.into_iter().map(|mut t| {
                    if let Some(m) = t.mcp.as_mut() {
                        m.name = CONNECT.into();
                    }
                    t
                }));
                skipped.extend(why);
            }
        }
    }
    if !skipped.is_empty() {
        worker::console_warn!("{}", crate::edge::redaction::line(json!({"message": "upstream MCP server: entries left out", "server": server.name, "entries": skipped}).to_string()));
    }
    own.relist();
    Arc::new(own)
}

/// The one tool of a source its user has not connected: `<prefix>connect`.
fn connect_tool(catalog: &Catalog, source: &Source) -> Value {
    let title = source.connection.as_deref().and_then(|n| crate::edge::connections::connection(catalog, n).ok()).map_or(source.name.as_str(), |c| c.title.as_str());
    json!({
        "name": "connect",
        "title": format!("Connect {title}"),
        "description": format!("Connects your own {title} account, so that this server's {title} tools act as you: call it, open the link it gives, and they are listed."),
        "inputSchema": {"type": "object", "properties": {}},
    })
}

/// A connect tool's target name: no upstream tool has it, for a name with a NUL in it is never
/// listed (`catalog::mcp::tools`).
const CONNECT: &str = "\u{0}connect";

/// Whether a tool's target is a connect tool's.
pub fn is_connect(target_name: &str) -> bool {
    target_name == CONNECT
}

/// The result of a connect tool's call, which comes here once the user has connected.
pub fn connected(principal: &str, title: &str) -> Value {
    stale(principal);
    json!({"content": [{"type": "text", "text": format!("Your {title} account is connected: its tools are listed now (list the tools again).")}]})
}
