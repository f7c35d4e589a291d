//! Redirect URIs: which a client may register (RFC 9700 §2.1, RFC 8252 §7), when a presented one
//! matches a registered one (exactly, except a loopback port, RFC 8252 §7.3), and the redirect
//! that carries an answer back. Every decision reads the URI with the one WHATWG parser
//! (`crate::weburl`), the way the browser that follows the redirect reads it.

use crate::weburl::{Host, WebUrl};

/// Loopback hosts, as parsed: `localhost`, 127.0.0.0/8 and `[::1]`. Their redirects may vary
/// the port (native apps pick a free one). A name such as `127.attacker.example` is a domain.
pub fn is_loopback(host: Host<'_>) -> bool {
    match host {
        Host::Domain(name) => name.strip_suffix('.').unwrap_or(name) == "localhost",
        Host::V4(ip) => ip.is_loopback(),
        Host::V6(ip) => ip.is_loopback(),
    }
}

/// A redirect URI read: absolute, without a fragment or user info; `Err` says why not.
pub fn read(uri: &str) -> Result<WebUrl, String> {
    if uri.chars().any(char::is_whitespace) {
        return Err(format!("{uri:?} contains whitespace"));
    }
    let url = WebUrl::parse(uri).map_err(|why| format!("{uri:?} cannot be a redirect URI: {why}"))?;
    if url.fragment().is_some() || uri.contains('#') {
        return Err(format!("{uri:?} has a fragment, which a redirect URI may not"));
    }
    if url.has_credentials() {
        return Err(format!("{uri:?} carries user info, which a redirect URI may not"));
    }
    Ok(url)
}

/// Why a URI may not be registered as a redirect URI, if it may not.
pub fn refuse_registration(uri: &str) -> Option<String> {
    let url = match read(uri) {
        Ok(url) => url,
        Err(why) => return Some(why),
    };
    match (url.scheme(), url.host()) {
        ("https", Some(_)) => None,
        ("http", Some(host)) if is_loopback(host) => None,
        ("http", _) => Some(format!("{uri:?}: http is allowed only for loopback hosts; use https")),
        // Schemes that would run or reveal something in the browser itself.
        ("javascript" | "data" | "vbscript" | "file" | "about" | "blob" | "https", _) => Some(format!("{uri:?} cannot be a redirect URI")),
        // A private-use scheme of a native app (RFC 8252 §7.1: reverse domain names), such as
        // `cursor://` or `com.example.app:/callback`.
        _ => None,
    }
}

/// Whether a registrable redirect URI fits a `web` client (OpenID Connect Dynamic Client
/// Registration §2, SEP-837): https on a host that is not the user's own machine. Loopback
/// http and private-use schemes are a `native` app's.
pub fn fits_web(uri: &str) -> bool {
    read(uri).is_ok_and(|url| url.scheme() == "https" && url.host().is_some_and(|h| !is_loopback(h)))
}

/// Whether a presented redirect URI is one of the registered ones: the same string, except that
/// a loopback `http` URI may name any port. A URI registration would refuse now never matches,
/// whatever was stored before.
pub fn matches(registered: &[String], presented: &str) -> bool {
    if refuse_registration(presented).is_some() {
        return false;
    }
    registered.iter().any(|r| r == presented || same_but_loopback_port(r, presented))
}

/// Both `http` on the same loopback host (parsed), with the same path and query.
fn same_but_loopback_port(registered: &str, presented: &str) -> bool {
    let (Ok(a), Ok(b)) = (read(registered), read(presented)) else { return false };
    let loopback = |u: &WebUrl| u.scheme() == "http" && u.host().is_some_and(is_loopback);
    loopback(&a) && loopback(&b) && a.host() == b.host() && a.path() == b.path() && a.query() == b.query()
}

/// `uri` with `params` appended to its query.
pub fn with_params(uri: &str, params: &[(&str, &str)]) -> String {
    let mut out = uri.to_string();
    let mut separator = if uri.contains('?') { '&' } else { '?' };
    for (name, value) in params {
        out.push(separator);
        out.push_str(name);
        out.push('=');
        out.push_str(&super::encode(value));
        separator = '&';
    }
    out
}

/// The host a person recognises on the consent page, as parsed (`claude.ai`,
/// `127.0.0.1:33418`), or the scheme of a native app (`com.example.app:`).
pub fn display_host(uri: &str) -> String {
    match read(uri) {
        Ok(url) => url.host_and_port().unwrap_or_else(|| format!("{}:", url.scheme())),
        Err(_) => "an address that is not a valid URL".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_a_parsed_host() {
        let host = |u: &str| is_loopback(WebUrl::parse(u).unwrap().host().unwrap());
        assert!(host("http://127.0.0.1:3000/") && host("http://127.1/") && host("http://localhost/") && host("http://[::1]/") && host("http://2130706433/"));
        assert!(!host("http://127.attacker.example/"), "a domain that starts with 127.");
        assert!(!host("http://127.0.0.1.nip.io/") && !host("http://localhost.evil.example/") && !host("http://[::2]/"));
        assert!(refuse_registration("http://127.attacker.example/cb").unwrap().contains("only for loopback"));
    }

    #[test]
    fn registrable_redirects() {
        for ok in ["https://claude.ai/api/mcp/auth_callback", "http://127.0.0.1:3000/cb", "http://localhost/cb", "http://[::1]/cb", "cursor://anysphere.cursor-retrieval/oauth/callback", "com.example.app:/cb"] {
            assert_eq!(refuse_registration(ok), None, "{ok}");
        }
        for bad in ["http://example.com/cb", "javascript:alert(1)", "data:text/html,x", "https:/nohost", "https://a.test/cb#x", "file:///etc/passwd", "https://user@evil.test/cb", "https://a.test/c b", "/relative", "https://a.test:x/cb"] {
            assert!(refuse_registration(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn a_redirect_uri_whose_host_parsers_disagree_on_cannot_be_registered() {
        // The browser goes to evil.example (WHATWG ends the host at `\`); the page would have
        // shown claude.ai.
        for bad in ["http://evil.example\\claude.ai/cb", "https://evil.example\\claude.ai/cb", "https://evil.example\\@claude.ai/cb", "https://claude.ai\t/cb", "https://ｃｌａｕｄｅ.ai/cb", "http://１２７.０.０.１/cb", "https:\\\\evil.example/cb"] {
            assert!(refuse_registration(bad).is_some(), "{bad:?}");
            assert!(!matches(&[bad.to_string()], bad), "{bad:?}: never matches, even if stored before");
        }
    }

    #[test]
    fn redirects_match_exactly_except_loopback_ports() {
        let registered = vec!["https://app.test/cb".to_string(), "http://127.0.0.1:3000/callback".to_string()];
        assert!(matches(&registered, "https://app.test/cb"));
        assert!(!matches(&registered, "https://app.test/cb/"));
        assert!(!matches(&registered, "https://app.test/cb?x=1"));
        assert!(!matches(&registered, "https://APP.test/cb"));
        assert!(!matches(&registered, "https://app.test:8443/cb"));
        assert!(matches(&registered, "http://127.0.0.1:51234/callback"));
        assert!(matches(&registered, "http://127.0.0.1/callback"));
        assert!(!matches(&registered, "http://127.0.0.1:51234/other"));
        assert!(!matches(&registered, "http://localhost:51234/callback"));
        assert!(!matches(&["https://app.test:3000/cb".to_string()], "https://app.test:3001/cb"));
        assert!(matches(&["http://localhost/cb".to_string()], "http://localhost:4000/cb"));
        assert!(!matches(&["http://127.0.0.1/cb".to_string()], "http://127.attacker.example/cb"));
    }

    #[test]
    fn redirects_carry_encoded_params() {
        assert_eq!(with_params("https://a.test/cb", &[("code", "c1"), ("state", "a b&c")]), "https://a.test/cb?code=c1&state=a%20b%26c");
        assert_eq!(with_params("https://a.test/cb?x=1", &[("error", "access_denied")]), "https://a.test/cb?x=1&error=access_denied");
        assert_eq!(display_host("https://claude.ai/api/cb"), "claude.ai");
        assert_eq!(display_host("http://127.0.0.1:5/cb"), "127.0.0.1:5");
        assert_eq!(display_host("cursor://x/cb"), "x");
        assert_eq!(display_host("com.example.app:/cb"), "com.example.app:");
        assert_eq!(display_host("https://Claude.AI:443/cb"), "claude.ai", "the host as parsed");
        assert_eq!(display_host("https://evil.example\\claude.ai/cb"), "an address that is not a valid URL");

    }
}
