//! The `poll` command every test runs, with a hermetic environment: what a test sees must not
//! depend on the shell, terminal, locale or CI it happens to run in.

use std::ffi::OsString;
use std::time::Duration;

/// Environment variables removed from every command a test runs (`poll()`, `poll_std()`,
/// `hermetic()`). An entry ending in `*` removes every variable with that prefix.
///
/// - Proxies, in both cases as curl reads them: traffic must only ever go to 127.0.0.1, and a
///   test that wants a proxy sets one itself after this.
/// - Colour: `NO_COLOR` and the `CLICOLOR` / `CLICOLOR_FORCE` convention.
/// - CI: `CI` (CI sets `CI=true`) and every `GITHUB_*`, `GITHUB_ACTIONS` first among them, so a
///   run under GitHub Actions cannot switch on workflow commands or read the runner's settings
///   (`GITHUB_STEP_SUMMARY`); `GITLAB_CI`, which switches on GitLab's sections.
/// - Locale: `LANG`, `LANGUAGE` and every `LC_*` (`LC_ALL`, `LC_MESSAGES`, `LC_CTYPE`, ...).
/// - `TERM`: no test wants the tester's terminal type; `tests/it/terminal.rs` sets its own.
/// - `SSL_CERT_FILE`, `SSL_CERT_DIR`: the trusted roots are this machine's, unless a test names its own.
/// - `poll`'s own: every `POLL_*` (a flag's setting, `POLL_VERBOSE=1` in a developer's shell, the
///   tests' own `POLL_TEST_*`), and `TRACEPARENT` / `TRACESTATE`, which every request would join;
///   a test of them (`tests/it/environment.rs`) sets them itself after this.
pub const CLEARED_ENV: &[&str] = &[
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "NO_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "CI",
    "GITHUB_ACTIONS",
    "GITHUB_*",
    "GITLAB_CI",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_MESSAGES",
    "LC_CTYPE",
    "LC_*",
    "TERM",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "POLL_*",
    "TRACEPARENT",
    "TRACESTATE",
];

/// A hard stop for any one `poll()` run, so that a hang fails its test instead of the suite.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The names `CLEARED_ENV` stands for here: its plain names, and the variables of this process
/// that match its prefixes.
fn cleared() -> Vec<OsString> {
    cleared_of(std::env::vars_os().map(|(name, _)| name))
}

/// The names `CLEARED_ENV` stands for in an environment of the variables `names`.
fn cleared_of(names: impl Iterator<Item = OsString>) -> Vec<OsString> {
    let (prefixes, plain): (Vec<&str>, Vec<&str>) = CLEARED_ENV.iter().partition(|name| name.ends_with('*'));
    let mut cleared: Vec<OsString> = plain.into_iter().map(OsString::from).collect();
    for name in names {
        let text = name.to_string_lossy();
        if prefixes.iter().any(|prefix| text.starts_with(prefix.trim_end_matches('*'))) {
            cleared.push(name);
        }
    }
    cleared
}

/// The `poll` binary as an `assert_cmd::Command`: `CLEARED_ENV` removed, stopped after `TIMEOUT`.
pub fn poll() -> assert_cmd::Command {
    let mut cmd = assert_cmd::cargo::cargo_bin_cmd!("poll");
    for name in cleared() {
        cmd.env_remove(name);
    }
    cmd.timeout(TIMEOUT);
    cmd
}

/// The `poll` binary as a `std::process::Command` with the same environment as `poll()`, for
/// tests that spawn, signal or kill it (no timeout: the test owns the child).
pub fn poll_std() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_poll"));
    hermetic(&mut cmd);
    cmd
}

/// Removes `CLEARED_ENV` from any command, such as the `script` that runs `poll` on a terminal.
pub fn hermetic(cmd: &mut std::process::Command) -> &mut std::process::Command {
    for name in cleared() {
        cmd.env_remove(name);
    }
    cmd
}

/// What a developer's shell may hold that a test must not see, and what it must keep.
#[test]
fn the_clean_environment_drops_polls_own_variables_and_the_trace() {
    let shell = ["POLL_VERBOSE", "POLL_TIMEOUT", "POLL_TEST_AUTH_CMD_LIMIT_MS", "TRACEPARENT", "TRACESTATE", "LC_ALL"];
    let kept = ["PATH", "HOME", "TMPDIR", "CARGO_HOME", "RUST_BACKTRACE", "NOT_POLL_VERBOSE", "poll_verbose"];
    let cleared = cleared_of(shell.iter().chain(&kept).map(OsString::from));
    for name in shell {
        assert!(cleared.contains(&OsString::from(name)), "{name} is cleared: {cleared:?}");
    }
    for name in kept {
        assert!(!cleared.contains(&OsString::from(name)), "{name} is kept: {cleared:?}");
    }
}
