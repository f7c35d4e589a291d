//! A server's `rateLimits` checked and compiled into `limits::Limit`s: a rate (token bucket), a
//! quota per UTC calendar hour, day or month, and a bound on calls in flight, each per the keys
//! `per` names and over the tools `tools` matches. Every number must be above zero, every
//! name printable and unique within the server.

use serde::Deserialize;
use wildmatch::WildMatch;

use super::ConfigError;
use crate::limits::{Concurrency, Limit, Per, Period, Quota, Rate};

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Names the limit in refusals, headers and the principal's state.
    pub name: String,
    /// What the limit is counted per: `principal`, `client`, `tool`, `server`, `upstream`.
    /// Empty: one count for every call the limit applies to.
    #[serde(default)]
    pub per: Vec<Per>,
    /// Globs over the tools' names; absent: every tool.
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default)]
    pub rate: Option<RateConfig>,
    #[serde(default)]
    pub quota: Option<QuotaConfig>,
    #[serde(default)]
    pub concurrency: Option<ConcurrencyConfig>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateConfig {
    pub per_second: f64,
    /// Calls that may come at once after a quiet spell; absent: `perSecond` rounded up.
    #[serde(default)]
    pub burst: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuotaConfig {
    pub calls: u32,
    pub period: Period,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConcurrencyConfig {
    pub max: u32,
    #[serde(default)]
    pub queue: u32,
    #[serde(default = "default_queue_timeout")]
    pub queue_timeout_ms: u64,
}

fn default_queue_timeout() -> u64 {
    30_000
}

pub fn limits(list: &[RateLimitConfig], path: &str) -> Result<Vec<Limit>, ConfigError> {
    let mut out: Vec<Limit> = Vec::with_capacity(list.len());
    for (i, c) in list.iter().enumerate() {
        let at = |field: &str| format!("{path}.rateLimits[{i}]{field}");
        let printable = c.name.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\');
        if c.name.trim().is_empty() || c.name.len() > 64 || !printable {
            return Err(ConfigError::at(at(".name"), "must be 1 to 64 printable ASCII characters, without \" or \\"));
        }
        if out.iter().any(|l| l.name == c.name) {
            return Err(ConfigError::at(at(".name"), format!("{:?} names another limit of this server", c.name)));
        }
        if c.rate.is_none() && c.quota.is_none() && c.concurrency.is_none() {
            return Err(ConfigError::at(at(""), "needs a rate, a quota or a concurrency"));
        }
        let rate = match &c.rate {
            Some(r) if !(r.per_second.is_finite() && r.per_second > 0.0 && r.per_second <= 1e6) => {
                return Err(ConfigError::at(at(".rate.perSecond"), "must be above 0 (and at most 1000000)"));
            }
            Some(RateConfig { burst: Some(0), .. }) => return Err(ConfigError::at(at(".rate.burst"), "must be greater than 0")),
            Some(r) => Some(Rate { per_second: r.per_second, burst: r.burst.unwrap_or(r.per_second.ceil() as u32) }),
            None => None,
        };
        let quota = match &c.quota {
            Some(q) if q.calls == 0 => return Err(ConfigError::at(at(".quota.calls"), "must be greater than 0")),
            Some(q) => Some(Quota { calls: q.calls, period: q.period }),
            None => None,
        };
        let concurrency = match &c.concurrency {
            Some(k) if k.max == 0 => return Err(ConfigError::at(at(".concurrency.max"), "must be greater than 0")),
            Some(k) if k.queue > 0 && k.queue_timeout_ms == 0 => return Err(ConfigError::at(at(".concurrency.queueTimeoutMs"), "must be greater than 0")),
            Some(k) => Some(Concurrency { max: k.max, queue: k.queue, queue_timeout_ms: k.queue_timeout_ms }),
            None => None,
        };
        let mut tools = Vec::with_capacity(c.tools.len());
        for (j, glob) in c.tools.iter().enumerate() {
            if glob.trim().is_empty() {
                return Err(ConfigError::at(at(&format!(".tools[{j}]")), "must not be empty"));
            }
            tools.push(WildMatch::new(glob));
        }
        out.push(Limit { name: c.name.clone(), per: c.per.clone(), tools, rate, quota, concurrency });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::config::load;

    fn check(limits: &str) -> Result<Vec<crate::limits::Limit>, String> {
        load(&format!(r#"{{"servers":[{{"name":"s","version":"1","rateLimits":{limits}}}]}}"#)).map(|c| c.servers[0].rate_limits.clone()).map_err(|e| e.to_string())
    }

    #[test]
    fn limits_compile() {
        let limits = check(
            r#"[{"name":"per user","per":["principal"],"rate":{"perSecond":2,"burst":10}},
                {"name":"search","per":["principal","tool"],"tools":["search*"],"rate":{"perSecond":0.5}},
                {"name":"monthly","per":["principal"],"quota":{"calls":1000,"period":"month"}},
                {"name":"n8n","per":["upstream"],"concurrency":{"max":4,"queue":16,"queueTimeoutMs":30000}}]"#,
        )
        .unwrap();
        assert_eq!(limits.len(), 4);
        assert_eq!(limits[1].rate.unwrap().burst, 1);
        assert!(limits[1].applies("search_docs") && !limits[1].applies("get"));
        assert_eq!(limits[3].concurrency.unwrap().queue, 16);
    }

    #[test]
    fn faults_name_their_path() {
        let fault = |l: &str| check(l).unwrap_err();
        assert_eq!(fault(r#"[{"name":"a","rate":{"perSecond":0}}]"#), "servers[0].rateLimits[0].rate.perSecond: must be above 0 (and at most 1000000)");
        assert_eq!(fault(r#"[{"name":"a","rate":{"perSecond":-1}}]"#), "servers[0].rateLimits[0].rate.perSecond: must be above 0 (and at most 1000000)");
        assert_eq!(fault(r#"[{"name":"a","rate":{"perSecond":1,"burst":0}}]"#), "servers[0].rateLimits[0].rate.burst: must be greater than 0");
        assert_eq!(fault(r#"[{"name":"a","quota":{"calls":0,"period":"day"}}]"#), "servers[0].rateLimits[0].quota.calls: must be greater than 0");
        assert!(fault(r#"[{"name":"a","quota":{"calls":-5,"period":"day"}}]"#).starts_with("servers[0].rateLimits[0].quota.calls"));
        assert!(fault(r#"[{"name":"a","quota":{"calls":5,"period":"week"}}]"#).starts_with("servers[0].rateLimits[0].quota.period"));
        assert!(fault(r#"[{"name":"a","per":["ip"],"quota":{"calls":5,"period":"day"}}]"#).starts_with("servers[0].rateLimits[0].per[0]"));
        assert_eq!(fault(r#"[{"name":"a","concurrency":{"max":0}}]"#), "servers[0].rateLimits[0].concurrency.max: must be greater than 0");
        assert_eq!(fault(r#"[{"name":"a"}]"#), "servers[0].rateLimits[0]: needs a rate, a quota or a concurrency");
        assert!(fault(r#"[{"name":"a\"b","concurrency":{"max":1}}]"#).starts_with("servers[0].rateLimits[0].name"));
        assert!(fault(r#"[{"name":"a","concurrency":{"max":1}},{"name":"a","concurrency":{"max":1}}]"#).starts_with("servers[0].rateLimits[1].name"));
        assert!(fault(r#"[{"name":"a","tools":[""],"concurrency":{"max":1}}]"#).starts_with("servers[0].rateLimits[0].tools[0]"));
    }
}
