//! The OAuth client's requests and the answers it reads: the authorization URL (PKCE S256,
//! state, RFC 8707 resource, extra parameters), the token endpoint's forms (code, refresh) and
//! RFC 7009 revocation, each with the client authenticated as configured, and a token
//! endpoint's answer: a token (RFC 6749 §5.1) or its error (§5.2).

use serde_json::Value;

use super::{text, AuthMethod, Provider, Token};
use crate::oauth::encode;

/// A POST to a provider's endpoint: `application/x-www-form-urlencoded`, with the client's
/// `Authorization: Basic` when it authenticates so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    pub url: String,
    pub body: String,
    pub authorization: Option<String>,
}

/// The PKCE S256 challenge of `verifier` (RFC 7636 §4.2).
pub fn challenge(verifier: &str) -> String {
    use sha2::{Digest, Sha256};
    crate::base64::encode_url(&Sha256::digest(verifier.as_bytes()))
}

/// The authorization request a browser is sent to; `verifier`: PKCE's, when the connection
/// uses it.
pub fn authorize_url(p: &Provider, redirect_uri: &str, state: &str, verifier: Option<&str>) -> String {
    let scope = p.scopes.join(" ");
    let challenge = verifier.map(challenge);
    let mut params: Vec<(&str, &str)> = vec![("response_type", "code"), ("client_id", &p.client_id), ("redirect_uri", redirect_uri), ("state", state)];
    if !scope.is_empty() {
        params.push(("scope", &scope));
    }
    if let Some(challenge) = &challenge {
        params.extend([("code_challenge", challenge.as_str()), ("code_challenge_method", "S256")]);
    }
    if let Some(resource) = &p.resource {
        params.push(("resource", resource));
    }
    params.extend(p.extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    crate::oauth::uri::with_params(&p.authorization_endpoint, &params)
}

/// The code exchanged for a token (RFC 6749 §4.1.3), with PKCE's verifier.
pub fn code_form(p: &Provider, code: &str, redirect_uri: &str, verifier: Option<&str>) -> Form {
    let mut fields = vec![("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect_uri)];
    if let Some(v) = verifier {
        fields.push(("code_verifier", v));
    }
    if let Some(resource) = &p.resource {
        fields.push(("resource", resource));
    }
    form(p, &p.token_endpoint, fields)
}

/// A refresh (RFC 6749 §6).
pub fn refresh_form(p: &Provider, refresh_token: &str) -> Form {
    let mut fields = vec![("grant_type", "refresh_token"), ("refresh_token", refresh_token)];
    if let Some(resource) = &p.resource {
        fields.push(("resource", resource));
    }
    form(p, &p.token_endpoint, fields)
}

/// A revocation (RFC 7009 §2.1): the refresh token when there is one, which ends the grant.
pub fn revoke_form(p: &Provider, token: &Token) -> Option<Form> {
    let endpoint = p.revocation_endpoint.as_deref()?;
    let (value, hint) = match &token.refresh_token {
        Some(r) => (r.as_str(), "refresh_token"),
        None => (token.access_token.as_str(), "access_token"),
    };
    Some(form(p, endpoint, vec![("token", value), ("token_type_hint", hint)]))
}

/// A form to `url` with the client authenticated as configured (RFC 6749 §2.3.1: Basic's
/// halves are form-encoded first).
pub fn form<'a>(p: &'a Provider, url: &str, mut fields: Vec<(&'a str, &'a str)>) -> Form {
    let secret = p.client_secret.as_deref().unwrap_or_default();
    let authorization = match p.auth_method {
        AuthMethod::ClientSecretBasic => Some(format!("Basic {}", crate::base64::encode(format!("{}:{}", encode(&p.client_id), encode(secret)).as_bytes()))),
        AuthMethod::ClientSecretPost => {
            fields.extend([("client_id", p.client_id.as_str()), ("client_secret", secret)]);
            None
        }
        AuthMethod::None => {
            fields.push(("client_id", &p.client_id));
            None
        }
    };
    let body = fields.iter().map(|(k, v)| format!("{k}={}", encode(v))).collect::<Vec<_>>().join("&");
    Form { url: url.to_string(), body, authorization }
}

/// A token endpoint's refusal (RFC 6749 §5.2), or an answer that is no token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenError {
    /// The OAuth error code (`invalid_grant`, …); `invalid_response` for an unreadable answer.
    pub error: String,
    pub description: Option<String>,
}

impl TokenError {
    /// The grant is gone (revoked, expired, used): the stored token is deleted.
    pub fn grant_gone(&self) -> bool {
        self.error == "invalid_grant"
    }
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.description {
            Some(d) => write!(f, "{}: {d}", self.error),
            None => f.write_str(&self.error),
        }
    }
}

/// A token endpoint's answer read: JSON (RFC 6749 §5.1), or a form (what GitHub sends unless
/// asked for JSON). An `error` member is a refusal whatever the status (GitHub answers 200).
/// `refresh_token`: the one a refresh used, kept when the answer names no new one (§6).
pub fn token_answer(status: u16, body: &[u8], now_ms: u64, refresh_token: Option<&str>) -> Result<Token, TokenError> {
    let bad = |why: &str| TokenError { error: "invalid_response".into(), description: Some(format!("{why} (HTTP {status})")) };
    // What a form answers (GitHub's default) read as the JSON would be: every value a string.
    let answer: Value = match body.first() {
        Some(b'{') => serde_json::from_slice(body).map_err(|_| bad("the token endpoint's answer is not a token"))?,
        _ => Value::Object(crate::oauth::form(std::str::from_utf8(body).unwrap_or_default()).into_iter().map(|(k, v)| (k, Value::String(v))).collect()),
    };
    if let Some(error) = text(&answer, "error") {
        return Err(TokenError { error, description: text(&answer, "error_description") });
    }
    let access_token = text(&answer, "access_token").filter(|t| !t.is_empty() && (200..300).contains(&status)).ok_or_else(|| bad("the token endpoint answered no access_token"))?;
    let expires_in = answer.get("expires_in").and_then(|v| v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok())));
    Ok(Token {
        access_token,
        refresh_token: text(&answer, "refresh_token").or_else(|| refresh_token.map(str::to_string)),
        expires_at_ms: expires_in.map(|s| now_ms.saturating_add(s.saturating_mul(1000))),
        scope: text(&answer, "scope"),
        token_type: text(&answer, "token_type").unwrap_or_else(|| "Bearer".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(method: AuthMethod) -> Provider {
        Provider {
            authorization_endpoint: "https://p.test/authorize?tenant=a".into(),
            token_endpoint: "https://p.test/token".into(),
            revocation_endpoint: Some("https://p.test/revoke".into()),
            client_id: "cli ent".into(),
            client_secret: Some("s:e&c".into()),
            auth_method: method,
            scopes: vec!["repo".into(), "read:user".into()],
            resource: Some("https://api.test/".into()),
            extra: vec![("prompt".into(), "consent".into())],
        }
    }

    #[test]
    fn the_authorization_url_carries_pkce_state_resource_and_extras() {
        let url = authorize_url(&provider(AuthMethod::ClientSecretBasic), "https://edge.test/connections/callback", "st", Some("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"));
        assert_eq!(
            url,
            "https://p.test/authorize?tenant=a&response_type=code&client_id=cli%20ent&redirect_uri=https%3A%2F%2Fedge.test%2Fconnections%2Fcallback&state=st&scope=repo%20read%3Auser&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256&resource=https%3A%2F%2Fapi.test%2F&prompt=consent"
        );
    }

    #[test]
    fn forms_authenticate_the_client_as_configured() {
        let basic = code_form(&provider(AuthMethod::ClientSecretBasic), "c0de", "https://e.test/cb", Some("v"));
        assert_eq!(basic.body, "grant_type=authorization_code&code=c0de&redirect_uri=https%3A%2F%2Fe.test%2Fcb&code_verifier=v&resource=https%3A%2F%2Fapi.test%2F");
        assert_eq!(basic.authorization.as_deref(), Some(format!("Basic {}", crate::base64::encode(b"cli%20ent:s%3Ae%26c")).as_str()));
        let post = refresh_form(&provider(AuthMethod::ClientSecretPost), "rt");
        assert_eq!((post.body.as_str(), post.authorization), ("grant_type=refresh_token&refresh_token=rt&resource=https%3A%2F%2Fapi.test%2F&client_id=cli%20ent&client_secret=s%3Ae%26c", None));
        let token = Token { access_token: "at".into(), refresh_token: Some("rt".into()), ..Token::default() };
        let revoke = revoke_form(&provider(AuthMethod::None), &token).unwrap();
        assert_eq!((revoke.url.as_str(), revoke.body.as_str()), ("https://p.test/revoke", "token=rt&token_type_hint=refresh_token&client_id=cli%20ent"));
        assert!(revoke_form(&Provider { revocation_endpoint: None, ..provider(AuthMethod::None) }, &token).is_none());
    }

    #[test]
    fn token_answers_and_their_errors() {
        let t = token_answer(200, br#"{"access_token":"at","token_type":"bearer","expires_in":60,"scope":"repo"}"#, 1_000, Some("old")).unwrap();
        assert_eq!(t, Token { access_token: "at".into(), refresh_token: Some("old".into()), expires_at_ms: Some(61_000), scope: Some("repo".into()), token_type: "bearer".into() });
        let form = token_answer(200, b"access_token=gho_1&scope=repo&token_type=bearer", 0, None).unwrap();
        assert_eq!((form.access_token.as_str(), form.expires_at_ms), ("gho_1", None));
        let gone = token_answer(400, br#"{"error":"invalid_grant","error_description":"grant request is invalid"}"#, 0, None).unwrap_err();
        assert!(gone.grant_gone());
        assert_eq!(gone.to_string(), "invalid_grant: grant request is invalid");
        // GitHub's refusal comes with 200.
        assert_eq!(token_answer(200, b"error=bad_verification_code", 0, None).unwrap_err().error, "bad_verification_code");
        assert_eq!(token_answer(502, b"<html>", 0, None).unwrap_err().error, "invalid_response");
        assert_eq!(token_answer(500, br#"{"access_token":"x"}"#, 0, None).unwrap_err().error, "invalid_response");
    }
}
