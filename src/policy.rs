//! Edge policy as pure functions of a request: Origin allowlists and the CORS headers that follow.

/// One allowed browser origin: `*`, or `scheme://host[:port]` where the port may be `*` and the
/// host may start with `*.`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginPattern {
    Any,
    Exact { scheme: String, host: String, port: PortRule },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortRule {
    Default,
    Any,
    Is(u16),
}

/// Loopback origins, allowed when a server configures none (with the server's own origin).
pub const DEFAULT_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

impl OriginPattern {
    pub fn parse(source: &str) -> Result<OriginPattern, String> {
        if source == "*" {
            return Ok(OriginPattern::Any);
        }
        let (scheme, host, port) = split_origin(source).ok_or_else(|| format!("{source:?} is not an origin like https://example.com:8443"))?;
        let port = match port {
            None => PortRule::Default,
            Some("*") => PortRule::Any,
            Some(p) => PortRule::Is(p.parse().map_err(|_| format!("bad port in {source:?}"))?),
        };
        Ok(OriginPattern::Exact { scheme: scheme.to_string(), host: host.to_ascii_lowercase(), port })
    }

    pub fn allows(&self, origin: &str) -> bool {
        let OriginPattern::Exact { scheme, host, port } = self else { return true };
        let Some((o_scheme, o_host, o_port)) = split_origin(origin) else { return false };
        let o_host = o_host.to_ascii_lowercase();
        let host_ok = match host.strip_prefix("*.") {
            Some(suffix) => o_host.len() > suffix.len() + 1 && o_host.ends_with(&format!(".{suffix}")),
            None => *host == o_host,
        };
        let port_ok = match port {
            PortRule::Any => true,
            PortRule::Default => o_port.is_none(),
            PortRule::Is(p) => o_port.and_then(|x| x.parse::<u16>().ok()) == Some(*p),
        };
        scheme.eq_ignore_ascii_case(o_scheme) && host_ok && port_ok
    }
}

/// Splits `scheme://host[:port]`; brackets keep an IPv6 host whole. No path is allowed.
fn split_origin(origin: &str) -> Option<(&str, &str, Option<&str>)> {
    let (scheme, rest) = origin.split_once("://")?;
    if scheme.is_empty() || rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return None;
    }
    let (host, port) = if rest.starts_with('[') {
        let close = rest.find(']')?;
        let (host, tail) = rest.split_at(close + 1);
        match tail {
            "" => (host, None),
            t => (host, Some(t.strip_prefix(':')?)),
        }
    } else {
        match rest.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (rest, None),
        }
    };
    (!host.is_empty()).then_some((scheme, host, port))
}

/// Whether an address is loopback: 127.0.0.0/8 or ::1.
pub fn is_loopback_ip(ip: &str) -> bool {
    ip == "::1" || ip.strip_prefix("127.").is_some_and(|rest| rest.split('.').count() == 3)
}

/// The host name of a `Host` header value, without the port, lower-cased.
fn host_name(host: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    if host.starts_with('[') {
        return host.split(']').next().map(|h| format!("{h}]")).unwrap_or(host);
    }
    host.split(':').next().unwrap_or("").to_string()
}

/// DNS rebinding defence for local servers. A request that reached us over loopback (so the
/// server runs on this machine: `wrangler dev`, Miniflare) must name a loopback host or a
/// configured one. In production Cloudflare routes by hostname and no client is loopback, so
/// `wrangler deploy` needs no configuration.
pub fn host_allowed(host: Option<&str>, client_ip: Option<&str>, allowed_hosts: &[String]) -> bool {
    if !client_ip.is_none_or(is_loopback_ip) {
        return true;
    }
    let Some(host) = host else { return false };
    let name = host_name(host);
    matches!(name.as_str(), "localhost" | "127.0.0.1" | "[::1]") || allowed_hosts.iter().any(|h| h.eq_ignore_ascii_case(&name))
}

/// What the Origin check decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginDecision {
    /// No `Origin` header: a server-to-server call (n8n, SDKs on Node). CORS does not apply.
    NotBrowser,
    /// Echo this origin in `Access-Control-Allow-Origin`.
    Allowed(String),
    Forbidden(String),
}

/// Checks a request's `Origin` against the allowlist; `own_origin` is the server's own origin.
pub fn check_origin(origin: Option<&str>, allowed: &[OriginPattern], own_origin: &str) -> OriginDecision {
    match origin {
        None => OriginDecision::NotBrowser,
        Some(o) if o.eq_ignore_ascii_case(own_origin) || allowed.iter().any(|p| p.allows(o)) => {
            OriginDecision::Allowed(o.to_string())
        }
        Some(o) => OriginDecision::Forbidden(o.to_string()),
    }
}

pub const ALLOW_METHODS: &str = "GET, POST, DELETE, OPTIONS";
pub const ALLOW_HEADERS: &str = "content-type, accept, authorization, mcp-session-id, mcp-protocol-version, last-event-id";
pub const EXPOSE_HEADERS: &str = "Mcp-Session-Id, Mcp-Protocol-Version";
pub const PREFLIGHT_MAX_AGE: &str = "86400";

/// Headers every response to an allowed browser origin carries.
pub fn cors_headers(decision: &OriginDecision) -> Vec<(&'static str, String)> {
    match decision {
        OriginDecision::Allowed(origin) => vec![
            ("Access-Control-Allow-Origin", origin.clone()),
            ("Access-Control-Expose-Headers", EXPOSE_HEADERS.into()),
            ("Vary", "Origin".into()),
        ],
        _ => Vec::new(),
    }
}

/// Headers of the answer to an `OPTIONS` preflight.
pub fn preflight_headers(decision: &OriginDecision) -> Vec<(&'static str, String)> {
    let mut headers = cors_headers(decision);
    headers.extend([
        ("Access-Control-Allow-Methods", ALLOW_METHODS.into()),
        ("Access-Control-Allow-Headers", ALLOW_HEADERS.into()),
        ("Access-Control-Max-Age", PREFLIGHT_MAX_AGE.into()),
    ]);
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Vec<OriginPattern> {
        DEFAULT_ORIGINS.iter().map(|o| OriginPattern::parse(o).unwrap()).collect()
    }

    #[test]
    fn loopback_and_own_origin_by_default() {
        let own = "https://mcp.example.com";
        let d = |o: Option<&str>| check_origin(o, &defaults(), own);
        assert_eq!(d(None), OriginDecision::NotBrowser);
        assert_eq!(d(Some("http://localhost:3000")), OriginDecision::Allowed("http://localhost:3000".into()));
        assert_eq!(d(Some("http://127.0.0.1:5678")), OriginDecision::Allowed("http://127.0.0.1:5678".into()));
        assert_eq!(d(Some("http://[::1]:80")), OriginDecision::Allowed("http://[::1]:80".into()));
        assert_eq!(d(Some("http://localhost")), OriginDecision::Allowed("http://localhost".into()));
        assert_eq!(d(Some("https://localhost:3000")), OriginDecision::Forbidden("https://localhost:3000".into()));
        assert_eq!(d(Some(own)), OriginDecision::Allowed(own.into()));
        assert_eq!(d(Some("https://evil.example")), OriginDecision::Forbidden("https://evil.example".into()));
        assert_eq!(d(Some("http://localhost.evil.com:80")), OriginDecision::Forbidden("http://localhost.evil.com:80".into()));
        assert_eq!(d(Some("null")), OriginDecision::Forbidden("null".into()));
    }

    #[test]
    fn configured_patterns() {
        let p = OriginPattern::parse("https://*.example.com").unwrap();
        assert!(p.allows("https://app.example.com"));
        assert!(!p.allows("https://example.com"));
        assert!(!p.allows("https://app.example.com:8443"));
        assert!(!p.allows("http://app.example.com"));
        assert!(OriginPattern::parse("*").unwrap().allows("https://anything.test"));
        assert!(OriginPattern::parse("https://a.test:8443").unwrap().allows("https://A.test:8443"));
        assert!(OriginPattern::parse("https://a.test/path").is_err());
        assert!(OriginPattern::parse("a.test").is_err());
        assert!(OriginPattern::parse("https://a.test:x").is_err());
    }

    #[test]
    fn host_check_applies_to_loopback_clients_only() {
        let none: Vec<String> = Vec::new();
        assert!(host_allowed(Some("localhost:8787"), Some("127.0.0.1"), &none));
        assert!(host_allowed(Some("127.0.0.1:8787"), Some("127.0.0.1"), &none));
        assert!(host_allowed(Some("[::1]:8787"), Some("::1"), &none));
        assert!(host_allowed(Some("LOCALHOST"), Some("127.0.0.5"), &none));
        assert!(!host_allowed(Some("evil.example.com"), Some("127.0.0.1"), &none));
        assert!(!host_allowed(Some("localhost.evil.com:80"), Some("127.0.0.1"), &none));
        assert!(!host_allowed(None, Some("127.0.0.1"), &none));
        assert!(!host_allowed(Some("evil.example.com"), None, &none));
        assert!(host_allowed(Some("mcp.internal:8787"), Some("127.0.0.1"), &["mcp.internal".to_string()]));
        // Production: the client is never loopback, and Cloudflare has routed by hostname.
        assert!(host_allowed(Some("my-worker.example.workers.dev"), Some("203.0.113.9"), &none));
        assert!(host_allowed(Some("anything"), Some("2001:db8::1"), &none));
        assert!(!is_loopback_ip("127.0.0"));
        assert!(!is_loopback_ip("128.0.0.1"));
    }

    #[test]
    fn preflight() {
        let h = preflight_headers(&OriginDecision::Allowed("http://localhost:1".into()));
        assert!(h.contains(&("Access-Control-Allow-Origin", "http://localhost:1".into())));
        assert!(h.contains(&("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS".into())));
        assert!(h.contains(&("Access-Control-Allow-Headers", ALLOW_HEADERS.into())));
        assert!(h.contains(&("Access-Control-Max-Age", "86400".into())));
        // Without Origin there is no CORS to answer, only the method list.
        assert!(!preflight_headers(&OriginDecision::NotBrowser).iter().any(|(k, _)| *k == "Access-Control-Allow-Origin"));
    }
}
