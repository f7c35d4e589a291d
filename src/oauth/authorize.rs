//! The authorization request (RFC 6749 §4.1.1 with OAuth 2.1's PKCE, RFC 8707 resources):
//! checked in the order that decides where an error may go, sealed into the consent form, and
//! answered with a redirect carrying the code or the error, the state and the issuer (RFC 9207).

use serde::{Deserialize, Serialize};

use super::client::Client;
use super::{single, uri, OAuthError};
use crate::signing::{seal, sign, signed, unseal};

/// How long the sign-in and consent page may take before its form is refused.
pub const PAGE_TTL_MS: u64 = 15 * 60 * 1000;

/// A checked authorization request: what the consent page shows and the code will carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationRequest {
    pub client_id: String,
    pub redirect_uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    pub code_challenge: String,
    /// Granted scopes: the requested ones the server offers (others are ignored, RFC 6749 §3.3).
    pub scope: Vec<String>,
    /// The MCP server the token will be for.
    pub resource: String,
    pub expires_ms: u64,
}

/// Why a request is refused, and where that is said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The client or redirect URI cannot be trusted: an error page, never a redirect (§4.1.2.1).
    Page(String),
    /// Everything else goes back to the client's redirect URI: at once for a client the
    /// operator configured; for any other, only once the person chooses to (`redirects_at_once`).
    Redirect { to: String, description: String },
}

/// Whether an error may go back to `client`'s redirect URI without the person choosing to. An
/// error answers before anyone signed in or consented, so a registered client (or a metadata
/// document's, which anyone can publish) could otherwise use this server to send a browser
/// anywhere it registered: an open redirector (RFC 9700 §4.11.2).
pub fn redirects_at_once(client: &Client) -> bool {
    matches!(client.origin, super::client::Origin::Configured)
}

/// What checking needs besides the query.
pub struct Context<'a> {
    pub issuer: &'a str,
    /// The server a `resource` names, as its canonical URL; `None`: not one of ours with OAuth.
    pub resource: &'a dyn Fn(&str) -> Option<String>,
    /// The resource when the client names none: the only OAuth server, if there is one.
    pub default_resource: Option<String>,
    pub scopes: &'a [String],
    pub now_ms: u64,
}

/// The client id a query names, before the client is looked up.
pub fn client_id(pairs: &[(String, String)]) -> Result<String, Refusal> {
    match single(pairs, "client_id") {
        Ok(Some(id)) => Ok(id.to_string()),
        Ok(None) => Err(Refusal::Page("the request names no client_id".into())),
        Err(e) => Err(Refusal::Page(e.description)),
    }
}

/// Checks an authorization request from `client` (`None`: unknown).
pub fn check(pairs: &[(String, String)], client: Option<&Client>, cx: &Context<'_>) -> Result<AuthorizationRequest, Refusal> {
    let page = |e: OAuthError| Refusal::Page(e.description);
    let Some(client) = client else { return Err(Refusal::Page("this client is not registered (or was deleted); register it again".into())) };
    let redirect_uri = single(pairs, "redirect_uri").map_err(page)?.ok_or_else(|| Refusal::Page("the request has no redirect_uri".into()))?;
    if !uri::matches(&client.redirect_uris, redirect_uri) {
        return Err(Refusal::Page(format!("{redirect_uri:?} is not a redirect URI registered for this client")));
    }
    // From here on, errors can safely go back to the client.
    let given_state = single(pairs, "state");
    let state = given_state.as_ref().ok().copied().flatten().map(str::to_string);
    let back = |error: &str, description: String| Refusal::Redirect { to: error_redirect(redirect_uri, error, &description, state.as_deref(), cx.issuer), description };
    let one = |name: &str| single(pairs, name).map_err(|e| back("invalid_request", e.description));
    given_state.map_err(|e| back("invalid_request", e.description))?;
    if state.as_ref().is_some_and(|s| s.len() > 2000) {
        return Err(back("invalid_request", "state is longer than 2000 characters".into()));
    }
    match one("response_type")? {
        Some("code") => {}
        Some(other) => return Err(back("unsupported_response_type", format!("response_type {other:?} is not supported; use code"))),
        None => return Err(back("invalid_request", "response_type is required".into())),
    }
    let code_challenge = one("code_challenge")?.ok_or_else(|| back("invalid_request", "code_challenge is required (PKCE with S256)".into()))?;
    match one("code_challenge_method")? {
        Some("S256") => {}
        Some(other) => return Err(back("invalid_request", format!("code_challenge_method {other:?} is not supported; use S256"))),
        // The default is `plain`, which this server refuses.
        None => return Err(back("invalid_request", "code_challenge_method must be S256".into())),
    }
    let challenge_ok = (43..=128).contains(&code_challenge.len()) && code_challenge.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'));
    if !challenge_ok {
        return Err(back("invalid_request", "code_challenge is not a base64url SHA-256".into()));
    }
    let resource = match one("resource")? {
        Some(r) => (cx.resource)(r).ok_or_else(|| back("invalid_target", format!("{r:?} is not an MCP server of this authorization server")))?,
        None => cx.default_resource.clone().ok_or_else(|| back("invalid_target", "resource is required: the URL of the MCP server".into()))?,
    };
    let requested = one("scope")?.unwrap_or_default();
    let scope = requested.split(' ').filter(|s| cx.scopes.iter().any(|o| o == s)).map(str::to_string).collect();
    Ok(AuthorizationRequest {
        client_id: client.client_id.clone(),
        redirect_uri: redirect_uri.to_string(),
        state,
        code_challenge: code_challenge.to_string(),
        scope,
        resource,
        expires_ms: cx.now_ms + PAGE_TTL_MS,
    })
}

/// The redirect that carries an error back to the client.
pub fn error_redirect(redirect_uri: &str, error: &str, description: &str, state: Option<&str>, issuer: &str) -> String {
    let mut params = vec![("error", error), ("error_description", description)];
    if let Some(s) = state {
        params.push(("state", s));
    }
    params.push(("iss", issuer));
    uri::with_params(redirect_uri, &params)
}

impl AuthorizationRequest {
    /// The redirect that carries the code back.
    pub fn success(&self, code: &str, issuer: &str) -> String {
        let mut params = vec![("code", code)];
        if let Some(s) = &self.state {
            params.push(("state", s));
        }
        params.push(("iss", issuer));
        uri::with_params(&self.redirect_uri, &params)
    }

    /// The redirect that says the user said no.
    pub fn denied(&self, issuer: &str) -> String {
        error_redirect(&self.redirect_uri, "access_denied", "the user did not allow access", self.state.as_deref(), issuer)
    }

    /// The request sealed for the consent form: it comes back with the POST unaltered.
    pub fn seal(&self, key: &[u8]) -> String {
        seal(key, "oauth.authorize", serde_json::to_string(self).unwrap_or_default().as_bytes())
    }

    /// A request `seal` made, while the page is still fresh.
    pub fn unseal(key: &[u8], sealed: &str, now_ms: u64) -> Option<AuthorizationRequest> {
        let request: AuthorizationRequest = serde_json::from_slice(&unseal(key, "oauth.authorize", sealed)?).ok()?;
        (request.expires_ms > now_ms).then_some(request)
    }
}

/// The form's CSRF token: bound to the browser (the random value of its CSRF cookie) and to the
/// sealed request, so that neither another browser nor another request can use it.
pub fn csrf_token(key: &[u8], cookie: &str, sealed_request: &str) -> String {
    sign(key, "oauth.csrf", &format!("{cookie}.{sealed_request}"))
}

pub fn csrf_matches(key: &[u8], cookie: Option<&str>, sealed_request: &str, token: &str) -> bool {
    cookie.is_some_and(|c| c.len() >= 16 && signed(key, "oauth.csrf", &format!("{c}.{sealed_request}"), token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::client::{AuthMethod, Origin};
    use crate::oauth::form;

    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    fn client() -> Client {
        Client { client_id: "c1".into(), name: Some("App".into()), redirect_uris: vec!["https://app.test/cb".into()], auth_method: AuthMethod::None, secret: None, origin: Origin::Configured, issued_at: 0, application_type: None }
    }

    fn check_query(query: &str) -> Result<AuthorizationRequest, Refusal> {
        let resource = |r: &str| (r == "https://mcp.test/mcp").then(|| r.to_string());
        let scopes = vec!["tools".to_string()];
        let cx = Context { issuer: "https://mcp.test", resource: &resource, default_resource: None, scopes: &scopes, now_ms: 1000 };
        check(&form(query), Some(&client()), &cx)
    }

    fn good() -> String {
        format!("response_type=code&client_id=c1&redirect_uri=https%3A%2F%2Fapp.test%2Fcb&code_challenge={CHALLENGE}&code_challenge_method=S256&state=xyz&scope=tools%20other&resource=https%3A%2F%2Fmcp.test%2Fmcp")
    }

    #[test]
    fn a_good_request_is_granted_the_offered_scopes() {
        let r = check_query(&good()).unwrap();
        assert_eq!((r.resource.as_str(), r.scope.clone(), r.state.as_deref(), r.expires_ms), ("https://mcp.test/mcp", vec!["tools".to_string()], Some("xyz"), 1000 + PAGE_TTL_MS));
        assert_eq!(r.success("abc", "https://mcp.test"), "https://app.test/cb?code=abc&state=xyz&iss=https%3A%2F%2Fmcp.test");
        assert_eq!(r.denied("https://i"), "https://app.test/cb?error=access_denied&error_description=the%20user%20did%20not%20allow%20access&state=xyz&iss=https%3A%2F%2Fi");
    }

    #[test]
    fn untrusted_redirects_get_a_page_and_the_rest_a_redirect() {
        let page = |q: String| match check_query(&q) {
            Err(Refusal::Page(why)) => why,
            other => panic!("{other:?}"),
        };
        assert!(page(good().replace("app.test%2Fcb", "evil.test%2Fcb")).contains("not a redirect URI registered"));
        assert!(page(good().replace("&redirect_uri=https%3A%2F%2Fapp.test%2Fcb", "")).contains("no redirect_uri"));
        let resource = |_: &str| None;
        let cx = Context { issuer: "i", resource: &resource, default_resource: None, scopes: &[], now_ms: 0 };
        assert!(matches!(check(&form(&good()), None, &cx), Err(Refusal::Page(_))));

        let redirect = |q: String| match check_query(&q) {
            Err(Refusal::Redirect { to, .. }) => to,
            other => panic!("{other:?}"),
        };
        assert!(redirect(good().replace("&code_challenge_method=S256", "")).starts_with("https://app.test/cb?error=invalid_request&error_description=code_challenge_method%20must%20be%20S256&state=xyz&iss=https"));
        assert!(redirect(good().replace("S256", "plain")).contains("error=invalid_request"));
        assert!(redirect(good().replace(&format!("code_challenge={CHALLENGE}&"), "")).contains("code_challenge%20is%20required"));
        assert!(redirect(good().replace(CHALLENGE, "short")).contains("error=invalid_request"));
        assert!(redirect(good().replace("response_type=code", "response_type=token")).contains("error=unsupported_response_type"));
        assert!(redirect(good().replace("mcp.test%2Fmcp", "other.test%2Fmcp")).contains("error=invalid_target"));
        assert!(redirect(good().replace("&resource=https%3A%2F%2Fmcp.test%2Fmcp", "")).contains("error=invalid_target"));
        assert!(redirect(format!("{}&state=again", good())).contains("error=invalid_request"));
    }

    #[test]
    fn sealed_requests_and_csrf_tokens() {
        let r = check_query(&good()).unwrap();
        let sealed = r.seal(b"k");
        assert_eq!(AuthorizationRequest::unseal(b"k", &sealed, 1001), Some(r.clone()));
        assert_eq!(AuthorizationRequest::unseal(b"k", &sealed, 1000 + PAGE_TTL_MS), None);
        assert_eq!(AuthorizationRequest::unseal(b"x", &sealed, 1001), None);
        let token = csrf_token(b"k", "cookie-value-0123456789", &sealed);
        assert!(csrf_matches(b"k", Some("cookie-value-0123456789"), &sealed, &token));
        assert!(!csrf_matches(b"k", Some("another-cookie-0123456789"), &sealed, &token));
        assert!(!csrf_matches(b"k", None, &sealed, &token));
        assert!(!csrf_matches(b"k", Some("cookie-value-0123456789"), &format!("{sealed}x"), &token));
    }
}
