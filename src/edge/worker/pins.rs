//! The admin API's governance routes: the upstream tool definitions held for approval
//! (`GET /admin/api/pins`, every server's, each with the pinned definition and the new one),
//! an admin's decision on one (`POST /admin/api/pins/{server}/{upstream}/{tool}/approve` or
//! `/reject`, naming the fingerprint of the definition the admin saw, so a change that moved on
//! since is not approved blind), and the audit log (`GET /admin/api/audit?limit=&before=`).
//! `admin.rs` has checked who asks; every answer is redacted, as every exit is.

use serde_json::{Map, Value};
use worker::Env;

use crate::audit::{Action, Event};
use crate::auth::Principal;
use crate::catalog::Catalog;
use crate::edge::object::registry::{ask, name as registry};
use crate::envelope::Op;
use crate::error::Error;
use crate::live::api::{AdminError, Route};
use crate::pins::Mode;

/// A request to one of these routes, boxed: its code is in the module once, outside the admin
/// API's own state machine.
pub fn serve<'a>((env, ctx): (&'a Env, &'a worker::Context), catalog: &'a Catalog, who: &'a Principal, (method, route, query): (worker::Method, Route, &'a str), body: Value) -> Reply<'a> {
    Box::pin(async move {
        match (method, route) {
            (worker::Method::Get, Route::Pins) => held(env, catalog).await,
            (worker::Method::Get, Route::Audit) => audit(env, query).await,
            (worker::Method::Post, Route::Decide(server, upstream, tool, approve)) => decide((env, ctx), catalog, who, (server, upstream, tool, approve), &body).await,
            (_, Route::Decide(..)) => Err(AdminError::method_not_allowed("POST").into()),
            _ => Err(AdminError::method_not_allowed("GET").into()),
        }
    })
}

type Reply<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, Error>> + 'a>>;

/// Every pinning server's held changes: each registry lists its own, annotated (`glue.js`
/// `pins_held`), and the lists are joined as they come.
async fn held(env: &Env, catalog: &Catalog) -> Result<String, Error> {
    let mut out = String::from("{\"held\":[");
    for (index, server) in catalog.servers.iter().enumerate().filter(|(_, s)| !s.upstreams.is_empty() && s.pinning != Mode::Off) {
        let mut prefixes = Map::new();
        for source in &server.upstreams {
            prefixes.insert(source.name.clone(), Value::String(source.prefix.clone()));
        }
        let mut about = Map::new();
        about.insert("server".into(), Value::String(server.name.clone()));
        about.insert("mode".into(), Value::String(server.pinning.name().into()));
        about.insert("prefixes".into(), Value::Object(prefixes));
        let (_, list) = ask(env, &registry(server), Op::PinsHeld, index, Value::Object(about).to_string()).await?;
        let items = list.trim().trim_start_matches('[').trim_end_matches(']');
        if !items.is_empty() {
            if !out.ends_with('[') {
                out.push(',');
            }
            out.push_str(items);
        }
    }
    out.push_str("]}");
    Ok(crate::edge::redaction::line(out))
}

/// An admin's decision on a held change: approved, it is pinned and served, and the server's
/// sessions are told their tool list changed; rejected, the pinned definition stays, and that
/// change is not offered again.
async fn decide((env, ctx): (&Env, &worker::Context), catalog: &Catalog, who: &Principal, (server_name, upstream, tool, approve): (String, String, String, bool), body: &Value) -> Result<String, Error> {
    let fingerprint = body.get("fingerprint").and_then(Value::as_str).ok_or_else(|| AdminError::bad_request("send {\"fingerprint\": \"…\"}: the fingerprint of the held definition you decide on"))?;
    let missing = || -> Error { AdminError::not_found(format!("no change of {tool:?} from {upstream:?} on {server_name:?} with that fingerprint is held")).into() };
    let (index, server) = catalog.servers.iter().enumerate().find(|(_, s)| s.name == server_name).ok_or_else(missing)?;
    let source = server.upstreams.iter().find(|s| s.name == upstream).ok_or_else(missing)?;
    let mut request = Map::new();
    for (key, value) in [("upstream", upstream.as_str()), ("tool", &tool), ("fingerprint", fingerprint)] {
        request.insert(key.into(), Value::String(value.to_string()));
    }
    request.insert("approve".into(), Value::Bool(approve));
    let (status, decided) = ask(env, &registry(server), Op::PinsDecide, index, Value::Object(request).to_string()).await?;
    if status == 404 {
        return Err(missing());
    }
    let fields = serde_json::from_str::<Value>(&decided).ok().and_then(|d| d.get("fields").and_then(Value::as_str).map(str::to_string)).unwrap_or_default();
    let name = format!("{}{tool}", source.prefix);
    let (action, verb) = if approve { (Action::DefinitionApproved, "approved") } else { (Action::DefinitionRejected, "rejected") };
    let detail = format!("upstream {upstream}: {verb} the change of {fields} (fingerprint {})", fingerprint.get(..12).unwrap_or_default());
    crate::edge::audit::record_later(env, Some(ctx), Event { at_ms: crate::edge::now_ms(), actor: who.id.clone(), action, server: server.name.clone(), target: name, detail });
    if approve {
        crate::edge::mcp::discovery::stale_all(server);
        // The sessions list it again, through the upstream's newest read.
        let told = format!("[\"{}\"]", crate::method::Method::ToolsListChanged.name());
        if let Err(e) = ask(env, &registry(server), Op::RegistryListChanged, index, told).await {
            worker::console_error!("{}", crate::edge::redaction::line(format!("pins: sessions were not told of an approval: {}", e.message())));
        }
    }
    Ok(crate::edge::redaction::line(format!("{{\"approved\":{approve},\"fingerprint\":{}}}", Value::String(fingerprint.to_string()))))
}

/// A page of the audit log, newest first: `limit` (at most `audit::MAX_PAGE`) events before the
/// cursor `before` (the last page's `next`).
async fn audit(env: &Env, query: &str) -> Result<String, Error> {
    let mut limit = "50".to_string();
    let mut before = String::new();
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("limit", v)) => limit = v.to_string(),
            Some(("before", v)) => before = crate::head::percent_decode(v).unwrap_or_default(),
            _ => {}
        }
    }
    let (_, page) = ask(env, crate::edge::audit::OBJECT, Op::AuditRead, 0, format!("{limit}\n{before}")).await?;
    Ok(crate::edge::redaction::line(page))
}

/// The audit detail of a live change: each tool of a changed server whose definition is new,
/// with its fingerprint (an admin's edit is pinned as it is made).
pub fn pinned_by_edit(file: &Value, before: &crate::live::Layer, after: &crate::live::Layer, servers: &[String]) -> String {
    let mut out = Vec::new();
    for name in servers {
        let tools = |layer| crate::live::server_config(file, layer, name).and_then(|c| c.get("tools")).and_then(Value::as_array).cloned().unwrap_or_default();
        let old: Vec<String> = tools(before).iter().map(crate::pins::fingerprint).collect();
        for tool in tools(after) {
            let fingerprint = crate::pins::fingerprint(&tool);
            if !old.contains(&fingerprint) {
                out.push(format!("{} {}", tool.get("name").and_then(Value::as_str).unwrap_or_default(), fingerprint.get(..12).unwrap_or_default()));
            }
        }
    }
    if out.is_empty() {
        String::new()
    } else {
        format!("; pinned: {}", out.join(", "))
    }
}
