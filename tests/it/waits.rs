//! End-to-end tests of the waits beyond the body: a service not up yet, the
//! status lists (`--done-on`, `--pending-on`, `--fail-on`), `-I`, `$status`
//! and `$headers`, jq as its users write it (`$ENV`, `--arg`, `--argjson`),
//! the once-only jq error, and `-- CMD`.

use crate::support;

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use support::daemon::free_port;
use support::server::{Reply, Server};
use support::{poll, poll_std};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The JSON objects a `--log-format json` run wrote.
fn events(output: &Output) -> Vec<serde_json::Value> {
    stderr(output).lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

/// A folder of its own for one test, removed at the end.
struct Folder(std::path::PathBuf);

impl Folder {
    fn new(name: &str) -> Folder {
        let path = std::env::temp_dir().join(format!("poll-waits-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Folder(path)
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// A health wait lasts its deadline.

#[test]
fn a_service_that_starts_two_seconds_late_is_waited_for_under_the_default_retries() {
    // Before first contact was "not up yet", 7 refusals 10 ms apart gave up in well under a second: exit 5.
    let port = free_port();
    let started = Instant::now();
    let child = poll_std()
        .args(["--timeout", "20s", "-i", "200ms", "--backoff", "10ms", "--backoff-max", "10ms", "-v"])
        .arg(format!("http://127.0.0.1:{port}/healthz"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let server = Server::start_on(port, vec![Reply::json(200, r#"{"ok":true}"#)]);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"ok":true}"#);
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert_eq!(server.hits(), 1);
    let err = stderr(&out);
    let waits = err.lines().filter(|l| l.contains("connection refused in") && l.ends_with("(not up yet)")).count();
    assert!(waits >= 7, "more refusals than --retries allows, none spent: {err}");
    assert!(err.contains("-> poll again in 200ms (not up yet)"), "{err}");
}

#[test]
fn a_service_that_answered_once_and_then_resets_still_gives_up_quickly() {
    let server = Server::start(vec![Reply::json(200, r#"{"status":"pending"}"#), Reply::reset()]);
    let started = Instant::now();
    let out = poll()
        .args(["--until", r#".status=="done""#, "-i", "50ms", "--backoff", "10ms", "--jitter", "none"])
        .arg(server.url("/job"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    // The reply, then 7 resets: the default --retries is 6.
    assert_eq!(server.hits(), 8);
    assert!(stderr(&out).contains("gave up after 7 consecutive failures; last: connection reset"), "{}", stderr(&out));
}

#[test]
fn a_url_never_reached_says_so_when_the_deadline_comes() {
    let url = format!("http://127.0.0.1:{}/healthz", free_port());
    let started = Instant::now();
    let out = poll().args(["--timeout", "1s", "-i", "200ms", "--retries", "0", &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(started.elapsed() >= Duration::from_millis(800), "{:?}", started.elapsed());
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("; never reached: connection refused"), "{err}");
    assert!(err.contains("is the server up and listening on that port?"), "{err}");

    let out = poll().args(["--timeout", "300ms", "-i", "100ms", "--log-format", "json", &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let events = events(&out);
    assert_eq!(events[0]["action"], "poll");
    assert_eq!(events[0]["wait_reason"], "not_up_yet");
    assert_eq!(events[0]["error_kind"], "connect");
    let done = events.last().unwrap();
    assert!(done["message"].as_str().unwrap().contains("never reached: connection refused"), "{done}");
}

#[test]
fn several_urls_name_the_one_never_reached() {
    let server = Server::start(vec![Reply::json(200, r#"{"ok":true}"#)]);
    let nowhere = format!("http://127.0.0.1:{}/", free_port());
    let out = poll().args(["--timeout", "600ms", "-i", "100ms", &server.url("/"), &nowhere]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("1 of 2 URLs still pending: {nowhere} (never reached: connection refused)")),
        "{err}"
    );
}

#[test]
fn runs_that_never_reach_a_url_tell_the_breaker_nothing() {
    let folder = Folder::new("unreached-breaker");
    let state = folder.path("state.json");
    let state = state.to_str().unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/healthz");
    // Five failures in the window would open the breaker (under 60% success): the sixth run would exit 6.
    // One refused request a run: the next, 10 s on, would pass the 2 s deadline. (Requests 50 ms
    // apart under a 300 ms deadline: on a machine kept busy the deadline fell inside one, and the
    // run named the request it cut, "request timed out".)
    for run in 1..=6 {
        let out = poll().args(["--state", state, "--timeout", "2s", "-i", "10s", &url]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "run {run}: {}", stderr(&out));
        assert!(stderr(&out).contains("; never reached: connection refused"), "run {run}: {}", stderr(&out));
    }
    let value: serde_json::Value = serde_json::from_slice(&std::fs::read(state).unwrap()).unwrap();
    let breaker = &value["origins"][format!("http://127.0.0.1:{port}")]["breaker"];
    assert_eq!(breaker["window"].as_array().map_or(0, Vec::len), 0, "{value}");
    assert_eq!(breaker["state"].as_str().unwrap_or("closed"), "closed", "{value}");
}

#[test]
fn a_deadline_before_the_rate_slot_says_the_url_was_never_reached() {
    let url = format!("http://127.0.0.1:{}/healthz", free_port());
    let started = Instant::now();
    let out = poll().args(["--rate", "1/10s", "--timeout", "2s", "-i", "50ms", &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(5), "stops at once, not at the slot: {:?}", started.elapsed());
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("(--rate) but only "), "{err}");
    assert!(err.contains("; never reached: connection refused"), "{err}");
    assert!(!err.contains("last: connection refused"), "{err}");
}

#[test]
fn several_urls_name_a_jq_error_as_one_url_does() {
    let replies = (0..40).map(|n| Reply::json(200, &format!(r#"{{"name":{n}}}"#))).collect();
    let a = Server::start(replies).expect_hits_between(2, 40);
    let b = Server::start(vec![Reply::json(200, r#"{"name":"x"}"#)]);
    let until = r#".name | ascii_downcase == "x""#;
    let out =
        poll().args(["--until", until, "-i", "100ms", "--timeout", "1s", &a.url("/a"), &b.url("/b")]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let last = err.lines().last().unwrap();
    let named = format!("1 of 2 URLs still pending: {} (last: --until failed on the body: cannot use", a.url("/a"));
    assert!(last.contains(&named), "{last}");
    assert!(!last.contains("200 pending"), "{last}");
}

// Statuses as conditions.

#[test]
fn done_on_waits_until_a_resource_is_deleted() {
    let gone = r#"{"error":"not found"}"#;
    let server = Server::start(vec![
        Reply::json(200, r#"{"status":"deleting"}"#),
        Reply::json(200, r#"{"status":"deleting"}"#),
        Reply::json(404, gone),
    ]);
    let out = poll()
        .args(["--done-on", "404,410", "--fail-when", r#".status=="delete_failed""#, "-i", "50ms", "-v"])
        .arg(server.url("/envs/7"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, gone.as_bytes());
    assert_eq!(server.hits(), 3);
    let err = stderr(&out);
    assert!(err.contains("attempt 1: 200 pending in "), "a 2xx is not yet with --done-on: {err}");
    assert!(err.contains("attempt 3: 404 in ") && err.contains("-> done (--done-on)"), "{err}");

    // --fail-when still judges the 2xx bodies.
    let server = Server::start(vec![Reply::json(200, r#"{"status":"delete_failed"}"#)]);
    let out = poll()
        .args(["--done-on", "404", "--fail-when", r#".status=="delete_failed""#, &server.url("/envs/7")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"status":"delete_failed"}"#);
}

#[test]
fn with_done_on_a_2xx_is_done_by_until_and_the_log_says_not_met_without_it() {
    let server = Server::start(vec![Reply::json(200, r#"{"ready":false}"#), Reply::json(200, r#"{"ready":true}"#)]);
    let out = poll().args(["--done-on", "404", "--until", ".ready", "-i", "10ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"ready":true}"#);
    assert_eq!(server.hits(), 2);

    let server = Server::start(vec![Reply::json(200, r#"{"ready":true}"#), Reply::status(404)]);
    let out =
        poll().args(["--done-on", "404", "-i", "10ms", "--log-format", "json", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    assert_eq!((events[0]["condition"].as_str(), events[0]["action"].as_str()), (Some("not_met"), Some("poll")));
    assert_eq!((events[1]["status"].as_u64(), events[1]["action"].as_str()), (Some(404), Some("done")));
}

#[test]
fn done_on_ends_with_an_empty_body_and_print_reads_the_status() {
    let server = Server::start(vec![Reply::json(200, "{}"), Reply::status(404)]);
    let out = poll().args(["--done-on", "404", "-i", "10ms", "--print", "$status", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"404\n");
}

/// A status list's ending whose body is not JSON (nginx's HTML 404 page): `--print` reads it as
/// null, so `$status` prints, and `--fail-on` still exits 4 with that body on stdout.
#[test]
fn print_reads_a_listed_statuss_body_that_is_not_json_as_null() {
    let page = "<html><body><h1>404 Not Found</h1></body></html>";
    let server = Server::start(vec![Reply::text(404, page).header("Content-Type", "text/html")]);
    let out = poll().args(["--done-on", "404", "--print", "$status", &server.url("/x")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"404\n");
    let server = Server::start(vec![Reply::text(404, page).header("Content-Type", "text/html")]);
    let out = poll().args(["--fail-on", "404", "--print", "[$status, .]", &server.url("/x")]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(out.stdout, b"[404,null]\n");
}

#[test]
fn pending_on_waits_until_it_exists_spending_no_retries_and_server_advice_wins() {
    let published = r#"{"version":"1.2.3"}"#;
    let server = Server::start(vec![
        Reply::json(404, r#"{"message":"Not Found"}"#),
        Reply::json(404, r#"{"message":"Not Found"}"#).header("Retry-After", "1"),
        Reply::json(404, r#"{"message":"Not Found"}"#),
        Reply::json(200, published),
    ]);
    let out = poll()
        .args(["--pending-on", "404", "--retries", "0", "-i", "100ms", "-v", &server.url("/pkg/1.2.3")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, published.as_bytes());
    assert_eq!(server.hits(), 4);
    let requests = server.requests();
    let gap = |i: usize| requests[i + 1].at.duration_since(requests[i].at);
    assert!(gap(0) >= Duration::from_millis(100), "{:?}", gap(0));
    assert!(gap(1) >= Duration::from_secs(1), "Retry-After wins over --interval: {:?}", gap(1));
    let err = stderr(&out);
    assert!(err.contains("attempt 1: 404 in ") && err.contains("-> poll again in 100ms (--pending-on)"), "{err}");
    assert!(err.contains("-> poll again in 1.0s (Retry-After)"), "{err}");
}

#[test]
fn a_pending_on_status_resets_the_retries_count() {
    // --retries 1: one 503 is tolerated, two in a row are not. Each 404 between them starts the count again.
    let replies = vec![
        Reply::status(503),
        Reply::status(404),
        Reply::status(503),
        Reply::status(404),
        Reply::status(503),
        Reply::status(404),
        Reply::json(200, r#"{"ok":true}"#),
    ];
    let server = Server::start(replies);
    let out = poll()
        .args(["--pending-on", "404", "--retries", "1", "--backoff", "10ms", "--jitter", "none", "-i", "10ms"])
        .arg(server.url("/"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"ok":true}"#);
    assert_eq!(server.hits(), 7);

    // Without the 404s between them, the second 503 in a row spends the budget.
    let server = Server::start(vec![Reply::status(503), Reply::status(503)]);
    let out =
        poll().args(["--pending-on", "404", "--retries", "1", "--backoff", "10ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(server.hits(), 2);
}

#[test]
fn stable_counts_done_on_as_met_and_pending_on_as_unmet() {
    // 404 met, 409 breaks the streak, then two 404s in a row: done on the fourth reply.
    let replies = vec![
        Reply::json(404, r#"{"n":1}"#),
        Reply::json(409, r#"{"n":2}"#),
        Reply::json(404, r#"{"n":3}"#),
        Reply::json(404, r#"{"n":4}"#),
    ];
    let server = Server::start(replies);
    let out = poll()
        .args(["--stable", "2", "--done-on", "404", "--pending-on", "409", "-i", "100ms", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"n":4}"#);
    assert_eq!(server.hits(), 4);
    let requests = server.requests();
    for pair in requests.windows(2) {
        let gap = pair[1].at.duration_since(pair[0].at);
        assert!(gap >= Duration::from_millis(100), "polled --interval apart: {gap:?}");
    }

    // A 2xx the condition holds on and a --done-on status count in one streak.
    let server = Server::start(vec![Reply::json(200, r#"{"ready":true}"#), Reply::json(410, r#"{"n":2}"#)]);
    let out = poll()
        .args(["--stable", "2", "--done-on", "410", "--until", ".ready", "-i", "10ms", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"n":2}"#);
    assert_eq!(server.hits(), 2);
}

#[test]
fn fail_on_exits_4_with_that_replys_body() {
    let expired = r#"{"error":"job expired"}"#;
    let server = Server::start(vec![Reply::json(200, r#"{"status":"running"}"#), Reply::json(410, expired)]);
    let out = poll()
        .args(["--until", r#".status=="done""#, "--fail-on", "410", "-i", "10ms", &server.url("/jobs/1")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(out.stdout, expired.as_bytes());
    let url = server.url("/jobs/1");
    assert_eq!(stderr(&out), format!("poll: error: HTTP 410 is in --fail-on [{url}]\n"));
}

#[test]
fn head_checks_existence_with_an_empty_body() {
    let server = Server::start(vec![
        Reply::status(404),
        Reply::status(200).header("Docker-Content-Digest", "sha256:abc").header("Content-Length", "512"),
    ]);
    let out = poll()
        .args(["-I", "--pending-on", "404", "-i", "10ms", "--print", r#"$headers["docker-content-digest"]"#])
        .arg(server.url("/v2/app/manifests/1.0"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"sha256:abc\n");
    let methods: Vec<String> = server.requests().into_iter().map(|r| r.method).collect();
    assert_eq!(methods, ["HEAD", "HEAD"]);
}

#[test]
fn a_header_is_a_condition_and_repeated_fields_are_joined() {
    let server = Server::start(vec![
        Reply::status(202).header("x-ms-copy-status", "pending"),
        Reply::status(200).header("X-Ms-Copy-Status", "success").header("Link", "<a>").header("Link", "<b>"),
    ]);
    let out = poll()
        .args(["--until", r#"$headers["x-ms-copy-status"] == "success""#, "-i", "10ms"])
        .args(["--print", r#"$headers.link, $status, ."#, &server.url("/blob")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // An empty body is null to the filters, not a "not JSON" failure.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "<a>, <b>\n200\nnull\n");
    assert_eq!(server.hits(), 2);
}

#[test]
fn a_listed_status_is_a_success_for_the_breaker() {
    let folder = Folder::new("breaker");
    let state = folder.path("state.json");
    let state = state.to_str().unwrap();
    // Eight 503s would open the breaker (5 outcomes, under 60% success): listed, they are answers.
    let mut replies = vec![Reply::status(503); 8];
    replies.push(Reply::json(200, r#"{"up":true}"#));
    let server = Server::start(replies);
    let out = poll()
        .args(["--pending-on", "503", "--state", state, "--breaker-window", "5", "-i", "10ms", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 9);
}

#[test]
fn the_status_lists_judge_the_status_polls_of_a_submit_and_every_url() {
    let server = Server::routes(vec![
        ("/things/1", vec![Reply::status(202).header("Location", "/ops/1")]),
        ("/ops/1", vec![Reply::json(200, r#"{"status":"deleting"}"#), Reply::status(404)]),
    ]);
    let out = poll()
        .args(["--submit", "-X", "DELETE", "--done-on", "404", "-i", "10ms", &server.url("/things/1")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 3);

    // The submit's own reply is not judged by them.
    let server = Server::start(vec![Reply::status(404)]);
    let out = poll().args(["--submit", "-d", "{}", "--done-on", "404", &server.url("/things")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));

    let a = Server::start(vec![Reply::status(200), Reply::status(404)]);
    let b = Server::start(vec![Reply::status(404)]);
    let out = poll().args(["--done-on", "404", "-i", "10ms", &a.url("/a"), &b.url("/b")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().all(|line| line.contains(r#""exit_code":0"#)), "{lines:?}");
}

#[test]
fn the_json_log_says_status_and_action_for_a_listed_status() {
    let server = Server::start(vec![Reply::status(404), Reply::status(410)]);
    let out = poll()
        .args(["--pending-on", "404", "--done-on", "410", "-i", "10ms", "--log-format", "json", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    assert_eq!((events[0]["status"].as_u64(), events[0]["action"].as_str()), (Some(404), Some("poll")));
    assert_eq!(events[0]["wait_reason"], "pending_on");
    assert_eq!((events[1]["status"].as_u64(), events[1]["action"].as_str()), (Some(410), Some("done")));
    assert_eq!(events[2]["exit_code"], 0);
}

#[test]
fn bad_status_lists_and_a_head_with_a_body_are_usage_errors_and_nothing_is_sent() {
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    let url = server.url("/");
    for (args, says) in [
        (vec!["--done-on", "99"], "`99` is not an HTTP status code (100-599)"),
        (vec!["--pending-on", "600"], "`600` is not an HTTP status code (100-599)"),
        (vec!["--fail-on", "gone"], "`gone` is not an HTTP status code (100-599)"),
        (vec!["--done-on", "404", "--pending-on", "410,404"], "--done-on: 404 is in --pending-on too"),
        (vec!["--fail-on", "500", "--retry-on", "500"], "--fail-on: 500 is in --retry-on too"),
        (vec!["-I", "-d", "x"], "'--head' cannot be used with '--data <DATA>'"),
        (vec!["-I", "--json", "{}"], "'--head' cannot be used with '--json <JSON>'"),
    ] {
        let out = poll().args(&args).arg(&url).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

// jq as its users write it.

#[test]
fn env_arg_and_argjson_are_bound_in_every_filter() {
    let body = r#"{"head_sha":"abc123","run":7,"status":"completed"}"#;
    let server = Server::start(vec![Reply::json(200, r#"{"head_sha":"old","run":6}"#), Reply::json(200, body)]);
    let out = poll()
        .env("POLL_TEST_BRANCH", "main")
        .args(["--arg", "sha", "abc123", "--argjson", "want", r#"{"run":7}"#, "-i", "10ms"])
        .args(["--until", ".head_sha == $sha and .run == $want.run"])
        .args(["--print", r#"[$ENV.POLL_TEST_BRANCH, env.POLL_TEST_BRANCH, $ARGS.named.sha] | join(" ")"#])
        .arg(server.url("/runs"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"main main abc123\n");
    assert_eq!(server.hits(), 2);
}

#[test]
fn arg_and_argjson_values_may_start_with_a_hyphen_as_in_jq() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    let out = poll()
        .args(["--arg", "x", "-foo", "--argjson", "n", "-1", "--arg", "dashes", "--until"])
        .args(["--until", r#"$x == "-foo" and $n == -1"#, "--print", "$x, $n, $dashes", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "-foo\n-1\n--until\n");
}

#[test]
fn bad_args_are_usage_errors_and_nothing_is_sent() {
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    let url = server.url("/");
    for (args, says) in [
        (vec!["--argjson", "n", "{nope"], "--argjson: `n`: the value is not valid JSON"),
        (vec!["--arg", "a-b", "1"], "--arg: `a-b` is not a jq variable name"),
        (vec!["--arg", "x", "1", "--arg", "x", "2"], "--arg: `x` is already bound"),
        (vec!["--arg", "status", "1"], "--arg: `status` is already bound"),
        (vec!["--until", "$nope"], "undefined variable `$nope`"),
    ] {
        poll().args(&args).arg(&url).assert().code(2).stderr(predicates::str::contains(says));
    }
}

#[test]
fn a_jq_error_is_warned_once_and_named_by_the_deadline() {
    // A different value each time: still one warning.
    let replies = (0..30).map(|n| Reply::json(200, &format!(r#"{{"name":{n}}}"#))).collect();
    let server = Server::start(replies).expect_hits_between(2, 30);
    let out = poll()
        .args(["--until", r#".name | ascii_downcase == "x""#, "-i", "100ms", "--timeout", "1s", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("poll: warning: jq error").count(), 1, "{err}");
    let last = err.lines().last().unwrap();
    assert!(last.contains("; last: --until failed on the body: cannot use"), "{last}");
    assert!(!last.contains("condition not met yet"), "{last}");
}

/// A `--show` filter that fails on the body is warned of, but it is no reason the condition is
/// not met: the deadline names the condition's last word, and the log calls it not met.
#[test]
fn a_show_error_is_a_warning_not_the_runs_reason() {
    let server = Server::start(vec![Reply::json(200, r#"{"done":false,"n":"x"}"#)]).expect_hits(3);
    let args = ["--show", ".n | tonumber", "--until", ".done", "-i", "400ms"];
    let out = poll().args(args).args(["--timeout", "1s", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].starts_with("poll: warning: jq error in `.n | tonumber`: "), "{err}");
    let prefix = "poll: error: deadline: the next attempt would start in 400ms (interval) but only ";
    let suffix =
        format!(" is left; last: condition not met yet (raise --timeout to wait longer) [{}]", server.url("/"));
    assert!(lines[1].starts_with(prefix) && lines[1].ends_with(&suffix), "{err}");

    let server = Server::start(vec![Reply::json(200, r#"{"done":false,"n":"x"}"#)]).expect_hits(1);
    let out =
        poll().args(args).args(["--timeout", "300ms", "--log-format", "json", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let events = events(&out);
    assert_eq!(events[0]["condition"], "not_met", "{}", events[0]);
    assert!(
        events[1]["message"].as_str().unwrap_or_default().contains("; last: condition not met yet ("),
        "{}",
        events[1]
    );
}

// `-- CMD`.
// `-- CMD`.

#[cfg(unix)]
/// With `PATH` unset a bare command name is looked for where execvp and `env` look then.
#[cfg(unix)]
#[test]
fn a_bare_command_is_found_without_path_as_execvp_finds_it() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    let out = poll().env_remove("PATH").args([&server.url("/"), "--", "echo", "found"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"found\n");
}

/// 304 in a status list could never fire (a 304 is judged on the body kept): refused, nothing sent.
#[test]
fn a_304_in_a_status_list_is_a_usage_error() {
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    for flag in ["--done-on", "--pending-on", "--fail-on", "--retry-on"] {
        let out = poll().args([flag, "404,304", &server.url("/")]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr(&out));
        assert!(stderr(&out).contains("304 cannot be listed"), "{}", stderr(&out));
    }
}

#[test]
fn the_command_runs_in_polls_place_after_exit_0() {
    let server = Server::start(vec![Reply::json(200, r#"{"status":"pending"}"#), Reply::json(200, r#"{"ok":1}"#)]);
    let folder = Folder::new("exec");
    let body = folder.path("body.json");
    let child = poll_std()
        .args(["--until", ".ok", "-i", "10ms", "-o", body.to_str().unwrap(), &server.url("/")])
        .args(["--", "sh", "-c", "echo \"pid $$ args $0 $1\"; exit 7", "first", "second"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    // Its exit status and its pid are poll's; no body on stdout, -o written first.
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("pid {pid} args first second\n"));
    assert_eq!(std::fs::read(&body).unwrap(), br#"{"ok":1}"#);
    assert_eq!(stderr(&out), "");
}

#[cfg(unix)]
#[test]
fn the_command_does_not_run_on_any_other_ending() {
    let folder = Folder::new("noexec");
    let marker = folder.path("ran");
    let script = format!("touch {}", marker.display());
    for (replies, args, code) in [
        (vec![Reply::json(200, r#"{"status":"failed"}"#)], vec!["--fail-when", r#".status=="failed""#], 4),
        (vec![Reply::status(404)], vec![], 3),
        (vec![Reply::json(200, r#"{"status":"pending"}"#)], vec!["--until", ".ok", "--timeout", "300ms"], 1),
    ] {
        let server = Server::start(replies).expect_hits_between(1, 100);
        let out = poll().args(&args).args([&server.url("/"), "--", "sh", "-c", &script]).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
        assert!(!marker.exists(), "{args:?}: the command ran");
    }
}

#[test]
fn a_command_not_found_is_127_and_one_that_cannot_run_126_before_anything_is_sent() {
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    let out = poll().args([&server.url("/"), "--", "poll-test-no-such-command", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(stderr(&out), "poll: error: `poll-test-no-such-command` not found (the command after --)\n");
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let out = poll().args([&server.url("/"), "--", manifest]).output().unwrap();
    assert_eq!(out.status.code(), Some(126));
    assert_eq!(stderr(&out), format!("poll: error: cannot run `{manifest}`: it is not an executable file\n"));
}

/// `dir` put first on `PATH`, for a command found there.
#[cfg(unix)]
fn path_with(dir: &std::path::Path) -> std::ffi::OsString {
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    std::env::join_paths(dirs).unwrap()
}

/// Writes `bytes` to `path` with `mode`.
#[cfg(unix)]
fn file_with_mode(path: &std::path::Path, bytes: &[u8], mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(unix)]
#[test]
fn a_bare_name_on_path_that_is_no_executable_file_is_126_as_in_shells() {
    let folder = Folder::new("not-executable");
    file_with_mode(&folder.path("poll-test-plain"), b"echo hi\n", 0o644);
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    let out =
        poll().env("PATH", path_with(&folder.0)).args([&server.url("/"), "--", "poll-test-plain"]).output().unwrap();
    assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
    let found = folder.path("poll-test-plain");
    let line = format!("poll: error: cannot run `poll-test-plain`: {} is not an executable file\n", found.display());
    assert_eq!(stderr(&out), line);
}

#[cfg(unix)]
#[test]
fn an_executable_file_that_exec_refuses_is_126_with_one_line_and_no_shell_runs_it() {
    let folder = Folder::new("enoexec");
    let marker = folder.path("ran");
    file_with_mode(&folder.path("poll-test-garbage"), b"\x00\x01\x02garbage\xff\n", 0o755);
    // Without a #! line only a shell would run it; -- CMD runs none.
    file_with_mode(&folder.path("poll-test-script"), format!("touch {}\n", marker.display()).as_bytes(), 0o755);
    for name in ["poll-test-garbage", "poll-test-script"] {
        let server = Server::start(vec![Reply::status(200)]);
        let out =
            poll().env("PATH", path_with(&folder.0)).args([&server.url("/"), "--", name, "an-arg"]).output().unwrap();
        assert_eq!(out.status.code(), Some(126), "{name}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.starts_with(&format!("poll: error: cannot run `{name}`: ")), "{name}: {err}");
        assert!(err.contains("exec format error"), "{name}: {err}");
        assert_eq!(out.stdout, b"", "{name}");
        assert!(!marker.exists(), "{name}: a shell ran it");
    }
}

/// A script whose `#!` interpreter is not there: one line that says so, exit 126 as bash's
/// "bad interpreter", before anything is sent as for any command that cannot be run.
#[cfg(unix)]
#[test]
fn a_script_whose_interpreter_is_missing_says_so() {
    let folder = Folder::new("interpreter");
    let script = folder.path("x.sh");
    file_with_mode(&script, b"#!/nonexistent/poll-test-shell -e\necho hi\n", 0o755);
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    let out = poll().current_dir(&folder.0).args([&server.url("/"), "--", "./x.sh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
    let line =
        "poll: error: cannot run `./x.sh`: its interpreter `/nonexistent/poll-test-shell` (its #! line) is not there\n";
    assert_eq!(stderr(&out), line);
    assert_eq!(out.stdout, b"");
}

/// A command found at the start but gone by the time the run is done: the JSON log's final
/// object says the exit the process has, 127, and stdout gets no body.
#[cfg(unix)]
#[test]
fn a_command_gone_before_the_exec_is_127_in_the_log_as_in_the_exit() {
    let folder = Folder::new("gone");
    let command = folder.path("poll-test-gone");
    file_with_mode(&command, b"#!/bin/sh\necho ran\n", 0o755);
    let server = Server::start(vec![Reply::json(200, r#"{"ok":false}"#), Reply::json(200, r#"{"ok":true}"#)]);
    let child = poll_std()
        .args(["--until", ".ok", "-i", "500ms", "--log-format", "json", &server.url("/")])
        .args(["--", command.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(server.wait_hits(1, Duration::from_secs(10)));
    std::fs::remove_file(&command).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
    assert_eq!(out.stdout, b"");
    let events = events(&out);
    assert_eq!(events.len(), 3, "two attempts and the final object, nothing after it: {}", stderr(&out));
    let last = &events[2];
    assert_eq!(
        (last["event"].as_str(), last["exit_code"].as_u64(), last["reason"].as_str()),
        (Some("done"), Some(127), Some("not_found")),
        "{last}"
    );
    let message = format!("`{}` not found (the command after --)", command.display());
    assert_eq!(last["message"], message.as_str(), "{last}");
}

#[test]
fn help_and_the_man_page_show_a_pending_on_and_a_command_example() {
    let out = poll().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("Usage: poll [OPTIONS] <URL>... [-- CMD [ARGS]...]"), "{help}");
    assert!(help.contains("    poll --pending-on 404 "), "{help}");
    assert!(help.contains(" http://db:8080/healthz -- /app/start --port 80"), "{help}");
    let man = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/man/poll.1")).unwrap();
    assert!(man.contains(".SH SYNOPSIS\n\\fBpoll\\fR [OPTIONS] <URL>... [\\-\\- CMD [ARGS]...]\n"), "{man}");
    assert!(man.contains("poll \\-\\-pending\\-on 404 "), "{man}");
}

/// `--pending-when` tells one 404 from another, as an AWS waiter's error acceptor does: Azure's
/// `ResourceNotFound` is not yet (polled at --interval, no --retries spent, however many), its
/// `ResourceGroupNotFound` fails at once (a 404 is permanent), and DynamoDB's
/// `ResourceNotFoundException` 400 is not yet too; an HTML body reads as null.
#[test]
fn pending_when_tells_one_not_found_from_another() {
    let azure = |code: &str| format!(r#"{{"error":{{"code":"{code}","message":"..."}}}}"#);
    let not_yet = azure("ResourceNotFound");
    let server = Server::start(vec![
        Reply::json(404, &not_yet),
        Reply::json(404, &not_yet),
        Reply::json(404, &not_yet),
        Reply::json(200, r#"{"properties":{"provisioningState":"Succeeded"}}"#),
    ]);
    let filter = r#".error.code == "ResourceNotFound" or .__type == "ResourceNotFoundException""#;
    let args = ["--pending-when", filter, "--retries", "0", "-i", "100ms", "-v", &server.url("/vm")];
    let out = poll().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 4);
    assert!(stderr(&out).contains("attempt 1: 404 pending (--pending-when) in"), "{}", stderr(&out));
    let gap = server.requests()[1].at.duration_since(server.requests()[0].at);
    assert!(gap >= Duration::from_millis(90), "{gap:?}");

    let server = Server::start(vec![Reply::json(404, &azure("ResourceGroupNotFound"))]).expect_hits(1);
    let out = poll().args(["--pending-when", filter, &server.url("/vm")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));

    let dynamo = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException"}"#;
    let dynamo_filter = r##".__type | endswith("#ResourceNotFoundException")"##;
    let server =
        Server::start(vec![Reply::json(400, dynamo), Reply::json(200, r#"{"Table":{"TableStatus":"ACTIVE"}}"#)]);
    let out = poll()
        .args(["--pending-when", dynamo_filter, "--retries", "0", "-i", "50ms", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let html = Reply::text(404, "<h1>Not Found</h1>").header("Content-Type", "text/html");
    let server = Server::start(vec![html, Reply::json(200, "{}")]);
    let out = poll()
        .args(["--pending-when", "$status == 404 and . == null", "-i", "50ms", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// `--stall`: what the progress line shows, unchanged for that long while not done, ends the run
/// with exit 1 ("stalled"), naming the value and for how long; a value that moves never stalls.
#[test]
fn a_wait_whose_shown_value_no_longer_moves_stalls_with_1() {
    let server = Server::start(vec![Reply::json(200, r#"{"status":"running","progress":40}"#)]);
    let started = Instant::now();
    let args = ["--until", ".status==\"done\"", "--show", ".progress", "--stall", "500ms", "-i", "100ms"];
    let out = poll().args(args).args(["--log-format", "json", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(started.elapsed() >= Duration::from_millis(500), "{:?}", started.elapsed());
    let last: serde_json::Value = serde_json::from_str(stderr(&out).lines().last().unwrap_or_default()).unwrap();
    assert_eq!(last["reason"], "stalled");
    let message = last["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("stalled: .progress has been 40 for "), "{message}");

    let moving: Vec<Reply> =
        (0..8).map(|n| Reply::json(200, &format!(r#"{{"status":"running","progress":{n}}}"#))).collect();
    let server = Server::start(moving.into_iter().chain([Reply::json(200, r#"{"status":"done"}"#)]).collect());
    let out = poll().args(args).arg(server.url("/")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Without --show the body is what must move.
    let server = Server::start(vec![Reply::json(200, r#"{"status":"running"}"#)]);
    let out = poll()
        .args(["--until", ".status==\"done\"", "--stall", "300ms", "-i", "50ms", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("stalled: the body has been the same for"), "{}", stderr(&out));
}

/// Failures neither reset nor advance the stall's clock: a long outage between two equal values
/// is not counted as time the value stood still.
#[test]
fn failures_neither_reset_nor_advance_a_stall() {
    let same = || Reply::json(200, r#"{"status":"running","progress":40}"#);
    let script = [vec![same()], vec![Reply::status(503); 8], vec![same()]].concat();
    let server = Server::start(script);
    let started = Instant::now();
    let args = ["--until", ".status==\"done\"", "--show", ".progress", "--stall", "600ms", "-i", "100ms"];
    let backoff = ["--backoff", "100ms", "--backoff-max", "100ms", "--jitter", "none", "--retries", "20"];
    let out = poll().args(args).args(backoff).arg(server.url("/")).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // 800 ms of failures, then 600 ms of the same value: not the 900 ms a clock that ran on would give.
    assert!(started.elapsed() >= Duration::from_millis(1350), "{:?}", started.elapsed());
    assert!(stderr(&out).contains("stalled: .progress has been 40 for"), "{}", stderr(&out));
}
