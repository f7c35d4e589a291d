//! A session's SSE streams: event ids, the log of each stream's events, early close, and
//! attaching a resumed `GET` (with `Last-Event-ID`) to a stream whose call is still running.
//!
//! Streams live in the session's Durable Object, which created their writers; a later request
//! can only reach a stream through here.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use worker::worker_sys::DurableObjectStorage;

use crate::edge::redaction;
use crate::edge::writer::LineWriter;
use crate::redact::{Redacted, Redactor};

/// How many events of one stream are kept for replay.
const MAX_EVENTS: u64 = 256;
/// How many recent resumable streams keep their events in storage.
const STORED_STREAMS: u64 = 16;

#[derive(Default)]
struct Stream {
    /// Events after the priming one, as (sequence number, JSON).
    events: Vec<(u64, String)>,
    next_seq: u64,
    writer: Option<Rc<LineWriter>>,
    /// The stream's work is over: a resumed GET replays and closes.
    done: bool,
    /// Events also go to storage, so a resume survives the object's eviction. Only streams a
    /// client is told it may resume (2025-11-25 priming) pay for those writes.
    persist: bool,
}

/// All streams of one session object, shared by the tasks that write them.
#[derive(Clone)]
pub struct Streams {
    map: Rc<RefCell<HashMap<u64, Stream>>>,
    storage: Rc<DurableObjectStorage>,
}

fn event_key(stream: u64, seq: u64) -> String {
    format!("ev:{stream}:{seq:010}")
}

/// A progress notification of a program's tool call as the program's own: its token, and the
/// next of its values (a client may hold each token's values to rising); `None`: not progress.
fn program_progress(json: &str, token: &serde_json::Value, count: &std::cell::Cell<u64>) -> Option<String> {
    if !json.contains(crate::method::Method::Progress.name()) {
        return None;
    }
    let mut message = serde_json::from_slice::<serde_json::Value>(json.as_bytes()).ok()?;
    if message.get("method").and_then(serde_json::Value::as_str) != Some(crate::method::Method::Progress.name()) {
        return None;
    }
    let params = message.get_mut("params")?.as_object_mut()?;
    count.set(count.get() + 1);
    params.insert("progressToken".into(), token.clone());
    params.insert("progress".into(), count.get().into());
    params.remove("total");
    Some(message.to_string())
}

/// Where one stream's messages go.
#[derive(Clone)]
pub enum Outlet {
    /// NDJSON: lines with no ids and no log.
    Lines(Rc<LineWriter>),
    /// SSE: every event gets an id and is logged for resumption.
    Sse { streams: Streams, id: u64 },
    /// The 2024-11-05 event stream: `event: message` per message.
    Legacy(Rc<LineWriter>),
    /// Not decided yet: messages wait until the first one chooses the framing.
    Deferred(futures::channel::mpsc::UnboundedSender<(bool, String)>),
    /// A task's call, whose request has been answered: its messages, tied to the task, go on
    /// the session's GET stream when one is open.
    Task { standalone: Rc<std::cell::RefCell<Option<Rc<LineWriter>>>>, task: String },
    /// Another outlet, as one call sees it: its messages are redacted with the caller's own
    /// credentials as well as the deployment's secrets (`calls::run` wraps it).
    Call { to: Box<Outlet>, secrets: Arc<Redactor> },
    /// Another outlet, as a program's tool calls see it (`edge::code`): progress of any of them
    /// goes out under the program's own token, `count` rising across them all.
    Program { to: Box<Outlet>, token: serde_json::Value, count: std::rc::Rc<std::cell::Cell<u64>> },
}

impl Outlet {
    /// Sends one message; false when it is lost unless kept elsewhere: the client is gone and
    /// cannot resume the stream to read it (a resumable SSE stream logs it, and a task's
    /// messages are for whoever polls the task). Every message is redacted here, whatever it is
    /// and whoever made it (`edge::redaction`).
    pub async fn send(&self, json: &str) -> bool {
        match self {
            Outlet::Call { to, secrets } => to.carry(secrets.seal(json.to_string())).await,
            // Not an exit: whatever receives it sends it on through an outlet of its own.
            Outlet::Deferred(sender) => sender.unbounded_send((false, json.to_string())).is_ok(),
            _ => self.carry(redaction::seal(json.to_string())).await,
        }
    }

    /// Sends a redacted message where this outlet leads.
    async fn carry(&self, message: Redacted) -> bool {
        match self {
            Outlet::Lines(writer) => writer.send_line(&message).await,
            Outlet::Sse { streams, id } => streams.send(*id, &message).await,
            Outlet::Legacy(writer) => writer.send_event(None, Some("message"), &message).await,
            Outlet::Deferred(sender) => sender.unbounded_send((false, message.into_string())).is_ok(),
            Outlet::Task { standalone, task } => {
                let writer = standalone.borrow().clone();
                if let Some(writer) = writer {
                    // The task's id is ours; the message is sealed again with it.
                    writer.send_line(&redaction::seal(crate::tasks::related(message.as_str(), task))).await;
                }
                true
            }
            Outlet::Call { to, .. } => Box::pin(to.carry(message)).await,
            Outlet::Program { to, token, count } => match program_progress(message.as_str(), token, count) {
                Some(progress) => Box::pin(to.carry(redaction::seal(progress))).await,
                None => Box::pin(to.carry(message)).await,
            },
        }
    }

    /// Whether the client still reads this stream, as far as can be known before a reply goes
    /// out: after a quiet while, or `always` (before a queued or callback call's result), a probe
    /// shows it (`LineWriter::probe`). A resumable SSE stream keeps what it is sent, whoever
    /// reads it; a task's messages are for whoever polls the task.
    pub async fn probe(&self, always: bool) -> bool {
        match self {
            Outlet::Lines(writer) | Outlet::Legacy(writer) => writer.probe(always).await,
            Outlet::Sse { streams, id } => streams.probe(*id, always).await,
            Outlet::Deferred(_) | Outlet::Task { .. } => true,
            Outlet::Call { to, .. } | Outlet::Program { to, .. } => Box::pin(to.probe(always)).await,
        }
    }

    /// Writes a probe (an SSE comment, an empty NDJSON line) every `every_ms`, forever: a stream
    /// waiting for a long call stays open through proxies that end idle responses (Cloudflare's
    /// after 100 seconds), and shows when its client left. Dropped when the call is done.
    pub async fn keep_alive(&self, every_ms: u64) {
        loop {
            worker::Delay::from(std::time::Duration::from_millis(every_ms)).await;
            match self {
                Outlet::Lines(writer) => {
                    writer.send_probe().await;
                }
                Outlet::Sse { streams, id } => streams.comment(*id).await,
                // The legacy event stream keeps itself alive; the others are no client's stream
                // (a call's view of an outlet is never kept alive: its stream's owner does that).
                Outlet::Legacy(_) | Outlet::Deferred(_) | Outlet::Task { .. } | Outlet::Call { .. } | Outlet::Program { .. } => futures::future::pending::<()>().await,
            }
        }
    }

    /// The stream's work is over: closes whatever writer is attached.
    pub async fn finish(&self) {
        match self {
            Outlet::Lines(writer) => writer.close().await,
            Outlet::Sse { streams, id } => streams.finish(*id).await,
            // The event stream outlives each message: it closes with the session; a call's view
            // of an outlet is finished by the outlet's owner.
            Outlet::Legacy(_) | Outlet::Deferred(_) | Outlet::Task { .. } | Outlet::Call { .. } | Outlet::Program { .. } => {}
        }
    }
}

/// Splits an event id `"{stream}-{seq}"`.
pub fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

impl Streams {
    pub fn new(storage: Rc<DurableObjectStorage>) -> Streams {
        Streams { map: Rc::default(), storage }
    }

    /// Registers stream `id` on `writer`. Nothing is written yet: the response that carries
    /// the readable side must be returned first.
    pub fn open(&self, id: u64, writer: Rc<LineWriter>, persist: bool) {
        self.map.borrow_mut().insert(id, Stream { next_seq: 1, writer: Some(writer), persist, ..Stream::default() });
    }

    /// Drops the stored events of the stream that falls out of the kept window.
    pub async fn forget_old(&self, newest: u64) {
        if let Some(old) = newest.checked_sub(STORED_STREAMS) {
            let keys = self.stored(old).await.into_iter().map(|(seq, _)| JsValue::from_str(&event_key(old, seq)));
            let keys: js_sys::Array = keys.collect();
            if keys.length() > 0 {
                if let Ok(promise) = self.storage.delete_multiple(keys.to_vec()) {
                    let _ = JsFuture::from(promise).await;
                }
            }
        }
    }

    /// The stored events of a stream, in order.
    async fn stored(&self, id: u64) -> Vec<(u64, String)> {
        let Ok(map) = crate::edge::listed(&self.storage, &format!("ev:{id}:")).await else { return Vec::new() };
        let mut events = Vec::new();
        map.for_each(&mut |value, key| {
            let seq = key.as_string().and_then(|k| k.rsplit(':').next().and_then(|s| s.parse().ok()));
            if let (Some(seq), Some(json)) = (seq, value.as_string()) {
                events.push((seq, json));
            }
        });
        events.sort_unstable_by_key(|(seq, _)| *seq);
        events
    }

    /// Writes the priming event (id, retry, empty data), so the client can resume even before
    /// the first message.
    pub async fn prime(&self, id: u64, retry_ms: u64) {
        let writer = self.map.borrow().get(&id).and_then(|s| s.writer.clone());
        let Some(writer) = writer else { return };
        let event_id = format!("{id}-0");
        if !writer.send_empty(Some(&event_id), Some(retry_ms)).await {
            self.detach(id);
        }
    }

    /// Logs and writes one event; false when it reached no one and no resume can replay it
    /// (a stream before 2025-11-25 whose client is gone): it is then left out of the log too,
    /// so that whoever keeps it elsewhere is the only one to deliver it. The log, in memory and
    /// in storage, keeps the message redacted, as it was written.
    async fn send(&self, id: u64, message: &Redacted) -> bool {
        let json = message.as_str();
        let (writer, seq, persist) = {
            let mut map = self.map.borrow_mut();
            let Some(stream) = map.get_mut(&id) else { return false };
            let seq = stream.next_seq;
            stream.next_seq += 1;
            stream.events.push((seq, json.to_string()));
            if stream.events.len() as u64 > MAX_EVENTS {
                stream.events.remove(0);
            }
            (stream.writer.clone(), seq, stream.persist)
        };
        if persist {
            // Never held across the borrow above: other tasks write other streams meanwhile.
            if let Ok(promise) = self.storage.put(&event_key(id, seq), JsValue::from_str(json)) {
                let _ = JsFuture::from(promise).await;
            }
            if let Some(old) = seq.checked_sub(MAX_EVENTS) {
                if let Ok(promise) = self.storage.delete(&event_key(id, old)) {
                    let _ = JsFuture::from(promise).await;
                }
            }
        }
        let event_id = format!("{id}-{seq}");
        let written = match writer {
            Some(writer) => writer.send_event(Some(&event_id), None, message).await,
            None => false,
        };
        if !written {
            self.detach(id);
            if !persist {
                self.unlog(id, seq);
            }
        }
        written || persist
    }

    /// Writes a keepalive comment to the stream's connection, if it has one; nothing is logged.
    async fn comment(&self, id: u64) {
        let writer = self.map.borrow().get(&id).and_then(|s| s.writer.clone());
        if let Some(writer) = writer {
            if !writer.send_probe().await {
                self.detach(id);
            }
        }
    }

    /// `Outlet::probe` for an SSE stream: one that no resume can replay is probed on its
    /// connection; a resumable one keeps its events for the client to come back for.
    async fn probe(&self, id: u64, always: bool) -> bool {
        let (writer, persist) = match self.map.borrow().get(&id) {
            Some(stream) => (stream.writer.clone(), stream.persist),
            None => return false,
        };
        match writer {
            _ if persist => true,
            Some(writer) => writer.probe(always).await,
            None => false,
        }
    }

    /// Takes an event back out of a stream's log.
    fn unlog(&self, id: u64, seq: u64) {
        if let Some(stream) = self.map.borrow_mut().get_mut(&id) {
            stream.events.retain(|(s, _)| *s != seq);
        }
    }

    /// Closes the stream's current connection early; its events keep being logged.
    pub async fn close_early(&self, id: u64) {
        let writer = self.map.borrow_mut().get_mut(&id).and_then(|s| s.writer.take());
        if let Some(writer) = writer {
            writer.close().await;
        }
    }

    fn detach(&self, id: u64) {
        if let Some(stream) = self.map.borrow_mut().get_mut(&id) {
            stream.writer = None;
        }
    }

    async fn finish(&self, id: u64) {
        let writer = {
            let mut map = self.map.borrow_mut();
            let Some(stream) = map.get_mut(&id) else { return };
            stream.done = true;
            stream.writer.take()
        };
        if let Some(writer) = writer {
            writer.close().await;
        }
    }

    /// Whether the stream exists (in memory, or in storage after an eviction) and has a
    /// connection right now.
    pub async fn attached(&self, id: u64) -> Option<bool> {
        if let Some(attached) = self.map.borrow().get(&id).map(|s| s.writer.is_some()) {
            return Some(attached);
        }
        (!self.stored(id).await.is_empty()).then_some(false)
    }

    /// Resumes stream `id` on a new connection: replays the events after `after`, then either
    /// closes (the work is done) or stays attached for what comes next. A stream known only
    /// from storage belonged to an evicted object: its work is over.
    pub async fn resume(&self, id: u64, after: u64, writer: Rc<LineWriter>) {
        let in_memory = {
            let map = self.map.borrow();
            map.get(&id).map(|stream| (stream.events.iter().filter(|(seq, _)| *seq > after).cloned().collect::<Vec<_>>(), stream.done))
        };
        let (missed, done) = match in_memory {
            Some(found) => found,
            None => (self.stored(id).await.into_iter().filter(|(seq, _)| *seq > after).collect(), true),
        };
        for (seq, json) in missed {
            let event_id = format!("{id}-{seq}");
            // Kept redacted; sealed again, as the secrets may have changed since (a live edit).
            if !writer.send_event(Some(&event_id), None, &redaction::seal(json)).await {
                return;
            }
        }
        if done {
            writer.close().await;
        } else if let Some(stream) = self.map.borrow_mut().get_mut(&id) {
            stream.writer = Some(writer);
        }
    }

    /// Forgets finished streams that nobody is reading, keeping the newest `keep`.
    pub fn prune(&self, keep: usize) {
        let mut map = self.map.borrow_mut();
        let mut finished: Vec<u64> = map.iter().filter(|(_, s)| s.done && s.writer.is_none()).map(|(id, _)| *id).collect();
        let excess = finished.len().saturating_sub(keep);
        // The oldest (lowest ids) go. A session has few streams: a scan per removal is cheap,
        // and keeps a second sort's code out of the module.
        for _ in 0..excess {
            let Some(oldest) = finished.iter().copied().min() else { break };
            finished.retain(|id| *id != oldest);
            map.remove(&oldest);
        }
    }
}
