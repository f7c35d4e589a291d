//! How a request's replies go out: one JSON body, a stream written as each is ready, or JSON
//! unless something must stream.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use web_sys::AbortSignal;
use worker::{Delay, Response, ResponseBuilder};

use super::{BusyGuard, McpSession};
use crate::catalog::Server;
use crate::dispatch::Action;
use crate::edge::calls;
use crate::edge::context::CallContext;
use crate::edge::deferred::Home;
use crate::edge::http::{accepted, respond, session_headers};
use crate::edge::streams::Outlet;
use crate::edge::writer;
use crate::error::Error;
use crate::negotiate::{at_least, Framing};
use crate::session::Session;

impl McpSession {
    /// Carries out a request's actions. Streams are answered at once and written as each reply
    /// is ready; JSON waits for all of them.
    pub(super) async fn run(&self, server: &Arc<Server>, session: Session, home: &Home, (framing, progress_update, signal): (Framing, bool, &AbortSignal), actions: Vec<Action>, batch: bool) -> Result<Response, Error> {
        let session_id = home.session_id.as_str();
        if !framing.is_stream() {
            let _busy = BusyGuard::enter(&self.busy, &self.last_activity);
            let ctx = CallContext { server, session: &session, out: None, inputs: Some(&self.inputs), cancels: Some(&self.cancels), home: Some(home), progress_update: false, deadline_ms: None };
            let ids: Vec<serde_json::Value> = actions.iter().filter_map(|a| if let Action::Call(call) = a { Some(call.id.clone()) } else { None }).collect();
            let replies = calls::collect(&ctx, actions).await;
            // Handed to the response: as delivered as a JSON body can be.
            for id in &ids {
                home.delivered(id).await;
            }
            if replies.is_empty() {
                // Every request was cancelled: there is no reply to send.
                return accepted(session_id);
            }
            return respond(framing, session_id, replies, batch);
        }
        let (writer, readable) = writer::open(framing, Some(signal))?;
        let writer = Rc::new(writer);
        let mut priming = None;
        let out = if framing == Framing::Sse {
            let (id, polling) = self.open_sse(&session, writer).await;
            priming = polling.then_some((id, server.retry_ms));
            // A tool may close the stream early; the client resumes with Last-Event-ID.
            let close_after = actions.iter().filter_map(|a| match a {
                Action::Call(call) => server.tool(call.label()).and_then(|t| t.close_after_ms),
                _ => None,
            });
            if let (true, Some(ms)) = (polling, close_after.min()) {
                let streams = self.streams.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    Delay::from(Duration::from_millis(ms)).await;
                    streams.close_early(id).await;
                });
            }
            Outlet::Sse { streams: self.streams.clone(), id }
        } else {
            Outlet::Lines(writer)
        };
        self.spawn_actions(server, session, home.clone(), (out, priming), actions, progress_update);
        let headers = session_headers(session_id, Some(framing));
        Ok(ResponseBuilder::new().with_status(200).with_headers(headers).stream(readable))
    }

    /// For a client that accepts JSON and SSE, JSON unless something needs streaming: replies
    /// with no call are JSON at once; a call answers JSON when its result comes first, and
    /// switches to SSE when a notification or a request to the client comes first. Clients that
    /// close right after a reply (n8n-nodes-mcp) then have no stream to abort. A tool that
    /// closes its stream early always streams. `None`: stream as negotiated.
    pub(super) async fn answer_lazily(&self, server: &Arc<Server>, session: &Session, home: &Home, actions: &[Action], signal: &AbortSignal) -> Result<Option<Response>, Error> {
        // Replies kept for the client need a stream to go before this one.
        if !self.outbox.list().await.is_empty() {
            return Ok(None);
        }
        let session_id = home.session_id.as_str();
        let call = match actions {
            // A deferred call (queued, callback) may wait minutes: it streams from the start, so
            // that keepalives hold the response open through proxies and show whether the client
            // is still there when the result comes (`calls::send_or_keep`).
            [Action::Call(call)] if server.tool(call.label()).is_none_or(|t| t.close_after_ms.is_none() && t.deferral.is_none()) => call.clone(),
            [Action::Reply(reply)] => return respond(Framing::Json, session_id, vec![reply.clone()], false).map(Some),
            _ => return Ok(None),
        };
        let waits = calls::pending_timeout(server, &call);
        let (sender, mut receiver) = futures::channel::mpsc::unbounded::<(bool, String)>();
        let busy = BusyGuard::enter(&self.busy, &self.last_activity);
        let inputs = self.inputs.clone();
        let cancels = self.cancels.clone();
        let task_session = session.clone();
        let task_home = home.clone();
        let task_server = server.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let _busy = busy;
            let out = Outlet::Deferred(sender.clone());
            let ctx = CallContext { server: &task_server, session: &task_session, out: Some(&out), inputs: Some(&inputs), cancels: Some(&cancels), home: Some(&task_home), progress_update: false, deadline_ms: None };
            if let Some(reply) = calls::complete(&ctx, &call).await {
                let _ = sender.unbounded_send((true, reply));
            }
        });
        let Some((done, first)) = receiver.next().await else {
            // Cancelled before anything was sent: no reply, so nothing to frame.
            return accepted(session_id).map(Some);
        };
        if done {
            return respond(Framing::Json, session_id, vec![first], false).map(Some);
        }
        let (writer, readable) = writer::open(Framing::Sse, Some(signal))?;
        let (id, polling) = self.open_sse(session, Rc::new(writer)).await;
        let out = Outlet::Sse { streams: self.streams.clone(), id };
        let streams = self.streams.clone();
        let busy = BusyGuard::enter(&self.busy, &self.last_activity);
        let retry = server.retry_ms;
        let (home, server) = (home.clone(), server.clone());
        wasm_bindgen_futures::spawn_local(async move {
            let _busy = busy;
            if polling {
                streams.prime(id, retry).await;
            }
            out.send(&first).await;
            while let Some((done, message)) = receiver.next().await {
                if done {
                    // The reply: kept for the client's next stream when this one is gone.
                    calls::send_or_keep(Some(&home), &server, &out, message, waits).await;
                    break;
                }
                out.send(&message).await;
            }
            out.finish().await;
        });
        let headers = session_headers(session_id, Some(Framing::Sse));
        Ok(Some(ResponseBuilder::new().with_status(200).with_headers(headers).stream(readable)))
    }

    /// Registers this request's SSE stream; returns its id and whether it is resumable, which
    /// follows the version negotiated at initialize: older SDKs (before 1.24, as n8n-nodes-mcp
    /// pins) fail on the empty data of a priming event.
    pub(super) async fn open_sse(&self, session: &Session, writer: Rc<writer::LineWriter>) -> (u64, bool) {
        // Ids come from the stored count, which only streams that really open advance.
        let id = self.allocate_stream().await.unwrap_or(session.streams_opened + 1);
        let polling = at_least(&session.protocol_version, "2025-11-25");
        self.streams.prune(16);
        self.streams.open(id, writer, polling);
        if polling {
            self.streams.forget_old(id).await;
        }
        (id, polling)
    }

    /// Carries out actions in the background, writing every reply to `out` as it is ready (and
    /// the replies kept for the client ahead of the first, `calls::send_or_keep`); `priming`
    /// first writes a stream's priming event.
    pub(super) fn spawn_actions(&self, server: &Arc<Server>, session: Session, home: Home, (out, priming): (Outlet, Option<(u64, u64)>), actions: Vec<Action>, progress_update: bool) {
        let busy = BusyGuard::enter(&self.busy, &self.last_activity);
        let inputs = self.inputs.clone();
        let cancels = self.cancels.clone();
        let streams = self.streams.clone();
        let server = server.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let _busy = busy;
            if let Some((id, retry)) = priming {
                streams.prime(id, retry).await;
            }
            let ctx = CallContext { server: &server, session: &session, out: Some(&out), inputs: Some(&inputs), cancels: Some(&cancels), home: Some(&home), progress_update, deadline_ms: None };
            // Keepalives go out while the calls run; they stop when the last reply is sent.
            futures::future::select(Box::pin(calls::deliver(&ctx, &out, actions)), Box::pin(out.keep_alive(server.keepalive_ms))).await;
        });
    }
}
