//! Interruptible waiting: every wait of a run (a sleep between attempts, a
//! request in flight) is a receive on one channel that SIGINT and SIGTERM also
//! feed, so a signal ends any of them at once, with no polling loop.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGINT, SIGTERM};

use crate::error::Signal;

/// What can end a wait early.
pub enum Event<T> {
    Signal(Signal),
    Ready(T),
}

/// The receiving end of a run's events, and the clock it waits by.
pub struct Waiter<T> {
    sender: Sender<Event<T>>,
    events: Receiver<Event<T>>,
}

impl<T: Send + 'static> Waiter<T> {
    /// Installs the SIGINT and SIGTERM handlers. Call once per process.
    pub fn install() -> std::io::Result<Waiter<T>> {
        let (sender, events) = mpsc::channel();
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
        let forward = sender.clone();
        std::thread::Builder::new().name("signals".into()).spawn(move || {
            for number in signals.forever() {
                let signal = if number == SIGTERM { Signal::Terminate } else { Signal::Interrupt };
                if forward.send(Event::Signal(signal)).is_err() {
                    break;
                }
            }
        })?;
        Ok(Waiter { sender, events })
    }
}

impl<T> Waiter<T> {
    /// A sender for a worker thread to report on.
    pub fn sender(&self) -> Sender<Event<T>> {
        self.sender.clone()
    }

    /// Sleeps for `duration` unless a signal comes first.
    pub fn sleep(&self, duration: Duration) -> Result<(), Signal> {
        let until = Instant::now() + duration;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            match self.events.recv_timeout(left) {
                Ok(Event::Signal(signal)) => return Err(signal),
                // A late result of an abandoned request: nothing waits for it any more.
                Ok(Event::Ready(_)) => continue,
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return Ok(()),
            }
        }
    }

    /// Waits for a worker's result, a signal, or `limit` (`None`: no limit).
    /// `Ok(None)` means the limit passed first.
    pub fn next(&self, limit: Option<Duration>) -> Result<Option<T>, Signal> {
        let event = match limit {
            Some(limit) => match self.events.recv_timeout(limit) {
                Ok(event) => event,
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return Ok(None),
            },
            None => match self.events.recv() {
                Ok(event) => event,
                Err(_) => return Ok(None),
            },
        };
        match event {
            Event::Signal(signal) => Err(signal),
            Event::Ready(value) => Ok(Some(value)),
        }
    }
}
