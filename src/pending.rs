//! Deferred tool calls (`queued` and `callback` tools): the record a session keeps for each one
//! until its result arrives, and the signed one-time tokens of callback URLs.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::session_ids::SESSION_OBJECT;
use crate::signing::{sign as signature, signed, signed_without_purpose};

/// How a deferred call gets its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Deferral {
    /// A queue consumer performs the fetch and reports the result.
    Queued,
    /// The upstream answers 202 now and POSTs the result to a callback URL later.
    Callback,
}

impl Deferral {
    pub fn name(self) -> &'static str {
        match self {
            Deferral::Queued => "queued",
            Deferral::Callback => "callback",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum State {
    Waiting,
    /// The result arrived (or the call failed before deferring): later results are refused.
    Done,
    TimedOut,
}

/// What a session stores per deferred call, under its own key, so that concurrent requests
/// never overwrite each other's records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingRecord {
    pub call: String,
    /// The JSON-RPC id of the `tools/call` the result answers.
    pub request_id: Value,
    pub tool: String,
    pub deferral: Deferral,
    pub deadline_ms: u64,
    pub state: State,
    /// Why the latest failed attempt failed: the dead-letter report quotes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The task the call runs for: its result ends the task, whoever still waits for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The result, kept from the moment it is applied until its reply is written or kept for
    /// the client (then the record goes): should the object end in between (a trap, a
    /// restart), the alarm finds it here and delivers it (`needs_delivery`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The span the call waits in, when traced: its result's arrival continues that trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::Context>,
}

/// A result applied but not delivered yet is looked for again this long after it was applied: by
/// then the call waiting for it has written it, or it died with its object.
pub const RECOVER_AFTER_MS: u64 = 5_000;

/// Why a result was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Already applied, timed out, or ended with its session: HTTP 410.
    Gone,
}

impl PendingRecord {
    /// Accepts the call's result once, before its deadline. A refused result changes nothing
    /// except marking a call whose deadline has passed as timed out.
    pub fn resolve(&mut self, now_ms: u64) -> Result<(), Refusal> {
        if self.state == State::Waiting && now_ms >= self.deadline_ms {
            self.state = State::TimedOut;
        }
        match self.state {
            State::Waiting => {
                self.state = State::Done;
                Ok(())
            }
            State::Done | State::TimedOut => Err(Refusal::Gone),
        }
    }

    /// Applies the call's result: `resolve`, with the result kept on the record until it is
    /// delivered.
    pub fn apply(&mut self, result: Value, now_ms: u64) -> Result<(), Refusal> {
        self.resolve(now_ms)?;
        self.result = Some(result);
        Ok(())
    }

    /// Whether the record holds a result that no call of this object is delivering: its object
    /// ended after the result was applied (`delivering`: a call of this object has it in hand).
    pub fn needs_delivery(&self, delivering: bool) -> bool {
        self.state == State::Done && self.result.is_some() && !delivering
    }

    /// Whether the record can go: its call ended without a result to deliver (cancelled, ended
    /// with its session, timed out and told so), and its deadline has passed, so that a late
    /// result finds no record and gets 410 as it would have.
    pub fn spent(&self, now_ms: u64) -> bool {
        self.state != State::Waiting && self.result.is_none() && now_ms >= self.deadline_ms
    }

    /// Ends a waiting call whose deadline has passed; true when it did.
    pub fn expire(&mut self, now_ms: u64) -> bool {
        let expired = self.state == State::Waiting && now_ms >= self.deadline_ms;
        if expired {
            self.state = State::TimedOut;
        }
        expired
    }
}

/// The storage key of a call's record.
pub fn record_key(call: &str) -> String {
    format!("call:{call}")
}

/// What a callback token's signature is for.
const PURPOSE: &str = "callback";

/// The token of a callback URL: `<session>.<call>.<signature>`, where `<session>` is the session
/// object's name without its prefix, and the signature is the deployment's signing key's for
/// the purpose `callback` over `<session>.<call>`. The session part routes the callback to its
/// session object without any lookup; the signature makes a forged or altered token, or a
/// signature made for anything else, fail before it reaches one.
pub fn sign(key: &[u8], object: &str, call: &str) -> String {
    let session = object.strip_prefix(SESSION_OBJECT).unwrap_or(object);
    format!("{session}.{call}.{}", signature(key, PURPOSE, &format!("{session}.{call}")))
}

/// The session object and call a token names, if its signature is ours.
pub fn verify<'t>(key: &[u8], token: &'t str) -> Option<(String, &'t str)> {
    let mut parts = token.split('.');
    let (session, call, mac) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || session.is_empty() || call.is_empty() {
        return None;
    }
    let message = format!("{session}.{call}");
    if signed(key, PURPOSE, &message, mac) {
        return Some((format!("{SESSION_OBJECT}{session}"), call));
    }
    // Earlier builds signed without the purpose, and named objects without the prefix; their
    // URLs may still come back while their calls wait, to the objects that keep them. Only for
    // a session object's name: a request state's body never is one.
    (is_object_name(session) && signed_without_purpose(key, &message, mac)).then(|| (session.to_string(), call))
}

/// A session object's name as earlier builds made them (before the prefix): a UUID, and the
/// principal's digest.
fn is_object_name(name: &str) -> bool {
    let (id, digest) = name.split_once(':').unwrap_or((name, ""));
    crate::session_ids::is_issued(id) && digest.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(deadline_ms: u64) -> PendingRecord {
        PendingRecord { call: "c1".into(), request_id: json!(7), tool: "t".into(), deferral: Deferral::Callback, deadline_ms, state: State::Waiting, last_error: None, task: None, result: None, trace: None }
    }

    #[test]
    fn a_result_is_applied_once_and_only_in_time() {
        let mut r = record(1_000);
        assert_eq!(r.resolve(999), Ok(()));
        assert_eq!(r.state, State::Done);
        assert_eq!(r.resolve(999), Err(Refusal::Gone), "a duplicate");
        let mut late = record(1_000);
        assert_eq!(late.resolve(1_000), Err(Refusal::Gone));
        assert_eq!(late.state, State::TimedOut);
        let mut r = record(1_000);
        assert!(!r.expire(500) && r.expire(1_000) && !r.expire(2_000));
        assert_eq!(r.resolve(600), Err(Refusal::Gone));
    }

    #[test]
    fn an_applied_result_stays_until_delivered() {
        let mut r = record(1_000);
        assert!(!r.needs_delivery(false) && !r.spent(2_000));
        assert_eq!(r.apply(serde_json::json!({"content": []}), 10), Ok(()));
        assert_eq!(r.state, State::Done);
        assert!(r.needs_delivery(false), "its object ended before the reply went out");
        assert!(!r.needs_delivery(true), "a call of this object has it in hand");
        assert!(!r.spent(5_000), "a result to deliver is never spent");
        assert_eq!(r.apply(serde_json::json!({}), 20), Err(Refusal::Gone));
        let mut cancelled = record(1_000);
        cancelled.state = State::Done;
        assert!(!cancelled.spent(999) && cancelled.spent(1_000));
        assert!(!cancelled.needs_delivery(false));
    }

    #[test]
    fn records_are_stored_in_a_stable_shape() {
        let text = serde_json::to_string(&record(5)).unwrap();
        assert_eq!(text, r#"{"call":"c1","requestId":7,"tool":"t","deferral":"callback","deadlineMs":5,"state":"waiting"}"#);
        assert_eq!(serde_json::from_str::<PendingRecord>(&text).unwrap(), record(5));
    }

    #[test]
    fn tokens_are_signed_and_checked() {
        let key = b"signing key";
        let token = sign(key, "session:9f1c0a52-1d3e-4b8e-9a57-2a1f0d3c4b5e", "abc123");
        assert!(token.starts_with("9f1c0a52-1d3e-4b8e-9a57-2a1f0d3c4b5e.abc123."));
        assert_eq!(token.len(), 36 + 1 + 6 + 1 + 64);
        assert_eq!(verify(key, &token), Some(("session:9f1c0a52-1d3e-4b8e-9a57-2a1f0d3c4b5e".to_string(), "abc123")));
        assert_eq!(verify(b"another key", &token), None);
        let altered = token.replacen("abc123", "abc124", 1);
        assert_eq!(verify(key, &altered), None);
        assert_eq!(verify(key, "a.b"), None);
        assert_eq!(verify(key, &format!("{token}.x")), None);
        assert_eq!(verify(key, "a.b.zz"), None);
        // The same MAC as Python's hmac.new(b"Jefe", b"what do ya want.for nothing?", sha256).
        assert_eq!(signature(b"Jefe", "what do ya want", "for nothing?"), "e33f91577b90d4b3bbd73cb61803074f1965d27701b5527942dd9ea9443af37c");
    }

    #[test]
    fn a_token_of_an_earlier_build_still_verifies() {
        // (That a 2026-07-28 request state is no callback token: `protocol::mrtr`'s tests.)
        let key = b"signing key";
        // A token of an earlier build (signed without its purpose) still verifies while its
        // call waits: its session part is a session object's name.
        let session = "9f1c0a52-1d3e-4b8e-9a57-2a1f0d3c4b5e:0a1b2c";
        let legacy = format!("{session}.c1.{}", crate::signing::tests_mac(key, &format!("{session}.c1")));
        assert_eq!(verify(key, &legacy), Some((session.to_string(), "c1")));
    }
}
