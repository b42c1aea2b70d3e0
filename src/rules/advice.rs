//! What a server says about when to come back: `Retry-After` (and Azure's
//! millisecond forms), GitHub's `X-Poll-Interval` and the rate-limit header
//! families, turned into plain durations. Pure: the current time is an argument.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The server's advice carried by one response, relative to when it arrived.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Advice {
    /// `Retry-After`, as a delay; `Retry-After-Ms` or `x-ms-retry-after-ms`
    /// (milliseconds) when present, which win as in Azure's SDKs.
    pub retry_after: Option<Duration>,
    /// When the rate-limit window resets, as a delay.
    pub reset: Option<Duration>,
    /// Requests left in the current rate-limit window.
    pub remaining: Option<u64>,
    /// `X-Poll-Interval` (GitHub): the least wait before the next poll of this URL.
    pub poll_interval: Option<Duration>,
}

impl Advice {
    /// Reads every header form poll understands. `headers` holds (name, value)
    /// pairs in any case; the first of a repeated name wins.
    pub fn from_headers<'a>(headers: impl IntoIterator<Item = (&'a str, &'a str)>, now: SystemTime) -> Advice {
        let mut advice = Advice::default();
        let mut structured = None;
        let mut milliseconds = None;
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            match name.as_str() {
                "retry-after" if advice.retry_after.is_none() => advice.retry_after = retry_after(value, now),
                "retry-after-ms" | "x-ms-retry-after-ms" if milliseconds.is_none() => {
                    milliseconds = raw_seconds(value.trim()).map(|ms| capped(ms / 1000.0))
                }
                "x-poll-interval" if advice.poll_interval.is_none() => advice.poll_interval = seconds(value.trim()),
                "ratelimit-reset" | "x-ratelimit-reset" if advice.reset.is_none() => advice.reset = reset(value, now),
                "ratelimit-remaining" | "x-ratelimit-remaining" if advice.remaining.is_none() => {
                    advice.remaining = value.trim().parse().ok()
                }
                "ratelimit" if structured.is_none() => structured = Some(ratelimit_field(value)),
                _ => {}
            }
        }
        advice.retry_after = milliseconds.or(advice.retry_after);
        // The IETF `RateLimit` field fills in what the legacy headers left out.
        if let Some((remaining, reset)) = structured {
            advice.remaining = advice.remaining.or(remaining);
            advice.reset = advice.reset.or(reset);
        }
        advice
    }
}

/// `Retry-After`: delta-seconds or an HTTP-date. Fractions are accepted (some
/// servers send them), garbage and negatives are ignored, and a date in the
/// past means "now".
pub fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Some(delay) = seconds(value) {
        return Some(delay);
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A rate-limit reset: delta seconds, or epoch seconds (a value later than a
/// day before now), or epoch milliseconds (a value that large in milliseconds).
pub fn reset(value: &str, now: SystemTime) -> Option<Duration> {
    // Uncapped: epoch milliseconds are far beyond the century a delay is capped at.
    let value = raw_seconds(value.trim())?;
    let now = now.duration_since(UNIX_EPOCH).ok()?;
    let a_day_ago = now.saturating_sub(Duration::from_secs(86_400)).as_secs_f64();
    if value / 1000.0 > a_day_ago {
        Some(capped(value / 1000.0).saturating_sub(now))
    } else if value > a_day_ago {
        Some(capped(value).saturating_sub(now))
    } else {
        Some(capped(value))
    }
}

/// The IETF structured `RateLimit` field: `"default";r=0;t=30` (draft 08 and
/// later) or the older `limit=100, remaining=0, reset=30`. Returns
/// (remaining, reset); the first policy listed wins.
fn ratelimit_field(value: &str) -> (Option<u64>, Option<Duration>) {
    let first_policy = value.split(',').collect::<Vec<_>>();
    let mut remaining = None;
    let mut reset = None;
    // Draft 08+: one policy per list item, parameters after `;`.
    if let Some(item) = first_policy.first().filter(|item| item.contains(';')) {
        for param in item.split(';').skip(1) {
            match param.trim().split_once('=') {
                Some(("r", v)) => remaining = v.trim().parse().ok(),
                Some(("t", v)) => reset = seconds(v.trim()),
                _ => {}
            }
        }
        return (remaining, reset);
    }
    // Older drafts: comma-separated key=value pairs.
    for pair in first_policy {
        match pair.trim().split_once('=') {
            Some(("remaining", v)) => remaining = v.trim().parse().ok(),
            Some(("reset", v)) => reset = seconds(v.trim()),
            _ => {}
        }
    }
    (remaining, reset)
}

/// A non-negative, finite number of seconds, at most a century.
fn seconds(text: &str) -> Option<Duration> {
    raw_seconds(text).map(capped)
}

/// A non-negative, finite number written with digits and a dot only.
fn raw_seconds(text: &str) -> Option<f64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let secs: f64 = text.parse().ok()?;
    secs.is_finite().then_some(secs)
}

/// Seconds as a duration, at most a century (a huge value is capped, not dropped).
fn capped(secs: f64) -> Duration {
    let max = crate::util::parse::MAX_DURATION;
    Duration::try_from_secs_f64(secs.min(max.as_secs_f64())).map_or(max, |d| d.min(max))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(epoch: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(epoch)
    }

    const NOW: u64 = 1_795_000_000; // 2026-11-18

    #[test]
    fn retry_after_forms() {
        let now = at(NOW);
        let rows: [(&str, Option<Duration>); 11] = [
            ("7", Some(Duration::from_secs(7))),
            (" 0 ", Some(Duration::ZERO)),
            ("1.5", Some(Duration::from_millis(1500))),
            ("-3", None),
            ("soon", None),
            ("", None),
            ("1e3", None),
            ("NaN", None),
            ("99999999999999999999999", Some(crate::util::parse::MAX_DURATION)),
            (&httpdate::fmt_http_date(at(NOW + 30)), Some(Duration::from_secs(30))),
            (&httpdate::fmt_http_date(at(NOW - 30)), Some(Duration::ZERO)),
        ];
        for (value, want) in rows {
            assert_eq!(retry_after(value, now), want, "{value:?}");
        }
    }

    #[test]
    fn reset_forms() {
        let now = at(NOW);
        assert_eq!(reset("30", now), Some(Duration::from_secs(30)));
        assert_eq!(reset(&(NOW + 12).to_string(), now), Some(Duration::from_secs(12)));
        assert_eq!(reset(&(NOW - 5).to_string(), now), Some(Duration::ZERO));
        assert_eq!(reset(&((NOW + 3) * 1000).to_string(), now), Some(Duration::from_secs(3)));
        assert_eq!(reset("garbage", now), None);
        assert_eq!(reset("-1", now), None);
    }

    #[test]
    fn from_headers_reads_every_family() {
        let now = at(NOW);
        let advice = |headers: &[(&str, &str)]| Advice::from_headers(headers.iter().copied(), now);
        assert_eq!(
            advice(&[("Retry-After", "3"), ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "60")]),
            Advice {
                retry_after: Some(Duration::from_secs(3)),
                reset: Some(Duration::from_secs(60)),
                remaining: Some(0),
                poll_interval: None,
            }
        );
        assert_eq!(
            advice(&[("RateLimit-Remaining", "4"), ("RateLimit-Reset", "10")]),
            Advice { retry_after: None, reset: Some(Duration::from_secs(10)), remaining: Some(4), poll_interval: None }
        );
        assert_eq!(
            advice(&[("RateLimit", "\"default\";r=0;t=30"), ("RateLimit-Policy", "\"default\";q=100;w=60")]),
            Advice { retry_after: None, reset: Some(Duration::from_secs(30)), remaining: Some(0), poll_interval: None }
        );
        assert_eq!(
            advice(&[("ratelimit", "limit=100, remaining=7, reset=20")]),
            Advice { retry_after: None, reset: Some(Duration::from_secs(20)), remaining: Some(7), poll_interval: None }
        );
        assert_eq!(advice(&[("Retry-After", "x"), ("X-RateLimit-Remaining", "lots")]), Advice::default());
        // Azure's milliseconds win over Retry-After, in either order; GitHub's poll interval.
        let ms = |headers: &[(&str, &str)]| advice(headers).retry_after;
        assert_eq!(ms(&[("Retry-After", "9"), ("Retry-After-Ms", "1500")]), Some(Duration::from_millis(1500)));
        assert_eq!(ms(&[("x-ms-retry-after-ms", "250"), ("Retry-After", "9")]), Some(Duration::from_millis(250)));
        assert_eq!(ms(&[("Retry-After", "9"), ("Retry-After-Ms", "soon")]), Some(Duration::from_secs(9)));
        assert_eq!(advice(&[("X-Poll-Interval", "60")]).poll_interval, Some(Duration::from_secs(60)));
        assert_eq!(advice(&[("X-Poll-Interval", "-1")]).poll_interval, None);
        // The first of a repeated header wins.
        assert_eq!(advice(&[("retry-after", "1"), ("Retry-After", "9")]).retry_after, Some(Duration::from_secs(1)));
    }
}
