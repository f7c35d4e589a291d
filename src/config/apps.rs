//! A tool's `app` (MCP Apps): its HTML served as the resource `ui://<server>/<tool>`, with the
//! app MIME type and a strict CSP (no domain unless the configuration names it), and named in the
//! tool's `_meta.ui.resourceUri`. The file a `template` names is read by the configuration's
//! loader (a Worker reads no files) into `html`; the path must stay inside the configuration's
//! folder, which the loader checks on the real path and this checks as written.

use serde_json::{Map, Value};

use super::ConfigError;
use crate::catalog::{Resource, ResourceSource};
use crate::tools::Tool;

const FIELDS: [&str; 4] = ["template", "html", "csp", "prefersBorder"];

/// The resource of `tool`'s app, and its `_meta.ui.resourceUri` added to the tool's listing.
/// `at`: the app's path (`servers[0].tools[1].app`).
pub fn app(server: &str, tool: &mut Tool, app: Value, at: &str) -> Result<Resource, ConfigError> {
    let fault = |field: &str, why: &str| ConfigError::at([at, ".", field].concat(), why);
    let Value::Object(mut app) = app else { return Err(ConfigError::at(at, "must be an object")) };
    if let Some(field) = app.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(fault(field, "is not a field of an app (template, html, csp, prefersBorder)"));
    }
    let template = app.contains_key("template");
    if template && !app.get("template").and_then(Value::as_str).is_some_and(inside) {
        return Err(fault("template", "is not a relative path inside the configuration's folder"));
    }
    let Some(Value::String(html)) = app.remove("html").filter(|h| h.as_str().is_some_and(|h| !h.trim().is_empty())) else {
        let why = if template { "the template was not read: serve this configuration with mcp-edge's own commands, whose loader reads it into `html`" } else { "an app needs its `template` (or its `html`)" };
        return Err(fault("html", why));
    };
    let mut ui = Map::new();
    match app.remove("csp") {
        None => ui.insert("csp".into(), crate::apps::strict_csp()),
        Some(csp) if csp.is_object() => ui.insert("csp".into(), csp),
        Some(_) => return Err(fault("csp", "must be an object (connectDomains, resourceDomains, frameDomains, baseUriDomains)")),
    };
    match app.remove("prefersBorder") {
        None => None,
        Some(border) if border.is_boolean() => ui.insert("prefersBorder".into(), border),
        Some(_) => return Err(fault("prefersBorder", "must be true or false")),
    };
    let uri = ["ui://", server, "/", &tool.name].concat();
    let mut listing = Map::new();
    listing.insert("uri".into(), Value::String(uri.clone()));
    listing.insert("name".into(), Value::String(tool.name.clone()));
    listing.insert("mimeType".into(), Value::String(crate::apps::MIME_TYPE.into()));
    listing.insert("_meta".into(), object("ui", Value::Object(ui)));
    if let Some(listed) = tool.listing.as_object_mut() {
        listed.insert("_meta".into(), object("ui", object("resourceUri", Value::String(uri.clone()))));
    }
    Ok(Resource { uri, listing: Value::Object(listing), mime_type: Some(crate::apps::MIME_TYPE.into()), source: ResourceSource::Text(html) })
}

fn object(key: &str, value: Value) -> Value {
    let mut map = Map::new();
    map.insert(key.into(), value);
    Value::Object(map)
}

/// A path that stays in the configuration's folder as written: relative, no `..`, no `\`, no
/// scheme or drive.
fn inside(path: &str) -> bool {
    !path.is_empty() && !path.starts_with('/') && !path.contains(['\\', ':', '\0']) && path.split('/').all(|s| s != "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(app: &str) -> Result<crate::catalog::Catalog, ConfigError> {
        crate::config::load(&format!(r#"{{"servers":[{{"name":"s","version":"1","tools":[{{"name":"rows","http":{{"url":"https://x.example"}},"app":{app}}}]}}]}}"#))
    }

    use serde_json::json;

    #[test]
    fn a_tools_app_is_a_ui_resource_with_a_strict_csp() {
        let catalog = load(r#"{"template":"apps/table.html","html":"<table></table>","prefersBorder":true}"#).unwrap();
        let server = &catalog.servers[0];
        assert_eq!(server.tool_listings[0]["_meta"], json!({"ui": {"resourceUri": "ui://s/rows"}}));
        assert_eq!(server.resource_listings, [json!({"uri": "ui://s/rows", "name": "rows", "mimeType": crate::apps::MIME_TYPE, "_meta": {"ui": {"csp": crate::apps::strict_csp(), "prefersBorder": true}}})]);
        let declared = load(r#"{"html":"<p>","csp":{"connectDomains":["https://api.example"]}}"#).unwrap();
        assert_eq!(declared.servers[0].resource_listings[0]["_meta"]["ui"]["csp"], json!({"connectDomains": ["https://api.example"]}));
    }

    #[test]
    fn an_app_without_its_html_or_outside_the_folder_is_refused() {
        let fault = |app: &str| load(app).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(fault(r#"{"template":"apps/table.html"}"#).starts_with("servers[0].tools[0].app.html: the template was not read"));
        assert!(fault(r#"{"template":"../x.html","html":"<p>"}"#).starts_with("servers[0].tools[0].app.template: is not a relative path"));
        assert!(fault(r#"{"template":7,"html":"<p>"}"#).starts_with("servers[0].tools[0].app.template: is not a relative path"));
        assert!(fault("{}").contains("app.html"));
        assert!(fault(r#"{"html":"<p>","csp":[]}"#).contains("app.csp"));
        assert!(fault(r#"{"html":"<p>","script":"x"}"#).starts_with("servers[0].tools[0].app.script: is not a field"));
        assert!(fault(r#"{"html":"<p>","prefersBorder":"yes"}"#).contains("app.prefersBorder"));
        assert!(fault(r#"{"html":7}"#).contains("app.html"));
        assert!(fault("[]").starts_with("servers[0].tools[0].app: must be an object"));
    }

    #[test]
    fn a_template_stays_in_the_configurations_folder() {
        assert!(inside("apps/table.html") && inside("./table.html") && inside("a..b/x.html"));
        for path in ["", "/etc/passwd", "../secret.html", "apps/../../x", "..", "C:\\x", "apps\\..\\x", "file:///etc/passwd", "https://evil.example/x"] {
            assert!(!inside(path), "{path:?}");
        }
    }
}
