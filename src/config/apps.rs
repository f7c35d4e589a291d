//! A tool's `app` (MCP Apps): its HTML served as the resource `ui://<server>/<tool>`, with the
//! app MIME type and a strict CSP (no domain unless the configuration names it), and named in the
//! tool's `_meta.ui.resourceUri`. The file a `template` names is read by the configuration's
//! loader (a Worker reads no files) into `html`; the path must stay inside the configuration's
//! folder, which the loader checks on the real path and this checks as written.

use serde_json::{json, Map, Value};

use super::model::AppConfig;
use super::ConfigError;
use crate::catalog::{Resource, ResourceSource};
use crate::tools::Tool;

/// The resource of `tool`'s app, and its `_meta.ui.resourceUri` added to the tool's listing.
/// `at`: the app's path (`servers[0].tools[1].app`).
pub fn app(server: &str, tool: &mut Tool, app: AppConfig, at: &str) -> Result<Resource, ConfigError> {
    if let Some(template) = &app.template {
        if !inside(template) {
            return Err(ConfigError::at(format!("{at}.template"), format!("{template:?} is not a relative path inside the configuration's folder")));
        }
    }
    let Some(html) = app.html.filter(|h| !h.trim().is_empty()) else {
        let why = if app.template.is_some() { "the template was not read: serve this configuration with mcp-edge's own commands, whose loader reads it into `html`" } else { "an app needs its `template` (or its `html`)" };
        return Err(ConfigError::at(format!("{at}.html"), why));
    };
    let csp = match app.csp {
        None => crate::apps::strict_csp(),
        Some(csp) if csp.is_object() => csp,
        Some(_) => return Err(ConfigError::at(format!("{at}.csp"), "must be an object (connectDomains, resourceDomains, frameDomains, baseUriDomains)")),
    };
    let uri = ["ui://", server, "/", &tool.name].concat();
    let mut ui = Map::new();
    ui.insert("csp".into(), csp);
    if let Some(border) = app.prefers_border {
        ui.insert("prefersBorder".into(), Value::Bool(border));
    }
    let listing = json!({"uri": uri, "name": tool.name, "mimeType": crate::apps::MIME_TYPE, "_meta": {"ui": ui}});
    if let Some(listed) = tool.listing.as_object_mut() {
        listed.insert("_meta".into(), json!({"ui": {"resourceUri": uri}}));
    }
    Ok(Resource { uri, listing, mime_type: Some(crate::apps::MIME_TYPE.into()), source: ResourceSource::Text(html) })
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
        assert!(fault(r#"{"template":"../x.html","html":"<p>"}"#).starts_with("servers[0].tools[0].app.template: \"../x.html\" is not a relative path"));
        assert!(fault("{}").contains("app.html"));
        assert!(fault(r#"{"html":"<p>","csp":[]}"#).contains("app.csp"));
        assert!(fault(r#"{"html":"<p>","script":"x"}"#).contains("unknown field"));
    }

    #[test]
    fn a_template_stays_in_the_configurations_folder() {
        assert!(inside("apps/table.html") && inside("./table.html") && inside("a..b/x.html"));
        for path in ["", "/etc/passwd", "../secret.html", "apps/../../x", "..", "C:\\x", "apps\\..\\x", "file:///etc/passwd", "https://evil.example/x"] {
            assert!(!inside(path), "{path:?}");
        }
    }
}
