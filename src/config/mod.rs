//! The declarative configuration: parsed from the bundled file, validated with precise paths,
//! and compiled into the `Catalog` that requests are served from.

mod file;
mod locate;
pub mod model;

pub use file::ConfigError;

use serde_json::Value;

use crate::policy::{OriginPattern, DEFAULT_ORIGINS};
use crate::protocol::prompts::Prompt;
use crate::protocol::resources::{Resource, ResourceTemplate};
use crate::routes::RoutePattern;
use crate::tools::Tool;

/// Every configured server, ready to serve.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub servers: Vec<Server>,
    pub log: model::RequestLogging,
}

/// A result's 2026-07-28 cache hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    pub ttl_ms: u64,
    pub scope: model::CacheScope,
}

/// Lists change only with a deployment; five minutes keeps clients from polling and bounds how
/// long they miss a new one.
pub const DEFAULT_CACHE_TTL_MS: u64 = 300_000;

impl CacheHint {
    /// The configured hint over `base`: a field left out keeps the base's value.
    pub fn over(base: CacheHint, config: &model::CacheConfig) -> CacheHint {
        CacheHint { ttl_ms: config.ttl_ms.unwrap_or(base.ttl_ms), scope: config.scope.unwrap_or(base.scope) }
    }

    /// What two results merged into one may claim: the shorter life, the narrower scope.
    pub fn and(self, other: CacheHint) -> CacheHint {
        let scope = if self.scope == model::CacheScope::Private || other.scope == model::CacheScope::Private { model::CacheScope::Private } else { model::CacheScope::Public };
        CacheHint { ttl_ms: self.ttl_ms.min(other.ttl_ms), scope }
    }
}

#[derive(Debug, Clone)]
pub struct Server {
    pub name: String,
    pub version: String,
    pub title: Option<String>,
    pub instructions: Option<String>,
    pub route: RoutePattern,
    pub stream_route: RoutePattern,
    /// Where upstreams announce resource updates, and the secret that guards it.
    pub notify: Option<(RoutePattern, String)>,
    /// Stateless mode and its collection timeout.
    pub stateless: Option<u64>,
    /// Every path this server answers, and what each is.
    pub endpoints: Vec<(RoutePattern, Endpoint)>,
    pub origins: Vec<OriginPattern>,
    pub allowed_hosts: Vec<String>,
    /// Private hosts tools may reach (the SSRF guard's allowlist).
    pub private_upstreams: Vec<String>,
    /// Who may use the server; `None`: anyone past the Origin and Host checks.
    pub auth: Option<crate::auth::Auth>,
    pub idle_timeout_ms: u64,
    pub keepalive_ms: u64,
    pub retry_ms: u64,
    /// How long a lease on a session lets the Worker serve its plain calls (`0`: never).
    pub lease_ms: u64,
    pub max_body_bytes: u64,
    pub max_reply_bytes: u64,
    pub tools_page_size: Option<usize>,
    pub limits: Limits,
    /// The cache hint of lists, reads and `server/discover`.
    pub cache: CacheHint,
    pub tools: Vec<Tool>,
    pub resources: Vec<Resource>,
    pub resource_templates: Vec<ResourceTemplate>,
    pub prompts: Vec<Prompt>,
    /// The list results' entries, built once.
    pub tool_listings: Vec<Value>,
    pub resource_listings: Vec<Value>,
    pub template_listings: Vec<Value>,
    pub prompt_listings: Vec<Value>,
}

impl Server {
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// How the named tool's replies are mapped; the plain mapping if it is no longer configured.
    pub fn reply_plan(&self, tool: &str) -> crate::tools::reply::ReplyPlan {
        self.tool(tool).map_or_else(|| crate::tools::reply::ReplyPlan::map(self.max_reply_bytes), |t| t.reply.clone())
    }
}

/// Limits beyond body and reply size.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_json_depth: usize,
    pub max_header_bytes: usize,
    pub max_calls_in_flight: usize,
    pub max_sessions_per_principal: usize,
    /// The Rate Limiting binding, and its period for `Retry-After`.
    pub rate_limit: Option<(String, u64)>,
}

/// Which endpoint of a server a path named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Mcp,
    Stream,
    Notify,
    /// 2024-11-05: `GET` opens the session's event stream.
    LegacySse,
    /// 2024-11-05: `POST ?sessionId=` delivers a message, answered on the event stream.
    LegacyMessages,
}

impl Catalog {
    /// Finds the server and endpoint for a request path.
    pub fn route(&self, path: &str) -> Option<(usize, Endpoint, crate::routes::RouteParams)> {
        self.servers.iter().enumerate().find_map(|(i, s)| {
            s.endpoints.iter().find_map(|(route, endpoint)| route.matches(path).map(|params| (i, *endpoint, params)))
        })
    }
}

/// Parses and validates a configuration file's text.
pub fn load(text: &str) -> Result<Catalog, ConfigError> {
    compile(file::read(text)?)
}


/// What `mcp-edge check` and `npm run check-config` print for the file `label` holding `text`:
/// one line per server when it is valid, else the located fault. The Worker answers every
/// request with the same fault (`Invalid configuration: …`), from the same code.
pub fn check(label: &str, text: &str) -> Result<String, String> {
    let catalog = load(text).map_err(|e| format!("{label}: {e}"))?;
    let lines: Vec<String> = catalog
        .servers
        .iter()
        .map(|s| {
            let tools: Vec<&str> = s.tools.iter().map(|t| t.name.as_str()).collect();
            let tools = if tools.is_empty() { "no tools".to_string() } else { format!("tools {}", tools.join(", ")) };
            format!("{label}: ok: {} {} on {} and {}: {tools}", s.name, s.version, s.route.as_str(), s.stream_route.as_str())
        })
        .collect();
    Ok(lines.join("\n"))
}

fn guard(request: &crate::tools::RequestTemplate, private: &[String], at: &str) -> Result<(), ConfigError> {
    let Some(host) = request.literal_host() else { return Ok(()) };
    let private: Vec<String> = private.iter().map(|h| h.to_ascii_lowercase()).collect();
    crate::tools::address::check(&format!("http://{host}/"), &private).map_err(|why| ConfigError::at(at, why))
}

fn compile(file: model::ConfigFile) -> Result<Catalog, ConfigError> {
    if file.servers.is_empty() {
        return Err(ConfigError::at("servers", "at least one server is required"));
    }
    let mut servers: Vec<Server> = Vec::new();
    for (i, s) in file.servers.into_iter().enumerate() {
        let server = compile_server(s, &format!("servers[{i}]"))?;
        for (j, earlier) in servers.iter().enumerate() {
            let clash = server.endpoints.iter().any(|(mine, _)| earlier.endpoints.iter().any(|(theirs, _)| theirs.overlaps(mine)));
            if clash {
                return Err(ConfigError::at(format!("servers[{i}].route"), format!("overlaps the routes of servers[{j}]")));
            }
        }
        servers.push(server);
    }
    Ok(Catalog { servers, log: file.log })
}

fn compile_server(s: model::ServerConfig, path: &str) -> Result<Server, ConfigError> {
    let route = RoutePattern::parse(&s.route).map_err(|e| ConfigError::at(format!("{path}.route"), e))?;
    let stream_route = match &s.stream_route {
        Some(r) => RoutePattern::parse(r).map_err(|e| ConfigError::at(format!("{path}.streamRoute"), e))?,
        None => route.sibling("stream"),
    };
    if route.overlaps(&stream_route) {
        return Err(ConfigError::at(format!("{path}.streamRoute"), "must differ from route"));
    }
    let notify = match &s.notifications {
        None => None,
        Some(n) => {
            let at = format!("{path}.notifications");
            let notify_route = match &n.route {
                Some(r) => RoutePattern::parse(r).map_err(|e| ConfigError::at(format!("{at}.route"), e))?,
                None => route.sibling("notify"),
            };
            if notify_route.overlaps(&route) || notify_route.overlaps(&stream_route) {
                return Err(ConfigError::at(format!("{at}.route"), "must differ from route and streamRoute"));
            }
            let valid = !n.token_secret.is_empty() && n.token_secret.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(ConfigError::at(format!("{at}.tokenSecret"), "must be a secret name (A-Z a-z 0-9 _)"));
            }
            Some((notify_route, n.token_secret.clone()))
        }
    };
    let mut endpoints = vec![(route.clone(), Endpoint::Mcp), (stream_route.clone(), Endpoint::Stream)];
    endpoints.extend(notify.as_ref().map(|(r, _)| (r.clone(), Endpoint::Notify)));
    if let Some(st) = &s.stateless {
        if !(1..=300_000).contains(&st.collect_timeout_ms) {
            return Err(ConfigError::at(format!("{path}.stateless.collectTimeoutMs"), "must be 1 to 300000"));
        }
    }
    // Legacy SSE needs a session to carry replies: not in stateless mode.
    if s.legacy_sse && s.stateless.is_none() {
        endpoints.push((route.sibling("sse"), Endpoint::LegacySse));
        endpoints.push((route.sibling("messages"), Endpoint::LegacyMessages));
    }
    for (i, (a, _)) in endpoints.iter().enumerate() {
        if endpoints.iter().skip(i + 1).any(|(b, _)| a.overlaps(b)) {
            return Err(ConfigError::at(format!("{path}.route"), format!("{} is used twice by this server's endpoints", a.as_str())));
        }
    }
    if s.name.trim().is_empty() {
        return Err(ConfigError::at(format!("{path}.name"), "must not be empty"));
    }
    if s.version.trim().is_empty() {
        return Err(ConfigError::at(format!("{path}.version"), "must not be empty"));
    }
    let origin_sources: Vec<String> = match s.allowed_origins {
        Some(list) => list,
        None => DEFAULT_ORIGINS.iter().map(|o| o.to_string()).collect(),
    };
    let origins = origin_sources
        .iter()
        .enumerate()
        .map(|(i, o)| OriginPattern::parse(o).map_err(|e| ConfigError::at(format!("{path}.allowedOrigins[{i}]"), e)))
        .collect::<Result<Vec<_>, _>>()?;
    let positive = |value: u64, field: &str| {
        if value == 0 {
            Err(ConfigError::at(format!("{path}.{field}"), "must be greater than 0"))
        } else {
            Ok(value)
        }
    };
    let idle_timeout_ms = positive(s.sessions.idle_timeout_ms, "sessions.idleTimeoutMs")?;
    if !(1_000..=600_000).contains(&s.sessions.keepalive_ms) {
        return Err(ConfigError::at(format!("{path}.sessions.keepaliveMs"), "must be 1000 to 600000"));
    }
    if !(100..=600_000).contains(&s.sessions.retry_ms) {
        return Err(ConfigError::at(format!("{path}.sessions.retryMs"), "must be 100 to 600000"));
    }
    if s.sessions.lease_ms > 60_000 {
        return Err(ConfigError::at(format!("{path}.sessions.leaseMs"), "must be 0 to 60000"));
    }
    let max_body_bytes = positive(s.limits.max_body_bytes, "limits.maxBodyBytes")?;
    let max_reply_bytes = positive(s.limits.max_reply_bytes, "limits.maxReplyBytes")?;
    let l = &s.limits;
    for (value, field) in [(l.max_json_depth, "maxJsonDepth"), (l.max_header_bytes, "maxHeaderBytes"), (l.max_calls_in_flight, "maxCallsInFlight"), (l.max_sessions_per_principal, "maxSessionsPerPrincipal")] {
        positive(value as u64, &format!("limits.{field}"))?;
    }
    if let Some(r) = &l.rate_limit {
        if ![10, 60].contains(&r.period_seconds) {
            return Err(ConfigError::at(format!("{path}.limits.rateLimit.periodSeconds"), "must be 10 or 60, as Rate Limiting bindings allow"));
        }
    }
    let limits = Limits {
        max_json_depth: l.max_json_depth,
        max_header_bytes: l.max_header_bytes,
        max_calls_in_flight: l.max_calls_in_flight,
        max_sessions_per_principal: l.max_sessions_per_principal,
        rate_limit: l.rate_limit.as_ref().map(|r| (r.binding.clone(), r.period_seconds)),
    };
    if s.limits.tools_page_size == Some(0) {
        return Err(ConfigError::at(format!("{path}.limits.toolsPageSize"), "must be greater than 0"));
    }
    let route_params: Vec<String> = route.params().map(str::to_string).collect();
    let auth = s.auth.as_ref().map(|a| crate::auth::Auth::compile(a, &format!("{path}.auth"), &route_params)).transpose()?;
    // Behind auth, what a list holds may depend on who asks (role-gated tools): private.
    let scope = if auth.is_some() { model::CacheScope::Private } else { model::CacheScope::Public };
    let cache = CacheHint::over(CacheHint { ttl_ms: DEFAULT_CACHE_TTL_MS, scope }, &s.cache);
    let mut tools: Vec<Tool> = Vec::new();
    for (i, t) in s.tools.into_iter().enumerate() {
        let tool_path = format!("{path}.tools[{i}]");
        if tools.iter().any(|existing| existing.name == t.name) {
            return Err(ConfigError::at(format!("{tool_path}.name"), format!("duplicate tool name {:?}", t.name)));
        }
        let hint = t.cache.as_ref().map(|c| CacheHint::over(cache, c));
        let mut tool = Tool::compile(t, &tool_path, &route_params, max_reply_bytes)?;
        tool.cache = hint;
        tools.push(tool);
    }
    if let (Some(_), Some(i)) = (&s.stateless, tools.iter().position(|t| t.deferral.is_some())) {
        return Err(ConfigError::at(format!("{path}.tools[{i}].execution"), "queued and callback tools need sessions: a stateless server has nowhere to deliver their results"));
    }
    // The SSRF guard, early: a URL written out in the configuration names its host.
    for (i, tool) in tools.iter().enumerate() {
        guard(&tool.request, &s.private_upstreams, &format!("{path}.tools[{i}].http.url"))?;
    }
    let mut resources: Vec<Resource> = Vec::new();
    for (i, r) in s.resources.iter().enumerate() {
        let at = format!("{path}.resources[{i}]");
        if resources.iter().any(|existing| existing.uri == r.uri) {
            return Err(ConfigError::at(format!("{at}.uri"), format!("duplicate resource URI {:?}", r.uri)));
        }
        resources.push(Resource::compile(r, &at, &route_params)?);
    }
    let resource_templates = s
        .resource_templates
        .iter()
        .enumerate()
        .map(|(i, t)| ResourceTemplate::compile(t, &format!("{path}.resourceTemplates[{i}]"), &route_params))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, r) in resources.iter().enumerate() {
        if let Some(request) = r.request() {
            guard(request, &s.private_upstreams, &format!("{path}.resources[{i}].http.url"))?;
        }
    }
    for (i, t) in resource_templates.iter().enumerate() {
        guard(t.request(), &s.private_upstreams, &format!("{path}.resourceTemplates[{i}].http.url"))?;
    }
    let mut prompts: Vec<Prompt> = Vec::new();
    for (i, p) in s.prompts.iter().enumerate() {
        let at = format!("{path}.prompts[{i}]");
        if prompts.iter().any(|existing| existing.name == p.name) {
            return Err(ConfigError::at(format!("{at}.name"), format!("duplicate prompt name {:?}", p.name)));
        }
        prompts.push(Prompt::compile(p, &at)?);
    }
    Ok(Server {
        name: s.name,
        version: s.version,
        title: s.title,
        instructions: s.instructions,
        route,
        stream_route,
        notify,
        stateless: s.stateless.as_ref().map(|st| st.collect_timeout_ms),
        endpoints,
        origins,
        allowed_hosts: s.allowed_hosts.iter().map(|h| h.to_ascii_lowercase()).collect(),
        private_upstreams: s.private_upstreams.iter().map(|h| h.to_ascii_lowercase()).collect(),
        auth,
        idle_timeout_ms,
        keepalive_ms: s.sessions.keepalive_ms,
        retry_ms: s.sessions.retry_ms,
        lease_ms: s.sessions.lease_ms,
        max_body_bytes,
        max_reply_bytes,
        tools_page_size: s.limits.tools_page_size,
        limits,
        cache,
        tool_listings: tools.iter().map(|t| t.listing.clone()).collect(),
        resource_listings: resources.iter().map(|r| r.listing.clone()).collect(),
        template_listings: resource_templates.iter().map(|t| t.listing.clone()).collect(),
        prompt_listings: prompts.iter().map(|p| p.listing.clone()).collect(),
        tools,
        resources,
        resource_templates,
        prompts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_configurations_load() {
        for text in [include_str!("../../mcp-edge.json"), include_str!("../../examples/interactions/mcp-edge.json"), include_str!("../../tests/e2e/config.json")] {
            assert!(load(text).is_ok());
        }
        // Every field of the model, none at its default (the documentation test reads it too).
        assert!(file::read(include_str!("../../tests/every-field.json")).is_ok());
    }

    #[test]
    fn check_reports_each_server_or_the_fault() {
        let two = r#"{"servers":[{"name":"s","version":"1","tools":[TOOL]},{"name":"t","version":"2","route":"/t/mcp"}]}"#.replace("TOOL", TOOL);
        assert_eq!(check("f.json", &two).unwrap(), "f.json: ok: s 1 on /mcp and /stream: tools weather\nf.json: ok: t 2 on /t/mcp and /t/stream: no tools");
        assert_eq!(check("f.json", r#"{"servers":[]}"#).unwrap_err(), "f.json: servers: at least one server is required");
    }

    fn err(text: &str) -> String {
        load(text).map(|_| ()).unwrap_err().to_string()
    }

    const TOOL: &str = r#"{"name":"weather","inputSchema":{"type":"object","properties":{"city":{"type":"string"}}},"http":{"url":"https://api.example.com/w/{city}"}}"#;

    fn with_tool(tool: &str) -> String {
        format!(r#"{{"servers":[{{"name":"s","version":"1","tools":[{TOOL},{tool}]}}]}}"#)
    }

    #[test]
    fn a_minimal_config_gets_defaults() {
        let c = load(r#"{"servers":[{"name":"s","version":"1"}]}"#).unwrap();
        let s = &c.servers[0];
        assert_eq!(s.route.as_str(), "/mcp");
        assert_eq!(s.stream_route.as_str(), "/stream");
        assert_eq!(s.idle_timeout_ms, 1_800_000);
        assert_eq!(s.lease_ms, 2_000);
        assert_eq!(s.origins.len(), 3);
        assert_eq!(c.route("/stream").map(|r| r.1), Some(Endpoint::Stream));
        assert_eq!(c.route("/mcp").map(|r| r.1), Some(Endpoint::Mcp));
        assert_eq!(c.route("/sse").map(|r| r.1), Some(Endpoint::LegacySse));
        assert_eq!(c.route("/messages").map(|r| r.1), Some(Endpoint::LegacyMessages));
        let no_legacy = load(r#"{"servers":[{"name":"s","version":"1","legacySse":false}]}"#).unwrap();
        assert!(no_legacy.route("/sse").is_none());
        assert!(c.route("/other").is_none());
    }

    #[test]
    fn unknown_template_argument_names_the_path() {
        let bad = r#"{"name":"w2","inputSchema":{"type":"object","properties":{"city":{"type":"string"}}},"http":{"url":"https://api.example.com/w/{cty}"}}"#;
        assert_eq!(err(&with_tool(bad)), r#"servers[0].tools[1].http.url: unknown argument "cty" in template"#);
    }

    #[test]
    fn structural_errors_name_the_path() {
        assert!(err(r#"{"servers":[{"name":"s"}]}"#).starts_with("servers[0]: missing field `version`"));
        assert!(err(r#"{"servers":[{"name":"s","version":"1","tools":[{"name":"a","http":{"url":"https://x/","timeoutMs":"x"}}]}]}"#)
            .starts_with("servers[0].tools[0].http.timeoutMs: invalid type"));
        assert!(err(r#"{"servers":[{"name":"s","version":"1","tools":[{"name":"a","http":{"urll":"x"}}]}]}"#)
            .starts_with("servers[0].tools[0].http.urll: unknown field `urll`"));
        assert!(err("{\n  \"servers\": [\n    {\"name\": \"s\",\n     \"version\": 1}\n  ]\n}").starts_with("servers[0].version: invalid type: integer `1`, expected a string"));
        assert!(err(r#"{"servers":[{"name":"s","version":"1","log":"x"}]}"#).starts_with("servers[0].log: unknown field `log`"));
        assert_eq!(err(r#"{"servers":[]}"#), "servers: at least one server is required");
        assert!(err("{").contains("EOF"));
    }

    #[test]
    fn semantic_errors_name_the_path() {
        let cases = [
            (r#"{"name":"a b","http":{"url":"https://x/"}}"#, "servers[0].tools[1].name: "),
            (r#"{"name":"weather","http":{"url":"https://x/"}}"#, "servers[0].tools[1].name: duplicate tool name \"weather\""),
            (r#"{"name":"a","http":{"method":"FETCH","url":"https://x/"}}"#, "servers[0].tools[1].http.method: "),
            (r#"{"name":"a","http":{"url":"ftp://x/"}}"#, "servers[0].tools[1].http.url: "),
            (r#"{"name":"a","http":{"url":"https://x/{"}}"#, "servers[0].tools[1].http.url: unclosed"),
            (r#"{"name":"a","http":{"url":"https://x/","timeoutMs":0}}"#, "servers[0].tools[1].http.timeoutMs: "),
            (r#"{"name":"a","inputSchema":{"type":"string"},"http":{"url":"https://x/"}}"#, "servers[0].tools[1].inputSchema: "),
            (r#"{"name":"a","http":{"url":"https://x/","headers":{"X-A":"{+env.K}"}}}"#, "servers[0].tools[1].http.headers.X-A: "),
            (r#"{"name":"a","http":{"url":"https://x/","headers":{"Bad Name":"v"}}}"#, "servers[0].tools[1].http.headers.Bad Name: "),
            (r#"{"name":"a","http":{"url":"https://x/","body":{"k":["{nope}"]}}}"#, "servers[0].tools[1].http.body.k[0]: unknown argument \"nope\""),
            (r#"{"name":"a","http":{"url":"https://x/","headers":{"A":"{env.bad-name}"}}}"#, "servers[0].tools[1].http.headers.A: invalid variable"),
            (r#"{"name":"a","http":{"url":"https://x/","headers":{"A":"{meta.auth.token}"}}}"#, "servers[0].tools[1].http.headers.A: \"meta.auth.token\" needs \"forwardMetaAuth\": true"),
        ];
        for (tool, prefix) in cases {
            let got = err(&with_tool(tool));
            assert!(got.starts_with(prefix), "{tool}\n  got: {got}\n want: {prefix}…");
        }
    }

    #[test]
    fn arguments_cannot_reach_the_authority() {
        let schema = r#""inputSchema":{"type":"object","properties":{"h":{"type":"string"}}}"#;
        for url in ["https://x{h}/", "https://x{+h}", "{+env.BASE}{+h}", "https://x{.h}/"] {
            let tool = format!(r#"{{"name":"a",{schema},"http":{{"url":"{url}"}}}}"#);
            let got = err(&with_tool(&tool));
            assert!(got.contains("before the host is complete"), "{url}: {got}");
        }
        for url in ["https://x/{h}", "https://x{/h}", "https://x{?h}", "{+env.BASE}/{+h}", "https://x:8080/a{#h}"] {
            let tool = format!(r#"{{"name":"a",{schema},"http":{{"url":"{url}"}}}}"#);
            assert!(load(&with_tool(&tool)).is_ok(), "{url}");
        }
    }

    #[test]
    fn resource_and_prompt_errors_name_the_path() {
        let server = |body: &str| format!(r#"{{"servers":[{{"name":"s","version":"1",{body}}}]}}"#);
        let cases = [
            (r#""resources":[{"uri":"a://x","name":"x","text":"t","blob":"AA=="}]"#, "servers[0].resources[0].uri: a resource needs exactly one of text, blob or http"),
            (r#""resources":[{"uri":"a://x","name":"x","blob":"not base64"}]"#, "servers[0].resources[0].blob: must be padded standard base64"),
            (r#""resources":[{"uri":"a://x","name":"x","text":"1"},{"uri":"a://x","name":"y","text":"2"}]"#, "servers[0].resources[1].uri: duplicate resource URI \"a://x\""),
            (r#""resourceTemplates":[{"uriTemplate":"a://{x}{y}","name":"t","http":{"url":"https://h/{x}"}}]"#, "servers[0].resourceTemplates[0].uriTemplate: only literals"),
            (r#""resourceTemplates":[{"uriTemplate":"a://{x}","name":"t","http":{"url":"https://h/{z}"}}]"#, "servers[0].resourceTemplates[0].http.url: unknown argument \"z\" in template"),
            (r#""resourceTemplates":[{"uriTemplate":"a://{x}","name":"t","http":{"url":"https://h/{x}"},"completions":{"q":[]}}]"#, "servers[0].resourceTemplates[0].completions.q: "),
            (r#""prompts":[{"name":"p","messages":[{"role":"user","content":{"type":"text","text":"{env.KEY}"}}]}]"#, "servers[0].prompts[0].messages: prompts cannot use secrets"),
            (r#""prompts":[{"name":"p","messages":[{"role":"user","content":{"type":"text","text":"{who}"}}]}]"#, "servers[0].prompts[0].messages[0].content.text: unknown argument \"who\""),
            (r#""prompts":[{"name":"p","messages":[{"role":"system","content":{}}]}]"#, "servers[0].prompts[0].messages[0]: needs \"role\""),
        ];
        for (body, prefix) in cases {
            let got = err(&server(body));
            assert!(got.starts_with(prefix), "{body}\n  got: {got}\n want: {prefix}…");
        }
    }

    #[test]
    fn server_level_errors() {
        assert!(err(r#"{"servers":[{"name":"s","version":"1","route":"mcp"}]}"#).starts_with("servers[0].route: "));
        assert!(err(r#"{"servers":[{"name":"s","version":"1","allowedOrigins":["nope"]}]}"#).starts_with("servers[0].allowedOrigins[0]: "));
        assert!(err(r#"{"servers":[{"name":"s","version":"1","sessions":{"idleTimeoutMs":0}}]}"#).starts_with("servers[0].sessions.idleTimeoutMs: "));
        assert_eq!(err(r#"{"servers":[{"name":"s","version":"1","sessions":{"leaseMs":60001}}]}"#), "servers[0].sessions.leaseMs: must be 0 to 60000");
        assert_eq!(
            err(r#"{"servers":[{"name":"s","version":"1"},{"name":"t","version":"1"}]}"#),
            "servers[1].route: overlaps the routes of servers[0]"
        );
        assert!(load(r#"{"servers":[{"name":"s","version":"1"},{"name":"t","version":"1","route":"/t/{id}/mcp"}]}"#).is_ok());
        assert_eq!(
            err(r#"{"servers":[{"name":"s","version":"1","legacySse":false,"stateless":{},"tools":[{"name":"q","execution":"queued","http":{"url":"https://x/"}}]}]}"#),
            "servers[0].tools[0].execution: queued and callback tools need sessions: a stateless server has nowhere to deliver their results"
        );
        assert_eq!(
            err(r#"{"servers":[{"name":"s","version":"1","tools":[{"name":"q","execution":"callback","pendingTimeoutMs":10,"http":{"url":"https://x/"}}]}]}"#),
            "servers[0].tools[0].pendingTimeoutMs: must be 1000 to 86400000"
        );
    }
}
