//! Deferred tool calls, on the side of the call: a `queued` call becomes a Cloudflare Queue
//! message, a `callback` call hands the upstream a signed one-time URL. Either way the call then
//! waits in the session's object for its result (like seed 001's PendingCallsManager), which
//! `session_object::results` receives, until the tool's `pendingTimeoutMs`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{select, Either};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use worker::worker_sys::DurableObjectStorage;
use worker::{Delay, Env};

use crate::edge::now_ms;
use crate::edge::upstream;
use crate::dispatch::PendingCall;
use crate::pending::{record_key, Deferral, PendingRecord, State};
use crate::upstream::reply::{error_result, to_result, Upstream};
use crate::upstream::HttpCall;
use crate::tools::Tool;

/// The header that carries a callback tool's one-time result URL to its upstream.
pub const CALLBACK_HEADER: &str = "Mcp-Edge-Callback";

/// The queue binding queued tools are sent on.
pub const QUEUE_BINDING: &str = "TOOL_QUEUE";

/// Calls waiting for their result, by call id; the sender completes the waiting call.
pub type Waiters = Rc<RefCell<HashMap<String, oneshot::Sender<Value>>>>;

/// Results in hand: by the request they answer (its id as JSON text), the calls whose results a
/// call of this object has received and not yet delivered. Their records keep the result till
/// then; the alarm delivers only those no call has in hand.
pub type Receipts = Rc<RefCell<HashMap<String, Vec<String>>>>;

/// One queued call, as its queue message carries it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuedCall {
    pub session: String,
    pub server: usize,
    pub call: String,
    pub tool: String,
    pub http: HttpCall,
}

/// What a deferred call needs from the session object it runs in.
#[derive(Clone)]
pub struct Home {
    pub env: Env,
    pub storage: Rc<DurableObjectStorage>,
    /// Where replies go whose stream is gone.
    pub outbox: crate::edge::outbox::Outbox,
    pub waiters: Waiters,
    pub receipts: Receipts,
    pub session_id: String,
    /// The session object's name (the id keyed by principal): callbacks and queue reports use it.
    pub object: String,
    pub server_index: usize,
    /// The public origin requests arrive on, for callback URLs.
    pub origin: String,
    /// The task the call runs for, if it runs as one: its id, and until when it is kept.
    pub task: Option<(String, u64)>,
}

impl Home {
    /// The reply to `request_id` was written, or kept for the client, or the call was cancelled:
    /// the records of its deferred calls, and the results they kept, go.
    pub async fn delivered(&self, request_id: &Value) {
        let calls = self.receipts.borrow_mut().remove(&request_id.to_string());
        for call in calls.into_iter().flatten() {
            forget_record(&self.storage, &call).await;
        }
    }
}

/// Deletes a call's record: its result was delivered, or it has no use any more.
pub async fn forget_record(storage: &DurableObjectStorage, call: &str) {
    if let Ok(promise) = storage.delete(&record_key(call)) {
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    }
}

/// Marks a call ended unless its result already arrived.
async fn end_record(storage: &DurableObjectStorage, call: &str, state: State) {
    if let Some(mut record) = load_record(storage, call).await {
        if record.state == State::Waiting {
            record.state = state;
            store_record(storage, &record).await;
        }
    }
}

/// Stores a call's record, redacted: it may hold the result until it is delivered.
pub async fn store_record(storage: &DurableObjectStorage, record: &PendingRecord) {
    let Ok(json) = serde_json::to_string(record) else { return };
    let json = crate::edge::redaction::seal(json).into_string();
    if let Ok(promise) = storage.put(&record_key(&record.call), json.into()) {
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    }
}

/// Reads a call's record from the session object's storage.
pub async fn load_record(storage: &DurableObjectStorage, call: &str) -> Option<PendingRecord> {
    crate::edge::stored(storage, &record_key(call)).await.ok().flatten()
}

/// Removes the call's waiter when the call ends, however it ends. A call dropped while waiting
/// (cancelled, or its session ended) is marked done, so a late result is refused, not delivered.
struct WaiterGuard<'a> {
    home: &'a Home,
    call: String,
    settled: bool,
}

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        self.home.waiters.borrow_mut().remove(&self.call);
        if !self.settled {
            let storage = self.home.storage.clone();
            let call = std::mem::take(&mut self.call);
            wasm_bindgen_futures::spawn_local(async move { end_record(&storage, &call, State::Done).await });
        }
    }
}

/// Runs a deferred call to its result (a CallToolResult, not yet finalized).
pub async fn run(home: &Home, call: &PendingCall, tool: &Tool, deferral: Deferral, timeout_ms: u64) -> Value {
    let call_id = match crate::edge::ids::random_id() {
        Ok(id) => id.replace('-', ""),
        Err(e) => return error_result(e.message()),
    };
    let deadline_ms = now_ms() + timeout_ms;
    let record = PendingRecord { call: call_id.clone(), request_id: call.id.clone(), tool: tool.name.clone(), deferral, deadline_ms, state: State::Waiting, last_error: None, task: home.task.as_ref().map(|(id, _)| id.clone()), result: None, trace: call.http.trace.clone() };
    store_record(&home.storage, &record).await;
    crate::edge::arm_by(&home.storage, deadline_ms).await;
    let (sender, receiver) = oneshot::channel();
    home.waiters.borrow_mut().insert(call_id.clone(), sender);
    let mut guard = WaiterGuard { home, call: call_id.clone(), settled: false };
    let started = match deferral {
        Deferral::Queued => enqueue(home, &call_id, tool, &call.http).await,
        Deferral::Callback => call_back(home, &call_id, tool, call).await,
    };
    if let Err(result) = started {
        end_record(&home.storage, &call_id, State::Done).await;
        guard.settled = true;
        return result;
    }
    let wait = deadline_ms.saturating_sub(now_ms());
    let result = match select(receiver, Delay::from(Duration::from_millis(wait))).await {
        // In hand until its reply is delivered (`Home::delivered`): its record keeps it till then.
        Either::Left((Ok(result), _)) => {
            // Test builds only: the object ends with the result in hand, before its reply is out.
            #[cfg(mcp_edge_test_hooks)]
            #[allow(clippy::panic)]
            if result.to_string().contains("mcp-edge/test-panic-in-hand") {
                panic!("a forced panic with a result in hand (test build)");
            }
            result
        }
        Either::Left((Err(_), _)) => error_result("The session ended before the call's result arrived.".into()),
        Either::Right(_) => {
            end_record(&home.storage, &call_id, State::TimedOut).await;
            error_result(format!("The {} call did not finish within {timeout_ms} ms.", deferral.name()))
        }
    };
    guard.settled = true;
    result
}

async fn enqueue(home: &Home, call_id: &str, tool: &Tool, http: &HttpCall) -> Result<(), Value> {
    let queue = home.env.queue(QUEUE_BINDING).map_err(|_| {
        error_result(format!("The tool {:?} is queued, but this Worker has no queue binding {QUEUE_BINDING} (see docs/deploying.md).", tool.name))
    })?;
    let message = QueuedCall { session: home.object.clone(), server: home.server_index, call: call_id.to_string(), tool: tool.name.clone(), http: http.clone() };
    let failed = |e: String| error_result(format!("The call could not be queued: {e}"));
    let text = serde_json::to_string(&message).map_err(|e| failed(e.to_string()))?;
    let thrown = |e: wasm_bindgen::JsValue| failed(crate::edge::js_text(&e));
    let sent = queue_send(queue.as_ref(), &text).map_err(thrown)?;
    wasm_bindgen_futures::JsFuture::from(sent).await.map(|_| ()).map_err(thrown)
}

#[wasm_bindgen::prelude::wasm_bindgen(module = "/src/edge/glue.js")]
extern "C" {
    /// Sends a queued call as JSON text (see `from_json_text`).
    #[wasm_bindgen(catch)]
    fn queue_send(queue: &wasm_bindgen::JsValue, text: &str) -> Result<js_sys::Promise, wasm_bindgen::JsValue>;
}

/// Sends the request with its callback URL. A 202 means the result comes later; any other
/// reply is the call's result at once.
async fn call_back(home: &Home, call_id: &str, tool: &Tool, call: &PendingCall) -> Result<(), Value> {
    let http = &call.http;
    let Some(key) = crate::edge::secret(&home.env, crate::signing::SIGNING_KEY) else {
        return Err(error_result(format!("The tool {:?} uses callbacks, but the secret {} is not set.", tool.name, crate::signing::SIGNING_KEY)));
    };
    let token = crate::pending::sign(key.as_bytes(), &home.object, call_id);
    // The request's origin, as the runtime serialized it after the Host check, read again by the
    // URL parser: the upstream gets a URL on exactly that origin, or none.
    let callback = crate::weburl::WebUrl::on_origin(&home.origin, &format!("{}{token}", crate::paths::CALLBACKS)).map_err(|why| error_result(format!("The tool {:?} cannot be given a callback URL: {why}", tool.name)))?;
    let mut http = http.clone();
    http.headers.push((CALLBACK_HEADER.into(), callback.as_str().to_string()));
    match upstream::perform(&http, tool.reply.max_bytes).await {
        Upstream::Reply { status: 202, .. } => Ok(()),
        answered => Err(to_result(&answered, &tool.reply, &crate::edge::redaction::for_call(call).0)),
    }
}
