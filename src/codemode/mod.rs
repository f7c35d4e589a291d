//! Code mode (`"toolDiscovery": "code"`): `tools/list` lists two tools. `search` finds the
//! server's tools as catalog mode does and answers with their TypeScript declarations
//! (`declarations`); `execute` runs a program against them, which the edge carries out in an
//! isolate of its own (`edge::code`), each of its tool calls the caller's own `tools/call`.
//! Here: `search`'s answer, and the program's outcome as the tool's result.

pub mod declarations;

use serde_json::{json, Map, Value};

use crate::catalog::{Gate, Server};
use crate::tools::search::Index;
use crate::tools::Tool;
use crate::upstream::reply;

/// `search`: the matches' declarations as the result's text, their names and the count of all
/// matches as its structured content.
pub fn search(server: &Server, index: &Index, gate: &Gate<'_>, apps: bool, args: &Value) -> Value {
    let (found, total) = crate::discovery::found(server, index, gate, apps, args, crate::tools::meta::CODE_DEFAULT_LIMIT);
    let text = if found.is_empty() {
        format!("// No tool matches; {} of this server's tools are yours to search. Try other words, or no query to browse.", server.tools.iter().filter(|t| gate.sees(t)).count())
    } else {
        let mut text = declarations::declare_all(found.iter().map(|t| declared(t)));
        if total > found.len() {
            text.push_str(&format!("\n// {} of {total} matches shown: narrow the query, or raise limit.", found.len()));
        }
        text
    };
    let names: Vec<&str> = found.iter().map(|t| t.name.as_str()).collect();
    json!({"content": [{"type": "text", "text": text}], "structuredContent": {"tools": names, "total": total}})
}

/// A tool's name, description (its title first, when it has one) and schemas, as declared.
fn declared(tool: &Tool) -> (&str, Option<&str>, &Value, Option<&Value>) {
    let description = tool.listing.get("description").and_then(Value::as_str).or_else(|| tool.listing.get("title").and_then(Value::as_str));
    (tool.name.as_str(), description, &tool.input_schema, tool.listing.get("outputSchema"))
}

/// `execute`'s result from what the program's isolate reported (`edge/code/run.js`, as JSON:
/// `{value, logs, dropped}`, `value` the returned value as JSON text; or `{error: {message,
/// line, column, tool}, logs, dropped}`): the value (as text and structured), then the logs; or,
/// for a fault, an error result naming its line and tool, the logs after it. Read as a `Value`,
/// field by field, rather than by a derived deserializer: the module's size.
/// `max_result_bytes` is checked again here: the isolate's own check runs in code the program
/// could have changed.
pub fn result(outcome: &Value, max_result_bytes: u64) -> Value {
    let mut logs: Vec<String> = outcome.get("logs").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect();
    let dropped = outcome.get("dropped").and_then(Value::as_u64).unwrap_or(0);
    if dropped > 0 {
        logs.push(format!("… {dropped} more lines not kept"));
    }
    let value = match (outcome.get("error"), outcome.get("value").and_then(Value::as_str)) {
        (Some(fault), _) => return failed(fault, &logs),
        (None, Some(text)) if text.len() as u64 > max_result_bytes => {
            return failed(&json!({"message": format!("the result is {} bytes, more than the limit {max_result_bytes}", text.len())}), &logs);
        }
        (None, Some(text)) => match serde_json::from_slice::<Value>(text.as_bytes()) {
            Ok(value) => value,
            Err(_) => return failed(&json!({"message": "the result is not JSON"}), &logs),
        },
        (None, None) => Value::Null,
    };
    let mut content = vec![json!({"type": "text", "text": value.to_string()})];
    if !logs.is_empty() {
        content.push(json!({"type": "text", "text": format!("console:\n{}", logs.join("\n"))}));
    }
    let mut structured = Map::new();
    structured.insert("result".into(), value);
    structured.insert("logs".into(), json!(logs));
    json!({"content": content, "structuredContent": structured})
}

/// A program's fault (`{message, line, column, tool}`) as an error result the model can act on.
fn failed(fault: &Value, logs: &[String]) -> Value {
    let message = fault.get("message").and_then(Value::as_str).unwrap_or("the program failed");
    // The isolate's error names the tool too (`tool <name>: <why>`): said once, here.
    let mut text = match fault.get("tool").and_then(Value::as_str) {
        Some(tool) => {
            let named = format!("tool {tool}: ");
            let why = message.split_once(&named).map_or(message, |(_, why)| why);
            format!("The call of {tool} failed: {why}")
        }
        None => message.to_string(),
    };
    if let Some(line) = fault.get("line").and_then(Value::as_u64) {
        text.push_str(" (line ");
        text.push_str(&line.to_string());
        if let Some(column) = fault.get("column").and_then(Value::as_u64) {
            text.push_str(", column ");
            text.push_str(&column.to_string());
        }
        text.push(')');
    }
    if !logs.is_empty() {
        text.push_str("\nconsole:\n");
        text.push_str(&logs.join("\n"));
    }
    reply::error_result(text)
}

/// A tool call the program cannot make, as the answer it receives (thrown as the call's error).
pub fn refusal(why: &str) -> String {
    json!({"error": why}).to_string()
}

/// A tool call's answer as the program receives it (`{"ok": value}` or `{"error": message}`,
/// as JSON text), from the call's JSON-RPC reply: its structured content, else its text (as
/// JSON when it is JSON), else its content as it is; an error result or a JSON-RPC error is
/// the error, which the program sees thrown.
pub fn answer(reply: &str) -> String {
    let Ok(message) = serde_json::from_slice::<Value>(reply.as_bytes()) else {
        return refusal("the tool's reply was not JSON");
    };
    if let Some(error) = message.get("error") {
        let text = error.get("message").and_then(Value::as_str).unwrap_or("error");
        return refusal(text);
    }
    let result = message.get("result").unwrap_or(&Value::Null);
    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
        return refusal("the tool asks the client for input, which a program cannot answer: call it directly");
    }
    let texts: Option<Vec<&str>> = result.get("content").and_then(Value::as_array).map(|c| c.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect());
    let text = texts.as_ref().map(|t| t.join("\n")).unwrap_or_default();
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return refusal(&text);
    }
    let value = match result.get("structuredContent") {
        Some(structured) => structured.clone(),
        None if texts.as_ref().is_some_and(|t| t.len() == result.get("content").and_then(Value::as_array).map_or(0, Vec::len)) => serde_json::from_slice::<Value>(text.as_bytes()).unwrap_or(Value::String(text)),
        None => result.get("content").cloned().unwrap_or(Value::Null),
    };
    json!({"ok": value}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_what_a_program_reads() {
        let reply = |result: Value| json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string();
        assert_eq!(answer(&reply(json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "structuredContent": {"b": 2}}))), r#"{"ok":{"b":2}}"#);
        assert_eq!(answer(&reply(json!({"content": [{"type": "text", "text": "[1,2]"}]}))), r#"{"ok":[1,2]}"#);
        assert_eq!(answer(&reply(json!({"content": [{"type": "text", "text": "plain"}, {"type": "text", "text": "two"}]}))), r#"{"ok":"plain\ntwo"}"#);
        assert_eq!(answer(&reply(json!({"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}))), r#"{"ok":[{"type":"image","data":"AA==","mimeType":"image/png"}]}"#);
        assert_eq!(answer(&reply(json!({"content": [{"type": "text", "text": "HTTP 404: no such repo"}], "isError": true}))), r#"{"error":"HTTP 404: no such repo"}"#);
        assert_eq!(answer(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool \"x\""}}"#), r#"{"error":"unknown tool \"x\""}"#);
        assert_eq!(answer(&reply(json!({"resultType": "input_required", "inputRequests": {}}))), r#"{"error":"the tool asks the client for input, which a program cannot answer: call it directly"}"#);
        assert_eq!(answer("nope"), r#"{"error":"the tool's reply was not JSON"}"#);
    }

    #[test]
    fn a_result_carries_value_and_logs_and_a_fault_its_line_and_tool() {
        let ok = result(&json!({"value": "{\"n\":1}", "logs": ["hi"], "dropped": 2}), 100);
        assert_eq!(ok, json!({"content": [{"type": "text", "text": "{\"n\":1}"}, {"type": "text", "text": "console:\nhi\n… 2 more lines not kept"}], "structuredContent": {"result": {"n": 1}, "logs": ["hi", "… 2 more lines not kept"]}}));
        let none = result(&json!({"logs": []}), 100);
        assert_eq!(none["structuredContent"], json!({"result": null, "logs": []}));
        let big = result(&json!({"value": "\"0123456789\""}), 5);
        assert_eq!(big["content"][0]["text"], "the result is 12 bytes, more than the limit 5");
        let failed = result(&json!({"error": {"message": "tool repos_get: HTTP 404", "line": 3, "tool": "repos_get"}, "logs": ["before"]}), 100);
        assert_eq!((failed["isError"].as_bool(), failed["content"][0]["text"].as_str()), (Some(true), Some("The call of repos_get failed: HTTP 404 (line 3)\nconsole:\nbefore")));
        let syntax = json!({"error": {"message": "SyntaxError: Unexpected token", "line": 2, "column": 7}});
        assert_eq!(result(&syntax, 100)["content"][0]["text"], "SyntaxError: Unexpected token (line 2, column 7)");
        assert_eq!(result(&json!({"value": "{"}), 100)["content"][0]["text"], "the result is not JSON");
        assert_eq!(result(&Value::Null, 100)["structuredContent"], json!({"result": null, "logs": []}));
    }
}
