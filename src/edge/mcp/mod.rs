//! Upstream MCP servers at the edge: mcp-edge as their client. One exchange is a POST of one
//! JSON-RPC message, answered with JSON, an SSE stream, or 202; what comes before the answer on
//! a stream (progress, log lines, the upstream's own requests) is handed to the caller as it
//! arrives. Every exchange goes through `edge::upstream`'s fetch: the SSRF guard, the source's
//! time limit, and an abort when the call is dropped.
//!
//! - `discovery.rs`: each source's tool list, read with a session of its own, kept per isolate
//!   for `catalogTtlSeconds`, and merged into the catalog this isolate serves.
//! - `call.rs`: a tool call, in the upstream session kept for the downstream session.
//! - `personal.rs`: the lists of sources reached with each user's own token, kept per principal,
//!   and the connect tool of a user who has not connected.
//! - `legacy.rs`: the 2024-11-05 HTTP+SSE transport, for upstreams that speak nothing newer.
//! - `watch.rs`: an upstream's own stream, held while a client listens: its resource updates
//!   and list changes.
//!
//! The one import circle of this folder: this file is one exchange with an upstream MCP server
//! (`open`, `post`, `close`, `Reply`, `Failure`), which `call`, `discovery` and `legacy` build on,
//! and it carries that exchange over a legacy (HTTP+SSE) link through `legacy`, whose events
//! become this file's `Reply`.

pub mod call;
pub mod discovery;
mod legacy;
pub mod personal;
pub mod watch;

use std::cell::Cell;
use std::rc::Rc;

use futures::future::LocalBoxFuture;

use serde_json::{json, Value};

use crate::health::Outcome;
use crate::upstream::mcp::reader::{messages, Message, SseEvent, SseReader};
use crate::upstream::mcp::{self as protocol, Transport};
use crate::redact::Redactor;
use crate::upstream::reply::Upstream;
use crate::upstream::HttpCall;

/// An upstream session: its id (none for an upstream without sessions), the revision agreed,
/// and what the upstream said it serves (`capabilities` of its `initialize` result).
#[derive(Clone)]
pub struct Link {
    pub session_id: Option<String>,
    pub version: String,
    pub capabilities: Value,
    /// The log level set there (`logging/setLevel`): the client's, passed on.
    pub level: Option<String>,
    /// A legacy (HTTP+SSE) upstream: its event stream, and where to POST.
    legacy: Option<Rc<Legacy>>,
}

impl Link {
    /// A link to an upstream that speaks 2026-07-28: no session, and what `server/discover`
    /// said it serves.
    pub fn stateless(capabilities: Value) -> Link {
        Link { session_id: None, version: crate::versions::STATELESS_VERSION.into(), capabilities, level: None, legacy: None }
    }

    /// Whether the upstream is spoken to in 2026-07-28, without a session.
    pub fn is_stateless(&self) -> bool {
        self.version == crate::versions::STATELESS_VERSION
    }

    /// What the session's object keeps of a Streamable HTTP link, so that the upstream session
    /// outlives the object's memory.
    pub fn stored(&self) -> Option<StoredLink> {
        self.legacy.is_none().then(|| StoredLink { session_id: self.session_id.clone(), version: self.version.clone(), capabilities: self.capabilities.clone(), level: self.level.clone() })
    }
}

/// A link as the session's object stores it.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredLink {
    session_id: Option<String>,
    version: String,
    capabilities: Value,
    #[serde(default)]
    level: Option<String>,
}

impl From<StoredLink> for Link {
    fn from(s: StoredLink) -> Link {
        Link { session_id: s.session_id, version: s.version, capabilities: s.capabilities, level: s.level, legacy: None }
    }
}

struct Legacy {
    stream: futures::lock::Mutex<legacy::Stream>,
    endpoint: String,
}

/// How an exchange failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The upstream no longer knows the session: open a new one and try again.
    Gone,
    /// Down, slow, refusing, or speaking nonsense: said in words, and counted as.
    Down(String, Outcome),
}

/// What an exchange came to: the answer to our request, or (for a notification or an answer of
/// ours) its acceptance.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Answer(Result<Value, Value>),
    Accepted,
}

thread_local! {
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

/// A fresh id for a request to an upstream.
pub fn next_id() -> u64 {
    NEXT_ID.with(|n| {
        let id = n.get();
        n.set(id.wrapping_add(1));
        id
    })
}

/// What handles the messages an upstream sends before its answer. A trait object, not a
/// generic: each `post` is one function in the module, whoever handles its messages.
pub type Relay<'a> = &'a dyn Fn(Message) -> LocalBoxFuture<'a, ()>;

/// POSTs `body` (a request with `id`, or a notification or answer with none) in `link`'s session,
/// and reads the reply until the answer to `id` (an empty `body`: `GET`s the session's stream,
/// and reads it to its end). Messages that come first go to `on` (none:
/// dropped). Returns the reply and the session id the upstream named, if it named one. `secrets`
/// are redacted from the excerpt of a failed reply before it is cut.
pub async fn post(base: &HttpCall, link: Option<&Link>, body: String, id: Option<u64>, max_bytes: u64, on: Option<Relay<'_>>, secrets: &Redactor) -> Result<(Reply, Option<String>), Failure> {
    if let Some(legacy) = link.and_then(|l| l.legacy.as_ref()) {
        return legacy::post(base, &legacy.stream, &legacy.endpoint, body, id, max_bytes, on).await.map(|reply| (reply, None));
    }
    let mut call = base.clone();
    // No body: the session's own stream (`GET`), which `watch` holds.
    let get = body.is_empty();
    call.method = if get { "GET" } else { "POST" }.into();
    // 2026-07-28: the body's method and name, mirrored in headers.
    let mirrored = match link {
        Some(link) if !get && link.version == crate::versions::STATELESS_VERSION => crate::protocol::mrtr::stateless_headers(&body),
        _ => Vec::new(),
    };
    call.body = (!get).then_some(body);
    call.retry = None;
    call.headers.retain(|(n, _)| !["content-type", "accept", "mcp-session-id", "mcp-protocol-version"].contains(&n.to_ascii_lowercase().as_str()));
    if !get {
        call.headers.push(("Content-Type".into(), "application/json".into()));
    }
    call.headers.push(("Accept".into(), if get { "text/event-stream" } else { "application/json, text/event-stream" }.into()));
    if let Some(link) = link {
        if let Some(session) = &link.session_id {
            call.headers.push(("Mcp-Session-Id".into(), session.clone()));
        }
        call.headers.push(("MCP-Protocol-Version".into(), link.version.clone()));
    }
    call.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("mcp-method") && !n.eq_ignore_ascii_case("mcp-name"));
    call.headers.extend(mirrored);
    let has_session = link.is_some_and(|l| l.session_id.is_some());
    let stateless = link.is_some_and(Link::is_stateless);
    let ended = crate::edge::upstream::exchange(&call, async |response| {
        let status = response.status();
        let session = crate::edge::upstream::header(&response, "mcp-session-id");
        let media = crate::edge::upstream::header(&response, "content-type").map(|t| crate::negotiate::media_type(&t)).unwrap_or_default();
        if status == 202 {
            return (Ok((Reply::Accepted, session)), false);
        }
        if !(200..300).contains(&status) {
            let (upstream, drained) = crate::edge::upstream::read_whole(response, 4096).await;
            let (text, unread) = match &upstream {
                Upstream::Reply { body, truncated_at, .. } => (String::from_utf8_lossy(body).into_owned(), truncated_at.is_some()),
                _ => (String::new(), false),
            };
            // 2026-07-28 answers a refused request (-32021, -32602, ...) with a 4xx status and
            // the JSON-RPC error: the answer, as a session-based revision's 200 would carry it.
            if stateless {
                if let Ok(Some(reply)) = answer_in(&text, id, None).await {
                    return (Ok((reply, session)), drained);
                }
            }
            // 404 is the spec's answer to a session it no longer has; some servers say 400.
            let gone = has_session && (status == 404 || (status == 400 && text.to_ascii_lowercase().contains("session")));
            // Redacted whole (its unread rest, past the 4096 bytes read, cannot be matched), then cut.
            let redacted = if unread { secrets.redact_unread(text.trim_end_matches('\u{FFFD}')) } else { secrets.redact(&text) };
            let excerpt: String = redacted.chars().take(200).collect();
            return (Err(if gone { Failure::Gone } else { Failure::Down(format!("it answered HTTP {status} {}", excerpt.trim()), Outcome::Upstream(status)) }), drained);
        }
        let answer = if media == "text/event-stream" { stream(response, id, max_bytes, on).await } else { whole(response, id, max_bytes, on).await };
        (answer.map(|reply| (reply, session)), true)
    })
    .await;
    match ended {
        Ok(result) => result,
        Err(Upstream::TimedOut { after_ms }) => Err(Failure::Down(format!("it did not answer within {after_ms} ms"), Outcome::Timeout)),
        Err(Upstream::Failed(why)) => Err(Failure::Down(format!("it could not be reached: {why}"), Outcome::Network)),
        Err(Upstream::Reply { status, .. }) => Err(Failure::Down(format!("it answered HTTP {status}"), Outcome::Upstream(status))),
    }
}

/// A JSON reply: the messages it holds, ours among them.
async fn whole(response: web_sys::Response, id: Option<u64>, max_bytes: u64, on: Option<Relay<'_>>) -> Result<Reply, Failure> {
    let (upstream, _) = crate::edge::upstream::read_whole(response, max_bytes).await;
    let body = match upstream {
        Upstream::Reply { body, truncated_at: None, .. } => body,
        Upstream::Reply { .. } => return Err(Failure::Down(format!("its reply exceeds the {max_bytes}-byte limit"), Outcome::Limit)),
        Upstream::Failed(why) => return Err(Failure::Down(format!("its reply could not be read: {why}"), Outcome::Network)),
        Upstream::TimedOut { after_ms } => return Err(Failure::Down(format!("it did not answer within {after_ms} ms"), Outcome::Timeout)),
    };
    if body.iter().all(u8::is_ascii_whitespace) && id.is_none() {
        return Ok(Reply::Accepted);
    }
    if let Some(reply) = answer_in(&String::from_utf8_lossy(&body), id, on).await? {
        return Ok(reply);
    }
    match id {
        None => Ok(Reply::Accepted),
        Some(_) => Err(nonsense("its reply holds no answer to the request".into())),
    }
}

/// An SSE reply, read as it arrives, until the answer to `id`.
async fn stream(response: web_sys::Response, id: Option<u64>, max_bytes: u64, on: Option<Relay<'_>>) -> Result<Reply, Failure> {
    use futures::StreamExt;
    let mut chunks = worker::Response::from(response).stream().map_err(|e| Failure::Down(format!("its stream could not be read: {e}"), Outcome::Network))?;
    let mut reader = SseReader::default();
    let mut seen = 0u64;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| Failure::Down(format!("its stream broke off: {e}"), Outcome::Network))?;
        seen += chunk.len() as u64;
        if seen > max_bytes {
            return Err(Failure::Down(format!("its stream exceeds the {max_bytes}-byte limit"), Outcome::Limit));
        }
        for event in reader.feed(&chunk) {
            if let Some(reply) = answer_in_event(&event, id, on).await? {
                return Ok(reply);
            }
        }
    }
    match id {
        None => Ok(Reply::Accepted),
        Some(_) => Err(Failure::Down("its stream ended without an answer".into(), Outcome::Network)),
    }
}

/// The reply in one JSON text (a message, or a batch), when it answers `id`; the other messages
/// go to `on`.
async fn answer_in(text: &str, id: Option<u64>, on: Option<Relay<'_>>) -> Result<Option<Reply>, Failure> {
    for message in messages(text).map_err(nonsense)? {
        if let Some(reply) = answer_to(message, id, on).await {
            return Ok(Some(reply));
        }
    }
    Ok(None)
}

/// The same for one SSE event. Other event types carry no message; an empty `data` is a priming
/// event (SSE polling), which only sets the id to resume from.
pub(super) async fn answer_in_event(event: &SseEvent, id: Option<u64>, on: Option<Relay<'_>>) -> Result<Option<Reply>, Failure> {
    if event.event.as_deref().is_some_and(|e| e != "message") || event.data.trim().is_empty() {
        return Ok(None);
    }
    answer_in(&event.data, id, on).await
}

/// The upstream said something that is not MCP.
pub(super) fn nonsense(why: String) -> Failure {
    Failure::Down(why, Outcome::Network)
}

/// The reply, when `message` answers `id`; anything else goes to `on`.
async fn answer_to(message: Message, id: Option<u64>, on: Option<Relay<'_>>) -> Option<Reply> {
    match message {
        Message::Response { id: answered, outcome } if id.is_some_and(|id| answered == json!(id)) => Some(Reply::Answer(outcome)),
        // An answer to something else (a request that was given up on) changes nothing.
        Message::Response { .. } => None,
        other => {
            if let Some(on) = on {
                on(other).await;
            }
            None
        }
    }
}

/// Opens a session: `initialize` (with the client capabilities mcp-edge relays), then
/// `notifications/initialized`. Requests the upstream makes meanwhile are refused. A legacy
/// upstream's event stream is opened first, and lives as long as the link.
pub async fn open(base: &HttpCall, transport: Transport, capabilities: &Value, max_bytes: u64, secrets: &Redactor) -> Result<Link, Failure> {
    let legacy = match transport {
        Transport::StreamableHttp => None,
        Transport::Sse => {
            let (stream, endpoint) = legacy::connect(base, max_bytes).await?;
            Some(Rc::new(Legacy { stream, endpoint }))
        }
    };
    let first = Link { session_id: None, version: protocol::PROTOCOL_VERSION.into(), capabilities: json!({}), level: None, legacy: legacy.clone() };
    let id = next_id();
    let (reply, session) = post(base, legacy.as_ref().map(|_| &first), protocol::initialize(id, capabilities), Some(id), max_bytes, None, secrets).await?;
    let result = match reply {
        Reply::Answer(Ok(result)) => result,
        Reply::Answer(Err(error)) => return Err(nonsense(format!("it refused {}: {}", crate::method::Method::Initialize, crate::upstream::mcp::reader::error_text(&error)))),
        Reply::Accepted => return Err(nonsense(format!("it accepted {} without answering it", crate::method::Method::Initialize))),
    };
    let capabilities = result.get("capabilities").cloned().unwrap_or_else(|| json!({}));
    let link = Link { session_id: session, version: protocol::negotiated(&result).map_err(nonsense)?, capabilities, level: None, legacy };
    post(base, Some(&link), protocol::initialized(), None, max_bytes, None, secrets).await.map_err(|f| match f {
        Failure::Gone => nonsense("it forgot the session it had just opened".into()),
        down => down,
    })?;
    Ok(link)
}

/// Ends a session the upstream keeps (`DELETE`), best effort: a session left open expires there.
pub async fn close(base: &HttpCall, link: &Link) {
    let Some(session) = &link.session_id else { return };
    let mut call = base.clone();
    call.method = "DELETE".into();
    call.body = None;
    call.retry = None;
    call.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
    call.headers.push(("Mcp-Session-Id".into(), session.clone()));
    call.headers.push(("MCP-Protocol-Version".into(), link.version.clone()));
    let _ = crate::edge::upstream::perform(&call, 4096).await;
}
