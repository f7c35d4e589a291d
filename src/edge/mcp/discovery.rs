//! Each source's lists, read with a session of its own (initialize; `tools/list`, and
//! `resources/list`, `resources/templates/list` and `prompts/list` when it offers them, page by
//! page; then `DELETE`), kept in this isolate for the source's `catalogTtlSeconds`, and merged
//! into the catalog this isolate serves. The request that finds a list due waits for it, within
//! [`DISCOVERY_TIMEOUT_MS`], and so do the requests that come meanwhile to an isolate that has
//! never read it; a source that cannot be read is tried again after [`RETRY_MS`],
//! and meanwhile keeps the tools it last listed (their calls say what is wrong). A source never
//! read lists nothing. An upstream's `notifications/tools/list_changed` (or its kin) makes its
//! lists due at once. Each read is given to the server's registry, which tells the sessions
//! listening for list changes when the lists are not those it last knew; a session's object
//! that is told reads them again before it lists. Unless the server's `pinning` is `off`, each
//! read's tools are first checked against the definitions pinned in the registry
//! (`object::pins`): what is served is what an admin has let through.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use worker::Env;

use super::{close, next_id, open, post, Failure, Reply};
use crate::catalog::{Catalog, Server};
use crate::edge::now_ms;
use crate::method::Method;
use crate::upstream::mcp::changes::Read;
use crate::upstream::mcp::{self as protocol, Source};
use crate::upstream::HttpCall;

/// A list is read within this, whatever the source's own time limit: the request waits for it.
pub const DISCOVERY_TIMEOUT_MS: u64 = 10_000;
/// A source that could not be read is tried again after this.
pub const RETRY_MS: u64 = 30_000;
/// At most this many `tools/list` pages are read from one source.
const MAX_PAGES: usize = 50;

/// A merged catalog, with the base and generation it was built from.
struct Merged {
    base: Arc<Catalog>,
    generation: u64,
    catalog: Arc<Catalog>,
}

/// A source's last lists, and when to read them again.
#[derive(Default)]
struct Found {
    lists: Lists,
    due_ms: u64,
    /// The lists were read at least once (a source that failed every read has none).
    read: bool,
}

/// Waits until no request of this isolate reads `key` any more, at most the discovery time
/// limit. It looks every 50 ms from a timer of its own request: a wake from the reading request
/// would run this request's continuation in that one's context, where its I/O is not allowed.
async fn wait_for_read(key: &str) {
    let until = now_ms() + DISCOVERY_TIMEOUT_MS;
    while READING.with(|r| r.borrow().contains(key)) && now_ms() < until {
        worker::Delay::from(std::time::Duration::from_millis(50)).await;
    }
}

/// What a source lists: tools, resources, resource templates, prompts.
#[derive(Default, Clone)]
pub(super) struct Lists {
    tools: Vec<Value>,
    resources: Vec<Value>,
    templates: Vec<Value>,
    prompts: Vec<Value>,
    /// The cache hints its `tools/list` pages and its other lists' pages carried (SEP-2549):
    /// they narrow ours (`add`).
    hints: [Option<crate::cache::CacheHint>; 2],
}

thread_local! {
    static FOUND: RefCell<HashMap<String, Found>> = RefCell::new(HashMap::new());
    /// Sources being read now, so that concurrent requests do not read them twice.
    static READING: RefCell<HashSet<String>> = RefCell::new(HashSet::new());
    /// Bumped whenever a list changes: the merged catalog is built again.
    static GENERATION: Cell<u64> = const { Cell::new(0) };
    /// The merged catalog, with the base catalog and generation it was built from (the base is
    /// held, so no other catalog can take its address meanwhile).
    static MERGED: RefCell<Option<Merged>> = const { RefCell::new(None) };
}

/// Whether `source`'s lists are each principal's own: its connection's token is (`personal`).
pub(super) fn per_user(catalog: &Catalog, source: &Source) -> bool {
    source.connection.as_ref().is_some_and(|name| catalog.connections.iter().any(|c| &c.name == name && c.grant.per_principal()))
}

fn key(server: &Server, source: &Source) -> String {
    format!("{}\n{}", server.route.as_str(), source.name)
}

/// The source's list is due at once (the upstream said it changed).
pub fn stale(server: &Server, source: &Source) {
    FOUND.with(|f| {
        if let Some(found) = f.borrow_mut().get_mut(&key(server, source)) {
            found.due_ms = 0;
        }
    });
}

/// Every source of the server is due at once: its clients were told a list changed, and what
/// they list next, through this isolate, should be what the upstream lists now.
pub fn stale_all(server: &Server) {
    for source in &server.upstreams {
        stale(server, source);
    }
}

/// Reads every list that is due, of every server with upstreams.
pub async fn refresh(env: &Env) {
    let Ok(base) = crate::edge::configured::base_catalog() else { return };
    for (index, server) in base.servers.iter().enumerate().filter(|(_, s)| !s.upstreams.is_empty()) {
        for source in server.upstreams.iter().filter(|s| !per_user(&base, s)) {
            let key = key(server, source);
            let began = now_ms();
            let due = FOUND.with(|f| f.borrow().get(&key).is_none_or(|found| found.due_ms <= began));
            if !due {
                continue;
            }
            if !READING.with(|r| r.borrow_mut().insert(key.clone())) {
                // Another request of this isolate is reading it. One that has never been read
                // here waits for that read (a fresh isolate's concurrent first requests would
                // otherwise find none of its tools); one read before goes on with what it has.
                if !FOUND.with(|f| f.borrow().get(&key).is_some_and(|found| found.read)) {
                    wait_for_read(&key).await;
                }
                continue;
            }
            let read = match discover(env, &base, server, source).await {
                Ok(lists) if server.pinning != crate::pins::Mode::Off => pinned(env, server, index, source, lists).await,
                other => other,
            };
            READING.with(|r| r.borrow_mut().remove(&key));
            let now = now_ms();
            match read {
                Ok(lists) => {
                    crate::edge::health::upstream(&server.name, &source.name, true);
                    let read = Read::of(&source.name, began, &lists.tools, &lists.resources, &lists.templates, &lists.prompts);
                    FOUND.with(|f| f.borrow_mut().insert(key, Found { lists, due_ms: now + source.catalog_ttl_ms, read: true }));
                    GENERATION.with(|g| g.set(g.get() + 1));
                    announce(env, server, index, &read).await;
                    // The servers whose `include` waits for this server's upstream lists are told
                    // too, each keeping the read under this server's name beside its own sources.
                    let theirs = Read { source: format!("{}/{}", server.name, source.name), ..read };
                    for (at, curated) in base.servers.iter().enumerate() {
                        if !curated.pending.is_empty() && curated.include.iter().any(|i| i.server() == server.name) {
                            announce(env, curated, at, &theirs).await;
                        }
                    }
                }
                Err(why) => {
                    crate::edge::health::upstream(&server.name, &source.name, false);
                    worker::console_error!("{}", crate::edge::redaction::line(json!({"message": "upstream MCP server: its tool list could not be read", "server": server.name, "upstream": source.name, "error": why}).to_string()));
                    FOUND.with(|f| f.borrow_mut().entry(key).or_default().due_ms = now + RETRY_MS);
                }
            }
        }
    }
}

/// Gives the server's registry this read, which tells the clients listening for list changes
/// when it found lists other than the newest it knew.
async fn announce(env: &Env, server: &Server, index: usize, read: &Read) {
    let body = read.to_json();
    let registry = crate::edge::object::registry::name(server);
    if let Err(e) = crate::edge::object::registry::call(env, &registry, crate::envelope::Op::RegistryUpstreamRead, index, None, body).await {
        worker::console_warn!("{}", crate::edge::redaction::line(json!({"message": "upstream MCP server: its clients could not be told of a list read", "server": server.name, "upstream": read.source, "error": e.message()}).to_string()));
    }
}

/// `lists` with its tools as the server's pinned definitions allow (`crate::pins`, kept by its
/// registry): a changed definition is held back there. A registry out of reach fails the read,
/// so the tools last served stay.
async fn pinned(env: &Env, server: &Server, index: usize, source: &Source, mut lists: Lists) -> Result<Lists, String> {
    let mut body = Map::new();
    for (key, value) in [("server", server.name.as_str()), ("upstream", &source.name), ("prefix", &source.prefix), ("mode", server.pinning.name())] {
        body.insert(key.into(), Value::String(value.to_string()));
    }
    body.insert("tools".into(), Value::Array(std::mem::take(&mut lists.tools)));
    let body = Value::Object(body).to_string();
    let registry = crate::edge::object::registry::name(server);
    let failed = |why: String| format!("its pinned tool definitions could not be read: {why}");
    let (status, text) = crate::edge::object::registry::ask(env, &registry, crate::envelope::Op::PinsCheck, index, body).await.map_err(|e| failed(e.message()))?;
    let served = serde_json::from_str::<Value>(&text).ok().and_then(|mut v| v.get_mut("tools").map(Value::take)).and_then(|t| if let Value::Array(a) = t { Some(a) } else { None });
    lists.tools = served.filter(|_| status == 200).ok_or_else(|| failed(format!("the registry answered {status}")))?;
    Ok(lists)
}

/// The exchange's request for `source`: its URL and headers with this deployment's secrets (no
/// caller: a list is read once for everyone), within the discovery time limit.
pub(super) fn base_call(env: &Env, server: &Server, source: &Source) -> Result<HttpCall, String> {
    let bindings = crate::upstream::request::bindings(&source.request.secrets, &|n| crate::edge::secret(env, n), &[]);
    let mut call = source.request.render(&format!("upstream {:?}", source.name), &Map::new(), &bindings).map_err(|e| e.message())?;
    call.private_upstreams.clone_from(&server.private_upstreams);
    call.timeout_ms = call.timeout_ms.min(DISCOVERY_TIMEOUT_MS);
    Ok(call)
}

async fn discover(env: &Env, catalog: &Catalog, server: &Server, source: &Source) -> Result<Lists, String> {
    let mut call = base_call(env, server, source)?;
    // An upstream reached with the deployment's token (client credentials) lists with it too.
    if let Some(token) = crate::edge::connections::grants::listing_bearer(env, catalog, source).await? {
        bearer(&mut call, &token);
    }
    read(&call, server, source).await.map_err(|failure| {
        // A refused deployment token is asked for anew at the next read.
        if refused(&failure) {
            crate::edge::connections::grants::listing_refused(catalog, source);
        }
        down(failure)
    })
}

pub(super) fn bearer(call: &mut HttpCall, token: &str) {
    call.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("authorization"));
    call.headers.push(("Authorization".into(), format!("Bearer {token}")));
}

pub(super) fn refused(failure: &Failure) -> bool {
    matches!(failure, Failure::Down(_, crate::health::Outcome::Upstream(401)))
}

/// The lists, read in a session of their own with `call`'s URL and headers.
pub(super) async fn read(call: &HttpCall, server: &Server, source: &Source) -> Result<Lists, Failure> {
    // What mcp-edge can relay, so that tools an upstream offers only to such clients are listed;
    // a call then asks the client behind, if it declared the capability.
    let link = open(call, source.transport, &json!({"sampling": {}, "elicitation": {}, "roots": {}}), server.max_reply_bytes, &crate::edge::redaction::current()).await?;
    let offers = |what: &str| link.capabilities.get(what).is_some_and(|c| !c.is_null());
    let (tools_hint, others_hint) = (Cell::new(None), Cell::new(None));
    let lists = async {
        Ok::<Lists, String>(Lists {
            tools: if offers("tools") { list(call, &link, server, (Method::ToolsList, "tools"), &tools_hint).await? } else { Vec::new() },
            resources: if offers("resources") { list(call, &link, server, (Method::ResourcesList, "resources"), &others_hint).await? } else { Vec::new() },
            templates: if offers("resources") { list(call, &link, server, (Method::ResourcesTemplatesList, "resourceTemplates"), &others_hint).await? } else { Vec::new() },
            prompts: if offers("prompts") { list(call, &link, server, (Method::PromptsList, "prompts"), &others_hint).await? } else { Vec::new() },
            hints: [tools_hint.get(), others_hint.get()],
        })
    }
    .await;
    close(call, &link).await;
    lists.map_err(|why| Failure::Down(why, crate::health::Outcome::Network))
}

pub(super) fn down(f: Failure) -> String {
    match f {
        Failure::Gone => "it forgot its session while listing".to_string(),
        Failure::Down(why, _) => why,
    }
}

/// Every page of one list (`method`, whose result holds the array `field`); the pages' cache
/// hints narrow `hint`.
async fn list(call: &HttpCall, link: &super::Link, server: &Server, (method, field): (Method, &str), hint: &Cell<Option<crate::cache::CacheHint>>) -> Result<Vec<Value>, String> {
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let id = next_id();
        let params = cursor.as_ref().map(|c| json!({"cursor": c}));
        let page = match post(call, Some(link), protocol::request(id, method, params), Some(id), server.max_reply_bytes, None, &crate::edge::redaction::current()).await.map_err(down)?.0 {
            Reply::Answer(Ok(page)) => page,
            Reply::Answer(Err(error)) => return Err(format!("it refused {method}: {}", crate::upstream::mcp::reader::error_text(&error))),
            Reply::Accepted => return Err(format!("it accepted {method} without answering it")),
        };
        let items = page.get(field).and_then(Value::as_array).ok_or_else(|| format!("its {method} result has no {field} array"))?;
        listed.extend(items.iter().cloned());
        if let Some(theirs) = page.as_object().and_then(crate::cache::upstream_hint) {
            hint.set(Some(hint.get().map_or(theirs, |h| h.and(theirs))));
        }
        cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_string);
        if cursor.is_none() {
            return Ok(listed);
        }
    }
    Err(format!("its {method} has more than {MAX_PAGES} pages"))
}

/// `base` with each source's last list among its servers' tools; `base` itself when no server
/// has upstreams. Built once per base and generation.
pub fn merged(base: Arc<Catalog>) -> Arc<Catalog> {
    if base.servers.iter().all(|s| s.upstreams.is_empty()) {
        return base;
    }
    let generation = GENERATION.with(Cell::get);
    if let Some(catalog) = MERGED.with(|m| m.borrow().as_ref().filter(|m| Arc::ptr_eq(&m.base, &base) && m.generation == generation).map(|m| m.catalog.clone())) {
        return catalog;
    }
    let mut catalog = (*base).clone();
    for server in catalog.servers.iter_mut().filter(|s| !s.upstreams.is_empty()) {
        let server = Arc::make_mut(server);
        let mut skipped = Vec::new();
        for (index, source) in server.upstreams.clone().iter().enumerate() {
            let lists = FOUND.with(|f| f.borrow().get(&key(server, source)).map(|found| found.lists.clone())).unwrap_or_default();
            add(server, index, source, &lists, &mut skipped);
        }
        if !skipped.is_empty() {
            worker::console_warn!("{}", crate::edge::redaction::line(json!({"message": "upstream MCP server: entries left out", "server": server.name, "entries": skipped}).to_string()));
        }
        server.relist();
    }
    // References to what the lists hold now (`include`): taken, or said why not.
    for at in 0..catalog.servers.len() {
        let pending = catalog.servers.get(at).map(|s| s.pending.clone()).unwrap_or_default();
        if pending.is_empty() {
            continue;
        }
        let (left, faults) = crate::catalog::curated::resolve(&mut catalog.servers, at, &pending);
        let Some(server) = catalog.servers.get_mut(at) else { continue };
        let server = Arc::make_mut(server);
        let mut skipped: Vec<String> = faults.iter().map(|(j, f)| format!("include[{j}].{}: {}", f.field, f.message)).collect();
        skipped.extend(left.iter().map(|j| format!("include[{j}]: not listed (yet) by the server it names")));
        if !skipped.is_empty() {
            worker::console_warn!("{}", crate::edge::redaction::line(json!({"message": "curated entries left out", "server": server.name, "entries": skipped}).to_string()));
        }
        server.relist();
    }
    let catalog = Arc::new(catalog);
    MERGED.with(|m| *m.borrow_mut() = Some(Merged { base, generation, catalog: catalog.clone() }));
    catalog
}

/// `source`'s lists among `server`'s tools, resources and prompts; what is left out, in `skipped`.
pub(super) fn add(server: &mut Server, index: usize, source: &Source, lists: &Lists, skipped: &mut Vec<String>) {
    let (mut tools, why) = crate::catalog::mcp::tools(source, index, &lists.tools, &|n| server.tools.iter().any(|t| t.name == n), server.max_reply_bytes);
    // An upstream's own hints narrow ours (SEP-2549): its tools' list narrows `tools/list` for
    // whoever sees its tools; its other lists' narrow the server's.
    let [tools_hint, others_hint] = lists.hints;
    if let Some(hint) = tools_hint {
        tools.iter_mut().for_each(|t| t.cache = Some(server.cache.and(hint)));
    }
    if let Some(hint) = others_hint {
        server.cache = server.cache.and(hint);
    }
    server.tools.extend(tools);
    skipped.extend(why);
    // Resources and prompts have no roles to gate them: a gated upstream gives tools only.
    if !source.roles.is_empty() {
        return;
    }
    let (resources, why) = crate::catalog::mcp::resources(source, index, &lists.resources, &|uri| server.resources.iter().any(|r| r.uri == uri));
    server.resources.extend(resources);
    skipped.extend(why);
    let (templates, why) = crate::catalog::mcp::templates(source, index, &lists.templates);
    server.resource_templates.extend(templates);
    skipped.extend(why);
    let (prompts, why) = crate::catalog::mcp::prompts(source, index, &lists.prompts, &|n| server.prompts.iter().any(|p| p.name == n));
    server.prompts.extend(prompts);
    skipped.extend(why);
}
