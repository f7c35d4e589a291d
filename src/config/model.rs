//! The configuration file as written: plain serde structs, before any validation.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigFile {
    /// Lets editors find a JSON Schema; ignored by the server.
    #[serde(rename = "$schema", default)]
    pub schema: Option<String>,
    pub servers: Vec<ServerConfig>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerConfig {
    /// Path of the Streamable HTTP endpoint, e.g. `/mcp` or `/api/v1/interactions/{chat_uuid}/mcp`.
    #[serde(default = "default_route")]
    pub route: String,
    /// Path of the always-streaming alias; defaults to the route with its last segment `stream`.
    #[serde(default)]
    pub stream_route: Option<String>,
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub instructions: Option<String>,
    /// Browser origins allowed to call this server. Absent: loopback and the server's own origin.
    #[serde(default)]
    pub allowed_origins: Option<Vec<String>>,
    #[serde(default)]
    pub sessions: SessionsConfig,
    #[serde(default)]
    pub limits: LimitsConfig,
    #[serde(default)]
    pub tools: Vec<ToolConfig>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionsConfig {
    #[serde(default = "default_idle_timeout_ms")]
    pub idle_timeout_ms: u64,
}

impl Default for SessionsConfig {
    fn default() -> Self {
        SessionsConfig { idle_timeout_ms: default_idle_timeout_ms() }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsConfig {
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: u64,
    #[serde(default = "default_max_reply_bytes")]
    pub max_reply_bytes: u64,
    /// Tools per `tools/list` page. Absent: all on the first page (n8n-nodes-mcp reads only one).
    #[serde(default)]
    pub tools_page_size: Option<usize>,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_body_bytes: default_max_body_bytes(),
            max_reply_bytes: default_max_reply_bytes(),
            tools_page_size: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolConfig {
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default = "default_input_schema")]
    pub input_schema: Value,
    #[serde(default)]
    pub annotations: Option<Value>,
    pub http: HttpConfig,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpConfig {
    #[serde(default = "default_method")]
    pub method: String,
    /// RFC 6570 template over the arguments and `env.NAME` secrets.
    pub url: String,
    /// Header name → text template.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// JSON whose strings are text templates. Absent: the arguments as JSON (none for GET).
    #[serde(default)]
    pub body: Option<Value>,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_route() -> String {
    "/mcp".into()
}
fn default_idle_timeout_ms() -> u64 {
    30 * 60 * 1000
}
fn default_max_body_bytes() -> u64 {
    1024 * 1024
}
fn default_max_reply_bytes() -> u64 {
    4 * 1024 * 1024
}
fn default_input_schema() -> Value {
    serde_json::json!({"type": "object"})
}
fn default_method() -> String {
    "POST".into()
}
fn default_timeout_ms() -> u64 {
    30_000
}
