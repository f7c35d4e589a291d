//! What the figures look like to a reader (`GET /admin/api/health`, the console): per server,
//! per tool, the last hour's calls, errors by kind, and p50 and p95 latency.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{first_minute, Window, MINUTE_MS};

/// The last hour's figures, as JSON:
/// `{"since": ms, "until": ms, "servers": [{"name", "tools": [{"name", "calls", "errors": {kind: n}, "p50Ms", "p95Ms"}]}]}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthView {
    /// The window's start: the first millisecond of its first minute.
    pub since: u64,
    /// When the view was read.
    pub until: u64,
    pub servers: Vec<ServerHealth>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerHealth {
    pub name: String,
    pub tools: Vec<ToolHealth>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolHealth {
    pub name: String,
    pub calls: u64,
    /// Errors by kind (`"upstream 502"`, `"timeout"`, ...); a kind with none is absent.
    pub errors: BTreeMap<String, u64>,
    /// Over the calls that reached an upstream; `None` when none did.
    pub p50_ms: Option<u64>,
    pub p95_ms: Option<u64>,
}

impl ToolHealth {
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

impl HealthView {
    /// The view of a window at `now_ms`: servers and tools by name.
    pub fn of(window: &Window, now_ms: u64) -> HealthView {
        let servers = window
            .last_hour(now_ms)
            .into_iter()
            .map(|(name, tools)| ServerHealth {
                name,
                tools: tools
                    .into_iter()
                    .map(|(name, s)| ToolHealth { name, calls: s.calls, p50_ms: s.latency.quantile(0.5), p95_ms: s.latency.quantile(0.95), errors: s.errors })
                    .collect(),
            })
            .collect();
        HealthView { since: first_minute(now_ms) * MINUTE_MS, until: now_ms, servers }
    }

    /// Keeps the tools `keep` names (server, tool): those still configured, after a deploy
    /// renamed or removed some within the hour.
    pub fn retain(&mut self, keep: impl Fn(&str, &str) -> bool) {
        for server in &mut self.servers {
            server.tools.retain(|t| keep(&server.name, &t.name));
        }
        self.servers.retain(|s| !s.tools.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::super::Outcome;
    use super::*;

    #[test]
    fn the_view_sums_the_hour_per_tool() {
        let now = 1_800_000_000_000;
        let mut w = Window::default();
        for ms in [10, 10, 10, 200] {
            w.record("srv", "echo", Outcome::Ok, ms, now - 5 * MINUTE_MS);
        }
        w.record("srv", "echo", Outcome::Upstream(502), 10, now);
        w.record("srv", "echo", Outcome::Validation, 0, now);
        w.record("srv", "old", Outcome::Ok, 10, now - 61 * MINUTE_MS);
        let view = HealthView::of(&w, now);
        assert_eq!(view.since, (now / MINUTE_MS - 59) * MINUTE_MS);
        let text = serde_json::to_value(&view).unwrap();
        // 200 ms reads as 198: the middle of its bucket, within the histogram's 5 %.
        assert_eq!(
            text["servers"],
            serde_json::json!([{"name": "srv", "tools": [{"name": "echo", "calls": 6, "errors": {"upstream 502": 1, "validation": 1}, "p50Ms": 10, "p95Ms": 198}]}])
        );
        assert_eq!(view.servers[0].tools[0].error_count(), 2);
        assert_eq!(serde_json::from_value::<HealthView>(text).unwrap(), view);
        let mut gone = view.clone();
        gone.retain(|server, tool| server == "srv" && tool != "echo");
        assert!(gone.servers.is_empty());
    }

    #[test]
    fn a_tool_with_only_refusals_has_no_percentiles() {
        let mut w = Window::default();
        w.record("srv", "echo", Outcome::Validation, 0, 0);
        let tool = &HealthView::of(&w, 0).servers[0].tools[0];
        assert_eq!((tool.calls, tool.p50_ms, tool.p95_ms), (1, None, None));
    }
}
