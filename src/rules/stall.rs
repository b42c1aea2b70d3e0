//! `--stall DUR`: a wait that no longer moves. The value compared is the one
//! the progress line shows (the `--show` value, else the body); while the
//! condition is not met, the time it stays the same adds up, a change starts
//! it again, and a failure neither resets nor advances it (the time around a
//! failure is not counted). The clock starts with the first value judged:
//! a target not up yet has shown nothing. It runs on time, not on replies:
//! between two values (a `--watch` stream gone quiet, a reconnect) it goes
//! on, and [`Stall::left`] says when it would fire, so that a held read can
//! wake then. Pure: the loop says what it saw and when.

use std::time::{Duration, Instant};

/// How long one value has been seen unchanged, for `--stall`.
#[derive(Debug)]
pub(crate) struct Stall {
    limit: Duration,
    /// The value last seen (a digest of it), and what stood still, in words, for the error line.
    value: Option<u64>,
    what: String,
    /// How long it had been unchanged when last seen with no failure since ...
    unchanged: Duration,
    /// ... and when that was: the time from then on counts. `None` before the first value and
    /// after a failure, until the next value.
    since: Option<Instant>,
}

impl Stall {
    pub(crate) fn new(limit: Duration) -> Stall {
        Stall { limit, value: None, what: String::new(), unchanged: Duration::ZERO, since: None }
    }

    /// A reply (or an event) that is not yet done showed `value` at `now`
    /// (`what` puts it in words, asked only when it changed): how long it
    /// has been unchanged, once that reaches the limit.
    pub(crate) fn seen(&mut self, value: &[u8], what: impl FnOnce() -> String, now: Instant) -> Option<Duration> {
        let digest = digest(value);
        if self.value != Some(digest) {
            (self.value, self.what, self.unchanged) = (Some(digest), what(), Duration::ZERO);
        } else if let Some(since) = self.since {
            self.unchanged += now.saturating_duration_since(since);
        }
        self.since = Some(now);
        self.check(now)
    }

    /// With no new value, at `now` (a stream quiet, a reply that ended and
    /// brought none): how long the last value has been unchanged, once that
    /// reaches the limit. Changes nothing: time alone moves the clock.
    pub(crate) fn check(&self, now: Instant) -> Option<Duration> {
        let unchanged = self.unchanged + now.saturating_duration_since(self.since?);
        (unchanged >= self.limit).then_some(unchanged)
    }

    /// How long after `now` the clock reaches the limit, while it runs
    /// (`None` before the first value and after a failure).
    pub(crate) fn left(&self, now: Instant) -> Option<Duration> {
        let unchanged = self.unchanged + now.saturating_duration_since(self.since?);
        Some(self.limit.saturating_sub(unchanged))
    }

    /// A failure, or a target not up yet: the time until the next value is not counted.
    pub(crate) fn failed(&mut self) {
        self.since = None;
    }

    /// What stood still, in words: `.progress has been 40`.
    pub(crate) fn what(&self) -> &str {
        &self.what
    }
}

/// FNV-1a: values are compared, not kept (a body may be megabytes).
fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(value: &str) -> impl FnOnce() -> String + '_ {
        move || format!("it has been {value}")
    }

    #[test]
    fn the_same_value_stalls_a_change_starts_again_and_a_failure_does_not_count() {
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let mut stall = Stall::new(Duration::from_secs(10));
        assert_eq!(stall.seen(b"40", words("40"), at(0)), None);
        assert_eq!(stall.seen(b"40", words("40"), at(6)), None);
        // A change starts the clock again.
        assert_eq!(stall.seen(b"41", words("41"), at(8)), None);
        assert_eq!(stall.seen(b"41", words("41"), at(14)), None);
        // Failures for a minute: neither reset nor advanced.
        stall.failed();
        assert_eq!((stall.check(at(74)), stall.left(at(74))), (None, None));
        assert_eq!(stall.seen(b"41", words("41"), at(74)), None);
        assert_eq!(stall.seen(b"41", words("41"), at(77)), None);
        assert_eq!(stall.seen(b"41", words("41"), at(78)), Some(Duration::from_secs(10)));
        assert_eq!(stall.what(), "it has been 41");
    }

    #[test]
    fn the_clock_runs_on_time_between_values() {
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let mut stall = Stall::new(Duration::from_secs(10));
        // Nothing judged yet (a target not up yet): no clock at all.
        stall.failed();
        assert_eq!((stall.check(at(30)), stall.left(at(30))), (None, None));
        // The first value starts it; with no value after it, time alone brings it to the limit.
        assert_eq!(stall.seen(b"pending", words("pending"), at(30)), None);
        assert_eq!((stall.check(at(33)), stall.left(at(33))), (None, Some(Duration::from_secs(7))));
        assert_eq!(stall.check(at(40)), Some(Duration::from_secs(10)));
        assert_eq!(stall.left(at(45)), Some(Duration::ZERO));
        // The same value again (a reconnect that re-lists it) does not start it again.
        assert_eq!(stall.seen(b"pending", words("pending"), at(36)), None);
        assert_eq!(stall.check(at(40)), Some(Duration::from_secs(10)));
        assert_eq!(stall.seen(b"pending", words("pending"), at(41)), Some(Duration::from_secs(11)));
    }
}
