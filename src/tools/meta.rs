//! Catalog mode's own three tools and code mode's own two as `tools/list` shows them: their
//! names, input and output schemas, and listings. The configuration lists them in such a
//! server's place; `discovery` answers catalog mode's calls, `codemode` code mode's.

use serde_json::{json, Value};

/// How many tools a search returns unless asked for another number.
pub const DEFAULT_LIMIT: usize = 20;
/// And code mode's: each match is a whole declaration, its arguments and result typed.
pub const CODE_DEFAULT_LIMIT: usize = 5;
/// At most this many: the input schema's `maximum`, which enforces it (the tests hold the two equal).
#[cfg(test)]
const MAX_LIMIT: u64 = 100;

/// Catalog mode's own tools and code mode's, each mode's in the order `tools/list` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaTool {
    Search,
    Describe,
    Call,
    /// Code mode's `search`: the matches as TypeScript declarations.
    Declare,
    /// Code mode's `execute`: a program run against the tools.
    Execute,
}

impl MetaTool {
    pub const ALL: [MetaTool; 3] = [MetaTool::Search, MetaTool::Describe, MetaTool::Call];
    pub const CODE: [MetaTool; 2] = [MetaTool::Declare, MetaTool::Execute];

    pub fn name(self) -> &'static str {
        match self {
            MetaTool::Search => "search_tools",
            MetaTool::Describe => "describe_tool",
            MetaTool::Call => "call_tool",
            MetaTool::Declare => "search",
            MetaTool::Execute => "execute",
        }
    }

    /// One of catalog mode's tools by name.
    pub fn named(name: &str) -> Option<MetaTool> {
        MetaTool::ALL.into_iter().find(|m| m.name() == name)
    }

    /// One of code mode's tools by name.
    pub fn coded(name: &str) -> Option<MetaTool> {
        MetaTool::CODE.into_iter().find(|m| m.name() == name)
    }

    /// Its arguments' schema, enforced like any tool's. Written as JSON text, parsed when asked:
    /// a `json!` of the same nested objects compiles to some 10 KB of wasm.
    pub fn input_schema(self) -> Value {
        parse(match self {
            MetaTool::Search => r#"{"type":"object","properties":{"query":{"type":"string","description":"What the tool should do, in a few words, e.g. \"list issues of a repository\". Leave it out to browse."},"tags":{"type":"array","items":{"type":"string"},"description":"Only tools that have every one of these tags."},"limit":{"type":"integer","minimum":1,"maximum":100,"default":20,"description":"At most this many tools."}},"additionalProperties":false}"#,
            MetaTool::Describe => r#"{"type":"object","properties":{"name":{"type":"string","description":"A tool's name, exactly as search_tools returned it."}},"required":["name"],"additionalProperties":false}"#,
            MetaTool::Call => r#"{"type":"object","properties":{"name":{"type":"string","description":"A tool's name, exactly as search_tools returned it."},"arguments":{"type":"object","description":"The tool's arguments, as its inputSchema (from describe_tool) asks."}},"required":["name"],"additionalProperties":false}"#,
            MetaTool::Declare => r#"{"type":"object","properties":{"query":{"type":"string","description":"What the tools should do, in a few words, e.g. \"list issues of a repository\". Leave it out to browse."},"tags":{"type":"array","items":{"type":"string"},"description":"Only tools that have every one of these tags."},"limit":{"type":"integer","minimum":1,"maximum":20,"default":5,"description":"At most this many tools, each declared whole."}},"additionalProperties":false}"#,
            MetaTool::Execute => r#"{"type":"object","properties":{"code":{"type":"string","minLength":1,"contentMediaType":"text/javascript","description":"The body of an async JavaScript function that receives `tools` (as search declares it) and returns a JSON value, e.g. `const r = await tools.repos_get({owner: \"o\", repo: \"r\"}); return r.id;`. console.log lines come back too."}},"required":["code"],"additionalProperties":false}"#,
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
            MetaTool::Declare => (
                "Search tools",
                "Finds this server's tools by what they do, as TypeScript declarations: each an async method of the \
                 `tools` object execute's code receives, its arguments and result typed. Search, then write one program \
                 for execute that does the whole task. Best matches first; without query and tags, in configured order.",
            ),
            MetaTool::Execute => (
                "Run a program",
                "Runs JavaScript against this server's tools: `code` is the body of an async function that receives \
                 `tools` (as search declares them), awaits their calls and returns a JSON value. Chain and filter calls \
                 in one program rather than calling execute many times. A sandbox without network, bounded in time and \
                 memory; console.log lines come back with the result, and an error names its line and tool.",
            ),
        };
        let annotations = match self {
            MetaTool::Search | MetaTool::Describe | MetaTool::Declare => json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}),
            MetaTool::Call | MetaTool::Execute => json!({"readOnlyHint": false, "openWorldHint": true}),
        };
        let mut listing = json!({"name": self.name(), "title": title, "description": description, "inputSchema": self.input_schema()});
        if let (Some(schema), Some(fields)) = (self.output_schema(), listing.as_object_mut()) {
            fields.insert("outputSchema".into(), schema);
        }
        if let Some(fields) = listing.as_object_mut() {
            fields.insert("annotations".into(), annotations);
            // A program may run long: a client may run it as a task.
            if self == MetaTool::Execute {
                fields.insert("execution".into(), json!({"taskSupport": "optional"}));
            }
        }
        listing
    }

    /// The shape of its structured result, where that is fixed (`call_tool`'s is the called tool's).
    fn output_schema(self) -> Option<Value> {
        Some(parse(match self {
            MetaTool::Search => r#"{"type":"object","properties":{"tools":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["name"]}},"total":{"type":"integer","minimum":0}},"required":["tools","total"]}"#,
            MetaTool::Describe => r#"{"type":"object","properties":{"name":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"},"inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{"type":"object"},"tags":{"type":"array","items":{"type":"string"}}},"required":["name","inputSchema"]}"#,
            MetaTool::Declare => r#"{"type":"object","properties":{"tools":{"type":"array","items":{"type":"string"}},"total":{"type":"integer","minimum":0}},"required":["tools","total"]}"#,
            MetaTool::Execute => r#"{"type":"object","properties":{"result":{"description":"What the code returned."},"logs":{"type":"array","items":{"type":"string"}}},"required":["logs"]}"#,
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
        for tool in MetaTool::ALL.into_iter().chain(MetaTool::CODE) {
            assert!(tool.input_schema().is_object(), "{tool:?}");
            assert_ne!(tool.output_schema(), Some(Value::Null), "{tool:?}");
        }
        let limit = &MetaTool::Search.input_schema()["properties"]["limit"];
        assert_eq!((limit["maximum"].as_u64(), limit["default"].as_u64()), (Some(MAX_LIMIT), Some(DEFAULT_LIMIT as u64)));
        let limit = &MetaTool::Declare.input_schema()["properties"]["limit"];
        assert_eq!(limit["default"].as_u64(), Some(CODE_DEFAULT_LIMIT as u64));
    }
}
