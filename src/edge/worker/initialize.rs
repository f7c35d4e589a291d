//! `initialize`, answered by the Worker itself: a self-proving session id
//! (`session::mint_id`), the session written to its object behind the reply, and a lease on it
//! held from the start, so that neither the answer nor the session's first calls wait for the
//! object. The object lets a request that outruns the write wait for it, within
//! `session_ids::BIRTH_WINDOW_MS` (`edge::object::session`).

use std::sync::Arc;

use worker::{Context, Env, Response};

use crate::auth::Principal;
use crate::catalog::Server;
use crate::edge::http::respond;
use crate::edge::now_ms;
use crate::edge::worker::oauth::signing_key;
use crate::envelope::{Envelope, Op};
use crate::error::Error;
use crate::jsonrpc::Request;
use crate::negotiate::Framing;

/// Whether the session id a client sent can name its session for `principal`: one this
/// deployment issued to that principal (`session::proves`), or a UUID (an earlier build's, or a
/// legacy session's), which only its object can judge. A forged id, or another principal's,
/// is not found here, without a hop. An id this isolate holds a lease on was checked already.
/// The key is the deployment's signing key (`OAUTH_SIGNING_KEY`, or the one it generated), read
/// once per isolate; the signature's purpose keeps it for session ids alone.
pub async fn check(env: &Env, id: &str, principal: &Principal) -> Result<(), Error> {
    if !crate::session_ids::is_issued(id) {
        return Err(Error::SessionNotFound);
    }
    if crate::session_ids::issued_at(id).is_some() && !crate::edge::worker::leases::vouches(id, &principal.id) && !crate::session::proves(&signing_key(env).await?, id, &principal.id) {
        return Err(Error::SessionNotFound);
    }
    Ok(())
}

/// Answers `request` (an `initialize`) with a new session of `envelope`'s principal on `server`:
/// counted against the principal's session limit first, then answered at once, while the
/// session's object is written behind the reply. Returns the reply and the new session's id.
pub async fn answer(env: &Env, ctx: &Context, server: &Arc<Server>, request: &Request, mut envelope: Envelope) -> Result<(Response, String), Error> {
    let principal = envelope.principal.clone().unwrap_or_else(Principal::anonymous);
    let now = now_ms();
    let id = crate::session::mint_id(&signing_key(env).await?, &crate::edge::ids::random_hex(16)?, now, &principal.id);
    crate::edge::object::registry::open_session(env, server, envelope.server, &principal.id, &id).await?;
    let (reply, mut session) = crate::dispatch::initialize(server, request, &id, now);
    session.belongs_to(&principal);
    let stored = serde_json::to_vec(&session).map_err(|e| Error::Internal(e.to_string()))?;
    crate::edge::worker::leases::hold(server, &session, now);
    let framing = if envelope.json_ok { Framing::Json } else { envelope.framing.unwrap_or(Framing::Json) };
    envelope.op = Op::Initialize;
    envelope.session_id.clone_from(&id);
    let (env, id_later) = (env.clone(), id.clone());
    ctx.wait_until(async move {
        // Test builds only: the write arrives late, as a busy object's would.
        #[cfg(mcp_edge_test_hooks)]
        if let Some(ms) = crate::edge::secret(&env, "MCP_EDGE_TEST_BIRTH_DELAY_MS").and_then(|v| v.parse::<u64>().ok()) {
            worker::Delay::from(std::time::Duration::from_millis(ms)).await;
        }
        let written = crate::edge::forward::forward(&env, envelope, &stored).await;
        // The write failed: this isolate must not serve the session from its lease either.
        // The client's next request waits out the object's window and is told to start anew.
        if !matches!(&written, Ok(r) if r.status_code() == 204) {
            crate::edge::worker::leases::forget(&id_later);
            let why = written.map_or_else(|e| e.message(), |r| format!("status {}", r.status_code()));
            worker::console_error!("{}", crate::edge::redaction::line(format!("a new session could not be written to its object: {why}")));
        }
    });
    Ok((respond(framing, &id, vec![reply], false)?, id))
}
