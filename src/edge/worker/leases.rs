//! The Worker's leases on sessions (see [`crate::lease`]), held per isolate: a POST served from
//! its session's lease, a lease asked of the session's object when none is held, and the lease
//! dropped before anything that may change the session reaches the object.

use std::sync::Arc;
use crate::method::Method;
use std::cell::RefCell;
use std::collections::HashMap;

use worker::{Context, Env, Response};

use crate::edge::calls;
use crate::edge::health;
use crate::edge::context::{self, CallContext, Cancels};
use crate::edge::http::{accepted, respond};
use crate::edge::now_ms;
use crate::catalog::Server;
use crate::dispatch::{self, Action, Environment};
use crate::envelope::{Envelope, Op};
use crate::error::Error;
use crate::jsonrpc::{Body, Message};
use crate::lease::Lease;
use crate::negotiate::Framing;
use crate::edge::worker::log::RequestLog;

/// Beyond this many leases, the lapsed ones make room, then those that lapse soonest
/// (`lease::make_room`). Each is a copy of its session; 16,384 of them hold the 5,000 sessions
/// of `bench/scale.mjs` with room to spare. What they cost the isolate's memory is not measured.
const MAX_HELD: usize = 16_384;

thread_local! {
    /// Leases by session id.
    static LEASES: RefCell<HashMap<String, Lease>> = RefCell::default();
    /// The calls this isolate serves from leases, by session id: `notifications/cancelled`
    /// stops them, and they count against the session's in-flight limit.
    static CALLS: RefCell<HashMap<String, Cancels>> = RefCell::default();
    /// Sessions whose lease is being renewed behind a reply: one renewal at a time.
    static RENEWING: RefCell<std::collections::HashSet<String>> = RefCell::default();
}

/// Whether this isolate holds a lease on `session_id` for `principal`, lapsed or not: then the id
/// was checked when the lease was asked for, or made here, and needs no check again.
pub fn vouches(session_id: &str, principal: &str) -> bool {
    LEASES.with(|l| l.borrow().get(session_id).is_some_and(|lease| lease.session.principal == principal))
}

/// Drops the lease on a session: a request that may change or end it is on its way to the object.
pub fn forget(session_id: &str) {
    LEASES.with(|l| l.borrow_mut().remove(session_id));
}

/// What a POST forwarded to a session's object means for this isolate: a cancellation stops the
/// call it names if it runs here, and a message that may change the session drops the lease.
fn before_forward(session_id: &str, body: &Body) {
    for message in &body.messages {
        let method = match message {
            Ok(Message::Request(r)) => r.method.known(),
            Ok(Message::Notification(n)) => {
                if n.method == Method::Cancelled {
                    let id = n.params.as_ref().and_then(|p| p.get("requestId"));
                    if let (Some(id), Some(cancels)) = (id, CALLS.with(|c| c.borrow().get(session_id).cloned())) {
                        context::cancel(&cancels, id);
                    }
                }
                n.method.known()
            }
            // Answers to the server's requests and malformed messages change nothing.
            Ok(Message::Response { .. }) | Err(_) => continue,
        };
        // A method this build does not know may change anything.
        if !method.is_some_and(Method::keeps_session) {
            forget(session_id);
        }
    }
}

/// A POST to a session: served here from its lease when one serves it, or forwarded to the
/// session's object. The client gets what the object would answer either way; the log line
/// says which, and whether a lease was asked of the object first.
pub async fn serve_or_forward((env, ctx): (&Env, &Context), server: &Arc<Server>, envelope: Envelope, parsed: Body, body: &[u8], log: &mut RequestLog) -> Result<Response, Error> {
    before_forward(&envelope.session_id, &parsed);
    if let Some(response) = serve((env, ctx), server, &envelope, parsed, &mut log.lease_asked).await? {
        log.lease = true;
        return Ok(response);
    }
    crate::edge::forward::forward(env, envelope, body).await
}

/// Serves a POST from its session's lease when the object would answer it the same way.
/// `Ok(None)`: the object must answer it.
async fn serve((env, ctx): (&Env, &Context), server: &Arc<Server>, envelope: &Envelope, body: Body, asked: &mut bool) -> Result<Option<Response>, Error> {
    let single = matches!(body.messages.as_slice(), [Ok(Message::Request(r))] if r.method.known().is_some_and(Method::lease_serves));
    // A JSON answer: the object streams only when something must, which a lease never serves.
    let json = envelope.json_ok || envelope.framing == Some(Framing::Json);
    if server.lease_ms == 0 || body.batch || !json || !single {
        return Ok(None);
    }
    let Some(mut lease) = lease_for((env, ctx), server, envelope, asked).await? else {
        return Ok(None);
    };
    let Some(Ok(message)) = body.messages.into_iter().next() else {
        return Ok(None);
    };
    if !lease.serves_calls() {
        return Ok(None);
    }
    let now = now_ms();
    let principal = envelope.principal.clone().unwrap_or_else(crate::auth::Principal::anonymous);
    let secret = |name: &str| crate::edge::secret(env, name);
    let connection = |name: &str| crate::edge::connections::cached(&principal.id, name);
    let environment = Environment { secret: &secret, route: &envelope.route, principal: &principal, now_ms: now, connection: &connection };
    let message = Ok(message);
    let refusal = health::Refusal::watch(server, &message);
    let mut action = dispatch::handle(server, &mut lease.session, message, &environment);
    // A call whose connection's token this isolate does not hold yet: read here once (then kept
    // for the refresh period), so that the lease serves the user's calls rather than sending each
    // to the object, whose isolate is another. Not connected: the object asks the user.
    if let Action::Call(call) = &action {
        if let Some(c) = call.connection.as_ref().filter(|c| c.token.is_none()) {
            // Without the catalog or the token, the object serves the call, as before.
            if let Ok(catalog) = crate::edge::live::served() {
                if let Ok(Some(_)) = crate::edge::apart(crate::edge::connections::token(env, &catalog, &c.principal, &c.name)).await {
                    let again = Ok(Message::Request(c.request.clone()));
                    action = dispatch::handle(server, &mut lease.session, again, &environment);
                }
            }
        }
    }
    refusal.count(server, &principal, &action, None);
    // Served methods never change the session; should one ever, the object must see it.
    let unchanged = LEASES.with(|l| l.borrow().get(&envelope.session_id) == Some(&lease));
    let servable = match &action {
        Action::Call(call) => lease.serves(server, call, now),
        Action::Reply(_) => true,
        Action::Task(_) | Action::Nothing => false,
    };
    if !unchanged || !servable {
        return Ok(None);
    }
    let session_id = envelope.session_id.as_str();
    let cancels = CALLS.with(|c| c.borrow_mut().entry(session_id.to_string()).or_default().clone());
    let mut actions = [action];
    crate::edge::telemetry::adopt(&mut actions, envelope.trace.as_ref());
    calls::admit(&cancels, (server, &principal.id), None, &mut actions);
    let [action] = actions;
    let reply = match action {
        Action::Reply(text) => Some(text),
        Action::Call(call) => {
            let ctx = CallContext { server, session: &lease.session, out: None, inputs: None, cancels: Some(&cancels), home: None, progress_update: false, deadline_ms: None };
            calls::complete(&ctx, &call).await
        }
        Action::Task(_) | Action::Nothing => None,
    };
    if cancels.borrow().is_empty() {
        CALLS.with(|c| c.borrow_mut().remove(session_id));
    }
    Ok(Some(match reply {
        Some(reply) => respond(Framing::Json, session_id, vec![reply], false)?,
        // Cancelled: a cancelled request gets no reply.
        None => accepted(session_id)?,
    }))
}

/// The lease this isolate holds on the envelope's session, or a new one from its object. A
/// held lease past half its life is renewed behind the reply, so that a session whose calls
/// keep coming never waits for its object.
async fn lease_for((env, ctx): (&Env, &Context), server: &Server, envelope: &Envelope, asked: &mut bool) -> Result<Option<Lease>, Error> {
    let now = now_ms();
    let principal = envelope.principal.as_ref().map_or(crate::auth::ANONYMOUS, |p| p.id.as_str());
    let held = LEASES.with(|l| l.borrow().get(&envelope.session_id).filter(|lease| lease.holds(now, server, principal)).cloned());
    if let Some(lease) = held {
        let renewing = || RENEWING.with(|r| !r.borrow_mut().insert(envelope.session_id.clone()));
        if lease.until_ms.saturating_sub(now) < server.lease_ms / 2 && !renewing() {
            let (env, ask, before) = (env.clone(), Envelope { op: Op::Lease, ..envelope.clone() }, lease.clone());
            ctx.wait_until(async move {
                let session_id = ask.session_id.clone();
                let renewed = ask_lease(&env, ask).await;
                RENEWING.with(|r| r.borrow_mut().remove(&session_id));
                // Kept only if nothing dropped or replaced the lease meanwhile: a request that
                // may change the session went to the object, whose grant may predate it.
                if LEASES.with(|l| l.borrow().get(&session_id) == Some(&before)) {
                    match renewed {
                        Ok(Some(renewed)) => {
                            keep(&session_id, renewed, now_ms());
                        }
                        Err(Error::SessionNotFound) => forget(&session_id),
                        // Lapses as it would have.
                        Ok(None) | Err(_) => {}
                    }
                }
            });
        }
        return Ok(Some(lease));
    }
    *asked = true;
    // A renewal behind an earlier reply that was cut off (its context's time ran out) never
    // cleared its mark; without this, the session would never be renewed early again here.
    RENEWING.with(|r| r.borrow_mut().remove(&envelope.session_id));
    let Some(lease) = ask_lease(env, Envelope { op: Op::Lease, ..envelope.clone() }).await? else {
        return Ok(None);
    };
    Ok(Some(keep(&envelope.session_id, lease, now)))
}

/// A lease from the session's object. `Ok(None)`: none for this session (it lives with a
/// stream), or the object failed: the request goes to the object, which answers it either way.
async fn ask_lease(env: &Env, ask: Envelope) -> Result<Option<Lease>, Error> {
    let mut reply = crate::edge::forward::forward(env, ask, &[]).await?;
    match reply.status_code() {
        200 => {}
        404 => return Err(Error::SessionNotFound),
        _ => return Ok(None),
    }
    let text = reply.bytes().await?;
    serde_json::from_slice(&text).map(Some).map_err(|e| Error::Internal(format!("a session object's lease: {e}")))
}

/// A lease on a session this isolate has just begun (`initialize`): its calls are served here
/// from the start, as they would be from a lease its object granted at once.
pub fn hold(server: &Server, session: &crate::session::Session, now: u64) {
    if let Some(lease) = Lease::grant(session, now, server.lease_ms, server.idle_timeout_ms) {
        keep(&session.id, lease, now);
    }
}

/// Keeps `lease` on `session_id` in this isolate, and returns it.
fn keep(session_id: &str, mut lease: Lease, now: u64) -> Lease {
    if !lease.serves_calls() {
        // A log level, once set, stays set, and capabilities never change: this session's
        // calls always go to its object, so the lease needs no renewal (which would cost a hop
        // every `leaseMs` for nothing) until something drops it.
        lease.until_ms = u64::MAX;
    }
    LEASES.with(|l| {
        let mut leases = l.borrow_mut();
        crate::lease::make_room(&mut leases, MAX_HELD, now);
        leases.insert(session_id.to_string(), lease.clone());
    });
    lease
}
