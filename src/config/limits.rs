//! A server's `rateLimits` checked and compiled into `limits::Limit`s: a rate (token bucket), a
//! quota per UTC calendar hour, day or month, and a bound on calls in flight, each per the keys
//! `per` names and over the tools `tools` matches. Every number must be above zero, every
//! name printable and unique within the server.

use serde_json::{Map, Value};
use wildmatch::WildMatch;

use super::ConfigError;
use crate::limits::{Concurrency, Limit, Per, Period, Quota, Rate};

/// An object with no field but `allowed`; read by hand rather than by serde, whose code for
/// each struct the module would carry.
fn object<'a>(value: &'a Value, at: &str, allowed: &[&str]) -> Result<&'a Map<String, Value>, ConfigError> {
    let map = value.as_object().ok_or_else(|| ConfigError::at(at, "must be an object"))?;
    if let Some(field) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(ConfigError::at(format!("{at}.{field}"), format!("unknown field; expected one of {}", allowed.join(", "))));
    }
    Ok(map)
}

/// A whole number from `min` up, or `None` when absent.
fn whole(map: &Map<String, Value>, field: &str, at: &str, min: u64) -> Result<Option<u64>, ConfigError> {
    match map.get(field) {
        None => Ok(None),
        Some(v) => v.as_u64().filter(|n| *n >= min && *n <= u64::from(u32::MAX)).map(Some).ok_or_else(|| ConfigError::at(format!("{at}.{field}"), if min == 0 { "must be a whole number" } else { "must be a whole number greater than 0" })),
    }
}

fn strings<'a>(map: &'a Map<String, Value>, field: &str, at: &str) -> Result<Vec<&'a str>, ConfigError> {
    match map.get(field) {
        None => Ok(Vec::new()),
        Some(Value::Array(list)) => list.iter().enumerate().map(|(i, v)| v.as_str().filter(|s| !s.trim().is_empty()).ok_or_else(|| ConfigError::at(format!("{at}.{field}[{i}]"), "must be a non-empty string"))).collect(),
        Some(_) => Err(ConfigError::at(format!("{at}.{field}"), "must be a list")),
    }
}

/// A sub-object and its path.
type Part<'a> = Option<(&'a Map<String, Value>, String)>;

fn one<'a>(map: &'a Map<String, Value>, field: &str, at: &str, allowed: &[&str]) -> Result<Part<'a>, ConfigError> {
    let at = format!("{at}.{field}");
    match map.get(field) {
        Some(v) => Ok(Some((object(v, &at, allowed)?, at))),
        None => Ok(None),
    }
}

/// A server's `rateLimits`: each limit checked, its faults located by their path.
pub fn limits(list: &[Value], path: &str) -> Result<Vec<Limit>, ConfigError> {
    let mut out: Vec<Limit> = Vec::with_capacity(list.len());
    for (i, entry) in list.iter().enumerate() {
        let at = format!("{path}.rateLimits[{i}]");
        let c = object(entry, &at, &["name", "per", "tools", "rate", "quota", "concurrency"])?;
        let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
        let printable = name.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\');
        if name.trim().is_empty() || name.len() > 64 || !printable {
            return Err(ConfigError::at(format!("{at}.name"), "must be 1 to 64 printable ASCII characters, without \" or \\"));
        }
        if out.iter().any(|l| l.name == name) {
            return Err(ConfigError::at(format!("{at}.name"), format!("{name:?} names another limit of this server")));
        }
        let per = strings(c, "per", &at)?
            .into_iter()
            .enumerate()
            .map(|(j, p)| match p {
                "principal" => Ok(Per::Principal),
                "client" => Ok(Per::Client),
                "tool" => Ok(Per::Tool),
                "server" => Ok(Per::Server),
                "upstream" => Ok(Per::Upstream),
                other => Err(ConfigError::at(format!("{at}.per[{j}]"), format!("{other:?} is not one of principal, client, tool, server, upstream"))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let tools = strings(c, "tools", &at)?.into_iter().map(WildMatch::new).collect();
        let rate = match one(c, "rate", &at, &["perSecond", "burst"])? {
            Some((r, at)) => {
                let per_second = r.get("perSecond").and_then(Value::as_f64).filter(|n| n.is_finite() && *n >= 0.001 && *n <= 1e6);
                let per_second = per_second.ok_or_else(|| ConfigError::at(format!("{at}.perSecond"), "must be above 0 (at least 0.001, at most 1000000)"))?;
                let burst = whole(r, "burst", &at, 1)?.unwrap_or(per_second.ceil() as u64) as u32;
                Some(Rate { milli_per_second: (per_second * 1000.0).round() as u64, burst })
            }
            None => None,
        };
        let quota = match one(c, "quota", &at, &["calls", "period"])? {
            Some((q, at)) => {
                let calls = whole(q, "calls", &at, 1)?.ok_or_else(|| ConfigError::at(format!("{at}.calls"), "is required"))? as u32;
                let period = match q.get("period").and_then(Value::as_str) {
                    Some("hour") => Period::Hour,
                    Some("day") => Period::Day,
                    Some("month") => Period::Month,
                    _ => return Err(ConfigError::at(format!("{at}.period"), "must be \"hour\", \"day\" or \"month\"")),
                };
                Some(Quota { calls, period })
            }
            None => None,
        };
        let concurrency = match one(c, "concurrency", &at, &["max", "queue", "queueTimeoutMs"])? {
            Some((k, at)) => {
                let max = whole(k, "max", &at, 1)?.ok_or_else(|| ConfigError::at(format!("{at}.max"), "is required"))? as u32;
                let queue = whole(k, "queue", &at, 0)?.unwrap_or(0) as u32;
                let queue_timeout_ms = whole(k, "queueTimeoutMs", &at, 1)?.unwrap_or(30_000);
                Some(Concurrency { max, queue, queue_timeout_ms })
            }
            None => None,
        };
        if rate.is_none() && quota.is_none() && concurrency.is_none() {
            return Err(ConfigError::at(at, "needs a rate, a quota or a concurrency"));
        }
        out.push(Limit { name: name.to_string(), per, tools, rate, quota, concurrency });
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
        assert_eq!(limits[1].rate.unwrap(), crate::limits::Rate { milli_per_second: 500, burst: 1 });
        assert!(limits[1].applies("search_docs") && !limits[1].applies("get"));
        assert_eq!(limits[3].concurrency.unwrap().queue, 16);
    }

    #[test]
    fn faults_name_their_path() {
        let fault = |l: &str| check(l).unwrap_err();
        assert_eq!(fault(r#"[{"name":"a","rate":{"perSecond":0}}]"#), "servers[0].rateLimits[0].rate.perSecond: must be above 0 (at least 0.001, at most 1000000)");
        assert_eq!(fault(r#"[{"name":"a","rate":{"perSecond":-1}}]"#), "servers[0].rateLimits[0].rate.perSecond: must be above 0 (at least 0.001, at most 1000000)");
        assert_eq!(fault(r#"[{"name":"a","rate":{"perSecond":1,"burst":0}}]"#), "servers[0].rateLimits[0].rate.burst: must be a whole number greater than 0");
        assert_eq!(fault(r#"[{"name":"a","quota":{"calls":0,"period":"day"}}]"#), "servers[0].rateLimits[0].quota.calls: must be a whole number greater than 0");
        assert!(fault(r#"[{"name":"a","quota":{"calls":-5,"period":"day"}}]"#).starts_with("servers[0].rateLimits[0].quota.calls"));
        assert!(fault(r#"[{"name":"a","quota":{"calls":5,"period":"week"}}]"#).starts_with("servers[0].rateLimits[0].quota.period"));
        assert!(fault(r#"[{"name":"a","per":["ip"],"quota":{"calls":5,"period":"day"}}]"#).starts_with("servers[0].rateLimits[0].per[0]"));
        assert_eq!(fault(r#"[{"name":"a","concurrency":{"max":0}}]"#), "servers[0].rateLimits[0].concurrency.max: must be a whole number greater than 0");
        assert_eq!(fault(r#"[{"name":"a"}]"#), "servers[0].rateLimits[0]: needs a rate, a quota or a concurrency");
        assert!(fault(r#"[{"name":"a\"b","concurrency":{"max":1}}]"#).starts_with("servers[0].rateLimits[0].name"));
        assert!(fault(r#"[{"name":"a","concurrency":{"max":1}},{"name":"a","concurrency":{"max":1}}]"#).starts_with("servers[0].rateLimits[1].name"));
        assert!(fault(r#"[{"name":"a","tools":[""],"concurrency":{"max":1}}]"#).starts_with("servers[0].rateLimits[0].tools[0]"));
        assert_eq!(fault(r#"[{"name":"a","rate":{"perSecond":1,"brust":2}}]"#), "servers[0].rateLimits[0].rate.brust: unknown field; expected one of perSecond, burst");
        assert_eq!(fault(r#"[{"name":"a","quota":{"calls":1.5,"period":"day"}}]"#), "servers[0].rateLimits[0].quota.calls: must be a whole number greater than 0");
    }
}
