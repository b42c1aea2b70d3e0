//! State shared between attempts, loops and processes: the `--rate` bucket,
//! the server's "not before" time, the circuit breaker and the last good
//! bodies, per key (the origin, or `--state-key`).
//!
//! Every store speaks through [`Store`] (the file in `file.rs`, Redis in
//! `redis.rs`): two atomic steps per attempt,
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::breaker::{Rejection, Sample, Settings};
use crate::clock;
use crate::error::Error;
use crate::policy::WaitReason;

pub(crate) use self::redis::{RedisStore, RedisUrl};
pub(crate) use file::FileStore;
pub use file::State;
use origin::Origin;

/// The longest any one step on the store may take before the store counts as
/// unreachable (never longer than the time left before `--timeout`).
pub(crate) const STEP_TIMEOUT: Duration = Duration::from_secs(1);

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
    /// Before an attempt: see [`Admission`].
    fn admit(&mut self, key: &str, ask: &Ask, timeout: Duration) -> Result<Admission, String>;
    /// After an attempt: keep advice and good bodies, feed the breaker.
    fn record(&mut self, key: &str, report: &Report, timeout: Duration) -> Result<Option<Refusal>, String>;
    /// The last good body kept for `url` under `key`.
    fn last_good(&mut self, key: &str, url: &str, timeout: Duration) -> Result<Option<Vec<u8>>, String>;
    /// Warnings that are not failures (a corrupt file set aside), once each.
    fn notes(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// What a loop asks before an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// plus request timeout) plus a second, so that the lease outlasts the probe.
    pub lease: u64,
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

/// What a loop tells the store after an attempt.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Report<'a> {
    pub pid: u32,
    pub sample: Sample,
    /// Milliseconds of server-advised wait the policy honoured, if any.
    pub not_before_in: Option<u64>,
    /// (URL, body) of a run that is done, to keep for `--fallback last`.
    pub good_body: Option<(&'a str, &'a [u8])>,
    pub breaker: Option<Settings>,
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
    /// The "unreachable" warning is given once per run.
    warned: AtomicBool,
    spacing: Option<u64>,
    breaker: Settings,
    /// See [`Ask::lease`].
    lease: u64,
    pid: u32,
}

impl Shared {
    pub(crate) fn new(
        store: Option<Box<dyn Store>>,
        rate: Option<Duration>,
        breaker: Settings,
        fail: StateFail,
        probe_budget: Duration,
    ) -> Shared {
        Shared {
            store: store.map(Mutex::new),
            local: Mutex::new(BTreeMap::new()),
            fail,
            warned: AtomicBool::new(false),
            spacing: rate.map(crate::bucket::spacing_ms),
            breaker,
            lease: clock::ms(probe_budget + LEASE_MARGIN),
            pid: std::process::id(),
        }
    }

    /// Whether anything is to be asked at all.
    pub(crate) fn is_active(&self) -> bool {
        self.store.is_some() || self.spacing.is_some()
    }

    /// Before an attempt on `key`, with `left` before the deadline.
    pub(crate) fn admit(&self, key: &str, left: Option<Duration>, warn: &dyn Fn(&str)) -> Result<Admission, Error> {
        let ask = Ask {
            pid: self.pid,
            spacing: self.spacing,
            deadline_in: left.map(clock::ms),
            breaker: None,
            lease: self.lease,
        };
        let shared = Ask { breaker: Some(self.breaker), ..ask };
        match self.with_store(left, warn, |store, timeout| store.admit(key, &shared, timeout))? {
            Some(admission) => Ok(admission),
            None => Ok(lock(&self.local).entry(key.to_string()).or_default().admit(clock::now_ms(), &ask)),
        }
    }

    /// After an attempt on `key`. Only a store keeps anything: without one
    /// there is no breaker, and advice is the policy's alone.
    pub(crate) fn record(
        &self,
        key: &str,
        sample: Sample,
        not_before_in: Option<Duration>,
        good_body: Option<(&str, &[u8])>,
        left: Option<Duration>,
        warn: &dyn Fn(&str),
    ) -> Result<Option<Refusal>, Error> {
        let report = Report {
            pid: self.pid,
            sample,
            not_before_in: not_before_in.map(clock::ms),
            good_body,
            breaker: Some(self.breaker),
        };
        Ok(self.with_store(left, warn, |store, timeout| store.record(key, &report, timeout))?.flatten())
    }

    /// The last good body of `url` kept under `key`, for `--fallback last`.
    pub(crate) fn last_good(&self, key: &str, url: &str, warn: &dyn Fn(&str)) -> Option<Vec<u8>> {
        let found = self.with_store(None, warn, |store, timeout| store.last_good(key, url, timeout));
        found.ok().flatten().flatten()
    }

    /// Runs one step on the store, bounded by [`STEP_TIMEOUT`] and the time
    /// left. `Ok(None)`: there is no store, or it is unreachable and
    /// `--state-fail open` says go on without it.
    fn with_store<R>(
        &self,
        left: Option<Duration>,
        warn: &dyn Fn(&str),
        step: impl FnOnce(&mut dyn Store, Duration) -> Result<R, String>,
    ) -> Result<Option<R>, Error> {
        let Some(store) = &self.store else { return Ok(None) };
        let mut store = lock(store);
        let timeout = left.map_or(STEP_TIMEOUT, |left| left.min(STEP_TIMEOUT));
        let result = step(store.as_mut(), timeout);
        for note in store.notes() {
            warn(&note);
        }
        let why = match result {
            Ok(value) => return Ok(Some(value)),
            Err(e) => format!("--state {}: {e}", store.name()),
        };
        if self.fail == StateFail::Closed {
            return Err(Error::StateUnreachable(format!("{why}; nothing more is sent (--state-fail closed)")));
        }
        if !self.warned.swap(true, Ordering::SeqCst) {
            warn(&format!("{why}; going on with this process's own limits (--state-fail open)"));
        }
        Ok(None)
    }
}

/// Locks even after a panicking thread poisoned the mutex: the state inside is
/// whole (every change is one assignment), and the panic is reported elsewhere.
fn lock<T: ?Sized>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_store_the_rate_is_kept_in_memory_per_key() {
        let shared =
            Shared::new(None, Some(Duration::from_millis(100)), Settings::default(), StateFail::Open, Duration::ZERO);
        let quiet = |_: &str| {};
        assert_eq!(shared.admit("a", None, &quiet), Ok(Admission::Go { wait: 0, why: None }));
        assert!(matches!(shared.admit("a", None, &quiet), Ok(Admission::Go { wait: 90..=100, .. })));
        assert_eq!(shared.admit("b", None, &quiet), Ok(Admission::Go { wait: 0, why: None }), "another key");
        let sample = Sample { ok: false, latency: 1 };
        assert_eq!(shared.record("a", sample, None, None, None, &quiet), Ok(None));
    }

    /// A store that is never there.
    struct Gone;

    impl Store for Gone {
        fn name(&self) -> String {
            "nowhere".into()
        }
        fn admit(&mut self, _: &str, _: &Ask, _: Duration) -> Result<Admission, String> {
            Err("nowhere is unreachable".into())
        }
        fn record(&mut self, _: &str, _: &Report, _: Duration) -> Result<Option<Refusal>, String> {
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
        let open = Shared::new(
            Some(Box::new(Gone)),
            Some(Duration::from_millis(100)),
            Settings::default(),
            StateFail::Open,
            Duration::ZERO,
        );
        assert_eq!(open.admit("a", None, &warn), Ok(Admission::Go { wait: 0, why: None }));
        assert!(matches!(open.admit("a", None, &warn), Ok(Admission::Go { wait: 90..=100, .. })), "own --rate");
        assert_eq!(lock(&warnings).len(), 1, "{:?}", lock(&warnings));
        let first = lock(&warnings)[0].clone();
        assert_eq!(
            first,
            "--state nowhere: nowhere is unreachable; going on with this process's own limits (--state-fail open)"
        );

        let closed = Shared::new(Some(Box::new(Gone)), None, Settings::default(), StateFail::Closed, Duration::ZERO);
        let Err(Error::StateUnreachable(why)) = closed.admit("a", None, &warn) else { panic!("closed ends the run") };
        assert!(why.contains("--state-fail closed"), "{why}");
    }
}
