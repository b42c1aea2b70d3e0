//! How much of its stack a thread has left. jaq evaluates jq recursively and
//! bounds no recursion, so a filter that recurses without end (`def f: 1 +
//! f; f`) overflowed the thread's stack and aborted the process. Threads
//! that evaluate filters are started here with a known size and a reserve
//! at its bottom; [`low`] says when the stack has reached the reserve, so
//! that the filter fails there as a jq error instead.
//!
//! A stack grows down on every platform poll is built for (x86_64 and
//! aarch64: Linux, macOS, Windows). A thread not started here has no known
//! extent, and is never low.

use std::cell::Cell;
use std::io;
use std::thread::{Builder, JoinHandle};

thread_local! {
    /// The lowest address the stack may reach before it is low; 0 where unknown.
    static FLOOR: Cell<usize> = const { Cell::new(0) };
}

/// Starts `work` on a thread of `size` bytes of stack, whose last `reserve`
/// bytes [`low`] keeps: they hold what runs below the point that asks (the
/// rest of one filter's terms, natives, the error's unwinding).
pub(crate) fn spawn<T: Send + 'static>(
    builder: Builder,
    size: usize,
    reserve: usize,
    work: impl FnOnce() -> T + Send + 'static,
) -> io::Result<JoinHandle<T>> {
    builder.stack_size(size).spawn(move || {
        // The top is a little above this frame, and the platform's own data (thread-local
        // storage, a guard page) may sit in the size asked for: the reserve covers both.
        FLOOR.set(address().saturating_sub(size).saturating_add(reserve));
        work()
    })
}

/// Whether the stack has come down to its reserve (never, on a thread not started by [`spawn`]).
pub(crate) fn low() -> bool {
    address() < FLOOR.get()
}

/// An address in the caller's stack frame.
#[inline(never)]
fn address() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many levels, of at least 1 KiB each, go down before the stack is low; at most `most`.
    fn levels_until_low(most: usize) -> usize {
        let frame = std::hint::black_box([0u8; 1024]);
        if most == 0 || low() {
            return 0;
        }
        1 + levels_until_low(most - 1) + usize::from(frame[0])
    }

    #[test]
    fn a_thread_started_here_is_low_once_it_reaches_its_reserve() {
        let thread = spawn(Builder::new(), 1 << 20, 512 << 10, || (low(), levels_until_low(10_000)));
        let (at_start, levels) = thread.expect("a thread").join().expect("no overflow");
        // Not low at its start; low within the 512 KiB above its reserve, with the reserve left.
        assert!(!at_start);
        assert!(levels > 16 && levels <= 512, "{levels} levels");
        // A thread of unknown extent is never low.
        assert_eq!(levels_until_low(100), 100);
    }
}
