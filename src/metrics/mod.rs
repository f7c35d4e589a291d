//! Cumulative metrics: monotonic totals since the `health` object was created, never pruned,
//! beside the health figures' last hour (`crate::health`). Pure: the edge adds each call, each
//! deployment event and each gauge change to an isolate's `Totals`, sends it with the health
//! figures every few seconds, and the object adds the batches up; `GET /metrics` renders the
//! sum (`prometheus`).
//!
//! - [`prometheus`]: the totals as Prometheus text exposition 0.0.4 or OpenMetrics 1.0.0.
//! - [`otlp`]: the totals as OTLP's metrics export (protobuf), cumulative.
//!
//! Every total merges by addition (gauges are sums of +1/-1 changes, an upstream's state the
//! latest report), so batches from any number of isolates, in any order, add up to the same
//! figures. Labels are bounded: servers, configured tools and upstreams, a closed set of
//! outcomes and states; a principal only where the configuration opts in
//! (`telemetry.metrics.principalLabel`), never a session id.

pub mod otlp;
pub mod prometheus;

use std::collections::BTreeMap;

/// How a `tools/call` ended, as the metrics (and the log line) name it: a closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
    /// A connection's token read from its principal's object, on an isolate's cache miss: the
    /// cost a connection adds, which should be once per isolate and refresh period, not per call.
    ConnectionTokenReads,
    /// A connection's token refreshed at its provider (before expiry, or after an upstream's 401).
    ConnectionRefreshes,
    /// A tool call answered from the tool's kept result (`cache.results`), fresh.
    ToolCacheHits,
    /// A call of a tool that keeps results that went upstream for a new result.
    ToolCacheMisses,
    /// A stale kept result the upstream confirmed (304 to `If-None-Match`), served again.
    ToolCacheRevalidations,
}

impl Counter {
    pub const ALL: [Counter; 10] = [
        Counter::OauthGrantsIssued,
        Counter::OauthGrantsRefused,
        Counter::SigninFailures,
        Counter::OtlpSpansDropped,
        Counter::OtlpPointsDropped,
        Counter::ConnectionTokenReads,
        Counter::ConnectionRefreshes,
        Counter::ToolCacheHits,
        Counter::ToolCacheMisses,
        Counter::ToolCacheRevalidations,
    ];

    /// The metric's family name (without `_total`) and its help text.
    pub fn family(self) -> (&'static str, &'static str) {
        match self {
            Counter::OauthGrantsIssued => ("mcp_edge_oauth_grants_issued", "Access tokens issued by the authorization server's /token."),
            Counter::OauthGrantsRefused => ("mcp_edge_oauth_grants_refused", "Token requests the authorization server refused."),
            Counter::SigninFailures => ("mcp_edge_signin_failures", "Failed sign-ins: the console's and the authorization server's."),
            Counter::OtlpSpansDropped => ("mcp_edge_otlp_spans_dropped", "OTLP spans dropped: queue full or collector unreachable."),
            Counter::OtlpPointsDropped => ("mcp_edge_otlp_points_dropped", "OTLP metric points dropped: collector unreachable."),
            Counter::ConnectionTokenReads => ("mcp_edge_connection_token_reads", "Connection tokens read from their principal's Durable Object (an isolate's cache miss)."),
            Counter::ConnectionRefreshes => ("mcp_edge_connection_refreshes", "Connection tokens refreshed at their provider."),
            Counter::ToolCacheHits => ("mcp_edge_tool_cache_hits", "Tool calls answered from a kept result (cache.results)."),
            Counter::ToolCacheMisses => ("mcp_edge_tool_cache_misses", "Calls of tools that keep results that went upstream for a new result."),
            Counter::ToolCacheRevalidations => ("mcp_edge_tool_cache_revalidations", "Stale kept results an upstream confirmed with 304, served again."),
        }
    }
}

/// A gauge kept as the sum of its changes, reported by whoever opens and closes the thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
    fn name(self) -> &'static str {
        match self {
            Gauge::Sessions => "sessions",
            Gauge::Streams => "streams",
            other => other.task_state().unwrap_or_default(),
        }
    }

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

/// A latency histogram as read back: the count per bucket (not cumulative; the last is +Inf)
/// and the sum in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Buckets {
    pub counts: [u64; BOUNDS_MS.len() + 1],
    pub sum_ms: u64,
}

impl Buckets {
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// Which histogram: the whole call's, or its upstream exchanges'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Histogram {
    Duration,
    Upstream,
}

impl Histogram {
    fn kind(self) -> &'static str {
        match self {
            Histogram::Duration => "d",
            Histogram::Upstream => "u",
        }
    }
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

/// Separates a key's parts: a character no configured name or principal carries.
const SEP: char = '\u{1f}';

/// Everything counted: what an isolate gathers between flushes, and what the `health` object
/// keeps since it was created. One flat map from a series' key to its number, so that its JSON
/// (the flush's body, the object's storage) costs the module no serde code of its own: the
/// health figures already carry a `BTreeMap<String, u64>`. Keys are parts joined by `SEP`:
///
/// - `c server tool principal outcome`: calls;
/// - `d server tool i` and `d server tool s` (and `u ...`): the whole call's (the upstream's)
///   latency histogram, bucket `i` and the sum in ms;
/// - `n counter`: a deployment counter; `g gauge`: a gauge's changes, summed in two's
///   complement (a `u64` that wraps below 0);
/// - `up server upstream`: an upstream MCP server's state reported at `ms`, as `ms × 2 + up`,
///   and `r server upstream`: when its lists were last read. These two merge by their maximum
///   (the latest report wins); every other key by addition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals(pub BTreeMap<String, u64>);

fn key(parts: &[&str]) -> String {
    let mut key = String::new();
    key_into(&mut key, parts);
    key
}

fn key_into(key: &mut String, parts: &[&str]) {
    key.reserve(parts.iter().map(|p| p.len() + 1).sum());
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            key.push(SEP);
        }
        key.push_str(part);
    }
}

/// The histogram buckets' labels in keys: their index.
const BUCKET_LABELS: [&str; BOUNDS_MS.len() + 1] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14"];

thread_local! {
    /// Where a call's keys are spelled: a key already counted, as nearly every call's are, is
    /// then looked up without a `String` of its own (five a call, about 1 % of a plain call).
    static SCRATCH: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

impl Totals {
    fn add(&mut self, parts: &[&str], n: u64) {
        self.merge_at(parts, n, u64::wrapping_add);
    }

    fn max(&mut self, parts: &[&str], n: u64) {
        self.merge_at(parts, n, u64::max);
    }

    /// The value under the key of `parts`, replaced by `f` of it (0 when new) and `n`. A function
    /// pointer, not a closure: one copy of this in the module.
    fn merge_at(&mut self, parts: &[&str], n: u64, f: fn(u64, u64) -> u64) {
        SCRATCH.with(|scratch| {
            let mut key = scratch.borrow_mut();
            key.clear();
            key_into(&mut key, parts);
            match self.0.get_mut(key.as_str()) {
                Some(value) => *value = f(*value, n),
                None => {
                    self.0.insert(key.clone(), f(0, n));
                }
            }
        });
    }

    fn observe(&mut self, histogram: Histogram, server: &str, tool: &str, ms: u64) {
        let bucket = BOUNDS_MS.iter().position(|b| ms <= *b).unwrap_or(BOUNDS_MS.len());
        let label = BUCKET_LABELS.get(bucket).copied().unwrap_or_default();
        self.add(&[histogram.kind(), server, tool, label], 1);
        self.add(&[histogram.kind(), server, tool, "s"], ms);
    }

    pub fn record(&mut self, call: &Call<'_>) {
        self.add(&["c", call.server, call.tool, call.principal, call.outcome.name()], 1);
        if let Some(ms) = call.duration_ms {
            self.observe(Histogram::Duration, call.server, call.tool, ms);
        }
        if let Some(ms) = call.upstream_ms {
            self.observe(Histogram::Upstream, call.server, call.tool, ms);
        }
    }

    pub fn count(&mut self, counter: Counter, n: u64) {
        self.add(&["n", counter.family().0], n);
    }

    pub fn change(&mut self, gauge: Gauge, delta: i64) {
        self.add(&["g", gauge.name()], delta as u64);
    }

    /// An upstream MCP server's lists read (`up`) or not, at `now_ms`.
    pub fn upstream(&mut self, server: &str, upstream: &str, up: bool, now_ms: u64) {
        self.max(&["up", server, upstream], now_ms.saturating_mul(2) + u64::from(up));
        if up {
            self.max(&["r", server, upstream], now_ms);
        }
    }

    pub fn merge(&mut self, other: &Totals) {
        for (key, n) in &other.0 {
            if key.starts_with(&format!("up{SEP}")) || key.starts_with(&format!("r{SEP}")) {
                self.max(&[key], *n);
            } else {
                self.add(&[key], *n);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The entries whose key starts with `kind`, their key's other parts split.
    fn entries<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = (Vec<&'a str>, u64)> + 'a {
        let prefix = format!("{kind}{SEP}");
        self.0.range(prefix.clone()..).take_while(move |(k, _)| k.starts_with(&prefix)).map(move |(k, n)| (k.get(kind.len() + 1..).unwrap_or_default().split(SEP).collect(), *n))
    }

    /// Calls: (server, tool, principal, outcome, count), by server, tool, principal, outcome.
    pub fn calls(&self) -> impl Iterator<Item = ([&str; 4], u64)> {
        self.entries("c").filter_map(|(parts, n)| Some(([*parts.first()?, *parts.get(1)?, *parts.get(2)?, *parts.get(3)?], n)))
    }

    /// A histogram per (server, tool), in that order. A histogram's keys sit together in the
    /// sorted map, so one pass reads them.
    pub fn histograms(&self, histogram: Histogram) -> Vec<((&str, &str), Buckets)> {
        let mut all: Vec<((&str, &str), Buckets)> = Vec::new();
        for (parts, n) in self.entries(histogram.kind()) {
            let (Some(server), Some(tool), Some(which)) = (parts.first(), parts.get(1), parts.get(2)) else { continue };
            if all.last().is_none_or(|(at, _)| *at != (*server, *tool)) {
                all.push(((server, tool), Buckets::default()));
            }
            let Some((_, buckets)) = all.last_mut() else { continue };
            match which.parse::<usize>() {
                Ok(i) => {
                    if let Some(count) = buckets.counts.get_mut(i) {
                        *count += n;
                    }
                }
                Err(_) => buckets.sum_ms += n,
            }
        }
        all
    }

    pub fn counter(&self, counter: Counter) -> u64 {
        self.0.get(&key(&["n", counter.family().0])).copied().unwrap_or(0)
    }

    pub fn gauge(&self, gauge: Gauge) -> i64 {
        self.0.get(&key(&["g", gauge.name()])).copied().unwrap_or(0) as i64
    }

    /// Upstream MCP servers: (server, upstream, up, when its lists were last read (0: never)).
    pub fn upstreams(&self) -> Vec<(&str, &str, bool, u64)> {
        self.entries("up")
            .filter_map(|(parts, n)| {
                let (server, upstream) = (*parts.first()?, *parts.get(1)?);
                let refreshed = self.0.get(&key(&["r", server, upstream])).copied().unwrap_or(0);
                Some((server, upstream, n % 2 == 1, refreshed))
            })
            .collect()
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
    }

    #[test]
    fn buckets_hold_their_upper_bound() {
        let mut t = Totals::default();
        for ms in [0, 10, 11, 300_000, 300_001] {
            t.record(&call("echo", Outcome::Ok, Some(ms)));
        }
        let [(at, b)] = &t.histograms(Histogram::Duration)[..] else { panic!() };
        assert_eq!(*at, ("srv", "echo"));
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
        a.upstream("srv", "up", true, 100);
        let mut b = Totals::default();
        b.record(&call("echo", Outcome::Ok, Some(50)));
        b.record(&call("fail", Outcome::UpstreamError, Some(1)));
        b.change(Gauge::Sessions, -1);
        b.change(Gauge::Streams, -1);
        b.upstream("srv", "up", false, 200);
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        assert_eq!(ab, ba);
        let calls: Vec<_> = ab.calls().collect();
        assert_eq!(calls, [(["srv", "echo", "", "denied"], 1), (["srv", "echo", "", "ok"], 2), (["srv", "fail", "", "upstream_error"], 1)]);
        let histograms = ab.histograms(Histogram::Duration);
        let echo = &histograms.iter().find(|(at, _)| *at == ("srv", "echo")).unwrap().1;
        assert_eq!(histograms.len(), 2);
        assert_eq!((echo.count(), echo.sum_ms), (2, 55));
        assert_eq!((ab.gauge(Gauge::Sessions), ab.gauge(Gauge::Streams), ab.counter(Counter::SigninFailures)), (0, -1, 2));
        // The later report wins; the last read is kept.
        assert_eq!(ab.upstreams(), [("srv", "up", false, 100)]);
        // Stored and sent as JSON, and read back the same.
        let text = serde_json::to_string(&ab.0).unwrap();
        assert_eq!(Totals(serde_json::from_str(&text).unwrap()), ab);
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
