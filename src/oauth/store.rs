//! What the Worker asks the authorization server's Durable Objects: one JSON command per
//! request, and its answer. The state is partitioned, so that one hot or failing object cannot
//! deny every user, and so that an unauthenticated request loads only what it names:
//!
//! - `oauth`: the signing key the store generated, when no `OAUTH_SIGNING_KEY` is set;
//! - `oauth-client:<sha256(client_id)>`: a registered client, its consents and the index of its
//!   grants (which deleting the client revokes);
//! - `oauth-grant:<grant id>`: one grant from its code to its end: the code, the grant, its
//!   current refresh token and the ones it spent. Codes and refresh tokens carry their grant's
//!   id, so each finds its object without a lookup;
//! - `oauth-revocations`: the grants revoked lately, which every isolate reads to refuse their
//!   access tokens.
//!
//! Each object applies the rules of `grant` between one storage read and its write, which the
//! object's input gate keeps atomic.

use serde::{Deserialize, Serialize};

use super::client::Client;
use super::grant::{CodeRecord, Exchange};

/// Where a command goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Object {
    Root,
    Revocations,
    Client(String),
    Grant(String),
}

impl Object {
    /// The object's name in the sessions namespace. No client session id can be one of these:
    /// session objects have names of their own (`crate::auth::object_name`).
    pub fn name(&self) -> String {
        match self {
            Object::Root => "oauth".into(),
            Object::Revocations => "oauth-revocations".into(),
            Object::Client(id) => format!("oauth-client:{}", super::digest(id)),
            Object::Grant(id) => format!("oauth-grant:{id}"),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Command {
    /// The signing key kept by the store; `generated` becomes it if there is none yet.
    Key { generated: String },
    PutClient { client: Client },
    GetClient { client_id: String },
    /// RFC 7592: `registration_token` is the SHA-256 of the presented token; `None`: the
    /// operator (the initial access token) deletes it. The answer lists the client's grants,
    /// which the Worker revokes.
    DeleteClient { client_id: String, registration_token: Option<String> },
    /// A grant of the client started (before its code is exchanged, so that no grant escapes
    /// the client's deletion): kept until `expires_ms`.
    IndexGrant { client_id: String, grant: String, expires_ms: u64 },
    /// Whether `principal` allowed `client_id` the scopes `scope` on `resource` before.
    ConsentGiven { client_id: String, principal: String, resource: String, scope: Vec<String> },
    RememberConsent { client_id: String, principal: String, resource: String, scope: Vec<String> },
    /// `hash`: the SHA-256 of the code, which names `grant`.
    PutCode { grant: String, hash: String, record: Box<CodeRecord> },
    /// A code exchanged: on success the grant starts, with the refresh token whose SHA-256 is
    /// `refresh`.
    Exchange { grant: String, code: String, exchange: Exchange, refresh: String, lifetime_ms: u64, now_ms: u64 },
    /// A refresh: the token hashed `presented` is replaced by the one hashed `next`.
    Refresh { grant: String, presented: String, client_id: String, resource: Option<String>, next: String, now_ms: u64 },
    /// RFC 7009: the grant, if it belongs to `client_id` (`None`: its client was deleted) and,
    /// when a refresh token is presented (its SHA-256), that token is one the grant issued.
    Revoke { grant: String, presented: Option<String>, client_id: Option<String>, now_ms: u64 },
    /// Whether the grant is still good (not revoked, not expired): a console sign-in lasts as
    /// long as its grant, whenever it was revoked.
    GrantAlive { grant: String, now_ms: u64 },
    /// Grants revoked since `since_ms`: what the Worker refuses access tokens of.
    Revoked { since_ms: u64 },
    /// These grants were revoked at `now_ms`.
    NoteRevoked { grants: Vec<String>, now_ms: u64 },
}

impl Command {
    pub fn object(&self) -> Object {
        match self {
            Command::Key { .. } => Object::Root,
            Command::Revoked { .. } | Command::NoteRevoked { .. } => Object::Revocations,
            Command::PutClient { client } => Object::Client(client.client_id.clone()),
            Command::GetClient { client_id }
            | Command::DeleteClient { client_id, .. }
            | Command::IndexGrant { client_id, .. }
            | Command::ConsentGiven { client_id, .. }
            | Command::RememberConsent { client_id, .. } => Object::Client(client_id.clone()),
            Command::PutCode { grant, .. } | Command::Exchange { grant, .. } | Command::Refresh { grant, .. } | Command::Revoke { grant, .. } | Command::GrantAlive { grant, .. } => {
                Object::Grant(grant.clone())
            }
        }
    }
}

/// The grant a code or refresh token names: `<prefix><grant id>.<secret>`. Grant ids are
/// base64url, which has no dot.
pub fn grant_of<'t>(token: &'t str, prefix: &str) -> Option<&'t str> {
    let (grant, secret) = token.strip_prefix(prefix)?.split_once('.')?;
    let valid = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    (valid(grant) && valid(secret) && grant.len() <= 64).then_some(grant)
}

/// A code or refresh token for `grant`, from its random secret part.
pub fn token_for(prefix: &str, grant: &str, secret: &str) -> String {
    format!("{prefix}{grant}.{secret}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_their_grant() {
        let token = token_for("mcpe_rt.", "g-1_A", "s3cr3t");
        assert_eq!(token, "mcpe_rt.g-1_A.s3cr3t");
        assert_eq!(grant_of(&token, "mcpe_rt."), Some("g-1_A"));
        for bad in ["mcpe_rt.nodot", "mcpe_rt..x", "mcpe_rt.g.", "mcpe_ac.g.s", "mcpe_rt.g/x.s", "mcpe_rt.g.s.t"] {
            assert_eq!(grant_of(bad, "mcpe_rt."), None, "{bad}");
        }
    }

    #[test]
    fn each_command_goes_to_the_object_it_concerns() {
        assert_eq!(Command::Key { generated: "k".into() }.object().name(), "oauth");
        assert_eq!(Command::Revoked { since_ms: 0 }.object().name(), "oauth-revocations");
        assert_eq!(Command::GrantAlive { grant: "g1".into(), now_ms: 0 }.object().name(), "oauth-grant:g1");
        let client = Command::GetClient { client_id: "mcpe_c_1".into() }.object().name();
        assert_eq!(client, format!("oauth-client:{}", crate::oauth::digest("mcpe_c_1")));
        // A client id chosen to look like another object's name still names a client's object.
        assert!(Command::GetClient { client_id: "oauth".into() }.object().name().starts_with("oauth-client:"));
    }
}
