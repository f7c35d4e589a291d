//! One error type for every way a request can fail, and the one place it maps to JSON-RPC and HTTP.

use serde::Serialize;

/// JSON-RPC 2.0 and MCP error codes, named as the specs name them.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Server-defined range: transport-level refusals (missing session id, bad headers).
    pub const BAD_REQUEST: i64 = -32000;
    /// Server-defined range: the session id names no live session.
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// MCP: the URI names no resource (2025-11-25 and earlier; 2026-07-28 uses -32602).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// MCP 2026-07-28: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` or `Mcp-Param-*` is
    /// missing or disagrees with the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// MCP 2026-07-28: the request needs a client capability the request did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// MCP 2026-07-28: the request's protocol version is not one this server speaks.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The body is not JSON at all.
    Parse(String),
    /// JSON, but not a valid JSON-RPC message.
    InvalidRequest(String),
    MethodNotFound(String),
    InvalidParams(String),
    ResourceNotFound(String),
    Internal(String),
    /// A request other than `initialize` came without `Mcp-Session-Id`.
    SessionRequired,
    /// The session id is unknown, deleted or expired.
    SessionNotFound,
    /// A browser origin that the server does not allow (DNS rebinding defence).
    OriginForbidden(String),
    /// A local server reached under a host name that is not loopback nor configured.
    HostForbidden(String),
    /// The HTTP method is not served on this route; carries the `Allow` value.
    MethodNotAllowed(&'static str),
    /// The `Accept` header allows none of the framings we speak.
    NotAcceptable(String),
    UnsupportedMediaType(String),
    /// `MCP-Protocol-Version` names a version this server does not speak.
    UnsupportedVersion(String),
    /// Missing or wrong credentials: the `WWW-Authenticate` challenge, and why (for the log).
    Unauthorized { challenge: String, why: String },
    /// Valid credentials without a role the server requires.
    Forbidden(String),
    /// The stream asked for is already open.
    Conflict(String),
    PayloadTooLarge(u64),
    /// No configured server lives at this path.
    RouteNotFound(String),
    /// The bundled configuration is invalid; every request reports it.
    Config(String),
    /// A callback token that is malformed or not signed by us.
    UnknownCallback,
    /// A deferred call that already got its result, timed out, or ended with its session.
    CallGone,
    /// The request's headers exceed the limit (bytes).
    HeadersTooLarge(usize),
    /// A limit on concurrent work (calls in flight, sessions per principal) is reached.
    Busy(String),
    /// Too many requests; carries the seconds for `Retry-After`.
    RateLimited(u64),
    /// A configured rate limit, quota or concurrency limit refused a tool call (`crate::limits`).
    Limited(Box<Refused>),
    /// 2026-07-28: a request header disagrees with the body, or a required one is missing.
    HeaderMismatch(String),
    /// 2026-07-28: the request needs these client capabilities, which it did not declare.
    MissingClientCapability(Vec<String>),
    /// 2026-07-28: the requested protocol version is not one of ours.
    UnsupportedProtocolVersion(String),
    /// An answer in another protocol's own JSON, not JSON-RPC: the authorization server's OAuth
    /// errors (`From<OAuthError>` in `oauth`), the admin API's refusals (`From<AdminError>` in
    /// `live::api`). The layers above make it; this one only carries it to the wire.
    Wire(Box<WireError>),
}

/// A limit's refusal: which limit, how long until a call fits, and its `RateLimit-Policy` item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub limit: String,
    pub retry_after_ms: u64,
    pub policy: String,
}

/// A whole HTTP answer made by a protocol other than JSON-RPC, as data: the error type stays
/// below the layers that speak those protocols.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    pub status: u16,
    /// The machine-readable code: OAuth's `error`, the admin API's `code`.
    pub code: String,
    /// For people: OAuth's `error_description`, the admin API's `message`.
    pub description: String,
    /// The JSON body, as sent.
    pub body: String,
    /// Headers beside `Content-Type: application/json` (`Cache-Control`, `WWW-Authenticate`, CORS).
    pub headers: Vec<(&'static str, String)>,
}

impl Error {
    pub fn code(&self) -> i64 {
        match self {
            Error::Parse(_) => code::PARSE_ERROR,
            Error::InvalidRequest(_) => code::INVALID_REQUEST,
            Error::MethodNotFound(_) => code::METHOD_NOT_FOUND,
            Error::InvalidParams(_) => code::INVALID_PARAMS,
            Error::ResourceNotFound(_) => code::RESOURCE_NOT_FOUND,
            Error::HeaderMismatch(_) => code::HEADER_MISMATCH,
            Error::MissingClientCapability(_) => code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            Error::UnsupportedProtocolVersion(_) => code::UNSUPPORTED_PROTOCOL_VERSION,
            Error::Internal(_) | Error::Config(_) => code::INTERNAL_ERROR,
            Error::SessionNotFound => code::SESSION_NOT_FOUND,
            Error::SessionRequired
            | Error::OriginForbidden(_)
            | Error::HostForbidden(_)
            | Error::MethodNotAllowed(_)
            | Error::NotAcceptable(_)
            | Error::UnsupportedMediaType(_)
            | Error::Conflict(_)
            | Error::Unauthorized { .. }
            | Error::Forbidden(_)
            | Error::UnsupportedVersion(_)
            | Error::PayloadTooLarge(_)
            | Error::RouteNotFound(_)
            | Error::UnknownCallback
            | Error::CallGone
            | Error::HeadersTooLarge(_)
            | Error::Busy(_)
            | Error::Wire(_)
            | Error::Limited(_)
            | Error::RateLimited(_) => code::BAD_REQUEST,
        }
    }

    /// The HTTP status when this error is the whole answer to a request. Errors that answer one
    /// well-formed JSON-RPC request (unknown method, bad params) travel in a 200 like any reply.
    pub fn http_status(&self) -> u16 {
        match self {
            Error::Parse(_) | Error::InvalidRequest(_) | Error::SessionRequired | Error::UnsupportedVersion(_) => 400,
            Error::HeaderMismatch(_) | Error::MissingClientCapability(_) | Error::UnsupportedProtocolVersion(_) => 400,
            Error::MethodNotFound(_) | Error::InvalidParams(_) | Error::ResourceNotFound(_) => 200,
            Error::Internal(_) | Error::Config(_) => 500,
            Error::SessionNotFound | Error::RouteNotFound(_) | Error::UnknownCallback => 404,
            Error::CallGone => 410,
            Error::HeadersTooLarge(_) => 431,
            Error::Busy(_) | Error::RateLimited(_) | Error::Limited(_) => 429,
            Error::OriginForbidden(_) | Error::HostForbidden(_) | Error::Forbidden(_) => 403,
            Error::MethodNotAllowed(_) => 405,
            Error::NotAcceptable(_) => 406,
            Error::PayloadTooLarge(_) => 413,
            Error::Conflict(_) => 409,
            Error::Unauthorized { .. } => 401,
            Error::UnsupportedMediaType(_) => 415,
            Error::Wire(e) => e.status,
        }
    }

    pub fn message(&self) -> String {
        match self {
            Error::Parse(detail) => format!("Parse error: {detail}"),
            Error::InvalidRequest(detail) => format!("Invalid Request: {detail}"),
            Error::MethodNotFound(method) => format!("Method not found: {method}"),
            Error::InvalidParams(detail) => format!("Invalid params: {detail}"),
            Error::ResourceNotFound(uri) => format!("Resource not found: {uri}"),
            Error::Internal(detail) => format!("Internal error: {detail}"),
            Error::Config(detail) => format!("Invalid configuration: {detail}"),
            Error::SessionRequired => "Bad Request: Mcp-Session-Id header is required".into(),
            Error::SessionNotFound => "Session not found".into(),
            Error::OriginForbidden(origin) => format!("Forbidden: origin {origin} is not allowed"),
            Error::HostForbidden(host) => format!("Forbidden: host {host:?} is not allowed for a local server"),
            Error::MethodNotAllowed(allow) => format!("Method not allowed; allowed: {allow}"),
            Error::NotAcceptable(accept) => format!(
                "Not Acceptable: Accept must list application/json, text/event-stream or application/x-ndjson (got {accept:?})"
            ),
            Error::UnsupportedMediaType(ct) => format!(
                "Unsupported Media Type: Content-Type must be application/json or application/x-ndjson (got {ct:?})"
            ),
            Error::PayloadTooLarge(limit) => {
                format!("Payload Too Large: the request body exceeds {limit} bytes")
            }
            Error::RouteNotFound(path) => format!("Not Found: no MCP server at {path}"),
            Error::Conflict(detail) => format!("Conflict: {detail}"),
            // The reason stays out of the answer: it could help an attacker probe credentials.
            Error::Unauthorized { .. } => "Unauthorized".into(),
            Error::Forbidden(why) => format!("Forbidden: {why}"),
            Error::UnknownCallback => "Not Found: unknown callback".into(),
            Error::HeadersTooLarge(limit) => format!("Request Header Fields Too Large: the headers exceed {limit} bytes"),
            Error::Busy(why) => format!("Too Many Requests: {why}"),
            Error::RateLimited(seconds) => format!("Too Many Requests: slow down and retry after {seconds} s"),
            Error::Limited(r) => format!("Too Many Requests: the limit {:?} is spent; retry after {} s", r.limit, r.retry_after_ms.div_ceil(1000)),
            Error::CallGone => "Gone: this call already has its result, timed out, or ended with its session".into(),
            Error::HeaderMismatch(detail) => format!("Header mismatch: {detail}"),
            Error::MissingClientCapability(names) => format!("Missing required client capability: {}", names.join(", ")),
            Error::UnsupportedProtocolVersion(_) => "Unsupported protocol version".into(),
            Error::Wire(e) => format!("{}: {}", e.code, e.description),
            Error::UnsupportedVersion(v) => format!("Bad Request: Unsupported protocol version {v:?} (supported: {})", crate::versions::SUPPORTED_VERSIONS.join(", ")),
        }
    }

    /// The error's `data`, for the errors whose data the spec defines.
    pub fn data(&self) -> Option<serde_json::Value> {
        match self {
            Error::MissingClientCapability(names) => {
                // An extension (`extensions/<id>`) goes under `extensions`, as capabilities name it.
                let mut required = serde_json::Map::new();
                for name in names {
                    match name.strip_prefix("extensions/") {
                        Some(id) => {
                            let extensions = required.entry("extensions").or_insert_with(|| serde_json::json!({}));
                            if let Some(extensions) = extensions.as_object_mut() {
                                extensions.insert(id.to_string(), serde_json::json!({}));
                            }
                        }
                        None => {
                            required.insert(name.clone(), serde_json::json!({}));
                        }
                    }
                }
                Some(serde_json::json!({ "requiredCapabilities": required }))
            }
            Error::UnsupportedProtocolVersion(requested) => {
                Some(serde_json::json!({ "supported": crate::versions::ALL_VERSIONS, "requested": requested }))
            }
            Error::Limited(r) => Some(serde_json::json!({ "retryAfterMs": r.retry_after_ms, "limit": r.limit, "policy": r.policy })),
            _ => None,
        }
    }

    pub fn to_object(&self) -> ErrorObject {
        ErrorObject { code: self.code(), message: self.message(), data: self.data() }
    }
}

/// The `error` member of a JSON-RPC error response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_errors_match_the_transport_contract() {
        assert_eq!(Error::SessionRequired.code(), -32000);
        assert_eq!(Error::SessionRequired.http_status(), 400);
        assert_eq!(Error::SessionRequired.message(), "Bad Request: Mcp-Session-Id header is required");
        assert_eq!(Error::SessionNotFound.code(), -32001);
        assert_eq!(Error::SessionNotFound.http_status(), 404);
        assert_eq!(Error::SessionNotFound.message(), "Session not found");
    }

    #[test]
    fn standard_codes() {
        assert_eq!(Error::Parse("x".into()).code(), -32700);
        assert_eq!(Error::InvalidRequest("x".into()).code(), -32600);
        assert_eq!(Error::MethodNotFound("x".into()).code(), -32601);
        assert_eq!(Error::InvalidParams("x".into()).code(), -32602);
        assert_eq!(Error::Internal("x".into()).code(), -32603);
        assert_eq!(Error::Parse("x".into()).http_status(), 400);
        assert_eq!(Error::MethodNotFound("x".into()).http_status(), 200);
    }
}
