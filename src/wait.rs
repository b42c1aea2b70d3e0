//! Interruptible waiting. The run loop sleeps on a channel that the signal
//! thread feeds, so SIGINT and SIGTERM end a wait at once with no polling loop.
//! While an attempt is in flight (a blocking request, a jq filter) the main
//! thread cannot listen, so the signal thread ends the run itself, through the
//! handler given to [`Waiter::install`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGINT, SIGTERM};

use crate::error::Signal;

/// The run's view of SIGINT and SIGTERM.
pub struct Waiter {
    signals: Receiver<Signal>,
    /// Set while an attempt is in flight: a signal then ends the process from the signal thread.
    busy: Arc<AtomicBool>,
}

impl Waiter {
    /// Installs the SIGINT and SIGTERM handlers; `end_busy_run` is called on the
    /// signal thread for a signal that arrives while an attempt is in flight,
    /// and must end the process. Call once per process.
    pub fn install(end_busy_run: impl Fn(Signal) + Send + 'static) -> std::io::Result<Waiter> {
        let (sender, signals) = mpsc::channel();
        let busy = Arc::new(AtomicBool::new(false));
        let mut incoming = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
        let attempt_in_flight = Arc::clone(&busy);
        std::thread::Builder::new().name("signals".into()).spawn(move || {
            for number in incoming.forever() {
                let signal = if number == SIGTERM { Signal::Terminate } else { Signal::Interrupt };
                // Send first, then look at `busy`: the main thread sets `busy` before it
                // checks the channel, so one of the two always sees the signal.
                let _ = sender.send(signal);
                if attempt_in_flight.load(Ordering::SeqCst) {
                    end_busy_run(signal);
                }
            }
        })?;
        Ok(Waiter { signals, busy })
    }

    /// Calls `end` if an attempt is still in flight at `when`: the deadline
    /// bounds requests through their timeouts, but nothing else stops a jq
    /// filter that never finishes.
    pub fn watch(&self, when: Instant, end: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        let attempt_in_flight = Arc::clone(&self.busy);
        std::thread::Builder::new().name("deadline".into()).spawn(move || {
            std::thread::sleep(when.saturating_duration_since(Instant::now()));
            if attempt_in_flight.load(Ordering::SeqCst) {
                end();
            }
        })?;
        Ok(())
    }

    /// Runs one attempt. A signal that arrived before it starts is returned
    /// instead; one that arrives during it ends the process (see `install`).
    pub fn attempt<T>(&self, work: impl FnOnce() -> T) -> Result<T, Signal> {
        self.busy.store(true, Ordering::SeqCst);
        if let Ok(signal) = self.signals.try_recv() {
            self.busy.store(false, Ordering::SeqCst);
            return Err(signal);
        }
        let result = work();
        self.busy.store(false, Ordering::SeqCst);
        Ok(result)
    }

    /// Sleeps for `duration` unless a signal comes first.
    pub fn sleep(&self, duration: Duration) -> Result<(), Signal> {
        let until = Instant::now() + duration;
        match self.signals.try_recv() {
            Ok(signal) => return Err(signal),
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => {}
        }
        let left = until.saturating_duration_since(Instant::now());
        match self.signals.recv_timeout(left) {
            Ok(signal) => Err(signal),
            Err(RecvTimeoutError::Timeout) => Ok(()),
            // The signal thread is gone (it never ends on its own): sleep without it.
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(until.saturating_duration_since(Instant::now()));
                Ok(())
            }
        }
    }
}
