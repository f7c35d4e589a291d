//! `console.health` checked and compiled: whether calls are counted, and the Analytics Engine
//! binding each call is also written to.

use super::model::HealthConfig;
use super::ConfigError;
use crate::catalog::HealthSettings;

/// Whether `name` can name a Worker binding: a JavaScript identifier of letters, digits and `_`
/// (wrangler's binding names), not starting with a digit.
fn is_binding_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with(|c: char| c.is_ascii_digit())
}

pub fn health(c: HealthConfig) -> Result<HealthSettings, ConfigError> {
    if let Some(name) = c.analytics_engine.as_deref().filter(|n| !is_binding_name(n)) {
        return Err(ConfigError::at("console.health.analyticsEngine", format!("{name:?} is not a binding name (letters, digits and _, not starting with a digit)")));
    }
    Ok(HealthSettings { enabled: c.enabled, analytics_engine: c.analytics_engine })
}

#[cfg(test)]
mod tests {
    use crate::config::load;

    const SERVER: &str = r#""servers":[{"name":"s","version":"1"}]"#;

    fn health(console: &str) -> Result<crate::catalog::HealthSettings, String> {
        load(&format!(r#"{{{SERVER},"console":{console}}}"#)).map(|c| c.health).map_err(|e| e.to_string())
    }

    #[test]
    fn health_is_on_by_default_and_names_a_binding() {
        let on = crate::catalog::HealthSettings { enabled: true, analytics_engine: None };
        assert_eq!(load(&format!("{{{SERVER}}}")).unwrap().health, on);
        assert_eq!(health("{}").unwrap(), on);
        assert_eq!(health(r#"{"access":"off","health":{}}"#).unwrap(), on);
        assert!(!health(r#"{"health":{"enabled":false}}"#).unwrap().enabled);
        assert_eq!(health(r#"{"health":{"analyticsEngine":"MCP_HEALTH"}}"#).unwrap().analytics_engine.as_deref(), Some("MCP_HEALTH"));
        assert_eq!(health(r#"{"health":{"analyticsEngine":"1st"}}"#).unwrap_err(), r#"console.health.analyticsEngine: "1st" is not a binding name (letters, digits and _, not starting with a digit)"#);
        assert!(health(r#"{"health":{"analyticsEngine":"a-b"}}"#).is_err());
        assert!(health(r#"{"health":{"analyticsEngine":""}}"#).is_err());
        assert!(health(r#"{"health":{"enable":true}}"#).unwrap_err().starts_with("console.health.enable: unknown field `enable`"));
    }
}
