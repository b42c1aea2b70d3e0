//! The `--rate` token bucket: a bucket of one token, so requests are evenly
//! spaced and never bunch up after an idle spell. Pure: time is epoch
//! milliseconds passed in, the state is one number the caller keeps (in memory,
//! or in the `--state` file so that every process shares it).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `--rate`: how far apart requests go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rate {
    /// `N/DURATION`: this far apart.
    Every(Duration),
    /// `auto`: as far apart as the rate the fleet learned from the server's `429`s (`cubic.rs`).
    Auto,
}

/// The bucket of one origin: when the next request may go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Bucket {
    /// Epoch milliseconds of the next free slot; in the past means "now".
    #[serde(deserialize_with = "crate::util::clock::stored_ms")]
    pub next_free: u64,
}

impl Bucket {
    /// When a request asking at `now` would go: the next free slot, or `now`.
    pub fn slot(&self, now: u64) -> u64 {
        self.next_free.max(now)
    }

    /// Takes the slot at `at` (from [`Bucket::slot`], or later) and moves the
    /// next free slot one `spacing` after it.
    pub fn take(&mut self, at: u64, spacing: u64) {
        self.next_free = at.saturating_add(spacing);
    }
}

/// The spacing of `--rate` in whole milliseconds, rounded up so that the rate
/// is never exceeded; the learned rate's rounding too, so it lives below both.
pub(crate) use super::cubic::whole_ms as spacing_ms;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_bucket_gives_the_slot_now() {
        let bucket = Bucket::default();
        assert_eq!(bucket.slot(1_000), 1_000);
        let bucket = Bucket { next_free: 500 };
        assert_eq!(bucket.slot(1_000), 1_000, "a slot in the past is not saved up: no burst after idling");
    }

    #[test]
    fn slots_are_evenly_spaced_whoever_asks() {
        let mut bucket = Bucket::default();
        // Three callers asking at the same instant get three slots, 100 ms apart.
        let mut slots = Vec::new();
        for _ in 0..3 {
            let at = bucket.slot(1_000);
            bucket.take(at, 100);
            slots.push(at);
        }
        assert_eq!(slots, [1_000, 1_100, 1_200]);
        assert_eq!(bucket.next_free, 1_300);
        // A caller who comes back late goes at once, and the spacing counts from then.
        let at = bucket.slot(5_000);
        bucket.take(at, 100);
        assert_eq!((at, bucket.next_free), (5_000, 5_100));
    }

    #[test]
    fn at_most_n_slots_in_any_window() {
        let mut bucket = Bucket::default();
        let spacing = spacing_ms(crate::util::parse::rate("10/s").unwrap_or_default());
        let slots: Vec<u64> = (0..40)
            .map(|i| {
                let at = bucket.slot(i * 7);
                bucket.take(at, spacing);
                at
            })
            .collect();
        for (i, start) in slots.iter().enumerate() {
            let in_window = slots[i..].iter().take_while(|at| **at < start + 1_000).count();
            assert!(in_window <= 10, "{in_window} slots in the second from {start}");
        }
        assert_eq!(slots[39] - slots[0], 3_900);
    }

    #[test]
    fn spacing_rounds_up_to_whole_milliseconds() {
        assert_eq!(spacing_ms(Duration::from_millis(100)), 100);
        assert_eq!(spacing_ms(Duration::from_secs(1) / 3), 334);
        assert_eq!(spacing_ms(Duration::from_micros(1)), 1);
        assert_eq!(spacing_ms(Duration::ZERO), 1);
    }

    #[test]
    fn a_slot_at_the_end_of_time_saturates() {
        let mut bucket = Bucket::default();
        bucket.take(u64::MAX - 1, 10);
        assert_eq!(bucket.next_free, u64::MAX);
    }
}
