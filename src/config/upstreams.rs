//! A server's `upstreams`, checked and compiled: upstream MCP servers whose tools it serves too.
//! Their URL and headers are templates like a tool's `http` (secrets, the caller's identity),
//! behind the same SSRF guard.

use serde_json::json;

use super::model::{ServerConfig, UpstreamConfig};
use super::request::{request, Scope, MAX_TIMEOUT_MS};
use super::ConfigError;
use crate::upstream::mcp::filter::Filter;
use crate::upstream::mcp::{Source, Transport};

const MAX_CATALOG_TTL_SECONDS: u64 = 86_400;

/// The server's upstreams. `path`: the server's (`servers[0]`); `own_tools`: whether it has tools
/// of its own.
pub fn upstreams(s: &ServerConfig, path: &str, route_params: &[String], own_tools: bool) -> Result<Vec<Source>, ConfigError> {
    let mut sources: Vec<Source> = Vec::new();
    // Names from two sources could meet: each upstream then needs a prefix of its own.
    let several = s.upstreams.len() + usize::from(own_tools) > 1;
    for (i, u) in s.upstreams.iter().enumerate() {
        let at = format!("{path}.upstreams[{i}]");
        let source = upstream(u, path, &format!("upstreams[{i}]"), route_params)?;
        if sources.iter().any(|o| o.name == source.name) {
            return Err(ConfigError::at(format!("{at}.name"), format!("{:?} is listed twice", source.name)));
        }
        if several && source.prefix.is_empty() {
            return Err(ConfigError::at(format!("{at}.prefix"), "is required when the server has other tools or upstreams: two sources could name a tool alike"));
        }
        if let Some(other) = sources.iter().find(|o| !o.prefix.is_empty() && o.prefix == source.prefix) {
            return Err(ConfigError::at(format!("{at}.prefix"), format!("{:?} is the prefix of upstream {:?} too", source.prefix, other.name)));
        }
        super::request::guard(&source.request, &s.private_upstreams, &format!("{at}.url"))?;
        sources.push(source);
    }
    Ok(sources)
}

fn upstream(u: &UpstreamConfig, path: &str, field: &str, route_params: &[String]) -> Result<Source, ConfigError> {
    let at = |sub: &str, msg: String| ConfigError::at(format!("{path}.{field}.{sub}"), msg);
    if u.name.is_empty() || !u.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(at("name", format!("{:?} is not a name of letters, digits, `_` and `-`", u.name)));
    }
    let transport = match u.transport.as_deref() {
        None | Some("streamable-http") => Transport::StreamableHttp,
        Some("sse") => Transport::Sse,
        Some(other) => return Err(at("transport", format!("{other:?} is not \"streamable-http\" or \"sse\""))),
    };
    if !u.prefix.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) {
        return Err(at("prefix", format!("{:?} may hold only letters, digits, `_`, `-` and `.`", u.prefix)));
    }
    if u.timeout_ms == 0 || u.timeout_ms > MAX_TIMEOUT_MS {
        return Err(at("timeoutMs", format!("must be 1 to {MAX_TIMEOUT_MS}")));
    }
    if u.catalog_ttl_seconds == 0 || u.catalog_ttl_seconds > MAX_CATALOG_TTL_SECONDS {
        return Err(at("catalogTtlSeconds", format!("must be 1 to {MAX_CATALOG_TTL_SECONDS}")));
    }
    if let Some(i) = u.roles.iter().position(|r| r.trim().is_empty()) {
        return Err(at(&format!("roles[{i}]"), "must not be empty".into()));
    }
    let filter = |f: &super::model::FilterConfig, field: &str| Filter::new(f.include.as_deref(), &f.exclude).map_err(|which| at(&format!("{field}.{which}"), "must not be empty".into()));
    let (tools, resources, prompts) = (filter(&u.tools, "tools")?, filter(&u.resources, "resources")?, filter(&u.prompts, "prompts")?);
    // The URL and headers as a tool's `http` would have them; each exchange's body is its own.
    // Read from JSON text, as the file's tools are: the module keeps one deserializer of the
    // model rather than a second one for a `Value`.
    let http = json!({"url": u.url, "headers": u.headers, "bodyType": "none", "timeoutMs": u.timeout_ms, "maxRedirects": 0}).to_string();
    let http = serde_json::from_slice(http.as_bytes()).map_err(|e| at("url", e.to_string()))?;
    let used = std::cell::Cell::new(false);
    let scope = Scope { path, arguments: &[], route_params, meta: false, meta_auth: false, principal: true, upstream_token: u.forward_upstream_token, connection: u.auth.as_ref().map(|_| &used), reads: None };
    let request = request(&http, &scope, field)?;
    Ok(Source {
        name: u.name.clone(),
        transport,
        request,
        prefix: u.prefix.clone(),
        tools,
        resources,
        prompts,
        roles: u.roles.clone(),
        catalog_ttl_ms: u.catalog_ttl_seconds * 1000,
        forward_upstream_token: u.forward_upstream_token,
        connection: u.auth.as_ref().map(|a| a.connection.clone()),
    })
}

#[cfg(test)]
mod tests {
    use crate::config::load;

    fn err(upstreams: &str, tools: &str) -> String {
        load(&format!(r#"{{"servers":[{{"name":"s","version":"1","tools":{tools},"upstreams":{upstreams}}}]}}"#)).map(|_| String::new()).unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn upstreams_compile_with_their_templates() {
        let text = r#"{"servers":[{"name":"s","version":"1","upstreams":[{"name":"n8n","url":"{+env.N8N_MCP_URL}","transport":"sse",
            "headers":{"Authorization":"Bearer {env.N8N_TOKEN}","X-User":"{principal.subject}"},"tools":{"include":["get_*"],"exclude":["get_secret"]},"roles":["staff"]}]}]}"#;
        let catalog = load(text).unwrap();
        let source = &catalog.servers[0].upstreams[0];
        assert_eq!((source.name.as_str(), source.transport, source.catalog_ttl_ms), ("n8n", crate::upstream::mcp::Transport::Sse, 300_000));
        assert_eq!(source.request.secrets, ["N8N_MCP_URL", "N8N_TOKEN"]);
        assert!(source.tools.takes("get_order") && !source.tools.takes("get_secret") && !source.tools.takes("put"));
        assert_eq!(source.request.timeout_ms, 30_000);
    }

    #[test]
    fn faults_have_their_paths() {
        let one = |u: &str| err(&format!("[{u}]"), "[]");
        assert_eq!(one(r#"{"name":"a b","url":"https://x.example/mcp"}"#), r#"servers[0].upstreams[0].name: "a b" is not a name of letters, digits, `_` and `-`"#);
        assert_eq!(one(r#"{"name":"a","url":"https://x.example/mcp","transport":"ws"}"#), r#"servers[0].upstreams[0].transport: "ws" is not "streamable-http" or "sse""#);
        assert_eq!(one(r#"{"name":"a","url":"https://x.example/{nope}"}"#), r#"servers[0].upstreams[0].url: unknown argument "nope" in template"#);
        assert_eq!(one(r#"{"name":"a","url":"https://x.example/mcp","headers":{"X":"{meta.x}"}}"#).split(':').next().unwrap(), "servers[0].upstreams[0].headers.X");
        assert_eq!(one(r#"{"name":"a","url":"http://127.0.0.1:9/mcp"}"#).split(':').next().unwrap(), "servers[0].upstreams[0].url");
        assert_eq!(one(r#"{"name":"a","url":"https://x.example/mcp","timeoutMs":0}"#), "servers[0].upstreams[0].timeoutMs: must be 1 to 300000");
        assert_eq!(one(r#"{"name":"a","url":"https://x.example/mcp","catalogTtlSeconds":0}"#), "servers[0].upstreams[0].catalogTtlSeconds: must be 1 to 86400");
        assert_eq!(one(r#"{"name":"a","url":"https://x.example/mcp","tools":{"exclude":[""]}}"#), "servers[0].upstreams[0].tools.exclude[0]: must not be empty");
        assert_eq!(one(r#"{"name":"a","url":"https://x.example/mcp","prompts":{"include":["x",""]}}"#), "servers[0].upstreams[0].prompts.include[1]: must not be empty");
        assert_eq!(one(r#"{"name":"a","url":"https://x.example/mcp","prefix":"a b"}"#), r#"servers[0].upstreams[0].prefix: "a b" may hold only letters, digits, `_`, `-` and `.`"#);
        assert!(one(r#"{"name":"a","url":"https://x.example/mcp","tool":{}}"#).starts_with("servers[0].upstreams[0].tool: unknown field `tool`"));
        assert_eq!(one(r#"{"name":"a","url":"https://x.example/mcp","headers":{"X":"{principal.upstreamToken}"}}"#).split(':').next().unwrap(), "servers[0].upstreams[0].headers.X");
        assert!(one(r#"{"name":"a","url":"https://x.example/mcp","headers":{"X":"{principal.upstreamToken}"},"forwardUpstreamToken":true}"#).is_empty());
        // Two sources: each upstream needs a prefix, and not the same one.
        let two = r#"[{"name":"a","url":"https://x.example/mcp","prefix":"p_"},{"name":"b","url":"https://y.example/mcp"}]"#;
        assert_eq!(err(two, "[]"), "servers[0].upstreams[1].prefix: is required when the server has other tools or upstreams: two sources could name a tool alike");
        let same = r#"[{"name":"a","url":"https://x.example/mcp","prefix":"p_"},{"name":"b","url":"https://y.example/mcp","prefix":"p_"}]"#;
        assert_eq!(err(same, "[]"), r#"servers[0].upstreams[1].prefix: "p_" is the prefix of upstream "a" too"#);
        let twice = r#"[{"name":"a","url":"https://x.example/mcp","prefix":"p_"},{"name":"a","url":"https://y.example/mcp","prefix":"q_"}]"#;
        assert_eq!(err(twice, "[]"), r#"servers[0].upstreams[1].name: "a" is listed twice"#);
        let own = r#"[{"name":"a","url":"https://x.example/mcp"}]"#;
        assert_eq!(err(own, r#"[{"name":"t","http":{"url":"https://z.example/"}}]"#), "servers[0].upstreams[0].prefix: is required when the server has other tools or upstreams: two sources could name a tool alike");
        assert!(err(own, "[]").is_empty(), "one upstream alone needs no prefix");
    }
}
