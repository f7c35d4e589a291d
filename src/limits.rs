//! Rate limits, quotas and concurrency limits on tool calls (a server's `rateLimits`), pure:
//! which limits a call meets and under which key it is counted, a token bucket and a calendar
//! quota as state the counting object keeps, the concurrency slots of an upstream, and the
//! `RateLimit`/`RateLimit-Policy`/`Retry-After` values of a refusal. The edge
//! (`edge::limits`) carries each call's takes to the Durable Objects that count them.

use wildmatch::WildMatch;

/// What a limit's key is made of, in the order the configuration lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    Principal,
    Client,
    Tool,
    Server,
    Upstream,
}

/// A token bucket: `milli_per_second` thousandths of a token flow in each second (no floats
/// cross the wire), at most `burst` tokens are kept; a call takes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub milli_per_second: u64,
    pub burst: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Hour,
    Day,
    Month,
}

/// `calls` per UTC calendar hour, day or month.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub calls: u32,
    pub period: Period,
}

/// Calls in flight at once: `max` running, `queue` more waiting (first come, first served) at
/// most `queue_timeout_ms` each; beyond that, refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Concurrency {
    pub max: u32,
    pub queue: u32,
    pub queue_timeout_ms: u64,
}

/// One compiled entry of `rateLimits`.
#[derive(Debug, Clone)]
pub struct Limit {
    pub name: String,
    pub per: Vec<Per>,
    /// Globs over the tool's name as called; empty: every tool.
    pub tools: Vec<WildMatch>,
    pub rate: Option<Rate>,
    pub quota: Option<Quota>,
    pub concurrency: Option<Concurrency>,
}

/// Who and what a call is, as keys name it.
pub struct Caller<'a> {
    pub principal: &'a str,
    pub client: &'a str,
    pub tool: &'a str,
    pub server: &'a str,
    pub upstream: &'a str,
}

impl Caller<'_> {
    /// The client a call is counted under: the OAuth client the principal came through, or the
    /// principal itself when its credential names none (a static token is its own client).
    pub fn client_of<'a>(principal: &'a str, client: Option<&'a str>) -> &'a str {
        client.filter(|c| !c.is_empty()).unwrap_or(principal)
    }
}

impl Limit {
    /// Whether this limit counts calls of `tool`.
    pub fn applies(&self, tool: &str) -> bool {
        self.tools.is_empty() || self.tools.iter().any(|g| g.matches(tool))
    }

    /// The key a call is counted under: each part length-prefixed, so no value a client
    /// chooses can make two keys meet (the edge names the object by a digest of it).
    pub fn key(&self, caller: &Caller) -> String {
        let mut key = String::new();
        for per in &self.per {
            let part = match per {
                Per::Principal => caller.principal,
                Per::Client => caller.client,
                Per::Tool => caller.tool,
                Per::Server => caller.server,
                Per::Upstream => caller.upstream,
            };
            key.push_str(&part.len().to_string());
            key.push(':');
            key.push_str(part);
        }
        key
    }

    /// The counted part of the limit, as the counting object is told it.
    pub fn rule(&self) -> Rule {
        Rule { rate: self.rate, quota: self.quota }
    }

    /// `RateLimit-Policy`'s item for this limit: a quota and its window in seconds (a bucket's
    /// window is the time it takes to fill); the tighter when a limit has both.
    pub fn policy(&self, now_ms: u64) -> String {
        let (q, w) = match (self.quota, self.rate) {
            (Some(quota), _) => {
                let (start, end) = window(quota.period, now_ms);
                (quota.calls, (end - start) / 1000)
            }
            (None, Some(rate)) => (rate.burst, (u64::from(rate.burst) * 1000).div_ceil(rate.milli_per_second.max(1)).max(1)),
            (None, None) => match self.concurrency {
                Some(c) => (c.max, 1),
                None => (0, 1),
            },
        };
        let mut item = sf_string(&self.name);
        item.push_str(";q=");
        item.push_str(&q.to_string());
        item.push_str(";w=");
        item.push_str(&w.to_string());
        item
    }
}

/// A structured-field string of a limit's name, which the configuration keeps to printable
/// ASCII without `"` or `\\`: quoted as it is.
pub fn sf_string(name: &str) -> String {
    ["\"", name, "\""].concat()
}

/// `RateLimit`'s item: what is left and the seconds until the window or bucket is full again.
pub fn state_header(name: &str, remaining: u32, reset_ms: u64) -> String {
    let mut item = sf_string(name);
    item.push_str(";r=");
    item.push_str(&remaining.to_string());
    item.push_str(";t=");
    item.push_str(&seconds(reset_ms).to_string());
    item
}

/// The refusal in a single JSON reply, if it is one (which a JSON answer sends as a 429): only
/// a reply that mentions `retryAfterMs` and `policy` is parsed.
pub fn refusal_of(reply: &str) -> Option<crate::error::Refused> {
    if !reply.contains("\"retryAfterMs\"") || !reply.contains("\"policy\"") {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(reply).ok()?;
    let data = value.get("error")?.get("data")?;
    Some(crate::error::Refused {
        limit: data.get("limit")?.as_str()?.to_string(),
        retry_after_ms: data.get("retryAfterMs")?.as_u64()?,
        policy: data.get("policy")?.as_str()?.to_string(),
    })
}

/// A refusal's `Retry-After`, `RateLimit-Policy` and `RateLimit`.
pub fn headers(refused: &crate::error::Refused) -> [(&'static str, String); 3] {
    [
        ("Retry-After", seconds(refused.retry_after_ms).to_string()),
        ("RateLimit-Policy", refused.policy.clone()),
        ("RateLimit", state_header(&refused.limit, 0, refused.retry_after_ms)),
    ]
}

/// Milliseconds as whole seconds, rounded up (`Retry-After`, `t`).
pub fn seconds(ms: u64) -> u64 {
    ms.div_ceil(1000)
}

/// The UTC calendar window that holds `now_ms`: its start and its end.
pub fn window(period: Period, now_ms: u64) -> (u64, u64) {
    match period {
        Period::Hour => (now_ms - now_ms % 3_600_000, now_ms - now_ms % 3_600_000 + 3_600_000),
        Period::Day => (now_ms - now_ms % 86_400_000, now_ms - now_ms % 86_400_000 + 86_400_000),
        Period::Month => crate::time::month(now_ms),
    }
}

/// What the counting object of one limit and key is asked to check (`Command`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub rate: Option<Rate>,
    pub quota: Option<Quota>,
}

/// A bucket's level in thousandths of a token, as of `at_ms`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bucket {
    pub milli: u64,
    pub at_ms: u64,
}

/// A quota's count in the window that starts at `start_ms`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    pub count: u32,
    pub start_ms: u64,
}

/// What a counting object keeps for one limit and key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct State {
    pub bucket: Option<Bucket>,
    pub window: Option<Window>,
}

/// What a counting object is asked: `Take` one call from the bucket and the quota both, or from
/// neither (one step, inside the object's input gate); `Give` back a call another limit
/// refused; `Read` what is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Take,
    Give,
    Read,
    /// A rate alone: up to `batch` calls at once, for an isolate to spend by itself.
    Batch,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Command {
    pub op: Op,
    pub rule: Rule,
    pub now_ms: u64,
}

/// The answer to a command: whether the call may go, what is left after it, when the bucket
/// or window is full again, and when refused, how long until one call fits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Answer {
    pub allowed: bool,
    pub remaining: u32,
    pub reset_ms: u64,
    pub retry_after_ms: u64,
    /// Calls taken: one, or a batch's worth.
    pub granted: u32,
}

/// Numbers separated by spaces: the wire and storage form of commands, answers and states
/// (a few bytes, and no serde code for each of them in the module). Up to eight; a missing or
/// unreadable one is `None`.
#[inline(never)]
fn numbers(text: &str) -> [Option<u64>; 8] {
    let mut out = [None; 8];
    for (slot, n) in out.iter_mut().zip(text.split(' ')) {
        *slot = n.parse().ok();
    }
    out
}

fn small(n: u64) -> u32 {
    n.min(u64::from(u32::MAX)) as u32
}

fn line(values: &[u64]) -> String {
    let mut out = String::new();
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&v.to_string());
    }
    out
}

impl Command {
    /// `op milliPerSecond burst calls period now`: a zero `burst` is no rate, a zero `calls`
    /// no quota.
    pub fn line(&self) -> String {
        let (mps, burst) = self.rule.rate.map_or((0, 0), |r| (r.milli_per_second, u64::from(r.burst)));
        let (calls, period) = self.rule.quota.map_or((0, 0), |q| (u64::from(q.calls), q.period as u64));
        line(&[self.op as u64, mps, burst, calls, period, self.now_ms])
    }

    pub fn parse(text: &str) -> Option<Command> {
        let [op, mps, burst, calls, period, now_ms, ..] = numbers(text);
        let op = [Op::Take, Op::Give, Op::Read, Op::Batch].get(op? as usize).copied()?;
        let (mps, burst, calls) = (mps?, burst?, calls?);
        let rate = (burst > 0 && mps > 0).then(|| Rate { milli_per_second: mps, burst: small(burst) });
        let period = [Period::Hour, Period::Day, Period::Month].get(period? as usize).copied()?;
        let quota = (calls > 0).then_some(Quota { calls: small(calls), period });
        Some(Command { op, rule: Rule { rate, quota }, now_ms: now_ms? })
    }
}

impl Answer {
    pub fn line(&self) -> String {
        line(&[u64::from(self.allowed), u64::from(self.remaining), self.reset_ms, self.retry_after_ms, u64::from(self.granted)])
    }

    pub fn parse(text: &str) -> Option<Answer> {
        let [allowed, remaining, reset_ms, retry_after_ms, granted, ..] = numbers(text);
        Some(Answer { allowed: allowed? == 1, remaining: small(remaining?), reset_ms: reset_ms?, retry_after_ms: retry_after_ms?, granted: small(granted.unwrap_or(1)) })
    }
}

impl State {
    /// `milli at count start until`: absent parts are zeros; `until`, when the state stops
    /// mattering (the object's alarm deletes it then).
    pub fn line(&self, until_ms: u64) -> String {
        let b = self.bucket.unwrap_or_default();
        let w = self.window.unwrap_or_default();
        line(&[u64::from(self.bucket.is_some()), b.milli, b.at_ms, u64::from(self.window.is_some()), u64::from(w.count), w.start_ms, until_ms])
    }

    /// The state and its `until`; a text that is no state reads as none.
    pub fn parse(text: &str) -> (State, u64) {
        let n = numbers(text).map(|n| n.unwrap_or(0));
        let [has_bucket, milli, at_ms, has_window, count, start_ms, until, _] = n;
        let bucket = (has_bucket == 1).then_some(Bucket { milli, at_ms });
        let window = (has_window == 1).then_some(Window { count: small(count), start_ms });
        (State { bucket, window }, until)
    }
}

const TOKEN: u64 = 1000;

fn refill(rate: Rate, bucket: Option<Bucket>, now_ms: u64) -> Bucket {
    let full = u64::from(rate.burst) * TOKEN;
    match bucket {
        None => Bucket { milli: full, at_ms: now_ms },
        Some(b) => {
            // Saturates only after an idle spell far longer than any bucket takes to fill.
            let added = now_ms.saturating_sub(b.at_ms).saturating_mul(rate.milli_per_second) / 1000;
            Bucket { milli: b.milli.saturating_add(added).min(full), at_ms: now_ms.max(b.at_ms) }
        }
    }
}

fn counted(quota: Quota, window: Option<Window>, now_ms: u64) -> Window {
    let (start, _) = self::window(quota.period, now_ms);
    match window {
        Some(w) if w.start_ms == start => w,
        _ => Window { count: 0, start_ms: start },
    }
}

/// Milliseconds for a bucket to hold `milli` more.
fn fill_ms(rate: Rate, milli: u64) -> u64 {
    milli.saturating_mul(1000).div_ceil(rate.milli_per_second.max(1))
}

/// The state as of `now_ms`, and what it leaves: remaining calls and when all are back.
fn current(rule: Rule, state: State, now_ms: u64) -> (State, Answer) {
    let bucket = rule.rate.map(|r| refill(r, state.bucket, now_ms));
    let window = rule.quota.map(|q| counted(q, state.window, now_ms));
    let mut answer = Answer { allowed: true, remaining: u32::MAX, reset_ms: 0, retry_after_ms: 0, granted: 0 };
    if let (Some(rate), Some(b)) = (rule.rate, bucket) {
        let full = u64::from(rate.burst) * TOKEN;
        answer.remaining = (b.milli / TOKEN) as u32;
        answer.reset_ms = fill_ms(rate, full - b.milli);
        if b.milli < TOKEN {
            answer.allowed = false;
            answer.retry_after_ms = fill_ms(rate, TOKEN - b.milli).max(1);
        }
    }
    if let (Some(quota), Some(w)) = (rule.quota, window) {
        let end = self::window(quota.period, now_ms).1;
        let left = quota.calls.saturating_sub(w.count);
        if left <= answer.remaining {
            answer.remaining = left;
            answer.reset_ms = end - now_ms;
        }
        if left == 0 {
            answer.allowed = false;
            answer.retry_after_ms = answer.retry_after_ms.max(end - now_ms);
        }
    }
    if answer.remaining == u32::MAX {
        answer.remaining = 0;
    }
    (State { bucket, window }, answer)
}

/// Takes one call: the state to keep and the answer, or the refusal (nothing taken).
pub fn take(rule: Rule, state: State, now_ms: u64) -> Result<(State, Answer), Answer> {
    take_up_to(rule, state, now_ms, 1)
}

/// How many calls an isolate takes at once from a rate alone (`Op::Batch`): a tenth of the
/// burst, at most a second's worth, at least one. A rate under 10 calls a second or a burst
/// under 20 is taken call by call, exactly as `take`.
pub fn batch(rate: Rate) -> u32 {
    (rate.burst / 10).min(small(rate.milli_per_second / 1000)).max(1)
}

/// How long an isolate may spend a batch: what is left then is dropped, never given back (it
/// may refuse calls early, never let one through over the limit).
pub const BATCH_MS: u64 = 1000;

/// Takes up to `want` calls (at least one) from the bucket and the quota, or none.
pub fn take_up_to(rule: Rule, state: State, now_ms: u64, want: u32) -> Result<(State, Answer), Answer> {
    let (mut next, answer) = current(rule, state, now_ms);
    if !answer.allowed {
        return Err(answer);
    }
    let n = want.min(answer.remaining).max(1);
    if let Some(b) = next.bucket.as_mut() {
        b.milli -= TOKEN * u64::from(n);
    }
    if let Some(w) = next.window.as_mut() {
        w.count += n;
    }
    let (_, after) = current(rule, next, now_ms);
    Ok((next, Answer { allowed: true, granted: n, ..after }))
}

/// Gives back a call taken earlier.
pub fn give(rule: Rule, state: State, now_ms: u64) -> State {
    let (mut next, _) = current(rule, state, now_ms);
    if let (Some(rate), Some(b)) = (rule.rate, next.bucket.as_mut()) {
        b.milli = b.milli.saturating_add(TOKEN).min(u64::from(rate.burst) * TOKEN);
    }
    if let Some(w) = next.window.as_mut() {
        w.count = w.count.saturating_sub(1);
    }
    next
}

/// What is left, taking nothing.
pub fn read(rule: Rule, state: State, now_ms: u64) -> Answer {
    current(rule, state, now_ms).1
}

/// When the state no longer matters (its bucket full, its window over): the object's alarm
/// deletes it then. Till then it is kept in storage, so a quota outlives a restart.
pub fn expires(rule: Rule, state: State, now_ms: u64) -> u64 {
    let (_, answer) = current(rule, state, now_ms);
    let window_end = rule.quota.map_or(0, |q| self::window(q.period, now_ms).1);
    (now_ms + answer.reset_ms).max(window_end)
}

/// What a slots object is asked: `A` a slot for `id` (waiting in the queue if need be), held
/// `lease_ms` at the latest; `R` give it back; `S` how many are held and waiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotCommand {
    Acquire { limit: Concurrency, id: String, lease_ms: u64 },
    Release { limit: Concurrency, id: String, lease_ms: u64 },
    Read,
}

impl SlotCommand {
    /// `A max queue timeout lease id`, `R …`, `S`.
    pub fn line(&self) -> String {
        match self {
            SlotCommand::Acquire { limit, id, lease_ms } | SlotCommand::Release { limit, id, lease_ms } => {
                let mut out = String::from(if matches!(self, SlotCommand::Acquire { .. }) { "A " } else { "R " });
                out.push_str(&line(&[u64::from(limit.max), u64::from(limit.queue), limit.queue_timeout_ms, *lease_ms]));
                out.push(' ');
                out.push_str(id);
                out
            }
            SlotCommand::Read => "S".into(),
        }
    }

    pub fn parse(text: &str) -> Option<SlotCommand> {
        let (kind, rest) = text.split_once(' ').unwrap_or((text, ""));
        if kind == "S" {
            return Some(SlotCommand::Read);
        }
        let mut parts = rest.splitn(5, ' ');
        let id = parts.nth(4)?.to_string();
        let [max, queue, queue_timeout_ms, lease_ms, ..] = numbers(rest);
        let limit = Concurrency { max: small(max?), queue: small(queue?), queue_timeout_ms: queue_timeout_ms? };
        let lease_ms = lease_ms?;
        match kind {
            "A" => Some(SlotCommand::Acquire { limit, id, lease_ms }),
            "R" => Some(SlotCommand::Release { limit, id, lease_ms }),
            _ => None,
        }
    }
}

/// The concurrency slots of one limit and key, kept in its object's memory: who holds one and
/// until when (a holder that never gives it back loses it then), and who waits, in order.
#[derive(Debug, Default)]
pub struct Slots {
    held: Vec<(String, u64)>,
    waiting: Vec<(String, u64)>,
}

/// What an `acquire` decides.
#[derive(Debug, PartialEq, Eq)]
pub enum Acquired {
    Granted,
    /// Queued: wait for `release` to name this id, until the deadline.
    Queued,
    Refused,
}

impl Slots {
    fn expire(&mut self, now_ms: u64) {
        self.held.retain(|(_, until)| *until > now_ms);
        self.waiting.retain(|(_, until)| *until > now_ms);
    }

    /// Waiters into the slots free now, first come first; their ids, to wake.
    fn promote(&mut self, limit: Concurrency, lease_ms: u64, now_ms: u64) -> Vec<String> {
        self.expire(now_ms);
        let mut granted = Vec::new();
        while self.held.len() < limit.max as usize {
            if self.waiting.is_empty() {
                break;
            }
            let (next, _) = self.waiting.remove(0);
            self.held.push((next.clone(), now_ms + lease_ms));
            granted.push(next);
        }
        granted
    }

    /// A slot for `id`, held for `lease_ms` at the latest, or a place in the queue; and the
    /// waiters that got a slot meanwhile (one whose holder's lease ran out), to wake.
    pub fn acquire(&mut self, limit: Concurrency, id: &str, lease_ms: u64, now_ms: u64) -> (Acquired, Vec<String>) {
        let woken = self.promote(limit, lease_ms, now_ms);
        let acquired = if self.held.len() < limit.max as usize && self.waiting.is_empty() {
            self.held.push((id.to_string(), now_ms + lease_ms));
            Acquired::Granted
        } else if self.waiting.len() < limit.queue as usize {
            self.waiting.push((id.to_string(), now_ms + limit.queue_timeout_ms));
            Acquired::Queued
        } else {
            Acquired::Refused
        };
        (acquired, woken)
    }

    /// `id` gives its slot (or its place in the queue) up: the waiters now holding a slot.
    pub fn release(&mut self, limit: Concurrency, id: &str, lease_ms: u64, now_ms: u64) -> Vec<String> {
        self.held.retain(|(held, _)| held != id);
        self.waiting.retain(|(waiting, _)| waiting != id);
        self.promote(limit, lease_ms, now_ms)
    }

    /// Whether `id` holds a slot.
    pub fn holds(&self, id: &str) -> bool {
        self.held.iter().any(|(held, _)| held == id)
    }

    /// Slots held and calls waiting.
    pub fn counts(&self) -> (usize, usize) {
        (self.held.len(), self.waiting.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: Rule = Rule { rate: Some(Rate { milli_per_second: 2000, burst: 3 }), quota: None };

    fn limit(per: Vec<Per>, tools: &[&str]) -> Limit {
        Limit { name: "l".into(), per, tools: tools.iter().map(|t| WildMatch::new(t)).collect(), rate: RATE.rate, quota: None, concurrency: None }
    }

    #[test]
    fn a_bucket_lets_its_burst_through_then_its_rate() {
        let mut state = State::default();
        for left in [2, 1, 0] {
            let (next, answer) = take(RATE, state, 1000).unwrap();
            assert_eq!(answer.remaining, left);
            state = next;
        }
        let refused = take(RATE, state, 1000).unwrap_err();
        assert_eq!((refused.allowed, refused.retry_after_ms, refused.reset_ms), (false, 500, 1500));
        assert!(take(RATE, state, 1499).is_err());
        let (state, _) = take(RATE, state, 1500).unwrap();
        assert!(take(RATE, state, 1500).is_err());
        // Given back: one more fits.
        assert!(take(RATE, give(RATE, state, 1500), 1500).is_ok());
        // Idle long: full, never more than the burst.
        assert_eq!(read(RATE, state, 100_000).remaining, 3);
    }

    #[test]
    fn a_batch_takes_what_there_is() {
        let fast = Rate { milli_per_second: 100_000, burst: 200 };
        assert_eq!((batch(fast), batch(Rate { milli_per_second: 2000, burst: 10 }), batch(Rate { milli_per_second: 1_000_000, burst: 30 })), (20, 1, 3));
        let rule = Rule { rate: Some(fast), quota: None };
        let (state, answer) = take_up_to(rule, State::default(), 0, 150).unwrap();
        assert_eq!((answer.granted, answer.remaining), (150, 50));
        let (state, answer) = take_up_to(rule, state, 0, 150).unwrap();
        assert_eq!((answer.granted, answer.remaining), (50, 0));
        assert!(take_up_to(rule, state, 0, 150).is_err());
    }

    #[test]
    fn a_quota_counts_per_calendar_window() {
        let rule = Rule { rate: None, quota: Some(Quota { calls: 2, period: Period::Hour }) };
        let at = 5 * 3_600_000 + 59 * 60_000;
        let (state, answer) = take(rule, State::default(), at).unwrap();
        assert_eq!((answer.remaining, answer.reset_ms), (1, 60_000));
        let (state, _) = take(rule, state, at).unwrap();
        assert_eq!(take(rule, state, at + 1).unwrap_err().retry_after_ms, 59_999);
        // The next hour starts afresh, however recent the last call.
        assert_eq!(take(rule, state, 6 * 3_600_000).unwrap().1.remaining, 1);
        assert_eq!(expires(rule, state, at), 6 * 3_600_000);
    }

    #[test]
    fn months_are_calendar_months() {
        // 2026-02-10 and 2026-12-31, UTC.
        let feb = 1_770_681_600_000;
        assert_eq!(window(Period::Month, feb), (1_769_904_000_000, 1_772_323_200_000));
        let dec = 1_798_675_200_000;
        assert_eq!(window(Period::Month, dec), (1_796_083_200_000, 1_798_761_600_000));
        assert_eq!(window(Period::Day, feb + 5), (feb, feb + 86_400_000));
    }

    #[test]
    fn both_or_neither() {
        let rule = Rule { rate: Some(Rate { milli_per_second: 1000, burst: 1 }), quota: Some(Quota { calls: 5, period: Period::Day }) };
        let (state, _) = take(rule, State::default(), 0).unwrap();
        let refused = take(rule, state, 10).unwrap_err();
        assert_eq!(refused.retry_after_ms, 990);
        // The refusal took nothing from the quota.
        assert_eq!(read(rule, state, 1000).remaining, 1);
        assert_eq!(state.window.unwrap().count, 1);
    }

    #[test]
    fn wire_forms_read_back() {
        let command = Command { op: Op::Give, rule: Rule { rate: Some(Rate { milli_per_second: 500, burst: 3 }), quota: Some(Quota { calls: 7, period: Period::Month }) }, now_ms: 42 };
        assert_eq!(command.line(), "1 500 3 7 2 42");
        assert_eq!(Command::parse(&command.line()), Some(command));
        assert_eq!(Command::parse("0 0 0 0 0 1").unwrap().rule, Rule { rate: None, quota: None });
        assert_eq!(Command::parse("9 0 0 0 0 1"), None);
        let answer = Answer { allowed: true, remaining: 2, reset_ms: 5, retry_after_ms: 0, granted: 1 };
        assert_eq!(Answer::parse(&answer.line()), Some(answer));
        let state = State { bucket: Some(Bucket { milli: 1500, at_ms: 9 }), window: None };
        assert_eq!(State::parse(&state.line(77)), (state, 77));
        assert_eq!(State::parse("junk"), (State::default(), 0));
        let slot = SlotCommand::Acquire { limit: Concurrency { max: 2, queue: 3, queue_timeout_ms: 400 }, id: "a b".into(), lease_ms: 9 };
        assert_eq!(slot.line(), "A 2 3 400 9 a b");
        assert_eq!(SlotCommand::parse(&slot.line()), Some(slot));
        assert_eq!(SlotCommand::parse("S"), Some(SlotCommand::Read));
        assert_eq!(SlotCommand::parse("A 1 2"), None);
    }

    #[test]
    fn keys_cannot_be_forged_across_parts() {
        let l = limit(vec![Per::Principal, Per::Tool], &[]);
        let a = Caller { principal: "a:1", tool: "b", client: "", server: "s", upstream: "" };
        let b = Caller { principal: "a", tool: "1:b", client: "", server: "s", upstream: "" };
        assert_ne!(l.key(&a), l.key(&b));
        assert_eq!(l.key(&a), "3:a:11:b");
        assert_eq!((Caller::client_of("p", None), Caller::client_of("p", Some("")), Caller::client_of("p", Some("app"))), ("p", "p", "app"));
    }

    #[test]
    fn tools_globs_choose_the_calls() {
        let l = limit(vec![], &["search*", "get_?"]);
        assert!(l.applies("search_docs") && l.applies("get_x") && !l.applies("get_xy") && !l.applies("other"));
        assert!(limit(vec![], &[]).applies("anything"));
    }

    #[test]
    fn headers_are_structured_fields() {
        let mut l = limit(vec![], &[]);
        l.name = "per user".into();
        assert_eq!(l.policy(0), r#""per user";q=3;w=2"#);
        l.quota = Some(Quota { calls: 1000, period: Period::Day });
        assert_eq!(l.policy(0), r#""per user";q=1000;w=86400"#);
        assert_eq!(state_header("search", 0, 2001), r#""search";r=0;t=3"#);
        let refused = crate::error::Error::Limited(Box::new(crate::error::Refused { limit: "a b".into(), retry_after_ms: 1500, policy: r#""a b";q=3;w=2"#.into() }));
        let reply = crate::jsonrpc::failure(&serde_json::json!(7), &refused);
        assert_eq!(reply, r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"Too Many Requests: the limit \"a b\" is spent; retry after 2 s","data":{"retryAfterMs":1500,"limit":"a b","policy":"\"a b\";q=3;w=2"}}}"#);
        let found = refusal_of(&reply).unwrap();
        assert_eq!(headers(&found).map(|(_, v)| v), ["2".to_string(), r#""a b";q=3;w=2"#.into(), r#""a b";r=0;t=2"#.into()]);
        assert!(refusal_of(r#"{"jsonrpc":"2.0","id":1,"result":{"retryAfterMs":1}}"#).is_none());
    }

    #[test]
    fn slots_queue_in_order_and_leases_end() {
        let c = Concurrency { max: 1, queue: 1, queue_timeout_ms: 100 };
        let mut slots = Slots::default();
        assert_eq!(slots.acquire(c, "a", 1000, 0).0, Acquired::Granted);
        assert_eq!(slots.acquire(c, "b", 1000, 0).0, Acquired::Queued);
        assert_eq!(slots.acquire(c, "c", 1000, 0).0, Acquired::Refused);
        assert_eq!(slots.release(c, "a", 1000, 10), ["b"]);
        assert!(slots.holds("b") && !slots.holds("a"));
        // A holder that never comes back loses its slot when its lease ends, to the next waiter.
        assert_eq!(slots.acquire(c, "d", 1000, 999).0, Acquired::Queued);
        assert_eq!(slots.acquire(c, "e", 1000, 1011), (Acquired::Queued, vec!["d".to_string()]));
        assert!(slots.holds("d"));
        // A waiter whose time is up leaves the queue.
        assert_eq!(slots.acquire(c, "f", 1000, 1200).0, Acquired::Queued);
        assert_eq!(slots.counts(), (1, 1));
    }
}
