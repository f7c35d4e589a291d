//! Catalog mode (`"toolDiscovery": "catalog"`, MCP's progressive tool discovery): `tools/list`
//! lists three tools that search the server's tools, describe one, and call one by name, so a
//! model reads a few hundred tokens where a thousand tool definitions would cost it a million.
//! Searching and describing answer at once, from the catalog; `call_tool` becomes the named
//! tool's own `tools/call`, which `dispatch` then serves like any other.

use serde_json::{json, Map, Value};

use crate::catalog::{Gate, Server};
use crate::jsonrpc::Request;
use crate::tools::meta::{MetaTool, DEFAULT_LIMIT};
use crate::tools::search::Index;
use crate::tools::Tool;
use crate::upstream::reply;

/// A search result's description: its first sentence, cut at this many characters.
const SUMMARY_CHARS: usize = 200;

/// `search_tools`: the tools the principal may see that have every tag asked for (in any case)
/// and match the query, best first, up to the limit; `total` counts them all. `apps`: whether
/// the client declared MCP Apps (a tool only an app may call is found by those alone).
pub fn search(server: &Server, index: &Index, gate: &Gate<'_>, apps: bool, args: &Value) -> Value {
    let (found, total) = found(server, index, gate, apps, args, DEFAULT_LIMIT);
    let entries: Vec<Value> = found.iter().map(|tool| entry(tool)).collect();
    reply::structured_result(json!({"tools": entries, "total": total}))
}

/// What a search (`query`, `tags`, `limit`: catalog mode's and code mode's) finds, best first,
/// up to its limit (`default` when it names none), and how many match in all.
pub fn found<'s>(server: &'s Server, index: &Index, gate: &Gate<'_>, apps: bool, args: &Value, default: usize) -> (Vec<&'s Tool>, usize) {
    let query = args.get("query").and_then(Value::as_str).unwrap_or_default();
    let tags: Vec<String> = args.get("tags").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_lowercase).collect();
    // The schema allows only whole numbers from 1 to 100; `2.0` is one too.
    let limit = args.get("limit").and_then(Value::as_f64).map_or(default, |l| l as usize);
    let keep = |tool: &Tool| gate.sees(tool) && crate::apps::sees(apps, &tool.listing) && tags.iter().all(|tag| tool.tags.iter().any(|own| own.to_lowercase() == *tag));
    let mut found = index.search(&server.tools, query, keep);
    let total = found.len();
    found.truncate(limit);
    (found, total)
}

/// A tool as a search lists it: enough to choose by, not to call.
fn entry(tool: &Tool) -> Value {
    let mut entry = Map::new();
    entry.insert("name".into(), json!(tool.name));
    if let Some(title) = tool.listing.get("title") {
        entry.insert("title".into(), title.clone());
    }
    if let Some(description) = tool.listing.get("description").and_then(Value::as_str) {
        entry.insert("description".into(), json!(summary(description)));
    }
    if !tool.tags.is_empty() {
        entry.insert("tags".into(), json!(tool.tags));
    }
    Value::Object(entry)
}

/// `describe_tool`: the tool's entry as a plain `tools/list` lists it to this client (`apps`: it
/// declared MCP Apps), with its tags. A tool the principal may not see is as unknown as one that
/// does not exist.
pub fn describe(server: &Server, gate: &Gate<'_>, apps: bool, args: &Value) -> Value {
    let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
    let Some(tool) = server.tool(name).filter(|t| gate.sees(t) && crate::apps::sees(apps, &t.listing)) else {
        return reply::error_result(format!("unknown tool {name:?}: search_tools finds this server's tools and their names"));
    };
    let mut definition = tool.listing.clone();
    if let Some(fields) = definition.as_object_mut() {
        if !apps {
            crate::apps::without_ui(fields);
        }
        if !tool.tags.is_empty() {
            fields.insert("tags".into(), json!(tool.tags));
        }
    }
    reply::structured_result(definition)
}

/// `call_tool`'s request as the named tool's own `tools/call`: its name and arguments, with the
/// request's `_meta` and a 2026-07-28 retry's `requestState` and `inputResponses` as they came,
/// so that everything after (validation, the upstream call, progress, input requests, the
/// retry's binding to the tool and its arguments) is what calling the tool directly does.
pub fn inner_call(req: &Request) -> Request {
    let mut params = req.params.as_ref().and_then(Value::as_object).cloned().unwrap_or_default();
    let args = params.remove("arguments");
    params.remove("name");
    if let Some(Value::Object(mut args)) = args {
        params.extend(["name", "arguments"].into_iter().filter_map(|key| args.remove(key).map(|value| (key.to_string(), value))));
    }
    Request { id: req.id.clone(), method: req.method.clone(), params: Some(Value::Object(params)) }
}

/// The tool a `tools/call` runs, for the request's log line: the named one, or the one
/// `call_tool` names.
pub fn called_tool<'a>(server: &Server, params: Option<&'a Value>) -> Option<&'a str> {
    let name = params?.get("name")?.as_str()?;
    let through_catalog = server.meta_tool(name).map(|(_, m)| m) == Some(MetaTool::Call);
    match params?.get("arguments").and_then(|a| a.get("name")).and_then(Value::as_str) {
        Some(inner) if through_catalog => Some(inner),
        _ => Some(name),
    }
}

/// A description's first sentence, on one line, at most `SUMMARY_CHARS` characters. A sentence
/// ends at `.`, `!` or `?` before white space, or at a blank line (a paragraph without one).
fn summary(description: &str) -> String {
    let text = description.trim();
    let mut end = text.len();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        if matches!(c, '.' | '!' | '?') && next.is_some_and(char::is_whitespace) {
            end = i + c.len_utf8();
            break;
        }
        if c == '\n' && text.get(i + 1..).is_some_and(|rest| rest.trim_start_matches([' ', '\t', '\r']).starts_with('\n')) {
            end = i;
            break;
        }
    }
    let sentence = text.get(..end).unwrap_or(text).split_whitespace().collect::<Vec<_>>().join(" ");
    if sentence.chars().nth(SUMMARY_CHARS).is_none() {
        return sentence;
    }
    let cut: String = sentence.chars().take(SUMMARY_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One plain tool, for catalog mode's own names to be told from it.
    const TOOLS: &str = r#"[{"name": "pulls_list", "http": {"url": "https://api.test/p"}}]"#;

    fn server(discovery: &str, limits: &str) -> Server {
        let text = format!(r#"{{"servers": [{{"name": "gh", "version": "1", "toolDiscovery": "{discovery}", "limits": {{{limits}}}, "tools": {TOOLS}}}]}}"#);
        crate::config::load(&text).unwrap().servers.remove(0).as_ref().clone()
    }

    fn catalog() -> Server {
        server("catalog", "")
    }

    #[test]
    fn the_log_line_names_the_tool_call_tool_runs() {
        let params = json!({"name": "call_tool", "arguments": {"name": "pulls_list"}});
        assert_eq!(called_tool(&catalog(), Some(&params)), Some("pulls_list"));
        assert_eq!(called_tool(&server("list", ""), Some(&params)), Some("call_tool"));
        assert_eq!(called_tool(&catalog(), Some(&json!({"name": "search_tools"}))), Some("search_tools"));
    }

    #[test]
    fn a_description_shows_a_tool_s_app_only_to_a_client_that_declared_mcp_apps() {
        let text = r#"{"servers": [{"name": "gh", "version": "1", "toolDiscovery": "catalog", "tools": [{"name": "report", "app": {"html": "<p>x</p>"}, "http": {"url": "https://api.test/r"}}]}]}"#;
        let server = crate::config::load(text).unwrap().servers.remove(0).as_ref().clone();
        let anyone = crate::auth::Principal::anonymous();
        let gate = server.gate(&anyone, 0);
        let described = |apps: bool| describe(&server, &gate, apps, &json!({"name": "report"}))["structuredContent"].clone();
        assert_eq!(described(true).pointer("/_meta/ui/resourceUri"), Some(&json!("ui://gh/report")));
        assert_eq!(described(false).get("_meta"), None, "no _meta.ui for a client without the extension");
        assert_eq!(described(false)["name"], "report");
    }

    #[test]
    fn summaries_are_a_first_sentence_within_200_characters() {
        assert_eq!(summary("  Lists issues.\nSee the docs. More."), "Lists issues.");
        assert_eq!(summary("Version 1.2 of the\nissue API\n\n> [!NOTE]\n> details"), "Version 1.2 of the issue API");
        assert_eq!(summary("Ends here"), "Ends here");
        let long = summary(&"word ".repeat(60));
        assert_eq!((long.chars().count() <= 200, long.ends_with("word…")), (true, true));
    }

    #[test]
    fn the_configuration_reserves_the_catalog_names_and_checks_tags() {
        let err = |discovery: &str, tool: &str| {
            let text = format!(r#"{{"servers": [{{"name": "s", "version": "1", "toolDiscovery": "{discovery}", "tools": [{{"name": "a", "http": {{"url": "https://x.test/"}}}}, {tool}]}}]}}"#);
            crate::config::load(&text).err().map(|e| e.to_string())
        };
        assert_eq!(
            err("catalog", r#"{"name": "describe_tool", "http": {"url": "https://x.test/"}}"#).as_deref(),
            Some("servers[0].tools[1].name: \"describe_tool\" is one of catalog mode's own tools (search_tools, describe_tool, call_tool); rename it")
        );
        assert_eq!(err("list", r#"{"name": "describe_tool", "http": {"url": "https://x.test/"}}"#), None);
        let too_many = serde_json::to_string(&(0..33).map(|i| format!("t{i}")).collect::<Vec<_>>()).unwrap();
        assert_eq!(err("list", &format!(r#"{{"name": "b", "tags": {too_many}, "http": {{"url": "https://x.test/"}}}}"#)).as_deref(), Some("servers[0].tools[1].tags: at most 32 tags"));
        let long = "x".repeat(65);
        assert_eq!(
            err("catalog", &format!(r#"{{"name": "b", "tags": ["ok", "{long}"], "http": {{"url": "https://x.test/"}}}}"#)).as_deref(),
            Some("servers[0].tools[1].tags[1]: must be 1 to 64 characters, not blank")
        );
        assert_eq!(err("catalog", r#"{"name": "b", "tags": [" "], "http": {"url": "https://x.test/"}}"#).as_deref(), Some("servers[0].tools[1].tags[0]: must be 1 to 64 characters, not blank"));
        assert_eq!(err("catalog", &format!(r#"{{"name": "b", "tags": ["{}"], "http": {{"url": "https://x.test/"}}}}"#, "x".repeat(64))), None);
        assert!(err("browse", "{\"name\": \"b\", \"http\": {\"url\": \"https://x.test/\"}}").unwrap().starts_with("servers[0].toolDiscovery: unknown variant `browse`"));
    }
}
