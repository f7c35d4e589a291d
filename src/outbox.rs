//! Replies that found their stream gone: a deferred call's result whose client dropped the POST
//! stream, and cannot resume it (NDJSON, or SSE before 2025-11-25), or a result that arrived after
//! the object was evicted. Each is kept in the session's storage, one key apiece, until the client
//! collects it: on its next `GET` stream, or before the reply to its next streamed `POST`. A kept
//! reply leaves storage as it is written, so no two streams of the session carry it; one nobody
//! collects in time is dropped, and counted in the log.

use serde::{Deserialize, Serialize};

use crate::redact::Redacted;

/// The storage keys of kept replies, in the order they were kept.
pub const PREFIX: &str = "outbox:";

/// How many replies a session keeps at most; beyond it the oldest is dropped (and counted).
pub const MAX_KEPT: usize = 256;

/// One kept reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Kept {
    /// The JSON-RPC message, exactly as its stream would have carried it.
    pub message: String,
    /// Dropped after this: when it was kept, plus the call's `pendingTimeoutMs` (for a deferred
    /// call) and the session's idle timeout.
    pub until_ms: u64,
}

impl Kept {
    /// A redacted reply, kept: storage is an exit too (`crate::redact`).
    pub fn new(message: Redacted, now_ms: u64, pending_timeout_ms: u64, idle_timeout_ms: u64) -> Kept {
        Kept { message: message.into_string(), until_ms: now_ms.saturating_add(pending_timeout_ms).saturating_add(idle_timeout_ms) }
    }

    pub fn expired(&self, now_ms: u64) -> bool {
        now_ms >= self.until_ms
    }
}

/// The key of a reply kept at `now_ms`; `nonce` tells apart replies kept in the same millisecond.
/// Keys sort in the order replies were kept (listing storage returns them so).
pub fn key(now_ms: u64, nonce: &str) -> String {
    format!("{PREFIX}{now_ms:015}:{nonce}")
}

/// The keys of the kept replies that go (expired ones, and the oldest beyond `MAX_KEPT`), from
/// `kept` in the order storage lists them.
pub fn dropped(kept: &[(String, Kept)], now_ms: u64) -> Vec<&str> {
    let live = kept.iter().filter(|(_, k)| !k.expired(now_ms)).count();
    let mut over = live.saturating_sub(MAX_KEPT);
    kept.iter()
        .filter(|(_, k)| {
            if k.expired(now_ms) {
                return true;
            }
            let drop = over > 0;
            over = over.saturating_sub(1);
            drop
        })
        .map(|(key, _)| key.as_str())
        .collect()
}

/// When the earliest of the kept replies is due to be dropped.
pub fn next_expiry(kept: &[(String, Kept)]) -> Option<u64> {
    kept.iter().map(|(_, k)| k.until_ms).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(n: usize, until_ms: u64) -> Vec<(String, Kept)> {
        (0..n).map(|i| (key(i as u64, "n"), Kept { message: format!("{i}"), until_ms })).collect()
    }

    #[test]
    fn keys_sort_in_the_order_replies_were_kept() {
        assert!(key(9, "z") < key(10, "a"));
        assert_eq!(key(1_700_000_000_000, "ab"), "outbox:001700000000000:ab");
    }

    #[test]
    fn a_reply_is_kept_for_the_pending_timeout_plus_the_idle_timeout() {
        let k = Kept::new(crate::redact::Redactor::default().seal("{}".into()), 1_000, 60_000, 300_000);
        assert_eq!(k.until_ms, 361_000);
        assert!(!k.expired(360_999));
        assert!(k.expired(361_000));
    }

    #[test]
    fn expired_replies_and_the_oldest_beyond_the_bound_are_dropped() {
        let mut all = kept(2, 10);
        all.extend(kept(MAX_KEPT + 3, 1_000).into_iter().map(|(k, v)| (format!("{k}b"), v)));
        let gone = dropped(&all, 100);
        assert_eq!(gone.len(), 2 + 3);
        assert_eq!(gone[..2], [all[0].0.as_str(), all[1].0.as_str()]);
        assert_eq!(gone[2..], [all[2].0.as_str(), all[3].0.as_str(), all[4].0.as_str()]);
        assert!(dropped(&kept(MAX_KEPT, 1_000), 100).is_empty());
        assert_eq!(next_expiry(&all), Some(10));
        assert_eq!(next_expiry(&[]), None);
    }
}
