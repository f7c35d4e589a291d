//! The live layer: server configurations changed through the admin API, served on top of the
//! bundled configuration file without a deploy.
//!
//! The rule: a server the layer names is served from the layer's copy, whole; every other
//! server, and everything outside `servers`, comes from the bundled file. An empty layer is the
//! bundled file itself, so deleting a server's live entry (or rolling back to version 0) returns
//! it to the file. The layer is keyed by the server's `name`, which a live change cannot alter.
//!
//! - here: the layer, and the lists a server holds ([`Kind`]).
//! - [`edit`]: one change (a server replaced, a tool created…) applied to a layer and validated
//!   with the file's own located faults.
//! - [`store`]: the versions the store object keeps, and the commands it answers.
//! - [`api`]: the admin API's routes and its errors.

pub mod api;
pub mod edit;
pub mod store;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::catalog::Catalog;
use crate::config::ConfigError;
use crate::method::Method;

/// The lists a server holds, each edited by its entries' `name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tools,
    Resources,
    ResourceTemplates,
    Prompts,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Tools, Kind::Resources, Kind::ResourceTemplates, Kind::Prompts];

    /// The field of a server's configuration, which is also the API's path segment.
    pub fn field(self) -> &'static str {
        match self {
            Kind::Tools => "tools",
            Kind::Resources => "resources",
            Kind::ResourceTemplates => "resourceTemplates",
            Kind::Prompts => "prompts",
        }
    }

    pub fn parse(segment: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.field() == segment)
    }

    pub(super) fn singular(self) -> &'static str {
        match self {
            Kind::Tools => "tool",
            Kind::Resources => "resource",
            Kind::ResourceTemplates => "resource template",
            Kind::Prompts => "prompt",
        }
    }

    /// The notification that tells a session this list changed.
    pub fn notification(self) -> Method {
        match self {
            Kind::Tools => Method::ToolsListChanged,
            Kind::Resources | Kind::ResourceTemplates => Method::ResourcesListChanged,
            Kind::Prompts => Method::PromptsListChanged,
        }
    }
}

/// Server name → that server's whole configuration, as the file would spell it.
pub type Layer = BTreeMap<String, Value>;

/// The bundled file with the layer's servers in place of the file's own.
pub fn effective(bundled: &Value, layer: &Layer) -> Value {
    let mut doc = bundled.clone();
    if let Some(servers) = doc.get_mut("servers").and_then(Value::as_array_mut) {
        for server in servers.iter_mut() {
            let live = server.get("name").and_then(Value::as_str).and_then(|name| layer.get(name));
            if let Some(live) = live {
                *server = live.clone();
            }
        }
    }
    doc
}

/// The catalog served for the layer: the effective file, compiled as the file is. A layer that
/// names no server of the file adds nothing: its entries wait for a file that has them again.
pub fn compile(bundled: &Value, layer: &Layer) -> Result<Catalog, ConfigError> {
    crate::config::load(&effective(bundled, layer).to_string())
}

/// The names of the file's servers, in its order: the servers a layer may replace.
pub fn server_names(bundled: &Value) -> impl Iterator<Item = &str> {
    bundled.get("servers").and_then(Value::as_array).into_iter().flatten().map(|s| s.get("name").and_then(Value::as_str).unwrap_or_default())
}

/// The index of the file's server called `name`.
pub fn server_index(bundled: &Value, name: &str) -> Option<usize> {
    server_names(bundled).position(|n| n == name)
}

/// A server's configuration as served now: its live copy, or the file's.
pub fn server_config<'a>(bundled: &'a Value, layer: &'a Layer, name: &str) -> Option<&'a Value> {
    layer.get(name).or_else(|| bundled.get("servers")?.as_array()?.get(server_index(bundled, name)?))
}

/// The servers whose lists differ between two layers, each with the notifications that tell
/// its sessions (a rollback may change several servers at once).
/// A server that includes entries of a changed server (`include`) changes with it: its aliases
/// show the source's new definitions. A server whose access rules (`policies`) changed may list
/// anything differently to anyone: each of its lists changed.
pub fn changes(bundled: &Value, before: &Layer, after: &Layer) -> Vec<(String, Vec<Method>)> {
    let differ = |name: &str, field: &str| server_config(bundled, before, name).map(|s| s.get(field)) != server_config(bundled, after, name).map(|s| s.get(field));
    let changed: Vec<&str> = server_names(bundled).filter(|name| Kind::ALL.iter().any(|k| differ(name, k.field()))).collect();
    server_names(bundled)
        .filter_map(|name| {
            let new = server_config(bundled, after, name)?;
            let sources = new.get("include").and_then(Value::as_array).into_iter().flatten().filter_map(|i| i.get("server")?.as_str());
            let curated = differ(name, "include") || sources.into_iter().any(|s| s != name && changed.contains(&s));
            let curated = curated || differ(name, "policies");
            let mut methods = Vec::new();
            for kind in Kind::ALL {
                let method = kind.notification();
                if (curated || differ(name, kind.field())) && !methods.contains(&method) {
                    methods.push(method);
                }
            }
            (!methods.is_empty()).then(|| (name.to_string(), methods))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_layer_replaces_named_servers_whole_and_nothing_else() {
        let bundled = json!({"servers": [{"name": "a", "version": "1"}, {"name": "b", "version": "1", "route": "/b/mcp"}], "log": "failures"});
        let mut layer = Layer::new();
        assert_eq!(effective(&bundled, &layer), bundled);
        layer.insert("b".into(), json!({"name": "b", "version": "2", "route": "/b/mcp"}));
        layer.insert("gone".into(), json!({"name": "gone", "version": "9"}));
        let doc = effective(&bundled, &layer);
        assert_eq!(doc, json!({"servers": [{"name": "a", "version": "1"}, {"name": "b", "version": "2", "route": "/b/mcp"}], "log": "failures"}));
        let catalog = compile(&bundled, &layer).unwrap();
        assert_eq!(catalog.servers.iter().map(|s| s.version.as_str()).collect::<Vec<_>>(), ["1", "2"]);
        assert_eq!(server_config(&bundled, &layer, "a"), Some(&json!({"name": "a", "version": "1"})));
        assert_eq!(server_config(&bundled, &layer, "b").unwrap()["version"], "2");
        assert_eq!(server_config(&bundled, &layer, "c"), None);
    }

    #[test]
    fn a_curated_server_changes_with_the_servers_it_includes() {
        let bundled = json!({"servers": [{"name": "a", "version": "1", "tools": []}, {"name": "b", "version": "1", "include": [{"server": "a", "tool": "t"}]}, {"name": "c", "version": "1"}]});
        let mut after = Layer::new();
        after.insert("a".into(), json!({"name": "a", "version": "1", "tools": [{"name": "t"}]}));
        let told: Vec<String> = changes(&bundled, &Layer::new(), &after).into_iter().map(|(name, _)| name).collect();
        assert_eq!(told, ["a", "b"]);
        let mut after = Layer::new();
        after.insert("b".into(), json!({"name": "b", "version": "1", "include": []}));
        let told = changes(&bundled, &Layer::new(), &after);
        assert_eq!(told, [("b".to_string(), vec![Method::ToolsListChanged, Method::ResourcesListChanged, Method::PromptsListChanged])]);
    }

    #[test]
    fn new_access_rules_change_every_list_of_their_server() {
        let bundled = json!({"servers": [{"name": "a", "version": "1"}, {"name": "b", "version": "1"}]});
        let mut after = Layer::new();
        after.insert("a".into(), json!({"name": "a", "version": "1", "policies": [{"name": "p", "deny": "true"}]}));
        let told = changes(&bundled, &Layer::new(), &after);
        assert_eq!(told, [("a".to_string(), vec![Method::ToolsListChanged, Method::ResourcesListChanged, Method::PromptsListChanged])]);
    }
}
