//! Streams a client opens to hear from the server: the Streamable HTTP GET stream (resumed or
//! standalone), the 2024-11-05 event stream that `GET /sse` opens, and the 2026-07-28
//! `subscriptions/listen` stream.

use std::sync::Arc;
use crate::edge::object::session::*;
use web_sys::AbortSignal;

impl McpSession {
    /// Opens a legacy session's event stream: the `endpoint` event, then keepalives. When the
    /// client goes away the session ends after a short grace period.
    pub(super) fn open_legacy(&self, server: &Arc<Server>, session_id: &str, endpoint: String, signal: &AbortSignal) -> Result<Response, Error> {
        let (writer, readable) = writer::open(Framing::Sse, Some(signal))?;
        let writer = Rc::new(writer);
        *self.standalone.borrow_mut() = Some(writer.clone());
        let standalone = self.standalone.clone();
        let busy = BusyGuard::enter(&self.busy, &self.last_activity);
        let storage = self.raw_storage.clone();
        let keepalive = server.keepalive_ms;
        wasm_bindgen_futures::spawn_local(async move {
            let _busy = busy;
            if writer.send_event(None, Some("endpoint"), &crate::edge::redaction::seal(endpoint)).await {
                writer.keep_alive(keepalive).await;
            }
            *standalone.borrow_mut() = None;
            arm_alarm(&storage, LEGACY_GRACE_MS).await;
        });
        let headers = session_headers(session_id, Some(Framing::Sse))?;
        Ok(ResponseBuilder::new().with_status(200).with_headers(headers).stream(readable))
    }

    /// A `subscriptions/listen` stream: the acknowledgement, then notifications and keepalive
    /// comments until the client leaves, when the subscription and the object end.
    pub(super) fn open_listen(&self, server: &Arc<Server>, server_index: usize, session: &Session, object: String, signal: &AbortSignal) -> Result<Response, Error> {
        let (writer, readable) = writer::open(Framing::Sse, Some(signal))?;
        let writer = Rc::new(writer);
        *self.standalone.borrow_mut() = Some(writer.clone());
        let standalone = self.standalone.clone();
        let busy = BusyGuard::enter(&self.busy, &self.last_activity);
        let ack = crate::protocol::subscriptions::acknowledged(session.listen_id.as_ref().unwrap_or(&serde_json::Value::Null), &session.subscriptions, &session.lists);
        let (env, storage, ending) = (self.env.clone(), self.raw_storage.clone(), session.clone());
        let keepalive = server.keepalive_ms;
        let server = server.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let _busy = busy;
            if writer.send_line(&crate::edge::redaction::seal(ack)).await {
                writer.keep_alive(keepalive).await;
            }
            *standalone.borrow_mut() = None;
            // Best effort: the alarm retries the cleanup should this fail.
            let _ = registry::forget(&env, &server, server_index, &object, &ending).await;
            arm_alarm(&storage, 1).await;
        });
        // No session id: 2026-07-28 has none to mint.
        let headers = crate::edge::http::framing_headers(Framing::Sse)?;
        Ok(ResponseBuilder::new().with_status(200).with_headers(headers).stream(readable))
    }

    /// `GET /mcp`: resumes a stream after `Last-Event-ID`, or opens the standalone stream for
    /// server-initiated messages, kept open with keepalive comments.
    pub(super) async fn get(&self, server: &Arc<Server>, session: &Session, session_id: &str, last_event_id: Option<&str>, pending: Vec<String>, signal: &AbortSignal) -> Result<Response, Error> {
        let (writer, readable) = writer::open(Framing::Sse, Some(signal))?;
        let writer = Rc::new(writer);
        if let Some(last) = last_event_id {
            let (stream, seq) = parse_event_id(last).ok_or_else(|| Error::InvalidRequest(format!("unknown Last-Event-ID {last:?}")))?;
            match self.streams.attached(stream).await {
                None => return Err(Error::InvalidRequest(format!("unknown Last-Event-ID {last:?}"))),
                Some(true) => return Err(Error::Conflict(format!("stream {stream} is already attached"))),
                Some(false) => {}
            }
            let streams = self.streams.clone();
            let busy = BusyGuard::enter(&self.busy, &self.last_activity);
            wasm_bindgen_futures::spawn_local(async move {
                let _busy = busy;
                streams.resume(stream, seq, writer).await;
            });
        } else {
            // The server-initiated messages are resource updates, list changes where lists may
            // change, and the status of tasks; so the stream is offered only to a session that
            // subscribed, whose server's lists may change, that speaks tasks (it declared the
            // client's `tasks` capability, or keeps a task) (or that has messages waiting);
            // others get 405, which clients take as "no stream". Short-lived clients then never
            // hold one open needlessly: the SDK that n8n-nodes-mcp pins reports the abort of an
            // open stream at close() as an error, and the node throws.
            let speaks_tasks = session.client_capabilities.get("tasks").is_some_and(serde_json::Value::is_object) || !self.task_records().await.is_empty();
            let tasks = crate::tasks::offered(server, &session.protocol_version) && session.takes_list_stream() && speaks_tasks;
            let hold = !session.subscriptions.is_empty() || !session.lists.is_empty() || tasks;
            if hold && self.standalone.borrow().is_some() {
                return Err(Error::Conflict("a GET stream is already open for this session".into()));
            }
            // Replies kept for the client (their own streams were gone) go out here too.
            let kept = self.outbox.take().await;
            if !hold && pending.is_empty() && kept.is_empty() {
                return Err(Error::MethodNotAllowed("POST, DELETE, OPTIONS"));
            }
            let retry = at_least(&session.protocol_version, "2025-11-25").then_some(server.retry_ms);
            if hold {
                *self.standalone.borrow_mut() = Some(writer.clone());
            }
            let standalone = self.standalone.clone();
            let busy = BusyGuard::enter(&self.busy, &self.last_activity);
            let keepalive = server.keepalive_ms;
            let outbox = self.outbox.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let _busy = busy;
                if let Some(retry) = retry {
                    writer.send_retry(retry).await;
                }
                // Kept redacted; sealed again, as the secrets may have changed since (a live edit).
                for message in pending {
                    writer.send_line(&crate::edge::redaction::seal(message)).await;
                }
                for (key, reply) in kept {
                    if !writer.send_line(&crate::edge::redaction::seal(reply.message.clone())).await {
                        outbox.put_back(&key, &reply).await;
                    }
                }
                if !hold {
                    writer.close().await;
                    return;
                }
                // Comments keep proxies from closing an idle stream, and show when the client left.
                writer.keep_alive(keepalive).await;
                *standalone.borrow_mut() = None;
            });
        }
        let headers = session_headers(session_id, Some(Framing::Sse))?;
        Ok(ResponseBuilder::new().with_status(200).with_headers(headers).stream(readable))
    }
}
