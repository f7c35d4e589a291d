//! A configured tool compiled: its name, schemas, request, retries, execution and reply plan
//! checked, and its `tools/list` entry built once.

use serde_json::{json, Map, Value};

use super::model::{ExecutionConfig, OversizeConfig, ResultModeConfig, ToolConfig};
use super::request::Scope;
use super::ConfigError;
use crate::pending::Deferral;
use crate::tools::Tool;

/// Compiles a configured tool; `max_reply_bytes` is the server's limit, which it may lower.
pub fn tool(t: ToolConfig, path: &str, route_params: &[String], max_reply_bytes: u64) -> Result<Tool, ConfigError> {
    let at = |field: &str, msg: String| ConfigError::at(format!("{path}.{field}"), msg);
    let valid_name = !t.name.is_empty()
        && t.name.len() <= 128
        && t.name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !valid_name {
        return Err(at("name", format!("{:?} must be 1 to 128 of A-Z a-z 0-9 _ - .", t.name)));
    }
    if t.input_schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(at("inputSchema", "must be a JSON Schema with \"type\": \"object\"".into()));
    }
    crate::schema::lint(&t.input_schema).map_err(|(at, e)| ConfigError::at(format!("{path}.inputSchema{at}"), e))?;
    if let Some(output) = &t.output_schema {
        if output.get("type").and_then(Value::as_str) != Some("object") {
            return Err(at("outputSchema", "must be a JSON Schema with \"type\": \"object\"".into()));
        }
        crate::schema::lint(output).map_err(|(at, e)| ConfigError::at(format!("{path}.outputSchema{at}"), e))?;
    }
    let arguments: Vec<String> = t
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let scope = Scope { path, arguments: &arguments, route_params, meta: true, meta_auth: t.forward_meta_auth, principal: true, upstream_token: t.forward_upstream_token };
    let mut request = super::request::request(&t.http, &scope, "http")?;
    if let Some(retry) = &t.retry {
        let hinted = t.annotations.as_ref().and_then(|a| a.get("idempotentHint")) == Some(&Value::Bool(true));
        if !(matches!(request.method.as_str(), "GET" | "HEAD") || hinted) {
            return Err(at("retry", "retries need an idempotent tool: method GET, or \"annotations\": {\"idempotentHint\": true}".into()));
        }
        if retry.attempts == 0 || retry.attempts > 10 {
            return Err(at("retry.attempts", "must be 1 to 10".into()));
        }
        if retry.initial_delay_ms == 0 || retry.max_delay_ms < retry.initial_delay_ms {
            return Err(at("retry", "initialDelayMs must be at least 1 and at most maxDelayMs".into()));
        }
        request.retry = Some(crate::upstream::retry::RetryPolicy { attempts: retry.attempts, initial_delay_ms: retry.initial_delay_ms, max_delay_ms: retry.max_delay_ms });
    }
    if let Some(pick) = &t.response.pick {
        if !(pick.is_empty() || pick.starts_with('/')) {
            return Err(at("response.pick", format!("{pick:?} is not a JSON Pointer: it must be empty or start with \"/\"")));
        }
    }
    let deferral = match t.execution {
        ExecutionConfig::Direct => None,
        ExecutionConfig::Queued => Some(Deferral::Queued),
        ExecutionConfig::Callback => Some(Deferral::Callback),
    };
    if deferral.is_some() && !(1_000..=86_400_000).contains(&t.pending_timeout_ms) {
        return Err(at("pendingTimeoutMs", "must be 1000 to 86400000".into()));
    }
    if deferral.is_some() && t.forward_upstream_token {
        // A queued request waits in a queue message, and a late result is redacted without
        // the call's own list: the caller's token would be stored, or could come back.
        return Err(at("forwardUpstreamToken", "only direct tools may forward the caller's upstream token; this one is queued or callback".into()));
    }
    if deferral == Some(Deferral::Queued) && t.sse.close_after_ms.is_some() {
        return Err(at("sse.closeAfterMs", "a queued tool's result already arrives later; leave closeAfterMs out".into()));
    }
    let task_support = t.task_support.unwrap_or(if deferral.is_some() { crate::tools::TaskSupport::Optional } else { crate::tools::TaskSupport::Forbidden });
    tags(&t.tags, path)?;
    if t.response.max_bytes == Some(0) {
        return Err(at("response.maxBytes", "must be greater than 0".into()));
    }

    let mut listing = Map::new();
    listing.insert("name".into(), json!(t.name));
    if let Some(title) = &t.title {
        listing.insert("title".into(), json!(title));
    }
    if let Some(description) = &t.description {
        listing.insert("description".into(), json!(description));
    }
    listing.insert("inputSchema".into(), t.input_schema.clone());
    if let Some(output) = &t.output_schema {
        listing.insert("outputSchema".into(), output.clone());
    }
    if let Some(annotations) = &t.annotations {
        listing.insert("annotations".into(), annotations.clone());
    }
    if task_support != crate::tools::TaskSupport::Forbidden {
        listing.insert("execution".into(), json!({"taskSupport": task_support.name()}));
    }
    let result_mode = match t.result {
        ResultModeConfig::Map => crate::upstream::reply::ResultMode::Map,
        ResultModeConfig::Passthrough => crate::upstream::reply::ResultMode::Passthrough,
    };
    if t.sse.close_after_ms == Some(0) {
        return Err(at("sse.closeAfterMs", "must be greater than 0".into()));
    }
    let reply = crate::upstream::reply::ReplyPlan {
        mode: result_mode,
        pick: t.response.pick.filter(|p| !p.is_empty()),
        output_schema: t.output_schema,
        max_bytes: t.response.max_bytes.unwrap_or(max_reply_bytes),
        truncate: t.response.oversize == OversizeConfig::Truncate,
        resource_uri: format!("mcp-edge://tools/{}/reply", t.name),
    };
    let header_params = crate::tools::header_params(&t.input_schema);
    Ok(Tool { name: t.name, listing: Value::Object(listing), input_schema: t.input_schema, header_params, request, reply, close_after_ms: t.sse.close_after_ms, forward_meta_auth: t.forward_meta_auth, forward_upstream_token: t.forward_upstream_token, deferral: deferral.map(|d| (d, t.pending_timeout_ms)), roles: t.roles, tags: t.tags, cache: None, mcp: None, task_support })
}

/// At most `MAX_TAGS` tags, each 1 to `MAX_TAG_CHARS` characters: words for a search, not text.
fn tags(tags: &[String], path: &str) -> Result<(), ConfigError> {
    const MAX_TAGS: usize = 32;
    const MAX_TAG_CHARS: usize = 64;
    if tags.len() > MAX_TAGS {
        return Err(ConfigError::at(format!("{path}.tags"), format!("at most {MAX_TAGS} tags")));
    }
    match tags.iter().position(|tag| tag.trim().is_empty() || tag.chars().nth(MAX_TAG_CHARS).is_some()) {
        Some(i) => Err(ConfigError::at(format!("{path}.tags[{i}]"), format!("must be 1 to {MAX_TAG_CHARS} characters, not blank"))),
        None => Ok(()),
    }
}
