//! Time as the protocols write it, without a date library: milliseconds since the epoch to an
//! ISO 8601 UTC time (task timestamps, the console), and HTTP's `Retry-After` and IMF-fixdate
//! back to milliseconds (an upstream's answer).

/// Milliseconds since the epoch as an ISO 8601 UTC time (to the second), without a date library.
pub fn iso(ms: u64) -> String {
    let c = Civil::of(ms);
    format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", c.year, c.month, c.day, c.hour, c.minute, c.second)
}

/// A moment's UTC calendar date and time of day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: u64,
    pub day: u64,
    pub hour: u64,
    pub minute: u64,
    pub second: u64,
    /// 0 for Sunday, as CEL's `getDayOfWeek` counts.
    pub weekday: u64,
}

impl Civil {
    pub fn of(ms: u64) -> Civil {
        let secs = ms / 1000;
        let (days, rest) = (secs / 86_400, secs % 86_400);
        // Howard Hinnant's civil_from_days.
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u64;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u64;
        let year = yoe + era * 400 + i64::from(month <= 2);
        // 1970-01-01 was a Thursday.
        Civil { year, month, day, hour: rest / 3600, minute: rest % 3600 / 60, second: rest % 60, weekday: (days + 4) % 7 }
    }
}

/// The UTC calendar month that holds `ms`: its first millisecond and the next month's.
pub fn month(ms: u64) -> (u64, u64) {
    let c = Civil::of(ms);
    let (year, month) = (c.year.max(1970) as u64, c.month);
    let next = if month == 12 { (year + 1, 1) } else { (year, month + 1) };
    let day_ms = |(y, m)| days_from_civil(y, m, 1).unwrap_or(0) * 86_400_000;
    (day_ms((year, month)), day_ms(next))
}

/// `Retry-After` as a delay from `now_ms`: delay-seconds or an HTTP date (RFC 9110 10.2.3).
pub fn parse_retry_after(value: &str, now_ms: u64) -> Option<u64> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(seconds.saturating_mul(1000));
    }
    let at = parse_http_date(value)?;
    Some(at.saturating_sub(now_ms))
}

/// IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`, as milliseconds since the epoch.
fn parse_http_date(value: &str) -> Option<u64> {
    let rest = value.split_once(", ")?.1;
    let mut parts = rest.split(' ');
    let day: u64 = parts.next()?.parse().ok()?;
    let month_name = parts.next()?;
    let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].iter().position(|m| *m == month_name)? as u64 + 1;
    let year: u64 = parts.next()?.parse().ok()?;
    let mut clock = parts.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (clock.next()??, clock.next()??, clock.next()??);
    // An IMF-fixdate's year has four digits; a larger one would overflow the arithmetic below
    // (found by the edge_input fuzz target).
    if parts.next()? != "GMT" || !(1..=31).contains(&day) || !(1970..=9999).contains(&year) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    Some(((days_from_civil(year, month, day)? * 24 + h) * 60 + m) * 60_000 + s * 1000)
}

/// Days since the epoch of a civil date (Howard Hinnant's days_from_civil), for years from 1970.
fn days_from_civil(year: u64, month: u64, day: u64) -> Option<u64> {
    let (y, mo) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).checked_sub(719_468)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_times_know_the_weekday() {
        // 2026-11-28T02:40:05Z, a Saturday.
        assert_eq!(Civil::of(1_795_833_605_000), Civil { year: 2026, month: 11, day: 28, hour: 2, minute: 40, second: 5, weekday: 6 });
        assert_eq!(Civil::of(0).weekday, 4);
    }

    #[test]
    fn iso_times() {
        assert_eq!(iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(iso(1_790_000_000_000), "2026-09-21T14:13:20Z");
    }

    #[test]
    fn retry_after_as_seconds_or_a_date() {
        assert_eq!(parse_retry_after(" 3 ", 0), Some(3_000));
        let now = 784_111_777_000 - 5_000;
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now), Some(5_000));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now + 9_000), Some(0));
        assert_eq!(parse_retry_after("Sun, 29 Feb 2032 00:00:00 GMT", 0), Some(1_961_625_600_000));
        assert_eq!(parse_retry_after("soon", 0), None);
        // Years beyond four digits: refused, not an overflow (fuzzing found these).
        assert_eq!(parse_retry_after(", 06 Nov 800000388 0:9:37 GMT", 0), None);
        assert_eq!(parse_retry_after("Sun, 06 Nov 000000000000000000000000000000000800000398 08:49:37 GMT", 0), None);
        assert!(parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", 0).is_some());
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:37 PST", 0), None);
    }
}
