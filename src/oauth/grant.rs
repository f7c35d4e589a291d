//! What the authorization server's Durable Object keeps, and the rules for each use. A code is
//! used once: its second use revokes the grant the first one started (RFC 9700 §4.5). A refresh
//! token is used once too: each use rotates it, and presenting an old one revokes the grant. All
//! are stored by their SHA-256, never as issued.

use serde::{Deserialize, Serialize};

use super::authorize::AuthorizationRequest;
use super::token::pkce_matches;
use super::OAuthError;
use crate::auth::Principal;

/// An authorization code, under `code:<sha256>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeRecord {
    pub request: AuthorizationRequest,
    /// Who signed in; an identity provider's token, if any, already encrypted.
    pub principal: Principal,
    pub expires_ms: u64,
    /// Set by the first exchange: the grant a second one revokes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
}

/// A grant: one user's consent for one client and one MCP server, under `grant:<id>`. Its
/// refresh tokens point at it (`refresh:<sha256>` → the grant id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    pub id: String,
    pub client_id: String,
    pub principal: Principal,
    pub resource: String,
    #[serde(default)]
    pub scope: Vec<String>,
    /// The SHA-256 of the one refresh token that is valid now.
    pub refresh: String,
    /// When refreshing stops: the grant's lifetime, not extended by use.
    pub expires_ms: u64,
    #[serde(default)]
    pub revoked: bool,
}

/// A refusal, and whether it revokes the grant involved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub error: OAuthError,
    pub revoke: Option<String>,
}

impl From<OAuthError> for Refused {
    fn from(error: OAuthError) -> Self {
        Refused { error, revoke: None }
    }
}

/// What a `grant_type=authorization_code` request presents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Exchange {
    pub client_id: String,
    pub redirect_uri: Option<String>,
    pub verifier: Option<String>,
    pub resource: Option<String>,
}

/// Checks an exchange of `code`; `Ok` means: start a grant and mark the code used.
pub fn redeem(code: &CodeRecord, exchange: &Exchange, now_ms: u64) -> Result<(), Refused> {
    let invalid = |why: &str| Refused::from(OAuthError::invalid_grant(why));
    if let Some(grant) = &code.grant {
        return Err(Refused { error: OAuthError::invalid_grant("the code was already used; the tokens it gave are revoked"), revoke: Some(grant.clone()) });
    }
    if code.expires_ms <= now_ms {
        return Err(invalid("the code has expired"));
    }
    if code.request.client_id != exchange.client_id {
        return Err(invalid("the code was issued to another client"));
    }
    if exchange.redirect_uri.as_deref() != Some(code.request.redirect_uri.as_str()) {
        return Err(invalid("redirect_uri is not the one the code was requested with"));
    }
    let verifier = exchange.verifier.as_deref().ok_or_else(|| Refused::from(OAuthError::invalid_request("code_verifier is required")))?;
    if !pkce_matches(verifier, &code.request.code_challenge) {
        return Err(invalid("code_verifier does not match the code_challenge"));
    }
    if exchange.resource.as_ref().is_some_and(|r| *r != code.request.resource) {
        return Err(Refused::from(OAuthError::new(400, "invalid_target", "resource is not the one the code was requested for")));
    }
    Ok(())
}

impl Grant {
    /// The grant an exchange starts.
    pub fn start(id: String, code: &CodeRecord, refresh: String, now_ms: u64, lifetime_ms: u64) -> Grant {
        Grant {
            id,
            client_id: code.request.client_id.clone(),
            principal: code.principal.clone(),
            resource: code.request.resource.clone(),
            scope: code.request.scope.clone(),
            refresh,
            expires_ms: now_ms + lifetime_ms,
            revoked: false,
        }
    }

    /// Checks a refresh with the token whose SHA-256 is `presented`; `Ok` means: rotate.
    pub fn refresh(&self, presented: &str, client_id: &str, resource: Option<&str>, now_ms: u64) -> Result<(), Refused> {
        let invalid = |why: &str| Refused::from(OAuthError::invalid_grant(why));
        if self.revoked {
            return Err(invalid("the grant was revoked; sign in again"));
        }
        if self.client_id != client_id {
            return Err(invalid("the refresh token was issued to another client"));
        }
        if self.refresh != presented {
            // RFC 9700 §4.14.2: an old refresh token back means one of two holders is not the
            // client; neither may go on.
            return Err(Refused { error: OAuthError::invalid_grant("the refresh token was already used; the grant is revoked"), revoke: Some(self.id.clone()) });
        }
        if self.expires_ms <= now_ms {
            return Err(invalid("the grant has expired; sign in again"));
        }
        if resource.is_some_and(|r| r != self.resource) {
            return Err(Refused::from(OAuthError::new(400, "invalid_target", "resource is not the one the grant is for")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    fn code() -> CodeRecord {
        let request = AuthorizationRequest { client_id: "c1".into(), redirect_uri: "https://app.test/cb".into(), state: None, code_challenge: CHALLENGE.into(), scope: vec![], resource: "https://mcp.test/mcp".into(), expires_ms: 0 };
        CodeRecord { request, principal: Principal::new("user", "alice", vec![]), expires_ms: 60_000, grant: None }
    }

    fn exchange() -> Exchange {
        Exchange { client_id: "c1".into(), redirect_uri: Some("https://app.test/cb".into()), verifier: Some(VERIFIER.into()), resource: Some("https://mcp.test/mcp".into()) }
    }

    #[test]
    fn codes_are_checked_and_used_once() {
        assert_eq!(redeem(&code(), &exchange(), 59_999), Ok(()));
        let error = |c: CodeRecord, e: Exchange, now: u64| redeem(&c, &e, now).unwrap_err();
        assert_eq!(error(code(), exchange(), 60_000).error.description, "the code has expired");
        assert_eq!(error(code(), Exchange { verifier: Some(VERIFIER.replace('d', "e")), ..exchange() }, 0).error.description, "code_verifier does not match the code_challenge");
        assert_eq!(error(code(), Exchange { verifier: None, ..exchange() }, 0).error.error, "invalid_request");
        assert_eq!(error(code(), Exchange { client_id: "c2".into(), ..exchange() }, 0).error.error, "invalid_grant");
        assert_eq!(error(code(), Exchange { redirect_uri: Some("https://app.test/cb2".into()), ..exchange() }, 0).error.error, "invalid_grant");
        assert_eq!(error(code(), Exchange { redirect_uri: None, ..exchange() }, 0).error.error, "invalid_grant");
        assert_eq!(error(code(), Exchange { resource: Some("https://mcp.test/other".into()), ..exchange() }, 0).error.error, "invalid_target");
        let used = CodeRecord { grant: Some("g1".into()), ..code() };
        let second = error(used, exchange(), 0);
        assert_eq!((second.error.error.as_str(), second.revoke.as_deref()), ("invalid_grant", Some("g1")));
    }

    #[test]
    fn refresh_tokens_rotate_and_reuse_revokes() {
        let grant = Grant::start("g1".into(), &code(), "h1".into(), 1000, 10_000);
        assert_eq!((grant.expires_ms, grant.principal.id.as_str()), (11_000, "user:alice"));
        assert_eq!(grant.refresh("h1", "c1", None, 2000), Ok(()));
        assert_eq!(grant.refresh("h1", "c1", Some("https://mcp.test/mcp"), 2000), Ok(()));
        let reuse = grant.refresh("h0", "c1", None, 2000).unwrap_err();
        assert_eq!((reuse.error.error.as_str(), reuse.revoke.as_deref()), ("invalid_grant", Some("g1")));
        assert_eq!(grant.refresh("h1", "c2", None, 2000).unwrap_err().revoke, None);
        assert_eq!(grant.refresh("h1", "c1", None, 11_000).unwrap_err().error.description, "the grant has expired; sign in again");
        assert_eq!(grant.refresh("h1", "c1", Some("https://x.test/mcp"), 2000).unwrap_err().error.error, "invalid_target");
        let revoked = Grant { revoked: true, ..grant };
        assert_eq!(revoked.refresh("h1", "c1", None, 2000).unwrap_err().error.description, "the grant was revoked; sign in again");
    }
}
