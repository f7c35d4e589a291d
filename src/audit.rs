//! The audit log's events: who did what, when, to which server and entry (admin changes,
//! rollbacks, held definitions and their approval or rejection, policy denials, limit refusals),
//! as the log line and the store write them (JSON), and as OTLP log records (protobuf
//! `ExportLogsServiceRequest`, through `trace::wire`). The edge records them (`edge::audit`).

use serde_json::Value;

use crate::redact::Redactor;
use crate::trace::otlp::Source;
use crate::trace::wire::Writer;

/// How many events the store keeps; older ones are dropped in batches of [`DROP_BATCH`].
pub const KEPT: u64 = 1000;
pub const DROP_BATCH: u64 = 50;
/// A page of `GET /admin/api/audit` holds at most this many events.
pub const MAX_PAGE: u64 = 200;
/// The longest `detail` kept; longer ones are cut.
const MAX_DETAIL: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    ConfigChanged,
    Rollback,
    DefinitionHeld,
    DefinitionApproved,
    DefinitionRejected,
    PolicyDenied,
    LimitRefused,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::ConfigChanged => "config_changed",
            Action::Rollback => "rollback",
            Action::DefinitionHeld => "definition_held",
            Action::DefinitionApproved => "definition_approved",
            Action::DefinitionRejected => "definition_rejected",
            Action::PolicyDenied => "policy_denied",
            Action::LimitRefused => "limit_refused",
        }
    }

    /// Refusals come in bursts: the store and the collector get the first of each (action, actor,
    /// server, target) per minute and isolate; the log line gets every one.
    pub fn sampled(self) -> bool {
        matches!(self, Action::PolicyDenied | Action::LimitRefused)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub at_ms: u64,
    /// The principal's id, or `system` for what mcp-edge did on its own (a held definition).
    pub actor: String,
    pub action: Action,
    pub server: String,
    /// The entry: a tool, a limit's name, a version.
    pub target: String,
    /// A short account, redacted and cut before it is kept or sent.
    pub detail: String,
}

pub const SYSTEM: &str = "system";

impl Event {
    /// The event with every text redacted with the deployment's secrets, and its detail cut.
    pub fn redacted(self, secrets: &Redactor) -> Event {
        let cut = |text: String| -> String {
            let text = secrets.redact_owned(text);
            match text.char_indices().nth(MAX_DETAIL) {
                Some((at, _)) => format!("{}…", text.get(..at).unwrap_or_default()),
                None => text,
            }
        };
        Event { actor: secrets.redact_owned(self.actor), server: secrets.redact_owned(self.server), target: secrets.redact_owned(self.target), detail: cut(self.detail), ..self }
    }

    /// As the store keeps it and the admin API lists it.
    pub fn to_json(&self) -> Value {
        let mut map = serde_json::Map::new();
        map.insert("atMs".into(), self.at_ms.into());
        for (key, value) in [("actor", self.actor.as_str()), ("action", self.action.name()), ("server", &self.server), ("target", &self.target), ("detail", &self.detail)] {
            map.insert(key.into(), Value::String(value.to_string()));
        }
        Value::Object(map)
    }

    /// The log line: the request log's style, with `"audit"` as its message.
    pub fn line(&self) -> String {
        let mut value = self.to_json();
        if let Some(map) = value.as_object_mut() {
            map.insert("message".into(), Value::String("audit".into()));
        }
        value.to_string()
    }

    /// What the store keeps it under: newest last in key order, two events of one millisecond
    /// told apart by `nonce`.
    pub fn key(&self, nonce: &str) -> String {
        format!("a:{:015}:{nonce}", self.at_ms)
    }
}

/// The OTLP severity number of INFO.
const SEVERITY_INFO: u64 = 9;

/// `events` as a protobuf `ExportLogsServiceRequest` (`{endpoint}/v1/logs`): one `LogRecord`
/// each, its body the detail, its attributes `audit.*`, event name `mcp_edge.audit`.
pub fn otlp(source: &Source, events: &[Event], secrets: &Redactor) -> Vec<u8> {
    let mut w = Writer::new();
    w.message(1, |rl| {
        rl.message(1, |resource| {
            for (key, value) in &source.attributes {
                crate::trace::otlp::key_value(resource, 1, key, &crate::trace::span::Value::Str(value.clone()), secrets);
            }
        });
        rl.message(2, |sl| {
            sl.message(1, |scope| {
                scope.string(1, source.scope);
                scope.string(2, source.version);
            });
            for event in events {
                sl.message(2, |record| {
                    let nanos = event.at_ms.saturating_mul(1_000_000);
                    record.fixed64(1, nanos);
                    record.uint(2, SEVERITY_INFO);
                    record.string(3, "INFO");
                    record.message(5, |body| body.string(1, &secrets.redact(&event.detail)));
                    for (key, value) in [("audit.action", event.action.name()), ("audit.actor", &event.actor), ("audit.server", &event.server), ("audit.target", &event.target)] {
                        crate::trace::otlp::key_value(record, 6, key, &crate::trace::span::Value::Str(value.to_string()), secrets);
                    }
                    record.fixed64(11, nanos);
                    record.string(12, "mcp_edge.audit");
                });
            }
        });
    });
    w.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> Event {
        Event { at_ms: 1_700_000_000_123, actor: "alice".into(), action: Action::DefinitionApproved, server: "gateway".into(), target: "ev_echo".into(), detail: "description changed".into() }
    }

    #[test]
    fn json_line_and_key() {
        let e = event();
        assert_eq!(e.line(), r#"{"atMs":1700000000123,"actor":"alice","action":"definition_approved","server":"gateway","target":"ev_echo","detail":"description changed","message":"audit"}"#);
        assert_eq!(e.key("ab12"), "a:001700000000123:ab12");
        assert!(Action::LimitRefused.sampled() && !Action::Rollback.sampled());
    }

    #[test]
    fn redacted_and_cut() {
        let secrets = Redactor::new(["sk-live-0123456789abcdef".to_string()]);
        let e = Event { detail: format!("it says sk-live-0123456789abcdef {}", "x".repeat(900)), target: "sk-live-0123456789abcdef".into(), ..event() }.redacted(&secrets);
        assert!(!e.line().contains("sk-live-0123456789abcdef"));
        assert!(e.detail.chars().count() <= MAX_DETAIL + 1 && e.detail.ends_with('…'));
    }

    #[test]
    fn otlp_log_records() {
        let bytes = otlp(&Source::mcp_edge("edge"), &[event()], &Redactor::new(Vec::<String>::new()));
        let text = String::from_utf8_lossy(&bytes);
        for part in ["service.name", "edge", "mcp-edge", "audit.action", "definition_approved", "audit.actor", "alice", "description changed", "mcp_edge.audit", "INFO"] {
            assert!(text.contains(part), "{part}");
        }
        // time_unix_nano (field 1, fixed64) of the record.
        let nanos = (1_700_000_000_123u64 * 1_000_000).to_le_bytes();
        assert!(bytes.windows(9).any(|w| w.first() == Some(&0x09) && w.get(1..) == Some(&nanos[..])));
    }
}
