//! The 2024-11-05 HTTP+SSE transport at the edge: `GET /sse` opens a session and its event
//! stream, whose first event names the POST URL; `POST /messages?sessionId=` delivers messages,
//! answered `202` here and on the stream there. n8n's MCP Client Tool uses it by default.

use worker::{Env, Response};

use crate::edge::worker::log::RequestLog;
use crate::edge::forward::forward;
use crate::edge::ids::random_id;
use crate::session_ids::is_issued;
use crate::envelope::{Envelope, Op};
use crate::auth::Principal;
use crate::error::Error;
use crate::negotiate::media_type;

/// `GET /sse`: a new session, served by its Durable Object, which holds the stream.
pub async fn open(req: crate::edge::http::Incoming, env: &Env, server_index: usize, principal: &Principal, log: &mut RequestLog) -> Result<Response, Error> {
    let session_id = random_id()?;
    let server = crate::edge::live::served()?.servers.get(server_index).cloned().ok_or_else(|| Error::Internal("server index".into()))?;
    crate::edge::object::registry::open_session(env, &server, server_index, &principal.id, &session_id).await?;
    log.session_id = Some(session_id.clone());
    // The POST URL sits beside this one: `/sse` → `/messages`, route parameters kept.
    let path = req.head().path();
    let base = path.trim_end_matches('/').rsplit_once('/').map_or("", |(base, _)| base);
    let endpoint = format!("{base}/messages?sessionId={session_id}");
    forward(env, Envelope { op: Op::SseOpen, server: server_index, session_id, endpoint: Some(endpoint), principal: Some(principal.clone()), ..Envelope::default() }, &[]).await
}

/// `POST /messages?sessionId=`: one message (or a batch) for a legacy session.
pub async fn message(mut req: crate::edge::http::Incoming, env: &Env, server_index: usize, principal: &Principal, log: &mut RequestLog) -> Result<Response, Error> {
    let url = req.url()?;
    let session_id = url.query_param("sessionId").ok_or(Error::SessionRequired)?;
    if !is_issued(&session_id) {
        return Err(Error::SessionNotFound);
    }
    log.session_id = Some(session_id.clone());
    let content_type = req.header("content-type");
    if !matches!(content_type.as_deref().map(media_type).as_deref(), None | Some("application/json")) {
        return Err(Error::UnsupportedMediaType(content_type.unwrap_or_default()));
    }
    let catalog = crate::edge::live::served()?;
    let limit = catalog.servers.get(server_index).map_or(0, |s| s.max_body_bytes);
    let body = crate::edge::body::read_limited(&mut req, limit).await?;
    crate::edge::body::check_depth(&body, catalog.servers.get(server_index).map_or(0, |s| s.limits.max_json_depth))?;
    // Malformed bodies are refused here, with the error in the HTTP answer: there is no
    // request id to answer on the stream.
    let parsed = crate::jsonrpc::parse_body(&body, false)?;
    if let (false, Some(Err((_, error)))) = (parsed.batch, parsed.messages.first()) {
        return Err(error.clone());
    }
    if let Some(Ok(crate::jsonrpc::Message::Request(r))) = parsed.messages.first() {
        log.method = Some(r.method.as_str().to_string());
    }
    forward(env, Envelope { op: Op::SseMessage, server: server_index, session_id, origin: Some(url.origin), principal: Some(principal.clone()), ..Envelope::default() }, &body).await
}
