//! Health figures: per server and tool, the calls of the last hour, their errors by kind and
//! their latency percentiles. Pure: the edge records each call's outcome into an isolate's
//! `Window`, sends it to the `health` object every few seconds, and reads the view from there.
//!
//! - [`histogram`]: latencies in log-spaced buckets, mergeable, with percentiles.
//! - [`view`]: what the console and `GET /admin/api/health` show: the last hour, summed.
//!
//! A call is counted once it ends, under the configured tool it called (through catalog mode's
//! `call_tool` too). Catalog mode's `search_tools` and `describe_tool` are not counted: they
//! answer from the catalog, not an upstream. Deferred (queued and callback) calls are not
//! counted either: their upstream exchange happens in the queue consumer or the upstream's own
//! time, and their wait says nothing about the upstream's health. A call the client cancels has
//! no outcome and is not counted.
//!
//! The one import circle of this folder: `view` sums the `Window`s defined here, and this file
//! names `view::HealthView` for its users, so that they import one module.

pub mod histogram;
pub mod view;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use histogram::Histogram;
pub use view::HealthView;

/// One minute, the figures' unit of time.
pub const MINUTE_MS: u64 = 60_000;
/// The figures cover this many minutes: the last hour.
pub const MINUTES_KEPT: u64 = 60;

/// How a call ended: a small closed set, so the figures stay comparable across tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The upstream answered with a 2xx status (whatever the result says inside).
    Ok,
    /// The upstream answered with this non-2xx status.
    Upstream(u16),
    /// The call ran out of time: the tool's `timeoutMs`, or a stateless request's collection
    /// timeout.
    Timeout,
    /// The upstream was not reached, or its reply not read: a refused connection, DNS, the SSRF
    /// guard, too many redirects, a body that broke off.
    Network,
    /// The upstream's reply was larger than the tool's reply limit.
    Limit,
    /// The arguments did not fit the tool's input schema: no upstream request was made.
    Validation,
    /// The tool needed the client's input (sampling, elicitation), which the client could not
    /// or did not give.
    Client,
}

impl Outcome {
    /// The kind an error is counted under (`"upstream 502"`, `"timeout"`, ...); `None` for `Ok`.
    pub fn label(self) -> Option<String> {
        Some(match self {
            Outcome::Ok => return None,
            Outcome::Upstream(status) => format!("upstream {status}"),
            other => other.kind().to_string(),
        })
    }

    /// The kind without the status, for Analytics Engine's `blob3`.
    pub fn kind(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Upstream(_) => "upstream",
            Outcome::Timeout => "timeout",
            Outcome::Network => "network",
            Outcome::Limit => "limit",
            Outcome::Validation => "validation",
            Outcome::Client => "client",
        }
    }

    /// Whether the call made an upstream exchange whose latency means something: a refused
    /// call takes no time worth measuring, and would pull the percentiles down.
    pub fn timed(self) -> bool {
        self != Outcome::Validation
    }

    /// The outcome of an upstream exchange, from the edge's reading of it.
    pub fn of(upstream: &crate::upstream::reply::Upstream) -> Outcome {
        use crate::upstream::reply::Upstream;
        match upstream {
            Upstream::Reply { truncated_at: Some(_), .. } => Outcome::Limit,
            Upstream::Reply { status: 200..=299, .. } => Outcome::Ok,
            Upstream::Reply { status, .. } => Outcome::Upstream(*status),
            Upstream::TimedOut { .. } => Outcome::Timeout,
            Upstream::Failed(_) => Outcome::Network,
        }
    }
}

/// Whether a `tools/call` that was answered without an upstream call was refused for its
/// arguments: an invalid-params error (before 2025-11-25) or a tool error result (from then
/// on; `dispatch` answers invalid arguments so, so the model can correct itself). Read only on
/// that path, never for a call that reached an upstream.
pub fn refused(reply: &str) -> bool {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(reply.as_bytes()) else {
        return false;
    };
    let code = value.pointer("/error/code").and_then(serde_json::Value::as_i64);
    code == Some(crate::error::code::INVALID_PARAMS) || value.pointer("/result/isError") == Some(&serde_json::Value::Bool(true))
}

/// Whether such a refusal came from an access rule on the arguments (`crate::access`): the
/// metrics count it as `denied`, not as the caller's mistake.
pub fn by_policy(reply: &str) -> bool {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(reply.as_bytes()) else {
        return false;
    };
    let message = value.pointer("/error/message").or_else(|| value.pointer("/result/content/0/text")).and_then(serde_json::Value::as_str).unwrap_or_default();
    message.split_once("\": ").is_some_and(|(_, why)| why.starts_with(crate::access::REFUSED))
}

/// One tool's figures over some span: calls, errors by kind, latencies.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Stats {
    pub calls: u64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "Histogram::is_empty")]
    pub latency: Histogram,
}

impl Stats {
    pub fn record(&mut self, outcome: Outcome, latency_ms: u64) {
        self.calls += 1;
        if let Some(label) = outcome.label() {
            *self.errors.entry(label).or_default() += 1;
        }
        if outcome.timed() {
            self.latency.record(latency_ms);
        }
    }

    pub fn merge(&mut self, other: &Stats) {
        self.calls += other.calls;
        for (kind, count) in &other.errors {
            *self.errors.entry(kind.clone()).or_default() += count;
        }
        self.latency.merge(&other.latency);
    }
}

/// Server name → tool name → figures.
pub type Tools = BTreeMap<String, BTreeMap<String, Stats>>;

/// Figures by minute (milliseconds since the epoch ÷ 60 000): what an isolate gathers between
/// flushes, and what the `health` object keeps for the last hour. Two windows merge minute by
/// minute, so isolates' batches arriving in any order add up to the same figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Window(BTreeMap<u64, Tools>);

impl Window {
    pub fn record(&mut self, server: &str, tool: &str, outcome: Outcome, latency_ms: u64, now_ms: u64) {
        let tools = self.0.entry(now_ms / MINUTE_MS).or_default();
        // Looked up before inserting: a tool seen before costs no allocation.
        match tools.get_mut(server).and_then(|t| t.get_mut(tool)) {
            Some(stats) => stats.record(outcome, latency_ms),
            None => tools.entry(server.to_string()).or_default().entry(tool.to_string()).or_default().record(outcome, latency_ms),
        }
    }

    pub fn merge(&mut self, other: &Window) {
        for (minute, tools) in &other.0 {
            let mine = self.0.entry(*minute).or_default();
            for (server, stats) in tools {
                let mine = mine.entry(server.clone()).or_default();
                for (tool, s) in stats {
                    mine.entry(tool.clone()).or_default().merge(s);
                }
            }
        }
    }

    /// Forgets the minutes before the last hour (the current minute is the hour's last).
    pub fn prune(&mut self, now_ms: u64) {
        let first = first_minute(now_ms);
        self.0.retain(|minute, _| *minute >= first);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Everything since `first_minute(now_ms)`, summed per server and tool.
    pub fn last_hour(&self, now_ms: u64) -> Tools {
        let mut sum = Tools::new();
        for tools in self.0.range(first_minute(now_ms)..).map(|(_, t)| t) {
            for (server, stats) in tools {
                let mine = sum.entry(server.clone()).or_default();
                for (tool, s) in stats {
                    mine.entry(tool.clone()).or_default().merge(s);
                }
            }
        }
        sum
    }
}

/// The first minute of the hour that ends with the minute of `now_ms`.
pub fn first_minute(now_ms: u64) -> u64 {
    (now_ms / MINUTE_MS).saturating_sub(MINUTES_KEPT - 1)
}

/// One call as a Workers Analytics Engine data point: `index1` the server and tool (the
/// sampling key), `blob1` the server, `blob2` the tool, `blob3` the outcome's kind, `blob4` its
/// label (`"upstream 502"`; empty when ok), `double1` the latency in ms (-1 when not timed),
/// `double2` the upstream's status (0 when none). `docs/console.md` queries these columns.
#[derive(Debug, Clone, PartialEq)]
pub struct DataPoint {
    pub index: String,
    pub blobs: [String; 4],
    pub doubles: [f64; 2],
}

impl DataPoint {
    pub fn of(server: &str, tool: &str, outcome: Outcome, latency_ms: u64) -> DataPoint {
        // An index is at most 96 bytes: cut on a character boundary.
        let mut index = format!("{server}/{tool}");
        if index.len() > 96 {
            let cut = (0..=96).rev().find(|i| index.is_char_boundary(*i)).unwrap_or(0);
            index.truncate(cut);
        }
        let status = match outcome {
            Outcome::Upstream(status) => f64::from(status),
            _ => 0.0,
        };
        let latency = if outcome.timed() { latency_ms as f64 } else { -1.0 };
        DataPoint {
            index,
            blobs: [server.to_string(), tool.to_string(), outcome.kind().to_string(), outcome.label().unwrap_or_default()],
            doubles: [latency, status],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::reply::Upstream;

    const T0: u64 = 1_800_000_000_000;

    #[test]
    fn a_refusal_by_an_access_rule_is_told_from_the_caller_s_mistake() {
        let tool_error = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"invalid arguments for tool \"t\": refused by the policy \"own\""}],"isError":true}}"#;
        let params = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: invalid arguments for tool \"t\": refused by the policy \"own\""}}"#;
        let schema = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"invalid arguments for tool \"t\": /a: \"refused by the policy \" is not a number"}],"isError":true}}"#;
        assert!(refused(tool_error) && by_policy(tool_error) && by_policy(params));
        assert!(refused(schema) && !by_policy(schema), "an argument's value cannot pass for a rule's refusal");
    }

    #[test]
    fn outcomes_are_classified_from_the_exchange() {
        let reply = |status, truncated_at| Upstream::Reply { status, content_type: None, body: Vec::new(), truncated_at };
        assert_eq!(Outcome::of(&reply(200, None)), Outcome::Ok);
        assert_eq!(Outcome::of(&reply(204, None)), Outcome::Ok);
        assert_eq!(Outcome::of(&reply(502, None)), Outcome::Upstream(502));
        assert_eq!(Outcome::of(&reply(404, None)), Outcome::Upstream(404));
        assert_eq!(Outcome::of(&reply(200, Some(10))), Outcome::Limit);
        assert_eq!(Outcome::of(&Upstream::TimedOut { after_ms: 300 }), Outcome::Timeout);
        assert_eq!(Outcome::of(&Upstream::Failed("connection refused".into())), Outcome::Network);
        let labels: Vec<_> = [Outcome::Ok, Outcome::Upstream(502), Outcome::Timeout, Outcome::Network, Outcome::Limit, Outcome::Validation, Outcome::Client].map(Outcome::label).into();
        assert_eq!(labels, [None, Some("upstream 502".into()), Some("timeout".into()), Some("network".into()), Some("limit".into()), Some("validation".into()), Some("client".into())]);
    }

    #[test]
    fn refusals_are_told_from_other_replies() {
        assert!(refused(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid arguments for tool \"echo\""}}"#));
        assert!(refused(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#));
        assert!(!refused(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#));
        assert!(!refused(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}"#));
        assert!(!refused("not json"));
    }

    #[test]
    fn stats_count_calls_errors_and_timed_latencies() {
        let mut s = Stats::default();
        s.record(Outcome::Ok, 10);
        s.record(Outcome::Upstream(502), 20);
        s.record(Outcome::Upstream(502), 30);
        s.record(Outcome::Validation, 0);
        assert_eq!(s.calls, 4);
        assert_eq!(s.errors, BTreeMap::from([("upstream 502".to_string(), 2), ("validation".to_string(), 1)]));
        assert_eq!(s.latency.count(), 3);
    }

    #[test]
    fn windows_merge_minute_by_minute_in_any_order() {
        let mut a = Window::default();
        a.record("s", "echo", Outcome::Ok, 5, T0);
        a.record("s", "echo", Outcome::Timeout, 300, T0 + MINUTE_MS);
        let mut b = Window::default();
        b.record("s", "echo", Outcome::Ok, 7, T0 + 1);
        b.record("t", "fail", Outcome::Upstream(500), 3, T0 + MINUTE_MS);
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        assert_eq!(ab, ba);
        let hour = ab.last_hour(T0 + MINUTE_MS);
        assert_eq!(hour["s"]["echo"].calls, 3);
        assert_eq!(hour["s"]["echo"].errors, BTreeMap::from([("timeout".to_string(), 1)]));
        assert_eq!(hour["t"]["fail"].errors, BTreeMap::from([("upstream 500".to_string(), 1)]));
        // Stored and sent as JSON, and read back the same.
        let text = serde_json::to_string(&ab).unwrap();
        assert_eq!(serde_json::from_str::<Window>(&text).unwrap(), ab);
    }

    #[test]
    fn only_the_last_hour_is_kept() {
        let mut w = Window::default();
        w.record("s", "old", Outcome::Ok, 1, T0);
        w.record("s", "new", Outcome::Ok, 1, T0 + 59 * MINUTE_MS);
        // Minute 0 is still the hour's first at minute 59 ...
        assert!(w.last_hour(T0 + 59 * MINUTE_MS)["s"].contains_key("old"));
        w.prune(T0 + 59 * MINUTE_MS);
        assert!(w.last_hour(T0 + 59 * MINUTE_MS)["s"].contains_key("old"));
        // ... and gone at minute 60, from the sums as from storage.
        assert!(!w.last_hour(T0 + 60 * MINUTE_MS)["s"].contains_key("old"));
        w.prune(T0 + 60 * MINUTE_MS);
        assert_eq!(w.0.len(), 1);
        w.prune(T0 + 200 * MINUTE_MS);
        assert!(w.is_empty());
    }

    #[test]
    fn data_points_name_their_columns() {
        let p = DataPoint::of("srv", "echo", Outcome::Upstream(502), 42);
        assert_eq!(p.index, "srv/echo");
        assert_eq!(p.blobs, ["srv".to_string(), "echo".into(), "upstream".into(), "upstream 502".into()]);
        assert_eq!(p.doubles, [42.0, 502.0]);
        let refused = DataPoint::of("srv", "echo", Outcome::Validation, 0);
        assert_eq!(refused.doubles, [-1.0, 0.0]);
        assert_eq!(DataPoint::of("srv", "ok", Outcome::Ok, 3).blobs[3], "");
        let long = DataPoint::of(&"é".repeat(60), "t", Outcome::Ok, 1);
        assert!(long.index.len() <= 96 && long.index.chars().all(|c| c == 'é'));
    }
}
