//! JSON Schema validation for tool arguments (`inputSchema`) and results (`outputSchema`): the
//! keywords real tools use, with every violation naming its JSON Pointer path and its rule.

use serde_json::{Map, Value};

/// The first rule an instance breaks: where (a JSON Pointer), which keyword, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub path: String,
    pub rule: &'static str,
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        write!(f, "{} ({})", self.message, self.rule)
    }
}

/// `$ref` chains deeper than this are a cycle, not a schema.
const MAX_DEPTH: usize = 64;
/// Subschema checks one validation may make: alternatives that refer to themselves would
/// otherwise take exponential time.
const MAX_STEPS: usize = 100_000;

/// Validates `instance` against `schema`, returning the first violation found.
pub fn validate(schema: &Value, instance: &Value) -> Result<(), Violation> {
    Validator { root: schema, steps: std::cell::Cell::new(0) }.check(schema, instance, &mut String::new(), 0)
}

/// Checks, when the configuration loads, what would otherwise fail only at call time: every
/// `pattern` compiles and every `$ref` resolves. Errors name the keyword's place in the schema.
pub fn lint(schema: &Value) -> Result<(), (String, String)> {
    lint_at(schema, schema, "")
}

fn lint_at(root: &Value, schema: &Value, at: &str) -> Result<(), (String, String)> {
    let Value::Object(s) = schema else { return Ok(()) };
    if let Some(pattern) = s.get("pattern") {
        let valid = pattern.as_str().is_some_and(|p| pattern_matches(p, "").is_some());
        if !valid {
            return Err((format!("{at}.pattern"), format!("{pattern} is not a valid regular expression")));
        }
    }
    if let Some(reference) = s.get("$ref") {
        if reference.as_str().and_then(|r| resolve(root, r)).is_none() {
            return Err((format!("{at}.$ref"), format!("{reference} does not resolve within the schema (use \"#/$defs/NAME\")")));
        }
    }
    for key in ["items", "additionalProperties", "not", "contains", "if", "then", "else"] {
        if let Some(sub) = s.get(key) {
            lint_at(root, sub, &format!("{at}.{key}"))?;
        }
    }
    for key in ["properties", "$defs", "definitions", "patternProperties", "dependentSchemas"] {
        for (name, sub) in s.get(key).and_then(Value::as_object).into_iter().flatten() {
            lint_at(root, sub, &format!("{at}.{key}.{name}"))?;
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        for (i, sub) in s.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
            lint_at(root, sub, &format!("{at}.{key}[{i}]"))?;
        }
    }
    Ok(())
}

/// A local reference: `#`, `#/json/pointer` into the schema's own document, or `#name`, a
/// plain-name fragment naming the subschema whose `$anchor` is `name` (JSON Schema 2020-12).
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    let decoded = crate::head::percent_decode(pointer)?;
    if decoded.is_empty() || decoded.starts_with('/') {
        return root.pointer(&decoded);
    }
    anchor(root, &decoded, 0)
}

/// The subschema declaring `$anchor: name`, searched depth-first (bounded like `$ref` chains).
fn anchor<'a>(schema: &'a Value, name: &str, depth: usize) -> Option<&'a Value> {
    if depth > MAX_DEPTH {
        return None;
    }
    match schema {
        Value::Object(s) if s.get("$anchor").and_then(Value::as_str) == Some(name) => Some(schema),
        Value::Object(s) => s.values().find_map(|sub| anchor(sub, name, depth + 1)),
        Value::Array(items) => items.iter().find_map(|sub| anchor(sub, name, depth + 1)),
        _ => None,
    }
}

/// Whether `text` matches `pattern`, or `None` when the pattern does not compile. JSON Schema's
/// `pattern` is an ECMA-262 regular expression, and workerd has that engine already: the module
/// carries no regex engine of its own. Natively (unit tests, `check-config`), regex-lite.
#[cfg(target_arch = "wasm32")]
fn pattern_matches(pattern: &str, text: &str) -> Option<bool> {
    use wasm_bindgen::JsCast;
    // `new RegExp` throws on a bad pattern; `Reflect.construct` turns that into an `Err`.
    let constructor: js_sys::Function = js_sys::Reflect::get(&js_sys::global(), &"RegExp".into()).ok()?.dyn_into().ok()?;
    let regex = js_sys::Reflect::construct(&constructor, &js_sys::Array::of2(&pattern.into(), &"u".into())).ok()?;
    Some(regex.unchecked_into::<js_sys::RegExp>().test(text))
}

#[cfg(not(target_arch = "wasm32"))]
fn pattern_matches(pattern: &str, text: &str) -> Option<bool> {
    regex_lite::Regex::new(pattern).ok().map(|regex| regex.is_match(text))
}

fn fail(path: &str, rule: &'static str, message: String) -> Result<(), Violation> {
    Err(Violation { path: path.to_string(), rule, message })
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(v: &Value, ty: &str) -> bool {
    match ty {
        "integer" => match v {
            Value::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
            _ => false,
        },
        "number" => v.is_number(),
        other => type_name(v) == other,
    }
}

struct Validator<'r> {
    root: &'r Value,
    steps: std::cell::Cell<usize>,
}

impl Validator<'_> {
    fn check(&self, schema: &Value, v: &Value, path: &mut String, depth: usize) -> Result<(), Violation> {
        let schema = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => return fail(path, "false", "no value is allowed here".into()),
            Value::Object(s) => s,
            _ => return Ok(()),
        };
        if depth > MAX_DEPTH {
            return fail(path, "$ref", "the schema nests too deeply (a $ref cycle?)".into());
        }
        self.steps.set(self.steps.get() + 1);
        if self.steps.get() > MAX_STEPS {
            return fail(path, "$ref", "the schema is too complex to check".into());
        }
        // A reference outside the document is never fetched (SEP-2106): it constrains nothing here.
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str).filter(|r| r.starts_with('#')) {
            match resolve(self.root, reference) {
                Some(target) => self.check(target, v, path, depth + 1)?,
                None => return fail(path, "$ref", format!("the schema reference {reference:?} does not resolve")),
            }
        }
        if let Some(ty) = schema.get("type") {
            let allowed: Vec<&str> = match ty {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            if !allowed.is_empty() && !allowed.iter().any(|t| has_type(v, t)) {
                return fail(path, "type", format!("expected {}, got {}", allowed.join(" or "), type_name(v)));
            }
        }
        if let Some(Value::Array(options)) = schema.get("enum") {
            if !options.contains(v) {
                let list: Vec<String> = options.iter().map(Value::to_string).collect();
                return fail(path, "enum", format!("must be one of {}", list.join(", ")));
            }
        }
        if let Some(c) = schema.get("const") {
            if c != v {
                return fail(path, "const", format!("must be {c}"));
            }
        }
        self.combinators(schema, v, path, depth)?;
        match v {
            Value::Number(n) => check_number(schema, n.as_f64().unwrap_or(0.0), path)?,
            Value::String(s) => check_string(schema, s, path)?,
            Value::Array(items) => self.check_array(schema, items, path, depth)?,
            Value::Object(obj) => self.check_object(schema, obj, path, depth)?,
            _ => {}
        }
        Ok(())
    }

    fn combinators(&self, schema: &Map<String, Value>, v: &Value, path: &mut String, depth: usize) -> Result<(), Violation> {
        for sub in schema.get("allOf").and_then(Value::as_array).into_iter().flatten() {
            self.check(sub, v, path, depth + 1)?;
        }
        if let Some(Value::Array(options)) = schema.get("anyOf") {
            let failures = self.failures(options, v, path, depth);
            if failures.len() == options.len() && !options.is_empty() {
                return fail(path, "anyOf", format!("matches none of the alternatives: {}", summary(path, &failures)));
            }
        }
        if let Some(Value::Array(options)) = schema.get("oneOf") {
            let failures = self.failures(options, v, path, depth);
            let matched: Vec<String> = (1..=options.len()).filter(|i| !failures.iter().any(|(f, _)| f == i)).map(|i| i.to_string()).collect();
            match matched.len() {
                1 => {}
                0 => return fail(path, "oneOf", format!("matches none of the alternatives: {}", summary(path, &failures))),
                _ => return fail(path, "oneOf", format!("matches alternatives {} but must match exactly one", matched.join(" and "))),
            }
        }
        if let Some(not) = schema.get("not") {
            if self.check(not, v, &mut path.clone(), depth + 1).is_ok() {
                return fail(path, "not", "matches a schema it must not match".into());
            }
        }
        // `if` only chooses: its own failure is no violation; `then` or `else` then applies.
        if let Some(condition) = schema.get("if") {
            let branch = if self.check(condition, v, &mut path.clone(), depth + 1).is_ok() { "then" } else { "else" };
            if let Some(sub) = schema.get(branch) {
                self.check(sub, v, path, depth + 1)?;
            }
        }
        if let Some(obj) = v.as_object() {
            for (_, sub) in schema.get("dependentSchemas").and_then(Value::as_object).into_iter().flatten().filter(|(k, _)| obj.contains_key(k.as_str())) {
                self.check(sub, v, path, depth + 1)?;
            }
        }
        Ok(())
    }

    /// The alternatives `v` fails, numbered from 1, with why.
    fn failures(&self, options: &[Value], v: &Value, path: &str, depth: usize) -> Vec<(usize, Violation)> {
        options
            .iter()
            .enumerate()
            .filter_map(|(i, option)| self.check(option, v, &mut path.to_string(), depth + 1).err().map(|e| (i + 1, e)))
            .collect()
    }

    fn check_array(&self, schema: &Map<String, Value>, items: &[Value], path: &mut String, depth: usize) -> Result<(), Violation> {
        check_count(schema, items.len(), ("minItems", "maxItems"), "items", path)?;
        let prefix = schema.get("prefixItems").and_then(Value::as_array);
        for (i, item) in items.iter().enumerate() {
            let item_schema = prefix.and_then(|p| p.get(i)).or_else(|| schema.get("items"));
            if let Some(item_schema) = item_schema {
                within(path, &i.to_string(), |p| self.check(item_schema, item, p, depth + 1))?;
            }
        }
        if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
            for (i, item) in items.iter().enumerate() {
                if let Some(first) = items.iter().take(i).position(|earlier| earlier == item) {
                    return fail(path, "uniqueItems", format!("items {first} and {i} are equal; items must be unique"));
                }
            }
        }
        Ok(())
    }

    fn check_object(&self, schema: &Map<String, Value>, obj: &Map<String, Value>, path: &mut String, depth: usize) -> Result<(), Violation> {
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !obj.contains_key(name) {
                    return fail(path, "required", format!("missing required property \"{name}\""));
                }
            }
        }
        check_count(schema, obj.len(), ("minProperties", "maxProperties"), "properties", path)?;
        for (present, needed) in schema.get("dependentRequired").and_then(Value::as_object).into_iter().flatten().filter(|(k, _)| obj.contains_key(k.as_str())) {
            if let Some(name) = needed.as_array().into_iter().flatten().filter_map(Value::as_str).find(|n| !obj.contains_key(*n)) {
                return fail(path, "dependentRequired", format!("property \"{name}\" is required when \"{present}\" is present"));
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (key, value) in obj {
            match properties.and_then(|p| p.get(key)) {
                Some(prop_schema) => within(path, key, |p| self.check(prop_schema, value, p, depth + 1))?,
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => return fail(path, "additionalProperties", format!("unknown property \"{key}\"")),
                    Some(extra @ Value::Object(_)) => within(path, key, |p| self.check(extra, value, p, depth + 1))?,
                    _ => {}
                },
            }
        }
        Ok(())
    }
}

/// Why each alternative failed, with paths relative to the value they were tried on.
fn summary(path: &str, failures: &[(usize, Violation)]) -> String {
    let parts: Vec<String> = failures
        .iter()
        .map(|(i, v)| {
            let relative = Violation { path: v.path.strip_prefix(path).unwrap_or(&v.path).to_string(), ..v.clone() };
            format!("{i}) {relative}")
        })
        .collect();
    parts.join("; ")
}

fn check_number(schema: &Map<String, Value>, n: f64, path: &str) -> Result<(), Violation> {
    // A bound is quoted as the schema writes it (and no float formatting lands in the module).
    let bound = |k: &str| schema.get(k).and_then(|v| Some((v.as_f64()?, v)));
    if let Some((_, min)) = bound("minimum").filter(|(min, _)| n < *min) {
        return fail(path, "minimum", format!("must be at least {min}"));
    }
    if let Some((_, max)) = bound("maximum").filter(|(max, _)| n > *max) {
        return fail(path, "maximum", format!("must be at most {max}"));
    }
    if let Some((_, min)) = bound("exclusiveMinimum").filter(|(min, _)| n <= *min) {
        return fail(path, "exclusiveMinimum", format!("must be greater than {min}"));
    }
    if let Some((_, max)) = bound("exclusiveMaximum").filter(|(max, _)| n >= *max) {
        return fail(path, "exclusiveMaximum", format!("must be less than {max}"));
    }
    if let Some((step, written)) = bound("multipleOf").filter(|(s, _)| *s > 0.0) {
        let q = n / step;
        if (q - q.round()).abs() > 1e-9 {
            return fail(path, "multipleOf", format!("must be a multiple of {written}"));
        }
    }
    Ok(())
}

fn check_string(schema: &Map<String, Value>, s: &str, path: &str) -> Result<(), Violation> {
    check_count(schema, s.chars().count(), ("minLength", "maxLength"), "characters", path)?;
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        // Patterns are checked when the configuration loads; one that still fails matches nothing.
        let matches = pattern_matches(pattern, s) == Some(true);
        if !matches {
            return fail(path, "pattern", format!("must match the pattern {pattern:?}"));
        }
    }
    if let Some(format) = schema.get("format").and_then(Value::as_str) {
        let valid = match format {
            "date-time" => is_date_time(s),
            "date" => is_date(s),
            "time" => is_time(s),
            "email" => is_email(s),
            "uri" => is_uri(s),
            "uuid" => is_uuid(s),
            // Formats we do not know are annotations, as JSON Schema says.
            _ => true,
        };
        if !valid {
            return fail(path, "format", format!("must be a valid {format}"));
        }
    }
    Ok(())
}

fn check_count(schema: &Map<String, Value>, len: usize, (min_key, max_key): (&'static str, &'static str), unit: &str, path: &str) -> Result<(), Violation> {
    let bound = |k: &str| schema.get(k).and_then(Value::as_u64).map(|b| b as usize);
    if let Some(min) = bound(min_key).filter(|min| len < *min) {
        return fail(path, min_key, format!("must have at least {min} {unit}"));
    }
    if let Some(max) = bound(max_key).filter(|max| len > *max) {
        return fail(path, max_key, format!("must have at most {max} {unit}"));
    }
    Ok(())
}

/// Parses exactly `n` ASCII digits.
fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

/// RFC 3339 `full-date`, with real month lengths.
fn is_date(s: &str) -> bool {
    let mut parts = s.split('-');
    let (Some(y), Some(m), Some(d), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else { return false };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else { return false };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// RFC 3339 `full-time`: `HH:MM:SS[.frac]` and `Z` or `±HH:MM`.
fn is_time(s: &str) -> bool {
    let upper = s.to_ascii_uppercase();
    let (clock, offset_ok) = if let Some(clock) = upper.strip_suffix('Z') {
        (clock, true)
    } else {
        let Some(split) = upper.rfind(['+', '-']) else { return false };
        let (clock, offset) = upper.split_at(split);
        let offset = offset.get(1..).unwrap_or("");
        let ok = offset.split_once(':').is_some_and(|(h, m)| digits(h, 2).is_some_and(|h| h < 24) && digits(m, 2).is_some_and(|m| m < 60));
        (clock, ok)
    };
    let (hms, frac) = clock.split_once('.').map_or((clock, None), |(a, b)| (a, Some(b)));
    let frac_ok = frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()));
    let mut parts = hms.split(':');
    let (Some(h), Some(m), Some(sec), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else { return false };
    let clock_ok = digits(h, 2).is_some_and(|h| h < 24) && digits(m, 2).is_some_and(|m| m < 60) && digits(sec, 2).is_some_and(|s| s <= 60);
    offset_ok && frac_ok && clock_ok
}

fn is_date_time(s: &str) -> bool {
    s.split_once(['T', 't']).is_some_and(|(date, time)| is_date(date) && is_time(time))
}

/// A practical address check: one `@`, a dot-atom local part, and a dotted host name.
fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else { return false };
    let atom = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~-".contains(c);
    let local_ok = !local.is_empty() && local.len() <= 64 && local.split('.').all(|p| !p.is_empty() && p.chars().all(atom));
    let label_ok = |l: &str| !l.is_empty() && l.len() <= 63 && !l.starts_with('-') && !l.ends_with('-') && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    let domain_ok = domain.len() <= 253 && domain.contains('.') && domain.split('.').all(label_ok);
    local_ok && domain_ok
}

/// An absolute URI (RFC 3986): a scheme, `:`, and no characters a URI cannot hold.
fn is_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else { return false };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic()) && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
    let rest_ok = !rest.is_empty() && rest.chars().all(|c| c.is_ascii_graphic() && !"<>\"{}|\\^`".contains(c));
    let percent_ok = rest.split('%').skip(1).all(|p| p.get(..2).is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit())));
    scheme_ok && rest_ok && percent_ok
}

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12]) && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Runs `f` with `path` extended by one JSON Pointer token, escaped per RFC 6901.
fn within(path: &mut String, token: &str, f: impl FnOnce(&mut String) -> Result<(), Violation>) -> Result<(), Violation> {
    let len = path.len();
    path.push('/');
    path.push_str(&token.replace('~', "~0").replace('/', "~1"));
    let result = f(path);
    path.truncate(len);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(schema: Value, v: Value) -> String {
        validate(&schema, &v).unwrap_err().to_string()
    }

    #[test]
    fn required_type_and_enum_name_the_path_and_rule() {
        let s = json!({"type":"object","properties":{"message":{"type":"string"},"unit":{"enum":["c","f"]}},"required":["message"]});
        assert_eq!(validate(&s, &json!({"message":"hi"})), Ok(()));
        assert_eq!(err(s.clone(), json!({})), "missing required property \"message\" (required)");
        assert_eq!(err(s.clone(), json!({"message": 5})), "/message: expected string, got integer (type)");
        assert_eq!(err(s.clone(), json!({"message":"a","unit":"k"})), "/unit: must be one of \"c\", \"f\" (enum)");
        assert_eq!(err(s, json!([1])), "expected object, got array (type)");
    }

    #[test]
    fn nested_paths_are_json_pointers() {
        let s = json!({"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"price":{"type":"number","minimum":0}}}}}});
        assert_eq!(err(s, json!({"items":[{"price":1},{"price":2},{"price":-1}]})), "/items/2/price: must be at least 0 (minimum)");
        let s = json!({"type":"object","properties":{"a/b":{"type":"string"}}});
        assert_eq!(err(s, json!({"a/b": 1})), "/a~1b: expected string, got integer (type)");
    }

    #[test]
    fn numbers_strings_arrays_and_extras() {
        let s = json!({"type":"object","additionalProperties":false,"properties":{
            "n":{"type":"integer","maximum":10,"multipleOf":3},"s":{"type":"string","minLength":2,"maxLength":3},"x":{"type":["string","null"]},
            "l":{"type":"array","minItems":1,"maxItems":3,"uniqueItems":true}}});
        assert_eq!(validate(&s, &json!({"n": 3, "s": "ab", "x": null, "l": [1, 2]})), Ok(()));
        assert_eq!(validate(&s, &json!({"n": 3.0})), Ok(()));
        assert_eq!(err(s.clone(), json!({"n": 3.5})), "/n: expected integer, got number (type)");
        assert_eq!(err(s.clone(), json!({"n": 12})), "/n: must be at most 10 (maximum)");
        // A bound is quoted as the schema writes it.
        let bounds = json!({"type":"number","minimum":1.5,"exclusiveMaximum":5.0});
        assert_eq!(err(bounds.clone(), json!(1)), "must be at least 1.5 (minimum)");
        assert_eq!(err(bounds, json!(5)), "must be less than 5.0 (exclusiveMaximum)");
        assert_eq!(err(s.clone(), json!({"n": 4})), "/n: must be a multiple of 3 (multipleOf)");
        assert_eq!(err(s.clone(), json!({"s": "a"})), "/s: must have at least 2 characters (minLength)");
        assert_eq!(err(s.clone(), json!({"s": "abcd"})), "/s: must have at most 3 characters (maxLength)");
        assert_eq!(err(s.clone(), json!({"x": 1})), "/x: expected string or null, got integer (type)");
        assert_eq!(err(s.clone(), json!({"l": []})), "/l: must have at least 1 items (minItems)");
        assert_eq!(err(s.clone(), json!({"l": [1, 2, 1]})), "/l: items 0 and 2 are equal; items must be unique (uniqueItems)");
        assert_eq!(err(s, json!({"y": 1})), "unknown property \"y\" (additionalProperties)");
        let typed_extras = json!({"type":"object","additionalProperties":{"type":"number"}});
        assert_eq!(err(typed_extras, json!({"k": "v"})), "/k: expected number, got string (type)");
    }

    #[test]
    fn const_not_and_boolean_schemas() {
        assert_eq!(err(json!({"const": "a"}), json!("b")), "must be \"a\" (const)");
        assert_eq!(validate(&json!(true), &json!(1)), Ok(()));
        assert_eq!(err(json!(false), json!(1)), "no value is allowed here (false)");
        assert_eq!(err(json!({"not": {"type": "string"}}), json!("x")), "matches a schema it must not match (not)");
    }

    #[test]
    fn patterns_search_unless_anchored() {
        let s = json!({"type":"string","pattern":"^[A-Z]{3}-\\d+$"});
        assert_eq!(validate(&s, &json!("ABC-12")), Ok(()));
        assert_eq!(err(s, json!("abc-12")), "must match the pattern \"^[A-Z]{3}-\\\\d+$\" (pattern)");
        assert_eq!(validate(&json!({"pattern": "b"}), &json!("abc")), Ok(()));
    }

    #[test]
    fn any_of_and_one_of_explain_each_alternative() {
        let s = json!({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]});
        assert_eq!(validate(&s, &json!("x")), Ok(()));
        assert_eq!(validate(&s, &json!(3)), Ok(()));
        assert_eq!(err(s, json!(-1)), "matches none of the alternatives: 1) expected string, got integer (type); 2) must be at least 0 (minimum) (anyOf)");
        let s = json!({"type":"object","properties":{"id":{"oneOf": [{"type": "integer"}, {"type": "number", "maximum": 10}]}}});
        assert_eq!(validate(&s, &json!({"id": 9.5})), Ok(()));
        assert_eq!(err(s.clone(), json!({"id": 3})), "/id: matches alternatives 1 and 2 but must match exactly one (oneOf)");
        assert_eq!(err(s, json!({"id": "x"})), "/id: matches none of the alternatives: 1) expected integer, got string (type); 2) expected number, got string (type) (oneOf)");
        let s = json!({"allOf": [{"type": "string"}, {"minLength": 2}]});
        assert_eq!(err(s, json!("a")), "must have at least 2 characters (minLength)");
    }

    #[test]
    fn refs_resolve_into_defs() {
        let s = json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/item"}}, "next": {"$ref": "#"}},
            "$defs": {"item": {"type": "object", "properties": {"price": {"type": "number", "exclusiveMinimum": 0}}, "required": ["price"]}}
        });
        assert_eq!(validate(&s, &json!({"items": [{"price": 1}], "next": {"items": []}})), Ok(()));
        assert_eq!(err(s.clone(), json!({"items": [{"price": 1}, {"price": 0}]})), "/items/1/price: must be greater than 0 (exclusiveMinimum)");
        assert_eq!(err(s.clone(), json!({"next": {"items": [{}]}})), "/next/items/0: missing required property \"price\" (required)");
        assert_eq!(lint(&s), Ok(()));
        let cycle = json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
        assert_eq!(err(cycle, json!(1)), "the schema nests too deeply (a $ref cycle?) ($ref)");
        // Two self-references per level would branch 2^64 times; the step budget stops it.
        let explosive = json!({"anyOf": [{"$ref": "#"}, {"$ref": "#"}]});
        assert!(err(explosive, json!(1)).contains("anyOf"));
    }

    #[test]
    fn lint_finds_bad_patterns_and_dangling_refs() {
        let s = json!({"type":"object","properties":{"a":{"type":"string","pattern":"(unclosed"}}});
        assert_eq!(lint(&s).unwrap_err(), (".properties.a.pattern".into(), "\"(unclosed\" is not a valid regular expression".into()));
        let s = json!({"type":"object","properties":{"a":{"anyOf":[{"$ref":"#/$defs/missing"}]}}});
        assert_eq!(lint(&s).unwrap_err(), (".properties.a.anyOf[0].$ref".into(), "\"#/$defs/missing\" does not resolve within the schema (use \"#/$defs/NAME\")".into()));
    }

    /// The conformance suite's JSON Schema 2020-12 tool (SEP-1613, SEP-2106): a `$anchor`, a
    /// composition, a condition.
    fn suite_schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}, "contactMethod": {"type": "string", "enum": ["phone", "email"]}, "phone": {"type": "string"}, "email": {"type": "string"}},
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        })
    }

    #[test]
    fn composition_conditions_and_anchors_are_honoured() {
        let s = suite_schema();
        assert_eq!(lint(&s), Ok(()));
        assert_eq!(validate(&s, &json!({"name": "A", "contactMethod": "phone", "phone": "1", "address": {"city": "X"}})), Ok(()));
        assert_eq!(validate(&s, &json!({"email": "a@b.c"})), Ok(()));
        assert_eq!(validate(&s, &json!({"contactMethod": "email", "email": "a@b.c", "phone": "1"})), Ok(()));
        assert!(err(s.clone(), json!({"name": "A"})).contains("(anyOf)"));
        // `if` holds: `then` asks for the phone; it does not: `else` asks for the email.
        assert_eq!(err(s.clone(), json!({"contactMethod": "phone", "email": "a@b.c"})), "missing required property \"phone\" (required)");
        assert_eq!(err(s.clone(), json!({"phone": "1"})), "missing required property \"email\" (required)");
        assert_eq!(err(s.clone(), json!({"email": "e", "address": {"city": 1}})), "/address/city: expected string, got integer (type)");
        // A plain-name fragment finds its `$anchor`.
        let anchored = json!({"$defs": {"a": {"$anchor": "addressDef", "type": "object", "required": ["city"]}}, "properties": {"home": {"$ref": "#addressDef"}}});
        assert_eq!(lint(&anchored), Ok(()));
        assert_eq!(validate(&anchored, &json!({"home": {"city": "X"}})), Ok(()));
        assert_eq!(err(anchored, json!({"home": {}})), "/home: missing required property \"city\" (required)");
        assert!(lint(&json!({"properties": {"a": {"$ref": "#nowhere"}}})).is_err());
        // An upstream's network reference is neither fetched nor held against the arguments.
        assert_eq!(validate(&json!({"properties": {"p": {"$ref": "https://example.com/profile.json"}}}), &json!({"p": 1})), Ok(()));
        // Keywords the validator does not apply are annotations: they never reject.
        let unknown = json!({"type": "object", "unevaluatedProperties": false, "$comment": "x", "contentMediaType": "text/plain"});
        assert_eq!(validate(&unknown, &json!({"any": 1})), Ok(()));
    }

    #[test]
    fn dependencies() {
        let s = json!({"dependentRequired": {"card": ["cvc"]}, "dependentSchemas": {"vat": {"required": ["country"]}}});
        assert_eq!(validate(&s, &json!({"card": 1, "cvc": 2, "vat": "x", "country": "FR"})), Ok(()));
        assert_eq!(validate(&s, &json!({})), Ok(()));
        assert_eq!(err(s.clone(), json!({"card": 1})), "property \"cvc\" is required when \"card\" is present (dependentRequired)");
        assert_eq!(err(s, json!({"vat": "x"})), "missing required property \"country\" (required)");
    }

    #[test]
    fn formats() {
        let ok = |format: &str, v: &str| validate(&json!({"format": format}), &json!(v)).is_ok();
        assert!(ok("date-time", "2026-11-22T13:06:05Z") && ok("date-time", "2024-02-29t23:59:60.123+05:30"));
        assert!(!ok("date-time", "2026-02-29T10:00:00Z") && !ok("date-time", "2026-11-22 13:06:05Z") && !ok("date-time", "2026-11-22T25:00:00Z"));
        assert!(!ok("date-time", "2026-11-22T13:06:05") && !ok("date-time", "2026-11-22T13:06:05+0530"));
        assert!(ok("date", "2000-02-29") && !ok("date", "1900-02-29") && !ok("date", "2026-13-01"));
        assert!(ok("email", "first.last+tag@mail.example.com") && !ok("email", "no-at.example.com"));
        assert!(!ok("email", "a@b") && !ok("email", "a..b@example.com") && !ok("email", "a@-x.example.com"));
        assert!(ok("uri", "https://example.com/a?b=c#d") && ok("uri", "urn:isbn:0451450523") && ok("uri", "mailto:a@b.c"));
        assert!(!ok("uri", "/relative/path") && !ok("uri", "https://exa mple.com") && !ok("uri", "1http://x") && !ok("uri", "http://x/%zz"));
        assert!(ok("uuid", "123e4567-e89b-12d3-a456-426614174000") && !ok("uuid", "123e4567e89b12d3a456426614174000"));
        assert!(ok("hostname-or-whatever", "anything"));
        assert_eq!(err(json!({"format": "email"}), json!("x")), "must be a valid email (format)");
    }
}
