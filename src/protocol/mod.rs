//! MCP messages by area, one file per area, each method's params type beside its handler:
//! `lifecycle` (`initialize`, `ping`, `server/discover`), `tools`, `resources` (with
//! `resources/subscribe` and `resources/unsubscribe`), `prompts`, `completion`, `logging`,
//! `subscriptions` (`subscriptions/listen`), `tasks` (`tasks/*`). Here: the one parse every
//! params type goes through, and paging. `meta/` is the 2026-07-28 request `_meta`, `mrtr` its
//! input-required retries.

pub mod action;
pub mod completion;
pub mod lifecycle;
pub mod logging;
pub mod meta;
pub mod mrtr;
pub mod prompts;
pub mod resources;
pub mod subscriptions;
pub mod tasks;
pub mod tools;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::error::Error;

/// A method's params type: its typed members deserialized, and those it keeps as sent (JSON it
/// passes on, or checks itself: a tool's arguments, `_meta`) taken by `keep` from the params
/// object. Deserializing a `Value` member would cost the module ~7 KB (gzip) of a `Value`
/// deserializer of its own; a clone costs nothing new.
pub trait Params: DeserializeOwned {
    /// Takes the members kept as sent; `#[serde(skip)]` on each.
    fn keep(&mut self, _members: &Map<String, Value>) {}
}

/// A member kept as sent; null is none.
pub fn member(members: &Map<String, Value>, name: &str) -> Option<Value> {
    members.get(name).filter(|v| !v.is_null()).cloned()
}

/// A method's params, parsed once into its type. Absent params (or an array, which names no
/// member) read as `{}`; members the type does not name are ignored. A fault is -32602 naming
/// its JSON path: `cursor: invalid type: integer `5`, expected a string`. One generic function, so
/// that each type costs the module only its own `Deserialize`.
pub fn params<T: Params>(params: Option<&Value>) -> Result<T, Error> {
    let empty = Value::Object(Map::new());
    let value = params.filter(|p| p.is_object()).unwrap_or(&empty);
    let mut typed: T = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let fault = e.into_inner();
        Error::InvalidParams(if path == "." { fault.to_string() } else { format!("{path}: {fault}") })
    })?;
    if let Some(members) = value.as_object() {
        typed.keep(members);
    }
    Ok(typed)
}

/// Params read leniently, where no member can make the request fail (every member kept as
/// sent): no path to name, so no `serde_path_to_error` code for the type.
pub fn lenient<T: Params + Default>(params: Option<&Value>) -> T {
    let mut typed = T::default();
    if let Some(members) = params.and_then(Value::as_object) {
        typed.keep(members);
    }
    typed
}

/// The params of every list method (`tools/list`, `resources/list`,
/// `resources/templates/list`, `prompts/list`): where the page starts.
#[derive(Debug, Default, Deserialize)]
pub struct ListParams {
    pub cursor: Option<String>,
}

impl Params for ListParams {}

/// One page of a list result under `key`. Cursors are offsets, opaque to clients; without a
/// page size everything is on the first page.
pub fn page<'a>(key: &str, items: &'a [Value], params: &ListParams, page_size: Option<usize>) -> Result<Value, Error> {
    let start = match &params.cursor {
        None => 0,
        Some(c) => c.parse::<usize>().ok().filter(|&n| n <= items.len()).ok_or_else(|| Error::InvalidParams(format!("invalid cursor {c:?}")))?,
    };
    let end = start.saturating_add(page_size.unwrap_or(usize::MAX)).min(items.len());
    let slice: &'a [Value] = items.get(start..end).unwrap_or_default();
    let mut result = serde_json::Map::new();
    result.insert(key.to_string(), json!(slice));
    if end < items.len() {
        result.insert("nextCursor".into(), json!(end.to_string()));
    }
    Ok(Value::Object(result))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::Method;

    /// Every request a client sends has its area file, and each file's `PROPERTIES` say what
    /// the table says.
    #[test]
    fn each_request_is_in_one_area_file_with_the_tables_properties() {
        let areas = [lifecycle::PROPERTIES, tools::PROPERTIES, resources::PROPERTIES, subscriptions::PROPERTIES, prompts::PROPERTIES, completion::PROPERTIES, logging::PROPERTIES, tasks::PROPERTIES];
        let listed: Vec<Method> = areas.iter().flat_map(|a| a.iter().map(|(m, _)| *m)).collect();
        let requests = Method::ALL.iter().position(|m| *m == Method::TasksUpdate).unwrap();
        assert_eq!(listed, Method::ALL[..=requests]);
        for (method, properties) in areas.iter().flat_map(|a| a.iter()) {
            assert_eq!(*properties, method.properties(), "{method}");
        }
    }

    #[test]
    fn a_faulty_param_is_invalid_params_naming_its_path() {
        let fault = |p: Value| params::<ListParams>(Some(&p)).unwrap_err().message();
        assert_eq!(fault(json!({"cursor": 5})), "Invalid params: cursor: invalid type: integer `5`, expected a string");
        assert_eq!(params::<ListParams>(Some(&json!({"cursor": null, "other": 1}))).unwrap().cursor, None);
        assert_eq!(params::<ListParams>(None).unwrap().cursor, None);
        assert_eq!(params::<ListParams>(Some(&json!([1]))).unwrap().cursor, None);
        assert_eq!(params::<tools::CallParams>(Some(&json!({}))).unwrap_err().message(), "Invalid params: missing field `name`");
        assert_eq!(params::<completion::CompleteParams>(Some(&json!({"ref": {"type": 1}}))).unwrap_err().code(), -32602);
        let nested = params::<completion::CompleteParams>(Some(&json!({"ref": {"type": "ref/prompt"}, "argument": {"name": 3}}))).unwrap_err().message();
        assert!(nested.starts_with("Invalid params: argument.name: invalid type"), "{nested}");
    }
}
