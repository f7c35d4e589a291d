//! URLs as the WHATWG URL Standard parses them, for every security decision: the SSRF guard,
//! redirects, redirect URIs, `resource`, token audiences, metadata documents, identity providers
//! and callbacks.
//!
//! workerd reads a URL with a WHATWG parser, so a decision made on any other reading can be
//! made about a different host than the one the runtime connects to: `evil.example\@api.test`
//! is `evil.example` to WHATWG and `api.test` to RFC 3986; `１２７.０.０.１` is 127.0.0.1 after
//! IDNA mapping. This module is the one reading: it wraps the `url` crate (a WHATWG parser) and
//! compares parsed hosts, never strings. It refuses outright what parsers disagree on or map
//! silently: an authority with a `\`, a control character (tab, newline, CR, …), a space, or
//! a non-ASCII character as written or once percent-decoded. Whoever fetches a URL fetches the
//! serialization this module made of it ([`WebUrl::as_str`]), so the runtime connects to the
//! host that was checked.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// An absolute URL that passed the refusal rules, as the WHATWG URL Standard parses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebUrl(url::Url);

/// A parsed host. Domains are ASCII and lowercase (punycode for international names);
/// IP addresses are numbers, whatever spelling (`2130706433`, `0x7f.1`, `[::ffff:7f00:1]`) the
/// URL used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host<'a> {
    Domain(&'a str),
    V4(Ipv4Addr),
    V6(Ipv6Addr),
}

impl fmt::Display for Host<'_> {
    /// As a URL spells it: IPv6 in brackets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Domain(d) => f.write_str(d),
            Host::V4(ip) => write!(f, "{ip}"),
            Host::V6(ip) => write!(f, "[{ip}]"),
        }
    }
}

impl Host<'_> {
    /// A domain without its one trailing dot (`localhost.` names `localhost`); the same host
    /// for allowlists and the guard, though WHATWG keeps the two apart as origins.
    fn bare_domain(&self) -> Option<&str> {
        match self {
            Host::Domain(d) => Some(d.strip_suffix('.').unwrap_or(d)),
            _ => None,
        }
    }
}

fn host_of(host: url::Host<&str>) -> Host<'_> {
    match host {
        url::Host::Domain(d) => Host::Domain(d),
        url::Host::Ipv4(ip) => Host::V4(ip),
        url::Host::Ipv6(ip) => Host::V6(ip),
    }
}

impl WebUrl {
    /// Parses an absolute URL (`scheme://authority/…`, or `scheme:path` for a scheme without
    /// an authority, such as a native app's `com.example.app:/cb`). The error says what is
    /// wrong and how to write it instead.
    pub fn parse(input: &str) -> Result<WebUrl, String> {
        refuse_controls(input)?;
        let Some((scheme, rest)) = split_scheme(input) else {
            return Err(format!("{} is not an absolute URL: write scheme://host/path", shown(input)));
        };
        match authority_of(rest) {
            // `https:///evil.test` is evil.test to a WHATWG parser, and has no host to RFC 3986.
            Authority::Written("") if is_special(scheme) && !scheme.eq_ignore_ascii_case("file") => return Err(format!("{} has no host", shown(input))),
            Authority::Written(authority) => check_authority(authority)?,
            Authority::Backslashed => return Err(backslash(input)),
            // Special schemes (http, https, ws, wss, ftp, file) always have an authority, and a
            // WHATWG parser invents one for `http:evil.test` or `http:/evil.test`.
            Authority::None if is_special(scheme) => return Err(format!("{} is not an absolute URL: write {}://host/path", shown(input), scheme.to_ascii_lowercase())),
            Authority::None => {}
        }
        let url = url::Url::parse(input).map_err(|e| format!("{} is not a valid URL: {e}", shown(input)))?;
        if is_special(url.scheme()) && url.scheme() != "file" && url.host().is_none() {
            return Err(format!("{} has no host", shown(input)));
        }
        Ok(WebUrl(url))
    }

    /// Resolves a reference (a redirect's `Location`, a legacy endpoint) against this URL, under
    /// the same refusal rules: `//host/…` and absolute references name their authority plainly,
    /// or are refused.
    pub fn join(&self, reference: &str) -> Result<WebUrl, String> {
        refuse_controls(reference)?;
        if split_scheme(reference).is_some() {
            return WebUrl::parse(reference);
        }
        match authority_of(reference) {
            Authority::Written("") => return Err(format!("{} has no host", shown(reference))),
            Authority::Written(authority) => check_authority(authority)?,
            Authority::Backslashed => return Err(backslash(reference)),
            Authority::None => {}
        }
        let url = self.0.join(reference).map_err(|e| format!("{} is not a valid URL reference: {e}", shown(reference)))?;
        Ok(WebUrl(url))
    }

    /// `path` on `origin`, for a URL this server hands out on its own origin (a callback URL,
    /// its `/oauth/callback` redirect URI, a resource): `origin` must be exactly an http(s)
    /// origin as a serializer spells it (`scheme://host[:port]`, what the runtime's request URL
    /// starts with), and `path` an absolute path that stays on it.
    pub fn on_origin(origin: &str, path: &str) -> Result<WebUrl, String> {
        let base = WebUrl::parse(origin)?;
        if !matches!(base.scheme(), "http" | "https") || base.origin() != origin {
            return Err(format!("{} is not an http(s) origin", shown(origin)));
        }
        if !path.starts_with('/') {
            return Err(format!("{} is not an absolute path", shown(path)));
        }
        let url = base.join(path)?;
        if !url.same_origin(&base) {
            return Err(format!("{} leaves the origin {origin}", shown(path)));
        }
        Ok(url)
    }

    /// The URL as the parser serialized it: what a fetch must be given.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Lowercase, without the `:`.
    pub fn scheme(&self) -> &str {
        self.0.scheme()
    }

    pub fn host(&self) -> Option<Host<'_>> {
        self.0.host().map(host_of)
    }

    /// The port written in the URL, unless it is the scheme's default.
    pub fn port(&self) -> Option<u16> {
        self.0.port()
    }

    /// The port a connection goes to: the written one or the scheme's default.
    pub fn port_or_default(&self) -> Option<u16> {
        self.0.port_or_known_default()
    }

    /// `scheme://host[:port]` in ASCII, as `Origin` headers and resource identifiers spell it;
    /// `null` for a scheme without a tuple origin.
    pub fn origin(&self) -> String {
        self.0.origin().ascii_serialization()
    }

    /// The same scheme, host and port, both with a tuple origin (a scheme such as
    /// `cursor:` has an opaque origin, never the same as another's).
    pub fn same_origin(&self, other: &WebUrl) -> bool {
        let (a, b) = (self.0.origin(), other.0.origin());
        a.is_tuple() && a == b
    }

    /// `host[:port]`, the port only when it is not the scheme's default: what a person
    /// recognises (`claude.ai`, `127.0.0.1:33418`).
    pub fn host_and_port(&self) -> Option<String> {
        let host = self.host()?;
        Some(match self.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        })
    }

    /// The path, percent-encoded and with `.` and `..` segments resolved.
    pub fn path(&self) -> &str {
        self.0.path()
    }

    pub fn query(&self) -> Option<&str> {
        self.0.query()
    }

    pub fn fragment(&self) -> Option<&str> {
        self.0.fragment()
    }

    /// Whether the URL carries a user name or password.
    pub fn has_credentials(&self) -> bool {
        !self.0.username().is_empty() || self.0.password().is_some()
    }
}

/// A host as a configuration lists it (`privateUpstreams`, `oauth.privateHosts`): one host,
/// compared parsed (`127.0.0.1` is also `2130706433`), or `*.suffix` for every name under a
/// domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    Exact(url::Host<String>),
    Under(String),
}

impl HostPattern {
    pub fn parse(text: &str) -> Result<HostPattern, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("a host cannot be empty".into());
        }
        refuse_controls(text)?;
        check_authority(text)?;
        if let Some(suffix) = text.strip_prefix("*.") {
            return match url::Host::parse(suffix) {
                Ok(url::Host::Domain(d)) => Ok(HostPattern::Under(d.trim_end_matches('.').to_string())),
                _ => Err(format!("{text:?}: a wildcard needs a domain after \"*.\"")),
            };
        }
        // A bare IPv6 address, as people write it, is the bracketed host.
        if let Ok(v6) = text.parse::<Ipv6Addr>() {
            return Ok(HostPattern::Exact(url::Host::Ipv6(v6)));
        }
        url::Host::parse(text).map(HostPattern::Exact).map_err(|_| format!("{text:?} is not a host: write the host alone (no scheme, port or path), or *.domain"))
    }

    pub fn matches(&self, host: Host<'_>) -> bool {
        match (self, host) {
            (HostPattern::Exact(url::Host::Ipv4(a)), Host::V4(b)) => *a == b,
            (HostPattern::Exact(url::Host::Ipv6(a)), Host::V6(b)) => *a == b,
            (HostPattern::Exact(url::Host::Domain(a)), Host::Domain(_)) => host.bare_domain() == Some(a.trim_end_matches('.')),
            (HostPattern::Under(suffix), Host::Domain(_)) => host.bare_domain().and_then(|d| d.strip_suffix(suffix.as_str())).is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            _ => false,
        }
    }
}

/// Whether `host` is one of `patterns`; an entry that is not a host matches nothing (the
/// configuration check reports it).
pub fn listed(patterns: &[String], host: Host<'_>) -> bool {
    patterns.iter().any(|p| HostPattern::parse(p).is_ok_and(|p| p.matches(host)))
}

/// Where the authority of a URL, or of a reference, is.
enum Authority<'a> {
    /// After `//`, up to the first `/`, `?` or `#`: the extent RFC 3986 gives it, so a `\`
    /// that WHATWG would end the authority at is seen inside it.
    Written(&'a str),
    /// `\\`, `/\` or `\/` where `//` would start an authority: WHATWG reads each as `//`.
    Backslashed,
    None,
}

fn authority_of(rest: &str) -> Authority<'_> {
    let mut start = rest.chars();
    match (start.next(), start.next()) {
        (Some('/'), Some('/')) => {
            let after = rest.get(2..).unwrap_or_default();
            Authority::Written(after.split(['/', '?', '#']).next().unwrap_or_default())
        }
        (Some('/' | '\\'), Some('/' | '\\')) | (Some('\\'), _) => Authority::Backslashed,
        _ => Authority::None,
    }
}

/// The scheme and what follows its `:`, when `input` starts with one (RFC 3986: a letter,
/// then letters, digits, `+`, `-`, `.`).
fn split_scheme(input: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = input.split_once(':')?;
    let valid = scheme.starts_with(|c: char| c.is_ascii_alphabetic()) && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some((scheme, rest))
}

fn is_special(scheme: &str) -> bool {
    ["http", "https", "ws", "wss", "ftp", "file"].iter().any(|s| s.eq_ignore_ascii_case(scheme))
}

/// Control characters anywhere (a WHATWG parser drops tabs and newlines silently, and trims
/// the rest from the ends), and spaces at either end.
fn refuse_controls(input: &str) -> Result<(), String> {
    if input.chars().any(|c| c.is_ascii_control()) {
        return Err(format!("{} contains a control character (a tab, newline or the like), which URL parsers drop silently; remove it", shown(input)));
    }
    if input.starts_with(' ') || input.ends_with(' ') {
        return Err(format!("{} has spaces around it; remove them", shown(input)));
    }
    Ok(())
}

/// The refusal rules of an authority (user info, host and port) as written.
fn check_authority(authority: &str) -> Result<(), String> {
    if authority.contains('\\') {
        return Err(backslash(authority));
    }
    if authority.contains(' ') {
        return Err(format!("the host part {} contains a space", shown(authority)));
    }
    let decoded = percent_decoded(authority);
    if !authority.is_ascii() || !decoded.is_ascii() {
        let how = if authority.is_ascii() { " once percent-decoded" } else { "" };
        return Err(format!(
            "the host part {} has non-ASCII characters{how}, which IDNA maps to other hosts; write the host in its ASCII form (punycode, xn--…, for an international name)",
            shown(authority)
        ));
    }
    if decoded.iter().any(|b| b.is_ascii_control() || *b == b' ' || *b == b'\\') {
        return Err(format!("the host part {} contains a control character, a space or a backslash once percent-decoded", shown(authority)));
    }
    check_punycode(&decoded)
}

/// `xn--` labels, checked as far as a parser without Unicode tables can. idna's back end is
/// pinned to the one with no tables (`Cargo.toml`), which validates nothing in a decoded label,
/// while idna's own checks assume that format characters were refused already (a debug
/// assertion on U+200F in its bidi check, found by the `urls` fuzz target). So a label that is
/// not Punycode, decodes to ASCII alone, or holds a control, space or invisible formatting
/// character is refused here; UTS 46 refuses each of them too, so workerd would not connect.
fn check_punycode(authority: &[u8]) -> Result<(), String> {
    let authority = String::from_utf8_lossy(authority).to_ascii_lowercase();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    if host_port.starts_with('[') {
        return Ok(());
    }
    let host = host_port.split(':').next().unwrap_or_default();
    for label in host.split('.') {
        let Some(code) = label.strip_prefix("xn--") else { continue };
        let fine = idna::punycode::decode_to_string(code).is_some_and(|text| !text.is_ascii() && !text.chars().any(invisible));
        if !fine {
            return Err(format!("the host label {label:?} is not a valid internationalized (xn--) label"));
        }
    }
    Ok(())
}

/// Controls, spaces, and the default-ignorable and bidi formatting characters.
fn invisible(c: char) -> bool {
    c.is_control()
        || c.is_whitespace()
        || matches!(c, '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}' | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}' | '\u{fff0}'..='\u{fff8}' | '\u{1bca0}'..='\u{1bca3}' | '\u{1d173}'..='\u{1d17a}' | '\u{e0000}'..='\u{e0fff}')
}

fn backslash(input: &str) -> String {
    format!("{} has a backslash where its host is, which URL parsers read as \"/\"; write the host without it", shown(input))
}

/// `%XX` escapes as bytes; a malformed one stays as written (the parser then refuses it).
fn percent_decoded(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let escaped = (b == b'%').then(|| s.get(i + 1..i + 3).and_then(|hex| u8::from_str_radix(hex, 16).ok())).flatten();
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// An input quoted for a message, cut to a readable length.
fn shown(input: &str) -> String {
    const MAX: usize = 200;
    match input.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{:?}…", input.get(..cut).unwrap_or_default()),
        None => format!("{input:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(url: &str) -> String {
        WebUrl::parse(url).unwrap().host().unwrap().to_string()
    }

    #[test]
    fn hosts_are_read_as_whatwg_reads_them() {
        assert_eq!(host("https://User@Example.COM.:8443/p?q"), "example.com.");
        assert_eq!(host("http://2130706433/"), "127.0.0.1");
        assert_eq!(host("http://0x7f.1/"), "127.0.0.1");
        assert_eq!(host("http://0177.0.0.1/"), "127.0.0.1");
        assert_eq!(host("http://127.1/"), "127.0.0.1");
        assert_eq!(host("http://%31%32%37.0.0.1/"), "127.0.0.1");
        assert_eq!(host("http://[::ffff:7f00:1]/"), "[::ffff:127.0.0.1]");
        assert_eq!(host("http://[::127.0.0.1]/"), "[::7f00:1]");
        assert_eq!(host("http://api.example.com@evil.test/"), "evil.test");
        assert_eq!(host("HTTPS://XN--MNCHEN-3YA.DE/"), "xn--mnchen-3ya.de");
        assert_eq!(WebUrl::parse("http://evil.test#@api.example.com/").unwrap().host(), Some(Host::Domain("evil.test")));
        assert!(WebUrl::parse("http://1.2.3.4.5/").is_err(), "a last label that is a number makes an IPv4 address, or nothing");
    }

    #[test]
    fn what_parsers_disagree_on_is_refused() {
        for (input, why) in [
            ("https://evil.example\\@api.example.com/", "backslash"),
            ("http://a\\b@c/", "backslash"),
            ("http:\\\\evil.test/", "backslash"),
            ("http:/evil.test/", "not an absolute URL"),
            ("http:evil.test", "not an absolute URL"),
            ("http://ev\til.test/", "control character"),
            ("http://evil.test\n/", "control character"),
            ("http://a.test/\r\n", "control character"),
            (" http://a.test/", "spaces"),
            ("http://１２７.０.０.１/", "non-ASCII"),
            ("http://127。0。0。1/", "non-ASCII"),
            ("http://127．0．0．1/", "non-ASCII"),
            ("http://127｡0｡0｡1/", "non-ASCII"),
            ("http://loc\u{ad}alhost/", "non-ASCII"),
            ("http://loc%C2%ADalhost/", "once percent-decoded"),
            ("http://local\u{200b}host/", "non-ASCII"),
            ("http://%EF%BC%91%EF%BC%92%EF%BC%97.0.0.1/", "once percent-decoded"),
            ("http://a%5Cb/", "once percent-decoded"),
            ("http://a%09b/", "once percent-decoded"),
            ("http://a b/", "space"),
            ("https:///evil.test/", "no host"),
            ("no-scheme", "not an absolute URL"),
            ("/relative", "not an absolute URL"),
        ] {
            let e = WebUrl::parse(input).unwrap_err();
            assert!(e.contains(why), "{input:?}: {e}");
        }
        assert!(WebUrl::parse("http://１２７.０.０.１/").unwrap_err().contains("punycode"));
    }

    #[test]
    fn punycode_labels_are_checked_as_far_as_no_unicode_tables_allow() {
        assert!(WebUrl::parse("https://xn--mnchen-3ya.de/").is_ok());
        assert!(WebUrl::parse("https://XN--MNCHEN-3YA.de/").is_ok());
        // What the `urls` fuzz target found: a label that decodes to U+200F (a debug assertion in
        // idna's bidi check), and others UTS 46 refuses too.
        let rlm = format!("xn--{}", idna::punycode::encode_str("a\u{200f}b").unwrap());
        let zwsp = format!("xn--{}", idna::punycode::encode_str("m\u{fc}n\u{200b}chen").unwrap());
        for host in [rlm.as_str(), zwsp.as_str(), "xn--abc-", "xn--", "xn--zz.example"] {
            let e = WebUrl::parse(&format!("https://{host}/")).unwrap_err();
            assert!(e.contains("not a valid internationalized"), "{host}: {e}");
        }
        assert!(HostPattern::parse(&rlm).is_err());
    }

    #[test]
    fn serializations_are_normalized() {
        let u = WebUrl::parse("HTTPS://API.Example.com:443/a/./b/../c?x#f").unwrap();
        assert_eq!(u.as_str(), "https://api.example.com/a/c?x#f");
        assert_eq!((u.scheme(), u.port(), u.port_or_default()), ("https", None, Some(443)));
        assert_eq!(u.origin(), "https://api.example.com");
        assert_eq!((u.path(), u.query(), u.fragment()), ("/a/c", Some("x"), Some("f")));
        let local = WebUrl::parse("http://127.0.0.1:8788/x").unwrap();
        assert_eq!((local.origin().as_str(), local.host_and_port().as_deref()), ("http://127.0.0.1:8788", Some("127.0.0.1:8788")));
        assert_eq!(WebUrl::parse("http://[::1]:80/").unwrap().as_str(), "http://[::1]/");
        let app = WebUrl::parse("com.example.app:/cb").unwrap();
        assert_eq!((app.scheme(), app.host(), app.origin().as_str()), ("com.example.app", None, "null"));
        assert!(!app.same_origin(&app), "an opaque origin is no one's");
        assert!(WebUrl::parse("https://u:p@a.test/").unwrap().has_credentials());
    }

    #[test]
    fn references_resolve_under_the_same_rules() {
        let base = WebUrl::parse("https://api.example.com/v1/items?x=1").unwrap();
        let to = |r: &str| base.join(r).map(|u| u.as_str().to_string());
        assert_eq!(to("/v2").unwrap(), "https://api.example.com/v2");
        assert_eq!(to("other?y").unwrap(), "https://api.example.com/v1/other?y");
        assert_eq!(to("?page=2").unwrap(), "https://api.example.com/v1/items?page=2");
        assert_eq!(to("//cdn.example.com/f").unwrap(), "https://cdn.example.com/f");
        assert_eq!(to("a\\b").unwrap(), "https://api.example.com/v1/a/b", "a backslash in a path is a slash, on the same origin");
        for bad in ["///evil.test/", "/\\evil.test/", "\\\\evil.test/", "\\/evil.test", "//evil.test\\@api.example.com/", "http:evil.test", "//１２７.0.0.1/", "/a\tb", "https://evil.example\\@api.example.com/"] {
            assert!(to(bad).is_err(), "{bad:?}");
        }
        assert!(base.same_origin(&base.join("/z").unwrap()));
        assert!(!base.same_origin(&base.join("http://api.example.com/").unwrap()));
        assert!(!base.same_origin(&base.join("https://api.example.com:8443/").unwrap()));
    }

    #[test]
    fn urls_on_our_own_origin() {
        let on = |origin: &str, path: &str| WebUrl::on_origin(origin, path).map(|u| u.as_str().to_string());
        assert_eq!(on("http://127.0.0.1:8787", "/callbacks/t.1").unwrap(), "http://127.0.0.1:8787/callbacks/t.1");
        assert_eq!(on("https://mcp.example.com", "/oauth/callback").unwrap(), "https://mcp.example.com/oauth/callback");
        assert_eq!(on("https://mcp.example.com", "/").unwrap(), "https://mcp.example.com/");
        for (origin, path) in [
            ("http://evil.example\\@127.0.0.1:8787", "/cb"),
            ("http://１２７.0.0.1:8787", "/cb"),
            ("http://LOCALHOST:8787", "/cb"),
            ("http://127.0.0.1:8787/x", "/cb"),
            ("http://u@127.0.0.1:8787", "/cb"),
            ("cursor://x", "/cb"),
            ("https://mcp.example.com", "//evil.example/cb"),
            ("https://mcp.example.com", "/\\evil.example/cb"),
            ("https://mcp.example.com", "cb"),
        ] {
            assert!(on(origin, path).is_err(), "{origin} {path}");
        }
    }

    #[test]
    fn host_patterns_compare_parsed_hosts() {
        let v4 = |s: &str| WebUrl::parse(s).unwrap();
        let list = |patterns: &[&str], url: &str| listed(&patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>(), v4(url).host().unwrap());
        assert!(list(&["127.0.0.1"], "http://2130706433/"));
        assert!(list(&["127.0.0.1"], "http://0x7f.1:9/"));
        assert!(list(&["LOCALHOST"], "http://localhost./"));
        assert!(list(&["[::1]"], "http://[0:0::1]/"));
        assert!(list(&["::1"], "http://[::1]/"));
        assert!(list(&["*.corp.test"], "http://db.corp.test/"));
        assert!(list(&["*.corp.test"], "http://a.b.corp.test/"));
        assert!(!list(&["*.corp.test"], "http://corp.test/"));
        assert!(!list(&["*.corp.test"], "http://evilcorp.test/"));
        assert!(!list(&["*.corp.test"], "http://corp.test.evil/"));
        assert!(!list(&["127.0.0.1"], "http://127.0.0.2/"));
        assert!(!list(&["127.0.0.1"], "http://127.0.0.1.nip.io/"));
        assert!(!list(&["localhost:8788", "http://localhost/"], "http://localhost/"), "an entry that is not a host matches nothing");
        for bad in ["", "localhost:8788", "http://localhost", "a/b", "*.127.0.0.1", "１２７.0.0.1", "a\\b", "a@b"] {
            assert!(HostPattern::parse(bad).is_err(), "{bad:?}");
        }
    }
}
