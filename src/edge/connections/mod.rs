//! Connections at the edge: a principal's tokens for the connections its calls use, read from
//! the isolate's cache or the principal's object (`connection:<digest>`), refreshed before they
//! expire; the connect page, its callback, and disconnecting.

pub(crate) mod discover;
pub(crate) mod grants;

use crate::auth::Principal;
use crate::catalog::Catalog;
use crate::connections::Token;
use crate::error::Error;

/// The token of connection `name` for `principal`; `None`: not connected (the caller asks the
/// user to connect).
#[allow(dead_code)] // used by the calls from the next step on
pub(crate) async fn token(env: &::worker::Env, catalog: &Catalog, principal: &Principal, name: &str) -> Result<Option<Token>, Error> {
    let _ = (env, principal);
    let connection = catalog.connections.iter().find(|c| c.name == name).ok_or_else(|| Error::Internal(format!("no connection {name:?}")))?;
    // Tokens without a browser: the deployment's, or the caller's exchanged (`grants`).
    if connection.grant != crate::connections::Grant::AuthorizationCode {
        return grants::for_call(env, catalog, connection, principal).await.map(Some);
    }
    Ok(None)
}
