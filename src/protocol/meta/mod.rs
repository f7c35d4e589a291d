//! The 2026-07-28 revision's per-request protocol information: the `_meta` fields every request
//! carries, the headers that mirror the body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`,
//! `Mcp-Param-*`), and the fields every result carries (`resultType`, `serverInfo`, cache hints).
//! Here: a request's `_meta` and its check against the headers; `headers`: the header values;
//! `result`: what results carry.

mod headers;
mod result;

pub use headers::decode_header_value;
pub use result::{complete, discover, stamp_server, SERVER_INFO};
use headers::check_param_headers;

use serde_json::Value;

use crate::catalog::Server;
use crate::error::Error;
use crate::jsonrpc::Request;
use crate::method::Method;
use crate::versions::{STATELESS_VERSION, SUPPORTED_VERSIONS};

/// Whether the session speaks the stateless revision (a session of one request).
pub fn stateless_revision(session: &crate::session::Session) -> bool {
    session.protocol_version.as_str() == STATELESS_VERSION
}

/// A result as the session's revision shapes it: unchanged before 2026-07-28, then with
/// `resultType`, `serverInfo` and, where the revision makes results cacheable, cache hints.
pub fn decorate(server: &Server, session: &crate::session::Session, method: Method, result: Value) -> Value {
    if !stateless_revision(session) {
        return result;
    }
    // A read's hint is its resource's own, when it sets one (the URI its contents name).
    let uri = || result.get("contents")?.get(0)?.get("uri")?.as_str();
    let hint = match method {
        Method::ResourcesRead => uri().map_or(server.cache, |uri| server.read_cache(uri)),
        _ => server.cache,
    };
    complete(result, server, method.cacheable().then_some(hint))
}

pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// What a stateless request declares about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestMeta {
    pub version: String,
    pub client_info: Value,
    pub client_capabilities: Value,
    pub log_level: Option<String>,
}

/// Whether a request speaks the stateless revision: its body carries the `_meta` protocol
/// version, or its `MCP-Protocol-Version` header names 2026-07-28, or, outside a session, a
/// version the session-based revisions do not know (which the stateless path then answers as
/// unsupported, with the list). Inside a session an unknown version stays the session's error.
pub fn is_stateless(header_version: Option<&str>, params: Option<&Value>, in_session: bool) -> bool {
    let in_body = params.and_then(|p| p.get("_meta")).and_then(|m| m.get(PROTOCOL_VERSION)).is_some();
    in_body || header_version.is_some_and(|v| v == STATELESS_VERSION || (!in_session && !SUPPORTED_VERSIONS.contains(&v)))
}

/// Checks a stateless request against its headers, in the order the revision implies: the
/// required `_meta` fields (-32602), then the version header against the body (-32020), then
/// the version itself (-32022), then `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` (-32020).
/// `header` reads a request header by lowercase name.
pub fn check(request: &Request, header: &dyn Fn(&str) -> Option<String>, server: &Server) -> Result<RequestMeta, Error> {
    let meta = request.params.as_ref().and_then(|p| p.get("_meta")).and_then(Value::as_object);
    let Some(meta) = meta else {
        return Err(Error::InvalidParams("params._meta with the request's protocol information is required".into()));
    };
    let Some(version) = meta.get(PROTOCOL_VERSION).and_then(Value::as_str) else {
        return Err(Error::InvalidParams(format!("params._meta[{PROTOCOL_VERSION:?}] is required")));
    };
    let Some(capabilities) = meta.get(CLIENT_CAPABILITIES).filter(|c| c.is_object()) else {
        return Err(Error::InvalidParams(format!("params._meta[{CLIENT_CAPABILITIES:?}] must be an object")));
    };
    match header("mcp-protocol-version") {
        None => return Err(Error::HeaderMismatch("the MCP-Protocol-Version header is required".into())),
        Some(h) if h != version => return Err(Error::HeaderMismatch(format!("MCP-Protocol-Version header value {h:?} does not match body value {version:?}"))),
        Some(_) => {}
    }
    if version != STATELESS_VERSION {
        return Err(Error::UnsupportedProtocolVersion(version.to_string()));
    }
    match header("mcp-method") {
        None => return Err(Error::HeaderMismatch("the Mcp-Method header is required".into())),
        Some(m) if m != request.method.as_str() => return Err(Error::HeaderMismatch(format!("Mcp-Method header value {m:?} does not match body value {:?}", request.method.as_str()))),
        Some(_) => {}
    }
    let params = request.params.as_ref();
    let name_field = request.method.known().and_then(Method::name_field);
    if let Some(field) = name_field {
        let body = params.and_then(|p| p.get(field)).and_then(Value::as_str).unwrap_or_default();
        match header("mcp-name").map(|h| decode_header_value(&h)) {
            None => return Err(Error::HeaderMismatch("the Mcp-Name header is required".into())),
            Some(None) => return Err(Error::HeaderMismatch("the Mcp-Name header is not a valid header value".into())),
            Some(Some(h)) if h != body => return Err(Error::HeaderMismatch(format!("Mcp-Name header value {h:?} does not match body value {body:?}"))),
            Some(Some(_)) => {}
        }
    }
    if request.method == Method::ToolsCall {
        let tool = params.and_then(|p| p.get("name")).and_then(Value::as_str).and_then(|n| server.tool(n));
        if let Some(tool) = tool {
            let arguments = params.and_then(|p| p.get("arguments")).unwrap_or(&Value::Null);
            check_param_headers(&tool.header_params, arguments, header)?;
        }
    }
    let log_level = meta.get(LOG_LEVEL).and_then(Value::as_str).map(str::to_string);
    Ok(RequestMeta { version: version.to_string(), client_info: meta.get(CLIENT_INFO).cloned().unwrap_or(Value::Null), client_capabilities: capabilities.clone(), log_level })
}

/// Whether a 2026-07-28 server knows the method: the revision has it, and the server has the
/// capability it needs.
pub fn offered(server: &Server, method: Method) -> bool {
    match method.capability() {
        Some(needs) => super::lifecycle::offers(server, needs.key()),
        None => method.in_stateless_revision(),
    }
}

/// The HTTP status of a stateless reply that is one JSON-RPC error: the revision makes unknown
/// methods 404 and malformed or mismatched requests 400.
pub fn error_status(code: i64) -> u16 {
    use crate::error::code;
    match code {
        code::METHOD_NOT_FOUND => 404,
        code::PARSE_ERROR | code::INVALID_REQUEST | code::INVALID_PARAMS | code::HEADER_MISMATCH | code::MISSING_REQUIRED_CLIENT_CAPABILITY | code::UNSUPPORTED_PROTOCOL_VERSION => 400,
        code::INTERNAL_ERROR => 500,
        _ => 200,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn server() -> Server {
        let config = r#"{"servers":[{"name":"s","version":"1","tools":[{"name":"sql","inputSchema":{"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},
            "opts":{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry"}}}}},"http":{"url":"https://x.test/"}}]}]}"#;
        crate::config::load(config).unwrap().servers.remove(0).as_ref().clone()
    }

    fn request(method: &str, params: Value) -> Request {
        Request { id: json!(1), method: crate::method::Named::parse(method), params: Some(params) }
    }

    fn meta() -> Value {
        json!({PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}})
    }

    fn headers<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn detects_the_revision_from_body_or_unknown_header() {
        assert!(is_stateless(None, Some(&json!({"_meta": meta()})), true));
        assert!(is_stateless(Some("2026-07-28"), None, true));
        assert!(is_stateless(Some("v999"), None, false));
        assert!(!is_stateless(Some("v999"), None, true));
        assert!(!is_stateless(Some("2025-11-25"), Some(&json!({})), false));
        assert!(!is_stateless(None, None, false));
    }

    #[test]
    fn checks_meta_then_version_header_then_version_then_method_and_name() {
        let s = server();
        let ok = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/list")];
        assert_eq!(check(&request("tools/list", json!({})), &headers(&ok), &s).unwrap_err().code(), -32602);
        let no_caps = json!({"_meta": {PROTOCOL_VERSION: "2026-07-28"}});
        assert_eq!(check(&request("tools/list", no_caps), &headers(&ok), &s).unwrap_err().code(), -32602);
        let future = json!({"_meta": {PROTOCOL_VERSION: "v999", CLIENT_CAPABILITIES: {}}});
        assert_eq!(check(&request("tools/list", future.clone()), &headers(&ok), &s).unwrap_err().code(), -32020);
        let both = [("mcp-protocol-version", "v999"), ("mcp-method", "tools/list")];
        let err = check(&request("tools/list", future), &headers(&both), &s).unwrap_err();
        assert_eq!((err.code(), err.data().unwrap()["requested"].clone()), (-32022, json!("v999")));
        let wrong_method = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "prompts/list")];
        assert_eq!(check(&request("tools/list", json!({"_meta": meta()})), &headers(&wrong_method), &s).unwrap_err().code(), -32020);
        let got = check(&request("tools/list", json!({"_meta": meta()})), &headers(&ok), &s).unwrap();
        assert_eq!((got.version.as_str(), got.log_level), ("2026-07-28", None));
        let call = json!({"name": "sql", "arguments": {}, "_meta": meta()});
        let named = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "=?base64?c3Fs?=")];
        assert!(check(&request("tools/call", call.clone()), &headers(&named), &s).is_ok());
        let unnamed = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call")];
        assert_eq!(check(&request("tools/call", call), &headers(&unnamed), &s).unwrap_err().code(), -32020);
    }

    #[test]
    fn param_headers_mirror_annotated_arguments() {
        let s = server();
        let base = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "sql")];
        let call = |args: Value| request("tools/call", json!({"name": "sql", "arguments": args, "_meta": meta()}));
        let with = |extra: &[(&'static str, &'static str)]| [&base[..], extra].concat();
        let full = with(&[("mcp-param-region", "us-west1"), ("mcp-param-n", "42.0"), ("mcp-param-dry", "true")]);
        assert!(check(&call(json!({"region": "us-west1", "n": 42, "opts": {"dry": true}})), &headers(&full), &s).is_ok());
        // Absent or null arguments need no header; a value without its header is refused.
        assert!(check(&call(json!({"region": null})), &headers(&base), &s).is_ok());
        assert_eq!(check(&call(json!({"region": "eu"})), &headers(&base), &s).unwrap_err().code(), -32020);
        // Numbers compare as JSON numbers: `4.2e1` is 42, `+42` is not a JSON number.
        let exponent = with(&[("mcp-param-region", "us-west1"), ("mcp-param-n", "4.2e1"), ("mcp-param-dry", "true")]);
        assert!(check(&call(json!({"region": "us-west1", "n": 42, "opts": {"dry": true}})), &headers(&exponent), &s).is_ok());
        let plus = with(&[("mcp-param-region", "us-west1"), ("mcp-param-n", "+42"), ("mcp-param-dry", "true")]);
        assert_eq!(check(&call(json!({"region": "us-west1", "n": 42, "opts": {"dry": true}})), &headers(&plus), &s).unwrap_err().code(), -32020);
        let wrong = with(&[("mcp-param-region", "us-east1")]);
        assert_eq!(check(&call(json!({"region": "eu"})), &headers(&wrong), &s).unwrap_err().code(), -32020);
        let encoded = with(&[("mcp-param-region", "=?base64?SGVsbG8sIOS4lueVjA==?=")]);
        assert!(check(&call(json!({"region": "Hello, 世界"})), &headers(&encoded), &s).is_ok());
        assert_eq!(s.tool("sql").unwrap().header_params.len(), 3);
    }

    #[test]
    fn header_values_decode_the_base64_sentinel_and_refuse_control_characters() {
        assert_eq!(decode_header_value("plain").as_deref(), Some("plain"));
        assert_eq!(decode_header_value("  padded\t").as_deref(), Some("padded"));
        assert_eq!(decode_header_value("=?base64?IHBhZGRlZCA=?=").as_deref(), Some(" padded "));
        assert_eq!(decode_header_value("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=").as_deref(), Some("=?base64?literal?="));
        assert_eq!(decode_header_value("a\nb"), None);
        assert_eq!(decode_header_value("=?base64?!!?="), None);
    }

    #[test]
    fn results_carry_result_type_server_info_and_cache_hints() {
        let s = server();
        let r = complete(json!({"tools": []}), &s, Some(s.cache));
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["_meta"][SERVER_INFO], json!({"name": "s", "version": "1"}));
        assert_eq!((r["ttlMs"].clone(), r["cacheScope"].clone()), (json!(s.cache.ttl_ms), json!("public")));
        let d = discover(&s);
        assert_eq!(d["supportedVersions"][0], "2026-07-28");
        assert!(d["capabilities"]["tools"].is_object());
        assert!(!offered(&s, Method::PromptsList) && !offered(&s, Method::Ping) && offered(&s, Method::ToolsCall));
        assert_eq!((error_status(-32601), error_status(-32020), error_status(-32602), error_status(-32000)), (404, 400, 400, 200));
    }
}
