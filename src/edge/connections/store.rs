//! The principal's connections' object (`connection:<digest>`, an instance of the sessions
//! class): one sealed record per connection (`token:<name>`), refreshed here before it expires,
//! one refresh at a time per connection however many isolates ask, and deleted when the
//! provider says the grant is gone; and the connect states' nonces, each claimed once.

use std::cell::RefCell;
use std::time::Duration;

use serde_json::Value;
use worker::{Delay, Env, Response, ResponseBuilder, State, Storage};

use crate::connections::sealed::Record;
use crate::connections::{flow, Command, Token, REFRESH_MARGIN_MS};
use crate::edge::object::{keys as stored, read, write};
use crate::error::Error;

const TOKEN: &str = "token:";
const USED: &str = "used:";

thread_local! {
    /// The connections a refresh is under way for, in this object: another asker waits for it.
    static REFRESHING: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn answer(text: String) -> Result<Response, Error> {
    Ok(ResponseBuilder::new().with_status(200).fixed(text.into_bytes()))
}

/// No token: not connected.
fn none() -> Result<Response, Error> {
    answer("{}".into())
}

fn token_text(token: &Token) -> String {
    format!("{{\"token\":{}}}", token.to_json())
}

fn token_answer(token: &Token) -> Result<Response, Error> {
    answer(token_text(token))
}

pub async fn serve(state: &State, env: &Env, body: &[u8]) -> Result<Response, Error> {
    let storage = state.storage();
    let command = Command::parse(body).ok_or_else(|| Error::InvalidRequest("not a connection command".into()))?;
    let keys = crate::edge::apart(super::keys(env)).await?;
    match command {
        Command::Get { principal, connection, provider, private_hosts, force, now_ms } => {
            let key = format!("{TOKEN}{connection}");
            // A refresh under way: its result is what this asker gets too.
            let flight = format!("{principal}\n{connection}");
            let mut waited = 0;
            while REFRESHING.with(|r| r.borrow().contains(&flight)) && waited < 150 {
                Delay::from(Duration::from_millis(100)).await;
                waited += 1;
            }
            let Some(sealed) = read::<String>(&storage, &key).await? else { return none() };
            let Some(record) = Record::open(&keys, &sealed, &principal, &connection) else {
                // Sealed for another principal or with a key no longer known: as good as none.
                storage.delete(&key).await?;
                return none();
            };
            let due = force && waited == 0 || record.expiring(now_ms, REFRESH_MARGIN_MS);
            let (Some(provider), Some(refresh_token), true) = (provider, record.token.refresh_token.clone(), due) else {
                if record.expiring(now_ms, 0) {
                    // Expired, and nothing can refresh it: the user connects again.
                    storage.delete(&key).await?;
                    return none();
                }
                if Record::stale(&keys, &sealed) {
                    write(&storage, &key, &record.seal(&keys, crate::edge::ids::nonce()?, &principal, &connection)).await?;
                }
                return token_answer(&record.token);
            };
            REFRESHING.with(|r| r.borrow_mut().push(flight.clone()));
            crate::edge::health::count(crate::metrics::Counter::ConnectionRefreshes, 1, Some(env));
            let refreshed = crate::edge::apart(super::post(&private_hosts, &flow::refresh_form(&provider, &refresh_token), crate::edge::now_ms(), Some(&refresh_token))).await;
            let outcome = match refreshed {
                Ok(token) => {
                    let next = Record { token: token.clone(), since_ms: record.since_ms };
                    write(&storage, &key, &next.seal(&keys, crate::edge::ids::nonce()?, &principal, &connection)).await.map(|()| token_text(&token))
                }
                Err(e) if e.grant_gone() => storage.delete(&key).await.map(|_| "{\"gone\":true}".to_string()).map_err(Error::from),
                // The provider is down: a token not yet expired still serves.
                Err(_) if !record.expiring(now_ms, 0) && !force => Ok(token_text(&record.token)),
                Err(e) => Err(Error::Internal(format!("refreshing the {connection} token: {e}"))),
            };
            REFRESHING.with(|r| r.borrow_mut().retain(|f| *f != flight));
            answer(outcome?)
        }
        Command::Put { principal, connection, token, now_ms } => {
            let record = Record { token, since_ms: now_ms };
            write(&storage, &format!("{TOKEN}{connection}"), &record.seal(&keys, crate::edge::ids::nonce()?, &principal, &connection)).await?;
            none()
        }
        Command::Delete { principal, connection } => {
            let key = format!("{TOKEN}{connection}");
            let held = match read::<String>(&storage, &key).await? {
                Some(sealed) => Record::open(&keys, &sealed, &principal, &connection).map(|r| r.token),
                None => None,
            };
            storage.delete(&key).await?;
            match held {
                Some(token) => token_answer(&token),
                None => none(),
            }
        }
        Command::List { principal } => {
            let mut list = Vec::new();
            for (key, text) in stored(&storage, TOKEN).await? {
                let name = key.trim_start_matches(TOKEN);
                let sealed: String = serde_json::from_slice(text.as_bytes()).unwrap_or_default();
                if let Some(r) = Record::open(&keys, &sealed, &principal, name) {
                    list.push(crate::connections::members(vec![("connection", Value::from(name)), ("sinceMs", Value::from(r.since_ms)), ("scope", Value::from(r.token.scope))]));
                }
            }
            answer(format!("{{\"connections\":{}}}", Value::Array(list)))
        }
        Command::Claim { nonce, until_ms, now_ms } => {
            sweep(&storage, now_ms).await?;
            let key = format!("{USED}{nonce}");
            if read::<u64>(&storage, &key).await?.is_some() {
                return answer("{\"claimed\":false}".into());
            }
            write(&storage, &key, &until_ms).await?;
            answer("{\"claimed\":true}".into())
        }
    }
}

/// Nonces whose state has expired are forgotten: a replay of one is refused as stale anyway.
async fn sweep(storage: &Storage, now_ms: u64) -> Result<(), Error> {
    for (key, text) in stored(storage, USED).await? {
        if serde_json::from_slice::<u64>(text.as_bytes()).is_ok_and(|until| until <= now_ms) {
            storage.delete(&key).await?;
        }
    }
    Ok(())
}
