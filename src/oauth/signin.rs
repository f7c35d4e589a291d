//! Who signs in at the authorization step: a configured user, whose password secret is checked
//! through a slow KDF (PBKDF2-SHA256 in Web Crypto, at the edge); or an identity provider's user,
//! whose claims become a principal and roles.

use serde_json::Value;

use super::{Oidc, User};
use crate::auth::Principal;

/// PBKDF2 iterations: the most Cloudflare's Web Crypto allows.
pub const ITERATIONS: u32 = 100_000;

/// A user's password secret: the password itself, or `pbkdf2-sha256$<iterations>$<salt>$<hash>`
/// (base64url salt and hash) as `mcp-edge hash-password` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Password {
    Plain(String),
    Hashed { iterations: u32, salt: Vec<u8>, hash: Vec<u8> },
}

/// The prefix of a hashed password secret.
pub const HASH_PREFIX: &str = "pbkdf2-sha256$";

impl Password {
    /// A secret that starts like a hash must be one: a damaged hash is an error, never taken
    /// for the password itself.
    pub fn parse(secret: &str) -> Result<Password, String> {
        let Some(rest) = secret.strip_prefix(HASH_PREFIX) else { return Ok(Password::Plain(secret.to_string())) };
        let mut parts = rest.split('$');
        if let (Some(iterations), Some(salt), Some(hash), None) = (parts.next(), parts.next(), parts.next(), parts.next()) {
            if let (Ok(iterations), Some(salt), Some(hash)) = (iterations.parse(), crate::base64::decode_url(salt), crate::base64::decode_url(hash)) {
                if hash.len() == 32 && (1..=ITERATIONS).contains(&iterations) && !salt.is_empty() {
                    return Ok(Password::Hashed { iterations, salt, hash });
                }
            }
        }
        Err(format!("is not a {HASH_PREFIX}<iterations ≤ {ITERATIONS}>$<salt>$<32-byte hash> value (mcp-edge hash-password prints one)"))
    }

    /// The iterations and salt a presented password is derived with. A plain secret is derived
    /// the same way (salted with the username), so every check costs the same.
    pub fn derivation(&self, username: &str) -> (u32, Vec<u8>) {
        match self {
            Password::Hashed { iterations, salt, .. } => (*iterations, salt.clone()),
            Password::Plain(_) => (ITERATIONS, format!("mcp-edge user {username}").into_bytes()),
        }
    }
}

/// `pbkdf2-sha256$…` for a derived hash.
pub fn format_hash(iterations: u32, salt: &[u8], hash: &[u8]) -> String {
    format!("pbkdf2-sha256${iterations}${}${}", crate::base64::encode_url(salt), crate::base64::encode_url(hash))
}

/// Whether an ID token's `iss` names the configured issuer. Google's may leave out `https://`
/// (its documentation says so), which is the same issuer.
pub fn same_issuer(claimed: &str, issuer: &str) -> bool {
    let claimed = claimed.trim_end_matches('/');
    claimed == issuer || (issuer == "https://accounts.google.com" && claimed == "accounts.google.com")
}

/// An endpoint the identity provider's discovery document names, if it may be used: https, or
/// plain http only where the issuer itself is http on a host in `oauth.privateHosts` (a local
/// provider) and the endpoint's host is listed too. Read by the one URL parser; the URL comes
/// back as it serialized it. Another https origin is allowed: providers serve their endpoints
/// on hosts of their own (Google's token endpoint is oauth2.googleapis.com), and the document
/// came from the issuer over TLS.
pub fn discovered_endpoint(issuer: &str, endpoint: &str, private_hosts: &[String]) -> Result<String, String> {
    use crate::weburl::{listed, WebUrl};
    let url = WebUrl::parse(endpoint).map_err(|why| format!("the discovery document names an endpoint that is refused: {why}"))?;
    let local = || WebUrl::parse(issuer).is_ok_and(|i| i.scheme() == "http" && i.host().is_some_and(|h| listed(private_hosts, h)));
    let allowed = match (url.scheme(), url.host()) {
        ("https", Some(_)) => true,
        ("http", Some(host)) => local() && listed(private_hosts, host),
        _ => false,
    };
    if !allowed {
        return Err(format!("the discovery document names {}, which is not https (plain http only for a local provider in oauth.privateHosts)", url.as_str()));
    }
    if url.has_credentials() || url.fragment().is_some() {
        return Err(format!("the discovery document names {}, with user info or a fragment", url.as_str()));
    }
    Ok(url.as_str().to_string())
}

/// The configured user with this name (names compare exactly).
pub fn user<'a>(users: &'a [User], username: &str) -> Option<&'a User> {
    users.iter().find(|u| u.username == username)
}

pub fn user_principal(user: &User) -> Principal {
    let mut principal = Principal::new("user", &user.username, user.roles.clone());
    principal.email.clone_from(&user.email);
    principal
}

/// An identity provider's user: `oidc:<issuer>|<subject>`, with the email when the provider
/// does not say it is unverified, and roles from `defaultRoles` and `roleMap` (by subject,
/// email or group; with no `roleMap`, groups are roles as they are).
pub fn oidc_principal(oidc: &Oidc, claims: &Value) -> Result<Principal, String> {
    let subject = match claims.pointer(&oidc.subject) {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err(format!("the identity provider's answer has no subject at {}", oidc.subject)),
    };
    // An email the provider calls unverified is no one's; one it says nothing about names the
    // person, but grants nothing: anyone may type any address into an account at some
    // providers, so only a verified one is a `roleMap` key.
    let said = claims.get("email_verified").and_then(|v| v.as_bool().or_else(|| v.as_str().map(|s| s == "true")));
    let email = claims.pointer(&oidc.email).and_then(Value::as_str).filter(|_| said != Some(false)).map(str::to_string);
    let verified_email = email.as_ref().filter(|_| said == Some(true));
    let groups: Vec<String> = match claims.pointer(&oidc.groups) {
        Some(Value::Array(items)) => items.iter().filter_map(|g| g.as_str().map(str::to_string).or_else(|| g.as_i64().map(|n| n.to_string()))).collect(),
        Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
        _ => Vec::new(),
    };
    let mut roles = oidc.default_roles.clone();
    // Roles named by subject, email or group; with no map, groups are roles as they are.
    if oidc.role_map.is_empty() {
        roles.extend(groups);
    } else {
        let keys = std::iter::once(&subject).chain(verified_email).chain(groups.iter());
        roles.extend(keys.filter_map(|k| oidc.role_map.get(k)).flatten().cloned());
    }
    roles.sort_unstable();
    roles.dedup();
    Ok(Principal { id: format!("oidc:{}|{subject}", oidc.issuer), roles, subject, email, upstream_token: None, ..Principal::default() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn oidc(role_map: &[(&str, &str)]) -> Oidc {
        let mut map = BTreeMap::new();
        for (k, v) in role_map {
            map.insert(k.to_string(), vec![v.to_string()]);
        }
        Oidc { issuer: "https://idp.test".into(), client_id: "c".into(), secret: "S".into(), scopes: vec![], authorization_endpoint: None, token_endpoint: None, userinfo_endpoint: None, subject: "/sub".into(), email: "/email".into(), groups: "/groups".into(), role_map: map, default_roles: vec!["user".into()], post_secret: false }
    }

    #[test]
    fn passwords_parse() {
        let hashed = format_hash(1000, b"salt", &[9; 32]);
        assert_eq!(Password::parse(&hashed), Ok(Password::Hashed { iterations: 1000, salt: b"salt".to_vec(), hash: vec![9; 32] }));
        assert_eq!(Password::parse(&hashed).unwrap().derivation("bob"), (1000, b"salt".to_vec()));
        assert_eq!(Password::parse("correct horse"), Ok(Password::Plain("correct horse".into())));
        assert_eq!(Password::parse("correct horse").unwrap().derivation("bob"), (ITERATIONS, b"mcp-edge user bob".to_vec()));
        // Too many iterations for Web Crypto, or a short hash: an error, not a password.
        assert!(Password::parse(&format_hash(200_000, b"s", &[1; 32])).is_err());
        assert!(Password::parse(&format_hash(10, b"s", &[1; 8])).is_err());
        assert!(Password::parse("pbkdf2-sha256$1000$c2FsdA").is_err());
    }

    #[test]
    fn issuers_compare_exactly_except_googles() {
        assert!(same_issuer("https://idp.test/", "https://idp.test"));
        assert!(!same_issuer("https://evil.test", "https://idp.test"));
        assert!(same_issuer("accounts.google.com", "https://accounts.google.com"));
        assert!(!same_issuer("idp.test", "https://idp.test"));
    }

    #[test]
    fn discovered_endpoints_are_https_or_a_local_providers() {
        let private = vec!["127.0.0.1".to_string()];
        let ok = |issuer: &str, endpoint: &str| discovered_endpoint(issuer, endpoint, &private);
        assert_eq!(ok("https://accounts.google.com", "https://oauth2.googleapis.com/token").unwrap(), "https://oauth2.googleapis.com/token");
        assert_eq!(ok("http://127.0.0.1:9000", "http://127.0.0.1:9000/token").unwrap(), "http://127.0.0.1:9000/token");
        // A provider over https may not send the client secret, codes or tokens in clear.
        assert!(ok("https://idp.test", "http://idp.test/token").unwrap_err().contains("not https"));
        assert!(ok("https://idp.test", "http://127.0.0.1:9000/token").is_err(), "http only where the issuer itself is local");
        assert!(ok("http://127.0.0.1:9000", "http://evil.example/token").is_err());
        assert!(ok("https://idp.test", "https://evil.example\\@idp.test/token").unwrap_err().contains("backslash"));
        assert!(ok("https://idp.test", "https://ｉｄｐ.test/token").is_err());
        assert!(ok("https://idp.test", "javascript:alert(1)").is_err());
        assert!(ok("https://idp.test", "https://u:p@idp.test/token").is_err());
    }

    #[test]
    fn identity_provider_claims_become_principals() {
        let claims = json!({"sub": "u-1", "email": "a@x.test", "email_verified": true, "groups": ["admins", "staff"]});
        let p = oidc_principal(&oidc(&[("admins", "admin"), ("a@x.test", "mail")]), &claims).unwrap();
        assert_eq!((p.id.as_str(), p.subject.as_str(), p.email.as_deref()), ("oidc:https://idp.test|u-1", "u-1", Some("a@x.test")));
        assert_eq!(p.roles, vec!["admin", "mail", "user"]);
        let p = oidc_principal(&oidc(&[]), &claims).unwrap();
        assert_eq!(p.roles, vec!["admins", "staff", "user"]);
        let unverified = json!({"sub": 42, "email": "a@x.test", "email_verified": false});
        let p = oidc_principal(&oidc(&[("a@x.test", "mail")]), &unverified).unwrap();
        assert_eq!((p.subject.as_str(), p.email, p.roles), ("42", None, vec!["user".to_string()]));
        assert!(oidc_principal(&oidc(&[]), &json!({"email": "a@x.test"})).is_err());
    }

    #[test]
    fn only_a_verified_email_grants_roles() {
        let map = oidc(&[("a@x.test", "admin")]);
        // Without `email_verified` the email still names the person, and grants nothing.
        let silent = oidc_principal(&map, &json!({"sub": "u-2", "email": "a@x.test"})).unwrap();
        assert_eq!((silent.email.as_deref(), silent.roles.clone()), (Some("a@x.test"), vec!["user".to_string()]));
        let verified = oidc_principal(&map, &json!({"sub": "u-2", "email": "a@x.test", "email_verified": "true"})).unwrap();
        assert_eq!(verified.roles, vec!["admin", "user"]);
    }
}
