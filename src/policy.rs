//! Edge policy as pure functions of a request: Origin allowlists and the CORS headers that follow.

use crate::weburl::Host;

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

/// The ports Cloudflare's edge proxies HTTP and HTTPS on: a `Host` with any other explicit port
/// reached the Worker some other way, such as a local `wrangler dev`.
const EDGE_PORTS: [u16; 13] = [80, 8080, 8880, 2052, 2082, 2086, 2095, 443, 2053, 2083, 2087, 2096, 8443];

/// Whether a request came through Cloudflare's edge, where `CF-Connecting-IP` is the client's
/// address (Cloudflare sets it, whatever the client sent) and Cloudflare has routed by
/// hostname. Locally anyone can send that header, and `request.cf` proves nothing either:
/// Miniflare fills it in (a fallback, or the developer's own real one). So: never when the
/// launcher said the run is local (`local`: the `MCP_EDGE_LOCAL` var, which `npm start`,
/// `mcp-edge dev` and the tests set), never with a loopback or missing client address, and
/// never through a port the edge does not proxy (a browser always sends the port it connected
/// to, `rebind.example:8787`, and a page's script cannot change `Host`).
pub fn at_edge(local: bool, client_ip: Option<&str>, host: Option<&str>) -> bool {
    // The default port (80, as `http://` reads it) is proxied too. The Host is parsed last: a
    // local run decides without it, on every request (issue 45).
    !local
        && client_ip.is_some_and(|ip| !ip.is_empty() && !is_loopback_ip(ip))
        && host.and_then(authority).is_some_and(|url| url.port().is_none_or(|p| EDGE_PORTS.contains(&p)))
}

/// A `Host` value as the one URL parser reads an authority, with nothing else in it:
/// `127.0.0.1:8787\@evil.example` is no authority, not 127.0.0.1.
fn authority(host: &str) -> Option<crate::weburl::WebUrl> {
    LAST_AUTHORITY.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((_, url)) = last.as_ref().filter(|(seen, _)| seen == host) {
            return url.clone();
        }
        let url = crate::weburl::WebUrl::parse(&format!("http://{host}/")).ok();
        let url = url.filter(|u| !u.has_credentials() && u.path() == "/" && u.query().is_none() && u.fragment().is_none());
        *last = Some((host.to_string(), url.clone()));
        url
    })
}

thread_local! {
    /// The last `Host` value read, and what it read as. A deployment is called by one or a few
    /// names, and every request has both the edge check and the Host check read it: parsing
    /// it anew each time was about 1 % of a plain call (issue 45).
    static LAST_AUTHORITY: std::cell::RefCell<Option<(String, Option<crate::weburl::WebUrl>)>> = const { std::cell::RefCell::new(None) };
}

/// DNS rebinding defence. Off the edge (`wrangler dev`, Miniflare, any local run) a request
/// must name a loopback host or a configured one: a rebinding page's requests name the
/// attacker's host. At Cloudflare's edge the hostname routed the request here, so
/// `wrangler deploy` needs no configuration.
pub fn host_allowed(host: Option<&str>, at_edge: bool, allowed_hosts: &[String]) -> bool {
    if at_edge {
        return true;
    }
    let Some(url) = host.and_then(authority) else { return false };
    let Some(parsed) = url.host() else { return false };
    let loopback = match parsed {
        Host::V4(ip) => ip == std::net::Ipv4Addr::LOCALHOST,
        Host::V6(ip) => ip.is_loopback(),
        Host::Domain(name) => name.trim_end_matches('.') == "localhost",
    };
    loopback || crate::weburl::listed(allowed_hosts, parsed)
}

/// The address requests are counted by: the client's at the edge; off it, where any client can
/// claim any address, one address for all.
pub fn client_address(at_edge: bool, client_ip: Option<&str>) -> String {
    match (at_edge, client_ip) {
        (true, Some(ip)) => ip.to_ascii_lowercase(),
        _ => "local".to_string(),
    }
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
// `WWW-Authenticate` too: a browser client reads `resource_metadata` and `scope` from a 401 (MCP
// authorization, "Protected Resource Metadata Discovery"), which it cannot unless exposed.
pub const EXPOSE_HEADERS: &str = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate";
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
    fn host_check_applies_off_the_edge() {
        let none: Vec<String> = Vec::new();
        for local in ["localhost:8787", "127.0.0.1:8787", "[::1]:8787", "LOCALHOST"] {
            assert!(host_allowed(Some(local), false, &none), "{local}");
        }
        assert!(!host_allowed(Some("evil.example.com"), false, &none));
        assert!(!host_allowed(Some("localhost.evil.com:80"), false, &none));
        // Read as the URL parser reads an authority: nothing else in it passes.
        for tricky in ["127.0.0.1:8787\\@evil.example", "127.0.0.1:8787@evil.example", "evil.example#@127.0.0.1", "127.0.0.1/x", "127.0.0.1:8787 evil", "127.0.0.1.evil.example"] {
            assert!(!host_allowed(Some(tricky), false, &none), "{tricky}");
        }
        assert!(host_allowed(Some("[::1]:8787"), false, &none));
        assert!(!host_allowed(None, false, &none));
        assert!(host_allowed(Some("mcp.internal:8787"), false, &["mcp.internal".to_string()]));
        // At the edge, Cloudflare has routed by hostname.
        assert!(host_allowed(Some("my-worker.example.workers.dev"), true, &none));
        assert!(!is_loopback_ip("127.0.0"));
        assert!(!is_loopback_ip("128.0.0.1"));
    }

    #[test]
    fn the_last_host_read_is_never_another_hosts_answer() {
        // The memo of the last `Host` read: each value, asked again and in turn with others,
        // reads as it did alone.
        let none: Vec<String> = Vec::new();
        for _ in 0..2 {
            for (host, allowed) in [("127.0.0.1:8787", true), ("127.0.0.1:8787\\@evil.example", false), ("127.0.0.1:8787", true), ("evil.example", false), ("evil.example", false), ("localhost", true), ("", false)] {
                assert_eq!(host_allowed(Some(host), false, &none), allowed, "{host}");
            }
        }
        assert!(host_allowed(Some("mcp.internal"), false, &["mcp.internal".to_string()]));
        assert!(!host_allowed(Some("mcp.internal"), false, &none));
    }

    #[test]
    fn only_the_edge_is_trusted_with_the_client_address() {
        // Production: a real address, a hostname with no port or a proxied one.
        assert!(at_edge(false, Some("203.0.113.9"), Some("my-worker.example.workers.dev")));
        assert!(at_edge(false, Some("2001:db8::1"), Some("mcp.example.com:8443")));
        // A rebinding page on a local server: its Host carries the local port, and the header it
        // sent proves nothing.
        assert!(!at_edge(false, Some("203.0.113.7"), Some("rebind.evil:8787")));
        assert!(!at_edge(false, Some("203.0.113.7"), Some("[::1]:8787")));
        // The launcher says the run is local: whatever the port.
        assert!(!at_edge(true, Some("203.0.113.7"), Some("rebind.evil")));
        // No address, or loopback: a local client.
        assert!(!at_edge(false, None, Some("mcp.example.com")));
        assert!(!at_edge(false, Some(""), Some("mcp.example.com")));
        assert!(!at_edge(false, Some("127.0.0.1"), Some("mcp.example.com")));
        assert!(!at_edge(false, Some("203.0.113.7"), None));
        assert!(!at_edge(false, Some("203.0.113.7"), Some("h:notaport")));
        assert_eq!(client_address(true, Some("2001:DB8::1")), "2001:db8::1");
        assert_eq!(client_address(false, Some("203.0.113.7")), "local");
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
