//! Who is signed in to the console: a sealed, HttpOnly, `SameSite=Strict` cookie naming a
//! principal, how they signed in, and until when. Pure: the edge (`edge/worker/console/`) seals,
//! opens and re-checks it (a revoked grant, a rotated admin token, a user gone from the file).
//!
//! Two ways in: the deployment's own authorization server, as its built-in first-party client
//! (`oauth::client::CONSOLE_CLIENT_ID`, PKCE, the code exchanged by the Worker itself), or the admin token pasted
//! into the page's form, for deployments without `oauth`.

use serde::{Deserialize, Serialize};

use crate::auth::Principal;
use crate::catalog::ConsoleAccess;
use crate::signing::{seal, unseal};

/// The session cookie.
pub const COOKIE: &str = "mcp_edge_console";
/// The cookie that carries a sign-in's state and PKCE verifier to its callback.
pub const LOGIN_COOKIE: &str = "mcp_edge_console_login";
/// A console sign-in lasts this long (and no longer than its grant).
pub const TTL_MS: u64 = 12 * 3600 * 1000;
/// A sign-in must come back within this.
pub const LOGIN_TTL_MS: u64 = 10 * 60 * 1000;
/// The role that sees the health figures and may change the configuration.
pub const ADMIN_ROLE: &str = "admin";
/// The principal of the admin token: one operator, with the admin role.
pub const ADMIN_TOKEN_ID: &str = "admin-token";

/// Who the admin token is: one operator, with the admin role. The admin API's versions say
/// `admin-token` made them.
pub fn admin_token_principal() -> Principal {
    Principal { id: ADMIN_TOKEN_ID.into(), ..Principal::new(ADMIN_TOKEN_ID, "operator", vec![ADMIN_ROLE.into()]) }
}

/// How a session was opened; what the edge checks again on each request.
/// (Externally tagged: serde's internally tagged enums buffer their input, and cost kilobytes of
/// module for it.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Via {
    /// The authorization server: revoking this grant (its id) ends the session.
    Grant(String),
    /// The admin token whose SHA-256 this is: a rotated token ends the session.
    AdminToken(String),
}

/// A console sign-in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub principal: Principal,
    pub via: Via,
    pub exp_ms: u64,
}

const PURPOSE: &str = "console.session";
const LOGIN_PURPOSE: &str = "console.login";

impl Session {
    pub fn seal(&self, key: &[u8]) -> String {
        seal(key, PURPOSE, serde_json::to_string(self).unwrap_or_default().as_bytes())
    }

    /// The session a cookie value carries, if this key sealed it and it has not expired.
    pub fn open(key: &[u8], sealed: &str, now_ms: u64) -> Option<Session> {
        let session: Session = serde_json::from_slice(&unseal(key, PURPOSE, sealed)?).ok()?;
        (session.exp_ms > now_ms).then_some(session)
    }

    pub fn is_admin(&self) -> bool {
        self.principal.roles.iter().any(|r| r == ADMIN_ROLE)
    }

    /// The name the page shows.
    pub fn name(&self) -> &str {
        self.principal.email.as_deref().filter(|e| !e.is_empty()).unwrap_or(if self.principal.subject.is_empty() { &self.principal.id } else { &self.principal.subject })
    }
}

/// A sign-in under way: what its callback must see again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Login {
    pub state: String,
    pub verifier: String,
    pub exp_ms: u64,
    /// Where the browser goes once signed in: a connect page that sent it here (`back`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub back: Option<String>,
}

/// Where a sign-in may send the browser back to: a path of this origin's connections' pages,
/// nothing else (no other origin, no `//host`, no `\`), so the parameter opens no redirect.
pub fn back(path: &str) -> Option<String> {
    let safe = path.starts_with(crate::paths::CONNECTIONS) && !path.contains(['\\', '\r', '\n', '#']) && !path.contains("//");
    safe.then(|| path.to_string())
}

impl Login {
    pub fn seal(&self, key: &[u8]) -> String {
        seal(key, LOGIN_PURPOSE, serde_json::to_string(self).unwrap_or_default().as_bytes())
    }

    /// The sign-in the cookie carries, if it is the one `state` names and it is not stale. The
    /// state is compared in constant time: it is what binds the callback to this browser.
    pub fn open(key: &[u8], sealed: &str, state: &str, now_ms: u64) -> Option<Login> {
        let login: Login = serde_json::from_slice(&unseal(key, LOGIN_PURPOSE, sealed)?).ok()?;
        (login.exp_ms > now_ms && crate::auth::same_secret(&login.state, state)).then_some(login)
    }
}

/// What `/` shows a viewer, by the configured access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// The page, with what this viewer may see on it.
    Page,
    /// Only the way to sign in (401).
    SignIn,
    /// Signed in, without a role that may see it (403).
    Refused,
}

pub fn seen(access: &ConsoleAccess, session: Option<&Session>) -> Seen {
    match (access, session) {
        (ConsoleAccess::SignedIn { .. }, None) => Seen::SignIn,
        (ConsoleAccess::SignedIn { roles }, Some(s)) if !(s.is_admin() || s.principal.may(roles)) => Seen::Refused,
        _ => Seen::Page,
    }
}

/// Whether a request that carries the session cookie comes from this console itself: a cookie
/// alone is ambient, so a request from anywhere else is not allowed to use it. Browsers send
/// `Sec-Fetch-Site` on every request and `Origin` on every state-changing one (`null` from a page
/// that sends no referrer); either must say this origin. (`SameSite=Strict` already keeps the
/// cookie from other sites; this also keeps it from other origins of the same site.)
pub fn from_console(origin: Option<&str>, fetch_site: Option<&str>, own_origin: &str) -> bool {
    // A page under `Referrer-Policy: no-referrer` (this one) posts its forms with `Origin: null`.
    match (origin.filter(|o| *o != "null"), fetch_site) {
        (Some(o), _) => o.eq_ignore_ascii_case(own_origin),
        (None, Some(site)) => site == "same-origin",
        (None, None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(roles: &[&str], exp_ms: u64) -> Session {
        Session { principal: Principal::new("alice", "alice", roles.iter().map(|r| r.to_string()).collect()), via: Via::Grant("g1".into()), exp_ms }
    }

    #[test]
    fn a_session_opens_only_with_its_key_and_before_it_expires() {
        let s = session(&["admin"], 2_000);
        let sealed = s.seal(b"key");
        assert_eq!(Session::open(b"key", &sealed, 1_999), Some(s.clone()));
        assert_eq!(Session::open(b"key", &sealed, 2_000), None);
        assert_eq!(Session::open(b"other", &sealed, 1_000), None);
        // A login cookie is not a session, though the same key sealed it.
        let login = Login { state: "s".repeat(20), verifier: "v".into(), exp_ms: 2_000, back: None }.seal(b"key");
        assert_eq!(Session::open(b"key", &login, 1_000), None);
        let mut forged = sealed.clone();
        forged.replace_range(0..1, if sealed.starts_with('e') { "f" } else { "e" });
        assert_eq!(Session::open(b"key", &forged, 1_000), None);
        assert!(s.is_admin() && !session(&["staff"], 1).is_admin());
    }

    #[test]
    fn a_login_needs_its_own_state() {
        let login = Login { state: "state-0123456789".into(), verifier: "verifier".into(), exp_ms: 5_000, back: None };
        let sealed = login.seal(b"key");
        assert_eq!(Login::open(b"key", &sealed, "state-0123456789", 4_999), Some(login));
        assert_eq!(Login::open(b"key", &sealed, "state-0123456780", 4_999), None);
        assert_eq!(Login::open(b"key", &sealed, "state-0123456789", 5_000), None);
    }

    #[test]
    fn access_decides_who_sees_the_page() {
        let signed_in = ConsoleAccess::SignedIn { roles: vec!["staff".into()] };
        let anyone = ConsoleAccess::SignedIn { roles: vec![] };
        assert_eq!(seen(&ConsoleAccess::Public, None), Seen::Page);
        assert_eq!(seen(&signed_in, None), Seen::SignIn);
        assert_eq!(seen(&signed_in, Some(&session(&["staff"], 1))), Seen::Page);
        assert_eq!(seen(&signed_in, Some(&session(&["admin"], 1))), Seen::Page);
        assert_eq!(seen(&signed_in, Some(&session(&["guest"], 1))), Seen::Refused);
        assert_eq!(seen(&anyone, Some(&session(&[], 1))), Seen::Page);
    }

    #[test]
    fn only_the_console_itself_may_use_the_cookie() {
        let own = "https://edge.example";
        assert!(from_console(Some("https://edge.example"), Some("same-origin"), own));
        assert!(from_console(None, Some("same-origin"), own));
        assert!(!from_console(Some("https://evil.example"), Some("cross-site"), own));
        assert!(!from_console(Some("https://other.edge.example"), Some("same-site"), own));
        assert!(!from_console(None, Some("same-site"), own));
        assert!(!from_console(None, Some("none"), own));
        assert!(!from_console(None, None, own));
        assert!(!from_console(Some("null"), None, own));
        assert!(from_console(Some("null"), Some("same-origin"), own));
        assert!(!from_console(Some("null"), Some("cross-site"), own));
    }

    #[test]
    fn a_sign_in_goes_back_only_to_a_connections_page() {
        assert_eq!(back("/connections/github/connect?state=a.b").as_deref(), Some("/connections/github/connect?state=a.b"));
        assert_eq!(back("/connections").as_deref(), Some("/connections"));
        for hostile in ["https://evil.test/connections", "//evil.test/connections", "/connections//evil.test", "/connections\\evil", "/console", "/connections/x\r\nSet-Cookie: a=b", "/connections#x"] {
            assert_eq!(back(hostile), None, "{hostile}");
        }
    }
}
