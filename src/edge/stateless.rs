//! Stateless mode (seed 002's REST transport): each POST stands alone, served in the Worker with
//! no session id and no Durable Object hop. A request not finished within the collection timeout
//! is answered with a -32603 timeout error.

use std::rc::Rc;

use worker::{Env, Headers, Response, ResponseBuilder};

use super::calls::{self, CallContext};
use super::streams::Outlet;
use super::{now_ms, writer};
use crate::config::Server;
use crate::dispatch::{self, Action, Environment};
use crate::error::Error;
use crate::framing;
use crate::jsonrpc::{Body, Message};
use crate::negotiate::Framing;
use crate::routes::RouteParams;
use crate::session::Session;

/// What one stateless POST brings.
pub struct Post {
    pub framing: Framing,
    pub progress_update: bool,
    pub body: Body,
    /// `MCP-Protocol-Version`, or 2025-03-26 when absent, as the spec says.
    pub version: String,
    pub route: RouteParams,
    pub principal: crate::auth::Principal,
}

pub async fn serve(server: &'static Server, timeout_ms: u64, env: &Env, post: Post) -> Result<Response, Error> {
    // A session that lives for this request only: nothing is stored, nothing is shared.
    let mut session = Session::new("", server.route.as_str(), &post.version, serde_json::json!({}), serde_json::json!({}), now_ms());
    let secret = |name: &str| super::secret(env, name);
    let environment = Environment { secret: &secret, route: &post.route, principal: &post.principal };
    let batch = post.body.batch;
    let actions: Vec<Action> = post
        .body
        .messages
        .into_iter()
        .map(|m| match m {
            Ok(Message::Request(r)) if r.method == "initialize" => Action::Reply(dispatch::initialize(server, &r, "", now_ms()).0),
            other => dispatch::handle(server, &mut session, other, &environment),
        })
        .collect();
    if actions.iter().all(|a| *a == Action::Nothing) {
        return Ok(ResponseBuilder::new().with_status(202).empty());
    }
    if !post.framing.is_stream() {
        let ctx = CallContext { server, session: &session, out: None, inputs: None, cancels: None, home: None, progress_update: false, deadline_ms: Some(timeout_ms) };
        let body = framing::json_body(&calls::collect(&ctx, actions).await, batch);
        let headers = Headers::new();
        headers.set("Content-Type", "application/json")?;
        return Ok(ResponseBuilder::new().with_status(200).with_headers(headers).fixed(body));
    }
    let (writer, readable) = writer::open(post.framing)?;
    let out = Outlet::Lines(Rc::new(writer));
    let progress_update = post.progress_update;
    wasm_bindgen_futures::spawn_local(async move {
        let ctx = CallContext { server, session: &session, out: Some(&out), inputs: None, cancels: None, home: None, progress_update, deadline_ms: Some(timeout_ms) };
        calls::deliver(&ctx, &out, actions).await;
    });
    let headers = Headers::new();
    headers.set("Content-Type", post.framing.content_type())?;
    headers.set("Cache-Control", "no-cache")?;
    headers.set("X-Accel-Buffering", "no")?;
    Ok(ResponseBuilder::new().with_status(200).with_headers(headers).stream(readable))
}
