//! The authorization server's Durable Objects (instances of the sessions class, named by
//! `oauth::store::Object`): the generated signing key, each registered client, each grant, and
//! the list of revocations. `oauth::store` names the commands and `oauth::grant` decides them;
//! this file reads and writes, each command between one read and its write. Each object's
//! alarm deletes what has expired, so a grant, an unused registration or an old revocation
//! leaves nothing stored behind.

use serde_json::{json, Value};
use worker::{Response, ResponseBuilder, State, Storage};

use super::{keys, read, write};
use crate::error::Error;
use crate::oauth::client::{Client, Origin};
use crate::oauth::grant::{self, CodeRecord, Grant, Refused};
use crate::oauth::store::Command;
use crate::oauth::{digest, OAuthError};

/// Revocations are listed this long: past it, every access token of the grant has expired.
const REVOCATIONS_KEPT_MS: u64 = 24 * 3600 * 1000;
/// A registered client that never got a grant is forgotten after this long: some clients
/// register anew on every connection, and open registration must not fill storage for long.
const UNUSED_CLIENT_MS: u64 = 24 * 3600 * 1000;
/// A grant object is kept this long after its code expired unexchanged, or its grant ended, so
/// that a late use of its code or refresh token is still told apart from garbage.
const ENDED_KEPT_MS: u64 = 3600 * 1000;

const CLIENT: &str = "client";
const CODE: &str = "code";
const GRANT: &str = "grant";
/// A refresh token this grant issued and that was used: presented again, it revokes the grant.
const SPENT: &str = "spent:";
/// A grant of a client, by id, with its expiry.
const CLIENT_GRANT: &str = "clientgrant:";
const CONSENT: &str = "consent:";
const REVOKED: &str = "revoked:";

fn answer(value: &Value) -> Result<Response, Error> {
    Ok(ResponseBuilder::new().with_status(200).fixed(value.to_string().into_bytes()))
}

/// An answer of one member, `{"<name>":<value>}` (`name` a plain word): the bytes
/// `answer(&json!({name: value}))` would send, written by the serializer that stores the value
/// rather than through a second one, into a `Value`.
fn answer_member<T: serde::Serialize>(name: &str, value: &T) -> Result<Response, Error> {
    let text = serde_json::to_string(value).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(ResponseBuilder::new().with_status(200).fixed(format!("{{\"{name}\":{text}}}").into_bytes()))
}

fn refused(error: &OAuthError) -> Result<Response, Error> {
    answer_member("refused", error)
}

/// A refusal of `grant`'s rules: the grant it names is revoked first, and the answer says so,
/// so that the Worker that asked stops its tokens at once and lists the revocation.
async fn refuse(storage: &Storage, refused: Refused) -> Result<Response, Error> {
    if refused.revoke.is_some() {
        revoke(storage).await?;
    }
    answer(&json!({"refused": refused.error, "revoked": refused.revoke}))
}

/// Marks this object's grant revoked: its refresh token stops working.
async fn revoke(storage: &Storage) -> Result<(), Error> {
    if let Some(mut g) = read::<Grant>(storage, GRANT).await? {
        g.revoked = true;
        write(storage, GRANT, &g).await?;
    }
    Ok(())
}

/// Serves one command inside the object it concerns.
pub async fn serve(state: &State, body: &[u8]) -> Result<Response, Error> {
    let storage = state.storage();
    let command: Command = serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(format!("oauth command: {e}")))?;
    match command {
        Command::Key { generated } => {
            let key = match read::<String>(&storage, "key").await? {
                Some(k) => k,
                None => {
                    write(&storage, "key", &generated).await?;
                    generated
                }
            };
            answer(&json!({"key": key}))
        }
        Command::PutClient { client } => {
            let forget_at = client.issued_at.saturating_mul(1000).saturating_add(UNUSED_CLIENT_MS);
            write(&storage, CLIENT, &client).await?;
            if matches!(client.origin, Origin::Registered { .. }) {
                crate::edge::arm_by(storage.as_raw(), forget_at).await;
            }
            answer(&json!({}))
        }
        Command::GetClient { .. } => {
            let client: Option<Client> = read(&storage, CLIENT).await?;
            answer_member("client", &client)
        }
        Command::DeleteClient { registration_token, .. } => {
            let client: Option<Client> = read(&storage, CLIENT).await?;
            let Some(Client { origin: Origin::Registered { registration_token: expected }, .. }) = client else {
                return refused(&OAuthError::new(401, "invalid_token", "no such registered client"));
            };
            if registration_token.is_some_and(|t| !crate::auth::same_secret(&expected, &t)) {
                return refused(&OAuthError::new(401, "invalid_token", "the registration access token is not valid"));
            }
            let grants: Vec<String> = keys(&storage, CLIENT_GRANT).await?.into_iter().filter_map(|(k, _)| k.strip_prefix(CLIENT_GRANT).map(str::to_string)).collect();
            storage.delete_all().await?;
            answer(&json!({"grants": grants}))
        }
        Command::IndexGrant { grant, expires_ms, .. } => {
            write(&storage, &format!("{CLIENT_GRANT}{grant}"), &expires_ms).await?;
            crate::edge::arm_by(storage.as_raw(), expires_ms).await;
            answer(&json!({}))
        }
        Command::ConsentGiven { principal, resource, scope, .. } => {
            let given: Option<Vec<String>> = read(&storage, &format!("{CONSENT}{}", digest(&format!("{principal}\n{resource}")))).await?;
            let covers = given.is_some_and(|g| scope.iter().all(|s| g.contains(s)));
            answer(&json!({"given": covers}))
        }
        Command::RememberConsent { principal, resource, scope, .. } => {
            write(&storage, &format!("{CONSENT}{}", digest(&format!("{principal}\n{resource}"))), &scope).await?;
            answer(&json!({}))
        }
        Command::PutCode { hash, record, .. } => {
            let kept_until = record.expires_ms.saturating_add(ENDED_KEPT_MS);
            write(&storage, &format!("{CODE}:{hash}"), &record).await?;
            crate::edge::arm_by(storage.as_raw(), kept_until).await;
            answer(&json!({}))
        }
        Command::Exchange { grant: grant_id, code, exchange, refresh, lifetime_ms, now_ms } => {
            let key = format!("{CODE}:{code}");
            let Some(mut record) = read::<CodeRecord>(&storage, &key).await? else {
                return refused(&OAuthError::invalid_grant("the code is not valid"));
            };
            if let Err(r) = grant::redeem(&record, &exchange, now_ms) {
                return refuse(&storage, r).await;
            }
            let grant = Grant::start(grant_id.clone(), &record, refresh, now_ms, lifetime_ms);
            record.grant = Some(grant_id);
            // The last steps: nothing after them can fail the exchange, so a client never sees
            // an error for a code that was in fact used (its retry would revoke the grant).
            write(&storage, &key, &record).await?;
            write(&storage, GRANT, &grant).await?;
            crate::edge::arm_by(storage.as_raw(), grant.expires_ms.saturating_add(ENDED_KEPT_MS)).await;
            answer_member("grant", &grant)
        }
        Command::Refresh { presented, client_id, resource, next, now_ms, .. } => {
            let Some(mut grant) = read::<Grant>(&storage, GRANT).await? else {
                return refused(&OAuthError::invalid_grant("the refresh token is not valid (or its grant has ended); sign in again"));
            };
            // Only a token this grant issued and spent revokes it when it comes back: one made up
            // around a known grant id is merely not valid.
            let spent = read::<u64>(&storage, &format!("{SPENT}{presented}")).await?.is_some();
            if grant.refresh != presented && !spent {
                return refused(&OAuthError::invalid_grant("the refresh token is not valid"));
            }
            if let Err(r) = grant.refresh(&presented, &client_id, resource.as_deref(), now_ms) {
                return refuse(&storage, r).await;
            }
            write(&storage, &format!("{SPENT}{}", grant.refresh), &now_ms).await?;
            grant.refresh = next;
            write(&storage, GRANT, &grant).await?;
            answer_member("grant", &grant)
        }
        Command::Revoke { grant: grant_id, presented, client_id, .. } => {
            let grant: Option<Grant> = read(&storage, GRANT).await?;
            let issued = match (&presented, &grant) {
                (None, _) => true,
                (Some(p), Some(g)) => g.refresh == *p || read::<u64>(&storage, &format!("{SPENT}{p}")).await?.is_some(),
                (Some(_), None) => false,
            };
            let owned = issued && grant.is_some_and(|g| client_id.is_none_or(|c| g.client_id == c));
            // RFC 7009 §2.1: a token of another client is left alone, and the answer is the same.
            if owned {
                revoke(&storage).await?;
                return answer(&json!({"revoked": grant_id}));
            }
            answer(&json!({}))
        }
        Command::GrantAlive { now_ms, .. } => {
            let alive = read::<Grant>(&storage, GRANT).await?.is_some_and(|g| !g.revoked && g.expires_ms > now_ms);
            answer(&json!({"alive": alive}))
        }
        Command::Revoked { since_ms } => {
            let ids: Vec<String> = keys(&storage, REVOKED).await?.into_iter().filter(|(_, at)| at.parse::<u64>().is_ok_and(|at| at >= since_ms)).filter_map(|(k, _)| k.strip_prefix(REVOKED).map(str::to_string)).collect();
            answer(&json!({"revoked": ids}))
        }
        Command::NoteRevoked { grants, now_ms } => {
            for grant in &grants {
                write(&storage, &format!("{REVOKED}{grant}"), &now_ms).await?;
            }
            crate::edge::arm_by(storage.as_raw(), now_ms + REVOCATIONS_KEPT_MS).await;
            answer(&json!({}))
        }
    }
}

/// From the object's alarm: whatever has expired goes. A grant object goes whole once its code
/// expired unused or its grant ended; a client object loses its ended grants, and an unused
/// registration goes whole; old revocations leave the list. `false` when the object holds none
/// of these.
pub async fn sweep(storage: &Storage, now_ms: u64) -> Result<bool, Error> {
    let mut next: Option<u64> = None;
    let later = |next: &mut Option<u64>, at: u64| *next = Some(next.map_or(at, |n| n.min(at)));
    let mut found = false;
    // A grant's object.
    let grant: Option<Grant> = read(storage, GRANT).await?;
    let codes = keys(storage, &format!("{CODE}:")).await?;
    if grant.is_some() || !codes.is_empty() {
        let until = match &grant {
            Some(g) => g.expires_ms.saturating_add(ENDED_KEPT_MS),
            None => codes.iter().filter_map(|(_, text)| serde_json::from_slice::<CodeRecord>(text.as_bytes()).ok()).map(|c| c.expires_ms.saturating_add(ENDED_KEPT_MS)).max().unwrap_or(0),
        };
        if until <= now_ms {
            storage.delete_all().await?;
            return Ok(true);
        }
        found = true;
        later(&mut next, until);
    }
    // A client's object: the index of its grants, and a registration no grant uses.
    let mut alive = 0;
    for (key, text) in keys(storage, CLIENT_GRANT).await? {
        found = true;
        match text.parse::<u64>() {
            Ok(until) if until > now_ms => {
                alive += 1;
                later(&mut next, until);
            }
            _ => {
                storage.delete(&key).await?;
            }
        }
    }
    if let Some(client) = read::<Client>(storage, CLIENT).await? {
        found = true;
        if matches!(client.origin, Origin::Registered { .. }) && alive == 0 {
            let forget_at = client.issued_at.saturating_mul(1000).saturating_add(UNUSED_CLIENT_MS);
            if forget_at <= now_ms {
                storage.delete_all().await?;
                return Ok(true);
            }
            later(&mut next, forget_at);
        }
    }
    // The revocations' object.
    for (key, text) in keys(storage, REVOKED).await? {
        found = true;
        match text.parse::<u64>() {
            Ok(at) if at + REVOCATIONS_KEPT_MS > now_ms => later(&mut next, at + REVOCATIONS_KEPT_MS),
            _ => {
                storage.delete(&key).await?;
            }
        }
    }
    if let Some(at) = next {
        storage.set_alarm(std::time::Duration::from_millis(at.saturating_sub(now_ms).max(1))).await?;
    }
    Ok(found)
}
