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

/// The cache hint an upstream's result carries, read as safely as it can be: a `ttlMs` that is
/// not a non-negative integer is 0 (do not reuse), and a scope that is absent or unknown is
/// `private`, so an upstream's per-principal result is never widened by being misread.
/// `None` when the result carries neither field: the upstream said nothing.
pub fn upstream_hint(result: &serde_json::Map<String, serde_json::Value>) -> Option<CacheHint> {
    let (ttl, scope) = (result.get("ttlMs"), result.get("cacheScope"));
    if ttl.is_none() && scope.is_none() {
        return None;
    }
    let ttl_ms = ttl.and_then(serde_json::Value::as_u64).unwrap_or(0);
    let scope = match scope.and_then(serde_json::Value::as_str) {
        Some("public") => CacheScope::Public,
        _ => CacheScope::Private,
    };
    Some(CacheHint { ttl_ms, scope })
}

/// The hint a result mcp-edge gives may claim: ours, narrowed by the upstream's when it gave one.
pub fn combined(ours: CacheHint, result: &serde_json::Map<String, serde_json::Value>) -> CacheHint {
    upstream_hint(result).map_or(ours, |theirs| ours.and(theirs))
}

/// Who may be answered from a tool's cached result: anyone (`public`), or only the principal
/// whose call stored it (`principal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ResultScope {
    Public,
    Principal,
}

impl ResultScope {
    /// The 2026-07-28 scope a result served from this cache carries.
    pub fn hint_scope(self) -> CacheScope {
        match self {
            ResultScope::Public => CacheScope::Public,
            ResultScope::Principal => CacheScope::Private,
        }
    }
}

/// Results larger than this are not kept, unless the tool says otherwise: the Cache API keeps
/// up to 512 MB, but a result this size is better fetched than held.
pub const DEFAULT_MAX_RESULT_BYTES: u64 = 1024 * 1024;

/// A tool's result cache, compiled: who shares an entry, how long it is fresh, how large a
/// result may be kept, and the fingerprint of the configuration it was made under (an edit
/// makes every entry made before it unreachable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultCaching {
    pub scope: ResultScope,
    pub ttl_ms: u64,
    pub max_bytes: u64,
    pub fingerprint: String,
}

/// The host of the internal URLs entries are kept under: a name no request can reach (`.cache`
/// is no public top-level domain, and these URLs are only ever keys of `caches.default`, never
/// fetched).
pub const CACHE_HOST: &str = "mcp-edge.cache";

/// The upstream request a call makes, as far as a key needs it: a call whose request differs
/// (an answer to the upstream's question in a 2026-07-28 retry's body, another route's
/// parameters in the URL) is another entry.
pub struct Sent<'a> {
    pub method: &'a str,
    pub url: &'a str,
    pub body: Option<&'a str>,
}

/// The internal URL a call's result is kept under: the server, the tool, and a digest of the
/// configuration's fingerprint, the tool's canonical arguments, (for `principal` scope) the
/// principal, and the request sent (its body canonical when it is JSON). Server and tool names
/// are percent-encoded, so neither can add a path segment.
pub fn result_key(server: &str, tool: &str, caching: &ResultCaching, arguments: Option<&serde_json::Value>, principal: &str, sent: &Sent<'_>) -> String {
    // The names are digested too: the URL's path is only for reading, the digest decides.
    let mut text = String::with_capacity(256);
    for part in [server, tool, caching.fingerprint.as_str()] {
        text.push_str(part);
        text.push('\n');
    }
    text.push('\n');
    match caching.scope {
        // A digest of the principal: the key never holds its id in clear, and a principal's
        // entry is one no other principal's key can name.
        ResultScope::Principal => {
            text.push_str("principal:");
            text.push_str(&sha256_hex(principal));
        }
        ResultScope::Public => text.push_str("public"),
    }
    text.push('\n');
    crate::canonical::canonical(arguments.unwrap_or(&serde_json::Value::Null), &mut text);
    for part in ["\n", sent.method, " ", sent.url, "\n"] {
        text.push_str(part);
    }
    match sent.body.map(|b| (b, serde_json::from_slice::<serde_json::Value>(b.as_bytes()))) {
        Some((_, Ok(json))) => crate::canonical::canonical(&json, &mut text),
        Some((raw, Err(_))) => text.push_str(raw),
        None => {}
    }
    let mut key = format!("https://{CACHE_HOST}/");
    for part in [server, tool] {
        segment(&mut key, part);
        key.push('/');
    }
    segment(&mut key, &sha256_hex(&text));
    key
}

/// A path segment: only unreserved characters as they are, every other byte percent-encoded.
fn segment(out: &mut String, text: &str) {
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// Lowercase hex SHA-256.
fn sha256_hex(text: &str) -> String {
    use sha2::{Digest, Sha256};
    crate::hex::encode(&Sha256::digest(text.as_bytes()))
}


/// Whether a tool's result may be kept: a success (not `isError`) no larger than the limit.
pub fn keepable(result: &serde_json::Value, text_len: usize, max_bytes: u64) -> bool {
    result.get("isError").and_then(serde_json::Value::as_bool) != Some(true) && result.is_object() && (text_len as u64) <= max_bytes
}

/// A kept result's hint when served `age_ms` after it was stored or revalidated.
pub fn served_hint(caching: &ResultCaching, age_ms: u64) -> CacheHint {
    CacheHint { ttl_ms: caching.ttl_ms.saturating_sub(age_ms), scope: caching.scope.hint_scope() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn map(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    const PUBLIC_5M: CacheHint = CacheHint { ttl_ms: 300_000, scope: CacheScope::Public };

    #[test]
    fn an_upstream_hint_narrows_ours_never_widens() {
        // The smaller ttl and the narrower scope, whichever side they come from.
        assert_eq!(combined(PUBLIC_5M, &map(json!({"ttlMs": 1000, "cacheScope": "private"}))), CacheHint { ttl_ms: 1000, scope: CacheScope::Private });
        let ours = CacheHint { ttl_ms: 500, scope: CacheScope::Private };
        assert_eq!(combined(ours, &map(json!({"ttlMs": 60_000, "cacheScope": "public"}))), ours);
        // Silent upstreams leave ours as it is.
        assert_eq!(combined(PUBLIC_5M, &map(json!({"tools": []}))), PUBLIC_5M);
    }

    #[test]
    fn a_misread_upstream_hint_is_the_safe_one() {
        // No scope, an unknown scope, a scope of the wrong type: private.
        assert_eq!(upstream_hint(&map(json!({"ttlMs": 10}))), Some(CacheHint { ttl_ms: 10, scope: CacheScope::Private }));
        assert_eq!(upstream_hint(&map(json!({"ttlMs": 10, "cacheScope": "shared"}))).map(|h| h.scope), Some(CacheScope::Private));
        assert_eq!(upstream_hint(&map(json!({"ttlMs": 10, "cacheScope": 1}))).map(|h| h.scope), Some(CacheScope::Private));
        // A ttl that is negative, fractional or text: do not reuse.
        for ttl in [json!(-5), json!(1.5), json!("600000")] {
            assert_eq!(upstream_hint(&map(json!({"ttlMs": ttl, "cacheScope": "public"}))).map(|h| h.ttl_ms), Some(0));
        }
        assert_eq!(upstream_hint(&map(json!({"cacheScope": "public"}))), Some(CacheHint { ttl_ms: 0, scope: CacheScope::Public }));
    }

    const GET: Sent<'static> = Sent { method: "GET", url: "https://api.example.com/w", body: None };

    #[test]
    fn keys_follow_what_is_sent_upstream() {
        let c = caching(ResultScope::Public);
        let key = |sent: Sent<'_>| result_key("srv", "t", &c, Some(&json!({"a": 1, "b": 2})), "", &sent);
        let post = |body| Sent { method: "POST", url: "https://api.example.com/w", body: Some(body) };
        // The same JSON body in another order: the same entry; an answer added to it: another.
        assert_eq!(key(post(r#"{"a":1,"b":2}"#)), key(post(r#"{"b":2,"a":1}"#)));
        assert_ne!(key(post(r#"{"a":1,"b":2}"#)), key(post(r#"{"a":1,"b":2,"answers":{"confirm":{"action":"accept"}}}"#)));
        assert_ne!(key(post("a=1")), key(post("a=2")));
        assert_ne!(key(GET), key(Sent { url: "https://api.example.com/other", ..GET }));
        assert_ne!(key(GET), key(Sent { method: "POST", ..GET }));
    }

    fn caching(scope: ResultScope) -> ResultCaching {
        ResultCaching { scope, ttl_ms: 60_000, max_bytes: DEFAULT_MAX_RESULT_BYTES, fingerprint: "v1".into() }
    }

    #[test]
    fn keys_name_the_same_call_the_same_and_nothing_else() {
        let c = caching(ResultScope::Principal);
        let key = |args: Value, principal: &str| result_key("srv", "weather", &c, Some(&args), principal, &GET);
        // Arguments in another order: the same entry.
        assert_eq!(key(json!({"a": 1, "b": {"y": 2, "x": [1, {"q": 1, "p": 2}]}}), "alice"), key(json!({"b": {"x": [1, {"p": 2, "q": 1}], "y": 2}, "a": 1}), "alice"));
        // Other arguments, another principal: other entries.
        assert_ne!(key(json!({"a": 1}), "alice"), key(json!({"a": 2}), "alice"));
        assert_ne!(key(json!({"a": 1}), "alice"), key(json!({"a": 1}), "bob"));
        assert_ne!(key(json!({"a": "1"}), "alice"), key(json!({"a": 1}), "alice"));
        // The principal is never in the URL in clear.
        assert!(!key(json!({}), "alice@example.com").contains("alice"));
        // A public entry is one for everyone, and never one of a principal's.
        let p = caching(ResultScope::Public);
        assert_eq!(result_key("srv", "weather", &p, None, "alice", &GET), result_key("srv", "weather", &p, None, "bob", &GET));
        assert_ne!(result_key("srv", "weather", &p, None, "alice", &GET), result_key("srv", "weather", &c, None, "alice", &GET));
        // An edit (another fingerprint): every old key is unreachable.
        let edited = ResultCaching { fingerprint: "v2".into(), ..c.clone() };
        assert_ne!(result_key("srv", "weather", &c, None, "alice", &GET), result_key("srv", "weather", &edited, None, "alice", &GET));
    }

    #[test]
    fn keys_stay_on_the_internal_host() {
        let c = caching(ResultScope::Public);
        for (server, tool) in [("a/../b", "t"), ("s", "x?y#z"), ("s@evil.example", "t"), ("s", "../../other")] {
            let key = result_key(server, tool, &c, None, "", &GET);
            assert!(key.starts_with(&format!("https://{CACHE_HOST}/")), "{key}");
            assert_eq!(key.matches('/').count(), 5, "{key}");
            assert!(!key.contains(['?', '#', '@']), "{key}");
        }
        // Names a dot segment would fold together still name different entries.
        let keys: Vec<String> = [("a", ".."), ("b", ".."), ("a", ".")].iter().map(|(s, t)| result_key(s, t, &c, None, "", &GET)).collect();
        assert!(keys.iter().enumerate().all(|(i, k)| keys.iter().skip(i + 1).all(|o| o.rsplit('/').next() != k.rsplit('/').next())));
    }

    #[test]
    fn only_successes_within_the_limit_are_kept() {
        assert!(keepable(&json!({"content": []}), 10, 100));
        assert!(!keepable(&json!({"content": [], "isError": true}), 10, 100));
        assert!(!keepable(&json!({"content": []}), 101, 100));
        assert!(!keepable(&json!("text"), 1, 100));
    }

    #[test]
    fn a_served_entry_claims_what_is_left_of_its_life() {
        assert_eq!(served_hint(&caching(ResultScope::Principal), 10_000), CacheHint { ttl_ms: 50_000, scope: CacheScope::Private });
        assert_eq!(served_hint(&caching(ResultScope::Public), 90_000), CacheHint { ttl_ms: 0, scope: CacheScope::Public });
    }
}
