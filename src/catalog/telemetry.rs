//! `telemetry` as served: where spans (and metrics) go over OTLP, which traces are kept, who
//! may scrape `/metrics`, and the link the console puts on a call's trace id.

/// The OTLP/HTTP encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `application/x-protobuf`, the default: smaller, and every collector takes it.
    Protobuf,
    /// `application/json`, OTLP's JSON encoding.
    Json,
}

impl Encoding {
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }
}

/// A header value: literal text and `{env.NAME}` secrets, read when a batch is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Text(String),
    Env(String),
}

/// The collector spans (and metrics) are sent to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Otlp {
    /// The base URL, without a trailing `/`: spans go to `{endpoint}/v1/traces`.
    pub endpoint: String,
    pub headers: Vec<(String, Vec<Part>)>,
    pub encoding: Encoding,
}

impl Otlp {
    /// The secrets the headers name.
    pub fn secrets(&self) -> impl Iterator<Item = &str> {
        self.headers.iter().flat_map(|(_, parts)| parts.iter()).filter_map(|p| match p {
            Part::Env(name) => Some(name.as_str()),
            Part::Text(_) => None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Telemetry {
    /// `None`: no spans are made or sent (tracing off costs a plain call nothing).
    pub otlp: Option<Otlp>,
    /// `service.name` of the spans' resource.
    pub service_name: String,
    /// Traces without a sampled parent kept, 0 to 1.
    pub sample_ratio: f64,
    /// Spans an isolate holds for the collector at most; past it, new spans are dropped and
    /// counted, so a slow or dead collector costs memory that stays bounded.
    pub max_queued_spans: usize,
    /// A template with `{traceId}` that the console links a call's trace id to.
    pub trace_link: Option<String>,
    pub metrics: Metrics,
}

/// `telemetry.metrics`: who may scrape `/metrics`, and what its labels may say.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Metrics {
    /// The secret holding the bearer token a scraper presents (an admin's credential works too).
    pub scrape_token_secret: Option<String>,
    /// How often the metrics are sent over OTLP, when `otlp` is set.
    pub export_interval_seconds: u64,
    /// Whether calls are also counted per principal (a label of unbounded values: opt-in).
    pub principal_label: bool,
}

pub const DEFAULT_SAMPLE_RATIO: f64 = 1.0;
pub const DEFAULT_MAX_QUEUED_SPANS: usize = 2048;
pub const DEFAULT_EXPORT_INTERVAL_SECONDS: u64 = 60;

impl Default for Telemetry {
    fn default() -> Telemetry {
        Telemetry {
            otlp: None,
            service_name: "mcp-edge".into(),
            sample_ratio: DEFAULT_SAMPLE_RATIO,
            max_queued_spans: DEFAULT_MAX_QUEUED_SPANS,
            trace_link: None,
            metrics: Metrics { export_interval_seconds: DEFAULT_EXPORT_INTERVAL_SECONDS, ..Metrics::default() },
        }
    }
}

impl Telemetry {
    /// Whether spans are made at all.
    pub fn tracing(&self) -> bool {
        self.otlp.is_some()
    }

    /// The secrets `telemetry` names: the collector's headers', the scrape token's.
    pub fn secrets(&self) -> Vec<String> {
        let mut names: Vec<String> = self.otlp.iter().flat_map(Otlp::secrets).map(str::to_string).collect();
        names.extend(self.metrics.scrape_token_secret.iter().cloned());
        names
    }

    /// The console's link for a trace id, when one is configured.
    pub fn link(&self, trace_id: &str) -> Option<String> {
        self.trace_link.as_ref().map(|t| t.replace("{traceId}", trace_id))
    }
}
