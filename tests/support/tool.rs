//! Whether an external program a test needs is there; also compiled into the
//! crate's own unit tests (`src/state/test_support.rs`), with `redis.rs` and `daemon.rs` beside it.

use std::io::Write as _;
use std::path::Path;

/// Set to `1` (as `.ci/run` does) and a missing tool fails its test instead of skipping it.
pub const REQUIRE_TOOLS: &str = "POLL_TEST_REQUIRE_TOOLS";

/// Whether the external program `name` that a test needs is installed: an executable file of
/// that name on `PATH`. (Looked up, not run: `--version` is not universal, and a daemon such as
/// tinyproxy, given a flag it does not know, should not get a chance to start.)
///
/// A test must never pass as if it had run when its tool is missing. So when `name` is missing:
/// with `POLL_TEST_REQUIRE_TOOLS=1` this panics, naming `install` (how to get it); otherwise it
/// prints one `SKIPPED` line and returns false, and the test returns at once. The line goes
/// straight to stderr, past libtest's capture, so that a plain `cargo test` shows it.
pub fn have_tool(name: &str, install: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).any(|dir| executable(&dir.join(name)));
    if found {
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

/// Whether python3 and its module `module` are there, as [`have_tool`] tells of a program.
pub fn have_python_module(module: &str, install: &str) -> bool {
    if !have_tool("python3", "apt-get install python3") {
        return false;
    }
    let found = std::process::Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|out| out.status.success());
    if found {
        return true;
    }
    assert!(
        std::env::var_os(REQUIRE_TOOLS).is_none_or(|v| v != "1"),
        "python3's {module} module is required ({REQUIRE_TOOLS}=1): {install}"
    );
    let test = std::thread::current().name().map(|t| format!("{t}: ")).unwrap_or_default();
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {test}python3's {module} module is not installed; {install} (set {REQUIRE_TOOLS}=1 to make this a failure)"
    );
    false
}

/// Whether the tests run as root, which some need (a chown to another user,
/// mknod). Otherwise as for a missing tool: one `SKIPPED` line, or a failure
/// with `POLL_TEST_REQUIRE_TOOLS=1` (`.ci/run` runs as root).
#[cfg(unix)]
pub fn have_root(what: &str) -> bool {
    let uid = std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if uid.as_deref().is_ok_and(|uid| uid == "0") {
        return true;
    }
    assert!(std::env::var_os(REQUIRE_TOOLS).is_none_or(|v| v != "1"), "{what} needs root ({REQUIRE_TOOLS}=1)");
    let test = std::thread::current().name().map(|t| format!("{t}: ")).unwrap_or_default();
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {test}{what} needs root: run the tests as root (set {REQUIRE_TOOLS}=1 to make this a failure)"
    );
    false
}

/// An executable file: its execute bits on Unix; on Windows, any file (`.exe` names included).
fn executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file() || path.with_extension("exe").is_file()
    }
}
