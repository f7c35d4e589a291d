//! Small HTTP helpers shared by the edge: error bodies, header copying, a reply's headers and body.

use worker::{Headers, Response, ResponseBuilder, Result};

use crate::error::Error;
use crate::head::RequestHead;
use crate::jsonrpc;
use crate::framing;
use crate::negotiate::Framing;
use crate::redact::Redacted;

pub const LAST_EVENT_ID: &str = "last-event-id";
pub const SESSION_ID: &str = "mcp-session-id";

/// The headers of a reply in `framing`: its content type and, for a stream, no caching and no
/// proxy buffering.
pub fn framing_headers(framing: crate::negotiate::Framing) -> Headers {
    Headers(answer_headers(framing.content_type(), framing.is_stream(), ""))
}

thread_local! {
    /// `Content-Type: application/json`, made once per isolate (`json_headers`).
    static JSON_HEADERS: web_sys::Headers = framing_headers(Framing::Json).0;
}

/// The headers of a JSON reply without a session, shared by every such reply of the isolate:
/// `new Response` copies its init's headers, so the shared set is never the reply's own, and
/// nothing sets a header on it. Made per reply, they cost a `Headers` and a `set` across the
/// wasm boundary on every stateless call (issue 45).
pub fn json_headers() -> Headers {
    Headers(JSON_HEADERS.with(Clone::clone))
}

/// Headers of every answer in a session: its id, and for streams the anti-buffering set.
pub fn session_headers(session_id: &str, framing: Option<Framing>) -> Headers {
    let (content_type, stream) = framing.map_or(("", false), |f| (f.content_type(), f.is_stream()));
    Headers(answer_headers(content_type, stream, session_id))
}

/// The answer to a session's POST that gets no reply (notifications, answers, cancelled calls).
pub fn accepted(session_id: &str) -> std::result::Result<Response, Error> {
    Ok(ResponseBuilder::new().with_status(202).with_headers(session_headers(session_id, None)).empty())
}

/// Answers with all replies at once: a JSON body, or a stream that is already complete; each
/// reply redacted (`edge::redaction`).
pub fn respond(framing: Framing, session_id: &str, replies: Vec<String>, batch: bool) -> std::result::Result<Response, Error> {
    let replies: Vec<Redacted> = replies.into_iter().map(crate::edge::redaction::seal).collect();
    let body: Vec<u8> = match framing {
        Framing::Json => framing::json_body(&replies, batch),
        streaming => replies.iter().flat_map(|r| framing::stream_chunk(streaming, r.as_str())).collect(),
    };
    let headers = session_headers(session_id, Some(framing));
    // A limit's refusal that is the whole answer is a 429, with its headers.
    let refused = match (framing, batch, replies.as_slice()) {
        (Framing::Json, false, [only]) => crate::limits::refusal_of(only.as_str()),
        _ => None,
    };
    if let Some(refused) = refused {
        for (name, value) in crate::limits::headers(&refused) {
            headers.set(name, &value)?;
        }
        return Ok(ResponseBuilder::new().with_status(429).with_headers(headers).fixed(body));
    }
    Ok(ResponseBuilder::new().with_status(200).with_headers(headers).fixed(body))
}

/// The whole answer to a request that failed: a JSON-RPC error with `id: null`, or the answer
/// another protocol made (an OAuth error, an admin API refusal) as it is.
pub fn error_response(error: &Error) -> Result<Response> {
    if let Error::Wire(e) = error {
        let headers = framing_headers(crate::negotiate::Framing::Json);
        for (name, value) in &e.headers {
            headers.set(name, value)?;
        }
        return Ok(ResponseBuilder::new().with_status(e.status).with_headers(headers).fixed(crate::edge::redaction::seal(e.body.clone()).into_string().into_bytes()));
    }
    failure_response(&serde_json::Value::Null, error, error.http_status())
}

/// A JSON-RPC error as the whole answer, with the headers the error calls for.
pub fn failure_response(id: &serde_json::Value, error: &Error, status: u16) -> Result<Response> {
    let headers = framing_headers(crate::negotiate::Framing::Json);
    match error {
        Error::MethodNotAllowed(allow) => headers.set("Allow", allow)?,
        Error::Unauthorized { challenge, .. } => headers.set("WWW-Authenticate", challenge)?,
        Error::Forbidden(_) => headers.set("WWW-Authenticate", "Bearer error=\"insufficient_scope\"")?,
        Error::RateLimited(seconds) => headers.set("Retry-After", &seconds.to_string())?,
        Error::Limited(r) => {
            for (name, value) in crate::limits::headers(r) {
                headers.set(name, &value)?;
            }
        }
        _ => {}
    }
    // An error's message may quote what an upstream said.
    let body = crate::edge::redaction::seal(jsonrpc::failure(id, error));
    Ok(ResponseBuilder::new().with_status(status).with_headers(headers).fixed(body.into_string().into_bytes()))
}

/// `Content-Type: application/json` and `Cache-Control: no-store`: the answers of the OAuth server,
/// the admin API, sign-in and refusals, which no cache may keep.
pub const NO_STORE_JSON: [(&str, &str); 2] = [("Content-Type", "application/json"), ("Cache-Control", "no-store")];

/// A reply's start with `fields` as its headers, for the answers off the MCP path (the OAuth
/// server, the admin API, `/metrics`, sign-in, refusals); the caller adds the body.
pub fn builder(status: u16, fields: &[(&str, &str)]) -> Result<ResponseBuilder> {
    let headers = Headers::new();
    for (name, value) in fields {
        headers.set(name, value)?;
    }
    Ok(ResponseBuilder::new().with_status(status).with_headers(headers))
}

/// Returns the response with extra headers. A fetched response's headers are immutable, so
/// they are copied into a new set first.
pub fn with_headers(response: Response, extra: &[(&str, String)]) -> Result<Response> {
    if extra.is_empty() {
        return Ok(response);
    }
    let status = response.status_code();
    let headers = Headers::new();
    for (name, value) in response.headers().entries() {
        headers.append(&name, &value)?;
    }
    for (name, value) in extra {
        headers.set(name, value)?;
    }
    let (_, body) = response.into_parts();
    Ok(ResponseBuilder::new().with_status(status).with_headers(headers).body(body))
}

/// A body read whole, from its `arrayBuffer()` promise: one crossing of the wasm boundary
/// rather than one per chunk.
pub async fn whole_body(array_buffer: js_sys::Promise) -> std::result::Result<Vec<u8>, wasm_bindgen::JsValue> {
    let buffer = wasm_bindgen_futures::JsFuture::from(array_buffer).await?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// A request as the runtime handed it over, with its method, URL and headers read in one call
/// (`crate::head`). `worker::Request` copies the path and builds the `cf` object for every
/// request, and header reads cross the wasm boundary one by one; each costs more than it seems
/// next to a cheap tool call.
pub struct Incoming {
    request: web_sys::Request,
    head: RequestHead,
    /// The span serving this request, when traced: what the hops it makes are children of.
    trace: Option<crate::trace::Context>,
}

#[wasm_bindgen::prelude::wasm_bindgen(module = "/src/edge/glue.js")]
extern "C" {
    /// `METHOD\nURL\nname\nvalue…`: header values never hold a line break.
    fn request_head(request: &web_sys::Request) -> String;
    /// An answer's headers, made in one crossing (`framing_headers`, `session_headers`).
    fn answer_headers(content_type: &str, stream: bool, session_id: &str) -> web_sys::Headers;
}

impl From<web_sys::Request> for Incoming {
    fn from(request: web_sys::Request) -> Self {
        let head = RequestHead::parse(&request_head(&request));
        Incoming { request, head, trace: None }
    }
}

impl From<worker::Request> for Incoming {
    fn from(request: worker::Request) -> Self {
        // `Clone::clone`: the inherent `clone` is the JS one, which copies the body.
        Incoming::from(Clone::clone(request.inner()))
    }
}

impl Incoming {
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.header(name).map(str::to_string)
    }

    pub fn head(&self) -> &RequestHead {
        &self.head
    }

    pub fn trace(&self) -> Option<&crate::trace::Context> {
        self.trace.as_ref()
    }

    pub fn set_trace(&mut self, trace: Option<crate::trace::Context>) {
        self.trace = trace;
    }

    /// The W3C trace context of the request's headers, when valid.
    pub fn trace_headers(&self) -> Option<crate::trace::Context> {
        let parent = self.head.header("traceparent")?;
        crate::trace::Context::parse(parent, self.head.header("tracestate"))
    }

    pub fn method(&self) -> worker::Method {
        worker::Method::from(self.head.method.clone())
    }

    pub fn url(&self) -> Result<crate::head::RequestUrl> {
        let url = &self.head.url;
        crate::head::RequestUrl::parse(url).ok_or_else(|| worker::Error::RustError(format!("unparsable request URL {url}")))
    }

    /// The whole body in one call.
    pub async fn bytes(&mut self) -> Result<Vec<u8>> {
        Ok(whole_body(self.request.array_buffer()?).await?)
    }

    /// The body chunk by chunk, for bodies of unknown length.
    pub fn stream(&mut self) -> Result<worker::ByteStream> {
        worker::Request::from(Clone::clone(&self.request)).stream()
    }
}
