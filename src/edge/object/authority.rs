//! The authorization server's Durable Object (`oauth`, an instance of the sessions class): its
//! clients, codes, grants, refresh tokens, consents and sign-in failures, each under its own key
//! as JSON text. `oauth::store` names the commands and `oauth::grant` decides them; this file
//! reads and writes.

use serde_json::{json, Value};
use worker::{Response, ResponseBuilder, State, Storage};

use super::{keys, read, write};
use crate::error::Error;
use crate::oauth::client::{Client, Origin};
use crate::oauth::grant::{self, CodeRecord, Grant, Refused};
use crate::oauth::store::{Command, Failures};
use crate::oauth::{digest, OAuthError};

/// How often expired codes, grants and refresh records are swept: at most hourly, on use.
const SWEEP_EVERY_MS: u64 = 3600 * 1000;
/// Revocations are listed this long: past it, every access token of the grant has expired.
const REVOCATIONS_KEPT_MS: u64 = 24 * 3600 * 1000;
/// A registered client that never got a grant is forgotten after this long: some clients
/// register anew on every connection.
const UNUSED_CLIENT_MS: u64 = 7 * 24 * 3600 * 1000;

fn answer(value: &Value) -> Result<Response, Error> {
    Ok(ResponseBuilder::new().with_status(200).fixed(value.to_string().into_bytes()))
}

fn refused(error: &OAuthError) -> Result<Response, Error> {
    answer(&json!({"refused": error}))
}

/// A refusal of `grant`'s rules: the grant it names is revoked first, and the answer says so, so
/// that the Worker that asked stops its tokens at once.
async fn refuse(storage: &Storage, refused: Refused, now_ms: u64) -> Result<Response, Error> {
    if let Some(g) = &refused.revoke {
        revoke(storage, g, now_ms).await?;
    }
    answer(&json!({"refused": refused.error, "revoked": refused.revoke}))
}

async fn revoke(storage: &Storage, grant_id: &str, now_ms: u64) -> Result<(), Error> {
    let key = format!("grant:{grant_id}");
    if let Some(mut g) = read::<Grant>(storage, &key).await? {
        g.revoked = true;
        write(storage, &key, &g).await?;
    }
    write(storage, &format!("revoked:{grant_id}"), &now_ms).await
}

/// Deletes what has expired, at most once an hour.
async fn sweep(storage: &Storage, now_ms: u64) -> Result<(), Error> {
    let last: u64 = read(storage, "swept").await?.unwrap_or(0);
    if now_ms < last + SWEEP_EVERY_MS {
        return Ok(());
    }
    write(storage, "swept", &now_ms).await?;
    let mut stale = Vec::new();
    for (key, text) in keys(storage, "code:").await? {
        if serde_json::from_str::<CodeRecord>(&text).map_or(true, |c| c.expires_ms <= now_ms) {
            stale.push(key);
        }
    }
    for (key, text) in keys(storage, "grant:").await? {
        if serde_json::from_str::<Grant>(&text).map_or(true, |g| g.expires_ms <= now_ms) {
            stale.push(key);
        }
    }
    for (key, text) in keys(storage, "refresh:").await? {
        // A refresh record is its grant's id and expiry.
        if serde_json::from_str::<(String, u64)>(&text).map_or(true, |(_, until)| until <= now_ms) {
            stale.push(key);
        }
    }
    for (key, text) in keys(storage, "revoked:").await? {
        if text.parse::<u64>().map_or(true, |at| at + REVOCATIONS_KEPT_MS <= now_ms) {
            stale.push(key);
        }
    }
    for (key, text) in keys(storage, "failures:").await? {
        if serde_json::from_str::<Failures>(&text).map_or(true, |f| f.since_ms + crate::oauth::store::LOCKOUT_MS <= now_ms) {
            stale.push(key);
        }
    }
    // A client's grant index entries outlive their grants; a client with none left, registered
    // long enough ago, is forgotten.
    let grants: std::collections::HashSet<String> = keys(storage, "grant:").await?.into_iter().filter(|(k, _)| !stale.contains(k)).filter_map(|(k, _)| k.strip_prefix("grant:").map(str::to_string)).collect();
    let mut in_use = std::collections::HashSet::new();
    for (key, _) in keys(storage, "clientgrant:").await? {
        let (client, grant) = key.trim_start_matches("clientgrant:").rsplit_once(':').unwrap_or_default();
        if grants.contains(grant) {
            in_use.insert(client.to_string());
        } else {
            stale.push(key.clone());
        }
    }
    for (key, text) in keys(storage, "client:").await? {
        let unused = serde_json::from_str::<Client>(&text).is_ok_and(|c| matches!(c.origin, Origin::Registered { .. }) && c.issued_at * 1000 + UNUSED_CLIENT_MS <= now_ms && !in_use.contains(&c.client_id));
        if unused {
            stale.push(key);
        }
    }
    for chunk in stale.chunks(128) {
        storage.delete_multiple(chunk.to_vec()).await?;
    }
    Ok(())
}

/// Serves one command inside the object.
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
            write(&storage, &format!("client:{}", client.client_id), &client).await?;
            answer(&json!({}))
        }
        Command::GetClient { client_id } => {
            let client: Option<Client> = read(&storage, &format!("client:{client_id}")).await?;
            answer(&json!({"client": client}))
        }
        Command::DeleteClient { client_id, registration_token, now_ms } => {
            let client: Option<Client> = read(&storage, &format!("client:{client_id}")).await?;
            let Some(Client { origin: Origin::Registered { registration_token: expected }, .. }) = client else {
                return refused(&OAuthError::new(401, "invalid_token", "no such registered client"));
            };
            if registration_token.is_some_and(|t| !crate::auth::same_secret(&expected, &t)) {
                return refused(&OAuthError::new(401, "invalid_token", "the registration access token is not valid"));
            }
            storage.delete(&format!("client:{client_id}")).await?;
            let mut revoked = Vec::new();
            for (key, _) in keys(&storage, &format!("clientgrant:{client_id}:")).await? {
                if let Some(grant_id) = key.rsplit(':').next() {
                    revoke(&storage, grant_id, now_ms).await?;
                    revoked.push(grant_id.to_string());
                }
                storage.delete(&key).await?;
            }
            answer(&json!({"revoked": revoked}))
        }
        Command::PutCode { hash, record } => {
            write(&storage, &format!("code:{hash}"), &record).await?;
            answer(&json!({}))
        }
        Command::Exchange { code, exchange, grant_id, refresh, lifetime_ms, now_ms } => {
            let key = format!("code:{code}");
            let Some(mut record) = read::<CodeRecord>(&storage, &key).await? else {
                return refused(&OAuthError::invalid_grant("the code is not valid"));
            };
            if let Err(r) = grant::redeem(&record, &exchange, now_ms) {
                return refuse(&storage, r, now_ms).await;
            }
            let grant = Grant::start(grant_id.clone(), &record, refresh.clone(), now_ms, lifetime_ms);
            record.grant = Some(grant_id.clone());
            write(&storage, &key, &record).await?;
            write(&storage, &format!("grant:{grant_id}"), &grant).await?;
            write(&storage, &format!("refresh:{refresh}"), &(grant_id.clone(), grant.expires_ms)).await?;
            write(&storage, &format!("clientgrant:{}:{grant_id}", grant.client_id), &now_ms).await?;
            // After the exchange, so that an expired code is still there to be told apart.
            sweep(&storage, now_ms).await?;
            answer(&json!({"grant": grant}))
        }
        Command::Refresh { presented, client_id, resource, next, now_ms } => {
            let Some((grant_id, _)) = read::<(String, u64)>(&storage, &format!("refresh:{presented}")).await? else {
                return refused(&OAuthError::invalid_grant("the refresh token is not valid"));
            };
            let key = format!("grant:{grant_id}");
            let Some(mut grant) = read::<Grant>(&storage, &key).await? else {
                return refused(&OAuthError::invalid_grant("the grant has expired; sign in again"));
            };
            if let Err(r) = grant.refresh(&presented, &client_id, resource.as_deref(), now_ms) {
                return refuse(&storage, r, now_ms).await;
            }
            grant.refresh = next.clone();
            write(&storage, &key, &grant).await?;
            write(&storage, &format!("refresh:{next}"), &(grant_id, grant.expires_ms)).await?;
            answer(&json!({"grant": grant}))
        }
        Command::Revoke { refresh, grant, client_id, now_ms } => {
            let grant_id = match (refresh, grant) {
                (Some(hash), _) => read::<(String, u64)>(&storage, &format!("refresh:{hash}")).await?.map(|(g, _)| g),
                (None, g) => g,
            };
            if let Some(id) = grant_id {
                let owned = read::<Grant>(&storage, &format!("grant:{id}")).await?.is_some_and(|g| g.client_id == client_id);
                // RFC 7009 §2.1: a token of another client is left alone, and the answer is the same.
                if owned {
                    revoke(&storage, &id, now_ms).await?;
                    return answer(&json!({"revoked": id}));
                }
            }
            answer(&json!({}))
        }
        Command::GrantAlive { grant, now_ms } => {
            let alive = read::<Grant>(&storage, &format!("grant:{grant}")).await?.is_some_and(|g| !g.revoked && g.expires_ms > now_ms);
            answer(&json!({"alive": alive}))
        }
        Command::Revoked { since_ms } => {
            let ids: Vec<String> = keys(&storage, "revoked:").await?.into_iter().filter(|(_, at)| at.parse::<u64>().is_ok_and(|at| at >= since_ms)).filter_map(|(k, _)| k.strip_prefix("revoked:").map(str::to_string)).collect();
            answer(&json!({"revoked": ids}))
        }
        Command::ConsentGiven { client_id, principal, resource, scope } => {
            let given: Option<Vec<String>> = read(&storage, &format!("consent:{}", digest(&format!("{client_id}\n{principal}\n{resource}")))).await?;
            let covers = given.is_some_and(|g| scope.iter().all(|s| g.contains(s)));
            answer(&json!({"given": covers}))
        }
        Command::RememberConsent { client_id, principal, resource, scope } => {
            write(&storage, &format!("consent:{}", digest(&format!("{client_id}\n{principal}\n{resource}"))), &scope).await?;
            answer(&json!({}))
        }
        Command::SignInAllowed { username, now_ms } => {
            let failures: Failures = read(&storage, &format!("failures:{}", digest(&username))).await?.unwrap_or_default();
            answer(&json!({"allowed": failures.allowed(now_ms)}))
        }
        Command::SignInAttempt { username, failed, now_ms } => {
            let key = format!("failures:{}", digest(&username));
            let failures: Failures = read(&storage, &key).await?.unwrap_or_default();
            let next = failures.record(failed, now_ms);
            if next == Failures::default() {
                storage.delete(&key).await?;
            } else {
                write(&storage, &key, &next).await?;
            }
            answer(&json!({}))
        }
    }
}
