//! State shared between attempts, loops and processes: the `--rate` bucket,
//! the server's "not before" time, the circuit breaker and the last good
//! bodies, per key (the origin, or `--state-key`).
//!
//! Every store speaks through [`Store`] (the file in `file.rs`, Redis in
//! `redis/`): two atomic steps per attempt,
//! `admit` before and `record` after (plus `last_good` for `--fallback last`).
//! [`Shared`] is what the loop talks to: it picks the store, bounds each step
//! to a second, and when the store cannot be reached follows `--state-fail`:
//! open goes on with this process's own limits, closed ends the run (exit 6).

mod file;
mod origin;
mod redis;
#[cfg(test)]
mod test_support;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{Error, Kind};
use crate::rules::attempt::RetryRoom;
use crate::rules::breaker::{Rejection, Sample, Settings};
use crate::rules::bucket::Rate;
use crate::rules::budget::RetryBudget;
use crate::rules::policy::WaitReason;
use crate::util::clock;
use crate::util::sync::lock;
use crate::util::text::human;

pub(crate) use self::redis::{RedisStore, RedisUrl};
pub(crate) use file::FileStore;
pub use file::State;
use origin::Origin;

/// The longest any one step on the store may take before the store counts as
/// unreachable (never longer than the time left before `--timeout`).
pub(crate) const STEP_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a store whose step failed is left alone under `--state-fail
/// open`, at first; each failure after a retry doubles it, up to
/// [`BACKOFF_MAX`]. A dead or partitioned store then costs one bound per
/// period, not every attempt.
pub(crate) const BACKOFF_START: Duration = Duration::from_secs(5);
/// The longest a store is left alone.
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(60);

/// How much longer than the probe may take its lease lasts: the time to
/// record its outcome, and clocks that disagree a little.
const LEASE_MARGIN: Duration = Duration::from_secs(1);

/// Where shared state lives. Each call is one atomic step on the store (a
/// read-modify-write under the file's lock); all times are relative to the
/// store's own clock, in milliseconds, so that a store on another machine
/// (Redis) can keep time by its own clock.
pub(crate) trait Store: Send {
    /// The store for messages, without any password.
    fn name(&self) -> String;
    /// Before an attempt: see [`Turn`].
    fn admit(&mut self, key: &str, ask: &Ask, timeout: Duration) -> Result<Turn, String>;
    /// After an attempt: keep advice and good bodies, feed the breaker.
    fn record(&mut self, key: &str, report: &AttemptReport, timeout: Duration) -> Result<Option<Refusal>, String>;
    /// The last good body kept for `url` under `key`.
    fn last_good(&mut self, key: &str, url: &str, timeout: Duration) -> Result<Option<Vec<u8>>, String>;
    /// Warnings that are not failures (a corrupt file set aside), once each.
    fn notes(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// While the store is left alone after a failed step: whether a step is
    /// worth trying before the back-off ends, asking within `timeout` (a
    /// Sentinel that names a new master).
    fn worth_a_try(&mut self, _timeout: Duration) -> bool {
        false
    }
}

/// What a loop asks before an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Ask {
    /// Who would probe a half-open breaker: this process.
    pub pid: u32,
    /// `--rate` spacing in ms.
    pub spacing: Option<u64>,
    /// Milliseconds left before `--timeout`.
    pub deadline_in: Option<u64>,
    /// The breaker settings; `None` where no breaker is kept.
    pub breaker: Option<Settings>,
    /// The shortest half-open lease in ms: the probe's own budget (connect
    /// plus request timeout; for a `--paginate` walk, that for each of
    /// `--max-pages` pages) plus a second, so that the lease outlasts the
    /// probe; but no longer than the run has left, plus the second.
    pub lease: u64,
    /// The attempt is a retry, counted as one by `--retry-budget`.
    pub retry: bool,
    /// `--retry-budget`.
    pub budget: Option<RetryBudget>,
    /// `--rate auto`: the rate is learned from the server's `429`s.
    pub auto: bool,
}

/// A store's answer before an attempt: whether and when it may go, and what
/// the fleet's shared counts say.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Turn {
    pub admission: Admission,
    pub fleet: Fleet,
}

impl Turn {
    /// An answer that takes no turn: nothing to say of the fleet.
    pub(crate) fn alone(admission: Admission) -> Turn {
        Turn { admission, fleet: Fleet::default() }
    }
}

/// What the shared state says of the fleet at a turn.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Fleet {
    /// `--retry-budget`: the window's counts, this request's included, and whether a retry fits.
    pub budget: Option<RetryRoom>,
    /// `--rate auto`: the learned rate in force, in requests a second.
    pub rate: Option<f64>,
    /// Epoch ms on the store's clock when the turn was taken: a `429` to a
    /// request whose turn was taken before the last cut cuts nothing more.
    pub at: u64,
}

/// Whether and when the next attempt may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Send after `wait` ms, waiting for `why` (`None`: nothing to wait for).
    Go { wait: u64, why: Option<WaitReason> },
    /// The breaker is open (or another process is probing): send nothing, exit 6.
    Open(Refusal),
    /// The turn would come only at or after the deadline: exit 1 now.
    TooLate { wait: u64, why: WaitReason },
    /// `--rate auto`: the turn is far off; ask again after `wait` ms (nothing was taken).
    Defer { wait: u64 },
}

/// Why and for how long an open breaker turns callers away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// Milliseconds until the next try (for a probe in flight: until its lease ends).
    pub retry_in: u64,
    /// The pid of the process probing now, if any.
    pub prober: Option<u32>,
    pub reason: String,
}

impl Refusal {
    fn new(rejection: Rejection, now: u64) -> Refusal {
        Refusal { retry_in: rejection.retry_at.saturating_sub(now), prober: rejection.prober, reason: rejection.reason }
    }
}

/// What the shared state is told after an attempt: the loop says what the
/// attempt was ([`AttemptReport::of`]), [`Shared::record`] adds who tells it
/// and the breaker's settings. Not the attempt's `Record` (`report/record.rs`),
/// which the reporter reads: the loop makes this from it, and the store sees
/// only this.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AttemptReport<'a> {
    pub pid: u32,
    /// The attempt as the breaker weighs it.
    pub sample: Sample,
    /// Milliseconds of server-advised wait the policy honoured, if any.
    pub not_before_in: Option<u64>,
    /// (URL, body) of a run that is done, to keep for `--fallback last`.
    pub good_body: Option<(&'a str, &'a [u8])>,
    pub breaker: Option<Settings>,
    /// `--rate auto`: the attempt was answered `429`; its turn's [`Fleet::at`].
    pub throttled_at: Option<u64>,
}

impl<'a> AttemptReport<'a> {
    /// An attempt weighed as `sample`, after which the policy honoured the
    /// server's advice to wait `not_before_in`, and that kept `good_body`.
    pub(crate) fn of(
        sample: Sample,
        not_before_in: Option<Duration>,
        good_body: Option<(&'a str, &'a [u8])>,
    ) -> AttemptReport<'a> {
        AttemptReport {
            pid: 0,
            sample,
            not_before_in: not_before_in.map(clock::ms),
            good_body,
            breaker: None,
            throttled_at: None,
        }
    }
}

/// `--state-fail`: what an unreachable store means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum StateFail {
    /// Warn once and go on with this process's own limits.
    #[default]
    Open,
    /// End the run with exit 6; send nothing more.
    Closed,
}

/// The state a run's loops share: the `--state` store if any, and this
/// process's own keys, which hold the `--rate` spacing without `--state`,
/// or while the store cannot be reached.
pub(crate) struct Shared {
    store: Option<Mutex<Box<dyn Store>>>,
    local: Mutex<BTreeMap<String, Origin>>,
    fail: StateFail,
    /// Under `--state-fail open`, while the store is left alone.
    away: Mutex<Away>,
    spacing: Option<u64>,
    /// `--rate auto`.
    auto: bool,
    budget: Option<RetryBudget>,
    breaker: Settings,
    /// See [`Ask::lease`].
    lease: u64,
    pid: u32,
    /// A store's answer out of bounds was warned of (once a run).
    out_of_bounds: std::sync::atomic::AtomicBool,
}

impl Shared {
    pub(crate) fn new(
        store: Option<Box<dyn Store>>,
        rate: Option<Rate>,
        budget: Option<RetryBudget>,
        breaker: Settings,
        fail: StateFail,
        probe_time: Duration,
    ) -> Shared {
        Shared {
            store: store.map(Mutex::new),
            local: Mutex::new(BTreeMap::new()),
            fail,
            away: Mutex::new(Away::default()),
            spacing: match rate {
                Some(Rate::Every(spacing)) => Some(crate::rules::bucket::spacing_ms(spacing)),
                Some(Rate::Auto) | None => None,
            },
            auto: rate == Some(Rate::Auto),
            budget,
            breaker,
            lease: clock::ms(probe_time + LEASE_MARGIN),
            pid: std::process::id(),
            out_of_bounds: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether `--rate auto` learns the rate from the server's `429`s.
    pub(crate) fn learns_rate(&self) -> bool {
        self.auto
    }

    /// Whether anything is to be asked at all.
    pub(crate) fn is_active(&self) -> bool {
        self.store.is_some() || self.spacing.is_some()
    }

    /// Before an attempt on `key` (a `retry`, or any other), with `left` before the deadline.
    pub(crate) fn admit(
        &self,
        key: &str,
        retry: bool,
        left: Option<Duration>,
        warn: &dyn Fn(&str),
        detail: &dyn Fn(&str),
    ) -> Result<Turn, Error> {
        self.admit_asking(key, retry, true, left, warn, detail)
    }

    /// Before a page of a `--paginate` walk after its first, on `key`: a
    /// token of the `--rate` bucket and the server's "not before", as any
    /// request takes them, but not the breaker's word: the walk is one
    /// attempt, admitted once (a half-open probe's lease is its own), and
    /// one outcome, recorded once.
    pub(crate) fn admit_page(
        &self,
        key: &str,
        left: Option<Duration>,
        warn: &dyn Fn(&str),
        detail: &dyn Fn(&str),
    ) -> Result<Turn, Error> {
        self.admit_asking(key, false, false, left, warn, detail)
    }

    /// An admit that asks the breaker (`breaker`) or does not.
    fn admit_asking(
        &self,
        key: &str,
        retry: bool,
        breaker: bool,
        left: Option<Duration>,
        warn: &dyn Fn(&str),
        detail: &dyn Fn(&str),
    ) -> Result<Turn, Error> {
        let ask = Ask {
            pid: self.pid,
            spacing: self.spacing,
            deadline_in: left.map(clock::ms),
            breaker: None,
            // A probe ends by the run's deadline at the latest.
            lease: left.map_or(self.lease, |left| self.lease.min(clock::ms(left + LEASE_MARGIN))),
            retry,
            budget: self.budget,
            auto: self.auto,
        };
        let shared = Ask { breaker: breaker.then_some(self.breaker), ..ask };
        match self.with_store(left, warn, detail, |store, timeout| store.admit(key, &shared, timeout))? {
            Some(turn) => Ok(self.bounded_admission(turn, warn)),
            None => Ok(lock(&self.local).entry(key.to_string()).or_default().admit(clock::now_ms(), &ask)),
        }
    }

    /// After an attempt on `key`. Only a store keeps the breaker, advice and
    /// bodies: without one there is no breaker, and advice is the policy's
    /// alone. A `429` under `--rate auto` cuts this process's own rate while
    /// the store is away (`--state-fail open`).
    pub(crate) fn record(
        &self,
        key: &str,
        report: AttemptReport<'_>,
        left: Option<Duration>,
        warn: &dyn Fn(&str),
    ) -> Result<Option<Refusal>, Error> {
        let throttled_at = report.throttled_at.filter(|_| self.auto);
        let report = AttemptReport { pid: self.pid, breaker: Some(self.breaker), throttled_at, ..report };
        // `-v` names a store left alone once an attempt, at its admit.
        let refusal = self.with_store(left, warn, &|_| {}, |store, timeout| store.record(key, &report, timeout))?;
        let Some(refusal) = refusal else {
            if throttled_at.is_some() {
                let own = AttemptReport { not_before_in: None, good_body: None, breaker: None, ..report };
                lock(&self.local).entry(key.to_string()).or_default().record(clock::now_ms(), &own);
            }
            return Ok(None);
        };
        Ok(refusal.filter(|refusal| self.within_bounds(refusal.retry_in, warn)))
    }

    /// A store's answer, checked like server advice (the one place for every
    /// store: the file's values and Redis's scripts' answers alike): a wait or
    /// a breaker's next try more than a day away is hostile or broken, and
    /// absent, so one bad value in a shared store cannot sleep a fleet for
    /// years or crash it.
    fn bounded_admission(&self, turn: Turn, warn: &dyn Fn(&str)) -> Turn {
        let ahead = match &turn.admission {
            Admission::Go { wait, .. } | Admission::TooLate { wait, .. } | Admission::Defer { wait } => *wait,
            Admission::Open(refusal) => refusal.retry_in,
        };
        match self.within_bounds(ahead, warn) {
            true => turn,
            false => Turn { admission: Admission::Go { wait: 0, why: None }, ..turn },
        }
    }

    /// Whether `ms` from now is within a day; warns once a run when it is not.
    fn within_bounds(&self, ms: u64, warn: &dyn Fn(&str)) -> bool {
        if ms <= origin::MAX_AHEAD {
            return true;
        }
        if !self.out_of_bounds.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let away = crate::util::text::human(Duration::from_millis(ms.min(u64::MAX / 2)));
            warn(&format!("--state holds a wait or a breaker time {away} away, past the 24 h cap; treated as absent"));
        }
        false
    }

    /// The last good body of `url` kept under `key`, for `--fallback last`.
    pub(crate) fn last_good(&self, key: &str, url: &str, warn: &dyn Fn(&str)) -> Option<Vec<u8>> {
        let found = self.with_store(None, warn, &|_| {}, |store, timeout| store.last_good(key, url, timeout));
        found.ok().flatten().flatten()
    }

    /// Runs one step on the store, bounded by [`STEP_TIMEOUT`] and the time
    /// left. `Ok(None)`: there is no store, or it is unreachable (or left
    /// alone after a failure, see [`BACKOFF_START`]) and `--state-fail open`
    /// says go on without it.
    fn with_store<R>(
        &self,
        left: Option<Duration>,
        warn: &dyn Fn(&str),
        detail: &dyn Fn(&str),
        step: impl FnOnce(&mut dyn Store, Duration) -> Result<R, String>,
    ) -> Result<Option<R>, Error> {
        let Some(store) = &self.store else { return Ok(None) };
        let timeout = left.map_or(STEP_TIMEOUT, |left| left.min(STEP_TIMEOUT));
        let mut store = lock(store);
        let until = lock(&self.away).until;
        if let Some(until) = until
            && Instant::now() < until
            && !store.worth_a_try(timeout)
        {
            detail(&format!(
                "--state {} is left alone for {} more (--state-fail open)",
                store.name(),
                human(until.saturating_duration_since(Instant::now()))
            ));
            return Ok(None);
        }
        let result = step(store.as_mut(), timeout);
        for note in store.notes() {
            warn(&note);
        }
        let why = match result {
            Ok(value) => {
                let mut away = lock(&self.away);
                if away.period.is_some() {
                    *away = Away::default();
                    warn(&format!("--state {}: reachable again; the shared state is used again", store.name()));
                }
                return Ok(Some(value));
            }
            Err(e) => format!("--state {}: {e}", store.name()),
        };
        if self.fail == StateFail::Closed {
            return Err(Error::new(
                Kind::StateUnreachable,
                format!("{why}; nothing more is sent (--state-fail closed)"),
            ));
        }
        let mut away = lock(&self.away);
        let period = away.period.map_or(BACKOFF_START, |period| (period * 2).min(BACKOFF_MAX));
        if away.period.is_none() {
            warn(&format!("{why}; going on with this process's own limits (--state-fail open)"));
        } else {
            detail(&format!("{why}; trying it again in {} (--state-fail open)", human(period)));
        }
        *away = Away { period: Some(period), until: Some(Instant::now() + period) };
        Ok(None)
    }
}

/// A store left alone after a failed step, under `--state-fail open`.
#[derive(Debug, Default)]
struct Away {
    /// How long it is left alone this time; `None` while it answers.
    period: Option<Duration>,
    /// When to try it again.
    until: Option<Instant>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_store_the_rate_is_kept_in_memory_per_key() {
        let shared = Shared::new(
            None,
            Some(Rate::Every(Duration::from_millis(100))),
            None,
            Settings::default(),
            StateFail::Open,
            Duration::ZERO,
        );
        let quiet = |_: &str| {};
        assert_eq!(
            shared.admit("a", false, None, &quiet, &quiet).map(|turn| turn.admission),
            Ok(Admission::Go { wait: 0, why: None })
        );
        assert!(matches!(
            shared.admit("a", false, None, &quiet, &quiet).map(|turn| turn.admission),
            Ok(Admission::Go { wait: 90..=100, .. })
        ));
        assert_eq!(
            shared.admit("b", false, None, &quiet, &quiet).map(|turn| turn.admission),
            Ok(Admission::Go { wait: 0, why: None }),
            "another key"
        );
        let sample = Sample { ok: false, latency: 1 };
        assert_eq!(shared.record("a", AttemptReport::of(sample, None, None), None, &quiet), Ok(None));
    }

    /// A store that is never there.
    struct Gone;

    impl Store for Gone {
        fn name(&self) -> String {
            "nowhere".into()
        }
        fn admit(&mut self, _: &str, _: &Ask, _: Duration) -> Result<Turn, String> {
            Err("nowhere is unreachable".into())
        }
        fn record(&mut self, _: &str, _: &AttemptReport, _: Duration) -> Result<Option<Refusal>, String> {
            Err("nowhere is unreachable".into())
        }
        fn last_good(&mut self, _: &str, _: &str, _: Duration) -> Result<Option<Vec<u8>>, String> {
            Err("nowhere is unreachable".into())
        }
    }

    #[test]
    fn an_unreachable_store_warns_once_when_open_and_ends_the_run_when_closed() {
        let warnings = Mutex::new(Vec::new());
        let warn = |w: &str| lock(&warnings).push(w.to_string());
        let quiet = |_: &str| {};
        let open = Shared::new(
            Some(Box::new(Gone)),
            Some(Rate::Every(Duration::from_millis(100))),
            None,
            Settings::default(),
            StateFail::Open,
            Duration::ZERO,
        );
        assert_eq!(
            open.admit("a", false, None, &warn, &quiet).map(|turn| turn.admission),
            Ok(Admission::Go { wait: 0, why: None })
        );
        assert!(
            matches!(
                open.admit("a", false, None, &warn, &quiet).map(|turn| turn.admission),
                Ok(Admission::Go { wait: 90..=100, .. })
            ),
            "own --rate"
        );
        assert_eq!(lock(&warnings).len(), 1, "{:?}", lock(&warnings));
        let first = lock(&warnings)[0].clone();
        assert_eq!(
            first,
            "--state nowhere: nowhere is unreachable; going on with this process's own limits (--state-fail open)"
        );

        let closed =
            Shared::new(Some(Box::new(Gone)), None, None, Settings::default(), StateFail::Closed, Duration::ZERO);
        let Err(error) = closed.admit("a", false, None, &warn, &quiet).map(|turn| turn.admission) else {
            panic!("closed ends the run")
        };
        assert_eq!(error.kind(), Kind::StateUnreachable);
        assert!(error.to_string().contains("--state-fail closed"), "{error}");
    }

    /// A store that fails, counting the steps it was asked.
    struct Counted(std::sync::Arc<std::sync::atomic::AtomicUsize>);

    impl Store for Counted {
        fn name(&self) -> String {
            "counted".into()
        }
        fn admit(&mut self, _: &str, _: &Ask, _: Duration) -> Result<Turn, String> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Err("down".into())
        }
        fn record(&mut self, _: &str, _: &AttemptReport, _: Duration) -> Result<Option<Refusal>, String> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Err("down".into())
        }
        fn last_good(&mut self, _: &str, _: &str, _: Duration) -> Result<Option<Vec<u8>>, String> {
            Err("down".into())
        }
    }

    #[test]
    fn a_store_that_failed_is_left_alone_for_the_back_off_and_minus_v_says_so() {
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let store = Box::new(Counted(asked.clone()));
        let shared = Shared::new(Some(store), None, None, Settings::default(), StateFail::Open, Duration::ZERO);
        let (warnings, details) = (Mutex::new(Vec::new()), Mutex::new(Vec::new()));
        let warn = |w: &str| lock(&warnings).push(w.to_string());
        let detail = |d: &str| lock(&details).push(d.to_string());
        for _ in 0..5 {
            assert_eq!(
                shared.admit("a", false, None, &warn, &detail).map(|turn| turn.admission),
                Ok(Admission::Go { wait: 0, why: None })
            );
        }
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1, "asked once, then left alone");
        assert_eq!(lock(&warnings).len(), 1);
        assert_eq!(lock(&details).len(), 4, "{:?}", lock(&details));
        assert!(lock(&details)[0].starts_with("--state counted is left alone for 5"), "{:?}", lock(&details));
        assert_eq!(lock(&shared.away).period, Some(BACKOFF_START));
        // Past the back-off it is tried again; a second failure doubles it, up to a minute.
        let mut period = BACKOFF_START;
        for _ in 0..6 {
            lock(&shared.away).until = Some(Instant::now());
            shared.admit("a", false, None, &warn, &detail).map(|turn| turn.admission).expect("open goes on");
            period = (period * 2).min(BACKOFF_MAX);
            assert_eq!(lock(&shared.away).period, Some(period));
        }
        assert_eq!(period, BACKOFF_MAX);
        assert_eq!(lock(&warnings).len(), 1, "one warning when it is left: {:?}", lock(&warnings));
    }

    /// A store whose first step fails, and that says it is worth a try again
    /// (as a Sentinel that names a new master) from its third ask on.
    struct Comeback {
        steps: usize,
        asked: usize,
    }

    impl Store for Comeback {
        fn name(&self) -> String {
            "comeback".into()
        }
        fn admit(&mut self, _: &str, _: &Ask, _: Duration) -> Result<Turn, String> {
            self.steps += 1;
            if self.steps == 1 { Err("down".into()) } else { Ok(Turn::alone(Admission::Go { wait: 7, why: None })) }
        }
        fn record(&mut self, _: &str, _: &AttemptReport, _: Duration) -> Result<Option<Refusal>, String> {
            Ok(None)
        }
        fn last_good(&mut self, _: &str, _: &str, _: Duration) -> Result<Option<Vec<u8>>, String> {
            Ok(None)
        }
        fn worth_a_try(&mut self, timeout: Duration) -> bool {
            assert_eq!(timeout, STEP_TIMEOUT);
            self.asked += 1;
            self.asked >= 3
        }
    }

    #[test]
    fn a_store_left_alone_is_tried_before_the_back_off_ends_when_it_says_it_is_worth_it() {
        let shared = Shared::new(
            Some(Box::new(Comeback { steps: 0, asked: 0 })),
            None,
            None,
            Settings::default(),
            StateFail::Open,
            Duration::ZERO,
        );
        let warnings = Mutex::new(Vec::new());
        let warn = |w: &str| lock(&warnings).push(w.to_string());
        let quiet = |_: &str| {};
        let own = Ok(Admission::Go { wait: 0, why: None });
        assert_eq!(
            shared.admit("a", false, None, &warn, &quiet).map(|turn| turn.admission),
            own,
            "failed: its own limits"
        );
        assert_eq!(
            shared.admit("a", false, None, &warn, &quiet).map(|turn| turn.admission),
            own,
            "left alone: not worth a try yet"
        );
        assert_eq!(
            shared.admit("a", false, None, &warn, &quiet).map(|turn| turn.admission),
            own,
            "left alone: not worth a try yet"
        );
        assert_eq!(
            shared.admit("a", false, None, &warn, &quiet).map(|turn| turn.admission),
            Ok(Admission::Go { wait: 7, why: None }),
            "tried early"
        );
        assert_eq!(lock(&shared.away).period, None, "back");
        let warned = lock(&warnings).clone();
        assert_eq!(warned.len(), 2, "{warned:?}");
        assert_eq!(warned[1], "--state comeback: reachable again; the shared state is used again");
    }
}
