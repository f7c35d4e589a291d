//! `subscriptions/listen` (2026-07-28): what a listen stream honours, its acknowledgement, and
//! the subscription id on everything it carries.
//!
//! | method | params | handler |
//! |---|---|---|
//! | `subscriptions/listen` | [`ListenParams`] | [`honored`] and [`honored_lists`], then [`acknowledged`] (the edge opens the stream) |
//!
//! What the method table gives it: see [`PROPERTIES`]. A session's `resources/subscribe` is in
//! `resources`. Which upstream MCP server owns each URI a stream listens to, to watch it there:
//! [`owners`].

use serde::Deserialize;
use serde_json::{json, Value};

use crate::catalog::Server;
use crate::method::Method;

/// `subscriptions/listen`'s params: what the stream should carry. Read leniently: a member of
/// another type asks for nothing.
#[derive(Debug, Default, Deserialize)]
pub struct ListenParams {
    #[serde(skip)]
    pub notifications: Value,
}

impl super::Params for ListenParams {
    fn keep(&mut self, members: &serde_json::Map<String, Value>) {
        self.notifications = members.get("notifications").cloned().unwrap_or_default();
    }
}

fn listen(params: Option<&Value>) -> ListenParams {
    super::lenient(params)
}

/// The resource URIs of the request's filter that this server can report on.
pub fn honored(server: &Server, params: Option<&Value>) -> Vec<String> {
    let filter = listen(params).notifications;
    let requested = filter.get("resourceSubscriptions").and_then(Value::as_array);
    let mut uris: Vec<String> = Vec::new();
    let mut upstreams = 0;
    for uri in requested.into_iter().flatten().filter_map(Value::as_str) {
        if uris.iter().any(|u| u == uri) || !super::resources::exists(server, uri) || !reported(server, uri) {
            continue;
        }
        // Those of upstreams, as many as are watched there.
        if owner(server, uri).is_some() {
            upstreams += 1;
            if upstreams > MAX_WATCHED_URIS {
                continue;
            }
        }
        uris.push(uri.to_string());
    }
    uris
}

/// The list notifications a stream may get, by the name a listen request asks for each.
pub const LIST_NOTIFICATIONS: [Method; 3] = [Method::ToolsListChanged, Method::ResourcesListChanged, Method::PromptsListChanged];

fn filter_name(method: Method) -> &'static str {
    match method {
        Method::ToolsListChanged => "toolsListChanged",
        Method::ResourcesListChanged => "resourcesListChanged",
        _ => "promptsListChanged",
    }
}

/// The list notifications of the request's filter that this server can send: those whose lists
/// change live (the admin API is on, or upstream MCP servers list them); none otherwise, since
/// lists then change only with a deployment.
pub fn honored_lists(server: &Server, params: Option<&Value>) -> Vec<String> {
    if !server.lists_change {
        return Vec::new();
    }
    let filter = listen(params).notifications;
    let asked = |m: &Method| filter.get(filter_name(*m)).and_then(Value::as_bool) == Some(true);
    LIST_NOTIFICATIONS.iter().filter(|m| asked(m)).map(|m| m.name().to_string()).collect()
}

/// At most this many URIs of one listen stream are watched upstream: each is a
/// `resources/subscribe` in the upstream session held for it.
pub const MAX_WATCHED_URIS: usize = 64;

/// The URIs owned by upstream MCP servers among `uris`, grouped by upstream (its index in the
/// server's `upstreams`), the first [`MAX_WATCHED_URIS`] of them. A URI of no upstream (the
/// server's own, or none) is not there.
pub fn owners(server: &Server, uris: &[String]) -> Vec<(usize, Vec<String>)> {
    let mut owned: Vec<(usize, Vec<String>)> = Vec::new();
    for (uri, owner) in uris.iter().filter_map(|u| owner(server, u).map(|o| (u, o))).take(MAX_WATCHED_URIS) {
        match owned.iter_mut().find(|(i, _)| *i == owner) {
            Some((_, list)) => list.push(uri.clone()),
            None => owned.push((owner, vec![uri.clone()])),
        }
    }
    owned
}

/// The upstream MCP server that owns `uri`, if one does.
fn owner(server: &Server, uri: &str) -> Option<usize> {
    let listed = server.resources.iter().find(|r| r.uri == uri).map(|r| match r.source {
        crate::catalog::ResourceSource::Mcp(i) => Some(i),
        _ => None,
    });
    match listed {
        Some(owner) => owner,
        None => server.resource_templates.iter().find(|t| t.matches(uri).is_some()).and_then(|t| t.mcp),
    }
}

/// Whether updates of `uri` can reach a stream: a resource of the server's own (announced on
/// its notify route), or of an upstream whose stream mcp-edge can hold (Streamable HTTP, reached
/// with the deployment's credentials, not each user's).
fn reported(server: &Server, uri: &str) -> bool {
    owner(server, uri).is_none_or(|i| server.upstreams.get(i).is_some_and(|s| s.transport == crate::upstream::mcp::Transport::StreamableHttp && s.connection.is_none()))
}

/// The first message on the stream: what the server agreed to send.
pub fn acknowledged(id: &Value, uris: &[String], lists: &[String]) -> String {
    let mut notifications = serde_json::Map::new();
    for method in LIST_NOTIFICATIONS.iter().filter(|m| lists.iter().any(|l| l == m.name())) {
        notifications.insert(filter_name(*method).into(), json!(true));
    }
    if !uris.is_empty() {
        notifications.insert("resourceSubscriptions".into(), json!(uris));
    }
    crate::jsonrpc::notification(Method::SubscriptionsAcknowledged, json!({"notifications": notifications, "_meta": {super::meta::SUBSCRIPTION_ID: id}}))
}

/// A notification for the stream, with the subscription's id in `params._meta`.
pub fn tag(notification: &str, id: &Value) -> String {
    let Ok(mut value) = serde_json::from_slice::<Value>(notification.as_bytes()) else { return notification.to_string() };
    if let Some(params) = value.as_object_mut().map(|m| m.entry("params").or_insert_with(|| json!({}))) {
        if let Some(meta) = params.as_object_mut().map(|p| p.entry("_meta").or_insert_with(|| json!({}))) {
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(super::meta::SUBSCRIPTION_ID.into(), id.clone());
            }
        }
    }
    value.to_string()
}

/// What the method table (`crate::method`) gives this file's methods: capability, revisions,
/// whether the session's lease is kept, whether a lease serves it, cache hint, `Mcp-Name`.
/// `protocol::tests` holds it to the table, so it cannot go stale.
pub const PROPERTIES: &[(Method, &str)] = &[
    (Method::SubscriptionsListen, "capability resources; 2026-07-28 only; keeps the session: no; lease serves it: no; cacheable: no; Mcp-Name: none"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn honours_known_resources_and_tags_notifications() {
        let config = r#"{"servers":[{"name":"s","version":"1","resources":[{"uri":"file:///a","name":"a","text":"x"}]}]}"#;
        let server = crate::config::load(config).unwrap().servers.remove(0).as_ref().clone();
        let params = json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["file:///a", "file:///nope"]}});
        assert_eq!(honored(&server, Some(&params)), ["file:///a"]);
        assert_eq!(
            acknowledged(&json!(7), &["file:///a".to_string()], &[]),
            r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["file:///a"]},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}"#
        );
        assert_eq!(
            tag(&super::super::resources::updated("file:///a"), &json!("s1")),
            r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/subscriptionId":"s1"}}}"#
        );
    }

    #[test]
    fn uris_are_grouped_by_the_upstream_that_owns_them() {
        let mut server = crate::config::load(r#"{"servers":[{"name":"s","version":"1","resources":[{"uri":"file:///own","name":"own","text":"x"}],"upstreams":[{"name":"a","url":"https://a.example/mcp","prefix":"a_"},{"name":"b","url":"https://b.example/mcp","prefix":"b_"}]}]}"#).unwrap().servers.remove(0).as_ref().clone();
        let source = |i: usize| server.upstreams.get(i).unwrap().clone();
        let (a, b) = (source(0), source(1));
        let (listed, _) = crate::catalog::mcp::resources(&a, 0, &[json!({"uri": "a://one", "name": "one"}), json!({"uri": "a://two", "name": "two"})], &|_| false);
        server.resources.extend(listed);
        let (templates, _) = crate::catalog::mcp::templates(&b, 1, &[json!({"uriTemplate": "b://item/{id}", "name": "item"})]);
        server.resource_templates.extend(templates);
        let uris: Vec<String> = ["a://one", "file:///own", "b://item/7", "a://two", "nope://x"].iter().map(|u| u.to_string()).collect();
        assert_eq!(owners(&server, &uris), vec![(0, vec!["a://one".to_string(), "a://two".to_string()]), (1, vec!["b://item/7".to_string()])]);
        let many: Vec<String> = (0..100).map(|i| format!("b://item/{i}")).collect();
        assert_eq!(owners(&server, &many).first().map(|(_, u)| u.len()), Some(MAX_WATCHED_URIS));
    }

    #[test]
    fn list_changes_are_honoured_only_where_lists_change() {
        let mut server = crate::config::load(r#"{"servers":[{"name":"s","version":"1"}]}"#).unwrap().servers.remove(0).as_ref().clone();
        let params = json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": false}});
        assert!(honored_lists(&server, Some(&params)).is_empty());
        server.lists_change = true;
        let lists = honored_lists(&server, Some(&params));
        assert_eq!(lists, ["notifications/tools/list_changed", "notifications/prompts/list_changed"]);
        assert_eq!(
            acknowledged(&json!(1), &[], &lists),
            r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}"#
        );
        assert!(honored_lists(&server, None).is_empty());
    }
}
