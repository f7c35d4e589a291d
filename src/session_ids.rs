//! Session ids as mcp-edge issues them, and the prefix of their objects' names: what both the
//! core (callback tokens, object names) and the edge (a client's `Mcp-Session-Id`) check an id
//! against. A floor of its own, below everything that names a session.

/// The prefix of every session object's name. A session id is the client's to send: without
/// it, `Mcp-Session-Id: oauth` would name the authorization server's object (or any other of
/// the namespace's), whose names never start with it.
pub const SESSION_OBJECT: &str = "session:";

/// Whether a session id can be one mcp-edge issued: a UUID, as the edge makes them (lowercase
/// hex and dashes, 8-4-4-4-12). A client's `Mcp-Session-Id` (or legacy `sessionId`) that is not
/// names no session and never reaches an object: not the stateless revision's task store
/// (`tasks:<route>`), nor any other of the namespace's objects.
pub fn is_issued(id: &str) -> bool {
    id.len() == 36 && id.char_indices().all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { c == '-' } else { c.is_ascii_hexdigit() })
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
}
