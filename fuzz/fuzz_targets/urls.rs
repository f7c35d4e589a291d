//! The URL decisions (`weburl`, the SSRF guard, redirects, redirect URIs): any input → no panic;
//! a URL the guard passes never has a private or loopback parsed host, and its serialization
//! reads back as itself; a redirect the rules follow stays on the first URL's origin.
//! Input: a URL, then on the next line a reference or a host pattern.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_edge::oauth::uri;
use mcp_edge::upstream::address;
use mcp_edge::upstream::retry::RedirectPolicy;
use mcp_edge::weburl::{Host, HostPattern, WebUrl};

const BASE: &str = "https://api.example.com/v1/items";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (first, second) = text.split_once('\n').unwrap_or((&text, ""));

    if let Ok(url) = address::check(first, &[]) {
        match url.host() {
            Some(Host::V4(ip)) => assert!(!(ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified()), "{first:?} passed as {ip}"),
            Some(Host::V6(ip)) => {
                let mapped_private = ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_unspecified());
                assert!(!(ip.is_loopback() || ip.is_unspecified() || mapped_private || (ip.segments()[0] & 0xfe00) == 0xfc00 || (ip.segments()[0] & 0xffc0) == 0xfe80), "{first:?} passed as {ip}");
            }
            Some(Host::Domain(d)) => assert!(!(d.trim_end_matches('.') == "localhost" || d.trim_end_matches('.').ends_with(".localhost")), "{first:?} passed as {d}"),
            None => panic!("{first:?} passed without a host"),
        }
        let again = WebUrl::parse(url.as_str()).unwrap_or_else(|e| panic!("{first:?} → {}: {e}", url.as_str()));
        assert_eq!(again.as_str(), url.as_str());
    }

    let policy = RedirectPolicy { max: 1, hosts: vec!["cdn.example.com".into()] };
    if let Ok(next) = policy.target(BASE, BASE, first) {
        let next = WebUrl::parse(&next).unwrap_or_else(|e| panic!("{first:?} followed to {next}: {e}"));
        let base = WebUrl::parse(BASE).unwrap();
        assert!(next.same_origin(&base) || next.host() == Some(Host::Domain("cdn.example.com")), "{first:?} followed to {}", next.as_str());
    }

    if let Ok(url) = WebUrl::parse(first) {
        let _ = url.join(second).map(|u| u.origin());
        let _ = (url.host_and_port(), url.port_or_default(), url.path(), url.query(), url.has_credentials());
        if let (Ok(pattern), Some(host)) = (HostPattern::parse(second), url.host()) {
            let _ = pattern.matches(host);
        }
    }
    let _ = WebUrl::on_origin(first, second);
    let _ = uri::refuse_registration(first);
    let _ = uri::display_host(first);
    let _ = uri::matches(&[second.to_string()], first);
});
