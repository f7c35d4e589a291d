//! Session ids as mcp-edge issues them, and the prefix of their objects' names: what both the
//! core (callback tokens, object names) and the edge (a client's `Mcp-Session-Id`) check an id
//! against. A floor of its own, below everything that names a session.

/// The prefix of every session object's name. A session id is the client's to send: without
/// it, `Mcp-Session-Id: oauth` would name the authorization server's object (or any other of
/// the namespace's), whose names never start with it.
pub const SESSION_OBJECT: &str = "session:";

/// How long after it was issued a self-proving session's object may still wait for the session
/// to be written (`crate::session::born`): the Worker answers `initialize` at once and writes
/// the session behind its reply, so the client's next request can reach the object first.
/// Past this, an id its object does not hold is not found, and a late write is refused.
pub const BIRTH_WINDOW_MS: u64 = 10_000;

/// Whether a session id can be one mcp-edge issued: a self-proving id ([`issued_at`]), or a
/// UUID (lowercase hex and dashes, 8-4-4-4-12) as legacy HTTP+SSE sessions, listen streams and
/// sessions created by earlier builds are named. A client's `Mcp-Session-Id` (or legacy
/// `sessionId`) that is not names no session and never reaches an object: not the stateless
/// revision's task store (`tasks:<route>`), nor any other of the namespace's objects.
pub fn is_issued(id: &str) -> bool {
    issued_at(id).is_some() || (id.len() == 36 && id.char_indices().all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { c == '-' } else { c.is_ascii_hexdigit() }))
}

/// When a self-proving session id was issued, in ms since the epoch; `None` for any other
/// string. Its shape is `<random>-<issued>-<signature>`: 32 lowercase hex digits, the issue time
/// as 12, and 64 of an HMAC over both and the principal (`crate::session::proves`). No dot and
/// no colon, which callback tokens and object names use as separators.
pub fn issued_at(id: &str) -> Option<u64> {
    let mut parts = id.split('-');
    let (random, issued, signature) = (parts.next()?, parts.next()?, parts.next()?);
    let hex = |part: &str, len: usize| part.len() == len && part.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if parts.next().is_some() || !hex(random, 32) || !hex(issued, 12) || !hex(signature, 64) {
        return None;
    }
    u64::from_str_radix(issued, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ids_shaped_as_issued_name_a_session() {
        assert!(is_issued("9f1c0a52-1d3e-4b8e-9a57-2a1f0d3c4b5e"));
        for other in ["tasks:/mcp", "oauth", "live-config", "session:9f1c0a52-1d3e-4b8e-9a57-2a1f0d3c4b5e", "9f1c0a52-1d3e-4b8e-9a57-2a1f0d3c4b5", "9f1c0a52x1d3e-4b8e-9a57-2a1f0d3c4b5e", "9f1c0a52-1d3e-4b8e-9a57-2a1f0d3c4b5g", ""] {
            assert!(!is_issued(other), "{other}");
        }
    }

    #[test]
    fn self_proving_ids_carry_their_issue_time() {
        let id = format!("{}-{:012x}-{}", "a".repeat(32), 1_764_000_000_000u64, "0".repeat(64));
        assert_eq!(issued_at(&id), Some(1_764_000_000_000));
        assert!(is_issued(&id));
        // A UUID carries none; nor does any other arrangement of the parts.
        assert_eq!(issued_at("9f1c0a52-1d3e-4b8e-9a57-2a1f0d3c4b5e"), None);
        for other in [
            format!("{}-{:012x}-{}", "A".repeat(32), 1u64, "0".repeat(64)),
            format!("{}-{:011x}-{}", "a".repeat(32), 1u64, "0".repeat(64)),
            format!("{}-{:012x}-{}", "a".repeat(31), 1u64, "0".repeat(64)),
            format!("{}-{:012x}-{}-", "a".repeat(32), 1u64, "0".repeat(64)),
            format!("{}.{:012x}.{}", "a".repeat(32), 1u64, "0".repeat(64)),
            format!("{}-{:012x}-{}", "a".repeat(32), 1u64, "g".repeat(64)),
        ] {
            assert!(!is_issued(&other), "{other}");
        }
    }
}
