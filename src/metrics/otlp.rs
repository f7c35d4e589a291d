//! The totals as OTLP's `ExportMetricsServiceRequest` (protobuf), with cumulative temporality:
//! the same figures as `GET /metrics`, under names an OTLP → Prometheus translation turns back
//! into the scrape's (`mcp.server.operation.duration` in seconds becomes
//! `mcp_server_operation_duration_seconds`; a monotonic sum `mcp_edge_tool_calls` becomes
//! `mcp_edge_tool_calls_total`), and attributes named as the scrape's labels.

use crate::method::Method;
use crate::trace::otlp::Source;
use crate::trace::wire::Writer;

use super::{Buckets, Counter, Gauge, Histogram, Totals, BOUNDS_MS};

/// `AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE`.
const CUMULATIVE: u64 = 2;

/// The times every point carries: since the totals began (the `health` object's first batch),
/// and now, in nanoseconds since the epoch.
#[derive(Debug, Clone, Copy)]
pub struct Times {
    pub start_ns: u64,
    pub now_ns: u64,
}

fn attribute(w: &mut Writer, field: u32, key: &str, value: &str) {
    w.message(field, |kv| {
        kv.string(1, key);
        kv.message(2, |any| any.string(1, value));
    });
}

/// A `NumberDataPoint` with an integer value (written even when 0: the value is a oneof).
fn point(w: &mut Writer, times: Times, labels: &[(&str, &str)], value: i64) {
    w.message(1, |p| {
        p.fixed64(2, times.start_ns);
        p.fixed64(3, times.now_ns);
        p.fixed64_always(6, value as u64);
        for (key, value) in labels {
            attribute(p, 7, key, value);
        }
    });
}

fn metric(w: &mut Writer, name: &str, unit: &str, data: impl FnOnce(&mut Writer)) {
    w.message(2, |m| {
        m.string(1, name);
        m.string(3, unit);
        data(m);
    });
}

/// A monotonic cumulative sum of integer points.
fn sum(w: &mut Writer, name: &str, points: impl FnOnce(&mut Writer)) {
    metric(w, name, "1", |m| {
        m.message(7, |s| {
            points(s);
            s.uint(2, CUMULATIVE);
            s.bool(3, true);
        });
    });
}

fn gauge(w: &mut Writer, name: &str, points: impl FnOnce(&mut Writer)) {
    metric(w, name, "1", |m| m.message(5, points));
}

fn histogram(w: &mut Writer, name: &str, times: Times, points: &[(Vec<(&str, &str)>, &Buckets)]) {
    metric(w, name, "s", |m| {
        m.message(9, |h| {
            for (labels, b) in points {
                h.message(1, |p| {
                    p.fixed64(2, times.start_ns);
                    p.fixed64(3, times.now_ns);
                    p.fixed64(4, b.count());
                    p.double(5, b.sum_ms as f64 / 1000.0);
                    p.packed_fixed64(6, b.counts.iter().copied());
                    p.packed_fixed64(7, BOUNDS_MS.iter().map(|ms| (*ms as f64 / 1000.0).to_bits()));
                    for (key, value) in labels {
                        attribute(p, 9, key, value);
                    }
                });
            }
            h.uint(2, CUMULATIVE);
        });
    });
}

/// The totals as a protobuf `ExportMetricsServiceRequest`.
pub fn protobuf(source: &Source, totals: &Totals, times: Times) -> Vec<u8> {
    let mut w = Writer::new();
    w.message(1, |rm| {
        rm.message(1, |resource| {
            for (key, value) in &source.attributes {
                attribute(resource, 1, key, value);
            }
        });
        rm.message(2, |sm| {
            sm.message(1, |scope| {
                scope.string(1, source.scope);
                scope.string(2, source.version);
            });
            sum(sm, super::prometheus::CALLS, |s| {
                for ([server, tool, principal, outcome], n) in totals.calls() {
                    let mut labels = vec![("server", server), ("tool", tool), ("outcome", outcome)];
                    if !principal.is_empty() {
                        labels.push(("principal", principal));
                    }
                    point(s, times, &labels, n as i64);
                }
            });
            let durations = totals.histograms(Histogram::Duration);
            let points: Vec<_> = durations.iter().map(|((server, tool), b)| (vec![("mcp.method.name", Method::ToolsCall.name()), ("gen_ai.tool.name", *tool), ("server", *server)], b)).collect();
            histogram(sm, "mcp.server.operation.duration", times, &points);
            let upstream = totals.histograms(Histogram::Upstream);
            let points: Vec<_> = upstream.iter().map(|((server, tool), b)| (vec![("server", *server), ("tool", *tool)], b)).collect();
            histogram(sm, "mcp_edge.upstream.duration", times, &points);
            for counter in Counter::ALL {
                sum(sm, counter.family().0, |s| point(s, times, &[], totals.counter(counter) as i64));
            }
            let floor = |g: Gauge| totals.gauge(g).max(0);
            gauge(sm, "mcp_edge_sessions_open", |g| point(g, times, &[], floor(Gauge::Sessions)));
            gauge(sm, "mcp_edge_streams_open", |g| point(g, times, &[], floor(Gauge::Streams)));
            gauge(sm, "mcp_edge_tasks", |g| {
                for task in [Gauge::TasksWorking, Gauge::TasksInputRequired, Gauge::TasksCompleted, Gauge::TasksFailed, Gauge::TasksCancelled] {
                    point(g, times, &[("state", task.task_state().unwrap_or_default())], floor(task));
                }
            });
            let upstreams = totals.upstreams();
            gauge(sm, "mcp_edge_upstream_server_up", |g| {
                for (server, name, up, _) in &upstreams {
                    point(g, times, &[("server", server), ("upstream", name)], i64::from(*up));
                }
            });
            gauge(sm, "mcp_edge_upstream_lists_refreshed_timestamp_seconds", |g| {
                for (server, name, _, ms) in upstreams.iter().filter(|u| u.3 > 0) {
                    point(g, times, &[("server", server), ("upstream", name)], (*ms / 1000) as i64);
                }
            });
        });
    });
    w.into_bytes()
}

/// How many points an export of `totals` carries (what a failed export drops).
pub fn points(totals: &Totals) -> u64 {
    let upstreams = totals.upstreams();
    let series = totals.calls().count() + totals.histograms(Histogram::Duration).len() + totals.histograms(Histogram::Upstream).len() + Counter::ALL.len() + 7 + upstreams.len() + upstreams.iter().filter(|u| u.3 > 0).count();
    series as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Call, Outcome};

    #[test]
    fn a_counter_point_is_written_as_protobuf_writes_it() {
        let mut w = Writer::new();
        point(&mut w, Times { start_ns: 1, now_ns: 2 }, &[("k", "v")], 0);
        let expected: Vec<u8> = [
            vec![0x0a, 37],
            vec![0x11, 1, 0, 0, 0, 0, 0, 0, 0],
            vec![0x19, 2, 0, 0, 0, 0, 0, 0, 0],
            // as_int = 0 is written: the value is a oneof.
            vec![0x31, 0, 0, 0, 0, 0, 0, 0, 0],
            vec![0x3a, 8, 0x0a, 1, b'k', 0x12, 3, 0x0a, 1, b'v'],
        ]
        .concat();
        assert_eq!(w.into_bytes(), expected);
    }

    #[test]
    fn every_figure_is_exported() {
        let mut t = Totals::default();
        t.record(&Call { server: "srv", tool: "echo", principal: "", outcome: Outcome::Ok, duration_ms: Some(15), upstream_ms: Some(10) });
        let bytes = protobuf(&Source::mcp_edge("edge"), &t, Times { start_ns: 1, now_ns: 2 });
        let text = String::from_utf8_lossy(&bytes);
        // 1 call, 2 histograms, 10 counters, 2 gauges and 5 task states.
        assert_eq!(points(&t), 20);
        for name in ["mcp_edge_tool_calls", "mcp.server.operation.duration", "mcp_edge.upstream.duration", "mcp_edge_oauth_grants_issued", "mcp_edge_otlp_points_dropped", "mcp_edge_connection_token_reads", "mcp_edge_connection_refreshes", "mcp_edge_tool_cache_hits", "mcp_edge_tool_cache_revalidations", "mcp_edge_sessions_open", "mcp_edge_tasks", "input_required", "gen_ai.tool.name", "edge"] {
            assert!(text.contains(name), "{name}");
        }
    }
}
