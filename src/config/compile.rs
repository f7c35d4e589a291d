//! A configuration file's model compiled into the catalog: every semantic check, each fault
//! named by its path. Structure (types, unknown fields) was checked when the file was read.

use super::model;
use super::request::{guard, hosts};
use super::ConfigError;
use crate::cache::{CacheHint, CacheScope, DEFAULT_CACHE_TTL_MS};
use crate::catalog::{Catalog, CodeLimits, ConsoleAccess, Endpoint, Limits, Prompt, Resource, ResourceTemplate, Server, ToolDiscovery};
use crate::tools::meta::MetaTool;
use crate::policy::{OriginPattern, DEFAULT_ORIGINS};
use crate::routes::RoutePattern;
use crate::tools::search::Index;
use crate::tools::Tool;

pub fn compile(file: model::ConfigFile) -> Result<Catalog, ConfigError> {
    if file.servers.is_empty() {
        return Err(ConfigError::at("servers", "at least one server is required"));
    }
    let mut servers: Vec<Server> = Vec::new();
    for (i, s) in file.servers.into_iter().enumerate() {
        let server = compile_server(s, &format!("servers[{i}]"))?;
        for (j, earlier) in servers.iter().enumerate() {
            // The live layer and the admin API know a server by its name.
            if earlier.name == server.name {
                return Err(ConfigError::at(format!("servers[{i}].name"), format!("{:?} is the name of servers[{j}] too; each server needs its own", server.name)));
            }
            let clash = server.endpoints.iter().any(|(mine, _)| earlier.endpoints.iter().any(|(theirs, _)| theirs.overlaps(mine)));
            if clash {
                return Err(ConfigError::at(format!("servers[{i}].route"), format!("overlaps the routes of servers[{j}]")));
            }
        }
        servers.push(server);
    }
    let mut servers: Vec<std::sync::Arc<Server>> = servers.into_iter().map(std::sync::Arc::new).collect();
    super::curated::include(&mut servers)?;
    let connections = super::connections::connections(file.connections, file.oauth.as_ref())?;
    super::connections::users(&servers, &connections)?;
    let connections = connections.into_iter().map(std::sync::Arc::new).collect();
    let oauth = file.oauth.map(super::oauth::oauth).transpose()?;
    for (i, server) in servers.iter().enumerate() {
        let Some(auth) = server.auth.as_ref().filter(|a| a.oauth) else { continue };
        let Some(oauth) = &oauth else {
            return Err(ConfigError::at(format!("servers[{i}].auth.oauth"), "needs the top-level \"oauth\" section: the authorization server"));
        };
        if matches!(oauth.sign_in, crate::oauth::SignIn::Introspection { .. }) && auth.introspection.is_none() {
            return Err(ConfigError::at(format!("servers[{i}].auth.introspection"), "sign-in by introspection needs the server's own introspection, which decides who the browser is"));
        }
        for path in crate::paths::of(crate::paths::Owner::AuthorizationServer) {
            let taken = crate::routes::RoutePattern::parse(path).is_ok_and(|p| server.endpoints.iter().any(|(route, _)| route.overlaps(&p)));
            if taken {
                return Err(ConfigError::at(format!("servers[{i}].route"), format!("overlaps {path}, which the authorization server answers")));
            }
        }
    }
    let console = match (file.console.access.as_str(), file.console.roles) {
        ("signed-in", roles) => {
            if let Some(i) = roles.iter().position(|r| r.trim().is_empty()) {
                return Err(ConfigError::at(format!("console.roles[{i}]"), "must not be empty"));
            }
            ConsoleAccess::SignedIn { roles }
        }
        (_, roles) if !roles.is_empty() => return Err(ConfigError::at("console.roles", "applies only with \"access\": \"signed-in\"")),
        ("public", _) => ConsoleAccess::Public,
        ("off", _) => ConsoleAccess::Off,
        (other, _) => return Err(ConfigError::at("console.access", format!("{other:?} is not \"public\", \"signed-in\" or \"off\""))),
    };
    let health = super::health::health(file.console.health)?;
    let admin_secrets = super::safety::admin_secrets(file.admin)?;
    let admission = super::safety::admission(file.admission)?;
    let telemetry = super::telemetry::telemetry(file.telemetry)?;
    Ok(Catalog { servers, log: file.log, oauth, console, health, admin_secrets, admission, telemetry, connections })
}

fn compile_server(mut s: model::ServerConfig, path: &str) -> Result<Server, ConfigError> {
    let Routes { route, stream_route, notify, endpoints } = routes(&s, path)?;
    if s.name.trim().is_empty() {
        return Err(ConfigError::at(format!("{path}.name"), "must not be empty"));
    }
    if s.version.trim().is_empty() {
        return Err(ConfigError::at(format!("{path}.version"), "must not be empty"));
    }
    let origin_sources: Vec<String> = match s.allowed_origins.take() {
        Some(list) => list,
        None => DEFAULT_ORIGINS.iter().map(|o| o.to_string()).collect(),
    };
    let origins = origin_sources
        .iter()
        .enumerate()
        .map(|(i, o)| OriginPattern::parse(o).map_err(|e| ConfigError::at(format!("{path}.allowedOrigins[{i}]"), e)))
        .collect::<Result<Vec<_>, _>>()?;
    hosts(&s.private_upstreams, &format!("{path}.privateUpstreams"))?;
    let Sizes { idle_timeout_ms, max_body_bytes, max_reply_bytes, limits } = sizes(&s, path)?;
    let route_params: Vec<String> = route.params().map(str::to_string).collect();
    let auth = s.auth.as_ref().map(|a| super::auth::auth(a, &format!("{path}.auth"), &route_params)).transpose()?;
    // Behind auth, what a list holds may depend on who asks (role-gated tools): private.
    let scope = if auth.is_some() { CacheScope::Private } else { CacheScope::Public };
    let cache = cache_over(CacheHint { ttl_ms: DEFAULT_CACHE_TTL_MS, scope }, &s.cache);
    if s.cache.results.is_some() {
        return Err(ConfigError::at(format!("{path}.cache.results"), "results are cached per tool: set cache.results on each tool whose results may be kept"));
    }
    let result_caches = result_caches(&s.tools);
    let resource_caches = resource_caches(&s, path, cache)?;
    let (tools, apps) = tools(std::mem::take(&mut s.tools), &s, path, &route_params, cache, max_reply_bytes)?;
    let (discovery, tool_listings) = match s.tool_discovery {
        model::ToolDiscoveryConfig::List => (ToolDiscovery::List, tools.iter().map(|t| t.listing.clone()).collect()),
        model::ToolDiscoveryConfig::Catalog => (ToolDiscovery::Catalog(Index::new(&tools)), MetaTool::ALL.map(MetaTool::listing).to_vec()),
        model::ToolDiscoveryConfig::Code => (ToolDiscovery::Code(Index::new(&tools)), MetaTool::CODE.map(MetaTool::listing).to_vec()),
    };
    let code = code_limits(s.code_mode.as_ref(), &format!("{path}.codeMode"))?;
    let (mut resources, resource_templates) = resources(&s, path, &route_params)?;
    for app in apps {
        if let Some(i) = resources.iter().position(|r| r.uri == app.uri) {
            return Err(ConfigError::at(format!("{path}.resources[{i}].uri"), format!("{:?} is a tool's app", app.uri)));
        }
        resources.push(app);
    }
    let prompts = prompts(&s, path)?;
    let upstreams = super::upstreams::upstreams(&s, path, &route_params, !tools.is_empty())?;
    let policies = super::policies::policies(&s.policies, path)?;
    Ok(Server {
        policies,
        // An upstream MCP server's lists change when it says so, or when it is read again.
        lists_change: !upstreams.is_empty(),
        pinning: s.pinning.mode,
        tasks: tasks(&s.tasks, path)?,
        upstreams: upstreams.into_iter().map(std::sync::Arc::new).collect(),
        include: s.include,
        pending: Vec::new(),
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
        rate_limits: super::limits::limits(&s.rate_limits, path)?,
        limits,
        cache,
        result_caches,
        resource_caches,
        discovery,
        code,
        tool_listings,
        resource_listings: resources.iter().map(|r| r.listing.clone()).collect(),
        template_listings: resource_templates.iter().map(|t| t.listing.clone()).collect(),
        prompt_listings: prompts.iter().map(|p| p.listing.clone()).collect(),
        tools,
        resources,
        resource_templates,
        prompts,
    })
}

/// The server's bounds on tasks, each within its range.
fn tasks(t: &model::TasksConfig, path: &str) -> Result<crate::catalog::TaskSettings, ConfigError> {
    let within = |value: u64, range: std::ops::RangeInclusive<u64>, field: &str| {
        if range.contains(&value) {
            Ok(value)
        } else {
            Err(ConfigError::at(format!("{path}.tasks.{field}"), format!("must be {} to {}", range.start(), range.end())))
        }
    };
    let max_ttl_ms = within(t.max_ttl_ms, 1_000..=2_592_000_000, "maxTtlMs")?;
    Ok(crate::catalog::TaskSettings {
        default_ttl_ms: within(t.default_ttl_ms.unwrap_or(max_ttl_ms.min(3_600_000)), 1_000..=max_ttl_ms, "defaultTtlMs")?,
        max_ttl_ms,
        max_per_principal: within(t.max_per_principal as u64, 1..=100_000, "maxPerPrincipal")? as usize,
        max_result_bytes: within(t.max_result_bytes as u64, 1_024..=104_857_600, "maxResultBytes")? as usize,
        max_total_result_bytes: within(t.max_total_result_bytes as u64, 1_024..=1_073_741_824, "maxTotalResultBytes")? as usize,
        poll_interval_ms: within(t.poll_interval_ms, 100..=60_000, "pollIntervalMs")?,
    })
}

/// A server's paths: its MCP route, the stream alias, the notify route, and every endpoint.
struct Routes {
    route: RoutePattern,
    stream_route: RoutePattern,
    notify: Option<(RoutePattern, String)>,
    endpoints: Vec<(RoutePattern, Endpoint)>,
}

fn routes(s: &model::ServerConfig, path: &str) -> Result<Routes, ConfigError> {
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
    Ok(Routes { route, stream_route, notify, endpoints })
}

/// A server's time and size limits.
struct Sizes {
    idle_timeout_ms: u64,
    max_body_bytes: u64,
    max_reply_bytes: u64,
    limits: Limits,
}

fn sizes(s: &model::ServerConfig, path: &str) -> Result<Sizes, ConfigError> {
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
    Ok(Sizes { idle_timeout_ms, max_body_bytes, max_reply_bytes, limits })
}

/// The server's tools, each with its cache hint, behind the SSRF guard.
/// `codeMode`: each bound a whole number, its default where it is left out, no other field.
fn code_limits(config: Option<&serde_json::Value>, path: &str) -> Result<CodeLimits, ConfigError> {
    const FIELDS: [&str; 8] = ["timeoutMs", "cpuMs", "maxSteps", "maxMemoryBytes", "maxCalls", "maxResultBytes", "maxLogLines", "maxCodeBytes"];
    let mut values = [60_000, 1_000, 10_000_000, 64 * 1024 * 1024, 100, 256 * 1024, 200, 64 * 1024];
    let fields = match config {
        None => None,
        Some(serde_json::Value::Object(fields)) => Some(fields),
        Some(_) => return Err(ConfigError::at(path.to_string(), "must be an object")),
    };
    for (name, value) in fields.into_iter().flatten() {
        let at = format!("{path}.{name}");
        let slot = FIELDS.iter().position(|f| f == name).and_then(|i| values.get_mut(i)).ok_or_else(|| ConfigError::at(at.clone(), format!("unknown field; expected one of {}", FIELDS.join(", "))))?;
        *slot = value.as_u64().filter(|n| *n > 0).ok_or_else(|| ConfigError::at(at, "must be a whole number above 0"))?;
    }
    let [timeout_ms, cpu_ms, max_steps, max_memory_bytes, max_calls, max_result_bytes, max_log_lines, max_code_bytes] = values;
    Ok(CodeLimits { timeout_ms, cpu_ms, max_steps, max_memory_bytes, max_calls, max_result_bytes, max_log_lines, max_code_bytes })
}

/// With them, the resources of their apps.
fn tools(configs: Vec<model::ToolConfig>, s: &model::ServerConfig, path: &str, route_params: &[String], cache: CacheHint, max_reply_bytes: u64) -> Result<(Vec<Tool>, Vec<Resource>), ConfigError> {
    let mut tools: Vec<Tool> = Vec::new();
    let mut apps: Vec<Resource> = Vec::new();
    for (i, mut t) in configs.into_iter().enumerate() {
        let tool_path = format!("{path}.tools[{i}]");
        if tools.iter().any(|existing| existing.name == t.name) {
            return Err(ConfigError::at(format!("{tool_path}.name"), format!("duplicate tool name {:?}", t.name)));
        }
        if s.tool_discovery == model::ToolDiscoveryConfig::Catalog && MetaTool::named(&t.name).is_some() {
            let names = MetaTool::ALL.map(MetaTool::name).join(", ");
            return Err(ConfigError::at(format!("{tool_path}.name"), format!("{:?} is one of catalog mode's own tools ({names}); rename it", t.name)));
        }
        if s.tool_discovery == model::ToolDiscoveryConfig::Code && MetaTool::coded(&t.name).is_some() {
            let names = MetaTool::CODE.map(MetaTool::name).join(", ");
            return Err(ConfigError::at(format!("{tool_path}.name"), format!("{:?} is one of code mode's own tools ({names}); rename it", t.name)));
        }
        let hint = t.cache.as_ref().map(|c| cache_over(cache, c));
        let app = t.app.take();
        let mut tool = super::tool::tool(t, &tool_path, route_params, max_reply_bytes)?;
        tool.cache = hint;
        if let Some(app) = app {
            apps.push(super::apps::app(&s.name, &mut tool, app, &format!("{tool_path}.app"))?);
        }
        tools.push(tool);
    }
    if let (Some(_), Some(i)) = (&s.stateless, tools.iter().position(|t| t.deferral.is_some())) {
        return Err(ConfigError::at(format!("{path}.tools[{i}].execution"), "queued and callback tools need sessions: a stateless server has nowhere to deliver their results"));
    }
    // The SSRF guard, early: a URL written out in the configuration names its host.
    for (i, tool) in tools.iter().enumerate() {
        guard(&tool.request, &s.private_upstreams, &format!("{path}.tools[{i}].http.url"))?;
    }
    Ok((tools, apps))
}

/// The server's resources and resource templates, behind the SSRF guard.
fn resources(s: &model::ServerConfig, path: &str, route_params: &[String]) -> Result<(Vec<Resource>, Vec<ResourceTemplate>), ConfigError> {
    let mut resources: Vec<Resource> = Vec::new();
    for (i, r) in s.resources.iter().enumerate() {
        let at = format!("{path}.resources[{i}]");
        if resources.iter().any(|existing| existing.uri == r.uri) {
            return Err(ConfigError::at(format!("{at}.uri"), format!("duplicate resource URI {:?}", r.uri)));
        }
        resources.push(super::resources::resource(r, &at, route_params)?);
    }
    let resource_templates = s
        .resource_templates
        .iter()
        .enumerate()
        .map(|(i, t)| super::resources::resource_template(t, &format!("{path}.resourceTemplates[{i}]"), route_params))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, r) in resources.iter().enumerate() {
        if let Some(request) = r.request() {
            guard(request, &s.private_upstreams, &format!("{path}.resources[{i}].http.url"))?;
        }
    }
    for (i, t) in resource_templates.iter().enumerate() {
        guard(t.request(), &s.private_upstreams, &format!("{path}.resourceTemplates[{i}].http.url"))?;
    }
    Ok((resources, resource_templates))
}

fn prompts(s: &model::ServerConfig, path: &str) -> Result<Vec<Prompt>, ConfigError> {
    let mut prompts: Vec<Prompt> = Vec::new();
    for (i, p) in s.prompts.iter().enumerate() {
        let at = format!("{path}.prompts[{i}]");
        if prompts.iter().any(|existing| existing.name == p.name) {
            return Err(ConfigError::at(format!("{at}.name"), format!("duplicate prompt name {:?}", p.name)));
        }
        prompts.push(super::resources::prompt(p, &at)?);
    }
    Ok(prompts)
}

/// The configured hint over `base`: a field left out keeps the base's value.
fn cache_over(base: CacheHint, config: &model::CacheConfig) -> CacheHint {
    CacheHint { ttl_ms: config.ttl_ms.unwrap_or(base.ttl_ms), scope: config.scope.unwrap_or(base.scope) }
}

/// The tools' result caches (`cache.results`), checked with each tool (`tool::results_cache`);
/// their fingerprint is set once the whole file is known (`config::load`).
fn result_caches(tools: &[model::ToolConfig]) -> Vec<(String, crate::cache::ResultCaching)> {
    let caching = |r: model::ResultsCacheConfig| crate::cache::ResultCaching { scope: r.scope, ttl_ms: r.ttl_ms, max_bytes: r.max_bytes.unwrap_or(crate::cache::DEFAULT_MAX_RESULT_BYTES), fingerprint: String::new() };
    tools.iter().filter_map(|t| Some((t.name.clone(), caching(t.cache?.results?)))).collect()
}

/// The cache hints of reads of the resources and templates that set their own, each narrowing
/// the server's, by URI or URI template.
fn resource_caches(s: &model::ServerConfig, path: &str, server: CacheHint) -> Result<Vec<(String, CacheHint)>, ConfigError> {
    let configured = s.resources.iter().enumerate().map(|(i, r)| (format!("{path}.resources[{i}]"), &r.uri, r.cache));
    let templates = s.resource_templates.iter().enumerate().map(|(i, t)| (format!("{path}.resourceTemplates[{i}]"), &t.uri_template, t.cache));
    let mut hints = Vec::new();
    for (at, key, cache) in configured.chain(templates) {
        let Some(cache) = cache else { continue };
        if cache.results.is_some() {
            return Err(ConfigError::at(format!("{at}.cache.results"), "only a tool's results are cached at the edge; a resource's cache sets ttlMs and scope"));
        }
        hints.push((key.clone(), server.and(cache_over(server, &cache))));
    }
    Ok(hints)
}
