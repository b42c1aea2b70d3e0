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

/// The table tests' vectors, shared with fleet.lua's test (`state/redis/twins.rs`),
/// so that the Rust rules and their Lua twins answer the same rows.
#[cfg(test)]
pub(crate) mod vectors {
    use super::{MAX_COUNT, RetryBudget, WINDOW_SECS, Window};

    const TWENTY: RetryBudget = RetryBudget { percent: 20, per_second: 1 };
    const NONE: RetryBudget = RetryBudget { percent: 0, per_second: 0 };
    const ALL: RetryBudget = RetryBudget { percent: 100, per_second: 10_000 };
    /// The most a window of the stores can count (Lua's doubles hold it exactly).
    const FULL: u64 = WINDOW_SECS * MAX_COUNT;

    /// (budget, what the window counted, whether one more retry fits).
    pub(crate) const ROOM: [(RetryBudget, Window, bool); 12] = [
        (TWENTY, Window { requests: 0, retries: 9 }, true), // the floor: 10 over 10 s
        (TWENTY, Window { requests: 0, retries: 10 }, false), // the floor spent
        (TWENTY, Window { requests: 50, retries: 19 }, true), // 20% of 50 is 10, plus 10
        (TWENTY, Window { requests: 50, retries: 20 }, false), // spent
        (TWENTY, Window { requests: 500, retries: 109 }, true),
        (TWENTY, Window { requests: 500, retries: 110 }, false),
        (TWENTY, Window { requests: 4, retries: 10 }, false), // 20% of 4 is 0.8: not a whole retry more
        (TWENTY, Window { requests: 5, retries: 10 }, true),  // 20% of 5 is 1
        (NONE, Window { requests: 1_000_000, retries: 0 }, false), // 0%/0 allows no retry
        (NONE, Window { requests: 0, retries: 0 }, false),
        (ALL, Window { requests: FULL, retries: FULL + 100_000 - 1 }, true), // the largest counts
        (ALL, Window { requests: FULL, retries: FULL + 100_000 }, false),
    ];

    /// A step of a [`traffic`] table, at ms past [`START`]: a request
    /// counted (a retry or not), what the window and the last second read,
    /// or how many seconds are kept.
    #[derive(Debug, Clone, Copy)]
    pub(crate) enum Step {
        Count(u64, bool),
        Read(u64, Window, f64),
        Kept(usize),
    }

    /// A whole second of the store's clock.
    pub(crate) const START: u64 = 1_795_000_000_000;

    /// Each table starts from no traffic.
    pub(crate) fn traffic() -> [Vec<Step>; 2] {
        use Step::{Count, Kept, Read};
        // Three requests a second for 10 s, one a retry.
        let mut sliding: Vec<Step> = (0..30).map(|i| Count(i * 333, i % 3 == 2)).collect();
        sliding.extend([
            Read(9_999, Window { requests: 20, retries: 10 }, 2.003),
            // Eleven seconds on, the first two seconds (4 and 3 requests) have left the window.
            Read(11_000, Window { requests: 15, retries: 8 }, 0.0),
            // Second 1, ten seconds old, is out of the window and still kept: where pruning could slip.
            Count(11_500, false),
            Kept(10),
            Read(11_999, Window { requests: 16, retries: 8 }, 1.0),
            Count(60_000, false),
            Read(60_000, Window { requests: 1, retries: 0 }, 1.0),
            Kept(1), // the old seconds are gone
        ]);
        // The last second slides across two: half way into the next with 4 sent, 4 + half of 10.
        let mut two: Vec<Step> = (0..10).map(|i| Count(i * 100, false)).collect();
        two.push(Read(999, Window { requests: 10, retries: 0 }, 10.0));
        two.extend((0..4).map(|i| Count(1_000 + i * 100, i == 0)));
        two.extend([
            Read(1_500, Window { requests: 13, retries: 1 }, 9.0),
            Read(3_000, Window { requests: 13, retries: 1 }, 0.0),
        ]);
        [sliding, two]
    }
}

#[cfg(test)]
mod tests {
    use super::vectors::{ROOM, START, Step};
    use super::*;

    const NOW: u64 = START;

    #[test]
    fn the_budget_allows_pct_of_the_other_requests_plus_n_a_second() {
        for (budget, counts, room) in ROOM {
            assert_eq!(budget.has_room(counts), room, "{budget:?}, {counts:?}");
        }
        // Past what the stores count (and what Lua's doubles hold): Rust's alone.
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
    fn traffic_counts_a_sliding_window_and_the_last_second_slides_across_two() {
        for (n, table) in vectors::traffic().into_iter().enumerate() {
            let mut traffic = Traffic::default();
            for step in table {
                match step {
                    Step::Count(at, retry) => traffic.count(START + at, retry),
                    Step::Read(at, window, last_second) => {
                        assert_eq!(traffic.window(START + at), window, "table {n}, at {at}");
                        assert_eq!(traffic.last_second(START + at), last_second, "table {n}, at {at}");
                    }
                    Step::Kept(seconds) => assert_eq!(traffic.seconds.len(), seconds, "table {n}"),
                }
            }
        }
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
