//! Session leases: a short-lived copy of a session that the Worker holds, so that it can serve
//! the session's plain tool calls itself rather than send each one through the session's Durable
//! Object (a hop that costs more CPU than the rest of the call).
//!
//! The object grants a lease, and counts the grant as use of the session. The Worker serves a
//! request from it only when the object would have answered with the same bytes: one
//! `tools/call` (or `resources/read`) request answered as JSON, nothing to stream (no progress
//! token, no log level), nothing to ask the client (it declared no sampling, elicitation or roots
//! capability), a tool neither deferred nor closing its stream early nor an upstream MCP
//! server's, and a call bound to end before the session could expire. The Worker drops its
//! lease before it sends on anything that may change the session.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::catalog::Server;
use crate::dispatch::{CallKind, PendingCall};
use crate::session::Session;

/// The client capabilities through which an upstream's request for input reaches the client.
const INPUT_CAPABILITIES: [&str; 3] = ["sampling", "elicitation", "roots"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// The session as its object holds it, touched by the grant.
    pub session: Session,
    /// Served from until then; never beyond the session's own expiry.
    pub until_ms: u64,
}

impl Lease {
    /// The lease on a session its object has just touched; `None` when leases are off, and for
    /// sessions that live only as long as a stream, which the object alone can see end.
    pub fn grant(session: &Session, now_ms: u64, lease_ms: u64, idle_timeout_ms: u64) -> Option<Lease> {
        if lease_ms == 0 || session.legacy_sse || session.listen_id.is_some() {
            return None;
        }
        let until_ms = now_ms.saturating_add(lease_ms).min(session.expires_at(idle_timeout_ms));
        Some(Lease { session: session.clone(), until_ms })
    }

    /// Whether the lease still speaks for the session, to this caller.
    pub fn holds(&self, now_ms: u64, server: &Server, principal: &str) -> bool {
        now_ms < self.until_ms && self.session.server == server.route.as_str() && self.session.principal == principal
    }

    /// Whether the session's calls can be answered without the object: nothing to stream
    /// unasked (log messages), no way for an upstream to reach the client.
    pub fn serves_calls(&self) -> bool {
        let capabilities = &self.session.client_capabilities;
        self.session.log_level.is_none() && INPUT_CAPABILITIES.iter().all(|c| capabilities.get(c).is_none())
    }

    /// Whether this call, run in the Worker, ends as it would in the object: the tool is a
    /// plain fetch, nothing streams, and its timeout ends it before the session could expire
    /// (the object, not knowing of the call, would otherwise end the session under it).
    pub fn serves(&self, server: &Server, call: &PendingCall, now_ms: u64) -> bool {
        let plain = match &call.kind {
            // An upstream MCP server's tool speaks within the upstream session the object keeps.
            CallKind::Tool(name) => server.tool(name).is_some_and(|t| t.deferral.is_none() && t.close_after_ms.is_none() && t.mcp.is_none()),
            CallKind::Resource { .. } => true,
            // A program's calls are the session's: its object runs it, where cancellations reach it.
            CallKind::Upstream { .. } | CallKind::Program(_) => false,
        };
        // A task is answered with its handle, and kept by the object.
        // A call that waits for its user to connect asks on the object's stream.
        plain && call.connection.as_ref().is_none_or(|c| c.token.is_some()) && call.task.is_none() && call.progress_token.is_none() && now_ms.saturating_add(call.http.timeout_ms) < self.session.expires_at(server.idle_timeout_ms)
    }
}

/// Makes room in a cache of `held` leases (by session id) for one more, when it holds `max`:
/// the lapsed ones go first; then, if the live ones fill it, the quarter (or a little more, where
/// several lapse at the same moment) that lapse soonest.
/// Dropping every lease instead would make every session hop to its object again at once, and
/// with more live sessions than `max` the cache would never hold a lease long enough to use it.
pub fn make_room(held: &mut HashMap<String, Lease>, max: usize, now_ms: u64) {
    if held.len() < max {
        return;
    }
    held.retain(|_, lease| lease.until_ms > now_ms);
    if held.len() < max {
        return;
    }
    let mut ends: Vec<u64> = held.values().map(|lease| lease.until_ms).collect();
    // Only with `max` 0: the cut below needs an index inside the list.
    if ends.len() <= max / 4 {
        held.clear();
        return;
    }
    let (_, cut, _) = ends.select_nth_unstable(max / 4);
    let cut = *cut;
    held.retain(|_, lease| lease.until_ms > cut);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn held(ends: &[u64]) -> HashMap<String, Lease> {
        let session = Session::new("id", "/mcp", "2025-06-18", json!({}), json!({}), 0);
        ends.iter().enumerate().map(|(i, &until_ms)| (format!("s{i}"), Lease { session: session.clone(), until_ms })).collect()
    }

    #[test]
    fn room_is_made_from_lapsed_leases_first_then_from_those_that_lapse_soonest() {
        // Not full: nothing goes.
        let mut leases = held(&[5, 50, 500]);
        make_room(&mut leases, 4, 100);
        assert_eq!(leases.len(), 3);
        // Full, with lapsed ones: only they go.
        let mut leases = held(&[5, 50, 500, 600]);
        make_room(&mut leases, 4, 100);
        let mut left: Vec<u64> = leases.values().map(|l| l.until_ms).collect();
        left.sort_unstable();
        assert_eq!(left, [500, 600]);
        // Full of live ones: the quarter that lapse soonest go, the rest stay.
        let ends: Vec<u64> = (0..16).map(|i| 1_000 + (i * 7919) % 16 * 10).collect();
        let mut leases = held(&ends);
        make_room(&mut leases, 16, 100);
        let mut left: Vec<u64> = leases.values().map(|l| l.until_ms).collect();
        left.sort_unstable();
        assert_eq!(left, (5..16).map(|i| 1_000 + i * 10).collect::<Vec<u64>>());
    }

    fn server(config: serde_json::Value) -> Server {
        crate::config::load(&config.to_string()).unwrap().servers.into_iter().next().unwrap().as_ref().clone()
    }

    fn catalog() -> Server {
        server(json!({"servers": [{"name": "s", "version": "1", "sessions": {"idleTimeoutMs": 60000, "leaseMs": 2000}, "tools": [
            {"name": "echo", "http": {"url": "https://up.example/echo", "timeoutMs": 5000}},
            {"name": "slow", "http": {"url": "https://up.example/slow", "timeoutMs": 120000}},
            {"name": "queued", "http": {"url": "https://up.example/q"}, "execution": "callback"},
            {"name": "polled", "http": {"url": "https://up.example/p"}, "sse": {"closeAfterMs": 100}}
        ]}]}))
    }

    fn call(server: &Server, session: &mut Session, name: &str, meta: serde_json::Value) -> PendingCall {
        let secret = |_: &str| Some("k".to_string());
        let principal = crate::auth::Principal::anonymous();
        let env = crate::dispatch::Environment { secret: &secret, route: &Vec::new(), principal: &principal, now_ms: 0, connection: &|_: &str| None };
        let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": {}, "_meta": meta}});
        let parsed = crate::jsonrpc::parse_body(request.to_string().as_bytes(), false).unwrap().messages.remove(0);
        match crate::dispatch::handle(server, session, parsed, &env) {
            crate::dispatch::Action::Call(call) => *call,
            other => panic!("not a call: {other:?}"),
        }
    }

    #[test]
    fn a_grant_lasts_its_length_within_the_session() {
        let s = catalog();
        let session = Session::new("id", "/mcp", "2025-06-18", json!({}), json!({}), 1_000);
        let lease = Lease::grant(&session, 1_000, 2_000, s.idle_timeout_ms).unwrap();
        assert_eq!(lease.until_ms, 3_000);
        assert!(lease.holds(2_999, &s, "anonymous"));
        assert!(!lease.holds(3_000, &s, "anonymous"));
        assert!(!lease.holds(1_500, &s, "token:other"), "another principal's request");
        // Never beyond the session's expiry, and not at all when leases are off.
        assert_eq!(Lease::grant(&session, 1_000, 2_000, 500).unwrap().until_ms, 1_500);
        assert_eq!(Lease::grant(&session, 1_000, 0, 500), None);
        // A session of another server is not this one's.
        let other = Session::new("id", "/other/mcp", "2025-06-18", json!({}), json!({}), 1_000);
        assert!(!Lease::grant(&other, 1_000, 2_000, 60_000).unwrap().holds(1_500, &s, "anonymous"));
    }

    #[test]
    fn the_wire_shape_is_the_stored_session_and_its_end() {
        // The object sends the lease to the Worker as JSON: the session as it is stored, so a
        // Worker and an object of the same schema read each other's leases.
        let session = Session::new("id", "/mcp", "2025-06-18", json!({"name": "c"}), json!({}), 5);
        let lease = Lease::grant(&session, 5, 2_000, 60_000).unwrap();
        let text = serde_json::to_string(&lease).unwrap();
        assert_eq!(
            text,
            r#"{"session":{"schema":1,"id":"id","server":"/mcp","principal":"anonymous","protocolVersion":"2025-06-18","clientInfo":{"name":"c"},"clientCapabilities":{},"createdMs":5,"lastUsedMs":5,"streamsOpened":0},"untilMs":2005}"#
        );
        assert_eq!(serde_json::from_slice::<Lease>(text.as_bytes()).unwrap(), lease);
    }

    #[test]
    fn stream_bound_sessions_get_no_lease() {
        let mut legacy = Session::new("id", "/mcp", "2024-11-05", json!({}), json!({}), 0);
        legacy.legacy_sse = true;
        assert_eq!(Lease::grant(&legacy, 0, 2_000, 60_000), None);
        let mut listen = Session::new("id", "/mcp", "2026-07-28", json!({}), json!({}), 0);
        listen.listen_id = Some(json!(1));
        assert_eq!(Lease::grant(&listen, 0, 2_000, 60_000), None);
    }

    #[test]
    fn sessions_that_stream_or_ask_are_served_by_their_object() {
        let plain = Session::new("id", "/mcp", "2025-06-18", json!({}), json!({"experimental": {}}), 0);
        assert!(Lease::grant(&plain, 0, 1, 60_000).unwrap().serves_calls());
        let mut logging = plain.clone();
        logging.log_level = Some("info".into());
        assert!(!Lease::grant(&logging, 0, 1, 60_000).unwrap().serves_calls());
        for capability in INPUT_CAPABILITIES {
            let asking = Session::new("id", "/mcp", "2025-06-18", json!({}), json!({ capability: {} }), 0);
            assert!(!Lease::grant(&asking, 0, 1, 60_000).unwrap().serves_calls(), "{capability}");
        }
    }

    #[test]
    fn only_plain_calls_that_end_before_the_session_are_served() {
        let s = catalog();
        let mut session = Session::new("id", "/mcp", "2025-06-18", json!({}), json!({}), 0);
        let lease = Lease::grant(&session, 0, 2_000, s.idle_timeout_ms).unwrap();
        assert!(lease.serves(&s, &call(&s, &mut session, "echo", json!({})), 0));
        // 5 s of timeout must end before the session's 60 s: by 54.999 s, not at 55 s.
        assert!(lease.serves(&s, &call(&s, &mut session, "echo", json!({})), 54_999));
        assert!(!lease.serves(&s, &call(&s, &mut session, "echo", json!({})), 55_000));
        assert!(!lease.serves(&s, &call(&s, &mut session, "slow", json!({})), 0));
        assert!(!lease.serves(&s, &call(&s, &mut session, "echo", json!({"progressToken": 1})), 0));
        assert!(!lease.serves(&s, &call(&s, &mut session, "queued", json!({})), 0));
        assert!(!lease.serves(&s, &call(&s, &mut session, "polled", json!({})), 0));
    }

    #[test]
    fn methods_that_may_change_the_session_drop_the_lease() {
        use crate::method::Method;
        for method in [Method::ToolsCall, Method::ToolsList, Method::Ping, Method::ResourcesRead, Method::Cancelled, Method::Initialized] {
            assert!(method.keeps_session(), "{method}");
        }
        for method in [Method::LoggingSetLevel, Method::ResourcesSubscribe, Method::ResourcesUnsubscribe, Method::Initialize] {
            assert!(!method.keeps_session(), "{method}");
        }
        let served: Vec<Method> = Method::ALL.iter().copied().filter(|m| m.lease_serves()).collect();
        assert_eq!(served, [Method::ToolsCall, Method::ResourcesRead]);
    }
}
