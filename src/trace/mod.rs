//! Tracing, pure: W3C Trace Context in and out, the spans mcp-edge records (named and
//! attributed by OpenTelemetry's MCP and HTTP semantic conventions), the sampling decision, and
//! their OTLP encodings. The edge (`edge::telemetry`) gives it the time and the randomness,
//! queues the spans and exports them.
//!
//! - [`context`]: `traceparent` and `tracestate`, read and written.
//! - [`span`]: a span, its attributes, events and status.
//! - [`mcp`]: the context in a message's `_meta`, and an MCP span's name and attributes.
//! - [`names`]: the conventions' attribute names, and `url.full` as it may be shown.
//! - [`wire`]: the protobuf writer the OTLP encodings use.
//! - [`otlp`]: spans as an OTLP `ExportTraceServiceRequest`, in protobuf or JSON.

pub mod context;
pub mod mcp;
pub mod names;
pub mod otlp;
pub mod span;
pub mod wire;

pub use context::{Context, SpanId, TraceId};
pub use span::{Kind, Span, Status, Value};

/// Whether a trace without a sampled parent is kept: the ratio (0 to 1) against the trace id's
/// last 56 bits, which W3C Trace Context Level 2 asks to be random. A parent's decision is
/// followed whatever the ratio (parent-based sampling), so a trace is never kept in part.
pub fn sampled(parent: Option<&Context>, trace_id: &TraceId, ratio: f64) -> bool {
    if let Some(parent) = parent {
        return parent.sampled();
    }
    if ratio >= 1.0 {
        return true;
    }
    if ratio <= 0.0 || ratio.is_nan() {
        return false;
    }
    let mut low = [0u8; 8];
    low[1..].copy_from_slice(&trace_id.0[9..]);
    let value = u64::from_be_bytes(low);
    // 2^56 fits a f64 exactly; the product is below it, so the cast does not saturate.
    value < (ratio * (1u64 << 56) as f64) as u64
}

/// Ids for new traces and spans: splitmix64, seeded once per isolate from the platform's CSPRNG
/// (`edge::telemetry`). Trace ids need to be unique and their low bits uniform, not secret;
/// a CSPRNG call per span showed in CPU profiles of other Workers.
#[derive(Debug, Clone)]
pub struct Ids(u64);

impl Ids {
    pub fn seeded(seed: u64) -> Ids {
        Ids(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn trace_id(&mut self) -> TraceId {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&self.next().to_be_bytes());
        id[8..].copy_from_slice(&self.next().to_be_bytes());
        if id == [0; 16] {
            id[15] = 1;
        }
        TraceId(id)
    }

    pub fn span_id(&mut self) -> SpanId {
        let id = self.next().to_be_bytes();
        SpanId(if id == [0; 8] { [0, 0, 0, 0, 0, 0, 0, 1] } else { id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_decides_and_a_ratio_decides_for_new_traces() {
        let kept = Context::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", None).unwrap();
        let dropped = Context::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", None).unwrap();
        let id = TraceId([0xff; 16]);
        assert!(sampled(Some(&kept), &id, 0.0));
        assert!(!sampled(Some(&dropped), &id, 1.0));
        assert!(sampled(None, &id, 1.0));
        assert!(!sampled(None, &id, 0.0));
        assert!(!sampled(None, &id, f64::NAN));
        // Low bits all ones are past any ratio below 1; all zeros within any above 0.
        assert!(!sampled(None, &id, 0.99));
        assert!(sampled(None, &TraceId([0; 16]), 0.01));
        // About the ratio of random ids are kept.
        let mut ids = Ids::seeded(7);
        let kept = (0..10_000).filter(|_| sampled(None, &ids.trace_id(), 0.1)).count();
        assert!((800..1200).contains(&kept), "{kept}");
    }

    #[test]
    fn ids_are_never_zero_and_differ() {
        let mut ids = Ids::seeded(0);
        let a = ids.span_id();
        let b = ids.span_id();
        assert_ne!(a, b);
        assert_ne!(ids.trace_id().0, [0; 16]);
    }
}
