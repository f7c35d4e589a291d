//! MCP Apps (`io.modelcontextprotocol/ui`) through mcp-edge, pure: an upstream's `ui://`
//! resources renamed under its name (`ui://up/x` of upstream `a` is `ui://a/up/x`, which reverses
//! exactly since upstream names hold no `/`), the same rename in its tools' `_meta.ui.resourceUri`,
//! and what a client that did not declare the extension is not shown (the `ui://` resources, the
//! tools' `_meta.ui`, and tools only an app may call). `_meta.ui`'s `csp`, `permissions`, `domain`
//! and `prefersBorder` pass as they are: they are the upstream's word to the host.

use serde_json::{Map, Value};

use crate::method::Method;

/// The extension's identifier, in client (and server) `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The MIME type of an app's HTML resource.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";
const SCHEME: &str = "ui://";
/// The flat key older hosts read, beside `_meta.ui.resourceUri`.
const LEGACY_KEY: &str = "ui/resourceUri";

/// Whether the client declared the extension: an object under its key, whose `mimeTypes` (when
/// given) name the app MIME type.
pub fn declared(client_capabilities: &Value) -> bool {
    let Some(ui) = client_capabilities.get("extensions").and_then(|e| e.get(EXTENSION)).filter(|u| u.is_object()) else { return false };
    ui.get("mimeTypes").and_then(Value::as_array).is_none_or(|types| types.iter().any(|t| t.as_str() == Some(MIME_TYPE)))
}

/// Whether `uri` is of the `ui:` scheme, in any case (a host would take `UI://` for one too).
pub fn is_ui(uri: &str) -> bool {
    uri.get(..SCHEME.len()).is_some_and(|s| s.eq_ignore_ascii_case(SCHEME))
}

/// The upstream's `ui://…` as mcp-edge serves it: `ui://<upstream>/…`. None for any other URI.
pub fn ours(upstream: &str, uri: &str) -> Option<String> {
    uri.strip_prefix(SCHEME).map(|rest| [SCHEME, upstream, "/", rest].concat())
}

/// The upstream's own URI behind `uri`, when `uri` is one of `upstream`'s renamed ones.
pub fn theirs(upstream: &str, uri: &str) -> Option<String> {
    let rest = uri.strip_prefix(SCHEME)?.strip_prefix(upstream)?.strip_prefix('/')?;
    Some([SCHEME, rest].concat())
}

/// A tool of `upstream` as listed: its `_meta.ui.resourceUri` (and the legacy flat key) renamed.
pub fn rename_tool(upstream: &str, listing: &mut Map<String, Value>) {
    let Some(meta) = listing.get_mut("_meta").and_then(Value::as_object_mut) else { return };
    let renamed = |v: &mut Value| {
        if let Some(new) = v.as_str().and_then(|uri| ours(upstream, uri)) {
            *v = Value::String(new);
        }
    };
    if let Some(uri) = meta.get_mut("ui").and_then(|ui| ui.get_mut("resourceUri")) {
        renamed(uri);
    }
    if let Some(uri) = meta.get_mut(LEGACY_KEY) {
        renamed(uri);
    }
}

/// A `resources/read` result of `upstream`: the `ui://` URIs of its contents renamed.
pub fn rename_contents(upstream: &str, result: &mut Value) {
    for item in result.get_mut("contents").and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut) {
        if let Some(new) = item.get("uri").and_then(Value::as_str).and_then(|uri| ours(upstream, uri)) {
            item.insert("uri".into(), Value::String(new));
        }
    }
}

/// Whether a listed tool has an app (`_meta.ui.resourceUri`, or the legacy key).
pub fn is_app(tool: &Value) -> bool {
    tool.pointer("/_meta/ui/resourceUri").or_else(|| tool.get("_meta").and_then(|m| m.get(LEGACY_KEY))).is_some_and(Value::is_string)
}

/// Whether a listed tool is only for apps (`_meta.ui.visibility` without `"model"`).
fn app_only(tool: &Value) -> bool {
    tool.pointer("/_meta/ui/visibility").and_then(Value::as_array).is_some_and(|v| !v.iter().any(|s| s.as_str() == Some("model")))
}

/// Whether a client sees a listed tool: one only an app may call is for clients that declared
/// the extension (`declared`), in a list, a catalog's search and its descriptions alike.
pub fn sees(declared: bool, tool: &Value) -> bool {
    declared || !app_only(tool)
}

/// A listed tool as a client without the extension sees it: no `_meta.ui`, nor the legacy key.
pub fn without_ui(tool: &mut Map<String, Value>) {
    let emptied = tool.get_mut("_meta").and_then(Value::as_object_mut).is_some_and(|meta| {
        meta.remove("ui");
        meta.remove(LEGACY_KEY);
        meta.is_empty()
    });
    if emptied {
        tool.remove("_meta");
    }
}

/// A list result as a client that did not declare the extension sees it: no `ui://` resources or
/// templates, no tool only an app may call, no `_meta.ui` on the others (the spec's servers
/// offer UI only to hosts that render it; the tools' results still carry their text).
pub fn for_client(declared: bool, method: Method, result: &mut Value) {
    let field = match method {
        _ if declared => return,
        Method::ToolsList => "tools",
        Method::ResourcesList => "resources",
        Method::ResourcesTemplatesList => "resourceTemplates",
        _ => return,
    };
    let Some(items) = result.get_mut(field).and_then(Value::as_array_mut) else { return };
    match method {
        Method::ToolsList => {
            items.retain(|t| sees(false, t));
            items.iter_mut().filter_map(Value::as_object_mut).for_each(without_ui);
        }
        _ => items.retain(|r| !r.get("uri").or_else(|| r.get("uriTemplate")).and_then(Value::as_str).is_some_and(is_ui)),
    }
}

/// The strict CSP of a configured app: no domain beyond its own document, unless declared.
pub fn strict_csp() -> Value {
    let none = |name: &str| (name.to_string(), Value::Array(Vec::new()));
    Value::Object(["connectDomains", "resourceDomains", "frameDomains", "baseUriDomains"].into_iter().map(none).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_client_declares_the_extension_with_the_app_mime_type() {
        assert!(declared(&json!({"extensions": {EXTENSION: {}}})));
        assert!(declared(&json!({"extensions": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}})));
        assert!(!declared(&json!({"extensions": {EXTENSION: {"mimeTypes": ["text/html"]}}})));
        assert!(!declared(&json!({"extensions": {EXTENSION: true}})) && !declared(&json!({})) && !declared(&json!({"extensions": {}})));
    }

    #[test]
    fn renamed_under_the_upstream_and_back_exactly() {
        assert_eq!(ours("a", "ui://get-time/mcp-app.html").as_deref(), Some("ui://a/get-time/mcp-app.html"));
        assert_eq!(theirs("a", "ui://a/get-time/mcp-app.html").as_deref(), Some("ui://get-time/mcp-app.html"));
        assert_eq!(ours("a", "docs://x"), None);
        // Two upstreams' same URI never meet, and neither reads back as the other's.
        let (one, two) = (ours("a", "ui://x").unwrap(), ours("b", "ui://x").unwrap());
        assert_ne!(one, two);
        assert_eq!(theirs("b", &one), None);
        assert_eq!(theirs("a", "ui://ab/x"), None, "a name is a whole segment");
        assert_eq!(theirs("a", "ui://a"), None);
        assert_eq!(theirs("a", "docs://a/x"), None);
        for uri in ["ui://", "ui:///", "ui://a/../b", "ui://%2e%2e/x", "ui://a/b?c#d"] {
            assert_eq!(theirs("a", &ours("a", uri).unwrap()).as_deref(), Some(uri), "{uri:?}");
        }
        assert!(is_ui("UI://x") && is_ui("ui://x") && !is_ui("ui:x") && !is_ui("u"));
    }

    #[test]
    fn tools_and_reads_renamed_csp_untouched() {
        let mut tool = json!({"name": "t", "_meta": {"ui": {"resourceUri": "ui://w/app.html", "visibility": ["model", "app"], "csp": {"connectDomains": ["https://api.example"]}}, "ui/resourceUri": "ui://w/app.html", "other": 1}});
        rename_tool("up", tool.as_object_mut().unwrap());
        assert_eq!(tool, json!({"name": "t", "_meta": {"ui": {"resourceUri": "ui://up/w/app.html", "visibility": ["model", "app"], "csp": {"connectDomains": ["https://api.example"]}}, "ui/resourceUri": "ui://up/w/app.html", "other": 1}}));
        let mut read = json!({"contents": [{"uri": "ui://w/app.html", "mimeType": MIME_TYPE, "text": "<html>", "_meta": {"ui": {"csp": {"resourceDomains": ["https://cdn.example"]}, "prefersBorder": true}}}]});
        rename_contents("up", &mut read);
        assert_eq!(read["contents"][0]["uri"], "ui://up/w/app.html");
        assert_eq!(read["contents"][0]["_meta"], json!({"ui": {"csp": {"resourceDomains": ["https://cdn.example"]}, "prefersBorder": true}}));
    }

    #[test]
    fn a_client_without_the_extension_sees_no_ui() {
        let tools = json!({"tools": [
            {"name": "a", "_meta": {"ui": {"resourceUri": "ui://x/a"}}},
            {"name": "b", "_meta": {"ui": {"resourceUri": "ui://x/a"}, "keep": 1}},
            {"name": "app-only", "_meta": {"ui": {"resourceUri": "ui://x/a", "visibility": ["app"]}}},
            {"name": "plain"}]});
        let mut seen = tools.clone();
        for_client(false, Method::ToolsList, &mut seen);
        assert_eq!(seen, json!({"tools": [{"name": "a"}, {"name": "b", "_meta": {"keep": 1}}, {"name": "plain"}]}));
        let mut all = tools.clone();
        for_client(true, Method::ToolsList, &mut all);
        assert_eq!(all, tools, "a client that declared it sees everything, app-only tools too");
        let mut resources = json!({"resources": [{"uri": "ui://x/a", "name": "a"}, {"uri": "UI://x/b", "name": "b"}, {"uri": "docs://c", "name": "c"}]});
        for_client(false, Method::ResourcesList, &mut resources);
        assert_eq!(resources, json!({"resources": [{"uri": "docs://c", "name": "c"}]}));
        let mut templates = json!({"resourceTemplates": [{"uriTemplate": "ui://x/{id}", "name": "a"}, {"uriTemplate": "d://{id}", "name": "d"}]});
        for_client(false, Method::ResourcesTemplatesList, &mut templates);
        assert_eq!(templates, json!({"resourceTemplates": [{"uriTemplate": "d://{id}", "name": "d"}]}));
    }
}
