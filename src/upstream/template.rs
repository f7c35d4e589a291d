//! RFC 6570 URI templates (all four levels), plus a text mode for headers and JSON bodies.
//!
//! URLs are expanded with the RFC's percent-encoding rules, so an argument can never inject a
//! `/`, `?` or `#` unless the template says `{+var}`. Header and body templates are plain text:
//! values land verbatim, because their encoding is the header's or JSON's, not a URL's.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Expr { op: Op, vars: Vec<VarSpec> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarSpec {
    pub name: String,
    modifier: Modifier,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Modifier {
    None,
    Prefix(usize),
    Explode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    PathParam,
    Query,
    QueryCont,
}

impl Op {
    fn from_char(c: char) -> Option<Op> {
        Some(match c {
            '+' => Op::Reserved,
            '#' => Op::Fragment,
            '.' => Op::Label,
            '/' => Op::Path,
            ';' => Op::PathParam,
            '?' => Op::Query,
            '&' => Op::QueryCont,
            _ => return None,
        })
    }
    /// (first, separator, named, if-empty, allow reserved) from RFC 6570 appendix A.
    fn rules(self) -> (&'static str, &'static str, bool, &'static str, bool) {
        match self {
            Op::Simple => ("", ",", false, "", false),
            Op::Reserved => ("", ",", false, "", true),
            Op::Fragment => ("#", ",", false, "", true),
            Op::Label => (".", ".", false, "", false),
            Op::Path => ("/", "/", false, "", false),
            Op::PathParam => (";", ";", true, "", false),
            Op::Query => ("?", "&", true, "=", false),
            Op::QueryCont => ("&", "&", true, "=", false),
        }
    }
}

/// Where an expanded template lands, which decides how values are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Url,
    Text,
}

impl Template {
    /// Parses a template. Errors name the position and the fault.
    pub fn parse(source: &str, context: Context) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = source;
        while let Some(open) = rest.find(['{', '}']) {
            let (literal, tail) = rest.split_at(open);
            if tail.starts_with('}') {
                return Err(format!("unmatched '}}' at offset {}", source.len() - tail.len()));
            }
            if !literal.is_empty() {
                parts.push(Part::Literal(literal.to_string()));
            }
            let close = tail.find('}').ok_or_else(|| format!("unclosed '{{' at offset {}", source.len() - tail.len()))?;
            let body = tail.get(1..close).unwrap_or("");
            parts.push(parse_expression(body, context)?);
            rest = tail.get(close + 1..).unwrap_or("");
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_string()));
        }
        Ok(Template { parts })
    }

    /// Every variable name the template uses, in order of appearance.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().flat_map(|p| match p {
            Part::Expr { vars, .. } => vars.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(),
            Part::Literal(_) => Vec::new(),
        })
    }

    /// When the whole template is one `{var}`, its name: a JSON body keeps that value's type.
    pub fn sole_variable(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Expr { op: Op::Simple, vars }] => match vars.as_slice() {
                [v] if v.modifier == Modifier::None => Some(&v.name),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether `match_uri` can serve this template: simple single-variable expressions, each
    /// followed by a literal or the end.
    pub fn is_matchable(&self) -> bool {
        let mut previous_was_expr = false;
        self.parts.iter().all(|p| match p {
            Part::Literal(_) => {
                previous_was_expr = false;
                true
            }
            Part::Expr { op, vars } => {
                let ok = !previous_was_expr && *op == Op::Simple && matches!(vars.as_slice(), [v] if v.modifier == Modifier::None);
                previous_was_expr = true;
                ok
            }
        })
    }

    /// Matches a URI against a template of literals and simple `{var}` expressions (RFC 6570
    /// level 1), returning the variables' values. A value never spans a `/`.
    pub fn match_uri(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut rest = uri;
        let mut vars = Vec::new();
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(text) => rest = rest.strip_prefix(text.as_str())?,
                Part::Expr { op: Op::Simple, vars: specs } => {
                    let [spec] = specs.as_slice() else { return None };
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        Some(Part::Expr { .. }) => return None,
                        None => rest.len(),
                    };
                    let value = rest.get(..end)?;
                    if value.is_empty() || value.contains('/') {
                        return None;
                    }
                    vars.push((spec.name.clone(), value.to_string()));
                    rest = rest.get(end..)?;
                }
                Part::Expr { .. } => return None,
            }
        }
        rest.is_empty().then_some(vars)
    }

    /// Expands the template; `lookup` returns a variable's value, or `None` when it is undefined.
    pub fn expand<'v>(&self, context: Context, lookup: impl Fn(&str) -> Option<&'v Value>) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(text) => match context {
                    Context::Url => encode_into(&mut out, text, true),
                    Context::Text => out.push_str(text),
                },
                Part::Expr { op, vars } => match context {
                    Context::Url => expand_expression(&mut out, *op, vars, &lookup),
                    Context::Text => {
                        // Parsing allowed only plain `{a,b}` here; list members join with ','.
                        let values: Vec<String> = vars.iter().filter_map(|v| lookup(&v.name)).filter_map(text_value).collect();
                        out.push_str(&values.join(","));
                    }
                },
            }
        }
        out
    }
}

fn parse_expression(body: &str, context: Context) -> Result<Part, String> {
    let mut chars = body.chars();
    let (op, list) = match chars.next().and_then(Op::from_char) {
        Some(op) => (op, chars.as_str()),
        None => (Op::Simple, body),
    };
    if context == Context::Text && op != Op::Simple {
        return Err(format!("operator in {{{body}}} is only allowed in url templates"));
    }
    if list.is_empty() {
        return Err(format!("empty expression {{{body}}}"));
    }
    let vars = list
        .split(',')
        .map(|spec| {
            let (name, modifier) = if let Some(name) = spec.strip_suffix('*') {
                (name, Modifier::Explode)
            } else if let Some((name, len)) = spec.split_once(':') {
                let len: usize = len.parse().map_err(|_| format!("bad prefix length in {{{body}}}"))?;
                if len == 0 || len >= 10000 {
                    return Err(format!("prefix length must be 1 to 9999 in {{{body}}}"));
                }
                (name, Modifier::Prefix(len))
            } else {
                (spec, Modifier::None)
            };
            if context == Context::Text && modifier != Modifier::None {
                return Err(format!("modifiers in {{{body}}} are only allowed in url templates"));
            }
            if !valid_varname(name) {
                return Err(format!("invalid variable name {name:?} in {{{body}}}"));
            }
            Ok(VarSpec { name: name.to_string(), modifier })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Part::Expr { op, vars })
}

/// RFC 6570 varname: varchars (ALPHA, DIGIT, `_`, pct-encoded) joined by single dots.
fn valid_varname(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|seg| {
            !seg.is_empty() && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '%')
        })
}

fn text_value(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => Some(items.iter().filter_map(text_value).collect::<Vec<_>>().join(",")),
        other => Some(other.to_string()),
    }
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn expand_expression<'v>(out: &mut String, op: Op, vars: &[VarSpec], lookup: &impl Fn(&str) -> Option<&'v Value>) {
    let (first, sep, named, ifemp, reserved) = op.rules();
    let mut wrote_any = false;
    for var in vars {
        let Some(value) = lookup(&var.name) else { continue };
        let mut piece = String::new();
        let encode = |out: &mut String, s: &str| encode_into(out, s, reserved);
        match value {
            Value::Null => continue,
            Value::Array(items) => {
                let items: Vec<String> = items.iter().filter_map(scalar).collect();
                if items.is_empty() {
                    continue;
                }
                if var.modifier == Modifier::Explode {
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            piece.push_str(sep);
                        }
                        if named {
                            encode(&mut piece, &var.name);
                            if item.is_empty() { piece.push_str(ifemp) } else { piece.push('=') }
                        }
                        encode(&mut piece, item);
                    }
                } else {
                    if named {
                        encode(&mut piece, &var.name);
                        piece.push('=');
                    }
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            piece.push(',');
                        }
                        encode(&mut piece, item);
                    }
                }
            }
            Value::Object(map) => {
                let pairs: Vec<(String, String)> = map.iter().filter_map(|(k, v)| Some((k.clone(), scalar(v)?))).collect();
                if pairs.is_empty() {
                    continue;
                }
                if var.modifier == Modifier::Explode {
                    for (i, (k, v)) in pairs.iter().enumerate() {
                        if i > 0 {
                            piece.push_str(sep);
                        }
                        encode(&mut piece, k);
                        if v.is_empty() && named { piece.push_str(ifemp) } else { piece.push('=') }
                        encode(&mut piece, v);
                    }
                } else {
                    if named {
                        encode(&mut piece, &var.name);
                        piece.push('=');
                    }
                    for (i, (k, v)) in pairs.iter().enumerate() {
                        if i > 0 {
                            piece.push(',');
                        }
                        encode(&mut piece, k);
                        piece.push(',');
                        encode(&mut piece, v);
                    }
                }
            }
            scalar_value => {
                let Some(text) = scalar(scalar_value) else { continue };
                let text = match var.modifier {
                    Modifier::Prefix(n) => text.chars().take(n).collect(),
                    _ => text,
                };
                if named {
                    encode(&mut piece, &var.name);
                    if text.is_empty() {
                        piece.push_str(ifemp);
                    } else {
                        piece.push('=');
                    }
                }
                encode(&mut piece, &text);
            }
        }
        out.push_str(if wrote_any { sep } else { first });
        out.push_str(&piece);
        wrote_any = true;
    }
}

/// RFC 3986 reserved characters: what RFC 6570 reserved expansion (`{+var}`, `{#var}`) keeps.
pub const RESERVED: &[u8] = b":/?#[]@!$&'()*+,;=";

/// Percent-encodes `text` (UTF-8) for a URL: unreserved characters stay; when `keep` is not
/// empty, so do its characters and existing `%XX` triplets (RFC 6570 §1.5, §3.2.3). Query
/// parameters (`params.rs`) keep a narrower set than templates do.
pub fn percent_encode(out: &mut String, text: &str, keep: &[u8]) {
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let unreserved = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
        let triplet = b == b'%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if unreserved || (!keep.is_empty() && (keep.contains(&b) || triplet)) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

fn encode_into(out: &mut String, text: &str, reserved: bool) {
    percent_encode(out, text, if reserved { RESERVED } else { b"" });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The variables of RFC 6570 §3.2.
    fn rfc_vars() -> Value {
        json!({
            "count": ["one", "two", "three"], "dom": ["example", "com"], "dub": "me/too",
            "hello": "Hello World!", "half": "50%", "var": "value", "who": "fred",
            "base": "http://example.com/home/", "path": "/foo/bar", "list": ["red", "green", "blue"],
            "keys": {"semi": ";", "dot": ".", "comma": ","}, "v": "6", "x": "1024", "y": "768",
            "empty": "", "empty_keys": {}, "undef": null
        })
    }

    fn url(t: &str) -> String {
        let vars = rfc_vars();
        Template::parse(t, Context::Url).unwrap().expand(Context::Url, |n| vars.get(n))
    }

    #[test]
    fn rfc6570_examples() {
        let cases = [
            ("{var}", "value"),
            ("{hello}", "Hello%20World%21"),
            ("{half}", "50%25"),
            ("O{empty}X", "OX"),
            ("O{undef}X", "OX"),
            ("{x,y}", "1024,768"),
            ("{x,hello,y}", "1024,Hello%20World%21,768"),
            ("?{x,empty}", "?1024,"),
            ("?{x,undef}", "?1024"),
            ("{var:3}", "val"),
            ("{var:30}", "value"),
            ("{list}", "red,green,blue"),
            ("{list*}", "red,green,blue"),
            ("{keys}", "semi,%3B,dot,.,comma,%2C"),
            ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
            ("{+var}", "value"),
            ("{+hello}", "Hello%20World!"),
            ("{+half}", "50%25"),
            ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
            ("{+base}index", "http://example.com/home/index"),
            ("{+path}/here", "/foo/bar/here"),
            ("here?ref={+path}", "here?ref=/foo/bar"),
            ("{+path:6}/here", "/foo/b/here"),
            ("{#var}", "#value"),
            ("{#hello}", "#Hello%20World!"),
            ("{#path:6}/here", "#/foo/b/here"),
            ("X{.var}", "X.value"),
            ("X{.x,y}", "X.1024.768"),
            ("X{.list*}", "X.red.green.blue"),
            ("{/var}", "/value"),
            ("{/var,x}/here", "/value/1024/here"),
            ("{/list*}", "/red/green/blue"),
            ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
            ("{;x,y}", ";x=1024;y=768"),
            ("{;x,y,empty}", ";x=1024;y=768;empty"),
            ("{;list*}", ";list=red;list=green;list=blue"),
            ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
            ("{?x,y}", "?x=1024&y=768"),
            ("{?x,y,empty}", "?x=1024&y=768&empty="),
            ("{?list}", "?list=red,green,blue"),
            ("{?list*}", "?list=red&list=green&list=blue"),
            ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
            ("{?undef}", ""),
            ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
            ("{&var:3}", "&var=val"),
            ("{?empty_keys}", ""),
        ];
        for (template, want) in cases {
            assert_eq!(url(template), want, "{template}");
        }
    }

    #[test]
    fn arguments_cannot_escape_their_segment() {
        let vars = json!({"city": "../admin?x=1#frag", "q": "a&b=c d"});
        let t = Template::parse("https://api.example.com/weather/{city}{?q}", Context::Url).unwrap();
        assert_eq!(
            t.expand(Context::Url, |n| vars.get(n)),
            "https://api.example.com/weather/..%2Fadmin%3Fx%3D1%23frag?q=a%26b%3Dc%20d"
        );
    }

    #[test]
    fn unicode_is_utf8_percent_encoded() {
        let vars = json!({"q": "zürich €"});
        let t = Template::parse("/s{?q}", Context::Url).unwrap();
        assert_eq!(t.expand(Context::Url, |n| vars.get(n)), "/s?q=z%C3%BCrich%20%E2%82%AC");
    }

    #[test]
    fn text_context_is_verbatim() {
        let vars = json!({"env.TOKEN": "a b/c+=", "n": 5, "tags": ["x", "y"]});
        let t = Template::parse("Bearer {env.TOKEN}", Context::Text).unwrap();
        assert_eq!(t.expand(Context::Text, |n| vars.get(n)), "Bearer a b/c+=");
        let t = Template::parse("{n}-{tags}", Context::Text).unwrap();
        assert_eq!(t.expand(Context::Text, |n| vars.get(n)), "5-x,y");
        assert_eq!(Template::parse("{n}", Context::Text).unwrap().sole_variable(), Some("n"));
        assert_eq!(Template::parse("x{n}", Context::Text).unwrap().sole_variable(), None);
    }

    #[test]
    fn parse_errors() {
        assert!(Template::parse("{+x}", Context::Text).unwrap_err().contains("only allowed in url"));
        assert!(Template::parse("{x:3}", Context::Text).unwrap_err().contains("only allowed in url"));
        assert!(Template::parse("/a/{city", Context::Url).unwrap_err().contains("unclosed"));
        assert!(Template::parse("/a/city}", Context::Url).unwrap_err().contains("unmatched"));
        assert!(Template::parse("/a/{}", Context::Url).unwrap_err().contains("empty"));
        assert!(Template::parse("/a/{a-b}", Context::Url).unwrap_err().contains("invalid variable"));
        assert!(Template::parse("/a/{x:0}", Context::Url).unwrap_err().contains("prefix"));
    }

    #[test]
    fn uri_matching() {
        let t = Template::parse("test://template/{id}/data", Context::Url).unwrap();
        assert_eq!(t.match_uri("test://template/123/data"), Some(vec![("id".into(), "123".into())]));
        assert_eq!(t.match_uri("test://template/1/2/data"), None);
        assert_eq!(t.match_uri("test://template//data"), None);
        assert_eq!(t.match_uri("test://template/123/datax"), None);
        let t = Template::parse("file:///{dir}/{name}", Context::Url).unwrap();
        assert_eq!(t.match_uri("file:///a/b.txt"), Some(vec![("dir".into(), "a".into()), ("name".into(), "b.txt".into())]));
        assert_eq!(Template::parse("x://{a}{b}", Context::Url).unwrap().match_uri("x://ab"), None);
    }

    #[test]
    fn variables_in_order() {
        let t = Template::parse("{+env.BASE}/a/{city}{?q,lang}", Context::Url).unwrap();
        assert_eq!(t.variables().collect::<Vec<_>>(), ["env.BASE", "city", "q", "lang"]);
    }
}
