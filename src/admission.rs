//! Admission limits that hold under concurrency: counts kept where every isolate sees the same
//! one (a Durable Object per client address, per username), each checked and taken in one
//! command, so N requests at once get the limit's worth through, not N. Pure: the counters,
//! the command, and the rules of the built-in per-address limit and of password sign-in.

use serde::{Deserialize, Serialize};

/// What one command may take from: `limit` per `period_ms` under `key`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    pub key: String,
    pub limit: u32,
    pub period_ms: u64,
}

/// A fixed window's count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counter {
    pub count: u32,
    pub since_ms: u64,
}

/// What a counting object is asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Command {
    /// One from every budget, or from none when any is spent: the check and the count are one
    /// step, inside the object's input gate.
    Take { budgets: Vec<Budget>, now_ms: u64 },
    /// These counts start again (a right password: its own budget is not the attacker's).
    Reset { keys: Vec<String> },
}

/// The answer to `Take`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Taken {
    pub allowed: bool,
    /// When refused: how long until the spent budget has room again.
    pub retry_after_ms: u64,
}

impl Counter {
    /// The count in the window that holds `now_ms` (a new one once the old has passed).
    fn current(self, period_ms: u64, now_ms: u64) -> Counter {
        if self.count == 0 || now_ms >= self.since_ms.saturating_add(period_ms) {
            Counter { count: 0, since_ms: now_ms }
        } else {
            self
        }
    }

    /// When the count no longer matters: its window is over.
    pub fn until(self, period_ms: u64) -> u64 {
        self.since_ms.saturating_add(period_ms)
    }
}

/// Takes one from each budget, given their stored counters in the same order: the counters to
/// store, or why not (and for how long).
pub fn take(budgets: &[Budget], stored: &[Counter], now_ms: u64) -> Result<Vec<Counter>, Taken> {
    let current: Vec<Counter> = budgets.iter().zip(stored.iter().copied().chain(std::iter::repeat(Counter::default()))).map(|(b, c)| c.current(b.period_ms, now_ms)).collect();
    let spent = budgets.iter().zip(&current).filter(|(b, c)| c.count >= b.limit).map(|(b, c)| c.until(b.period_ms).saturating_sub(now_ms)).max();
    if let Some(wait) = spent {
        return Err(Taken { allowed: false, retry_after_ms: wait.max(1) });
    }
    Ok(current.into_iter().map(|c| Counter { count: c.count + 1, ..c }).collect())
}

/// The built-in per-address limit (`admission` in the configuration): requests to the
/// authorization server, the console's sign-in and the admin API, per client address; and
/// Dynamic Client Registrations per address and hour on top of it, since each stores up to
/// 16 KiB for a day, and a real client registers once per connection it sets up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerAddress {
    pub requests: u32,
    pub period_ms: u64,
    pub registrations_per_hour: u32,
}

impl Default for PerAddress {
    /// Enough for people and for automation that edits tools; far too few to guess a password,
    /// a token or a client id, or to fill storage with registrations.
    fn default() -> Self {
        PerAddress { requests: 60, period_ms: 60_000, registrations_per_hour: 20 }
    }
}

impl PerAddress {
    pub fn budget(self) -> Budget {
        Budget { key: "requests".into(), limit: self.requests, period_ms: self.period_ms }
    }
}

pub fn registration_budget(limit: PerAddress) -> Budget {
    Budget { key: "registrations".into(), limit: limit.registrations_per_hour, period_ms: 3_600_000 }
}

/// Password attempts per username within `LOCKOUT_MS`, from one address or one known device.
pub const SIGN_IN_ATTEMPTS: u32 = 5;
/// Password attempts per username from every device it has not signed in on, whatever their
/// address: a guess spread over many addresses meets this.
pub const UNTRUSTED_ATTEMPTS: u32 = 30;
pub const LOCKOUT_MS: u64 = 15 * 60 * 1000;

/// What one password attempt for a username takes, before the password is checked. A device
/// the username signed in on before (its cookie) has a budget of its own, which no one else's
/// attempts spend: an attacker who locks a username out locks out only themselves and the
/// devices it never used.
pub fn sign_in_budgets(device: Option<&str>, address: &str) -> Vec<Budget> {
    let budget = |key: String, limit| Budget { key, limit, period_ms: LOCKOUT_MS };
    match device {
        Some(device) => vec![budget(format!("device:{device}"), SIGN_IN_ATTEMPTS)],
        None => vec![budget(format!("address:{address}"), SIGN_IN_ATTEMPTS), budget("untrusted".into(), UNTRUSTED_ATTEMPTS)],
    }
}

/// The counts a right password starts again: the attempt's own, not the shared one of
/// untrusted devices.
pub fn sign_in_reset(budgets: &[Budget]) -> Vec<String> {
    budgets.iter().filter(|b| b.limit == SIGN_IN_ATTEMPTS).map(|b| b.key.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(key: &str, limit: u32) -> Budget {
        Budget { key: key.into(), limit, period_ms: 1000 }
    }

    #[test]
    fn a_budget_lets_its_limit_through_per_window() {
        let budgets = [budget("a", 2)];
        let mut stored = vec![Counter::default()];
        for _ in 0..2 {
            stored = take(&budgets, &stored, 10).unwrap();
        }
        assert_eq!(take(&budgets, &stored, 500), Err(Taken { allowed: false, retry_after_ms: 510 }));
        // The next window.
        assert_eq!(take(&budgets, &stored, 1010).unwrap(), vec![Counter { count: 1, since_ms: 1010 }]);
    }

    #[test]
    fn all_budgets_or_none() {
        let budgets = [budget("a", 5), budget("b", 1)];
        let stored = take(&budgets, &[], 0).unwrap();
        assert_eq!(stored, vec![Counter { count: 1, since_ms: 0 }; 2]);
        // `b` is spent: nothing is taken from `a` either.
        assert!(take(&budgets, &stored, 1).is_err());
    }

    #[test]
    fn sign_in_budgets_keep_known_devices_apart() {
        let untrusted = sign_in_budgets(None, "203.0.113.7");
        assert_eq!(untrusted.iter().map(|b| (b.key.as_str(), b.limit)).collect::<Vec<_>>(), [("address:203.0.113.7", 5), ("untrusted", 30)]);
        assert_eq!(sign_in_reset(&untrusted), ["address:203.0.113.7"]);
        let known = sign_in_budgets(Some("d1"), "203.0.113.7");
        assert_eq!(known.iter().map(|b| b.key.as_str()).collect::<Vec<_>>(), ["device:d1"]);
        // An attacker spends every untrusted budget: the known device still has all of its own.
        let mut stored: Vec<Counter> = Vec::new();
        for _ in 0..UNTRUSTED_ATTEMPTS {
            if let Ok(next) = take(&untrusted, &stored, 0) {
                stored = next;
            }
        }
        assert!(take(&untrusted, &stored, 1).is_err());
        assert!(take(&known, &[], 1).is_ok());
    }
}
