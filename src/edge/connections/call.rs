//! A call whose user has not connected: asked to connect (a URL-mode elicitation on the call's
//! stream, then waited for), told (`-32042` with the elicitation, for a client that takes URL
//! elicitations but has no stream here), or given the link in words; and a call dispatched
//! again, with the token, once it is there or refreshed.

use std::time::Duration;

use serde_json::Value;

use crate::connections::members;
use worker::Delay;

use crate::connections::sealed::{Link, LINK_TTL_MS};
use crate::dispatch::{self, Action, CallKind, Environment, PendingCall};
use crate::edge::context::{ask, CallContext};
use crate::jsonrpc::{self, Message};
use crate::method::Method;

/// How long a call waits for its user to connect after the client opened the link.
const WAIT_MS: u64 = 10 * 60 * 1000;
/// How often the principal's object is asked meanwhile.
const POLL_MS: u64 = 1_500;
/// JSON-RPC's "URL elicitation required" (2025-11-25).
const URL_ELICITATION_REQUIRED: i64 = -32042;

/// The public origin of the Worker's latest request: a call served in the Worker (no session
/// object, which knows its own) builds its connect link on it.
pub(crate) fn note_origin(origin: &str) {
    super::discover::note_origin(origin);
}

/// The call with its connection's token in it, or the reply that ends it: the user was asked
/// and did not connect, or cannot be asked.
pub(crate) async fn ready(ctx: &CallContext<'_>, call: &PendingCall) -> Result<PendingCall, String> {
    let Some(c) = call.connection.as_deref() else { return Ok(call.clone()) };
    let env = crate::edge::kept_env().ok_or_else(|| failure(call, "no environment to reach the connections store"))?;
    let catalog = crate::edge::live::served().map_err(|e| failure(call, &e.message()))?;
    let connection = super::connection(&catalog, &c.name).map_err(|e| failure(call, &e.message()))?;
    let title = connection.title.clone();
    let per_user = connection.grant.per_principal();
    if per_user && (c.principal.id == crate::auth::ANONYMOUS || c.principal.id.starts_with("token:")) {
        return Err(refusal(call, format!("This tool acts with each user's own {title} account, and this caller is not a signed-in user.")));
    }
    if crate::edge::apart(super::token(&env, &catalog, &c.principal, &c.name)).await.map_err(|e| failure(call, &e.message()))?.is_some() {
        return again(ctx, call);
    }
    let elicitation = crate::edge::ids::random(16).map_err(|e| failure(call, &e.message()))?;
    let keys = crate::edge::apart(super::keys(&env)).await.map_err(|e| failure(call, &e.message()))?;
    let link = Link { principal: c.principal.id.clone(), connection: c.name.clone(), elicitation: elicitation.clone(), expires_ms: crate::edge::now_ms() + LINK_TTL_MS };
    let origin = ctx.home.map(|h| h.origin.clone()).unwrap_or_else(super::discover::noted_origin);
    let url = format!("{origin}{}", crate::paths::connect(&c.name, &link.seal(&keys)));
    let message = format!("Connect your {title} account to mcp-edge, so that {} can act as you there.", call.label());
    let takes_urls = ctx.session.client_capabilities.get("elicitation").and_then(|e| e.get("url")).is_some();
    let params = members(vec![("mode", Value::from("url")), ("elicitationId", Value::from(elicitation.as_str())), ("url", Value::from(url.as_str())), ("message", Value::from(message))]);
    if takes_urls && ctx.inputs.is_some() && ctx.out.is_some() && !ctx.session.is_ephemeral() {
        let answered = crate::edge::apart(ask(ctx, Method::ElicitationCreate, params, WAIT_MS)).await;
        let accepted = matches!(&answered, Ok(Ok(a)) if a.get("action").and_then(Value::as_str) == Some("accept"));
        if !accepted {
            return Err(refusal(call, format!("This tool needs your {title} account, which is not connected. To connect it, open {url}")));
        }
        let since = crate::edge::now_ms();
        while crate::edge::now_ms() < since + WAIT_MS {
            Delay::from(Duration::from_millis(POLL_MS)).await;
            if let Ok(Some(_)) = crate::edge::apart(super::token(&env, &catalog, &c.principal, &c.name)).await {
                if let Some(out) = ctx.out {
                    out.send(&jsonrpc::notification(Method::ElicitationComplete, members(vec![("elicitationId", Value::from(elicitation.as_str()))]))).await;
                }
                return again(ctx, call);
            }
        }
        return Err(refusal(call, format!("Your {title} account was not connected in time. To connect it, open {url}")));
    }
    if takes_urls {
        let error = members(vec![("code", Value::from(URL_ELICITATION_REQUIRED)), ("message", Value::from("This request requires more information.")), ("data", members(vec![("elicitations", Value::Array(vec![params]))]))]);
        return Err(members(vec![("jsonrpc", Value::from("2.0")), ("id", call.id.clone()), ("error", error)]).to_string());
    }
    Err(refusal(call, format!("This tool needs your {title} account, which is not connected. Open this link in a browser where you can sign in as yourself, connect, then call the tool again: {url}")))
}

/// The call after its upstream refused the token: the token refreshed and the call dispatched
/// again; a grant that is gone asks the user to connect, as a first call does.
pub(crate) async fn refreshed(ctx: &CallContext<'_>, call: &PendingCall) -> Option<Result<PendingCall, String>> {
    let c = call.connection.as_deref().filter(|c| c.token.is_some())?;
    let env = crate::edge::kept_env()?;
    let catalog = crate::edge::live::served().ok()?;
    match crate::edge::apart(super::refreshed(&env, &catalog, &c.principal, &c.name)).await {
        Ok(Some(_)) => Some(again(ctx, call)),
        Ok(None) => {
            let mut unconnected = call.clone();
            if let Some(c) = unconnected.connection.as_mut() {
                c.token = None;
            }
            Some(crate::edge::apart(ready(ctx, &unconnected)).await)
        }
        Err(_) => None,
    }
}

/// The call's request dispatched again, now that this isolate holds the token: its request
/// rendered anew, with the token bound (and redacted with the call's other credentials).
fn again(ctx: &CallContext<'_>, call: &PendingCall) -> Result<PendingCall, String> {
    let Some(c) = call.connection.as_deref() else { return Ok(call.clone()) };
    let env = crate::edge::kept_env().ok_or_else(|| failure(call, "no environment"))?;
    let secret = |name: &str| crate::edge::secret(&env, name);
    let lookup = |name: &str| super::cached(&c.principal.id, name);
    let environment = Environment { secret: &secret, route: &c.route, principal: &c.principal, now_ms: crate::edge::now_ms(), connection: &lookup };
    let mut session = ctx.session.clone();
    match dispatch::handle(ctx.server, &mut session, Ok(Message::Request(c.request.clone())), &environment) {
        Action::Call(mut next) if next.connection.as_ref().is_some_and(|n| n.token.is_some()) => {
            // A task's call stays the task's: it was answered with its handle already; and the
            // call stays in its trace, its client span under the span that carried it.
            next.task.clone_from(&call.task);
            next.http.trace.clone_from(&call.http.trace);
            Ok(*next)
        }
        Action::Reply(reply) => Err(reply),
        _ => Err(failure(call, "the connection's token was not at hand")),
    }
}

fn failure(call: &PendingCall, why: &str) -> String {
    jsonrpc::failure(&call.id, &crate::error::Error::Internal(why.to_string()))
}

/// The call's answer when it cannot go on: a tool's result with `isError` (the model reads it),
/// or the error of a request passed on to an upstream MCP server.
fn refusal(call: &PendingCall, text: String) -> String {
    match call.kind {
        CallKind::Tool(_) => jsonrpc::success(&call.id, crate::upstream::reply::error_result(text)),
        _ => jsonrpc::failure(&call.id, &crate::error::Error::Forbidden(text)),
    }
}
