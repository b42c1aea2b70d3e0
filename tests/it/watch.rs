//! End-to-end tests of `--watch`: replies read as they arrive (Server-Sent Events and JSON
//! streams), judged event by event, asked again resuming where they ended, against streams the
//! scripted server writes chunk by chunk (events split mid-line, CRLF, comments, heartbeats,
//! silences, resets, 204s, an index that goes backwards).

use crate::support;

use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::poll;
use support::server::{Reply, Server};

const UNTIL_DONE: &str = r#".status=="done""#;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `poll --watch ARGS`, run to its end, and how long it took.
fn watch(args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = poll().arg("--watch").args(args).output().expect("run poll");
    (out, started.elapsed())
}

/// Gaps between consecutive requests the server saw.
fn gaps(server: &Server) -> Vec<Duration> {
    let requests = server.requests();
    requests.windows(2).map(|w| w[1].at.duration_since(w[0].at)).collect()
}

/// When each request arrived, after `started` (an instant before poll began). A lower bound on
/// when a request may come is checked on this, not on the gap since the one before: under load the
/// first request can arrive late (its process descheduled, its first connection), which shortens
/// the gap without poll asking again any sooner.
fn since(server: &Server, started: Instant) -> Vec<Duration> {
    server.requests().iter().map(|request| request.at.duration_since(started)).collect()
}

#[test]
fn the_deciding_event_ends_the_run_while_the_stream_stays_open() {
    let stream = Reply::sse(&[
        (ms(0), "data: {\"status\":\"pending\"}\n\n"),
        (ms(300), "data: {\"status\":\"done\",\"n\":2}\n\n"),
    ])
    .then_hold();
    let server = Server::start(vec![stream]).expect_hits(1);
    let (out, took) = watch(&["--until", UNTIL_DONE, "--timeout", "20s", &server.url("/events")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"status":"done","n":2}"#);
    assert!(took >= ms(300), "ended before the deciding event: {took:?}");
    assert!(took < Duration::from_secs(10), "waited for the held stream to end: {took:?}");
    assert_eq!(server.requests()[0].header("accept-encoding"), Some("identity"));
    // As EventSource asks: nchan refuses an event stream to a request that does not.
    assert_eq!(server.requests()[0].header("accept"), Some("text/event-stream, application/json;q=0.9, */*;q=0.8"));
}

#[test]
fn events_split_mid_line_with_crlf_comments_and_heartbeats_are_read_as_whatwg_says() {
    let stream = Reply::sse(&[
        (ms(0), ": heartbeat\r\n\r\n"),
        (ms(20), "data: {\"sta"),
        (ms(20), "tus\":\"pen"),
        (ms(20), "ding\"}\r\n\r\n:\r\n"),
        (ms(20), "event: update\r\nid: 7\r\ndata: {\"status\":\r\ndata: \"done\"}\r\n\r"),
        (ms(20), "\n"),
    ])
    .then_hold();
    let server = Server::start(vec![stream]).expect_hits(1);
    let until = r#"$event == "update" and .status == "done""#;
    let (out, _) = watch(&["--until", until, "-v", "--timeout", "20s", &server.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"{\"status\":\n\"done\"}");
    let text = stderr(&out);
    assert!(text.contains(&format!("watching {}", server.url("/"))), "{text}");
    assert!(text.contains("event 1 (type message) -> not yet"), "{text}");
    assert!(text.contains("event 2 (type update, id 7) -> done"), "{text}");
}

#[test]
fn sse_data_that_is_not_json_is_a_json_string() {
    let server = Server::start(vec![Reply::sse(&[(ms(0), "data: hello\ndata: world\n\n")]).then_hold()]);
    let (out, _) = watch(&["--until", r#". == "hello\nworld""#, "--timeout", "20s", &server.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#""hello\nworld""#);
}

#[test]
fn json_streams_are_read_value_by_value_in_every_framing() {
    let framings = [
        ("application/x-ndjson", vec![(ms(0), "{\"status\":\"pending\"}\n{\"sta"), (ms(50), "tus\":\"done\"}\n")]),
        ("application/json", vec![(ms(0), "{\"status\":\"pending\"}"), (ms(50), "{\"status\":\"done\"}")]),
        (
            "application/json-seq",
            vec![(ms(0), "\u{1e}{\"status\":\"pending\"}\n"), (ms(50), "\u{1e}{\"status\":\"done\"}\n")],
        ),
    ];
    for (content_type, parts) in framings {
        let server = Server::start(vec![Reply::stream(200, content_type, &parts).then_hold()]).expect_hits(1);
        let until = r#"$event == null and .status == "done""#;
        let (out, _) = watch(&["--until", until, "--timeout", "20s", &server.url("/")]);
        assert_eq!(out.status.code(), Some(0), "{content_type}: {}", stderr(&out));
        assert_eq!(out.stdout, br#"{"status":"done"}"#, "{content_type}");
    }
}

#[test]
fn fail_when_on_an_event_exits_4_with_that_event_and_print_reads_it() {
    let stream = Reply::stream(
        200,
        "application/x-ndjson",
        &[(ms(0), "{\"phase\":\"Running\"}\n{\"phase\":\"Failed\",\"why\":\"oom\"}\n")],
    );
    let server = Server::start(vec![stream.then_hold()]);
    let (out, _) = watch(&[
        "--until",
        r#".phase=="Succeeded""#,
        "--fail-when",
        r#".phase=="Failed""#,
        "--print",
        ".why",
        "--timeout",
        "20s",
        &server.url("/"),
    ]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(out.stdout, b"oom\n");
}

#[test]
fn a_stream_that_ends_is_asked_again_after_the_interval_with_its_last_event_id() {
    let server = Server::start(vec![
        Reply::sse(&[(ms(0), "id: 17\ndata: {\"status\":\"pending\"}\n\n")]),
        Reply::sse(&[(ms(0), "data: {\"status\":\"done\"}\n\n")]).then_hold(),
    ])
    .expect_hits(2);
    let started = Instant::now();
    let (out, _) = watch(&["--until", UNTIL_DONE, "--interval", "400ms", "--timeout", "20s", &server.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests[0].header("last-event-id"), None);
    assert_eq!(requests[1].header("last-event-id"), Some("17"));
    assert!(since(&server, started)[1] >= ms(400), "asked again before --interval: {:?}", since(&server, started));
}

#[test]
fn a_reply_held_longer_than_the_interval_is_asked_again_at_once() {
    let held = Reply::stream(200, "application/json", &[(ms(800), "{\"status\":\"pending\"}")]);
    let server = Server::start(vec![held, Reply::json(200, r#"{"status":"done"}"#)]).expect_hits(2);
    let (out, _) = watch(&["--until", UNTIL_DONE, "--interval", "500ms", "--timeout", "20s", &server.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let gap = gaps(&server)[0];
    assert!(gap >= ms(800) && gap < ms(1250), "not asked again at once after a held reply: {gap:?}");
}

#[test]
fn an_event_streams_retry_is_waited_instead_of_the_interval() {
    let server = Server::start(vec![
        Reply::sse(&[(ms(0), "retry: 900\ndata: {\"status\":\"pending\"}\n\n")]),
        Reply::sse(&[(ms(0), "data: {\"status\":\"done\"}\n\n")]).then_hold(),
    ])
    .expect_hits(2);
    let started = Instant::now();
    let (out, _) = watch(&["--until", UNTIL_DONE, "--interval", "50ms", "--timeout", "20s", &server.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(since(&server, started)[1] >= ms(900), "retry: not honoured: {:?}", since(&server, started));
}

#[test]
fn an_event_streams_retry_holds_for_the_reconnects_after_it_as_an_eventsources_does() {
    // The second stream says no retry: of its own; the first one's still holds.
    let server = Server::start(vec![
        Reply::sse(&[(ms(0), "retry: 900\nid: 1\ndata: {\"status\":\"pending\"}\n\n")]),
        Reply::sse(&[(ms(0), "id: 2\ndata: {\"status\":\"pending\"}\n\n")]),
        Reply::sse(&[(ms(0), "data: {\"status\":\"done\"}\n\n")]).then_hold(),
    ])
    .expect_hits(3);
    let (out, _) = watch(&["--until", UNTIL_DONE, "--interval", "50ms", "--timeout", "20s", &server.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let gaps = gaps(&server);
    assert!(gaps[0] >= ms(900) && gaps[1] >= ms(900), "retry: 900 forgotten after one reconnect: {gaps:?}");
}

#[test]
fn a_204_to_the_reconnect_of_an_event_stream_ends_the_run_with_3() {
    let server = Server::start(vec![Reply::sse(&[(ms(0), "data: {\"status\":\"pending\"}\n\n")]), Reply::status(204)])
        .expect_hits(2);
    let (out, _) = watch(&["--until", UNTIL_DONE, "--interval", "50ms", "--timeout", "20s", &server.url("/")]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("the server ended the event stream before the condition held"), "{}", stderr(&out));
    assert_eq!(out.stdout, b"");
}

#[test]
fn a_silent_stream_is_dropped_after_the_idle_timeout_and_asked_again() {
    let server = Server::start(vec![
        Reply::sse(&[(ms(0), "data: {\"status\":\"pending\"}\n\n")]).then_hold(),
        Reply::sse(&[
            (ms(0), ": still here\n\n"),
            (ms(250), ": still here\n\n"),
            (ms(250), "data: {\"status\":\"done\"}\n\n"),
        ])
        .then_hold(),
    ])
    .expect_hits(2);
    let args = ["--until", UNTIL_DONE, "--idle-timeout", "400ms", "--interval", "10ms", "-v", "--timeout", "20s"];
    let started = Instant::now();
    let (out, took) = watch(&[&args[..], &[&server.url("/")]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(took >= ms(400 + 500), "{took:?}");
    assert!(since(&server, started)[1] >= ms(400), "dropped before --idle-timeout: {:?}", since(&server, started));
    assert!(stderr(&out).contains("stream went idle"), "{}", stderr(&out));
}

#[test]
fn a_reset_or_an_oversized_event_is_a_transient_failure() {
    let reset = Reply::sse(&[(ms(0), "data: {\"status\":\"pending\"}\n\ndata: {\"sta")]).then_reset();
    let big = format!("data: {{\"pad\":\"{}\"}}\n\n", "x".repeat(300));
    let oversized = Reply::sse(&[(ms(0), big.as_str())]);
    let server =
        Server::start(vec![reset, oversized, Reply::sse(&[(ms(0), "data: {\"status\":\"done\"}\n\n")]).then_hold()])
            .expect_hits(3);
    let args = ["--until", UNTIL_DONE, "--max-body", "200", "--backoff", "100ms", "-v", "--timeout", "20s"];
    let (out, _) = watch(&[&args[..], &[&server.url("/")]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stderr(&out);
    // A reset mid-body reads as the end of a body cut short: either way, a transient failure.
    assert!(text.contains("attempt 1: body truncated") || text.contains("attempt 1: connection reset"), "{text}");
    assert!(text.contains("attempt 2: malformed reply"), "{text}");
    assert!(text.contains("retry in"), "{text}");
    // With no retries left the same failures end the run with 5.
    let server = Server::start(vec![Reply::sse(&[(ms(0), big.as_str())])]).expect_hits(1);
    let (out, _) = watch(&["--until", UNTIL_DONE, "--max-body", "200", "--retries", "0", &server.url("/")]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("--max-body"), "{}", stderr(&out));
}

#[test]
fn a_blocking_query_resumes_from_its_index_and_starts_again_when_it_goes_backwards() {
    let pending = r#"[{"Key":"deploy","Value":"pending"}]"#;
    let server = Server::start(vec![
        Reply::json(200, pending).header("X-Consul-Index", "41"),
        Reply::json(200, pending).header("X-Consul-Index", "57"),
        Reply::json(200, pending).header("X-Consul-Index", "12"),
        Reply::json(200, r#"[{"Key":"deploy","Value":"ready"}]"#).header("X-Consul-Index", "13"),
    ])
    .expect_hits(4);
    let url = server.url("/v1/kv/deploy?dc=one");
    let args = ["--until", r#".[0].Value=="ready""#, "--interval", "10ms", "--idle-timeout", "50s", "--timeout", "20s"];
    let (out, _) = watch(&[&args[..], &[&url]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths[0], "/v1/kv/deploy?dc=one");
    assert_eq!(paths[1], "/v1/kv/deploy?dc=one&index=41&wait=19s", "{paths:?}");
    assert!(paths[2].starts_with("/v1/kv/deploy?dc=one&index=57&wait="), "{paths:?}");
    assert!(paths[3].starts_with("/v1/kv/deploy?dc=one&index=0&wait="), "the index went backwards: {paths:?}");
}

#[test]
fn a_long_poll_is_asked_again_with_the_validators_of_the_message_it_held() {
    let server = Server::start(vec![
        Reply::json(200, r#"{"status":"pending"}"#)
            .header("ETag", "\"m1\"")
            .header("Last-Modified", "Sat, 05 Dec 2026 08:00:00 GMT"),
        Reply::status(304),
        Reply::json(200, r#"{"status":"done"}"#).header("ETag", "\"m2\""),
    ])
    .expect_hits(3);
    let (out, _) = watch(&["--until", UNTIL_DONE, "--interval", "10ms", "--timeout", "20s", &server.url("/sub")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"status":"done"}"#);
    for request in &server.requests()[1..] {
        assert_eq!(request.header("if-none-match"), Some("\"m1\""));
        assert_eq!(request.header("if-modified-since"), Some("Sat, 05 Dec 2026 08:00:00 GMT"));
    }
}

#[test]
fn a_deadline_during_a_held_stream_names_the_last_event_judged() {
    let stream = Reply::sse(&[(ms(0), "data: {\"status\":\"pending\"}\n\n")]).then_hold();
    let server = Server::start(vec![stream]).expect_hits(1);
    let (out, took) = watch(&["--until", UNTIL_DONE, "--show", ".status", "--timeout", "1s", &server.url("/")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(took >= ms(1000) && took < ms(5000), "{took:?}");
    assert!(stderr(&out).contains("last: event 1 pending · status pending"), "{}", stderr(&out));
}

#[cfg(unix)]
#[test]
fn sigterm_ends_a_held_stream_at_once_with_143() {
    use std::process::{Command as StdCommand, Stdio};
    use support::poll_std;
    let server = Server::start(vec![Reply::sse(&[(ms(0), "data: {\"status\":\"pending\"}\n\n")]).then_hold()]);
    let child = poll_std()
        .args(["--watch", "--until", UNTIL_DONE, &server.url("/")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn poll");
    assert!(server.wait_hits(1, Duration::from_secs(10)));
    std::thread::sleep(ms(200)); // The event is judged; the reply is held.
    let sent = Instant::now();
    let status = StdCommand::new("sh").args(["-c", &format!("kill -TERM {}", child.id())]).status().expect("kill");
    assert!(status.success());
    let out = child.wait_with_output().expect("wait for poll");
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    assert!(sent.elapsed() < Duration::from_secs(2), "{:?}", sent.elapsed());
}

#[test]
fn watch_with_submit_head_prefer_wait_or_interval_max_is_a_usage_error() {
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    let url = server.url("/");
    for extra in [&["--submit"][..], &["-I"], &["--prefer-wait", "10s"], &["--interval-max", "10s"]] {
        let out = poll().arg("--watch").args(extra).arg(&url).output().expect("run poll");
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("--watch"), "{extra:?}: {}", stderr(&out));
    }
    let out = poll().args(["--idle-timeout", "5s", &url]).output().expect("run poll");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn the_json_log_has_an_object_per_event_and_counts_events_and_requests() {
    let server = Server::start(vec![
        Reply::sse(&[(
            ms(0),
            "id: 1\ndata: {\"status\":\"pending\"}\n\nevent: change\nid: 2\ndata: {\"status\":\"pending\"}\n\n",
        )]),
        Reply::sse(&[(ms(0), "data: {\"status\":\"done\"}\n\n")]).then_hold(),
    ])
    .expect_hits(2);
    let (out, _) =
        watch(&["--until", UNTIL_DONE, "--log-format", "json", "-i", "10ms", "--timeout", "20s", &server.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<Value> = stderr(&out).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    let events: Vec<&Value> = lines.iter().filter(|l| l["event"] == "stream_event").collect();
    assert_eq!(events.len(), 3, "{lines:?}");
    assert_eq!(
        (&events[1]["n"], &events[1]["type"], &events[1]["id"]),
        (&Value::from(2), &Value::from("change"), &Value::from("2"))
    );
    assert_eq!(events[2]["verdict"], "met");
    assert_eq!(events[0]["verdict"], "not_met");
    // An object per attempt: the first, whose stream ended, and the second, which the event ended.
    let ended: Vec<&Value> = lines.iter().filter(|l| l["event"] == "attempt").collect();
    assert_eq!(
        (ended.len(), &ended[0]["stream"], &ended[0]["action"]),
        (2, &Value::from("ended"), &Value::from("poll"))
    );
    assert_eq!((&ended[1]["attempt"], &ended[1]["action"]), (&Value::from(2), &Value::from("done")), "{lines:?}");
    let last = lines.last().expect("a final object");
    assert_eq!(
        (&last["event"], &last["events"], &last["requests"]),
        (&Value::from("done"), &Value::from(3), &Value::from(2))
    );
}

#[test]
fn several_urls_each_watch_their_own_stream() {
    let server = Server::routes(vec![
        ("/a", vec![Reply::sse(&[(ms(0), "data: {\"status\":\"done\",\"u\":\"a\"}\n\n")]).then_hold()]),
        ("/b", vec![Reply::sse(&[(ms(200), "data: {\"status\":\"done\",\"u\":\"b\"}\n\n")]).then_hold()]),
    ]);
    let (out, _) = watch(&["--until", UNTIL_DONE, "--timeout", "20s", &server.url("/a"), &server.url("/b")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["body"]["u"], "a");
    assert_eq!(lines[1]["body"]["u"], "b");
}

/// 200,000 events of 1 KiB pass through one stream with the process's peak resident memory
/// flat (far under the 200 MB they add up to): only the event being read is kept.
#[cfg(target_os = "linux")]
#[test]
fn two_hundred_thousand_events_pass_in_flat_memory() {
    use std::io::BufRead;
    use std::process::Stdio;
    use support::poll_std;
    let event = format!("{{\"status\":\"pending\",\"pad\":\"{}\"}}\n", "x".repeat(1000));
    let all = event.repeat(200_000);
    let stream = Reply::stream(200, "application/x-ndjson", &[(ms(0), all.as_str())]).then_hold();
    let server = Server::start(vec![stream]).expect_hits(1);
    let mut child = poll_std()
        .args(["--watch", "--until", UNTIL_DONE, "--log-format", "json", &server.url("/")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn poll");
    let status = format!("/proc/{}/status", child.id());
    let log = std::io::BufReader::new(child.stderr.take().expect("poll's stderr"));
    // The 200,000th event's object: every event has been read and judged.
    let judged = log.lines().map_while(Result::ok).filter(|line| line.contains("\"stream_event\"")).nth(199_999);
    let text = std::fs::read_to_string(&status).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    assert!(judged.is_some_and(|line| line.contains("\"n\":200000")), "not every event was judged");
    let peak_kib: u64 = text
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    assert!(peak_kib < 48 * 1024, "peak RSS {peak_kib} KiB after 200 MB of events");
}

/// With `--state` and `--rate`, each request of a watch is one token of the shared bucket, and
/// the events on it are none: streams that end at once are asked again no faster than the rate,
/// while the events of one stream are judged as fast as they come.
#[test]
fn a_watched_request_is_a_token_of_the_rate_and_its_events_are_none() {
    let folder = std::env::temp_dir().join(format!("poll-watch-state-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("a folder");
    let state = folder.join("state.json");
    let three = "data: {\"status\":\"pending\"}\n\n".repeat(3);
    let server = Server::start(vec![
        Reply::sse(&[(ms(0), three.as_str())]),
        Reply::sse(&[(ms(0), three.as_str())]),
        Reply::sse(&[(ms(0), "data: {\"status\":\"done\"}\n\n")]).then_hold(),
    ])
    .expect_hits(3);
    let state_arg = state.to_string_lossy().into_owned();
    let args = ["--until", UNTIL_DONE, "--state", &state_arg, "--rate", "4/s", "-i", "0", "--log-format", "json"];
    let started = Instant::now();
    let (out, _) = watch(&[&args[..], &["--timeout", "20s", &server.url("/")]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let early = support::process::before_their_turn(&server.requests(), started, ms(250));
    assert!(early.is_empty(), "before their turn at --rate 4/s: {early:?}");
    let last: Value = stderr(&out).lines().last().and_then(|l| serde_json::from_str(l).ok()).expect("a final object");
    assert_eq!((&last["events"], &last["requests"]), (&Value::from(7), &Value::from(3)));
    let _ = std::fs::remove_dir_all(&folder);
}

/// `--stall` under `--watch`: events count as bodies do, so a stream whose events no longer move
/// (heartbeat-like repeats) stalls while its reply is still open.
#[test]
fn a_stream_whose_events_no_longer_move_stalls() {
    let same = "data: {\"status\":\"running\",\"progress\":40}\n\n";
    let parts: Vec<(Duration, &str)> = (0..20).map(|_| (ms(100), same)).collect();
    let server = Server::start(vec![Reply::sse(&parts).then_hold()]).expect_hits(1);
    let (out, took) = watch(&["--until", UNTIL_DONE, "--show", ".progress", "--stall", "500ms", &server.url("/")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(took >= ms(600) && took < ms(5000), "{took:?}");
    assert!(stderr(&out).contains("stalled: .progress has been 40 for"), "{}", stderr(&out));
}
