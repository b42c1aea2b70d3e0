//! What each loop of a run has done so far, kept by the loop itself: the
//! attempts it made, the last outcome it saw, the operation it watches and
//! when it ended. The run's ending reads these facts here (a loop still in
//! flight when the run ends returns nothing), and the reporter only shows them.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::report::record::{Record, Seen};

/// Every loop's progress, numbered as the loops are.
pub(crate) struct Progress {
    started: Instant,
    loops: Vec<Loop>,
}

#[derive(Default)]
struct Loop {
    /// The attempt in flight or last made.
    attempts: AtomicU32,
    last: Mutex<Seen>,
    /// `--submit`: where the operation is watched, once known.
    operation: Mutex<Option<String>>,
    /// When the loop ended, from the start of the run.
    ended: Mutex<Option<Duration>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Progress {
    /// The progress of `loops` loops, none started.
    pub(crate) fn new(loops: usize) -> Progress {
        Progress { started: Instant::now(), loops: (0..loops).map(|_| Loop::default()).collect() }
    }

    /// Loop `t` sends attempt `number`.
    pub(crate) fn sending(&self, t: usize, number: u32) {
        if let Some(one) = self.loops.get(t) {
            one.attempts.store(number, Ordering::SeqCst);
        }
    }

    /// Loop `t` made the attempt `record`.
    pub(crate) fn made(&self, t: usize, record: &Record) {
        if let Some(one) = self.loops.get(t) {
            *lock(&one.last) = record.seen();
        }
    }

    /// `--submit`: loop `t` now watches the operation at `url`.
    pub(crate) fn watching(&self, t: usize, url: &str) {
        if let Some(one) = self.loops.get(t) {
            *lock(&one.operation) = Some(url.to_string());
        }
    }

    /// Loop `t` is over (the first call counts).
    pub(crate) fn ended(&self, t: usize) {
        if let Some(one) = self.loops.get(t) {
            lock(&one.ended).get_or_insert_with(|| self.started.elapsed());
        }
    }

    /// Attempts made so far by every loop (those in flight included).
    pub(crate) fn attempts(&self) -> u32 {
        self.loops.iter().map(|one| one.attempts.load(Ordering::SeqCst)).sum()
    }

    /// Attempts made so far by loop `t`.
    pub(crate) fn attempts_of(&self, t: usize) -> u32 {
        self.loops.get(t).map_or(0, |one| one.attempts.load(Ordering::SeqCst))
    }

    /// The last outcome of loop `t` in words, if it made an attempt.
    pub(crate) fn last(&self, t: usize) -> Option<String> {
        self.loops.get(t).map(|one| lock(&one.last).words()).filter(|last| !last.is_empty())
    }

    /// The last outcome of loop `t` as a deadline names it ([`Seen::cause`]), if it made an attempt.
    pub(crate) fn cause(&self, t: usize) -> Option<String> {
        self.loops.get(t).and_then(|one| lock(&one.last).cause()).filter(|cause| !cause.is_empty())
    }

    /// `--submit`: the status URL loop `t` watches, once known.
    pub(crate) fn operation(&self, t: usize) -> Option<String> {
        self.loops.get(t).and_then(|one| lock(&one.operation).clone())
    }

    /// Time since the run started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// How long loop `t` ran: until it ended, or until now while it runs.
    pub(crate) fn elapsed_of(&self, t: usize) -> Duration {
        let ended = self.loops.get(t).and_then(|one| *lock(&one.ended));
        ended.unwrap_or_else(|| self.started.elapsed())
    }
}
