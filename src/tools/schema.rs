//! Validation of tool arguments against a tool's `inputSchema` (the JSON Schema keywords tools use).

use serde_json::{Map, Value};

/// The first rule an instance breaks: where (a JSON Pointer) and which rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Validates `instance` against `schema`, returning the first violation found.
pub fn validate(schema: &Value, instance: &Value) -> Result<(), Violation> {
    check(schema, instance, &mut String::new())
}

fn fail(path: &str, message: String) -> Result<(), Violation> {
    Err(Violation { path: path.to_string(), message })
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

fn check(schema: &Value, v: &Value, path: &mut String) -> Result<(), Violation> {
    let schema = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return fail(path, "no value is allowed here".into()),
        Value::Object(s) => s,
        _ => return Ok(()),
    };
    if let Some(ty) = schema.get("type") {
        let allowed: Vec<&str> = match ty {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.is_empty() && !allowed.iter().any(|t| has_type(v, t)) {
            return fail(path, format!("expected {}, got {}", allowed.join(" or "), type_name(v)));
        }
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        if !options.contains(v) {
            let list: Vec<String> = options.iter().map(Value::to_string).collect();
            return fail(path, format!("must be one of {}", list.join(", ")));
        }
    }
    if let Some(c) = schema.get("const") {
        if c != v {
            return fail(path, format!("must be {c}"));
        }
    }
    match v {
        Value::Number(n) => check_number(schema, n.as_f64().unwrap_or(0.0), path)?,
        Value::String(s) => check_length(schema, s.chars().count(), "minLength", "maxLength", "characters", path)?,
        Value::Array(items) => {
            check_length(schema, items.len(), "minItems", "maxItems", "items", path)?;
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    within(path, &i.to_string(), |p| check(item_schema, item, p))?;
                }
            }
        }
        Value::Object(obj) => check_object(schema, obj, path)?,
        _ => {}
    }
    Ok(())
}

fn check_number(schema: &Map<String, Value>, n: f64, path: &str) -> Result<(), Violation> {
    let bound = |k: &str| schema.get(k).and_then(Value::as_f64);
    if let Some(min) = bound("minimum") {
        if n < min {
            return fail(path, format!("must be at least {min}"));
        }
    }
    if let Some(max) = bound("maximum") {
        if n > max {
            return fail(path, format!("must be at most {max}"));
        }
    }
    if let Some(min) = bound("exclusiveMinimum") {
        if n <= min {
            return fail(path, format!("must be greater than {min}"));
        }
    }
    if let Some(max) = bound("exclusiveMaximum") {
        if n >= max {
            return fail(path, format!("must be less than {max}"));
        }
    }
    Ok(())
}

fn check_length(schema: &Map<String, Value>, len: usize, min_key: &str, max_key: &str, unit: &str, path: &str) -> Result<(), Violation> {
    let bound = |k: &str| schema.get(k).and_then(Value::as_u64).map(|b| b as usize);
    if let Some(min) = bound(min_key) {
        if len < min {
            return fail(path, format!("must have at least {min} {unit}"));
        }
    }
    if let Some(max) = bound(max_key) {
        if len > max {
            return fail(path, format!("must have at most {max} {unit}"));
        }
    }
    Ok(())
}

fn check_object(schema: &Map<String, Value>, obj: &Map<String, Value>, path: &mut String) -> Result<(), Violation> {
    if let Some(Value::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !obj.contains_key(name) {
                return fail(path, format!("missing required argument \"{name}\""));
            }
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (key, value) in obj {
        match properties.and_then(|p| p.get(key)) {
            Some(prop_schema) => within(path, key, |p| check(prop_schema, value, p))?,
            None => match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    return fail(path, format!("unknown argument \"{key}\""));
                }
                Some(extra @ Value::Object(_)) => within(path, key, |p| check(extra, value, p))?,
                _ => {}
            },
        }
    }
    Ok(())
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
    fn required_type_and_enum_name_the_argument() {
        let s = json!({"type":"object","properties":{"message":{"type":"string"},"unit":{"enum":["c","f"]}},"required":["message"]});
        assert_eq!(validate(&s, &json!({"message":"hi"})), Ok(()));
        assert_eq!(err(s.clone(), json!({})), "missing required argument \"message\"");
        assert_eq!(err(s.clone(), json!({"message": 5})), "/message: expected string, got integer");
        assert_eq!(err(s.clone(), json!({"message":"a","unit":"k"})), "/unit: must be one of \"c\", \"f\"");
        assert_eq!(err(s, json!([1])), "expected object, got array");
    }

    #[test]
    fn nested_paths_are_json_pointers() {
        let s = json!({"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"price":{"type":"number","minimum":0}}}}}});
        assert_eq!(err(s, json!({"items":[{"price":1},{"price":2},{"price":-1}]})), "/items/2/price: must be at least 0");
        let s = json!({"type":"object","properties":{"a/b":{"type":"string"}}});
        assert_eq!(err(s, json!({"a/b": 1})), "/a~1b: expected string, got integer");
    }

    #[test]
    fn numbers_strings_and_extras() {
        let s = json!({"type":"object","additionalProperties":false,"properties":{
            "n":{"type":"integer","maximum":10},"s":{"type":"string","minLength":2,"maxLength":3},"x":{"type":["string","null"]}}});
        assert_eq!(validate(&s, &json!({"n": 3, "s": "ab", "x": null})), Ok(()));
        assert_eq!(validate(&s, &json!({"n": 3.0})), Ok(()));
        assert_eq!(err(s.clone(), json!({"n": 3.5})), "/n: expected integer, got number");
        assert_eq!(err(s.clone(), json!({"n": 11})), "/n: must be at most 10");
        assert_eq!(err(s.clone(), json!({"s": "a"})), "/s: must have at least 2 characters");
        assert_eq!(err(s.clone(), json!({"s": "abcd"})), "/s: must have at most 3 characters");
        assert_eq!(err(s.clone(), json!({"x": 1})), "/x: expected string or null, got integer");
        assert_eq!(err(s, json!({"y": 1})), "unknown argument \"y\"");
    }

    #[test]
    fn const_and_boolean_schemas() {
        assert_eq!(err(json!({"const": "a"}), json!("b")), "must be \"a\"");
        assert_eq!(validate(&json!(true), &json!(1)), Ok(()));
        assert_eq!(err(json!(false), json!(1)), "no value is allowed here");
    }
}
