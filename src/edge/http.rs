//! Small HTTP helpers shared by the edge: error bodies, header copying, the internal hop.

use worker::{Headers, Response, ResponseBuilder, Result};

use crate::error::Error;
use crate::jsonrpc;

/// Headers that tell the session object what the Worker already decided.
pub const OP: &str = "x-mcp-edge-op";
pub const SERVER: &str = "x-mcp-edge-server";
pub const FRAMING: &str = "x-mcp-edge-framing";
pub const ROUTE: &str = "x-mcp-edge-route";
pub const LAST_EVENT_ID: &str = "last-event-id";
/// Present when an SSE request also accepts a buffered JSON reply.
pub const JSON_OK: &str = "x-mcp-edge-json-ok";
/// Present when the request came through the `/stream` alias.
pub const ALIAS: &str = "x-mcp-edge-alias";
/// For a legacy SSE stream: the POST URL its `endpoint` event announces.
pub const ENDPOINT: &str = "x-mcp-edge-endpoint";
/// Present when the body is NDJSON: one message per line.
pub const NDJSON_BODY: &str = "x-mcp-edge-ndjson";
pub const SESSION_ID: &str = "mcp-session-id";
/// The public origin of the request, for URLs the session object hands out (callbacks).
pub const ORIGIN: &str = "x-mcp-edge-origin";
/// The authenticated principal of the request, as JSON.
pub const PRINCIPAL: &str = "x-mcp-edge-principal";
/// The session object's name: the session id, keyed by principal.
pub const OBJECT: &str = "x-mcp-edge-object";
/// The deferred call a result or status request is about.
pub const CALL: &str = "x-mcp-edge-call";
/// Present when a queued call's message reached the dead-letter queue.
pub const DEAD_LETTER: &str = "x-mcp-edge-dead-letter";

/// The whole answer to a request that failed: a JSON-RPC error with `id: null`.
pub fn error_response(error: &Error) -> Result<Response> {
    let headers = Headers::new();
    headers.set("Content-Type", "application/json")?;
    match error {
        Error::MethodNotAllowed(allow) => headers.set("Allow", allow)?,
        Error::Unauthorized { challenge, .. } => headers.set("WWW-Authenticate", challenge)?,
        Error::Forbidden(_) => headers.set("WWW-Authenticate", "Bearer error=\"insufficient_scope\"")?,
        Error::RateLimited(seconds) => headers.set("Retry-After", &seconds.to_string())?,
        _ => {}
    }
    let body = jsonrpc::failure(&serde_json::Value::Null, error);
    Ok(ResponseBuilder::new().with_status(error.http_status()).with_headers(headers).fixed(body.into_bytes()))
}

/// Returns the response with extra headers. A fetched response's headers are immutable, so
/// they are copied into a new set first.
pub fn with_headers(response: Response, extra: &[(&str, String)]) -> Result<Response> {
    if extra.is_empty() {
        return Ok(response);
    }
    let status = response.status_code();
    let headers = Headers::new();
    for (name, value) in response.headers().entries() {
        headers.append(&name, &value)?;
    }
    for (name, value) in extra {
        headers.set(name, value)?;
    }
    let (_, body) = response.into_parts();
    Ok(ResponseBuilder::new().with_status(status).with_headers(headers).body(body))
}
