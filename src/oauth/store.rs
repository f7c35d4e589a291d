//! What the Worker asks the authorization server's Durable Object (one per deployment, named
//! `oauth`): one JSON command per request, and its answer. The object applies the rules of
//! `grant` between one storage read and its write, which the object's input gate keeps atomic.

use serde::{Deserialize, Serialize};

use super::client::Client;
use super::grant::{CodeRecord, Exchange};

/// The object's name in the sessions namespace.
pub const OBJECT: &str = "oauth";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Command {
    /// The signing key kept by the object; `generated` becomes it if there is none yet.
    Key { generated: String },
    PutClient { client: Client },
    GetClient { client_id: String },
    /// RFC 7592: `registration_token` is the SHA-256 of the presented token; `None`: the
    /// operator (the initial access token) deletes it.
    DeleteClient { client_id: String, registration_token: Option<String>, now_ms: u64 },
    /// `hash`: the SHA-256 of the code.
    PutCode { hash: String, record: CodeRecord },
    /// A code exchanged: on success the grant `grant_id` starts, with the refresh token whose
    /// SHA-256 is `refresh`.
    Exchange { code: String, exchange: Exchange, grant_id: String, refresh: String, lifetime_ms: u64, now_ms: u64 },
    /// A refresh: the token hashed `presented` is replaced by the one hashed `next`.
    Refresh { presented: String, client_id: String, resource: Option<String>, next: String, now_ms: u64 },
    /// RFC 7009: the grant of a refresh token (by hash) or of an access token (by grant id),
    /// if it belongs to `client_id`.
    Revoke { refresh: Option<String>, grant: Option<String>, client_id: String, now_ms: u64 },
    /// Grants revoked since `since_ms`: what the Worker refuses access tokens of.
    Revoked { since_ms: u64 },
    /// Whether the grant `grant` is still good (not revoked, not expired): a console sign-in
    /// lasts as long as its grant, whenever it was revoked.
    GrantAlive { grant: String, now_ms: u64 },
    /// Whether `principal` allowed `client_id` the scopes `scope` on `resource` before.
    ConsentGiven { client_id: String, principal: String, resource: String, scope: Vec<String> },
    RememberConsent { client_id: String, principal: String, resource: String, scope: Vec<String> },
    /// A password check's outcome for `username`, and whether it may be tried now.
    SignInAttempt { username: String, failed: bool, now_ms: u64 },
    SignInAllowed { username: String, now_ms: u64 },
}

/// Failed password checks allowed per username within `LOCKOUT_MS`, before it is locked for
/// the rest of that time.
pub const MAX_FAILURES: u32 = 5;
pub const LOCKOUT_MS: u64 = 15 * 60 * 1000;

/// A username's recent failures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failures {
    pub count: u32,
    pub since_ms: u64,
}

impl Failures {
    pub fn allowed(&self, now_ms: u64) -> bool {
        self.count < MAX_FAILURES || now_ms >= self.since_ms + LOCKOUT_MS
    }

    pub fn record(&self, failed: bool, now_ms: u64) -> Failures {
        match (failed, now_ms >= self.since_ms + LOCKOUT_MS) {
            (false, _) => Failures::default(),
            (true, true) => Failures { count: 1, since_ms: now_ms },
            (true, false) => Failures { count: self.count + 1, since_ms: self.since_ms },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_lock_a_username_for_a_while() {
        let mut f = Failures::default();
        for i in 0..MAX_FAILURES {
            assert!(f.allowed(1000 + u64::from(i)));
            f = f.record(true, 1000 + u64::from(i));
        }
        assert!(!f.allowed(2000));
        assert!(f.allowed(1000 + LOCKOUT_MS));
        assert_eq!(f.record(true, 1000 + LOCKOUT_MS), Failures { count: 1, since_ms: 1000 + LOCKOUT_MS });
        assert_eq!(f.record(false, 2000), Failures::default());
    }
}
