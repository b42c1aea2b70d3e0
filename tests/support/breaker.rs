//! The circuit breaker's set-up for the `--state` tests (`tests/it/state.rs`, `tests/it/redis.rs`).

use super::process::{run, stderr};
use super::server::Server;

/// Opens the breaker of `server`'s origin in `state` (a file or a URL) with
/// five quick 503s: the run ends with exit 6 after exactly five requests.
pub fn open_breaker(server: &Server, state: &str, extra: &[&str]) {
    let url = server.url("/");
    let mut args = vec!["--state", state, "--retries", "20", "--backoff", "0"];
    args.extend_from_slice(extra);
    args.push(&url);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert_eq!(server.hits(), 5, "the fifth failure opens the breaker");
}
