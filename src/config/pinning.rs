//! `servers[].pinning`: how a server guards its upstream MCP servers' tool definitions against
//! silent change (`crate::pins`): `hold` (the default), `withhold` or `off`.

use serde::Deserialize;

use crate::pins::Mode;

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PinningConfig {
    #[serde(default)]
    pub mode: Mode,
}

#[cfg(test)]
mod tests {
    use crate::config::load;
    use crate::pins::Mode;

    fn mode(pinning: &str) -> Result<Mode, String> {
        load(&format!(r#"{{"servers":[{{"name":"s","version":"1"{pinning}}}]}}"#)).map(|c| c.servers[0].pinning).map_err(|e| e.to_string())
    }

    #[test]
    fn hold_by_default() {
        assert_eq!(mode(""), Ok(Mode::Hold));
        assert_eq!(mode(r#","pinning":{}"#), Ok(Mode::Hold));
        assert_eq!(mode(r#","pinning":{"mode":"withhold"}"#), Ok(Mode::Withhold));
        assert_eq!(mode(r#","pinning":{"mode":"off"}"#), Ok(Mode::Off));
        assert!(mode(r#","pinning":{"mode":"trust"}"#).is_err());
        assert!(mode(r#","pinning":{"mode":"off","x":1}"#).is_err());
    }
}
