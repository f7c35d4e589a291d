//! A session's SSE streams: event ids, the log of each stream's events, early close, and
//! attaching a resumed `GET` (with `Last-Event-ID`) to a stream whose call is still running.
//!
//! Streams live in the session's Durable Object, which created their writers; a later request
//! can only reach a stream through here.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::writer::LineWriter;
use crate::framing::SseEvent;

/// How many events of one stream are kept for replay.
const MAX_EVENTS: usize = 256;

#[derive(Default)]
struct Stream {
    /// Events after the priming one, as (sequence number, JSON).
    events: Vec<(u64, String)>,
    next_seq: u64,
    writer: Option<Rc<LineWriter>>,
    /// The stream's work is over: a resumed GET replays and closes.
    done: bool,
}

/// All streams of one session object, shared by the tasks that write them.
#[derive(Clone, Default)]
pub struct Streams(Rc<RefCell<HashMap<u64, Stream>>>);

/// Where one stream's messages go.
#[derive(Clone)]
pub enum Outlet {
    /// NDJSON: lines with no ids and no log.
    Lines(Rc<LineWriter>),
    /// SSE: every event gets an id and is logged for resumption.
    Sse { streams: Streams, id: u64 },
}

impl Outlet {
    pub async fn send(&self, json: &str) {
        match self {
            Outlet::Lines(writer) => {
                writer.send_line(json).await;
            }
            Outlet::Sse { streams, id } => streams.send(*id, json).await,
        }
    }

    /// The stream's work is over: closes whatever writer is attached.
    pub async fn finish(&self) {
        match self {
            Outlet::Lines(writer) => writer.close().await,
            Outlet::Sse { streams, id } => streams.finish(*id).await,
        }
    }
}

/// Splits an event id `"{stream}-{seq}"`.
pub fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

impl Streams {
    /// Registers stream `id` on `writer`. Nothing is written yet: the response that carries
    /// the readable side must be returned first.
    pub fn open(&self, id: u64, writer: Rc<LineWriter>) {
        self.0.borrow_mut().insert(id, Stream { next_seq: 1, writer: Some(writer), ..Stream::default() });
    }

    /// Writes the priming event (id, retry, empty data), so the client can resume even before
    /// the first message.
    pub async fn prime(&self, id: u64, retry_ms: u64) {
        let writer = self.0.borrow().get(&id).and_then(|s| s.writer.clone());
        let Some(writer) = writer else { return };
        let event_id = format!("{id}-0");
        let priming = SseEvent { id: Some(&event_id), retry_ms: Some(retry_ms), data: "", ..SseEvent::default() };
        if !writer.send_bytes(&priming.to_bytes()).await {
            self.detach(id);
        }
    }

    async fn send(&self, id: u64, json: &str) {
        let (writer, seq) = {
            let mut map = self.0.borrow_mut();
            let Some(stream) = map.get_mut(&id) else { return };
            let seq = stream.next_seq;
            stream.next_seq += 1;
            stream.events.push((seq, json.to_string()));
            if stream.events.len() > MAX_EVENTS {
                stream.events.remove(0);
            }
            (stream.writer.clone(), seq)
        };
        let Some(writer) = writer else { return };
        let event_id = format!("{id}-{seq}");
        let event = SseEvent { id: Some(&event_id), data: json, ..SseEvent::default() };
        if !writer.send_bytes(&event.to_bytes()).await {
            self.detach(id);
        }
    }

    /// Closes the stream's current connection early; its events keep being logged.
    pub async fn close_early(&self, id: u64) {
        let writer = self.0.borrow_mut().get_mut(&id).and_then(|s| s.writer.take());
        if let Some(writer) = writer {
            writer.close().await;
        }
    }

    fn detach(&self, id: u64) {
        if let Some(stream) = self.0.borrow_mut().get_mut(&id) {
            stream.writer = None;
        }
    }

    async fn finish(&self, id: u64) {
        let writer = {
            let mut map = self.0.borrow_mut();
            let Some(stream) = map.get_mut(&id) else { return };
            stream.done = true;
            stream.writer.take()
        };
        if let Some(writer) = writer {
            writer.close().await;
        }
    }

    /// Whether the stream exists and has a connection right now.
    pub fn attached(&self, id: u64) -> Option<bool> {
        self.0.borrow().get(&id).map(|s| s.writer.is_some())
    }

    /// Resumes stream `id` on a new connection: replays the events after `after`, then either
    /// closes (the work is done) or stays attached for what comes next.
    pub async fn resume(&self, id: u64, after: u64, writer: Rc<LineWriter>) {
        let (missed, done) = {
            let map = self.0.borrow();
            let Some(stream) = map.get(&id) else { return };
            let missed: Vec<(u64, String)> = stream.events.iter().filter(|(seq, _)| *seq > after).cloned().collect();
            (missed, stream.done)
        };
        for (seq, json) in missed {
            let event_id = format!("{id}-{seq}");
            if !writer.send_bytes(&SseEvent { id: Some(&event_id), data: &json, ..SseEvent::default() }.to_bytes()).await {
                return;
            }
        }
        if done {
            writer.close().await;
        } else if let Some(stream) = self.0.borrow_mut().get_mut(&id) {
            stream.writer = Some(writer);
        }
    }

    /// Forgets finished streams that nobody is reading, keeping the newest `keep`.
    pub fn prune(&self, keep: usize) {
        let mut map = self.0.borrow_mut();
        let mut finished: Vec<u64> = map.iter().filter(|(_, s)| s.done && s.writer.is_none()).map(|(id, _)| *id).collect();
        finished.sort_unstable();
        let excess = finished.len().saturating_sub(keep);
        for id in finished.into_iter().take(excess) {
            map.remove(&id);
        }
    }
}
