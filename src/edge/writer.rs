//! The streaming writer: a TransformStream whose readable side is the response body, and a
//! `send_line` that writes one message in the negotiated framing. Every open stream is known to
//! `rescue`, which ends it with an error message should the module trap.
//!
//! A client that leaves shows only when the runtime next writes to it: its request's abort
//! signal fires (the `enable_request_signal` flag) at once for a reset connection, and at the
//! first write after an orderly close; a write promise says nothing, since that first write still
//! succeeds. So the writer watches the signal, and a reply (a message the client must get once)
//! on a stream quiet for a while is preceded by a probe that shows whether anyone still reads.

use std::cell::Cell;
use std::time::Duration;

use js_sys::Uint8Array;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortSignal, ReadableStream, TransformStream, WritableStreamDefaultWriter};

use crate::edge::now_ms;
use crate::edge::rescue;
use crate::framing::{self, SseEvent};
use crate::negotiate::Framing;
use crate::redact::Redacted;

/// A reply on a stream written to no more recently than this is preceded by a probe.
const PROBE_AFTER_MS: u64 = 1_000;
/// How long after a probe the reply waits for the runtime to report that the client left: the
/// signal fires within a millisecond or two of the write in an idle workerd, later in a busy one.
const PROBE_SETTLE_MS: u64 = 50;
/// Probes written before a reply: the reset that an orderly-closed client's system answers the
/// first with is what the signal reports; a second write is refused outright once it has come.
const PROBES: usize = 2;

pub struct LineWriter {
    writer: WritableStreamDefaultWriter,
    framing: Framing,
    /// The abort signal of the request whose response this stream is; `None` where there is none
    /// to watch (the client is then known gone only when a write fails).
    signal: Option<AbortSignal>,
    /// When a chunk was last written.
    written_ms: Cell<u64>,
}

#[wasm_bindgen::prelude::wasm_bindgen(module = "/src/edge/glue.js")]
extern "C" {
    /// A promise that resolves once `signal` has fired.
    fn aborted(signal: &AbortSignal) -> js_sys::Promise;
}

/// Opens a stream for the request `signal` belongs to. Hand the readable side back in the
/// response before writing: a write waits for the reader, so awaiting one first would wait
/// forever.
pub fn open(framing: Framing, signal: Option<&AbortSignal>) -> worker::Result<(LineWriter, ReadableStream)> {
    let stream = TransformStream::new().map_err(js_error)?;
    let writer = stream.writable().get_writer().map_err(js_error)?;
    let ending = Uint8Array::from(framing::stream_chunk(framing, &rescue::failed()).as_slice());
    rescue::stream_opened(&writer, &ending);
    // The open streams gauge counts session objects' streams: each answers a request whose
    // abort signal it watches (a stateless reply's stream, in the Worker, has none).
    if signal.is_some() {
        crate::edge::health::change(crate::metrics::Gauge::Streams, 1);
    }
    Ok((LineWriter { writer, framing, signal: signal.cloned(), written_ms: Cell::new(now_ms()) }, stream.readable()))
}

impl LineWriter {
    /// Writes one JSON message; false once the client is known to have gone away. Redacted
    /// messages only (`edge::redaction`): a stream is an exit.
    pub async fn send_line(&self, json: &Redacted) -> bool {
        self.send_bytes(&framing::stream_chunk(self.framing, json.as_str())).await
    }

    /// Writes one SSE event whose data is a redacted message (`id` and `event` are ours).
    pub async fn send_event(&self, id: Option<&str>, event: Option<&str>, data: &Redacted) -> bool {
        self.send_bytes(&SseEvent { id, event, data: data.as_str(), ..SseEvent::default() }.to_bytes()).await
    }

    /// An SSE event that carries no message: an id and a retry with empty data (a priming event).
    pub async fn send_empty(&self, id: Option<&str>, retry_ms: Option<u64>) -> bool {
        self.send_bytes(&SseEvent { id, retry_ms, data: "", ..SseEvent::default() }.to_bytes()).await
    }

    /// A bare `retry:` field: sets the client's reconnection delay without an event.
    pub async fn send_retry(&self, retry_ms: u64) -> bool {
        self.send_bytes(&framing::sse_retry(retry_ms)).await
    }

    /// A keepalive that clients ignore (an SSE comment, an empty NDJSON line).
    pub async fn send_probe(&self) -> bool {
        self.send_bytes(&framing::probe(self.framing)).await
    }

    /// The only writer of bytes: the methods above are how anything reaches it.
    async fn send_bytes(&self, bytes: &[u8]) -> bool {
        if self.gone() {
            return false;
        }
        let chunk = Uint8Array::from(bytes);
        let written = JsFuture::from(self.writer.write_with_chunk(&chunk)).await.is_ok();
        self.written_ms.set(now_ms());
        written && !self.gone()
    }

    /// After a quiet while (or `always`), writes a probe and gives the runtime a moment to say
    /// whether the client is gone; false when it is.
    pub async fn probe(&self, always: bool) -> bool {
        if self.signal.is_some() && (always || now_ms().saturating_sub(self.written_ms.get()) >= PROBE_AFTER_MS) {
            for _ in 0..PROBES {
                if !self.send_probe().await {
                    return false;
                }
                worker::Delay::from(Duration::from_millis(PROBE_SETTLE_MS)).await;
            }
        }
        !self.gone()
    }

    /// Whether the runtime has said the client is gone.
    pub fn gone(&self) -> bool {
        self.signal.as_ref().is_some_and(AbortSignal::aborted)
    }

    /// Writes a keepalive comment every `every_ms` until the client is gone: that is known at
    /// once when the runtime signals it (a reset connection), else at the first keepalive after
    /// the client left.
    pub async fn keep_alive(&self, every_ms: u64) {
        let mut gone = Box::pin(self.closed());
        loop {
            match futures::future::select(worker::Delay::from(Duration::from_millis(every_ms)), gone).await {
                futures::future::Either::Left((_, still)) => {
                    if !self.send_bytes(&framing::sse_comment("keepalive")).await {
                        return;
                    }
                    gone = still;
                }
                futures::future::Either::Right(_) => return,
            }
        }
    }

    /// Resolves once the runtime signals that the client is gone (never, without a signal).
    async fn closed(&self) {
        match &self.signal {
            Some(signal) => {
                let _ = JsFuture::from(aborted(signal)).await;
            }
            None => futures::future::pending::<()>().await,
        }
    }

    pub async fn close(&self) {
        rescue::stream_closed(&self.writer);
        let _ = JsFuture::from(self.writer.close()).await;
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        rescue::stream_closed(&self.writer);
        if self.signal.is_some() {
            crate::edge::health::change(crate::metrics::Gauge::Streams, -1);
        }
    }
}

fn js_error(value: wasm_bindgen::JsValue) -> worker::Error {
    match value.dyn_into::<js_sys::Error>() {
        Ok(e) => worker::Error::RustError(String::from(e.message())),
        Err(v) => worker::Error::RustError(format!("{v:?}")),
    }
}
