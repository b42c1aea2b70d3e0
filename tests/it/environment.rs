//! Settings from the environment: `POLL_<FLAG>` for every option that takes one value and every
//! switch, as CI templates set them once for many calls; a flag on the command line wins.

use crate::support;

use std::process::Output;
use std::time::{Duration, Instant};

use support::poll;
use support::server::{Reply, Server};

const PENDING: &str = r#"{"status":"pending"}"#;

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_variable_sets_an_option_and_the_command_line_wins() {
    let server = Server::start(vec![Reply::json(200, PENDING)]);
    let started = Instant::now();
    let out = poll()
        .env("POLL_TIMEOUT", "1s")
        .env("POLL_INTERVAL", "50ms")
        .env("POLL_UNTIL", ".status == \"done\"")
        .args(["--interval", "300ms", &server.url("/")])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(took >= Duration::from_millis(600) && took < Duration::from_secs(5), "{took:?}");
    // --interval from the command line: 300 ms apart, not 50 ms.
    let hits = server.hits();
    assert!((2..=5).contains(&hits), "{hits} requests in 1s at --interval 300ms");
}

/// A status list from the environment is split at its commas as on the command line.
#[test]
fn a_status_list_comes_from_one_variable() {
    let server = Server::start(vec![Reply::json(200, PENDING), Reply::status(410)]);
    let out = poll().env("POLL_DONE_ON", "404,410").args(["-i", "10ms", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 2);
}

#[test]
fn switches_read_as_scripts_write_them_and_v_names_where_settings_came_from() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    for (value, verbose) in [("true", 1), ("yes", 1), ("1", 1), ("2", 2), ("false", 0), ("off", 0)] {
        let out = poll().env("POLL_VERBOSE", value).env("POLL_INSECURE", "on").arg(server.url("/")).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{value}: {}", stderr(&out));
        let text = stderr(&out);
        assert_eq!(text.contains("> GET"), verbose >= 1, "POLL_VERBOSE={value}: {text}");
        assert_eq!(text.contains("< content-type"), verbose >= 2, "POLL_VERBOSE={value}: {text}");
        if verbose >= 1 {
            assert!(text.contains("settings from the environment: POLL_INSECURE, POLL_VERBOSE"), "{text}");
        }
    }
}

#[test]
fn a_bad_value_names_its_variable_and_never_quotes_a_secret() {
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    let cases = [
        ("POLL_TIMEOUT", "banana", "POLL_TIMEOUT: invalid value 'banana' for '--timeout <DURATION>'"),
        ("POLL_INSECURE", "maybe", "POLL_INSECURE: invalid value 'maybe' for '--insecure'"),
        ("POLL_STATE", "redis://:pw-s3cret@bad host", "POLL_STATE: --state: invalid Redis URL"),
        ("POLL_USER", "alice:s3cret\r", "POLL_USER: --user:"),
    ];
    for (variable, value, said) in cases {
        let out = poll().env(variable, value).arg(server.url("/")).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{variable}: {}", stderr(&out));
        let text = stderr(&out);
        assert!(text.starts_with(&format!("poll: error: {said}")), "{variable}: {text}");
        assert!(!text.contains("s3cret"), "{text}");
        assert_eq!(text.lines().count(), 1, "{text}");
    }
}

#[test]
fn help_names_each_variable_and_hides_the_values_of_secret_ones() {
    let out = poll()
        .env("POLL_TIMEOUT", "7m")
        .env("POLL_USER", "alice:s3cret")
        .env("POLL_AUTH_CMD", "vault-s3cret")
        .env("POLL_STATE", "redis://:s3cret@127.0.0.1/")
        .env("POLL_FALLBACK", "{\"s3cret\":1}")
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("[env: POLL_TIMEOUT=7m]"), "{help}");
    for secret in ["POLL_USER", "POLL_AUTH_CMD", "POLL_STATE", "POLL_FALLBACK"] {
        assert!(help.contains(&format!("[env: {secret}]")), "{secret}: {help}");
    }
    assert!(!help.contains("s3cret"), "{help}");
    // A status list is one value; repeatable options and the URLs are not read from the environment.
    assert!(help.contains("[env: POLL_DONE_ON=]") && help.contains("[env: POLL_RETRY_ON=]"), "{help}");
    assert!(!help.contains("POLL_HEADERS") && !help.contains("POLL_URLS") && !help.contains("POLL_ARG"), "{help}");
}

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// With `TRACEPARENT` every request joins its trace with a span of its own (and `tracestate` from
/// `TRACESTATE`), `-- CMD` is handed the same trace; without it nothing is sent, and a malformed
/// one is one warning and no header.
#[test]
fn requests_and_the_command_join_the_trace_of_traceparent() {
    let server = Server::start(vec![Reply::json(200, PENDING), Reply::json(200, r#"{"status":"done"}"#)]);
    let out = poll()
        .env("TRACEPARENT", TRACEPARENT)
        .env("TRACESTATE", "congo=t61rcWkgMzE")
        .args(["--until", ".status == \"done\"", "-i", "10ms", &server.url("/"), "--", "sh", "-c", "echo $TRACEPARENT"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let spans: Vec<String> = server
        .requests()
        .iter()
        .map(|request| {
            let parent = request.header("traceparent").unwrap_or_default();
            assert!(parent.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-") && parent.ends_with("-01"), "{parent}");
            assert_eq!(request.header("tracestate"), Some("congo=t61rcWkgMzE"));
            parent[36..52].to_string()
        })
        .collect();
    assert_eq!(spans.len(), 2);
    assert_ne!(spans[0], spans[1], "each attempt is a span of its own");
    assert!(spans.iter().all(|span| span != "00f067aa0ba902b7"), "the parent's own span is not reused");
    let handed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        handed.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-") && handed.len() == TRACEPARENT.len(),
        "{handed}"
    );

    let server = Server::start(vec![Reply::json(200, "{}")]);
    let out = poll().env_remove("TRACEPARENT").arg(server.url("/")).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(server.requests()[0].header("traceparent"), None);

    let server = Server::start(vec![Reply::json(200, "{}")]);
    let out = poll().env("TRACEPARENT", "00-not-a-trace").arg(server.url("/")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests()[0].header("traceparent"), None);
    assert_eq!(stderr(&out).matches("TRACEPARENT is not a W3C traceparent").count(), 1, "{}", stderr(&out));
}

/// The JSON log's final object says which schema it follows and which poll wrote it.
#[test]
fn the_json_logs_final_object_carries_its_schema_and_version() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    let out = poll().args(["--log-format", "json", &server.url("/")]).output().unwrap();
    let last: serde_json::Value = serde_json::from_str(stderr(&out).lines().last().unwrap_or_default()).unwrap();
    assert_eq!((&last["event"], &last["schema"]), (&"done".into(), &1.into()));
    assert_eq!(last["version"], env!("CARGO_PKG_VERSION"));
}
