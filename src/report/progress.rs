//! What each loop of a run has done so far, kept by the loop itself: the
//! attempts it made, the last outcome it saw, the operation whose status it polls and
//! when it ended. The run's ending reads these facts here (a loop still in
//! flight when the run ends returns nothing), and the reporter only shows them.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::report::record::{Record, Seen};
use crate::util::sync::lock;

/// Every loop's progress, in the order of the URLs.
pub(crate) struct Progress {
    started: Instant,
    /// Shared with each loop's thread.
    loops: Vec<Arc<LoopProgress>>,
}

/// What one loop has done so far.
pub(crate) struct LoopProgress {
    /// When the run started.
    started: Instant,
    /// The attempt in flight or last made.
    attempts: AtomicU32,
    /// `--watch`: the events judged so far.
    events: AtomicU32,
    last: Mutex<Seen>,
    /// `--submit`: where the operation's status is polled, once known.
    operation: Mutex<Option<String>>,
    /// When the loop ended, from the start of the run.
    ended: Mutex<Option<Duration>>,
}

impl Progress {
    /// The progress of `loops` loops, none started.
    pub(crate) fn new(loops: usize) -> Progress {
        let started = Instant::now();
        let loops = (0..loops)
            .map(|_| {
                Arc::new(LoopProgress {
                    started,
                    attempts: AtomicU32::new(0),
                    events: AtomicU32::new(0),
                    last: Mutex::new(Seen::default()),
                    operation: Mutex::new(None),
                    ended: Mutex::new(None),
                })
            })
            .collect();
        Progress { started, loops }
    }

    /// Loop `t`'s progress, if there is such a loop.
    pub(crate) fn of(&self, t: usize) -> Option<&LoopProgress> {
        self.loops.get(t).map(|progress| &**progress)
    }

    /// Every loop's progress, in order.
    pub(crate) fn each(&self) -> impl Iterator<Item = &Arc<LoopProgress>> {
        self.loops.iter()
    }

    /// Attempts made so far by every loop (those in flight included).
    pub(crate) fn attempts(&self) -> u32 {
        self.loops.iter().map(|progress| progress.attempts()).sum()
    }

    /// `--watch`: events judged so far by every loop.
    pub(crate) fn events(&self) -> u32 {
        self.loops.iter().map(|progress| progress.events()).sum()
    }

    /// Time since the run started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

impl LoopProgress {
    /// The loop sends attempt `number`.
    pub(crate) fn sending(&self, number: u32) {
        self.attempts.store(number, Ordering::Relaxed);
    }

    /// The loop made the attempt `record`.
    pub(crate) fn made(&self, record: &Record) {
        *lock(&self.last) = record.seen();
    }

    /// `--watch`: the loop judged an event, the `record` of it; returns its number, from 1.
    pub(crate) fn event(&self, record: &Record) -> u32 {
        let n = self.events.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        let mut seen = record.seen();
        seen.event = Some(n);
        *lock(&self.last) = seen;
        n
    }

    /// `--watch`: events judged so far.
    pub(crate) fn events(&self) -> u32 {
        self.events.load(Ordering::Relaxed)
    }

    /// `--submit`: the loop now polls the operation's status at `url`.
    pub(crate) fn operation_at(&self, url: &str) {
        *lock(&self.operation) = Some(url.to_string());
    }

    /// The loop is over (the first call counts).
    pub(crate) fn ended(&self) {
        lock(&self.ended).get_or_insert_with(|| self.started.elapsed());
    }

    /// Attempts made so far.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::Relaxed)
    }

    /// The last outcome in words, if an attempt was made.
    pub(crate) fn last(&self) -> Option<String> {
        Some(lock(&self.last).words()).filter(|last| !last.is_empty())
    }

    /// The last outcome as a deadline names it ([`Seen::cause`]), if an attempt was made.
    pub(crate) fn cause(&self) -> Option<String> {
        lock(&self.last).cause().filter(|cause| !cause.is_empty())
    }

    /// `--submit`: the status URL polled, once known.
    pub(crate) fn operation(&self) -> Option<String> {
        lock(&self.operation).clone()
    }

    /// How long the loop ran: until it ended, or until now while it runs.
    pub(crate) fn elapsed(&self) -> Duration {
        lock(&self.ended).unwrap_or_else(|| self.started.elapsed())
    }
}
