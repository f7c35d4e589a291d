//! The Worker's one log line per request: what the transports fill in as they go, written by
//! `entry` when the response is ready.

use serde::Serialize;

/// One structured log line per request. Argument values and secrets never go in it: its error
/// may quote an upstream, so the line is redacted as it is written (`line`).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestLog {
    pub request_id: String,
    pub http: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Served from the Worker's lease on the session, not by the session's object.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub lease: bool,
    /// The lease was asked of the session's object first: the request waited for that hop.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub lease_asked: bool,
    pub status: u16,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How a `tools/call` ended (`ok`, `tool_error`, ...), when the Worker saw its reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<&'static str>,
    /// The trace and the server span this request was served in, when traced: the line joins
    /// the trace in the operator's tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_id: Option<String>,
    /// The server span, until the response is ready.
    #[serde(skip)]
    pub span: Option<crate::trace::Span>,
}

impl RequestLog {
    /// The line as it is written, the deployment's secrets redacted.
    pub fn line(&self) -> String {
        crate::edge::redaction::line(serde_json::to_string(self).unwrap_or_default())
    }
}
