//! End-to-end tests of `--watch` where it meets the other features (issue 49): the breaker of
//! `--state` and `--retries` beside held replies (`--watch`, `--prefer-wait`, a long poll's head
//! held past `--idle-timeout`), `--stall` on a stream that goes quiet or comes back the same and
//! on a service not up yet, a 304 to a watch that asked nothing, and a stream's `retry:` against
//! `--interval`. The Redis test takes `support::process::serial()`, as every Redis test does.

use crate::support;

use std::process::Output;
use std::time::{Duration, Instant};

use support::poll;
use support::process::{Folder, serial};
use support::redis::Redis;
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

/// The run's one line: `poll: error: {what} for 1.Ns [{url}]` (the clock read a little after
/// the 1 s of `--stall` when the run stalled; the machine may be slow to wake).
fn assert_stalled(out: &Output, what: &str, url: &str) {
    let text = stderr(out);
    let rest = text
        .strip_prefix(&format!("poll: error: {what} for 1."))
        .and_then(|rest| rest.strip_suffix(&format!("s [{url}]\n")));
    assert!(rest.is_some_and(|tenths| tenths.len() == 1 && tenths.chars().all(|c| c.is_ascii_digit())), "{text}");
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

const PENDING_KV: &str = r#"[{"Key":"deploy","Value":"pending"}]"#;
const READY_KV: &str = r#"[{"Key":"deploy","Value":"ready"}]"#;
const UNTIL_READY: &str = r#".[0].Value=="ready""#;

/// A key-value store's replies: `pending` held `hold` six times, then `ready` held as long,
/// then `ready` at once (what a later run gets), each with its `X-Consul-Index`.
fn held_replies(hold: Duration) -> Vec<Reply> {
    let kv = |n: usize, body: &str| Reply::json(200, body).header("X-Consul-Index", &(n + 1).to_string());
    let mut replies: Vec<Reply> = (0..6).map(|n| kv(n, PENDING_KV).delay(hold)).collect();
    replies.push(kv(6, READY_KV).delay(hold));
    replies.push(kv(7, READY_KV));
    replies
}

/// Row 1, on `--state` (a file or a Redis URL): a blocking query under `--watch` held 400 ms,
/// seven times, with `--breaker-max-p95 200ms`, runs to its `ready` (it was exit 6 after 5
/// requests), and the next `poll --state` of the origin is not turned away (it was exit 6 at once).
fn a_held_watch_never_opens_the_breaker(state: &str) {
    let server = Server::start(held_replies(ms(400))).expect_hits(8);
    let url = server.url("/v1/kv/deploy");
    let breaker = ["--state", state, "--breaker-max-p95", "200ms"];
    let watch = ["--watch", "--until", UNTIL_READY, "-i", "100ms", "--timeout", "30s", &url];
    let (out, took) = run(&[&breaker[..], &watch].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, READY_KV.as_bytes());
    assert!(took >= ms(7 * 400), "{took:?}");
    let (out, _) = run(&[&breaker[..], &["--until", UNTIL_READY, "--timeout", "10s", &url]].concat());
    assert_eq!(out.status.code(), Some(0), "the next run of the origin: {}", stderr(&out));
    // A blocking query, held by the server up to the wait it asked for.
    let second = &server.requests()[1].path;
    assert!(second.starts_with("/v1/kv/deploy?index=1&wait="), "{second}");
}

#[test]
fn a_held_watch_never_opens_the_breaker_of_a_state_file() {
    let folder = Folder::new("meet-watch-breaker");
    a_held_watch_never_opens_the_breaker(&folder.file("api.state"));
}

#[test]
fn a_held_watch_never_opens_the_breaker_in_redis() {
    let _serial = serial();
    let Some(redis) = Redis::start() else { return };
    a_held_watch_never_opens_the_breaker(&redis.url());
}

/// Row 1 with `--prefer-wait`: a long poll held 400 ms of the 1 s it asked for is not latency
/// either (it was exit 6 after 5 requests); what a reply takes beyond the wait asked for still
/// is, as is all of a poll that asked no hold: those open the breaker.
#[test]
fn a_prefer_wait_hold_is_not_latency_but_what_passes_it_is() {
    let folder = Folder::new("meet-watch-prefer-wait");
    let state = folder.file("api.state");
    let breaker = ["--state", &state, "--breaker-max-p95", "200ms", "--until", UNTIL_READY, "-i", "100ms"];
    let server = Server::start(held_replies(ms(400))).expect_hits(8);
    let url = server.url("/v1/kv/deploy");
    let (out, _) = run(&[&breaker[..], &["--prefer-wait", "1s", "--timeout", "30s", &url]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests()[0].header("prefer"), Some("wait=1"));
    let (out, _) = run(&[&breaker[..], &["--timeout", "10s", &url]].concat());
    assert_eq!(out.status.code(), Some(0), "the next run of the origin: {}", stderr(&out));
    drop(server);

    // Held 1.25 s for a wait of 1 s, and held 400 ms for no wait at all: slow, five times.
    for (hold, prefer) in [(ms(1250), &["--prefer-wait", "1s"][..]), (ms(400), &[])] {
        let folder = Folder::new("meet-watch-slow");
        let state = folder.file("api.state");
        let server = Server::start(held_replies(hold)).expect_hits(5);
        let breaker = ["--state", &state, "--breaker-max-p95", "200ms", "--until", UNTIL_READY, "-i", "100ms"];
        let (out, _) = run(&[&breaker[..], prefer, &["--timeout", "30s", &server.url("/v1/kv/deploy")]].concat());
        assert_eq!(out.status.code(), Some(6), "{prefer:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("above --breaker-max-p95 200ms"), "{prefer:?}: {}", stderr(&out));
    }
}

/// Row 3: under `--watch` the stall clock runs on time, not on events. A stream that goes quiet
/// after its last event, sending heartbeats (comments) or nothing at all, stalls after `--stall`
/// while its reply is still open (it ran to `--timeout`, "deadline reached").
#[test]
fn a_stream_gone_quiet_stalls_after_the_stall_not_at_the_deadline() {
    let event = "data: {\"status\":\"running\",\"progress\":40}\n\n";
    let heartbeats: Vec<(Duration, &str)> =
        [(ms(0), event)].into_iter().chain((0..60).map(|_| (ms(200), ": ping\n\n"))).collect();
    for (quiet, parts) in [("heartbeats", heartbeats), ("nothing", vec![(ms(0), event)])] {
        let server = Server::start(vec![Reply::sse(&parts).then_hold()]).expect_hits(1);
        let url = server.url("/events");
        let args = ["--watch", "--until", UNTIL_DONE, "--show", ".progress", "--stall", "1s", "--timeout", "8s", &url];
        let (out, took) = run(&args);
        assert_eq!(out.status.code(), Some(1), "{quiet}: {}", stderr(&out));
        assert_stalled(&out, "stalled: .progress has been 40", &url);
        assert!(took >= ms(1000) && took < ms(6000), "{quiet}: {took:?}");
    }
}

/// Row 3: a reply that ends and brings the same value again on each reconnect (a Kubernetes
/// watch without a resource version re-lists `ADDED`; a long poll answers with the same message)
/// does not start the clock again: it stalls after `--stall` (it never stalled).
#[test]
fn a_reconnect_that_brings_the_same_value_does_not_start_the_clock_again() {
    let added = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"j\"},\"status\":{\"phase\":\"Running\"}}}\n";
    let relist = Reply::stream(200, "application/json", &[(ms(0), added)]);
    let message = Reply::json(200, r#"{"status":"running"}"#).delay(ms(150));
    for (what, reply, show) in [("a re-list", relist, ".object.status.phase"), ("a long poll", message, ".status")] {
        let server = Server::start(vec![reply]).expect_hits_between(4, 9);
        let url = server.url("/watch");
        let until = r#".object.status.phase == "Succeeded" or .status == "done""#;
        let args =
            ["--watch", "--until", until, "--show", show, "--stall", "1s", "-i", "200ms", "--timeout", "8s", &url];
        let (out, took) = run(&args);
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(&out));
        let value = if what == "a re-list" { "Running" } else { "running" };
        assert_stalled(&out, &format!("stalled: {show} has been {value}"), &url);
        assert!(took >= ms(1000) && took < ms(6000), "{what}: {took:?}");
    }
}

/// Row 3: a long poll held with no answer at all (the server holds the request until the next
/// message, and none comes) is as quiet as a stream: it stalls after `--stall`, before
/// `--idle-timeout` and `--timeout`.
#[test]
fn a_long_poll_held_with_no_answer_stalls() {
    let pending = Reply::json(200, r#"{"status":"pending"}"#).header("ETag", "\"m1\"");
    let server = Server::start(vec![pending, Reply::hang()]).expect_hits(2);
    let url = server.url("/sub");
    let args = ["--watch", "--until", UNTIL_DONE, "--stall", "1s", "-i", "100ms", "--timeout", "8s", &url];
    let (out, took) = run(&args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_stalled(&out, "stalled: the body has been the same", &url);
    assert!(took >= ms(1000) && took < ms(6000), "{took:?}");
    assert_eq!(server.requests()[1].header("if-none-match"), Some("\"m1\""));
}

/// Row 4: a service not up yet (connection refused) has shown nothing: its refusals neither
/// start nor advance the stall clock, which starts with the first value judged. Polling and
/// watching alike (it ended at `--stall` with "the body has been the same" while refused).
#[test]
fn a_service_not_up_yet_does_not_stall_the_clock_starts_with_the_first_value() {
    use std::process::Stdio;
    for mode in [&[][..], &["--watch"]] {
        let port = support::redis::free_port();
        let started = Instant::now();
        let child = support::poll_std()
            .args(mode)
            .args(["--until", UNTIL_DONE, "--show", ".status", "--stall", "1s", "-i", "200ms", "--timeout", "10s"])
            .arg(format!("http://127.0.0.1:{port}/job"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn poll");
        std::thread::sleep(ms(1500));
        let server =
            Server::start_on(port, vec![Reply::json(200, r#"{"status":"pending"}"#)]).expect_hits_between(3, 9);
        let out = child.wait_with_output().expect("wait for poll");
        let took = started.elapsed();
        assert_eq!(out.status.code(), Some(1), "{mode:?}: {}", stderr(&out));
        assert_stalled(&out, "stalled: .status has been pending", &format!("http://127.0.0.1:{port}/job"));
        // Up at 1.5 s, then the same value for the 1 s of --stall.
        assert!(took >= ms(2500) && took < ms(7000), "{mode:?}: {took:?}");
        drop(server);
    }
}

/// Row 1: a long poll whose head the server holds past `--idle-timeout` (no message yet) is
/// dropped and asked again as a silent stream is, not a failure: no `--retries` spent, a success
/// for the breaker (it was a timeout: with `--retries 0`, exit 5 at once; with retries, five in a
/// row opened the breaker of `--state` on its success rate).
#[test]
fn a_long_poll_held_past_the_idle_timeout_is_asked_again_not_failed() {
    for retries in ["0", "6"] {
        let folder = Folder::new("meet-watch-idle-head");
        let state = folder.file("api.state");
        let held = Reply::json(200, r#"{"status":"pending"}"#).delay(ms(1500));
        let mut replies = vec![held; 6];
        replies.push(Reply::json(200, r#"{"status":"done"}"#));
        let server = Server::start(replies).expect_hits(7);
        let url = server.url("/sub");
        let args = [
            "--watch",
            "--until",
            UNTIL_DONE,
            "--idle-timeout",
            "300ms",
            "-i",
            "50ms",
            "--retries",
            retries,
            "--state",
            &state,
            "-v",
            "--timeout",
            "20s",
            &url,
        ];
        let (out, took) = run(&args);
        assert_eq!(out.status.code(), Some(0), "--retries {retries}: {}", stderr(&out));
        assert_eq!(out.stdout, br#"{"status":"done"}"#);
        assert!(took >= ms(6 * 300), "{took:?}");
        let idle = stderr(&out).lines().filter(|line| line.contains(": stream went idle after ")).count();
        assert_eq!(idle, 6, "--retries {retries}: {}", stderr(&out));
        for gap in gaps(&server) {
            assert!(gap >= ms(250), "asked again before --idle-timeout: {gap:?}");
        }
    }
}

/// Found by the pairs test: a blocking query whose replies carry an `ETag` besides
/// `X-Consul-Index` sends `If-None-Match` on every later request (validators are kept by the URL
/// as given, not by the query that `index` and `wait` change), and the index a 304 carries moves
/// the next request's. Before: no `If-None-Match` after the first reply, and the index stayed.
#[test]
fn a_blocking_query_keeps_its_validators_and_a_304_moves_its_index() {
    let first = Reply::json(200, r#"{"status":"pending"}"#).header("ETag", "\"v1\"").header("X-Consul-Index", "10");
    let not_modified = Reply::status(304).header("ETag", "\"v1\"").header("X-Consul-Index", "11");
    let done = Reply::json(200, r#"{"status":"done"}"#).header("ETag", "\"v2\"").header("X-Consul-Index", "12");
    let server = Server::start(vec![first, not_modified, done]).expect_hits(3);
    let (out, _) = run(&["--watch", "--until", UNTIL_DONE, "-i", "50ms", "--timeout", "10s", &server.url("/kv")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"status":"done"}"#);
    let requests = server.requests();
    let sent: Vec<(&str, Option<&str>)> = requests
        .iter()
        .map(|r| (r.path.split("&wait=").next().unwrap_or_default(), r.header("if-none-match")))
        .collect();
    assert_eq!(sent, [("/kv", None), ("/kv?index=10", Some("\"v1\"")), ("/kv?index=11", Some("\"v1\""))]);
}

/// Found by the pairs test: a watch whose request is held when `--timeout` comes ends naming
/// the last event judged, as a stream's does, not "request timed out" (a watch has no request
/// timeout). Before: `deadline reached; last: request timed out`.
#[test]
fn a_hold_cut_by_the_deadline_names_the_last_event_judged() {
    let pending = || Reply::json(200, r#"{"status":"pending"}"#).delay(ms(400));
    let server = Server::start(vec![pending()]).expect_hits_between(2, 6);
    let url = server.url("/held");
    let (out, took) =
        run(&["--watch", "--until", UNTIL_DONE, "--show", ".status", "-i", "50ms", "--timeout", "1s", &url]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(took >= ms(1000), "{took:?}");
    // Events are counted over the run's requests: one or two have come by then, as the machine allows.
    let text = stderr(&out);
    let n = text.strip_prefix("poll: error: deadline reached; last: event ").and_then(|rest| {
        rest.strip_suffix(&format!(" pending · status pending (raise --timeout to wait longer) [{url}]\n"))
    });
    assert!(n.is_some_and(|n| n.parse::<u32>().is_ok_and(|n| n >= 1)), "{text}");
}
