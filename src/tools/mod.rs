//! Tools as fetch calls: a configured tool compiles to templates, and a call becomes one HTTP
//! request (`HttpCall`) whose reply `reply` maps into an MCP result.

pub mod reply;
pub mod schema;
pub mod template;

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::config::model::ToolConfig;
use crate::config::ConfigError;
use crate::error::Error;
use template::{Context, Template};

const METHODS: [&str; 6] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"];
const MAX_TIMEOUT_MS: u64 = 300_000;

#[derive(Debug, Clone)]
pub struct Tool {
    pub name: String,
    /// The tool's entry in `tools/list`, built once.
    pub listing: Value,
    pub input_schema: Value,
    pub method: String,
    url: Template,
    headers: Vec<(String, Template)>,
    body: BodyPlan,
    pub timeout_ms: u64,
    /// `env.NAME` secrets the templates use, without the prefix; the edge reads only these.
    pub secrets: Vec<String>,
}

#[derive(Debug, Clone)]
enum BodyPlan {
    None,
    /// The arguments object as JSON: what an n8n webhook wants.
    Arguments,
    Json(JsonTemplate),
}

/// A JSON value whose strings are text templates.
#[derive(Debug, Clone)]
enum JsonTemplate {
    Text(Template),
    Array(Vec<JsonTemplate>),
    Object(Vec<(String, JsonTemplate)>),
    Literal(Value),
}

/// The one HTTP request a tool call makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCall {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    pub timeout_ms: u64,
}

/// Template variables besides the arguments: `env.NAME` secrets and `route.NAME` parameters,
/// keyed by their full name.
pub type Bindings = HashMap<String, Value>;

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
        let mut secrets = Vec::new();
        let mut check_vars = |template: &Template, field: &str| -> Result<(), ConfigError> {
            for var in template.variables() {
                if let Some(name) = var.strip_prefix("env.") {
                    if name.contains('.') || name.starts_with(|c: char| c.is_ascii_digit()) {
                        return Err(at(field, format!("invalid secret name {var:?} in template")));
                    }
                    if !secrets.iter().any(|s| s == name) {
                        secrets.push(name.to_string());
                    }
                } else if let Some(name) = var.strip_prefix("route.") {
                    if !route_params.iter().any(|p| p == name) {
                        return Err(at(field, format!("unknown route parameter {name:?} in template")));
                    }
                } else if !arguments.iter().any(|a| a == var) {
                    return Err(at(field, format!("unknown argument {var:?} in template")));
                }
            }
            Ok(())
        };

        let method = t.http.method.to_ascii_uppercase();
        if !METHODS.contains(&method.as_str()) {
            return Err(at("http.method", format!("{:?} is not one of {}", t.http.method, METHODS.join(", "))));
        }
        let url = Template::parse(&t.http.url, Context::Url).map_err(|e| at("http.url", e))?;
        check_vars(&url, "http.url")?;
        check_url_shape(&t.http.url, &url).map_err(|e| at("http.url", e))?;

        let mut headers = Vec::new();
        for (name, value) in &t.http.headers {
            let field = format!("http.headers.{name}");
            let token = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !token {
                return Err(at(&field, "is not a valid header name".into()));
            }
            let template = Template::parse(value, Context::Text).map_err(|e| at(&field, e))?;
            check_vars(&template, &field)?;
            headers.push((name.clone(), template));
        }

        let body = match t.http.body {
            None | Some(Value::Null) if matches!(method.as_str(), "GET" | "HEAD" | "DELETE") => BodyPlan::None,
            None | Some(Value::Null) => BodyPlan::Arguments,
            Some(value) => BodyPlan::Json(compile_json(&value, "http.body", &mut |template, field| check_vars(template, field), &at)?),
        };
        if matches!(method.as_str(), "GET" | "HEAD") && matches!(body, BodyPlan::Json(_)) {
            return Err(at("http.body", format!("a {method} request has no body")));
        }
        if t.http.timeout_ms == 0 || t.http.timeout_ms > MAX_TIMEOUT_MS {
            return Err(at("http.timeoutMs", format!("must be 1 to {MAX_TIMEOUT_MS}")));
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
        if let Some(annotations) = &t.annotations {
            listing.insert("annotations".into(), annotations.clone());
        }
        Ok(Tool {
            name: t.name,
            listing: Value::Object(listing),
            input_schema: t.input_schema,
            method,
            url,
            headers,
            body,
            timeout_ms: t.http.timeout_ms,
            secrets,
        })
    }

    /// Renders the HTTP request for one call. Arguments must already be validated.
    pub fn prepare(&self, args: &Map<String, Value>, bindings: &Bindings) -> Result<HttpCall, Error> {
        let lookup = |name: &str| {
            if name.starts_with("env.") || name.starts_with("route.") {
                bindings.get(name)
            } else {
                args.get(name)
            }
        };
        for secret in &self.secrets {
            if !bindings.contains_key(&format!("env.{secret}")) {
                return Err(Error::Internal(format!("tool {:?} needs the secret {secret}, which is not set", self.name)));
            }
        }
        let url = self.url.expand(Context::Url, lookup);
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(Error::Internal(format!("tool {:?} has a URL that is not http(s) once expanded", self.name)));
        }
        let mut headers = Vec::with_capacity(self.headers.len() + 1);
        for (name, template) in &self.headers {
            let value = template.expand(Context::Text, lookup);
            if value.contains(['\r', '\n', '\0']) {
                return Err(Error::InvalidParams(format!("a value for header {name} contains a line break")));
            }
            headers.push((name.clone(), value));
        }
        let body = match &self.body {
            BodyPlan::None => None,
            BodyPlan::Arguments => Some(Value::Object(args.clone()).to_string()),
            BodyPlan::Json(t) => Some(render_json(t, &lookup).unwrap_or(Value::Null).to_string()),
        };
        if body.is_some() && !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type")) {
            headers.push(("Content-Type".into(), "application/json".into()));
        }
        Ok(HttpCall { method: self.method.clone(), url, headers, body, timeout_ms: self.timeout_ms })
    }
}

/// Arguments may fill the path, query or fragment, never the scheme, host or port: text before
/// the first argument must already have closed the authority with `/`, `?` or `#`, unless the
/// argument's own operator starts with one of them.
fn check_url_shape(source: &str, url: &Template) -> Result<(), String> {
    let starts_ok = source.starts_with("https://") || source.starts_with("http://") || source.starts_with("{+env.");
    if !starts_ok {
        return Err("must start with http://, https:// or a {+env.NAME} base URL".into());
    }
    let Some(first_arg) = url.variables().find(|v| !v.starts_with("env.") && !v.starts_with("route.")) else {
        return Ok(());
    };
    // Find the text of the template before the expression that holds `first_arg`.
    let mut offset = 0;
    let mut prefix_end = source.len();
    while let Some(open) = source.get(offset..).and_then(|s| s.find('{')).map(|o| o + offset) {
        let close = source.get(open..).and_then(|s| s.find('}')).map_or(source.len(), |c| c + open);
        let expr = source.get(open + 1..close).unwrap_or("");
        let names = expr.trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
        if names.split(',').any(|n| n.trim_end_matches('*').split(':').next() == Some(first_arg)) {
            prefix_end = open;
            if expr.starts_with(['/', '?', '&', '#']) {
                return Ok(());
            }
            break;
        }
        offset = close;
    }
    let prefix = source.get(..prefix_end).unwrap_or("");
    let after_scheme = prefix.split_once("://").map_or(prefix, |(_, rest)| rest);
    let literal_text: String = {
        // Only literal text closes the authority: a secret's value is not known here.
        let mut out = String::new();
        let mut depth = 0;
        for c in after_scheme.chars() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                c if depth == 0 => out.push(c),
                _ => {}
            }
        }
        out
    };
    if literal_text.contains(['/', '?', '#']) {
        Ok(())
    } else {
        Err(format!("argument {first_arg:?} appears before the host is complete; arguments may only fill the path, query or fragment"))
    }
}

type VarCheck<'a> = dyn FnMut(&Template, &str) -> Result<(), ConfigError> + 'a;

fn compile_json(
    value: &Value,
    field: &str,
    check: &mut VarCheck<'_>,
    at: &dyn Fn(&str, String) -> ConfigError,
) -> Result<JsonTemplate, ConfigError> {
    Ok(match value {
        Value::String(s) => {
            let t = Template::parse(s, Context::Text).map_err(|e| at(field, e))?;
            check(&t, field)?;
            JsonTemplate::Text(t)
        }
        Value::Array(items) => JsonTemplate::Array(
            items.iter().enumerate().map(|(i, v)| compile_json(v, &format!("{field}[{i}]"), check, at)).collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => JsonTemplate::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), compile_json(v, &format!("{field}.{k}"), check, at)?)))
                .collect::<Result<_, ConfigError>>()?,
        ),
        other => JsonTemplate::Literal(other.clone()),
    })
}

/// Renders a JSON template. A string that is exactly `{var}` takes the value itself, so numbers
/// stay numbers; an object member whose sole variable is undefined is left out.
fn render_json<'v>(t: &JsonTemplate, lookup: &impl Fn(&str) -> Option<&'v Value>) -> Option<Value> {
    match t {
        JsonTemplate::Text(template) => match template.sole_variable() {
            Some(var) => lookup(var).cloned(),
            None => Some(Value::String(template.expand(Context::Text, lookup))),
        },
        JsonTemplate::Array(items) => Some(Value::Array(items.iter().map(|i| render_json(i, lookup).unwrap_or(Value::Null)).collect())),
        JsonTemplate::Object(members) => {
            Some(Value::Object(members.iter().filter_map(|(k, v)| Some((k.clone(), render_json(v, lookup)?))).collect()))
        }
        JsonTemplate::Literal(v) => Some(v.clone()),
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
        assert_eq!(t.secrets, ["BASE", "TOKEN"]);
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
