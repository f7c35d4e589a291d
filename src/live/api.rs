//! The admin API's surface: its routes under `/admin/api`, its version tags (`ETag`,
//! `If-Match`), and its errors, which are JSON of their own rather than JSON-RPC.

use serde_json::{json, Value};

use super::Kind;
use crate::config::ConfigError;
use crate::paths::ADMIN_API;

/// The largest body a change may send: a server's configuration with its tools.
pub const MAX_BODY_BYTES: u64 = 1024 * 1024;

/// What a path under [`ADMIN_API`] names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/servers`: every server, and whether it is live.
    Servers,
    /// `/servers/{name}`: a server's whole configuration.
    Server(String),
    /// `/servers/{name}/{kind}`: its tools, resources, resource templates or prompts.
    Entries(String, Kind),
    /// `/servers/{name}/{kind}/{entry}`.
    Entry(String, Kind, String),
    /// `/versions`: the history, newest first.
    Versions,
    /// `/versions/{n}`: one version, with the layer it served.
    Version(u64),
    /// `/versions/{n}/rollback`: a new version serving what version n served.
    Rollback(u64),
    /// `/health`: the health figures of the last hour.
    Health,
    /// `/servers/{name}/limits/{principal}`: what a principal has left under the server's
    /// `rateLimits`.
    Limits(String, String),
    /// `/pins`: the upstream tool definitions held for approval, every server's.
    Pins,
    /// `/pins/{server}/{upstream}/{tool}/approve` (`true`) or `/reject`.
    Decide(String, String, String, bool),
    /// `/audit`: the audit log, newest first, a page at a time.
    Audit,
    /// `/connections/{name}/{principal}`: a principal's connection, removed (`DELETE`):
    /// revoked at its provider, then forgotten.
    Connection(String, String),
}

/// The route a path names; `None` for anything else under the prefix (a 404).
pub fn route(path: &str) -> Option<Route> {
    let rest = path.strip_prefix(ADMIN_API)?.strip_prefix('/')?;
    let segments: Vec<String> = rest.trim_end_matches('/').split('/').map(crate::head::percent_decode).collect::<Option<_>>()?;
    let version = |s: &str| s.parse::<u64>().ok();
    match segments.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["servers"] => Some(Route::Servers),
        ["servers", name] => Some(Route::Server(name.to_string())),
        ["servers", name, "limits", principal] => Some(Route::Limits(name.to_string(), principal.to_string())),
        ["servers", name, kind] => Some(Route::Entries(name.to_string(), Kind::parse(kind)?)),
        ["servers", name, kind, entry] => Some(Route::Entry(name.to_string(), Kind::parse(kind)?, entry.to_string())),
        ["versions"] => Some(Route::Versions),
        ["health"] => Some(Route::Health),
        ["versions", n] => Some(Route::Version(version(n)?)),
        ["versions", n, "rollback"] => Some(Route::Rollback(version(n)?)),
        ["pins"] => Some(Route::Pins),
        ["pins", server, upstream, tool, decision @ ("approve" | "reject")] => Some(Route::Decide(server.to_string(), upstream.to_string(), tool.to_string(), *decision == "approve")),
        ["audit"] => Some(Route::Audit),
        ["connections", name, principal] => Some(Route::Connection(name.to_string(), principal.to_string())),
        _ => None,
    }
}

/// The `ETag` of a version: every answer carries the deployment's current one.
pub fn etag(version: u64) -> String {
    format!("\"v{version}\"")
}

/// The version an `If-Match` value names: `Ok(None)` for `*` (any), an error for anything that
/// names no version of ours (which can only be stale).
pub fn if_match(value: &str) -> Result<Option<u64>, AdminError> {
    let value = value.trim();
    if value == "*" {
        return Ok(None);
    }
    let tag = value.strip_prefix("W/").unwrap_or(value);
    tag.strip_prefix("\"v").and_then(|t| t.strip_suffix('"')).and_then(|n| n.parse().ok()).map(Some).ok_or_else(|| AdminError::stale(format!("If-Match {value} names no version; send the ETag of the version you read")))
}

/// A refusal of the admin API, as `{"error": {"code", "message", "path"?, "configPath"?}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminError {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
    /// Where the fault is in the body that was sent (`""`: the body as a whole).
    pub path: Option<String>,
    /// Where it is in the whole configuration file.
    pub config_path: Option<String>,
}

impl AdminError {
    fn new(status: u16, code: &'static str, message: impl Into<String>) -> AdminError {
        AdminError { status, code, message: message.into(), path: None, config_path: None }
    }
    pub fn invalid(path: &str, message: impl Into<String>) -> AdminError {
        AdminError { path: Some(path.to_string()), ..AdminError::new(400, "invalid_configuration", message) }
    }
    pub fn bad_request(message: impl Into<String>) -> AdminError {
        AdminError::new(400, "bad_request", message)
    }
    pub fn unauthorized(message: impl Into<String>) -> AdminError {
        AdminError::new(401, "unauthorized", message)
    }
    pub fn forbidden(message: impl Into<String>) -> AdminError {
        AdminError::new(403, "forbidden", message)
    }
    pub fn not_found(message: impl Into<String>) -> AdminError {
        AdminError::new(404, "not_found", message)
    }
    pub fn method_not_allowed(allow: &str) -> AdminError {
        AdminError::new(405, "method_not_allowed", format!("this path takes {allow}"))
    }
    pub fn conflict(message: impl Into<String>) -> AdminError {
        AdminError::new(409, "conflict", message)
    }
    pub fn stale(message: impl Into<String>) -> AdminError {
        AdminError::new(412, "stale_version", message)
    }
    pub fn too_large() -> AdminError {
        AdminError::new(413, "too_large", format!("a change is at most {MAX_BODY_BYTES} bytes"))
    }
    pub fn unsupported_media_type() -> AdminError {
        AdminError::new(415, "unsupported_media_type", "send application/json")
    }
    pub fn internal(message: impl Into<String>) -> AdminError {
        AdminError::new(500, "internal", message)
    }

    /// A configuration fault of the change, located relative to the body sent, which sits at
    /// `body_at` in the file (`""`: the fault is elsewhere, or the body was not part of it).
    pub fn located(fault: ConfigError, body_at: &str) -> AdminError {
        let relative = if body_at.is_empty() {
            None
        } else if fault.path == body_at {
            Some(String::new())
        } else {
            fault.path.strip_prefix(body_at).and_then(|rest| rest.strip_prefix('.').or_else(|| rest.starts_with('[').then_some(rest))).map(str::to_string)
        };
        let config_path = (!fault.path.is_empty()).then(|| fault.path.clone());
        AdminError { status: 400, code: "invalid_configuration", message: fault.message, path: relative, config_path }
    }

    pub fn body(&self) -> String {
        let mut error = serde_json::Map::new();
        error.insert("code".into(), json!(self.code));
        error.insert("message".into(), json!(self.message));
        if let Some(path) = &self.path {
            error.insert("path".into(), Value::String(path.clone()));
        }
        if let Some(path) = &self.config_path {
            error.insert("configPath".into(), Value::String(path.clone()));
        }
        json!({ "error": error }).to_string()
    }
}

/// An admin API refusal as the edge sends it: never cached, and a 401 names the admin realm.
impl From<AdminError> for crate::error::Error {
    fn from(e: AdminError) -> Self {
        let mut headers = vec![("Cache-Control", "no-store".to_string())];
        if e.status == 401 {
            headers.push(("WWW-Authenticate", "Bearer realm=\"mcp-edge-admin\"".to_string()));
        }
        let body = e.body();
        crate::error::Error::Wire(Box::new(crate::error::WireError { status: e.status, code: e.code.to_string(), description: e.message, body, headers }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route("/admin/api/servers"), Some(Route::Servers));
        assert_eq!(route("/admin/api/servers/my%20tools"), Some(Route::Server("my tools".into())));
        assert_eq!(route("/admin/api/servers/s/tools/"), Some(Route::Entries("s".into(), Kind::Tools)));
        assert_eq!(route("/admin/api/servers/s/resourceTemplates/t"), Some(Route::Entry("s".into(), Kind::ResourceTemplates, "t".into())));
        assert_eq!(route("/admin/api/versions/3/rollback"), Some(Route::Rollback(3)));
        assert_eq!(route("/admin/api/versions/0"), Some(Route::Version(0)));
        assert_eq!(route("/admin/api/health"), Some(Route::Health));
        assert_eq!(route("/admin/api/servers/s/limits/user%3A1"), Some(Route::Limits("s".into(), "user:1".into())));
        assert_eq!(route("/admin/api/pins"), Some(Route::Pins));
        assert_eq!(route("/admin/api/audit"), Some(Route::Audit));
        assert_eq!(route("/admin/api/pins/s/up/echo/approve"), Some(Route::Decide("s".into(), "up".into(), "echo".into(), true)));
        assert_eq!(route("/admin/api/pins/s/up/echo/reject"), Some(Route::Decide("s".into(), "up".into(), "echo".into(), false)));
        assert_eq!(route("/admin/api/pins/s/up/echo/keep"), None);
        for other in ["/admin/api", "/admin/api/", "/admin/api/servers/s/widgets", "/admin/api/versions/x", "/admin/apis/servers", "/admin/api/servers/%ZZ", "/admin/api/servers/s/tools/t/x"] {
            assert_eq!(route(other), None, "{other}");
        }
    }

    #[test]
    fn version_tags() {
        assert_eq!(etag(12), "\"v12\"");
        assert_eq!(if_match("\"v12\""), Ok(Some(12)));
        assert_eq!(if_match("W/\"v3\""), Ok(Some(3)));
        assert_eq!(if_match("*"), Ok(None));
        assert_eq!(if_match("\"abc\"").unwrap_err().status, 412);
    }

    #[test]
    fn faults_are_located_in_the_body() {
        let fault = |path: &str| ConfigError::at(path, "bad");
        assert_eq!(AdminError::located(fault("servers[1].tools[2].http.url"), "servers[1].tools[2]").path.as_deref(), Some("http.url"));
        assert_eq!(AdminError::located(fault("servers[1].tools[2]"), "servers[1].tools[2]").path.as_deref(), Some(""));
        assert_eq!(AdminError::located(fault("servers[1].tools[2]"), "servers[1]").path.as_deref(), Some("tools[2]"));
        assert_eq!(AdminError::located(fault("servers[1].tools[20]"), "servers[1].tools[2]").path, None);
        assert_eq!(AdminError::located(fault("oauth"), "servers[1]").path, None);
        let e = AdminError::located(fault("servers[1].route"), "servers[1]");
        assert_eq!(e.body(), r#"{"error":{"code":"invalid_configuration","message":"bad","path":"route","configPath":"servers[1].route"}}"#);
    }
}
