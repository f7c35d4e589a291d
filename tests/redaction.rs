//! The redaction corpus (issue 38, finding 5): a secret in every spelling it can take, through
//! every pure exit that maps or cuts upstream text, with the cut at every offset of the spelled
//! secret.
//!
//! The rule the corpus holds, byte for byte:
//! - a whole text: each occurrence becomes `[redacted]`, and every other byte is kept;
//! - a text cut after it was read whole (an error's excerpt, a line that is not JSON): it is
//!   redacted first, then cut, so the cut shows `[redacted]` (or a part of that word), never a
//!   part of the secret;
//! - a text whose rest was never read (the reader's cap, a stream that ended): a trailing piece
//!   that could begin the secret is replaced as well once it goes past the spelling of the
//!   secret's first character, so the cut shows at most that one character (whose spelling
//!   may be `\\u0052`: the corpus knows each spelling's first character's length).
//!
//! Base64 inside a longer value is the one spelling whose edges mix the secret with other bytes:
//! there the characters that depend on the secret alone are replaced, and the corpus checks that
//! no four of them (24 bits) survive anywhere, at any cut.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::sync::Arc;

use mcp_edge::redact::{Redactor, REDACTED};
use mcp_edge::upstream::reply::{to_result, ReplyPlan, Upstream};
use mcp_edge::upstream::stream::{Event, LineReader};
use serde_json::Value;

/// 36 bytes (a multiple of 3: its base64 at the first alignment is all stable core), with the
/// characters every spelling treats specially, and one beyond ASCII.
const SECRET: &str = "Rk5/ec+t&v\"l<x>y=z:w u\\q~é-01234567";
/// A second secret of the deployment, as plain as keys come.
const OTHER: &str = "9f8e7d6c5b4a32109f8e7d6c";
/// A byte no spelling of either secret begins with: the filler around an occurrence.
const FILL: char = '.';

fn redactor() -> Redactor {
    Redactor::new([SECRET, OTHER])
}

/// The secret spelled one way, the whole spelling the occurrence; `first`: how many characters
/// of it spell the secret's first character (one for base64: a character of its core).
struct Spelling {
    name: &'static str,
    text: String,
    first: usize,
}

fn percent(bytes: &[u8], keep: impl Fn(u8) -> bool, upper: bool) -> String {
    bytes.iter().map(|&b| if keep(b) { char::from(b).to_string() } else if upper { format!("%{b:02X}") } else { format!("%{b:02x}") }).collect()
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b)
}

fn json_u(text: &str, upper: bool) -> String {
    let mut units = Vec::new();
    for c in text.chars() {
        let mut buffer = [0u16; 2];
        units.extend_from_slice(c.encode_utf16(&mut buffer));
    }
    units.iter().map(|u| if upper { format!("\\u{u:04X}") } else { format!("\\u{u:04x}") }).collect()
}

fn html_named(c: char) -> Option<&'static str> {
    Some(match c {
        '&' => "&amp;",
        '"' => "&quot;",
        '<' => "&lt;",
        '>' => "&gt;",
        '/' => "&sol;",
        '+' => "&plus;",
        '=' => "&equals;",
        ':' => "&colon;",
        '\\' => "&bsol;",
        '~' => return None,
        _ => return None,
    })
}

/// `&#NN` with the `;` left out where browsers allow it: before anything but a digit (and so
/// kept on the last, which a digit may follow).
fn html_without_semicolons(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    for (i, c) in chars.iter().enumerate() {
        let digit_next = chars.get(i + 1).is_none_or(|n| n.is_ascii_digit());
        out.push_str(&format!("&#00{}{}", u32::from(*c), if digit_next { ";" } else { "" }));
    }
    out
}

/// A text as a JSON string holds it, `levels` deep: a JSON text inside a JSON string is escaped
/// again, every backslash doubled.
fn escaped(text: &str, levels: usize) -> String {
    (0..levels).fold(text.to_string(), |text, _| {
        let json = serde_json::to_string(&text).unwrap();
        json[1..json.len() - 1].to_string()
    })
}

/// How a text is spelled.
type Spell = fn(&str) -> String;

/// Every spelling whose whole text is the occurrence.
fn clean_spellings() -> Vec<Spelling> {
    assert_eq!(SECRET.len() % 3, 0);
    let spellings: [(&str, Spell); 19] = [
        ("as written", |s| s.to_string()),
        ("JSON string", |s| escaped(s, 1)),
        ("JSON with \\/", |s| escaped(s, 1).replace('/', "\\/")),
        ("JSON \\u, lower hex", |s| json_u(s, false)),
        ("JSON \\u, upper hex", |s| json_u(s, true)),
        ("JSON in JSON", |s| escaped(s, 2)),
        ("JSON, three levels", |s| escaped(s, 3)),
        ("JSON, four levels", |s| escaped(s, 4)),
        ("JSON \\u, three levels", |s| escaped(&json_u(s, true), 2)),
        ("JSON \\u in JSON", |s| json_u(s, false).replace('\\', "\\\\")),
        ("percent, component", |s| percent(s.as_bytes(), unreserved, true)),
        ("percent, every byte, lower", |s| percent(s.as_bytes(), |_| false, false)),
        ("form, + for space", |s| percent(s.as_bytes(), unreserved, true).replace("%20", "+")),
        ("HTML decimal", |s| s.chars().map(|c| format!("&#{};", u32::from(c))).collect()),
        ("HTML hex, zeros", |s| s.chars().enumerate().map(|(i, c)| format!("&#{}{:06x};", if i % 2 == 0 { 'x' } else { 'X' }, u32::from(c))).collect()),
        ("HTML decimal, ; left out", html_without_semicolons),
        ("HTML named", |s| s.chars().map(|c| html_named(c).map_or(c.to_string(), str::to_string)).collect()),
        ("base64", |s| mcp_edge::base64::encode(s.as_bytes())),
        ("base64url", |s| mcp_edge::base64::encode_url(s.as_bytes())),
    ];
    spellings
        .into_iter()
        .map(|(name, spell)| {
            let text = spell(SECRET);
            // Each character is spelled on its own: the rest's spelling is the whole's tail.
            let first = if name.starts_with("base64") { 1 } else { text.chars().count() - spell(&SECRET[1..]).chars().count() };
            Spelling { name, text, first }
        })
        .collect()
}

/// The characters of `encode(context + secret + context)` that the secret alone decides: those
/// that agree whatever the bytes around it are.
fn stable_core(encode: fn(&[u8]) -> String, before: usize, after: usize) -> (String, String) {
    let wrap = |fill: u8, after: usize| [vec![fill; before], SECRET.as_bytes().to_vec(), vec![fill; after]].concat();
    // Compared with a byte after it even when none follows: a reader cannot know that none does.
    let (zeros, ones) = (encode(&wrap(0, after.max(1))), encode(&wrap(0xff, after.max(1))));
    let agree: String = zeros.chars().zip(ones.chars()).map(|(a, b)| if a == b { a } else { '\0' }).collect();
    let core = agree.split('\0').max_by_key(|run| run.len()).unwrap_or_default().to_string();
    (encode(&wrap(b'!', after)), core)
}

fn no_window_of(output: &str, core: &str) -> bool {
    let chars: Vec<char> = core.chars().collect();
    chars.windows(4).all(|w| !output.contains(&w.iter().collect::<String>()))
}

fn fill(n: usize) -> String {
    FILL.to_string().repeat(n)
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap()
}

fn reply(status: u16, body: &[u8], truncated_at: Option<u64>) -> Upstream {
    Upstream::Reply { status, content_type: Some("text/plain".into()), body: body.to_vec(), truncated_at }
}

/// The text of a result the upstream's stream ends with, fed in `chunks`.
fn streamed(lines: &[&[u8]]) -> String {
    let mut reader = LineReader::new(false, None, None, Arc::new(redactor()));
    let mut events = Vec::new();
    for line in lines {
        events.extend(reader.feed(line));
    }
    events.extend(reader.finish());
    match events.into_iter().find(|e| matches!(e, Event::Result(_))) {
        Some(Event::Result(result)) => text_of(&result).to_string(),
        other => panic!("no result: {other:?}"),
    }
}

#[test]
fn a_whole_text_keeps_every_byte_but_the_secret() {
    let r = redactor();
    for s in clean_spellings() {
        for (before, after) in [("", ""), ("x ", " y"), ("{\"a\":\"", "\"}"), ("é", "\n")] {
            let text = format!("{before}{}{after}{OTHER}", s.text);
            assert_eq!(r.redact(&text), format!("{before}{REDACTED}{after}{REDACTED}"), "{}", s.name);
        }
        // Twice, back to back, and inside a JSON text inside a JSON string.
        assert_eq!(r.redact(&format!("{0}{0}", s.text)), format!("{REDACTED}{REDACTED}"), "{}", s.name);
    }
}

#[test]
fn base64_inside_a_longer_value_at_every_alignment() {
    let r = redactor();
    for before in 0..3 {
        for after in 0..3 {
            for (name, encode) in [("base64", mcp_edge::base64::encode as fn(&[u8]) -> String), ("base64url", mcp_edge::base64::encode_url)] {
                let (encoded, core) = stable_core(encode, before, after);
                for text in [encoded.clone(), encoded.trim_end_matches('=').to_string()] {
                    // The core goes; the characters that mix in other bytes stay.
                    let out = r.redact(&text);
                    assert_eq!(out, text.replacen(&core, REDACTED, 1), "{name} {before}/{after}");
                    assert!(no_window_of(&out, &core));
                }
            }
        }
    }
}

#[test]
fn an_excerpt_is_cut_after_the_secret_is_redacted_at_every_offset() {
    let r = redactor();
    let plan = ReplyPlan::map(1 << 20);
    for s in clean_spellings() {
        for k in 0..=s.text.len() {
            // The excerpt's 512-byte cut lands k bytes into the spelled secret.
            let tail = fill(600);
            let body = format!("{}{}{tail}", fill(512 - k), s.text);
            let result = to_result(&reply(500, body.as_bytes(), None), &plan, &r);
            let redacted = format!("{}{REDACTED}{tail}", fill(512 - k));
            let expected = format!("The upstream answered HTTP 500 (text/plain): {}…", &redacted[..512]);
            assert_eq!(text_of(&result), expected, "{} cut at {k}", s.name);
            // The same cut where the reply is not the JSON it says it is.
            let bad = Upstream::Reply { status: 200, content_type: Some("application/json".into()), body: body.clone().into_bytes(), truncated_at: None };
            let text = text_of(&to_result(&bad, &plan, &r)).to_string();
            assert!(text.ends_with(&format!(": {}…", &redacted[..512])), "{} cut at {k}: {text}", s.name);
        }
    }
}

#[test]
fn a_reply_cut_at_the_readers_cap_shows_at_most_the_secrets_first_character_at_every_offset() {
    let r = redactor();
    let plan = ReplyPlan { truncate: true, ..ReplyPlan::map(600) };
    for s in clean_spellings() {
        for k in 0..=s.text.len() {
            // The reader stopped at 600 bytes, k bytes into the spelled secret.
            let mut body = format!("{}{}", fill(600 - k), s.text).into_bytes();
            body.truncate(600);
            let result = to_result(&reply(200, &body, Some(600)), &plan, &r);
            // The secret's first character (or a part of it) may show; anything past it may not.
            let shown = if k <= s.first { format!("{}{}", fill(600 - k), &s.text[..k]) } else { format!("{}{REDACTED}", fill(600 - k)) };
            let expected = format!("{shown}\n\n[mcp-edge: the reply was truncated at 600 bytes]");
            assert_eq!(text_of(&result), expected, "{} cut at {k}", s.name);
        }
    }
    for before in 0..3 {
        for (name, encode) in [("base64", mcp_edge::base64::encode as fn(&[u8]) -> String), ("base64url", mcp_edge::base64::encode_url)] {
            let (encoded, core) = stable_core(encode, before, 2);
            for k in 0..=encoded.len() {
                let mut body = format!("{}{encoded}", fill(600 - k)).into_bytes();
                body.truncate(600);
                let text = text_of(&to_result(&reply(200, &body, Some(600)), &plan, &r)).to_string();
                let seen = &encoded[..k];
                // Whatever of the core the cut let in past its first character is redacted, to the
                // cut; past the core, the core is redacted whole.
                let kept = text.trim_end_matches("\n\n[mcp-edge: the reply was truncated at 600 bytes]");
                assert!(no_window_of(kept, &core), "{name} {before} cut at {k}: {kept}");
                let core_at = encoded.find(&core).unwrap();
                if k <= core_at + 1 {
                    assert_eq!(kept, format!("{}{seen}", fill(600 - k)), "{name} {before} cut at {k}");
                } else if k <= core_at + core.len() {
                    assert!(kept.ends_with(REDACTED), "{name} {before} cut at {k} ({seen}): {kept}");
                } else {
                    assert!(kept.contains(REDACTED), "{name} {before} cut at {k} ({seen}): {kept}");
                }
            }
        }
    }
}

#[test]
fn a_line_that_is_not_json_is_redacted_then_cut_at_every_offset() {
    for s in clean_spellings() {
        for k in 0..=s.text.len() {
            // The 200-character cut lands k characters into the spelled secret (the spellings
            // but one are ASCII; for that one the cut counts characters, as the reader does).
            if k > 200 {
                break;
            }
            let line = format!("{}{}{}\n", fill(200 - k), s.text, fill(30));
            let redacted: String = format!("{}{REDACTED}{}", fill(200 - k), fill(30)).chars().take(200).collect();
            assert_eq!(streamed(&[line.as_bytes()]), format!("The upstream sent a line that is not JSON: {redacted}"), "{} cut at {k}", s.name);
            // A stream that ends k bytes into the secret, on a line of its own.
            let cut: String = s.text.chars().take(k).collect();
            let ended = format!("{}{cut}", fill(20));
            let shown = if k <= s.first { format!("{}{cut}", fill(20)) } else { format!("{}{REDACTED}", fill(20)) };
            assert_eq!(streamed(&[b"{\"log\":{\"data\":1}}\n", ended.as_bytes()]), format!("The upstream sent a line that is not JSON: {shown}"), "{} ends at {k}", s.name);
        }
    }
}

#[test]
fn a_calls_own_credentials_join_the_deployments() {
    let call = redactor().with(["caller-upstream-token-77"]);
    let body = format!("{} {} caller-upstream-token-77", SECRET, mcp_edge::base64::encode(OTHER.as_bytes()));
    let result = to_result(&reply(401, body.as_bytes(), None), &ReplyPlan::map(1000), &call);
    assert_eq!(text_of(&result), format!("The upstream answered HTTP 401 (text/plain): {REDACTED} {REDACTED} {REDACTED}"));
    assert_eq!(redactor().redact("caller-upstream-token-77"), "caller-upstream-token-77", "the deployment's redactor is unchanged");
}
