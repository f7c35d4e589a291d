//! `telemetry` checked and compiled: the OTLP collector (an https endpoint, or http on a
//! loopback host; headers of literals and `{env.NAME}` secrets), the sampling ratio, the span
//! queue's bound, the metrics' scrape token and labels, and the console's trace link.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ConfigError;
use crate::catalog::telemetry::{Encoding, Metrics, Otlp, Part, Telemetry, DEFAULT_EXPORT_INTERVAL_SECONDS, DEFAULT_MAX_QUEUED_SPANS, DEFAULT_SAMPLE_RATIO};
use crate::weburl::WebUrl;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TelemetryConfig {
    #[serde(default)]
    pub otlp: Option<OtlpConfig>,
    #[serde(default)]
    pub service_name: Option<String>,
    #[serde(default)]
    pub traces: TracesConfig,
    #[serde(default)]
    pub metrics: MetricsConfig,
    #[serde(default)]
    pub trace_link: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OtlpConfig {
    pub endpoint: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub encoding: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TracesConfig {
    #[serde(default)]
    pub sample_ratio: Option<f64>,
    #[serde(default)]
    pub max_queued_spans: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetricsConfig {
    #[serde(default)]
    pub scrape_token_secret: Option<String>,
    #[serde(default)]
    pub export_interval_seconds: Option<u64>,
    #[serde(default)]
    pub principal_label: bool,
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// A header value: literal text with `{env.NAME}` secrets in it; any other `{` is refused, so a
/// template meant for a tool does not silently send its braces.
fn header_value(text: &str, path: &str) -> Result<Vec<Part>, ConfigError> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(Part::Text(rest[..open].to_string()));
        }
        let after = &rest[open + 1..];
        let close = after.find('}').ok_or_else(|| ConfigError::at(path, "an unclosed {"))?;
        let name = after[..close].strip_prefix("env.").filter(|n| is_env_name(n)).ok_or_else(|| ConfigError::at(path, format!("{{{}}} is not {{env.NAME}}: a collector's headers take literals and secrets only", &after[..close])))?;
        parts.push(Part::Env(name.to_string()));
        rest = &after[close + 1..];
    }
    if rest.contains('}') {
        return Err(ConfigError::at(path, "a } without its {"));
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest.to_string()));
    }
    Ok(parts)
}

/// An https URL, or http on a loopback host (a collector beside `wrangler dev`), without
/// credentials, query or fragment.
fn collector_url(text: &str, path: &str, what: &str) -> Result<WebUrl, ConfigError> {
    let url = WebUrl::parse(text).map_err(|e| ConfigError::at(path, e))?;
    let loopback = url.host().is_some_and(crate::oauth::uri::is_loopback);
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => return Err(ConfigError::at(path, format!("{what} must be https (http only on a loopback host)"))),
    }
    if url.has_credentials() {
        return Err(ConfigError::at(path, "must not carry credentials: put them in headers, as {env.NAME}"));
    }
    Ok(url)
}

pub fn telemetry(c: TelemetryConfig) -> Result<Telemetry, ConfigError> {
    let otlp = match c.otlp {
        None => None,
        Some(o) => {
            let url = collector_url(&o.endpoint, "telemetry.otlp.endpoint", "the collector's endpoint")?;
            if url.query().is_some() || url.fragment().is_some() {
                return Err(ConfigError::at("telemetry.otlp.endpoint", "names the collector's base URL, without a query or fragment: spans go to {endpoint}/v1/traces"));
            }
            let mut headers = Vec::new();
            for (name, value) in o.headers {
                let path = format!("telemetry.otlp.headers.{name}");
                if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)) {
                    return Err(ConfigError::at(path, "is not a header name"));
                }
                headers.push((name, header_value(&value, &path)?));
            }
            let encoding = match o.encoding.as_deref() {
                None | Some("protobuf") => Encoding::Protobuf,
                Some("json") => Encoding::Json,
                Some(other) => return Err(ConfigError::at("telemetry.otlp.encoding", format!("{other:?} is not \"protobuf\" or \"json\""))),
            };
            Some(Otlp { endpoint: url.as_str().trim_end_matches('/').to_string(), headers, encoding })
        }
    };
    let sample_ratio = c.traces.sample_ratio.unwrap_or(DEFAULT_SAMPLE_RATIO);
    if !(0.0..=1.0).contains(&sample_ratio) {
        return Err(ConfigError::at("telemetry.traces.sampleRatio", "must be from 0 to 1"));
    }
    let max_queued_spans = c.traces.max_queued_spans.unwrap_or(DEFAULT_MAX_QUEUED_SPANS);
    if !(1..=100_000).contains(&max_queued_spans) {
        return Err(ConfigError::at("telemetry.traces.maxQueuedSpans", "must be from 1 to 100000"));
    }
    let service_name = c.service_name.unwrap_or_else(|| "mcp-edge".into());
    if service_name.trim().is_empty() || service_name.len() > 128 {
        return Err(ConfigError::at("telemetry.serviceName", "must be 1 to 128 characters"));
    }
    if let Some(link) = &c.trace_link {
        collector_url(&link.replace("{traceId}", "0"), "telemetry.traceLink", "the trace link")?;
        if !link.contains("{traceId}") {
            return Err(ConfigError::at("telemetry.traceLink", "must contain {traceId}"));
        }
    }
    if let Some(name) = c.metrics.scrape_token_secret.as_deref().filter(|n| !is_env_name(n)) {
        return Err(ConfigError::at("telemetry.metrics.scrapeTokenSecret", format!("{name:?} is not a secret's name (letters, digits and _, not starting with a digit)")));
    }
    // One credential, one audience: the scrape token reads metrics and nothing else.
    if let Some(own) = c.metrics.scrape_token_secret.as_deref().filter(|n| crate::keys::OWN_KEYS.contains(n)) {
        return Err(ConfigError::at("telemetry.metrics.scrapeTokenSecret", format!("{own} is the deployment's own key: give the scrape token a secret of its own")));
    }
    let export_interval_seconds = c.metrics.export_interval_seconds.unwrap_or(DEFAULT_EXPORT_INTERVAL_SECONDS);
    if !(10..=3600).contains(&export_interval_seconds) {
        return Err(ConfigError::at("telemetry.metrics.exportIntervalSeconds", "must be from 10 to 3600"));
    }
    let metrics = Metrics { scrape_token_secret: c.metrics.scrape_token_secret, export_interval_seconds, principal_label: c.metrics.principal_label };
    Ok(Telemetry { otlp, service_name, sample_ratio, max_queued_spans, trace_link: c.trace_link, metrics })
}

#[cfg(test)]
mod tests {
    use crate::catalog::telemetry::{Encoding, Part};
    use crate::config::load;

    const SERVER: &str = r#""servers":[{"name":"s","version":"1"}]"#;

    fn telemetry(t: &str) -> Result<crate::catalog::telemetry::Telemetry, String> {
        load(&format!(r#"{{{SERVER},"telemetry":{t}}}"#)).map(|c| c.telemetry).map_err(|e| e.to_string())
    }

    #[test]
    fn telemetry_is_off_by_default() {
        let catalog = load(&format!("{{{SERVER}}}")).unwrap();
        assert!(!catalog.telemetry.tracing());
        assert_eq!(catalog.telemetry.sample_ratio, 1.0);
        assert_eq!(catalog.telemetry.metrics.export_interval_seconds, 60);
    }

    #[test]
    fn a_collector_is_checked_and_compiled() {
        let t = telemetry(r#"{"otlp":{"endpoint":"https://otel.example.com/otlp/","headers":{"Authorization":"Bearer {env.OTLP_TOKEN}","x-team":"edge"},"encoding":"json"},"traces":{"sampleRatio":0.01,"maxQueuedSpans":100},"metrics":{"scrapeTokenSecret":"SCRAPE"},"traceLink":"https://grafana.example/explore?traceId={traceId}"}"#).unwrap();
        let otlp = t.otlp.clone().unwrap();
        assert_eq!(otlp.endpoint, "https://otel.example.com/otlp");
        assert_eq!(otlp.encoding, Encoding::Json);
        assert_eq!(otlp.headers[0], ("Authorization".to_string(), vec![Part::Text("Bearer ".into()), Part::Env("OTLP_TOKEN".into())]));
        assert_eq!((t.sample_ratio, t.max_queued_spans), (0.01, 100));
        assert_eq!(t.secrets(), ["OTLP_TOKEN", "SCRAPE"]);
        assert_eq!(t.link("abc").as_deref(), Some("https://grafana.example/explore?traceId=abc"));
        assert!(telemetry(r#"{"otlp":{"endpoint":"http://127.0.0.1:4318"}}"#).unwrap().tracing());
        // The collector's secrets are the deployment's own: no live change may name them.
        let catalog = load(&format!(r#"{{{SERVER},"telemetry":{{"otlp":{{"endpoint":"http://localhost:4318","headers":{{"a":"{{env.OTLP_TOKEN}}"}}}}}}}}"#)).unwrap();
        assert!(catalog.own_secrets().contains(&"OTLP_TOKEN".to_string()));
    }

    #[test]
    fn bad_telemetry_is_refused_with_its_path() {
        for (t, expected) in [
            (r#"{"otlp":{"endpoint":"http://otel.example.com"}}"#, "telemetry.otlp.endpoint: the collector's endpoint must be https (http only on a loopback host)"),
            (r#"{"otlp":{"endpoint":"https://u:p@otel.example.com"}}"#, "telemetry.otlp.endpoint: must not carry credentials: put them in headers, as {env.NAME}"),
            (r#"{"otlp":{"endpoint":"https://otel.example.com?x=1"}}"#, "telemetry.otlp.endpoint: names the collector's base URL, without a query or fragment: spans go to {endpoint}/v1/traces"),
            (r#"{"otlp":{"endpoint":"https://o.example","headers":{"a":"{token}"}}}"#, "telemetry.otlp.headers.a: {token} is not {env.NAME}: a collector's headers take literals and secrets only"),
            (r#"{"otlp":{"endpoint":"https://o.example","headers":{"a b":"x"}}}"#, "telemetry.otlp.headers.a b: is not a header name"),
            (r#"{"otlp":{"endpoint":"https://o.example","encoding":"xml"}}"#, r#"telemetry.otlp.encoding: "xml" is not "protobuf" or "json""#),
            (r#"{"traces":{"sampleRatio":1.5}}"#, "telemetry.traces.sampleRatio: must be from 0 to 1"),
            (r#"{"traces":{"maxQueuedSpans":0}}"#, "telemetry.traces.maxQueuedSpans: must be from 1 to 100000"),
            (r#"{"traceLink":"https://g.example/x"}"#, "telemetry.traceLink: must contain {traceId}"),
            (r#"{"metrics":{"scrapeTokenSecret":"1x"}}"#, r#"telemetry.metrics.scrapeTokenSecret: "1x" is not a secret's name (letters, digits and _, not starting with a digit)"#),
            (r#"{"metrics":{"scrapeTokenSecret":"MCP_EDGE_ADMIN_TOKEN"}}"#, "telemetry.metrics.scrapeTokenSecret: MCP_EDGE_ADMIN_TOKEN is the deployment's own key: give the scrape token a secret of its own"),
            (r#"{"metrics":{"exportIntervalSeconds":1}}"#, "telemetry.metrics.exportIntervalSeconds: must be from 10 to 3600"),
        ] {
            assert_eq!(telemetry(t).unwrap_err(), expected, "{t}");
        }
        assert!(telemetry(r#"{"tracing":{}}"#).unwrap_err().starts_with("telemetry.tracing: unknown field `tracing`"));
    }
}
