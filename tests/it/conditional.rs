//! End-to-end tests of conditional polls (If-None-Match / If-Modified-Since, a
//! 304 judged on the body kept), the server's pacing headers (X-Poll-Interval,
//! Retry-After-Ms, x-ms-retry-after-ms), --interval-max and --prefer-wait,
//! against the scripted loopback server.

use crate::support;

use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::poll;
use support::server::{Recorded, Reply, Server};

const PENDING: &str = r#"{"status":"pending"}"#;
const DONE: &str = r#"{"status":"done","result":42}"#;
const UNTIL_DONE: &str = r#".status=="done""#;
const LAST_MODIFIED: &str = "Tue, 01 Dec 2026 10:00:00 GMT";

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn gaps(requests: &[Recorded]) -> Vec<Duration> {
    requests.windows(2).map(|w| w[1].at.duration_since(w[0].at)).collect()
}

fn events(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

fn tagged(code: u16, body: &str, etag: &str) -> Reply {
    Reply::json(code, body).header("ETag", etag)
}

#[test]
fn validators_go_on_the_second_poll_and_not_on_the_first() {
    let server = Server::start(vec![
        tagged(200, PENDING, "W/\"v1\"").header("Last-Modified", LAST_MODIFIED),
        Reply::json(200, PENDING),
        Reply::json(200, DONE),
    ]);
    let out = poll().args(["--until", UNTIL_DONE, "-i", "0", &server.url("/job")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, DONE.as_bytes());
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].header("if-none-match"), None);
    assert_eq!(requests[0].header("if-modified-since"), None);
    // A weak ETag goes back as it came.
    assert_eq!(requests[1].header_all("if-none-match"), ["W/\"v1\""]);
    assert_eq!(requests[1].header_all("if-modified-since"), [LAST_MODIFIED]);
    // The second 200 had no validators: the third poll asks for nothing.
    assert_eq!(requests[2].header("if-none-match"), None);
    assert_eq!(requests[2].header("if-modified-since"), None);
}

#[test]
fn a_304_is_judged_on_the_kept_body_and_that_body_is_printed() {
    // Not met on the kept body: the 304s keep it polling until a new body is done.
    let server = Server::start(vec![
        tagged(200, PENDING, "\"p\""),
        Reply::status(304),
        Reply::status(304),
        tagged(200, DONE, "\"d\""),
    ]);
    let out = poll().args(["--until", UNTIL_DONE, "-i", "0", "-v", &server.url("/job")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, DONE.as_bytes());
    assert_eq!(server.hits(), 4);
    let err = stderr(&out);
    assert_eq!(err.matches("304 not modified").count(), 2, "{err}");
    assert!(err.contains("attempt 2: 304 not modified in "), "{err}");
    let requests = server.requests();
    assert_eq!(requests[1].header("if-none-match"), Some("\"p\""));
    assert_eq!(requests[3].header("if-none-match"), Some("\"p\""));

    // Met on the kept body: --stable 3 holds across two 304s, and stdout is the 200's body byte for byte.
    let body = "{\"status\":\"done\",\n  \"note\":\"kept \u{e9}\"}\n";
    let server = Server::start(vec![tagged(200, body, "\"d\""), Reply::status(304), Reply::status(304)]);
    let out = poll()
        .args(["--until", UNTIL_DONE, "--stable", "3", "-i", "0", "--log-format", "json", &server.url("/job")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, body.as_bytes());
    assert_eq!(server.hits(), 3);
    let events = events(&out);
    let statuses: Vec<_> = events.iter().filter_map(|e| e.get("status").and_then(Value::as_u64)).collect();
    assert_eq!(statuses, [200, 304, 304]);
    let conditions: Vec<_> = events.iter().filter_map(|e| e.get("condition").and_then(Value::as_str)).collect();
    assert_eq!(conditions, ["met", "met", "met"]);
    assert_eq!(events[2]["action"], "done");
}

#[test]
fn a_304_is_a_healthy_reply_for_the_retry_budget() {
    // 503, 304, 503: with --retries 1 each failure follows a healthy 304, so the budget is never spent.
    let server = Server::start(vec![
        tagged(200, PENDING, "\"p\""),
        Reply::status(503),
        Reply::status(304),
        Reply::status(503),
        tagged(200, DONE, "\"d\""),
    ]);
    let out = poll()
        .args(["--until", UNTIL_DONE, "-i", "0", "--retries", "1", "--backoff", "10ms", &server.url("/job")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, DONE.as_bytes());
    assert_eq!(server.hits(), 5);
}

#[test]
fn the_users_own_validator_replaces_ours() {
    // The user's If-None-Match goes on every request, ours never; a 304 to it is "not yet".
    let server = Server::start(vec![
        Reply::status(304),
        tagged(200, PENDING, "\"p\"").header("Last-Modified", LAST_MODIFIED),
        Reply::status(304),
        tagged(200, DONE, "\"d\""),
    ]);
    let out = poll()
        .args(["--until", UNTIL_DONE, "-i", "0", "-H", "If-None-Match: \"mine\"", &server.url("/job")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, DONE.as_bytes());
    for request in server.requests() {
        assert_eq!(request.header_all("if-none-match"), ["\"mine\""]);
        assert_eq!(request.header("if-modified-since"), None);
    }

    // Without --until: wait until the body changes from the one the user knows.
    let server = Server::start(vec![Reply::status(304), Reply::status(304), tagged(200, DONE, "\"new\"")]);
    let out = poll()
        .args(["-i", "0", "-H", &format!("If-Modified-Since: {LAST_MODIFIED}"), &server.url("/job")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, DONE.as_bytes());
    assert_eq!(server.hits(), 3);
    for request in server.requests() {
        assert_eq!(request.header_all("if-modified-since"), [LAST_MODIFIED]);
        assert_eq!(request.header("if-none-match"), None);
    }
}

#[test]
fn no_conditional_sends_no_validators() {
    let server = Server::start(vec![
        tagged(200, PENDING, "\"p\"").header("Last-Modified", LAST_MODIFIED),
        tagged(200, PENDING, "\"p\""),
        tagged(200, DONE, "\"d\""),
    ]);
    let out =
        poll().args(["--until", UNTIL_DONE, "-i", "0", "--no-conditional", &server.url("/job")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for request in server.requests() {
        assert_eq!(request.header("if-none-match"), None);
        assert_eq!(request.header("if-modified-since"), None);
    }
    assert_eq!(server.hits(), 3);
}

#[test]
fn a_304_to_a_request_without_validators_is_exit_3() {
    let server = Server::start(vec![Reply::status(304)]).expect_hits(1);
    let out = poll().args(["--until", UNTIL_DONE, &server.url("/job")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(out.stdout, b"");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("HTTP 304") && err.contains("no body to judge"), "{err}");

    // --no-conditional: the second poll carried none, so its 304 is exit 3 too.
    let server = Server::start(vec![tagged(200, PENDING, "\"p\""), Reply::status(304)]).expect_hits(2);
    let out = poll().args(["--until", UNTIL_DONE, "-i", "0", "--no-conditional", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
}

#[test]
fn x_poll_interval_is_a_floor_for_the_next_poll() {
    let server = Server::start(vec![
        tagged(200, PENDING, "\"p\"").header("X-Poll-Interval", "1"),
        Reply::status(304).header("X-Poll-Interval", "1"),
        Reply::json(200, DONE),
    ]);
    let out = poll().args(["--until", UNTIL_DONE, "-i", "100ms", "-v", &server.url("/events")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let gaps = gaps(&server.requests());
    assert_eq!(gaps.len(), 2);
    for gap in &gaps {
        assert!(*gap >= Duration::from_secs(1) && *gap < Duration::from_secs(4), "gaps {gaps:?}");
    }
    let err = stderr(&out);
    assert_eq!(err.matches("poll again in 1.0s (X-Poll-Interval)").count(), 2, "{err}");
}

#[test]
fn retry_after_ms_and_x_ms_retry_after_ms_win_over_retry_after() {
    // A 2xx not done yet with Retry-After-Ms; a 503 with x-ms-retry-after-ms: both beside a Retry-After of 30 s.
    let server = Server::start(vec![
        Reply::json(202, PENDING).header("Retry-After", "30").header("Retry-After-Ms", "700"),
        Reply::status(503).header("x-ms-retry-after-ms", "600").header("Retry-After", "30"),
        Reply::json(200, DONE),
    ]);
    let out = poll().args(["--until", UNTIL_DONE, "-i", "0", "-v", &server.url("/op")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let gaps = gaps(&server.requests());
    assert!(gaps[0] >= Duration::from_millis(700) && gaps[0] < Duration::from_secs(5), "gaps {gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(600) && gaps[1] < Duration::from_secs(5), "gaps {gaps:?}");
    let err = stderr(&out);
    assert!(err.contains("poll again in 700ms (Retry-After)"), "{err}");
    assert!(err.contains("retry in 600ms (Retry-After)"), "{err}");
}

#[test]
fn interval_max_grows_the_wait_one_and_a_half_times_up_to_the_cap() {
    let mut replies: Vec<Reply> = (0..6).map(|_| Reply::json(200, PENDING)).collect();
    replies.push(Reply::json(200, DONE));
    let server = Server::start(replies);
    let out = poll()
        .args(["--until", UNTIL_DONE, "-i", "200ms", "--interval-max", "700ms", "--log-format", "json"])
        .arg(server.url("/job"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let waits: Vec<u64> = events(&out).iter().filter_map(|e| e.get("wait_ms").and_then(Value::as_u64)).collect();
    assert_eq!(waits, [200, 300, 450, 675, 700, 700]);
    let gaps = gaps(&server.requests());
    for (gap, want) in gaps.iter().zip(&waits) {
        let want = Duration::from_millis(*want);
        assert!(*gap >= want && *gap < want + Duration::from_secs(2), "gaps {gaps:?}, waits {waits:?}");
    }

    // Server advice wins over the grown wait; the growth goes on under it and never falls back.
    let server = Server::start(vec![
        Reply::json(200, PENDING),
        Reply::json(200, PENDING).header("X-Poll-Interval", "1"),
        Reply::status(503),
        Reply::json(200, PENDING),
        Reply::json(200, DONE),
    ]);
    let out = poll()
        .args(["--until", UNTIL_DONE, "-i", "200ms", "--interval-max", "10s", "--backoff", "10ms", "--jitter", "none"])
        .args(["--log-format", "json", &server.url("/job")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let waits: Vec<(u64, String)> = events(&out)
        .iter()
        .filter_map(|e| Some((e.get("wait_ms")?.as_u64()?, e.get("wait_reason")?.as_str()?.to_string())))
        .collect();
    let want = [(200, "interval"), (1000, "poll_interval"), (10, "backoff"), (450, "interval")];
    assert_eq!(waits, want.map(|(ms, why)| (ms, why.to_string())));
}

#[test]
fn interval_max_shorter_than_interval_is_a_usage_error() {
    let out = poll().args(["-i", "2s", "--interval-max", "1s", "http://127.0.0.1:9/"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--interval-max"), "{}", stderr(&out));
}

#[test]
fn prefer_wait_holds_the_request_past_the_request_timeout() {
    let server = Server::start(vec![Reply::json(200, DONE).delay(Duration::from_secs(2))]).expect_hits(1);
    let out = poll()
        .args(["--prefer-wait", "3s", "--request-timeout", "1s", "--until", UNTIL_DONE, &server.url("/long")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, DONE.as_bytes());
    assert_eq!(server.requests()[0].header_all("prefer"), ["wait=3"]);

    // Without it, the same reply is a timeout.
    let server = Server::start(vec![Reply::json(200, DONE).delay(Duration::from_secs(2))]).expect_hits(1);
    let out = poll().args(["--request-timeout", "1s", "--retries", "0", &server.url("/long")]).output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
}

#[test]
fn prefer_wait_goes_on_the_submit_and_its_status_polls() {
    let server = Server::routes(vec![
        ("/jobs", vec![Reply::status(202).header("Operation-Location", "/ops/1")]),
        ("/ops/1", vec![Reply::json(200, r#"{"status":"succeeded"}"#)]),
    ]);
    let out = poll()
        .args(["--submit", "-X", "POST", "--prefer-wait", "1500ms", "-i", "0", &server.url("/jobs")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for request in server.requests() {
        // 1.5 s in RFC 7240's whole seconds: 1, so that the server holds no longer than asked.
        assert_eq!(request.header_all("prefer"), ["wait=1"], "{} {}", request.method, request.path);
    }
}

#[test]
fn several_urls_keep_validators_of_their_own() {
    let server = Server::routes(vec![
        ("/a", vec![tagged(200, PENDING, "\"a1\""), Reply::status(304), tagged(200, DONE, "\"a2\"")]),
        ("/b", vec![tagged(200, PENDING, "\"b1\""), tagged(200, PENDING, "\"b2\""), tagged(200, DONE, "\"b3\"")]),
    ]);
    let out = poll().args(["--until", UNTIL_DONE, "-i", "0", &server.url("/a"), &server.url("/b")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let sent = |path: &str| -> Vec<Option<String>> {
        server
            .requests()
            .iter()
            .filter(|r| r.path == path)
            .map(|r| r.header("if-none-match").map(str::to_owned))
            .collect()
    };
    let some = |tag: &str| Some(tag.to_string());
    assert_eq!(sent("/a"), [None, some("\"a1\""), some("\"a1\"")]);
    assert_eq!(sent("/b"), [None, some("\"b1\""), some("\"b2\"")]);
}

#[test]
fn status_polls_under_submit_are_conditional_and_the_submit_is_not() {
    let running = r#"{"status":"running"}"#;
    let server = Server::routes(vec![
        ("/jobs", vec![tagged(202, running, "\"s\"").header("Operation-Location", "/ops/1")]),
        (
            "/ops/1",
            vec![tagged(200, running, "\"r\""), Reply::status(304), tagged(200, r#"{"status":"succeeded"}"#, "\"d\"")],
        ),
    ])
    .expect_route_hits("/jobs", 1);
    // A GET submit: sent once, without validators, whatever its reply carried.
    let out = poll().args(["--submit", "-i", "0", "--log-format", "json", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"status":"succeeded"}"#);
    let requests = server.requests();
    let validators: Vec<(&str, Option<&str>)> =
        requests.iter().map(|r| (r.path.as_str(), r.header("if-none-match"))).collect();
    assert_eq!(validators, [("/jobs", None), ("/ops/1", None), ("/ops/1", Some("\"r\"")), ("/ops/1", Some("\"r\""))]);
    let events = events(&out);
    let seen: Vec<_> = events
        .iter()
        .filter_map(|e| Some((e.get("phase")?.as_str()?, e.get("status")?.as_u64()?, e.get("action")?.as_str()?)))
        .collect();
    assert_eq!(seen, [("submit", 202, "poll"), ("wait", 200, "poll"), ("wait", 304, "poll"), ("wait", 200, "done")]);
}

#[test]
fn rate_spaces_304s_and_the_breaker_counts_them_as_successes() {
    let mut replies = vec![tagged(200, PENDING, "\"p\"")];
    replies.extend((0..6).map(|_| Reply::status(304)));
    replies.push(tagged(200, DONE, "\"d\""));
    let server = Server::start(replies);
    let folder = support::process::Folder::new("conditional-breaker");
    let state = folder.file("state.json");
    // At 100% the breaker opens on the first failure it sees among 5: a 304 counted as one would end with exit 6.
    let started = Instant::now();
    let out = poll()
        .args(["--state", &state, "--breaker-window", "5", "--breaker-min-success", "100", "--rate", "5/s"])
        .args(["--until", UNTIL_DONE, "-i", "0", &server.url("/job")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, DONE.as_bytes());
    let requests = server.requests();
    assert_eq!(requests.len(), 8);
    // Each in its turn, 200 ms apart from the start (not each 180 ms after the one before, which a
    // request sent late breaks under load).
    let early = support::process::before_their_turn(&requests, started, Duration::from_millis(200));
    assert_eq!(early, Vec::<String>::new(), "requests before their turn at --rate 5/s");
}
