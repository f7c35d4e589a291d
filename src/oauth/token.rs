//! Our access tokens: `mcpe_at.` and a sealed claims object, checked by signature and expiry alone
//! so that a request needs no storage hop. Also PKCE (RFC 7636, S256 only), how a token request's
//! client authenticates (RFC 6749 §2.3.1), and the identity provider's token sealed inside ours.

use serde::{Deserialize, Serialize};

use super::client::AuthMethod;
use super::{single, OAuthError};
use crate::auth::{same_secret, Principal};
use crate::signing::{seal, unseal};

pub const ACCESS_PREFIX: &str = "mcpe_at.";
pub const REFRESH_PREFIX: &str = "mcpe_rt.";
pub const CODE_PREFIX: &str = "mcpe_ac.";

/// What an access token says; the Worker trusts it once its signature and expiry check out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessClaims {
    /// The MCP server (resource URL) the token is for.
    pub aud: String,
    pub principal: Principal,
    pub client_id: String,
    /// The grant it came from: revoking the grant revokes the token.
    pub grant: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
    pub exp_ms: u64,
}

impl AccessClaims {
    /// The token. The principal's upstream token is replaced by its encryption first: the client
    /// holds our token, and must not learn the identity provider's from it.
    pub fn mint(&self, key: &[u8], nonce: [u8; 12]) -> String {
        let claims = AccessClaims { principal: sealed_upstream(&self.principal, key, nonce), ..self.clone() };
        format!("{ACCESS_PREFIX}{}", seal(key, "oauth.access", serde_json::to_string(&claims).unwrap_or_default().as_bytes()))
    }

    /// The claims of a token we minted, with the upstream token decrypted.
    pub fn verify(key: &[u8], token: &str, now_ms: u64) -> Result<AccessClaims, String> {
        let sealed = token.strip_prefix(ACCESS_PREFIX).ok_or("not an access token of this server")?;
        let body = unseal(key, "oauth.access", sealed).ok_or("the access token's signature is not valid")?;
        let mut claims: AccessClaims = serde_json::from_slice(&body).map_err(|_| "the access token is malformed")?;
        if claims.exp_ms <= now_ms {
            return Err("the access token has expired".into());
        }
        claims.principal = opened_upstream(&claims.principal, key).ok_or("the access token's upstream token cannot be decrypted")?;
        Ok(claims)
    }
}

/// The principal with its identity-provider token encrypted: how it is stored, and how it
/// travels through a client (in our tokens, cookies and forms).
pub fn sealed_upstream(principal: &Principal, key: &[u8], nonce: [u8; 12]) -> Principal {
    Principal { upstream_token: principal.upstream_token.as_ref().map(|t| encrypt(key, nonce, t)), ..principal.clone() }
}

/// The principal with its identity-provider token decrypted; `None` when it cannot be (another
/// key signed it).
pub fn opened_upstream(principal: &Principal, key: &[u8]) -> Option<Principal> {
    let upstream_token = match &principal.upstream_token {
        Some(sealed) => Some(decrypt(key, sealed)?),
        None => None,
    };
    Some(Principal { upstream_token, ..principal.clone() })
}

/// Whether `verifier` is the PKCE verifier of `challenge` (S256), compared in constant time.
pub fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    use sha2::{Digest, Sha256};
    let well_formed = (43..=128).contains(&verifier.len()) && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    well_formed && same_secret(&crate::base64::encode_url(&Sha256::digest(verifier.as_bytes())), challenge)
}

/// Who a token or revocation request says it is: `client_secret_basic` (the `Authorization`
/// header), `client_secret_post` (form fields), or a public client's bare `client_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    pub client_id: String,
    pub method: AuthMethod,
    pub secret: Option<String>,
}

pub fn client_credentials(pairs: &[(String, String)], authorization: Option<&str>) -> Result<ClientCredentials, OAuthError> {
    let form_id = single(pairs, "client_id")?;
    let form_secret = single(pairs, "client_secret")?;
    let basic = authorization.and_then(|h| crate::auth::authorization(h, "basic"));
    if let Some(encoded) = basic {
        if form_secret.is_some() {
            return Err(OAuthError::invalid_request("use one client authentication method, not two"));
        }
        let decoded = crate::base64::decode(&encoded).and_then(|b| String::from_utf8(b).ok()).ok_or_else(|| OAuthError::invalid_client("the Basic credentials are not base64"))?;
        let (id, secret) = decoded.split_once(':').ok_or_else(|| OAuthError::invalid_client("the Basic credentials have no colon"))?;
        // RFC 6749 §2.3.1: both halves are form-urlencoded before they are joined.
        let (id, secret) = (crate::head::form_decode(id), crate::head::form_decode(secret));
        if form_id.is_some_and(|f| f != id) {
            return Err(OAuthError::invalid_request("client_id differs from the Basic credentials"));
        }
        return Ok(ClientCredentials { client_id: id, method: AuthMethod::ClientSecretBasic, secret: Some(secret) });
    }
    let client_id = form_id.ok_or_else(|| OAuthError::invalid_client("the request names no client"))?.to_string();
    Ok(match form_secret {
        Some(s) => ClientCredentials { client_id, method: AuthMethod::ClientSecretPost, secret: Some(s.to_string()) },
        None => ClientCredentials { client_id, method: AuthMethod::None, secret: None },
    })
}

/// The key that encrypts identity-provider tokens: derived from the signing key, so one secret
/// serves both and neither use can be turned into the other.
fn cipher_key(key: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"mcp-edge oauth upstream-token key\0");
    h.update(key);
    h.finalize().into()
}

/// AES-256-GCM: `base64url(nonce ‖ ciphertext)`.
pub fn encrypt(key: &[u8], nonce: [u8; 12], plaintext: &str) -> String {
    use aes_gcm::aead::{Aead, KeyInit};
    let cipher = aes_gcm::Aes256Gcm::new(&cipher_key(key).into());
    let sealed = cipher.encrypt(&nonce.into(), plaintext.as_bytes()).unwrap_or_default();
    let mut out = nonce.to_vec();
    out.extend_from_slice(&sealed);
    crate::base64::encode_url(&out)
}

pub fn decrypt(key: &[u8], sealed: &str) -> Option<String> {
    use aes_gcm::aead::{Aead, KeyInit};
    let bytes = crate::base64::decode_url(sealed)?;
    let (nonce, ciphertext) = (bytes.get(..12)?, bytes.get(12..)?);
    let cipher = aes_gcm::Aes256Gcm::new(&cipher_key(key).into());
    let plain = cipher.decrypt(aes_gcm::Nonce::from_slice(nonce), ciphertext).ok()?;
    String::from_utf8(plain).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::form;

    fn claims() -> AccessClaims {
        let mut principal = Principal::new("oauth", "alice", vec!["admin".into()]);
        principal.upstream_token = Some("gho_idp-token".into());
        AccessClaims { aud: "https://mcp.test/mcp".into(), principal, client_id: "c1".into(), grant: "g1".into(), scope: vec![], exp_ms: 10_000 }
    }

    #[test]
    fn access_tokens_verify_until_they_expire() {
        let token = claims().mint(b"key", [7; 12]);
        assert!(token.starts_with(ACCESS_PREFIX));
        // The identity provider's token is inside, encrypted.
        assert!(!token.contains("gho_idp") && !String::from_utf8_lossy(&crate::base64::decode_url(token.split('.').nth(1).unwrap()).unwrap()).contains("gho_idp"));
        assert_eq!(AccessClaims::verify(b"key", &token, 9_999), Ok(claims()));
        assert_eq!(AccessClaims::verify(b"key", &token, 10_000).unwrap_err(), "the access token has expired");
        assert_eq!(AccessClaims::verify(b"other", &token, 0).unwrap_err(), "the access token's signature is not valid");
        assert_eq!(AccessClaims::verify(b"key", "mcpe_rt.x", 0).unwrap_err(), "not an access token of this server");
        let tampered = token.replacen("mcpe_at.e", "mcpe_at.f", 1);
        assert!(AccessClaims::verify(b"key", &tampered, 0).is_err());
    }

    #[test]
    fn pkce_s256() {
        // RFC 7636 appendix B.
        assert!(pkce_matches("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        assert!(!pkce_matches("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXK", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        assert!(!pkce_matches("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        assert!(!pkce_matches("short", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
    }

    #[test]
    fn client_authentication_methods() {
        let basic = client_credentials(&form("grant_type=x"), Some("Basic YzElM0E6cyUyNjE=")).unwrap();
        assert_eq!(basic, ClientCredentials { client_id: "c1:".into(), method: AuthMethod::ClientSecretBasic, secret: Some("s&1".into()) });
        let post = client_credentials(&form("client_id=c2&client_secret=p"), None).unwrap();
        assert_eq!((post.method, post.secret.as_deref()), (AuthMethod::ClientSecretPost, Some("p")));
        let public = client_credentials(&form("client_id=c3"), None).unwrap();
        assert_eq!((public.method, public.secret), (AuthMethod::None, None));
        assert_eq!(client_credentials(&form("client_secret=p"), Some("Basic YzE6cw==")).unwrap_err().error, "invalid_request");
        assert_eq!(client_credentials(&form(""), None).unwrap_err().status, 401);
        assert_eq!(client_credentials(&form(""), Some("Basic !!")).unwrap_err().error, "invalid_client");
    }

    #[test]
    fn upstream_tokens_round_trip_only_with_the_key() {
        let sealed = encrypt(b"key", [1; 12], "secret-token");
        assert_eq!(decrypt(b"key", &sealed).as_deref(), Some("secret-token"));
        assert_eq!(decrypt(b"other", &sealed), None);
        assert_eq!(decrypt(b"key", "AAAA"), None);
    }
}
