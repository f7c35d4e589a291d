//! HTTP request templates: how arguments, route parameters and secrets become one upstream request.

use serde_json::{Map, Value};

use super::retry::{RedirectPolicy, RetryPolicy};
use super::template::{Context, Template};
use crate::config::model::{BodyTypeConfig, HttpConfig};
use crate::config::ConfigError;
use crate::error::Error;

const METHODS: [&str; 6] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"];
const MAX_TIMEOUT_MS: u64 = 300_000;

/// Template variables besides the arguments, keyed by their full name: `env.NAME` secrets and
/// vars, `route.NAME` parameters, and `meta.NAME` values of the request's `params._meta`.
pub type Bindings = std::collections::HashMap<String, Value>;

/// The bindings of a request: the named secrets (as `env.NAME`) that `secret` can read, and the
/// route parameters (as `route.NAME`).
pub fn bindings(secrets: &[String], secret: &dyn Fn(&str) -> Option<String>, route: &[(String, String)]) -> Bindings {
    let mut bindings = Bindings::new();
    for name in secrets {
        if let Some(value) = secret(name) {
            bindings.insert(format!("env.{name}"), Value::String(value));
        }
    }
    for (name, value) in route {
        bindings.insert(format!("route.{name}"), Value::String(value.clone()));
    }
    bindings
}

/// A compiled `http` section.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    pub method: String,
    url: Template,
    /// The URL template as written: its literal host is checked when the configuration loads.
    pub url_source: String,
    headers: Vec<(String, Template)>,
    body: BodyPlan,
    pub timeout_ms: u64,
    /// `env.NAME` secrets the templates use, without the prefix; the edge reads only these.
    pub secrets: Vec<String>,
    pub redirects: RedirectPolicy,
    /// Set for idempotent tools that ask for retries.
    pub retry: Option<RetryPolicy>,
}

#[derive(Debug, Clone)]
enum BodyPlan {
    None,
    /// The arguments object: as JSON, what an n8n webhook wants.
    Arguments(Encoding),
    Template(JsonTemplate, Encoding),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Json,
    Form,
}

impl Encoding {
    fn content_type(self) -> &'static str {
        match self {
            Encoding::Json => "application/json",
            Encoding::Form => "application/x-www-form-urlencoded",
        }
    }

    fn encode(self, value: &Value) -> String {
        match (self, value) {
            (_, Value::Object(members)) => self.encode_object(members),
            (Encoding::Json, other) => other.to_string(),
            // A form body is made of an object's members: anything else has none.
            (Encoding::Form, _) => String::new(),
        }
    }

    /// The call's arguments as they came, without first copying them into a `Value`.
    fn encode_object(self, members: &Map<String, Value>) -> String {
        match self {
            Encoding::Json => serde_json::to_string(members).unwrap_or_default(),
            Encoding::Form => form_encode(members),
        }
    }
}

/// A JSON value whose strings are text templates.
#[derive(Debug, Clone)]
pub enum JsonTemplate {
    Text(Template),
    Array(Vec<JsonTemplate>),
    Object(Vec<(String, JsonTemplate)>),
    Literal(Value),
}

/// The one HTTP request a call makes. Serializable: a queued call travels as a queue message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HttpCall {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// Bounds the whole call, retries and redirects included.
    pub timeout_ms: u64,
    pub redirects: RedirectPolicy,
    pub retry: Option<RetryPolicy>,
    /// Private hosts this call may reach anyway (the server's `privateUpstreams`).
    #[serde(default)]
    pub private_upstreams: Vec<String>,
}

impl HttpCall {
    /// The follow-up request that carries a client's answer back to the upstream: a JSON POST
    /// to the same URL with the same headers.
    pub fn follow_up(&self, body: String) -> HttpCall {
        let mut headers: Vec<(String, String)> = self.headers.iter().filter(|(n, _)| !n.eq_ignore_ascii_case("content-type")).cloned().collect();
        headers.push(("Content-Type".into(), "application/json".into()));
        // A follow-up carries a new answer: repeating it is not known to be safe.
        HttpCall { method: "POST".into(), url: self.url.clone(), headers, body: Some(body), retry: None, ..self.clone() }
    }
}

/// Which names a template may use, and where a fault is reported.
pub struct Scope<'a> {
    /// `servers[0].tools[1]`: the field names are appended.
    pub path: &'a str,
    pub arguments: &'a [String],
    pub route_params: &'a [String],
    /// Whether `{meta.NAME}` (values of the request's `params._meta`) may be used: tools only.
    pub meta: bool,
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
            } else if var.starts_with("meta.") {
                if !self.meta {
                    return Err(self.error(field, format!("{var:?}: only tool templates may use params._meta values")));
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
    /// The URL's host when the configuration writes it out (not from a secret or a variable).
    pub fn literal_host(&self) -> Option<String> {
        let rest = self.url_source.split_once("://")?.1;
        let authority = rest.split(['/', '?', '#']).next()?;
        if authority.contains('{') {
            return None;
        }
        super::address::host_of(&self.url_source)
    }

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

        let encoding = match http.body_type {
            BodyTypeConfig::Json => Encoding::Json,
            BodyTypeConfig::Form => Encoding::Form,
            BodyTypeConfig::None => Encoding::Json,
        };
        if encoding == Encoding::Form && !matches!(http.body, None | Some(Value::Null) | Some(Value::Object(_))) {
            return Err(at("body", "a form body must be an object of field templates".into()));
        }
        let body = match &http.body {
            _ if http.body_type == BodyTypeConfig::None => BodyPlan::None,
            None | Some(Value::Null) if matches!(method.as_str(), "GET" | "HEAD" | "DELETE") && http.body_type == BodyTypeConfig::Json => BodyPlan::None,
            None | Some(Value::Null) => BodyPlan::Arguments(encoding),
            Some(value) => BodyPlan::Template(scope.json(value, &format!("{field}.body"), &mut secrets)?, encoding),
        };
        if http.body_type == BodyTypeConfig::None && http.body.is_some() {
            return Err(at("body", "is set, but bodyType is \"none\"".into()));
        }
        if matches!(method.as_str(), "GET" | "HEAD") && !matches!(body, BodyPlan::None) {
            return Err(at("body", format!("a {method} request has no body")));
        }
        if http.timeout_ms == 0 || http.timeout_ms > MAX_TIMEOUT_MS {
            return Err(at("timeoutMs", format!("must be 1 to {MAX_TIMEOUT_MS}")));
        }
        if http.max_redirects > 20 {
            return Err(at("maxRedirects", "must be 0 to 20".into()));
        }
        if let Some((i, bad)) = http.redirect_hosts.iter().enumerate().find(|(_, h)| h.is_empty() || h.contains(['/', ':', '@', ' '])) {
            return Err(at(&format!("redirectHosts[{i}]"), format!("{bad:?} is not a host name")));
        }
        let redirects = RedirectPolicy { max: http.max_redirects, hosts: http.redirect_hosts.clone() };
        Ok(RequestTemplate { method, url, url_source: http.url.clone(), headers, body, timeout_ms: http.timeout_ms, secrets, redirects, retry: None })
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
            if value.contains(|c: char| c.is_ascii_control() && c != '\t') {
                return Err(Error::InvalidParams(format!("a value for header {name} contains a control character or line break")));
            }
            headers.push((name.clone(), header_value(&value)));
        }
        let (body, encoding) = match &self.body {
            BodyPlan::None => (None, None),
            BodyPlan::Arguments(e) => (Some(e.encode_object(args)), Some(*e)),
            BodyPlan::Template(t, e) => (Some(e.encode(&render_json(t, &lookup).unwrap_or(Value::Null))), Some(*e)),
        };
        if let Some(encoding) = encoding.filter(|_| !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type"))) {
            headers.push(("Content-Type".into(), encoding.content_type().into()));
        }
        Ok(HttpCall { method: self.method.clone(), url, headers, body, timeout_ms: self.timeout_ms, redirects: self.redirects.clone(), retry: self.retry, private_upstreams: Vec::new() })
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

/// A header value is bytes, not text: non-ASCII characters are sent percent-encoded as UTF-8
/// (as RFC 8187 values are), because a fetch refuses them outright.
fn header_value(value: &str) -> String {
    if value.is_ascii() {
        return value.to_string();
    }
    let mut out = String::with_capacity(value.len() * 2);
    for c in value.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// `application/x-www-form-urlencoded` (WHATWG URL): an object's members as `key=value` pairs;
/// arrays repeat their key, nested objects are sent as JSON text, and `null` is left out.
fn form_encode(members: &Map<String, Value>) -> String {
    fn push(out: &mut String, key: &str, value: &str) {
        if !out.is_empty() {
            out.push('&');
        }
        encode_component(out, key);
        out.push('=');
        encode_component(out, value);
    }
    fn scalar(v: &Value) -> Option<String> {
        match v {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }
    let mut out = String::new();
    for (key, v) in members {
        match v {
            Value::Array(items) => items.iter().filter_map(scalar).for_each(|item| push(&mut out, key, &item)),
            other => {
                if let Some(text) = scalar(other) {
                    push(&mut out, key, &text);
                }
            }
        }
    }
    out
}

fn encode_component(out: &mut String, text: &str) {
    for b in text.bytes() {
        match b {
            b' ' => out.push('+'),
            b'*' | b'-' | b'.' | b'_' => out.push(b as char),
            b if b.is_ascii_alphanumeric() => out.push(b as char),
            b => out.push_str(&format!("%{b:02X}")),
        }
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
