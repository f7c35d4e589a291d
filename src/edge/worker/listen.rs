//! `subscriptions/listen` at the edge: the one 2026-07-28 request that needs state. Its stream
//! lives in a session object of its own, named by a fresh id, which the resource registry
//! reaches like any subscribed session; the object ends when the stream does.

use serde_json::json;
use worker::{Env, Response};

use crate::edge::worker::log::RequestLog;
use crate::edge::forward::forward;
use crate::edge::ids::random_id;
use crate::envelope::{Envelope, Op};
use crate::auth::Principal;
use crate::error::Error;
use crate::jsonrpc::Request;
use crate::protocol::meta::RequestMeta;

pub async fn open(env: &Env, server_index: usize, request: Request, meta: RequestMeta, principal: &Principal, log: &mut RequestLog) -> Result<Response, Error> {
    let id = random_id()?;
    log.session_id = Some(id.clone());
    let body = json!({"id": request.id, "params": request.params, "clientInfo": meta.client_info, "clientCapabilities": meta.client_capabilities});
    let envelope = Envelope { op: Op::Listen, server: server_index, session_id: id, principal: Some(principal.clone()), ..Envelope::default() };
    forward(env, envelope, body.to_string().as_bytes()).await
}
