//! `--watch` resumes as each server expects, end to end (issue 49): etcd's watch sees the
//! current state first and every change after it (a real etcd: a key that already holds, a
//! change made between two streams, a compacted history, a restart); a Kubernetes-style watch
//! (scripted) starts again from the current state after a 410 and resumes from a `BOOKMARK`,
//! which is not judged; an event stream's `id:` without data is sent back, one that cannot go
//! in a header is not; and `$event` is bound in `--print` as in the other filters.

use crate::support;
use crate::watch_servers::Watching;

use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use support::etcd::{Etcd, base64};
use support::poll;
use support::server::{Reply, Server};

/// docs/guide/watch.md's etcd recipe's `--until`.
const READY: &str = r#".result.events[]?.kv.value | @base64d | fromjson? | .status == "ready""#;
const KEY: &str = "deploy";

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The guide's `-d`: a body that only asks etcd to watch `KEY`.
fn create_request() -> String {
    json!({"create_request": {"key": base64(KEY)}}).to_string()
}

/// stdout as one JSON value.
fn json_of(stdout: &[u8]) -> Value {
    serde_json::from_slice(stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON value: {e}: {}", String::from_utf8_lossy(stdout)))
}

/// A watch value of etcd's (or the state as `poll` gives it) of one PUT of `KEY`: `first` the
/// put that made the key, `this` the put of `value`, whose header etcd sends with it.
fn put_event(first: &Value, this: &Value, version: &str, value: &str) -> Value {
    let kv = json!({
        "key": base64(KEY),
        "create_revision": first["header"]["revision"],
        "mod_revision": this["header"]["revision"],
        "version": version,
        "value": base64(value),
    });
    json!({"result": {"header": this["header"], "events": [{"kv": kv}]}})
}

/// etcd's int64 as its gateway writes it (a string), plus `n`.
fn revision_after(reply: &Value, n: u64) -> u64 {
    let revision: u64 = reply["header"]["revision"].as_str().and_then(|r| r.parse().ok()).expect("a revision");
    revision + n
}

#[test]
fn the_guides_etcd_recipe_sees_a_key_that_already_says_ready() {
    let Some(etcd) = Etcd::start() else { return };
    let ready = etcd.put(KEY, r#"{"status":"ready"}"#);
    // docs/guide/watch.md's recipe as written there, but for the port.
    let out = poll()
        .args(["--watch", "-d", &create_request(), "--until", READY, &etcd.url("/v3/watch")])
        .output()
        .expect("run poll");
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), etcd.log());
    // The state, read before the watch, as a watch value of etcd's: the header of the read.
    assert_eq!(json_of(&out.stdout), put_event(&ready, &ready, "1", r#"{"status":"ready"}"#));
    assert_eq!(stderr(&out), "");
}

#[test]
fn an_etcd_change_made_between_two_streams_is_not_lost() {
    let Some(etcd) = Etcd::start() else { return };
    let starting = etcd.put(KEY, r#"{"status":"starting"}"#);
    let url = etcd.url("/v3/watch");
    // etcd sends nothing while the key stays: the stream goes idle after 1 s, and the next
    // request comes 4 s after the last one began. The change is made in between.
    let args = [
        "-v",
        "--idle-timeout",
        "1s",
        "--interval",
        "4s",
        "-d",
        &create_request(),
        "--until",
        READY,
        "--timeout",
        "25s",
        &url,
    ];
    let mut poll = Watching::spawn(&args);
    poll.line_with(&format!("reading the current state: POST {}", etcd.url("/v3/kv/range")));
    assert!(poll.line_with("event 1 ").ends_with(" -> not yet"));
    let next = revision_after(&starting, 1);
    let read = poll.line_with("attempt 1: ");
    assert!(
        read.starts_with("attempt 1: 200 pending in ") && read.ends_with(&format!(" -> watching from revision {next}")),
        "{read}"
    );
    let idle = poll.line_with("stream went idle");
    assert!(
        idle.starts_with("attempt 2: stream went idle after ") && idle.ends_with(&format!(" (revision {next})")),
        "{idle}"
    );
    let ready = etcd.put(KEY, r#"{"status":"ready"}"#);
    let ended = poll.end();
    assert_eq!(ended.code, Some(0), "{}\n{}", ended.stderr, etcd.log());
    assert_eq!(json_of(&ended.stdout), put_event(&starting, &ready, "2", r#"{"status":"ready"}"#));
    assert!(ended.stderr.contains("\nevent 2 -> done\n"), "{}", ended.stderr);
    assert!(
        ended.stderr.contains(
            "
poll: done after 3 attempts in "
        ),
        "{}",
        ended.stderr
    );
    assert!(ended.took >= Duration::from_secs(4), "asked again before --interval: {:?}", ended.took);
}

#[test]
fn a_compacted_etcd_history_reads_the_current_state_again() {
    let Some(etcd) = Etcd::start() else { return };
    let starting = etcd.put(KEY, r#"{"status":"starting"}"#);
    let url = etcd.url("/v3/watch");
    let args = [
        "-v",
        "--idle-timeout",
        "1s",
        "--interval",
        "4s",
        "-d",
        &create_request(),
        "--until",
        READY,
        "--timeout",
        "25s",
        &url,
    ];
    let mut poll = Watching::spawn(&args);
    poll.line_with("stream went idle");
    // Between the streams: the change, one more, and the history before the last compacted
    // away, so that the watch from just after "starting" is canceled.
    let ready = etcd.put(KEY, r#"{"status":"ready"}"#);
    let other = etcd.put("other", "x");
    etcd.compact(&other["header"]["revision"]);
    let ended = poll.end();
    assert_eq!(ended.code, Some(0), "{}\n{}", ended.stderr, etcd.log());
    // The state read again: its header is that of the last put.
    let mut state = put_event(&starting, &ready, "2", r#"{"status":"ready"}"#);
    state["result"]["header"] = other["header"].clone();
    assert_eq!(json_of(&ended.stdout), state);
    let said = format!(
        "etcd cannot watch from revision {}: its history is compacted up to revision {}; reading the current state again",
        revision_after(&starting, 1),
        revision_after(&other, 0)
    );
    assert!(ended.stderr.contains(&format!("\n{said}\n")), "{}", ended.stderr);
    // The state, the watch, the canceled watch, the state again.
    assert!(ended.stderr.contains("\npoll: done after 4 attempts in "), "{}", ended.stderr);
    let reads = ended.stderr.matches("reading the current state: POST ").count();
    assert_eq!(reads, 2, "{}", ended.stderr);
}

#[test]
fn an_etcd_watch_resumes_across_a_restart_of_etcd() {
    let Some(mut etcd) = Etcd::start() else { return };
    let starting = etcd.put(KEY, r#"{"status":"starting"}"#);
    let url = etcd.url("/v3/watch");
    // A crash breaks the reply: the watch is re-sent after the backoff, as a GET would be.
    let args = [
        "-v",
        "--retries",
        "100",
        "--backoff-max",
        "500ms",
        "-d",
        &create_request(),
        "--until",
        READY,
        "--timeout",
        "50s",
        &url,
    ];
    let mut poll = Watching::spawn(&args);
    poll.line_with(&format!("watching {url}"));
    etcd.restart();
    let ready = etcd.put(KEY, r#"{"status":"ready"}"#);
    let ended = poll.end();
    assert_eq!(ended.code, Some(0), "{}\n{}", ended.stderr, etcd.log());
    assert_eq!(json_of(&ended.stdout), put_event(&starting, &ready, "2", r#"{"status":"ready"}"#));
    assert!(ended.stderr.contains(" -> retry in "), "{}", ended.stderr);
    assert!(!ended.stderr.contains("may have been processed"), "{}", ended.stderr);
}

/// A Kubernetes watch's event of the pod `p` in `phase`, at `version`.
fn pod(kind: &str, phase: &str, version: &str) -> String {
    format!(
        r#"{{"type":"{kind}","object":{{"kind":"Pod","metadata":{{"name":"p","resourceVersion":"{version}"}},"status":{{"phase":"{phase}"}}}}}}"#
    ) + "\n"
}

const SUCCEEDED: &str = r#".object.status.phase == "Succeeded""#;

#[test]
fn a_kubernetes_410_starts_the_watch_again_from_the_current_state() {
    let expired = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (12)","reason":"Expired","code":410}}"#;
    let server = Server::start(vec![
        Reply::stream(200, "application/json", &[(ms(0), &format!("{expired}\n"))]),
        // Without a resourceVersion, the watch starts with the current state, as ADDED.
        Reply::stream(200, "application/json", &[(ms(0), &pod("ADDED", "Succeeded", "14"))]).then_hold(),
    ]);
    let url = server.url("/api/v1/namespaces/ci/pods?watch=1&resourceVersion=5&fieldSelector=metadata.name%3Dp");
    let out = poll()
        .args(["--watch", "-v", "--interval", "1s", "--until", SUCCEEDED, "--timeout", "20s", &url])
        .output()
        .expect("run poll");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, pod("ADDED", "Succeeded", "14").trim_end().as_bytes());
    let requests = server.requests();
    assert_eq!(requests[1].path, "/api/v1/namespaces/ci/pods?watch=1&fieldSelector=metadata.name%3Dp");
    // From request to request: the server sees each a little after it is sent.
    let gap = requests[1].at.duration_since(requests[0].at);
    assert!(gap >= ms(800), "not paced as a stream that ended: {gap:?}");
    let text = stderr(&out);
    let said = "the watch cannot resume from resourceVersion 5 (410 Expired: too old resource version: 5 (12)): watching again from the current state";
    assert!(text.contains(&format!("\n{said}\nattempt 1: stream ended after ")), "{text}");
    assert!(text.contains(", asking again in ") && text.contains(" (the current state)\n"), "{text}");
    // The ERROR was not judged: the first event judged is the pod.
    assert!(text.contains("\nevent 1 -> done\n"), "{text}");
}

#[test]
fn a_kubernetes_bookmark_moves_the_resume_point_and_is_not_judged() {
    let server = Server::start(vec![
        Reply::stream(
            200,
            "application/json",
            &[(ms(0), &pod("ADDED", "Pending", "7")), (ms(20), &pod("BOOKMARK", "", "12"))],
        ),
        Reply::stream(200, "application/json", &[(ms(0), &pod("MODIFIED", "Succeeded", "13"))]).then_hold(),
    ]);
    let url = server.url("/api/v1/namespaces/ci/pods?watch=true&allowWatchBookmarks=true&resourceVersion=5");
    let out = poll()
        .args([
            "--watch",
            "--log-format",
            "json",
            "--interval",
            "100ms",
            "--until",
            SUCCEEDED,
            "--timeout",
            "20s",
            &url,
        ])
        .output()
        .expect("run poll");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, pod("MODIFIED", "Succeeded", "13").trim_end().as_bytes());
    let requests = server.requests();
    assert_eq!(requests[0].path, "/api/v1/namespaces/ci/pods?watch=true&allowWatchBookmarks=true&resourceVersion=5");
    assert_eq!(requests[1].path, "/api/v1/namespaces/ci/pods?watch=true&allowWatchBookmarks=true&resourceVersion=12");
    let text = stderr(&out);
    let verdicts: Vec<Value> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|object| object["event"] == "stream_event")
        .map(|object| object["verdict"].clone())
        .collect();
    assert_eq!(verdicts, [json!("not_met"), json!("met")], "{text}");
}

#[test]
fn an_event_stream_id_in_a_block_without_data_is_sent_back() {
    let server = Server::start(vec![
        Reply::sse(&[(ms(0), "id: 1\ndata: {\"status\":\"pending\"}\n\n"), (ms(20), "id: 42\n\n")]),
        Reply::sse(&[(ms(0), "data: {\"status\":\"done\"}\n\n")]).then_hold(),
    ]);
    let out = poll()
        .args([
            "--watch",
            "--interval",
            "100ms",
            "--until",
            r#".status=="done""#,
            "--timeout",
            "20s",
            &server.url("/events"),
        ])
        .output()
        .expect("run poll");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"status":"done"}"#);
    let requests = server.requests();
    assert_eq!(requests[0].header("last-event-id"), None);
    assert_eq!(requests[1].header("last-event-id"), Some("42"));
}

#[test]
fn an_event_stream_id_that_cannot_go_in_a_header_is_not_sent_back_with_one_warning() {
    let server = Server::start(vec![
        Reply::sse(&[
            (ms(0), "id: 7\ndata: {\"status\":\"pending\"}\n\n"),
            (ms(0), "id: a\u{1}b\ndata: {\"status\":\"pending\"}\n\n"),
        ]),
        Reply::sse(&[(ms(0), "id: x\u{1b}[31my\ndata: {\"status\":\"pending\"}\n\n")]),
        Reply::sse(&[(ms(0), "data: {\"status\":\"done\"}\n\n")]).then_hold(),
    ]);
    let out = poll()
        .args([
            "--watch",
            "--interval",
            "100ms",
            "--until",
            r#".status=="done""#,
            "--timeout",
            "20s",
            &server.url("/events"),
        ])
        .output()
        .expect("run poll");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"status":"done"}"#);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].header("last-event-id"), None);
    assert_eq!(requests[2].header("last-event-id"), None);
    assert_eq!(
        stderr(&out),
        "poll: warning: the event stream's id `a\\u{1}b` has a control character and cannot be sent back: the next request carries no Last-Event-ID\n"
    );
}

#[test]
fn event_is_bound_in_print_and_show_as_in_until_and_fail_when() {
    let chat = || {
        Reply::sse(&[
            (ms(0), "event: delta\ndata: {\"text\":\"Hel\"}\n\n"),
            (ms(20), "event: complete\ndata: {\"text\":\"Hello\"}\n\n"),
        ])
        .then_hold()
    };
    let server = Server::start(vec![chat()]);
    let out = poll()
        .args(["--watch", "-v", "--until", r#"$event == "complete""#, "--show", "$event", "--print", "$event"])
        .args(["--timeout", "20s", &server.url("/chat")])
        .output()
        .expect("run poll");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "complete\n");
    let text = stderr(&out);
    assert!(text.contains("\nevent 1 (type delta) delta -> not yet\n"), "{text}");
    assert!(text.contains("\nevent 2 (type complete) complete -> done\n"), "{text}");
    let server = Server::start(vec![chat()]);
    let out = poll()
        .args(["--watch", "--until", r#"$event == "never""#, "--fail-when", r#"$event == "complete""#])
        .args(["--print", r#"$event + ": " + .text"#])
        .args(["--timeout", "20s", &server.url("/chat")])
        .output()
        .expect("run poll");
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "complete: Hello\n");
}

#[test]
fn nomads_event_stream_resumes_from_the_index_after_its_last_frame() {
    let frame = |index: u32, status: &str| {
        format!(
            r#"{{"Index":{index},"Events":[{{"Topic":"Job","Type":"JobRegistered","Key":"build","Index":{index},"Payload":{{"Job":{{"Status":"{status}"}}}}}}]}}"#
        ) + "\n"
    };
    let server = Server::start(vec![
        // A heartbeat, then a frame; then the stream ends (a proxy's timeout).
        Reply::stream(200, "application/json", &[(ms(0), "{}\n"), (ms(20), &frame(7, "pending"))]),
        Reply::stream(200, "application/json", &[(ms(0), "{}\n"), (ms(20), &frame(9, "running"))]).then_hold(),
    ]);
    let until = r#".Events[]?.Payload.Job.Status == "running""#;
    let out = poll()
        .args(["--watch", "-v", "--interval", "100ms", "--until", until, "--timeout", "20s"])
        .arg(server.url("/v1/event/stream?topic=Job:build"))
        .output()
        .expect("run poll");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, frame(9, "running").trim_end().as_bytes());
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/event/stream?topic=Job:build");
    assert_eq!(requests[1].path, "/v1/event/stream?topic=Job:build&index=8");
    let text = stderr(&out);
    assert!(text.contains("\nattempt 1: stream ended after ") && text.contains(" (index 8)\n"), "{text}");
    // The heartbeats are not judged: two events, the two frames.
    assert!(text.contains("\nevent 1 -> not yet\n") && text.contains("\nevent 2 -> done\n"), "{text}");
    assert!(!text.contains("event 3"), "{text}");
}
