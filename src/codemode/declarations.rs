//! A tool's JSON Schemas as TypeScript: the declaration of one member of the `tools` object a
//! code-mode program receives, `name(args: {...}): Promise<...>;`, with the schemas' titles,
//! descriptions and constraints as doc comments. A model writes its calls against these, so a
//! declaration may be wider than the schema (a constraint TypeScript cannot say becomes a doc
//! line, a construct it cannot say becomes `unknown /* why */`) but never narrower: every value
//! the schema accepts has the declared type. Each tool's text is bounded in depth and size, so a
//! hostile schema (a cycle of `$ref`s, thousands of levels, an enum of a million values) costs
//! at most that. Hand-written on `push_str`: a library for this pulls a formatter and a
//! `$ref` resolver the Worker has no room for (docs/code-mode.md, "Declarations").

use serde_json::{Map, Value};

/// Bytes of one tool's declaration past which each type still to be written is
/// `unknown /* too large */` (the longest GitHub tool, whole, takes about this much).
const BUDGET: usize = 48 * 1024;
/// Levels of schema nesting written; a deeper one is `unknown /* too deep */`.
const MAX_DEPTH: usize = 24;
/// Members of an `enum` listed; a longer one is the union of its members' JSON types.
const MAX_ENUM: usize = 256;
/// Characters of a description kept in a doc comment.
const MAX_DOC: usize = 1_500;
/// Bytes of a property name written; a longer one is left to the index signature.
const MAX_NAME: usize = 1_000;
/// Bytes a type written through a `$ref` may take and still be written again where the same
/// `$ref` appears once more (a larger one is written once per tool, then named).
const MAX_REPEAT: usize = 256;
/// Characters of a `default` (as JSON) kept in a doc comment.
const MAX_DEFAULT: usize = 200;

/// One tool as a member of the `tools` object a program receives: a doc comment from its
/// description (and what its output schema says it returns), then
/// `name(args: {...}): Promise<...>;`, each input property with its own doc comment. The promise
/// resolves to the tool's `structuredContent`, typed from `output_schema`; without one it is
/// `unknown`. A name that is not an identifier is quoted (`"weird-name"(args: ...)`, called as
/// `tools["weird-name"](...)`).
pub fn declare(name: &str, description: Option<&str>, input_schema: &Value, output_schema: Option<&Value>) -> String {
    let mut out = String::new();
    member(&mut out, 0, name, description, input_schema, output_schema);
    out
}

/// The whole block for several tools: `declare const tools: {\n  ...members...\n};`.
pub fn declare_all<'a>(tools: impl IntoIterator<Item = (&'a str, Option<&'a str>, &'a Value, Option<&'a Value>)>) -> String {
    let mut out = String::from("declare const tools: {\n");
    for (name, description, input, output) in tools {
        member(&mut out, 1, name, description, input, output);
        out.push('\n');
    }
    out.push_str("};");
    out
}

fn member<'a>(out: &mut String, indent: usize, name: &str, description: Option<&str>, input: &'a Value, output: Option<&'a Value>) {
    let start = out.len();
    push_indent(out, indent);
    let mut doc = String::new();
    if let Some(description) = description {
        push_line(&mut doc, "");
        push_clipped(&mut doc, description.trim(), MAX_DOC);
    }
    if let Some(returned) = output.and_then(Value::as_object) {
        let title = returned.get("title").and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty());
        let text = returned.get("description").and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty());
        if title.is_some() || text.is_some() {
            if !doc.is_empty() {
                doc.push('\n');
            }
            doc.push_str("@returns ");
            doc.push_str(title.unwrap_or_default());
            if let (Some(_), Some(_)) = (title, text) {
                doc.push_str(": ");
            }
            push_clipped(&mut doc, text.unwrap_or_default(), MAX_DOC);
        }
    }
    push_doc(out, indent, &doc);
    push_key(out, name);
    out.push_str("(args: ");
    let mut writer = Writer { out, start, root: input, open: vec![(input, false)], seen: Vec::new(), terse: false, at: "", written: Vec::new() };
    writer.ty(input, indent, 0);
    writer.out.push_str("): Promise<");
    match output {
        Some(output) => {
            writer.root = output;
            writer.open = vec![(output, false)];
            writer.terse = true;
            writer.ty(output, indent, 0);
        }
        None => writer.out.push_str("unknown"),
    }
    writer.out.push_str(">;");
}

/// How a written type binds, for the parentheses its context needs: `A | B` inside `[]` or `&`
/// needs them, `A & B` inside `[]` does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Atom,
    And,
    Or,
}

/// What a schema object says about its type, each part intersected with the others (JSON
/// Schema's keywords all apply at once).
#[derive(Clone, Copy)]
enum Part<'a> {
    Ref(&'a str),
    /// `type`, `enum`, `const`, and the keywords that imply an object or an array.
    Own,
    All(&'a [Value]),
    Union(&'a [Value]),
    /// A keyword whose narrowing TypeScript cannot say: written as `unknown` with why.
    Note(&'static str),
}

// JSON types as bits: the order of the constants is the order a union is written in.
const STRING: u8 = 1;
const NUMBER: u8 = 2;
const INTEGER: u8 = 4;
const BOOLEAN: u8 = 8;
const OBJECT: u8 = 16;
const ARRAY: u8 = 32;
const NULL: u8 = 64;
const OTHER: u8 = 128;

struct Writer<'o, 'a> {
    out: &'o mut String,
    /// Where this tool's declaration starts in `out`, for its budget.
    start: usize,
    /// The schema `#` refers to.
    root: &'a Value,
    /// The schemas being written through a `$ref` (and the root), outermost first: one met
    /// again inside itself is recursive, written once and then as `unknown /* recursive: ... */`
    /// (the flag: it was).
    open: Vec<(&'a Value, bool)>,
    /// The schemas written through a `$ref` so far in this tool, with the bytes each took: a
    /// large one met again is `unknown /* as above: ... */` rather than written twice.
    seen: Vec<(&'a Value, usize)>,
    /// Writing a result: its properties without doc comments, and an object type met again
    /// (an OpenAPI import writes each `$ref` out, so GitHub's issue holds its user type four
    /// times) named by the property it was first written at. A program reads a few fields of a
    /// result, and a whole one costs the model more tokens than the calls code mode saves.
    terse: bool,
    /// The property being written, and the object types a result has written, each with the
    /// property it was written at.
    at: &'a str,
    written: Vec<(&'a Value, &'a str)>,
}

impl<'a> Writer<'_, 'a> {
    fn over_budget(&self) -> bool {
        self.out.len().saturating_sub(self.start) > BUDGET
    }

    /// A schema as a TypeScript type, written at the current position; `indent` is the level of
    /// the line it starts on (an object's members go one deeper).
    fn ty(&mut self, schema: &'a Value, indent: usize, depth: usize) -> Shape {
        if self.over_budget() {
            self.out.push_str("unknown /* too large */");
            return Shape::Atom;
        }
        let object = match schema {
            Value::Object(_) if depth > MAX_DEPTH => {
                self.out.push_str("unknown /* too deep */");
                return Shape::Atom;
            }
            Value::Object(object) if self.terse && object.contains_key("properties") => {
                if let Some((_, at)) = self.written.iter().find(|(written, _)| same(written, schema, 0)) {
                    self.out.push_str("unknown /* the type of ");
                    push_comment(self.out, at);
                    self.out.push_str(" above */");
                    return Shape::Atom;
                }
                self.written.push((schema, self.at));
                object
            }
            Value::Object(object) => object,
            Value::Bool(false) => {
                self.out.push_str("never");
                return Shape::Atom;
            }
            Value::Bool(true) => {
                self.out.push_str("unknown");
                return Shape::Atom;
            }
            _ => {
                self.out.push_str("unknown /* not a schema */");
                return Shape::Atom;
            }
        };
        let parts = parts(object);
        let mut shape = Shape::Atom;
        match parts.as_slice() {
            [] => self.out.push_str("unknown"),
            [part] => shape = self.part(*part, object, indent, depth),
            _ => {
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(" & ");
                    }
                    let at = self.out.len();
                    if self.part(*part, object, indent, depth) == Shape::Or {
                        self.wrap(at);
                    }
                }
                shape = Shape::And;
            }
        }
        // OpenAPI 3.0's `nullable: true` (3.1 and JSON Schema say `"type": [..., "null"]`).
        if !parts.is_empty() && object.get("nullable") == Some(&Value::Bool(true)) && types(object) & NULL == 0 {
            self.out.push_str(" | null");
            shape = Shape::Or;
        }
        shape
    }

    fn part(&mut self, part: Part<'a>, object: &'a Map<String, Value>, indent: usize, depth: usize) -> Shape {
        match part {
            Part::Ref(reference) => self.reference(reference, indent, depth),
            Part::Own => self.own(object, indent, depth),
            Part::All(schemas) => self.all(schemas, indent, depth),
            Part::Union(schemas) => self.union(schemas, indent, depth),
            Part::Note(why) => {
                self.out.push_str(why);
                Shape::Atom
            }
        }
    }

    fn wrap(&mut self, at: usize) {
        self.out.insert(at, '(');
        self.out.push(')');
    }

    /// `$ref` within the schema (`#`, `#/$defs/X`, `#/definitions/X`, any JSON Pointer), written
    /// inline; a reference elsewhere is `unknown`.
    fn reference(&mut self, reference: &str, indent: usize, depth: usize) -> Shape {
        let Some(pointer) = reference.strip_prefix('#') else {
            self.out.push_str("unknown /* $ref to another document */");
            return Shape::Atom;
        };
        let target = if pointer.is_empty() { Some(self.root) } else if pointer.starts_with('/') { self.root.pointer(pointer) } else { None };
        let Some(target) = target else {
            self.out.push_str("unknown /* $ref not found */");
            return Shape::Atom;
        };
        if let Some(open) = self.open.iter_mut().find(|(open, _)| std::ptr::eq(*open, target)) {
            open.1 = true;
            self.note("unknown /* recursive: ", reference);
            return Shape::Atom;
        }
        let seen = self.seen.iter().find(|(seen, _)| std::ptr::eq(*seen, target)).map(|(_, len)| *len);
        if seen.is_some_and(|len| len > MAX_REPEAT) {
            self.note("unknown /* as above: ", reference);
            return Shape::Atom;
        }
        let at = self.out.len();
        self.open.push((target, false));
        let shape = self.ty(target, indent, depth + 1);
        let recursive = self.open.pop().is_some_and(|(_, recursive)| recursive);
        let len = self.out.len() - at;
        if seen.is_none() {
            self.seen.push((target, len));
        }
        // Named where it is written, for the `recursive` and `as above` notes that refer to it.
        if recursive || len > MAX_REPEAT {
            let mut label = String::from("/* ");
            push_comment(&mut label, clip(reference, MAX_NAME));
            label.push_str(" */ ");
            self.out.insert_str(at, &label);
        }
        shape
    }

    /// `unknown` with a note naming a `$ref` (escaped: a reference is the schema's text).
    fn note(&mut self, note: &str, reference: &str) {
        self.out.push_str(note);
        push_comment(self.out, clip(reference, MAX_NAME));
        self.out.push_str(" */");
    }

    /// `allOf`: an intersection; a member that says nothing of the type (a constraint alone,
    /// like the `pattern` the OpenAPI import adds for a format) is left out.
    fn all(&mut self, schemas: &'a [Value], indent: usize, depth: usize) -> Shape {
        let mut written = 0;
        let mut last = Shape::Atom;
        for schema in schemas {
            // A member left out only widens the intersection.
            if written > 0 && self.over_budget() {
                break;
            }
            let before = self.out.len();
            if written > 0 {
                self.out.push_str(" & ");
            }
            let at = self.out.len();
            let mut shape = self.ty(schema, indent, depth + 1);
            if self.out.get(at..) == Some("unknown") {
                self.out.truncate(before);
                continue;
            }
            if shape == Shape::Or && schemas.len() > 1 {
                self.wrap(at);
                shape = Shape::Atom;
            }
            last = shape;
            written += 1;
        }
        match written {
            0 => {
                self.out.push_str("unknown");
                Shape::Atom
            }
            1 => last,
            _ => Shape::And,
        }
    }

    /// `oneOf` and `anyOf`: a union (which of the members a value matches, or whether only one,
    /// TypeScript does not say).
    fn union(&mut self, schemas: &'a [Value], indent: usize, depth: usize) -> Shape {
        if schemas.is_empty() {
            self.out.push_str("never");
            return Shape::Atom;
        }
        let mut last = Shape::Atom;
        for (i, schema) in schemas.iter().enumerate() {
            if i > 0 {
                self.out.push_str(" | ");
            }
            last = self.ty(schema, indent, depth + 1);
            if self.over_budget() && i + 1 < schemas.len() {
                // `unknown` swallows the rest of the union anyway.
                self.out.push_str(" | unknown /* too large */");
                return Shape::Or;
            }
        }
        if schemas.len() == 1 {
            last
        } else {
            Shape::Or
        }
    }

    /// `type`, `enum` and `const` (or the type the object and array keywords imply).
    fn own(&mut self, object: &'a Map<String, Value>, indent: usize, depth: usize) -> Shape {
        let types = types(object);
        if let Some(value) = object.get("const") {
            return self.enumeration(std::slice::from_ref(value), 0, depth);
        }
        if let Some(values) = object.get("enum").and_then(Value::as_array) {
            return self.enumeration(values, types, depth);
        }
        let mut count = 0;
        let mut last = Shape::Atom;
        for bit in [STRING, NUMBER, INTEGER, BOOLEAN, OBJECT, ARRAY, NULL, OTHER] {
            // `integer` is a `number`, written once.
            if types & bit == 0 || (bit == INTEGER && types & NUMBER != 0) {
                continue;
            }
            if count > 0 {
                self.out.push_str(" | ");
            }
            count += 1;
            last = match bit {
                OBJECT => self.object(object, indent, depth),
                ARRAY => self.array(object, indent, depth),
                _ => {
                    self.out.push_str(primitive(bit));
                    Shape::Atom
                }
            };
        }
        match count {
            // An `enum` that is not a list, beside no `type`.
            0 => {
                self.out.push_str("unknown");
                Shape::Atom
            }
            1 => last,
            _ => Shape::Or,
        }
    }

    /// An `enum`'s members as literal types, those of the schema's `type` (when it has one); too
    /// many (or too large to write) become the union of their JSON types.
    fn enumeration(&mut self, values: &[Value], types: u8, depth: usize) -> Shape {
        let start = self.out.len();
        let fits = |value: &Value| types == 0 || types & type_of(value) != 0;
        let mut count = 0;
        if values.len() <= MAX_ENUM {
            let mut whole = true;
            for value in values.iter().filter(|value| fits(value)) {
                if count > 0 {
                    self.out.push_str(" | ");
                }
                count += 1;
                whole = self.literal(value, depth);
                if !whole {
                    break;
                }
            }
            if whole {
                return match count {
                    0 => {
                        self.out.push_str("never");
                        Shape::Atom
                    }
                    1 => Shape::Atom,
                    _ => Shape::Or,
                };
            }
            self.out.truncate(start);
        }
        let mut present = 0;
        let mut listed = 0usize;
        for value in values.iter().filter(|value| fits(value)) {
            present |= type_of(value);
            listed += 1;
        }
        count = 0;
        for bit in [STRING, NUMBER, BOOLEAN, OBJECT, ARRAY, NULL] {
            if present & bit == 0 && !(bit == NUMBER && present & INTEGER != 0) {
                continue;
            }
            if count > 0 {
                self.out.push_str(" | ");
            }
            count += 1;
            self.out.push_str(primitive(bit));
        }
        if count == 0 {
            self.out.push_str("never");
        } else if listed > 1 {
            self.out.push_str(" /* one of ");
            self.out.push_str(&listed.to_string());
            self.out.push_str(" values */");
        } else {
            self.out.push_str(" /* a value too large to write */");
        }
        if count > 1 {
            Shape::Or
        } else {
            Shape::Atom
        }
    }

    /// A JSON value as a literal type: `"a"`, `1`, `true`, `null`, a tuple, an object type.
    /// False when it is too deep or too large to write whole (what was written is then
    /// incomplete, for the caller to take back).
    fn literal(&mut self, value: &Value, depth: usize) -> bool {
        if depth > MAX_DEPTH || self.over_budget() {
            return false;
        }
        match value {
            Value::Null => self.out.push_str("null"),
            Value::Bool(true) => self.out.push_str("true"),
            Value::Bool(false) => self.out.push_str("false"),
            Value::Number(number) => self.out.push_str(&number.to_string()),
            Value::String(text) => {
                push_quoted(self.out, text);
                if self.over_budget() {
                    return false;
                }
            }
            Value::Array(items) => {
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    if !self.literal(item, depth + 1) {
                        return false;
                    }
                }
                self.out.push(']');
            }
            Value::Object(members) => {
                self.out.push('{');
                for (i, (key, item)) in members.iter().enumerate() {
                    self.out.push_str(if i > 0 { "; " } else { " " });
                    push_quoted(self.out, key);
                    self.out.push_str(": ");
                    if !self.literal(item, depth + 1) {
                        return false;
                    }
                }
                self.out.push_str(if members.is_empty() { "}" } else { " }" });
            }
        }
        true
    }

    /// An object type: each property with its doc comment, `?` unless required; an index
    /// signature for `additionalProperties` (`true` or a schema) and `patternProperties`, whose
    /// type is `unknown` beside named properties (TypeScript wants each property's type to fit
    /// the index signature's).
    fn object(&mut self, object: &'a Map<String, Value>, indent: usize, depth: usize) -> Shape {
        let properties = object.get("properties").and_then(Value::as_object).filter(|p| !p.is_empty());
        let required: Vec<&str> = object.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let additional = object.get("additionalProperties");
        let patterns = object.get("patternProperties").and_then(Value::as_object).filter(|p| !p.is_empty());
        // In the order `required` names them, each once. (No sort: a sort of `&str` is some 6 KB
        // of the module, and these lists are short.)
        let mut extra: Vec<&str> = Vec::new();
        for name in required.iter().copied().filter(|name| !properties.is_some_and(|p| p.contains_key(*name))) {
            if !extra.contains(&name) {
                extra.push(name);
            }
        }
        let named = properties.is_some() || !extra.is_empty();
        let index = match additional {
            Some(Value::Bool(false)) => patterns.is_some() || !named,
            None => patterns.is_some() || !named,
            Some(_) => true,
        };
        if !named && index {
            // No named property: the index signature alone, on one line.
            self.out.push_str("{ [key: string]: ");
            self.index_type(additional, patterns, indent, depth);
            self.out.push_str(" }");
            return Shape::Atom;
        }
        self.out.push('{');
        let inner = indent + 1;
        // What is left out (past the budget, or a name too long to write) the index signature
        // still admits, as `unknown`.
        let mut left_out = false;
        for (name, schema) in properties.into_iter().flatten() {
            if self.over_budget() || name.len() > MAX_NAME {
                left_out = true;
                continue;
            }
            self.out.push('\n');
            push_indent(self.out, inner);
            self.doc(name, schema, inner);
            push_key(self.out, name);
            if !required.contains(&name.as_str()) {
                self.out.push('?');
            }
            self.out.push_str(": ");
            self.at = name;
            self.ty(schema, inner, depth + 1);
            self.out.push(';');
        }
        for name in extra {
            if self.over_budget() || name.len() > MAX_NAME {
                left_out = true;
                break;
            }
            self.out.push('\n');
            push_indent(self.out, inner);
            push_key(self.out, name);
            self.out.push_str(": unknown;");
        }
        if index || left_out {
            self.out.push('\n');
            push_indent(self.out, inner);
            self.out.push_str(if left_out { "[key: string]: unknown; /* more properties: too large */" } else { "[key: string]: unknown;" });
        }
        self.out.push('\n');
        push_indent(self.out, indent);
        self.out.push('}');
        Shape::Atom
    }

    /// The type of an object's other keys when it names none: its `additionalProperties`
    /// (absent or `true`: `unknown`, `false`: none) or any of its `patternProperties`.
    fn index_type(&mut self, additional: Option<&'a Value>, patterns: Option<&'a Map<String, Value>>, indent: usize, depth: usize) -> Shape {
        let mut schemas: Vec<&'a Value> = patterns.into_iter().flat_map(|p| p.values()).collect();
        match additional {
            Some(Value::Bool(false)) => {}
            Some(schema) => schemas.push(schema),
            None if patterns.is_some() => {
                // Keys that match no pattern may hold anything.
                self.out.push_str("unknown");
                return Shape::Atom;
            }
            None => {}
        }
        match schemas.as_slice() {
            [] if additional.is_none() => {
                self.out.push_str("unknown");
                Shape::Atom
            }
            [] => {
                self.out.push_str("never");
                Shape::Atom
            }
            [schema] => self.ty(schema, indent, depth + 1),
            _ => {
                for (i, schema) in schemas.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(" | ");
                    }
                    if self.over_budget() {
                        self.out.push_str("unknown /* too large */");
                        break;
                    }
                    self.ty(schema, indent, depth + 1);
                }
                Shape::Or
            }
        }
    }

    /// An array type: `T[]` from `items`, or a tuple from `prefixItems` (or draft 4-7's `items`
    /// as a list), its members past `minItems` optional, the rest from `items` (or
    /// `additionalItems`).
    fn array(&mut self, object: &'a Map<String, Value>, indent: usize, depth: usize) -> Shape {
        let items = object.get("items");
        let (prefix, rest) = match (object.get("prefixItems").and_then(Value::as_array), items) {
            (Some(prefix), _) => (Some(prefix), items),
            (None, Some(Value::Array(prefix))) => (Some(prefix), object.get("additionalItems")),
            (None, _) => (None, items),
        };
        let Some(prefix) = prefix else {
            self.element(rest, indent, depth);
            self.out.push_str("[]");
            return Shape::Atom;
        };
        let needed = object.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let start = self.out.len();
        self.out.push('[');
        for (i, schema) in prefix.iter().enumerate() {
            if self.over_budget() {
                // A tuple cut short would refuse the longer arrays the schema accepts.
                self.out.truncate(start);
                self.out.push_str("unknown[] /* too large */");
                return Shape::Atom;
            }
            if i > 0 {
                self.out.push_str(", ");
            }
            let at = self.out.len();
            if self.ty(schema, indent, depth + 1) != Shape::Atom {
                self.wrap(at);
            }
            if i as u64 >= needed {
                self.out.push('?');
            }
        }
        if rest != Some(&Value::Bool(false)) {
            if !prefix.is_empty() {
                self.out.push_str(", ");
            }
            self.out.push_str("...");
            self.element(rest, indent, depth);
            self.out.push_str("[]");
        }
        self.out.push(']');
        Shape::Atom
    }

    /// The element type of `T[]`, parenthesized when it is a union or an intersection.
    fn element(&mut self, schema: Option<&'a Value>, indent: usize, depth: usize) {
        match schema {
            None => self.out.push_str("unknown"),
            Some(schema) => {
                let at = self.out.len();
                if self.ty(schema, indent, depth + 1) != Shape::Atom {
                    self.wrap(at);
                }
            }
        }
    }

    /// A property's doc comment: its title, description, `@deprecated`, format, pattern, bounds
    /// and default, each a line. A title that only repeats the name (Pydantic's `"title": "Per
    /// Page"` for `per_page`) is left out.
    fn doc(&mut self, name: &str, schema: &Value, indent: usize) {
        let Some(object) = schema.as_object().filter(|_| !self.terse) else { return };
        let mut doc = String::new();
        let repeats_name = |title: &str| letters(name).next().is_some() && letters(title).eq(letters(name));
        for key in ["title", "description"] {
            if let Some(text) = object.get(key).and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty() && (key != "title" || !repeats_name(t))) {
                push_line(&mut doc, "");
                push_clipped(&mut doc, text, MAX_DOC);
            }
        }
        if object.get("deprecated") == Some(&Value::Bool(true)) {
            push_line(&mut doc, "@deprecated");
        }
        if types(object) & (INTEGER | NUMBER) == INTEGER {
            push_line(&mut doc, "@integer");
        }
        for key in ["format", "pattern"] {
            if let Some(text) = object.get(key).and_then(Value::as_str) {
                push_line(&mut doc, "@");
                doc.push_str(key);
                doc.push(' ');
                push_clipped(&mut doc, text, MAX_DOC);
            }
        }
        for key in ["minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties"] {
            if let Some(value @ (Value::Number(_) | Value::Bool(true))) = object.get(key) {
                push_line(&mut doc, "@");
                doc.push_str(key);
                if let Value::Number(number) = value {
                    doc.push(' ');
                    doc.push_str(&number.to_string());
                }
            }
        }
        if let Some(default) = object.get("default") {
            let text = default.to_string();
            push_line(&mut doc, "@default ");
            push_clipped(&mut doc, &text, MAX_DEFAULT);
        }
        push_doc(self.out, indent, &doc);
    }
}

/// The parts of a schema object that say something of its type, in the order they are written.
fn parts(object: &Map<String, Value>) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    match object.get("$ref") {
        Some(Value::String(reference)) => parts.push(Part::Ref(reference)),
        Some(_) => parts.push(Part::Note("unknown /* $ref not a string */")),
        None => {}
    }
    if has_own(object) {
        parts.push(Part::Own);
    }
    if let Some(schemas) = object.get("allOf").and_then(Value::as_array) {
        parts.push(Part::All(schemas));
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(schemas) = object.get(key).and_then(Value::as_array) {
            parts.push(Part::Union(schemas));
        }
    }
    match object.get("not") {
        // `{"not": {}}` is the OpenAPI import's spelling of `false`: no value.
        Some(Value::Bool(true)) => parts.push(Part::Note("never")),
        Some(Value::Object(not)) if not.is_empty() => parts.push(Part::Note("never")),
        Some(_) => parts.push(Part::Note("unknown /* not: narrower than this says */")),
        None => {}
    }
    if object.contains_key("if") && (object.contains_key("then") || object.contains_key("else")) {
        parts.push(Part::Note("unknown /* if/then/else: narrower than this says */"));
    }
    for key in ["$dynamicRef", "$recursiveRef"] {
        if object.contains_key(key) {
            parts.push(Part::Note("unknown /* dynamic $ref */"));
        }
    }
    parts
}

/// Whether `type`, `enum`, `const` or a keyword that implies an object or an array is there.
fn has_own(object: &Map<String, Value>) -> bool {
    ["type", "enum", "const"].iter().any(|key| object.contains_key(*key)) || implied(object) != 0
}

/// The object and array keywords imply their type when `type` is absent (the OpenAPI import
/// reads a schema with `properties` as an object too).
fn implied(object: &Map<String, Value>) -> u8 {
    let mut types = 0;
    if ["properties", "additionalProperties", "patternProperties"].iter().any(|key| object.contains_key(*key)) {
        types |= OBJECT;
    }
    if ["items", "prefixItems"].iter().any(|key| object.contains_key(*key)) {
        types |= ARRAY;
    }
    types
}

/// The schema's `type` as bits (one name or a list); an unknown name sets `OTHER`. Without
/// `type`, what `implied` says (nothing, if `enum` or `const` says it instead).
fn types(object: &Map<String, Value>) -> u8 {
    let bit = |name: &str| match name {
        "string" => STRING,
        "number" => NUMBER,
        "integer" => INTEGER,
        "boolean" => BOOLEAN,
        "object" => OBJECT,
        "array" => ARRAY,
        "null" => NULL,
        _ => OTHER,
    };
    match object.get("type") {
        Some(Value::String(name)) => bit(name),
        Some(Value::Array(names)) if !names.is_empty() => names.iter().map(|name| name.as_str().map_or(OTHER, bit)).fold(0, |all, one| all | one),
        Some(_) => OTHER,
        None if object.contains_key("enum") || object.contains_key("const") => 0,
        None => implied(object),
    }
}

/// The JSON type of a value as a bit (a whole number is an `integer` and a `number`).
fn type_of(value: &Value) -> u8 {
    match value {
        Value::Null => NULL,
        Value::Bool(_) => BOOLEAN,
        Value::Number(number) if number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|f| f.fract() == 0.0) => NUMBER | INTEGER,
        Value::Number(_) => NUMBER,
        Value::String(_) => STRING,
        Value::Array(_) => ARRAY,
        Value::Object(_) => OBJECT,
    }
}

fn primitive(bit: u8) -> &'static str {
    match bit {
        STRING => "string",
        NUMBER | INTEGER => "number",
        BOOLEAN => "boolean",
        NULL => "null",
        OBJECT => "{ [key: string]: unknown }",
        ARRAY => "unknown[]",
        _ => "unknown /* unsupported type */",
    }
}

/// A text's letters and digits, in lower case: what a title that repeats a name shares with it.
fn letters(text: &str) -> impl Iterator<Item = char> + '_ {
    text.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase())
}

fn push_indent(out: &mut String, indent: usize) {
    for _ in 0..indent {
        out.push_str("  ");
    }
}

/// A member name as written: bare when it is an identifier, else a quoted string. `new` is
/// quoted too: `new(...)` would declare a constructor.
fn push_key(out: &mut String, name: &str) {
    let mut chars = name.chars();
    let identifier = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier && name != "new" {
        out.push_str(name);
    } else {
        push_quoted(out, name);
    }
}

/// A string literal, escaped as JSON does (and U+2028/U+2029, which older engines end a line at).
fn push_quoted(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str("\\u");
                for shift in [12, 8, 4, 0] {
                    out.push(char::from_digit(((c as u32) >> shift) & 0xf, 16).unwrap_or('0'));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Starts a line of a doc comment's text with `line`.
fn push_line(doc: &mut String, line: &str) {
    if !doc.is_empty() {
        doc.push('\n');
    }
    doc.push_str(line);
}

/// `text` cut to `max` bytes (at a character's boundary).
fn clip(text: &str, max: usize) -> &str {
    match text.char_indices().find(|(at, _)| *at >= max) {
        Some((at, _)) => text.get(..at).unwrap_or(text),
        None => text,
    }
}

/// `text` cut to `max` characters, the cut marked with an ellipsis.
fn push_clipped(doc: &mut String, text: &str, max: usize) {
    match text.char_indices().nth(max) {
        Some((at, _)) => {
            doc.push_str(text.get(..at).unwrap_or_default());
            doc.push('…');
        }
        None => doc.push_str(text),
    }
}

/// A doc comment of `text` (nothing when it is empty), ending where the next line's text starts:
/// `/** one line */`, or a `/** ... */` block. A `*/` in the text is written `*\/`, so no text
/// ends the comment early.
fn push_doc(out: &mut String, indent: usize, text: &str) {
    if text.trim().is_empty() {
        return;
    }
    let mut lines = text.lines().map(str::trim_end);
    if let (Some(line), None) = (lines.next(), lines.next()) {
        out.push_str("/** ");
        push_comment(out, line.trim_start());
        out.push_str(" */\n");
    } else {
        out.push_str("/**");
        for line in text.lines().map(str::trim_end) {
            out.push('\n');
            push_indent(out, indent);
            out.push_str(if line.is_empty() { " *" } else { " * " });
            push_comment(out, line);
        }
        out.push('\n');
        push_indent(out, indent);
        out.push_str(" */\n");
    }
    push_indent(out, indent);
}

/// Whether two schemas are the same, looked into at most `MAX_DEPTH` deep (deeper ones count as
/// different): `==` on a hostile schema's thousands of levels would overflow the stack.
fn same(a: &Value, b: &Value, depth: usize) -> bool {
    if std::ptr::eq(a, b) {
        return true;
    }
    match (a, b) {
        _ if depth > MAX_DEPTH => false,
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w, depth + 1))),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w, depth + 1)),
        _ => a == b,
    }
}

fn push_comment(out: &mut String, text: &str) {
    let mut pieces = text.split("*/");
    out.push_str(pieces.next().unwrap_or_default());
    for piece in pieces {
        out.push_str("*\\/");
        out.push_str(piece);
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use serde_json::json;

    /// A schema's type alone, as an argument or a result would have it.
    fn ty(schema: &Value) -> String {
        let mut out = String::new();
        Writer { out: &mut out, start: 0, root: schema, open: vec![(schema, false)], seen: Vec::new(), terse: false, at: "", written: Vec::new() }.ty(schema, 0, 0);
        out
    }

    /// A result type of `declare` (the part inside `Promise<...>`).
    fn result(schema: Value) -> String {
        let text = declare("t", None, &json!({"type": "object", "properties": {}}), Some(&schema));
        text.split_once("): Promise<").and_then(|(_, t)| t.strip_suffix(">;")).unwrap().to_string()
    }

    #[test]
    fn primitive_types() {
        assert_eq!(ty(&json!({"type": "string"})), "string");
        assert_eq!(ty(&json!({"type": "number"})), "number");
        assert_eq!(ty(&json!({"type": "integer"})), "number");
        assert_eq!(ty(&json!({"type": "boolean"})), "boolean");
        assert_eq!(ty(&json!({"type": "null"})), "null");
        assert_eq!(ty(&json!({"type": ["integer", "number", "string"]})), "string | number");
        assert_eq!(ty(&json!({})), "unknown");
        assert_eq!(ty(&json!(true)), "unknown");
        assert_eq!(ty(&json!(false)), "never");
        assert_eq!(ty(&json!({"description": "a constraint alone", "minLength": 2})), "unknown");
        assert_eq!(ty(&json!(42)), "unknown /* not a schema */");
        assert_eq!(ty(&json!({"enum": "a"})), "unknown");
    }

    #[test]
    fn unknown_types_are_unknown_never_a_guess() {
        assert_eq!(ty(&json!({"type": "file"})), "unknown /* unsupported type */");
        assert_eq!(ty(&json!({"type": ["string", "date"]})), "string | unknown /* unsupported type */");
        assert_eq!(ty(&json!({"type": 7})), "unknown /* unsupported type */");
    }

    #[test]
    fn enums_and_consts_are_literal_types() {
        assert_eq!(ty(&json!({"type": "string", "enum": ["open", "closed"]})), r#""open" | "closed""#);
        assert_eq!(ty(&json!({"enum": [1, -2.5, true, null, "x"]})), r#"1 | -2.5 | true | null | "x""#);
        // The members of another type than the schema's cannot be values.
        assert_eq!(ty(&json!({"type": "integer", "enum": [1, 1.5, "1"]})), "1");
        assert_eq!(ty(&json!({"type": "string", "enum": [1]})), "never");
        assert_eq!(ty(&json!({"type": ["string", "null"], "enum": ["a", null]})), r#""a" | null"#);
        assert_eq!(ty(&json!({"const": "v1"})), r#""v1""#);
        assert_eq!(ty(&json!({"const": {"a": [1, "b"], "c": {}}})), r#"{ "a": [1, "b"]; "c": {} }"#);
        assert_eq!(ty(&json!({"enum": ["say \"hi\"\n", "a\\b", "\u{2028}*/"]})), r#""say \"hi\"\n" | "a\\b" | "\u2028*/""#);
    }

    #[test]
    fn nullable_both_spellings() {
        assert_eq!(ty(&json!({"type": ["string", "null"]})), "string | null");
        assert_eq!(ty(&json!({"type": "string", "nullable": true})), "string | null");
        assert_eq!(ty(&json!({"type": ["string", "null"], "nullable": true})), "string | null");
        assert_eq!(ty(&json!({"nullable": true, "allOf": [{"$ref": "#/$defs/A"}], "$defs": {"A": {"type": "boolean"}}})), "boolean | null");
        // Nothing to make nullable: `unknown` already is.
        assert_eq!(ty(&json!({"nullable": true})), "unknown");
    }

    #[test]
    fn unions_and_intersections() {
        assert_eq!(ty(&json!({"oneOf": [{"type": "string"}, {"type": "integer"}]})), "string | number");
        assert_eq!(ty(&json!({"anyOf": [{"type": "string"}, {"type": "null"}]})), "string | null");
        assert_eq!(ty(&json!({"anyOf": []})), "never");
        assert_eq!(
            ty(&json!({"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, {"type": "object", "properties": {"b": {"type": "number"}}}]})),
            "{\n  a: string;\n} & {\n  b?: number;\n}"
        );
        // A union inside an intersection keeps its parentheses.
        assert_eq!(ty(&json!({"allOf": [{"anyOf": [{"type": "string"}, {"type": "number"}]}, {"type": "string"}]})), "(string | number) & string");
        assert_eq!(ty(&json!({"type": "string", "anyOf": [{"const": "a"}, {"const": "b"}]})), r#"string & ("a" | "b")"#);
        // The OpenAPI import's pattern for a format, alone in an allOf member, says no type.
        assert_eq!(ty(&json!({"type": "string", "allOf": [{"pattern": "^a"}]})), "string & unknown");
        assert_eq!(ty(&json!({"allOf": [{"type": "string"}, {"pattern": "^a"}]})), "string");
    }

    #[test]
    fn objects_required_optional_quoted_and_documented() {
        let schema = json!({
            "type": "object",
            "properties": {
                "owner": {"type": "string", "description": "The account owner.", "minLength": 1},
                "per-page": {"type": "integer", "default": 30, "maximum": 100},
                "new": {"type": "boolean", "deprecated": true},
                "a\"b*/": {"type": "string", "format": "date-time", "pattern": "^x*/$"},
                "$ok_1": {"title": "T", "type": "string"},
                "per_page": {"title": "Per Page", "type": "integer"}
            },
            "required": ["owner", "missing", "missing"]
        });
        let expected = "{
  /**
   * The account owner.
   * @minLength 1
   */
  owner: string;
  /**
   * @integer
   * @maximum 100
   * @default 30
   */
  \"per-page\"?: number;
  /** @deprecated */
  \"new\"?: boolean;
  /**
   * @format date-time
   * @pattern ^x*\\/$
   */
  \"a\\\"b*/\"?: string;
  /** T */
  $ok_1?: string;
  /** @integer */
  per_page?: number;
  missing: unknown;
}";
        assert_eq!(ty(&schema), expected);
    }

    #[test]
    fn additional_and_pattern_properties() {
        assert_eq!(ty(&json!({"type": "object"})), "{ [key: string]: unknown }");
        assert_eq!(ty(&json!({"type": "object", "additionalProperties": false})), "{ [key: string]: never }");
        assert_eq!(ty(&json!({"type": "object", "additionalProperties": {"type": "integer"}})), "{ [key: string]: number }");
        assert_eq!(ty(&json!({"additionalProperties": true})), "{ [key: string]: unknown }");
        assert_eq!(ty(&json!({"type": "object", "patternProperties": {"^a": {"type": "string"}}, "additionalProperties": false})), "{ [key: string]: string }");
        assert_eq!(ty(&json!({"type": "object", "patternProperties": {"^a": {"type": "string"}}, "additionalProperties": {"type": "number"}})), "{ [key: string]: string | number }");
        // Keys no pattern matches may hold anything.
        assert_eq!(ty(&json!({"type": "object", "patternProperties": {"^a": {"type": "string"}}})), "{ [key: string]: unknown }");
        // Beside named properties, the index signature is `unknown`: TypeScript wants each
        // property's type to fit it.
        assert_eq!(ty(&json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "number"}})), "{\n  a?: string;\n  [key: string]: unknown;\n}");
        assert_eq!(ty(&json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false})), "{\n  a?: string;\n}");
        assert_eq!(ty(&json!({"type": "object", "properties": {"a": false}})), "{\n  a?: never;\n}");
        assert_eq!(
            ty(&json!({"type": ["object", "null"], "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}})),
            "{\n  a?: {\n    b?: string;\n  };\n} | null"
        );
    }

    #[test]
    fn arrays_and_tuples() {
        assert_eq!(ty(&json!({"type": "array", "items": {"type": "string"}})), "string[]");
        assert_eq!(ty(&json!({"type": "array"})), "unknown[]");
        assert_eq!(ty(&json!({"items": {"type": ["string", "null"]}})), "(string | null)[]");
        assert_eq!(ty(&json!({"type": "array", "items": {"type": "array", "items": {"enum": ["a", "b"]}}})), r#"("a" | "b")[][]"#);
        assert_eq!(ty(&json!({"type": "array", "items": false})), "never[]");
        assert_eq!(ty(&json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": ["number", "null"]}], "minItems": 1})), "[string, (number | null)?, ...unknown[]]");
        assert_eq!(ty(&json!({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "number"}, "minItems": 1})), "[string, ...number[]]");
        assert_eq!(ty(&json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": false, "minItems": 2})), "[string, number]");
        // Draft 4-7's tuples.
        assert_eq!(ty(&json!({"type": "array", "items": [{"type": "string"}], "additionalItems": false})), "[string?]");
        assert_eq!(ty(&json!({"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "boolean"}})), "[string?, ...boolean[]]");
    }

    #[test]
    fn local_refs_inline_and_cycles_stop() {
        let defs = json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/Name"}, "b": {"$ref": "#/definitions/Count"}, "c": {"$ref": "#/properties/a"}, "d": {"$ref": "#/$defs/a~1b"}},
            "$defs": {"Name": {"type": "string"}, "a/b": {"type": "boolean"}},
            "definitions": {"Count": {"type": "integer"}}
        });
        assert_eq!(ty(&defs), "{\n  a?: string;\n  b?: number;\n  c?: string;\n  d?: boolean;\n}");
        // A recursive type is written once, then `unknown` where it repeats.
        let tree = json!({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}});
        assert_eq!(ty(&tree), "/* #/$defs/Node */ {\n  children?: unknown /* recursive: #/$defs/Node */[];\n}");
        assert_eq!(ty(&json!({"type": "object", "properties": {"self": {"$ref": "#"}}})), "{\n  self?: unknown /* recursive: # */;\n}");
        // Two definitions that refer to each other.
        let pair = json!({"$ref": "#/$defs/A", "$defs": {"A": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/B"}]}, "B": {"type": "array", "items": {"$ref": "#/$defs/A"}}}});
        assert_eq!(ty(&pair), "/* #/$defs/A */ null | unknown /* recursive: #/$defs/A */[]");
        assert_eq!(ty(&json!({"$ref": "https://example.com/schema.json"})), "unknown /* $ref to another document */");
        assert_eq!(ty(&json!({"$ref": "other.json#/A"})), "unknown /* $ref to another document */");
        assert_eq!(ty(&json!({"$ref": "#/$defs/Missing"})), "unknown /* $ref not found */");
        assert_eq!(ty(&json!({"$ref": "#anchor"})), "unknown /* $ref not found */");
        assert_eq!(ty(&json!({"$ref": 3})), "unknown /* $ref not a string */");
        // A `$ref` beside other keywords applies with them (2019-09 and later).
        assert_eq!(ty(&json!({"$ref": "#/$defs/S", "type": "string", "$defs": {"S": {"enum": ["a", 1]}}})), r#"("a" | 1) & string"#);
    }

    #[test]
    fn a_large_definition_is_written_once_per_tool() {
        let many: Map<String, Value> = (0..20).map(|i| (format!("field{i}"), json!({"type": "string"}))).collect();
        let schema = json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/Big"}, "b": {"$ref": "#/$defs/Big"}, "c": {"$ref": "#/$defs/Small"}, "d": {"$ref": "#/$defs/Small"}},
            "$defs": {"Big": {"type": "object", "properties": many}, "Small": {"enum": ["x", "y"]}}
        });
        let text = ty(&schema);
        assert!(text.starts_with("{\n  a?: /* #/$defs/Big */ {\n    field0?: string;\n"), "{text}");
        assert!(text.ends_with("  };\n  b?: unknown /* as above: #/$defs/Big */;\n  c?: \"x\" | \"y\";\n  d?: \"x\" | \"y\";\n}"), "{text}");
        // Once per tool: a schema the arguments and the result share is written once too.
        let text = declare("t", None, &schema, Some(&schema));
        assert_eq!(text.matches("field0").count(), 1);
        assert_eq!(text.matches("unknown /* as above: #/$defs/Big */").count(), 3);
    }

    #[test]
    fn what_typescript_cannot_say_is_unknown_with_why() {
        assert_eq!(ty(&json!({"not": {"type": "string"}})), "unknown /* not: narrower than this says */");
        assert_eq!(ty(&json!({"type": "string", "not": {"const": ""}})), "string & unknown /* not: narrower than this says */");
        assert_eq!(ty(&json!({"not": {}})), "never");
        assert_eq!(ty(&json!({"if": {"type": "string"}, "then": {"minLength": 1}, "else": {"type": "number"}})), "unknown /* if/then/else: narrower than this says */");
        // `if` alone changes nothing.
        assert_eq!(ty(&json!({"type": "string", "if": {"minLength": 1}})), "string");
        assert_eq!(ty(&json!({"$dynamicRef": "#node"})), "unknown /* dynamic $ref */");
    }

    #[test]
    fn a_member_with_its_doc_comment_and_result() {
        let input = json!({"type": "object", "properties": {"q": {"type": "string", "description": "What to find."}}, "required": ["q"]});
        let output = json!({"title": "Found", "description": "The matches.", "type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"]});
        assert_eq!(
            declare("search_issues", Some("Searches issues.\n\nHTTP: GET /search"), &input, Some(&output)),
            "/**
 * Searches issues.
 *
 * HTTP: GET /search
 * @returns Found: The matches.
 */
search_issues(args: {
  /** What to find. */
  q: string;
}): Promise<{
  total: number;
}>;"
        );
        // A result's properties go without doc comments, and an object type met again in it is
        // named by the property it was first written at.
        let user = json!({"type": "object", "properties": {"login": {"type": "string", "description": "The handle."}}, "required": ["login"]});
        let issue = json!({"type": "object", "properties": {"user": user, "assignee": {"anyOf": [user, {"type": "null"}]}}, "required": ["user"]});
        assert_eq!(result(issue), "{\n  user: {\n    login: string;\n  };\n  assignee?: unknown /* the type of user above */ | null;\n}");
        // Without an output schema, what the tool returns is unknown.
        assert_eq!(declare("ping", None, &json!({"type": "object"}), None), "ping(args: { [key: string]: unknown }): Promise<unknown>;");
        assert_eq!(declare("get-repo", Some("One line."), &json!({"type": "object", "additionalProperties": false}), None), "/** One line. */\n\"get-repo\"(args: { [key: string]: never }): Promise<unknown>;");
        assert_eq!(result(json!({"title": "Only a title", "type": "object"})), "{ [key: string]: unknown }");
    }

    #[test]
    fn the_block_of_several_tools() {
        let empty = json!({"type": "object", "properties": {}});
        let input = json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]});
        let block = declare_all([("list", Some("Lists them."), &empty, None), ("get.one", None, &input, Some(&input))]);
        assert_eq!(
            block,
            "declare const tools: {
  /** Lists them. */
  list(args: { [key: string]: unknown }): Promise<unknown>;
  \"get.one\"(args: {
    id: string;
  }): Promise<{
    id: string;
  }>;
};"
        );
        assert_eq!(declare_all([]), "declare const tools: {\n};");
    }

    #[test]
    fn doc_comments_cannot_be_closed_by_their_text() {
        let input = json!({"type": "object", "properties": {"x": {"type": "string", "description": "ends */ here\r\nand /* opens", "default": "*/"}}});
        let text = declare("t*/x", Some("a */ b\n*/"), &input, None);
        assert_eq!(
            text,
            "/**
 * a *\\/ b
 * *\\/
 */
\"t*/x\"(args: {
  /**
   * ends *\\/ here
   * and /* opens
   * @default \"*\\/\"
   */
  x?: string;
}): Promise<unknown>;"
        );
        // Outside comments and string literals, no `*/` of the input's appears.
        let outside: String = text.split("\"t*/x\"").collect();
        assert_eq!(outside.matches("*/").count(), 2);
    }

    #[test]
    fn long_descriptions_are_cut() {
        let long = "word ".repeat(1_000);
        let text = declare("t", Some(&long), &json!({"type": "object"}), None);
        assert!(text.len() < MAX_DOC + 200, "{}", text.len());
        assert!(text.ends_with("word word … */\nt(args: { [key: string]: unknown }): Promise<unknown>;"), "{text}");
    }

    #[test]
    fn deep_nesting_stops_at_the_depth_bound() {
        // Built by hand: `json!` would serialize its nested value, 10,000 levels deep.
        let wrap = |members: [(&str, Value); 3]| Value::Object(members.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
        let mut schema = json!({"type": "string"});
        for _ in 0..10_000 {
            schema = wrap([("type", json!("array")), ("items", schema), ("minItems", json!(0))]);
        }
        let text = ty(&schema);
        if text != format!("unknown /* too deep */{}", "[]".repeat(MAX_DEPTH + 1)) {
            std::mem::forget(schema);
            panic!("{text}");
        }
        let mut object = json!({"type": "string"});
        for _ in 0..10_000 {
            object = wrap([("type", json!("object")), ("properties", wrap([("a", object), ("b", json!(true)), ("c", json!(true))])), ("required", json!(["a"]))]);
        }
        let text = declare("deep", None, &object, Some(&object));
        // Dropping 10,000 levels would take the stack of a test thread (a failed assertion too).
        std::mem::forget(schema);
        std::mem::forget(object);
        assert_eq!(text.matches("unknown /* too deep */").count(), 2);
        assert!(text.len() < 10_000, "{}", text.len());
    }

    #[test]
    fn a_chain_of_refs_and_a_self_reference_stop() {
        let mut defs = Map::new();
        for i in 0..10_000 {
            defs.insert(format!("d{i}"), json!({"$ref": format!("#/$defs/d{}", i + 1)}));
        }
        defs.insert("d10000".into(), json!({"$ref": "#/$defs/d0"}));
        let schema = json!({"$ref": "#/$defs/d0", "$defs": defs});
        assert_eq!(ty(&schema), "unknown /* too deep */");
        assert_eq!(ty(&json!({"$ref": "#"})), "unknown /* recursive: # */");
        assert_eq!(ty(&json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})), "/* #/$defs/a */ unknown /* recursive: #/$defs/a */");
        // A reference's text in a note cannot close it.
        assert_eq!(ty(&json!({"$defs": {"a*/b": {"$ref": "#/$defs/a*~1b"}}, "$ref": "#/$defs/a*~1b"})), "/* #/$defs/a*~1b */ unknown /* recursive: #/$defs/a*~1b */");
        assert_eq!(ty(&json!({"$defs": {"x*/": {"items": {"$ref": "#/$defs/x*~1"}}}, "$ref": "#/$defs/x*~1"})), "/* #/$defs/x*~1 */ unknown /* recursive: #/$defs/x*~1 */[]");
    }

    #[test]
    fn exponential_refs_are_bounded_by_size() {
        // Each definition refers to the next twice: 2^30 paths, written inline.
        let mut defs = Map::new();
        for i in 0..30 {
            let next = format!("#/$defs/d{}", i + 1);
            defs.insert(format!("d{i}"), json!({"type": "object", "properties": {"left": {"$ref": next}, "right": {"$ref": next}}}));
        }
        defs.insert("d30".into(), json!({"type": "string"}));
        let schema = json!({"$ref": "#/$defs/d0", "$defs": defs});
        let text = declare("wide", None, &schema, Some(&schema));
        assert!(text.len() < BUDGET + 8 * 1024, "{}", text.len());
        assert!(text.contains("unknown /* too large */") || text.contains("unknown /* too deep */"));
    }

    #[test]
    fn huge_enums_become_their_types() {
        let values: Vec<Value> = (0..100_000).map(|i| json!(format!("v{i}"))).collect();
        assert_eq!(ty(&json!({"type": "string", "enum": values})), "string /* one of 100000 values */");
        let mixed: Vec<Value> = (0..1_000).map(|i| if i % 2 == 0 { json!(i) } else { json!(null) }).collect();
        assert_eq!(ty(&json!({"enum": mixed})), "number | null /* one of 1000 values */");
        // Few members, each too large to write: the same.
        let big: Vec<Value> = (0..4).map(|i| json!(format!("{i}{}", "x".repeat(BUDGET / 2)))).collect();
        assert_eq!(ty(&json!({"enum": big})), "string /* one of 4 values */");
        assert_eq!(ty(&json!({"const": "y".repeat(BUDGET * 2)})), "string /* a value too large to write */");
        let deep_const = (0..100).fold(json!(1), |inner, _| json!([inner]));
        assert_eq!(ty(&json!({"const": deep_const})), "unknown[] /* a value too large to write */");
    }

    #[test]
    fn huge_objects_and_unions_are_bounded() {
        let mut properties = Map::new();
        for i in 0..100_000 {
            properties.insert(format!("p{i}"), json!({"type": "string", "description": "A property with some words."}));
        }
        let required: Vec<String> = (0..100_000).map(|i| format!("p{i}")).collect();
        let schema = json!({"type": "object", "properties": properties, "required": required});
        let text = declare("huge", None, &schema, Some(&schema));
        assert!(text.len() < BUDGET + 8 * 1024, "{}", text.len());
        // The budget is the tool's: the arguments took it all.
        assert_eq!(text.matches("[key: string]: unknown; /* more properties: too large */").count(), 1);
        assert!(text.ends_with("}): Promise<unknown /* too large */>;"));
        let members: Vec<Value> = (0..100_000).map(|i| json!({"type": "object", "properties": {"k": {"const": i}}})).collect();
        let text = declare("union", None, &json!({"anyOf": members}), None);
        assert!(text.len() < BUDGET + 8 * 1024, "{}", text.len());
        assert!(text.contains(" | unknown /* too large */): Promise<unknown>;"));
        let all: Vec<Value> = (0..100_000).map(|i| json!({"type": "object", "properties": {"k": {"const": i}}})).collect();
        let text = declare("all", None, &json!({"allOf": all}), None);
        assert!(text.len() < BUDGET + 8 * 1024, "{}", text.len());
        let tuple: Vec<Value> = (0..100_000).map(|i| json!({"const": i})).collect();
        assert_eq!(result(json!({"type": "array", "prefixItems": tuple})), "unknown[] /* too large */");
        let long_name = "n".repeat(MAX_NAME + 1);
        assert_eq!(ty(&json!({"type": "object", "properties": {long_name: {"type": "string"}, "b": {"type": "string"}}})), "{\n  b?: string;\n  [key: string]: unknown; /* more properties: too large */\n}");
    }

    #[test]
    fn names_that_are_not_identifiers_are_quoted() {
        let schema = json!({"type": "object"});
        for (name, written) in [("a_b$1", "a_b$1"), ("1a", "\"1a\""), ("a-b", "\"a-b\""), ("", "\"\""), ("é", "\"é\""), ("new", "\"new\""), ("delete", "delete"), ("a\"b", "\"a\\\"b\""), ("a\u{1}", "\"a\\u0001\"")] {
            assert_eq!(declare(name, None, &schema, None), format!("{written}(args: {{ [key: string]: unknown }}): Promise<unknown>;"), "{name}");
        }
    }
}
