//! A server's `include` checked when the configuration loads: every reference to another
//! server's own entries taken (`catalog::curated`), each fault named by its path; a reference
//! to what an upstream MCP server may list is kept for when its lists arrive. The tests of
//! curated servers compiled (aliases, pinned arguments, faults) are here too.

use std::sync::Arc;

use super::ConfigError;
use crate::catalog::curated::{may_arrive, resolve, shape};
use crate::catalog::Server;

pub fn include(servers: &mut [Arc<Server>]) -> Result<(), ConfigError> {
    for i in 0..servers.len() {
        let includes = servers.get(i).map(|s| s.include.clone()).unwrap_or_default();
        if includes.is_empty() {
            continue;
        }
        let mut pending = Vec::new();
        for (j, include) in includes.iter().enumerate() {
            let at = |f: crate::catalog::curated::Fault| ConfigError::at(format!("servers[{i}].include[{j}].{}", f.field), f.message);
            shape(include).map_err(at)?;
            let (left, faults) = resolve(servers, i, &[j]);
            if let Some((_, f)) = faults.into_iter().next() {
                return Err(at(f));
            }
            if left.is_empty() {
                continue;
            }
            let (kind, name) = include.kind();
            match servers.iter().find(|s| s.name == include.server()) {
                Some(from) if may_arrive(include, from) => pending.push(j),
                _ => return Err(ConfigError::at(format!("servers[{i}].include[{j}].{kind}"), format!("{name:?} is not a {kind} of the server {:?}", include.server()))),
            }
        }
        if let Some(server) = servers.get_mut(i) {
            let server = Arc::make_mut(server);
            // Its entries change as the upstream's lists arrive.
            server.lists_change |= !pending.is_empty();
            server.pending = pending;
            server.relist();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::curated::resolve;
    use serde_json::{json, Value};

    fn load(text: &str) -> Result<crate::catalog::Catalog, String> {
        crate::config::load(text).map_err(|e| e.to_string())
    }

    const SOURCE: &str = r#"{"name": "everything", "version": "1", "route": "/all/mcp", "tools": [{"name": "get_invoice", "title": "Get invoice", "description": "An invoice.", "annotations": {"idempotentHint": true},
        "inputSchema": {"type": "object", "properties": {"account_id": {"type": "string"}, "status": {"type": "string", "enum": ["open", "paid", "void"]}, "limit": {"type": "integer"}}, "required": ["account_id", "status"]},
        "http": {"url": "https://api.example.com/invoices/{account_id}?status={status}"}}]}"#;

    fn with(include: &str) -> Result<crate::catalog::Catalog, String> {
        load(&format!(r#"{{"servers": [{SOURCE}, {{"name": "support", "version": "1", "route": "/support/mcp", "include": [{include}]}}]}}"#))
    }

    const INVOICE: &str = r#"{"server": "everything", "tool": "get_invoice", "as": "invoice", "title": "Invoice", "description": "Reads one invoice.", "annotations": {"readOnlyHint": true},
        "arguments": {"account_id": {"hidden": true, "value": "acme"}, "status": {"default": "open", "enum": ["open", "paid"]}}}"#;

    #[test]
    fn an_alias_lists_its_transformed_definition() {
        let catalog = with(INVOICE).unwrap();
        let support = &catalog.servers[1];
        assert_eq!(support.tool_listings.len(), 1);
        assert_eq!(
            support.tool_listings[0],
            json!({"name": "invoice", "title": "Invoice", "description": "Reads one invoice.", "annotations": {"idempotentHint": true, "readOnlyHint": true},
                "inputSchema": {"type": "object", "properties": {"status": {"type": "string", "enum": ["open", "paid"], "default": "open"}, "limit": {"type": "integer"}}, "required": []}})
        );
        let tool = support.tool("invoice").unwrap();
        assert_eq!(tool.request.url_source, "https://api.example.com/invoices/{account_id}?status={status}");
        // The source keeps its own definition.
        assert_eq!(catalog.servers[0].tool("get_invoice").unwrap().input_schema["required"], json!(["account_id", "status"]));
    }

    #[test]
    fn hidden_arguments_are_pinned_and_never_the_clients() {
        let catalog = with(INVOICE).unwrap();
        let curation = catalog.servers[1].tool("invoice").unwrap().curation.clone().unwrap();
        let merged = curation.arguments(json!({"limit": 3}).as_object().unwrap().clone()).unwrap();
        assert_eq!(Value::Object(merged), json!({"limit": 3, "status": "open", "account_id": "acme"}));
        let kept = curation.arguments(json!({"status": "paid"}).as_object().unwrap().clone()).unwrap();
        assert_eq!(kept["status"], "paid");
        for smuggled in [json!({"account_id": "evil"}), json!({"account_id": null}), json!({"account_id": {"$ne": 1}})] {
            assert_eq!(curation.arguments(smuggled.as_object().unwrap().clone()).unwrap_err(), "the argument \"account_id\" is not one a client may set");
        }
        // The narrowed schema refuses what the restricted enum leaves out.
        let schema = &catalog.servers[1].tool("invoice").unwrap().input_schema;
        assert!(crate::schema::validate(schema, &json!({"status": "void"})).is_err());
    }

    #[test]
    fn static_references_are_checked_with_the_path_of_a_fault() {
        let cases = [
            (r#"{"server": "nowhere", "tool": "x"}"#, "servers[1].include[0].server: \"nowhere\" is not a server of this deployment"),
            (r#"{"server": "everything", "tool": "nope"}"#, "servers[1].include[0].tool: \"nope\" is not a tool of the server \"everything\""),
            (r#"{"server": "everything", "tool": "get_invoice", "arguments": {"who": {"hidden": true, "value": 1}}}"#, "servers[1].include[0].arguments.who: \"who\" is not an argument of the tool \"get_invoice\" (not in its inputSchema's properties)"),
            (r#"{"server": "everything", "tool": "get_invoice", "arguments": {"limit": {"hidden": true, "value": "ten"}}}"#, "servers[1].include[0].arguments.limit.value: does not fit the argument's schema: expected integer, got string (type)"),
            (r#"{"server": "everything", "tool": "get_invoice", "arguments": {"status": {"enum": ["open", "lost"]}}}"#, "servers[1].include[0].arguments.status.enum: holds \"lost\", which the source's schema does not allow: it may only narrow the values allowed"),
            (r#"{"server": "everything", "tool": "get_invoice", "arguments": {"status": {"enum": ["open"], "default": "paid"}}}"#, "servers[1].include[0].arguments.status.default: does not fit the argument's schema: value is not one of the enum (enum)"),
            (r#"{"server": "everything", "tool": "get_invoice", "arguments": {"limit": {"value": 3}}}"#, "servers[1].include[0].arguments.limit.value: pins a hidden argument: add \"hidden\": true"),
            (r#"{"server": "everything", "tool": "get_invoice", "arguments": {"limit": {"hidden": true}}}"#, "servers[1].include[0].arguments.limit: a hidden argument needs its \"value\", and no \"default\""),
            (r#"{"server": "everything", "tool": "get_invoice"}, {"server": "everything", "tool": "get_invoice"}"#, "servers[1].include[1].tool: \"get_invoice\" is the name of another tool of this server"),
            (r#"{"server": "everything", "tool": "get_invoice", "prompt": "p"}"#, "servers[1].include[0].tool: name exactly one of \"tool\", \"prompt\" or \"resource\""),
            (r#"{"server": "everything", "tool": "get_invoice", "as": "bad name"}"#, "servers[1].include[0].as: \"bad name\" must be 1 to 128 of A-Z a-z 0-9 _ - ."),
            (r#"{"server": "everything", "tool": "get_invoice", "rename": "x"}"#, "servers[1].include[0].rename: is not a field of an include entry, or not of its type"),
            (r#"{"server": "everything", "tool": "get_invoice", "roles": "admin"}"#, "servers[1].include[0].roles: is not a field of an include entry, or not of its type"),
            (r#"{"server": "everything", "tool": "get_invoice", "arguments": {"limit": {"hidden": "yes", "value": 1}}}"#, "servers[1].include[0].arguments.limit.hidden: is not a field of an argument's transform, or not of its type"),
            (r#"{"tool": "get_invoice"}"#, "servers[1].include[0].server: missing field `server`"),
            (r#"{"server": "everything", "prompt": "p", "roles": ["a"]}"#, "servers[1].include[0].arguments: arguments, annotations and roles transform tools only"),
        ];
        for (include, expected) in cases {
            let got = with(include).map(|_| ()).unwrap_err();
            if expected.contains("(type)") || expected.contains("(enum)") {
                assert!(got.starts_with(expected.split(": does not fit").next().unwrap()), "{got}");
            } else {
                assert_eq!(got, expected);
            }
        }
    }

    #[test]
    fn a_stateless_server_takes_no_queued_tool() {
        let text = r#"{"servers": [{"name": "a", "version": "1", "tools": [{"name": "job", "execution": "queued", "http": {"url": "https://x.test/"}}]},
            {"name": "b", "version": "1", "route": "/b/mcp", "stateless": {}, "include": [{"server": "a", "tool": "job"}]}]}"#;
        assert_eq!(load(text).unwrap_err(), "servers[1].include[0].tool: a queued or callback tool needs sessions: a stateless server has nowhere to deliver its results");
    }

    #[test]
    fn references_to_upstream_lists_wait_for_them() {
        let hub = r#"{"name": "hub", "version": "1", "route": "/hub/mcp", "upstreams": [{"name": "n8n", "url": "https://n8n.example.com/mcp", "prefix": "n8n_", "tools": {"exclude": ["secret"]}}]}"#;
        let text = |tool: &str| format!(r#"{{"servers": [{hub}, {{"name": "support", "version": "1", "route": "/support/mcp", "include": [{{"server": "hub", "tool": "{tool}", "as": "search"}}]}}]}}"#);
        let catalog = load(&text("n8n_search")).unwrap();
        let support = &catalog.servers[1];
        assert!(support.tools.is_empty() && support.lists_change);
        assert_eq!(support.pending, [0]);
        assert_eq!(load(&text("n8n_secret")).unwrap_err(), "servers[1].include[0].tool: \"n8n_secret\" is not a tool of the server \"hub\"");
        // The list arrives: the alias is served through the hub's upstream, borrowed.
        let mut servers = catalog.servers.clone();
        let listed = [json!({"name": "search", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}, "tenant": {"type": "string"}}}})];
        let (tools, _) = crate::catalog::mcp::tools(&servers[0].upstreams[0], 0, &listed, &|_| false, 4096);
        Arc::make_mut(&mut servers[0]).tools.extend(tools);
        let (left, faults) = resolve(&mut servers, 1, &[0]);
        assert!(left.is_empty() && faults.is_empty());
        let alias = servers[1].tool("search").unwrap();
        assert_eq!(alias.mcp.as_ref().map(|t| (t.source, t.name.as_str())), Some((0, "search")));
        assert!(Arc::ptr_eq(&servers[1].upstreams[0], &servers[0].upstreams[0]));
    }

    #[test]
    fn prompts_and_resources_are_taken_too() {
        let text = r#"{"servers": [{"name": "a", "version": "1", "prompts": [{"name": "greet", "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}], "resources": [{"uri": "docs://a", "name": "a", "text": "A"}]},
            {"name": "b", "version": "1", "route": "/b/mcp", "include": [{"server": "a", "prompt": "greet", "as": "hello", "description": "Says hello."}, {"server": "a", "resource": "docs://a", "title": "The A"}]}]}"#;
        let catalog = load(text).unwrap();
        assert_eq!(catalog.servers[1].prompt_listings[0]["name"], "hello");
        assert_eq!(catalog.servers[1].prompt_listings[0]["description"], "Says hello.");
        assert_eq!(catalog.servers[1].resource_listings[0]["title"], "The A");
    }
}
