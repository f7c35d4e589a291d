//! `http` sections compiled into request templates, and the scope that says which names a
//! template may use: arguments, route parameters, secrets, `_meta` values, the caller's identity;
//! the checks every section that names a secret, a host list or a request shares.

use serde_json::Value;

use super::model::{BodyTypeConfig, HttpConfig, QueryParamConfig};
use super::ConfigError;
use crate::auth::TEMPLATE_FIELDS;
use crate::upstream::params::{is_token, QueryParam, Style};
use crate::upstream::request::{BodyPlan, Encoding, JsonTemplate, RequestTemplate};
use crate::upstream::retry::RedirectPolicy;
use crate::upstream::template::{Context, Template};

const METHODS: [&str; 6] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"];
pub const MAX_TIMEOUT_MS: u64 = 300_000;

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
    /// Whether `{principal.NAME}` (the caller's identity) may be used: tools only. Resources
    /// and prompts are the same for every caller, and auth templates run before there is one.
    pub principal: bool,
    /// Whether `{principal.upstreamToken}` may be used (the tool opted in).
    pub upstream_token: bool,
    /// `Some` when `{connection.access_token}` may be used (a tool's or an upstream's
    /// `auth.connection`); set once a template names it.
    pub connection: Option<&'a std::cell::Cell<bool>>,
    /// Set once a template names `principal.*` or `meta.*`: a tool's result cache needs to
    /// know whether its results differ by caller or by request (`cache.results`).
    pub reads: Option<&'a std::cell::Cell<Reads>>,
}

/// What a tool's templates read besides its arguments: the caller's identity, the request's
/// `_meta`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reads {
    pub principal: bool,
    pub meta: bool,
}

impl Scope<'_> {
    pub fn error(&self, field: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::at(format!("{}.{field}", self.path), message)
    }

    /// Checks a template's variables and records the secrets it uses.
    pub fn check(&self, template: &Template, field: &str, secrets: &mut Vec<String>) -> Result<(), ConfigError> {
        for var in template.variables() {
            if let Some(reads) = self.reads {
                let seen = reads.get();
                reads.set(Reads { principal: seen.principal || var.starts_with("principal."), meta: seen.meta || var.starts_with("meta.") });
            }
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
            } else if let Some(name) = var.strip_prefix("principal.") {
                if !self.principal {
                    return Err(self.error(field, format!("{var:?}: only tool templates may use the caller's identity")));
                }
                if !TEMPLATE_FIELDS.contains(&name) {
                    return Err(self.error(field, format!("unknown principal field {name:?} in template: one of {}", TEMPLATE_FIELDS.join(", "))));
                }
                if name == "upstreamToken" && !self.upstream_token {
                    return Err(self.error(field, format!("{var:?} needs \"forwardUpstreamToken\": true on the tool")));
                }
            } else if var.starts_with("connection.") {
                let used = self.connection.ok_or_else(|| self.error(field, format!("{var:?} needs \"auth\": {{\"connection\": …}}")))?;
                if var != crate::connections::ACCESS_TOKEN_VARIABLE {
                    return Err(self.error(field, format!("unknown connection field {var:?} in template: only connection.access_token")));
                }
                used.set(true);
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

/// Compiles an `http` section; `field` is its name in the configuration (`http`).
pub fn request(http: &HttpConfig, scope: &Scope<'_>, field: &str) -> Result<RequestTemplate, ConfigError> {
    let at = |sub: &str, msg: String| scope.error(&format!("{field}.{sub}"), msg);
    let mut secrets = Vec::new();
    let method = http.method.to_ascii_uppercase();
    if !METHODS.contains(&method.as_str()) {
        return Err(at("method", format!("{:?} is not one of {}", http.method, METHODS.join(", "))));
    }
    let url = Template::parse(&http.url, Context::Url).map_err(|e| at("url", e))?;
    scope.check(&url, &format!("{field}.url"), &mut secrets)?;
    check_url_shape(&http.url, &url).map_err(|e| at("url", e))?;

    let headers = named_texts(http.headers.iter(), "headers", "is not a valid header name", scope, field, &mut secrets)?;
    let query = http.query.0.iter().map(|(name, param)| query_param(name, param, scope, field, &mut secrets)).collect::<Result<_, _>>()?;
    let cookies = named_texts(http.cookies.0.iter().map(|(k, v)| (k, v)), "cookies", "is not a valid cookie name (an RFC 6265 token)", scope, field, &mut secrets)?;
    if let Some(name) = http.headers.keys().find(|h| h.eq_ignore_ascii_case("cookie")).filter(|_| !cookies.is_empty()) {
        // Two sources for one header: which would win is not obvious, so neither does.
        return Err(at(&format!("headers.{name}"), "cannot be used with http.cookies, which makes the Cookie header".into()));
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
    let mut headers = headers;
    if scope.connection.is_some_and(|used| !used.get()) {
        // A connection's token goes where a template puts it, else in the one usual place.
        if let Some((name, _)) = headers.iter().find(|(h, _)| h.eq_ignore_ascii_case("authorization")) {
            return Err(at(&format!("headers.{name}"), "the connection's token goes in Authorization: name {connection.access_token} in a template to put it elsewhere".into()));
        }
        let bearer = Template::parse(&format!("Bearer {{{}}}", crate::connections::ACCESS_TOKEN_VARIABLE), Context::Text).map_err(|e| at("headers", e))?;
        headers.push(("Authorization".into(), bearer));
    }
    Ok(RequestTemplate { method, url, url_source: http.url.clone(), headers, query, cookies, body, timeout_ms: http.timeout_ms, secrets, redirects, retry: None })
}

/// Compiles one `http.query` member: its template, style and explode.
fn query_param(name: &str, param: &QueryParamConfig, scope: &Scope<'_>, field: &str, secrets: &mut Vec<String>) -> Result<QueryParam, ConfigError> {
    let sub = format!("{field}.query.{name}");
    if name.is_empty() {
        return Err(scope.error(&format!("{field}.query"), "a query parameter name must not be empty"));
    }
    // The shorthand's template is the member itself; the object's is its `value`.
    let (source, value_field, style, explode, allow_reserved) = match param {
        QueryParamConfig::Template(source) => (source, sub.clone(), None, None, false),
        QueryParamConfig::Styled(s) => (&s.value, format!("{sub}.value"), s.style.as_deref(), s.explode, s.allow_reserved),
    };
    let style = match style {
        None => Style::Form,
        Some(s) => Style::parse(s).ok_or_else(|| scope.error(&format!("{sub}.style"), format!("{s:?} is not one of {}", Style::NAMES)))?,
    };
    // OpenAPI's default is false but for form; deepObject is only defined exploded, so an
    // omitted explode means the one that works, and only an explicit false is refused.
    let explode = explode.unwrap_or(matches!(style, Style::Form | Style::DeepObject));
    if style == Style::DeepObject && !explode {
        return Err(scope.error(&format!("{sub}.explode"), "deepObject needs explode: true"));
    }
    let value = Template::parse(source, Context::Text).map_err(|e| scope.error(&value_field, e))?;
    scope.check(&value, &value_field, secrets)?;
    if style == Style::DeepObject && value.sole_variable().is_none() {
        // Only a value kept as JSON can be an object; text never can.
        return Err(scope.error(&value_field, "a deepObject value must be exactly one variable, such as {filter}"));
    }
    Ok(QueryParam { name: name.to_string(), value, style, explode, allow_reserved })
}

/// Headers and cookies alike: each a token name (else `bad_name`) and a text template.
fn named_texts<'a>(
    entries: impl Iterator<Item = (&'a String, &'a String)>,
    part: &str,
    bad_name: &str,
    scope: &Scope<'_>,
    field: &str,
    secrets: &mut Vec<String>,
) -> Result<Vec<(String, Template)>, ConfigError> {
    entries
        .map(|(name, value)| {
            let sub = format!("{field}.{part}.{name}");
            if !is_token(name) {
                return Err(scope.error(&sub, bad_name));
            }
            let template = Template::parse(value, Context::Text).map_err(|e| scope.error(&sub, e))?;
            scope.check(&template, &sub, secrets)?;
            Ok((name.clone(), template))
        })
        .collect()
}

/// Values a client controls (arguments, `_meta` values, route parameters, and the caller's
/// identity, which a client may choose too, as a JWT's subject or a registered name) may fill
/// the path, query or fragment, never the scheme, host or port: text before the first of them
/// must already have closed the authority with `/`, `?` or `#`, unless the expression's own
/// operator starts with one of them. Only the deployment's `{env.NAME}` may choose where a
/// request goes: a secret in a header must never follow a host the caller names.
fn check_url_shape(source: &str, url: &Template) -> Result<(), String> {
    let starts_ok = source.starts_with("https://") || source.starts_with("http://") || source.starts_with("{+env.");
    if !starts_ok {
        return Err("must start with http://, https:// or a {+env.NAME} base URL".into());
    }
    let Some(first_arg) = url.variables().find(|v| !v.starts_with("env.")) else {
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
        Err(format!("{{{first_arg}}} appears before the host is complete: it is a value the client controls, which may fill the path, query or fragment, never the scheme, host or port (only {{env.NAME}} may)"))
    }
}

/// Whether `name` can name a Worker secret: letters, digits and `_`, not starting with a digit.
pub(super) fn is_secret_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// A list of hosts (`privateUpstreams`, `oauth.privateHosts`): each a host as the URL parser
/// reads one (no scheme, port or path), or `*.domain`; the guard compares them parsed.
pub(super) fn hosts(list: &[String], at: &str) -> Result<(), ConfigError> {
    for (i, host) in list.iter().enumerate() {
        crate::weburl::HostPattern::parse(host).map_err(|why| ConfigError::at(format!("{at}[{i}]"), why))?;
    }
    Ok(())
}

/// The SSRF guard on a URL whose host the file writes out: a private host not in
/// `privateUpstreams`, or a host the URL parser refuses, is a fault when the file loads.
pub(super) fn guard(request: &crate::upstream::RequestTemplate, private: &[String], at: &str) -> Result<(), ConfigError> {
    let Some(origin) = request.literal_origin() else { return Ok(()) };
    crate::upstream::address::check(&format!("{origin}/"), private).map(|_| ()).map_err(|why| ConfigError::at(at, why))
}
