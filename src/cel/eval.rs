//! CEL's evaluation over JSON values: the operators' overloads, heterogeneous equality and
//! ordering of numbers, checked integer arithmetic, and errors that `&&` and `||` absorb when
//! the other side decides, as CEL's commutative logic does.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::{Number, Value};

use super::parse::{Expr, Function, Op};

/// An evaluation's failure: CEL's error value, named by its kind.
pub type Fault = &'static str;

/// The variables an expression sees: the ones it was given, and those a macro binds.
pub enum Scope<'s> {
    Top(&'s [(&'s str, &'s Value)]),
    Bound(&'s Scope<'s>, &'s str, &'s Value),
}

impl<'s> Scope<'s> {
    fn get(&self, name: &str) -> Option<&'s Value> {
        match self {
            Scope::Top(vars) => vars.iter().find(|(n, _)| *n == name).map(|(_, v)| *v),
            Scope::Bound(outer, n, v) => if *n == name { Some(*v) } else { outer.get(name) },
        }
    }
}

type Out<'s> = Result<Cow<'s, Value>, Fault>;

const NO_OVERLOAD: Fault = "no such overload";

fn boolean(value: Result<Cow<'_, Value>, Fault>) -> Result<bool, Fault> {
    match value?.as_ref() {
        Value::Bool(b) => Ok(*b),
        _ => Err(NO_OVERLOAD),
    }
}

fn owned<'s>(value: impl Into<Value>) -> Out<'s> {
    Ok(Cow::Owned(value.into()))
}

pub fn eval<'s>(expr: &'s Expr, scope: &Scope<'s>) -> Out<'s> {
    match expr {
        Expr::Lit(v) => Ok(Cow::Borrowed(v)),
        Expr::Var(name) => scope.get(name).map(Cow::Borrowed).ok_or("undeclared reference"),
        Expr::Member(of, field) => member(eval(of, scope)?, field),
        Expr::Has(of, field) => match eval(of, scope)?.as_ref() {
            Value::Object(map) => owned(map.contains_key(field)),
            _ => Err(NO_OVERLOAD),
        },
        Expr::Index(of, key) => {
            let key = eval(key, scope)?;
            match (eval(of, scope)?, key.as_ref()) {
                (map @ Cow::Borrowed(Value::Object(_)) | map @ Cow::Owned(Value::Object(_)), Value::String(k)) => member(map, k),
                (list, Value::Number(n)) if list.is_array() => {
                    let i = n.as_i64().ok_or(NO_OVERLOAD).and_then(|i| usize::try_from(i).map_err(|_| "index out of range"))?;
                    match list {
                        Cow::Borrowed(l) => l.get(i).map(Cow::Borrowed).ok_or("index out of range"),
                        Cow::Owned(mut l) => l.get_mut(i).map(|v| Cow::Owned(v.take())).ok_or("index out of range"),
                    }
                }
                _ => Err(NO_OVERLOAD),
            }
        }
        Expr::Not(x) => owned(!boolean(eval(x, scope))?),
        Expr::Neg(x) => match eval(x, scope)?.as_ref() {
            Value::Number(n) => match n.as_i64() {
                Some(i) => owned(i.checked_neg().ok_or("integer overflow")?),
                None => owned(-n.as_f64().ok_or(NO_OVERLOAD)?),
            },
            _ => Err(NO_OVERLOAD),
        },
        Expr::Cond(cond, yes, no) => eval(if boolean(eval(cond, scope))? { yes } else { no }, scope),
        Expr::List(items) => Ok(Cow::Owned(Value::Array(items.iter().map(|x| eval(x, scope).map(Cow::into_owned)).collect::<Result<_, _>>()?))),
        Expr::Bin(op @ (Op::Or | Op::And), l, r) => {
            // The side that decides wins over an error on the other, whichever side it is.
            let decides = *op == Op::Or;
            let left = boolean(eval(l, scope));
            if left == Ok(decides) {
                return owned(decides);
            }
            match (left, boolean(eval(r, scope))) {
                (_, Ok(b)) if b == decides => owned(decides),
                (Ok(_), Ok(_)) => owned(!decides),
                (Err(e), _) | (_, Err(e)) => Err(e),
            }
        }
        Expr::Bin(op, l, r) => binary(*op, eval(l, scope)?.as_ref(), eval(r, scope)?.as_ref()),
        Expr::Every { all, list, var, body } => {
            let list = eval(list, scope)?;
            let items: Vec<Cow<'_, Value>> = match list.as_ref() {
                Value::Array(xs) => xs.iter().map(Cow::Borrowed).collect(),
                // A map's comprehension ranges over its keys.
                Value::Object(map) => map.keys().map(|k| Cow::Owned(Value::String(k.clone()))).collect(),
                _ => return Err(NO_OVERLOAD),
            };
            let mut fault = None;
            for item in &items {
                let inner = Scope::Bound(scope, var, item);
                match boolean(eval(body, &inner)) {
                    Ok(b) if b != *all => return owned(!*all),
                    Ok(_) => {}
                    Err(e) => fault = Some(e),
                }
            }
            fault.map_or_else(|| owned(*all), Err)
        }
        Expr::Call(function, args) => {
            let values = args.iter().map(|a| eval(a, scope)).collect::<Result<Vec<_>, _>>()?;
            let values: Vec<&Value> = values.iter().map(AsRef::as_ref).collect();
            match (function, values.as_slice()) {
                (Function::Size, [Value::String(s)]) => owned(s.chars().count()),
                (Function::Size, [Value::Array(a)]) => owned(a.len()),
                (Function::Size, [Value::Object(m)]) => owned(m.len()),
                (Function::StartsWith, [Value::String(s), Value::String(p)]) => owned(s.starts_with(p.as_str())),
                (Function::EndsWith, [Value::String(s), Value::String(p)]) => owned(s.ends_with(p.as_str())),
                (Function::Contains, [Value::String(s), Value::String(p)]) => owned(s.contains(p.as_str())),
                _ => Err(NO_OVERLOAD),
            }
        }
    }
}

fn member<'s>(of: Cow<'s, Value>, field: &str) -> Out<'s> {
    match of {
        Cow::Borrowed(Value::Object(map)) => map.get(field).map(Cow::Borrowed).ok_or("no such key"),
        Cow::Owned(Value::Object(mut map)) => map.remove(field).map(Cow::Owned).ok_or("no such key"),
        _ => Err(NO_OVERLOAD),
    }
}

fn binary<'s>(op: Op, a: &Value, b: &Value) -> Out<'s> {
    match op {
        Op::Eq => owned(equal(a, b)),
        Op::Ne => owned(!equal(a, b)),
        Op::In => match b {
            Value::Array(items) => owned(items.iter().any(|x| equal(a, x))),
            Value::Object(map) => owned(a.as_str().is_some_and(|k| map.contains_key(k))),
            _ => Err(NO_OVERLOAD),
        },
        Op::Lt | Op::Le | Op::Gt | Op::Ge => {
            let order = match (a, b) {
                (Value::String(x), Value::String(y)) => x.cmp(y),
                (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
                (Value::Number(x), Value::Number(y)) => compare(x, y).ok_or(NO_OVERLOAD)?,
                _ => return Err(NO_OVERLOAD),
            };
            owned(match op {
                Op::Lt => order.is_lt(),
                Op::Le => order.is_le(),
                Op::Gt => order.is_gt(),
                _ => order.is_ge(),
            })
        }
        Op::Add => match (a, b) {
            (Value::String(x), Value::String(y)) => owned(format!("{x}{y}")),
            (Value::Array(x), Value::Array(y)) => owned(x.iter().chain(y).cloned().collect::<Vec<_>>()),
            _ => arithmetic(a, b, i64::checked_add, |x, y| x + y),
        },
        Op::Sub => arithmetic(a, b, i64::checked_sub, |x, y| x - y),
        Op::Mul => arithmetic(a, b, i64::checked_mul, |x, y| x * y),
        Op::Div => match (a.as_i64(), b.as_i64()) {
            (Some(_), Some(0)) => Err("division by zero"),
            (Some(x), Some(y)) => owned(x.checked_div(y).ok_or("integer overflow")?),
            _ => arithmetic(a, b, |_, _| None, |x, y| x / y),
        },
        // Integers only: a double's remainder would bring in code this module does not need.
        Op::Rem => match (a.as_i64(), b.as_i64()) {
            (Some(_), Some(0)) => Err("modulus by zero"),
            (Some(x), Some(y)) => owned(x.checked_rem(y).ok_or("integer overflow")?),
            _ => Err(NO_OVERLOAD),
        },
        Op::Or | Op::And => Err(NO_OVERLOAD),
    }
}

/// Two integers stay integers, checked for overflow; any double makes the result a double.
fn arithmetic<'s>(a: &Value, b: &Value, int: fn(i64, i64) -> Option<i64>, double: fn(f64, f64) -> f64) -> Out<'s> {
    match (a.as_i64(), b.as_i64()) {
        (Some(x), Some(y)) => owned(int(x, y).ok_or("integer overflow")?),
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => Number::from_f64(double(x, y)).map(|n| Cow::Owned(Value::Number(n))).ok_or("not a finite number"),
            _ => Err(NO_OVERLOAD),
        },
    }
}

/// Numbers in order across integers and doubles, as CEL's heterogeneous comparison has them.
fn compare(x: &Number, y: &Number) -> Option<Ordering> {
    match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
        (Some(a), Some(b), _, _) => Some(a.cmp(&b)),
        (_, _, Some(a), Some(b)) => Some(a.cmp(&b)),
        _ => x.as_f64()?.partial_cmp(&y.as_f64()?),
    }
}

/// CEL's equality: numbers by value whatever their kind, lists and maps member by member,
/// values of different types unequal (never an error).
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w))),
        _ => a == b,
    }
}
