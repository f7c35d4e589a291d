//! The hop to a Durable Object: the stub of an object of the sessions namespace, and a sealed
//! envelope (`crate::envelope`) POSTed to it. `forward` sends a session's requests this way, and
//! `object::registry::call` every other object's operations.

use worker::{Response, Result};

/// The Durable Object namespace binding that holds sessions.
pub const SESSIONS_BINDING: &str = "MCP_SESSIONS";

/// A Durable Object's stub as the runtime hands it over.
pub type ObjectStub = worker::worker_sys::DurableObject;

/// The stub of the sessions namespace's object called `name`. The binding is looked up once per
/// isolate, whose environment never changes (the checked lookup showed in CPU profiles); stubs
/// are made per request, as the runtime ties them to the request that made them.
pub fn object_stub(env: &worker::Env, name: &str) -> Result<ObjectStub> {
    thread_local! {
        static NAMESPACE: std::cell::RefCell<Option<worker::ObjectNamespace>> = const { std::cell::RefCell::new(None) };
    }
    let namespace = match NAMESPACE.with(|n| n.borrow().clone()) {
        Some(namespace) => namespace,
        None => {
            let namespace = env.durable_object(SESSIONS_BINDING)?;
            NAMESPACE.with(|n| *n.borrow_mut() = Some(namespace.clone()));
            namespace
        }
    };
    Ok(namespace.id_from_name(name)?.get_stub()?.into_rpc())
}

/// POSTs a sealed envelope (`crate::envelope`) to a Durable Object. Built on `web_sys`: the
/// `worker` wrappers would build and read `cf` objects and parse the URL on every hop.
pub async fn send_to_object(stub: &ObjectStub, body: &[u8]) -> Result<Response> {
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_body(&js_sys::Uint8Array::from(body).into());
    let request = web_sys::Request::new_with_str_and_init("https://session.internal/", &init)?;
    let response = wasm_bindgen_futures::JsFuture::from(stub.fetch_with_request(&request)?).await?;
    Ok(Response::from(wasm_bindgen::JsCast::unchecked_into::<web_sys::Response>(response)))
}
