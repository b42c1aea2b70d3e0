//! Waiting that can be cut short: a loop's waits end at once when the run
//! ends ([`Cancel`]), so no wait polls a flag. The signals that end a run
//! come from `signals.rs`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::util::sync::lock;

/// The run is over: a loop stops at its next wait or turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cancelled;

/// Shared by the loops of a run; set once, when the run ends.
#[derive(Debug, Default)]
pub(crate) struct Cancel {
    /// Read without a lock on every turn: tight polling pays nothing for it.
    set: AtomicBool,
    lock: Mutex<()>,
    woken: Condvar,
}

impl Cancel {
    pub(crate) fn cancel(&self) {
        let _guard = lock(&self.lock);
        self.set.store(true, Ordering::SeqCst);
        self.woken.notify_all();
    }

    pub(crate) fn check(&self) -> Result<(), Cancelled> {
        if self.set.load(Ordering::SeqCst) { Err(Cancelled) } else { Ok(()) }
    }

    /// Sleeps for `duration` unless the run ends first.
    pub(crate) fn sleep(&self, duration: Duration) -> Result<(), Cancelled> {
        self.check()?;
        if duration.is_zero() {
            return Ok(());
        }
        let until = Instant::now() + duration;
        let mut guard = lock(&self.lock);
        loop {
            self.check()?;
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            guard = self.woken.wait_timeout(guard, left).unwrap_or_else(PoisonError::into_inner).0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_wait_runs_its_course_unless_cancelled() {
        let cancel = Arc::new(Cancel::default());
        let started = Instant::now();
        assert_eq!(cancel.sleep(Duration::from_millis(30)), Ok(()));
        assert!(started.elapsed() >= Duration::from_millis(30));

        let other = Arc::clone(&cancel);
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            other.cancel();
        });
        let started = Instant::now();
        assert_eq!(cancel.sleep(Duration::from_secs(30)), Err(Cancelled));
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
        let _ = canceller.join();
        assert_eq!(cancel.sleep(Duration::ZERO), Err(Cancelled), "and it stays cancelled");
    }
}
