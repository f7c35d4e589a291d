//! What runs in the Durable Objects: a session's object (`session`: its state, alarm, streams
//! and calls), the registries (`registry`: who subscribed to which resource, and each
//! principal's open sessions), and the authorization server's store (`authority`), which are
//! objects of the same class under other names.

pub(super) mod authority;
pub(super) mod registry;
pub(super) mod session;
