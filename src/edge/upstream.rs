//! Performs an upstream call with its timeout, aborting the fetch when time runs out. Streamed
//! replies (NDJSON or SSE) are read line by line, and their notifications forwarded at once.

use std::time::Duration;

use futures::future::{select, Either};
use futures::StreamExt;
use wasm_bindgen::JsValue;
use worker::{AbortController, Delay, Fetch, Headers, Method, Request, RequestInit};

use super::streams::Outlet;
use crate::negotiate::{is_ndjson_type, media_type};
use crate::tools::reply::{self, ResultMode, Upstream};
use crate::tools::stream::{Event, LineReader};
use crate::tools::HttpCall;

/// Makes a call whose whole reply is read (resource reads). The timeout covers the body too.
pub async fn perform(call: &HttpCall, max_reply_bytes: u64) -> Upstream {
    with_timeout(call, async |response| read(response, max_reply_bytes).await).await.unwrap_or_else(|u| u)
}

/// How a tool call reads its reply.
pub struct ToolReading<'a> {
    pub max_reply_bytes: u64,
    pub mode: ResultMode,
    pub structured: bool,
    /// Where progress and log lines go while the call runs; `None` for buffered JSON replies.
    pub out: Option<&'a Outlet>,
    pub reader: LineReader,
}

/// Makes a tool call and returns how it ended: a result, or a request for client input.
pub async fn perform_tool(call: &HttpCall, reading: ToolReading<'_>) -> Event {
    let structured = reading.structured;
    let mode = reading.mode;
    let ended = with_timeout(call, async |response| {
        let media = response.headers().get("content-type").ok().flatten().map(|ct| media_type(&ct)).unwrap_or_default();
        let streamed = is_ndjson_type(&media) || media == "text/event-stream";
        if !streamed || !(200..300).contains(&response.status_code()) {
            return Err(read(response, reading.max_reply_bytes).await);
        }
        Ok(read_lines(response, reading).await)
    })
    .await;
    match ended {
        Ok(Ok(event)) => event,
        Ok(Err(upstream)) | Err(upstream) => reply::outcome(&upstream, mode, structured),
    }
}

async fn read_lines(mut response: worker::Response, mut reading: ToolReading<'_>) -> Event {
    let mut stream = match response.stream() {
        Ok(stream) => stream,
        Err(e) => return Event::Result(reply::error_result(format!("The upstream request failed: cannot read the body: {e}"))),
    };
    let mut seen: u64 = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => return Event::Result(reply::error_result(format!("The upstream request failed: reading the body failed: {e}"))),
        };
        seen += chunk.len() as u64;
        if seen > reading.max_reply_bytes {
            return Event::Result(reply::error_result(format!("The upstream reply exceeds the {}-byte limit.", reading.max_reply_bytes)));
        }
        let events = reading.reader.feed(&chunk);
        if let Some(end) = forward(events, reading.out).await {
            return end;
        }
    }
    let events = reading.reader.finish();
    forward(events, reading.out).await.unwrap_or_else(|| Event::Result(reply::error_result("The upstream stream ended without a result.".into())))
}

/// Sends notifications on; returns the terminal event if one came.
async fn forward(events: Vec<Event>, out: Option<&Outlet>) -> Option<Event> {
    for event in events {
        match event {
            Event::Notify(line) => {
                if let Some(out) = out {
                    out.send(&line).await;
                }
            }
            terminal => return Some(terminal),
        }
    }
    None
}

/// Runs `then` on the fetched response, all within the call's timeout. `Err` carries how the
/// exchange failed (network error or timeout) as an `Upstream`.
async fn with_timeout<T>(call: &HttpCall, then: impl AsyncFnOnce(worker::Response) -> T) -> Result<T, Upstream> {
    let controller = AbortController::default();
    let signal = controller.signal();
    let exchange = Box::pin(async move {
        let request = build(call).map_err(|e| Upstream::Failed(format!("cannot build the request: {e}")))?;
        let response = Fetch::Request(request).send_with_signal(&signal).await.map_err(|e| Upstream::Failed(e.to_string()))?;
        Ok(then(response).await)
    });
    let timer = Delay::from(Duration::from_millis(call.timeout_ms));
    match select(exchange, timer).await {
        Either::Left((result, _)) => result,
        Either::Right(_) => {
            controller.abort();
            Err(Upstream::TimedOut { after_ms: call.timeout_ms })
        }
    }
}

fn build(call: &HttpCall) -> worker::Result<Request> {
    let headers = Headers::new();
    for (name, value) in &call.headers {
        headers.append(name, value)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::from(call.method.clone())).with_headers(headers);
    if let Some(body) = &call.body {
        init.with_body(Some(JsValue::from_str(body)));
    }
    Request::new_with_init(&call.url, &init)
}

async fn read(mut response: worker::Response, limit: u64) -> Upstream {
    let status = response.status_code();
    let content_type = response.headers().get("content-type").ok().flatten();
    let declared = response.headers().get("content-length").ok().flatten().and_then(|l| l.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit) {
        return Upstream::Reply { status, content_type, body: Vec::new(), truncated_at: Some(limit) };
    }
    let mut body = Vec::new();
    if matches!(response.body(), worker::ResponseBody::Empty) {
        return Upstream::Reply { status, content_type, body, truncated_at: None };
    }
    let mut stream = match response.stream() {
        Ok(stream) => stream,
        Err(e) => return Upstream::Failed(format!("cannot read the body: {e}")),
    };
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => body.extend_from_slice(&chunk),
            Err(e) => return Upstream::Failed(format!("reading the body failed: {e}")),
        }
        if body.len() as u64 > limit {
            return Upstream::Reply { status, content_type, body: Vec::new(), truncated_at: Some(limit) };
        }
    }
    Upstream::Reply { status, content_type, body, truncated_at: None }
}
