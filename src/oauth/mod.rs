//! mcp-edge as its own OAuth 2.1 authorization server: one per deployment, its issuer the
//! Worker's origin, its resources the servers with `"auth": {"oauth": true}`.
//!
//! - [`uri`]: redirect URIs: which may be registered, and when a presented one matches.
//! - [`client`]: clients: Dynamic Client Registration, Client ID Metadata Documents, the
//!   configured ones, and how each authenticates at the token endpoint.
//! - [`authorize`]: the authorization request checked, and the redirects that answer it.
//! - [`token`]: our access tokens (signed, checked without storage), PKCE, token requests.
//! - [`grant`]: what the authorization server's Durable Object stores (codes, grants, refresh
//!   tokens) and the rules for each use: single-use codes, rotation, reuse revokes the grant.
//! - [`signin`]: who signs in: configured users' password hashes, an identity provider's claims.
//! - [`store`]: what the Worker asks the authorization server's Durable Object.
//! - [`page`]: the sign-in and consent page, and the error page, as plain HTML.
//! - [`metadata`]: the RFC 8414 document.
//!
//! The edge (`edge/worker/oauth/`) does the fetches, the Web Crypto, the randomness and the
//! storage; everything decided here is a pure function of its inputs.
//!
//! The one import circle of this folder: this file holds what its files share (`OAuthError`,
//! `digest`, `encode`) and the compiled `AuthServer`, whose clients are `client::Client`s; `client`
//! checks redirect URIs with `uri`, which encodes with `encode` from here.

pub mod authorize;
pub mod client;
pub mod grant;
pub mod metadata;
pub mod page;
pub mod signin;
pub mod store;
pub mod token;
pub mod uri;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// An OAuth error answer (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 7009): its status, its `error`
/// code and a description for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthError {
    pub status: u16,
    pub error: String,
    pub description: String,
}

impl OAuthError {
    pub fn new(status: u16, error: &str, description: impl Into<String>) -> OAuthError {
        OAuthError { status, error: error.into(), description: description.into() }
    }

    pub fn invalid_request(description: impl Into<String>) -> OAuthError {
        OAuthError::new(400, "invalid_request", description)
    }

    pub fn invalid_grant(description: impl Into<String>) -> OAuthError {
        OAuthError::new(400, "invalid_grant", description)
    }

    pub fn invalid_client(description: impl Into<String>) -> OAuthError {
        OAuthError::new(401, "invalid_client", description)
    }

    /// `{"error": …, "error_description": …}`.
    pub fn body(&self) -> String {
        serde_json::json!({"error": self.error, "error_description": self.description}).to_string()
    }
}

/// An OAuth error as the authorization server's endpoints answer it: never cached, readable
/// from any origin, and a 401 names the scheme to authenticate with (RFC 6749 §5.2).
impl From<OAuthError> for crate::error::Error {
    fn from(e: OAuthError) -> Self {
        let mut headers = vec![("Cache-Control", "no-store".to_string()), ("Access-Control-Allow-Origin", "*".to_string())];
        if e.status == 401 {
            headers.push(("WWW-Authenticate", "Basic realm=\"mcp-edge\"".to_string()));
        }
        let body = e.body();
        crate::error::Error::Wire(Box::new(crate::error::WireError { status: e.status, code: e.error, description: e.description, body, headers }))
    }
}

/// The compiled top-level `oauth` section.
#[derive(Debug, Clone)]
pub struct AuthServer {
    pub sign_in: SignIn,
    pub registration: Registration,
    pub clients: Vec<client::Client>,
    pub metadata_documents: bool,
    pub access_ttl_ms: u64,
    pub refresh_ttl_ms: u64,
    pub code_ttl_ms: u64,
    pub scopes: Vec<String>,
    pub remember_consent: bool,
    pub private_hosts: Vec<String>,
    /// A Rate Limiting binding and its period, keyed by client address.
    pub rate_limit: Option<(String, u64)>,
}

#[derive(Debug, Clone)]
pub enum SignIn {
    /// (c) configured users, passwords in secrets.
    Users(Vec<User>),
    /// (a) an upstream identity provider.
    Oidc(Box<Oidc>),
    /// (b) the resource server's own auth, with the host application's sign-in page.
    Introspection { login_url: String },
}

#[derive(Debug, Clone)]
pub struct User {
    pub username: String,
    pub password_secret: String,
    pub roles: Vec<String>,
    pub email: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Oidc {
    pub issuer: String,
    pub client_id: String,
    pub secret: String,
    pub scopes: Vec<String>,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub userinfo_endpoint: Option<String>,
    pub subject: String,
    pub email: String,
    pub groups: String,
    pub role_map: BTreeMap<String, Vec<String>>,
    pub default_roles: Vec<String>,
    /// `client_secret_post` rather than HTTP Basic at the provider's token endpoint.
    pub post_secret: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registration {
    Off,
    Open,
    /// Needs the value of this secret as a bearer token.
    Token(String),
}

/// The secret that signs our tokens, when set; otherwise the authorization server's Durable
/// Object generates one and keeps it.
pub const SIGNING_KEY: &str = crate::keys::OAUTH_SIGNING_KEY;

/// The pairs of an `application/x-www-form-urlencoded` body or query string, decoded.
pub fn form(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (crate::head::form_decode(k), crate::head::form_decode(v))
        })
        .collect()
}

/// The one value of `name` in form pairs. A parameter sent twice is refused, as RFC 6749 §3.1
/// requires: `Err` names it.
pub fn single<'a>(pairs: &'a [(String, String)], name: &str) -> Result<Option<&'a str>, OAuthError> {
    let mut values = pairs.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let first = values.next();
    if values.next().is_some() {
        return Err(OAuthError::invalid_request(format!("{name} is given more than once")));
    }
    Ok(first.filter(|v| !v.is_empty()))
}

/// `application/x-www-form-urlencoded` encoding of one value.
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    crate::upstream::template::percent_encode(&mut out, value, &[]);
    out
}

/// Lowercase hex SHA-256: how codes, refresh tokens, client secrets and registration tokens are
/// stored (they are random and long, so a plain hash is enough; passwords get a slow KDF).
pub fn digest(text: &str) -> String {
    use sha2::{Digest, Sha256};
    crate::hex::encode(&Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_decode_and_refuse_repeats() {
        let pairs = form("a=1&b=x+y%2Fz&c=&a2=%E2%82%AC&&d");
        assert_eq!(single(&pairs, "b").unwrap(), Some("x y/z"));
        assert_eq!(single(&pairs, "c").unwrap(), None);
        assert_eq!(single(&pairs, "a2").unwrap(), Some("€"));
        assert_eq!(single(&pairs, "d").unwrap(), None);
        let twice = form("state=1&state=2");
        assert_eq!(single(&twice, "state").unwrap_err().description, "state is given more than once");
        assert_eq!(encode("a b/ü"), "a%20b%2F%C3%BC");
    }
}
