//! End-to-end tests of the poll loop: conditions, retries, server advice, the
//! deadline, non-idempotent requests, signals and what lands on stdout/stderr.

use crate::support;

use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant, SystemTime};

use support::server::{Reply, Server};
use support::{poll, poll_std};

const PENDING: &str = r#"{"status":"pending"}"#;
const DONE: &str = r#"{"status":"done","result":42}"#;
const FAILED: &str = r#"{"status":"failed"}"#;

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Gaps between consecutive requests the server saw.
fn gaps(server: &Server) -> Vec<Duration> {
    let requests = server.requests();
    requests.windows(2).map(|w| w[1].at.duration_since(w[0].at)).collect()
}

#[test]
fn polls_until_the_condition_holds_and_prints_the_final_body() {
    let server = Server::start(vec![Reply::json(200, PENDING), Reply::json(200, PENDING), Reply::json(200, DONE)]);
    let out =
        poll().args(["--until", r#".status=="done""#, "--interval", "200ms", &server.url("/job")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, DONE.as_bytes());
    assert_eq!(server.hits(), 3);
    for gap in gaps(&server) {
        assert!(gap >= Duration::from_millis(200), "polls came {gap:?} apart, before --interval");
    }
    // Off a terminal and without -v, success is silent.
    assert_eq!(stderr(&out), "");
}

#[test]
fn without_until_the_first_2xx_is_done_even_when_not_json() {
    let server = Server::start(vec![Reply::status(503), Reply::status(502), Reply::text(200, "plain ok")]);
    let out = poll().args(["--backoff", "100ms", "--jitter", "none", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"plain ok");
    assert_eq!(server.hits(), 3);
    let gaps = gaps(&server);
    assert!(gaps[0] >= Duration::from_millis(100), "first retry after {:?}", gaps[0]);
    assert!(gaps[1] >= Duration::from_millis(200), "second retry after {:?} (backoff doubles)", gaps[1]);
}

#[test]
fn fail_when_exits_4_with_the_body() {
    let server = Server::start(vec![Reply::json(200, PENDING), Reply::json(200, FAILED)]);
    let out = poll()
        .args(["--until", r#".status=="done""#, "--fail-when", r#".status=="failed""#, "-i", "0", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(out.stdout, FAILED.as_bytes());
    assert_eq!(server.hits(), 2);
}

#[test]
fn permanent_statuses_exit_3_at_once_with_nothing_on_stdout() {
    for code in [400, 401, 403, 404, 410, 501] {
        let server = Server::start(vec![Reply::json(code, r#"{"error":"no"}"#)]);
        let out = poll().args(["--until", ".ok", &server.url("/")]).output().unwrap();
        assert_eq!(out.status.code(), Some(3), "HTTP {code}");
        assert_eq!(out.stdout, b"", "HTTP {code}");
        assert_eq!(server.hits(), 1, "HTTP {code}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "one error line: {err}");
        assert!(err.contains(&format!("HTTP {code}")), "{err}");
    }
}

#[test]
fn auth_failures_hint_at_credentials() {
    let server = Server::start(vec![Reply::status(401)]);
    let out = poll().arg(server.url("/")).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("-u USER:PASS"), "{}", stderr(&out));
}

#[test]
fn retry_on_makes_a_status_transient() {
    let server = Server::start(vec![Reply::status(404), Reply::status(409), Reply::json(200, DONE)]);
    let out = poll().args(["--retry-on", "404,409", "--backoff", "10ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 3);
}

#[test]
fn spent_retries_exit_5_after_exactly_retries_plus_one_attempts() {
    let server = Server::start(vec![Reply::status(503)]);
    let out = poll().args(["--retries", "3", "--backoff", "10ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert_eq!(server.hits(), 4);
    assert_eq!(out.stdout, b"");
    assert!(stderr(&out).contains("gave up after 4 consecutive failures"), "{}", stderr(&out));
}

#[test]
fn the_failure_budget_resets_on_every_healthy_2xx() {
    // Four failures in all, never more than two in a row: --retries 2 must get through.
    let server = Server::start(vec![
        Reply::status(503),
        Reply::status(503),
        Reply::json(200, PENDING),
        Reply::status(500),
        Reply::status(504),
        Reply::json(200, DONE),
    ]);
    let out = poll()
        .args(["--until", r#".status=="done""#, "--retries", "2", "--backoff", "10ms", "-i", "0", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 6);
}

#[test]
fn every_transient_failure_class_is_retried() {
    let cases: Vec<(&str, Reply, Vec<&str>)> = vec![
        ("reset", Reply::reset(), vec![]),
        ("closed", Reply::close(), vec![]),
        ("truncated", Reply::truncated(200, r#"{"status":"do"#), vec![]),
        ("bad status line", Reply::raw("HTTP/1.1 abc\r\n\r\n"), vec![]),
        ("garbage", Reply::raw("garbage\r\n\r\n"), vec![]),
        ("408", Reply::status(408), vec![]),
        ("429", Reply::status(429), vec![]),
        ("not json", Reply::text(200, "<html>"), vec!["--until", ".status"]),
        ("timeout", Reply::json(200, DONE).delay(Duration::from_secs(3)), vec!["--request-timeout", "300ms"]),
    ];
    for (name, first, extra) in cases {
        let server = Server::start(vec![first, Reply::json(200, DONE)]);
        let out = poll().args(["--backoff", "10ms"]).args(&extra).arg(server.url("/")).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        assert_eq!(out.stdout, DONE.as_bytes(), "{name}");
        assert_eq!(server.hits(), 2, "{name}");
    }
}

/// `line` with its latency (`in 3ms ->`) as `in L ->`.
fn without_latency(line: &str) -> String {
    let Some(arrow) = line.find(" -> ") else { return line.to_string() };
    match line[..arrow].rfind(" in ") {
        Some(at) => format!("{} in L{}", &line[..at], &line[arrow..]),
        None => line.to_string(),
    }
}

/// A server that closes the connection cleanly before any byte of a reply is not said to have
/// reset it; both are retried alike, and the JSON log's `error_kind` stays `reset` for both.
#[test]
fn a_connection_closed_before_any_reply_is_said_so_and_a_reset_is_a_reset() {
    let server = Server::start(vec![Reply::close(), Reply::json(200, PENDING), Reply::close(), Reply::reset()]);
    let out = poll()
        .args(["-v", "--until", ".done", "-i", "20ms", "--retries", "1", "--backoff", "10ms", "--jitter", "none"])
        .arg(server.url("/"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(server.hits(), 4);
    let err = stderr(&out);
    let attempts: Vec<String> = err.lines().filter(|l| l.starts_with("attempt ")).map(without_latency).collect();
    assert_eq!(
        attempts,
        [
            "attempt 1: the server closed the connection before replying in L -> poll again in 20ms (not up yet)",
            "attempt 2: 200 pending in L -> poll again in 20ms (interval)",
            "attempt 3: the server closed the connection before replying in L -> retry in 10ms (backoff)",
            "attempt 4: connection reset in L -> stop (retries spent)",
        ],
        "{err}"
    );
    let last = err.lines().last().unwrap_or_default();
    let want = format!(
        "poll: error: gave up after 2 consecutive failures; last: connection reset (raise --retries to tolerate more) [{}]",
        server.url("/")
    );
    assert_eq!(last, want);

    // A POST whose connection was closed may have been processed, as a reset one: not re-sent.
    let server = Server::start(vec![Reply::close()]).expect_hits(1);
    let out = poll().args(["-d", "x", "--log-format", "json", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stderr(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["error_kind"], "reset", "{}", lines[0]);
    let message = lines[1]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("the server closed the connection before replying: the request may have been processed"),
        "{message}"
    );
}

/// `--stable N` cut short by the deadline says how many polls in a row held, not "done".
#[test]
fn stable_cut_short_by_the_deadline_says_met_not_done() {
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(3);
    let out =
        poll().args(["-v", "--stable", "5", "-i", "400ms", "--timeout", "1s", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let attempts: Vec<String> = err.lines().filter(|l| l.starts_with("attempt ")).map(without_latency).collect();
    assert_eq!(
        attempts,
        [
            "attempt 1: 200 met, 1 of 5 in L -> poll again in 400ms (interval)",
            "attempt 2: 200 met, 2 of 5 in L -> poll again in 400ms (interval)",
            "attempt 3: 200 met, 3 of 5 in L -> stop (deadline)",
        ],
        "{err}"
    );
    assert!(err.lines().last().unwrap_or_default().contains("; last: condition met, not yet --stable ("), "{err}");
    assert_eq!(out.stdout, b"");
}

#[test]
fn refused_connections_after_the_first_reply_are_retried_then_give_up_with_a_hint() {
    // The server answers once, then is gone: from the first reply on, a refused connection is a failure.
    let server = Server::start(vec![Reply::json(200, PENDING)]);
    let url = server.url("/");
    let mut child = poll_std()
        .args(["-v", "--until", ".done", "-i", "300ms", "--retries", "2", "--backoff", "100ms", "--jitter", "none"])
        .arg(&url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Closed once poll has read the reply (its attempt line), not when the request arrived: under
    // load the reply could still be on its way, and poll would rightly call the server never reached.
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap()));
    let mut err = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        err.push_str(&line);
        err.push('\n');
        if line.starts_with("attempt 1:") {
            break;
        }
    }
    assert!(err.contains("attempt 1: 200 pending"), "{err}");
    drop(server); // closed: nothing listens on the port now
    let started = Instant::now();
    for line in lines {
        err.push_str(&line.unwrap());
        err.push('\n');
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{err}");
    // Two retries: 100ms + 200ms of backoff at least, after the poll's wait.
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    // The error line, as without -v: the refusal and the hint, never "never reached".
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("connection refused") && last.contains("listening on that port"), "{err}");
    assert!(!err.contains("never reached"), "{err}");
}

#[test]
fn retry_after_seconds_wins_over_backoff() {
    let server = Server::start(vec![Reply::status(503).header("Retry-After", "1"), Reply::json(200, DONE)]);
    let out = poll().args(["--backoff", "10ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(gaps(&server)[0] >= Duration::from_millis(1000), "{:?}", gaps(&server));
}

#[test]
fn retry_after_http_date_is_honoured() {
    // Three seconds ahead: HTTP dates have one-second resolution, and a slow start under
    // load may eat most of another second; at least one of the three still remains.
    let when = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3));
    let server = Server::start(vec![Reply::status(429).header("Retry-After", &when), Reply::json(200, DONE)]);
    let out = poll().args(["--backoff", "10ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(gaps(&server)[0] >= Duration::from_millis(1000), "{:?}", gaps(&server));
}

#[test]
fn ratelimit_reset_on_429_as_delta_and_as_epoch() {
    for name in ["delta", "epoch"] {
        // Computed just before use: the delta case takes a second itself.
        let epoch = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs() + 2;
        let value = if name == "delta" { "1".to_string() } else { epoch.to_string() };
        let server =
            Server::start(vec![Reply::status(429).header("X-RateLimit-Reset", &value), Reply::json(200, DONE)]);
        let out = poll().args(["--backoff", "10ms", &server.url("/")]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        assert!(gaps(&server)[0] >= Duration::from_millis(900), "{name}: {:?}", gaps(&server));
    }
}

#[test]
fn an_exhausted_quota_on_a_2xx_delays_the_next_poll_until_the_reset() {
    let server = Server::start(vec![
        Reply::json(200, PENDING).header("X-RateLimit-Remaining", "0").header("X-RateLimit-Reset", "1"),
        Reply::json(200, DONE),
    ]);
    let out = poll().args(["--until", r#".status=="done""#, "-i", "0", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(gaps(&server)[0] >= Duration::from_millis(1000), "{:?}", gaps(&server));
}

#[test]
fn accepted_with_retry_after_sets_the_next_poll() {
    let server = Server::start(vec![Reply::json(202, PENDING).header("Retry-After", "1"), Reply::json(200, DONE)]);
    let out = poll().args(["--until", r#".status=="done""#, "-i", "100ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(gaps(&server)[0] >= Duration::from_millis(1000), "{:?}", gaps(&server));
}

#[test]
fn a_server_wait_beyond_the_deadline_stops_at_once_with_exit_1() {
    // The 200 is never reached: the wait it would come after passes the deadline.
    let server =
        Server::start(vec![Reply::status(503).header("Retry-After", "3600"), Reply::json(200, DONE)]).expect_hits(1);
    let started = Instant::now();
    let out = poll().args(["--timeout", "30s", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(started.elapsed() < Duration::from_secs(10), "stopped now, not at the deadline: {:?}", started.elapsed());
    assert_eq!(server.hits(), 1);
    let err = stderr(&out);
    assert!(err.contains("deadline") && err.contains("Retry-After"), "{err}");
}

#[test]
fn a_huge_retry_after_without_deadline_gives_up_instead_of_hanging() {
    let server = Server::start(vec![Reply::status(503).header("Retry-After", "99999999999")]);
    let out = poll().args(["--timeout", "0", &server.url("/")]).timeout(Duration::from_secs(20)).output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(server.hits(), 1);
}

#[test]
fn the_deadline_bounds_a_request_in_flight() {
    let server = Server::start(vec![Reply::hang()]);
    let started = Instant::now();
    let out = poll().args(["--timeout", "1s", "--request-timeout", "30s", &server.url("/")]).output().unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(10), "{took:?}");
    // The attempt itself timed out at the deadline, not the run around it a moment later.
    assert!(stderr(&out).contains("deadline reached; last: request timed out"), "{}", stderr(&out));
}

#[test]
fn polling_stops_before_the_deadline_when_the_next_poll_would_pass_it() {
    let server = Server::start(vec![Reply::json(200, PENDING)]);
    let started = Instant::now();
    let out = poll()
        .args(["--until", r#".status=="done""#, "--timeout", "1150ms", "-i", "300ms", &server.url("/")])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(out.stdout, b"");
    // Polls at 0, 0.3, 0.6 and 0.9 s; the next would start after the deadline, at 1.2 s at the
    // earliest. (The fourth starts 0.9 s plus three attempts' time in: past a 1 s deadline on a
    // machine kept busy, so the deadline is 1.15 s.)
    assert_eq!(server.hits(), 4);
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn post_is_not_resent_after_a_502() {
    // The 200 is there for a resend that must not happen.
    let server = Server::start(vec![Reply::status(502), Reply::json(200, DONE)]).expect_hits(1);
    let out = poll().args(["-d", "payload", "--backoff", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert_eq!(server.hits(), 1);
    assert!(stderr(&out).contains("--retry-non-idempotent"), "{}", stderr(&out));
}

#[test]
fn post_is_resent_after_a_429_and_with_retry_non_idempotent() {
    for (first, extra) in [(Reply::status(429), None), (Reply::status(502), Some("--retry-non-idempotent"))] {
        let server = Server::start(vec![first, Reply::json(200, DONE)]);
        let out =
            poll().args(["-d", "payload", "--backoff", "10ms"]).args(extra).arg(server.url("/")).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        for request in requests {
            assert_eq!(request.method, "POST");
            assert_eq!(request.body, b"payload");
        }
    }
}

#[test]
fn post_is_resent_after_a_refused_connection() {
    // Nothing listens for the first attempt; the server comes up during the backoff.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let child = poll_std()
        .args(["-d", "x", "--backoff", "1s", "--jitter", "none", &format!("http://127.0.0.1:{port}/")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let server = support::server::Server::start_on(port, vec![Reply::json(200, DONE)]);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 1);
}

#[test]
fn a_jq_runtime_error_is_not_met_and_reported_once() {
    let server = Server::start(vec![
        Reply::json(200, r#"{"a":"x"}"#),
        Reply::json(200, r#"{"a":"x"}"#),
        Reply::json(200, r#"{"a":1}"#),
    ]);
    let out = poll().args(["--until", ".a + 1 > 1", "-i", "0", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 3);
    let err = stderr(&out);
    assert_eq!(err.matches("jq error").count(), 1, "{err}");
}

/// A 2xx body of JSON nested deeper than jq's input may be: the warning, the run's last words and
/// `--print` say it is nested too deep, not that it is not JSON (issue 39, row 13).
#[test]
fn a_body_nested_too_deep_is_said_so() {
    let too_deep = "JSON nested too deep (more than 127 levels)";
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let server = Server::start(vec![Reply::json(200, &deep)]);
    let out = poll().args(["--until", ". != null", "--timeout", "1s", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches(too_deep).count(), 2, "the warning once, and the last words: {err}");
    assert!(err.contains(&format!("last: --until failed on the body: {too_deep}")), "{err}");
    assert!(!err.contains("not JSON"), "{err}");
    let out = poll().args(["--print", ".[0]", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("--print: the final body is {too_deep}")), "{}", stderr(&out));
}

/// `tonumber` reads the whole string as one number, as jq 1.7 does (issue 39, row 2): `"3/5"` is a jq
/// error on every poll, warned once and named by the deadline, never the 3 it starts with (which
/// ended the run with exit 0 on the first reply).
#[test]
fn tonumber_of_a_string_that_only_starts_with_a_number_fails() {
    let why = r#"string ("3/5") cannot be parsed as a number"#;
    a_jq_error_on_every_poll(&["--argjson", "r", r#""3/5""#], "($r|tonumber) >= 3", why);
}

/// A filter that recurses without end is a jq error, "recursion too deep", where it overflowed the
/// loop thread's stack and aborted the process (exit 134; issue 39, row 5): under `--until` it is not
/// met on every poll, warned once, and the deadline names it (exit 1).
#[test]
fn a_runaway_recursion_is_a_jq_error_not_an_abort() {
    let err = a_jq_error_on_every_poll(&[], "def f: 1 + f; f", "recursion too deep");
    assert!(!err.contains("overflowed its stack"), "{err}");
}

/// `--until FILTER` (after `args`) failing with `why` on every poll of a done body: not met, polled
/// on until the next poll would pass the deadline (exit 1, nothing on stdout), the error warned once
/// and named last. Its stderr.
///
/// The tenth reply says `Retry-After: 60`, past the 10 s deadline: the run ends on that reply. (It
/// ended on a 1 s deadline, whose timer, on a machine kept busy, fell inside the last attempt, and
/// then named the request it cut, "request timed out", instead of the jq error.)
fn a_jq_error_on_every_poll(args: &[&str], filter: &str, why: &str) -> String {
    let mut replies = vec![Reply::json(200, DONE); 9];
    replies.push(Reply::json(200, DONE).header("Retry-After", "60"));
    let server = Server::start(replies);
    let started = Instant::now();
    let out = poll()
        .args(args)
        .args(["--until", filter, "-i", "100ms", "--timeout", "10s", &server.url("/")])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // It ends when the next poll, 60 s after the tenth, would start past the deadline.
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(10), "took {took:?}");
    assert!(server.hits() >= 5, "polled on to the deadline: {} requests", server.hits());
    assert_eq!(out.stdout, b"");
    let err = stderr(&out);
    assert_eq!(err.matches(&format!("warning: jq error in `{filter}`: {why}")).count(), 1, "{err}");
    assert!(err.contains(&format!("last: --until failed on the body: {why}")), "{err}");
    err
}

/// `--print` with a runaway recursion fails on the final body as any jq error does (exit 3, nothing
/// printed), on the loop's thread and on the run's own (a `--fallback` body), and so does a chain of
/// closures a definition hands itself, which grows the stack though its calls are tail calls. A
/// recursion 200 deep still answers (in a debug build, 100 overflowed the loop's stack before).
#[test]
fn print_with_a_runaway_recursion_fails_as_a_jq_error() {
    let server = Server::start(vec![Reply::json(200, DONE)]);
    for filter in ["def f: [f]; f", "def f(n): if n < 0 then 0 else f(n + 1) end; f(0)"] {
        let out = poll().args(["--print", filter, &server.url("/")]).output().unwrap();
        assert_eq!(out.status.code(), Some(3), "{filter}: {}", stderr(&out));
        assert_eq!(out.stdout, b"", "{filter}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("--print: jq error in `{filter}`: recursion too deep")), "{err}");
    }
    // The run's own thread: --print on a --fallback body, where nothing answered.
    let out = poll()
        .args(["--print", "def f: [f]; f", "--fallback", "{}", "--timeout", "500ms", "http://127.0.0.1:1/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("--fallback: --print: jq error in `def f: [f]; f`: recursion too deep"), "{err}");
    assert!(!err.contains("overflowed its stack"), "{err}");
    let deep = "def f: if . == 0 then 0 else 1 + (. - 1 | f) end; 200 | f";
    let out = poll().args(["--print", deep, &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"200\n");
}

/// `fromjson` reads the whole string as one JSON value, nested no deeper than a body may be: two
/// values fail (it gave 1, then 2), and a string of 100,000 `[` from the server is a jq error, where it
/// overflowed the loop's stack and aborted the process (exit 134).
#[test]
fn fromjson_reads_one_value_nested_no_deeper_than_a_body() {
    let server = Server::start(vec![Reply::json(200, r#"{"x":"1 2"}"#)]);
    let out = poll().args(["--until", ".x | fromjson", "--timeout", "500ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let why = "trailing characters at line 1 column 3 (while parsing '1 2')";
    assert!(err.contains(&format!("last: --until failed on the body: {why}")), "{err}");

    let hostile = format!(r#"{{"x":"{}"}}"#, "[".repeat(100_000));
    let server = Server::start(vec![Reply::json(200, &hostile)]);
    let out = poll().args(["--until", ".x | fromjson", "--timeout", "500ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(!err.contains("overflowed its stack"), "{err}");
    assert_eq!(err.matches("JSON nested too deep (more than 127 levels) (while parsing '[[[").count(), 2, "{err}");
}

#[test]
fn output_file_receives_the_body_and_stdout_stays_empty() {
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let dir = std::env::temp_dir().join(format!("poll-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("result.json");
    let out = poll().args(["-o", file.to_str().unwrap(), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, b"");
    assert_eq!(std::fs::read(&file).unwrap(), DONE.as_bytes());
    // No temporary file is left behind.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn verbose_prints_one_line_per_attempt_and_redacts_secrets() {
    let server = Server::start(vec![
        Reply::status(503).header("Set-Cookie", "session=topsecret"),
        Reply::json(200, DONE).header("Set-Cookie", "session=topsecret"),
    ]);
    let out = poll()
        .args(["-vv", "--backoff", "10ms", "-H", "Authorization: Bearer sekrit", "-H", "Cookie: c=sekrit"])
        .args(["-u", "bob:hunter2", &server.url("/?token=sekrit")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().filter(|l| l.starts_with("attempt ")).count(), 2, "{err}");
    assert!(err.contains("attempt 1: 503") && err.contains("retry in"), "{err}");
    assert!(err.contains("<redacted>"), "{err}");
    for secret in ["sekrit", "topsecret", "hunter2", "Ym9iOmh1bnRlcjI"] {
        assert!(!err.contains(secret), "{secret} leaked: {err}");
    }
}

#[test]
fn quiet_prints_only_the_final_error_line() {
    let server = Server::start(vec![Reply::status(503), Reply::status(404)]);
    let out = poll().args(["-q", "--backoff", "10ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

fn spawn_poll(args: &[&str]) -> std::process::Child {
    poll_std().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn poll")
}

fn kill(child: &std::process::Child, signal: &str) -> Instant {
    let sent = Instant::now();
    // The shell's builtin `kill`: no procps needed on the machine.
    let status =
        StdCommand::new("sh").args(["-c", &format!("kill {signal} {}", child.id())]).status().expect("run sh -c kill");
    assert!(status.success());
    sent
}

#[test]
fn sigint_ends_a_wait_at_once_with_130() {
    let server = Server::start(vec![Reply::json(200, PENDING)]);
    let child = spawn_poll(&["--until", ".done", "-i", "30s", &server.url("/")]);
    assert!(server.wait_hits(1, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(100));
    let sent = kill(&child, "-INT");
    let out = child.wait_with_output().unwrap();
    let took = sent.elapsed();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(took < Duration::from_secs(2), "exit took {took:?}");
    assert!(stderr(&out).contains("interrupted after 1 attempt"), "{}", stderr(&out));
    assert_eq!(out.stdout, b"");
}

#[test]
fn sighup_ends_a_wait_at_once_with_129_and_says_it_hung_up() {
    // Some CI runners send SIGHUP when a job is cancelled; it ended poll with no line and no cleanup.
    let server = Server::start(vec![Reply::json(200, PENDING)]);
    let child = spawn_poll(&["--until", ".done", "-i", "30s", "--log-format", "json", &server.url("/")]);
    assert!(server.wait_hits(1, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(100));
    let sent = kill(&child, "-HUP");
    let out = child.wait_with_output().unwrap();
    let took = sent.elapsed();
    assert_eq!(out.status.code(), Some(129), "{}", stderr(&out));
    assert!(took < Duration::from_secs(2), "exit took {took:?}");
    assert_eq!(out.stdout, b"");
    let last = stderr(&out).lines().last().map(str::to_string).unwrap_or_default();
    let end: serde_json::Value = serde_json::from_str(&last).unwrap_or_else(|e| panic!("{e}: {last}"));
    assert_eq!((end["exit_code"].as_u64(), end["reason"].as_str()), (Some(129), Some("hung_up")), "{end}");
    assert_eq!(end["message"], "hung up after 1 attempt", "{end}");

    // And in words, one line.
    let server = Server::start(vec![Reply::json(200, PENDING)]);
    let child = spawn_poll(&["--until", ".done", "-i", "30s", &server.url("/")]);
    assert!(server.wait_hits(1, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(100));
    kill(&child, "-HUP");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(129), "{}", stderr(&out));
    assert_eq!(stderr(&out), "poll: error: hung up after 1 attempt\n");
}

/// A signal ignored when poll starts (`nohup`, a shell's `trap '' HUP INT`) stays ignored, as
/// nohup and shells leave it: poll goes on through a SIGHUP and a SIGINT, and `-- CMD`, exec'd in
/// its place, starts with both still ignored (issue 39, row 4). Caught, exec reset them to their
/// default, and poll itself ended 129. Linux: the one Unix where poll can read the disposition
/// without unsafe code (/proc/self/status, see src/process/signals.rs).
#[cfg(target_os = "linux")]
#[test]
fn signals_ignored_at_start_stay_ignored_by_poll_and_by_its_command() {
    let server = Server::start(vec![Reply::json(200, PENDING), Reply::json(200, DONE)]);
    let ignoring = format!("trap '' HUP INT; exec '{}' \"$@\"", env!("CARGO_BIN_EXE_poll"));
    // The command says which signals it started with ignored, then sends itself both.
    let command = "grep SigIgn /proc/self/status; kill -HUP $$; kill -INT $$; echo survived";
    let child = support::hermetic(&mut StdCommand::new("sh"))
        .args(["-c", &ignoring, "sh", "--until", ".result", "-i", "1s", &server.url("/"), "--", "sh", "-c", command])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sh");
    assert!(server.wait_hits(1, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(100));
    kill(&child, "-HUP");
    kill(&child, "-INT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    // Both signals came between the polls: the second still waited its interval.
    assert_eq!(server.hits(), 2);
    assert!(gaps(&server)[0] >= Duration::from_secs(1), "{:?}", gaps(&server));
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    let Some((mask, rest)) = printed.strip_prefix("SigIgn:").and_then(|line| line.split_once('\n')) else {
        panic!("{printed:?}")
    };
    let ignored = u64::from_str_radix(mask.trim(), 16).unwrap_or_else(|e| panic!("{e}: {printed:?}"));
    assert_eq!(ignored & 0b11, 0b11, "SIGHUP (bit 0) and SIGINT (bit 1) ignored: {printed:?}");
    assert_eq!(rest, "survived\n");
}

#[test]
fn sigterm_ends_a_request_in_flight_at_once_with_143() {
    let server = Server::start(vec![Reply::hang()]);
    let child = spawn_poll(&["--request-timeout", "60s", &server.url("/")]);
    assert!(server.wait_hits(1, Duration::from_secs(10)));
    let sent = kill(&child, "-TERM");
    let out = child.wait_with_output().unwrap();
    let took = sent.elapsed();
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    assert!(took < Duration::from_secs(2), "exit took {took:?}");
    assert!(stderr(&out).contains("terminated after 1 attempt"), "{}", stderr(&out));
}

/// SIGTERM, then SIGINT while the run's ending is being written (its JUnit report waits for a
/// FIFO's reader, as there is no deadline): the first signal decides, one line and exit 143.
#[cfg(unix)]
#[test]
fn a_second_signal_ends_a_stuck_ending_in_the_first_ones_words() {
    let folder = std::env::temp_dir().join(format!("poll-second-signal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    let fifo = folder.join("report.xml");
    assert!(StdCommand::new("mkfifo").arg(&fifo).status().unwrap().success());
    let server = Server::start(vec![Reply::json(200, PENDING)]);
    let report = fifo.to_str().unwrap();
    let child =
        spawn_poll(&["--until", ".done", "-i", "30s", "--timeout", "0", "--report-junit", report, &server.url("/")]);
    assert!(server.wait_hits(1, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(100));
    kill(&child, "-TERM");
    // The run is over and its ending waits for the FIFO's reader.
    std::thread::sleep(Duration::from_millis(500));
    let sent = kill(&child, "-INT");
    let out = child.wait_with_output().unwrap();
    let took = sent.elapsed();
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    assert_eq!(stderr(&out), "poll: error: terminated while the run's output was written\n");
    assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(3), "exit took {took:?}");
    assert_eq!(out.stdout, b"");
    let _ = std::fs::remove_dir_all(&folder);
}

/// SIGTERM and SIGINT sent together (GNU `timeout` forwards one while sending the other): one
/// line, whose words are those of the exit code, whichever of them the run heard first.
#[cfg(unix)]
#[test]
fn two_signals_at_once_end_a_run_with_one_line_that_agrees_with_the_exit_code() {
    for round in 0..6 {
        let server = Server::start(vec![Reply::json(200, PENDING)]);
        let child = spawn_poll(&["--until", ".done", "-i", "30s", &server.url("/")]);
        assert!(server.wait_hits(1, Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(100));
        let pid = child.id();
        let both = format!("kill -TERM {pid}; kill -INT {pid}");
        assert!(StdCommand::new("sh").args(["-c", &both]).status().unwrap().success());
        let out = child.wait_with_output().unwrap();
        let line = match out.status.code() {
            Some(143) => "poll: error: terminated after 1 attempt\n",
            Some(130) => "poll: error: interrupted after 1 attempt\n",
            code => panic!("round {round}: exit {code:?}: {}", stderr(&out)),
        };
        assert_eq!(stderr(&out), line, "round {round}, exit {:?}", out.status.code());
    }
}

/// `-o -` is stdout, as curl's: the body is printed, and no file named `-` is made.
#[test]
fn o_dash_is_stdout() {
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let folder = std::env::temp_dir().join(format!("poll-o-dash-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let out = poll().current_dir(&folder).args(["-o", "-", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, DONE.as_bytes());
    assert!(!folder.join("-").exists(), "a file named - was written");
    let _ = std::fs::remove_dir_all(&folder);
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let big = format!("{{\"data\":\"{}\"}}", "x".repeat(4 << 20));
    let server = Server::start(vec![Reply::json(200, &big)]);
    let mut child = poll_std().arg(server.url("/")).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take()); // as `| head -c0` would
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn deep_operator_chains_in_a_filter_do_not_crash() {
    // Regression: 900 chained operators overflowed the 8 MiB main stack (SIGABRT).
    let server = Server::start(vec![Reply::json(200, DONE)]);
    for chain in [" -".repeat(2000), "not|".repeat(1000), ". | ".repeat(1000)] {
        let filter = format!("{chain}1");
        let out = poll().args(["--until", &filter, "--timeout", "10s", &server.url("/")]).output().unwrap();
        assert!(matches!(out.status.code(), Some(0)), "{}: {}", &filter[..20], stderr(&out));
    }
    // One byte over the 4 KiB limit: a usage error, and nothing is sent.
    let hits = server.hits();
    let too_long = format!("{}1", " -".repeat(2048));
    poll()
        .args(["--until", &too_long, &server.url("/")])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("the limit is 4096"));
    assert_eq!(server.hits(), hits);
}

#[test]
fn flag_errors_are_one_line_that_names_what_is_wrong() {
    let cases: [(&[&str], &str); 4] = [
        (&[], "the following required arguments were not provided: <URL>"),
        (&["--until"], "a value is required for '--until <JQ>'"),
        (&["--intervl", "3", "http://127.0.0.1:9/"], "(a similar argument exists: '--interval')"),
        (&["-H", "X: a\rb", "http://127.0.0.1:9/"], r"invalid value 'X: a\rb' for '--header <HEADER>'"),
    ];
    for (args, wanted) in cases {
        let out = poll().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.starts_with("poll: error: ") && err.contains(wanted), "{args:?}: {err:?}");
    }
}

#[test]
fn text_from_the_server_cannot_reach_the_terminal_raw() {
    // An escape sequence inside a JSON string (\u001b) decodes to a real ESC.
    let body = r#"{"p":"\u001b[2J\u001b[31mowned","n":"x"}"#;
    let server = Server::start(vec![Reply::json(200, body), Reply::json(200, r#"{"p":"done","n":1}"#)]);
    let out =
        poll().args(["-v", "--show", ".p", "--until", ".n + 1 > 1", "-i", "0", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(!err.contains('\u{1b}'), "raw ESC on stderr: {err:?}");
    assert!(err.contains(r"\u{1b}[31mowned"), "shown escaped: {err}");
}

#[test]
fn a_filter_that_never_finishes_still_ends_at_the_deadline() {
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let started = Instant::now();
    let out = poll().args(["--until", "last(repeat(1))", "--timeout", "1s", &server.url("/")]).output().unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(10), "{took:?}");
    assert!(stderr(&out).contains("does a jq filter loop forever?"), "{}", stderr(&out));
    assert_eq!(out.stdout, b"");
}

#[test]
fn a_server_that_silently_closes_keep_alive_connections_costs_no_failed_attempt() {
    // The pooled connection is checked before reuse: no reset, no retry, no backoff.
    // (20 ms between polls lets the server's close land before the check, even on a busy machine.)
    let server = Server::start(vec![
        Reply::json(200, PENDING).then_hang_up(),
        Reply::json(200, PENDING).then_hang_up(),
        Reply::json(200, DONE).then_hang_up(),
    ]);
    let out = poll().args(["-v", "--until", r#".status=="done""#, "-i", "20ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 3);
    assert_eq!(server.connections(), 3);
    assert!(!stderr(&out).contains("retry"), "{}", stderr(&out));
}

/// A newcomer who types `poll` or `poll help` is pointed at the help, as every clap error is.
#[test]
fn poll_alone_and_poll_help_point_at_the_help() {
    let cases: [(&[&str], &str); 3] = [
        (&[], "poll: error: the following required arguments were not provided: <URL>...; see `poll --help`\n"),
        (&["help"], "poll: error: `help` is no URL; see `poll --help`\n"),
        (&["--bogus", "http://127.0.0.1:9/"], "poll: error: unexpected argument '--bogus' found; see `poll --help`\n"),
    ];
    for (args, line) in cases {
        let output = poll().args(args).output().expect("run poll");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&output), line, "{args:?}");
        assert!(output.stdout.is_empty());
    }
}

/// `--stable N` says how many polls in a row the condition has held, not "done" before it is.
#[test]
fn stable_says_met_and_how_many_in_a_row() {
    let server = Server::start(vec![Reply::json(200, r#"{"status":"ok"}"#)]).expect_hits(3);
    let output = poll().args(["-v", "--stable", "3", "-i", "50ms", &server.url("/")]).output().expect("run poll");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("attempt 1: 200 met, 1 of 3 in "), "{text}");
    assert!(text.contains("attempt 2: 200 met, 2 of 3 in "), "{text}");
    assert!(text.contains("attempt 3: 200 done in "), "{text}");
}

/// The deepest filter of each shape jaq evaluates recursively, as long as the 4 KiB limit allows,
/// runs on a URL's loop, whose stack is sized by how deeply its filters nest.
#[test]
fn the_deepest_filters_of_every_shape_run_on_a_loops_stack() {
    let fill = |head: &str, repeated: &str, tail: &str| {
        format!("{head}{}{tail}", repeated.repeat((4096 - head.len() - tail.len()) / repeated.len()))
    };
    let deepest = [
        fill("", "-", "1 | . != 0"),
        fill("", ". | ", "true"),
        fill("1", "+1", "|.>0"),
        fill("", "try ", "true"),
        fill("", "not|", "true"),
        fill("", "1,", "1 | . > 0"),
        fill("", "1//", "1 | . > 0"),
        fill("", ". as $x | ", "true"),
        fill("", "true and ", "true"),
        format!("{}true{}", "if true then ".repeat(146), " else false end".repeat(146)),
        format!("{}1{} | length > 0", "[".repeat(128), "]".repeat(128)),
    ];
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(deepest.len());
    for until in &deepest {
        assert!(until.len() <= 4096);
        let out = poll().args([&format!("--until={until}"), &server.url("/")]).output().expect("run poll");
        assert_eq!(out.status.code(), Some(0), "`{}…`: {}", &until[..40], stderr(&out));
        assert_eq!(out.stdout, DONE.as_bytes());
    }
}

/// A jq error that quotes `$headers` never quotes a secret header's value (a cookie a server set,
/// a token it echoed): the warning, the last line and a GitHub annotation say `<redacted>`.
#[test]
fn a_jq_error_on_headers_never_quotes_a_secret() {
    let reply = Reply::json(200, DONE).header("Set-Cookie", "sid=s3cr3t-c00kie").header("X-Auth-Token", "tok\"en9");
    let server = Server::start(vec![reply]);
    for ci in [None, Some("github")] {
        let mut run = poll();
        if let Some(ci) = ci {
            run.args(["--ci", ci]);
        }
        let out =
            run.args(["--until", "$headers + 1", "-i", "100ms", "--timeout", "1s", &server.url("/")]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let text = stderr(&out);
        assert!(!text.contains("s3cr3t") && !text.contains("en9"), "{text}");
        assert!(text.contains("<redacted>"), "{text}");
    }
}
