//! W3C Trace Context (Level 1): the `traceparent` a caller sends, read strictly (anything
//! malformed is ignored and a new trace starts), and `tracestate`, passed on when it is well
//! formed. The same text arrives in HTTP headers and, from MCP 2026-07-28 (SEP-414), in a
//! message's `params._meta`.

use serde::{Deserialize, Serialize};

/// A trace id: 16 bytes, never all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(pub [u8; 16]);

/// A span id: 8 bytes, never all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(pub [u8; 8]);

impl TraceId {
    pub fn hex(&self) -> String {
        crate::hex::encode(&self.0)
    }
}

impl SpanId {
    pub fn hex(&self) -> String {
        crate::hex::encode(&self.0)
    }
}

/// `tracestate` is at most this long; a longer one is dropped rather than cut, since members
/// may only be cut whole and the right ones to cut are the vendors' call.
const MAX_STATE_BYTES: usize = 512;
const MAX_STATE_MEMBERS: usize = 32;

/// A span's place in a trace as it crosses a hop: the trace, the span on the sending side, whether
/// it is sampled, and the vendors' `tracestate`. Serialized as the two header values, so a queued
/// call or a deferred one carries it as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Wire", into = "Wire")]
pub struct Context {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    /// The trace flags; only `sampled` (bit 0) is defined by Level 1.
    pub flags: u8,
    pub state: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Wire {
    traceparent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tracestate: Option<String>,
}

impl TryFrom<Wire> for Context {
    type Error = String;
    fn try_from(wire: Wire) -> Result<Context, String> {
        Context::parse(&wire.traceparent, wire.tracestate.as_deref()).ok_or_else(|| format!("not a traceparent: {}", wire.traceparent))
    }
}

impl From<Context> for Wire {
    fn from(c: Context) -> Wire {
        Wire { traceparent: c.traceparent(), tracestate: c.state }
    }
}

impl Context {
    /// Reads a `traceparent` (and its `tracestate`, kept only when well formed). `None` when the
    /// `traceparent` is not one: version `ff`, ids of the wrong length, uppercase or non-hex
    /// digits, all-zero ids, or (for version 00) anything after the flags. A later version is
    /// read by its first four fields, as the recommendation asks.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Context> {
        let text = traceparent.trim_matches([' ', '\t']);
        let mut fields = text.splitn(5, '-');
        let (version, trace, span, flags) = (fields.next()?, fields.next()?, fields.next()?, fields.next()?);
        let sizes = version.len() == 2 && trace.len() == 32 && span.len() == 16 && flags.len() == 2;
        if !sizes || [version, trace, span, flags].iter().any(|f| !lower_hex(f.as_bytes())) || version == "ff" {
            return None;
        }
        // Version 00 ends with its flags; a later one may go on after a dash.
        if version == "00" && fields.next().is_some() {
            return None;
        }
        let trace_id: [u8; 16] = crate::hex::decode(trace)?.try_into().ok()?;
        let span_id: [u8; 8] = crate::hex::decode(span)?.try_into().ok()?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        let flags = *crate::hex::decode(flags)?.first()?;
        let state = tracestate.map(|s| s.trim_matches([' ', '\t'])).filter(|s| valid_state(s)).map(str::to_string);
        Some(Context { trace_id: TraceId(trace_id), span_id: SpanId(span_id), flags, state })
    }

    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The `traceparent` this context is sent as: always version 00, which defines only the
    /// sampled flag.
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-{:02x}", self.trace_id.hex(), self.span_id.hex(), self.flags & 1)
    }

    /// The same trace, as seen from the span `span_id` of it.
    pub fn child(&self, span_id: SpanId) -> Context {
        Context { span_id, ..self.clone() }
    }
}

fn lower_hex(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
}

/// A `tracestate` is a list of `key=value` members: at most 32, keys of lowercase letters,
/// digits and `_-*/` (with one `@` for a multi-tenant key), values of printable ASCII but `,`
/// and `=`. Empty members (from joined headers) are allowed; a key may appear once.
fn valid_state(state: &str) -> bool {
    if state.len() > MAX_STATE_BYTES {
        return false;
    }
    let members: Vec<&str> = state.split(',').map(|m| m.trim_matches([' ', '\t'])).filter(|m| !m.is_empty()).collect();
    if members.is_empty() || members.len() > MAX_STATE_MEMBERS {
        return false;
    }
    let mut keys = Vec::with_capacity(members.len());
    for member in members {
        let Some((key, value)) = member.split_once('=') else { return false };
        let key_ok = !key.is_empty()
            && key.len() <= 256
            && key.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && key.bytes().filter(|b| *b == b'@').count() <= 1
            && key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-*/@".contains(&b));
        let value_ok = !value.is_empty() && value.len() <= 256 && !value.ends_with(' ') && value.bytes().all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=');
        if !key_ok || !value_ok || keys.contains(&key) {
            return false;
        }
        keys.push(key);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_is_read_and_written_back() {
        let c = Context::parse(GOOD, Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")).unwrap();
        assert_eq!(c.trace_id.hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(c.span_id.hex(), "00f067aa0ba902b7");
        assert!(c.sampled());
        assert_eq!(c.traceparent(), GOOD);
        assert_eq!(c.state.as_deref(), Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"));
        // Optional whitespace around the value is not part of it.
        assert_eq!(Context::parse(&format!(" {GOOD}\t"), None).unwrap().traceparent(), GOOD);
        // Serialized as its header values, and read back.
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(text, format!(r#"{{"traceparent":"{GOOD}","tracestate":"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"}}"#));
        assert_eq!(serde_json::from_str::<Context>(&text).unwrap(), c);
    }

    #[test]
    fn malformed_traceparents_are_ignored() {
        for bad in [
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "",
        ] {
            assert!(Context::parse(bad, None).is_none(), "{bad}");
        }
        // A later version is read by its first four fields, what follows a dash ignored.
        let later = Context::parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-what-ever", None).unwrap();
        assert_eq!(later.traceparent(), GOOD);
        assert!(Context::parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09x", None).is_none());
    }

    #[test]
    fn only_well_formed_tracestate_is_kept() {
        let state = |s: &str| Context::parse(GOOD, Some(s)).unwrap().state;
        assert_eq!(state("a=1, b@vendor=2"), Some("a=1, b@vendor=2".into()));
        assert_eq!(state("a=1,,b=2"), Some("a=1,,b=2".into()));
        for bad in ["", "novalue", "A=1", "a=1,a=2", "a=x,y", "a=1=2", &"k=v,".repeat(33), &format!("a={}", "x".repeat(600)), "a=\u{e9}"] {
            assert_eq!(state(bad), None, "{bad}");
        }
    }
}
