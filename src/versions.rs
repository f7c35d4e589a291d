//! The MCP protocol revisions this server speaks. Below `error` and `negotiate`, which both
//! name them.

/// Protocol revisions that use `initialize`, newest first.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
pub const LATEST_VERSION: &str = "2025-11-25";
/// The stateless revision: no `initialize`, protocol information in every request's `_meta`.
pub const STATELESS_VERSION: &str = "2026-07-28";
/// Every version this server speaks, newest first: what `server/discover` and an unsupported
/// version error list.
pub const ALL_VERSIONS: [&str; 5] = [STATELESS_VERSION, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
