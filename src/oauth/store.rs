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

/// Written as serde's externally tagged form, `{"<variant>":{<fields>}}`, and read back by the
/// one deserializer below rather than a derived one per variant (module size, see `Fields`).
#[derive(Debug, Clone, Serialize)]
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

/// Every variant's fields, read by one struct deserializer: serde's derive would have one per
/// variant (14, the largest item of the module). The text read is the one `Serialize` writes;
/// a missing field of a variant is refused as the derive refuses it, an unknown one ignored.
#[derive(Deserialize)]
struct Fields {
    generated: Option<String>,
    client: Option<Client>,
    client_id: Option<String>,
    registration_token: Option<String>,
    grant: Option<String>,
    expires_ms: Option<u64>,
    principal: Option<String>,
    resource: Option<String>,
    scope: Option<Vec<String>>,
    hash: Option<String>,
    record: Option<Box<CodeRecord>>,
    code: Option<String>,
    exchange: Option<Exchange>,
    refresh: Option<String>,
    lifetime_ms: Option<u64>,
    now_ms: Option<u64>,
    presented: Option<String>,
    next: Option<String>,
    since_ms: Option<u64>,
    grants: Option<Vec<String>>,
}

/// A variant's field that must be there.
fn need<T, E: serde::de::Error>(value: Option<T>, name: &'static str) -> Result<T, E> {
    value.ok_or_else(|| E::missing_field(name))
}

impl Fields {
    fn command<E: serde::de::Error>(self, variant: &str) -> Result<Command, E> {
        let f = self;
        Ok(match variant {
            "key" => Command::Key { generated: need(f.generated, "generated")? },
            "putClient" => Command::PutClient { client: need(f.client, "client")? },
            "getClient" => Command::GetClient { client_id: need(f.client_id, "client_id")? },
            "deleteClient" => Command::DeleteClient { client_id: need(f.client_id, "client_id")?, registration_token: f.registration_token },
            "indexGrant" => Command::IndexGrant { client_id: need(f.client_id, "client_id")?, grant: need(f.grant, "grant")?, expires_ms: need(f.expires_ms, "expires_ms")? },
            "consentGiven" | "rememberConsent" => {
                let (client_id, principal, resource, scope) = (need(f.client_id, "client_id")?, need(f.principal, "principal")?, need(f.resource, "resource")?, need(f.scope, "scope")?);
                if variant == "consentGiven" {
                    Command::ConsentGiven { client_id, principal, resource, scope }
                } else {
                    Command::RememberConsent { client_id, principal, resource, scope }
                }
            }
            "putCode" => Command::PutCode { grant: need(f.grant, "grant")?, hash: need(f.hash, "hash")?, record: need(f.record, "record")? },
            "exchange" => Command::Exchange {
                grant: need(f.grant, "grant")?,
                code: need(f.code, "code")?,
                exchange: need(f.exchange, "exchange")?,
                refresh: need(f.refresh, "refresh")?,
                lifetime_ms: need(f.lifetime_ms, "lifetime_ms")?,
                now_ms: need(f.now_ms, "now_ms")?,
            },
            "refresh" => Command::Refresh {
                grant: need(f.grant, "grant")?,
                presented: need(f.presented, "presented")?,
                client_id: need(f.client_id, "client_id")?,
                resource: f.resource,
                next: need(f.next, "next")?,
                now_ms: need(f.now_ms, "now_ms")?,
            },
            "revoke" => Command::Revoke { grant: need(f.grant, "grant")?, presented: f.presented, client_id: f.client_id, now_ms: need(f.now_ms, "now_ms")? },
            "grantAlive" => Command::GrantAlive { grant: need(f.grant, "grant")?, now_ms: need(f.now_ms, "now_ms")? },
            "revoked" => Command::Revoked { since_ms: need(f.since_ms, "since_ms")? },
            "noteRevoked" => Command::NoteRevoked { grants: need(f.grants, "grants")?, now_ms: need(f.now_ms, "now_ms")? },
            other => return Err(E::unknown_variant(other, VARIANTS)),
        })
    }
}

const VARIANTS: &[&str] = &[
    "key", "putClient", "getClient", "deleteClient", "indexGrant", "consentGiven", "rememberConsent", "putCode", "exchange", "refresh", "revoke", "grantAlive", "revoked", "noteRevoked",
];

impl<'de> Deserialize<'de> for Command {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Command;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an oauth command")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Command, A::Error> {
                use serde::de::Error;
                let Some(variant) = map.next_key::<String>()? else {
                    return Err(A::Error::invalid_length(0, &self));
                };
                let command = map.next_value::<Fields>()?.command(&variant)?;
                if map.next_key::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(A::Error::invalid_length(2, &self));
                }
                Ok(command)
            }
        }
        deserializer.deserialize_map(Visitor)
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

    /// The derive `Command` had before its deserializer was written by hand: what it wrote and
    /// read is what the Worker and the objects exchange, across a deploy too.
    #[derive(Debug, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    enum Derived {
        Key { generated: String },
        PutClient { client: Client },
        GetClient { client_id: String },
        DeleteClient { client_id: String, registration_token: Option<String> },
        IndexGrant { client_id: String, grant: String, expires_ms: u64 },
        ConsentGiven { client_id: String, principal: String, resource: String, scope: Vec<String> },
        RememberConsent { client_id: String, principal: String, resource: String, scope: Vec<String> },
        PutCode { grant: String, hash: String, record: Box<CodeRecord> },
        Exchange { grant: String, code: String, exchange: Exchange, refresh: String, lifetime_ms: u64, now_ms: u64 },
        Refresh { grant: String, presented: String, client_id: String, resource: Option<String>, next: String, now_ms: u64 },
        Revoke { grant: String, presented: Option<String>, client_id: Option<String>, now_ms: u64 },
        GrantAlive { grant: String, now_ms: u64 },
        Revoked { since_ms: u64 },
        NoteRevoked { grants: Vec<String>, now_ms: u64 },
    }

    fn samples() -> Vec<Command> {
        use crate::auth::Principal;
        use crate::oauth::authorize::AuthorizationRequest;
        use crate::oauth::client::{AuthMethod, Origin};
        let client = Client { client_id: "c1".into(), name: Some("App".into()), redirect_uris: vec!["https://app.test/cb".into()], auth_method: AuthMethod::None, secret: None, origin: Origin::Registered { registration_token: "t".into() }, issued_at: 7, application_type: None };
        let request = AuthorizationRequest { client_id: "c1".into(), redirect_uri: "https://app.test/cb".into(), state: Some("s".into()), code_challenge: "ch".into(), scope: vec!["tools".into()], resource: "https://mcp.test/mcp".into(), expires_ms: 9 };
        let record = CodeRecord { request, principal: Principal::new("user", "alice", vec![]), expires_ms: 60_000, grant: Some("g0".into()) };
        let exchange = Exchange { client_id: "c1".into(), redirect_uri: Some("https://app.test/cb".into()), verifier: None, resource: Some("https://mcp.test/mcp".into()) };
        let scope = vec!["a".to_string(), "b".to_string()];
        vec![
            Command::Key { generated: "k".into() },
            Command::PutClient { client },
            Command::GetClient { client_id: "c1".into() },
            Command::DeleteClient { client_id: "c1".into(), registration_token: Some("h".into()) },
            Command::DeleteClient { client_id: "c1".into(), registration_token: None },
            Command::IndexGrant { client_id: "c1".into(), grant: "g1".into(), expires_ms: 5 },
            Command::ConsentGiven { client_id: "c1".into(), principal: "p".into(), resource: "r".into(), scope: scope.clone() },
            Command::RememberConsent { client_id: "c1".into(), principal: "p".into(), resource: "r".into(), scope },
            Command::PutCode { grant: "g1".into(), hash: "h".into(), record: Box::new(record) },
            Command::Exchange { grant: "g1".into(), code: "c".into(), exchange, refresh: "r".into(), lifetime_ms: 3, now_ms: 4 },
            Command::Refresh { grant: "g1".into(), presented: "p".into(), client_id: "c1".into(), resource: None, next: "n".into(), now_ms: 4 },
            Command::Refresh { grant: "g1".into(), presented: "p".into(), client_id: "c1".into(), resource: Some("r".into()), next: "n".into(), now_ms: 4 },
            Command::Revoke { grant: "g1".into(), presented: Some("p".into()), client_id: None, now_ms: 4 },
            Command::Revoke { grant: "g1".into(), presented: None, client_id: Some("c1".into()), now_ms: 4 },
            Command::GrantAlive { grant: "g1".into(), now_ms: 4 },
            Command::Revoked { since_ms: 2 },
            Command::NoteRevoked { grants: vec!["g1".into(), "g2".into()], now_ms: 4 },
        ]
    }

    #[test]
    fn commands_read_as_the_derive_wrote_and_read_them() {
        for command in samples() {
            let text = serde_json::to_string(&command).unwrap();
            let derived: Derived = serde_json::from_slice(text.as_bytes()).unwrap();
            // The derive writes the same text, and both read it into the same command.
            assert_eq!(serde_json::to_string(&derived).unwrap(), text);
            let read: Command = serde_json::from_slice(text.as_bytes()).unwrap();
            assert_eq!(format!("{read:?}"), format!("{command:?}"));
            assert_eq!(format!("{derived:?}"), format!("{command:?}"));
        }
        // Optional fields may be left out, as the derive allowed; unknown ones are ignored.
        let read: Command = serde_json::from_slice(br#"{"revoke":{"grant":"g","now_ms":1,"extra":[1]}}"#).unwrap();
        assert_eq!(format!("{read:?}"), format!("{:?}", Command::Revoke { grant: "g".into(), presented: None, client_id: None, now_ms: 1 }));
        // What the derive refused is refused.
        for bad in [&br#"{"revoke":{"grant":"g"}}"#[..], br#"{"nope":{}}"#, br#"{}"#, br#"{"revoked":{"since_ms":1},"key":{"generated":"k"}}"#, br#""revoked""#, br#"{"getClient":{"client_id":1}}"#] {
            assert!(serde_json::from_slice::<Derived>(bad).is_err(), "{}", String::from_utf8_lossy(bad));
            assert!(serde_json::from_slice::<Command>(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let missing = serde_json::from_slice::<Command>(br#"{"grantAlive":{"grant":"g"}}"#).unwrap_err().to_string();
        assert!(missing.starts_with("missing field `now_ms`"), "{missing}");
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
