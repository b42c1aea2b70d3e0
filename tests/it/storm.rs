//! End-to-end tests of the fleet that never becomes the storm: `--retry-budget`
//! and `--rate auto`, with real `poll` processes sharing one `--state` (a file,
//! a redis-server node, a three-master cluster) against the scripted loopback
//! server. The rules themselves are table-tested (`tests/it/policy.rs`,
//! `src/rules/budget.rs`, `src/rules/cubic.rs`), their Lua twins over the same
//! tables, bit for bit, in `src/state/redis/twins.rs`, and the Lua scripts
//! against the file store's rules in `src/state/redis/mod.rs`.

use crate::support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::process::{Folder, Running, run, serial, stderr, stdout, warnings};
use support::redis::{Cluster, Redis, state_key};
use support::server::{Reply, Server};

const PENDING: &str = r#"{"done":false}"#;
const DONE: &str = r#"{"done":true}"#;

/// Where the fleet keeps its state: a file, a node, a cluster.
#[derive(Debug, Clone, Copy)]
enum Backend {
    File,
    Redis,
    Cluster,
}

/// One test's store; `None` (the test is skipped, loudly) where redis-server is missing.
struct Store {
    arg: String,
    redis: Option<Redis>,
    _cluster: Option<Cluster>,
    folder: Folder,
}

impl Backend {
    fn store(self, name: &str) -> Option<Store> {
        let folder = Folder::new(&format!("storm-{name}-{self:?}"));
        Some(match self {
            Backend::File => Store { arg: folder.file("fleet.state"), redis: None, _cluster: None, folder },
            Backend::Redis => {
                let redis = Redis::start()?;
                Store { arg: redis.url(), redis: Some(redis), _cluster: None, folder }
            }
            Backend::Cluster => {
                let cluster = Cluster::start()?;
                Store { arg: cluster.url(1), redis: None, _cluster: Some(cluster), folder }
            }
        })
    }
}

/// The JSON log's attempt objects of a run's stderr.
fn attempts(out: &std::process::Output) -> Vec<Value> {
    stderr(out)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"] == "attempt")
        .collect()
}

/// `--retry-budget 0%/1`: ten retries over 10 s for the whole fleet whatever else it sends. A
/// first process spends them at once (backoff 0) and its next retry is held back: no request,
/// the next regular poll 2 s later (no room for its retry either), then its 3 s deadline. A
/// second process, sharing the state, has no retry at all: two regular polls. Without the
/// budget the first would send 31 requests in milliseconds.
fn the_floor_is_shared_and_a_held_back_retry_sends_nothing(backend: Backend) {
    let _serial = serial();
    let Some(store) = backend.store("floor") else { return };
    let server = Server::start(vec![Reply::status(503)]).expect_hits(14);
    let url = server.url("/status");
    let args = |extra: &[&str]| {
        // The breaker would open on so many failures: these tests are of the budget alone.
        let mut args =
            vec!["--state", &store.arg, "--state-key", "api", "--retry-budget", "0%/1", "--breaker-min-success", "0%"];
        args.extend_from_slice(&["--retries", "30", "--backoff", "0", "-i", "2s", "--timeout", "3s"]);
        args.extend_from_slice(extra);
        args.push(&url);
        args.iter().map(|arg| arg.to_string()).collect::<Vec<String>>()
    };
    let first = args(&["--log-format", "json"]);
    let out = run(&first.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(server.hits(), 12, "one request, the ten retries of the floor, one regular poll");
    let seen = attempts(&out);
    assert_eq!(seen.len(), 12, "{}", stderr(&out));
    assert!(seen[..10].iter().all(|a| a["action"] == "retry"), "{}", stderr(&out));
    assert_eq!(seen[10]["action"], "held_back", "{}", stderr(&out));
    assert_eq!(seen[10]["wait_reason"], "interval");
    assert_eq!(seen[10]["wait_ms"], 2000);
    assert_eq!(seen[10]["retry_budget"], serde_json::json!({"retries": 10, "requests": 11}));
    assert_eq!(seen[11]["action"], "stop", "held back again, and the deadline is nearer: {}", stderr(&out));

    let second = args(&["-v"]);
    let started = Instant::now();
    let out = run(&second.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(started.elapsed() >= Duration::from_millis(1_900), "it waited for its next regular poll, not a retry");
    assert_eq!(server.hits(), 14, "the second process's two regular polls, no retry");
    let held = "attempt 1: 503 in ";
    let line = stderr(&out).lines().find(|line| line.starts_with(held)).map(str::to_string).unwrap_or_default();
    assert!(
        line.ends_with(
            "-> retry held back (retry budget: 10 retries of 13 requests in 10s); next poll in 2.0s (interval)"
        ),
        "{}",
        stderr(&out)
    );
    drop(store.folder);
}

/// `--retry-budget 50%/0`: retries are half the fleet's other requests. One process's regular
/// polls of one URL (not yet, at a tight interval) give another, on a failing URL under the same
/// state key, room for exactly half as many retries.
fn retries_are_a_share_of_the_fleets_other_requests(backend: Backend) {
    let _serial = serial();
    let Some(store) = backend.store("share") else { return };
    // Twenty regular polls: nineteen not yet, then done.
    let mut replies = vec![Reply::json(200, PENDING); 19];
    replies.push(Reply::json(200, DONE));
    let healthy = Server::start(replies).expect_hits(20);
    // Its own first request is a regular one too: 21 requests, room for a retry while 2 * (retries + 1) <= 21.
    let failing = Server::start(vec![Reply::status(503)]).expect_hits(1 + 10);
    let common =
        ["--state", &store.arg, "--state-key", "api", "--retry-budget", "50%/0", "--breaker-min-success", "0%"];
    let (healthy_url, failing_url) = (healthy.url("/"), failing.url("/"));
    let out = run(&[&common[..], &["--until", ".done", "-i", "10ms", &healthy_url]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let failer =
        [&common[..], &["--retries", "100", "--backoff", "0", "-i", "5s", "--timeout", "1s", &failing_url]].concat();
    let out = run(&failer);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(failing.hits(), 11, "{}", stderr(&out));
}

/// `--rate auto`: no limit until the first 429; the 429 cuts the fleet's rate to 0.7 of what it
/// was sending over its last second, and the retry waits its turn at that rate; a process started
/// later starts at the fleet's rate, grown back along the curve since the cut.
fn a_429_teaches_the_fleet_a_rate_that_a_later_process_starts_at(backend: Backend) {
    let _serial = serial();
    let Some(store) = backend.store("learn") else { return };
    let mut replies = vec![Reply::json(200, PENDING); 5];
    replies.extend([Reply::status(429), Reply::json(200, DONE)]);
    let server = Server::start(replies);
    let url = server.url("/job");
    let fleet = ["--state", &store.arg, "--state-key", "api", "--rate", "auto"];
    let first =
        [&fleet[..], &["--until", ".done", "-i", "50ms", "--backoff", "5s", "--log-format", "json", &url]].concat();
    let started = Instant::now();
    let out = run(&first);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
    let seen = attempts(&out);
    assert_eq!(seen.len(), 7, "{}", stderr(&out));
    assert!(seen[..6].iter().all(|a| a.get("rate").is_none()), "no limit before the first 429: {}", stderr(&out));
    // Six requests in about 300 ms: the rate cut is 0.7 of about six a second, far under the 5 s backoff.
    assert_eq!(seen[5]["status"], 429);
    assert_eq!(seen[5]["wait_reason"], "rate", "{}", stderr(&out));
    let rate = seen[6]["rate"].as_f64().unwrap_or_default();
    assert!((2.0..=6.0).contains(&rate), "learned {rate}/s: {}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(3), "the retry waited its turn, not the backoff");

    let later = Server::start(vec![Reply::json(200, DONE)]).expect_hits(1);
    std::thread::sleep(Duration::from_millis(1_500));
    let later_url = later.url("/job");
    let second = [&fleet[..], &["--until", ".done", "--log-format", "json", &later_url]].concat();
    let out = run(&second);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let grown = attempts(&out)[0]["rate"].as_f64().unwrap_or_default();
    assert!(grown > rate, "1.5 s after the cut the rate grew back along the curve: {rate} -> {grown}");
    // What the store keeps: the rate the fleet was sending at the cut.
    let kept = match &store.redis {
        Some(redis) => {
            let text: String = redis.query(&["GET", &state_key("api", "learned")]);
            serde_json::from_str::<Value>(&text).unwrap_or_default()
        }
        None if matches!(backend, Backend::File) => {
            let text = std::fs::read_to_string(&store.arg).unwrap_or_default();
            serde_json::from_str::<Value>(&text).unwrap_or_default()["origins"]["api"]["learned"].clone()
        }
        None => Value::Null,
    };
    if !matches!(backend, Backend::Cluster) {
        let sending = kept["w_max"].as_f64().unwrap_or_default();
        assert!((rate / 0.7 - sending).abs() < 0.5, "kept {kept} for a cut to {rate}");
    }
}

/// `--rate auto` paces the whole fleet once learned: three processes each sending four requests
/// as fast as they can share the learned rate's turns.
fn the_learned_rate_paces_every_process_sharing_it(backend: Backend) {
    let _serial = serial();
    let Some(store) = backend.store("pace") else { return };
    let server = Server::start(vec![Reply::status(429), Reply::json(200, PENDING)]);
    let url = server.url("/job");
    let fleet = ["--state", &store.arg, "--state-key", "api", "--rate", "auto"];
    // A 429 to the first request: the fleet sent one a second, and now sends 0.7 a second and up.
    let out = run(&[&fleet[..], &["--until", "true", "--backoff", "10ms", &url]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 2);
    let started = Instant::now();
    let children: Vec<Running> = (0..3)
        .map(|_| Running::spawn(&[&fleet[..], &["--until", "true", "--stable", "3", "-i", "0", &url]].concat()))
        .collect();
    for child in children {
        let out = child.wait();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    // Nine requests at a rate that starts near 1/s and grows: seconds, where alone they take milliseconds.
    assert_eq!(server.hits(), 11);
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(1_500), "nine requests under the learned rate took only {took:?}");
    assert!(took < Duration::from_secs(30), "{took:?}");
}

/// `--state-fail open` with a store that is down: the process keeps a budget and a rate of its own.
#[test]
fn a_dead_store_under_state_fail_open_leaves_each_process_its_own_budget() {
    let port = support::redis::free_port();
    let dead = format!("redis://127.0.0.1:{port}");
    let server = Server::start(vec![Reply::status(503)]).expect_hits(11);
    let args = ["--state", &dead, "--retry-budget", "0%/1", "--retries", "30", "--backoff", "0", "-i", "2s"];
    let out = run(&[&args[..], &["--timeout", "1s", &server.url("/")]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let warned = warnings(&out);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("going on with this process's own limits (--state-fail open)"), "{warned:?}");
    assert_eq!(server.hits(), 11, "its own floor of ten retries, then held back");
}

#[test]
fn a_dead_store_under_state_fail_open_leaves_each_process_its_own_rate() {
    let port = support::redis::free_port();
    let dead = format!("redis://127.0.0.1:{port}");
    let server = Server::start(vec![Reply::status(429), Reply::json(200, PENDING)]);
    let args = ["--state", &dead, "--rate", "auto", "--until", ".done", "-i", "0", "--log-format", "json"];
    let out = run(&[&args[..], &["--timeout", "3s", &server.url("/")]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let seen = attempts(&out);
    assert!(seen.len() >= 2 && seen.len() <= 6, "paced by its own learned rate: {} attempts", seen.len());
    assert!(seen[1]["rate"].as_f64().is_some_and(|rate| rate > 0.0), "{}", stderr(&out));
}

#[test]
fn both_flags_without_state_and_bad_budgets_are_usage_errors() {
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let url = server.url("/");
    let rows: [(&[&str], &str); 5] = [
        (&["--rate", "auto"], "--rate: `auto` needs --state, where the fleet shares the rate it learns"),
        (&["--retry-budget", "20%"], "--state"),
        (&["--state", "x.state", "--retry-budget", "20"], "is not a retry budget; use PCT% or PCT%/N"),
        (&["--state", "x.state", "--retry-budget", "120%"], "is not a retry budget"),
        (&["--state", "x.state", "--retry-budget", "20%/x"], "is not a retry budget"),
    ];
    for (args, says) in rows {
        let out = run(&[args, &[url.as_str()]].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert_eq!(
            stderr(&out).lines().count(),
            1 + usize::from(stderr(&out).contains("Usage")) * 2,
            "{}",
            stderr(&out)
        );
    }
}

/// What another program wrote where the fleet's counts and rate live is absent, said once; the run goes on.
#[test]
fn odd_stored_counts_and_rates_are_absent_and_said_once() {
    let _serial = serial();
    let folder = Folder::new("storm-odd");
    let state = folder.file("fleet.state");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    for (part, value) in [
        ("learned", format!(r#"{{"w_max":-3,"cut_at_ms":{now}}}"#)),
        ("learned", format!(r#"{{"w_max":"fast","cut_at_ms":{now}}}"#)),
        ("learned", format!(r#"{{"w_max":2000000,"cut_at_ms":{now}}}"#)),
        ("traffic", r#""lots""#.to_string()),
        ("traffic", "[[1,2]]".to_string()),
    ] {
        let text = format!(r#"{{"version":1,"origins":{{"api":{{"{part}":{value}}}}}}}"#);
        std::fs::write(&state, text).expect("write");
        let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(1);
        let args = ["--state", &state, "--state-key", "api", "--rate", "auto", "--retry-budget", "20%"];
        let out = run(&[&args[..], &["--log-format", "json", "--until", ".done", &server.url("/")]].concat());
        assert_eq!(out.status.code(), Some(0), "{part} {value}: {}", stderr(&out));
        let warned: Vec<String> =
            stderr(&out).lines().filter(|l| l.contains("treated as absent")).map(String::from).collect();
        assert_eq!(warned.len(), 1, "{part} {value}: {}", stderr(&out));
        assert!(attempts(&out)[0].get("rate").is_none(), "no learned rate: {}", stderr(&out));
    }
    let Some(redis) = Redis::start() else { return };
    for (part, value) in
        [("learned", "nope"), ("learned", r#"{"w_max":0.1,"cut_at_ms":1}"#), ("traffic", "[[1,2]]"), ("queue", "-5")]
    {
        let _: () = redis.query(&["SET", &state_key("api", part), value]);
        let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(1);
        let args = ["--state", &redis.url(), "--state-key", "api", "--rate", "auto", "--retry-budget", "20%"];
        let out = run(&[&args[..], &["--until", ".done", &server.url("/")]].concat());
        assert_eq!(out.status.code(), Some(0), "{part} {value}: {}", stderr(&out));
        let key = state_key("api", part);
        let warned = warnings(&out);
        assert_eq!(warned.len(), 1, "{part} {value}: {warned:?}");
        assert!(warned[0].contains(&format!("`{key}` holds a value poll did not write")), "{warned:?}");
        let _: () = redis.query(&["FLUSHALL"]);
    }
}

/// One `#[test]` per store for each test of behaviour all stores share.
macro_rules! on_every_store {
    ($($name:ident),* $(,)?) => {
        mod on_file {
            $(#[test] fn $name() { super::$name(super::Backend::File) })*
        }
        mod on_redis {
            $(#[test] fn $name() { super::$name(super::Backend::Redis) })*
        }
        mod on_a_cluster {
            $(#[test] fn $name() { super::$name(super::Backend::Cluster) })*
        }
    };
}

on_every_store!(
    the_floor_is_shared_and_a_held_back_retry_sends_nothing,
    retries_are_a_share_of_the_fleets_other_requests,
    a_429_teaches_the_fleet_a_rate_that_a_later_process_starts_at,
    the_learned_rate_paces_every_process_sharing_it,
);
