//! A configured tool compiled: its name, schemas, request, retries, execution and reply plan
//! checked, and its `tools/list` entry built once.

use serde_json::{json, Map, Value};

use super::model::{ExecutionConfig, OversizeConfig, ResultModeConfig, ToolConfig};
use super::request::Scope;
use super::ConfigError;
use crate::pending::Deferral;
use crate::tools::Tool;

/// Compiles a configured tool; `max_reply_bytes` is the server's limit, which it may lower.
pub fn tool(t: ToolConfig, path: &str, route_params: &[String], max_reply_bytes: u64) -> Result<Tool, ConfigError> {
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
    crate::schema::lint(&t.input_schema).map_err(|(at, e)| ConfigError::at(format!("{path}.inputSchema{at}"), e))?;
    if let Some(output) = &t.output_schema {
        if output.get("type").and_then(Value::as_str) != Some("object") {
            return Err(at("outputSchema", "must be a JSON Schema with \"type\": \"object\"".into()));
        }
        crate::schema::lint(output).map_err(|(at, e)| ConfigError::at(format!("{path}.outputSchema{at}"), e))?;
    }
    let arguments: Vec<String> = t
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let used = std::cell::Cell::new(false);
    let reads = std::cell::Cell::new(super::request::Reads::default());
    let scope = Scope { path, arguments: &arguments, route_params, meta: true, meta_auth: t.forward_meta_auth, principal: true, upstream_token: t.forward_upstream_token, connection: t.auth.as_ref().map(|_| &used), reads: Some(&reads) };
    let mut request = super::request::request(&t.http, &scope, "http")?;
    if let Some(retry) = &t.retry {
        let hinted = t.annotations.as_ref().and_then(|a| a.get("idempotentHint")) == Some(&Value::Bool(true));
        if !(matches!(request.method.as_str(), "GET" | "HEAD") || hinted) {
            return Err(at("retry", "retries need an idempotent tool: method GET, or \"annotations\": {\"idempotentHint\": true}".into()));
        }
        if retry.attempts == 0 || retry.attempts > 10 {
            return Err(at("retry.attempts", "must be 1 to 10".into()));
        }
        if retry.initial_delay_ms == 0 || retry.max_delay_ms < retry.initial_delay_ms {
            return Err(at("retry", "initialDelayMs must be at least 1 and at most maxDelayMs".into()));
        }
        request.retry = Some(crate::upstream::retry::RetryPolicy { attempts: retry.attempts, initial_delay_ms: retry.initial_delay_ms, max_delay_ms: retry.max_delay_ms });
    }
    if let Some(pick) = &t.response.pick {
        if !(pick.is_empty() || pick.starts_with('/')) {
            return Err(at("response.pick", format!("{pick:?} is not a JSON Pointer: it must be empty or start with \"/\"")));
        }
    }
    let deferral = match t.execution {
        ExecutionConfig::Direct => None,
        ExecutionConfig::Queued => Some(Deferral::Queued),
        ExecutionConfig::Callback => Some(Deferral::Callback),
    };
    if deferral.is_some() && !(1_000..=86_400_000).contains(&t.pending_timeout_ms) {
        return Err(at("pendingTimeoutMs", "must be 1000 to 86400000".into()));
    }
    if deferral.is_some() && t.forward_upstream_token {
        // A queued request waits in a queue message, and a late result is redacted without
        // the call's own list: the caller's token would be stored, or could come back.
        return Err(at("forwardUpstreamToken", "only direct tools may forward the caller's upstream token; this one is queued or callback".into()));
    }
    if deferral.is_some() && t.auth.is_some() {
        // The same reason: a connection's token would wait in a queue message or come back.
        return Err(at("auth.connection", "only direct tools may use a connection; this one is queued or callback".into()));
    }
    if deferral == Some(Deferral::Queued) && t.sse.close_after_ms.is_some() {
        return Err(at("sse.closeAfterMs", "a queued tool's result already arrives later; leave closeAfterMs out".into()));
    }
    if let Some(results) = t.cache.and_then(|c| c.results) {
        results_cache(&results, &t, deferral.is_some(), reads.get()).map_err(|(field, why)| at(field, why))?;
    }
    let task_support = t.task_support.unwrap_or(if deferral.is_some() { crate::tools::TaskSupport::Optional } else { crate::tools::TaskSupport::Forbidden });
    if t.input_before_task && task_support == crate::tools::TaskSupport::Forbidden {
        return Err(at("inputBeforeTask", "only a tool that runs as a task asks before it; set taskSupport".into()));
    }
    tags(&t.tags, path)?;
    if t.response.max_bytes == Some(0) {
        return Err(at("response.maxBytes", "must be greater than 0".into()));
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
    if let Some(output) = &t.output_schema {
        listing.insert("outputSchema".into(), output.clone());
    }
    if let Some(annotations) = &t.annotations {
        listing.insert("annotations".into(), annotations.clone());
    }
    if task_support != crate::tools::TaskSupport::Forbidden {
        listing.insert("execution".into(), json!({"taskSupport": task_support.name()}));
    }
    let result_mode = match t.result {
        ResultModeConfig::Map => crate::upstream::reply::ResultMode::Map,
        ResultModeConfig::Passthrough => crate::upstream::reply::ResultMode::Passthrough,
    };
    if t.sse.close_after_ms == Some(0) {
        return Err(at("sse.closeAfterMs", "must be greater than 0".into()));
    }
    let reply = crate::upstream::reply::ReplyPlan {
        mode: result_mode,
        pick: t.response.pick.filter(|p| !p.is_empty()),
        output_schema: t.output_schema,
        max_bytes: t.response.max_bytes.unwrap_or(max_reply_bytes),
        truncate: t.response.oversize == OversizeConfig::Truncate,
        resource_uri: format!("mcp-edge://tools/{}/reply", t.name),
    };
    let header_params = crate::tools::header_params(&t.input_schema);
    Ok(Tool { name: t.name, listing: Value::Object(listing), input_schema: t.input_schema, header_params, request, reply, close_after_ms: t.sse.close_after_ms, forward_meta_auth: t.forward_meta_auth, forward_upstream_token: t.forward_upstream_token, deferral: deferral.map(|d| (d, t.pending_timeout_ms)), roles: t.roles, tags: t.tags, cache: None, mcp: None, task_support, input_before_task: t.input_before_task, trace: t.trace, curation: None, connection: t.auth.map(|a| a.connection) })
}

/// At most `MAX_TAGS` tags, each 1 to `MAX_TAG_CHARS` characters: words for a search, not text.
fn tags(tags: &[String], path: &str) -> Result<(), ConfigError> {
    const MAX_TAGS: usize = 32;
    const MAX_TAG_CHARS: usize = 64;
    if tags.len() > MAX_TAGS {
        return Err(ConfigError::at(format!("{path}.tags"), format!("at most {MAX_TAGS} tags")));
    }
    match tags.iter().position(|tag| tag.trim().is_empty() || tag.chars().nth(MAX_TAG_CHARS).is_some()) {
        Some(i) => Err(ConfigError::at(format!("{path}.tags[{i}]"), format!("must be 1 to {MAX_TAG_CHARS} characters, not blank"))),
        None => Ok(()),
    }
}

/// Refuses a tool result cache that could answer one caller with another's result, or one
/// request with another's: a `public` entry of a tool whose request depends on who calls
/// (`principal.*`, their upstream token, a per-user connection, their `_meta` credentials), and
/// any entry of a tool whose request reads the request's `_meta` (not part of the key).
fn results_cache(results: &super::model::ResultsCacheConfig, t: &ToolConfig, deferred: bool, reads: super::request::Reads) -> Result<(), (&'static str, String)> {
    const FIELD: &str = "cache.results";
    if !(1_000..=86_400_000).contains(&results.ttl_ms) {
        return Err(("cache.results.ttlMs", "must be 1000 to 86400000 (one day)".into()));
    }
    if results.max_bytes.is_some_and(|b| b == 0 || b > 10 * 1024 * 1024) {
        return Err(("cache.results.maxBytes", "must be 1 to 10485760".into()));
    }
    if deferred {
        return Err((FIELD, "only direct tools' results may be cached; this one is queued or callback".into()));
    }
    if reads.meta {
        return Err((FIELD, "this tool's request reads the request's _meta ({meta.…}), which is not part of a cached result's key: its results cannot be cached".into()));
    }
    if results.scope == crate::cache::ResultScope::Public {
        let personal = if reads.principal {
            Some("reads the caller's identity ({principal.…})")
        } else if t.forward_upstream_token {
            Some("forwards the caller's upstream token")
        } else if t.auth.is_some() {
            Some("uses a per-user connection (auth.connection)")
        } else if t.forward_meta_auth {
            Some("forwards the caller's _meta credentials")
        } else {
            None
        };
        if let Some(why) = personal {
            return Err((FIELD, format!("this tool {why}, so one caller's result must never answer another: use \"scope\": \"principal\", not \"public\"")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod rendered {
    //! Configured tools compiled, then their requests rendered: what `tools` and `upstream`
    //! do with what this module made.
    use super::tool as compile;
    use super::*;
    use crate::upstream::Bindings;
    use serde_json::json;

    fn tool(http: Value) -> Tool {
        let config: ToolConfig = serde_json::from_value(json!({
            "name": "t",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "note": {"type": "string"}}},
            "http": http
        }))
        .unwrap();
        compile(config, "tools[0]", &["chat".to_string()], 1000).unwrap()
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

    #[test]
    fn form_and_none_bodies() {
        let t = tool(json!({"url": "https://x.test/hook", "bodyType": "form"}));
        let call = t.prepare(&args(json!({"city": "São Paulo & Rio", "days": 2, "note": null})), &Bindings::new()).unwrap();
        assert_eq!(call.body.as_deref(), Some("city=S%C3%A3o+Paulo+%26+Rio&days=2"));
        assert_eq!(call.headers, [("Content-Type".to_string(), "application/x-www-form-urlencoded".to_string())]);
        let t = tool(json!({"url": "https://x.test/hook", "bodyType": "form", "body": {"q": "{city}", "tags": ["a b", "{days}"], "src": "mcp"}}));
        let call = t.prepare(&args(json!({"city": "x=y", "days": 3})), &Bindings::new()).unwrap();
        assert_eq!(call.body.as_deref(), Some("q=x%3Dy&tags=a+b&tags=3&src=mcp"));
        let t = tool(json!({"url": "https://x.test/ping", "bodyType": "none"}));
        let call = t.prepare(&args(json!({"city": "Oslo"})), &Bindings::new()).unwrap();
        assert_eq!((call.method.as_str(), call.body, call.headers.len()), ("POST", None, 0));
    }

    #[test]
    fn values_are_encoded_for_where_they_land() {
        let t = tool(json!({
            "url": "https://x.test/a/{city}/b{?note,days}",
            "headers": {"X-City": "{city}", "X-Trace": "{meta.traceId}", "X-Depth": "{meta.client.depth}"},
            "body": {"city": "{city}", "text": "in {city}", "trace": "{meta.traceId}"}
        }));
        let bindings: Bindings = [("meta.traceId".to_string(), json!("t-1")), ("meta.client.depth".to_string(), json!(2))].into();
        let call = t.prepare(&args(json!({"city": "Zürich \"Nord\"/2?", "note": "a&b=c d"})), &bindings).unwrap();
        assert_eq!(call.url, "https://x.test/a/Z%C3%BCrich%20%22Nord%22%2F2%3F/b?note=a%26b%3Dc%20d");
        assert_eq!(call.headers[0], ("X-City".to_string(), "Z%C3%BCrich \"Nord\"/2?".to_string()));
        assert_eq!(call.headers[1], ("X-Depth".to_string(), "2".to_string()));
        assert_eq!(call.headers[2], ("X-Trace".to_string(), "t-1".to_string()));
        assert_eq!(call.body.as_deref(), Some(r#"{"city":"Zürich \"Nord\"/2?","text":"in Zürich \"Nord\"/2?","trace":"t-1"}"#));
        let e = t.prepare(&args(json!({"city": "a\tb\u{7}"})), &Bindings::new()).unwrap_err();
        assert!(e.message().contains("control character"), "{}", e.message());
    }

    /// A tool whose arguments fill query parameters, cookies and headers of every kind.
    fn openapi_tool() -> Tool {
        let config: ToolConfig = serde_json::from_value(json!({
            "name": "t",
            "inputSchema": {"type": "object", "properties": {
                "city": {"type": "string"}, "days": {"type": "integer"}, "note": {"type": "string"},
                "filter": {"type": "object"}, "tags": {"type": "array"}, "flag": {"type": "boolean"}
            }},
            "http": {
                "method": "GET",
                "url": "https://x.test/a/{city}?fixed=1#frag",
                "query": {
                    "per-page": "{days}",
                    "filter": {"value": "{filter}", "style": "deepObject", "explode": true},
                    "tags": {"value": "{tags}", "style": "pipeDelimited"},
                    "$top": "10",
                    "key": "{env.K}",
                    "opt": "{note}",
                    "flag": {"value": "{flag}", "style": "spaceDelimited"},
                    "path": {"value": "/{city}/{note}", "allowReserved": true}
                },
                "cookies": {"sid": "{env.SESSION}", "pref": "{note}", "list": "{tags}"},
                "headers": {"X-Note": "{note}", "X-Fixed": "v", "X-Trace": "{meta.t}", "X-Both": "{note}-{days}"}
            }
        }))
        .unwrap();
        compile(config, "tools[0]", &[], 1000).unwrap()
    }

    #[test]
    fn query_parameters_cookies_and_optional_headers() {
        let t = openapi_tool();
        assert_eq!(t.request.secrets, ["K", "SESSION"]);
        let b: Bindings = [("env.K".to_string(), json!("k/v")), ("env.SESSION".to_string(), json!("s;1 é"))].into();
        let call = t.prepare(&args(json!({"city": "Oslo", "days": 3, "filter": {"status": "open", "a b": "x&y"}, "tags": ["a", "b|c"], "flag": false})), &b).unwrap();
        assert_eq!(call.url, "https://x.test/a/Oslo?fixed=1&per-page=3&filter[status]=open&filter[a%20b]=x%26y&tags=a|b%7Cc&%24top=10&key=k%2Fv&flag=false&path=/Oslo/#frag");
        // X-Note is left out (its only argument is absent); X-Trace's binding is not an argument.
        let headers: Vec<(&str, &str)> = call.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(headers, [("X-Both", "-3"), ("X-Fixed", "v"), ("X-Trace", ""), ("Cookie", "sid=s%3B1%20%C3%A9; list=a,b|c")]);

        // Only the secret and literal parts when no argument has a value; null is no value.
        let call = t.prepare(&args(json!({"note": null, "tags": []})), &b).unwrap();
        assert_eq!(call.url, "https://x.test/a/?fixed=1&%24top=10&key=k%2Fv#frag");
        let headers: Vec<(&str, &str)> = call.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(headers, [("X-Fixed", "v"), ("X-Trace", ""), ("Cookie", "sid=s%3B1%20%C3%A9")]);

        let call = t.prepare(&args(json!({"note": "a b/c", "filter": {}})), &b).unwrap();
        assert_eq!(call.url, "https://x.test/a/?fixed=1&%24top=10&key=k%2Fv&opt=a%20b%2Fc&path=//a%20b/c#frag");
        let headers: Vec<(&str, &str)> = call.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(headers, [("X-Both", "a b/c-"), ("X-Fixed", "v"), ("X-Note", "a b/c"), ("X-Trace", ""), ("Cookie", "sid=s%3B1%20%C3%A9; pref=a%20b/c")]);

        // A deepObject that is given something else is the caller's fault.
        let e = t.prepare(&args(json!({"filter": ["x"]})), &b).unwrap_err();
        assert_eq!((e.code(), e.message()), (-32602, r#"Invalid params: query parameter "filter" (deepObject) needs an object value"#.to_string()));
    }

    /// The example of docs/configuration.md ("Query parameters and cookies").
    #[test]
    fn the_documented_query_example() {
        let docs = include_str!("../../docs/configuration.md");
        let start = docs.find(r#"{"name": "list_issues""#).unwrap();
        let end = start + docs[start..].find("```").unwrap();
        let t = compile(serde_json::from_str(&docs[start..end]).unwrap(), "tools[0]", &[], 1000).unwrap();
        let b: Bindings = [("env.SESSION".to_string(), json!("s1"))].into();
        let call = t.prepare(&args(json!({"perPage": 50, "filter": {"state": "open"}, "labels": ["bug", "ui"]})), &b).unwrap();
        assert_eq!(call.url, "https://api.example.com/issues?per-page=50&filter[state]=open&labels=bug|ui&api-version=2024-01");
        assert_eq!(call.headers, [("Cookie".to_string(), "session=s1".to_string())]);
        assert_eq!(t.prepare(&Map::new(), &b).unwrap().url, "https://api.example.com/issues?api-version=2024-01");
    }

    #[test]
    fn a_header_of_secrets_or_literals_is_always_sent() {
        let t = tool(json!({"url": "https://x.test/", "bodyType": "none", "headers": {"X-K": "{env.K}", "X-L": "lit", "X-Day": "day {days}"}}));
        let b: Bindings = [("env.K".to_string(), json!(""))].into();
        let call = t.prepare(&args(json!({})), &b).unwrap();
        assert_eq!(call.headers, [("X-K".to_string(), String::new()), ("X-L".to_string(), "lit".to_string())]);
        let call = t.prepare(&args(json!({"days": 0})), &b).unwrap();
        assert_eq!(call.headers[0], ("X-Day".to_string(), "day 0".to_string()));
    }

    fn compile_error(extra: Value) -> String {
        let mut config = json!({"name": "t", "http": {"url": "https://x.test/"}});
        for (k, v) in extra.as_object().unwrap() {
            config[k] = v.clone();
        }
        let config: ToolConfig = serde_json::from_value(config).unwrap();
        compile(config, "tools[0]", &[], 1000).unwrap_err().to_string()
    }

    #[test]
    fn tool_settings_are_checked_when_loaded() {
        assert_eq!(compile_error(json!({"retry": {}})), "tools[0].retry: retries need an idempotent tool: method GET, or \"annotations\": {\"idempotentHint\": true}");
        let ok: ToolConfig = serde_json::from_value(json!({"name": "t", "annotations": {"idempotentHint": true}, "retry": {"attempts": 4}, "http": {"url": "https://x.test/"}})).unwrap();
        let t = compile(ok, "tools[0]", &[], 1000).unwrap();
        assert_eq!(t.request.retry, Some(crate::upstream::retry::RetryPolicy { attempts: 4, initial_delay_ms: 200, max_delay_ms: 5000 }));
        assert_eq!(compile_error(json!({"http": {"method": "GET", "url": "https://x.test/"}, "retry": {"attempts": 0}})), "tools[0].retry.attempts: must be 1 to 10");
        assert_eq!(compile_error(json!({"response": {"pick": "data"}})), "tools[0].response.pick: \"data\" is not a JSON Pointer: it must be empty or start with \"/\"");
        assert_eq!(compile_error(json!({"outputSchema": {"type": "array"}})), "tools[0].outputSchema: must be a JSON Schema with \"type\": \"object\"");
        assert_eq!(
            compile_error(json!({"inputSchema": {"type": "object", "properties": {"a": {"$ref": "#/$defs/b"}}}})),
            "tools[0].inputSchema.properties.a.$ref: \"#/$defs/b\" does not resolve within the schema (use \"#/$defs/NAME\")"
        );
        assert_eq!(compile_error(json!({"http": {"url": "https://x.test/", "bodyType": "none", "body": {}}})), "tools[0].http.body: is set, but bodyType is \"none\"");
        assert_eq!(compile_error(json!({"http": {"url": "https://x.test/", "bodyType": "form", "body": "{x}"}})), "tools[0].http.body: a form body must be an object of field templates");
        assert_eq!(compile_error(json!({"http": {"url": "https://x.test/", "redirectHosts": ["a.test/x"]}})), "tools[0].http.redirectHosts[0]: \"a.test/x\" is not a host name");
        assert_eq!(compile_error(json!({"http": {"url": "https://x.test/{meta.auth.key}"}})), "tools[0].http.url: \"meta.auth.key\" needs \"forwardMetaAuth\": true on the tool");
    }
}

