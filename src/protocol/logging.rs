//! `logging/setLevel` and the RFC 5424 severities that filter `notifications/message`.
//!
//! | method | params | handler |
//! |---|---|---|
//! | `logging/setLevel` | [`SetLevelParams`] | [`set_level`] |
//!
//! `notifications/message`'s params are [`message`]. What the method table gives the method:
//! see [`PROPERTIES`].

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::Error;
use crate::session::Session;
use crate::method::Method;

/// Severities from least to most severe.
pub const LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

pub fn severity(level: &str) -> Option<usize> {
    LEVELS.iter().position(|l| *l == level)
}

/// `logging/setLevel`'s params.
#[derive(Debug, Deserialize)]
pub struct SetLevelParams {
    pub level: String,
}

impl super::Params for SetLevelParams {}

/// `logging/setLevel`: the session gets the messages at this level and above from now on.
pub fn set_level(session: &mut Session, params: SetLevelParams) -> Result<Value, Error> {
    if severity(&params.level).is_none() {
        return Err(Error::InvalidParams(format!("unknown log level {:?}; use one of {}", params.level, LEVELS.join(", "))));
    }
    session.log_level = Some(params.level);
    Ok(json!({}))
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

/// What the method table (`crate::method`) gives this file's methods: capability, revisions,
/// whether the session's lease is kept, whether a lease serves it, cache hint, `Mcp-Name`.
/// `protocol::tests` holds it to the table, so it cannot go stale.
pub const PROPERTIES: &[(Method, &str)] = &[
    (Method::LoggingSetLevel, "capability none; before 2026-07-28 only; keeps the session: no; lease serves it: no; cacheable: no; Mcp-Name: none"),
];

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
