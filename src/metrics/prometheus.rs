//! The totals as Prometheus text exposition format 0.0.4, or as OpenMetrics 1.0.0 when the
//! scraper asks for it (`Accept: application/openmetrics-text`). Rendered by hand: two small
//! text formats do not need a crate, and the module's size is a budget.
//!
//! The two differ in a few places, all here: OpenMetrics names a counter's family without
//! `_total` (its samples keep it), writes `# UNIT` for the seconds metrics, spells `le` bounds
//! as floats (`1.0`), and ends with `# EOF`.

use std::fmt::Write;

use crate::method::Method;

use super::{Buckets, Counter, Gauge, Histogram, Totals, BOUNDS_MS};

/// Which exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    OpenMetrics,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it names it (Prometheus sends it
    /// first, with a weight), else the text format.
    pub fn of(accept: Option<&str>) -> Format {
        match accept {
            Some(accept) if accept.split(',').any(|part| part.trim().to_ascii_lowercase().starts_with("application/openmetrics-text")) => Format::OpenMetrics,
            _ => Format::Text,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// The whole call's latency: OpenTelemetry's `mcp.server.operation.duration`, as Prometheus
/// names it.
pub const DURATION: &str = "mcp_server_operation_duration_seconds";
/// The upstream exchanges' part of a call.
pub const UPSTREAM_DURATION: &str = "mcp_edge_upstream_duration_seconds";
/// Tool calls by server, tool and outcome.
pub const CALLS: &str = "mcp_edge_tool_calls";

/// Renders `totals` in `format`.
pub fn render(totals: &Totals, format: Format) -> String {
    let mut out = Writer { text: String::with_capacity(1024 + totals.0.len() * 160), format };
    out.family(CALLS, "counter", "Tool calls by server, tool and outcome.", None);
    for ([server, tool, principal, outcome], n) in totals.calls() {
        let mut labels = vec![("server", server), ("tool", tool), ("outcome", outcome)];
        if !principal.is_empty() {
            labels.push(("principal", principal));
        }
        out.sample(&format!("{CALLS}_total"), &labels, n);
    }
    out.family(DURATION, "histogram", "Duration of MCP tool calls as mcp-edge served them, in seconds.", Some("seconds"));
    for ((server, tool), b) in totals.histograms(Histogram::Duration) {
        out.histogram(DURATION, &[("mcp_method_name", Method::ToolsCall.name()), ("gen_ai_tool_name", tool), ("server", server)], &b);
    }
    out.family(UPSTREAM_DURATION, "histogram", "Duration of the upstream exchanges of a tool call, in seconds.", Some("seconds"));
    for ((server, tool), b) in totals.histograms(Histogram::Upstream) {
        out.histogram(UPSTREAM_DURATION, &[("server", server), ("tool", tool)], &b);
    }
    for counter in Counter::ALL {
        let (name, help) = counter.family();
        out.family(name, "counter", help, None);
        out.sample(&format!("{name}_total"), &[], totals.counter(counter));
    }
    // A gauge kept as a sum of changes reads below 0 only if a close was counted without its
    // open (an isolate's batch lost): 0 is the honest floor.
    let gauge = |g: Gauge| u64::try_from(totals.gauge(g)).unwrap_or(0);
    out.family("mcp_edge_sessions_open", "gauge", "Sessions started and not yet ended.", None);
    out.sample("mcp_edge_sessions_open", &[], gauge(Gauge::Sessions));
    out.family("mcp_edge_streams_open", "gauge", "Streams open in session objects.", None);
    out.sample("mcp_edge_streams_open", &[], gauge(Gauge::Streams));
    out.family("mcp_edge_tasks", "gauge", "Tasks kept, by state.", None);
    for g in [Gauge::TasksWorking, Gauge::TasksInputRequired, Gauge::TasksCompleted, Gauge::TasksFailed, Gauge::TasksCancelled] {
        out.sample("mcp_edge_tasks", &[("state", g.task_state().unwrap_or_default())], gauge(g));
    }
    let upstreams = totals.upstreams();
    out.family("mcp_edge_upstream_server_up", "gauge", "Whether an upstream MCP server's lists could be read when last tried (1) or not (0).", None);
    for (server, name, up, _) in &upstreams {
        out.sample("mcp_edge_upstream_server_up", &[("server", server), ("upstream", name)], u64::from(*up));
    }
    let refreshed = "mcp_edge_upstream_lists_refreshed_timestamp_seconds";
    out.family(refreshed, "gauge", "When an upstream MCP server's lists were last read, in seconds since the epoch.", Some("seconds"));
    for (server, name, _, ms) in upstreams.iter().filter(|u| u.3 > 0) {
        out.value(refreshed, &[("server", server), ("upstream", name)], &seconds(*ms, false));
    }
    if format == Format::OpenMetrics {
        out.text.push_str("# EOF\n");
    }
    out.text
}

struct Writer {
    text: String,
    format: Format,
}

impl Writer {
    /// A family's `# HELP`/`# TYPE` (and `# UNIT`) lines. `name`: without `_total`.
    fn family(&mut self, name: &str, kind: &str, help: &str, unit: Option<&str>) {
        let help = escape_help(help);
        let name = match (self.format, kind) {
            (Format::Text, "counter") => format!("{name}_total"),
            _ => name.to_string(),
        };
        let _ = writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}");
        if let (Format::OpenMetrics, Some(unit)) = (self.format, unit) {
            let _ = writeln!(self.text, "# UNIT {name} {unit}");
        }
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: u64) {
        self.value(name, labels, &value.to_string());
    }

    fn value(&mut self, name: &str, labels: &[(&str, &str)], value: &str) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (label, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                self.text.push_str(label);
                self.text.push_str("=\"");
                escape_value(&mut self.text, v);
                self.text.push('"');
            }
            self.text.push('}');
        }
        self.text.push(' ');
        self.text.push_str(value);
        self.text.push('\n');
    }

    fn histogram(&mut self, name: &str, labels: &[(&str, &str)], b: &Buckets) {
        let bucket = format!("{name}_bucket");
        let mut cumulative = 0;
        let om = self.format == Format::OpenMetrics;
        for (i, bound) in BOUNDS_MS.iter().map(|ms| seconds(*ms, om)).chain(std::iter::once("+Inf".to_string())).enumerate() {
            cumulative += b.counts.get(i).copied().unwrap_or(0);
            let mut with_le = labels.to_vec();
            with_le.push(("le", &bound));
            self.sample(&bucket, &with_le, cumulative);
        }
        self.value(&format!("{name}_sum"), labels, &seconds(b.sum_ms, false));
        self.sample(&format!("{name}_count"), labels, b.count());
    }
}

/// Milliseconds as seconds, exactly (three decimals at most); `float`: always with a decimal
/// point, as OpenMetrics spells `le` bounds.
fn seconds(ms: u64, float: bool) -> String {
    let (whole, frac) = (ms / 1000, ms % 1000);
    match frac {
        0 if float => format!("{whole}.0"),
        0 => whole.to_string(),
        _ => format!("{whole}.{}", format!("{frac:03}").trim_end_matches('0')),
    }
}

/// A label value as both formats escape it: `\`, `"` and line feeds.
fn escape_value(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Help text: `\` and line feeds escaped (ours never hold either; kept safe all the same).
fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Call, Outcome};

    fn sample() -> Totals {
        let mut t = Totals::default();
        let call = |tool, outcome, ms| Call { server: "srv", tool, principal: "", outcome, duration_ms: ms, upstream_ms: ms };
        t.record(&call("echo", Outcome::Ok, Some(15)));
        t.record(&call("echo", Outcome::Ok, Some(1_500)));
        t.record(&call("echo", Outcome::Denied, None));
        t.count(Counter::OauthGrantsIssued, 3);
        t.change(Gauge::Sessions, 2);
        t.change(Gauge::TasksWorking, 1);
        t.upstream("srv", "up", true, 1_800_000_000_250);
        t
    }

    const BODY: &str = r#"mcp_edge_tool_calls_total{server="srv",tool="echo",outcome="denied"} 1
mcp_edge_tool_calls_total{server="srv",tool="echo",outcome="ok"} 2
"#;

    #[test]
    fn text_format_byte_for_byte() {
        let text = render(&sample(), Format::Text);
        let expected = [
            "# HELP mcp_edge_tool_calls_total Tool calls by server, tool and outcome.\n# TYPE mcp_edge_tool_calls_total counter\n",
            BODY,
            "# HELP mcp_server_operation_duration_seconds Duration of MCP tool calls as mcp-edge served them, in seconds.\n# TYPE mcp_server_operation_duration_seconds histogram\n",
            r#"mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="echo",server="srv",le="0.01"} 0
mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="echo",server="srv",le="0.02"} 1
mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="echo",server="srv",le="0.05"} 1
mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="echo",server="srv",le="0.1"} 1
mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="echo",server="srv",le="0.2"} 1
mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="echo",server="srv",le="0.5"} 1
mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="echo",server="srv",le="1"} 1
mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="echo",server="srv",le="2"} 2
"#,
        ]
        .concat();
        assert!(text.starts_with(&expected), "{text}");
        assert!(text.contains("mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"echo\",server=\"srv\",le=\"+Inf\"} 2\nmcp_server_operation_duration_seconds_sum{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"echo\",server=\"srv\"} 1.515\nmcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"echo\",server=\"srv\"} 2\n"));
        assert!(text.contains("# HELP mcp_edge_oauth_grants_issued_total Access tokens issued by the authorization server's /token.\n# TYPE mcp_edge_oauth_grants_issued_total counter\nmcp_edge_oauth_grants_issued_total 3\n"));
        assert!(text.contains("mcp_edge_otlp_spans_dropped_total 0\n"));
        assert!(text.contains("# TYPE mcp_edge_sessions_open gauge\nmcp_edge_sessions_open 2\n"));
        assert!(text.contains("mcp_edge_tasks{state=\"working\"} 1\nmcp_edge_tasks{state=\"input_required\"} 0\n"));
        assert!(text.contains("mcp_edge_upstream_server_up{server=\"srv\",upstream=\"up\"} 1\n"));
        assert!(text.contains("mcp_edge_upstream_lists_refreshed_timestamp_seconds{server=\"srv\",upstream=\"up\"} 1800000000.25\n"));
        assert!(!text.contains("# EOF") && !text.contains("# UNIT"));
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn openmetrics_names_families_without_total_and_ends_with_eof() {
        let text = render(&sample(), Format::OpenMetrics);
        assert!(text.starts_with(&format!("# HELP mcp_edge_tool_calls Tool calls by server, tool and outcome.\n# TYPE mcp_edge_tool_calls counter\n{BODY}")), "{text}");
        assert!(text.contains("# TYPE mcp_server_operation_duration_seconds histogram\n# UNIT mcp_server_operation_duration_seconds seconds\n"));
        assert!(text.contains(",le=\"1.0\"} 1\n") && text.contains(",le=\"0.01\"} 0\n"));
        assert!(text.contains("# TYPE mcp_edge_oauth_grants_issued counter\nmcp_edge_oauth_grants_issued_total 3\n"));
        assert!(text.ends_with("\n# EOF\n"));
        assert_eq!(text.matches("# EOF").count(), 1);
    }

    #[test]
    fn label_values_are_escaped() {
        let mut t = Totals::default();
        t.record(&Call { server: "a\"b", tool: "c\\d\ne", principal: "p\"", outcome: Outcome::Ok, duration_ms: None, upstream_ms: None });
        let text = render(&t, Format::Text);
        assert!(text.contains(r#"mcp_edge_tool_calls_total{server="a\"b",tool="c\\d\ne",outcome="ok",principal="p\""} 1"#), "{text}");
        assert_eq!(text.lines().filter(|l| l.starts_with("mcp_edge_tool_calls_total")).count(), 1);
    }

    #[test]
    fn the_format_follows_accept() {
        assert_eq!(Format::of(None), Format::Text);
        assert_eq!(Format::of(Some("text/plain;version=0.0.4;q=0.5,*/*;q=0.1")), Format::Text);
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::of(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(Format::OpenMetrics.content_type(), "application/openmetrics-text; version=1.0.0; charset=utf-8");
        assert_eq!(Format::Text.content_type(), "text/plain; version=0.0.4; charset=utf-8");
    }

    #[test]
    fn seconds_are_exact() {
        assert_eq!([0, 10, 100, 1_000, 1_500, 1_234, 300_000].map(|ms| seconds(ms, false)), ["0", "0.01", "0.1", "1", "1.5", "1.234", "300"]);
        assert_eq!(seconds(1_000, true), "1.0");
        assert_eq!(seconds(10, true), "0.01");
    }
}
