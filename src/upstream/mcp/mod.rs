//! Upstream MCP servers as tool sources: mcp-edge as an MCP client of another server. Pure: what
//! a source is (compiled from `upstreams[]`), which of its tools are taken and under what names,
//! the messages sent to it, and how its replies (JSON or an SSE stream) are read. The edge
//! (`edge/mcp.rs`) makes the exchanges, keeps the upstream sessions and the discovered tools.
//!
//! - [`filter`]: names and globs to take and to leave out.
//! - [`reader`]: an upstream's reply, JSON or SSE, as the JSON-RPC messages it carries.
//! - [`changes`]: digests of its lists, and the list notifications a change calls for.

pub mod changes;
pub mod filter;
pub mod reader;

use serde_json::{json, Value};

use crate::method::Method;
use crate::upstream::RequestTemplate;
use filter::Filter;

/// How to reach an upstream MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// POSTs to one URL, replies as JSON or SSE, `Mcp-Session-Id` (2025-03-26 and later).
    StreamableHttp,
    /// A GET event stream that names where to POST (2024-11-05).
    Sse,
}

/// One `upstreams[]` entry, compiled.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    pub transport: Transport,
    /// The URL and headers, rendered per exchange (secrets, the caller's identity); the body is
    /// the JSON-RPC message.
    pub request: RequestTemplate,
    pub prefix: String,
    pub tools: Filter,
    pub resources: Filter,
    pub prompts: Filter,
    pub roles: Vec<String>,
    pub catalog_ttl_ms: u64,
    pub forward_upstream_token: bool,
    /// `auth.connection`: the connection whose token its requests carry.
    pub connection: Option<String>,
}

/// Where a discovered tool comes from: the source (its index in the server's `upstreams`) and
/// its name there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub source: usize,
    pub name: String,
}

/// The protocol revision mcp-edge asks an upstream for; it answers with the one it speaks.
pub const PROTOCOL_VERSION: &str = crate::versions::LATEST_VERSION;

/// The revisions mcp-edge accepts from an upstream: those it speaks itself with `initialize`.
pub fn accepts(version: &str) -> bool {
    crate::versions::SUPPORTED_VERSIONS.contains(&version)
}

/// The `initialize` request. `capabilities`: what the client behind may be asked for
/// (sampling, elicitation, roots), which mcp-edge relays; none for discovery.
pub fn initialize(id: u64, capabilities: &Value) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": Method::Initialize.name(),
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": capabilities,
            "clientInfo": {"name": "mcp-edge", "version": env!("CARGO_PKG_VERSION")},
        },
    })
    .to_string()
}

pub fn initialized() -> String {
    json!({"jsonrpc": "2.0", "method": Method::Initialized.name()}).to_string()
}

/// A request with `params` (or none).
pub fn request(id: u64, method: Method, params: Option<Value>) -> String {
    let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method.name()});
    if let (Some(params), Some(obj)) = (params, message.as_object_mut()) {
        obj.insert("params".into(), params);
    }
    message.to_string()
}

/// `tools/call` of the upstream's tool `name`, with the downstream's progress token, so the
/// upstream's progress notifications can be passed on as they are.
pub fn call_tool(id: u64, name: &str, arguments: &Value, progress_token: Option<&Value>) -> String {
    let mut params = json!({"name": name, "arguments": arguments});
    if let (Some(token), Some(obj)) = (progress_token, params.as_object_mut()) {
        obj.insert("_meta".into(), json!({"progressToken": token}));
    }
    request(id, Method::ToolsCall, Some(params))
}

/// The answer to an upstream's request (sampling, elicitation, roots), as the client gave it.
pub fn answer(id: &Value, outcome: &Result<Value, Value>) -> String {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    }
    .to_string()
}

/// `notifications/cancelled` for the upstream's request `id`.
pub fn cancelled(id: u64, reason: &str) -> String {
    json!({"jsonrpc": "2.0", "method": Method::Cancelled.name(), "params": {"requestId": id, "reason": reason}}).to_string()
}

/// What the `initialize` answer says: the protocol revision, if it is one mcp-edge speaks.
pub fn negotiated(result: &Value) -> Result<String, String> {
    let version = result.get("protocolVersion").and_then(Value::as_str).ok_or_else(|| format!("its {} result names no protocolVersion", Method::Initialize))?;
    if accepts(version) {
        Ok(version.to_string())
    } else {
        Err(format!("it speaks protocol {version:?}, which mcp-edge does not"))
    }
}

/// Where a legacy (HTTP+SSE) upstream says to POST, as an absolute URL, when it is on the event
/// stream's own origin: a path, or a URL of that origin, compared as the WHATWG parser reads
/// both (the one workerd fetches with). Anything else is refused: the upstream may not send
/// mcp-edge's requests elsewhere.
pub fn endpoint(stream_url: &str, endpoint: &str) -> Option<String> {
    let stream = crate::weburl::WebUrl::parse(stream_url).ok()?;
    // A path (`/message?sessionId=…`) or an absolute URL; a bare relative path is not an
    // endpoint an upstream sends.
    let absolute = crate::weburl::WebUrl::parse(endpoint).is_ok();
    if !absolute && !endpoint.starts_with('/') {
        return None;
    }
    let url = stream.join(endpoint).ok()?;
    url.same_origin(&stream).then(|| url.as_str().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_plain_json_rpc() {
        let init: Value = serde_json::from_str(&initialize(1, &json!({"elicitation": {}}))).unwrap();
        assert_eq!(init["method"], "initialize");
        assert_eq!(init["params"]["protocolVersion"], PROTOCOL_VERSION);
        assert_eq!(init["params"]["capabilities"], json!({"elicitation": {}}));
        assert_eq!(init["params"]["clientInfo"]["name"], "mcp-edge");
        assert_eq!(initialized(), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(call_tool(7, "echo", &json!({"m": 1}), Some(&json!("tok"))), r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"m":1},"_meta":{"progressToken":"tok"}}}"#);
        assert_eq!(call_tool(8, "echo", &json!({}), None), r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#);
        assert_eq!(request(2, Method::ToolsList, None), r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
        assert_eq!(answer(&json!(5), &Ok(json!({"action": "decline"}))), r#"{"jsonrpc":"2.0","id":5,"result":{"action":"decline"}}"#);
        assert_eq!(answer(&json!("a"), &Err(json!({"code": -1, "message": "no"}))), r#"{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"no"}}"#);
        assert_eq!(cancelled(3, "the client cancelled"), r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"the client cancelled"}}"#);
    }

    #[test]
    fn a_legacy_endpoint_stays_on_the_streams_origin() {
        let base = "http://127.0.0.1:3102/sse";
        assert_eq!(endpoint(base, "/message?sessionId=1").as_deref(), Some("http://127.0.0.1:3102/message?sessionId=1"));
        assert_eq!(endpoint(base, "http://127.0.0.1:3102/m").as_deref(), Some("http://127.0.0.1:3102/m"));
        assert_eq!(endpoint(base, "http://evil.example/m"), None);
        assert_eq!(endpoint(base, "//evil.example/m"), None);
        assert_eq!(endpoint(base, "message"), None);
        assert_eq!(endpoint(base, "http://2130706433:3102/m").as_deref(), Some("http://127.0.0.1:3102/m"), "the same origin, serialized");
    }

    #[test]
    fn a_legacy_endpoint_with_a_backslash_is_not_on_the_streams_origin() {
        // WHATWG (and workerd) end the authority at `\`: these POST to evil.example.
        let base = "http://127.0.0.1:3102/sse";
        for spelling in ["http://evil.example\\@127.0.0.1:3102/m", "/\\evil.example/m", "\\\\evil.example/m", "http://evil.example#@127.0.0.1:3102/m", "http://１２７.0.0.1:3102/m"] {
            assert_eq!(endpoint(base, spelling), None, "{spelling:?}");
        }
    }

    #[test]
    fn the_negotiated_revision_is_one_we_speak() {
        assert_eq!(negotiated(&json!({"protocolVersion": "2025-06-18"})).unwrap(), "2025-06-18");
        assert_eq!(negotiated(&json!({"protocolVersion": "2024-11-05"})).unwrap(), "2024-11-05");
        assert!(negotiated(&json!({"protocolVersion": "1999-01-01"})).unwrap_err().contains("does not"));
        assert!(negotiated(&json!({})).is_err());
    }
}
