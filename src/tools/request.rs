//! HTTP request templates: how arguments, route parameters and secrets become one upstream request.

use serde_json::{Map, Value};

use super::template::{Context, Template};
use crate::config::model::HttpConfig;
use crate::config::ConfigError;
use crate::error::Error;

const METHODS: [&str; 6] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"];
const MAX_TIMEOUT_MS: u64 = 300_000;

/// Template variables besides the arguments: `env.NAME` secrets and `route.NAME` parameters,
/// keyed by their full name.
pub type Bindings = std::collections::HashMap<String, Value>;

/// A compiled `http` section.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
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
pub enum JsonTemplate {
    Text(Template),
    Array(Vec<JsonTemplate>),
    Object(Vec<(String, JsonTemplate)>),
    Literal(Value),
}

/// The one HTTP request a call makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCall {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    pub timeout_ms: u64,
}

impl HttpCall {
    /// The follow-up request that carries a client's answer back to the upstream: a JSON POST
    /// to the same URL with the same headers.
    pub fn follow_up(&self, body: String) -> HttpCall {
        let mut headers: Vec<(String, String)> = self.headers.iter().filter(|(n, _)| !n.eq_ignore_ascii_case("content-type")).cloned().collect();
        headers.push(("Content-Type".into(), "application/json".into()));
        HttpCall { method: "POST".into(), url: self.url.clone(), headers, body: Some(body), timeout_ms: self.timeout_ms }
    }
}

/// Which names a template may use, and where a fault is reported.
pub struct Scope<'a> {
    /// `servers[0].tools[1]`: the field names are appended.
    pub path: &'a str,
    pub arguments: &'a [String],
    pub route_params: &'a [String],
    /// Whether `{meta.auth.NAME}` may be used (the tool opted in).
    pub meta_auth: bool,
}

impl Scope<'_> {
    pub fn error(&self, field: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::at(format!("{}.{field}", self.path), message)
    }

    /// Checks a template's variables and records the secrets it uses.
    pub fn check(&self, template: &Template, field: &str, secrets: &mut Vec<String>) -> Result<(), ConfigError> {
        for var in template.variables() {
            if let Some(name) = var.strip_prefix("env.") {
                if name.contains('.') || name.starts_with(|c: char| c.is_ascii_digit()) {
                    return Err(self.error(field, format!("invalid secret name {var:?} in template")));
                }
                if !secrets.iter().any(|s| s == name) {
                    secrets.push(name.to_string());
                }
            } else if var.starts_with("meta.auth.") {
                if !self.meta_auth {
                    return Err(self.error(field, format!("{var:?} needs \"forwardMetaAuth\": true on the tool")));
                }
            } else if let Some(name) = var.strip_prefix("route.") {
                if !self.route_params.iter().any(|p| p == name) {
                    return Err(self.error(field, format!("unknown route parameter {name:?} in template")));
                }
            } else if !self.arguments.iter().any(|a| a == var) {
                return Err(self.error(field, format!("unknown argument {var:?} in template")));
            }
        }
        Ok(())
    }

    /// Compiles a JSON value whose strings are text templates.
    pub fn json(&self, value: &Value, field: &str, secrets: &mut Vec<String>) -> Result<JsonTemplate, ConfigError> {
        Ok(match value {
            Value::String(s) => {
                let t = Template::parse(s, Context::Text).map_err(|e| self.error(field, e))?;
                self.check(&t, field, secrets)?;
                JsonTemplate::Text(t)
            }
            Value::Array(items) => JsonTemplate::Array(
                items.iter().enumerate().map(|(i, v)| self.json(v, &format!("{field}[{i}]"), secrets)).collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => JsonTemplate::Object(
                map.iter().map(|(k, v)| Ok((k.clone(), self.json(v, &format!("{field}.{k}"), secrets)?))).collect::<Result<_, ConfigError>>()?,
            ),
            other => JsonTemplate::Literal(other.clone()),
        })
    }
}

impl RequestTemplate {
    /// Compiles an `http` section; `field` is its name in the configuration (`http`).
    pub fn compile(http: &HttpConfig, scope: &Scope<'_>, field: &str) -> Result<RequestTemplate, ConfigError> {
        let at = |sub: &str, msg: String| scope.error(&format!("{field}.{sub}"), msg);
        let mut secrets = Vec::new();
        let method = http.method.to_ascii_uppercase();
        if !METHODS.contains(&method.as_str()) {
            return Err(at("method", format!("{:?} is not one of {}", http.method, METHODS.join(", "))));
        }
        let url = Template::parse(&http.url, Context::Url).map_err(|e| at("url", e))?;
        scope.check(&url, &format!("{field}.url"), &mut secrets)?;
        check_url_shape(&http.url, &url).map_err(|e| at("url", e))?;

        let mut headers = Vec::new();
        for (name, value) in &http.headers {
            let sub = format!("headers.{name}");
            let token = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !token {
                return Err(at(&sub, "is not a valid header name".into()));
            }
            let template = Template::parse(value, Context::Text).map_err(|e| at(&sub, e))?;
            scope.check(&template, &format!("{field}.{sub}"), &mut secrets)?;
            headers.push((name.clone(), template));
        }

        let body = match &http.body {
            None | Some(Value::Null) if matches!(method.as_str(), "GET" | "HEAD" | "DELETE") => BodyPlan::None,
            None | Some(Value::Null) => BodyPlan::Arguments,
            Some(value) => BodyPlan::Json(scope.json(value, &format!("{field}.body"), &mut secrets)?),
        };
        if matches!(method.as_str(), "GET" | "HEAD") && matches!(body, BodyPlan::Json(_)) {
            return Err(at("body", format!("a {method} request has no body")));
        }
        if http.timeout_ms == 0 || http.timeout_ms > MAX_TIMEOUT_MS {
            return Err(at("timeoutMs", format!("must be 1 to {MAX_TIMEOUT_MS}")));
        }
        Ok(RequestTemplate { method, url, headers, body, timeout_ms: http.timeout_ms, secrets })
    }

    /// Renders the request for one call. Arguments must already be validated.
    pub fn render(&self, owner: &str, args: &Map<String, Value>, bindings: &Bindings) -> Result<HttpCall, Error> {
        let lookup = |name: &str| {
            if name.starts_with("env.") || name.starts_with("route.") || name.starts_with("meta.") {
                bindings.get(name)
            } else {
                args.get(name)
            }
        };
        for secret in &self.secrets {
            if !bindings.contains_key(&format!("env.{secret}")) {
                return Err(Error::Internal(format!("{owner} needs the secret {secret}, which is not set")));
            }
        }
        let url = self.url.expand(Context::Url, lookup);
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(Error::Internal(format!("{owner} has a URL that is not http(s) once expanded")));
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
    let Some(first_arg) = url.variables().find(|v| !v.starts_with("env.") && !v.starts_with("route.") && !v.starts_with("meta.")) else {
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
    // Only literal text closes the authority: a secret's value is not known here.
    let mut depth = 0;
    let closed = after_scheme.chars().any(|c| {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            '/' | '?' | '#' if depth == 0 => return true,
            _ => {}
        }
        false
    });
    if closed {
        Ok(())
    } else {
        Err(format!("argument {first_arg:?} appears before the host is complete; arguments may only fill the path, query or fragment"))
    }
}

/// Renders a JSON template. A string that is exactly `{var}` takes the value itself, so numbers
/// stay numbers; an object member whose sole variable is undefined is left out.
pub fn render_json<'v>(t: &JsonTemplate, lookup: &impl Fn(&str) -> Option<&'v Value>) -> Option<Value> {
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
