//! `subscriptions/listen` (2026-07-28): what a listen stream honours, its acknowledgement, and
//! the subscription id on everything it carries.

use serde_json::{json, Value};

use crate::catalog::Server;

/// The resource URIs of the request's filter that this server can report on. List changes are
/// never honoured: lists change only with a deployment, which ends every stream anyway.
pub fn honored(server: &Server, params: Option<&Value>) -> Vec<String> {
    let requested = params.and_then(|p| p.pointer("/notifications/resourceSubscriptions")).and_then(Value::as_array);
    let mut uris: Vec<String> = requested.into_iter().flatten().filter_map(Value::as_str).filter(|u| super::resources::exists(server, u)).map(str::to_string).collect();
    uris.dedup();
    uris
}

/// The first message on the stream: what the server agreed to send.
pub fn acknowledged(id: &Value, uris: &[String]) -> String {
    let notifications = if uris.is_empty() { json!({}) } else { json!({"resourceSubscriptions": uris}) };
    crate::jsonrpc::notification(crate::method::Method::SubscriptionsAcknowledged, json!({"notifications": notifications, "_meta": {super::meta::SUBSCRIPTION_ID: id}}))
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
            acknowledged(&json!(7), &["file:///a".to_string()]),
            r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["file:///a"]},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}"#
        );
        assert_eq!(
            tag(&super::super::resources::updated("file:///a"), &json!("s1")),
            r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/subscriptionId":"s1"}}}"#
        );
    }
}
