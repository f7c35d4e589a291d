//! What a connection keeps and hands out, sealed: the stored record (the token, AES-256-GCM
//! under `CONNECTIONS_KEY`, bound to its principal and connection, with the key's id so a
//! rotated key still reads it), the connect link a user is given (signed: whose, which
//! connection, until when), and the `state` a provider carries back (encrypted: it holds the
//! PKCE verifier and the browser's binding).

use serde_json::Value;

use super::{members, text, Token};
use crate::signing::{seal, unseal};

/// How long a connect link works: long enough to read a message and sign in.
pub const LINK_TTL_MS: u64 = 30 * 60 * 1000;
/// How long the provider may take: the user signs in and consents there.
pub const STATE_TTL_MS: u64 = 15 * 60 * 1000;
const LINK_PURPOSE: &str = "mcp-edge-connection-link";

/// The keys records and states are sealed with: derived from `CONNECTIONS_KEY` (else from the
/// authorization server's signing key), each use under its own purpose; older ones only read.
#[derive(Clone)]
pub struct Keys {
    root: Vec<u8>,
    older: Vec<Vec<u8>>,
}

impl Keys {
    /// `root`: the current key's secret; `older`: earlier ones (`CONNECTIONS_KEY_PREVIOUS`, the
    /// signing key a deployment used before it set `CONNECTIONS_KEY`).
    pub fn new(root: &[u8], older: Vec<Vec<u8>>) -> Keys {
        Keys { root: root.to_vec(), older: older.into_iter().filter(|k| !k.is_empty() && k != root).collect() }
    }

    /// The connect link's signing key.
    pub fn link_key(&self) -> [u8; 32] {
        derive(&self.root, "link")
    }
}

fn derive(root: &[u8], purpose: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"mcp-edge connections ");
    h.update(purpose.as_bytes());
    h.update(b"\0");
    h.update(root);
    h.finalize().into()
}

/// A key's id: who sealed a value, so the reader picks its key without trying each.
fn id(key: &[u8; 32]) -> String {
    crate::hex::encode(&derive(key, "id")).chars().take(8).collect()
}

/// AES-256-GCM of `plain` under the root's `purpose` key: `<key id>.<base64url(nonce ‖
/// ciphertext)>`, `aad` bound in.
fn encrypt(keys: &Keys, purpose: &str, nonce: [u8; 12], aad: &str, plain: &[u8]) -> String {
    use aes_gcm::aead::{Aead, KeyInit, Payload};
    let key = derive(&keys.root, purpose);
    let sealed = aes_gcm::Aes256Gcm::new(&key.into()).encrypt(&nonce.into(), Payload { msg: plain, aad: aad.as_bytes() }).unwrap_or_default();
    let mut out = nonce.to_vec();
    out.extend_from_slice(&sealed);
    format!("{}.{}", id(&key), crate::base64::encode_url(&out))
}

/// `encrypt`'s plaintext, under whichever of the keys sealed it.
fn decrypt(keys: &Keys, purpose: &str, aad: &str, sealed: &str) -> Option<Vec<u8>> {
    use aes_gcm::aead::{Aead, KeyInit, Payload};
    let (kid, body) = sealed.split_once('.')?;
    let key = std::iter::once(&keys.root).chain(&keys.older).map(|root| derive(root, purpose)).find(|k| id(k) == kid)?;
    let bytes = crate::base64::decode_url(body)?;
    let (nonce, ciphertext) = (bytes.get(..12)?, bytes.get(12..)?);
    aes_gcm::Aes256Gcm::new(&key.into()).decrypt(aes_gcm::Nonce::from_slice(nonce), Payload { msg: ciphertext, aad: aad.as_bytes() }).ok()
}

/// What the principal's object keeps per connection, before it is sealed: the token, and when
/// the user connected (the console shows it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    pub token: Token,
    pub since_ms: u64,
}

impl Record {
    /// Sealed for `principal`'s object under `connection`: moved to another principal or
    /// connection, it no longer opens.
    pub fn seal(&self, keys: &Keys, nonce: [u8; 12], principal: &str, connection: &str) -> String {
        let plain = members(vec![
            ("a", Value::from(self.token.access_token.as_str())),
            ("r", Value::from(self.token.refresh_token.clone())),
            ("x", Value::from(self.token.expires_at_ms)),
            ("s", Value::from(self.token.scope.clone())),
            ("t", Value::from(self.token.token_type.as_str())),
            ("c", Value::from(self.since_ms)),
        ]);
        encrypt(keys, "token", nonce, &format!("{principal}\n{connection}"), plain.to_string().as_bytes())
    }

    pub fn open(keys: &Keys, sealed: &str, principal: &str, connection: &str) -> Option<Record> {
        let v: Value = serde_json::from_slice(&decrypt(keys, "token", &format!("{principal}\n{connection}"), sealed)?).ok()?;
        let token = Token { access_token: text(&v, "a")?, refresh_token: text(&v, "r"), expires_at_ms: v.get("x").and_then(Value::as_u64), scope: text(&v, "s"), token_type: text(&v, "t").unwrap_or_default() };
        Some(Record { token, since_ms: v.get("c").and_then(Value::as_u64).unwrap_or_default() })
    }

    /// Whether it was sealed with a key other than the current one: it is sealed again.
    pub fn stale(keys: &Keys, sealed: &str) -> bool {
        sealed.split_once('.').is_none_or(|(kid, _)| kid != id(&derive(&keys.root, "token")))
    }

    /// Whether it must be refreshed before use: it expires within `margin_ms`.
    pub fn expiring(&self, now_ms: u64, margin_ms: u64) -> bool {
        self.token.expires_at_ms.is_some_and(|at| at <= now_ms.saturating_add(margin_ms))
    }
}

/// A connect link's claims: the principal it was made for, the connection, the URL-mode
/// elicitation it answers, until when it works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub principal: String,
    pub connection: String,
    pub elicitation: String,
    pub expires_ms: u64,
}

impl Link {
    pub fn seal(&self, keys: &Keys) -> String {
        let plain = members(vec![("p", Value::from(self.principal.as_str())), ("c", Value::from(self.connection.as_str())), ("e", Value::from(self.elicitation.as_str())), ("x", Value::from(self.expires_ms))]);
        seal(&keys.link_key(), LINK_PURPOSE, plain.to_string().as_bytes())
    }

    /// The link's claims if it is ours, for `connection`, and not stale.
    pub fn open(keys: &Keys, sealed: &str, connection: &str, now_ms: u64) -> Option<Link> {
        let v: Value = serde_json::from_slice(&unseal(&keys.link_key(), LINK_PURPOSE, sealed)?).ok()?;
        let link = Link { principal: text(&v, "p")?, connection: text(&v, "c")?, elicitation: text(&v, "e")?, expires_ms: v.get("x")?.as_u64()? };
        (link.connection == connection && link.expires_ms > now_ms).then_some(link)
    }
}

/// The `state` of an authorization request, which the provider carries back to the callback:
/// encrypted, as it holds the PKCE verifier; `browser` is also in a cookie of the browser that
/// consented, and `nonce` is claimed once in the principal's object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub principal: String,
    pub connection: String,
    pub elicitation: String,
    pub verifier: Option<String>,
    pub browser: String,
    pub expires_ms: u64,
}

impl State {
    pub fn seal(&self, keys: &Keys, nonce: [u8; 12]) -> String {
        let plain = members(vec![
            ("p", Value::from(self.principal.as_str())),
            ("c", Value::from(self.connection.as_str())),
            ("e", Value::from(self.elicitation.as_str())),
            ("v", Value::from(self.verifier.clone())),
            ("b", Value::from(self.browser.as_str())),
            ("x", Value::from(self.expires_ms)),
        ]);
        encrypt(keys, "state", nonce, "state", plain.to_string().as_bytes())
    }

    /// The state if it is ours and not stale; the caller checks the browser and claims it.
    pub fn open(keys: &Keys, sealed: &str, now_ms: u64) -> Option<State> {
        let v: Value = serde_json::from_slice(&decrypt(keys, "state", "state", sealed)?).ok()?;
        let state = State { principal: text(&v, "p")?, connection: text(&v, "c")?, elicitation: text(&v, "e")?, verifier: text(&v, "v"), browser: text(&v, "b")?, expires_ms: v.get("x")?.as_u64()? };
        (state.expires_ms > now_ms).then_some(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(root: &str) -> Keys {
        Keys::new(root.as_bytes(), vec![])
    }

    #[test]
    fn records_open_only_for_their_principal_connection_and_keys() {
        let record = Record { token: Token { access_token: "gho_secret".into(), refresh_token: Some("ghr_x".into()), expires_at_ms: Some(5), scope: None, token_type: "bearer".into() }, since_ms: 1 };
        let k = keys("k1-0123456789abcdef0123456789abcdef");
        let sealed = record.seal(&k, [7; 12], "user:alice", "github");
        assert!(!sealed.contains("gho_secret"));
        assert_eq!(Record::open(&k, &sealed, "user:alice", "github"), Some(record.clone()));
        assert_eq!(Record::open(&k, &sealed, "user:bob", "github"), None, "another principal's slot");
        assert_eq!(Record::open(&k, &sealed, "user:alice", "gitlab"), None, "another connection's slot");
        assert_eq!(Record::open(&keys("k2-0123456789abcdef0123456789abcdef"), &sealed, "user:alice", "github"), None);
        // Rotated: the previous key still reads it, and it is marked for sealing again.
        let rotated = Keys::new(b"k2-0123456789abcdef0123456789abcdef", vec![b"k1-0123456789abcdef0123456789abcdef".to_vec()]);
        assert_eq!(Record::open(&rotated, &sealed, "user:alice", "github"), Some(record.clone()));
        assert!(Record::stale(&rotated, &sealed) && !Record::stale(&k, &sealed));
        let tampered = format!("{}A", &sealed[..sealed.len() - 1]);
        assert_eq!(Record::open(&k, &tampered, "user:alice", "github"), None);
        assert!(record.expiring(0, 10) && !Record { token: Token { expires_at_ms: None, ..record.token.clone() }, ..record }.expiring(u64::MAX, 10));
    }

    #[test]
    fn links_and_states_are_bound_and_expire() {
        let k = keys("k1-0123456789abcdef0123456789abcdef");
        let link = Link { principal: "user:alice".into(), connection: "github".into(), elicitation: "e1".into(), expires_ms: 100 };
        let sealed = link.seal(&k);
        assert_eq!(Link::open(&k, &sealed, "github", 99), Some(link.clone()));
        assert_eq!(Link::open(&k, &sealed, "github", 100), None, "expired");
        assert_eq!(Link::open(&k, &sealed, "gitlab", 1), None, "another connection's page");
        assert_eq!(Link::open(&keys("other-0123456789abcdef0123456789ab"), &sealed, "github", 1), None, "forged");
        let forged = Link { principal: "user:bob".into(), ..link }.seal(&keys("other-0123456789abcdef0123456789ab"));
        assert_eq!(Link::open(&k, &forged, "github", 1), None);
        let state = State { principal: "user:alice".into(), connection: "github".into(), elicitation: "e1".into(), verifier: Some("v".repeat(43)), browser: "b".into(), expires_ms: 100 };
        let sealed = state.seal(&k, [1; 12]);
        assert!(!sealed.contains(&"v".repeat(10)));
        assert_eq!(State::open(&k, &sealed, 99), Some(state));
        assert_eq!(State::open(&k, &sealed, 100), None);
        assert_eq!(State::open(&k, &sealed.replace('.', ".x"), 1), None);
    }
}
