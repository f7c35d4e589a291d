//! The OpenTelemetry semantic conventions' names that mcp-edge's spans carry (MCP, GenAI,
//! JSON-RPC, HTTP, URL, network, error), written once; and `url.full` as a span may show it.

use crate::redact::Redactor;

pub const MCP_METHOD_NAME: &str = "mcp.method.name";
pub const MCP_SESSION_ID: &str = "mcp.session.id";
pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
pub const MCP_RESOURCE_URI: &str = "mcp.resource.uri";
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
pub const GEN_AI_PROMPT_NAME: &str = "gen_ai.prompt.name";
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
pub const GEN_AI_TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
pub const GEN_AI_TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";
/// `gen_ai.operation.name` of a tool call.
pub const EXECUTE_TOOL: &str = "execute_tool";
pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
pub const RPC_RESPONSE_STATUS_CODE: &str = "rpc.response.status_code";
pub const ERROR_TYPE: &str = "error.type";
/// `error.type` of a tool result with `isError`, as the MCP conventions name it.
pub const TOOL_ERROR: &str = "tool_error";
pub const NETWORK_TRANSPORT: &str = "network.transport";
pub const NETWORK_PROTOCOL_NAME: &str = "network.protocol.name";
pub const SERVER_ADDRESS: &str = "server.address";
pub const SERVER_PORT: &str = "server.port";
pub const CLIENT_ADDRESS: &str = "client.address";
pub const HTTP_REQUEST_METHOD: &str = "http.request.method";
pub const HTTP_RESPONSE_STATUS_CODE: &str = "http.response.status_code";
pub const HTTP_REQUEST_RESEND_COUNT: &str = "http.request.resend_count";
pub const URL_FULL: &str = "url.full";
pub const MESSAGING_SYSTEM: &str = "messaging.system";
pub const MESSAGING_OPERATION_TYPE: &str = "messaging.operation.type";
pub const MESSAGING_DESTINATION_NAME: &str = "messaging.destination.name";
pub const SERVICE_NAME: &str = "service.name";
pub const SERVICE_VERSION: &str = "service.version";
/// mcp-edge's own: the configured server (its name) a span belongs to.
pub const MCP_EDGE_SERVER: &str = "mcp_edge.server";
/// mcp-edge's own: a task's id and status on the spans of its lifecycle.
pub const MCP_EDGE_TASK_ID: &str = "mcp_edge.task.id";
pub const MCP_EDGE_TASK_STATUS: &str = "mcp_edge.task.status";
/// What a redacted part of `url.full` reads, as the HTTP conventions write it.
pub const REDACTED: &str = "REDACTED";

/// `url.full` as a span may carry it: credentials in the authority and every query value
/// replaced by `REDACTED` (a query value is where an API key usually travels, and which ones
/// are secret is not knowable), the fragment dropped, and the deployment's secrets redacted
/// from what is left (a secret in the path). A URL that does not parse is shown as `REDACTED`.
pub fn url_full(url: &str, secrets: &Redactor) -> String {
    match crate::weburl::WebUrl::parse(url) {
        Ok(parsed) => url_full_of(&parsed, secrets),
        Err(_) => REDACTED.to_string(),
    }
}

/// [`url_full`] of a URL already parsed.
pub fn url_full_of(parsed: &crate::weburl::WebUrl, secrets: &Redactor) -> String {
    let text = parsed.as_str();
    let authority_start = text.find("://").map_or(0, |i| i + 3);
    let mut shown = String::with_capacity(text.len());
    shown.push_str(&text[..authority_start]);
    let rest = &text[authority_start..];
    let rest = match (parsed.has_credentials(), rest.split_once('@')) {
        (true, Some((_, after))) => {
            shown.push_str("REDACTED:REDACTED@");
            after
        }
        _ => rest,
    };
    let rest = rest.split('#').next().unwrap_or_default();
    match rest.split_once('?') {
        Some((before, query)) => {
            shown.push_str(before);
            shown.push('?');
            let pairs: Vec<String> = query.split('&').map(|pair| match pair.split_once('=') {
                Some((name, _)) => format!("{name}={REDACTED}"),
                None if pair.is_empty() => String::new(),
                None => pair.to_string(),
            }).collect();
            shown.push_str(&pairs.join("&"));
        }
        None => shown.push_str(rest),
    }
    secrets.redact_owned(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_full_hides_credentials_query_values_and_secrets() {
        let secrets = Redactor::new(["s3cr3t-path-key"]);
        assert_eq!(url_full("https://user:pw@api.example.com:8443/v1/s3cr3t-path-key/x?api_key=abc&q=hello&flag#frag", &secrets), "https://REDACTED:REDACTED@api.example.com:8443/v1/[redacted]/x?api_key=REDACTED&q=REDACTED&flag");
        assert_eq!(url_full("http://127.0.0.1:9000/echo", &Redactor::default()), "http://127.0.0.1:9000/echo");
        assert_eq!(url_full("not a url", &secrets), "REDACTED");
        // A secret spelled percent-encoded in the path is found too.
        assert!(!url_full("https://h.example/a%73%33cr3t-path-key", &secrets).contains("cr3t-path-key"));
    }
}
