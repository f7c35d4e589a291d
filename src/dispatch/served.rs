//! Requests served end to end through [`handle`](super::handle), for behaviour that other
//! modules define and dispatch puts together: catalog mode's three tools (`discovery`), and the
//! refusals the health figures count as validation (`health::refused`). Tests only.
#![cfg(test)]

use serde_json::{json, Value};

use super::{handle, Action, Environment};
use crate::auth::Principal;
use crate::catalog::Server;
use crate::jsonrpc::parse_message;
use crate::session::Session;
use crate::upstream::reply::error_result;

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
    let env = Environment { secret: &secret, route: &Vec::new(), principal: &principal, now_ms: 0, connection: &|_: &str| None };
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
        assert_eq!(unknown, error_result(format!("unknown tool {name:?}: search_tools finds this server's tools and their names")));
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
fn dispatch_refusals_read_as_validation() {
    // The replies dispatch really gives for arguments that do not fit, in both eras.
    let catalog = crate::config::load(
        r#"{"servers":[{"name":"s","version":"1","tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]},"http":{"url":"https://example.com/echo"}}]}]}"#,
    )
    .unwrap();
    let server = &catalog.servers[0];
    for version in ["2025-06-18", "2025-11-25"] {
        let mut session = Session::new("s1", "/mcp", version, serde_json::json!({}), serde_json::json!({}), 0);
        let principal = Principal::anonymous();
        let env = Environment { secret: &|_: &str| None, route: &Vec::new(), principal: &principal, now_ms: 0, connection: &|_: &str| None };
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":7}}}"#;
        let parsed = crate::jsonrpc::parse_body(body, false).unwrap().messages.into_iter().next().unwrap();
        let Action::Reply(reply) = handle(server, &mut session, parsed, &env) else { panic!("expected a reply") };
        assert!(crate::health::refused(&reply), "{version}: {reply}");
    }
}

/// The Tasks extension's composition: a tool with `inputBeforeTask` runs its first round in the
/// request (its questions come back without a task); the round with answers is the task. Any
/// other task tool is a task from the first round.
#[test]
fn input_before_task_leaves_the_first_round_to_the_request() {
    let text = r#"{"servers": [{"name": "t", "version": "1", "tools": [
        {"name": "asks_first", "taskSupport": "required", "inputBeforeTask": true, "result": "passthrough", "http": {"method": "POST", "url": "https://api.test/a"}},
        {"name": "works", "taskSupport": "optional", "http": {"method": "POST", "url": "https://api.test/w"}}]}]}"#;
    let server = crate::config::load(text).unwrap().servers.remove(0).as_ref().clone();
    let version = crate::versions::STATELESS_VERSION;
    let capabilities = json!({"extensions": {(crate::tasks::EXTENSION): {}}});
    let run = |params: Value| {
        let mut session = Session::new("", "/mcp", version, json!({}), capabilities.clone(), 0);
        let principal = Principal::default();
        let env = Environment { secret: &|_: &str| None, route: &Vec::new(), principal: &principal, now_ms: 0, connection: &|_: &str| None };
        match handle(&server, &mut session, parse_message(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})), &env) {
            Action::Call(call) => call.task.is_some(),
            other => panic!("expected a call, got {other:?}"),
        }
    };
    assert!(!run(json!({"name": "asks_first", "arguments": {}})), "the first round is no task");
    assert!(run(json!({"name": "asks_first", "arguments": {}, "inputResponses": {"user_name": {"action": "accept", "content": {"name": "A"}}}})), "the answers start the task");
    assert!(run(json!({"name": "works", "arguments": {}})), "a task from the first round");
    // Only a tool that runs as a task can ask before it.
    let forbidden = text.replace(r#""taskSupport": "required", "#, "");
    let error = crate::config::load(&forbidden).unwrap_err();
    assert!(error.to_string().contains("inputBeforeTask"), "{error}");
}
