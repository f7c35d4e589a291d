//! Attempts of one upstream call: which failures are retried, how long to wait (exponential
//! backoff with jitter, or the upstream's `Retry-After`), and where redirects may lead.

use crate::weburl::{listed, WebUrl};

/// A tool's retry settings, after validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    pub initial_delay_ms: u64,
    pub max_delay_ms: u64,
}

/// How an attempt failed, as far as retrying cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// No response: refused, reset, DNS.
    Network,
    /// An HTTP status, with the `Retry-After` delay it carried, if any.
    Status { status: u16, retry_after_ms: Option<u64> },
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Wait this long, then try again.
    Retry { wait_ms: u64 },
    /// The failure is the call's outcome.
    GiveUp,
    /// The upstream asked us to wait longer than the call has left.
    OutOfTime { retry_after_ms: u64 },
}

/// Whether a failure may be retried at all: network errors, 429 and 5xx.
pub fn is_retryable(failure: Failure) -> bool {
    match failure {
        Failure::Network => true,
        Failure::Status { status, .. } => status == 429 || (500..600).contains(&status),
    }
}

/// Whether a call's outcome may be retried, by the same rule: an upstream that could not be
/// reached or did not answer in time, 429 or 5xx. The queue consumer asks the queue for another
/// delivery by it.
pub fn is_retryable_outcome(upstream: &super::reply::Upstream) -> bool {
    use super::reply::Upstream;
    match upstream {
        Upstream::Failed(_) | Upstream::TimedOut { .. } => is_retryable(Failure::Network),
        Upstream::Reply { status, .. } => is_retryable(Failure::Status { status: *status, retry_after_ms: None }),
    }
}

impl RetryPolicy {
    /// Decides after the `made`-th attempt failed. `jitter` is uniform in [0, 1): the edge draws
    /// it, so this stays deterministic.
    pub fn next(&self, made: u32, failure: Failure, remaining_ms: u64, jitter: f64) -> Step {
        if made >= self.attempts || !is_retryable(failure) {
            return Step::GiveUp;
        }
        if let Failure::Status { retry_after_ms: Some(wait), .. } = failure {
            return if wait >= remaining_ms { Step::OutOfTime { retry_after_ms: wait } } else { Step::Retry { wait_ms: wait } };
        }
        // Equal jitter: half the backoff is certain, half random, so waits never collapse to 0.
        let exponent = made.saturating_sub(1).min(32);
        let cap = self.initial_delay_ms.saturating_mul(1u64 << exponent).min(self.max_delay_ms);
        let wait = cap / 2 + ((cap / 2) as f64 * jitter.clamp(0.0, 1.0)) as u64;
        if wait >= remaining_ms {
            Step::GiveUp
        } else {
            Step::Retry { wait_ms: wait }
        }
    }
}

/// Where a redirect may lead: the configured request's own origin, or a listed host.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RedirectPolicy {
    pub max: u32,
    pub hosts: Vec<String>,
}

impl RedirectPolicy {
    /// Resolves `location` against `current` and checks it against the host rules of `first`,
    /// the URL the templates produced: the same origin (scheme, host and port, as the WHATWG
    /// parser reads them, the one workerd fetches with), or a listed host. Never downgrades
    /// https to http. The target comes back as the parser serialized it.
    pub fn target(&self, first: &str, current: &str, location: &str) -> Result<String, String> {
        let first = WebUrl::parse(first).map_err(|why| format!("the request URL is refused: {why}"))?;
        let current = WebUrl::parse(current).map_err(|why| format!("the request URL is refused: {why}"))?;
        let next = current.join(location.trim()).map_err(|why| format!("the redirect is refused: {why}"))?;
        if !matches!(next.scheme(), "http" | "https") {
            return Err(format!("the redirect to {} is not an http(s) URL", next.as_str()));
        }
        if first.scheme() == "https" && next.scheme() == "http" {
            return Err(format!("the redirect to {} would downgrade https to http", next.as_str()));
        }
        let Some(host) = next.host() else { return Err(format!("the redirect to {} has no host", next.as_str())) };
        if next.same_origin(&first) || listed(&self.hosts, host) {
            Ok(next.as_str().to_string())
        } else {
            Err(format!("the redirect to host \"{host}\" is not allowed (add it to http.redirectHosts)"))
        }
    }
}

/// The method and body after a redirect: 303, and 301/302 after a POST, become a GET
/// without a body (as browsers do); 307 and 308 repeat the request as it was.
pub fn redirected_method(status: u16, method: &str) -> (String, bool) {
    match status {
        307 | 308 => (method.to_string(), true),
        303 if method != "HEAD" => ("GET".into(), false),
        301 | 302 if method == "POST" => ("GET".into(), false),
        _ => (method.to_string(), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: RetryPolicy = RetryPolicy { attempts: 4, initial_delay_ms: 100, max_delay_ms: 300 };

    #[test]
    fn only_network_errors_429_and_5xx_are_retried() {
        let status = |status| Failure::Status { status, retry_after_ms: None };
        assert!(is_retryable(Failure::Network) && is_retryable(status(429)) && is_retryable(status(503)));
        assert!(!is_retryable(status(400)) && !is_retryable(status(404)) && !is_retryable(status(501 + 99)));
        assert_eq!(POLICY.next(1, status(404), 10_000, 0.5), Step::GiveUp);
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter() {
        let net = Failure::Network;
        assert_eq!(POLICY.next(1, net, 10_000, 0.0), Step::Retry { wait_ms: 50 });
        assert_eq!(POLICY.next(1, net, 10_000, 0.999), Step::Retry { wait_ms: 99 });
        assert_eq!(POLICY.next(2, net, 10_000, 0.0), Step::Retry { wait_ms: 100 });
        assert_eq!(POLICY.next(3, net, 10_000, 1.0), Step::Retry { wait_ms: 300 });
        assert_eq!(POLICY.next(4, net, 10_000, 0.0), Step::GiveUp, "attempts are used up");
        assert_eq!(POLICY.next(1, net, 40, 0.0), Step::GiveUp, "no time is left to wait");
    }

    #[test]
    fn retry_after_is_honoured_or_ends_the_call() {
        let busy = |ms| Failure::Status { status: 503, retry_after_ms: Some(ms) };
        assert_eq!(POLICY.next(1, busy(2_000), 5_000, 0.3), Step::Retry { wait_ms: 2_000 });
        assert_eq!(POLICY.next(1, busy(2_000), 1_500, 0.3), Step::OutOfTime { retry_after_ms: 2_000 });
    }

    #[test]
    fn redirects_stay_on_the_origin_or_listed_hosts() {
        let policy = RedirectPolicy { max: 3, hosts: vec!["cdn.example.com".into()] };
        let first = "https://api.example.com/v1/items?x=1";
        assert_eq!(policy.target(first, first, "/v2/items").unwrap(), "https://api.example.com/v2/items");
        assert_eq!(policy.target(first, first, "other?y=2").unwrap(), "https://api.example.com/v1/other?y=2");
        assert_eq!(policy.target(first, first, "?page=2").unwrap(), "https://api.example.com/v1/items?page=2");
        assert_eq!(policy.target(first, first, "https://API.example.com:443/z").unwrap(), "https://api.example.com/z", "the same origin, serialized");
        assert_eq!(policy.target(first, first, "//cdn.example.com/f").unwrap(), "https://cdn.example.com/f");
        assert!(policy.target(first, first, "https://evil.test/").unwrap_err().contains("host \"evil.test\" is not allowed"));
        assert!(policy.target(first, first, "https://api.example.com:8443/").is_err());
        assert!(policy.target(first, first, "https://api.example.com@evil.test/").unwrap_err().contains("\"evil.test\""));
        assert!(policy.target(first, first, "http://api.example.com/").unwrap_err().contains("downgrade"));
        assert!(policy.target(first, first, "ftp://api.example.com/").is_err());
        let local = "http://127.0.0.1:8788/a/b";
        assert_eq!(policy.target(local, local, "c").unwrap(), "http://127.0.0.1:8788/a/c");
        assert!(policy.target(local, local, "http://127.0.0.1:9999/").is_err());
        assert_eq!(policy.target(local, local, "http://2130706433:8788/x").unwrap(), "http://127.0.0.1:8788/x", "the same host, spelled otherwise");
    }

    #[test]
    fn a_backslash_or_a_mapped_host_never_passes_as_the_same_origin() {
        // Each of these is another host to workerd (WHATWG ends the authority at `\`) while a
        // reading that ends it at `/`, `?` or `#` alone sees api.example.com: the redirect
        // would carry every header, credentials included.
        let policy = RedirectPolicy { max: 3, hosts: vec![] };
        let first = "https://api.example.com/v1";
        for location in [
            "https://evil.example\\@api.example.com/",
            "https://evil.example\\api.example.com/",
            "/\\evil.example/",
            "\\\\evil.example/",
            "https://api.example.com\t.evil.example/",
            "https://ａｐｉ.example.com/",
            "https://evil.example#@api.example.com/",
            "https://api.example.com.evil.example/",
        ] {
            assert!(policy.target(first, first, location).is_err(), "{location:?}");
        }
        let local = "http://127.0.0.1:8788/a";
        assert!(policy.target(local, local, "http://evil.example\\@127.0.0.1:8788/").unwrap_err().contains("backslash"));
    }

    #[test]
    fn redirected_methods() {
        assert_eq!(redirected_method(303, "POST"), ("GET".into(), false));
        assert_eq!(redirected_method(302, "POST"), ("GET".into(), false));
        assert_eq!(redirected_method(307, "POST"), ("POST".into(), true));
        assert_eq!(redirected_method(301, "GET"), ("GET".into(), true));
    }
}
