//! Cumulative metrics: monotonic totals since the `health` object was created, never pruned,
//! beside the health figures' last hour (`crate::health`). Pure: the edge adds each call, each
//! deployment event and each gauge change to an isolate's `Totals`, sends it with the health
//! figures every few seconds, and the object adds the batches up; `GET /metrics` renders the
//! sum (`prometheus`).
//!
//! - [`prometheus`]: the totals as Prometheus text exposition 0.0.4 or OpenMetrics 1.0.0.
//!
//! Every total merges by addition (gauges are sums of +1/-1 changes, an upstream's state the
//! latest report), so batches from any number of isolates, in any order, add up to the same
//! figures. Labels are bounded: servers, configured tools and upstreams, a closed set of
//! outcomes and states; a principal only where the configuration opts in
//! (`telemetry.metrics.principalLabel`), never a session id.

pub mod prometheus;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How a `tools/call` ended, as the metrics (and the log line) name it: a closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The upstream answered with 2xx, and the result is not an error.
    Ok,
    /// The result is an error: the upstream said so (`isError`), the arguments did not fit the
    /// tool's schema, or the client did not give the input the tool asked for.
    ToolError,
    /// A non-2xx status, a network failure, a reply over the tool's limit.
    UpstreamError,
    Timeout,
    /// The client cancelled the call (`notifications/cancelled`) before it ended.
    Cancelled,
    /// Refused for who asked: a configured tool the principal's roles may not call.
    Denied,
    /// Refused by a limit: more calls in flight in the session than `limits.maxCallsInFlight`.
    RateLimited,
}

impl Outcome {
    pub const ALL: [Outcome; 7] = [Outcome::Ok, Outcome::ToolError, Outcome::UpstreamError, Outcome::Timeout, Outcome::Cancelled, Outcome::Denied, Outcome::RateLimited];

    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::UpstreamError => "upstream_error",
            Outcome::Timeout => "timeout",
            Outcome::Cancelled => "cancelled",
            Outcome::Denied => "denied",
            Outcome::RateLimited => "rate_limited",
        }
    }

    /// The health figures' finer kind, mapped; `is_error`: the result says `isError`.
    pub fn of(health: crate::health::Outcome, is_error: bool) -> Outcome {
        use crate::health::Outcome as H;
        match health {
            H::Ok if is_error => Outcome::ToolError,
            H::Ok => Outcome::Ok,
            H::Validation | H::Client => Outcome::ToolError,
            H::Upstream(_) | H::Network | H::Limit => Outcome::UpstreamError,
            H::Timeout => Outcome::Timeout,
        }
    }
}

/// The deployment's named counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Counter {
    /// An authorization code or refresh token exchanged for an access token at `/token`.
    OauthGrantsIssued,
    /// A `/token` request refused (`invalid_grant`, `invalid_client`, ...).
    OauthGrantsRefused,
    /// A sign-in that failed: the console's, or the authorization server's.
    SigninFailures,
    /// OTLP spans dropped: the isolate's queue was full, or the collector did not take them.
    OtlpSpansDropped,
    /// OTLP metric points dropped the same way.
    OtlpPointsDropped,
}

impl Counter {
    pub const ALL: [Counter; 5] = [Counter::OauthGrantsIssued, Counter::OauthGrantsRefused, Counter::SigninFailures, Counter::OtlpSpansDropped, Counter::OtlpPointsDropped];

    /// The metric's family name (without `_total`) and its help text.
    pub fn family(self) -> (&'static str, &'static str) {
        match self {
            Counter::OauthGrantsIssued => ("mcp_edge_oauth_grants_issued", "Access tokens issued by the authorization server's /token."),
            Counter::OauthGrantsRefused => ("mcp_edge_oauth_grants_refused", "Token requests the authorization server refused."),
            Counter::SigninFailures => ("mcp_edge_signin_failures", "Failed sign-ins: the console's and the authorization server's."),
            Counter::OtlpSpansDropped => ("mcp_edge_otlp_spans_dropped", "OTLP spans dropped: queue full or collector unreachable."),
            Counter::OtlpPointsDropped => ("mcp_edge_otlp_points_dropped", "OTLP metric points dropped: collector unreachable."),
        }
    }
}

/// A gauge kept as the sum of its changes, reported by whoever opens and closes the thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gauge {
    /// Sessions started (`initialize`) and not yet ended (DELETE, expiry).
    Sessions,
    /// Streams open in session objects: GET streams, legacy SSE streams, POST streams.
    Streams,
    TasksWorking,
    TasksInputRequired,
    TasksCompleted,
    TasksFailed,
    TasksCancelled,
}

impl Gauge {
    /// The gauge of tasks in a state, by the state's wire name (`crate::tasks::Status::name`).
    pub fn tasks(state: &str) -> Option<Gauge> {
        Some(match state {
            "working" => Gauge::TasksWorking,
            "input_required" => Gauge::TasksInputRequired,
            "completed" => Gauge::TasksCompleted,
            "failed" => Gauge::TasksFailed,
            "cancelled" => Gauge::TasksCancelled,
            _ => return None,
        })
    }

    /// The task state a task gauge stands for.
    pub fn task_state(self) -> Option<&'static str> {
        Some(match self {
            Gauge::TasksWorking => "working",
            Gauge::TasksInputRequired => "input_required",
            Gauge::TasksCompleted => "completed",
            Gauge::TasksFailed => "failed",
            Gauge::TasksCancelled => "cancelled",
            Gauge::Sessions | Gauge::Streams => return None,
        })
    }
}

/// The upper bounds, in milliseconds, of the latency histograms' buckets: OpenTelemetry's MCP
/// semantic conventions' advice for `mcp.server.operation.duration` (0.01 s to 300 s).
pub const BOUNDS_MS: [u64; 14] = [10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000];

/// A cumulative latency histogram over `BOUNDS_MS`: the count per bucket (not cumulative; the
/// last is +Inf) and the sum in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Buckets {
    pub counts: Vec<u64>,
    pub sum_ms: u64,
}

impl Buckets {
    pub fn record(&mut self, ms: u64) {
        let bucket = BOUNDS_MS.iter().position(|b| ms <= *b).unwrap_or(BOUNDS_MS.len());
        self.counts.resize(BOUNDS_MS.len() + 1, 0);
        if let Some(count) = self.counts.get_mut(bucket) {
            *count += 1;
        }
        self.sum_ms += ms;
    }

    pub fn merge(&mut self, other: &Buckets) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.sum_ms += other.sum_ms;
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }
}

/// One tool's totals: calls by principal (`""` when the label is off) and outcome; the whole
/// call's latency, and the upstream exchange's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolTotals {
    pub calls: BTreeMap<String, BTreeMap<Outcome, u64>>,
    #[serde(skip_serializing_if = "Buckets::is_empty")]
    pub duration: Buckets,
    #[serde(skip_serializing_if = "Buckets::is_empty")]
    pub upstream: Buckets,
}

/// An upstream MCP server's state as last reported: whether its lists could be read, and when
/// they last were.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UpstreamState {
    pub up: bool,
    /// When its lists were last read (ms since the epoch); 0: never.
    pub refreshed_ms: u64,
    /// When this state was reported: the later report wins a merge.
    pub at_ms: u64,
}

/// One call as the metrics count it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub server: &'a str,
    pub tool: &'a str,
    /// `""` unless the deployment opts in to the principal label.
    pub principal: &'a str,
    pub outcome: Outcome,
    /// The whole call, when it ran (not for a refusal).
    pub duration_ms: Option<u64>,
    /// The upstream exchanges' part of it, when one was made.
    pub upstream_ms: Option<u64>,
}

/// Everything counted: what an isolate gathers between flushes, and what the `health` object
/// keeps since it was created.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Totals {
    /// Server name → tool name → totals.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, BTreeMap<String, ToolTotals>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<Counter, u64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub gauges: BTreeMap<Gauge, i64>,
    /// Server name → upstream MCP server name → state.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub upstreams: BTreeMap<String, BTreeMap<String, UpstreamState>>,
}

impl Totals {
    pub fn record(&mut self, call: &Call<'_>) {
        // Looked up before inserting: a tool seen before costs no allocation.
        let tool = match self.tools.get_mut(call.server).and_then(|t| t.get_mut(call.tool)) {
            Some(tool) => tool,
            None => self.tools.entry(call.server.to_string()).or_default().entry(call.tool.to_string()).or_default(),
        };
        let by_outcome = match tool.calls.get_mut(call.principal) {
            Some(by_outcome) => by_outcome,
            None => tool.calls.entry(call.principal.to_string()).or_default(),
        };
        *by_outcome.entry(call.outcome).or_default() += 1;
        if let Some(ms) = call.duration_ms {
            tool.duration.record(ms);
        }
        if let Some(ms) = call.upstream_ms {
            tool.upstream.record(ms);
        }
    }

    pub fn count(&mut self, counter: Counter, n: u64) {
        *self.counters.entry(counter).or_default() += n;
    }

    pub fn change(&mut self, gauge: Gauge, delta: i64) {
        *self.gauges.entry(gauge).or_default() += delta;
    }

    pub fn upstream(&mut self, server: &str, upstream: &str, state: UpstreamState) {
        let mine = self.upstreams.entry(server.to_string()).or_default().entry(upstream.to_string()).or_default();
        mine.merge(state);
    }

    pub fn merge(&mut self, other: &Totals) {
        for (server, tools) in &other.tools {
            let mine = self.tools.entry(server.clone()).or_default();
            for (name, theirs) in tools {
                let tool = mine.entry(name.clone()).or_default();
                for (principal, outcomes) in &theirs.calls {
                    let by_outcome = tool.calls.entry(principal.clone()).or_default();
                    for (outcome, n) in outcomes {
                        *by_outcome.entry(*outcome).or_default() += n;
                    }
                }
                tool.duration.merge(&theirs.duration);
                tool.upstream.merge(&theirs.upstream);
            }
        }
        for (counter, n) in &other.counters {
            self.count(*counter, *n);
        }
        for (gauge, delta) in &other.gauges {
            self.change(*gauge, *delta);
        }
        for (server, upstreams) in &other.upstreams {
            for (name, state) in upstreams {
                self.upstream(server, name, *state);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.counters.is_empty() && self.gauges.is_empty() && self.upstreams.is_empty()
    }
}

impl UpstreamState {
    fn merge(&mut self, other: UpstreamState) {
        if other.at_ms >= self.at_ms {
            self.up = other.up;
            self.at_ms = other.at_ms;
        }
        self.refreshed_ms = self.refreshed_ms.max(other.refreshed_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::Outcome as H;

    fn call<'a>(tool: &'a str, outcome: Outcome, ms: Option<u64>) -> Call<'a> {
        Call { server: "srv", tool, principal: "", outcome, duration_ms: ms, upstream_ms: ms }
    }

    #[test]
    fn health_outcomes_map_onto_the_closed_set() {
        assert_eq!(Outcome::of(H::Ok, false), Outcome::Ok);
        assert_eq!(Outcome::of(H::Ok, true), Outcome::ToolError);
        assert_eq!(Outcome::of(H::Validation, true), Outcome::ToolError);
        assert_eq!(Outcome::of(H::Client, false), Outcome::ToolError);
        for h in [H::Upstream(500), H::Network, H::Limit] {
            assert_eq!(Outcome::of(h, true), Outcome::UpstreamError);
        }
        assert_eq!(Outcome::of(H::Timeout, true), Outcome::Timeout);
        assert_eq!(Outcome::ALL.map(Outcome::name).join(" "), "ok tool_error upstream_error timeout cancelled denied rate_limited");
        assert_eq!(serde_json::to_string(&Outcome::RateLimited).unwrap(), r#""rate_limited""#);
    }

    #[test]
    fn buckets_hold_their_upper_bound() {
        let mut b = Buckets::default();
        for ms in [0, 10, 11, 300_000, 300_001] {
            b.record(ms);
        }
        assert_eq!(b.counts, [2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
        assert_eq!((b.count(), b.sum_ms), (5, 600_022));
    }

    #[test]
    fn totals_merge_by_addition_in_any_order() {
        let mut a = Totals::default();
        a.record(&call("echo", Outcome::Ok, Some(5)));
        a.record(&call("echo", Outcome::Denied, None));
        a.count(Counter::SigninFailures, 2);
        a.change(Gauge::Sessions, 1);
        a.upstream("srv", "up", UpstreamState { up: true, refreshed_ms: 100, at_ms: 100 });
        let mut b = Totals::default();
        b.record(&call("echo", Outcome::Ok, Some(50)));
        b.record(&call("fail", Outcome::UpstreamError, Some(1)));
        b.change(Gauge::Sessions, -1);
        b.change(Gauge::Streams, 1);
        b.upstream("srv", "up", UpstreamState { up: false, refreshed_ms: 0, at_ms: 200 });
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        assert_eq!(ab, ba);
        let echo = &ab.tools["srv"]["echo"];
        assert_eq!(echo.calls[""][&Outcome::Ok], 2);
        assert_eq!(echo.calls[""][&Outcome::Denied], 1);
        assert_eq!((echo.duration.count(), echo.duration.sum_ms), (2, 55));
        assert_eq!(ab.gauges[&Gauge::Sessions], 0);
        assert_eq!(ab.upstreams["srv"]["up"], UpstreamState { up: false, refreshed_ms: 100, at_ms: 200 });
        let text = serde_json::to_string(&ab).unwrap();
        assert_eq!(serde_json::from_str::<Totals>(&text).unwrap(), ab);
        assert!(Totals::default().is_empty() && !ab.is_empty());
    }

    #[test]
    fn task_gauges_name_their_state() {
        for state in ["working", "input_required", "completed", "failed", "cancelled"] {
            assert_eq!(Gauge::tasks(state).and_then(Gauge::task_state), Some(state));
        }
        assert_eq!(Gauge::tasks("other"), None);
        assert_eq!(Gauge::Sessions.task_state(), None);
    }
}
