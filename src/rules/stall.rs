//! `--stall DUR`: a wait that no longer moves. The value compared is the one
//! the progress line shows (the `--show` value, else the body); while the
//! condition is not met, the time it stays the same adds up, a change starts
//! it again, and a failure neither resets nor advances it (the time around a
//! failure is not counted). Pure: the loop says what it saw and when.

use std::time::{Duration, Instant};

/// How long one value has been seen unchanged, for `--stall`.
#[derive(Debug)]
pub(crate) struct Stall {
    limit: Duration,
    /// The value last seen (a digest of it), and since when it has been seen unchanged.
    value: Option<u64>,
    unchanged: Duration,
    /// When it was last seen with no failure since: the time from then on counts.
    seen_at: Option<Instant>,
}

impl Stall {
    pub(crate) fn new(limit: Duration) -> Stall {
        Stall { limit, value: None, unchanged: Duration::ZERO, seen_at: None }
    }

    /// A reply (or an event) that is not yet done showed `value` at `now`:
    /// how long it has been unchanged, once that reaches the limit.
    pub(crate) fn seen(&mut self, value: &[u8], now: Instant) -> Option<Duration> {
        let digest = digest(value);
        if self.value != Some(digest) {
            (self.value, self.unchanged) = (Some(digest), Duration::ZERO);
        } else if let Some(seen_at) = self.seen_at {
            self.unchanged += now.saturating_duration_since(seen_at);
        }
        self.seen_at = Some(now);
        (self.unchanged >= self.limit).then_some(self.unchanged)
    }

    /// A failure: the time until the next reply is not counted.
    pub(crate) fn failed(&mut self) {
        self.seen_at = None;
    }
}

/// FNV-1a: values are compared, not kept (a body may be megabytes).
fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_value_stalls_a_change_starts_again_and_a_failure_does_not_count() {
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let mut stall = Stall::new(Duration::from_secs(10));
        assert_eq!(stall.seen(b"40", at(0)), None);
        assert_eq!(stall.seen(b"40", at(6)), None);
        // A change starts the clock again.
        assert_eq!(stall.seen(b"41", at(8)), None);
        assert_eq!(stall.seen(b"41", at(14)), None);
        // Failures for a minute: neither reset nor advanced.
        stall.failed();
        assert_eq!(stall.seen(b"41", at(74)), None);
        assert_eq!(stall.seen(b"41", at(77)), None);
        assert_eq!(stall.seen(b"41", at(78)), Some(Duration::from_secs(10)));
    }
}
