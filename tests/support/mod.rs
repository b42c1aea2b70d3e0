//! Shared helpers for the integration tests: each `tests/*.rs` binary does `mod support;`.

// Every test binary compiles this module on its own and uses a different
// subset of it, so unused items are expected and not worth a warning.
#![allow(dead_code)]
// socket2 does the one system call std lacks (SO_LINGER), so the harness needs no unsafe.
#![forbid(unsafe_code)]

mod arrivals;
pub mod breaker;
pub mod cmd;
#[cfg(not(unix))]
mod no_unix;
pub mod process;
pub mod redis;
pub mod resp;
pub mod server;
pub mod tinyproxy;
pub mod tokens;
mod tool;

// `support::poll()` reads better than `support::cmd::poll()`; not every binary uses all three.
#[allow(unused_imports)]
pub use cmd::{hermetic, poll, poll_std};
#[allow(unused_imports)]
pub use tool::{have_root, have_tool};
