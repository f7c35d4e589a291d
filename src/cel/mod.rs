//! A subset of CEL, the Common Expression Language that Kubernetes and agentgateway write
//! policies in, evaluated over JSON values: what access rules are written in.
//!
//! Why a subset: the maintained Rust implementation (`cel` 0.15) adds 113 KB of gzip to the
//! module through its smallest parser, ten times the room left under the 1 MiB cap; this adds
//! about 10 KB. What it reads is CEL's syntax, and each expression it accepts means what CEL
//! says, with one widening: arithmetic mixing an integer and a double gives a double where
//! CEL refuses. It has literals (`null`, booleans, integers, doubles, strings, lists), member
//! and index access, `! - * / % + -`, comparisons, `in`, `&&` and `||` (errors absorbed as
//! CEL does), `?:`, `size`, `has`, `startsWith`, `endsWith`, `contains` and the `exists` and
//! `all` macros. Not: map literals, `map`/`filter`, `matches`, timestamps and durations,
//! unsigned and bytes values, type checking before evaluation.
//!
//! - `lex`: the tokens; `parse`: the grammar, bounded in length (4 KB), depth (32) and size
//!   (256 parts); `eval`: the evaluation.

mod eval;
mod lex;
mod parse;

use serde_json::Value;

pub use eval::Fault;
use eval::Scope;
use parse::Expr;

/// A compiled expression, and the names it reads.
#[derive(Clone, PartialEq)]
pub struct Program {
    source: String,
    expr: Expr,
    reads: Vec<String>,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}

impl Program {
    /// `source` compiled, reading only the variables `names`; or what is wrong with it.
    pub fn compile(source: &str, names: &[&str]) -> Result<Program, String> {
        let expr = parse::parse(source)?;
        let mut reads = Vec::new();
        free(&expr, &mut Vec::new(), &mut reads);
        if let Some(unknown) = reads.iter().find(|r| !names.contains(&r.as_str())) {
            return Err(format!("{unknown} is not a variable here; the variables are {}", names.join(", ")));
        }
        Ok(Program { source: source.to_string(), expr, reads })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the expression reads the variable `name`.
    pub fn reads(&self, name: &str) -> bool {
        self.reads.iter().any(|r| r == name)
    }

    /// The value of the expression with these variables.
    pub fn eval(&self, vars: &[(&str, &Value)]) -> Result<Value, Fault> {
        eval::eval(&self.expr, &Scope::Top(vars)).map(std::borrow::Cow::into_owned)
    }

    /// Whether the expression holds: `true`, or an error when it is not a boolean.
    pub fn holds(&self, vars: &[(&str, &Value)]) -> Result<bool, Fault> {
        match eval::eval(&self.expr, &Scope::Top(vars))?.as_ref() {
            Value::Bool(b) => Ok(*b),
            _ => Err("not a boolean"),
        }
    }
}

/// The variables `expr` reads that no macro around them binds.
fn free(expr: &Expr, bound: &mut Vec<String>, out: &mut Vec<String>) {
    match expr {
        Expr::Var(name) => {
            if !bound.contains(name) && !out.contains(name) {
                out.push(name.clone());
            }
        }
        Expr::Lit(_) => {}
        Expr::Member(x, _) | Expr::Has(x, _) | Expr::Not(x) | Expr::Neg(x) => free(x, bound, out),
        Expr::Index(a, b) | Expr::Bin(_, a, b) => {
            free(a, bound, out);
            free(b, bound, out);
        }
        Expr::Cond(a, b, c) => [a, b, c].into_iter().for_each(|x| free(x, bound, out)),
        Expr::List(items) | Expr::Call(_, items) => items.iter().for_each(|x| free(x, bound, out)),
        Expr::Every { list, var, body, .. } => {
            free(list, bound, out);
            bound.push(var.clone());
            free(body, bound, out);
            bound.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NAMES: [&str; 4] = ["principal", "entry", "args", "time"];

    fn run(source: &str, context: &Value) -> Result<Value, Fault> {
        let program = Program::compile(source, &NAMES).unwrap();
        let vars: Vec<(&str, &Value)> = NAMES.iter().filter_map(|n| context.get(*n).map(|v| (*n, v))).collect();
        program.eval(&vars)
    }

    fn context() -> Value {
        json!({
            "principal": {"id": "jwt:u1", "roles": ["support"], "claims": {"account": "acme", "level": 3}},
            "entry": {"name": "get_invoice", "tags": ["read", "billing"], "kind": "tool"},
            "args": {"account_id": "acme", "amount": 50, "price": 9.5, "items": [1, 2, 3], "nested": {"a": null}},
            "time": {"hour": 14, "weekday": 3},
        })
    }

    #[test]
    fn the_issue_s_rules_evaluate_as_cel_does() {
        let c = context();
        let brief = "principal.roles.exists(r, r == 'admin') || (args.account_id == principal.claims.account && entry.tags.exists(t, t == 'read'))";
        assert_eq!(run(brief, &c), Ok(json!(true)));
        assert_eq!(run("'support' in principal.roles && 'read' in entry.tags", &c), Ok(json!(true)));
        assert_eq!(run("has(args.account_id) && args.account_id != principal.claims.account", &c), Ok(json!(false)));
        assert_eq!(run("entry.name.startsWith('get_') && time.hour >= 9 && time.hour < 17", &c), Ok(json!(true)));
        assert_eq!(run("args.items.all(i, i > 0) && size(args.items) == 3 && args.items[1] == 2", &c), Ok(json!(true)));
        assert_eq!(run("principal.claims.level > 2 ? 'high' : 'low'", &c), Ok(json!("high")));
        assert_eq!(run("'account_id' in args && !has(args.missing) && args.nested.a == null", &c), Ok(json!(true)));
        assert_eq!(run("principal.claims.exists(k, k == 'account')", &c), Ok(json!(true)), "a map's comprehension ranges over its keys");
    }

    #[test]
    fn numbers_compare_by_value_and_strings_are_never_numbers() {
        let c = context();
        assert_eq!(run("args.amount == 50.0 && args.amount < 50.5 && args.price > 9", &c), Ok(json!(true)));
        assert_eq!(run("args.amount == '50'", &c), Ok(json!(false)), "different types are unequal, never coerced");
        assert_eq!(run("args.amount < '100'", &c), Err("no such overload"));
        assert_eq!(run("[1, '1', 1.0] == [1.0, '1', 1]", &c), Ok(json!(true)));
        assert_eq!(run("7 / 2 == 3 && 7 % 2 == 1 && 7.0 / 2 == 3.5 && args.price * 2 == 19", &c), Ok(json!(true)));
        assert_eq!(run("9223372036854775807 + 1", &c), Err("integer overflow"));
        assert_eq!(run("-(-9223372036854775807 - 1)", &c), Err("integer overflow"));
        assert_eq!(run("1 / 0", &c), Err("division by zero"));
        assert_eq!(run("1 % 0", &c), Err("modulus by zero"));
        assert_eq!(run("1.5 % 1", &c), Err("no such overload"));
    }

    #[test]
    fn unicode_is_compared_as_written() {
        let c = json!({"args": {"account_id": "ａcme", "name": "café", "e": "cafe\u{301}"}, "principal": {"claims": {"account": "acme"}}});
        assert_eq!(run("args.account_id == principal.claims.account", &c), Ok(json!(false)), "a fullwidth letter is another letter");
        assert_eq!(run("args.name == args.e", &c), Ok(json!(false)), "no normalisation: composed and decomposed differ");
        assert_eq!(run("size(args.name) == 4 && size(args.e) == 5", &c), Ok(json!(true)), "size counts code points");
    }

    #[test]
    fn errors_are_absorbed_only_where_cel_absorbs_them() {
        let c = context();
        assert_eq!(run("args.missing == 1 || true", &c), Ok(json!(true)));
        assert_eq!(run("false && args.missing == 1", &c), Ok(json!(false)));
        assert_eq!(run("args.missing == 1 && false", &c), Ok(json!(false)));
        assert_eq!(run("args.missing == 1 || false", &c), Err("no such key"));
        assert_eq!(run("args.amount || true", &c), Ok(json!(true)));
        assert_eq!(run("!args.amount", &c), Err("no such overload"));
        assert_eq!(run("args.items[3]", &c), Err("index out of range"));
        assert_eq!(run("args.items[-1]", &c), Err("index out of range"));
        assert_eq!(run("args.items.exists(i, i.x == 1) ", &c), Err("no such overload"));
        assert_eq!(run("args.items.exists(i, i == 2 || i.x == 1)", &c), Ok(json!(true)));
        assert_eq!(run("args.amount.size()", &c), Err("no such overload"));
        assert_eq!(run("args['account_id'] + '!'", &c), Ok(json!("acme!")));
    }

    #[test]
    fn compile_names_what_an_expression_reads() {
        let p = Program::compile("entry.tags.exists(args, args == 'x') && principal.id != ''", &NAMES).unwrap();
        assert!(p.reads("entry") && p.reads("principal") && !p.reads("args"), "a macro's variable is not the outer one");
        assert!(Program::compile("has(args.a)", &NAMES).unwrap().reads("args"));
        assert_eq!(Program::compile("request.ip == '1'", &NAMES).unwrap_err(), "request is not a variable here; the variables are principal, entry, args, time");
        assert_eq!(format!("{p:?}"), "entry.tags.exists(args, args == 'x') && principal.id != ''");
        let hold = Program::compile("entry.name", &NAMES).unwrap();
        assert_eq!(hold.holds(&[("entry", &json!({"name": "x"}))]), Err("not a boolean"));
    }
}
