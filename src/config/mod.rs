//! The configuration file: its model (`model`), read with faults located by their JSON path
//! (`file`, `locate`), validated and compiled into the `Catalog` that requests are served from
//! (`compile`, with `tool`, `request`, `auth` and `resources` for the parts of a server, and
//! `oauth`, `health`, `metrics` (`telemetry.metrics`) and `safety` (`admin`, `admission`) for
//! top-level sections).
//!
//! The one import circle of this folder: `load` and `check` here run `compile`, which runs each
//! part file; the part files report faults as `ConfigError` and locate them with `path_at`, both
//! named through this file, and `file`'s tests `load` a whole file.

pub(crate) mod auth;
mod apps;
mod oauth;
mod compile;
mod connections;
mod curated;
mod health;
pub mod limits;
pub mod pinning;
mod telemetry;
mod safety;
mod file;
mod locate;
pub mod model;
pub(crate) mod request;
mod upstreams;
pub mod policies;
mod resources;
pub(crate) mod tool;

pub use file::ConfigError;

use crate::catalog::Catalog;

/// Parses and validates a configuration file's text.
pub fn load(text: &str) -> Result<Catalog, ConfigError> {
    let mut catalog = compile::compile(file::read(text)?)?;
    // Result caches are keyed by the configuration they were made under: any edit (a deploy,
    // a live change) makes every entry made before it unreachable.
    if catalog.servers.iter().any(|s| !s.result_caches.is_empty()) {
        let fingerprint = crate::oauth::digest(text);
        for server in &mut catalog.servers {
            if let Some(server) = std::sync::Arc::get_mut(server) {
                for (_, caching) in &mut server.result_caches {
                    caching.fingerprint.clone_from(&fingerprint);
                }
            }
        }
    }
    Ok(catalog)
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
            // Their tools are known once they answer; the check names them only.
            let upstreams: Vec<&str> = s.upstreams.iter().map(|u| u.name.as_str()).collect();
            let upstreams = if upstreams.is_empty() { String::new() } else { format!("; upstream MCP servers {}", upstreams.join(", ")) };
            format!("{label}: ok: {} {} on {} and {}: {tools}{upstreams}", s.name, s.version, s.route.as_str(), s.stream_route.as_str())
        })
        .collect();
    Ok(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Endpoint;

    /// A schema reaches clients as written: nothing on the way parses it into a shape of its own.
    #[test]
    fn every_2020_12_keyword_round_trips_byte_for_byte() {
        // Written in no canonical order: kept as written, key order included.
        let text = concat!(
            r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://example.com/s","$anchor":"root","$dynamicAnchor":"node","$comment":"c","$voca"##,
            r##"bulary":{"https://json-schema.org/draft/2020-12/vocab/core":true},"title":"t","description":"d","type":"object","$defs":{"address":{"$anchor":"address"##,
            r##"Def","type":"object"}},"definitions":{"x":{}},"properties":{"a":{"$ref":"#addressDef"},"b":{"$dynamicRef":"#node"},"n":{"type":"number","exclusiveMini"##,
            r##"mum":0,"multipleOf":0.5}},"patternProperties":{"^x-":{}},"additionalProperties":false,"unevaluatedProperties":false,"propertyNames":{"maxLength":8},"m"##,
            r##"inProperties":0,"maxProperties":9,"required":["a"],"dependentRequired":{"a":["b"]},"dependentSchemas":{"b":{}},"allOf":[{"anyOf":[{"required":["a"]},{"##,
            r##""required":["b"]}]}],"oneOf":[{},{"not":{}}],"not":{"const":1},"if":{"required":["a"]},"then":{"required":["b"]},"else":{},"enum":[{}],"const":{},"pre"##,
            r##"fixItems":[{}],"items":false,"contains":{},"minContains":1,"maxContains":2,"unevaluatedItems":false,"contentEncoding":"base64","contentMediaType":"tex"##,
            r##"t/plain","contentSchema":{},"format":"x","default":{},"examples":[{}],"deprecated":false,"readOnly":false,"writeOnly":false}"##,
        );
        let config = format!(r#"{{"servers":[{{"route":"/mcp","name":"s","version":"1","tools":[{{"name":"t","inputSchema":{0},"outputSchema":{0},"http":{{"url":"https://example.com/"}}}}]}}]}}"#, text);
        let catalog = crate::config::load(&config).unwrap();
        let tool = catalog.servers[0].tool("t").unwrap();
        assert_eq!(serde_json::to_string(&tool.input_schema).unwrap(), text);
        assert_eq!(serde_json::to_string(&tool.listing["inputSchema"]).unwrap(), text);
        assert_eq!(serde_json::to_string(&tool.listing["outputSchema"]).unwrap(), text);
    }

    #[test]
    fn the_shipped_configurations_load() {
        for text in [include_str!("../../mcp-edge.json"), include_str!("../../examples/interactions/mcp-edge.json"), include_str!("../../tests/e2e/config.json")] {
            assert!(load(text).is_ok());
        }
        // Every field of the model, none at its default (the documentation test reads it too).
        assert!(file::read(include_str!("../../tests/every-field.json")).is_ok());
    }

    #[test]
    fn the_console_is_public_signed_in_or_off() {
        use crate::catalog::ConsoleAccess;
        let server = r#""servers":[{"name":"s","version":"1"}]"#;
        assert_eq!(load(&format!("{{{server}}}")).unwrap().console, ConsoleAccess::Public);
        assert_eq!(load(&format!(r#"{{{server},"console":{{"access":"off"}}}}"#)).unwrap().console, ConsoleAccess::Off);
        assert_eq!(load(&format!(r#"{{{server},"console":{{}}}}"#)).unwrap().console, ConsoleAccess::Public);
        assert_eq!(err(&format!(r#"{{{server},"console":{{"access":"admins"}}}}"#)), r#"console.access: "admins" is not "public", "signed-in" or "off""#);
        let staff = ConsoleAccess::SignedIn { roles: vec!["staff".into()] };
        assert_eq!(load(&format!(r#"{{{server},"console":{{"access":"signed-in","roles":["staff"]}}}}"#)).unwrap().console, staff);
        assert_eq!(load(&format!(r#"{{{server},"console":{{"access":"signed-in"}}}}"#)).unwrap().console, ConsoleAccess::SignedIn { roles: vec![] });
        assert_eq!(err(&format!(r#"{{{server},"console":{{"access":"public","roles":["staff"]}}}}"#)), r#"console.roles: applies only with "access": "signed-in""#);
        assert_eq!(err(&format!(r#"{{{server},"console":{{"access":"signed-in","roles":["a"," "]}}}}"#)), "console.roles[1]: must not be empty");
        assert!(err(&format!(r#"{{{server},"console":{{"acess":"off"}}}}"#)).starts_with("console.acess: unknown field `acess`"));
        assert!(err(&format!(r#"{{{server},"console":{{"access":true}}}}"#)).starts_with("console.access: invalid type: boolean `true`"));
    }

    #[test]
    fn check_reports_each_server_or_the_fault() {
        let two = r#"{"servers":[{"name":"s","version":"1","tools":[TOOL]},{"name":"t","version":"2","route":"/t/mcp"}]}"#.replace("TOOL", TOOL);
        assert_eq!(check("f.json", &two).unwrap(), "f.json: ok: s 1 on /mcp and /stream: tools weather\nf.json: ok: t 2 on /t/mcp and /t/stream: no tools");
        let fronting = r#"{"servers":[{"name":"s","version":"1","upstreams":[{"name":"n8n","url":"https://n8n.example.com/mcp/x"}]}]}"#;
        assert_eq!(check("f.json", fronting).unwrap(), "f.json: ok: s 1 on /mcp and /stream: no tools; upstream MCP servers n8n");
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
    fn code_mode_limits_default_and_refuse_what_is_not_a_bound() {
        let server = |extra: &str| format!(r#"{{"servers":[{{"name":"s","version":"1","toolDiscovery":"code"{extra},"tools":[{TOOL}]}}]}}"#);
        let limits = load(&server("")).unwrap().servers[0].code;
        assert_eq!((limits.timeout_ms, limits.cpu_ms, limits.max_steps, limits.max_memory_bytes), (60_000, 1_000, 10_000_000, 64 * 1024 * 1024));
        assert_eq!((limits.max_calls, limits.max_result_bytes, limits.max_log_lines, limits.max_code_bytes), (100, 256 * 1024, 200, 64 * 1024));
        let set = load(&server(r#","codeMode":{"maxCalls":7,"timeoutMs":500}"#)).unwrap().servers[0].code;
        assert_eq!((set.max_calls, set.timeout_ms, set.max_steps), (7, 500, 10_000_000));
        assert_eq!(err(&server(r#","codeMode":{"maxCall":7}"#)), "servers[0].codeMode.maxCall: unknown field; expected one of timeoutMs, cpuMs, maxSteps, maxMemoryBytes, maxCalls, maxResultBytes, maxLogLines, maxCodeBytes");
        assert_eq!(err(&server(r#","codeMode":{"maxCalls":-1}"#)), "servers[0].codeMode.maxCalls: must be a whole number above 0");
        assert_eq!(err(&server(r#","codeMode":{"maxCalls":0}"#)), "servers[0].codeMode.maxCalls: must be a whole number above 0");
        assert_eq!(err(&server(r#","codeMode":[]"#)), "servers[0].codeMode: must be an object");
        // Code mode's own tool names are the server's: a configured tool cannot take one.
        let taken = r#"{"servers":[{"name":"s","version":"1","toolDiscovery":"code","tools":[{"name":"execute","http":{"url":"https://api.example.com/x"}}]}]}"#;
        assert_eq!(err(taken), "servers[0].tools[0].name: \"execute\" is one of code mode's own tools (search, execute); rename it");
    }

    #[test]
    fn result_caches_refuse_what_could_answer_one_caller_with_anothers_result() {
        let tool = |extra: &str, cache: &str| format!(r#"{{"name":"t","inputSchema":{{"type":"object","properties":{{"q":{{"type":"string"}}}}}},"http":{{"url":"https://api.example.com/x?q={{q}}"{extra}}},"cache":{{"results":{cache}}}}}"#);
        let public = r#"{"scope":"public","ttlMs":60000}"#;
        let principal = r#"{"scope":"principal","ttlMs":60000}"#;
        let c = load(&with_tool(&tool("", public))).unwrap();
        let caching = c.servers[0].result_cache("t").cloned().unwrap();
        assert_eq!((caching.scope, caching.ttl_ms, caching.fingerprint.len()), (crate::cache::ResultScope::Public, 60_000, 64));
        assert!(c.servers[0].result_cache("weather").is_none());
        // Another file: another fingerprint, so entries of the old one are unreachable.
        let edited = load(&with_tool(&tool("", r#"{"scope":"public","ttlMs":60001}"#))).unwrap();
        assert_ne!(edited.servers[0].result_cache("t").unwrap().fingerprint, caching.fingerprint);
        let personal = tool(r#","headers":{"X-User":"{principal.subject}"}"#, public);
        assert!(err(&with_tool(&personal)).contains("reads the caller's identity ({principal.…}), so one caller's result must never answer another: use \"scope\": \"principal\""), "{}", err(&with_tool(&personal)));
        assert!(load(&with_tool(&tool(r#","headers":{"X-User":"{principal.subject}"}"#, principal))).is_ok());
        let token = tool("", public).replace(r#""cache""#, r#""forwardUpstreamToken":true,"cache""#);
        assert!(err(&with_tool(&token)).contains("forwards the caller's upstream token"));
        assert!(err(&with_tool(&tool(r#","headers":{"X-Trace":"{meta.trace}"}"#, principal))).contains("reads the request's _meta"));
        assert!(err(&with_tool(&tool("", r#"{"scope":"public","ttlMs":10}"#))).starts_with("servers[0].tools[1].cache.results.ttlMs: must be 1000"));
        assert!(err(&with_tool(&tool("", r#"{"scope":"everyone","ttlMs":60000}"#))).contains("unknown variant `everyone`"));
        let server_level = r#"{"servers":[{"name":"s","version":"1","cache":{"results":{"scope":"public","ttlMs":1000}}}]}"#;
        assert!(err(server_level).starts_with("servers[0].cache.results: results are cached per tool"));
    }

    #[test]
    fn a_resource_narrows_its_reads_hint() {
        let c = load(r#"{"servers":[{"name":"s","version":"1","cache":{"ttlMs":60000},"resources":[{"uri":"file:///a","name":"a","text":"A","cache":{"ttlMs":5000,"scope":"private"}},{"uri":"file:///b","name":"b","text":"B","cache":{"ttlMs":999999}}],"resourceTemplates":[{"uriTemplate":"doc://{id}","name":"d","http":{"url":"https://api.example.com/d/{id}"},"cache":{"ttlMs":2000}}]}]}"#).unwrap();
        let s = &c.servers[0];
        let hint = |uri| { let h = s.read_cache(uri); (h.ttl_ms, h.scope) };
        use crate::cache::CacheScope::{Private, Public};
        assert_eq!((hint("file:///a"), hint("file:///b"), hint("doc://7"), hint("other:x")), ((5000, Private), (60000, Public), (2000, Public), (60000, Public)));
    }

    #[test]
    fn a_minimal_config_gets_defaults() {
        let c = load(r#"{"servers":[{"name":"s","version":"1"}]}"#).unwrap();
        let s = &c.servers[0];
        assert_eq!(s.route.as_str(), "/mcp");
        assert_eq!(s.stream_route.as_str(), "/stream");
        assert_eq!(s.idle_timeout_ms, 1_800_000);
        assert_eq!(s.lease_ms, 10_000);
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
    fn query_and_cookie_errors_name_the_path() {
        let tool = |http: &str| format!(r#"{{"name":"a","inputSchema":{{"type":"object","properties":{{"color":{{"type":"string"}}}}}},"http":{{"url":"https://x/",{http}}}}}"#);
        let cases = [
            (r#""query":{"color":{"value":"{color}","style":"matrix"}}"#, r#"servers[0].tools[1].http.query.color.style: "matrix" is not one of form, spaceDelimited, pipeDelimited, deepObject"#),
            (r#""query":{"color":{"value":"{color}","style":"deepObject","explode":false}}"#, "servers[0].tools[1].http.query.color.explode: deepObject needs explode: true"),
            (r#""query":{"color":{"value":"{color}","style":"pipeDelimited","explode":false},"":"x"}"#, "servers[0].tools[1].http.query: a query parameter name must not be empty"),
            (r#""query":{"color":"{color"}"#, "servers[0].tools[1].http.query.color: unclosed '{' at offset 0"),
            (r#""query":{"color":{"value":"{+color}"}}"#, "servers[0].tools[1].http.query.color.value: operator in {+color} is only allowed in url templates"),
            (r#""query":{"filter[status]":"{colour}"}"#, r#"servers[0].tools[1].http.query.filter[status]: unknown argument "colour" in template"#),
            (r#""query":{"color":{"value":"{colour}","style":"form"}}"#, r#"servers[0].tools[1].http.query.color.value: unknown argument "colour" in template"#),
            (r#""query":{"color":{"value":"c-{color}","style":"deepObject"}}"#, "servers[0].tools[1].http.query.color.value: a deepObject value must be exactly one variable, such as {filter}"),
            (r#""query":{"color":{"value":"{meta.auth.k}"}}"#, r#"servers[0].tools[1].http.query.color.value: "meta.auth.k" needs "forwardMetaAuth": true on the tool"#),
            (r#""query":{"color":{"value":"{color}","styl":"form"}}"#, "servers[0].tools[1].http.query.color.styl: unknown field `styl`, expected one of `value`, `style`, `explode`, `allowReserved`"),
            // "missing field" names the enclosing object, as it does for any nested object.
            (r#""query":{"color":{"style":"form"}}"#, "servers[0].tools[1].http.query: missing field `value`"),
            (r#""query":{"color":1}"#, r#"servers[0].tools[1].http.query.color: invalid type: integer `1`, expected a text template or an object with "value""#),
            (r#""query":{"color":"a","color":"b"}"#, r#"servers[0].tools[1].http.query: duplicate key "color""#),
            (r#""query":["color"]"#, "servers[0].tools[1].http.query: invalid type: sequence, expected an object"),
            (r#""cookies":{"a b":"{color}"}"#, "servers[0].tools[1].http.cookies.a b: is not a valid cookie name (an RFC 6265 token)"),
            (r#""cookies":{"":"x"}"#, "servers[0].tools[1].http.cookies.: is not a valid cookie name (an RFC 6265 token)"),
            (r#""cookies":{"c":"{colour}"}"#, r#"servers[0].tools[1].http.cookies.c: unknown argument "colour" in template"#),
            (r#""cookies":{"c":"{env.bad-name}"}"#, r#"servers[0].tools[1].http.cookies.c: invalid variable name "env.bad-name" in {env.bad-name}"#),
            (r#""headers":{"cookie":"a=1"},"cookies":{"c":"{color}"}"#, "servers[0].tools[1].http.headers.cookie: cannot be used with http.cookies, which makes the Cookie header"),
        ];
        for (http, want) in cases {
            assert_eq!(err(&with_tool(&tool(http))), want, "{http}");
        }
        // A Cookie header alone, and secrets in cookies, are fine.
        assert!(load(&with_tool(&tool(r#""headers":{"Cookie":"a={color}"}"#))).is_ok());
        let c = load(&with_tool(&tool(r#""cookies":{"sid":"{env.SESSION}"},"query":{"k":"{env.KEY}"}"#))).unwrap();
        assert_eq!(c.servers[0].tools[1].request.secrets, ["KEY", "SESSION"]);
    }

    #[test]
    fn resources_use_query_parameters_and_cookies_without_meta() {
        let server = |http: &str| format!(r#"{{"servers":[{{"name":"s","version":"1","resourceTemplates":[{{"uriTemplate":"a://{{id}}","name":"t","http":{{"method":"GET","url":"https://h/x",{http}}}}}]}}]}}"#);
        let c = load(&server(r#""query":{"$id":"{id}","tags":{"value":"{id}","style":"deepObject"}},"cookies":{"c":"{id}"}"#)).unwrap();
        let t = &c.servers[0].resource_templates[0];
        let args: serde_json::Map<String, serde_json::Value> = t.matches("a://7 8").unwrap().into_iter().map(|(k, v)| (k, v.into())).collect();
        let e = t.request().render("r", &args, &crate::upstream::Bindings::new()).unwrap_err();
        assert!(e.message().ends_with(r#"query parameter "tags" (deepObject) needs an object value"#), "{}", e.message());
        let c = load(&server(r#""query":{"$id":"{id}"},"cookies":{"c":"{id}"}"#)).unwrap();
        let call = c.servers[0].resource_templates[0].request().render("r", &args, &crate::upstream::Bindings::new()).unwrap();
        assert_eq!((call.url.as_str(), call.headers.as_slice()), ("https://h/x?%24id=7%208", [("Cookie".to_string(), "c=7%208".to_string())].as_slice()));
        assert_eq!(
            err(&server(r#""query":{"q":"{meta.trace}"}"#)),
            r#"servers[0].resourceTemplates[0].http.query.q: "meta.trace": only tool templates may use params._meta values"#
        );
    }

    #[test]
    fn the_callers_identity_only_in_tools_and_its_token_only_when_the_tool_opts_in() {
        let tool = |extra: &str, header: &str| with_tool(&format!(r#"{{"name":"a",{extra}"http":{{"url":"https://x/{{principal.subject}}","headers":{{"A":"{header}"}}}}}}"#));
        assert!(load(&tool("", "{principal.id} {principal.email} {principal.roles}")).is_ok());
        assert_eq!(err(&tool("", "Bearer {principal.upstreamToken}")), r#"servers[0].tools[1].http.headers.A: "principal.upstreamToken" needs "forwardUpstreamToken": true on the tool"#);
        // forwardMetaAuth is another opt-in: it does not let the token through.
        assert_eq!(err(&tool(r#""forwardMetaAuth":true,"#, "{principal.upstreamToken}")), r#"servers[0].tools[1].http.headers.A: "principal.upstreamToken" needs "forwardUpstreamToken": true on the tool"#);
        assert!(load(&tool(r#""forwardUpstreamToken":true,"#, "Bearer {principal.upstreamToken}")).is_ok());
        assert_eq!(
            err(&tool(r#""forwardUpstreamToken":true,"execution":"queued","#, "Bearer {principal.upstreamToken}")),
            "servers[0].tools[1].forwardUpstreamToken: only direct tools may forward the caller's upstream token; this one is queued or callback"
        );
        assert_eq!(
            err(&tool("", "{principal.name}")),
            r#"servers[0].tools[1].http.headers.A: unknown principal field "name" in template: one of id, subject, email, roles, upstreamToken"#
        );
        // A subject names a caller, which may choose it (a JWT's `sub`): never a host.
        assert_eq!(
            err(&with_tool(r#"{"name":"a","http":{"url":"https://{principal.subject}.x.test/"}}"#)),
            "servers[0].tools[1].http.url: {principal.subject} appears before the host is complete: it is a value the client controls, which may fill the path, query or fragment, never the scheme, host or port (only {env.NAME} may)"
        );
        let server = |body: &str| format!(r#"{{"servers":[{{"name":"s","version":"1",{body}}}]}}"#);
        let elsewhere = [
            (r#""resources":[{"uri":"a://x","name":"x","http":{"url":"https://h/{principal.subject}"}}]"#, "servers[0].resources[0].http.url"),
            (r#""resourceTemplates":[{"uriTemplate":"a://{x}","name":"t","http":{"url":"https://h/{x}","headers":{"A":"{principal.subject}"}}}]"#, "servers[0].resourceTemplates[0].http.headers.A"),
            (r#""prompts":[{"name":"p","messages":[{"role":"user","content":{"type":"text","text":"{principal.subject}"}}]}]"#, "servers[0].prompts[0].messages[0].content.text"),
            (r#""auth":{"introspection":{"http":{"url":"https://h/who","headers":{"A":"{principal.subject}"}},"subject":"/sub"}}"#, "servers[0].auth.introspection.http.headers.A"),
        ];
        for (body, at) in elsewhere {
            assert_eq!(err(&server(body)), format!(r#"{at}: "principal.subject": only tool templates may use the caller's identity"#), "{body}");
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
        for url in ["https://x/{h}", "https://x{/h}", "https://x{?h}", "{+env.BASE}/{+h}", "https://x:8080/a{#h}", "https://{env.HOST}:{env.PORT}/{h}"] {
            let tool = format!(r#"{{"name":"a",{schema},"http":{{"url":"{url}"}}}}"#);
            assert!(load(&with_tool(&tool)).is_ok(), "{url}");
        }
    }

    #[test]
    fn values_the_client_controls_never_choose_the_host() {
        // `_meta` values, route parameters and the caller's identity are the client's as much as
        // arguments are: `https://{meta.host}/v1` with a secret in a header sends it wherever the
        // caller says.
        let routed = |url: &str| {
            format!(r#"{{"servers":[{{"name":"s","version":"1","route":"/t/{{tenant}}/mcp","tools":[{{"name":"a","http":{{"url":"{url}","headers":{{"Authorization":"Bearer {{env.API_KEY}}"}}}}}}]}}]}}"#)
        };
        for (url, var) in [
            ("https://{meta.host}/v1", "meta.host"),
            ("https://{route.tenant}.api.example.com/", "route.tenant"),
            ("https://api.example.com:{meta.port}/", "meta.port"),
            ("https://api.example.com{+meta.path}", "meta.path"),
            ("{+env.BASE}{+route.tenant}", "route.tenant"),
            ("https://{principal.email}/", "principal.email"),
        ] {
            assert_eq!(
                err(&routed(url)),
                format!("servers[0].tools[0].http.url: {{{var}}} appears before the host is complete: it is a value the client controls, which may fill the path, query or fragment, never the scheme, host or port (only {{env.NAME}} may)"),
                "{url}"
            );
        }
        // The scheme is always written out.
        assert!(err(&routed("http{meta.s}://api.example.com/")).ends_with("must start with http://, https:// or a {+env.NAME} base URL"));
        for url in ["https://api.example.com/{meta.path}", "https://api.example.com/t/{route.tenant}", "{+env.BASE}/{route.tenant}{?meta.q}"] {
            assert!(load(&routed(url)).is_ok(), "{url}");
        }
        // Introspection's `{token}` is the client's credential: never a host either.
        let introspected = r#"{"servers":[{"name":"s","version":"1","auth":{"introspection":{"http":{"url":"https://{token}.auth.test/me"},"subject":"/sub"}}}]}"#;
        assert!(err(introspected).starts_with("servers[0].auth.introspection.http.url: {token} appears before the host is complete"), "{}", err(introspected));
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

    #[test]
    fn urls_and_host_lists_are_read_by_the_one_url_parser() {
        let server = |private: &str, url: &str| format!(r#"{{"servers":[{{"name":"s","version":"1","privateUpstreams":{private},"tools":[{{"name":"a","http":{{"url":"{url}"}}}}]}}]}}"#);
        // A host written out is checked when the file loads, as parsed.
        assert!(load(&server(r#"["127.0.0.1"]"#, "http://2130706433:8788/x")).is_ok(), "the listed host, spelled otherwise");
        assert_eq!(err(&server("[]", "http://0x7f.1:8788/x")), "servers[0].tools[0].http.url: the upstream host 127.0.0.1 is a loopback address; list it in the server's privateUpstreams to allow it");
        assert!(err(&server(r#"["127.0.0.1"]"#, "http://evil.example\\\\@127.0.0.1/x")).contains("backslash"));
        assert!(err(&server(r#"["127.0.0.1"]"#, "http://１２７.0.0.1/x")).contains("punycode"));
        // An allowlist entry is a host, or `*.domain`.
        assert!(load(&server(r#"["*.corp.test", "[::1]", "localhost"]"#, "https://api.example.com/")).is_ok());
        assert_eq!(err(&server(r#"["127.0.0.1", "localhost:8788"]"#, "https://api.example.com/")), "servers[0].privateUpstreams[1]: \"localhost:8788\" is not a host: write the host alone (no scheme, port or path), or *.domain");
        assert!(err(&server(r#"["http://localhost"]"#, "https://api.example.com/")).starts_with("servers[0].privateUpstreams[0]:"));
        let oauth = r#"{"servers":[{"name":"s","version":"1"}],"oauth":{"signIn":{"users":[{"username":"a","passwordSecret":"PW"}]},"privateHosts":["127.0.0.1/"]}}"#;
        assert!(err(oauth).starts_with("oauth.privateHosts[0]:"), "{}", err(oauth));
    }

    #[test]
    fn a_catalog_names_its_secrets() {
        let config = serde_json::json!({
            "oauth": {"signIn": {"users": [{"username": "ann", "passwordSecret": "ANN_PASSWORD", "roles": ["admin"]}]}},
            "servers": [{
                "name": "s", "version": "1", "privateUpstreams": ["127.0.0.1"],
                "auth": {"tokens": [{"secret": "BOT_TOKEN", "subject": "bot"}], "oauth": true},
                "tools": [{"name": "t", "description": "d", "inputSchema": {"type": "object"},
                           "http": {"method": "GET", "url": "https://api.example.com/x", "headers": {"Authorization": "Bearer {env.API_KEY}"}}}]
            }]
        });
        let catalog = super::load(&config.to_string()).unwrap();
        assert_eq!(catalog.own_secrets(), ["ANN_PASSWORD", "BOT_TOKEN", "CALLBACK_SIGNING_KEY", "CONNECTIONS_KEY", "CONNECTIONS_KEY_PREVIOUS", "MCP_EDGE_ADMIN_TOKEN", "OAUTH_SIGNING_KEY"]);
        assert_eq!(catalog.secret_names(), ["ANN_PASSWORD", "API_KEY", "BOT_TOKEN", "CALLBACK_SIGNING_KEY", "CONNECTIONS_KEY", "CONNECTIONS_KEY_PREVIOUS", "MCP_EDGE_ADMIN_TOKEN", "OAUTH_SIGNING_KEY"]);
    }

    #[test]
    fn name_outweighs_tags_and_title_which_outweigh_the_description() {
        let text = r#"{"servers": [{"name": "s", "version": "1", "tools": [
            {"name": "t_description", "description": "Archives things.", "http": {"url": "https://x.test/"}},
            {"name": "t_title", "title": "Archive", "http": {"url": "https://x.test/"}},
            {"name": "t_tags", "tags": ["ARCHIVE"], "http": {"url": "https://x.test/"}},
            {"name": "archive_now", "http": {"url": "https://x.test/"}},
            {"name": "t_other", "description": "Nothing to see.", "http": {"url": "https://x.test/"}}]}]}"#;
        let tools = super::load(text).unwrap().servers.remove(0).as_ref().clone().tools;
        let index = crate::tools::search::Index::new(&tools);
        let names = |query: &str, keep: &dyn Fn(&crate::tools::Tool) -> bool| index.search(&tools, query, keep).iter().map(|t| t.name.as_str()).collect::<Vec<_>>();
        assert_eq!(names("archive", &|_| true), ["archive_now", "t_title", "t_tags", "t_description"]);
        // Each query word adds its own score: archive (3) + now (3) beats archive (2) alone.
        assert_eq!(names("archives now", &|_| true), ["archive_now", "t_title", "t_tags", "t_description"]);
        assert_eq!(names("archive", &|t| t.name != "archive_now"), ["t_title", "t_tags", "t_description"]);
        assert_eq!(names("", &|_| true).len(), 5);
        assert_eq!(names("zebra", &|_| true), Vec::<&str>::new());
    }
}
