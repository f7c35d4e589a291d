//! What a call runs with (`CallContext`: its server and session, the stream its reply and
//! messages go to, where the client's answers and cancellations arrive, the session's object),
//! and what it may ask of the client on that stream (`ask`: sampling, elicitation, roots),
//! whose answer comes back in a later POST to the same object. Below both the calls of
//! configured tools (`calls`) and those of upstream MCP servers (`mcp::call`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{select, Either};
use serde_json::Value;
use worker::Delay;

use crate::catalog::Server;
use crate::edge::deferred::Home;
use crate::edge::streams::Outlet;
use crate::jsonrpc;
use crate::method::Method;
use crate::session::Session;
use crate::upstream::stream::required_capability;

/// Requests sent to the client and not yet answered, by id. The client's answer arrives in a
/// later POST to the same session object, which completes the waiting call.
pub type Inputs = Rc<RefCell<HashMap<String, oneshot::Sender<Result<Value, Value>>>>>;

/// Calls in flight, by their JSON-RPC id as JSON text: `notifications/cancelled` resolves the
/// call's cancellation promise, which drops the call (and so aborts its fetch) without a reply.
///
/// A JS promise rather than a Rust channel: the cancellation may arrive in another request of
/// the same Worker isolate (a call served from a lease), and workerd runs a promise's
/// continuation in the request that created it, while a channel would wake the call inside the
/// cancelling request, whose I/O it must not touch.
pub type Cancels = Rc<RefCell<HashMap<String, js_sys::Function>>>;

/// Fires the cancellation of the call with this id, if it is in flight.
pub fn cancel(cancels: &Cancels, request_id: &Value) {
    let resolve = cancels.borrow_mut().remove(&request_id.to_string());
    if let Some(resolve) = resolve {
        let _ = resolve.call0(&wasm_bindgen::JsValue::UNDEFINED);
    }
}

#[derive(Clone, Copy)]
pub struct CallContext<'a> {
    pub server: &'a Arc<Server>,
    pub session: &'a Session,
    /// The reply stream; `None` when the reply is one buffered JSON body.
    pub out: Option<&'a Outlet>,
    /// Where answers to our requests arrive; `None` in stateless mode, which cannot ask.
    pub inputs: Option<&'a Inputs>,
    /// Where cancellations arrive; `None` in stateless mode, where they cannot reach a call.
    pub cancels: Option<&'a Cancels>,
    /// The session object, where deferred calls wait; `None` in stateless mode.
    pub home: Option<&'a Home>,
    /// NDJSON or the `/stream` alias: progress is also sent as `progress.update`.
    pub progress_update: bool,
    /// Stateless mode: a call still running after this long is answered with a timeout error.
    pub deadline_ms: Option<u64>,
}

/// A task's call that asks the client: its task is `input_required` meanwhile (2025-11-25).
async fn task_asks(ctx: &CallContext<'_>, asking: bool) {
    let Some((home, id)) = ctx.home.and_then(|h| h.task.as_ref().map(|(id, _)| (h, id))) else { return };
    let key = crate::tasks::key(id);
    let Some(mut record) = crate::edge::stored::<crate::tasks::Record>(&home.storage, &key).await.ok().flatten() else { return };
    let was = record.status;
    if record.asking(asking, crate::edge::now_ms()) {
        crate::edge::health::task_moved(Some(was), Some(record.status));
        if let Ok(text) = serde_json::to_string(&record) {
            if let Ok(promise) = home.storage.put(&key, crate::edge::redaction::seal(text).into_string().into()) {
                let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
            }
        }
    }
}

/// Sends a request to the client on the call's stream and waits for its answer.
pub async fn ask(ctx: &CallContext<'_>, method: Method, params: Value, timeout_ms: u64) -> Result<Result<Value, Value>, String> {
    if ctx.session.is_ephemeral() {
        return Err(format!("This tool needs {method} from the client, which a stateless server cannot ask for: the answer would arrive in another request."));
    }
    // Before anything about the transport: a call served from a lease (which no client with
    // these capabilities gets) then ends as it would in the session's object.
    let capability = required_capability(method);
    if ctx.session.client_capabilities.get(capability).is_none() {
        return Err(format!("This tool needs {method}, but the client did not declare the {capability} capability."));
    }
    let (Some(inputs), Some(out)) = (ctx.inputs, ctx.out) else {
        return Err(format!("This tool needs {method} from the client, which requires a streaming response (Accept: text/event-stream)."));
    };
    let id = format!("mcp-edge-{}", crate::edge::ids::random_id().map_err(|e| e.message())?);
    let (sender, receiver) = oneshot::channel();
    inputs.borrow_mut().insert(id.clone(), sender);
    task_asks(ctx, true).await;
    out.send(&jsonrpc::request(&id, method, params)).await;
    let answer = select(receiver, Delay::from(Duration::from_millis(timeout_ms))).await;
    inputs.borrow_mut().remove(&id);
    task_asks(ctx, false).await;
    match answer {
        Either::Left((Ok(answer), _)) => Ok(answer),
        Either::Left((Err(_), _)) => Err(format!("The {method} request was abandoned.")),
        Either::Right(_) => Err(format!("The client did not answer {method} within {timeout_ms} ms.")),
    }
}
