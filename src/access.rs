//! Access rules (`policies`): allow and deny rules in CEL (`crate::cel`) over who calls
//! (`principal`), what (`entry`: a tool, resource or prompt), with what (`args`) and when
//! (`time`). An entry is served when no deny rule holds and, if there are allow rules, one
//! does. A rule that fails to evaluate (a missing claim, a type that does not fit) counts
//! against the caller: a deny rule as holding, an allow rule as not.
//!
//! Lists are decided without arguments: a rule that reads `args` does not hide an entry from
//! a list (some arguments may pass it), and is decided when the entry is called. An entry a
//! rule hides answers a call exactly as an entry that does not exist; arguments a rule
//! refuses are said to be refused, naming the rule, since the caller can see the entry anyway.

use serde_json::{Map, Value};

use crate::auth::Principal;
use crate::cel::Program;
use crate::time::Civil;

/// The variables a rule may read.
pub const VARIABLES: [&str; 4] = ["principal", "entry", "args", "time"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Allow,
    Deny,
}

#[derive(Debug, Clone)]
pub struct Rule {
    pub name: String,
    pub effect: Effect,
    pub program: Program,
}

/// A server's rules, in order.
#[derive(Debug, Clone, Default)]
pub struct Policies {
    rules: Vec<Rule>,
}

/// What an entry is, as the rules see it (`entry`).
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// `tool`, `resource` or `prompt`.
    pub kind: &'static str,
    /// A tool's or prompt's name; a resource's URI.
    pub name: &'a str,
    pub tags: &'a [String],
    /// The upstream MCP server it comes from (`upstreams[].name`); empty for the server's own.
    pub upstream: &'a str,
    /// The server of this deployment it belongs to: the one it was taken from, for an alias
    /// (`include`), else the one serving it.
    pub server: &'a str,
    /// `http` (a configured or imported HTTP tool, a resource, a prompt), `mcp` (an upstream MCP
    /// server's), or `alias` (taken from another server by `include`).
    pub source: &'static str,
}

/// How a refusal's message begins after the tool's name: what the metrics count as `denied`.
pub const REFUSED: &str = "refused by the policy ";

/// Why a call of an entry the caller sees may not go ahead: the rule that refuses its
/// arguments ("no allow rule" when it is the allow rules, none holding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial(pub String);

/// The values a rule reads of the caller and the moment, built once for a list or a call.
pub struct Context {
    principal: Value,
    time: Value,
}

#[cfg(test)]
impl Context {
    /// The values every rule may read. A server's gate builds only those its rules read
    /// ([`Policies::context`]).
    pub fn new(principal: &Principal, now_ms: u64) -> Context {
        Context { principal: principal_value(principal), time: time_value(now_ms) }
    }
}

fn principal_value(principal: &Principal) -> Value {
    let mut p = Map::new();
    p.insert("id".into(), principal.id.clone().into());
    p.insert("subject".into(), principal.subject.clone().into());
    p.insert("roles".into(), principal.roles.clone().into());
    p.insert("email".into(), principal.email.clone().unwrap_or_default().into());
    p.insert("clientId".into(), principal.client_id.clone().unwrap_or_default().into());
    p.insert("claims".into(), Value::Object(principal.claims.clone()));
    Value::Object(p)
}

fn time_value(now_ms: u64) -> Value {
    let c = Civil::of(now_ms);
    let mut t = Map::new();
    t.insert("unix".into(), (now_ms / 1000).into());
    t.insert("iso".into(), crate::time::iso(now_ms).into());
    for (name, value) in [("year", c.year), ("month", c.month as i64), ("day", c.day as i64), ("hour", c.hour as i64), ("minute", c.minute as i64), ("weekday", c.weekday as i64)] {
        t.insert(name.into(), value.into());
    }
    Value::Object(t)
}

impl Policies {
    pub fn new(rules: Vec<Rule>) -> Policies {
        Policies { rules }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The values the rules read of the caller and the moment; what no rule reads is left null,
    /// so a call does not pay for it.
    pub fn context(&self, principal: &Principal, now_ms: u64) -> Context {
        let reads = |name| self.rules.iter().any(|r| r.program.reads(name));
        Context {
            principal: if reads("principal") { principal_value(principal) } else { Value::Null },
            time: if reads("time") { time_value(now_ms) } else { Value::Null },
        }
    }

    /// Whether a list shows the entry to the caller: rules that read `args` wait for the call.
    pub fn shows(&self, cx: &Context, entry: &Entry<'_>) -> bool {
        self.is_empty() || self.decide(cx, entry, None).is_ok()
    }

    /// Whether the caller may call an entry a list shows them ([`Policies::shows`]) with these
    /// (schema-valid) arguments.
    pub fn admits(&self, cx: &Context, entry: &Entry<'_>, args: &Value) -> Result<(), Denial> {
        if self.is_empty() {
            return Ok(());
        }
        self.decide(cx, entry, Some(args))
    }

    /// Without `args`: the rules that do not read them, and whether they hide the entry. With
    /// them: the rules that read them, and whether they refuse the arguments.
    fn decide(&self, cx: &Context, entry: &Entry<'_>, args: Option<&Value>) -> Result<(), Denial> {
        let entry_value = entry_value(entry);
        let empty = Value::Null;
        let vars = [("principal", &cx.principal), ("entry", &entry_value), ("args", args.unwrap_or(&empty)), ("time", &cx.time)];
        let mut allows = false;
        let mut allowed = false;
        for rule in &self.rules {
            let reads_args = rule.program.reads("args");
            match rule.effect {
                // Each deny rule is decided once: in the pass that has what it reads.
                Effect::Deny if reads_args == args.is_some() && rule.program.holds(&vars) != Ok(false) => return Err(refusal(&rule.name)),
                Effect::Deny => {}
                // An allow rule that reads arguments cannot refuse a list; at a call, every
                // allow rule counts.
                Effect::Allow => {
                    allows = true;
                    allowed = allowed || (reads_args && args.is_none()) || rule.program.holds(&vars) == Ok(true);
                }
            }
        }
        if allows && !allowed {
            return Err(refusal("no allow rule"));
        }
        Ok(())
    }
}

fn refusal(rule: &str) -> Denial {
    Denial(rule.to_string())
}

fn entry_value(entry: &Entry<'_>) -> Value {
    let mut e = Map::new();
    e.insert("kind".into(), entry.kind.into());
    e.insert("name".into(), entry.name.into());
    e.insert("tags".into(), entry.tags.to_vec().into());
    e.insert("upstream".into(), entry.upstream.into());
    e.insert("server".into(), entry.server.into());
    e.insert("source".into(), entry.source.into());
    Value::Object(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(name: &str, effect: Effect, source: &str) -> Rule {
        Rule { name: name.into(), effect, program: Program::compile(source, &VARIABLES).unwrap() }
    }

    fn support() -> Principal {
        Principal { claims: json!({"account": "acme"}).as_object().cloned().unwrap(), ..Principal::new("jwt:idp", "sam", vec!["support".into()]) }
    }

    const READ: &[String] = &[];

    fn tool<'a>(name: &'a str, tags: &'a [String]) -> Entry<'a> {
        Entry { kind: "tool", name, tags, upstream: "", server: "s", source: "http" }
    }

    #[test]
    fn allow_rules_list_what_they_admit_and_deny_rules_win() {
        let tags = vec!["read".to_string()];
        let policies = Policies::new(vec![
            rule("support reads", Effect::Allow, "'support' in principal.roles && 'read' in entry.tags"),
            rule("admins", Effect::Allow, "'admin' in principal.roles"),
            rule("no exports", Effect::Deny, "entry.name == 'export'"),
        ]);
        let cx = Context::new(&support(), 0);
        assert!(policies.shows(&cx, &tool("get", &tags)));
        assert!(!policies.shows(&cx, &tool("delete", READ)));
        assert!(!policies.shows(&cx, &tool("export", &tags)));
        let admin = Context::new(&Principal::new("token", "root", vec!["admin".into()]), 0);
        assert!(policies.shows(&admin, &tool("delete", READ)) && !policies.shows(&admin, &tool("export", READ)));
        assert!(Policies::default().shows(&cx, &tool("anything", READ)));
    }

    #[test]
    fn argument_rules_wait_for_the_call_and_name_themselves() {
        let policies = Policies::new(vec![rule("own account", Effect::Deny, "args.account_id != principal.claims.account")]);
        let cx = Context::new(&support(), 0);
        let t = tool("get_invoices", READ);
        assert!(policies.shows(&cx, &t), "some arguments pass it");
        assert_eq!(policies.admits(&cx, &t, &json!({"account_id": "acme"})), Ok(()));
        assert_eq!(policies.admits(&cx, &t, &json!({"account_id": "other"})), Err(Denial("own account".into())));
        assert_eq!(policies.admits(&cx, &t, &json!({})), Err(Denial("own account".into())), "a missing argument fails the rule: it fails closed");
        assert_eq!(policies.admits(&cx, &t, &json!({"account_id": "ａcme"})), Err(Denial("own account".into())));
        let anonymous = Context::new(&Principal::anonymous(), 0);
        assert_eq!(policies.admits(&anonymous, &t, &json!({"account_id": "acme"})), Err(Denial("own account".into())), "no claim: refused");
    }

    #[test]
    fn an_allow_rule_on_arguments_decides_at_the_call() {
        let policies = Policies::new(vec![rule("small refunds", Effect::Allow, "entry.name != 'refund' || args.amount <= 100"), rule("admins", Effect::Allow, "'admin' in principal.roles")]);
        let cx = Context::new(&support(), 0);
        let t = tool("refund", READ);
        assert!(policies.shows(&cx, &t));
        assert_eq!(policies.admits(&cx, &t, &json!({"amount": 100})), Ok(()));
        assert_eq!(policies.admits(&cx, &t, &json!({"amount": 100.5})), Err(Denial("no allow rule".into())));
        assert_eq!(policies.admits(&cx, &t, &json!({"amount": "5"})), Err(Denial("no allow rule".into())), "a number as a string is no number");
        let admin = Context::new(&Principal::new("token", "root", vec!["admin".into()]), 0);
        assert_eq!(policies.admits(&admin, &t, &json!({"amount": 500})), Ok(()), "another allow rule admits the admin whatever the arguments");
    }

    #[test]
    fn a_call_builds_only_what_its_rules_read() {
        let policies = Policies::new(vec![rule("e", Effect::Deny, "entry.name == 'x'")]);
        let cx = policies.context(&support(), 1);
        assert_eq!((cx.principal, cx.time), (Value::Null, Value::Null));
        let both = Policies::new(vec![rule("p", Effect::Deny, "principal.id == '' || time.hour > 25")]).context(&support(), 1);
        assert!(both.principal.is_object() && both.time.is_object());
    }

    #[test]
    fn rules_read_the_time_and_the_entry_s_origin() {
        let policies = Policies::new(vec![rule("office hours", Effect::Deny, "entry.upstream == 'billing' && (time.hour < 9 || time.weekday == 0 || time.weekday == 6)")]);
        let cx = |ms| Context::new(&support(), ms);
        let billing = Entry { kind: "tool", name: "charge", tags: READ, upstream: "billing", server: "s", source: "mcp" };
        // 2026-11-28 was a Saturday; 2026-11-30 10:00 a Monday.
        assert!(!policies.shows(&cx(1_795_833_605_000), &billing));
        assert!(policies.shows(&cx(1_796_032_800_000), &billing));
        assert!(policies.shows(&cx(1_795_833_605_000), &tool("charge", READ)));
    }
}
