//! Connections at the edge.

pub(crate) mod discover;
pub(crate) mod grants;
