//! The 2026-07-28 cache hint of a result: how long a client may reuse it, and whether others
//! may share it. Below the catalog, which sets it per server and tool, and the layers that
//! narrow it per result.

use serde::Deserialize;

/// A result's 2026-07-28 cache hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    pub ttl_ms: u64,
    pub scope: CacheScope,
}

/// Lists change only with a deployment; five minutes keeps clients from polling and bounds how
/// long they miss a new one.
pub const DEFAULT_CACHE_TTL_MS: u64 = 300_000;

impl CacheHint {
    /// What two results merged into one may claim: the shorter life, the narrower scope.
    pub fn and(self, other: CacheHint) -> CacheHint {
        let scope = if self.scope == CacheScope::Private || other.scope == CacheScope::Private { CacheScope::Private } else { CacheScope::Public };
        CacheHint { ttl_ms: self.ttl_ms.min(other.ttl_ms), scope }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CacheScope {
    Public,
    Private,
}

impl CacheScope {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        }
    }
}
