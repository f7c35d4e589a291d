//! Catalog mode's own three tools as `tools/list` shows them: their names, input and output
//! schemas, and listings. The configuration lists them in a catalog-mode server's place;
//! `discovery` answers their calls.

use serde_json::{json, Value};

/// How many tools a search returns unless asked for another number.
pub const DEFAULT_LIMIT: usize = 20;
/// At most this many: the input schema's `maximum`, which enforces it (the tests hold the two equal).
#[cfg(test)]
const MAX_LIMIT: u64 = 100;

/// Catalog mode's own tools, in the order `tools/list` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaTool {
    Search,
    Describe,
    Call,
}

impl MetaTool {
    pub const ALL: [MetaTool; 3] = [MetaTool::Search, MetaTool::Describe, MetaTool::Call];

    pub fn name(self) -> &'static str {
        match self {
            MetaTool::Search => "search_tools",
            MetaTool::Describe => "describe_tool",
            MetaTool::Call => "call_tool",
        }
    }

    pub fn named(name: &str) -> Option<MetaTool> {
        MetaTool::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Its arguments' schema, enforced like any tool's. Written as JSON text, parsed when asked:
    /// a `json!` of the same nested objects compiles to some 10 KB of wasm.
    pub fn input_schema(self) -> Value {
        parse(match self {
            MetaTool::Search => r#"{"type":"object","properties":{"query":{"type":"string","description":"What the tool should do, in a few words, e.g. \"list issues of a repository\". Leave it out to browse."},"tags":{"type":"array","items":{"type":"string"},"description":"Only tools that have every one of these tags."},"limit":{"type":"integer","minimum":1,"maximum":100,"default":20,"description":"At most this many tools."}},"additionalProperties":false}"#,
            MetaTool::Describe => r#"{"type":"object","properties":{"name":{"type":"string","description":"A tool's name, exactly as search_tools returned it."}},"required":["name"],"additionalProperties":false}"#,
            MetaTool::Call => r#"{"type":"object","properties":{"name":{"type":"string","description":"A tool's name, exactly as search_tools returned it."},"arguments":{"type":"object","description":"The tool's arguments, as its inputSchema (from describe_tool) asks."}},"required":["name"],"additionalProperties":false}"#,
        })
    }

    /// Its `tools/list` entry.
    pub fn listing(self) -> Value {
        let (title, description) = match self {
            MetaTool::Search => (
                "Search tools",
                "Finds this server's tools by what they do. The server has too many tools to list them all: search here first, \
                 then call describe_tool with a name found to read that tool's inputSchema, then call_tool with the name and \
                 arguments that fit it. Best matches come first, with each tool's name, title, first sentence and tags, and \
                 total counts every match. Without query and tags, lists the tools in their configured order.",
            ),
            MetaTool::Describe => (
                "Describe a tool",
                "Shows one tool's full definition: description, inputSchema (the arguments call_tool must pass), \
                 outputSchema, annotations and tags. Find names with search_tools.",
            ),
            MetaTool::Call => (
                "Call a tool",
                "Calls a tool by name with its arguments, and returns that tool's own result. Find the name with \
                 search_tools and the arguments it takes with describe_tool.",
            ),
        };
        let annotations = match self {
            MetaTool::Search | MetaTool::Describe => json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}),
            MetaTool::Call => json!({"readOnlyHint": false, "openWorldHint": true}),
        };
        let mut listing = json!({"name": self.name(), "title": title, "description": description, "inputSchema": self.input_schema()});
        if let (Some(schema), Some(fields)) = (self.output_schema(), listing.as_object_mut()) {
            fields.insert("outputSchema".into(), schema);
        }
        if let Some(fields) = listing.as_object_mut() {
            fields.insert("annotations".into(), annotations);
        }
        listing
    }

    /// The shape of its structured result, where that is fixed (`call_tool`'s is the called tool's).
    fn output_schema(self) -> Option<Value> {
        Some(parse(match self {
            MetaTool::Search => r#"{"type":"object","properties":{"tools":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["name"]}},"total":{"type":"integer","minimum":0}},"required":["tools","total"]}"#,
            MetaTool::Describe => r#"{"type":"object","properties":{"name":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"},"inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{"type":"object"},"tags":{"type":"array","items":{"type":"string"}}},"required":["name","inputSchema"]}"#,
            MetaTool::Call => return None,
        }))
    }
}

/// A schema written as JSON text in this file (the tests parse each one).
fn parse(text: &str) -> Value {
    serde_json::from_slice(text.as_bytes()).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schemas_are_json_and_name_the_limits() {
        for tool in MetaTool::ALL {
            assert!(tool.input_schema().is_object(), "{tool:?}");
            assert_ne!(tool.output_schema(), Some(Value::Null), "{tool:?}");
        }
        let limit = &MetaTool::Search.input_schema()["properties"]["limit"];
        assert_eq!((limit["maximum"].as_u64(), limit["default"].as_u64()), (Some(MAX_LIMIT), Some(DEFAULT_LIMIT as u64)));
    }
}
