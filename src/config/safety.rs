//! The top-level `admin` and `admission` sections checked and compiled: the secrets live
//! changes may name, and the built-in per-address limit.

use super::model::{AdminConfig, AdmissionConfig};
use super::ConfigError;
use crate::admission::PerAddress;

/// The longest period the per-address limit may count over: a day.
const MAX_PERIOD_S: u64 = 24 * 3600;

pub fn admin_secrets(c: AdminConfig) -> Result<Option<Vec<String>>, ConfigError> {
    if let Some(secrets) = &c.secrets {
        if let Some((i, bad)) = secrets.iter().enumerate().find(|(_, s)| !super::request::is_secret_name(s)) {
            return Err(ConfigError::at(format!("admin.secrets[{i}]"), format!("{bad:?} is not a secret name (letters, digits and _, not starting with a digit)")));
        }
        if let Some((i, own)) = secrets.iter().enumerate().find(|(_, s)| crate::keys::OWN_KEYS.contains(&s.as_str())) {
            return Err(ConfigError::at(format!("admin.secrets[{i}]"), format!("{own} is the deployment's own key: no template may name it")));
        }
    }
    Ok(c.secrets)
}

pub fn admission(c: AdmissionConfig) -> Result<Option<PerAddress>, ConfigError> {
    if !c.enabled {
        return Ok(None);
    }
    if c.requests == 0 {
        return Err(ConfigError::at("admission.requests", "must be at least 1 (to turn the limit off: \"enabled\": false)"));
    }
    if c.period_seconds == 0 || c.period_seconds > MAX_PERIOD_S {
        return Err(ConfigError::at("admission.periodSeconds", format!("must be 1 to {MAX_PERIOD_S}")));
    }
    if c.registrations_per_hour == 0 {
        return Err(ConfigError::at("admission.registrationsPerHour", "must be at least 1 (registration is turned off by \"oauth.registration\": \"off\")"));
    }
    Ok(Some(PerAddress { requests: c.requests, period_ms: c.period_seconds * 1000, registrations_per_hour: c.registrations_per_hour }))
}

#[cfg(test)]
mod tests {
    use crate::config::load;

    const SERVER: &str = r#""servers":[{"name":"s","version":"1"}]"#;

    fn with(section: &str) -> Result<crate::catalog::Catalog, String> {
        load(&format!("{{{SERVER},{section}}}")).map_err(|e| e.to_string())
    }

    #[test]
    fn the_per_address_limit_is_on_by_default() {
        let catalog = load(&format!("{{{SERVER}}}")).unwrap();
        assert_eq!(catalog.admission, Some(crate::admission::PerAddress { requests: 60, period_ms: 60_000, registrations_per_hour: 20 }));
        assert_eq!(with(r#""admission":{"enabled":false}"#).unwrap().admission, None);
        assert_eq!(with(r#""admission":{"requests":5,"periodSeconds":10,"registrationsPerHour":3}"#).unwrap().admission, Some(crate::admission::PerAddress { requests: 5, period_ms: 10_000, registrations_per_hour: 3 }));
        assert_eq!(with(r#""admission":{"requests":0}"#).unwrap_err(), "admission.requests: must be at least 1 (to turn the limit off: \"enabled\": false)");
        assert_eq!(with(r#""admission":{"periodSeconds":0}"#).unwrap_err(), "admission.periodSeconds: must be 1 to 86400");
    }

    #[test]
    fn live_secrets_are_names_and_never_the_own_keys() {
        assert_eq!(with(r#""admin":{}"#).unwrap().admin_secrets, None);
        assert_eq!(with(r#""admin":{"secrets":["N8N_TOKEN"]}"#).unwrap().admin_secrets, Some(vec!["N8N_TOKEN".to_string()]));
        assert_eq!(with(r#""admin":{"secrets":["a-b"]}"#).unwrap_err(), r#"admin.secrets[0]: "a-b" is not a secret name (letters, digits and _, not starting with a digit)"#);
        assert_eq!(with(r#""admin":{"secrets":["OAUTH_SIGNING_KEY"]}"#).unwrap_err(), "admin.secrets[0]: OAUTH_SIGNING_KEY is the deployment's own key: no template may name it");
    }
}
