//! HTTP request templates: how arguments, route parameters and secrets become one upstream request.

use serde_json::{Map, Value};

use crate::error::Error;
use crate::upstream::params::{self, QueryParam};
use crate::upstream::retry::{RedirectPolicy, RetryPolicy};
use crate::upstream::template::{Context, Template};

/// Template variables besides the arguments, keyed by their full name: `env.NAME` secrets and
/// vars, `route.NAME` parameters, `meta.NAME` values of the request's `params._meta`, and
/// `principal.NAME` fields of the caller.
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
    pub(crate) url: Template,
    /// The URL template as written: its literal host is checked when the configuration loads.
    pub url_source: String,
    pub(crate) headers: Vec<(String, Template)>,
    /// Appended to the expanded URL, in the configuration's order.
    pub(crate) query: Vec<QueryParam>,
    /// Cookie name → template, sent as one `Cookie` header.
    pub(crate) cookies: Vec<(String, Template)>,
    pub(crate) body: BodyPlan,
    pub timeout_ms: u64,
    /// `env.NAME` secrets the templates use, without the prefix; the edge reads only these.
    pub secrets: Vec<String>,
    pub redirects: RedirectPolicy,
    /// Set for idempotent tools that ask for retries.
    pub retry: Option<RetryPolicy>,
}

#[derive(Debug, Clone)]
pub(crate) enum BodyPlan {
    None,
    /// The arguments object: as JSON, what an n8n webhook wants.
    Arguments(Encoding),
    Template(JsonTemplate, Encoding),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
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
    /// The span whose child this request's client span is, when the call is traced: its
    /// context goes to the upstream as `traceparent`, and travels with a queued call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::Context>,
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

impl RequestTemplate {
    /// `scheme://authority` when the configuration writes both out (not from a secret or a
    /// variable), for the guard to parse and check when the file loads. Cut where RFC 3986
    /// ends an authority (`/`, `?`, `#`), so a `\` that a WHATWG parser would end it at stays
    /// inside, for the parser's refusal rules to see.
    pub fn literal_origin(&self) -> Option<&str> {
        let (scheme, rest) = self.url_source.split_once("://")?;
        let authority = rest.split(['/', '?', '#']).next()?;
        if scheme.contains('{') || authority.contains('{') {
            return None;
        }
        self.url_source.get(..scheme.len() + 3 + authority.len())
    }

    /// Renders the request for one call. Arguments must already be validated.
    pub fn render(&self, owner: &str, args: &Map<String, Value>, bindings: &Bindings) -> Result<HttpCall, Error> {
        let lookup = |name: &str| if params::is_argument(name) { args.get(name) } else { bindings.get(name) };
        for secret in &self.secrets {
            if !bindings.contains_key(&format!("env.{secret}")) {
                return Err(Error::Internal(format!("{owner} needs the secret {secret}, which is not set")));
            }
        }
        let url = self.url.expand(Context::Url, lookup);
        // Schemes are case-insensitive (`HTTPS://` is https); the SSRF guard parses the rest.
        let scheme_is = |prefix: &str| url.get(..prefix.len()).is_some_and(|p| p.eq_ignore_ascii_case(prefix));
        if !(scheme_is("https://") || scheme_is("http://")) {
            return Err(Error::Internal(format!("{owner} has a URL that is not http(s) once expanded")));
        }
        let mut query = String::new();
        for param in &self.query {
            if let Some(value) = params::value(&param.value, &lookup) {
                param.serialize(&value, &mut query).map_err(Error::InvalidParams)?;
            }
        }
        let url = params::append_query(url, &query);
        let mut headers = Vec::with_capacity(self.headers.len() + 2);
        for (name, template) in &self.headers {
            // An optional header: the caller gave none of the arguments it is made of.
            if params::unset(template, &lookup) {
                continue;
            }
            let value = template.expand(Context::Text, lookup);
            if value.contains(|c: char| c.is_ascii_control() && c != '\t') {
                return Err(Error::InvalidParams(format!("a value for header {name} contains a control character or line break")));
            }
            headers.push((name.clone(), header_value(&value)));
        }
        let mut cookie = String::new();
        for (name, template) in &self.cookies {
            if let Some(value) = params::value(template, &lookup) {
                params::cookie(&mut cookie, name, &value);
            }
        }
        if !cookie.is_empty() {
            headers.push(("Cookie".into(), cookie));
        }
        let (body, encoding) = match &self.body {
            BodyPlan::None => (None, None),
            BodyPlan::Arguments(e) => (Some(e.encode_object(args)), Some(*e)),
            BodyPlan::Template(t, e) => (Some(e.encode(&render_json(t, &lookup).unwrap_or(Value::Null))), Some(*e)),
        };
        if let Some(encoding) = encoding.filter(|_| !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type"))) {
            headers.push(("Content-Type".into(), encoding.content_type().into()));
        }
        Ok(HttpCall { method: self.method.clone(), url, headers, body, timeout_ms: self.timeout_ms, redirects: self.redirects.clone(), retry: self.retry, private_upstreams: Vec::new(), trace: None })
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
