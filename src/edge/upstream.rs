//! Performs an upstream call within its time budget: redirects followed under the host rules,
//! failed attempts retried for idempotent tools, and the fetch aborted when time runs out or the
//! call is dropped (cancelled). Streamed replies (NDJSON or SSE) are read line by line, and
//! their notifications forwarded at once.

use std::pin::pin;
use std::time::Duration;

use futures::future::{select, Either};
use futures::StreamExt;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, AbortSignal, RequestInit, Response};
use worker::Delay;

use crate::edge::js_text;
use crate::edge::now_ms;
use crate::edge::streams::Outlet;
use crate::negotiate::{is_ndjson_type, media_type};
use crate::upstream::reply::{self, ReplyPlan, Upstream};
use crate::time::parse_retry_after;
use crate::upstream::retry::{redirected_method, Failure, Step};
use crate::upstream::stream::{Event, LineReader};
use crate::upstream::HttpCall;
use crate::health::Outcome;

/// Makes a call whose whole reply is read (resource reads). The timeout covers the body too.
pub async fn perform(call: &HttpCall, max_reply_bytes: u64) -> Upstream {
    exchange(call, async |response| {
        let head = ReplyHead::of(&response);
        read(response, head, max_reply_bytes).await
    })
    .await
    .unwrap_or_else(|u| u)
}

/// How a tool call reads its reply.
pub struct ToolReading<'a> {
    pub plan: &'a ReplyPlan,
    /// Where progress and log lines go while the call runs; `None` for buffered JSON replies.
    pub out: Option<&'a Outlet>,
    pub reader: LineReader,
    /// Redacted from what the result quotes of the reply, before it is cut.
    pub secrets: &'a crate::redact::Redactor,
    /// The call's span in its session's object, when sampled: each progress line forwarded is
    /// one of its events.
    pub span: Option<crate::trace::SpanId>,
    /// Where a successful reply's `ETag` goes, for a tool whose results are kept.
    pub etag: Option<&'a std::cell::RefCell<Option<String>>>,
}

/// Makes a tool call and returns how it ended: a result, or a request for client input; and
/// the exchange's outcome, for the health figures.
pub async fn perform_tool(call: &HttpCall, reading: ToolReading<'_>) -> (Event, Outcome) {
    let (plan, secrets) = (reading.plan, reading.secrets);
    let etag = reading.etag;
    let ended = exchange(call, async |response| {
        let head = ReplyHead::of(&response);
        if let (Some(etag), true) = (etag, (200..300).contains(&response.status())) {
            etag.replace(Some(reply_etag(&response)).filter(|e| !e.is_empty()));
        }
        let media = head.content_type.as_deref().map(media_type).unwrap_or_default();
        let streamed = is_ndjson_type(&media) || media == "text/event-stream";
        if !streamed || !(200..300).contains(&response.status()) || head.refused().is_some() {
            let (upstream, drained) = read(response, head, plan.max_bytes).await;
            return (Err(upstream), drained);
        }
        (Ok(read_lines(response, reading).await), false)
    })
    .await;
    match ended {
        Ok(Ok(ended)) => ended,
        Ok(Err(upstream)) | Err(upstream) => (crate::upstream::stream::outcome(&upstream, plan, secrets), Outcome::of(&upstream)),
    }
}

async fn read_lines(response: Response, mut reading: ToolReading<'_>) -> (Event, Outcome) {
    let failed = |why: String, outcome| (Event::Result(reply::error_result(why)), outcome);
    let mut stream = match worker::Response::from(response).stream() {
        Ok(stream) => stream,
        Err(e) => return failed(format!("The upstream request failed: cannot read the body: {e}"), Outcome::Network),
    };
    let mut seen: u64 = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => return failed(format!("The upstream request failed: reading the body failed: {e}"), Outcome::Network),
        };
        seen += chunk.len() as u64;
        if seen > reading.plan.max_bytes {
            return failed(format!("The upstream reply exceeds the {}-byte limit.", reading.plan.max_bytes), Outcome::Limit);
        }
        let events = reading.reader.feed(&chunk);
        if let Some(end) = forward(events, reading.out, reading.span).await {
            return (end, Outcome::Ok);
        }
    }
    let events = reading.reader.finish();
    match forward(events, reading.out, reading.span).await {
        Some(end) => (end, Outcome::Ok),
        None => failed("The upstream stream ended without a result.".into(), Outcome::Network),
    }
}

/// Sends notifications on; returns the terminal event if one came.
async fn forward(events: Vec<Event>, out: Option<&Outlet>, span: Option<crate::trace::SpanId>) -> Option<Event> {
    for event in events {
        match event {
            Event::Notify(line) => {
                if let (Some(span), true) = (span, line.contains("\"notifications/progress\"")) {
                    crate::edge::telemetry::progressed(span);
                }
                if let Some(out) = out {
                    out.send(&line).await;
                }
            }
            terminal => return Some(terminal),
        }
    }
    None
}

/// Aborts its fetch when dropped: when the call ends, times out, or is cancelled, the upstream
/// connection (and any body still coming) is released at once.
struct AbortOnDrop(Option<AbortController>);

impl AbortOnDrop {
    /// The body was read to its end: there is nothing left to release.
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(controller) = self.0.take() {
            controller.abort();
        }
    }
}

thread_local! {
    /// The last URL the SSRF guard passed, the hosts it allowed, and the URL as the guard
    /// serialized it: a tool's calls mostly go to one URL, and the guard (a WHATWG parse) is a
    /// pure function of the first two.
    static PASSED: std::cell::RefCell<Option<(String, Vec<String>, String)>> = const { std::cell::RefCell::new(None) };
}

/// `crate::upstream::address::check`, its verdict on the last URL it passed remembered.
fn guarded(url: &str, allowed: &[String]) -> Result<String, String> {
    let known = PASSED.with(|p| p.borrow().as_ref().filter(|(u, a, _)| u == url && a.as_slice() == allowed).map(|(_, _, checked)| checked.clone()));
    if let Some(checked) = known {
        return Ok(checked);
    }
    let checked = crate::upstream::address::check(url, allowed)?.as_str().to_string();
    PASSED.with(|p| *p.borrow_mut() = Some((url.to_string(), allowed.to_vec(), checked.clone())));
    Ok(checked)
}

/// Runs the call's attempts and `then` on the final response, all within `call.timeout_ms`
/// (one timer for the whole call). `then` says whether it read the body to its end; if not, the
/// fetch is aborted. `Err` carries how the exchange failed (network error, timeout, refused
/// redirect).
pub(crate) async fn exchange<T>(call: &HttpCall, then: impl AsyncFnOnce(Response) -> (T, bool)) -> Result<T, Upstream> {
    // Traced: an HTTP client span over the whole exchange, retries and redirects its events.
    // One await either way, so the exchange is compiled once.
    let mut span = crate::edge::telemetry::http_client(call);
    let ended = exchange_within(call, span.as_mut(), then).await;
    if let Some(span) = span {
        crate::edge::telemetry::http_client_ended(span, ended.as_ref().err());
    }
    ended
}

async fn exchange_within<T>(call: &HttpCall, mut span: Option<&mut crate::trace::Span>, then: impl AsyncFnOnce(Response) -> (T, bool)) -> Result<T, Upstream> {
    let deadline = now_ms() + call.timeout_ms;
    let timed_out = || Upstream::TimedOut { after_ms: call.timeout_ms };
    let mut timer = pin!(Delay::from(Duration::from_millis(call.timeout_ms)));
    let mut current = call.clone();
    // The upstream's parent: this exchange's span, or (unsampled) the call's context as it is.
    match (span.as_deref(), &call.trace) {
        (Some(span), _) => crate::edge::telemetry::inject(&mut current.headers, &span.context()),
        (None, Some(parent)) => crate::edge::telemetry::inject(&mut current.headers, parent),
        (None, None) => {}
    }
    let (mut made, mut redirects) = (0u32, 0u32);
    let (response, mut abort) = loop {
        if deadline <= now_ms() {
            return Err(timed_out());
        }
        // The SSRF guard, for the first URL and every redirect: an expanded secret or a
        // Location header may point anywhere. The fetch is given the URL as the guard's parser
        // serialized it, so the runtime connects to the host that was checked.
        current.url = guarded(&current.url, &call.private_upstreams).map_err(Upstream::Failed)?;
        made += 1;
        let controller = AbortController::new().map_err(|e| Upstream::Failed(js_text(&e)))?;
        let signal = controller.signal();
        let abort = AbortOnDrop(Some(controller));
        let attempt = match select(pin!(fetch(&current, &signal)), timer.as_mut()).await {
            Either::Left((attempt, _)) => attempt,
            Either::Right(_) => return Err(timed_out()),
        };
        let failure = match &attempt {
            Err(_) => Failure::Network,
            Ok(response) => {
                let status = response.status();
                // Header reads cross into the runtime: only when the status can use them.
                let location = if (300..=399).contains(&status) && call.redirects.max > 0 { header(response, "location") } else { None };
                if let Some(location) = location {
                    redirects += 1;
                    if redirects > call.redirects.max {
                        return Err(Upstream::Failed(format!("more than {} redirects", call.redirects.max)));
                    }
                    let url = call.redirects.target(&call.url, &current.url, &location).map_err(Upstream::Failed)?;
                    if let Some(span) = span.as_deref_mut() {
                        crate::edge::telemetry::redirected(span, status, &url);
                    }
                    let (method, keep_body) = redirected_method(status, &current.method);
                    if !keep_body {
                        current.body = None;
                        current.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
                    }
                    (current.url, current.method) = (url, method);
                    made -= 1;
                    continue;
                }
                let retry_after = if call.retry.is_some() && status >= 400 { header(response, "retry-after").and_then(|v| parse_retry_after(&v, now_ms())) } else { None };
                Failure::Status { status, retry_after_ms: retry_after }
            }
        };
        let step = match call.retry {
            Some(policy) => policy.next(made, failure, deadline.saturating_sub(now_ms()), js_sys::Math::random()),
            None => Step::GiveUp,
        };
        if let Some(span) = span.as_deref_mut() {
            crate::edge::telemetry::attempted(span, made, &attempt, matches!(step, Step::Retry { .. }));
        }
        match (step, attempt) {
            (Step::Retry { wait_ms }, _) => Delay::from(Duration::from_millis(wait_ms)).await,
            (Step::OutOfTime { retry_after_ms }, _) => {
                return Err(Upstream::Failed(format!(
                    "the upstream asked to retry after {retry_after_ms} ms, which is past the call's {} ms time limit",
                    call.timeout_ms
                )))
            }
            (Step::GiveUp, Ok(response)) => break (response, abort),
            (Step::GiveUp, Err(e)) => return Err(Upstream::Failed(if made > 1 { format!("{e} (after {made} attempts)") } else { e })),
        }
    };
    match select(pin!(then(response)), timer).await {
        Either::Left(((result, drained), _)) => {
            if drained {
                abort.disarm();
            }
            Ok(result)
        }
        Either::Right(_) => Err(timed_out()),
    }
}

/// One attempt: the request as it stands, with redirects left to `exchange`. Straight on
/// `web_sys`: the `worker` wrappers copy the URL and `cf` properties on every request.
pub(crate) async fn fetch(call: &HttpCall, signal: &AbortSignal) -> Result<Response, String> {
    let mut lines = String::with_capacity(call.headers.iter().map(|(n, v)| n.len() + v.len() + 2).sum());
    for (name, value) in &call.headers {
        // What `Headers` would refuse, and what would shift the list's pairs.
        if [name, value].iter().any(|s| s.contains(['\n', '\r', '\0'])) {
            return Err(format!("cannot build the request: the header {:?} holds a line break or a NUL", name));
        }
        if !lines.is_empty() {
            lines.push('\n');
        }
        lines.push_str(name);
        lines.push('\n');
        lines.push_str(value);
    }
    let init = request_init(&call.method, &lines, call.body.as_deref(), signal);
    let global: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
    match JsFuture::from(global.fetch_with_str_and_init(&call.url, &init)).await {
        Ok(response) => Ok(response.unchecked_into()),
        Err(e) => Err(js_text(&e)),
    }
}

pub(crate) fn header(response: &Response, name: &str) -> Option<String> {
    response.headers().get(name).ok().flatten()
}

#[wasm_bindgen::prelude::wasm_bindgen(module = "/src/edge/results_cache.js")]
extern "C" {
    /// The reply's `ETag` header, or empty: for a tool whose results are kept.
    fn reply_etag(response: &Response) -> String;
}

/// The reply headers a read needs, from one `headers` object.
struct ReplyHead {
    content_type: Option<String>,
    content_length: Option<u64>,
    /// The size of all the reply's headers, names and values.
    header_bytes: u64,
}

/// Reply headers larger than this fail the call: no upstream needs them, and a hostile one
/// could use them to make every call of a tool carry that much.
const MAX_REPLY_HEADER_BYTES: u64 = 64 * 1024;

#[wasm_bindgen::prelude::wasm_bindgen(module = "/src/edge/glue.js")]
extern "C" {
    /// `content-type\ncontent-length\nheader-bytes`, the first two empty when absent: one
    /// crossing for all three.
    fn reply_head(response: &Response) -> String;
    /// An upstream request's `RequestInit` in one crossing, its headers a plain list of
    /// `name\nvalue\n…` (`fetch`).
    fn request_init(method: &str, lines: &str, body: Option<&str>, signal: &AbortSignal) -> RequestInit;
}

impl ReplyHead {
    fn of(response: &Response) -> ReplyHead {
        let head = reply_head(response);
        let mut fields = head.split('\n');
        let mut next = || fields.next().unwrap_or_default();
        let (content_type, content_length, header_bytes) = (next(), next(), next());
        ReplyHead { content_type: Some(content_type.to_string()).filter(|t| !t.is_empty()), content_length: content_length.parse().ok(), header_bytes: header_bytes.parse().unwrap_or(0) }
    }

    /// Why the reply is not read at all, if it is not.
    fn refused(&self) -> Option<Upstream> {
        (self.header_bytes > MAX_REPLY_HEADER_BYTES).then(|| Upstream::Failed(format!("its reply headers are {} bytes, over the {MAX_REPLY_HEADER_BYTES} bytes mcp-edge reads", self.header_bytes)))
    }
}

/// Reads the whole reply, up to `limit` bytes; says whether the body was read to its end.
pub(crate) async fn read_whole(response: Response, limit: u64) -> (Upstream, bool) {
    let head = ReplyHead::of(&response);
    read(response, head, limit).await
}

/// The same, with the reply's head already read.
async fn read(response: Response, head: ReplyHead, limit: u64) -> (Upstream, bool) {
    if let Some(refused) = head.refused() {
        return (refused, false);
    }
    let status = response.status();
    let content_type = head.content_type;
    let reply = |body, truncated_at| Upstream::Reply { status, content_type: content_type.clone(), body, truncated_at };
    if response.body().is_none() {
        return (reply(Vec::new(), None), true);
    }
    // A body whose declared length fits is read in one call: chunk by chunk costs a crossing
    // of the wasm boundary per chunk.
    if head.content_length.is_some_and(|len| len <= limit) {
        let promise = match response.array_buffer() {
            Ok(promise) => promise,
            Err(e) => return (Upstream::Failed(format!("cannot read the body: {}", js_text(&e))), false),
        };
        return match crate::edge::http::whole_body(promise).await {
            Ok(body) if body.len() as u64 <= limit => (reply(body, None), true),
            Ok(_) => (reply(Vec::new(), Some(limit)), true),
            Err(e) => (Upstream::Failed(format!("reading the body failed: {}", js_text(&e))), false),
        };
    }
    let mut stream = match worker::Response::from(response).stream() {
        Ok(stream) => stream,
        Err(e) => return (Upstream::Failed(format!("cannot read the body: {e}")), false),
    };
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => body.extend_from_slice(&chunk),
            Err(e) => return (Upstream::Failed(format!("reading the body failed: {e}")), false),
        }
        // Stop reading at the limit: the rest of a huge body is never fetched.
        if body.len() as u64 > limit {
            body.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
            return (reply(body, Some(limit)), false);
        }
    }
    (reply(body, None), true)
}
