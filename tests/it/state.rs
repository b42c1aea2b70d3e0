//! End-to-end tests of `--rate`, `--state`, the circuit breaker and
//! `--fallback`, with real `poll` processes side by side and one after another
//! against the scripted loopback server; what both stores do runs on a state
//! file and on a redis-server of the test's own (`tests/it/redis.rs` has the rest).

use crate::support;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::breaker::open_breaker;
use support::process::{Folder, Running, before_their_turn, busiest_second, run, serial, stderr, stdout};
use support::redis::{Redis, state_key};
use support::server::{Reply, Server};

const PENDING: &str = r#"{"done":false}"#;
const DONE: &str = r#"{"done":true}"#;

/// The state file, parsed; panics when it is not a version-1 state file.
fn read_state(path: &str) -> Value {
    let bytes = std::fs::read(path).expect("the state file exists");
    let value: Value = serde_json::from_slice(&bytes).expect("the state file is JSON");
    assert_eq!(value["version"], 1, "{value}");
    assert!(value["origins"].is_object(), "{value}");
    value
}

/// The two `--state` stores. The tests of behaviour they share take one and
/// run once on each (see `on_both_backends!` at the end).
#[derive(Debug, Clone, Copy)]
enum Backend {
    File,
    Redis,
}

impl Backend {
    /// A fresh store for one test: a file in its own folder, or a redis-server
    /// of its own. `None` (the test is skipped, loudly) where redis-server is missing.
    fn store(self, name: &str) -> Option<Store> {
        let folder = Folder::new(&format!("{name}-{self:?}"));
        let (arg, redis) = match self {
            Backend::File => (folder.file("api.state"), None),
            Backend::Redis => {
                let redis = Redis::start()?;
                (redis.url(), Some(redis))
            }
        };
        Some(Store { arg, redis, folder })
    }
}

/// One test's store, and a folder for its other files.
struct Store {
    /// The `--state` value.
    arg: String,
    redis: Option<Redis>,
    folder: Folder,
}

impl Store {
    /// The state file, parsed, for the file backend.
    fn file_state(&self) -> Option<Value> {
        self.redis.is_none().then(|| read_state(&self.arg))
    }

    /// The breaker of `key`: its state, cool-down (ms) and how many outcomes its window holds.
    fn breaker(&self, key: &str) -> (String, Option<u64>, usize) {
        match &self.redis {
            None => {
                let value = read_state(&self.arg);
                let breaker = &value["origins"][key]["breaker"];
                let window = breaker["window"].as_array().map_or(0, Vec::len);
                (breaker["state"].as_str().unwrap_or("closed").to_string(), breaker["cooldown_ms"].as_u64(), window)
            }
            Some(redis) => {
                let text: Option<String> = redis.query(&["GET", &state_key(key, "breaker")]);
                let breaker: Value = text.map_or(Value::Null, |t| serde_json::from_str(&t).expect("JSON"));
                let window = breaker["window"].as_array().map_or(0, Vec::len);
                (breaker["state"].as_str().unwrap_or("closed").to_string(), breaker["cooldown_ms"].as_u64(), window)
            }
        }
    }

    /// Everything the store keeps, as text, to look for what must not be there.
    fn dump(&self) -> String {
        let Some(redis) = &self.redis else { return std::fs::read_to_string(&self.arg).unwrap_or_default() };
        let mut text = String::new();
        for key in redis.keys() {
            let values: Vec<Vec<u8>> = match redis.query::<String>(&["TYPE", &key]).as_str() {
                "hash" => redis.query(&["HGETALL", &key]),
                _ => vec![redis.query(&["GET", &key])],
            };
            text.push_str(&key);
            for value in values {
                text.push(' ');
                text.push_str(&String::from_utf8_lossy(&value));
            }
            text.push('\n');
        }
        text
    }
}

fn eight_processes_share_one_rate_budget(backend: Backend) {
    let _serial = serial();
    let Some(store) = backend.store("rate8") else { return };
    let state = store.arg.clone();
    // 409 is retried (--retry-on) and is an answer, so the breaker stays closed: five requests each.
    let server = Server::start(vec![Reply::status(409)]);
    let url = server.url("/jobs");
    let args =
        ["--state", &state, "--rate", "10/s", "--retry-on", "409", "--retries", "4", "--backoff", "0", "-q", &url];
    let started = Instant::now();
    let children: Vec<Running> = (0..8).map(|_| Running::spawn(&args)).collect();
    for child in children {
        let out = child.wait();
        assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    }
    let took = started.elapsed();
    assert_eq!(server.hits(), 40);
    assert!(took >= Duration::from_millis(3_800), "40 requests at 10/s took only {took:?}");
    let busiest = busiest_second(&[&server]);
    assert!(busiest <= 11, "{busiest} requests in one second at --rate 10/s");
    if let Some(value) = store.file_state() {
        assert!(value["origins"][server.url("").trim_end_matches('/')]["next_slot_ms"].as_u64().is_some_and(|n| n > 0));
    }
}

#[test]
fn rate_alone_spaces_one_processs_requests() {
    let _serial = serial();
    let server =
        Server::start(vec![Reply::json(200, PENDING); 4].into_iter().chain([Reply::json(200, DONE)]).collect());
    let started = Instant::now();
    let out = run(&["--rate", "5/s", "-i", "0", "--until", ".done", &server.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    // Each in its turn, 200 ms apart from the start (not each 180 ms after the one before, which a
    // request sent late breaks under load); the last one 800 ms after the start at least.
    let early = before_their_turn(&requests, started, Duration::from_millis(200));
    assert_eq!(early, Vec::<String>::new(), "requests before their turn at --rate 5/s");
}

#[test]
fn a_rate_slot_past_the_deadline_stops_at_once_with_exit_1() {
    let _serial = serial();
    let server = Server::start(vec![Reply::json(200, PENDING)]);
    let started = Instant::now();
    let out = run(&["--rate", "1/10s", "-i", "0", "--timeout", "3s", "--until", ".done", &server.url("/")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(2), "it waited for a slot it could not use");
    assert_eq!(server.hits(), 1);
    let err = stderr(&out);
    assert!(err.contains("--rate") && err.contains("deadline"), "{err}");
}

fn a_breaker_opened_by_one_process_turns_the_next_away_without_a_request(backend: Backend) {
    let _serial = serial();
    let Some(store) = backend.store("breaker") else { return };
    let state = store.arg.clone();
    let server = Server::start(vec![Reply::status(503)]);
    let origin = server.url("").trim_end_matches('/').to_string();
    open_breaker(&server, &state, &[]);

    let out = run(&["--state", &state, &server.url("/other")]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert_eq!(server.hits(), 5, "an open breaker sends nothing");
    let err = stderr(&out);
    assert!(err.contains(&format!("circuit open for {origin}")), "{err}");
    assert!(err.contains("5 of the last 5 requests failed"), "{err}");
    // The time it will try again: RFC 3339, and how far ahead (30s by default).
    assert!(err.contains("Z (in 30s)") || err.contains("Z (in 29s)"), "{err}");

    let out = run(&["--state", &state, "--log-format", "json", &server.url("/")]);
    assert_eq!(out.status.code(), Some(6));
    let done: Value = stderr(&out).lines().last().and_then(|l| serde_json::from_str(l).ok()).unwrap_or_default();
    assert_eq!((done["exit_code"].as_u64(), done["reason"].as_str()), (Some(6), Some("circuit_open")), "{done}");
    assert_eq!(server.hits(), 5);

    assert_eq!(store.breaker(&origin).0, "open");
}

fn exactly_one_of_eight_processes_probes_after_the_cooldown(backend: Backend) {
    let _serial = serial();
    let Some(store) = backend.store("probe") else { return };
    let state = store.arg.clone();
    // Five quick 503s open the breaker; the probe's 503 is slow, so the others arrive while it is out.
    let mut script = vec![Reply::status(503); 5];
    script.push(Reply::status(503).delay(Duration::from_millis(300)));
    let server = Server::start(script);
    open_breaker(&server, &state, &["--breaker-cooldown", "1s"]);
    std::thread::sleep(Duration::from_millis(1_100));

    let url = server.url("/");
    let args = ["--state", &state, "--breaker-cooldown", "1s", &url];
    let children: Vec<Running> = (0..8).map(|_| Running::spawn(&args)).collect();
    let outs: Vec<Output> = children.into_iter().map(Running::wait).collect();
    assert_eq!(server.hits(), 6, "exactly one probe");
    for out in &outs {
        assert_eq!(out.status.code(), Some(6), "{}", stderr(out));
    }
    // The prober saw its probe fail: open again, for twice the cool-down.
    let probers: Vec<String> =
        outs.iter().map(stderr).filter(|e| e.contains("the probe after the cool-down failed too")).collect();
    assert_eq!(probers.len(), 1, "{probers:?}");
    assert!(probers[0].contains("(in 2s)"), "{}", probers[0]);
    let (breaker, cooldown, _) = store.breaker(server.url("").trim_end_matches('/'));
    assert_eq!((breaker.as_str(), cooldown), ("open", Some(2_000)));
}

/// A probe that hangs holds the origin for as long as it may take (its connect
/// plus request timeout, plus a second), not one cool-down: a second process
/// 0.7 s after it, past the 500 ms cool-down, is turned away and sends nothing.
fn a_hanging_probe_is_the_only_probe_in_flight(backend: Backend) {
    let _serial = serial();
    let Some(store) = backend.store("hanging-probe") else { return };
    let state = store.arg.clone();
    let mut script = vec![Reply::status(503); 5];
    script.push(Reply::hang());
    let server = Server::start(script);
    open_breaker(&server, &state, &["--breaker-cooldown", "500ms"]);
    std::thread::sleep(Duration::from_millis(600));

    let url = server.url("/");
    let args = ["--state", &state, "--breaker-cooldown", "500ms", "--request-timeout", "20s", &url];
    let prober = Running::spawn(&args);
    let prober_pid = prober.pid();
    assert!(server.wait_hits(6, Duration::from_secs(10)), "the probe arrives");
    let probed = server.requests()[5].at;
    std::thread::sleep((probed + Duration::from_millis(700)).saturating_duration_since(Instant::now()));
    let out = run(&args);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("process {prober_pid} is probing it")), "{}", stderr(&out));
    assert_eq!(server.hits(), 6, "no second probe while the first is in flight");
    let (breaker, _, _) = store.breaker(server.url("").trim_end_matches('/'));
    assert_eq!(breaker, "half_open");
    prober.kill_9();
}

/// A prober killed with kill -9 never reports: its lease (here 1 s connect +
/// 2 s request timeout + 1 s) holds the origin, and then frees it by itself.
fn a_prober_killed_with_kill_9_frees_the_origin_when_its_lease_ends(backend: Backend) {
    let _serial = serial();
    let Some(store) = backend.store("killed-prober") else { return };
    let state = store.arg.clone();
    let mut script = vec![Reply::status(503); 5];
    script.push(Reply::hang());
    script.push(Reply::json(200, DONE));
    let server = Server::start(script);
    let cooldown = ["--breaker-cooldown", "500ms"];
    open_breaker(&server, &state, &cooldown);
    std::thread::sleep(Duration::from_millis(600));

    let url = server.url("/");
    let args =
        ["--state", &state, cooldown[0], cooldown[1], "--connect-timeout", "1s", "--request-timeout", "2s", &url];
    let prober = Running::spawn(&args);
    let prober_pid = prober.pid();
    assert!(server.wait_hits(6, Duration::from_secs(10)), "the probe arrives");
    let probed = server.requests()[5].at;
    prober.kill_9();

    // The lease still runs: turned away, naming the prober.
    std::thread::sleep((probed + Duration::from_millis(1_500)).saturating_duration_since(Instant::now()));
    let out = run(&args);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("process {prober_pid} is probing it")), "{}", stderr(&out));
    assert!(stderr(&out).contains("at the latest"), "{}", stderr(&out));
    assert_eq!(server.hits(), 6);

    // After it, the next process probes, and its answer closes the breaker.
    let lease_end = probed + Duration::from_millis(4_000);
    std::thread::sleep(lease_end.saturating_duration_since(Instant::now()) + Duration::from_millis(100));
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
    assert_eq!(server.hits(), 7);
    let second = server.requests()[6].at.duration_since(probed);
    assert!(second >= Duration::from_millis(3_950), "the next probe came {second:?} after the first, inside its lease");
    let (breaker, _, _) = store.breaker(server.url("").trim_end_matches('/'));
    assert_eq!(breaker, "closed");
}

fn a_good_probe_closes_the_breaker(backend: Backend) {
    let _serial = serial();
    let Some(store) = backend.store("close") else { return };
    let state = store.arg.clone();
    let mut script = vec![Reply::status(503); 5];
    script.push(Reply::json(200, DONE));
    let server = Server::start(script);
    open_breaker(&server, &state, &["--breaker-cooldown", "500ms"]);
    let out = run(&["--state", &state, &server.url("/")]);
    assert_eq!(out.status.code(), Some(6), "still cooling down: {}", stderr(&out));
    std::thread::sleep(Duration::from_millis(600));
    for _ in 0..2 {
        let out = run(&["--state", &state, "--breaker-cooldown", "500ms", &server.url("/")]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stdout(&out), DONE);
    }
    assert_eq!(server.hits(), 7);
    let (breaker, _, window) = store.breaker(server.url("").trim_end_matches('/'));
    assert_eq!(breaker, "closed");
    assert_eq!(window, 1, "cleared by the probe, then one outcome");
}

#[test]
fn a_corrupt_state_file_is_set_aside_and_the_run_succeeds() {
    let _serial = serial();
    let folder = Folder::new("state-corrupt");
    let state = folder.file("api.state");
    std::fs::write(&state, b"garbage{").expect("write");
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let out = run(&["--state", &state, &server.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
    let err = stderr(&out);
    assert!(err.contains("warning") && err.contains("api.state.corrupt"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert_eq!(std::fs::read(folder.file("api.state.corrupt")).ok(), Some(b"garbage{".to_vec()));
    read_state(&state);

    // A file from a future poll is set aside too, not misread.
    std::fs::write(&state, br#"{"version":2,"origins":{}}"#).expect("write");
    let out = run(&["--state", &state, &server.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("unknown version 2"), "{}", stderr(&out));
    assert!(Path::new(&folder.file("api.state.corrupt.1")).exists());
    read_state(&state);
}

#[test]
fn kill_9_mid_run_leaves_a_state_file_the_next_process_reads() {
    let _serial = serial();
    let folder = Folder::new("state-kill");
    let state = folder.file("api.state");
    let server =
        Server::routes(vec![("/slow", vec![Reply::json(200, PENDING)]), ("/ready", vec![Reply::json(200, DONE)])]);

    // Killed in a long interval wait.
    let slow = server.url("/slow");
    let child = Running::spawn(&["--state", &state, "--rate", "10/s", "--until", ".done", "-i", "30s", &slow]);
    assert!(server.wait_hits(1, Duration::from_secs(10)), "the first request arrives");
    std::thread::sleep(Duration::from_millis(200));
    child.kill_9();
    read_state(&state);

    // Killed at random points of a busy run that reads and writes the file around every request.
    for round in 0..5 {
        let child = Running::spawn(&["--state", &state, "--until", ".done", "-i", "0", &slow]);
        std::thread::sleep(Duration::from_millis(150 + 37 * round));
        child.kill_9();
        read_state(&state);
    }

    let out = run(&["--state", &state, "--rate", "10/s", &server.url("/ready")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
    assert_eq!(stderr(&out), "", "nothing was set aside");
    assert!(!Path::new(&folder.file("api.state.corrupt")).exists());
}

fn fallback_is_printed_on_exit_1_5_and_6_with_the_exit_code_unchanged(backend: Backend) {
    let _serial = serial();
    let Some(store) = backend.store("fallback") else { return };
    let (folder, state) = (&store.folder, store.arg.clone());
    let fallback = r#"{"status":"unknown"}"#;

    // 5: retries spent.
    let server = Server::start(vec![Reply::status(503)]);
    let out = run(&["--retries", "0", "--fallback", fallback, &server.url("/")]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(stdout(&out), fallback);

    // 6: an open breaker; the fallback from @file, into -o.
    let server = Server::start(vec![Reply::status(503)]);
    open_breaker(&server, &state, &[]);
    let file = folder.file("fallback.json");
    std::fs::write(&file, b"[1, 2]").expect("write");
    let at_file = format!("@{file}");
    let output = folder.file("out.json");
    let out = run(&["--state", &state, "--fallback", &at_file, "-o", &output, &server.url("/")]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(std::fs::read(&output).ok(), Some(b"[1, 2]".to_vec()));

    // 1: the deadline.
    let pending = Server::start(vec![Reply::json(200, PENDING)]);
    let out = run(&["--until", ".done", "-i", "5s", "--timeout", "1s", "--fallback", fallback, &pending.url("/")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out), fallback);

    // Not on 3 (nor on 0 or 4): a permanent answer is an answer.
    let missing = Server::start(vec![Reply::status(404)]);
    let out = run(&["--fallback", fallback, &missing.url("/")]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");

    // A fallback that is not JSON is a usage error, found before anything is sent.
    for bad in ["{nope", "@/no/such/file"] {
        let out = run(&["--fallback", bad, &missing.url("/")]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        assert!(stderr(&out).contains("--fallback"), "{}", stderr(&out));
    }
    assert_eq!(missing.hits(), 1);
}

fn fallback_last_prints_the_last_good_body_of_this_url(backend: Backend) {
    let _serial = serial();
    let Some(store) = backend.store("last") else { return };
    let state = store.arg.clone();
    let server = Server::routes(vec![
        ("/a", vec![Reply::json(200, r#"{"v":1}"#), Reply::status(503)]),
        ("/b", vec![Reply::json(200, r#"{"v":2}"#), Reply::status(503)]),
    ]);
    let a = server.url("/a?token=s3cret");
    // Only runs that say --fallback last keep their body.
    let out = run(&["--state", &state, &server.url("/b")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run(&["--state", &state, "--fallback", "last", &a]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), r#"{"v":1}"#);
    let text = store.dump();
    assert!(
        !text.contains(r#"{\"v\":2}"#) && !text.contains(r#"{"v":2}"#),
        "a run without --fallback last kept its body: {text}"
    );
    assert!(!text.contains("s3cret"), "a secret in the URL reached the state file: {text}");

    let out = run(&["--state", &state, "--fallback", "last", "--retries", "0", &a]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(stdout(&out), r#"{"v":1}"#);

    // Nothing kept for /b: nothing printed, the exit code as ever.
    let out = run(&["--state", &state, "--fallback", "last", "--retries", "0", &server.url("/b")]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");

    let out = run(&["--fallback", "last", &a]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--state"), "{}", stderr(&out));
}

fn server_advice_is_honoured_by_the_next_process_too(backend: Backend) {
    let _serial = serial();
    let Some(store) = backend.store("advice") else { return };
    let state = store.arg.clone();
    let server = Server::start(vec![Reply::status(429).header("Retry-After", "2"), Reply::json(200, DONE)]);
    let url = server.url("/");
    let first = Running::spawn(&["--state", &state, &url]);
    assert!(server.wait_hits(1, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(300));
    let second = Running::spawn(&["--state", &state, "-v", &url]);
    let (first, second) = (first.wait(), second.wait());
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert!(stderr(&second).contains("Retry-After or rate-limit reset, kept in --state"), "{}", stderr(&second));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for later in &requests[1..] {
        let after = later.at.duration_since(requests[0].at);
        assert!(after >= Duration::from_millis(1_900), "a request {after:?} after Retry-After: 2");
    }
}

#[test]
fn a_403_with_no_quota_left_waits_for_the_reset_like_429() {
    let _serial = serial();
    let limited = Reply::json(403, r#"{"message":"API rate limit exceeded"}"#)
        .header("X-RateLimit-Remaining", "0")
        .header("X-RateLimit-Reset", "1");
    let server = Server::start(vec![limited, Reply::json(200, DONE)]);
    let out = run(&["--json", "{}", &server.url("/")]);
    assert_eq!(out.status.code(), Some(0), "a rate-limited POST is safe to re-send: {}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let gap = requests[1].at.duration_since(requests[0].at);
    assert!(gap >= Duration::from_millis(950), "retried {gap:?} after a reset of 1s");
}

#[test]
fn state_flag_errors_are_usage_errors_before_anything_is_sent() {
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let url = server.url("/");
    for args in [
        &["--state", "/no/such/folder/api.state", &url][..],
        &["--state", env!("CARGO_TARGET_TMPDIR"), &url],
        &["--state", "s.json", "--breaker-window", "4", &url],
        &["--state", "s.json", "--breaker-min-success", "60.5", &url],
        &["--state", "s.json", "--breaker-cooldown", "0", &url],
        &["--breaker-cooldown", "1s", &url],
        &["--rate", "10", &url],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(server.hits(), 0);
}

#[test]
fn a_state_file_that_cannot_be_locked_follows_state_fail() {
    let _serial = serial();
    let folder = Folder::new("state-stuck");
    let state = folder.file("api.state");
    // Another process holds the lock and never lets go (here: this test).
    let held = std::fs::File::create(folder.file("api.state.lock")).expect("lock file");
    held.lock().expect("lock");

    let server = Server::start(vec![Reply::json(200, PENDING), Reply::json(200, DONE)]);
    let url = server.url("/");
    let started = Instant::now();
    let out = run(&["--state", &state, "--state-fail", "closed", "--until", ".done", "-i", "0", &url]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(started.elapsed() >= Duration::from_millis(950), "gave up on the lock after {:?}", started.elapsed());
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("still locked after 1.0s") && err.contains("--state-fail closed"), "{err}");
    assert_eq!(server.hits(), 0, "closed sends nothing");

    // Open: one warning naming the file, and the run goes on with its own --rate spacing.
    let started = Instant::now();
    let out = run(&["--state", &state, "--rate", "5/s", "--until", ".done", "-i", "0", &url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
    let err = stderr(&out);
    assert_eq!(err.matches("warning").count(), 1, "warned once: {err}");
    assert!(err.contains("api.state") && err.contains("this process's own limits"), "{err}");
    assert_eq!(server.hits(), 2);
    let requests = server.requests();
    for pair in requests.windows(2) {
        let gap = pair[1].at.duration_since(pair[0].at);
        assert!(gap >= Duration::from_millis(180), "own --rate 5/s kept: requests {gap:?} apart");
    }
    assert!(started.elapsed() >= Duration::from_millis(950), "each step waited its second for the lock");
    drop(held);
}

#[test]
fn a_state_file_whose_lock_cannot_be_opened_follows_state_fail() {
    let _serial = serial();
    let folder = Folder::new("state-nolock");
    let state = folder.file("api.state");
    std::fs::create_dir(folder.file("api.state.lock")).expect("a folder where the lock file goes");
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(1);
    let url = server.url("/");
    let out = run(&["--state", &state, "--state-fail", "closed", &url]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot open"), "{}", stderr(&out));
    let out = run(&["--state", &state, &url]);
    assert_eq!(out.status.code(), Some(0), "open goes on: {}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
}

#[test]
fn a_state_file_written_by_the_first_version_is_honoured() {
    let _serial = serial();
    let folder = Folder::new("state-v1");
    let state = folder.file("api.state");
    let server =
        Server::routes(vec![("/good", vec![Reply::status(503)]), ("/bad", vec![Reply::status(503)])]).expect_hits(0);
    // The fixture was written by poll 0.1.0 for an origin on port 18765, its breaker open until a
    // moment now past: point it at this test's server and make the breaker open for another minute.
    let fixture =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/state-v1.json")).expect("fixture");
    let until = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() + 60_000;
    let port = server.addr().port().to_string();
    let text = fixture.replace("18765", &port).replace("1796114048705", &until.to_string());
    std::fs::write(&state, text).expect("write");
    let good = server.url("/good?token=abc");
    let out = run(&["--state", &state, "--fallback", "last", &good]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("4 of the last 5 requests failed"), "{}", stderr(&out));
    assert_eq!(stdout(&out), r#"{"status":"green"}"#, "the kept body of that URL");
}

/// One `#[test]` per backend for each test of behaviour both stores share.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod on_file {
            $(#[test] fn $name() { super::$name(super::Backend::File) })*
        }
        mod on_redis {
            $(#[test] fn $name() { super::$name(super::Backend::Redis) })*
        }
    };
}

on_both_backends!(
    eight_processes_share_one_rate_budget,
    a_breaker_opened_by_one_process_turns_the_next_away_without_a_request,
    exactly_one_of_eight_processes_probes_after_the_cooldown,
    a_hanging_probe_is_the_only_probe_in_flight,
    a_prober_killed_with_kill_9_frees_the_origin_when_its_lease_ends,
    a_good_probe_closes_the_breaker,
    fallback_is_printed_on_exit_1_5_and_6_with_the_exit_code_unchanged,
    fallback_last_prints_the_last_good_body_of_this_url,
    server_advice_is_honoured_by_the_next_process_too,
);

/// A 2xx's Retry-After paces that URL (an operation's status), not the origin: with --state, a
/// second URL of the same origin is still polled at its interval, and no process is held by it.
#[test]
fn a_2xx_retry_after_paces_its_url_and_holds_back_no_other_of_the_origin() {
    let server = Server::routes(vec![
        ("/op/1", vec![Reply::json(200, r#"{"status":"Running"}"#).header("Retry-After", "2")]),
        ("/op/2", vec![Reply::json(200, r#"{"status":"Running"}"#)]),
    ]);
    let folder = Folder::new("state-2xx-advice");
    let state = folder.file("state.json");
    let out = support::poll()
        .args(["--state", &state, "--until", r#".status=="Succeeded""#, "-i", "200ms", "--timeout", "3s"])
        .args([server.url("/op/1"), server.url("/op/2")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let polled = |path: &str| server.requests().iter().filter(|r| r.path == path).count();
    // /op/1 polled at 0 and 2 s, then its next poll would pass the deadline: the run ends at about 2 s.
    assert_eq!(polled("/op/1"), 2, "its own Retry-After: 2 paces it");
    assert!(polled("/op/2") >= 6, "the other URL polled at its interval: {} polls", polled("/op/2"));
    let kept = read_state(&state);
    assert_eq!(kept["origins"][server.origin()]["not_before_ms"], 0, "{kept}");
}
