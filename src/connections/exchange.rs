//! Tokens mcp-edge gets without a browser: client credentials (RFC 6749 §4.4; MCP's OAuth
//! Client Credentials extension), one per deployment and connection; and token exchange (RFC
//! 8693), the caller's token traded at a security token service for an audience-bound one, per
//! principal. The forms, and the isolate's bounded cache of what they bring back.

use std::collections::VecDeque;

/// RFC 8693's grant type and token types.
pub const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
pub const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
pub const JWT_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:jwt";

/// A token is used until this long before it expires, so that it does not expire on the way.
pub const EARLY_MS: u64 = 30_000;

fn scoped(mut form: Vec<(String, String)>, scopes: &[String], resource: Option<&str>) -> Vec<(String, String)> {
    if !scopes.is_empty() {
        form.push(("scope".into(), scopes.join(" ")));
    }
    if let Some(resource) = resource {
        form.push(("resource".into(), resource.to_string()));
    }
    form
}

/// The client credentials grant's form (client authentication is added as the connection says).
pub fn client_credentials(scopes: &[String], resource: Option<&str>) -> Vec<(String, String)> {
    scoped(vec![("grant_type".into(), "client_credentials".into())], scopes, resource)
}

/// What a token exchange asks for.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Exchange<'a> {
    pub subject_token: &'a str,
    pub subject_token_type: &'a str,
    pub audience: Option<&'a str>,
    pub resource: Option<&'a str>,
    pub scopes: &'a [String],
    pub requested_token_type: Option<&'a str>,
}

/// The subject token's type: a JWT when it looks like one (three base64url parts), an opaque
/// access token otherwise.
pub fn subject_type(token: &str) -> &'static str {
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')) {
        JWT_TOKEN_TYPE
    } else {
        ACCESS_TOKEN_TYPE
    }
}

/// RFC 8693 §2.1's form.
pub fn token_exchange(e: &Exchange<'_>) -> Vec<(String, String)> {
    let mut form = vec![("grant_type".into(), TOKEN_EXCHANGE.to_string()), ("subject_token".into(), e.subject_token.to_string()), ("subject_token_type".into(), e.subject_token_type.to_string())];
    if let Some(audience) = e.audience {
        form.push(("audience".into(), audience.to_string()));
    }
    if let Some(wanted) = e.requested_token_type {
        form.push(("requested_token_type".into(), wanted.to_string()));
    }
    scoped(form, e.scopes, e.resource)
}

/// Where a grant's token is kept: its owner (the principal, or the deployment for client
/// credentials) and its key; and the subject token an exchange trades.
pub struct Place<'a> {
    pub owner: String,
    pub key: String,
    pub subject: Option<&'a str>,
}

/// The place of `connection`'s token for `principal`. An exchange trades the identity
/// provider's token the principal signed in with, or the caller's own credential; its key has
/// the subject's digest, so that another credential of the same caller is exchanged anew, never
/// answered with a token made for the first.
pub fn place<'a>(connection: &super::Connection, principal: &'a crate::auth::Principal) -> Result<Place<'a>, String> {
    use super::{Grant, SubjectToken};
    let name = &connection.name;
    match (connection.grant, &connection.exchange) {
        (Grant::ClientCredentials, _) => Ok(Place { owner: String::new(), key: name.clone(), subject: None }),
        (Grant::TokenExchange, Some(settings)) => {
            if principal.id.is_empty() || principal.id == crate::auth::ANONYMOUS {
                return Err("an anonymous caller has no token to exchange".into());
            }
            let subject = match settings.subject_token {
                SubjectToken::IdentityProvider => principal.upstream_token.as_deref().ok_or("the caller did not sign in through an identity provider, so there is no token to exchange")?,
                SubjectToken::Caller => principal.caller_token.as_deref().ok_or("the caller presented no bearer credential to exchange")?,
            };
            Ok(Place { owner: principal.id.clone(), key: format!("{name}\n{}", crate::oauth::digest(subject)), subject: Some(subject) })
        }
        _ => Err("its tokens come from the connect page".into()),
    }
}

/// The token request's form for `connection` at `provider`, for the token kept at `place`.
pub fn form(connection: &super::Connection, provider: &super::Provider, place: &Place<'_>) -> Vec<(String, String)> {
    match (place.subject, &connection.exchange) {
        (Some(subject), Some(settings)) => token_exchange(&Exchange {
            subject_token: subject,
            subject_token_type: subject_type(subject),
            audience: settings.audience.as_deref(),
            resource: provider.resource.as_deref(),
            scopes: &provider.scopes,
            requested_token_type: settings.requested_token_type.as_deref(),
        }),
        _ => client_credentials(&provider.scopes, provider.resource.as_deref()),
    }
}

/// One owner's entries: key, value, and until when it may be used, least recently used first.
type Entries<T> = VecDeque<(String, T, u64)>;

/// Tokens kept in an isolate, bounded: at most `per_owner` entries for each owner (a
/// principal, or the deployment) and `owners` owners, the least recently used going first.
/// An entry is used until `EARLY_MS` before its expiry.
pub struct Cache<T> {
    owners: VecDeque<(String, Entries<T>)>,
    max_owners: usize,
    per_owner: usize,
}

impl<T: Clone> Cache<T> {
    pub const fn new(max_owners: usize, per_owner: usize) -> Cache<T> {
        Cache { owners: VecDeque::new(), max_owners, per_owner }
    }

    /// The owner's unexpired token under `key`, now its most recently used.
    pub fn get(&mut self, owner: &str, key: &str, now_ms: u64) -> Option<T> {
        let at = self.owners.iter().position(|(o, _)| o == owner)?;
        let (name, mut entries) = self.owners.remove(at)?;
        entries.retain(|(_, _, until)| *until > now_ms.saturating_add(EARLY_MS));
        let found = entries.iter().position(|(k, _, _)| k == key).and_then(|i| entries.remove(i));
        let value = found.map(|(k, v, until)| {
            entries.push_back((k, v.clone(), until));
            v
        });
        if !entries.is_empty() {
            self.owners.push_back((name, entries));
        }
        value
    }

    /// Keeps `value` until `until_ms`, the owner's oldest entry or the least recently used
    /// owner going when there is no room.
    pub fn put(&mut self, owner: &str, key: &str, value: T, until_ms: u64) {
        let mut entries = match self.owners.iter().position(|(o, _)| o == owner).and_then(|at| self.owners.remove(at)) {
            Some((_, entries)) => entries,
            None => VecDeque::new(),
        };
        entries.retain(|(k, _, _)| k != key);
        while entries.len() >= self.per_owner.max(1) {
            entries.pop_front();
        }
        entries.push_back((key.to_string(), value, until_ms));
        while self.owners.len() >= self.max_owners.max(1) {
            self.owners.pop_front();
        }
        self.owners.push_back((owner.to_string(), entries));
    }

    /// Forgets the owner's token under `key` (the upstream refused it).
    pub fn forget(&mut self, owner: &str, key: &str) {
        if let Some((_, entries)) = self.owners.iter_mut().find(|(o, _)| o == owner) {
            entries.retain(|(k, _, _)| k != key);
        }
    }

    pub fn len(&self) -> usize {
        self.owners.iter().map(|(_, e)| e.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
        form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    #[test]
    fn forms_carry_what_was_asked() {
        let cc = client_credentials(&["a".into(), "b".into()], Some("https://mcp.example/mcp"));
        assert_eq!((value(&cc, "grant_type"), value(&cc, "scope"), value(&cc, "resource")), (Some("client_credentials"), Some("a b"), Some("https://mcp.example/mcp")));
        let scopes = ["read".to_string()];
        let e = Exchange { subject_token: "eyJh.eyJi.c2ln", subject_token_type: subject_type("eyJh.eyJi.c2ln"), audience: Some("api"), resource: None, scopes: &scopes, requested_token_type: Some(ACCESS_TOKEN_TYPE) };
        let form = token_exchange(&e);
        assert_eq!(value(&form, "grant_type"), Some(TOKEN_EXCHANGE));
        assert_eq!(value(&form, "subject_token_type"), Some(JWT_TOKEN_TYPE));
        assert_eq!((value(&form, "audience"), value(&form, "scope"), value(&form, "resource")), (Some("api"), Some("read"), None));
        assert_eq!(subject_type("opaque-token"), ACCESS_TOKEN_TYPE);
        assert_eq!(subject_type("a.b.c d"), ACCESS_TOKEN_TYPE);
    }

    fn connection(grant: &str, subject: Option<&str>) -> crate::connections::Connection {
        use crate::connections::{AuthMethod, Connection, Exchange, Grant, SubjectToken};
        let exchange = subject.map(|s| Exchange { subject_token: if s == "caller" { SubjectToken::Caller } else { SubjectToken::IdentityProvider }, audience: Some("https://api".into()), requested_token_type: None });
        Connection {
            name: "c".into(),
            title: "C".into(),
            grant: Grant::parse(grant).unwrap(),
            issuer: None,
            authorization_endpoint: None,
            token_endpoint: Some("https://sts/token".into()),
            revocation_endpoint: None,
            client_id: Some("id".into()),
            client_secret: Some("S".into()),
            auth_method: AuthMethod::ClientSecretBasic,
            scopes: vec![],
            pkce: true,
            resource: None,
            extra: vec![],
            private_hosts: vec![],
            exchange,
        }
    }

    #[test]
    fn each_grant_keeps_its_token_in_its_place_and_trades_the_right_subject() {
        let mut alice = crate::auth::Principal::new("jwt:https://idp", "alice", vec![]);
        alice.caller_token = Some("alice.jwt.sig".into());
        alice.upstream_token = Some("idp-access-token".into());
        let cc = place(&connection("client_credentials", None), &alice).unwrap();
        assert_eq!((cc.owner.as_str(), cc.key.as_str(), cc.subject), ("", "c", None), "the deployment's, whoever calls");
        let caller = place(&connection("token_exchange", Some("caller")), &alice).unwrap();
        assert_eq!((caller.owner.as_str(), caller.subject), ("jwt:https://idp:alice", Some("alice.jwt.sig")));
        let idp = place(&connection("token_exchange", Some("identityProvider")), &alice).unwrap();
        assert_eq!(idp.subject, Some("idp-access-token"));
        assert_ne!(caller.key, idp.key, "another subject, another token");
        let bob = crate::auth::Principal::new("jwt:https://idp", "bob", vec![]);
        assert!(place(&connection("token_exchange", Some("caller")), &bob).err().unwrap_or_default().contains("no bearer credential"));
        assert!(place(&connection("token_exchange", Some("identityProvider")), &bob).err().unwrap_or_default().contains("identity provider"));
        assert!(place(&connection("token_exchange", Some("caller")), &crate::auth::Principal::anonymous()).err().unwrap_or_default().contains("anonymous"));
        let provider = connection("token_exchange", Some("caller")).provider(Some("s".into())).unwrap();
        let sent = form(&connection("token_exchange", Some("caller")), &provider, &caller);
        assert_eq!(value(&sent, "subject_token"), Some("alice.jwt.sig"));
        assert_eq!(value(&sent, "audience"), Some("https://api"));
    }

    #[test]
    fn the_cache_is_bounded_and_expires() {
        let mut cache = Cache::new(2, 2);
        cache.put("alice", "x", 1, 100_000);
        assert_eq!(cache.get("alice", "x", 0), Some(1));
        assert_eq!(cache.get("alice", "x", 100_000 - EARLY_MS), None, "too close to expiry");
        cache.put("alice", "x", 1, 100_000);
        cache.put("alice", "y", 2, 100_000);
        cache.put("alice", "z", 3, 100_000);
        assert_eq!((cache.get("alice", "x", 0), cache.get("alice", "z", 0)), (None, Some(3)), "per owner: the oldest goes");
        cache.put("bob", "x", 4, 100_000);
        assert_eq!(cache.get("alice", "y", 0), Some(2), "alice is now the most recent");
        cache.put("carol", "x", 5, 100_000);
        assert_eq!((cache.get("bob", "x", 0), cache.get("alice", "y", 0), cache.get("carol", "x", 0)), (None, Some(2), Some(5)), "bob was least recently used");
        cache.forget("carol", "x");
        assert_eq!(cache.get("carol", "x", 0), None);
        assert!(cache.len() <= 4);
    }
}
