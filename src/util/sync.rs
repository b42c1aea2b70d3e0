//! The one way a mutex is locked here: a thread that panicked while holding
//! it leaves what it guards usable (every value guarded is whole after each
//! step), so no lock turns one bug into a second.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// `mutex`'s guard, poisoned or not.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
