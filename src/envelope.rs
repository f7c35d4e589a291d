//! The protocol between the Worker and its Durable Objects: what the Worker tells an object about
//! a request it forwards (the `Op` it asks for, and the request's facts), as one JSON line ahead
//! of the payload, so the object reads its whole input in one body read, with no header lookups.

use serde::{Deserialize, Serialize};

use crate::auth::Principal;
use crate::error::Error;
use crate::negotiate::Framing;
use crate::routes::RouteParams;

/// What the Worker asks of an object. A deploy can briefly run a new Worker beside an old object
/// (or the reverse), so the protocol only grows: a name never changes meaning, new envelope
/// fields are optional, and an operation this build does not know reads as `Unknown`, which the
/// object refuses on its own, rather than as a broken envelope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    // A session's object, for a client's request.
    /// A new session's `initialize`.
    Initialize,
    /// A POST of messages to a session.
    Message,
    /// The GET stream, or its resumption with `Last-Event-ID`.
    Get,
    Delete,
    /// 2024-11-05: the legacy SSE stream, and a message to it.
    SseOpen,
    SseMessage,
    /// 2026-07-28: a `subscriptions/listen` stream, in an object of its own.
    Listen,
    /// 2026-07-28: a request of the Tasks extension (a call to run as a task, `tasks/get`,
    /// `tasks/update`, `tasks/cancel`), in the object that keeps its principal's tasks.
    Tasks,
    /// A lease on the session for the Worker.
    Lease,
    /// A resource-update notification for the session's streams, from the registry.
    Notify,
    // A session's object, for a deferred call.
    /// Whether the call still waits (the queue consumer asks before it fetches).
    CallStatus,
    /// A failed attempt of a queued call, kept for its dead letter.
    AttemptFailed,
    /// A queued call's result, or its dead letter.
    Resolve,
    /// An upstream's POST to the call's callback URL.
    Callback,
    // A registry object.
    RegistrySet,
    RegistryNotify,
    PrincipalOpen,
    PrincipalClose,
    /// A principal's task result: kept if its tasks have room for it.
    PrincipalKeep,
    /// The authorization server's object: one `oauth::store::Command`.
    OAuth,
    /// A principal's connections' object: one `connections::Command`.
    Connection,
    /// The health figures' object: an isolate's batch of figures and totals to merge in, a
    /// read of the last hour's figures, and a read of the totals (`/metrics`).
    HealthFlush,
    HealthRead,
    MetricsRead,
    /// The live layer's store: one `live::store::Command`.
    Live,
    /// A counting object (per client address, per username): one `admission::Command`.
    Count,
    /// A limit's counting object (per limit and key): one `limits::Command`.
    Limit,
    /// A concurrency limit's slots object: acquire, release or read a slot.
    Slot,
    /// A server's registry: a session whose stream wants list changes (empty body: forget it).
    RegistryListen,
    /// A server's registry: tell every listening session that these lists changed.
    RegistryListChanged,
    /// A server's registry: one read of an upstream MCP server's lists
    /// (`upstream::mcp::changes::Read`); listening sessions are told of the lists that changed.
    RegistryUpstreamRead,
    /// A server's registry: one read of an upstream's tools, checked against the pinned
    /// definitions (`crate::pins`); answers the tools to serve.
    PinsCheck,
    /// A server's registry: the changes held for approval.
    PinsHeld,
    /// A server's registry: an admin's approval or rejection of a held change.
    PinsDecide,
    /// A connection's registration at a discovered authorization server
    /// (`connection-client:<name>`): read it, or keep one unless one is kept.
    ConnectionClient,
    /// The audit log's object: an event to keep, or a page to read.
    AuditAppend,
    AuditRead,
    /// Test builds: fire the session's alarm now.
    TestAlarm,
    /// One this build does not know.
    #[default]
    #[serde(other)]
    Unknown,
}

impl Op {
    /// The operations about a deferred call.
    pub fn is_call_result(self) -> bool {
        matches!(self, Op::CallStatus | Op::AttemptFailed | Op::Resolve | Op::Callback)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Envelope {
    pub op: Op,
    pub server: usize,
    pub session_id: String,
    /// The object's own name (the session id keyed by principal); the session id when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// Who sent the request; `None` for internal operations (queue reports, callbacks), whose
    /// session id is already the object's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<Principal>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub route: RouteParams,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framing: Option<Framing>,
    /// The payload is NDJSON lines rather than one JSON value.
    #[serde(skip_serializing_if = "is_false")]
    pub ndjson_body: bool,
    /// The request came through the `/stream` alias.
    #[serde(skip_serializing_if = "is_false")]
    pub alias: bool,
    /// An SSE request that also accepts JSON.
    #[serde(skip_serializing_if = "is_false")]
    pub json_ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_event_id: Option<String>,
    /// For a legacy SSE stream: the URL its `endpoint` event names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The public origin the request arrived on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The deferred call a result is for, the result's content type, and whether it is a
    /// dead letter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(skip_serializing_if = "is_false")]
    pub dead_letter: bool,
    /// The live configuration version the Worker served the request with: an object that has
    /// an older one catches up before it serves.
    #[serde(skip_serializing_if = "is_zero")]
    pub config: u64,
    /// The Worker's server span, when traced: the object's spans and the calls' are its children.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::Context>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !b
}

impl Envelope {
    /// The envelope's line, then the payload.
    pub fn seal(&self, payload: &[u8]) -> Vec<u8> {
        // Serializing plain strings, numbers and flags cannot fail.
        let mut out = serde_json::to_vec(self).unwrap_or_default();
        out.reserve(payload.len() + 1);
        out.push(b'\n');
        out.extend_from_slice(payload);
        out
    }

    /// Splits what `seal` wrote. A JSON line never holds a raw newline, so the first one ends it.
    pub fn open(body: &[u8]) -> Result<(Envelope, &[u8]), Error> {
        let end = body.iter().position(|b| *b == b'\n').unwrap_or(body.len());
        let (line, rest) = body.split_at(end);
        let envelope = serde_json::from_slice(line).map_err(|e| Error::Internal(format!("forwarded request without an envelope: {e}")))?;
        Ok((envelope, rest.get(1..).unwrap_or_default()))
    }

    /// The name of the object this envelope was sent to.
    pub fn object(&self) -> &str {
        self.object.as_deref().unwrap_or(&self.session_id)
    }
}

/// The hop itself: whether to send a request to a Durable Object again after its stub threw,
/// and after how long: errors marked `retryable` are retried (at most three times, 50 ms
/// doubling, with jitter); `overloaded` ones never are, since retrying would only add to the
/// load.
pub fn object_retry(attempt: u32, retryable: bool, overloaded: bool, jitter: f64) -> Option<u64> {
    if !retryable || overloaded || attempt >= 3 {
        return None;
    }
    let base = 50u64 << attempt.min(8);
    Some(base + (base as f64 * jitter.clamp(0.0, 1.0)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_errors_retry_only_when_retryable_and_not_overloaded() {
        assert_eq!(object_retry(0, true, false, 0.0), Some(50));
        assert_eq!(object_retry(1, true, false, 0.5), Some(150));
        assert_eq!(object_retry(2, true, false, 0.0), Some(200));
        assert_eq!(object_retry(3, true, false, 0.0), None);
        assert_eq!(object_retry(0, true, true, 0.0), None);
        assert_eq!(object_retry(0, false, false, 0.0), None);
    }

    #[test]
    fn sealed_and_opened() {
        let envelope = Envelope {
            op: Op::Message,
            server: 2,
            session_id: "s-1".into(),
            object: Some("s-1|token:bot".into()),
            principal: Some(Principal { id: "jwt:https://issuer|ünïcode\nline".into(), roles: vec!["admin".into()], ..Principal::default() }),
            route: vec![("chat_uuid".into(), "abc".into())],
            framing: Some(Framing::Ndjson),
            ndjson_body: true,
            ..Envelope::default()
        };
        let payload = b"{\"jsonrpc\":\"2.0\"}\n{\"jsonrpc\":\"2.0\"}\n";
        let sealed = envelope.seal(payload);
        let line = sealed.split(|b| *b == b'\n').next().unwrap();
        assert_eq!(
            std::str::from_utf8(line).unwrap(),
            r#"{"op":"message","server":2,"sessionId":"s-1","object":"s-1|token:bot","principal":{"id":"jwt:https://issuer|ünïcode\nline","roles":["admin"]},"route":[["chat_uuid","abc"]],"framing":"ndjson","ndjsonBody":true}"#
        );
        let (opened, rest) = Envelope::open(&sealed).unwrap();
        assert_eq!(opened, envelope);
        assert_eq!(rest, payload);
        assert_eq!(opened.object(), "s-1|token:bot");
    }

    #[test]
    fn empty_payloads_and_defaults() {
        let envelope = Envelope { op: Op::Get, session_id: "s".into(), ..Envelope::default() };
        let sealed = envelope.seal(b"");
        assert_eq!(sealed, b"{\"op\":\"get\",\"server\":0,\"sessionId\":\"s\"}\n");
        let (opened, rest) = Envelope::open(&sealed).unwrap();
        assert_eq!((opened.object(), opened.framing, rest), ("s", None, &b""[..]));
        assert!(Envelope::open(b"not json\n{}").is_err());
    }

    #[test]
    fn operations_keep_their_wire_names_and_unknown_ones_still_open() {
        let names: Vec<String> = [Op::Initialize, Op::SseOpen, Op::CallStatus, Op::AttemptFailed, Op::RegistryNotify, Op::PrincipalClose, Op::TestAlarm, Op::HealthFlush, Op::HealthRead, Op::MetricsRead]
            .iter()
            .map(|op| serde_json::to_string(op).unwrap())
            .collect();
        assert_eq!(names, [r#""initialize""#, r#""sse-open""#, r#""call-status""#, r#""attempt-failed""#, r#""registry-notify""#, r#""principal-close""#, r#""test-alarm""#, r#""health-flush""#, r#""health-read""#, r#""metrics-read""#]);
        let (newer, _) = Envelope::open(b"{\"op\":\"from-a-newer-worker\",\"sessionId\":\"s\",\"later\":1}\n").unwrap();
        assert_eq!((newer.op, newer.session_id.as_str()), (Op::Unknown, "s"));
    }
}
