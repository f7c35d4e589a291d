//! `subscriptions/listen` (2026-07-28): what a listen stream honours, its acknowledgement, and
//! the subscription id on everything it carries.
//!
//! | method | params | handler |
//! |---|---|---|
//! | `subscriptions/listen` | [`ListenParams`] | [`honored`] and [`honored_lists`], then [`acknowledged`] (the edge opens the stream) |
//!
//! What the method table gives it: see [`PROPERTIES`]. A session's `resources/subscribe` is in
//! `resources`.

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
    let mut uris: Vec<String> = requested.into_iter().flatten().filter_map(Value::as_str).filter(|u| super::resources::exists(server, u)).map(str::to_string).collect();
    uris.dedup();
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
