//! The per-origin circuit breaker: closed -> open -> half-open -> closed (or
//! open again, with the cool-down doubled). Pure: time is epoch milliseconds
//! passed in, the caller (the `--state` file) keeps the value between runs;
//! the serde attributes are the file's format.
//!
//! It is separate from the retry policy on purpose: `decide` handles one
//! request's retries, the breaker guards the origin for every process.

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::rules::attempt::{Outcome, StatusTraits};
use crate::util::clock;
use crate::util::text::human;

/// The breaker judges nothing on fewer outcomes than this.
pub(crate) const MIN_OUTCOMES: usize = 5;

/// How long a cool-down may grow by doubling (unless `--breaker-cooldown` is longer).
pub(crate) const MAX_COOLDOWN: Duration = Duration::from_secs(600);

// The defaults of the `--breaker-*` flags: `cli/flags.rs` shows these, `Settings::default` uses them.
pub(crate) const WINDOW: u32 = 10;
pub(crate) const MIN_SUCCESS: u8 = 60;
pub(crate) const MAX_P95: Duration = Duration::from_secs(5);
pub(crate) const COOLDOWN: Duration = Duration::from_secs(30);

/// The `--breaker-*` flags, validated; durations in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Outcomes remembered per origin (at least [`MIN_OUTCOMES`]).
    pub window: usize,
    /// Open when the success rate falls below this percentage.
    pub min_success: u8,
    /// Open when the window's p95 latency exceeds this.
    pub max_p95: u64,
    /// How long an opened breaker stays open before one probe.
    pub cooldown: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            window: WINDOW as usize,
            min_success: MIN_SUCCESS,
            max_p95: clock::ms(MAX_P95),
            cooldown: clock::ms(COOLDOWN),
        }
    }
}

/// One outcome in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    pub ok: bool,
    /// Latency in milliseconds.
    #[serde(rename = "ms", deserialize_with = "clock::stored_ms")]
    pub latency: u64,
}

/// Where the breaker stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum BreakerState {
    /// Requests go.
    #[default]
    Closed,
    /// Nothing goes until `until`; then the first caller probes.
    Open {
        #[serde(rename = "until_ms", deserialize_with = "clock::stored_ms")]
        until: u64,
    },
    /// Process `pid` is probing; nobody else goes until its lease ends
    /// (one cool-down), so a prober that was killed does not wedge the breaker.
    HalfOpen {
        #[serde(rename = "probe_pid")]
        pid: u32,
        #[serde(rename = "lease_until_ms", deserialize_with = "clock::stored_ms")]
        lease_until: u64,
    },
}

/// One origin's breaker.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breaker {
    #[serde(flatten)]
    pub state: BreakerState,
    /// The last outcomes, oldest first.
    #[serde(default)]
    pub window: VecDeque<Sample>,
    /// The cool-down of the current (or last) opening, in ms; 0 until it first opens.
    #[serde(rename = "cooldown_ms", default, deserialize_with = "clock::stored_ms")]
    pub cooldown: u64,
    /// Why it last opened, for the processes it turns away.
    #[serde(default)]
    pub reason: String,
}

/// The breaker's answer to a caller who wants to send a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admit {
    /// Closed: go.
    Pass,
    /// The cool-down is over and this caller sends the one probe; it must
    /// call [`Breaker::start_probe`] when it commits to sending.
    Probe,
    /// Open, or another process holds the probe.
    Reject(Rejection),
}

/// Why and until when the breaker turns callers away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// Epoch ms of the next try (for a probe in flight: when its lease ends).
    pub retry_at: u64,
    /// The pid of the process probing now, if any.
    pub prober: Option<u32>,
    pub reason: String,
}

impl Breaker {
    /// Whether a request may go at `now`. Changes nothing: the caller commits
    /// a probe with [`Breaker::start_probe`] once it knows it will send it.
    pub fn admit(&self, now: u64) -> Admit {
        match self.state {
            BreakerState::Closed => Admit::Pass,
            BreakerState::Open { until } if now < until => Admit::Reject(self.rejection(until, None)),
            BreakerState::HalfOpen { pid, lease_until } if now < lease_until => {
                Admit::Reject(self.rejection(lease_until, Some(pid)))
            }
            // The cool-down is over, or the last prober's lease ran out.
            BreakerState::Open { .. } | BreakerState::HalfOpen { .. } => Admit::Probe,
        }
    }

    /// Records that process `pid` sends the probe at `at`; its lease lasts one
    /// cool-down, or `at_least` ms (the probe's own budget plus a second) when
    /// that is longer, so that no second probe starts while the first is in flight.
    pub fn start_probe(&mut self, pid: u32, at: u64, settings: &Settings, at_least: u64) {
        let lease_until = at.saturating_add(self.cooldown_or(settings).max(at_least));
        self.state = BreakerState::HalfOpen { pid, lease_until };
    }

    /// Records one outcome of process `pid` at `now`. Returns the rejection a
    /// caller would now get, when the breaker is not closed afterwards.
    pub fn record(&mut self, now: u64, pid: u32, sample: Sample, settings: &Settings) -> Option<Rejection> {
        match self.state {
            BreakerState::Closed => {
                self.window.push_back(sample);
                while self.window.len() > settings.window.max(1) {
                    self.window.pop_front();
                }
                if let Some(reason) = self.verdict(settings) {
                    self.cooldown = settings.cooldown;
                    self.open(now, reason);
                }
            }
            BreakerState::HalfOpen { pid: prober, .. } if prober == pid => {
                if sample.ok {
                    // The origin is back: start afresh.
                    *self = Breaker::default();
                } else {
                    let cap = clock::ms(MAX_COOLDOWN).max(settings.cooldown);
                    self.cooldown = self.cooldown_or(settings).saturating_mul(2).min(cap);
                    self.open(now, PROBE_FAILED.into());
                }
            }
            // A request that was admitted before the breaker opened, or another
            // process's probe: its outcome does not change the verdict.
            BreakerState::Open { .. } | BreakerState::HalfOpen { .. } => {}
        }
        // Past a cool-down the next admission decides who probes, so only a rejection counts.
        match self.admit(now) {
            Admit::Reject(rejection) => Some(rejection),
            Admit::Pass | Admit::Probe => None,
        }
    }

    fn open(&mut self, now: u64, reason: String) {
        self.state = BreakerState::Open { until: now.saturating_add(self.cooldown) };
        self.reason = reason;
    }

    fn cooldown_or(&self, settings: &Settings) -> u64 {
        if self.cooldown == 0 { settings.cooldown } else { self.cooldown }
    }

    fn rejection(&self, retry_at: u64, prober: Option<u32>) -> Rejection {
        Rejection { retry_at, prober, reason: self.reason.clone() }
    }

    /// Why the window says the origin is down, if it does.
    fn verdict(&self, settings: &Settings) -> Option<String> {
        let n = self.window.len();
        if n < MIN_OUTCOMES {
            return None;
        }
        let ok = self.window.iter().filter(|s| s.ok).count();
        if ok * 100 < usize::from(settings.min_success) * n {
            return Some(too_many_failures(n - ok, n, settings.min_success));
        }
        let p95 = p95(self.window.iter().map(|s| s.latency));
        if p95 > settings.max_p95 {
            return Some(too_slow(n, p95, settings.max_p95));
        }
        None
    }
}

// Why a breaker opened, in words. The Redis store keeps the numbers and
// words them with these, so that both stores say the same.

/// The success-rate rule: `failed` of the last `n` outcomes failed.
pub(crate) fn too_many_failures(failed: usize, n: usize, min_success: u8) -> String {
    format!("{failed} of the last {n} requests failed, below --breaker-min-success {min_success}%")
}

/// The latency rule: the p95 of the last `n` outcomes, in ms, above `max_p95`.
pub(crate) fn too_slow(n: usize, p95: u64, max_p95: u64) -> String {
    format!(
        "p95 latency of the last {n} requests is {}, above --breaker-max-p95 {}",
        human(Duration::from_millis(p95)),
        human(Duration::from_millis(max_p95))
    )
}

/// A failed half-open probe.
pub(crate) const PROBE_FAILED: &str = "the probe after the cool-down failed too";

/// The nearest-rank 95th percentile: with up to 20 values, the largest.
pub(crate) fn p95(latencies: impl Iterator<Item = u64>) -> u64 {
    let mut sorted: Vec<u64> = latencies.collect();
    sorted.sort_unstable();
    let rank = (sorted.len() * 95).div_ceil(100);
    sorted.get(rank.saturating_sub(1)).copied().unwrap_or(0)
}

/// The latency the breaker weighs, in ms: the time a request took beyond the
/// `hold` it asked the server for (`--prefer-wait`'s wait; under `--watch`,
/// as long as it takes). A server that holds a long poll or a blocking query
/// until something changes is doing what it was asked, not slow: were the
/// hold counted, five held replies would open the circuit for the whole fleet.
pub(crate) fn latency(took: Duration, hold: Duration) -> u64 {
    clock::ms(took.saturating_sub(hold))
}

/// Whether an outcome counts against the origin: no HTTP answer (network
/// failures and timeouts), 5xx and 408 ([`StatusTraits`], whose table says why
/// a 429 does not count). Any other answer means the origin is up, a 404
/// included; a redirect loop or an oversized body got answers too.
pub(crate) fn counts_as_failure(outcome: &Outcome) -> bool {
    match outcome {
        // A stream that ended or was closed was an answer, as is a status --pending-when called not yet.
        Outcome::Success { .. }
        | Outcome::Submitted { .. }
        | Outcome::StreamEnded { .. }
        | Outcome::StreamClosed
        | Outcome::Pending { .. }
        | Outcome::Open { .. } => false,
        Outcome::Status { code, .. } => StatusTraits::of(*code).counts_for_breaker,
        Outcome::Failed(failure) => failure.traits().counts_for_breaker,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::advice::Advice;
    use crate::rules::attempt::{Failure, Verdict};

    const PID: u32 = 100;
    const OTHER: u32 = 200;

    fn settings() -> Settings {
        Settings { window: 10, min_success: 60, max_p95: 5_000, cooldown: 30_000 }
    }

    fn ok(latency: u64) -> Sample {
        Sample { ok: true, latency }
    }

    fn failed() -> Sample {
        Sample { ok: false, latency: 3 }
    }

    /// A breaker that five failures at t=1000 opened (open until 31 000).
    fn opened() -> Breaker {
        let mut breaker = Breaker::default();
        for _ in 0..5 {
            breaker.record(1_000, PID, failed(), &settings());
        }
        assert_eq!(breaker.state, BreakerState::Open { until: 31_000 });
        breaker
    }

    #[test]
    fn a_hold_asked_for_is_not_latency() {
        let secs = Duration::from_secs;
        let ms = Duration::from_millis;
        // A plain poll: all of it.
        assert_eq!(latency(ms(1_200), Duration::ZERO), 1_200);
        // --prefer-wait 2s held 1.2 s: none; answered 300 ms after the 2 s asked for: 300 ms.
        assert_eq!(latency(ms(1_200), secs(2)), 0);
        assert_eq!(latency(ms(2_300), secs(2)), 300);
        // --watch: a blocking query held 5.5 s, a stream read for an hour: none.
        assert_eq!(latency(ms(5_500), Duration::MAX), 0);
        assert_eq!(latency(secs(3_600), Duration::MAX), 0);
    }

    #[test]
    fn it_needs_five_outcomes_to_judge() {
        let mut breaker = Breaker::default();
        for i in 0..4 {
            assert_eq!(breaker.record(i, PID, failed(), &settings()), None, "outcome {i}");
        }
        assert_eq!(breaker.state, BreakerState::Closed);
        let rejection = breaker.record(4, PID, failed(), &settings());
        assert_eq!(breaker.state, BreakerState::Open { until: 30_004 });
        assert_eq!(rejection.map(|r| r.retry_at), Some(30_004));
        assert!(breaker.reason.contains("5 of the last 5 requests failed"), "{}", breaker.reason);
    }

    #[test]
    fn the_success_rate_rule() {
        // 6 of 10 succeeded: 60% is not below 60%.
        let mut breaker = Breaker::default();
        for i in 0..10 {
            breaker.record(i, PID, if i % 5 < 3 { ok(1) } else { failed() }, &settings());
        }
        assert_eq!(breaker.state, BreakerState::Closed);
        // One more failure pushes the oldest success out: 5 of 10.
        breaker.record(10, PID, failed(), &settings());
        assert_eq!(breaker.state, BreakerState::Open { until: 30_010 });

        // The window is a sliding one: old failures age out.
        let mut breaker = Breaker::default();
        let script = [[true; 5].as_slice(), &[false; 3], &[true; 12]].concat();
        for (i, good) in (0..).zip(script) {
            breaker.record(i, PID, if good { ok(1) } else { failed() }, &settings());
        }
        assert_eq!(breaker.state, BreakerState::Closed);
        assert_eq!(breaker.window.len(), 10);
        assert!(breaker.window.iter().all(|s| s.ok));

        // --breaker-min-success 0 never opens on failures.
        let lenient = Settings { min_success: 0, ..settings() };
        let mut breaker = Breaker::default();
        for i in 0..20 {
            breaker.record(i, PID, failed(), &lenient);
        }
        assert_eq!(breaker.state, BreakerState::Closed);
    }

    #[test]
    fn the_p95_rule() {
        let mut breaker = Breaker::default();
        for i in 0..9 {
            breaker.record(i, PID, ok(100), &settings());
        }
        breaker.record(9, PID, ok(5_000), &settings());
        assert_eq!(breaker.state, BreakerState::Closed, "5s is not above 5s");
        breaker.record(10, PID, ok(5_001), &settings());
        assert_eq!(breaker.state, BreakerState::Open { until: 30_010 });
        assert!(breaker.reason.contains("p95 latency"), "{}", breaker.reason);

        // Slow answers alone, fewer than five, do not open it.
        let mut breaker = Breaker::default();
        for i in 0..4 {
            breaker.record(i, PID, ok(60_000), &settings());
        }
        assert_eq!(breaker.state, BreakerState::Closed);
    }

    #[test]
    fn p95_is_nearest_rank() {
        assert_eq!(p95([].into_iter()), 0);
        assert_eq!(p95([7].into_iter()), 7);
        assert_eq!(p95((1..=10).rev()), 10);
        assert_eq!(p95(1..=20), 19);
        assert_eq!(p95(1..=100), 95);
    }

    #[test]
    fn open_rejects_until_the_cooldown_ends_then_one_probe_wins() {
        let mut breaker = opened();
        let Admit::Reject(rejection) = breaker.admit(30_999) else { panic!("still open") };
        assert_eq!((rejection.retry_at, rejection.prober), (31_000, None));
        assert_eq!(breaker.admit(31_000), Admit::Probe);
        breaker.start_probe(PID, 31_000, &settings(), 0);
        assert_eq!(breaker.state, BreakerState::HalfOpen { pid: PID, lease_until: 61_000 });
        // Everyone else is turned away while the probe is out.
        let Admit::Reject(rejection) = breaker.admit(31_001) else { panic!("a probe is in flight") };
        assert_eq!((rejection.retry_at, rejection.prober), (61_000, Some(PID)));
    }

    #[test]
    fn a_good_probe_closes_it_and_clears_the_window() {
        let mut breaker = opened();
        breaker.start_probe(PID, 31_000, &settings(), 0);
        assert_eq!(breaker.record(31_050, PID, ok(50), &settings()), None);
        assert_eq!(breaker, Breaker::default());
        assert_eq!(breaker.admit(31_051), Admit::Pass);
    }

    #[test]
    fn a_bad_probe_reopens_it_with_the_cooldown_doubled_up_to_ten_minutes() {
        let mut breaker = opened();
        let mut now = 31_000;
        let mut cooldowns = Vec::new();
        for _ in 0..7 {
            assert_eq!(breaker.admit(now), Admit::Probe);
            breaker.start_probe(PID, now, &settings(), 0);
            let rejection = breaker.record(now, PID, failed(), &settings());
            cooldowns.push(breaker.cooldown);
            let BreakerState::Open { until } = breaker.state else { panic!("re-opened") };
            assert_eq!(rejection.map(|r| r.retry_at), Some(until));
            assert_eq!(until, now + breaker.cooldown);
            now = until;
        }
        assert_eq!(cooldowns, [60_000, 120_000, 240_000, 480_000, 600_000, 600_000, 600_000]);
        // A success after all that starts again from the flag's cool-down.
        breaker.start_probe(PID, now, &settings(), 0);
        breaker.record(now, PID, ok(1), &settings());
        assert_eq!(breaker.cooldown, 0);
    }

    #[test]
    fn a_cooldown_longer_than_the_cap_is_kept() {
        let long = Settings { cooldown: 900_000, ..settings() };
        let mut breaker = Breaker::default();
        for _ in 0..5 {
            breaker.record(0, PID, failed(), &long);
        }
        breaker.start_probe(PID, 900_000, &long, 0);
        breaker.record(900_000, PID, failed(), &long);
        assert_eq!(breaker.cooldown, 900_000);
    }

    #[test]
    fn a_probe_that_may_take_longer_than_the_cooldown_holds_the_lease_that_long() {
        let mut breaker = opened();
        breaker.start_probe(PID, 31_000, &settings(), 45_000);
        assert_eq!(breaker.state, BreakerState::HalfOpen { pid: PID, lease_until: 76_000 });
        assert!(matches!(breaker.admit(75_999), Admit::Reject(_)));
        assert_eq!(breaker.admit(76_000), Admit::Probe);
    }

    #[test]
    fn a_killed_probers_lease_expires_after_one_cooldown() {
        let mut breaker = opened();
        breaker.start_probe(PID, 31_000, &settings(), 0);
        // PID was killed and never reports. Until its lease ends, nobody goes.
        assert!(matches!(breaker.admit(60_999), Admit::Reject(_)));
        assert_eq!(breaker.admit(61_000), Admit::Probe);
        breaker.start_probe(OTHER, 61_000, &settings(), 0);
        // A late report of the first prober changes nothing; the new one's does.
        assert!(breaker.record(61_001, PID, ok(1), &settings()).is_some());
        assert_eq!(breaker.state, BreakerState::HalfOpen { pid: OTHER, lease_until: 91_000 });
        assert_eq!(breaker.record(61_002, OTHER, ok(1), &settings()), None);
        assert_eq!(breaker.state, BreakerState::Closed);
    }

    #[test]
    fn outcomes_that_arrive_while_open_change_nothing() {
        let mut breaker = opened();
        let before = breaker.clone();
        let rejection = breaker.record(2_000, OTHER, ok(1), &settings());
        assert_eq!(breaker, before);
        assert_eq!(rejection.map(|r| r.retry_at), Some(31_000));
    }

    #[test]
    fn what_counts_as_a_failure() {
        let status = |code| Outcome::Status { code, advice: Advice::default() };
        for code in [408, 500, 501, 502, 503, 504, 599] {
            assert!(counts_as_failure(&status(code)), "{code}");
        }
        for code in [301, 400, 401, 403, 404, 409, 429] {
            assert!(!counts_as_failure(&status(code)), "{code}: the origin answered");
        }
        for verdict in [Verdict::Met, Verdict::NotMet, Verdict::FailWhen, Verdict::NotJson] {
            assert!(!counts_as_failure(&Outcome::Success { verdict, advice: Advice::default() }));
        }
        for failure in [Failure::Refused, Failure::Dns, Failure::ConnectTimeout, Failure::Timeout, Failure::Reset] {
            assert!(counts_as_failure(&Outcome::Failed(failure)), "{failure}");
        }
        for failure in [Failure::Truncated, Failure::Malformed, Failure::Tls] {
            assert!(counts_as_failure(&Outcome::Failed(failure)), "{failure}: no usable answer");
        }
        for failure in [Failure::TooManyRedirects, Failure::BadRedirect, Failure::BodyTooLarge] {
            assert!(!counts_as_failure(&Outcome::Failed(failure)), "{failure}: the origin answered");
        }
        assert!(!counts_as_failure(&Outcome::Failed(Failure::ProxyRefused)), "the origin was not reached");
    }
}
