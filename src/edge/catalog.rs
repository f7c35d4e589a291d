//! The catalog a request is served from: the configured one (`configured`) with the upstream MCP
//! servers' tools, resources and prompts merged in (`mcp::discovery`), brought up to date first.
//! Shared: a request keeps the catalog it started with while a newer one takes its place.

use std::sync::Arc;

use worker::Env;

use crate::catalog::Catalog;
use crate::edge::configured::base_catalog;
use crate::edge::{live, mcp};
use crate::error::Error;

/// The catalog this isolate serves now, as it is.
pub(crate) fn served() -> Result<Arc<Catalog>, Error> {
    base_catalog().map(mcp::discovery::merged)
}

/// The catalog a request is served from, brought up to date first: the live version, at least
/// `seen` (the one the Worker served, for an object), then the upstream MCP servers' lists due
/// for a read. Every request the Worker or a session's object serves starts here.
pub(crate) async fn fresh(env: &Env, seen: u64) -> Result<Arc<Catalog>, Error> {
    live::refresh(env, seen).await;
    mcp::discovery::refresh(env).await;
    served()
}
