//! Tools as fetch calls: a configured tool compiles to a request template, and a call becomes one
//! HTTP request (`HttpCall`) whose reply `reply` maps into an MCP result.

pub mod reply;
pub mod request;
pub mod schema;
pub mod stream;
pub mod template;

use serde_json::{json, Map, Value};

use crate::config::model::ToolConfig;
use crate::config::ConfigError;
use crate::error::Error;
pub use request::{Bindings, HttpCall, RequestTemplate, Scope};

#[derive(Debug, Clone)]
pub struct Tool {
    pub name: String,
    /// The tool's entry in `tools/list`, built once.
    pub listing: Value,
    pub input_schema: Value,
    pub request: RequestTemplate,
    pub result_mode: reply::ResultMode,
    /// Close the SSE stream this long after the call starts (SSE polling).
    pub close_after_ms: Option<u64>,
    /// Templates may use `{meta.auth.NAME}` from the request's `params._meta.auth`.
    pub forward_meta_auth: bool,
}

impl Tool {
    pub fn compile(t: ToolConfig, path: &str, route_params: &[String]) -> Result<Tool, ConfigError> {
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
        let arguments: Vec<String> = t
            .input_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let scope = Scope { path, arguments: &arguments, route_params, meta_auth: t.forward_meta_auth };
        let request = RequestTemplate::compile(&t.http, &scope, "http")?;

        let mut listing = Map::new();
        listing.insert("name".into(), json!(t.name));
        if let Some(title) = &t.title {
            listing.insert("title".into(), json!(title));
        }
        if let Some(description) = &t.description {
            listing.insert("description".into(), json!(description));
        }
        listing.insert("inputSchema".into(), t.input_schema.clone());
        if let Some(annotations) = &t.annotations {
            listing.insert("annotations".into(), annotations.clone());
        }
        let result_mode = match t.result {
            crate::config::model::ResultModeConfig::Map => reply::ResultMode::Map,
            crate::config::model::ResultModeConfig::Passthrough => reply::ResultMode::Passthrough,
        };
        if t.sse.close_after_ms == Some(0) {
            return Err(at("sse.closeAfterMs", "must be greater than 0".into()));
        }
        Ok(Tool { name: t.name, listing: Value::Object(listing), input_schema: t.input_schema, request, result_mode, close_after_ms: t.sse.close_after_ms, forward_meta_auth: t.forward_meta_auth })
    }

    /// Renders the HTTP request for one call. Arguments must already be validated.
    pub fn prepare(&self, args: &Map<String, Value>, bindings: &Bindings) -> Result<HttpCall, Error> {
        self.request.render(&format!("tool {:?}", self.name), args, bindings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(http: Value) -> Tool {
        let config: ToolConfig = serde_json::from_value(json!({
            "name": "t",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "note": {"type": "string"}}},
            "http": http
        }))
        .unwrap();
        Tool::compile(config, "tools[0]", &["chat".to_string()]).unwrap()
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn url_headers_and_default_json_body() {
        let t = tool(json!({"url": "{+env.BASE}/weather/{city}{?days}", "headers": {"Authorization": "Bearer {env.TOKEN}", "X-Chat": "{route.chat}"}}));
        assert_eq!(t.request.secrets, ["BASE", "TOKEN"]);
        let bindings: Bindings = [
            ("env.BASE".to_string(), json!("https://api.example.com")),
            ("env.TOKEN".to_string(), json!("s3cr=t/+")),
            ("route.chat".to_string(), json!("c1")),
        ]
        .into();
        let call = t.prepare(&args(json!({"city": "New York/NY", "days": 3})), &bindings).unwrap();
        assert_eq!(call.method, "POST");
        assert_eq!(call.url, "https://api.example.com/weather/New%20York%2FNY?days=3");
        assert_eq!(
            call.headers,
            [
                ("Authorization".to_string(), "Bearer s3cr=t/+".to_string()),
                ("X-Chat".to_string(), "c1".to_string()),
                ("Content-Type".to_string(), "application/json".to_string())
            ]
        );
        assert_eq!(call.body.as_deref(), Some(r#"{"city":"New York/NY","days":3}"#));
        assert_eq!(call.timeout_ms, 30_000);
    }

    #[test]
    fn get_has_no_body_and_json_templates_keep_types() {
        let t = tool(json!({"method": "get", "url": "https://x.test/a{?city}"}));
        let call = t.prepare(&args(json!({"city": "Oslo"})), &Bindings::new()).unwrap();
        assert_eq!((call.method.as_str(), call.body, call.headers.len()), ("GET", None, 0));
        let t = tool(json!({"url": "https://x.test/", "body": {"q": "{city}", "n": "{days}", "label": "in {city}", "opt": "{note}", "fixed": [1, "{days}"]}}));
        let call = t.prepare(&args(json!({"city": "Oslo", "days": 2})), &Bindings::new()).unwrap();
        assert_eq!(call.body.as_deref(), Some(r#"{"q":"Oslo","n":2,"label":"in Oslo","fixed":[1,2]}"#));
    }

    #[test]
    fn missing_secrets_and_header_injection_are_refused() {
        let t = tool(json!({"url": "https://x.test/", "headers": {"X-Note": "{note}", "X-K": "{env.K}"}}));
        let e = t.prepare(&args(json!({})), &Bindings::new()).unwrap_err();
        assert_eq!(e.code(), -32603);
        let b: Bindings = [("env.K".to_string(), json!("k"))].into();
        let e = t.prepare(&args(json!({"note": "a\r\nX-Evil: 1"})), &b).unwrap_err();
        assert_eq!(e.code(), -32602);
    }

    #[test]
    fn a_secret_base_url_must_be_http() {
        let t = tool(json!({"url": "{+env.BASE}/x"}));
        let b: Bindings = [("env.BASE".to_string(), json!("file:///etc"))].into();
        assert_eq!(t.prepare(&Map::new(), &b).unwrap_err().code(), -32603);
    }
}
