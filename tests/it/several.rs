//! End-to-end tests of several URLs in one run (all vs `--any`, the severity
//! order, stdout's lines, the deadline message, a shared `--rate`, signals,
//! `-v` and JSON log), `--stable`, and GitHub Actions workflow commands.

use crate::support;

use std::process::{Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::process::busiest_second;
use support::server::{Reply, Server};
use support::{poll, poll_std};

const PENDING: &str = r#"{"status":"pending"}"#;
const DONE: &str = r#"{"status":"done"}"#;
const FAILED: &str = r#"{"status":"failed"}"#;
const UNTIL_DONE: &str = r#".status=="done""#;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// stdout of a run with several URLs: one JSON object per line.
fn lines(out: &Output) -> Vec<Value> {
    let text = String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8");
    assert!(text.is_empty() || text.ends_with('\n'), "every line ends with a newline: {text:?}");
    text.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}"))).collect()
}

/// `n` pending bodies, then done.
fn done_after(n: usize) -> Vec<Reply> {
    let mut replies = vec![Reply::json(200, PENDING); n];
    replies.push(Reply::json(200, DONE));
    replies
}

/// Requests the server saw on `path`.
fn hits_on(server: &Server, path: &str) -> usize {
    server.requests().iter().filter(|r| r.path == path).count()
}

// ---- all URLs (the default) ----

#[test]
fn three_urls_end_with_the_slowest_and_print_one_line_each_in_the_order_given() {
    // Done after 0.9 s, 0.3 s and 0.6 s of pending polls; given slowest first.
    let server = Server::routes(vec![("/slow", done_after(3)), ("/fast", done_after(1)), ("/mid", done_after(2))]);
    let urls = [server.url("/slow"), server.url("/fast"), server.url("/mid")];
    let started = Instant::now();
    let out = poll().args(["--until", UNTIL_DONE, "-i", "300ms"]).args(&urls).output().unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "silent on success off a terminal");
    // The loops run side by side: about the slowest (0.9 s), well under the sum (1.8 s).
    let requests = server.requests();
    assert_eq!(requests.len(), 4 + 2 + 3);
    let span = requests.last().unwrap().at.duration_since(requests[0].at);
    assert!(span >= Duration::from_millis(900) && span < Duration::from_millis(1500), "{span:?}");
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(10), "{took:?}");
    let firsts: Vec<Instant> =
        ["/slow", "/fast", "/mid"].iter().map(|p| requests.iter().find(|r| r.path == *p).unwrap().at).collect();
    let spread = firsts.iter().max().unwrap().duration_since(*firsts.iter().min().unwrap());
    assert!(spread < Duration::from_millis(250), "first requests {spread:?} apart: the loops did not start together");

    let done = json!({"status":"done"});
    let expected: Vec<Value> =
        urls.iter().map(|url| json!({"url": url, "exit_code": 0, "body": done.clone()})).collect();
    assert_eq!(lines(&out), expected);
    // Exactly these bytes: compact JSON, one object per line, the fields in the contract's order.
    let text: String =
        urls.iter().map(|url| format!(r#"{{"url":"{url}","exit_code":0,"body":{done}}}"#) + "\n").collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), text);
}

#[test]
fn a_body_that_is_not_json_is_a_json_string_and_print_replaces_the_body() {
    let server = Server::routes(vec![
        ("/text", vec![Reply::text(200, "plain \"ok\"\n")]),
        ("/json", vec![Reply::json(200, r#"{"id":7,"tags":["a","b"]}"#)]),
    ]);
    let (text, json_url) = (server.url("/text"), server.url("/json"));
    let out = poll().args([&text, &json_url]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        lines(&out),
        [
            json!({"url": text, "exit_code": 0, "body": "plain \"ok\"\n"}),
            json!({"url": json_url, "exit_code": 0, "body": {"id": 7, "tags": ["a", "b"]}}),
        ]
    );

    let out = poll().args(["--print", ".tags[]", &json_url, &json_url]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let line = json!({"url": json_url, "exit_code": 0, "print": ["a", "b"]});
    assert_eq!(lines(&out), [line.clone(), line]);
}

#[test]
fn one_url_prints_its_raw_body_as_before() {
    let server = Server::start(vec![Reply::json(200, PENDING), Reply::json(200, DONE)]);
    let out = poll().args(["--until", UNTIL_DONE, "-i", "50ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, DONE.as_bytes(), "no JSON wrapping with one URL");

    let server = Server::start(vec![Reply::text(200, "plain ok")]);
    let out = poll().arg(server.url("/")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"plain ok");
}

#[test]
fn a_permanent_failure_ends_the_run_at_once_and_stops_the_other_loops() {
    let slow = Server::start(vec![Reply::json(200, PENDING)]);
    let bad = Server::start(vec![Reply::json(200, PENDING), Reply::json(200, PENDING), Reply::status(404)]);
    let started = Instant::now();
    let out = poll()
        .args(["--until", UNTIL_DONE, "-i", "200ms", "--timeout", "30s", &slow.url("/slow"), &bad.url("/bad")])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(took < Duration::from_secs(5), "the 404 at 0.4 s ends the run, not the 30 s deadline: {took:?}");
    assert_eq!(bad.hits(), 3);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("poll: error: HTTP 404") && err.contains(&format!("[{}]", bad.url("/bad"))), "{err}");
    assert!(!err.contains("/slow"), "{err}");
    assert_eq!(out.stdout, b"", "no URL ended with 0 or 4");
    assert!((2..=5).contains(&slow.hits()), "{} polls of the slow URL in 0.4 s", slow.hits());
}

#[test]
fn a_permanent_failure_abandons_a_request_in_flight() {
    let hanging = Server::start(vec![Reply::hang()]);
    let bad = Server::start(vec![Reply::status(404).delay(Duration::from_millis(300))]);
    let started = Instant::now();
    let out = poll().args(["--request-timeout", "60s", &hanging.url("/hang"), &bad.url("/bad")]).output().unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(stderr(&out).contains(&bad.url("/bad")), "{}", stderr(&out));
    assert_eq!(hanging.hits(), 1);
}

#[test]
fn fail_when_on_one_url_ends_the_run_with_4_and_done_urls_keep_their_lines() {
    let server = Server::routes(vec![
        ("/done", vec![Reply::json(200, DONE)]),
        ("/fails", vec![Reply::json(200, PENDING), Reply::json(200, PENDING), Reply::json(200, FAILED)]),
        ("/slow", vec![Reply::json(200, PENDING)]),
    ]);
    let urls = [server.url("/done"), server.url("/slow"), server.url("/fails")];
    let started = Instant::now();
    let out = poll()
        .args(["--until", UNTIL_DONE, "--fail-when", r#".status=="failed""#, "-i", "200ms", "--timeout", "30s"])
        .args(&urls)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(
        lines(&out),
        [
            json!({"url": urls[0], "exit_code": 0, "body": {"status": "done"}}),
            json!({"url": urls[2], "exit_code": 4, "body": {"status": "failed"}}),
        ]
    );
    let err = stderr(&out);
    assert_eq!(err, format!("poll: error: --fail-when matched [{}]\n", urls[2]));
    assert_eq!(hits_on(&server, "/done"), 1);
    assert_eq!(hits_on(&server, "/fails"), 3);
}

// ---- --any ----

#[test]
fn any_the_first_url_done_wins_and_the_others_stop() {
    let slow = Server::start(vec![Reply::json(200, PENDING)]);
    let fast = Server::start(done_after(1));
    let failing = Server::start(vec![Reply::status(503)]);
    let urls = [slow.url("/slow"), fast.url("/fast"), failing.url("/failing")];
    let started = Instant::now();
    let out = poll()
        .args(["--any", "--until", UNTIL_DONE, "-i", "200ms", "--backoff", "200ms", "--retries", "100"])
        .args(["--timeout", "30s"])
        .args(&urls)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(lines(&out), [json!({"url": urls[1], "exit_code": 0, "body": {"status": "done"}})]);
    assert_eq!(stderr(&out), "");
    assert_eq!(fast.hits(), 2);
}

#[test]
fn any_when_every_url_fails_exits_with_the_most_severe() {
    // (replies of each URL, extra flags, exit code, the URL the error line names)
    let not_found = || vec![Reply::status(404).delay(Duration::from_millis(300))];
    let quick_404 = || vec![Reply::status(404)];
    let spent = || vec![Reply::status(503)];
    let late_spent = || vec![Reply::status(503).delay(Duration::from_millis(300))];
    let fails = || vec![Reply::json(200, FAILED).delay(Duration::from_millis(300))];
    let pending = || vec![Reply::json(200, PENDING)];
    type Case = (Vec<Vec<Reply>>, &'static [&'static str], i32, usize);
    let cases: Vec<Case> = vec![
        // 3 beats 5, whether it comes last or first.
        (vec![spent(), not_found()], &[], 3, 1),
        (vec![quick_404(), late_spent()], &[], 3, 0),
        // 5 beats a later deadline (1).
        (vec![spent(), pending()], &["--timeout", "1s"], 5, 0),
        (vec![pending(), spent()], &["--timeout", "1s"], 5, 1),
        // 4 beats 3.
        (vec![quick_404(), fails()], &["--fail-when", r#".status=="failed""#], 4, 1),
    ];
    for (scripts, extra, code, named) in cases {
        let servers: Vec<Server> = scripts.into_iter().map(Server::start).collect();
        let urls: Vec<String> = servers.iter().enumerate().map(|(i, s)| s.url(&format!("/u{i}"))).collect();
        let out = poll()
            .args(["--any", "--until", UNTIL_DONE, "-i", "200ms", "--retries", "1", "--backoff", "10ms"])
            .args(extra)
            .args(&urls)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{extra:?} {urls:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("[{}]", urls[named])), "the error names {}: {err}", urls[named]);
        // stdout holds the lines of the URLs that ended with 0 or 4.
        let wanted = if code == 4 { 1 } else { 0 };
        assert_eq!(lines(&out).len(), wanted, "{}", String::from_utf8_lossy(&out.stdout));
    }
}

// ---- the deadline ----

#[test]
fn a_deadline_names_only_the_urls_still_pending_with_their_last_outcome() {
    let server = Server::routes(vec![
        ("/done", vec![Reply::json(200, DONE)]),
        ("/pending", vec![Reply::json(200, PENDING)]),
        ("/down", vec![Reply::status(503)]),
    ]);
    let urls = [server.url("/done"), server.url("/pending"), server.url("/down")];
    let started = Instant::now();
    let out = poll()
        .args(["--until", UNTIL_DONE, "-i", "200ms", "--backoff", "200ms", "--backoff-max", "200ms"])
        .args(["--jitter", "none", "--retries", "100", "--timeout", "1s"])
        .args(&urls)
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(took >= Duration::from_millis(700) && took < Duration::from_secs(10), "{took:?}");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("poll: error: deadline reached with 2 of 3 URLs still pending: "), "{err}");
    assert!(err.contains(&format!("{} (last: 200 pending)", urls[1])), "{err}");
    assert!(err.contains(&format!("{} (last: 503)", urls[2])), "{err}");
    assert!(!err.contains("/done"), "the URL that is done is not pending: {err}");
    // The URL that was done still has its line.
    assert_eq!(lines(&out), [json!({"url": urls[0], "exit_code": 0, "body": {"status": "done"}})]);
}

#[test]
fn a_deadline_names_a_url_whose_first_request_is_still_in_flight() {
    // /p stops at 0.8 s (its next poll, at 1.2 s at the earliest, would pass the deadline) while
    // /hang's first request is unanswered. (Its polls were 300 ms apart under a 1 s deadline: on a
    // machine kept busy the fourth ended past it, and /hang's request, timed out at the deadline,
    // ended first.)
    let hanging = Server::start(vec![Reply::hang()]);
    let pending = Server::start(vec![Reply::json(200, PENDING)]);
    let (hang, p) = (hanging.url("/hang"), pending.url("/p"));
    let flags = ["--until", UNTIL_DONE, "-i", "400ms", "--timeout", "1150ms"];
    let out = poll().args(flags).args([&hang, &p]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let wanted = format!("2 of 2 URLs still pending: {hang} (attempt 1 still running), {p} (last: 200 pending)");
    assert!(err.contains(&wanted), "{err}");
    assert_eq!(hanging.hits(), 1);
}

#[test]
fn under_any_a_deadline_names_those_still_pending_and_how_the_others_ended() {
    // /same stalls at about 400 ms (its body never changes); a port nobody opens goes on to the deadline.
    // Both end with exit 1: the first given names the run's ending, the deadline.
    let server = Server::start(vec![Reply::json(200, PENDING)]);
    let same = server.url("/same");
    let pending = format!("tcp://127.0.0.1:{}", support::daemon::free_port());
    let out = poll()
        .args(["--any", "--until", UNTIL_DONE, "-i", "100ms", "--timeout", "1500ms"])
        .args(["--stall", "400ms", &pending, &same])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let named = format!("1 of 2 URLs still pending: {pending} (never reached: connection refused) (raise --timeout");
    assert!(err.contains(&named), "{err}");
    assert!(err.contains("(raise --timeout to wait longer); stalled: the body has been the same for "), "{err}");
    assert!(err.trim_end().ends_with(&format!(" [{same}]")), "{err}");
}

// ---- --rate ----

#[test]
fn a_rate_is_shared_by_every_url_of_one_origin() {
    let server = Server::routes(vec![("/a", done_after(3)), ("/b", done_after(3)), ("/c", done_after(3))]);
    let urls = [server.url("/a"), server.url("/b"), server.url("/c")];
    let out = poll().args(["--rate", "5/s", "-i", "0", "--until", UNTIL_DONE]).args(&urls).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 12);
    let busiest = busiest_second(&[&server]);
    assert!(busiest <= 6, "{busiest} requests in one second at --rate 5/s");
    // Slots are 200 ms apart; a loop the scheduler wakes late sends late, so
    // two requests may come closer than that, never near together.
    for pair in requests.windows(2) {
        let gap = pair[1].at.duration_since(pair[0].at);
        assert!(gap >= Duration::from_millis(100), "requests {gap:?} apart at --rate 5/s");
    }
    let span = requests[11].at.duration_since(requests[0].at);
    assert!(span >= Duration::from_millis(2150), "12 requests at 5/s in {span:?}");
    assert_eq!(lines(&out).len(), 3);
}

// ---- signals ----

#[test]
fn sigint_with_two_loops_waiting_exits_130_at_once_and_both_stop() {
    let first = Server::start(vec![Reply::json(200, PENDING)]);
    let second = Server::start(vec![Reply::json(200, PENDING)]);
    let child = poll_std()
        .args(["--until", ".done", "-i", "30s", &first.url("/"), &second.url("/")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn poll");
    assert!(first.wait_hits(1, Duration::from_secs(10)) && second.wait_hits(1, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(100));
    let sent = Instant::now();
    let status = StdCommand::new("sh").args(["-c", &format!("kill -INT {}", child.id())]).status().unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let took = sent.elapsed();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(took < Duration::from_secs(2), "exit took {took:?}");
    assert_eq!(stderr(&out), "poll: error: interrupted after 2 attempts\n");
    assert_eq!(out.stdout, b"");
    assert_eq!((first.hits(), second.hits()), (1, 1));
}

// ---- -v and the JSON log ----

#[test]
fn verbose_lines_name_their_url() {
    let server = Server::routes(vec![("/a", done_after(1)), ("/b", vec![Reply::json(200, DONE)])]);
    let (a, b) = (server.url("/a"), server.url("/b"));
    let out = poll().args(["-v", "--until", UNTIL_DONE, "-i", "100ms", &a, &b]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("[{a}] attempt 1: 200 pending in ")), "{err}");
    assert!(err.contains(&format!("[{a}] attempt 2: 200 done in ")), "{err}");
    assert!(err.contains(&format!("[{b}] attempt 1: 200 done in ")), "{err}");
    let (last, every) = err.lines().collect::<Vec<_>>().split_last().map(|(l, e)| (*l, e.to_vec())).unwrap();
    assert!(last.starts_with("poll: done after 3 attempts in "), "{err}");
    for line in every {
        assert!(line.starts_with(&format!("[{a}] ")) || line.starts_with(&format!("[{b}] ")), "{line:?} in {err}");
    }
    assert!(err.contains(&format!("[{b}] > GET {b}\n")), "{err}");

    // -vv: the request and response headers name their URL too.
    let out = poll().args(["-vv", "-H", "X-Trace: 1", &b, &b]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches(&format!("[{b}] > X-Trace: 1\n")).count(), 2, "{err}");
    assert_eq!(err.matches(&format!("[{b}] < content-type: application/json\n")).count(), 2, "{err}");
    let (_, every) = err.lines().collect::<Vec<_>>().split_last().map(|(l, e)| (*l, e.to_vec())).unwrap();
    assert!(every.iter().all(|line| line.starts_with(&format!("[{b}] "))), "{err}");
}

#[test]
fn json_log_attempts_carry_url_and_target_and_one_final_object_carries_targets() {
    let server = Server::routes(vec![
        ("/done", vec![Reply::json(200, DONE)]),
        ("/bad", vec![Reply::status(404).delay(Duration::from_millis(300))]),
        ("/slow", vec![Reply::json(200, PENDING)]),
    ]);
    let urls = [server.url("/done"), server.url("/bad"), server.url("/slow")];
    let out = poll().args(["--log-format", "json", "--until", UNTIL_DONE, "-i", "100ms"]).args(&urls).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let events: Vec<Value> =
        stderr(&out).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    let (last, attempts) = events.split_last().unwrap();
    for event in attempts {
        assert_eq!(event["event"], "attempt", "{event}");
        let target = event["target"].as_u64().expect("target") as usize;
        assert_eq!(event["url"], urls[target], "{event}");
        assert!(event.get("targets").is_none(), "{event}");
    }
    let of = |t: usize| attempts.iter().filter(|e| e["target"] == t).count() as u64;
    assert_eq!((of(0), of(1)), (1, 1));
    assert!(of(2) >= 2, "{}", stderr(&out));
    // The abandoned URL's count includes a request it may have had in flight.
    let abandoned = last["targets"][2]["attempts"].as_u64().unwrap();
    assert!(abandoned == of(2) || abandoned == of(2) + 1, "{last}");
    assert_eq!(last["event"], "done");
    assert_eq!(last["exit_code"], 3);
    assert_eq!(last["reason"], "permanent");
    assert_eq!(
        last["targets"],
        json!([
            {"url": urls[0], "exit_code": 0, "reason": "done", "attempts": 1},
            {"url": urls[1], "exit_code": 3, "reason": "permanent", "attempts": 1},
            {"url": urls[2], "exit_code": null, "reason": "abandoned", "attempts": abandoned},
        ])
    );
    assert_eq!(lines(&out), [json!({"url": urls[0], "exit_code": 0, "body": {"status": "done"}})]);
}

#[test]
fn json_log_warnings_ride_on_the_next_object_of_any_url() {
    let server = Server::routes(vec![
        ("/odd", vec![Reply::json(200, r#"{"status":7}"#), Reply::json(200, DONE)]),
        ("/b", done_after(2)),
    ]);
    let urls = [server.url("/odd"), server.url("/b")];
    let out = poll()
        .args(["--log-format", "json", "--until", r#".status | ascii_downcase == "done""#, "-i", "200ms"])
        .args(&urls)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events: Vec<Value> = stderr(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.len(), 2 + 3 + 1, "one object per attempt plus the final one: {}", stderr(&out));
    let warned: Vec<&Value> = events.iter().filter(|e| e.get("warnings").is_some()).collect();
    assert_eq!(warned.len(), 1, "{}", stderr(&out));
    assert!(warned[0]["warnings"][0].as_str().unwrap().contains("jq error"), "{}", warned[0]);
}

// ---- usage errors ----

#[test]
fn a_bad_second_url_is_a_usage_error_and_nothing_is_sent() {
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    for bad in ["http://127.0.0.1:99999/", "ftp://x/", "http:///nohost"] {
        let out = poll().args([&server.url("/"), bad]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("poll: error: invalid URL `"), "{bad}: {err}");
        assert_eq!(out.stdout, b"");
    }
    poll()
        .args(["--fallback", "{}", &server.url("/a"), &server.url("/b")])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--fallback"));
    assert_eq!(server.connections(), 0, "nothing reached the first URL's server");
}

// ---- --stable ----

#[test]
fn stable_without_until_needs_n_2xx_in_a_row_interval_apart() {
    let server = Server::start(vec![
        Reply::text(200, "1"),
        Reply::text(200, "2"),
        Reply::status(503),
        Reply::text(200, "4"),
        Reply::text(200, "5"),
        Reply::text(200, "6"),
        Reply::text(200, "never"),
    ])
    .expect_hits(6);
    let out = poll()
        .args(["--stable", "3", "-i", "200ms", "--backoff", "200ms", "--jitter", "none", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 6, "the 503 resets the streak");
    assert_eq!(out.stdout, b"6", "the body of the last poll");
    let requests = server.requests();
    for pair in requests.windows(2) {
        let gap = pair[1].at.duration_since(pair[0].at);
        assert!(gap >= Duration::from_millis(200), "polls {gap:?} apart, before --interval");
    }
    assert_eq!(stderr(&out), "");

    // Three 2xx in a row: three polls, not one.
    let server = Server::start(vec![Reply::text(200, "ok")]);
    let out = poll().args(["--stable", "3", "-i", "100ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 3);
}

#[test]
fn stable_with_until_needs_the_condition_on_n_polls_in_a_row() {
    let server = Server::start(vec![
        Reply::json(200, DONE),
        Reply::json(200, DONE),
        Reply::json(200, PENDING),
        Reply::json(200, DONE),
        Reply::json(200, DONE),
        Reply::json(200, r#"{"status":"done","n":6}"#),
        Reply::json(200, PENDING),
    ])
    .expect_hits(6);
    let out = poll().args(["--stable", "3", "--until", UNTIL_DONE, "-i", "150ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 6, "a pending body resets the count");
    assert_eq!(out.stdout, br#"{"status":"done","n":6}"#);
    for pair in server.requests().windows(2) {
        let gap = pair[1].at.duration_since(pair[0].at);
        assert!(gap >= Duration::from_millis(150), "polls {gap:?} apart, before --interval");
    }
}

#[test]
fn stable_that_cannot_be_reached_before_the_deadline_exits_1() {
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let out = poll()
        .args(["--stable", "10", "--until", UNTIL_DONE, "-i", "300ms", "--timeout", "1s", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(server.hits(), 4, "polls at 0, 0.3, 0.6 and 0.9 s");
    assert_eq!(out.stdout, b"");
}

// ---- GitHub Actions ----

#[test]
fn in_github_actions_the_error_line_is_a_workflow_command_with_percent_escaped() {
    let server = Server::start(vec![Reply::status(404)]);
    let url = server.url("/a%25b?q=100%25");
    let plain = poll().arg(&url).output().unwrap();
    assert_eq!(plain.status.code(), Some(3));
    let message = stderr(&plain).strip_prefix("poll: error: ").expect("a plain error line").trim_end().to_string();
    assert!(message.contains("%25"), "{message}");

    let out = poll().env("GITHUB_ACTIONS", "true").arg(&url).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stderr(&out), format!("::error title=poll::{}\n", message.replace('%', "%25")));
    assert!(stderr(&out).contains("/a%2525b?q=100%2525]"), "{}", stderr(&out));
}

#[test]
fn in_github_actions_a_jq_runtime_error_is_a_workflow_warning() {
    let server = Server::start(vec![Reply::json(200, r#"{"a":"x"}"#), Reply::json(200, r#"{"a":1}"#)]);
    let out =
        poll().env("GITHUB_ACTIONS", "true").args(["--until", ".a + 1 > 1", "-i", "0", &server.url("/")]).output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("::warning title=poll::") && err.contains("jq error"), "{err}");
}

#[test]
fn ci_none_turns_workflow_commands_off_and_ci_github_turns_them_on() {
    let server = Server::start(vec![Reply::status(404)]);
    let url = server.url("/");
    let out = poll().env("GITHUB_ACTIONS", "true").args(["--ci", "none", &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).starts_with("poll: error: HTTP 404"), "{}", stderr(&out));
    let out = poll().args(["--ci", "github", &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).starts_with("::error title=poll::HTTP 404"), "{}", stderr(&out));

    // A usage error follows --ci too.
    let out = poll().env("GITHUB_ACTIONS", "true").args(["--ci", "none", "ftp://x/"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("poll: error: invalid URL"), "{}", stderr(&out));
    let out = poll().args(["--ci", "github", "ftp://x/"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("::error title=poll::invalid URL"), "{}", stderr(&out));
    let out = poll().env("GITHUB_ACTIONS", "true").arg("ftp://x/").output().unwrap();
    assert!(stderr(&out).starts_with("::error title=poll::invalid URL"), "{}", stderr(&out));
    assert_eq!(server.hits(), 2);
}

#[test]
fn in_github_actions_each_urls_verbose_lines_sit_in_one_group_and_groups_never_interleave() {
    let server = Server::routes(vec![
        ("/a", done_after(3)),
        ("/b", done_after(1)),
        ("/a2", done_after(3)),
        ("/pending", vec![Reply::json(200, PENDING)]),
    ]);
    let (a, b, a2, pending) = (server.url("/a"), server.url("/b"), server.url("/a2"), server.url("/pending"));

    // The two loops interleave in time; each writes one group, whole, when it ends.
    let (err, groups) = github_groups(&["-v", "--until", UNTIL_DONE, "-i", "100ms", &a, &b]);
    let named: Vec<&str> = groups.iter().map(|(url, _)| url.as_str()).collect();
    assert_eq!(named, [b.as_str(), a.as_str()], "in the order the URLs ended: {err}");
    let attempts = |lines: &[String]| lines.iter().filter(|l| l.contains("] attempt ")).count();
    assert_eq!((attempts(&groups[0].1), attempts(&groups[1].1)), (2, 4), "{err}");
    for (url, lines) in &groups {
        for line in lines.iter().filter(|l| l.contains("] attempt ")) {
            assert!(line.starts_with(&format!("[{url}] ")), "{line:?} in the group of {url}: {err}");
        }
    }
    assert!(err.lines().last().unwrap().starts_with("poll: done after 6 attempts in "), "{err}");

    // --any: the abandoned URL's group is written too, after the winner's.
    let (err, groups) =
        github_groups(&["-v", "--any", "--until", UNTIL_DONE, "-i", "100ms", "--timeout", "20s", &pending, &a2]);
    let named: Vec<&str> = groups.iter().map(|(url, _)| url.as_str()).collect();
    assert_eq!(named, [a2.as_str(), pending.as_str()], "{err}");
    assert_eq!(attempts(&groups[0].1), 4, "{err}");
    assert!(attempts(&groups[1].1) >= 2, "{err}");
}

/// The `::group::poll URL` ... `::endgroup::` blocks of `err`, checking that
/// they never nest or interleave and that only the summary line is outside.
/// A run under GitHub Actions that must end with exit 0: its stderr, and the groups in it.
fn github_groups(args: &[&str]) -> (String, Vec<(String, Vec<String>)>) {
    let out = poll().env("GITHUB_ACTIONS", "true").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    let groups = groups_of(&err);
    (err, groups)
}

fn groups_of(err: &str) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    let mut open = false;
    for line in err.lines() {
        if let Some(url) = line.strip_prefix("::group::poll ") {
            assert!(!open, "a group opens inside another: {err}");
            open = true;
            groups.push((url.to_string(), Vec::new()));
        } else if line == "::endgroup::" {
            assert!(open, "an endgroup outside a group: {err}");
            open = false;
        } else if open {
            groups.last_mut().unwrap().1.push(line.to_string());
        } else {
            assert!(line.starts_with("poll: done after "), "{line:?} outside any group: {err}");
        }
    }
    assert!(!open, "a group is never closed: {err}");
    groups
}

#[test]
fn in_github_actions_one_urls_verbose_lines_are_one_group() {
    let server = Server::start(done_after(1));
    let url = server.url("/");
    let out =
        poll().env("GITHUB_ACTIONS", "true").args(["-v", "--until", UNTIL_DONE, "-i", "50ms", &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    let groups = groups_of(&err);
    assert_eq!(groups.len(), 1, "{err}");
    assert_eq!(groups[0].0, url);
    assert!(groups[0].1.iter().any(|l| l.starts_with("attempt 2: 200 done")), "{err}");

    // A failed run: its error line follows the group.
    let server = Server::start(vec![Reply::status(404)]);
    let out = poll().env("GITHUB_ACTIONS", "true").args(["-v", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.first(), Some(&format!("::group::poll {}", server.url("/")).as_str()), "{err}");
    assert_eq!(lines[lines.len() - 2], "::endgroup::", "{err}");
    assert!(lines[lines.len() - 1].starts_with("::error title=poll::HTTP 404"), "{err}");
}

#[test]
fn in_github_actions_success_off_a_terminal_is_still_silent() {
    let server = Server::routes(vec![("/a", done_after(1)), ("/b", vec![Reply::json(200, DONE)])]);
    let (a, b) = (server.url("/a"), server.url("/b"));
    for urls in [vec![a.clone()], vec![a.clone(), b.clone()]] {
        let out = poll()
            .env("GITHUB_ACTIONS", "true")
            .args(["--until", UNTIL_DONE, "-i", "50ms"])
            .args(&urls)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stderr(&out), "", "{urls:?}");
    }
}

#[test]
fn a_body_on_a_stdout_line_keeps_its_key_order() {
    let server = Server::routes(vec![
        ("/z", vec![Reply::json(200, r#"{"zeta": 1, "alpha": {"y": 2, "b": 3}}"#)]),
        ("/a", vec![Reply::json(200, "[3, 1]")]),
    ]);
    let out = poll().args([&server.url("/z"), &server.url("/a")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let want = format!(
        "{{\"url\":\"{}\",\"exit_code\":0,\"body\":{{\"zeta\":1,\"alpha\":{{\"y\":2,\"b\":3}}}}}}\n\
         {{\"url\":\"{}\",\"exit_code\":0,\"body\":[3,1]}}\n",
        server.url("/z"),
        server.url("/a")
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
}

#[test]
fn a_deadline_over_many_urls_names_three_and_counts_the_rest_while_the_json_log_keeps_every_one() {
    let server = Server::start(vec![Reply::json(200, PENDING)]).expect_hits_between(12, 200);
    let urls: Vec<String> = (0..12).map(|n| server.url(&format!("/job/{n}"))).collect();
    let out = poll().args(["--until", UNTIL_DONE, "-i", "200ms", "--timeout", "700ms"]).args(&urls).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let named: Vec<String> = urls[..3].iter().map(|url| format!("{url} (last: 200 pending)")).collect();
    assert_eq!(
        err,
        format!(
            "poll: error: deadline reached with 12 of 12 URLs still pending: {} and 9 more (raise --timeout to wait longer)\n",
            named.join(", ")
        )
    );
    let out = poll()
        .args(["--until", UNTIL_DONE, "-i", "200ms", "--timeout", "700ms", "--log-format", "json"])
        .args(&urls)
        .output()
        .unwrap();
    let last: Value = stderr(&out).lines().last().map(|line| serde_json::from_str(line).unwrap()).unwrap();
    assert_eq!(last["targets"].as_array().map(Vec::len), Some(12));
}

/// A thousand URLs in one run fit in 4 GiB of address space (`ulimit -v`, as under
/// `vm.overcommit_memory=2`): each loop's thread reserves a small stack (it reserved 256 MiB,
/// and the thousandth thread could not start).
#[cfg(unix)]
#[test]
fn a_thousand_urls_run_within_four_gib_of_address_space() {
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(1_000);
    let urls: Vec<String> = (0..1_000).map(|n| server.url(&format!("/job/{n}"))).collect();
    let mut shell = StdCommand::new("sh");
    shell.arg("-c").arg("ulimit -v 4194304 && exec \"$0\" \"$@\"").arg(env!("CARGO_BIN_EXE_poll"));
    support::hermetic(&mut shell).args(["--until", UNTIL_DONE, "--timeout", "60s"]).args(&urls);
    let out = shell.output().expect("run poll under ulimit -v");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = lines(&out);
    assert_eq!(lines.len(), 1_000);
    assert!(lines.iter().all(|line| line["exit_code"] == 0 && line["body"]["status"] == "done"));
}
