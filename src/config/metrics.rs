//! `telemetry.metrics` checked and compiled: who may scrape `GET /metrics` besides the admin,
//! how often the metrics are exported, and whether calls carry a principal label.

use super::model::TelemetryConfig;
use super::ConfigError;
use crate::catalog::MetricsSettings;

/// The longest export interval: an hour.
const MAX_INTERVAL_S: u64 = 3600;

pub fn metrics(c: &TelemetryConfig) -> Result<Option<MetricsSettings>, ConfigError> {
    let Some(m) = &c.metrics else { return Ok(None) };
    if let Some(name) = &m.scrape_token_secret {
        if !super::request::is_secret_name(name) {
            return Err(ConfigError::at("telemetry.metrics.scrapeTokenSecret", format!("{name:?} is not a secret name (letters, digits and _, not starting with a digit)")));
        }
        // One credential, one audience: the scrape token reads metrics and nothing else.
        if crate::keys::OWN_KEYS.contains(&name.as_str()) {
            return Err(ConfigError::at("telemetry.metrics.scrapeTokenSecret", format!("{name} is the deployment's own key: give the scrape token a secret of its own")));
        }
    }
    if m.export_interval_seconds == 0 || m.export_interval_seconds > MAX_INTERVAL_S {
        return Err(ConfigError::at("telemetry.metrics.exportIntervalSeconds", format!("must be 1 to {MAX_INTERVAL_S}")));
    }
    Ok(Some(MetricsSettings { scrape_token_secret: m.scrape_token_secret.clone(), export_interval_ms: m.export_interval_seconds * 1000, principal_label: m.principal_label }))
}

#[cfg(test)]
mod tests {
    use crate::config::load;

    const SERVER: &str = r#""servers":[{"name":"s","version":"1"}]"#;

    fn metrics(telemetry: &str) -> Result<Option<crate::catalog::MetricsSettings>, String> {
        load(&format!(r#"{{{SERVER},"telemetry":{telemetry}}}"#)).map(|c| c.metrics).map_err(|e| e.to_string())
    }

    #[test]
    fn metrics_are_off_unless_configured() {
        assert_eq!(metrics("{}"), Ok(None));
        assert_eq!(load(&format!("{{{SERVER}}}")).map(|c| c.metrics).ok(), Some(None));
        let on = metrics(r#"{"metrics":{"scrapeTokenSecret":"METRICS_SCRAPE_TOKEN","principalLabel":true}}"#).unwrap().unwrap();
        assert_eq!((on.scrape_token_secret.as_deref(), on.export_interval_ms, on.principal_label), (Some("METRICS_SCRAPE_TOKEN"), 60_000, true));
    }

    #[test]
    fn faults_are_located() {
        let fault = |t: &str| metrics(t).unwrap_err();
        assert!(fault(r#"{"metrics":{"scrapeTokenSecret":"no-dash"}}"#).contains("telemetry.metrics.scrapeTokenSecret"));
        assert!(fault(r#"{"metrics":{"scrapeTokenSecret":"MCP_EDGE_ADMIN_TOKEN"}}"#).contains("deployment's own key"));
        assert!(fault(r#"{"metrics":{"exportIntervalSeconds":0}}"#).contains("telemetry.metrics.exportIntervalSeconds"));
        assert!(fault(r#"{"metrics":{"scrape":1}}"#).contains("telemetry.metrics"));
    }
}
