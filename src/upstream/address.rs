//! The SSRF guard: which upstream hosts a tool may reach. Private, loopback, link-local and
//! metadata addresses are refused unless the server lists the host for local development.
//!
//! IP literals are read the way a URL parser reads them (WHATWG): `2130706433`, `0x7f.1` and
//! `0177.0.0.1` all mean 127.0.0.1. A Worker cannot resolve DNS itself, so a name that resolves
//! to a private address is not caught here (production Workers cannot fetch those anyway).

use std::net::{Ipv4Addr, Ipv6Addr};

/// Checks the host of `url` against the guard; `allowed` holds hosts (`127.0.0.1`, `localhost`,
/// `*.corp.example`) that may be private. The error says why, for the tool result.
pub fn check(url: &str, allowed: &[String]) -> Result<(), String> {
    let Some(host) = host_of(url) else { return Err(format!("{url:?} has no host")) };
    if allowed.iter().any(|a| matches_host(a, &host)) {
        return Ok(());
    }
    match classify(&host) {
        Some(why) => Err(format!("the upstream host {host} is {why}; list it in the server's privateUpstreams to allow it")),
        None => Ok(()),
    }
}

fn matches_host(pattern: &str, host: &str) -> bool {
    let pattern = pattern.to_ascii_lowercase();
    let pattern = pattern.trim_start_matches('[').trim_end_matches(']');
    match pattern.strip_prefix("*.") {
        Some(suffix) => host.len() > suffix.len() && host.ends_with(suffix) && host.as_bytes().get(host.len() - suffix.len() - 1) == Some(&b'.'),
        None => host.trim_start_matches('[').trim_end_matches(']') == pattern,
    }
}

/// The host of an http(s) URL, percent-decoded and lowercased, without a trailing dot.
pub fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#', '\\']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host_port.starts_with('[') {
        host_port.split_inclusive(']').next()?
    } else {
        host_port.rsplit_once(':').map_or(host_port, |(h, _)| h)
    };
    let host = crate::head::percent_decode(host)?.to_ascii_lowercase();
    let host = host.strip_suffix('.').unwrap_or(&host).to_string();
    (!host.is_empty()).then_some(host)
}

/// Why a host may not be fetched, or `None` when it is a public address or an ordinary name.
fn classify(host: &str) -> Option<&'static str> {
    if host == "localhost" || host.ends_with(".localhost") {
        return Some("a loopback name");
    }
    if host == "metadata.google.internal" || host == "metadata" {
        return Some("a cloud metadata endpoint");
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        let v6: Ipv6Addr = inner.split('%').next()?.parse().ok()?;
        return classify_v6(v6);
    }
    classify_v4(parse_ipv4(host)?)
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

/// The WHATWG URL IPv4 parser: one to four dot-separated numbers, each decimal, `0x` hex or
/// `0`-prefixed octal, the last filling the remaining bytes. `None`: the host is a name.
fn parse_ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let numbers: Vec<u64> = parts.iter().map(|p| parse_number(p)).collect::<Option<_>>()?;
    let (last, init) = numbers.split_last()?;
    if init.iter().any(|n| *n > 255) {
        return None;
    }
    let shift = 8 * (4 - init.len() as u32 - 1);
    if *last >= 1u64 << (shift + 8) {
        return None;
    }
    let mut value = *last;
    for (i, n) in init.iter().enumerate() {
        value |= n << (8 * (3 - i as u32));
    }
    u32::try_from(value).ok().map(Ipv4Addr::from)
}

fn parse_number(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) = if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
        (hex, 16)
    } else if part.len() > 1 && part.starts_with('0') {
        (part.get(1..).unwrap_or(""), 8)
    } else {
        (part, 10)
    };
    if digits.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(digits, radix).ok().filter(|n| *n <= u64::from(u32::MAX))
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
            "http://[::1]/", "http://[::]/", "http://[fc00::1]/", "http://[fd12:3456::1]/", "http://[fe80::1%25eth0]/",
            "http://[::ffff:127.0.0.1]/", "http://[::ffff:a9fe:a9fe]/", "http://[64:ff9b::10.0.0.1]/", "http://[::10.0.0.1]/",
            // Encoded forms a URL parser turns into loopback or metadata addresses.
            "http://2130706433/", "http://0x7f000001/", "http://0x7f.1/", "http://0177.0.0.1/", "http://127.1/", "http://%31%32%37.0.0.1/",
            "http://2852039166/", "http://user:pw@10.0.0.1/",
        ] {
            assert!(refused(url), "{url} was allowed");
        }
    }

    #[test]
    fn public_hosts_pass() {
        for url in ["https://api.example.com/", "https://8.8.8.8/", "http://172.32.0.1/", "http://[2606:4700::1111]/", "https://127.0.0.1.nip.io/", "https://0x7g.example/", "http://1.2.3.4.5/"] {
            assert_eq!(check(url, &[]), Ok(()), "{url}");
        }
    }

    #[test]
    fn the_allowlist_opens_named_hosts_for_local_development() {
        let allowed = vec!["127.0.0.1".to_string(), "localhost".to_string(), "*.corp.test".to_string(), "[::1]".to_string()];
        assert_eq!(check("http://127.0.0.1:8788/echo", &allowed), Ok(()));
        assert_eq!(check("http://localhost:9/", &allowed), Ok(()));
        assert_eq!(check("http://[::1]:9/", &allowed), Ok(()));
        assert_eq!(check("http://db.corp.test/", &allowed), Ok(()));
        assert!(check("http://corp.test.evil/", &allowed).is_ok(), "a public name");
        assert!(check("http://10.0.0.1/", &allowed).is_err());
        assert!(check("http://2130706433/", &allowed).is_err(), "only the host as listed is opened");
        assert_eq!(
            check("http://169.254.169.254/", &[]).unwrap_err(),
            "the upstream host 169.254.169.254 is a link-local or metadata address; list it in the server's privateUpstreams to allow it"
        );
    }

    #[test]
    fn hosts_are_read_like_a_url_parser_reads_them() {
        assert_eq!(host_of("https://User@Example.COM.:8443/p?q").as_deref(), Some("example.com"));
        assert_eq!(host_of("http://[::1]:80/").as_deref(), Some("[::1]"));
        assert_eq!(parse_ipv4("0x7f.1"), Some(Ipv4Addr::new(127, 0, 0, 1)));
        assert_eq!(parse_ipv4("10.1"), Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(parse_ipv4("256.1.1.1"), None);
        assert_eq!(parse_ipv4("example"), None);
    }
}
