//! MCP messages by area. Each module decodes its params and builds its results.

pub mod lifecycle;
pub mod tools;
