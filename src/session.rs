//! Session state and its transitions. Time is always an argument; nothing here reads a clock.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Bumped when the stored shape changes incompatibly; new optional fields need no bump.
pub const SCHEMA_VERSION: u32 = 1;

pub use crate::auth::ANONYMOUS;

/// What a session's Durable Object persists, so an evicted object resumes exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub schema: u32,
    pub id: String,
    /// The route of the configured server the session was created on (routes are unique).
    pub server: String,
    pub principal: String,
    /// The OAuth client the principal came through, when its credential says (`rateLimits`
    /// counted `per` client read it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    pub protocol_version: String,
    #[serde(default)]
    pub client_info: Value,
    #[serde(default)]
    pub client_capabilities: Value,
    pub created_ms: u64,
    pub last_used_ms: u64,
    /// The minimum level of `notifications/message` the client asked for with `logging/setLevel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    /// SSE streams opened so far; stream ids, and so event ids, are unique within the session.
    #[serde(default)]
    pub streams_opened: u64,
    /// A 2024-11-05 HTTP+SSE session: it lives only as long as its event stream.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub legacy_sse: bool,
    /// Resource URIs the client subscribed to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subscriptions: Vec<String>,
    /// Server-initiated messages that found no GET stream open; the next GET delivers them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<String>,
    /// A 2026-07-28 `subscriptions/listen` stream: the id of the request that opened it, which
    /// tags every notification. Such a session lives only as long as its stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen_id: Option<Value>,
    /// The list notifications (`notifications/tools/list_changed`…) its stream gets, registered
    /// with the server's registry: every one for a GET stream, the requested ones for a listen
    /// stream. Empty while the server's lists cannot change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lists: Vec<String>,
}

impl Session {
    /// The session is the principal's: its id, and the client it came through.
    pub fn belongs_to(&mut self, principal: &crate::auth::Principal) {
        self.principal.clone_from(&principal.id);
        self.client.clone_from(&principal.client_id);
    }

    pub fn new(id: &str, server: &str, protocol_version: &str, client_info: Value, client_capabilities: Value, now_ms: u64) -> Session {
        Session {
            schema: SCHEMA_VERSION,
            id: id.to_string(),
            server: server.to_string(),
            principal: ANONYMOUS.to_string(),
            client: None,
            protocol_version: protocol_version.to_string(),
            client_info,
            client_capabilities,
            created_ms: now_ms,
            last_used_ms: now_ms,
            log_level: None,
            streams_opened: 0,
            legacy_sse: false,
            subscriptions: Vec::new(),
            pending: Vec::new(),
            listen_id: None,
            lists: Vec::new(),
        }
    }

    /// Whether a GET stream held open for list changes suits the client. n8n-nodes-mcp (its
    /// `clientInfo.name` is `McpClient-client`) treats the abort of an open GET stream at its own
    /// `close()` as a fatal transport error, and its runs are short and list the tools anew each
    /// time: it gets no stream it did not ask for (resource subscriptions still get one).
    pub fn takes_list_stream(&self) -> bool {
        self.client_info.get("name").and_then(Value::as_str) != Some("McpClient-client")
    }

    pub fn touch(&mut self, now_ms: u64) {
        self.last_used_ms = self.last_used_ms.max(now_ms);
    }

    /// When the session expires if nothing else happens.
    pub fn expires_at(&self, idle_timeout_ms: u64) -> u64 {
        self.last_used_ms.saturating_add(idle_timeout_ms)
    }

    /// Whether the session has been idle long enough to end. A session with a call in flight or a
    /// stream open is never idle.
    pub fn is_expired(&self, now_ms: u64, idle_timeout_ms: u64, busy: bool) -> bool {
        !busy && now_ms >= self.expires_at(idle_timeout_ms)
    }

    /// Keeps a server-initiated message for the next GET stream, dropping the oldest beyond a bound.
    pub fn queue(&mut self, message: String) {
        const MAX_PENDING: usize = 64;
        self.pending.push(message);
        if self.pending.len() > MAX_PENDING {
            self.pending.remove(0);
        }
    }

    /// A session of one request (stateless mode, 2026-07-28), which has no id: nothing it asks
    /// the client can be answered, since the answer would arrive in another request.
    pub fn is_ephemeral(&self) -> bool {
        self.id.is_empty()
    }

    /// Whether this stored state can be served by this build.
    pub fn is_compatible(&self) -> bool {
        self.schema <= SCHEMA_VERSION
    }
}

/// What a session id's signature is for: it makes no callback token or request state, and
/// none of theirs makes a session id.
const ID_PURPOSE: &str = "session";

/// A self-proving session id for `principal` (`session_ids::issued_at` names its shape): the
/// Worker checks it with the deployment's key alone, so it answers `initialize` without waiting
/// for the session's object, and turns away a forged id, or one of another principal's, without
/// a hop. `random` is 32 lowercase hex digits from the platform's CSPRNG.
pub fn mint_id(key: &[u8], random: &str, issued_ms: u64, principal: &str) -> String {
    let head = format!("{random}-{issued_ms:012x}");
    let signature = crate::signing::sign(key, ID_PURPOSE, &format!("{head}-{principal}"));
    format!("{head}-{signature}")
}

/// Whether `id` is a self-proving id that `mint_id` made with `key` for `principal`: its
/// signature compared in constant time. A UUID-shaped id (an earlier build's, or a legacy
/// session's) proves nothing; only its object can say whether it lives.
pub fn proves(key: &[u8], id: &str, principal: &str) -> bool {
    crate::session_ids::issued_at(id).is_some() && id.rsplit_once('-').is_some_and(|(head, signature)| crate::signing::signed(key, ID_PURPOSE, &format!("{head}-{principal}"), signature))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn n8n_nodes_mcp_gets_no_stream_for_list_changes() {
        let session = |name: &str| Session::new("id", "srv", "2025-11-25", json!({"name": name, "version": "1.0.0"}), json!({}), 0);
        assert!(!session("McpClient-client").takes_list_stream());
        assert!(session("claude-ai").takes_list_stream());
        assert!(Session::new("id", "srv", "2025-11-25", json!(null), json!({}), 0).takes_list_stream());
    }

    #[test]
    fn expiry_follows_last_use() {
        let mut s = Session::new("id", "srv", "2025-11-25", json!({}), json!({}), 1_000);
        assert_eq!(s.expires_at(500), 1_500);
        assert!(!s.is_expired(1_499, 500, false));
        assert!(s.is_expired(1_500, 500, false));
        assert!(!s.is_expired(9_999, 500, true));
        s.touch(2_000);
        s.touch(1_800); // clocks of two requests may interleave; last use never goes back
        assert_eq!(s.last_used_ms, 2_000);
        assert!(!s.is_expired(2_400, 500, false));
    }

    #[test]
    fn pending_messages_are_bounded() {
        let mut s = Session::new("id", "srv", "2025-11-25", json!({}), json!({}), 0);
        for i in 0..70 {
            s.queue(i.to_string());
        }
        assert_eq!(s.pending.len(), 64);
        assert_eq!(s.pending.first().map(String::as_str), Some("6"));
    }

    #[test]
    fn stored_shape_is_stable() {
        let s = Session::new("id", "srv", "2025-06-18", json!({"name": "c"}), json!({}), 5);
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(
            text,
            r#"{"schema":1,"id":"id","server":"srv","principal":"anonymous","protocolVersion":"2025-06-18","clientInfo":{"name":"c"},"clientCapabilities":{},"createdMs":5,"lastUsedMs":5,"streamsOpened":0}"#
        );
        let back: Session = serde_json::from_str(&text).unwrap();
        assert_eq!(back, s);
        assert!(back.is_compatible());
    }

    #[test]
    fn older_and_newer_workers_read_each_others_sessions() {
        // What a build before subscriptions, queues and principals stored (schema 1, fewer fields).
        let older = r#"{"schema":1,"id":"a","server":"/mcp","principal":"anonymous","protocolVersion":"2025-03-26","createdMs":1,"lastUsedMs":2}"#;
        let read: Session = serde_json::from_str(older).unwrap();
        assert!(read.is_compatible() && read.subscriptions.is_empty() && read.pending.is_empty() && read.log_level.is_none());
        // What a newer build of the same schema may add: fields this build does not know are ignored.
        let newer = r#"{"schema":1,"id":"a","server":"/mcp","principal":"token:bot","protocolVersion":"2025-11-25","createdMs":1,"lastUsedMs":2,"futureField":{"x":1}}"#;
        let read: Session = serde_json::from_str(newer).unwrap();
        assert_eq!(read.principal, "token:bot");
        assert!(read.is_compatible());
        // A later, incompatible schema is refused, not misread: the session is treated as absent.
        let incompatible: Session = serde_json::from_str(&newer.replace(r#""schema":1"#, r#""schema":2"#)).unwrap();
        assert!(!incompatible.is_compatible());
    }
    #[test]
    fn a_minted_id_proves_itself_for_its_principal_only() {
        let key = b"0123456789abcdef0123456789abcdef";
        let id = mint_id(key, &"7".repeat(32), 1_764_000_000_123, "token:alice");
        assert_eq!(crate::session_ids::issued_at(&id), Some(1_764_000_000_123));
        assert!(proves(key, &id, "token:alice"));
        // Another principal, another key, an altered part: no proof.
        assert!(!proves(key, &id, "token:bob"));
        assert!(!proves(key, &id, ANONYMOUS));
        assert!(!proves(b"another key of at least 32 chars", &id, "token:alice"));
        let later = id.replacen("-019ab", "-019ac", 1);
        assert_ne!(later, id);
        assert!(!proves(key, &later, "token:alice"));
        let flipped = format!("{}{}", id.get(..id.len() - 1).unwrap(), if id.ends_with('0') { '1' } else { '0' });
        assert!(!proves(key, &flipped, "token:alice"));
        // A signature made for another purpose over the same text does not prove an id.
        let (head, _) = id.rsplit_once('-').unwrap();
        let callback = crate::signing::sign(key, "callback", &format!("{head}-token:alice"));
        assert!(!proves(key, &format!("{head}-{callback}"), "token:alice"));
        // UUIDs prove nothing.
        assert!(!proves(key, "9f1c0a52-1d3e-4b8e-9a57-2a1f0d3c4b5e", "token:alice"));
    }
}
