//! 2026-07-28: what every result carries: `resultType`, the server's identity in `_meta`, and
//! cache hints; and `server/discover`, which answers what `initialize` did.

use serde_json::{json, Map, Value};

use crate::cache::CacheHint;
use crate::catalog::Server;
use crate::versions::ALL_VERSIONS;

/// Where a result names the server that made it.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// A complete result as this revision shapes it: `resultType`, the server's identity in
/// `_meta`, and cache hints on results the revision makes cacheable.
pub fn complete(result: Value, server: &Server, cache: Option<CacheHint>) -> Value {
    let mut object = match result {
        Value::Object(object) => object,
        other => Map::from_iter([("value".to_string(), other)]),
    };
    object.insert("resultType".into(), json!("complete"));
    stamp_server(&mut object, server);
    // An upstream's own hint (a passed-on list or read) narrows ours: never widened.
    if let Some(hint) = cache.map(|ours| crate::cache::combined(ours, &object)) {
        object.insert("ttlMs".into(), json!(hint.ttl_ms));
        object.insert("cacheScope".into(), json!(hint.scope.as_str()));
    }
    Value::Object(object)
}

/// Puts `serverInfo` into a result's `_meta`, beside whatever is there.
pub fn stamp_server(object: &mut Map<String, Value>, server: &Server) {
    let meta = object.entry("_meta").or_insert_with(|| json!({}));
    if let Value::Object(meta) = meta {
        meta.insert(SERVER_INFO.into(), json!({"name": server.name, "version": server.version}));
    }
}

/// `server/discover`: the same server `initialize` describes, with every version it speaks.
pub fn discover(server: &Server) -> Value {
    let mut result = Map::new();
    result.insert("supportedVersions".into(), json!(ALL_VERSIONS));
    let mut capabilities = crate::protocol::lifecycle::capabilities(server);
    // The Tasks extension, where a tool may run as a task.
    if let (true, Some(map)) = (crate::tasks::offered(server, crate::versions::STATELESS_VERSION), capabilities.as_object_mut()) {
        map.insert("extensions".into(), json!({ crate::tasks::EXTENSION: {} }));
    }
    result.insert("capabilities".into(), capabilities);
    if let Some(instructions) = &server.instructions {
        result.insert("instructions".into(), json!(instructions));
    }
    complete(Value::Object(result), server, Some(server.cache))
}
