//! End-to-end tests of `--watch` where it meets the other features (issue 49): the breaker of
//! `--state` beside held replies (`--watch`, `--prefer-wait`), `--stall` on a stream that goes
//! quiet or comes back the same and on a service not up yet, a 304 to a watch that asked
//! nothing, and a stream's `retry:` against `--interval`.

use crate::support;

use std::process::Output;
use std::time::{Duration, Instant};

use support::poll;
use support::server::{Reply, Server};

const UNTIL_DONE: &str = r#".status=="done""#;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `poll ARGS`, run to its end, and how long it took.
fn run(args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = poll().args(args).output().expect("run poll");
    (out, started.elapsed())
}

/// Gaps between consecutive requests the server saw.
fn gaps(server: &Server) -> Vec<Duration> {
    let requests = server.requests();
    requests.windows(2).map(|w| w[1].at.duration_since(w[0].at)).collect()
}

/// Row 16: a stream that says `retry: 0` and ends at once is asked again no more often than
/// `--interval` (it was 34 to 47 times in 2 s under `--interval 500ms`).
#[test]
fn a_retry_of_zero_never_asks_again_sooner_than_the_interval() {
    let ends = Reply::sse(&[(ms(0), "retry: 0\ndata: {\"status\":\"pending\"}\n\n")]);
    // At 0, 0.5, 1.0 and 1.5 s: never dozens.
    let server = Server::start(vec![ends]).expect_hits_between(3, 4);
    let (out, took) =
        run(&["--watch", "--until", UNTIL_DONE, "--interval", "500ms", "--timeout", "2s", &server.url("/events")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("deadline"), "{}", stderr(&out));
    // Ended when the next wait would pass the deadline: after the fourth request, at 1.5 s.
    assert!(took >= ms(1400) && took < ms(6000), "{took:?}");
    for gap in gaps(&server) {
        assert!(gap >= ms(450), "asked again {gap:?} after the last request, under --interval 500ms");
    }
}

/// Row 13: a 304 to a watch that carried no validator has no body to judge: exit 3 at once, as
/// when polling (it was "stream ended", asked again to the deadline).
#[test]
fn a_304_to_a_watch_that_carried_no_validator_is_exit_3_as_when_polling() {
    for mode in [&["--watch"][..], &[]] {
        let server = Server::start(vec![Reply::status(304)]).expect_hits(1);
        let args = [mode, &["--until", UNTIL_DONE, "--interval", "50ms", "--timeout", "10s", &server.url("/sub")]];
        let (out, took) = run(&args.concat());
        assert_eq!(out.status.code(), Some(3), "{mode:?}: {}", stderr(&out));
        let line = format!(
            "poll: error: HTTP 304: not retryable [{}]; a 304 Not Modified answered a request that carried no \
             If-None-Match or If-Modified-Since: there is no body to judge\n",
            server.url("/sub")
        );
        assert_eq!(stderr(&out), line, "{mode:?}");
        assert!(took < ms(5000), "{mode:?}: {took:?}");
        assert_eq!(out.stdout, b"", "{mode:?}");
    }
}
