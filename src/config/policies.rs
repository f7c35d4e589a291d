//! A server's `policies`: allow and deny rules in CEL, each compiled with its fault located.

use serde::Deserialize;

use super::ConfigError;
use crate::access::{Effect, Policies, Rule, VARIABLES};
use crate::cel::Program;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyConfig {
    /// Named in refusals, the audit log and the console.
    pub name: String,
    /// Served only when this, or another allow rule, holds.
    #[serde(default)]
    pub allow: Option<String>,
    /// Not served when this holds.
    #[serde(default)]
    pub deny: Option<String>,
}

pub fn policies(list: &[PolicyConfig], path: &str) -> Result<Policies, ConfigError> {
    let mut rules = Vec::with_capacity(list.len());
    for (i, p) in list.iter().enumerate() {
        let at = format!("{path}.policies[{i}]");
        if p.name.trim().is_empty() {
            return Err(ConfigError::at(format!("{at}.name"), "must not be empty"));
        }
        if list.iter().take(i).any(|q| q.name == p.name) {
            return Err(ConfigError::at(format!("{at}.name"), format!("{:?} names another rule too; each needs its own", p.name)));
        }
        let (field, effect, source) = match (&p.allow, &p.deny) {
            (Some(source), None) => ("allow", Effect::Allow, source),
            (None, Some(source)) => ("deny", Effect::Deny, source),
            _ => return Err(ConfigError::at(at, "needs exactly one of \"allow\" and \"deny\": a CEL expression")),
        };
        let program = Program::compile(source, &VARIABLES).map_err(|e| ConfigError::at(format!("{at}.{field}"), format!("is not an expression this server evaluates: {e}")))?;
        rules.push(Rule { name: p.name.clone(), effect, program });
    }
    Ok(Policies::new(rules))
}

#[cfg(test)]
mod tests {
    use crate::config::load;

    fn fault(policies: &str) -> String {
        load(&format!(r#"{{"servers":[{{"name":"s","version":"1","policies":{policies}}}]}}"#)).map(|_| String::new()).unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn rules_compile_in_order() {
        let catalog = load(r#"{"servers":[{"name":"s","version":"1","policies":[{"name":"a","allow":"'x' in principal.roles"},{"name":"d","deny":"args.n > 1"}]}]}"#).unwrap();
        let rules = catalog.servers[0].policies.rules();
        assert_eq!(rules.iter().map(|r| (r.name.as_str(), r.program.source())).collect::<Vec<_>>(), [("a", "'x' in principal.roles"), ("d", "args.n > 1")]);
    }

    #[test]
    fn faults_are_located() {
        assert_eq!(fault(r#"[{"name":"a","allow":"principal.roles.exists(r,"}]"#), "servers[0].policies[0].allow: is not an expression this server evaluates: the expression ends too soon");
        assert_eq!(fault(r#"[{"name":"a","deny":"request.ip == '1'"}]"#), "servers[0].policies[0].deny: is not an expression this server evaluates: request is not a variable here; the variables are principal, entry, args, time");
        assert_eq!(fault(r#"[{"name":"a","allow":"true","deny":"false"}]"#), "servers[0].policies[0]: needs exactly one of \"allow\" and \"deny\": a CEL expression");
        assert_eq!(fault(r#"[{"name":"a"}]"#), "servers[0].policies[0]: needs exactly one of \"allow\" and \"deny\": a CEL expression");
        assert_eq!(fault(r#"[{"name":"a","allow":"true"},{"name":"a","deny":"false"}]"#), "servers[0].policies[1].name: \"a\" names another rule too; each needs its own");
        assert_eq!(fault(r#"[{"name":" ","allow":"true"}]"#), "servers[0].policies[0].name: must not be empty");
        assert!(fault(r#"[{"name":"a","allow":"true","when":"x"}]"#).contains("unknown field `when`"));
    }
}
