//! How a client gets in, in words and as copy-ready settings: the auth mode of a server, what
//! Claude's and ChatGPT's connectors will see, and the settings of n8n's two MCP nodes, Cursor,
//! VS Code and `curl`. Never a secret and never a secret's name: a credential is always the
//! placeholder [`TOKEN`], and tool URLs are not looked at.

use serde_json::Value;

use crate::auth::{Auth, Source};
use crate::catalog::{Endpoint, Server};
use crate::oauth::{AuthServer, SignIn};

/// What every snippet holds where the caller's credential goes.
pub const TOKEN: &str = "<your token>";

/// One client's settings: its name, a line of advice, and the text to copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    pub client: &'static str,
    pub note: String,
    pub text: String,
}

/// The server's URLs on `origin`: Streamable HTTP, the stream alias, legacy SSE when served.
pub struct Urls {
    pub mcp: String,
    pub stream: String,
    pub sse: Option<String>,
    pub messages: Option<String>,
}

impl Urls {
    pub fn of(server: &Server, origin: &str) -> Urls {
        let at = |endpoint: Endpoint| server.endpoints.iter().find(|(_, e)| *e == endpoint).map(|(route, _)| format!("{origin}{}", route.as_str()));
        Urls { mcp: format!("{origin}{}", server.route.as_str()), stream: format!("{origin}{}", server.stream_route.as_str()), sse: at(Endpoint::LegacySse), messages: at(Endpoint::LegacyMessages) }
    }
}

/// The ways in a server accepts, one phrase each; empty: no auth.
pub fn auth_modes(auth: Option<&Auth>, oauth: Option<&AuthServer>) -> Vec<String> {
    let Some(auth) = auth else { return Vec::new() };
    let mut modes = Vec::new();
    if !auth.tokens.is_empty() {
        modes.push("static tokens".to_string());
    }
    if auth.introspection.is_some() {
        modes.push("tokens your application checks (introspection)".to_string());
    }
    if auth.jwt.is_some() {
        modes.push("OAuth access tokens (JWT) from an external authorization server".to_string());
    }
    if auth.oauth {
        modes.push(format!("mcp-edge's own OAuth sign-in: {}", sign_in(oauth)));
    }
    if !auth.required_roles.is_empty() {
        modes.push(format!("needs the role {}", auth.required_roles.join(" or ")));
    }
    modes
}

/// Who the sign-in page asks, in words.
fn sign_in(oauth: Option<&AuthServer>) -> &'static str {
    match oauth.map(|o| &o.sign_in) {
        Some(SignIn::Users(_)) => "a username and password",
        Some(SignIn::Oidc(_)) => "an identity provider",
        Some(SignIn::Introspection { .. }) => "your application's session",
        None => "not configured",
    }
}

/// The header a client that sends one puts its credential in, with the placeholder.
pub fn header(auth: Option<&Auth>) -> Option<(String, String)> {
    let auth = auth?;
    Some(match auth.sources.first() {
        Some(Source::Header(name)) => (name.clone(), TOKEN.to_string()),
        Some(Source::Cookie(name)) => ("Cookie".to_string(), format!("{name}={TOKEN}")),
        Some(Source::Bearer) | None => ("Authorization".to_string(), format!("Bearer {TOKEN}")),
    })
}

/// What Claude's and ChatGPT's custom connectors see when they are given the URL.
pub fn connector_note(auth: Option<&Auth>, oauth: Option<&AuthServer>) -> String {
    match auth {
        None => "Add the URL as a custom connector. There is no sign-in.".into(),
        Some(a) if a.oauth => format!("Add the URL as a custom connector. Claude and ChatGPT register themselves and open mcp-edge's sign-in page, which asks for {}.", sign_in(oauth)),
        Some(a) if a.is_oauth() => "Add the URL as a custom connector. Claude and ChatGPT find the authorization server in this server's metadata and sign in there.".into(),
        Some(_) => "Claude's and ChatGPT's custom connectors cannot send a static token: they sign in with OAuth. Give this server \"auth\": {\"oauth\": true} and a top-level \"oauth\" section (docs/oauth.md), or use a client that sends a header.".into(),
    }
}

/// Every client's settings for `server`, on `urls`.
pub fn snippets(server: &Server, urls: &Urls, oauth: Option<&AuthServer>) -> Vec<Snippet> {
    let auth = server.auth.as_ref();
    let header = header(auth);
    let key = config_key(&server.name);
    let mut out = Vec::new();

    let mut n8n_nodes = format!("Credential type:    MCP Client (HTTP Streamable) API\nHTTP Stream URL:    {}\n", urls.mcp);
    if let Some((name, value)) = &header {
        n8n_nodes.push_str(&format!("Additional Headers: {name}={value}\n"));
    }
    n8n_nodes.push_str("\nThen, in the MCP Client node:\nConnection Type:    HTTP Streamable");
    out.push(Snippet { client: "n8n-nodes-mcp", note: "The community node: create a credential of this type, then choose it in the node.".into(), text: n8n_nodes });

    let n8n_auth = match &header {
        None => "Authentication:   None".to_string(),
        Some((name, value)) if name == "Authorization" => format!("Authentication:   Bearer Auth (its credential's Bearer Token: {})", value.trim_start_matches("Bearer ")),
        Some((name, value)) => format!("Authentication:   Header Auth (its credential's Name: {name}, Value: {value})"),
    };
    let mut builtin = format!("Endpoint:         {}\nServer Transport: HTTP Streamable\n{n8n_auth}", urls.mcp);
    if let Some(sse) = &urls.sse {
        builtin.push_str(&format!("\n\nor, with the SSE transport:\nEndpoint:         {sse}\nServer Transport: Server Sent Events (Deprecated)\n{n8n_auth}"));
    }
    out.push(Snippet { client: "n8n MCP Client Tool", note: "n8n's built-in node, attached to an AI Agent. n8n calls from its server, so no CORS setting is needed.".into(), text: builtin });

    out.push(Snippet { client: "Claude and ChatGPT", note: connector_note(auth, oauth), text: urls.mcp.clone() });

    // mcp.json by hand, in the layout editors write it; each string JSON-escaped.
    let q = |text: &str| Value::String(text.to_string()).to_string();
    let headers = header.as_ref().map(|(name, value)| format!(",\n      \"headers\": {{ {}: {} }}", q(name), q(value))).unwrap_or_default();
    let cursor = format!("{{\n  \"mcpServers\": {{\n    {}: {{\n      \"url\": {}{headers}\n    }}\n  }}\n}}", q(&key), q(&urls.mcp));
    let vscode = format!("{{\n  \"servers\": {{\n    {}: {{\n      \"type\": \"http\",\n      \"url\": {}{headers}\n    }}\n  }}\n}}", q(&key), q(&urls.mcp));
    out.push(Snippet { client: "Cursor", note: "~/.cursor/mcp.json, or .cursor/mcp.json in a project.".into(), text: cursor });
    out.push(Snippet { client: "VS Code", note: ".vscode/mcp.json in a workspace.".into(), text: vscode });

    let init = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{}","params":{{"protocolVersion":"{}","capabilities":{{}},"clientInfo":{{"name":"curl","version":"1"}}}}}}"#, crate::method::Method::Initialize, crate::versions::LATEST_VERSION);
    let mut curl = format!("curl -i -X POST {} \\\n  -H 'Content-Type: application/json' \\\n  -H 'Accept: application/json, text/event-stream' \\\n", shell_quote(&urls.mcp));
    if let Some((name, value)) = &header {
        curl.push_str(&format!("  -H {} \\\n", shell_quote(&format!("{name}: {value}"))));
    }
    curl.push_str(&format!("  -d {}", shell_quote(&init)));
    let curl_note = if server.stateless.is_some() { "An initialize request. This server is stateless: every request stands alone." } else { "An initialize request; the session id comes back in the Mcp-Session-Id header." };
    out.push(Snippet { client: "curl", note: curl_note.into(), text: curl });
    out
}

/// A name for the server in `mcp.json`: its name, as a key clients accept.
fn config_key(name: &str) -> String {
    let key: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
    if key.is_empty() { "mcp-edge".into() } else { key }
}

/// A word for a POSIX shell: single-quoted, with `'` written as `'\''`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(extra: &str) -> (crate::catalog::Catalog, Server) {
        let text = format!(r#"{{"servers":[{{"name":"my tools","version":"1"{extra}}}],"oauth":{{"signIn":{{"users":[{{"username":"a","passwordSecret":"PW_SECRET"}}]}}}}}}"#);
        let catalog = crate::config::load(&text).unwrap();
        let server = catalog.servers[0].as_ref().clone();
        (catalog, server)
    }

    fn text_of(snippets: &[Snippet], client: &str) -> String {
        snippets.iter().find(|s| s.client == client).map(|s| format!("{}\n{}", s.note, s.text)).unwrap()
    }

    #[test]
    fn an_open_server_needs_no_header() {
        let (catalog, s) = server("");
        let urls = Urls::of(&s, "https://x.test");
        assert_eq!((urls.mcp.as_str(), urls.stream.as_str(), urls.sse.as_deref()), ("https://x.test/mcp", "https://x.test/stream", Some("https://x.test/sse")));
        let all = snippets(&s, &urls, catalog.oauth.as_ref());
        assert_eq!(
            text_of(&all, "n8n-nodes-mcp"),
            "The community node: create a credential of this type, then choose it in the node.\nCredential type:    MCP Client (HTTP Streamable) API\nHTTP Stream URL:    https://x.test/mcp\n\nThen, in the MCP Client node:\nConnection Type:    HTTP Streamable"
        );
        assert!(text_of(&all, "n8n MCP Client Tool").contains("Endpoint:         https://x.test/sse\nServer Transport: Server Sent Events (Deprecated)\nAuthentication:   None"));
        assert_eq!(text_of(&all, "Cursor").lines().nth(1), Some("{"));
        assert!(text_of(&all, "Cursor").ends_with("{\n  \"mcpServers\": {\n    \"my-tools\": {\n      \"url\": \"https://x.test/mcp\"\n    }\n  }\n}"));
        assert!(text_of(&all, "VS Code").contains("\"type\": \"http\""));
        assert!(text_of(&all, "Claude and ChatGPT").contains("no sign-in"));
        assert!(!all.iter().any(|s| s.text.contains(TOKEN)));
    }

    #[test]
    fn a_token_server_gets_placeholders_and_the_oauth_advice() {
        let (catalog, s) = server(r#","legacySse":false,"auth":{"from":["header:X-Api-Key"],"tokens":[{"secret":"BOT_TOKEN","subject":"bot"}]}"#);
        let all = snippets(&s, &Urls::of(&s, "http://127.0.0.1:8787"), catalog.oauth.as_ref());
        assert!(text_of(&all, "n8n-nodes-mcp").contains("Additional Headers: x-api-key=<your token>"));
        let builtin = text_of(&all, "n8n MCP Client Tool");
        assert!(builtin.contains("Header Auth (its credential's Name: x-api-key, Value: <your token>)") && !builtin.contains("/sse"));
        assert!(text_of(&all, "Claude and ChatGPT").contains("cannot send a static token") && text_of(&all, "Claude and ChatGPT").contains("docs/oauth.md"));
        assert!(text_of(&all, "curl").contains("  -H 'x-api-key: <your token>' \\\n"));
        assert_eq!(auth_modes(s.auth.as_ref(), catalog.oauth.as_ref()), ["static tokens"]);
        // The mcp.json snippets are JSON, with the header where editors read it.
        let json = |client: &str| -> Value { serde_json::from_str(&all.iter().find(|s| s.client == client).unwrap().text).unwrap() };
        assert_eq!(json("Cursor")["mcpServers"]["my-tools"]["headers"]["x-api-key"], "<your token>");
        assert_eq!(json("VS Code")["servers"]["my-tools"], serde_json::json!({"type": "http", "url": "http://127.0.0.1:8787/mcp", "headers": {"x-api-key": "<your token>"}}));
        assert!(!all.iter().any(|s| s.text.contains("BOT_TOKEN") || s.note.contains("BOT_TOKEN")));
    }

    #[test]
    fn a_signed_in_server_names_its_sign_in() {
        let (catalog, s) = server(r#","auth":{"oauth":true,"requiredRoles":["staff"]}"#);
        let all = snippets(&s, &Urls::of(&s, "https://x.test"), catalog.oauth.as_ref());
        assert!(text_of(&all, "Claude and ChatGPT").contains("open mcp-edge's sign-in page, which asks for a username and password"));
        assert!(text_of(&all, "n8n MCP Client Tool").contains("Bearer Auth (its credential's Bearer Token: <your token>)"));
        assert_eq!(auth_modes(s.auth.as_ref(), catalog.oauth.as_ref()), ["mcp-edge's own OAuth sign-in: a username and password", "needs the role staff"]);
        assert!(!all.iter().any(|s| s.text.contains("PW_SECRET")));
    }

    #[test]
    fn shell_words_survive_quotes() {
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(config_key("a b/c"), "a-b-c");
    }
}
