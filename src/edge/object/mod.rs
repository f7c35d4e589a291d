//! What runs in the Durable Objects: a session's object (`session`: its state, alarm, streams
//! and calls), the registries (`registry`: who subscribed to which resource, and each
//! principal's open sessions), the authorization server's store (`authority`) and the health
//! figures (`health`), which are objects of the same class under other names.

pub(super) mod authority;
pub(super) mod health;
pub(super) mod registry;
pub(super) mod session;
