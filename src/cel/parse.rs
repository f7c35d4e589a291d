//! CEL's grammar, as far as the subset goes: the precedence of its operators, member and index
//! access, calls, the `has` and `exists`/`all` macros, and list literals; bounded in length,
//! depth and size, so no expression can exhaust the stack when it is parsed or evaluated.

use serde_json::Value;

use super::lex::Tok;

/// Longest expression read, in bytes.
const MAX_SOURCE: usize = 4096;
/// Deepest nesting of subexpressions.
const MAX_DEPTH: u32 = 32;
/// Most nodes in one expression: with the depth bound, what keeps evaluation's recursion small.
const MAX_NODES: u32 = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

/// The operators of each precedence level, loosest first.
const LEVELS: [&[(&str, Op)]; 5] = [
    &[("||", Op::Or)],
    &[("&&", Op::And)],
    &[("==", Op::Eq), ("!=", Op::Ne), ("<", Op::Lt), ("<=", Op::Le), (">", Op::Gt), (">=", Op::Ge), ("in", Op::In)],
    &[("+", Op::Add), ("-", Op::Sub)],
    &[("*", Op::Mul), ("/", Op::Div), ("%", Op::Rem)],
];

/// The functions the subset knows: `size(x)` or `x.size()`, and the string tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    Size,
    StartsWith,
    EndsWith,
    Contains,
}

const FUNCTIONS: [(&str, Function); 4] = [("size", Function::Size), ("startsWith", Function::StartsWith), ("endsWith", Function::EndsWith), ("contains", Function::Contains)];

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Lit(Value),
    Var(String),
    Member(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    List(Vec<Expr>),
    /// A call: receiver-style (`s.startsWith(p)`) puts the receiver first.
    Call(Function, Vec<Expr>),
    /// `has(x.f)`: whether `x` has the field `f`.
    Has(Box<Expr>, String),
    /// `list.exists(v, body)` (`all`: false) or `list.all(v, body)` (true).
    Every { all: bool, list: Box<Expr>, var: String, body: Box<Expr> },
}

struct Parser {
    toks: Vec<(Tok, usize)>,
    at: usize,
    depth: u32,
    nodes: u32,
}

/// The expression `source` spells, or what is wrong with it and where.
pub fn parse(source: &str) -> Result<Expr, String> {
    if source.len() > MAX_SOURCE {
        return Err(format!("longer than {MAX_SOURCE} bytes"));
    }
    let mut parser = Parser { toks: super::lex::lex(source)?, at: 0, depth: 0, nodes: 0 };
    let expr = parser.expr()?;
    match parser.peek() {
        Tok::End => Ok(expr),
        _ => Err(parser.unexpected()),
    }
}

impl Parser {
    fn peek(&self) -> &Tok {
        self.toks.get(self.at).map_or(&Tok::End, |(t, _)| t)
    }

    fn next(&mut self) -> Tok {
        let tok = self.peek().clone();
        self.at += 1;
        tok
    }

    fn unexpected(&self) -> String {
        let (tok, at) = self.toks.get(self.at).or(self.toks.last()).map_or((&Tok::End, 0), |(t, at)| (t, *at));
        match tok {
            Tok::End => "the expression ends too soon".to_string(),
            Tok::Id(s) => format!("unexpected {s:?} at {at}"),
            Tok::Op(op) => format!("unexpected {op:?} at {at}"),
            Tok::Str(_) | Tok::Int(_) | Tok::Num(_) => format!("unexpected literal at {at}"),
        }
    }

    fn eat(&mut self, op: &str) -> bool {
        let found = matches!(self.peek(), Tok::Op(o) if *o == op);
        self.at += usize::from(found);
        found
    }

    fn want(&mut self, op: &str) -> Result<(), String> {
        if self.eat(op) {
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    fn grow(&mut self) -> Result<(), String> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(format!("more than {MAX_NODES} parts"));
        }
        Ok(())
    }

    fn nested<T>(&mut self, inner: impl FnOnce(&mut Parser) -> Result<T, String>) -> Result<T, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("nested more than {MAX_DEPTH} deep"));
        }
        let result = inner(self);
        self.depth -= 1;
        result
    }

    fn expr(&mut self) -> Result<Expr, String> {
        self.nested(|p| {
            let cond = p.binary(0)?;
            if !p.eat("?") {
                return Ok(cond);
            }
            p.grow()?;
            let yes = p.expr()?;
            p.want(":")?;
            let no = p.expr()?;
            Ok(Expr::Cond(Box::new(cond), Box::new(yes), Box::new(no)))
        })
    }

    fn binary(&mut self, level: usize) -> Result<Expr, String> {
        let Some(ops) = LEVELS.get(level) else { return self.unary() };
        let mut left = self.binary(level + 1)?;
        loop {
            let op = match self.peek() {
                Tok::Op(o) => ops.iter().find(|(s, _)| s == o),
                Tok::Id(s) => ops.iter().find(|(name, _)| name == s),
                _ => None,
            };
            let Some(&(_, op)) = op else { return Ok(left) };
            self.at += 1;
            self.grow()?;
            let right = self.binary(level + 1)?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
        }
    }

    fn unary(&mut self) -> Result<Expr, String> {
        for (op, make) in [("!", Expr::Not as fn(Box<Expr>) -> Expr), ("-", Expr::Neg)] {
            if self.eat(op) {
                self.grow()?;
                return self.nested(|p| Ok(make(Box::new(p.unary()?))));
            }
        }
        let mut expr = self.primary()?;
        loop {
            if self.eat(".") {
                self.grow()?;
                let Tok::Id(name) = self.next() else { return Err(self.unexpected()) };
                expr = if self.eat("(") { self.method(expr, &name)? } else { Expr::Member(Box::new(expr), name) };
            } else if self.eat("[") {
                self.grow()?;
                let key = self.expr()?;
                self.want("]")?;
                expr = Expr::Index(Box::new(expr), Box::new(key));
            } else {
                return Ok(expr);
            }
        }
    }

    /// `receiver.name(` read: the macros `exists` and `all`, or a function of the receiver.
    fn method(&mut self, receiver: Expr, name: &str) -> Result<Expr, String> {
        if name == "exists" || name == "all" {
            let Tok::Id(var) = self.next() else { return Err(self.unexpected()) };
            self.want(",")?;
            let body = self.expr()?;
            self.want(")")?;
            return Ok(Expr::Every { all: name == "all", list: Box::new(receiver), var, body: Box::new(body) });
        }
        let mut args = vec![receiver];
        args.extend(self.list(")")?);
        call(name, args)
    }

    fn list(&mut self, close: &str) -> Result<Vec<Expr>, String> {
        let mut items = Vec::new();
        if self.eat(close) {
            return Ok(items);
        }
        loop {
            items.push(self.expr()?);
            if self.eat(close) {
                return Ok(items);
            }
            self.want(",")?;
        }
    }

    fn primary(&mut self) -> Result<Expr, String> {
        self.grow()?;
        Ok(match self.next() {
            Tok::Int(n) => Expr::Lit(n.into()),
            Tok::Num(n) => Expr::Lit(n.into()),
            Tok::Str(s) => Expr::Lit(s.into()),
            Tok::Id(name) => match name.as_str() {
                "true" => Expr::Lit(true.into()),
                "false" => Expr::Lit(false.into()),
                "null" => Expr::Lit(Value::Null),
                "has" if self.eat("(") => {
                    let Expr::Member(of, field) = self.expr()? else { return Err("has() takes a field, like has(args.name)".into()) };
                    self.want(")")?;
                    Expr::Has(of, field)
                }
                _ if self.eat("(") => {
                    let args = self.list(")")?;
                    call(&name, args)?
                }
                _ => Expr::Var(name),
            },
            Tok::Op("(") => {
                let inner = self.expr()?;
                self.want(")")?;
                inner
            }
            Tok::Op("[") => Expr::List(self.list("]")?),
            _ => {
                self.at -= 1;
                return Err(self.unexpected());
            }
        })
    }
}

fn call(name: &str, args: Vec<Expr>) -> Result<Expr, String> {
    let function = FUNCTIONS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f).ok_or_else(|| format!("no function {name}()"))?;
    if args.len() != if function == Function::Size { 1 } else { 2 } {
        return Err(format!("wrong number of arguments to {name}()"));
    }
    Ok(Expr::Call(function, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(name: &str) -> Box<Expr> {
        Box::new(Expr::Var(name.into()))
    }

    #[test]
    fn precedence_is_cels() {
        let e = parse("a || b && c == 1 + 2 * 3").unwrap();
        let mul = Expr::Bin(Op::Mul, Box::new(Expr::Lit(2.into())), Box::new(Expr::Lit(3.into())));
        let add = Expr::Bin(Op::Add, Box::new(Expr::Lit(1.into())), Box::new(mul));
        let eq = Expr::Bin(Op::Eq, var("c"), Box::new(add));
        assert_eq!(e, Expr::Bin(Op::Or, var("a"), Box::new(Expr::Bin(Op::And, var("b"), Box::new(eq)))));
        assert_eq!(parse("'x' in r").unwrap(), Expr::Bin(Op::In, Box::new(Expr::Lit("x".into())), var("r")));
    }

    #[test]
    fn macros_and_methods() {
        assert_eq!(
            parse("r.exists(x, x == 1)").unwrap(),
            Expr::Every { all: false, list: var("r"), var: "x".into(), body: Box::new(Expr::Bin(Op::Eq, var("x"), Box::new(Expr::Lit(1.into())))) }
        );
        assert_eq!(parse("s.startsWith('a')").unwrap(), Expr::Call(Function::StartsWith, vec![Expr::Var("s".into()), Expr::Lit("a".into())]));
        assert_eq!(parse("has(a.b)").unwrap(), Expr::Has(var("a"), "b".into()));
    }

    #[test]
    fn faults_say_what_and_where() {
        assert_eq!(parse("a ==").unwrap_err(), "the expression ends too soon");
        assert_eq!(parse("a b").unwrap_err(), "unexpected \"b\" at 2");
        assert_eq!(parse("(a").unwrap_err(), "the expression ends too soon");
        assert_eq!(parse("matches(a, 'x')").unwrap_err(), "no function matches()");
        assert_eq!(parse("size(a, b)").unwrap_err(), "wrong number of arguments to size()");
        assert_eq!(parse("a.startsWith()").unwrap_err(), "wrong number of arguments to startsWith()");
        assert_eq!(parse("has(a)").unwrap_err(), "has() takes a field, like has(args.name)");
        assert_eq!(parse(") a").unwrap_err(), "unexpected \")\" at 0");
    }

    #[test]
    fn hostile_sizes_are_refused_not_overflowed() {
        assert_eq!(parse(&"(".repeat(5000)).unwrap_err(), "longer than 4096 bytes");
        assert_eq!(parse(&format!("{}1{}", "(".repeat(40), ")".repeat(40))).unwrap_err(), "nested more than 32 deep");
        assert_eq!(parse(&"!".repeat(100)).unwrap_err(), "nested more than 32 deep");
        assert_eq!(parse(&vec!["1"; 300].join("+")).unwrap_err(), "more than 256 parts");
        assert_eq!(parse(&format!("a{}", ".b".repeat(300))).unwrap_err(), "more than 256 parts");
    }
}
