//! The versions of the live layer, as the store object keeps them, and the commands the Worker
//! sends it. The object only compares and stores: the Worker computes and validates each change,
//! then writes it against the version it read, so two writers cannot both win.

use serde::{Deserialize, Serialize};

use super::Layer;

/// How many versions the store keeps; older ones leave the history.
pub const KEPT: u64 = 100;

/// One accepted change: who, when, what.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    pub version: u64,
    /// When it was stored, in milliseconds since the epoch.
    pub at_ms: u64,
    /// The principal who made it (`admin-token` for the admin token).
    pub by: String,
    pub summary: String,
    /// The servers whose configuration it changed.
    pub servers: Vec<String>,
}

/// A version as stored: its record and the whole layer it serves, so a rollback is one read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    #[serde(flatten)]
    pub record: Version,
    pub layer: Layer,
}

impl Stored {
    /// Version 0: the bundled file, which is never stored.
    pub fn bundled() -> Stored {
        Stored { record: Version { summary: "the bundled configuration file".into(), ..Version::default() }, layer: Layer::new() }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Command {
    /// The current version, with its layer unless it is `known` already.
    Head { known: Option<u64> },
    /// Stores `layer` as the version after `base`, unless `base` is no longer current.
    Write { base: u64, layer: Layer, by: String, summary: String, servers: Vec<String> },
    /// The kept versions' records, newest first.
    History,
    /// One version, with its layer.
    Get { version: u64 },
}

/// The store's answer to `Head` and `Write`: the current version, and its layer when asked
/// (`Head` for a version the caller does not know).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Current {
    pub version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<Layer>,
    #[serde(default)]
    pub at_ms: u64,
    /// `Write`: whether it was stored (`false`: `base` was stale; `version` is the current one).
    #[serde(default)]
    pub stored: bool,
}

/// The storage key of a version; zero-padded so they list in order.
pub fn key(version: u64) -> String {
    format!("v:{version:012}")
}

/// The versions a store at `version` no longer keeps.
pub fn dropped(version: u64) -> Option<u64> {
    version.checked_sub(KEPT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_and_records_are_plain_json() {
        let write = Command::Write { base: 2, layer: Layer::from([("s".to_string(), json!({"name": "s"}))]), by: "admin-token".into(), summary: "x".into(), servers: vec!["s".into()] };
        let text = serde_json::to_string(&write).unwrap();
        assert_eq!(text, r#"{"write":{"base":2,"layer":{"s":{"name":"s"}},"by":"admin-token","summary":"x","servers":["s"]}}"#);
        assert_eq!(serde_json::from_str::<Command>(&text).unwrap(), write);
        let stored = Stored { record: Version { version: 3, at_ms: 9, by: "a".into(), summary: "s".into(), servers: vec![] }, layer: Layer::new() };
        assert_eq!(serde_json::to_value(&stored).unwrap(), json!({"version": 3, "atMs": 9, "by": "a", "summary": "s", "servers": [], "layer": {}}));
        assert_eq!(key(7), "v:000000000007");
        assert_eq!((dropped(100), dropped(101)), (Some(0), Some(1)));
        assert_eq!(dropped(5), None);
    }
}
