//! End-to-end tests of `--submit` (send the request once, then poll the
//! operation it names), idempotency keys and `--print`, against the scripted
//! loopback server.

use crate::support;

use std::process::{Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::server::{Recorded, Reply, Server};
use support::{poll, poll_std};

const RUNNING: &str = r#"{"status":"Running"}"#;
const SUCCEEDED: &str = r#"{"status":"Succeeded","id":"j7"}"#;

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// (method, path) of every request the server saw.
fn sent(server: &Server) -> Vec<(String, String)> {
    server.requests().into_iter().map(|r| (r.method, r.path)).collect()
}

fn pair(method: &str, path: &str) -> (String, String) {
    (method.to_string(), path.to_string())
}

/// A server with a submit endpoint at `/jobs` and a status endpoint at `/ops/1`.
fn job_api(submit: Vec<Reply>, status: Vec<Reply>) -> Server {
    Server::routes(vec![("/jobs", submit), ("/ops/1", status)])
}

/// `job_api`, with exactly `submits` requests to `/jobs` and `polls` to `/ops/1` expected.
fn job_api_hit(submit: Vec<Reply>, status: Vec<Reply>, submits: usize, polls: usize) -> Server {
    job_api(submit, status).expect_route_hits("/jobs", submits).expect_route_hits("/ops/1", polls)
}

fn accepted_at(location: &str) -> Reply {
    Reply::status(202).header("Operation-Location", location)
}

fn parse_events(stderr: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

/// 8-4-4-4-12 lowercase hex, version nibble 4, variant 8, 9, a or b.
fn is_uuid_v4(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    let lengths: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    lengths == [8, 4, 4, 4, 12]
        && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        && groups[2].starts_with('4')
        && groups[3].starts_with(['8', '9', 'a', 'b'])
}

// Where the status URL is.

#[test]
fn an_azure_submit_is_one_post_then_gets_of_its_operation_location_after_its_retry_after() {
    let server = job_api(
        vec![accepted_at("/ops/1").header("Retry-After", "1")],
        vec![Reply::json(200, RUNNING), Reply::json(200, SUCCEEDED)],
    );
    let started = Instant::now();
    let out = poll()
        .args(["--submit", "--json", r#"{"name":"build"}"#, "-i", "100ms", &server.url("/jobs")])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
    assert_eq!(stderr(&out), "", "silent on success off a terminal");
    assert_eq!(sent(&server), [pair("POST", "/jobs"), pair("GET", "/ops/1"), pair("GET", "/ops/1")]);
    let requests = server.requests();
    assert_eq!(requests[0].body, br#"{"name":"build"}"#);
    assert_eq!(requests[0].header("content-type"), Some("application/json"));
    for get in &requests[1..] {
        assert_eq!(get.body, b"", "a status poll has no body");
        assert_eq!(get.header("content-type"), None, "nor a Content-Type");
        assert_eq!(get.header("content-length"), None);
    }
    let first_wait = requests[1].at.duration_since(requests[0].at);
    assert!(first_wait >= Duration::from_secs(1), "first status poll after the submit's Retry-After: {first_wait:?}");
    let interval = requests[2].at.duration_since(requests[1].at);
    assert!(interval >= Duration::from_millis(100), "{interval:?}");
    assert!(took < Duration::from_secs(20), "{took:?}");
}

#[test]
fn without_retry_after_the_first_status_poll_waits_for_the_interval() {
    let server = job_api(vec![accepted_at("/ops/1")], vec![Reply::json(200, SUCCEEDED)]);
    let out = poll().args(["--submit", "-d", "x", "-i", "400ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first_wait = requests[1].at.duration_since(requests[0].at);
    assert!(first_wait >= Duration::from_millis(400), "{first_wait:?}");
}

#[test]
fn a_submit_retry_after_shorter_than_the_interval_still_sets_the_first_wait() {
    // The submit's Retry-After is the wait before the first status poll, shorter than --interval or not.
    let server = job_api(vec![accepted_at("/ops/1").header("Retry-After", "0")], vec![Reply::json(200, SUCCEEDED)]);
    let started = Instant::now();
    let out = poll().args(["--submit", "-d", "x", "-i", "30s", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 2);
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
}

#[test]
fn a_submit_reply_with_no_quota_left_delays_the_first_status_poll_until_the_reset() {
    let exhausted = accepted_at("/ops/1").header("X-RateLimit-Remaining", "0").header("X-RateLimit-Reset", "1");
    let server = job_api(vec![exhausted], vec![Reply::json(200, SUCCEEDED)]);
    let out = poll().args(["--submit", "-d", "x", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first_wait = requests[1].at.duration_since(requests[0].at);
    assert!(first_wait >= Duration::from_millis(1000), "{first_wait:?}");
}

#[test]
fn every_header_form_on_a_202_or_201_names_the_status_url() {
    let cases = [
        (202, "Operation-Location"),
        (202, "Azure-AsyncOperation"),
        (202, "Location"),
        (201, "Location"),
        (201, "Operation-Location"),
        (200, "azure-asyncoperation"),
    ];
    for (code, header) in cases {
        let server = job_api(vec![Reply::status(code).header(header, "/ops/1")], vec![Reply::json(200, SUCCEEDED)]);
        let out = poll().args(["--submit", "-d", "x", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{code} {header}: {}", stderr(&out));
        assert_eq!(out.stdout, SUCCEEDED.as_bytes(), "{code} {header}");
        assert_eq!(sent(&server), [pair("POST", "/jobs"), pair("GET", "/ops/1")], "{code} {header}");
    }
}

#[test]
fn a_relative_status_url_is_joined_by_rfc_3986_and_no_dot_segment_reaches_the_server() {
    let server = Server::routes(vec![
        ("/v1/jobs/new", vec![accepted_at("../ops/1")]),
        ("/v1/ops/1", vec![Reply::json(200, RUNNING).header("Operation-Location", "./2/../3")]),
        ("/v1/ops/3", vec![Reply::json(200, SUCCEEDED)]),
    ]);
    let out = poll().args(["--submit", "-d", "x", "-i", "10ms", &server.url("/v1/jobs/new")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
    assert_eq!(sent(&server), [pair("POST", "/v1/jobs/new"), pair("GET", "/v1/ops/1"), pair("GET", "/v1/ops/3")]);
}

#[test]
fn operation_location_wins_over_azure_asyncoperation_which_wins_over_location() {
    let routes = |submit: Reply| {
        Server::routes(vec![
            ("/jobs", vec![submit]),
            ("/op", vec![Reply::json(200, r#"{"status":"Succeeded","from":"op"}"#)]),
            ("/azure", vec![Reply::json(200, r#"{"status":"Succeeded","from":"azure"}"#)]),
            ("/location", vec![Reply::json(200, r#"{"status":"Succeeded","from":"location"}"#)]),
        ])
        .expect_hits(2)
    };
    let all = Reply::status(202)
        .header("Location", "/location")
        .header("Azure-AsyncOperation", "/azure")
        .header("Operation-Location", "/op");
    let two = Reply::status(202).header("Location", "/location").header("Azure-AsyncOperation", "/azure");
    for (submit, want) in [(all, "/op"), (two, "/azure")] {
        let server = routes(submit);
        let out = poll().args(["--submit", "-d", "x", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{want}: {}", stderr(&out));
        assert_eq!(sent(&server), [pair("POST", "/jobs"), pair("GET", want)]);
    }
}

#[test]
fn relative_status_urls_resolve_against_the_submit_url() {
    for (location, want) in [("ops/1", "/api/ops/1"), ("/ops/1", "/ops/1"), ("?op=1", "/api/jobs?op=1")] {
        let server = Server::routes(vec![
            ("/api/jobs", vec![accepted_at(location), Reply::json(200, SUCCEEDED)]),
            ("/api/ops/1", vec![Reply::json(200, SUCCEEDED)]),
            ("/ops/1", vec![Reply::json(200, SUCCEEDED)]),
        ])
        .expect_hits(2);
        let out = poll().args(["--submit", "-d", "x", "-i", "10ms", &server.url("/api/jobs")]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{location}: {}", stderr(&out));
        assert_eq!(sent(&server), [pair("POST", "/api/jobs"), pair("GET", want)], "{location}");
    }
    // Absolute: another server altogether.
    let status = Server::start(vec![Reply::json(200, SUCCEEDED)]);
    let submit = Server::start(vec![accepted_at(&status.url("/elsewhere/1"))]);
    let out = poll().args(["--submit", "-d", "x", "-i", "10ms", &submit.url("/api/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(sent(&submit), [pair("POST", "/api/jobs")]);
    assert_eq!(sent(&status), [pair("GET", "/elsewhere/1")]);
}

#[test]
fn a_header_that_names_no_url_is_passed_over_for_the_next_and_for_status_url() {
    let cases: [(Reply, &[&str]); 3] = [
        (Reply::status(202).header("Operation-Location", "").header("Location", "/ops/1"), &[]),
        (
            Reply::status(202).header("Operation-Location", "ftp://h/ops/2").header("Azure-AsyncOperation", "/ops/1"),
            &[],
        ),
        (Reply::json(201, r#"{"id":"1"}"#).header("Location", " "), &["--status-url", r#""/ops/\(.id)""#]),
    ];
    for (submit, flags) in cases {
        let server = job_api(vec![submit.clone()], vec![Reply::json(200, SUCCEEDED)]);
        let out =
            poll().args(["--submit", "-d", "x", "-i", "10ms"]).args(flags).arg(server.url("/jobs")).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{submit:?}: {}", stderr(&out));
        assert_eq!(sent(&server), [pair("POST", "/jobs"), pair("GET", "/ops/1")], "{submit:?}");
    }
}

#[test]
fn a_status_reply_with_a_new_operation_location_moves_the_polling_there() {
    for header in ["Operation-Location", "Azure-AsyncOperation"] {
        let server = Server::routes(vec![
            ("/jobs", vec![accepted_at("/ops/1")]),
            ("/ops/1", vec![Reply::json(200, RUNNING).header(header, "/ops/2")]),
            ("/ops/2", vec![Reply::json(200, RUNNING), Reply::json(200, SUCCEEDED)]),
        ]);
        let out = poll().args(["--submit", "-d", "x", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{header}: {}", stderr(&out));
        assert_eq!(
            sent(&server),
            [pair("POST", "/jobs"), pair("GET", "/ops/1"), pair("GET", "/ops/2"), pair("GET", "/ops/2")],
            "{header}"
        );
    }
}

#[test]
fn status_url_filter_finds_the_operation_in_a_201_body_without_headers() {
    let server = Server::routes(vec![
        ("/jobs", vec![Reply::json(201, r#"{"id":"j7","status":"Running"}"#)]),
        ("/jobs/j7", vec![Reply::json(200, RUNNING), Reply::json(200, SUCCEEDED)]),
    ]);
    let out = poll()
        .args(["--submit", "--json", "{}", "--status-url", r#""/jobs/\(.id)""#, "-i", "10ms", &server.url("/jobs")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
    assert_eq!(sent(&server), [pair("POST", "/jobs"), pair("GET", "/jobs/j7"), pair("GET", "/jobs/j7")]);
}

// The built-in conditions.

#[test]
fn builtin_done_holds_for_each_success_word_in_any_letter_case() {
    for word in ["succeeded", "Succeeded", "SUCCESS", "Completed", "done", "DoNe"] {
        let done = format!(r#"{{"status":"{word}","result":1}}"#);
        let server = job_api(vec![accepted_at("/ops/1")], vec![Reply::json(200, RUNNING), Reply::json(200, &done)]);
        let out = poll().args(["--submit", "-d", "x", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{word}: {}", stderr(&out));
        assert_eq!(out.stdout, done.as_bytes(), "{word}");
        assert_eq!(server.hits(), 3, "{word}");
    }
}

#[test]
fn builtin_failure_holds_for_each_failure_word_in_any_letter_case() {
    for word in ["failed", "Failed", "FAILURE", "Canceled", "cancelled", "CANCELLED", "Error"] {
        let failed = format!(r#"{{"status":"{word}"}}"#);
        let server = job_api(vec![accepted_at("/ops/1")], vec![Reply::json(200, RUNNING), Reply::json(200, &failed)]);
        let out = poll().args(["--submit", "-d", "x", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
        assert_eq!(out.status.code(), Some(4), "{word}: {}", stderr(&out));
        assert_eq!(out.stdout, failed.as_bytes(), "{word}: the final body is printed on exit 4 too");
        assert_eq!(server.hits(), 3, "{word}");
        assert!(
            stderr(&out).contains("the operation failed (by --submit's built-in failure test)"),
            "{word}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn aip_151_operations_are_done_with_a_response_and_failed_with_an_error() {
    let pending = r#"{"name":"operations/1","done":false}"#;
    let cases = [
        (r#"{"name":"operations/1","done":true,"response":{"id":"j7"}}"#, 0),
        (r#"{"name":"operations/1","done":true}"#, 0),
        (r#"{"name":"operations/1","done":true,"error":{"code":3,"message":"bad"}}"#, 4),
    ];
    for (last, code) in cases {
        let server = job_api(vec![accepted_at("/ops/1")], vec![Reply::json(200, pending), Reply::json(200, last)]);
        let out = poll().args(["--submit", "-d", "x", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{last}: {}", stderr(&out));
        assert_eq!(out.stdout, last.as_bytes(), "{last}");
        assert_eq!(server.hits(), 3, "{last}: `done: false` is polled again");
    }
}

#[test]
fn a_202_from_the_status_url_is_never_done_even_when_its_body_says_succeeded() {
    let server = job_api(
        vec![accepted_at("/ops/1")],
        vec![Reply::json(202, r#"{"status":"Succeeded"}"#), Reply::json(200, SUCCEEDED)],
    );
    let out = poll().args(["--submit", "-d", "x", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
    assert_eq!(sent(&server), [pair("POST", "/jobs"), pair("GET", "/ops/1"), pair("GET", "/ops/1")]);
}

#[test]
fn arm_location_mode_is_done_on_the_first_non_202_2xx_without_json() {
    // ARM: the Location URL answers 202 (no body) until the operation ends, then the result.
    let server = Server::routes(vec![
        ("/jobs", vec![Reply::status(202).header("Location", "/ops/1").header("Retry-After", "0")]),
        ("/ops/1", vec![Reply::status(202), Reply::status(202).header("Retry-After", "1"), Reply::text(200, "result")]),
    ]);
    let out = poll().args(["--submit", "-X", "PUT", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"result");
    assert_eq!(
        sent(&server),
        [pair("PUT", "/jobs"), pair("GET", "/ops/1"), pair("GET", "/ops/1"), pair("GET", "/ops/1")]
    );
    let requests = server.requests();
    let advised = requests[3].at.duration_since(requests[2].at);
    assert!(advised >= Duration::from_secs(1), "a status 202's Retry-After sets the next poll: {advised:?}");

    // 204 No Content is such a 2xx too.
    let server = job_api(vec![Reply::status(202).header("Location", "/ops/1")], vec![Reply::status(204)]);
    let out = poll().args(["--submit", "-X", "DELETE", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"");
    assert_eq!(sent(&server), [pair("DELETE", "/jobs"), pair("GET", "/ops/1")]);
}

#[test]
fn a_job_at_a_location_that_says_running_is_polled_until_it_says_succeeded() {
    // The most common non-Azure shape: POST /jobs -> 202 + Location, then the job's own status.
    let server = job_api_hit(
        vec![Reply::status(202).header("Location", "/ops/1")],
        vec![Reply::json(200, r#"{"status":"running"}"#), Reply::json(200, r#"{"status":"succeeded","id":1}"#)],
        1,
        2,
    );
    let out = poll().args(["--submit", "-d", "{}", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"status":"succeeded","id":1}"#);
}

#[test]
fn a_github_run_completed_with_a_failing_conclusion_is_a_failure() {
    let run = r#"{"status":"completed","conclusion":"failure"}"#;
    let server = job_api_hit(
        vec![Reply::status(202).header("Location", "/ops/1")],
        vec![Reply::json(200, r#"{"status":"in_progress","conclusion":null}"#), Reply::json(200, run)],
        1,
        2,
    );
    let out = poll().args(["--submit", "-d", "{}", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(out.stdout, run.as_bytes());
}

#[test]
fn in_location_mode_the_resource_itself_is_done_whatever_its_status_field() {
    // ARM answers the Location URL with the resource once it exists: a VM whose
    // `status` is its power state, "Running"; its provisioningState is read first.
    let vm = r#"{"name":"vm-1","properties":{"provisioningState":"Succeeded"},"status":"Running"}"#;
    let server =
        job_api(vec![Reply::status(202).header("Location", "/ops/1")], vec![Reply::status(202), Reply::json(200, vm)]);
    let out = poll()
        .args(["--submit", "-X", "PUT", "-i", "10ms", "--print", ".name", &server.url("/jobs")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"vm-1\n");
    assert_eq!(server.hits(), 3);

    // The built-in failure test still comes first.
    let server = job_api(
        vec![Reply::status(202).header("Location", "/ops/1")],
        vec![Reply::json(200, r#"{"status":"Failed"}"#)],
    );
    let out = poll().args(["--submit", "-X", "PUT", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));

    // An Operation-Location monitor is no resource: a 200 without a verdict is still pending.
    let server = job_api_hit(
        vec![accepted_at("/ops/1")],
        vec![Reply::json(200, r#"{"percentComplete":50}"#), Reply::json(200, SUCCEEDED)],
        1,
        2,
    );
    let out = poll().args(["--submit", "-X", "POST", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
}

#[test]
fn until_replaces_only_the_builtin_done_test() {
    // `.status == "Succeeded"` no longer ends it: `.ready` does.
    let server = job_api(
        vec![accepted_at("/ops/1")],
        vec![Reply::json(200, r#"{"status":"Succeeded"}"#), Reply::json(200, r#"{"status":"Succeeded","ready":true}"#)],
    );
    let out =
        poll().args(["--submit", "-d", "x", "--until", ".ready", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"status":"Succeeded","ready":true}"#);
    assert_eq!(server.hits(), 3);

    // The built-in failure test still stands, at once.
    let server = job_api(
        vec![accepted_at("/ops/1")],
        vec![Reply::json(200, r#"{"status":"Failed"}"#), Reply::json(200, r#"{"ready":true}"#)],
    )
    .expect_hits(2);
    let out =
        poll().args(["--submit", "-d", "x", "--until", ".ready", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"status":"Failed"}"#);
    assert_eq!(server.hits(), 2);
}

#[test]
fn fail_when_replaces_only_the_builtin_failure_test() {
    let server = job_api(
        vec![accepted_at("/ops/1")],
        vec![Reply::json(200, r#"{"status":"Failed"}"#), Reply::json(200, r#"{"status":"Running","state":"broken"}"#)],
    );
    let args = ["--submit", "-d", "x", "--fail-when", r#".state=="broken""#, "-i", "10ms"];
    let out = poll().args(args).arg(server.url("/jobs")).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"status":"Running","state":"broken"}"#);
    assert_eq!(server.hits(), 3, "`Failed` is no failure once --fail-when is given");

    // The built-in done test still stands, and so does ARM's Location mode.
    let server = job_api(vec![accepted_at("/ops/1")], vec![Reply::json(200, RUNNING), Reply::json(200, SUCCEEDED)]);
    let out = poll().args(args).arg(server.url("/jobs")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 3);
    let server = job_api(vec![Reply::status(202).header("Location", "/ops/1")], vec![Reply::text(200, "ok")]);
    let out = poll().args(args).arg(server.url("/jobs")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"ok");
}

// A submit reply that names no status URL.

#[test]
fn a_submit_2xx_without_a_status_url_is_done_when_its_body_says_so() {
    let server = Server::start(vec![Reply::json(200, SUCCEEDED)]);
    let out = poll().args(["--submit", "-d", "x", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
    assert_eq!(sent(&server), [pair("POST", "/jobs")]);

    let server = Server::start(vec![Reply::json(201, r#"{"id":"j7","ready":true}"#)]);
    let out = poll().args(["--submit", "-d", "x", "--until", ".ready", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 1);

    let server = Server::start(vec![Reply::json(200, r#"{"status":"failed"}"#)]);
    let out = poll().args(["--submit", "-d", "x", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(server.hits(), 1);
}

#[test]
fn a_submit_2xx_without_a_status_url_that_is_not_done_exits_3_naming_status_url() {
    let cases = [
        Reply::json(202, RUNNING),
        Reply::status(202),
        Reply::json(200, RUNNING),
        // A --status-url filter with no string output names nothing either.
        Reply::json(201, r#"{"name":"j7"}"#),
    ];
    for reply in cases {
        let server = Server::start(vec![reply.clone(), Reply::json(200, SUCCEEDED)]).expect_hits(1);
        let out = poll()
            .args(["--submit", "-d", "x", "--status-url", r#".id | strings | "/jobs/\(.)""#, &server.url("/jobs")])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{reply:?}: {}", stderr(&out));
        assert_eq!(out.stdout, b"", "{reply:?}");
        assert_eq!(server.hits(), 1, "{reply:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("named no status URL; give --status-url"), "{err}");
    }
}

// The submit is sent once.

#[test]
fn a_submit_400_exits_3_after_one_post() {
    let server = Server::start(vec![Reply::json(400, r#"{"error":"bad"}"#), Reply::json(202, RUNNING)]).expect_hits(1);
    let out = poll().args(["--submit", "-d", "x", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(out.stdout, b"");
    assert_eq!(sent(&server), [pair("POST", "/jobs")]);
    assert!(stderr(&out).contains("HTTP 400: not retryable"), "{}", stderr(&out));
}

#[test]
fn a_submit_that_may_have_been_processed_is_never_resent() {
    let cases = [("502", Reply::status(502)), ("503", Reply::status(503)), ("reset", Reply::reset())];
    for (name, first) in cases {
        let server = Server::start(vec![first, accepted_at("/ops/1"), Reply::json(200, SUCCEEDED)]).expect_hits(1);
        let out = poll().args(["--submit", "-d", "x", "--backoff", "10ms", &server.url("/jobs")]).output().unwrap();
        assert_eq!(out.status.code(), Some(5), "{name}: {}", stderr(&out));
        assert_eq!(out.stdout, b"", "{name}");
        assert_eq!(sent(&server), [pair("POST", "/jobs")], "{name}");
        let err = stderr(&out);
        assert!(err.contains("not re-sent") && err.contains("--retry-non-idempotent"), "{name}: {err}");
    }
}

#[test]
fn a_submit_turned_away_by_a_429_is_resent() {
    let server = job_api(
        vec![Reply::status(429).header("Retry-After", "1"), accepted_at("/ops/1")],
        vec![Reply::json(200, SUCCEEDED)],
    );
    let out = poll().args(["--submit", "-d", "x", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(sent(&server), [pair("POST", "/jobs"), pair("POST", "/jobs"), pair("GET", "/ops/1")]);
    let requests = server.requests();
    assert_eq!(requests[0].body, requests[1].body);
    let waited = requests[1].at.duration_since(requests[0].at);
    assert!(waited >= Duration::from_secs(1), "the 429's Retry-After: {waited:?}");
}

#[test]
fn a_refused_submit_is_resent() {
    // Nothing listens for the first attempt; the server comes up during the backoff.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut command = poll_std();
    let child = command
        .args(["--submit", "-d", "x", "--backoff", "1s", "--jitter", "none", "-i", "10ms"])
        .arg(format!("http://127.0.0.1:{port}/jobs"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let server = Server::start_on(port, vec![accepted_at("/ops/1"), Reply::json(200, SUCCEEDED)]);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
    assert_eq!(sent(&server), [pair("POST", "/jobs"), pair("GET", "/ops/1")]);
}

// Idempotency keys.

#[test]
fn idempotency_key_auto_resends_one_uuid_v4_and_the_same_body_and_never_on_status_polls() {
    let server = job_api(
        vec![Reply::status(503), Reply::status(503), accepted_at("/ops/1")],
        vec![Reply::json(200, RUNNING), Reply::json(200, SUCCEEDED)],
    );
    let out = poll()
        .args(["--submit", "--json", r#"{"name":"build","n":1}"#, "--idempotency-key", "auto"])
        .args(["--backoff", "100ms", "--jitter", "none", "-i", "10ms", &server.url("/jobs")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        sent(&server),
        [
            pair("POST", "/jobs"),
            pair("POST", "/jobs"),
            pair("POST", "/jobs"),
            pair("GET", "/ops/1"),
            pair("GET", "/ops/1")
        ]
    );
    let requests = server.requests();
    let (posts, gets) = requests.split_at(3);
    let key = posts[0].header("idempotency-key").expect("the submit carries a key").to_string();
    assert!(is_uuid_v4(&key), "{key:?} is not a lowercase UUID v4");
    for post in posts {
        assert_eq!(post.header_all("idempotency-key"), [key.as_str()], "one and the same key on every attempt");
        assert_eq!(post.body, br#"{"name":"build","n":1}"#, "byte-identical bodies");
    }
    let gaps: Vec<Duration> = posts.windows(2).map(|w| w[1].at.duration_since(w[0].at)).collect();
    assert!(gaps[0] >= Duration::from_millis(100) && gaps[1] >= Duration::from_millis(200), "backoff: {gaps:?}");
    for get in gets {
        assert_eq!(get.header("idempotency-key"), None, "a status poll carries no key");
        assert_eq!(get.header("content-type"), None);
        assert_eq!(get.header("accept"), Some("application/json"), "-H and --json's Accept go along");
    }

    // Another run makes another key.
    let again = job_api(vec![accepted_at("/ops/1")], vec![Reply::json(200, SUCCEEDED)]);
    let out = poll()
        .args(["--submit", "-d", "x", "--idempotency-key", "auto", "-i", "10ms", &again.url("/jobs")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let other = again.requests()[0].header("idempotency-key").unwrap().to_string();
    assert!(is_uuid_v4(&other) && other != key, "{other} after {key}");
}

#[test]
fn idempotency_key_sends_the_key_given_under_the_header_named() {
    let cases: [(&[&str], &str); 2] = [
        (&["--idempotency-key", "run-42-deploy"], "idempotency-key"),
        (&["--idempotency-key", "run-42-deploy", "--idempotency-header", "X-Idempotency-Key"], "x-idempotency-key"),
    ];
    for (flags, header) in cases {
        let server = job_api(vec![Reply::status(502), accepted_at("/ops/1")], vec![Reply::json(200, SUCCEEDED)]);
        let out = poll()
            .args(["--submit", "-d", "x", "--backoff", "10ms", "-i", "10ms"])
            .args(flags)
            .arg(server.url("/jobs"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{flags:?}: {}", stderr(&out));
        let requests = server.requests();
        assert_eq!(requests.len(), 3, "{flags:?}: a keyed submit is retried after a 502");
        for post in &requests[..2] {
            assert_eq!(post.header_all(header), ["run-42-deploy"], "{flags:?}");
        }
        let names = |r: &Recorded| r.headers.iter().filter(|(n, _)| n.contains("idempotency")).count();
        assert_eq!(names(&requests[0]), 1, "{flags:?}: only the one header");
        assert_eq!(names(&requests[2]), 0, "{flags:?}: not on the status poll");
    }
}

#[test]
fn a_409_on_a_keyed_submit_is_retried_and_a_422_stops_with_a_hint() {
    let server = job_api(vec![Reply::status(409), accepted_at("/ops/1")], vec![Reply::json(200, SUCCEEDED)]);
    let out = poll()
        .args([
            "--submit",
            "-d",
            "x",
            "--idempotency-key",
            "k1",
            "--backoff",
            "10ms",
            "-i",
            "10ms",
            &server.url("/jobs"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(sent(&server), [pair("POST", "/jobs"), pair("POST", "/jobs"), pair("GET", "/ops/1")]);

    let server =
        Server::start(vec![Reply::json(422, r#"{"error":"key reused"}"#), accepted_at("/ops/1")]).expect_hits(1);
    let out = poll()
        .args(["--submit", "-d", "x", "--idempotency-key", "k1", "--backoff", "10ms", &server.url("/jobs")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(server.hits(), 1);
    let err = stderr(&out);
    assert!(err.contains("HTTP 422") && err.contains("use a new --idempotency-key"), "{err}");

    // Without a key, a 409 is permanent.
    let server = Server::start(vec![Reply::status(409), accepted_at("/ops/1")]).expect_hits(1);
    let out = poll().args(["--submit", "-d", "x", "--backoff", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(server.hits(), 1);
}

#[test]
fn a_status_poll_carries_no_key_so_its_409_and_422_are_plain_permanent_failures() {
    for code in [409, 422] {
        let server =
            job_api_hit(vec![accepted_at("/ops/1")], vec![Reply::status(code), Reply::json(200, SUCCEEDED)], 1, 1);
        let out = poll()
            .args(["--submit", "-d", "x", "--idempotency-key", "k1", "--backoff", "10ms", "-i", "10ms"])
            .arg(server.url("/jobs"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{code}: {}", stderr(&out));
        assert_eq!(sent(&server), [pair("POST", "/jobs"), pair("GET", "/ops/1")], "{code}");
        let err = stderr(&out);
        assert!(err.contains(&format!("HTTP {code}")) && err.contains("/ops/1"), "{code}: {err}");
        assert!(!err.contains("idempotency"), "{code}: no hint about a key the GET never carried: {err}");
    }
}

#[test]
fn a_plain_post_with_a_key_is_retried_after_a_502_with_the_same_key() {
    let server = Server::start(vec![Reply::status(502), Reply::json(200, r#"{"ready":true}"#)]);
    let out = poll()
        .args([
            "-d",
            "payload",
            "--idempotency-key",
            "k-7",
            "--backoff",
            "10ms",
            "--until",
            ".ready",
            &server.url("/jobs"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for post in &requests {
        assert_eq!(post.method, "POST");
        assert_eq!(post.header_all("idempotency-key"), ["k-7"]);
        assert_eq!(post.body, b"payload");
    }

    // A GET is idempotent already: the key is not sent.
    let server = Server::start(vec![Reply::json(200, "{}")]);
    let out = poll().args(["--idempotency-key", "k-7", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests()[0].header("idempotency-key"), None);
}

#[test]
fn the_key_shows_in_verbose_output_and_in_the_json_log() {
    let server = job_api(vec![Reply::status(503), accepted_at("/ops/1")], vec![Reply::json(200, SUCCEEDED)]);
    let out = poll()
        .args(["-v", "--submit", "-d", "x", "--idempotency-key", "auto", "--backoff", "10ms", "-i", "10ms"])
        .arg(server.url("/jobs"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let key = server.requests()[0].header("idempotency-key").unwrap().to_string();
    assert!(stderr(&out).contains(&format!("> Idempotency-Key: {key}")), "{}", stderr(&out));

    let server = job_api_hit(vec![Reply::status(503)], vec![Reply::json(200, SUCCEEDED)], 2, 0);
    let out = poll()
        .args(["--log-format", "json", "--submit", "-d", "x", "--idempotency-key", "auto"])
        .args(["--retries", "1", "--backoff", "10ms", &server.url("/jobs")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let key = server.requests()[0].header("idempotency-key").unwrap().to_string();
    let events = parse_events(&out.stderr);
    assert_eq!(events.len(), 3, "{events:#?}");
    for attempt in &events[..2] {
        assert_eq!(attempt["idempotency_key"], key.as_str(), "{attempt}");
    }
    assert_eq!(events[2]["idempotency_key"], key.as_str(), "the final object names the key to re-run with");
}

// Credentials on the status URL.

#[test]
fn credentials_go_to_a_status_url_on_another_origin_only_with_location_trusted() {
    let secrets: [&[&str]; 2] = [
        &["-H", "Authorization: Bearer t", "-H", "Cookie: c=1"],
        // -u stands for the Authorization header.
        &["-u", "user:pass", "-H", "Cookie: c=1"],
    ];
    for credentials in secrets {
        let basic = credentials.contains(&"-u");
        let authorization = if basic { "Basic dXNlcjpwYXNz" } else { "Bearer t" };
        let cases =
            [("same origin", false, false), ("another origin", true, false), ("--location-trusted", true, true)];
        for (name, elsewhere, trusted) in cases {
            let status = Server::start(vec![Reply::json(200, SUCCEEDED)]).expect_hits(usize::from(elsewhere));
            let location = if elsewhere { status.url("/ops/1") } else { "/ops/1".to_string() };
            let submit = Server::routes(vec![
                ("/jobs", vec![accepted_at(&location)]),
                ("/ops/1", vec![Reply::json(200, SUCCEEDED)]),
            ])
            .expect_route_hits("/ops/1", usize::from(!elsewhere));
            let out = poll()
                .args(["--submit", "-d", "x", "-i", "10ms", "-H", "X-Tenant: 7"])
                .args(credentials)
                .args(trusted.then_some("--location-trusted"))
                .arg(submit.url("/jobs"))
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
            let post = &submit.requests()[0];
            assert_eq!(post.header("authorization"), Some(authorization), "{name}");
            let get = if elsewhere { status.requests()[0].clone() } else { submit.requests()[1].clone() };
            assert_eq!(get.method, "GET", "{name}");
            assert_eq!(get.header("x-tenant"), Some("7"), "{name}: -H headers always go along");
            let carries = !elsewhere || trusted;
            assert_eq!(get.header("authorization"), carries.then_some(authorization), "{name} {credentials:?}");
            assert_eq!(get.header("cookie"), carries.then_some("c=1"), "{name} {credentials:?}");
        }
    }
}

// Status polls are retried like any GET.

#[test]
fn a_503_on_the_status_url_is_retried_with_backoff_without_resubmitting() {
    let server = job_api_hit(
        vec![accepted_at("/ops/1"), Reply::json(500, "{}")],
        vec![Reply::status(503), Reply::status(503), Reply::reset(), Reply::json(200, SUCCEEDED)],
        1,
        4,
    );
    let out = poll()
        .args(["--submit", "-d", "x", "--backoff", "100ms", "--jitter", "none", "-i", "10ms", &server.url("/jobs")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
    let requests = server.requests();
    assert_eq!(requests.iter().filter(|r| r.method == "POST").count(), 1, "exactly one POST");
    assert_eq!(requests.len(), 5);
    let gaps: Vec<Duration> = requests[1..].windows(2).map(|w| w[1].at.duration_since(w[0].at)).collect();
    for (gap, want) in gaps.iter().zip([100, 200, 400]) {
        assert!(*gap >= Duration::from_millis(want), "backoff {want}ms: {gaps:?}");
    }
}

// Ending after the submit names the status URL.

#[test]
fn a_deadline_after_the_submit_names_the_status_url_to_resume_with() {
    let server = job_api(vec![accepted_at("/ops/1")], vec![Reply::json(200, RUNNING)]);
    let started = Instant::now();
    let out =
        poll().args(["--submit", "-d", "x", "--timeout", "1s", "-i", "200ms", &server.url("/jobs")]).output().unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(out.stdout, b"");
    assert!(took >= Duration::from_millis(700) && took < Duration::from_secs(20), "{took:?}");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("resume the wait with `poll {}`", server.url("/ops/1"))), "{err}");
    let requests = server.requests();
    assert_eq!(requests.iter().filter(|r| r.method == "POST").count(), 1);
    assert!(requests.len() >= 3, "{} requests", requests.len());

    // A submit Retry-After past the deadline: nothing more is sent, but the operation is named.
    let server =
        job_api_hit(vec![accepted_at("/ops/1").header("Retry-After", "30")], vec![Reply::json(200, RUNNING)], 1, 0);
    let out = poll()
        .args(["--log-format", "json", "--submit", "-d", "x", "--timeout", "2s", &server.url("/jobs")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(server.hits(), 1);
    let events = parse_events(&out.stderr);
    let end = events.last().unwrap();
    assert!(end["message"].as_str().unwrap().contains(&format!("`poll {}`", server.url("/ops/1"))), "{end}");
    assert_eq!(end["operation_url"], server.url("/ops/1").as_str(), "{end}");
}

#[test]
fn a_signal_while_waiting_after_the_submit_names_the_status_url() {
    for (signal, code, word) in [("-INT", 130, "interrupted"), ("-TERM", 143, "terminated")] {
        let server = job_api_hit(vec![accepted_at("/ops/1")], vec![Reply::json(200, RUNNING)], 1, 0);
        let mut command = poll_std();
        let child = command
            .args(["--submit", "-d", "x", "-i", "30s", "--timeout", "60s", &server.url("/jobs")])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The submit; the first status poll, after the interval, would come only after 30 s.
        assert!(server.wait_hits(1, Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(200));
        let sent_at = Instant::now();
        let status = StdCommand::new("sh").args(["-c", &format!("kill {signal} {}", child.id())]).status().unwrap();
        assert!(status.success());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{signal}: {}", stderr(&out));
        assert!(sent_at.elapsed() < Duration::from_secs(5), "{signal}: {:?}", sent_at.elapsed());
        assert_eq!(out.stdout, b"");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("{word} after 1 attempt")), "{signal}: {err}");
        assert!(err.contains(&format!("resume the wait with `poll {}`", server.url("/ops/1"))), "{signal}: {err}");
        assert_eq!(server.hits(), 1);
    }
}

// --print.

#[test]
fn print_writes_strings_raw_and_other_values_as_compact_json_one_per_line() {
    let body = r#"{"status":"Succeeded","id":"j7","n":42,"o":{"k":"v","list":[1, 2]},"a":"x","b":[true,null]}"#;
    let cases = [
        (".id", "j7\n"),
        (".n", "42\n"),
        (".o", "{\"k\":\"v\",\"list\":[1,2]}\n"),
        (".a, .b", "x\n[true,null]\n"),
        (".missing", "null\n"),
        ("empty", ""),
        // Keys keep their order, as jq keeps them.
        (r#"{zeta: .n, alpha: .a}"#, "{\"zeta\":42,\"alpha\":\"x\"}\n"),
    ];
    for (filter, want) in cases {
        let server = job_api(vec![accepted_at("/ops/1")], vec![Reply::json(200, body)]);
        let out = poll()
            .args(["--submit", "-d", "x", "-i", "10ms", "--print", filter, &server.url("/jobs")])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{filter}: {}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{filter}");
    }
    // Without --submit too.
    let server = Server::start(vec![Reply::json(200, body)]);
    let out = poll().args(["--print", ".id", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"j7\n");
}

#[test]
fn print_with_fail_when_prints_and_exits_4() {
    let server = job_api(vec![accepted_at("/ops/1")], vec![Reply::json(200, r#"{"status":"Failed","error":"boom"}"#)]);
    let out =
        poll().args(["--submit", "-d", "x", "-i", "10ms", "--print", ".error", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(out.stdout, b"boom\n");
}

#[test]
fn print_that_does_not_compile_is_a_usage_error_and_nothing_is_sent() {
    let server = Server::start(vec![accepted_at("/ops/1")]).expect_hits(0);
    let out = poll().args(["--submit", "-d", "x", "--print", ".id +", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(out.stdout, b"");
    let err = stderr(&out);
    assert!(err.contains("--print") && err.contains("does not compile"), "{err}");
    assert_eq!(server.connections(), 0, "no connection was made");
}

#[test]
fn print_failing_on_the_final_body_exits_3_and_prints_nothing() {
    let cases = [
        (Reply::json(200, r#"{"status":"Succeeded","n":"x"}"#), ".n + 1", "jq error"),
        (Reply::json(200, r#"{"status":"Succeeded","n":"x"}"#), ".id, error(\"late\")", "late"),
        // ARM's Location mode: the final body need not be JSON.
        (Reply::text(200, "plain result"), ".id", "not JSON"),
    ];
    for (last, filter, why) in cases {
        let server = Server::routes(vec![
            ("/jobs", vec![Reply::status(202).header("Location", "/ops/1")]),
            ("/ops/1", vec![last.clone()]),
        ]);
        let out = poll()
            .args(["--submit", "-d", "x", "-i", "10ms", "--print", filter, &server.url("/jobs")])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{filter}: {}", stderr(&out));
        assert_eq!(out.stdout, b"", "{filter}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--print") && err.contains(why), "{filter}: {err}");
    }
}

#[test]
fn print_applies_to_the_fallback_body() {
    let server = Server::start(vec![Reply::status(503)]);
    let out = poll()
        .args(["--retries", "0", "--fallback", r#"{"id":"x"}"#, "--print", ".id", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(out.stdout, b"x\n");
    assert_eq!(server.hits(), 1);
}

// The JSON log.

#[test]
fn json_log_attempts_carry_phase_method_and_the_status_url() {
    let server = job_api(
        vec![Reply::status(429), accepted_at("/ops/1?sig=s3cret&api-version=2")],
        vec![Reply::json(200, RUNNING), Reply::json(200, SUCCEEDED)],
    );
    let out = poll()
        .args(["--log-format", "json", "--submit", "-d", "x", "--backoff", "10ms", "-i", "10ms", &server.url("/jobs")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
    let events = parse_events(&out.stderr);
    assert_eq!(events.len(), 5, "4 attempts + done: {events:#?}");
    let status_url = server.url("/ops/1?sig=<redacted>&api-version=2");
    let want = [
        ("submit", "POST", server.url("/jobs"), "retry"),
        ("submit", "POST", server.url("/jobs"), "poll"),
        ("wait", "GET", status_url.clone(), "poll"),
        ("wait", "GET", status_url.clone(), "done"),
    ];
    for (event, (phase, method, url, action)) in events.iter().zip(want) {
        assert_eq!(event["event"], "attempt");
        assert_eq!(event["phase"], phase, "{event}");
        assert_eq!(event["method"], method, "{event}");
        assert_eq!(event["url"], url.as_str(), "{event}");
        assert_eq!(event["action"], action, "{event}");
    }
    assert_eq!(events[1]["status"], 202);
    assert!(events[1].get("condition").is_none(), "a submit that names its operation is not judged");
    assert_eq!(events[2]["condition"], "not_met");
    assert_eq!(events[3]["condition"], "met");
    let end = &events[4];
    assert_eq!(end["event"], "done");
    assert_eq!(end["exit_code"], 0);
    assert_eq!(end["attempts"], 4);
    assert_eq!(end["operation_url"], status_url.as_str(), "redacted: {end}");
    assert!(!stderr(&out).contains("s3cret"), "{}", stderr(&out));

    // Without --submit, no phase and no operation_url.
    let server = Server::start(vec![Reply::json(200, "{}")]);
    let out = poll().args(["--log-format", "json", &server.url("/")]).output().unwrap();
    let events = parse_events(&out.stderr);
    assert!(events[0].get("phase").is_none() && events[1].get("operation_url").is_none(), "{events:#?}");
}

#[test]
fn verbose_names_the_operation_redacted() {
    let server = job_api(vec![accepted_at("/ops/1?sig=s3cret")], vec![Reply::json(200, SUCCEEDED)]);
    let out = poll().args(["-v", "--submit", "-d", "x", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("operation: {}", server.url("/ops/1?sig=<redacted>"))), "{err}");
    assert!(err.contains("attempt 1: 202 submitted") && err.contains("attempt 2: 200 done"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
}

#[test]
fn a_see_other_after_the_submit_names_its_monitor_and_its_retry_after_is_honoured() {
    // curl #11447: a status monitor behind 303 See Other, with Retry-After on the 303.
    let server = Server::routes(vec![
        ("/jobs", vec![Reply::redirect(303, "/monitor/1").header("Retry-After", "1")]),
        ("/monitor/1", vec![Reply::json(200, RUNNING), Reply::json(200, SUCCEEDED)]),
    ]);
    let out =
        poll().args(["--submit", "-d", "x", "-i", "10ms", "--print", ".id", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"j7\n");
    assert_eq!(sent(&server), [pair("POST", "/jobs"), pair("GET", "/monitor/1"), pair("GET", "/monitor/1")]);
    let requests = server.requests();
    let waited = requests[1].at.duration_since(requests[0].at);
    assert!(waited >= Duration::from_millis(950), "the 303's Retry-After: 1 was not honoured: {waited:?}");

    // 307 and 308 keep the method: the submit goes to the new place, body and all, once.
    let server = Server::routes(vec![
        ("/jobs", vec![Reply::redirect(307, "/v2/jobs")]),
        ("/v2/jobs", vec![accepted_at("/ops/1")]),
        ("/ops/1", vec![Reply::json(200, SUCCEEDED)]),
    ]);
    let out = poll().args(["--submit", "-d", "payload", "-i", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(sent(&server), [pair("POST", "/jobs"), pair("POST", "/v2/jobs"), pair("GET", "/ops/1")]);
    assert_eq!(server.requests()[1].body, b"payload");
}
