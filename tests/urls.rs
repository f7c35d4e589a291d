//! The URL parser every security decision reads with (`mcp_edge::weburl`), against the WHATWG
//! URL test data (web-platform-tests' `urltestdata.json`, as the `url` crate ships it) and
//! against a corpus of hostile spellings of a loopback listener (`tests/hostile-urls.json`,
//! which `tests/e2e/urls.test.mjs` drives through workerd too).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::net::Ipv4Addr;
use std::path::PathBuf;

use mcp_edge::oauth::uri;
use mcp_edge::upstream::address;
use mcp_edge::upstream::retry::RedirectPolicy;
use mcp_edge::weburl::{Host, WebUrl};
use serde_json::Value;

/// `urltestdata.json` in the `url` crate's source, found in cargo's registry by the version
/// Cargo.lock pins (the file is not copied into this repository). Not through `cargo metadata`:
/// offline, that needs every platform's packages in the cache, which a fresh machine that only
/// built for this one does not have.
fn whatwg_test_data() -> Value {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock")).expect("Cargo.lock");
    let version = lock.split("[[package]]").find(|p| p.contains("\nname = \"url\"\n")).and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \""))).map(|v| v.trim_end_matches('"')).expect("the url crate is a dependency");
    let home = std::env::var_os("CARGO_HOME").map_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"), PathBuf::from);
    let registries = std::fs::read_dir(home.join("registry").join("src")).expect("cargo's registry sources");
    let file = registries.filter_map(Result::ok).map(|r| r.path().join(format!("url-{version}")).join("tests").join("urltestdata.json")).find(|f| f.exists()).expect("the url crate ships tests/urltestdata.json");
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// What our refusal rules say when they refuse a URL WHATWG accepts: each is a reason of ours,
/// never an accident.
const OUR_REASONS: &[&str] = &["backslash", "control character", "non-ASCII", "spaces around it", "contains a space", "not an absolute URL", "has no host"];

#[test]
fn the_parser_agrees_with_the_whatwg_test_data_or_refuses() {
    let data = whatwg_test_data();
    let (mut agreed, mut refused, mut failures_refused, mut network, mut unvalidated) = (0, 0, 0, 0, 0);
    for case in data.as_array().unwrap().iter().filter(|c| c.is_object()) {
        let input = case["input"].as_str().unwrap();
        let parsed = match case["base"].as_str() {
            None => WebUrl::parse(input),
            Some(base) => WebUrl::parse(base).and_then(|b| b.join(input)),
        };
        let failure = case["failure"].as_bool() == Some(true);
        let protocol = case["protocol"].as_str().unwrap_or_default();
        let network_scheme = matches!(protocol, "http:" | "https:" | "ws:" | "wss:");
        match parsed {
            // Without Unicode tables (idna_adapter 1.0.0), an `xn--` label is checked only as
            // Punycode: one that decodes to text UTS 46 refuses is read here, and refused by
            // workerd, so nothing is fetched. Every other refusal is WHATWG's as well.
            Ok(url) if failure => {
                assert!(url.host().is_some_and(|h| h.to_string().split('.').any(|l| l.starts_with("xn--"))), "{case}: WHATWG refuses it, we read {}", url.as_str());
                unvalidated += 1;
            }
            Ok(url) => {
                // file: URLs are no decision of ours, and the url crate lists its known
                // differences there.
                if protocol == "file:" {
                    continue;
                }
                assert_eq!(url.as_str(), case["href"].as_str().unwrap(), "{case}");
                assert_eq!(format!("{}:", url.scheme()), protocol, "{case}");
                if network_scheme {
                    network += 1;
                    assert_eq!(url.host().map(|h| h.to_string()).unwrap_or_default(), case["hostname"].as_str().unwrap(), "{case}");
                    assert_eq!(url.port().map(|p| p.to_string()).unwrap_or_default(), case["port"].as_str().unwrap(), "{case}");
                    if let Some(origin) = case["origin"].as_str() {
                        assert_eq!(url.origin(), origin, "{case}");
                    }
                }
                agreed += 1;
            }
            Err(why) if failure => {
                let _ = why;
                failures_refused += 1;
            }
            Err(why) => {
                if network_scheme {
                    assert!(OUR_REASONS.iter().any(|r| why.contains(r)), "{case}: a valid URL refused for no reason of ours: {why}");
                }
                refused += 1;
            }
        }
    }
    // The data has hundreds of cases (with the url crate 2.5.8: 338 read alike, 176 of them
    // http(s) or ws(s); 138 valid ones refused by our rules; 272 failures refused).
    println!("WHATWG test data: {agreed} read alike ({network} network schemes), {refused} valid ones refused by our rules, {failures_refused} failures refused, {unvalidated} xn-- labels read that UTS 46 refuses");
    assert!(agreed > 300 && network > 150 && failures_refused > 250, "agreed {agreed}, network {network}, refused {refused}, failures {failures_refused}");
}

fn hostile_corpus() -> Vec<(String, String, bool)> {
    let doc: Value = serde_json::from_str(include_str!("hostile-urls.json")).unwrap();
    doc["spellings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["url"].as_str().unwrap().replace("PORT", "8788"), s["what"].as_str().unwrap().to_string(), s["same"].as_bool().unwrap()))
        .collect()
}

const LOOPBACK: Host<'static> = Host::V4(Ipv4Addr::LOCALHOST);

#[test]
fn every_hostile_spelling_of_a_loopback_listener_is_refused_by_the_guard() {
    let corpus = hostile_corpus();
    assert!(corpus.len() > 30);
    for (url, what, same) in &corpus {
        let why = address::check(url, &[]).map(|u| u.as_str().to_string()).expect_err(&format!("{what}: {url:?} passed the guard"));
        assert!(!why.is_empty());
        // Listing 127.0.0.1 opens that host in any ASCII spelling the parser reads as it, and
        // nothing else.
        match address::check(url, &["127.0.0.1".into()]) {
            Ok(checked) => {
                assert!(same, "{what}: {url:?} passed as {}", checked.as_str());
                assert_eq!((checked.host(), checked.port_or_default()), (Some(LOOPBACK), Some(8788)), "{what}");
            }
            Err(why) => assert!(!same, "{what}: {url:?} is 127.0.0.1, which is listed: {why}"),
        }
    }
}

#[test]
fn a_url_the_guard_passes_never_has_a_private_host() {
    // Every spelling, and every WHATWG case, through the guard with nothing listed: what passes
    // has a public parsed host.
    let mut inputs: Vec<String> = hostile_corpus().into_iter().map(|(u, _, _)| u).collect();
    inputs.extend(whatwg_test_data().as_array().unwrap().iter().filter_map(|c| c["input"].as_str().map(str::to_string)));
    for input in inputs {
        if let Ok(url) = address::check(&input, &[]) {
            match url.host() {
                Some(Host::V4(ip)) => assert!(!(ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified()), "{input:?} → {ip}"),
                Some(Host::V6(ip)) => assert!(!(ip.is_loopback() || ip.is_unspecified() || ip.to_ipv4_mapped().is_some()), "{input:?} → {ip}"),
                Some(Host::Domain(d)) => assert!(!d.trim_end_matches('.').ends_with("localhost"), "{input:?} → {d}"),
                None => panic!("{input:?} passed without a host"),
            }
        }
    }
}

#[test]
fn redirects_to_hostile_spellings_stay_on_the_parsed_origin() {
    let policy = RedirectPolicy { max: 3, hosts: vec![] };
    let first = "http://127.0.0.1:8788/start";
    for (url, what, same) in hostile_corpus() {
        match policy.target(first, first, &url) {
            // Followed only when it is the same origin as parsed: the same host and port.
            Ok(next) => {
                let next = WebUrl::parse(&next).unwrap();
                assert!(same, "{what}: {url:?} followed to {}", next.as_str());
                assert!(next.same_origin(&WebUrl::parse(first).unwrap()), "{what}");
            }
            Err(why) => assert!(why.contains("refused") || why.contains("not allowed") || why.contains("not an http(s) URL"), "{what}: {why}"),
        }
    }
    // The finding: a backslash that an authority-ends-at-slash reading took for user info.
    let api = "https://api.example.com/v1";
    assert!(policy.target(api, api, "https://evil.example\\@api.example.com/").unwrap_err().contains("backslash"));
    assert!(policy.target(api, api, "http://a\\b@c/").is_err());
    assert!(policy.target(api, api, "https://api.example.com@evil.example/").unwrap_err().contains("\"evil.example\" is not allowed"));
    assert!(policy.target(api, api, "https://evil.example#@api.example.com/").unwrap_err().contains("\"evil.example\" is not allowed"));
}

#[test]
fn redirect_uris_show_and_match_the_host_the_browser_goes_to() {
    for (url, what, _) in hostile_corpus() {
        let cb = format!("{}cb", url);
        match uri::refuse_registration(&cb) {
            None => {
                // Registered: a loopback host as parsed, shown as parsed.
                let parsed = WebUrl::parse(&cb).unwrap();
                assert!(uri::is_loopback(parsed.host().unwrap()), "{what}: {cb:?}");
                assert_eq!(uri::display_host(&cb), parsed.host_and_port().unwrap(), "{what}");
            }
            Some(why) => assert!(!why.is_empty()),
        }
    }
    for bad in ["http://evil.example\\claude.ai/cb", "https://evil.example\\claude.ai/cb", "http://127.attacker.example/cb", "https://claude.ai\t.evil.example/cb"] {
        assert!(uri::refuse_registration(bad).is_some(), "{bad:?}");
    }
}

#[test]
fn generic_hostile_spellings() {
    let host = |u: &str| WebUrl::parse(u).map(|u| u.host().map(|h| h.to_string()).unwrap_or_default());
    assert_eq!(host("http://api.example.com@evil/").unwrap(), "evil");
    assert_eq!(host("http://evil#@api.example.com/").unwrap(), "evil");
    assert_eq!(host("HTTP://API.EXAMPLE.COM./").unwrap(), "api.example.com.");
    assert_eq!(host("https://xn--mnchen-3ya.de/").unwrap(), "xn--mnchen-3ya.de");
    for refused in ["https://evil.example\\@api.example.com/", "http://a\\b@c/", "https://ＡＰＩ.example.com/", "https://münchen.de/", "https://api.exa\tmple.com/", "https://api.example.com\n/"] {
        assert!(host(refused).is_err(), "{refused:?}");
    }
    assert!(WebUrl::parse("https://münchen.de/").unwrap_err().contains("punycode"), "the error says how to write it");
}
