//! The configuration file's text read into its model; a fault is located by its JSON path.
//! `build.rs` once read the file at build time; now the Worker and `check` read it when they start.

use super::locate;
use super::model::ConfigFile;

/// A configuration fault: where (`servers[0].tools[1].http.url`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}

impl ConfigError {
    pub fn at(path: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError { path: path.into(), message: message.into() }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() || self.path == "." {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Reads a configuration file's text into its model, unvalidated.
pub fn read(text: &str) -> Result<ConfigFile, ConfigError> {
    serde_json::from_slice(text.as_bytes()).map_err(|e| {
        let message = e.to_string();
        let message = message.strip_suffix(&format!(" at line {} column {}", e.line(), e.column())).unwrap_or(&message);
        // serde_json counts the column in bytes from the line's start.
        let line_start: usize = text.split_inclusive('\n').take(e.line().saturating_sub(1)).map(str::len).sum();
        let path = locate::path_at(text, line_start + e.column(), message.starts_with("missing field"));
        ConfigError::at(path, message)
    })
}
