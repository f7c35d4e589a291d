//! The status page's HTML: every server with its URL, auth mode, transports and connect
//! settings, and for servers without `auth` their tools (with an argument table), resources and
//! prompts. One inline style block, allowed by its hash, and one script from this origin (the
//! "Try a tool" panels, `script.rs`), allowed by its URL; no third-party asset. Every configured
//! string is escaped on its way in.

use serde_json::Value;

use super::account::{self, Viewer};
use super::connect::{self, Urls};
use super::schema;
use crate::catalog::{Catalog, ConsoleAccess, Server, ToolDiscovery};
use crate::html::escape;
use crate::tools::Tool;

const STYLE: &str = "*{box-sizing:border-box}\
body{margin:0;font:15px/1.5 system-ui,-apple-system,'Segoe UI',sans-serif;background:#f4f5f7;color:#1d2330}\
.wrap{max-width:64rem;margin:0 auto;padding:0 1.25rem}\
header.top{background:#1d2330;color:#fff;padding:1.25rem 0;margin-bottom:1.5rem}\
header.top h1{margin:0;font-size:1.4rem}header.top p{margin:.2rem 0 0;color:#c8ccd6}header.top code{background:#ffffff1f;color:#fff}\
nav.toc{display:flex;flex-wrap:wrap;gap:.5rem;margin-bottom:1.25rem}\
nav.toc a{background:#fff;border:1px solid #dde0e6;border-radius:999px;padding:.15rem .75rem;color:#2454d6;text-decoration:none;font-size:.9rem}\
section.server{background:#fff;border-radius:12px;box-shadow:0 1px 4px #0000001a;padding:1.5rem;margin-bottom:1.5rem}\
.head{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem}\
h2{margin:0 .25rem 0 0;font-size:1.35rem}\
h3{font-size:1.05rem;margin:1.5rem 0 .5rem;padding-top:1rem;border-top:1px solid #eceef2}\
h4{margin:0 0 .25rem;font-size:1rem}\
.badge{font-size:.8rem;padding:.1rem .6rem;border-radius:999px;background:#eceef2;color:#3b4252}\
.open{background:#e3f4e8;color:#1d6b36}.lock{background:#fff1db;color:#8a5a00}\
code,pre{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}\
code{background:#f0f2f5;padding:.05rem .3rem;border-radius:4px;overflow-wrap:anywhere}\
pre{background:#1d2330;color:#e8eaf0;padding:.7rem .9rem;border-radius:8px;margin:.25rem 0 0;white-space:pre-wrap;overflow-wrap:anywhere}\
dl.facts{display:grid;grid-template-columns:7.5rem 1fr;gap:.4rem 1rem;margin:1rem 0}\
dt{color:#5b6270;font-weight:600}dd{margin:0}dd ul{margin:0;padding-left:1.1rem}\
.muted{color:#5b6270}.pre{white-space:pre-line}\
.locked{background:#fff8ea;border:1px solid #f1dcae;border-radius:8px;padding:.6rem .8rem}\
summary{cursor:pointer}details.connect>summary{font-weight:600;margin:.75rem 0 .5rem}\
.clients{display:grid;gap:1rem}\
.client p{margin:.1rem 0 .3rem;color:#5b6270;font-size:.88rem}\
article.tool{border:1px solid #e3e6eb;border-radius:10px;padding:.9rem 1rem;margin:.75rem 0}\
.tag{display:inline-block;font-size:.75rem;padding:0 .5rem;border-radius:999px;background:#eaf0ff;color:#2454d6;margin:0 .3rem .3rem 0}\
.tag.role{background:#f3e8ff;color:#6b21a8}\
table{border-collapse:collapse;width:100%;font-size:.9rem;margin:.5rem 0;table-layout:fixed}\
th,td{text-align:left;vertical-align:top;padding:.35rem .6rem;border-bottom:1px solid #eceef2;overflow-wrap:anywhere}\
.args th:nth-child(1){width:27%}.args th:nth-child(2){width:18%}.args th:nth-child(4){width:22%}\
.entries th:nth-child(1){width:30%}.entries th:nth-child(4){width:16%}.prompts th:nth-child(1){width:25%}\
th{background:#f7f8fa;color:#5b6270;font-weight:600}\
.req{font-size:.72rem;color:#b42318;font-weight:600;margin-left:.35rem}\
details.raw summary{color:#5b6270;font-size:.85rem}\
footer{color:#5b6270;font-size:.85rem;padding-bottom:2rem}\
.try{border:1px solid #dbe3f7;background:#f8faff;border-radius:10px;padding:0 1rem .6rem;margin-top:1rem}\
.try p.trace{margin:.3rem 0;font-size:.85rem}.try h3{border:0;padding-top:.9rem;margin-top:0}.try small{display:block;color:#5b6270;font-size:.82rem}\
.row{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem;margin:.5rem 0}.row label{font-weight:600;min-width:7rem}.row label.inline{font-weight:400;min-width:0}\
.try input,.try select,.try textarea{font:inherit;padding:.3rem .45rem;border:1px solid #c9ced8;border-radius:6px;background:#fff}\
.row input,.row select{flex:1;min-width:12rem}.row input[type=checkbox]{flex:none;min-width:0}\
.try textarea{width:100%;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}\
.field{margin:.6rem 0}.field label{display:block}.field input,.field select{width:100%}.kind{font-size:.75rem;color:#5b6270;margin-left:.4rem}\
button{font:inherit;padding:.3rem .9rem;border-radius:6px;border:1px solid #2454d6;background:#2454d6;color:#fff;cursor:pointer}\
button.cancel{background:#fff;color:#b42318;border-color:#e5b4ae}button:disabled{opacity:.45;cursor:default}\
progress{width:100%}ol.log{font:13px/1.45 ui-monospace,Menlo,Consolas,monospace;background:#1d2330;color:#e8eaf0;border-radius:8px;padding:.5rem .5rem .5rem 2.2rem}\
.level{color:#9ecbff;font-weight:600}\
.result{border:1px solid #cfe8d6;background:#f3fbf5;border-radius:8px;padding:.4rem .8rem;margin:.5rem 0}\
.result.error{border-color:#f1b8b0;background:#fff4f2}.result.note{border-color:#dde0e6;background:#f4f5f7}p.progress{margin:.2rem 0}.result.error h5{color:#b42318}.result h5{margin:.3rem 0;font-size:.9rem}\
.result img{min-width:3rem;max-width:100%;image-rendering:pixelated;border:1px solid #dde0e6}\
.health th:nth-child(1){width:30%}.health th:nth-child(2),.health th:nth-child(4),.health th:nth-child(5){width:11%}\
.bar{display:flex;flex-wrap:wrap;justify-content:space-between;align-items:center;gap:1rem}\
.account{display:flex;flex-wrap:wrap;align-items:center;gap:.6rem;color:#c8ccd6}.account strong{color:#fff}.account form{margin:0}\
a.button{display:inline-block;padding:.3rem .9rem;border-radius:6px;background:#2454d6;color:#fff;text-decoration:none}\
button.quiet{background:transparent;border-color:#ffffff66}.badge.admin{background:#f3e8ff;color:#6b21a8}\
details.signin{position:relative}details.signin>summary{color:#fff}\
form.token{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem;margin:.6rem 0}form.token input{font:inherit;padding:.3rem .45rem;border:1px solid #c9ced8;border-radius:6px}\
.account .pop{position:absolute;right:0;z-index:1;background:#fff;color:#1d2330;padding:.75rem;border-radius:8px;box-shadow:0 4px 16px #0003;width:22rem;margin:.4rem 0 0}\
.notice{background:#fff4f2;border:1px solid #f1b8b0;color:#8c1d13;border-radius:8px;padding:.6rem .8rem}\
#admin-panel textarea,#admin-panel select{font:inherit;padding:.3rem .45rem;border:1px solid #c9ced8;border-radius:6px;background:#fff}\
#admin-panel textarea{width:100%;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}#admin-panel textarea.invalid{border-color:#b42318}\
.admin-server{border:1px solid #e3e6eb;border-radius:10px;padding:0 1rem .4rem;margin:.75rem 0}.admin-server h3{border:0;padding:0;margin:.6rem 0 .2rem}\
ul.admin-list{list-style:none;padding:0;margin:.25rem 0}ul.admin-list li{display:flex;align-items:center;gap:.5rem;padding:.3rem 0;border-bottom:1px solid #eceef2}\
ul.admin-list .about{flex:1;min-width:0;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-size:.88rem}\
ul.admin-list button,.versions button{padding:.1rem .6rem;font-size:.85rem}.row select.add-kind{flex:none;min-width:0}\
.editor{border-top:1px solid #eceef2;margin-top:.5rem;padding-top:.25rem}ul.errors{margin:.2rem 0 .5rem;padding-left:1.2rem}\
.diff th:first-child{width:16%}.diff pre.old{background:#4a1d1d}.diff pre.new{background:#173b26}\
#admin-status:empty{display:none}.versions th:nth-child(1){width:11%}.versions th:nth-child(2){width:25%}.versions th:nth-child(3){width:15%}.versions th:nth-child(5){width:14%}";

/// The whole page for a request on `origin` (`scheme://host[:port]`), as `viewer` may see it.
pub fn render(catalog: &Catalog, origin: &str, viewer: &Viewer<'_>) -> String {
    let count = catalog.servers.len();
    let mut body = top(origin, &format!("{count} MCP server{}", if count == 1 { "" } else { "s" }), viewer);
    body.push_str(&account::notice(viewer));
    // The signed-in person's own state under the servers' `rateLimits`, which the page's script
    // reads from `/console/limits`.
    if viewer.session.is_some() && catalog.servers.iter().any(|s| !s.rate_limits.is_empty()) {
        body.push_str(concat!(
            "<section class=\"server\" id=\"your-limits\" data-limits=\"/console/limits\"><div class=\"head\"><h2>Your limits</h2></div>",
            "<table class=\"limits\"><thead><tr><th>server</th><th>limit</th><th>left</th><th>full again in</th></tr></thead><tbody></tbody></table></section>"
        ));
    }
    if let Some(admin) = &viewer.admin {
        body.push_str(&account::admin(admin));
    }
    if count > 1 {
        body.push_str("<nav class=\"toc\">");
        for (i, s) in catalog.servers.iter().enumerate() {
            body.push_str(&format!("<a href=\"#server-{i}\">{}</a>", escape(display_name(s))));
        }
        body.push_str("</nav>");
    }
    for (i, server) in catalog.servers.iter().enumerate() {
        body.push_str(&section(catalog, server, i, origin, viewer));
    }
    let footer = match catalog.console {
        ConsoleAccess::SignedIn { .. } => "Served by mcp-edge. This page is for signed-in people only (<code>\"console\": {\"access\": \"signed-in\"}</code>).",
        _ => {
            "Served by mcp-edge. This page is public: it shows what the servers show anyone, and more to whoever signs in. \
              Set <code>\"console\": {\"access\": \"off\"}</code> in the configuration to turn it off."
        }
    };
    body.push_str(&format!("</main><footer class=\"wrap\">{footer}</footer>"));
    let admin_script = if viewer.admin.is_some() { super::script::ADMIN.tag() } else { String::new() };
    document(&body, &format!("{}{admin_script}", super::script::TRY.tag()))
}

/// The page a `signed-in` console shows a viewer who may not see it: the ways to sign in.
pub fn gate(origin: &str, viewer: &Viewer<'_>, roles: &[String]) -> String {
    let mut body = top(origin, "Sign-in required", viewer);
    body.push_str(&account::gate(viewer, roles));
    body.push_str("</main>");
    document(&body, "")
}

/// The header with the account bar, and the start of `<main>`.
fn top(origin: &str, what: &str, viewer: &Viewer<'_>) -> String {
    format!(
        "<header class=\"top\"><div class=\"wrap bar\"><div><h1>mcp-edge</h1><p>{} on <code>{}</code></p></div>{}</div></header><main class=\"wrap\">",
        escape(what),
        escape(origin),
        account::bar(viewer)
    )
}

fn document(body: &str, scripts: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta name=\"referrer\" content=\"no-referrer\"><title>MCP servers · mcp-edge</title><style>{STYLE}</style></head><body>{body}{scripts}</body></html>"
    )
}

/// The page's headers for a request on `origin`: a CSP that allows its one style block, its one
/// script (`script.rs`), requests to this origin only (the panels' MCP calls) and `data:` images
/// (tool results), and nothing else; never framed.
pub fn headers(origin: &str) -> Vec<(&'static str, String)> {
    let scripts = [&super::script::TRY, &super::script::ADMIN].map(|s| s.source(origin)).join(" ");
    let sources = [format!("script-src {scripts}"), "connect-src 'self'".into(), "img-src data:".into()];
    // The account bar's forms post to this origin's sign-in and sign-out.
    crate::html::page_headers_with(STYLE, &sources, "'self'")
}

fn display_name(server: &Server) -> &str {
    server.title.as_deref().filter(|t| !t.trim().is_empty()).unwrap_or(&server.name)
}

fn section(catalog: &Catalog, server: &Server, index: usize, origin: &str, viewer: &Viewer<'_>) -> String {
    let urls = Urls::of(server, origin);
    let open = super::shows_entries(server, viewer);
    let mut out = format!("<section class=\"server\" id=\"server-{index}\"><div class=\"head\"><h2>{}</h2>", escape(display_name(server)));
    out.push_str(&format!("<span class=\"badge\">v{}</span>", escape(&server.version)));
    out.push_str(if server.auth.is_none() { "<span class=\"badge open\">open</span>" } else { "<span class=\"badge lock\">needs credentials</span>" });
    out.push_str("</div>");
    if let Some(instructions) = server.instructions.as_deref().filter(|i| !i.trim().is_empty()) {
        out.push_str(&format!("<p class=\"pre muted\">{}</p>", escape(instructions)));
    }
    out.push_str(&format!("<dl class=\"facts\"><dt>URL</dt><dd><code class=\"url\">{}</code></dd>", escape(&urls.mcp)));
    out.push_str(&format!("<dt>Name</dt><dd><code>{}</code> version <code>{}</code></dd>", escape(&server.name), escape(&server.version)));
    let modes = connect::auth_modes(server.auth.as_ref(), catalog.oauth.as_ref());
    let auth = if modes.is_empty() { "none: anyone may connect".to_string() } else { modes.iter().map(|m| escape(m)).collect::<Vec<_>>().join("; ") };
    out.push_str(&format!("<dt>Auth</dt><dd class=\"auth\">{auth}</dd><dt>Transports</dt><dd><ul>{}</ul></dd></dl>", transports(server, &urls)));
    let params: Vec<&str> = server.route.params().collect();
    if !params.is_empty() {
        let names: Vec<String> = params.iter().map(|p| format!("<code>{{{}}}</code>", escape(p))).collect();
        out.push_str(&format!("<p class=\"muted\">{} in the URL {} a route parameter: put your value in its place.</p>", names.join(", "), if params.len() == 1 { "is" } else { "are" }));
    }
    // Open for a deployment of one server; with several, each server's settings open on a click,
    // so the page stays a list of servers.
    let expanded = if catalog.servers.len() == 1 { " open" } else { "" };
    out.push_str(&format!("<details class=\"connect\"{expanded}><summary>Connect a client</summary><div class=\"clients\">"));
    for s in connect::snippets(server, &urls, catalog.oauth.as_ref()) {
        out.push_str(&format!("<div class=\"client\"><h4>{}</h4><p>{}</p><pre>{}</pre></div>", escape(s.client), escape(&s.note), escape(&s.text)));
    }
    out.push_str("</div></details>");
    out.push_str(&super::script::panel(server, &urls, &catalog.telemetry));
    if open {
        out.push_str(&entries(server, index, viewer));
    } else {
        out.push_str(
            "<h3>Tools, resources and prompts</h3><p class=\"locked\">This server needs credentials. Its tools, resources and prompts are \
             listed to clients that connect with them, as <code>tools/list</code> is, not on this public page.</p>",
        );
    }
    out.push_str("</section>");
    out
}

fn transports(server: &Server, urls: &Urls) -> String {
    let mut items = Vec::new();
    match server.stateless {
        Some(_) => items.push(format!("Streamable HTTP, stateless (no sessions: each <code>POST</code> stands alone): <code>{}</code>", escape(&urls.mcp))),
        None => items.push(format!("Streamable HTTP (<code>POST</code>, <code>GET</code>, <code>DELETE</code>): <code>{}</code>", escape(&urls.mcp))),
    }
    items.push(format!("Always streaming (SSE replies to <code>POST</code>): <code>{}</code>", escape(&urls.stream)));
    if let (Some(sse), Some(messages)) = (&urls.sse, &urls.messages) {
        items.push(format!("Legacy HTTP+SSE (2024-11-05): <code>GET {}</code>, <code>POST {}</code>", escape(sse), escape(messages)));
    }
    items.push(format!("Protocol revisions: {} (the stateless revision, at the same URL)", crate::versions::ALL_VERSIONS.join(", ")));
    items.iter().map(|i| format!("<li>{i}</li>")).collect()
}

/// The tools the viewer's `tools/list` would find (an admin: every tool), then resources and
/// prompts.
fn entries(server: &Server, index: usize, viewer: &Viewer<'_>) -> String {
    let anyone = crate::auth::Principal::anonymous();
    let who = viewer.principal().unwrap_or(&anyone);
    let admin = viewer.session.is_some_and(|s| s.is_admin());
    let gate = server.gate(who, viewer.now_ms);
    let tools: Vec<&Tool> = server.tools.iter().filter(|t| admin || gate.sees(t)).collect();
    let mut out = format!("<h3>Tools <span class=\"badge\">{}</span></h3>", tools.len());
    if let ToolDiscovery::Catalog(_) = server.discovery {
        let names = crate::tools::meta::MetaTool::ALL.map(crate::tools::meta::MetaTool::name).join(", ");
        out.push_str(&format!("<p class=\"muted\">Catalog mode: clients see three tools ({}) that search, describe and call these.</p>", escape(&names)));
    }
    if let ToolDiscovery::Code(_) = server.discovery {
        let names = crate::tools::meta::MetaTool::CODE.map(crate::tools::meta::MetaTool::name).join(", ");
        out.push_str(&format!("<p class=\"muted\">Code mode: clients see two tools ({}): one finds these as TypeScript declarations, one runs a program that calls them.</p>", escape(&names)));
    }
    if tools.is_empty() {
        out.push_str("<p class=\"muted\">No tools.</p>");
    }
    for (t, tool) in tools.iter().enumerate() {
        out.push_str(&tool_card(tool, &format!("tool-{index}-{t}")));
    }
    let resources: Vec<&Value> = server.resources.iter().filter(|r| admin || gate.sees_resource(r)).map(|r| &r.listing).collect();
    if !resources.is_empty() {
        out.push_str(&format!("<h3>Resources <span class=\"badge\">{}</span></h3>", resources.len()));
        let rows: Vec<[String; 4]> = resources.iter().map(|l| listing_row(l, "uri")).collect();
        out.push_str(&table("entries", &["URI", "Name", "Description", "MIME type"], &rows));
    }
    let templates: Vec<&Value> = server.resource_templates.iter().filter(|t| admin || gate.sees_template(t)).map(|t| &t.listing).collect();
    if !templates.is_empty() {
        out.push_str(&format!("<h3>Resource templates <span class=\"badge\">{}</span></h3>", templates.len()));
        let rows: Vec<[String; 4]> = templates.iter().map(|l| listing_row(l, "uriTemplate")).collect();
        out.push_str(&table("entries", &["URI template", "Name", "Description", "MIME type"], &rows));
    }
    let prompts: Vec<&Value> = server.prompts.iter().filter(|p| admin || gate.sees_prompt(p)).map(|p| &p.listing).collect();
    if !prompts.is_empty() {
        out.push_str(&format!("<h3>Prompts <span class=\"badge\">{}</span></h3>", prompts.len()));
        let rows: Vec<[String; 3]> = prompts.iter().map(|l| prompt_row(l)).collect();
        out.push_str(&table("prompts", &["Name", "Description", "Arguments"], &rows));
    }
    out
}

fn tool_card(tool: &Tool, id: &str) -> String {
    let l = &tool.listing;
    let title = str_at(l, "title").or_else(|| l.get("annotations").and_then(|a| str_at(a, "title")));
    let mut out = format!("<article class=\"tool\" id=\"{}\"><h4>", escape(id));
    if let Some(title) = title {
        out.push_str(&format!("{} ", escape(title)));
    }
    out.push_str(&format!("<code>{}</code></h4>", escape(&tool.name)));
    let tags = tags(tool);
    if !tags.is_empty() {
        out.push_str(&format!("<div>{tags}</div>"));
    }
    if let Some(description) = str_at(l, "description") {
        out.push_str(&format!("<p class=\"pre\">{}</p>", escape(description)));
    }
    if schema::is_empty(&tool.input_schema) {
        out.push_str("<p class=\"muted\">No arguments.</p>");
    } else {
        let rows: Vec<[String; 4]> = schema::rows(&tool.input_schema)
            .into_iter()
            .map(|r| {
                let name = format!("<code>{}</code>{}", escape(&r.name), if r.required { "<span class=\"req\">required</span>" } else { "" });
                [name, escape(&r.kind), escape(r.description.as_deref().unwrap_or("")), r.values.iter().map(|v| escape(v)).collect::<Vec<_>>().join("<br>")]
            })
            .collect();
        out.push_str(&table("args", &["Argument", "Type", "Description", "Values"], &rows));
    }
    out.push_str(&raw("Input schema (JSON)", &tool.input_schema));
    if let Some(output) = l.get("outputSchema") {
        out.push_str(&raw("Output schema (JSON)", output));
    }
    out.push_str("</article>");
    out
}

/// Badges: the annotations' hints, the roles that may see the tool, deferred execution.
fn tags(tool: &Tool) -> String {
    let mut tags: Vec<String> = Vec::new();
    if let Some(annotations) = tool.listing.get("annotations").and_then(Value::as_object) {
        for (key, word) in [("readOnlyHint", "read-only"), ("destructiveHint", "destructive"), ("idempotentHint", "idempotent"), ("openWorldHint", "open world")] {
            match annotations.get(key).and_then(Value::as_bool) {
                Some(true) => tags.push(format!("<span class=\"tag\">{word}</span>")),
                Some(false) if key == "openWorldHint" => tags.push("<span class=\"tag\">closed world</span>".into()),
                _ => {}
            }
        }
    }
    if !tool.roles.is_empty() {
        tags.push(format!("<span class=\"tag role\">roles: {}</span>", escape(&tool.roles.join(", "))));
    }
    if let Some((deferral, _)) = tool.deferral {
        tags.push(format!("<span class=\"tag\">{}</span>", deferral.name()));
    }
    tags.concat()
}

fn raw(summary: &str, value: &Value) -> String {
    let json = value.to_string();
    format!("<details class=\"raw\"><summary>{summary}</summary><pre>{}</pre></details>", escape(&json))
}

fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str).filter(|s| !s.trim().is_empty())
}

/// A resource's or template's row, already escaped: its URI (or template) in code, its name
/// (with the title), description and MIME type.
fn listing_row(l: &Value, uri_key: &str) -> [String; 4] {
    let text = |key: &str| escape(str_at(l, key).unwrap_or(""));
    let name = match str_at(l, "title") {
        Some(title) => format!("{} <span class=\"muted\">({})</span>", escape(title), text("name")),
        None => text("name"),
    };
    [format!("<code>{}</code>", text(uri_key)), name, text("description"), text("mimeType")]
}

fn prompt_row(l: &Value) -> [String; 3] {
    let args: Vec<String> = l
        .get("arguments")
        .and_then(Value::as_array)
        .map(|args| {
            args.iter()
                .map(|a| {
                    let required = if a.get("required").and_then(Value::as_bool) == Some(true) { "<span class=\"req\">required</span>" } else { "" };
                    let description = str_at(a, "description").map(|d| format!(": {}", escape(d))).unwrap_or_default();
                    format!("<code>{}</code>{required}{description}", escape(str_at(a, "name").unwrap_or("")))
                })
                .collect()
        })
        .unwrap_or_default();
    let name = format!("<code>{}</code>", escape(str_at(l, "name").unwrap_or("")));
    [name, escape(str_at(l, "description").unwrap_or("")), args.join("<br>")]
}

/// A table of cells already escaped.
fn table<const N: usize>(class: &str, head: &[&str; N], rows: &[[String; N]]) -> String {
    let head: String = head.iter().map(|h| format!("<th>{h}</th>")).collect();
    let body: String = rows.iter().map(|r| format!("<tr>{}</tr>", r.iter().map(|c| format!("<td>{c}</td>")).collect::<String>())).collect();
    format!("<table class=\"{class}\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(text: &str) -> String {
        render(&crate::config::load(text).unwrap(), "https://mcp.example.com", &Viewer::default())
    }

    const EVIL: &str = "<script>alert(1)</script>\"'&";
    const ESCAPED: &str = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;";

    #[test]
    fn every_configured_string_is_escaped() {
        let e = serde_json::to_string(EVIL).unwrap();
        let text = format!(
            r#"{{"servers":[{{"name":{e},"title":{e},"version":{e},"instructions":{e},
              "tools":[{{"name":"t","title":{e},"description":{e},"roles":[],
                "annotations":{{"title":{e}}},
                "inputSchema":{{"type":"object","properties":{{"a":{{"type":"string","description":{e},"enum":[{e}],"default":{e}}}}}}},
                "outputSchema":{{"type":"object","description":{e}}},
                "http":{{"url":"https://x.test/"}}}}],
              "resources":[{{"uri":"a://x","name":{e},"title":{e},"description":{e},"mimeType":{e},"text":"x"}}],
              "resourceTemplates":[{{"uriTemplate":"a://{{id}}","name":{e},"description":{e},"http":{{"url":"https://x.test/{{id}}"}}}}],
              "prompts":[{{"name":"p","description":{e},"arguments":[{{"name":"x","description":{e}}}],"messages":[{{"role":"user","content":{{"type":"text","text":"hi"}}}}]}}]}}]}}"#
        );
        let html = page(&text);
        // The one script tag is the page's own; no configured string makes another.
        assert_eq!(html.matches("<script").count(), 1, "{html}");
        assert!(html.contains(&format!("{}</body>", super::super::script::TRY.tag())));
        assert!(!html.contains("alert(1)</"));
        // The name, title, version, instructions, tool title and description, the schema's
        // description, resource and prompt fields, and the raw JSON, each escaped.
        assert!(html.matches(ESCAPED).count() >= 12, "{}", html.matches(ESCAPED).count());
        assert!(html.contains(&format!("<h2>{ESCAPED}</h2>")));
        assert!(html.contains(&format!("<p class=\"pre\">{ESCAPED}</p>")));
    }

    #[test]
    fn no_secret_and_no_secret_name_appears() {
        let text = r#"{"servers":[
            {"name":"open","version":"1","notifications":{"tokenSecret":"NOTIFY_SECRET_NAME"},
             "tools":[{"name":"t","description":"Calls the API.","http":{"url":"{+env.BASE_SECRET_NAME}/x","headers":{"Authorization":"Bearer {env.API_SECRET_NAME}"},"query":{"k":"{env.QUERY_SECRET_NAME}"}}}],
             "resources":[{"uri":"a://r","name":"r","http":{"url":"https://h.test/{env.RESOURCE_SECRET_NAME}"}}]},
            {"name":"locked","version":"1","route":"/locked/mcp","auth":{"from":["bearer","header:X-Key"],"tokens":[{"secret":"TOKEN_SECRET_NAME","subject":"bot"}],
             "introspection":{"http":{"url":"https://app.test/who","headers":{"X-App":"{env.INTROSPECT_SECRET_NAME}"}}}},
             "tools":[{"name":"hidden_tool","http":{"url":"https://x.test/"}}]},
            {"name":"signed","version":"1","route":"/signed/mcp","auth":{"oauth":true}}],
          "oauth":{"signIn":{"users":[{"username":"ann","passwordSecret":"PASSWORD_SECRET_NAME"}]},"registration":"token","initialAccessTokenSecret":"REGISTRATION_SECRET_NAME"}}"#;
        let html = page(text);
        assert!(!html.contains("SECRET_NAME"), "{html}");
        assert!(!html.contains("{env.") && !html.contains("env."));
        assert!(!html.contains("https://x.test/") && !html.contains("h.test") && !html.contains("app.test"));
        // The open server's tool is listed; the locked server's is not, and the page says why.
        assert!(html.contains("<code>t</code></h4>"));
        assert!(!html.contains("hidden_tool"));
        assert!(html.contains("This server needs credentials."));
        assert!(html.contains("static tokens; tokens your application checks (introspection)"));
        assert!(html.contains("mcp-edge&#39;s own OAuth sign-in: a username and password"));
        assert!(html.contains("Authorization: Bearer &lt;your token&gt;"));
    }

    #[test]
    fn each_viewer_sees_what_their_credentials_show() {
        use crate::console::session::{Session, Via};
        let text = r#"{"servers":[
            {"name":"static","version":"1","auth":{"tokens":[{"secret":"TOKEN_SECRET_NAME","subject":"bot"}]},
             "tools":[{"name":"static_tool","http":{"url":"https://x.test/{env.API_SECRET_NAME}"}}]},
            {"name":"signed","version":"1","route":"/signed/mcp","auth":{"oauth":true,"requiredRoles":["staff","admin"]},
             "tools":[{"name":"staff_tool","http":{"url":"https://x.test/"}},{"name":"admin_tool","roles":["admin"],"http":{"url":"https://x.test/"}}]}],
          "oauth":{"signIn":{"users":[{"username":"ann","passwordSecret":"PASSWORD_SECRET_NAME"}]}}}"#;
        let catalog = crate::config::load(text).unwrap();
        let session = |roles: &[&str]| Session { principal: crate::auth::Principal::new("user", "ann", roles.iter().map(|r| r.to_string()).collect()), via: Via::Grant("g".into()), exp_ms: 1 };
        let seen = |s: Option<&Session>| {
            let html = render(&catalog, "https://mcp.example.com", &Viewer { session: s, ..Viewer::default() });
            ["static_tool", "staff_tool", "admin_tool"].map(|t| html.contains(&format!("<code>{t}</code></h4>")))
        };
        assert_eq!(seen(None), [false, false, false]);
        // A guest may not use the signed-in server; staff may, without the admins' tool; a
        // static-token server takes no console sign-in, so only an admin sees its tools.
        assert_eq!(seen(Some(&session(&["guest"]))), [false, false, false]);
        assert_eq!(seen(Some(&session(&["staff"]))), [false, true, false]);
        let admin = session(&["admin"]);
        assert_eq!(seen(Some(&admin)), [true, true, true]);
        // Not even an admin's page names a secret; both servers still say they need credentials.
        let html = render(&catalog, "https://mcp.example.com", &Viewer { session: Some(&admin), ..Viewer::default() });
        assert!(!html.contains("SECRET_NAME") && !html.contains("x.test"), "{html}");
        assert_eq!(html.matches("<span class=\"badge lock\">needs credentials</span>").count(), 2);
        // Without the admin view (the edge decides), no admin script.
        assert!(!html.contains("console-admin."));
    }

    #[test]
    fn the_schema_is_a_table() {
        let html = page(include_str!("../../mcp-edge.json"));
        assert!(html.contains("<table class=\"args\"><thead><tr><th>Argument</th><th>Type</th><th>Description</th><th>Values</th></tr>"));
        assert!(html.contains("<tr><td><code>message</code><span class=\"req\">required</span></td><td>string</td><td>The text to echo</td><td></td></tr>"), "{html}");
        assert!(html.contains("<tr><td><code>timezone</code></td><td>string</td><td>IANA time zone, e.g. Europe/Berlin</td><td></td></tr>"));
        assert!(html.contains("<span class=\"tag\">read-only</span><span class=\"tag\">idempotent</span><span class=\"tag\">closed world</span>"));
        assert!(html.contains("<code class=\"url\">https://mcp.example.com/mcp</code>"));
        assert!(html.contains("Legacy HTTP+SSE (2024-11-05): <code>GET https://mcp.example.com/sse</code>"));
        // One server: its connect settings are open; several: each opens on a click.
        assert!(html.contains("<details class=\"connect\" open>"));
        let two = page(r#"{"servers":[{"name":"a","version":"1","tools":[]},{"route":"/b/mcp","name":"b","version":"1","tools":[]}]}"#);
        assert_eq!((two.matches("<details class=\"connect\">").count(), two.matches("<details class=\"connect\" open>").count()), (2, 0));
    }

    #[test]
    fn the_default_page_is_small_and_its_style_is_allowed() {
        let html = page(include_str!("../../mcp-edge.json"));
        assert!(html.len() < 50_000, "{} bytes", html.len());
        let csp = headers("https://mcp.example.com").into_iter().find(|(k, _)| *k == "Content-Security-Policy").unwrap().1;
        use sha2::{Digest, Sha256};
        let hash = crate::base64::encode(&Sha256::digest(STYLE.as_bytes()));
        let script = super::super::script::TRY.path();
        let admin = super::super::script::ADMIN.path();
        assert_eq!(
            csp,
            format!("default-src 'none'; style-src 'sha256-{hash}'; script-src https://mcp.example.com{script} https://mcp.example.com{admin}; connect-src 'self'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
        );
        // The one style block is the one the hash allows; the one script is the one the CSP names.
        assert_eq!(html.matches("<style>").count(), 1);
        assert!(html.contains(&format!("<style>{STYLE}</style>")));
        assert_eq!(html.matches("<script").count(), 1);
        assert!(html.contains(&format!("<script src=\"{script}\" integrity=\"sha256-")));
        // Each server has its panel for the script to fill, hidden until then.
        assert!(html.contains("<div class=\"try\" hidden data-url=\"https://mcp.example.com/mcp\""));
    }

    #[test]
    fn route_parameters_and_stateless_servers_are_explained() {
        let html = page(r#"{"servers":[{"name":"s","version":"1","route":"/api/{tenant}/mcp","stateless":{}}]}"#);
        assert!(html.contains("<code>https://mcp.example.com/api/{tenant}/mcp</code>"));
        assert!(html.contains("<code>{tenant}</code> in the URL is a route parameter"));
        assert!(html.contains("Streamable HTTP, stateless") && !html.contains("Legacy HTTP+SSE"));
    }
}
