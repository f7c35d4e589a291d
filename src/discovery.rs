//! Catalog mode (`"toolDiscovery": "catalog"`, MCP's progressive tool discovery): `tools/list`
//! lists three tools that search the server's tools, describe one, and call one by name, so a
//! model reads a few hundred tokens where a thousand tool definitions would cost it a million.
//! Searching and describing answer at once, from the catalog; `call_tool` becomes the named
//! tool's own `tools/call`, which `dispatch` then serves like any other.

use serde_json::{json, Map, Value};

use crate::auth::Principal;
use crate::catalog::Server;
use crate::jsonrpc::Request;
use crate::tools::meta::{MetaTool, DEFAULT_LIMIT};
use crate::tools::search::Index;
use crate::tools::Tool;
use crate::upstream::reply;

/// A search result's description: its first sentence, cut at this many characters.
const SUMMARY_CHARS: usize = 200;

/// `search_tools`: the tools the principal may see that have every tag asked for (in any case)
/// and match the query, best first, up to the limit; `total` counts them all.
pub fn search(server: &Server, index: &Index, principal: &Principal, args: &Value) -> Value {
    let query = args.get("query").and_then(Value::as_str).unwrap_or_default();
    let tags: Vec<String> = args.get("tags").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_lowercase).collect();
    // The schema allows only whole numbers from 1 to 100; `2.0` is one too.
    let limit = args.get("limit").and_then(Value::as_f64).map_or(DEFAULT_LIMIT, |l| l as usize);
    let keep = |tool: &Tool| principal.may(&tool.roles) && tags.iter().all(|tag| tool.tags.iter().any(|own| own.to_lowercase() == *tag));
    let found = index.search(&server.tools, query, keep);
    let entries: Vec<Value> = found.iter().take(limit).map(|tool| entry(tool)).collect();
    reply::structured_result(json!({"tools": entries, "total": found.len()}))
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

/// `describe_tool`: the tool's entry as a plain `tools/list` lists it, with its tags. A tool the
/// principal may not see is as unknown as one that does not exist.
pub fn describe(server: &Server, principal: &Principal, args: &Value) -> Value {
    let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
    let Some(tool) = server.tool(name).filter(|t| principal.may(&t.roles)) else {
        return reply::error_result(format!("unknown tool {name:?}: search_tools finds this server's tools and their names"));
    };
    let mut definition = tool.listing.clone();
    if let (false, Some(fields)) = (tool.tags.is_empty(), definition.as_object_mut()) {
        fields.insert("tags".into(), json!(tool.tags));
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
    let through_catalog = server.catalog_index().is_some() && MetaTool::named(name) == Some(MetaTool::Call);
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
    use crate::dispatch::{handle, Action, Environment};
    use crate::jsonrpc::parse_message;
    use crate::session::Session;

    /// A few of GitHub's operations, as an importer would write them; one for admins only.
    const TOOLS: &str = r#"[
        {"name": "issues_list_for_org", "title": "List organization issues", "description": "List issues assigned to the user in an organization.", "tags": ["issues"], "http": {"url": "https://api.test/orgs"}},
        {"name": "issues_list_for_repo", "title": "List repository issues", "description": "List issues in a repository. Only open issues will be listed.", "tags": ["issues"],
         "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}}, "required": ["owner", "repo"]},
         "http": {"method": "GET", "url": "https://api.test/repos/{owner}/{repo}/issues", "headers": {"Authorization": "Bearer {env.TOKEN}"}}},
        {"name": "issues_get", "title": "Get an issue", "description": "Gets an issue of a repository by its number.", "tags": ["issues"],
         "inputSchema": {"type": "object", "properties": {"number": {"type": "integer"}}, "required": ["number"]},
         "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}, "http": {"method": "GET", "url": "https://api.test/issues/{number}"}},
        {"name": "repos_list_for_org", "title": "List organization repositories", "description": "Lists repositories for the specified organization.", "tags": ["repos"], "http": {"url": "https://api.test/r"}},
        {"name": "pulls_list", "title": "List pull requests", "description": "Lists pull requests of a repository.", "tags": ["pulls"], "http": {"url": "https://api.test/p"}},
        {"name": "admin_delete_repo", "description": "Deletes a repository.", "tags": ["repos", "Admin"], "roles": ["admin"], "http": {"url": "https://api.test/d"}},
        {"name": "markdown_render", "http": {"url": "https://api.test/m"}}
    ]"#;

    fn server(discovery: &str, limits: &str) -> Server {
        let text = format!(r#"{{"servers": [{{"name": "gh", "version": "1", "toolDiscovery": "{discovery}", "limits": {{{limits}}}, "tools": {TOOLS}}}]}}"#);
        crate::config::load(&text).unwrap().servers.remove(0).as_ref().clone()
    }

    fn catalog() -> Server {
        server("catalog", "")
    }

    fn run_as(server: &Server, version: &str, roles: &[&str], method: &str, params: Value) -> Action {
        let mut session = Session::new("sid", "/mcp", version, json!({}), json!({}), 0);
        let secret = |name: &str| (name == "TOKEN").then(|| "t0k3n-secret".to_string());
        let principal = Principal { id: "p".into(), roles: roles.iter().map(|r| r.to_string()).collect(), ..Principal::default() };
        let env = Environment { secret: &secret, route: &Vec::new(), principal: &principal, now_ms: 0 };
        handle(server, &mut session, parse_message(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})), &env)
    }

    fn reply(action: Action) -> Value {
        match action {
            Action::Reply(text) => serde_json::from_str(&text).unwrap(),
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    fn call(server: &Server, tool: &str, arguments: Value) -> Value {
        reply(run_as(server, "2025-11-25", &[], "tools/call", json!({"name": tool, "arguments": arguments})))
    }

    /// The names a search finds, and its total.
    fn found(server: &Server, roles: &[&str], arguments: Value) -> (Vec<String>, u64) {
        let result = reply(run_as(server, "2025-11-25", roles, "tools/call", json!({"name": "search_tools", "arguments": arguments})))["result"].take();
        let names = result["structuredContent"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
        (names, result["structuredContent"]["total"].as_u64().unwrap())
    }

    #[test]
    fn tools_list_lists_the_three_catalog_tools_in_pages() {
        let list = reply(run_as(&catalog(), "2025-11-25", &[], "tools/list", json!({})));
        let tools = list["result"]["tools"].as_array().unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["search_tools", "describe_tool", "call_tool"]);
        for (tool, others) in tools.iter().zip([["describe_tool", "call_tool"], ["search_tools", "call_tool"], ["search_tools", "describe_tool"]]) {
            let description = tool["description"].as_str().unwrap();
            assert!(tool["title"].is_string() && others.iter().all(|o| description.contains(o)), "{tool}");
            assert_eq!(tool["inputSchema"]["type"], "object");
        }
        assert_eq!(tools[0]["annotations"]["readOnlyHint"], true);
        assert_eq!(tools[1]["annotations"]["readOnlyHint"], true);
        assert_eq!(tools[2]["annotations"]["readOnlyHint"], false);
        assert_eq!((tools[0]["outputSchema"]["required"].clone(), tools[2].get("outputSchema")), (json!(["tools", "total"]), None));
        let paged = server("catalog", r#""toolsPageSize": 2"#);
        let first = reply(run_as(&paged, "2025-11-25", &[], "tools/list", json!({})))["result"].take();
        assert_eq!((first["tools"].as_array().unwrap().len(), first["nextCursor"].is_string()), (2, true));
        let second = reply(run_as(&paged, "2025-11-25", &[], "tools/list", json!({"cursor": first["nextCursor"]})))["result"].take();
        assert_eq!((second["tools"][0]["name"].as_str(), second.get("nextCursor")), (Some("call_tool"), None));
    }

    #[test]
    fn search_ranks_by_field_weight_then_configuration_order() {
        let s = catalog();
        // list·issues·repository: name 3, tags and title 2, description 1 per word and field.
        let ranked = ["issues_list_for_repo", "issues_list_for_org", "repos_list_for_org", "issues_get", "pulls_list"];
        assert_eq!(found(&s, &[], json!({"query": "list issues of a repository"})), (ranked.map(String::from).to_vec(), 5));
        // The role's tool scores 6 (repository: name, tags, description): after pulls_list's 7.
        let (names, total) = found(&s, &["admin"], json!({"query": "List issues of a repository!"}));
        assert_eq!((names.last().map(String::as_str), total), (Some("admin_delete_repo"), 6));
        // Ties keep configuration order: both score 3 + 2 + 1 for `list`, and pulls_list scores less.
        assert_eq!(found(&s, &[], json!({"query": "organization"})).0, ["issues_list_for_org", "repos_list_for_org"]);
        let summary = reply(run_as(&s, "2025-11-25", &[], "tools/call", json!({"name": "search_tools", "arguments": {"query": "repo issues", "limit": 1}})));
        assert_eq!(
            summary["result"],
            json!({"content": [{"type": "text", "text": r#"{"tools":[{"name":"issues_list_for_repo","title":"List repository issues","description":"List issues in a repository.","tags":["issues"]}],"total":5}"#}],
                   "structuredContent": {"tools": [{"name": "issues_list_for_repo", "title": "List repository issues", "description": "List issues in a repository.", "tags": ["issues"]}], "total": 5}})
        );
    }

    #[test]
    fn stop_words_prefixes_and_no_query() {
        let s = catalog();
        let all: Vec<String> = ["issues_list_for_org", "issues_list_for_repo", "issues_get", "repos_list_for_org", "pulls_list", "markdown_render"].map(String::from).to_vec();
        assert_eq!(found(&s, &[], json!({})), (all.clone(), 6));
        assert_eq!(found(&s, &[], json!({"query": "the of a I"})), (all, 6));
        // `issue` ≈ `issues`, `repo` ≈ `repository`, `pul` is too short to be a prefix.
        assert_eq!(found(&s, &[], json!({"query": "issue"})).1, 3);
        // repos_list_for_org: repos (name, tags), repositories (title, description): 8; the others 6, 1, 1.
        assert_eq!(found(&s, &[], json!({"query": "repo"})).0, ["repos_list_for_org", "issues_list_for_repo", "issues_get", "pulls_list"]);
        assert_eq!(found(&s, &[], json!({"query": "pul"})), (vec![], 0));
        assert_eq!(found(&s, &[], json!({"query": "markdownRender"})).0, ["markdown_render"]);
    }

    #[test]
    fn tags_filter_limit_and_roles() {
        let s = catalog();
        assert_eq!(found(&s, &[], json!({"tags": ["ISSUES"]})).0, ["issues_list_for_org", "issues_list_for_repo", "issues_get"]);
        assert_eq!(found(&s, &[], json!({"tags": ["issues"], "query": "repository"})).0, ["issues_list_for_repo", "issues_get"]);
        assert_eq!(found(&s, &[], json!({"tags": ["repos", "admin"]})), (vec![], 0));
        assert_eq!(found(&s, &["admin"], json!({"tags": ["repos", "admin"]})).0, ["admin_delete_repo"]);
        assert_eq!(found(&s, &[], json!({"query": "delete"})), (vec![], 0));
        assert_eq!(found(&s, &[], json!({"limit": 2})), (vec!["issues_list_for_org".into(), "issues_list_for_repo".into()], 6));
        // Out of range: the schema's own error, as for any tool.
        let bad = call(&s, "search_tools", json!({"limit": 0}));
        assert_eq!(bad["result"]["content"][0]["text"], "invalid arguments for tool \"search_tools\": /limit: must be at least 1 (minimum)");
        let old = reply(run_as(&s, "2025-06-18", &[], "tools/call", json!({"name": "search_tools", "arguments": {"limit": 101}})));
        assert_eq!(old["error"]["code"], -32602);
        assert_eq!(call(&s, "search_tools", json!({"q": "x"}))["result"]["isError"], true);
    }

    #[test]
    fn describe_gives_the_plain_listing_with_tags() {
        let plain = reply(run_as(&server("list", ""), "2025-11-25", &[], "tools/list", json!({})));
        let listed = plain["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "issues_get").unwrap().clone();
        let described = call(&catalog(), "describe_tool", json!({"name": "issues_get"}))["result"].take();
        let mut expected = listed;
        expected["tags"] = json!(["issues"]);
        assert_eq!(described["structuredContent"], expected);
        assert_eq!(described["content"][0]["text"], expected.to_string());
        // No tags, no description: the listing alone.
        assert_eq!(call(&catalog(), "describe_tool", json!({"name": "markdown_render"}))["result"]["structuredContent"], json!({"name": "markdown_render", "inputSchema": {"type": "object"}}));
        for name in ["nope", "admin_delete_repo", "search_tools"] {
            let unknown = call(&catalog(), "describe_tool", json!({"name": name}))["result"].take();
            assert_eq!(unknown, reply::error_result(format!("unknown tool {name:?}: search_tools finds this server's tools and their names")));
        }
        let admin = reply(run_as(&catalog(), "2025-11-25", &["admin"], "tools/call", json!({"name": "describe_tool", "arguments": {"name": "admin_delete_repo"}})));
        assert_eq!(admin["result"]["structuredContent"]["tags"], json!(["repos", "Admin"]));
        assert_eq!(call(&catalog(), "describe_tool", json!({}))["result"]["content"][0]["text"], "invalid arguments for tool \"describe_tool\": missing required property \"name\" (required)");
    }

    #[test]
    fn call_tool_is_the_named_tools_own_call() {
        let (catalog, plain) = (catalog(), server("list", ""));
        let meta = json!({"progressToken": "tok", "trace": "t"});
        for version in ["2025-11-25", "2025-06-18", "2025-03-26"] {
            // Valid, missing a property, of a wrong type, and left out.
            for arguments in [json!({"owner": "o", "repo": "r"}), json!({"owner": "o"}), json!({"owner": 1, "repo": "r"}), Value::Null] {
                let with = |name: &str| match &arguments {
                    Value::Null => json!({"name": name, "_meta": meta}),
                    given => json!({"name": name, "arguments": given, "_meta": meta}),
                };
                let direct = run_as(&plain, version, &[], "tools/call", with("issues_list_for_repo"));
                let mut through = with("issues_list_for_repo");
                through.as_object_mut().unwrap().remove("_meta");
                let through = run_as(&catalog, version, &[], "tools/call", json!({"name": "call_tool", "arguments": through, "_meta": meta}));
                assert_eq!(through, direct, "{version} {arguments}");
                let own_name = run_as(&catalog, version, &[], "tools/call", with("issues_list_for_repo"));
                assert_eq!(own_name, direct, "{version} {arguments}");
            }
            // Unknown, hidden, and catalog mode's own names: what tools/call answers for an unknown tool.
            for name in ["nope", "admin_delete_repo", "call_tool"] {
                let through = reply(run_as(&catalog, version, &[], "tools/call", json!({"name": "call_tool", "arguments": {"name": name}})));
                assert_eq!(through["error"], json!({"code": -32602, "message": format!("Invalid params: unknown tool {name:?}")}), "{version}");
            }
        }
        let Action::Call(pending) = run_as(&catalog, "2025-11-25", &["admin"], "tools/call", json!({"name": "call_tool", "arguments": {"name": "admin_delete_repo"}})) else { panic!("admins may") };
        assert_eq!(pending.label(), "admin_delete_repo");
        // call_tool's own arguments are checked first, against its own schema.
        let missing = reply(run_as(&catalog, "2025-03-26", &[], "tools/call", json!({"name": "call_tool", "arguments": {"arguments": {}}})));
        assert_eq!(missing["error"]["message"], "Invalid params: invalid arguments for tool \"call_tool\": missing required property \"name\" (required)");
        let listed = call(&catalog, "call_tool", json!({"name": "pulls_list", "arguments": [1]}));
        assert_eq!(listed["result"]["content"][0]["text"], "invalid arguments for tool \"call_tool\": /arguments: expected object, got array (type)");
    }

    #[test]
    fn results_follow_the_protocol_revision() {
        let s = catalog();
        let old = reply(run_as(&s, "2025-03-26", &[], "tools/call", json!({"name": "search_tools", "arguments": {"query": "pull"}})));
        assert_eq!(old["result"], json!({"content": [{"type": "text", "text": r#"{"tools":[{"name":"pulls_list","title":"List pull requests","description":"Lists pull requests of a repository.","tags":["pulls"]}],"total":1}"#}]}));
        let stateless = reply(run_as(&s, crate::versions::STATELESS_VERSION, &[], "tools/call", json!({"name": "describe_tool", "arguments": {"name": "pulls_list"}})));
        assert_eq!((stateless["result"]["resultType"].as_str(), stateless["result"]["structuredContent"]["name"].as_str()), (Some("complete"), Some("pulls_list")));
        // A plain server has no catalog tools.
        assert_eq!(call(&server("list", ""), "search_tools", json!({}))["error"]["message"], "Invalid params: unknown tool \"search_tools\"");
    }

    #[test]
    fn the_log_line_names_the_tool_call_tool_runs() {
        let params = json!({"name": "call_tool", "arguments": {"name": "pulls_list"}});
        assert_eq!(called_tool(&catalog(), Some(&params)), Some("pulls_list"));
        assert_eq!(called_tool(&server("list", ""), Some(&params)), Some("call_tool"));
        assert_eq!(called_tool(&catalog(), Some(&json!({"name": "search_tools"}))), Some("search_tools"));
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
