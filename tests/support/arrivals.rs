//! Waiting for what a test waits for: requests to arrive at a test server (shared by the
//! servers here), or anything else a test can look at again (a file written, a process gone).

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Waits on `arrived` (signalled on every change to `state`) until `enough`
/// holds of `state`; false when `timeout` passed first.
pub fn wait_until<T>(state: &Mutex<T>, arrived: &Condvar, timeout: Duration, enough: impl Fn(&T) -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
    while !enough(&state) {
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        state = arrived.wait_timeout(state, deadline - now).unwrap_or_else(PoisonError::into_inner).0;
    }
    true
}

/// Looks at `done` every 10 ms until it holds; false when `timeout` passed first. For what no
/// condition variable announces: a file another process writes, processes starting or ending.
pub fn eventually(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}
