//! Shared helpers for the integration tests: each `tests/*.rs` binary does `mod support;`.

// Every test binary compiles this module on its own and uses a different
// subset of it, so unused items are expected and not worth a warning.
#![allow(dead_code)]
// socket2 does the one system call std lacks (SO_LINGER), so the harness needs no unsafe.
#![forbid(unsafe_code)]

pub mod cmd;
pub mod server;

// `support::poll()` reads better than `support::cmd::poll()`; not every binary uses all three.
#[allow(unused_imports)]
pub use cmd::{hermetic, poll, poll_std};

use std::io::Write as _;
use std::process::{Command, Stdio};

/// Set to `1` (as `.ci/run` does) and a missing tool fails its test instead of skipping it.
pub const REQUIRE_TOOLS: &str = "POLL_TEST_REQUIRE_TOOLS";

/// Whether the external program `name` that a test needs can be run (`name --version` succeeds).
///
/// A test must never pass as if it had run when its tool is missing. So when `name` cannot run:
/// with `POLL_TEST_REQUIRE_TOOLS=1` this panics, naming `install` (how to get it); otherwise it
/// prints one `SKIPPED` line and returns false, and the test returns at once. The line goes
/// straight to stderr, past libtest's capture, so that a plain `cargo test` shows it.
pub fn have_tool(name: &str, install: &str) -> bool {
    let runs = Command::new(name)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if runs {
        return true;
    }
    assert!(
        std::env::var_os(REQUIRE_TOOLS).is_none_or(|v| v != "1"),
        "{name} is required ({REQUIRE_TOOLS}=1): {install}"
    );
    // libtest names each test's thread after the test.
    let test = std::thread::current().name().map(|t| format!("{t}: ")).unwrap_or_default();
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {test}{name} is not installed; {install} (set {REQUIRE_TOOLS}=1 to make this a failure)"
    );
    false
}
