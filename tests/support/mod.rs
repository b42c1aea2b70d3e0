//! Shared helpers for the integration tests, compiled once into their one binary (`tests/it/main.rs`).

// socket2 does the one system call std lacks (SO_LINGER), so the harness needs no unsafe
// (Cargo.toml's `[lints]` forbid it).

mod arrivals;
pub mod breaker;
pub mod certs;
pub mod cmd;
// The covering arrays and the tap of the pairs test (tests/it/pairs.rs), which is Unix-only.
#[cfg(unix)]
pub mod covering;
pub mod daemon;
pub mod etcd;
pub mod nginx;
#[cfg(not(unix))]
mod no_unix;
pub mod process;
pub mod redis;
// The fake Redis of the hostile-input tests, which are Unix-only.
#[cfg(unix)]
pub mod resp;
pub mod server;
#[cfg(unix)]
pub mod tap;
pub mod tinyproxy;
pub mod tokens;
mod tool;

// `support::poll()` reads better than `support::cmd::poll()`.
pub use cmd::{hermetic, poll, poll_std};
#[cfg(unix)]
pub use tool::have_root;
pub use tool::{have_python_module, have_tool};

// The wait for anything a test can look at again, beside the servers' `wait_hits`.
pub use arrivals::eventually;
