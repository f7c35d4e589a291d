//! The 2024-11-05 HTTP+SSE transport, for upstreams that speak nothing newer (n8n's MCP Server
//! Trigger before version 2): a GET event stream whose first `endpoint` event says where to
//! POST; every answer, notification and request of the upstream comes on that stream. The stream
//! is opened for one operation (a list, a call) and ends with it: a stream belongs to the
//! request that opened it, so it cannot outlive it in a Durable Object either.

use std::time::Duration;

use futures::future::{select, Either};
use futures::lock::Mutex;
use futures::StreamExt;
use web_sys::AbortController;
use worker::{ByteStream, Delay};

use super::{answer_in_event, nonsense, Failure, Relay, Reply};
use crate::health::Outcome;
use crate::upstream::mcp::reader::{SseEvent, SseReader};
use crate::upstream::HttpCall;

/// An open event stream: its bytes, what is read of them, and the fetch to abort at the end.
pub struct Stream {
    chunks: ByteStream,
    reader: SseReader,
    queue: std::collections::VecDeque<SseEvent>,
    seen: u64,
    controller: AbortController,
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.controller.abort();
    }
}

impl Stream {
    /// The next event, within `deadline_ms` from now.
    async fn next(&mut self, timeout_ms: u64, max_bytes: u64) -> Result<SseEvent, Failure> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Ok(event);
            }
            let chunk = match select(self.chunks.next(), Delay::from(Duration::from_millis(timeout_ms))).await {
                Either::Left((Some(Ok(chunk)), _)) => chunk,
                Either::Left((Some(Err(e)), _)) => return Err(Failure::Down(format!("its event stream broke off: {e}"), Outcome::Network)),
                Either::Left((None, _)) => return Err(Failure::Down("its event stream ended".into(), Outcome::Network)),
                Either::Right(_) => return Err(Failure::Down(format!("it did not answer within {timeout_ms} ms"), Outcome::Timeout)),
            };
            self.seen += chunk.len() as u64;
            if self.seen > max_bytes {
                return Err(Failure::Down(format!("its event stream exceeds the {max_bytes}-byte limit"), Outcome::Limit));
            }
            self.queue.extend(self.reader.feed(&chunk));
        }
    }
}

/// Opens the event stream at `base`'s URL and reads where to POST: the URL of its `endpoint`
/// event, on the same origin.
pub async fn connect(base: &HttpCall, max_bytes: u64) -> Result<(Mutex<Stream>, String), Failure> {
    let down = |why: String| Failure::Down(why, Outcome::Network);
    let checked = crate::upstream::address::check(&base.url, &base.private_upstreams).map_err(|why| down(format!("it could not be reached: {why}")))?;
    let mut call = base.clone();
    // The stream is opened at the URL as the guard's parser serialized it: the host checked.
    call.url = checked.as_str().to_string();
    call.method = "GET".into();
    call.body = None;
    call.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("accept") && !n.eq_ignore_ascii_case("content-type"));
    call.headers.push(("Accept".into(), "text/event-stream".into()));
    let controller = AbortController::new().map_err(|e| down(crate::edge::js_text(&e)))?;
    let signal = controller.signal();
    let fetched = std::pin::pin!(crate::edge::upstream::fetch(&call, &signal));
    let response = match select(fetched, Delay::from(Duration::from_millis(base.timeout_ms))).await {
        Either::Left((Ok(response), _)) => response,
        Either::Left((Err(why), _)) => return Err(down(format!("it could not be reached: {why}"))),
        Either::Right(_) => {
            controller.abort();
            return Err(Failure::Down(format!("it did not answer within {} ms", base.timeout_ms), Outcome::Timeout));
        }
    };
    let status = response.status();
    let media = crate::edge::upstream::header(&response, "content-type").map(|t| crate::negotiate::media_type(&t)).unwrap_or_default();
    if status != 200 || media != "text/event-stream" {
        controller.abort();
        return Err(Failure::Down(format!("its event stream answered HTTP {status} {media}"), Outcome::Upstream(status)));
    }
    let chunks = worker::Response::from(response).stream().map_err(|e| down(format!("its event stream could not be read: {e}")))?;
    let mut stream = Stream { chunks, reader: SseReader::default(), queue: Default::default(), seen: 0, controller };
    let endpoint = loop {
        let event = stream.next(base.timeout_ms, max_bytes).await?;
        if event.event.as_deref() == Some("endpoint") {
            break event.data;
        }
    };
    let url = crate::upstream::mcp::endpoint(&call.url, endpoint.trim()).ok_or_else(|| nonsense(format!("its endpoint {endpoint:?} is not on its own origin")))?;
    Ok((Mutex::new(stream), url))
}

/// POSTs one message to the endpoint; for a request (`id`), reads the stream until its answer,
/// handing what comes first to `on`.
pub async fn post(base: &HttpCall, stream: &Mutex<Stream>, endpoint: &str, body: String, id: Option<u64>, max_bytes: u64, on: Option<Relay<'_>>) -> Result<Reply, Failure> {
    let mut call = base.clone();
    call.url = endpoint.to_string();
    call.method = "POST".into();
    call.body = Some(body);
    call.retry = None;
    call.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("content-type") && !n.eq_ignore_ascii_case("accept"));
    call.headers.push(("Content-Type".into(), "application/json".into()));
    let sent = crate::edge::upstream::perform(&call, 4096).await;
    match sent {
        crate::upstream::reply::Upstream::Reply { status: 200..=299, .. } => {}
        crate::upstream::reply::Upstream::Reply { status, .. } => return Err(Failure::Down(format!("its endpoint answered HTTP {status}"), Outcome::Upstream(status))),
        crate::upstream::reply::Upstream::TimedOut { after_ms } => return Err(Failure::Down(format!("it did not answer within {after_ms} ms"), Outcome::Timeout)),
        crate::upstream::reply::Upstream::Failed(why) => return Err(Failure::Down(format!("it could not be reached: {why}"), Outcome::Network)),
    }
    if id.is_none() {
        return Ok(Reply::Accepted);
    }
    // Only the request that reads holds the stream; an answer posted meanwhile (by `on`) does
    // not read, so it never waits for it.
    let mut stream = stream.lock().await;
    loop {
        let event = stream.next(base.timeout_ms, max_bytes).await?;
        if let Some(reply) = answer_in_event(&event, id, on).await? {
            return Ok(reply);
        }
    }
}
