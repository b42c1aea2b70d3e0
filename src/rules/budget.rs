//! `--retry-budget PCT[/N]`: the fleet's retries over the last 10 s are at
//! most PCT of its other requests plus N a second (Finagle's retry budget,
//! shared through `--state`). Pure: time is the store's epoch milliseconds
//! passed in; the counts ([`Traffic`]) live in the state beside the bucket,
//! and the learned rate (`cubic.rs`) reads its last second of requests too.

use serde::{Deserialize, Serialize};

/// The window a budget counts over, in seconds.
pub(crate) const WINDOW_SECS: u64 = 10;

/// The most any one second counts: far past what a fleet sends, and small
/// enough that a sum of a window never overflows.
pub(crate) const MAX_COUNT: u64 = 1 << 40;

/// `--retry-budget PCT[/N]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryBudget {
    /// Retries allowed per 100 other requests.
    pub percent: u8,
    /// Retries allowed a second whatever the other requests (the floor).
    pub per_second: u32,
}

impl RetryBudget {
    /// Whether one more retry fits in a window that counted `counts`.
    pub fn has_room(&self, counts: Window) -> bool {
        let allowed = u128::from(self.percent) * u128::from(counts.requests)
            + 100 * u128::from(self.per_second) * u128::from(WINDOW_SECS);
        100 * (u128::from(counts.retries) + 1) <= allowed
    }
}

/// `--retry-budget`'s value: `PCT%`, or `PCT%/N` with N retries a second on top (`20%` is `20%/1`).
pub(crate) fn parse(text: &str) -> Result<RetryBudget, String> {
    let usage = || format!("`{}` is not a retry budget; use PCT% or PCT%/N, e.g. 20% or 20%/5", text.trim());
    let (percent, per_second) = match text.trim().split_once('/') {
        Some((percent, n)) => (percent, n.trim().parse::<u32>().map_err(|_| usage())?),
        None => (text, 1),
    };
    if !percent.trim().ends_with('%') || per_second > 10_000 {
        return Err(usage());
    }
    let percent = crate::util::parse::percent(percent).map_err(|_| usage())?;
    Ok(RetryBudget { percent, per_second })
}

/// What a window counted: requests that were no retry, and retries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    pub requests: u64,
    pub retries: u64,
}

/// The fleet's requests, per second of the store's clock: the last
/// [`WINDOW_SECS`] + 1 seconds, each `[second, requests, retries]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Traffic {
    seconds: Vec<(u64, u64, u64)>,
}

impl Traffic {
    /// Whether nothing is counted: a state file leaves it out.
    pub fn is_empty(&self) -> bool {
        self.seconds.is_empty()
    }

    /// Counts that [`Traffic::checked`] drops: what a store held that poll did not write.
    pub fn odd() -> Traffic {
        Traffic { seconds: vec![(u64::MAX, 0, 0)] }
    }

    /// Counts a request sent at `now`: a retry, or any other.
    pub fn count(&mut self, now: u64, retry: bool) {
        let second = now / 1000;
        self.seconds.retain(|(at, ..)| at + WINDOW_SECS >= second);
        match self.seconds.iter_mut().find(|(at, ..)| *at == second) {
            Some((_, _, retries)) if retry => *retries = (*retries + 1).min(MAX_COUNT),
            Some((_, requests, _)) => *requests = (*requests + 1).min(MAX_COUNT),
            None => self.seconds.push((second, u64::from(!retry), u64::from(retry))),
        }
    }

    /// What the last [`WINDOW_SECS`] seconds counted, this one included.
    pub fn window(&self, now: u64) -> Window {
        let second = now / 1000;
        let within = self.seconds.iter().filter(|(at, ..)| *at <= second && at + WINDOW_SECS > second);
        within.fold(Window::default(), |sum, (_, requests, retries)| Window {
            requests: sum.requests + requests,
            retries: sum.retries + retries,
        })
    }

    /// Requests a second over the last second: this second's so far, and the
    /// part of the last one that the last 1000 ms still cover (a sliding
    /// window read from two fixed ones).
    pub fn last_second(&self, now: u64) -> f64 {
        let second = now / 1000;
        let sent = |at: u64| {
            let found = self.seconds.iter().find(|(s, ..)| *s == at);
            found.map_or(0, |(_, requests, retries)| requests + retries) as f64
        };
        let past = second.checked_sub(1).map_or(0.0, sent);
        let elapsed = (now % 1000) as f64 / 1000.0;
        sent(second) + past * (1.0 - elapsed)
    }

    /// Made safe to reason with at `now` (read from a store): a second more
    /// than a day ahead or a count past what a fleet sends is not kept. Says
    /// whether anything was dropped.
    pub fn checked(&mut self, now: u64) -> bool {
        let before = self.seconds.len();
        // A day, as the stores bound every time they read (`MAX_AHEAD`).
        let ahead = now / 1000 + 24 * 3600;
        self.seconds.retain(|(at, requests, retries)| *at <= ahead && *requests <= MAX_COUNT && *retries <= MAX_COUNT);
        self.seconds.truncate(WINDOW_SECS as usize + 2);
        self.seconds.len() != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_795_000_000_000;

    #[test]
    fn the_budget_allows_pct_of_the_other_requests_plus_n_a_second() {
        let budget = RetryBudget { percent: 20, per_second: 1 };
        // (requests, retries so far, one more fits)
        let rows = [
            (0, 9, true),    // the floor: 10 over 10 s
            (0, 10, false),  // the floor spent
            (50, 19, true),  // 20% of 50 is 10, plus 10
            (50, 20, false), // spent
            (500, 109, true),
            (500, 110, false),
            (4, 10, false), // 20% of 4 is 0.8: not a whole retry more
            (5, 10, true),  // 20% of 5 is 1
        ];
        for (requests, retries, room) in rows {
            assert_eq!(budget.has_room(Window { requests, retries }), room, "{requests} requests, {retries} retries");
        }
        let none = RetryBudget { percent: 0, per_second: 0 };
        assert!(!none.has_room(Window { requests: 1_000_000, retries: 0 }), "0%/0 allows no retry");
        let huge = Window { requests: u64::MAX, retries: u64::MAX - 1 };
        assert!(RetryBudget { percent: 100, per_second: 10_000 }.has_room(huge), "no overflow");
    }

    #[test]
    fn budgets_parse_as_the_contract_writes_them() {
        assert_eq!(parse("20%"), Ok(RetryBudget { percent: 20, per_second: 1 }));
        assert_eq!(parse(" 20%/5 "), Ok(RetryBudget { percent: 20, per_second: 5 }));
        assert_eq!(parse("0%/0"), Ok(RetryBudget { percent: 0, per_second: 0 }));
        assert_eq!(parse("100%"), Ok(RetryBudget { percent: 100, per_second: 1 }));
        for bad in ["20", "20/5", "101%", "-1%", "20%/", "20%/x", "20%/-1", "20%/10001", "", "%", "a%"] {
            let error = parse(bad).err().unwrap_or_default();
            assert!(error.contains("is not a retry budget; use PCT% or PCT%/N"), "{bad:?}: {error}");
        }
    }

    #[test]
    fn traffic_counts_a_sliding_window_of_seconds() {
        let mut traffic = Traffic::default();
        for i in 0..30 {
            // Three requests a second for 10 s, one a retry.
            traffic.count(NOW + i * 333, i % 3 == 2);
        }
        assert_eq!(traffic.window(NOW + 9_999), Window { requests: 20, retries: 10 });
        // Eleven seconds on, the first two seconds (4 and 3 requests) have left the window.
        let later = NOW + 11_000;
        assert_eq!(traffic.window(later).requests + traffic.window(later).retries, 30 - 4 - 3);
        traffic.count(NOW + 60_000, false);
        assert_eq!(traffic.window(NOW + 60_000), Window { requests: 1, retries: 0 });
        assert_eq!(traffic.seconds.len(), 1, "the old seconds are gone");
    }

    #[test]
    fn the_last_second_slides_across_two() {
        let mut traffic = Traffic::default();
        let start = NOW - NOW % 1000;
        for i in 0..10 {
            traffic.count(start + i * 100, false);
        }
        assert_eq!(traffic.last_second(start + 999), 10.0);
        // Half way into the next second with 4 sent: 4 + half of 10.
        for i in 0..4 {
            traffic.count(start + 1_000 + i * 100, i == 0);
        }
        assert_eq!(traffic.last_second(start + 1_500), 9.0);
        assert_eq!(traffic.last_second(start + 3_000), 0.0);
    }

    #[test]
    fn stored_traffic_is_checked() {
        let mut traffic =
            Traffic { seconds: vec![(NOW / 1000, 3, 1), (u64::MAX / 1000, 1, 1), (NOW / 1000 - 1, u64::MAX, 0)] };
        assert!(traffic.checked(NOW));
        assert_eq!(traffic.seconds, [(NOW / 1000, 3, 1)]);
        assert!(!traffic.checked(NOW));
    }
}
