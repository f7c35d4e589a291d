//! An upstream's lists as entries of ours: the tools its filter takes, named with its prefix,
//! gated by its roles, listed as the upstream describes them (title, description, schemas,
//! annotations); its resources and resource templates under their own URIs; its prompts under
//! the prefix. An entry it describes wrongly, or whose name or URI is taken, is left out, and
//! said why.

use serde_json::{json, Value};

use super::{Prompt, Resource, ResourceSource, ResourceTemplate};
use crate::tools::{header_params, TaskSupport, Tool};
use crate::upstream::mcp::{Source, Target};
use crate::upstream::reply::{ReplyPlan, ResultMode};
use crate::upstream::template::{Context, Template};

/// Longest tool name a client is promised (the MCP spec's SEP-986 limit).
const MAX_NAME_CHARS: usize = 128;

/// The tools of one `tools/list` page (`tools`), from source number `index`; and the reasons
/// for those left out. `taken`: names already served (the server's own tools, other sources'),
/// which a discovered tool does not shadow.
pub fn tools(source: &Source, index: usize, listed: &[Value], taken: &dyn Fn(&str) -> bool, max_reply_bytes: u64) -> (Vec<Tool>, Vec<String>) {
    let mut tools: Vec<Tool> = Vec::new();
    let mut skipped = Vec::new();
    for entry in listed {
        let Some(name) = entry.get("name").and_then(Value::as_str) else {
            skipped.push("a tool without a name".to_string());
            continue;
        };
        if !source.tools.takes(name) {
            continue;
        }
        let ours = format!("{}{name}", source.prefix);
        let schema = entry.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"}));
        let why = if !schema.is_object() {
            Some("its inputSchema is not an object")
        } else if ours.chars().count() > MAX_NAME_CHARS || ours.chars().any(|c| !(c.is_ascii_alphanumeric() || "_-.".contains(c))) {
            Some("its name, with the prefix, is not 1 to 128 letters, digits, `_`, `-` or `.`")
        } else if taken(&ours) || tools.iter().any(|t| t.name == ours) {
            Some("another tool of this server has that name")
        } else {
            None
        };
        if let Some(why) = why {
            skipped.push(format!("{ours:?}: {why}"));
            continue;
        }
        let mut listing = entry.as_object().cloned().unwrap_or_default();
        listing.insert("name".into(), Value::String(ours.clone()));
        listing.insert("inputSchema".into(), schema.clone());
        crate::apps::rename_tool(&source.name, &mut listing);
        tools.push(Tool {
            name: ours,
            listing: Value::Object(listing),
            header_params: header_params(&schema),
            input_schema: schema,
            // The URL and headers; the body is each call's JSON-RPC message.
            request: source.request.clone(),
            // Its result is passed on as the upstream gave it.
            reply: ReplyPlan { mode: ResultMode::Passthrough, ..ReplyPlan::map(max_reply_bytes) },
            close_after_ms: None,
            forward_meta_auth: false,
            forward_upstream_token: source.forward_upstream_token,
            deferral: None,
            roles: source.roles.clone(),
            tags: Vec::new(),
            cache: None,
            mcp: Some(Target { source: index, name: name.to_string() }),
            // As the upstream says: a task-augmented call is passed to it (`edge::mcp::call`).
            task_support: match entry.pointer("/execution/taskSupport").and_then(Value::as_str) {
                Some("optional") => TaskSupport::Optional,
                Some("required") => TaskSupport::Required,
                _ => TaskSupport::Forbidden,
            },
            input_before_task: false,
            trace: crate::tools::TraceContent::default(),
            curation: None,
            connection: source.connection.clone(),
        });
    }
    (tools, skipped)
}

/// Its resources (`resources/list`), under their own URIs: the filter matches a name or a URI.
pub fn resources(source: &Source, index: usize, listed: &[Value], taken: &dyn Fn(&str) -> bool) -> (Vec<Resource>, Vec<String>) {
    let mut out: Vec<Resource> = Vec::new();
    let mut skipped = Vec::new();
    for entry in listed {
        let (Some(uri), Some(name)) = (entry.get("uri").and_then(Value::as_str), entry.get("name").and_then(Value::as_str)) else {
            skipped.push("a resource without a uri or a name".to_string());
            continue;
        };
        if !source.resources.takes_any(&[name, uri]) {
            continue;
        }
        // An app's `ui://` resource goes under the upstream's name: two upstreams' never meet.
        let (uri, listing) = match crate::apps::ours(&source.name, uri) {
            Some(ours) => {
                let mut listing = entry.as_object().cloned().unwrap_or_default();
                listing.insert("uri".into(), Value::String(ours.clone()));
                (ours, Value::Object(listing))
            }
            None if crate::apps::is_ui(uri) => {
                skipped.push(format!("{uri:?}: an app's URI is written `ui://` in lower case"));
                continue;
            }
            None => (uri.to_string(), entry.clone()),
        };
        let uri = uri.as_str();
        if taken(uri) || out.iter().any(|r| r.uri == uri) {
            skipped.push(format!("{uri:?}: another resource of this server has that URI"));
            continue;
        }
        let mime_type = entry.get("mimeType").and_then(Value::as_str).map(str::to_string);
        out.push(Resource { uri: uri.to_string(), listing, mime_type, source: ResourceSource::Mcp(index) });
    }
    (out, skipped)
}

/// Its resource templates (`resources/templates/list`): those whose URI template mcp-edge can
/// match a URI against (literals and simple `{var}` expressions).
pub fn templates(source: &Source, index: usize, listed: &[Value]) -> (Vec<ResourceTemplate>, Vec<String>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for entry in listed {
        let (Some(text), Some(name)) = (entry.get("uriTemplate").and_then(Value::as_str), entry.get("name").and_then(Value::as_str)) else {
            skipped.push("a resource template without a uriTemplate or a name".to_string());
            continue;
        };
        if !source.resources.takes_any(&[name, text]) {
            continue;
        }
        let parsed = Template::parse(text, Context::Url).ok().filter(|t| t.is_matchable() && !crate::apps::is_ui(text));
        let Some(uri_template) = parsed else {
            skipped.push(format!("{text:?}: a URI template mcp-edge cannot match"));
            continue;
        };
        let mime_type = entry.get("mimeType").and_then(Value::as_str).map(str::to_string);
        out.push(ResourceTemplate { uri_template, listing: entry.clone(), mime_type, request: source.request.clone(), completions: Vec::new(), mcp: Some(index) });
    }
    (out, skipped)
}

/// Its prompts (`prompts/list`), named with its prefix.
pub fn prompts(source: &Source, index: usize, listed: &[Value], taken: &dyn Fn(&str) -> bool) -> (Vec<Prompt>, Vec<String>) {
    let mut out: Vec<Prompt> = Vec::new();
    let mut skipped = Vec::new();
    for entry in listed {
        let Some(name) = entry.get("name").and_then(Value::as_str) else {
            skipped.push("a prompt without a name".to_string());
            continue;
        };
        if !source.prompts.takes(name) {
            continue;
        }
        let ours = format!("{}{name}", source.prefix);
        if taken(&ours) || out.iter().any(|p| p.name == ours) {
            skipped.push(format!("{ours:?}: another prompt of this server has that name"));
            continue;
        }
        let mut listing = entry.as_object().cloned().unwrap_or_default();
        listing.insert("name".into(), Value::String(ours.clone()));
        out.push(Prompt {
            name: ours,
            listing: Value::Object(listing),
            description: None,
            arguments: Vec::new(),
            messages: Vec::new(),
            completions: Vec::new(),
            mcp: Some(Target { source: index, name: name.to_string() }),
        });
    }
    (out, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::mcp::filter::Filter;
    use crate::upstream::mcp::Transport;
    use crate::upstream::request::BodyPlan;
    use crate::upstream::RequestTemplate;

    fn source(prefix: &str, include: Option<&[String]>) -> Source {
        let url = "https://up.example/mcp";
        // The request is carried, never rendered, here: its URL is all it needs.
        let request = RequestTemplate {
            method: "POST".into(),
            url: Template::parse(url, Context::Url).unwrap(),
            url_source: url.into(),
            headers: Vec::new(),
            query: Vec::new(),
            cookies: Vec::new(),
            body: BodyPlan::None,
            timeout_ms: 30_000,
            secrets: Vec::new(),
            redirects: Default::default(),
            retry: None,
        };
        Source {
            name: "up".into(),
            transport: Transport::StreamableHttp,
            request,
            prefix: prefix.into(),
            tools: Filter::new(include, &["hidden".to_string()]).unwrap(),
            resources: Filter::default(),
            prompts: Filter::new(None, &["secret*".to_string()]).unwrap(),
            roles: vec!["staff".into()],
            catalog_ttl_ms: 1000,
            forward_upstream_token: false,
            connection: None,
        }
    }

    #[test]
    fn filtered_prefixed_gated_and_described_as_upstream_says() {
        let listed = vec![
            json!({"name": "echo", "title": "Echo", "description": "Echoes.", "inputSchema": {"type": "object", "properties": {"m": {"type": "string"}}}, "annotations": {"readOnlyHint": true}}),
            json!({"name": "hidden", "inputSchema": {"type": "object"}}),
            json!({"name": "bare", "execution": {"taskSupport": "required"}}),
            json!({"name": "bad schema", "inputSchema": []}),
            json!({"name": "mine", "inputSchema": {"type": "object"}}),
            json!({"description": "no name"}),
        ];
        let taken = |name: &str| name == "up_mine";
        let (tools, skipped) = tools(&source("up_", None), 2, &listed, &taken, 4096);
        assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["up_echo", "up_bare"]);
        assert_eq!(tools[0].listing, json!({"name": "up_echo", "title": "Echo", "description": "Echoes.", "inputSchema": {"type": "object", "properties": {"m": {"type": "string"}}}, "annotations": {"readOnlyHint": true}}));
        assert_eq!(tools[1].input_schema, json!({"type": "object"}));
        assert_eq!((tools[0].task_support, tools[1].task_support), (TaskSupport::Forbidden, TaskSupport::Required), "as the upstream says");
        assert_eq!(tools[0].mcp, Some(Target { source: 2, name: "echo".into() }));
        assert_eq!(tools[0].roles, ["staff"]);
        assert_eq!(tools[0].reply.mode, ResultMode::Passthrough);
        assert_eq!(
            skipped,
            [
                "\"up_bad schema\": its inputSchema is not an object".to_string(),
                "\"up_mine\": another tool of this server has that name".to_string(),
                "a tool without a name".to_string(),
            ]
        );
        let only = tools_named(&source("", Some(&["e*".to_string()])), &listed);
        assert_eq!(only, ["echo"]);
    }

    #[test]
    fn resources_keep_their_uris_and_prompts_take_the_prefix() {
        let s = source("up_", None);
        let listed = vec![json!({"uri": "docs://a", "name": "a", "mimeType": "text/plain"}), json!({"uri": "docs://mine", "name": "m"}), json!({"name": "no uri"})];
        let (found, skipped) = resources(&s, 1, &listed, &|uri| uri == "docs://mine");
        assert_eq!(found.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(), ["docs://a"]);
        assert!(matches!(found[0].source, ResourceSource::Mcp(1)));
        assert_eq!(found[0].listing, listed[0]);
        assert_eq!(skipped, ["\"docs://mine\": another resource of this server has that URI", "a resource without a uri or a name"]);
        let (found, skipped) = templates(&s, 1, &[json!({"uriTemplate": "items://{id}", "name": "item"}), json!({"uriTemplate": "x://{a}{b}", "name": "joined"})]);
        assert_eq!(found.len(), 1);
        assert!(found[0].matches("items://42").is_some() && found[0].mcp == Some(1));
        assert_eq!(skipped, ["\"x://{a}{b}\": a URI template mcp-edge cannot match"]);
        let (found, skipped) = prompts(&s, 1, &[json!({"name": "greet", "description": "Hi"}), json!({"name": "secret_one"}), json!({"name": "taken"})], &|n| n == "up_taken");
        assert_eq!(found.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["up_greet"]);
        assert_eq!(found[0].listing, json!({"name": "up_greet", "description": "Hi"}));
        assert_eq!(found[0].mcp, Some(Target { source: 1, name: "greet".into() }));
        assert_eq!(skipped, ["\"up_taken\": another prompt of this server has that name"]);
    }

    fn tools_named(source: &Source, listed: &[Value]) -> Vec<String> {
        tools(source, 0, listed, &|_| false, 4096).0.into_iter().map(|t| t.name).collect()
    }
}
