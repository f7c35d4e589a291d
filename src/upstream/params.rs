//! OpenAPI parameters outside the URL template: query parameters serialized by their style
//! (OpenAPI 3.1 §4.8.12.4) and cookies (RFC 6265), each left out when the caller gave it no value.
//!
//! `http.url`'s RFC 6570 query expressions can only name parameters that are valid varnames and
//! know only `form`; an importer of OpenAPI documents needs any name (`per-page`, `filter[status]`,
//! `$top`) and every query style, so these are configured by name, beside the URL.

use serde_json::Value;

use crate::upstream::template::{percent_encode, Context, Template};

/// Whether a template variable is one of the call's arguments, not a binding: `env.NAME`
/// secrets, `route.NAME` parameters, `meta.NAME` values and `principal.NAME` fields are named by
/// their prefix (so no argument can pose as one).
pub fn is_argument(name: &str) -> bool {
    !(name.starts_with("env.") || name.starts_with("route.") || name.starts_with("meta.") || name.starts_with("principal.") || name.starts_with("connection."))
}

/// Whether a template is optional and unset: it uses arguments and none of them has a value
/// (undefined or `null`). A template of secrets and literals alone is never unset.
pub fn unset<'v>(template: &Template, lookup: &impl Fn(&str) -> Option<&'v Value>) -> bool {
    let mut arguments = template.variables().filter(|v| is_argument(v)).peekable();
    arguments.peek().is_some() && arguments.all(|v| lookup(v).is_none_or(Value::is_null))
}

/// The value a query parameter or cookie sends, or `None` when it is left out: unset, or an
/// empty array or object. A template that is exactly `{name}` keeps the value's JSON type;
/// anything else is the expanded text.
pub fn value<'v>(template: &Template, lookup: &impl Fn(&str) -> Option<&'v Value>) -> Option<Value> {
    if unset(template, lookup) {
        return None;
    }
    let value = match template.sole_variable() {
        // Only a binding can be missing here (an absent `_meta` value): it is sent empty, as
        // a header template sends it.
        Some(var) => lookup(var).filter(|v| !v.is_null()).cloned().unwrap_or_else(|| Value::String(String::new())),
        None => Value::String(template.expand(Context::Text, lookup)),
    };
    match &value {
        Value::Array(items) if items.iter().all(Value::is_null) => None,
        Value::Object(members) if members.values().all(Value::is_null) => None,
        _ => Some(value),
    }
}

/// The text of one scalar, array item or member value: strings as they are, numbers and
/// booleans as JSON, and a nested array or object as its compact JSON text. `null` has none.
fn text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// How a query parameter's array or object value is written (OpenAPI `style`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Form,
    SpaceDelimited,
    PipeDelimited,
    DeepObject,
}

impl Style {
    pub const NAMES: &'static str = "form, spaceDelimited, pipeDelimited, deepObject";

    pub fn parse(name: &str) -> Option<Style> {
        Some(match name {
            "form" => Style::Form,
            "spaceDelimited" => Style::SpaceDelimited,
            "pipeDelimited" => Style::PipeDelimited,
            "deepObject" => Style::DeepObject,
            _ => return None,
        })
    }

    /// What joins the parts of an unexploded value.
    fn separator(self) -> &'static str {
        match self {
            Style::Form | Style::DeepObject => ",",
            Style::SpaceDelimited => "%20",
            Style::PipeDelimited => "|",
        }
    }
}

/// One configured query parameter.
#[derive(Debug, Clone)]
pub struct QueryParam {
    /// Sent as written, percent-encoded.
    pub name: String,
    pub value: Template,
    pub style: Style,
    pub explode: bool,
    pub allow_reserved: bool,
}

impl QueryParam {
    /// Appends the parameter's pairs for `value` to `query`, `&`-separated. Only a deepObject
    /// given something other than an object fails.
    pub fn serialize(&self, value: &Value, query: &mut String) -> Result<(), String> {
        // Names and keys are always encoded strictly: allowReserved is for values.
        let key = |text: &str| encoded(text, false);
        let val = |text: &str| encoded(text, self.allow_reserved);
        let (name, separator) = (self.name.as_str(), self.style.separator());
        let mut pairs: Vec<(String, String)> = Vec::new();
        match value {
            Value::Object(members) => {
                let members = members.iter().filter_map(|(k, v)| Some((k.as_str(), text(v)?)));
                match (self.style, self.explode) {
                    (Style::DeepObject, _) => pairs.extend(members.map(|(k, v)| (format!("{}[{}]", key(name), key(k)), val(&v)))),
                    (_, true) => pairs.extend(members.map(|(k, v)| (key(k), val(&v)))),
                    (_, false) => pairs.push((key(name), members.flat_map(|(k, v)| [key(k), val(&v)]).collect::<Vec<_>>().join(separator))),
                }
            }
            _ if self.style == Style::DeepObject => return Err(format!("query parameter {name:?} (deepObject) needs an object value")),
            Value::Array(items) => {
                let items = items.iter().filter_map(text).map(|item| val(&item));
                if self.explode {
                    pairs.extend(items.map(|item| (key(name), item)));
                } else {
                    pairs.push((key(name), items.collect::<Vec<_>>().join(separator)));
                }
            }
            scalar => pairs.extend(text(scalar).map(|s| (key(name), val(&s)))),
        }
        for (k, v) in pairs {
            if !query.is_empty() {
                query.push('&');
            }
            query.push_str(&k);
            query.push('=');
            query.push_str(&v);
        }
        Ok(())
    }
}

fn encoded(text: &str, allow_reserved: bool) -> String {
    let mut out = String::with_capacity(text.len());
    encode(&mut out, text, allow_reserved);
    out
}

/// The reserved characters `allowReserved` keeps in a query value: RFC 3986's, but `&`, `=`, `#`
/// and `+`, which would change the query's meaning (a pair's end, a value's start, the
/// fragment, a space). `%XX` triplets stay too, as OpenAPI defines allowReserved.
const QUERY_RESERVED: &[u8] = b":/?[]@!$'()*,;";

fn encode(out: &mut String, text: &str, allow_reserved: bool) {
    percent_encode(out, text, if allow_reserved { QUERY_RESERVED } else { b"" });
}

/// `url` with `query` appended: after `?` when the URL has no query yet, else after `&`, and
/// before any `#fragment`.
pub fn append_query(url: String, query: &str) -> String {
    if query.is_empty() {
        return url;
    }
    let (base, fragment) = url.split_at(url.find('#').unwrap_or(url.len()));
    let separator = match base.find('?') {
        None => "?",
        Some(_) if base.ends_with(['?', '&']) => "",
        Some(_) => "&",
    };
    format!("{base}{separator}{query}{fragment}")
}

/// Appends `name=value` to a `Cookie` header's value, `; `-separated. Arrays (and objects, as
/// `key,value` pairs) join with `,`, their parts encoded one by one.
pub fn cookie(out: &mut String, name: &str, value: &Value) {
    if !out.is_empty() {
        out.push_str("; ");
    }
    out.push_str(name);
    out.push('=');
    let parts: Vec<String> = match value {
        Value::Array(items) => items.iter().filter_map(text).collect(),
        Value::Object(members) => members.iter().filter_map(|(k, v)| Some([k.clone(), text(v)?])).flatten().collect(),
        scalar => text(scalar).into_iter().collect(),
    };
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        encode_cookie(out, part);
    }
}

/// Percent-encodes (UTF-8) what is not an RFC 6265 cookie-octet: controls, space, `"`, `,`,
/// `;`, `\` and non-ASCII; and `%` itself, so the encoding can be undone.
fn encode_cookie(out: &mut String, text: &str) {
    for b in text.bytes() {
        let octet = matches!(b, 0x21 | 0x23..=0x2B | 0x2D..=0x3A | 0x3C..=0x5B | 0x5D..=0x7E) && b != b'%';
        if octet {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// RFC 7230 `token`: a header name, and (RFC 6265) a cookie name.
pub fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn param(name: &str, style: Style, explode: bool, allow_reserved: bool) -> QueryParam {
        QueryParam { name: name.into(), value: Template::parse("{v}", Context::Text).unwrap(), style, explode, allow_reserved }
    }

    fn query(p: &QueryParam, value: Value) -> String {
        let mut out = String::new();
        p.serialize(&value, &mut out).unwrap();
        out
    }

    /// The style examples of OpenAPI 3.1 §4.8.12.4, byte for byte.
    #[test]
    fn openapi_style_examples() {
        let (array, object, scalar) = (json!(["blue", "black", "brown"]), json!({"R": 100, "G": 200, "B": 150}), json!("blue"));
        let cases = [
            (Style::Form, false, &scalar, "color=blue"),
            (Style::Form, true, &scalar, "color=blue"),
            (Style::SpaceDelimited, false, &scalar, "color=blue"),
            (Style::PipeDelimited, true, &scalar, "color=blue"),
            (Style::Form, false, &array, "color=blue,black,brown"),
            (Style::Form, false, &object, "color=R,100,G,200,B,150"),
            (Style::Form, true, &array, "color=blue&color=black&color=brown"),
            (Style::Form, true, &object, "R=100&G=200&B=150"),
            (Style::SpaceDelimited, false, &array, "color=blue%20black%20brown"),
            (Style::SpaceDelimited, false, &object, "color=R%20100%20G%20200%20B%20150"),
            (Style::PipeDelimited, false, &array, "color=blue|black|brown"),
            (Style::PipeDelimited, false, &object, "color=R|100|G|200|B|150"),
            (Style::SpaceDelimited, true, &array, "color=blue&color=black&color=brown"),
            (Style::PipeDelimited, true, &array, "color=blue&color=black&color=brown"),
            (Style::DeepObject, true, &object, "color[R]=100&color[G]=200&color[B]=150"),
        ];
        for (style, explode, value, want) in cases {
            assert_eq!(query(&param("color", style, explode, false), value.clone()), want, "{style:?} explode={explode} {value}");
        }
    }

    #[test]
    fn numbers_booleans_nested_values_and_nulls() {
        let form = param("f", Style::Form, false, false);
        assert_eq!(query(&form, json!(1.5)), "f=1.5");
        assert_eq!(query(&form, json!(false)), "f=false");
        assert_eq!(query(&form, json!([1, true, null, [2, "x"], {"a": 1}])), "f=1,true,%5B2%2C%22x%22%5D,%7B%22a%22%3A1%7D");
        let deep = param("filter", Style::DeepObject, true, false);
        assert_eq!(query(&deep, json!({"a": {"b": 1}, "skip": null, "c": [1, 2]})), "filter[a]=%7B%22b%22%3A1%7D&filter[c]=%5B1%2C2%5D");
        let exploded = param("f", Style::Form, true, false);
        assert_eq!(query(&exploded, json!({"x": null, "y": "1"})), "y=1");
    }

    #[test]
    fn deep_object_needs_an_object() {
        for value in [json!("blue"), json!(["a"]), json!(3)] {
            let mut out = String::new();
            let e = param("color", Style::DeepObject, true, false).serialize(&value, &mut out).unwrap_err();
            assert_eq!(e, r#"query parameter "color" (deepObject) needs an object value"#);
        }
    }

    #[test]
    fn pairs_append_to_what_is_there() {
        let mut out = String::from("a=1");
        param("b", Style::Form, true, false).serialize(&json!(["x", "y"]), &mut out).unwrap();
        assert_eq!(out, "a=1&b=x&b=y");
    }

    #[test]
    fn names_keys_and_values_are_encoded_unreserved_only() {
        let hostile = "a b&c=d#e+f,g|h[i]j%k/l?m:n@o!p$q'r(s)t*u;v~w.x-y_zé";
        let strict = "a%20b%26c%3Dd%23e%2Bf%2Cg%7Ch%5Bi%5Dj%25k%2Fl%3Fm%3An%40o%21p%24q%27r%28s%29t%2Au%3Bv~w.x-y_z%C3%A9";
        assert_eq!(query(&param("filter[status]", Style::Form, true, false), json!(hostile)), format!("filter%5Bstatus%5D={strict}"));
        assert_eq!(query(&param("$top", Style::Form, true, false), json!(5)), "%24top=5");
        assert_eq!(query(&param("per-page", Style::Form, true, false), json!(5)), "per-page=5");
        // The style's own separators stay literal; the same characters inside values do not.
        assert_eq!(query(&param("p", Style::PipeDelimited, false, false), json!(["a|b", "c,d"])), "p=a%7Cb|c%2Cd");
        assert_eq!(query(&param("c", Style::Form, false, false), json!(["a,b", "c"])), "c=a%2Cb,c");
        assert_eq!(query(&param("o", Style::DeepObject, true, false), json!({"k[1]=": "v&w"})), "o[k%5B1%5D%3D]=v%26w");
        assert_eq!(query(&param("o", Style::Form, true, false), json!({"a=b": "c"})), "a%3Db=c");
    }

    #[test]
    fn allow_reserved_keeps_reserved_characters_in_values_only() {
        let hostile = "a b&c=d#e+f,g|h[i]j%k/l?m:n@o!p$q'r(s)t*u;v%41";
        let kept = "a%20b%26c%3Dd%23e%2Bf,g%7Ch[i]j%25k/l?m:n@o!p$q'r(s)t*u;v%41";
        assert_eq!(query(&param("q[x]", Style::Form, true, true), json!(hostile)), format!("q%5Bx%5D={kept}"));
        assert_eq!(query(&param("o", Style::DeepObject, true, true), json!({"a/b": "c/d"})), "o[a%2Fb]=c/d");
        assert_eq!(query(&param("o", Style::Form, false, true), json!({"a/b": "c/d"})), "o=a%2Fb,c/d");
    }

    #[test]
    fn appended_with_the_right_separator_before_the_fragment() {
        let cases = [
            ("https://x.test/a", "https://x.test/a?q=1"),
            ("https://x.test/a?b=2", "https://x.test/a?b=2&q=1"),
            ("https://x.test/a?", "https://x.test/a?q=1"),
            ("https://x.test/a?b=2&", "https://x.test/a?b=2&q=1"),
            ("https://x.test/a#top", "https://x.test/a?q=1#top"),
            ("https://x.test/a?b#c?d", "https://x.test/a?b&q=1#c?d"),
        ];
        for (url, want) in cases {
            assert_eq!(append_query(url.into(), "q=1"), want);
        }
        assert_eq!(append_query("https://x.test/a#f".into(), ""), "https://x.test/a#f");
    }

    #[test]
    fn omission_rules() {
        let vars = json!({"a": "x", "n": null, "empty": [], "none": {}, "nulls": [null], "zero": 0, "blank": "", "env.K": "k", "meta.t": {"id": 1}});
        let value_of = |t: &str| value(&Template::parse(t, Context::Text).unwrap(), &|n: &str| vars.get(n));
        // Unset: every argument undefined or null.
        assert_eq!(value_of("{missing}"), None);
        assert_eq!(value_of("{n}"), None);
        assert_eq!(value_of("pre-{missing}-{n}"), None);
        assert_eq!(value_of("{n}-{env.K}"), None);
        // Empty arrays and objects are left out too.
        assert_eq!(value_of("{empty}"), None);
        assert_eq!(value_of("{none}"), None);
        assert_eq!(value_of("{nulls}"), None);
        // One argument with a value is enough; falsy values are values.
        assert_eq!(value_of("{a}{missing}"), Some(json!("x")));
        assert_eq!(value_of("{zero}"), Some(json!(0)));
        assert_eq!(value_of("{blank}"), Some(json!("")));
        // Secrets, literals and bindings are always sent; a missing binding is empty.
        assert_eq!(value_of("{env.K}"), Some(json!("k")));
        assert_eq!(value_of("fixed"), Some(json!("fixed")));
        assert_eq!(value_of("{meta.t}"), Some(json!({"id": 1})));
        assert_eq!(value_of("{meta.gone}"), Some(json!("")));
        // Exactly one variable keeps its JSON type; anything else is text.
        assert_eq!(value_of("v{zero}"), Some(json!("v0")));
    }

    fn cookies(pairs: &[(&str, Value)]) -> String {
        let mut out = String::new();
        for (name, value) in pairs {
            cookie(&mut out, name, value);
        }
        out
    }

    #[test]
    fn cookie_values_are_encoded_outside_cookie_octets() {
        assert_eq!(cookies(&[("a", json!("1")), ("b", json!(2))]), "a=1; b=2");
        let all_octets = "!#$&'()*+-./09:<=>?@AZ[]^_`az{|}~";
        assert_eq!(cookies(&[("s", json!(all_octets))]), format!("s={all_octets}"));
        assert_eq!(cookies(&[("s", json!("a b;c,d\"e\\f%g\u{1}h\u{7f}é"))]), "s=a%20b%3Bc%2Cd%22e%5Cf%25g%01h%7F%C3%A9");
        assert_eq!(cookies(&[("l", json!(["x,y", 1, null, "z;"]))]), "l=x%2Cy,1,z%3B");
        assert_eq!(cookies(&[("o", json!({"k": "v w", "n": null}))]), "o=k,v%20w");
    }

    #[test]
    fn tokens() {
        assert!(is_token("session_id") && is_token("X-A") && is_token("a!#$%&'*+-.^_`|~"));
        for bad in ["", "a b", "a;b", "a=b", "a,b", "é", "a\"b", "(a)", "a/b"] {
            assert!(!is_token(bad), "{bad}");
        }
    }
}
