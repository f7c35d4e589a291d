//! Streams a client opens to hear from the server: the Streamable HTTP GET stream (resumed or
//! standalone), the 2024-11-05 event stream that `GET /sse` opens, and the 2026-07-28
//! `subscriptions/listen` stream; and what they carry that no request asked for: an upstream's
//! notification (`Op::Notify`), sent on the open stream or kept for the next GET.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use web_sys::AbortSignal;
use worker::{Response, ResponseBuilder};

use super::{BusyGuard, Forwarded, McpSession};
use crate::catalog::Server;
use crate::edge::http::session_headers;
use crate::edge::object::registry;
use crate::edge::streams::parse_event_id;
use crate::edge::{apart, arm_alarm, now_ms, writer};
use crate::error::Error;
use crate::negotiate::{at_least, Framing};
use crate::session::Session;

/// How long a legacy session outlives its event stream, for POSTs already under way.
const LEGACY_GRACE_MS: u64 = 10_000;

impl McpSession {
    /// `GET /sse` (2024-11-05): a new legacy session, and its event stream.
    pub(super) async fn open_legacy(&self, request: &Forwarded) -> Result<Response, Error> {
        let server = &request.server;
        let mut session = Session::new(request.session_id(), server.route.as_str(), "2024-11-05", serde_json::json!({}), serde_json::json!({}), now_ms());
        session.legacy_sse = true;
        session.belongs_to(&request.principal);
        self.save(&session).await?;
        crate::edge::health::change(crate::metrics::Gauge::Sessions, 1);
        self.state.storage().set_alarm(Duration::from_millis(server.idle_timeout_ms)).await?;
        let endpoint = request.envelope.endpoint.clone().unwrap_or_default();
        self.legacy_stream(server, request.session_id(), endpoint, &request.signal)
    }

    /// 2026-07-28 `subscriptions/listen`: a session of its own for the stream, registered for
    /// what it listens to.
    pub(super) async fn listen(&self, request: &Forwarded, body: &[u8]) -> Result<Response, Error> {
        let (server, server_index) = (&request.server, request.index());
        let body: serde_json::Value = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(e.to_string()))?;
        let field = |name: &str| body.get(name).cloned().unwrap_or(serde_json::Value::Null);
        let mut session = Session::new(request.session_id(), server.route.as_str(), crate::versions::STATELESS_VERSION, field("clientInfo"), field("clientCapabilities"), now_ms());
        session.belongs_to(&request.principal);
        session.subscriptions = crate::protocol::subscriptions::honored(server, body.get("params"));
        session.lists = crate::protocol::subscriptions::honored_lists(server, body.get("params"));
        session.listen_id = Some(field("id"));
        self.save(&session).await?;
        let object = &request.home.object;
        if !session.subscriptions.is_empty() {
            registry::record(&self.env, server, server_index, object, &session.subscriptions).await?;
        }
        if !session.lists.is_empty() {
            registry::listen(&self.env, server, server_index, object, &session.lists).await?;
        }
        // Should the object be evicted with the stream, the alarm unregisters it.
        self.state.storage().set_alarm(Duration::from_millis(server.idle_timeout_ms)).await?;
        self.listen_stream(server, server_index, &session, object.clone(), &request.signal)
    }

    /// `GET /mcp`: the session's stream, after what the session keeps for it is taken.
    pub(super) async fn get(&self, request: &Forwarded) -> Result<Response, Error> {
        let server = &request.server;
        let mut session = self.session_for(server, Some(&request.principal)).await?;
        session.touch(now_ms());
        // The first GET stream of a session whose server's lists may change: from now on
        // the stream (or the next one) gets every list notification.
        let listens = server.lists_change && session.lists.is_empty() && !session.legacy_sse && session.takes_list_stream();
        if listens {
            session.lists = crate::protocol::subscriptions::LIST_NOTIFICATIONS.iter().map(|m| m.name().to_string()).collect();
        }
        let last_event_id = request.envelope.last_event_id.as_deref();
        // The queued messages go out on this stream.
        let pending = if last_event_id.is_none() { std::mem::take(&mut session.pending) } else { Vec::new() };
        // Saved before the registry is told: a request the object serves while that call
        // is out (the client's `logging/setLevel`, sent as its GET opens) saves its own
        // change, which this copy, saved after, would undo.
        self.save(&session).await?;
        if listens {
            registry::listen(&self.env, server, request.index(), &request.home.object, &session.lists).await?;
        }
        apart(self.get_stream(server, &session, request.session_id(), last_event_id, pending, &request.signal)).await
    }

    /// An upstream announced a change (through the registry). A subscribed session gets it on
    /// its GET stream, or at its next GET when none is open.
    pub(super) async fn notify(&self, request: &Forwarded, body: &[u8]) -> Result<Response, Error> {
        let server = &request.server;
        let session = self.session_for(server, None).await?;
        // Relayed to the client, and kept for its next GET: redacted from the start.
        let body = crate::edge::redaction::seal(String::from_utf8_lossy(body).into_owned()).into_string();
        let message = serde_json::from_slice::<serde_json::Value>(body.as_bytes()).ok();
        let uri = message.as_ref().and_then(|v| v.pointer("/params/uri").and_then(|u| u.as_str()).map(str::to_string));
        let method = message.as_ref().and_then(|v| v.get("method")).and_then(|m| m.as_str()).unwrap_or_default();
        // What the client lists next, it lists through this object: as the upstreams
        // list now, not as this isolate read them last.
        if uri.is_none() {
            crate::edge::mcp::discovery::stale_all(server);
        }
        let wanted = match uri {
            Some(uri) => session.subscriptions.contains(&uri),
            None => session.lists.iter().any(|l| l == method),
        };
        if !wanted {
            return Ok(ResponseBuilder::new().with_status(204).empty());
        }
        // One list notification waiting for the next GET says all it needs to.
        if session.listen_id.is_none() && session.pending.contains(&body) && self.standalone.borrow().is_none() {
            return Ok(ResponseBuilder::new().with_status(202).empty());
        }
        let stream = self.standalone.borrow().clone();
        let line = match &session.listen_id {
            Some(id) => crate::protocol::subscriptions::tag(&body, id),
            None => body.clone(),
        };
        let delivered = match stream {
            Some(stream) => stream.send_line(&crate::edge::redaction::seal(line)).await,
            None => false,
        };
        // A listen stream that is gone has no later GET to catch up with.
        if !delivered && session.listen_id.is_none() {
            // Read again: the delivery was awaited, and the session may have changed since.
            let mut session = self.session_for(server, None).await?;
            session.queue(body);
            self.save(&session).await?;
        }
        Ok(ResponseBuilder::new().with_status(if delivered { 200 } else { 202 }).empty())
    }

    /// Opens a legacy session's event stream: the `endpoint` event, then keepalives. When the
    /// client goes away the session ends after a short grace period.
    fn legacy_stream(&self, server: &Arc<Server>, session_id: &str, endpoint: String, signal: &AbortSignal) -> Result<Response, Error> {
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
        let headers = session_headers(session_id, Some(Framing::Sse));
        Ok(ResponseBuilder::new().with_status(200).with_headers(headers).stream(readable))
    }

    /// A `subscriptions/listen` stream: the acknowledgement, then notifications and keepalive
    /// comments until the client leaves, when the subscription and the object end.
    fn listen_stream(&self, server: &Arc<Server>, server_index: usize, session: &Session, object: String, signal: &AbortSignal) -> Result<Response, Error> {
        let (writer, readable) = writer::open(Framing::Sse, Some(signal))?;
        let writer = Rc::new(writer);
        *self.standalone.borrow_mut() = Some(writer.clone());
        let standalone = self.standalone.clone();
        let busy = BusyGuard::enter(&self.busy, &self.last_activity);
        let ack = crate::protocol::subscriptions::acknowledged(session.listen_id.as_ref().unwrap_or(&serde_json::Value::Null), &session.subscriptions, &session.lists);
        let (env, storage, ending) = (self.env.clone(), self.raw_storage.clone(), session.clone());
        let keepalive = server.keepalive_ms;
        let server = server.clone();
        let (uris, lists, id) = (session.subscriptions.clone(), !session.lists.is_empty(), session.listen_id.clone());
        wasm_bindgen_futures::spawn_local(async move {
            let _busy = busy;
            if writer.send_line(&crate::edge::redaction::seal(ack)).await {
                let keep = std::pin::pin!(writer.keep_alive(keepalive));
                watch_while(&env, &server, &writer, keep, &uris, Holder::Listen { id: id.as_ref(), lists }).await;
            }
            *standalone.borrow_mut() = None;
            // Best effort: the alarm retries the cleanup should this fail.
            let _ = registry::forget(&env, &server, server_index, &object, &ending).await;
            arm_alarm(&storage, 1).await;
        });
        // No session id: 2026-07-28 has none to mint.
        let headers = crate::edge::http::framing_headers(Framing::Sse);
        Ok(ResponseBuilder::new().with_status(200).with_headers(headers).stream(readable))
    }

    /// `GET /mcp`: resumes a stream after `Last-Event-ID`, or opens the standalone stream for
    /// server-initiated messages, kept open with keepalive comments.
    async fn get_stream(&self, server: &Arc<Server>, session: &Session, session_id: &str, last_event_id: Option<&str>, pending: Vec<String>, signal: &AbortSignal) -> Result<Response, Error> {
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
            // As the session is now, not as this request read it: a `resources/subscribe`
            // served while the GET waited for the registry has changed it since.
            let now = self.session_for(server, None).await.map_or_else(|_| session.subscriptions.clone(), |s| s.subscriptions);
            self.subscribed.replace(now);
            let (subscribed, env, server) = (self.subscribed.clone(), self.env.clone(), server.clone());
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
                let mut keep = std::pin::pin!(writer.keep_alive(keepalive));
                // The upstreams' streams are watched for what the session subscribes to now,
                // and watched anew when that changes (looked at every second). Not for list changes: every session with
                // its GET open would hold a session of each upstream (`docs/upstreams.md`).
                while !server.upstreams.is_empty() {
                    let uris = subscribed.borrow().clone();
                    if watch_while(&env, &server, &writer, keep.as_mut(), &uris, Holder::Get(&subscribed)).await {
                        break;
                    }
                }
                // A server without upstreams has nothing to watch: until the client leaves.
                if server.upstreams.is_empty() {
                    keep.await;
                }
                *standalone.borrow_mut() = None;
            });
        }
        let headers = session_headers(session_id, Some(Framing::Sse));
        Ok(ResponseBuilder::new().with_status(200).with_headers(headers).stream(readable))
    }
}

/// The client's stream that watches upstreams.
enum Holder<'a> {
    /// A listen stream: its subscription id, and whether it takes list changes.
    Listen { id: Option<&'a serde_json::Value>, lists: bool },
    /// A session's GET stream, watching what the session subscribes to now.
    Get(&'a std::cell::RefCell<Vec<String>>),
}

/// Watches the upstreams' own streams for a client's stream (`writer`): those that own one of
/// `uris`, and for a listen stream that takes list changes every upstream (an upstream may
/// announce one only on its own stream), not those reached with each user's own token. Updates
/// go out tagged with a listen stream's id. Until the client leaves (`keep` ends: true), or a
/// GET stream's session no longer subscribes to `uris` (false); then the upstream sessions held
/// for it end.
async fn watch_while(env: &worker::Env, server: &Server, writer: &writer::LineWriter, keep: std::pin::Pin<&mut dyn std::future::Future<Output = ()>>, uris: &[String], holder: Holder<'_>) -> bool {
    let (id, lists, subscribed) = match holder {
        Holder::Listen { id, lists } => (id, lists, None),
        Holder::Get(subscribed) => (None, false, Some(subscribed)),
    };
    use futures::future::{select, Either, LocalBoxFuture};
    let mut watched = crate::protocol::subscriptions::owners(server, uris);
    if lists {
        for at in 0..server.upstreams.len() {
            if !watched.iter().any(|(i, _)| *i == at) {
                watched.push((at, Vec::new()));
            }
        }
    }
    watched.retain(|(at, _)| server.upstreams.get(*at).is_some_and(|s| s.connection.is_none()));
    let held = crate::edge::mcp::watch::Held::default();
    let deliver = |uri: String| -> LocalBoxFuture<'_, ()> {
        let line = crate::protocol::resources::updated(&uri);
        let line = match id {
            Some(id) => crate::protocol::subscriptions::tag(&line, id),
            None => line,
        };
        Box::pin(async move {
            writer.send_line(&crate::edge::redaction::seal(line)).await;
        })
    };
    // Each watch runs until dropped (none ends): polled side by side, with no `join_all`,
    // whose machinery for many futures would be code of its own in the module.
    let mut watches: Vec<LocalBoxFuture<'_, ()>> = watched.iter().map(|(source, uris)| Box::pin(crate::edge::mcp::watch::watch(env, server, *source, uris, &deliver, &held)) as LocalBoxFuture<'_, ()>).collect();
    let watching = futures::future::poll_fn(|cx| {
        for watch in &mut watches {
            let _ = watch.as_mut().poll(cx);
        }
        std::task::Poll::<()>::Pending
    });
    let changed = async {
        let Some(subscribed) = subscribed else { return futures::future::pending().await };
        while *subscribed.borrow() == uris {
            worker::Delay::from(Duration::from_millis(1000)).await;
        }
    };
    let left = matches!(select(keep, std::pin::pin!(select(std::pin::pin!(watching), std::pin::pin!(changed)))).await, Either::Left(_));
    crate::edge::mcp::watch::end(&held).await;
    left
}
