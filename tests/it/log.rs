//! `--log-format json`: one NDJSON object per attempt and one final object, on stderr.

use crate::support;

use serde_json::Value;
use support::server::{Reply, Server};

fn parse_events(stderr: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

#[test]
fn every_attempt_and_the_end_are_one_json_object_each() {
    let server = Server::start(vec![
        Reply::status(503).header("Retry-After", "0"),
        Reply::reset(),
        Reply::json(200, r#"{"status":"pending","progress":5}"#),
        Reply::json(200, r#"{"status":"done","progress":100}"#),
    ]);
    let url = server.url("/jobs/1?token=s3cret&page=2");
    let out = support::poll()
        .args(["--log-format", "json", "--until", r#".status=="done""#, "--show", ".progress"])
        .args(["-i", "50ms", "--backoff", "20ms", "--jitter", "none", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, br#"{"status":"done","progress":100}"#);
    let events = parse_events(&out.stderr);
    assert_eq!(events.len(), 5, "4 attempts + done: {events:#?}");

    for (i, event) in events[..4].iter().enumerate() {
        assert_eq!(event["event"], "attempt");
        assert_eq!(event["attempt"], i as u64 + 1);
        assert_eq!(event["method"], "GET");
        let shown_url = event["url"].as_str().unwrap();
        assert!(shown_url.contains("token=<redacted>") && shown_url.contains("page=2"), "{shown_url}");
        assert!(event["ts"].as_str().unwrap().ends_with('Z'), "RFC 3339 UTC: {}", event["ts"]);
        assert!(event["elapsed_ms"].is_u64() && event["latency_ms"].is_u64());
    }
    let [retry_after, reset, pending, done] = &events[..4] else { unreachable!() };
    assert_eq!(retry_after["status"], 503);
    assert_eq!(retry_after["action"], "retry");
    assert_eq!(retry_after["wait_reason"], "retry_after");
    assert_eq!(retry_after["wait_ms"], 0);
    assert!(retry_after.get("condition").is_none());

    assert_eq!(reset["error_kind"], "reset");
    assert!(reset["error"].is_string() && reset.get("status").is_none());
    assert_eq!(reset["action"], "retry");
    assert_eq!(reset["wait_reason"], "backoff");
    assert_eq!(reset["wait_ms"], 40, "second consecutive failure: 20ms * 2");

    assert_eq!(pending["status"], 200);
    assert_eq!(pending["condition"], "not_met");
    assert_eq!(pending["action"], "poll");
    assert_eq!(pending["wait_reason"], "interval");
    assert_eq!(pending["wait_ms"], 50);
    assert_eq!(pending["show"], "progress 5");

    assert_eq!(done["condition"], "met");
    assert_eq!(done["action"], "done");
    assert!(done.get("wait_ms").is_none());

    let end = &events[4];
    assert_eq!(end["event"], "done");
    assert_eq!(end["exit_code"], 0);
    assert_eq!(end["reason"], "done");
    assert_eq!(end["attempts"], 4);
}

#[test]
fn the_final_object_carries_the_exit_code_and_reason_of_a_failure() {
    let server = Server::start(vec![Reply::json(200, r#"{"status":"failed"}"#)]);
    let out = support::poll()
        .args(["--log-format", "json", "--fail-when", r#".status=="failed""#, &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let events = parse_events(&out.stderr);
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["condition"], "failed");
    assert_eq!(events[0]["action"], "stop", "`done` is for exit 0 only");
    assert_eq!(events[1]["exit_code"], 4);
    assert_eq!(events[1]["reason"], "fail_when");

    let server = Server::start(vec![Reply::text(200, "<html>")]);
    let out = support::poll()
        .args(["--log-format", "json", "--until", ".ok", "--retries", "0", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    let events = parse_events(&out.stderr);
    assert_eq!(events[0]["error_kind"], "not_json");
    assert_eq!(events[0]["condition"], "error");
    assert_eq!(events[0]["action"], "stop");
    assert_eq!(events[1]["exit_code"], 5);
    assert_eq!(events[1]["reason"], "gave_up");
    assert!(events[1]["message"].as_str().unwrap().contains("not JSON"));
}

#[test]
fn warnings_ride_on_the_next_object_so_each_attempt_stays_one_line() {
    let server = Server::start(vec![Reply::json(200, r#"{"n":"x"}"#), Reply::json(200, r#"{"n":1}"#)]);
    let out = support::poll()
        .args(["--log-format", "json", "--until", ".n + 1 > 1", "-i", "0", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let events = parse_events(&out.stderr);
    assert_eq!(events.len(), 3, "2 attempts + done: {events:#?}");
    assert_eq!(events[0]["condition"], "error");
    let warnings = events[0]["warnings"].as_array().expect("warnings on the first attempt");
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].as_str().unwrap().contains("jq error"), "{warnings:?}");
    assert!(events[1].get("warnings").is_none() && events[2].get("warnings").is_none());
}

/// The final object is written after stdout: a body stdout cannot take (a full
/// disk) makes it say 3, with the error in its message (stderr stays NDJSON).
#[cfg(target_os = "linux")]
#[test]
fn a_body_stdout_cannot_take_makes_the_final_object_say_3() {
    let server = Server::start(vec![Reply::json(200, r#"{"status":"done"}"#)]).expect_hits(1);
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else { panic!("/dev/full") };
    let output =
        support::poll_std().args(["--log-format", "json", &server.url("/")]).stdout(full).output().expect("run poll");
    assert_eq!(output.status.code(), Some(3));
    let text = String::from_utf8_lossy(&output.stderr);
    let events = parse_events(&output.stderr);
    let Some(done) = events.iter().find(|event| event["event"] == "done") else { panic!("no final object: {text}") };
    assert_eq!((done["exit_code"].as_u64(), done["reason"].as_str()), (Some(3), Some("permanent")), "{text}");
    assert!(done["message"].as_str().is_some_and(|m| m.starts_with("cannot write the body to stdout: ")), "{text}");
    assert_eq!(events.last(), Some(done), "the final object is the last line: {text}");
}
