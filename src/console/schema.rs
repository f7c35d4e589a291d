//! A tool's input schema as rows a person reads: each argument's name, type, whether it is
//! required, its description, and the values it takes. Nested objects are flattened into dotted
//! names (`filter.state`, `items[].id`) a few levels deep; the raw JSON is shown beside the table
//! for everything else.

use serde_json::{Map, Value};

/// How deep nested objects are unfolded into rows; deeper ones are shown as `object`.
const MAX_DEPTH: usize = 3;

/// One argument, or one field of an object argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    pub kind: String,
    pub required: bool,
    pub description: Option<String>,
    /// `one of: "a", "b"`, `default: 3`, `always: "x"`, each as JSON.
    pub values: Vec<String>,
}

/// The rows of an object schema's properties, in the order the schema lists them.
pub fn rows(schema: &Value) -> Vec<Row> {
    let mut out = Vec::new();
    properties(schema, schema, "", 0, &mut out);
    out
}

fn properties(root: &Value, schema: &Value, prefix: &str, depth: usize, out: &mut Vec<Row>) {
    let schema = resolve(root, schema);
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return };
    let required: Vec<&str> = schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    for (name, prop) in props {
        let prop = resolve(root, prop);
        let full = format!("{prefix}{name}");
        out.push(Row {
            name: full.clone(),
            kind: kind(root, prop, 0),
            required: required.contains(&name.as_str()),
            description: text(prop, "description").or_else(|| text(prop, "title")),
            values: values(prop),
        });
        if depth + 1 >= MAX_DEPTH {
            continue;
        }
        // An object's fields, and the fields of an array's object items, as rows of their own.
        if prop.get("properties").is_some() {
            properties(root, prop, &format!("{full}."), depth + 1, out);
        } else if let Some(items) = prop.get("items").map(|i| resolve(root, i)).filter(|i| i.get("properties").is_some()) {
            properties(root, items, &format!("{full}[]."), depth + 1, out);
        }
    }
}

/// A `$ref` within the schema (`#/$defs/NAME`, `#/definitions/NAME`) followed; anything else as is.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut current = schema;
    // A chain of references ends within a few steps, or it is a cycle: stop there.
    for _ in 0..8 {
        let Some(target) = current.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) else { break };
        match root.pointer(target) {
            Some(next) => current = next,
            None => break,
        }
    }
    current
}

/// The type in words: `string (date-time)`, `array of integer`, `string or null`, `enum`.
fn kind(root: &Value, schema: &Value, depth: usize) -> String {
    let schema = resolve(root, schema);
    if depth > MAX_DEPTH {
        return "any".into();
    }
    let named = match schema.get("type") {
        Some(Value::String(t)) => Some(t.clone()),
        Some(Value::Array(ts)) => Some(ts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" or ")),
        _ => None,
    };
    if let Some(named) = named.filter(|n| !n.is_empty()) {
        if named == "array" {
            return match schema.get("items") {
                Some(items) => format!("array of {}", kind(root, items, depth + 1)),
                None => "array".into(),
            };
        }
        return match text(schema, "format") {
            Some(format) => format!("{named} ({format})"),
            None => named,
        };
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            return options.iter().map(|o| kind(root, o, depth + 1)).collect::<Vec<_>>().join(" or ");
        }
    }
    if schema.get("enum").is_some() {
        return "enum".into();
    }
    if schema.get("const").is_some() {
        return "constant".into();
    }
    if schema.get("properties").is_some() {
        return "object".into();
    }
    "any".into()
}

fn values(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        out.push(format!("one of: {}", options.iter().map(Value::to_string).collect::<Vec<_>>().join(", ")));
    }
    if let Some(c) = schema.get("const") {
        out.push(format!("always: {c}"));
    }
    if let Some(d) = schema.get("default") {
        out.push(format!("default: {d}"));
    }
    let bounds: [(&str, &str); 6] = [("minimum", "≥"), ("maximum", "≤"), ("minLength", "length ≥"), ("maxLength", "length ≤"), ("minItems", "items ≥"), ("maxItems", "items ≤")];
    for (key, sign) in bounds {
        if let Some(n) = schema.get(key).filter(|n| n.is_number()) {
            out.push(format!("{sign} {n}"));
        }
    }
    if let Some(pattern) = text(schema, "pattern") {
        out.push(format!("pattern: {pattern}"));
    }
    out
}

fn text(schema: &Value, key: &str) -> Option<String> {
    schema.get(key).and_then(Value::as_str).filter(|s| !s.trim().is_empty()).map(str::to_string)
}

/// Whether the schema takes any argument at all.
pub fn is_empty(schema: &Value) -> bool {
    schema.get("properties").and_then(Value::as_object).is_none_or(Map::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn properties_become_rows_with_types_and_values() {
        let schema = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "Where"},
                "days": {"type": "integer", "default": 3, "minimum": 1, "maximum": 14},
                "unit": {"enum": ["c", "f"]},
                "when": {"type": ["string", "null"], "format": "date"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "filter": {"$ref": "#/$defs/filter"},
                "lines": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}
            },
            "required": ["city"],
            "$defs": {"filter": {"type": "object", "title": "A filter", "properties": {"state": {"const": "open"}}}}
        });
        let rows = rows(&schema);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["city", "days", "unit", "when", "tags", "filter", "filter.state", "lines", "lines[].id"]);
        assert_eq!(rows[0], Row { name: "city".into(), kind: "string".into(), required: true, description: Some("Where".into()), values: vec![] });
        assert_eq!(rows[1].values, ["default: 3", "≥ 1", "≤ 14"]);
        assert_eq!((rows[2].kind.as_str(), rows[2].values.as_slice()), ("enum", [r#"one of: "c", "f""#.to_string()].as_slice()));
        assert_eq!(rows[3].kind, "string or null (date)");
        assert_eq!(rows[4].kind, "array of string");
        assert_eq!((rows[5].kind.as_str(), rows[5].description.as_deref()), ("object", Some("A filter")));
        assert_eq!(rows[6].values, [r#"always: "open""#]);
        assert!(rows[8].required && !rows[7].required);
        assert!(is_empty(&json!({"type": "object"})) && !is_empty(&schema));
    }

    #[test]
    fn cycles_and_depth_end() {
        let schema = json!({"type": "object", "properties": {"node": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}, "loop": {"$ref": "#/$defs/loop"}}});
        let names: Vec<String> = rows(&schema).into_iter().map(|r| r.name).collect();
        assert_eq!(names, ["node", "node.next", "node.next.next"]);
        assert_eq!(kind(&schema, &json!({"$ref": "#/$defs/loop"}), 0), "any");
    }
}
