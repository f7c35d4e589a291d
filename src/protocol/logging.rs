//! `logging/setLevel`: the RFC 5424 severity (`crate::logging`) from which a session gets
//! `notifications/message`.
//!
//! | method | params | handler |
//! |---|---|---|
//! | `logging/setLevel` | [`SetLevelParams`] | [`set_level`] |
//!
//! `notifications/message`'s params are `crate::logging::message`. What the method table gives
//! the method: see [`PROPERTIES`].

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::Error;
use crate::logging::{severity, LEVELS};
use crate::method::Method;
use crate::session::Session;

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

/// What the method table (`crate::method`) gives this file's methods: capability, revisions,
/// whether the session's lease is kept, whether a lease serves it, cache hint, `Mcp-Name`.
/// `protocol::tests` holds it to the table, so it cannot go stale.
pub const PROPERTIES: &[(Method, &str)] = &[
    (Method::LoggingSetLevel, "capability none; before 2026-07-28 only; keeps the session: no; lease serves it: no; cacheable: no; Mcp-Name: none"),
];
