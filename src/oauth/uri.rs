//! Redirect URIs: which a client may register (RFC 9700 §2.1, RFC 8252 §7), when a presented one
//! matches a registered one (exactly, except a loopback port, RFC 8252 §7.3), and the redirect
//! that carries an answer back.

/// A URI split as the redirect rules need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parts<'a> {
    pub scheme: &'a str,
    /// Empty for a private-use scheme without an authority (`com.example.app:/cb`).
    pub host: &'a str,
    pub port: Option<&'a str>,
    /// Path and query.
    pub rest: &'a str,
}

/// Splits an absolute URI; `None` when it is not one, has a fragment, or carries user info.
pub fn parts(uri: &str) -> Option<Parts<'_>> {
    if uri.contains('#') || uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let (scheme, after) = uri.split_once(':')?;
    let valid_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid_scheme {
        return None;
    }
    let Some(hierarchical) = after.strip_prefix("//") else {
        return Some(Parts { scheme, host: "", port: None, rest: after });
    };
    let end = hierarchical.find(['/', '?']).unwrap_or(hierarchical.len());
    let (authority, rest) = hierarchical.split_at(end);
    if authority.contains('@') || authority.is_empty() {
        return None;
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (inside, after) = v6.split_once(']')?;
        let host = authority.get(..inside.len() + 2)?;
        match after {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    Some(Parts { scheme, host, port, rest })
}

/// Loopback hosts: their redirects may vary the port (native apps pick a free one).
pub fn is_loopback(host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    host == "localhost" || host == "[::1]" || host.starts_with("127.")
}

/// Why a URI may not be registered as a redirect URI, if it may not.
pub fn refuse_registration(uri: &str) -> Option<String> {
    let Some(p) = parts(uri) else {
        return Some(format!("{uri:?} is not an absolute URI without a fragment"));
    };
    let scheme = p.scheme.to_ascii_lowercase();
    match scheme.as_str() {
        "https" if !p.host.is_empty() => None,
        "http" if is_loopback(p.host) => None,
        "http" => Some(format!("{uri:?}: http is allowed only for loopback hosts; use https")),
        // Schemes that would run or reveal something in the browser itself.
        "javascript" | "data" | "vbscript" | "file" | "about" | "blob" | "https" => Some(format!("{uri:?} cannot be a redirect URI")),
        // A private-use scheme of a native app (RFC 8252 §7.1: reverse domain names), such as
        // `cursor://` or `com.example.app:/callback`.
        _ => None,
    }
}

/// Whether a presented redirect URI is one of the registered ones: the same string, except that
/// a loopback `http` URI may name any port.
pub fn matches(registered: &[String], presented: &str) -> bool {
    registered.iter().any(|r| {
        if r == presented {
            return true;
        }
        match (parts(r), parts(presented)) {
            (Some(a), Some(b)) => {
                a.scheme.eq_ignore_ascii_case("http") && b.scheme.eq_ignore_ascii_case("http") && is_loopback(a.host) && a.host == b.host && a.rest == b.rest
            }
            _ => false,
        }
    })
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

/// The host a person recognises on the consent page (`claude.ai`, `127.0.0.1:33418`, or the
/// scheme of a native app).
pub fn display_host(uri: &str) -> String {
    match parts(uri) {
        Some(p) if p.host.is_empty() => format!("{}:", p.scheme),
        Some(p) => match p.port {
            Some(port) => format!("{}:{port}", p.host),
            None => p.host.to_string(),
        },
        None => uri.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_split() {
        assert_eq!(parts("https://claude.ai/api/mcp/auth_callback"), Some(Parts { scheme: "https", host: "claude.ai", port: None, rest: "/api/mcp/auth_callback" }));
        assert_eq!(parts("http://127.0.0.1:33418/cb?x=1").map(|p| (p.host, p.port, p.rest)), Some(("127.0.0.1", Some("33418"), "/cb?x=1")));
        assert_eq!(parts("http://[::1]:80/").map(|p| (p.host, p.port)), Some(("[::1]", Some("80"))));
        assert_eq!(parts("com.example.app:/oauth").map(|p| (p.scheme, p.host, p.rest)), Some(("com.example.app", "", "/oauth")));
        assert_eq!(parts("https://a.test/cb#frag"), None);
        assert_eq!(parts("https://user@evil.test/cb"), None);
        assert_eq!(parts("https://a.test:x/cb"), None);
        assert_eq!(parts("/relative"), None);
        assert_eq!(parts("https://a.test/c b"), None);
    }

    #[test]
    fn registrable_redirects() {
        for ok in ["https://claude.ai/api/mcp/auth_callback", "http://127.0.0.1:3000/cb", "http://localhost/cb", "http://[::1]/cb", "cursor://anysphere.cursor-retrieval/oauth/callback", "com.example.app:/cb"] {
            assert_eq!(refuse_registration(ok), None, "{ok}");
        }
        for bad in ["http://example.com/cb", "javascript:alert(1)", "data:text/html,x", "https:/nohost", "https://a.test/cb#x", "file:///etc/passwd"] {
            assert!(refuse_registration(bad).is_some(), "{bad}");
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
    }

    #[test]
    fn redirects_carry_encoded_params() {
        assert_eq!(with_params("https://a.test/cb", &[("code", "c1"), ("state", "a b&c")]), "https://a.test/cb?code=c1&state=a%20b%26c");
        assert_eq!(with_params("https://a.test/cb?x=1", &[("error", "access_denied")]), "https://a.test/cb?x=1&error=access_denied");
        assert_eq!(display_host("https://claude.ai/api/cb"), "claude.ai");
        assert_eq!(display_host("http://127.0.0.1:5/cb"), "127.0.0.1:5");
        assert_eq!(display_host("cursor://x/cb"), "x");
    }
}
