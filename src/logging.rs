//! MCP logging: the RFC 5424 severities that `logging/setLevel` names and that filter
//! `notifications/message`, and that notification's params. Below `protocol`, which answers
//! `logging/setLevel`, and `upstream`, whose streamed logs it filters.

use serde_json::{json, Value};

/// Severities from least to most severe.
pub const LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

pub fn severity(level: &str) -> Option<usize> {
    LEVELS.iter().position(|l| *l == level)
}

/// Whether a message at `level` reaches a session that asked for `minimum` (none asked: all do).
pub fn passes(minimum: Option<&str>, level: &str) -> bool {
    match (minimum.and_then(severity), severity(level)) {
        (Some(min), Some(lvl)) => lvl >= min,
        (None, Some(_)) => true,
        (_, None) => false,
    }
}

/// `notifications/message` params.
pub fn message(level: &str, logger: Option<&str>, data: &Value) -> Value {
    match logger {
        Some(logger) => json!({"level": level, "logger": logger, "data": data}),
        None => json!({"level": level, "data": data}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filtering() {
        assert!(passes(None, "debug"));
        assert!(passes(Some("info"), "info"));
        assert!(passes(Some("info"), "error"));
        assert!(!passes(Some("warning"), "info"));
        assert!(!passes(None, "verbose"));
    }
}
