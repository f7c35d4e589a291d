//! The SSRF guard: which upstream hosts a tool may reach. Private, loopback, link-local and
//! metadata addresses are refused unless the server lists the host for local development.
//!
//! Hosts are read by the one WHATWG parser (`crate::weburl`), as workerd reads them: `2130706433`,
//! `0x7f.1` and `0177.0.0.1` all mean 127.0.0.1, and spellings that IDNA would map to another
//! host (`１２７.０.０.１`, `127。0。0。1`, soft hyphens) are refused before they are read. A
//! Worker cannot resolve DNS itself, so a name that resolves to a private address is not caught
//! here (production Workers cannot fetch those anyway).

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::weburl::{listed, Host, WebUrl};

/// Parses `url` and checks its host against the guard; `allowed` holds hosts (`127.0.0.1`,
/// `localhost`, `*.corp.example`) that may be private, compared parsed. The URL comes back as
/// the parser serialized it: the fetch must use that, so the runtime connects to the host that
/// was checked. The error says why, for the tool result.
pub fn check(url: &str, allowed: &[String]) -> Result<WebUrl, String> {
    let parsed = WebUrl::parse(url).map_err(|why| format!("the upstream URL is refused: {why}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("the upstream URL is not http(s) but {}:", parsed.scheme()));
    }
    let Some(host) = parsed.host() else { return Err("the upstream URL has no host".into()) };
    if listed(allowed, host) {
        return Ok(parsed);
    }
    match classify(host) {
        Some(why) => Err(format!("the upstream host {host} is {why}; list it in the server's privateUpstreams to allow it")),
        None => Ok(parsed),
    }
}

/// Why a host may not be fetched, or `None` when it is a public address or an ordinary name.
fn classify(host: Host<'_>) -> Option<&'static str> {
    match host {
        Host::V4(ip) => classify_v4(ip),
        Host::V6(ip) => classify_v6(ip),
        Host::Domain(name) => {
            let name = name.strip_suffix('.').unwrap_or(name);
            // Names a resolver on the machine answers with loopback (RFC 6761, /etc/hosts).
            if matches!(name, "localhost" | "localhost.localdomain" | "ip6-localhost" | "ip6-loopback") || name.ends_with(".localhost") {
                return Some("a loopback name");
            }
            if name == "metadata.google.internal" || name == "metadata" {
                return Some("a cloud metadata endpoint");
            }
            None
        }
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    match (a, b) {
        (127, _) => Some("a loopback address"),
        (10, _) | (192, 168) => Some("a private address"),
        (172, 16..=31) => Some("a private address"),
        (100, 64..=127) => Some("a shared (carrier-grade NAT) address"),
        (169, 254) => Some("a link-local or metadata address"),
        (0, _) => Some("an unspecified address"),
        (198, 18..=19) => Some("a benchmarking address"),
        (224..=255, _) => Some("a multicast or reserved address"),
        _ => None,
    }
}

fn classify_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let segments = ip.segments();
    let first = segments.first().copied().unwrap_or(0);
    match first {
        _ if ip.is_loopback() => Some("a loopback address"),
        _ if ip.is_unspecified() => Some("an unspecified address"),
        0xfc00..=0xfdff => Some("a unique local (private) address"),
        0xfe80..=0xfebf => Some("a link-local address"),
        0xfec0..=0xfeff => Some("a site-local address"),
        0xff00..=0xffff => Some("a multicast address"),
        // NAT64 (64:ff9b::/96) and IPv4-compatible (::a.b.c.d) addresses embed an IPv4 one.
        0x0064 if segments.get(1) == Some(&0xff9b) => embedded_v4(&ip).and_then(classify_v4),
        0 if segments.iter().take(6).all(|s| *s == 0) => embedded_v4(&ip).and_then(classify_v4),
        _ => None,
    }
}

fn embedded_v4(ip: &Ipv6Addr) -> Option<Ipv4Addr> {
    let o = ip.octets();
    Some(Ipv4Addr::new(*o.get(12)?, *o.get(13)?, *o.get(14)?, *o.get(15)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str) -> bool {
        check(url, &[]).is_err()
    }

    #[test]
    fn private_loopback_link_local_and_metadata_are_refused() {
        for url in [
            "http://10.1.2.3/", "http://172.16.0.1/", "http://172.31.255.255/", "http://192.168.1.1:8080/x", "http://127.0.0.1/",
            "http://127.1.2.3/", "http://169.254.169.254/latest/meta-data", "http://0.0.0.0/", "http://100.64.0.1/",
            "http://localhost:8787/", "http://api.localhost/", "http://LOCALHOST./", "http://metadata.google.internal/",
            "http://[::1]/", "http://[::]/", "http://[fc00::1]/", "http://[fd12:3456::1]/", "http://[fe80::1%25eth0]/", "http://[fe80::1]/",
            "http://[::ffff:127.0.0.1]/", "http://[::ffff:a9fe:a9fe]/", "http://[64:ff9b::10.0.0.1]/", "http://[::10.0.0.1]/",
            // Encoded forms a URL parser turns into loopback or metadata addresses.
            "http://2130706433/", "http://0x7f000001/", "http://0x7f.1/", "http://0177.0.0.1/", "http://127.1/", "http://%31%32%37.0.0.1/",
            "http://2852039166/", "http://user:pw@10.0.0.1/", "http://[::ffff:7f00:1]/", "http://[::127.0.0.1]/", "http://localhost.localdomain/",
        ] {
            assert!(refused(url), "{url} was allowed");
        }
    }

    #[test]
    fn spellings_that_idna_maps_to_loopback_are_refused() {
        // Each of these reaches 127.0.0.1 in workerd, which maps them under IDNA.
        for url in ["http://１２７.０.０.１/", "http://127。0。0。1/", "http://127．0．0．1/", "http://127｡0｡0｡1/", "http://127.0.0.1\u{ad}/", "http://127.0.0.1%C2%AD/", "http://loc\u{ad}alhost/", "http://%EF%BC%91%EF%BC%92%EF%BC%97.0.0.1/", "http://127.0.0.1\u{200b}/"] {
            assert!(check(url, &[]).unwrap_err().contains("non-ASCII"), "{url}");
            assert!(check(url, &["127.0.0.1".into(), "localhost".into()]).is_err(), "{url}: refused even where 127.0.0.1 is listed");
        }
        assert!(check("https://evil.example\\@api.example.com/", &[]).unwrap_err().contains("backslash"));
        assert!(check("file:///etc/passwd", &[]).is_err() && check("gopher://127.0.0.1/", &[]).is_err());
    }

    #[test]
    fn public_hosts_pass_and_come_back_normalized() {
        for url in ["https://api.example.com/", "https://8.8.8.8/", "http://172.32.0.1/", "http://[2606:4700::1111]/", "https://127.0.0.1.nip.io/", "https://0x7g.example/"] {
            assert!(check(url, &[]).is_ok(), "{url}");
        }
        assert_eq!(check("HTTPS://API.Example.com:443/a/../b?x", &[]).unwrap().as_str(), "https://api.example.com/b?x");
        assert!(check("http://1.2.3.4.5/", &[]).unwrap_err().contains("not a valid URL"));
    }

    #[test]
    fn the_allowlist_opens_listed_hosts_compared_parsed() {
        let allowed = vec!["127.0.0.1".to_string(), "localhost".to_string(), "*.corp.test".to_string(), "[::1]".to_string(), "10.0.0.5".to_string()];
        let passes = |url: &str| check(url, &allowed).is_ok();
        assert!(passes("http://127.0.0.1:8788/echo") && passes("http://localhost:9/") && passes("http://[::1]:9/") && passes("http://db.corp.test/"));
        assert!(passes("http://corp.test.evil/"), "a public name");
        assert!(!passes("http://10.0.0.1/"));
        // The same host in another spelling is the same host.
        assert!(passes("http://2130706433/") && passes("http://0x7f.1/") && passes("http://[0:0:0:0:0:0:0:1]/") && passes("http://10.5/"));
        assert!(!passes("http://127.0.0.2/"), "127.0.0.1 opens that address, not the range");
        assert_eq!(
            check("http://169.254.169.254/", &[]).unwrap_err(),
            "the upstream host 169.254.169.254 is a link-local or metadata address; list it in the server's privateUpstreams to allow it"
        );
        assert_eq!(
            check("http://0xa9fea9fe/", &[]).unwrap_err(),
            "the upstream host 169.254.169.254 is a link-local or metadata address; list it in the server's privateUpstreams to allow it",
            "the host is named as parsed"
        );
    }
}
