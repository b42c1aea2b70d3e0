//! End-to-end tests of `--state redis://` that only Redis has: processes that
//! share nothing but the server, `--state-key`, the probe's lease, a Redis
//! that is down, dies, comes back or stalls, expiries, passwords, TLS and unix
//! sockets. Each test starts its own redis-server (`support::redis`); the
//! behaviour both stores share is tested on both in `tests/it/state.rs`.

use crate::support;

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::breaker::open_breaker;
use support::process::{
    Folder, Running, before_their_turn, busiest_second, five_requests_each, run, serial, stderr, stdout, warnings,
};
use support::redis::{Redis, certificates, state_key};
use support::server::{Reply, Server};

const PENDING: &str = r#"{"done":false}"#;
const DONE: &str = r#"{"done":true}"#;

/// The breaker `poll` keeps in `redis` for `key` (JSON), or `null`.
fn breaker(redis: &Redis, key: &str) -> Value {
    let text: Option<String> = redis.query(&["GET", &state_key(key, "breaker")]);
    text.map_or(Value::Null, |text| serde_json::from_str(&text).expect("the breaker is JSON"))
}

#[test]
fn processes_that_share_only_redis_and_a_state_key_share_one_rate_budget_across_origins() {
    let _serial = serial();
    let Some(redis) = Redis::start() else { return };
    let state = redis.url();
    // Two origins (one API behind two names, say), one budget: the key is the token's, not the origin.
    // 409 is retried and is an answer, so the breaker stays closed: five requests each.
    let (a, b) = (Server::start(vec![Reply::status(409)]), Server::start(vec![Reply::status(409)]));
    let urls = [a.url("/jobs"), b.url("/jobs")];
    let started = Instant::now();
    five_requests_each(8, |i| ["--state", &state, &urls[i % 2]].map(str::to_string).to_vec());
    let took = started.elapsed();
    assert_eq!(a.hits() + b.hits(), 40);
    assert!(took >= Duration::from_millis(3_800), "40 requests at 10/s took only {took:?}");
    let busiest = busiest_second(&[&a, &b]);
    assert!(busiest <= 11, "{busiest} requests in one second at --rate 10/s");
    let keys = redis.keys();
    assert!(keys.iter().all(|k| k.starts_with("poll:{token-a}:")), "{keys:?}");
}

#[test]
fn two_state_keys_keep_two_budgets() {
    let _serial = serial();
    let Some(redis) = Redis::start() else { return };
    let state = redis.url();
    let server = Server::start(vec![Reply::status(409)]);
    let (a, b) = (server.url("/a"), server.url("/b"));
    let flags = ["--rate", "2/s", "--retry-on", "409", "--retries", "2", "--backoff", "0", "-q"];
    let started = Instant::now();
    let children: Vec<Running> = [("a", &a), ("a", &a), ("b", &b), ("b", &b)]
        .iter()
        .map(|(key, url)| Running::spawn(&[&["--state", &state, "--state-key", key][..], &flags, &[url]].concat()))
        .collect();
    for child in children {
        assert_eq!(child.wait().status.code(), Some(5));
    }
    let took = started.elapsed();
    // Six requests per key at 2/s: 2.5 s each, side by side; one shared budget would take 5.5 s.
    assert_eq!(server.hits(), 12);
    assert!(took >= Duration::from_millis(2_400), "{took:?}");
    assert!(took < Duration::from_millis(5_000), "the keys shared a budget: {took:?}");
    // Each key's requests in their turns, 500 ms apart from the start (not each 450 ms after the
    // one before, which a request sent late breaks under load).
    for path in ["/a", "/b"] {
        let requests: Vec<_> = server.requests().into_iter().filter(|r| r.path == path).collect();
        assert_eq!(requests.len(), 6, "{path}");
        let early = before_their_turn(&requests, started, Duration::from_millis(500));
        assert_eq!(early, Vec::<String>::new(), "{path}: requests before their turn at --rate 2/s");
    }
}

#[test]
fn a_breaker_opened_over_tcp_turns_away_a_process_on_the_unix_socket_without_a_request() {
    let _serial = serial();
    let Some(redis) = Redis::start() else { return };
    let server = Server::start(vec![Reply::status(503)]);
    open_breaker(&server, &redis.url(), &[]);
    let out = run(&["--state", &redis.unix_url(), &server.url("/other")]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert_eq!(server.hits(), 5, "an open breaker sends nothing");
    let err = stderr(&out);
    assert!(err.contains(&format!("circuit open for {}", server.origin())), "{err}");
    assert!(err.contains("5 of the last 5 requests failed, below --breaker-min-success 60%"), "{err}");
    assert!(err.contains("Z (in 30s)") || err.contains("Z (in 29s)"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Valkey speaks Redis's protocol: its schemes are the redis ones under other
/// names. A breaker opened through `valkey://` turns away a process that names
/// the same server as `valkey+unix://`, and the keys are where redis:// keeps them.
#[test]
fn valkey_schemes_are_the_redis_schemes() {
    let _serial = serial();
    let Some(redis) = Redis::start() else { return };
    let server = Server::start(vec![Reply::status(503); 5]);
    let valkey = redis.url().replacen("redis://", "valkey://", 1);
    open_breaker(&server, &valkey, &[]);
    let unix = redis.unix_url().replacen("redis+unix://", "valkey+unix://", 1);
    let out = run(&["--state", &unix, &server.url("/")]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("circuit open for {}", server.origin())), "{}", stderr(&out));
    assert_eq!(server.hits(), 5, "an open breaker sends nothing");
    assert_eq!(breaker(&redis, &server.origin())["state"], "open");
}

#[test]
fn retry_after_is_kept_across_runs_until_it_passes() {
    let _serial = serial();
    let Some(redis) = Redis::start() else { return };
    let state = redis.url();
    let server = Server::start(vec![Reply::status(429).header("Retry-After", "3"), Reply::json(200, DONE)]);
    let url = server.url("/");
    // The first run waits for the Retry-After and is killed during the wait.
    let first = Running::spawn(&["--state", &state, &url]);
    assert!(server.wait_hits(1, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(200));
    first.kill_9();
    let advice = state_key(&server.origin(), "advice");
    let ttl: i64 = redis.query(&["PTTL", &advice]);
    assert!((1_000..=3_000).contains(&ttl), "the advice expires when it passes: PTTL {ttl}");

    let out = run(&["--state", &state, "-v", &url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("Retry-After or rate-limit reset, kept in --state"), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let after = requests[1].at.duration_since(requests[0].at);
    assert!(after >= Duration::from_millis(2_900), "the next run sent {after:?} after Retry-After: 3");
}

#[test]
fn redis_down_at_start_warns_once_and_keeps_the_own_rate_or_ends_the_run_when_closed() {
    let _serial = serial();
    let port = support::redis::free_port();
    let state = format!("redis://127.0.0.1:{port}");
    let script = [vec![Reply::json(200, PENDING); 3], vec![Reply::json(200, DONE)]].concat();
    let server = Server::start(script);
    let url = server.url("/");
    let started = Instant::now();
    let out = run(&["--state", &state, "--rate", "5/s", "-i", "0", "--until", ".done", &url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
    let warned = warnings(&out);
    assert_eq!(warned.len(), 1, "one warning for the run: {warned:?}");
    assert!(warned[0].contains(&format!("--state `{state}`: cannot reach Redis")), "{}", warned[0]);
    assert!(warned[0].contains("going on with this process's own limits (--state-fail open)"), "{}", warned[0]);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    // In their turns, 200 ms apart from the start (not each 180 ms after the one before, which a
    // request sent late breaks under load).
    let early = before_their_turn(&requests, started, Duration::from_millis(200));
    assert_eq!(early, Vec::<String>::new(), "the own --rate 5/s was not kept");

    let closed = Server::start(vec![Reply::json(200, DONE)]);
    let out = run(&["--state", &state, "--state-fail", "closed", &closed.url("/")]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert_eq!(closed.connections(), 0, "nothing is sent under --state-fail closed");
    let err = stderr(&out);
    assert!(err.contains("cannot reach Redis") && err.contains("nothing more is sent (--state-fail closed)"), "{err}");

    // A unix socket that does not exist yet is no usage error: the server may start later.
    let out = run(&["--state", "redis+unix:///no/such/redis.sock", &closed.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(warnings(&out).len(), 1, "{}", stderr(&out));
}

#[test]
fn redis_killed_mid_run_costs_a_warning_and_is_used_again_when_it_comes_back() {
    let _serial = serial();
    let Some(mut redis) = Redis::start() else { return };
    let state = redis.url();
    // Long enough (about 8 s) to outlast the first back-off (5 s) after the kill.
    let script = [vec![Reply::json(200, PENDING); 79], vec![Reply::json(200, DONE)]].concat();
    let server = Server::start(script);
    let child = Running::spawn(&["--state", &state, "-i", "100ms", "--until", ".done", &server.url("/")]);
    assert!(server.wait_hits(3, Duration::from_secs(10)));
    redis.kill();
    assert!(server.wait_hits(6, Duration::from_secs(10)), "the run goes on without Redis");
    redis.restart();
    let out = child.wait();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
    assert_eq!(server.hits(), 80);
    // One warning when the store is left, one when it is back.
    let warned = warnings(&out);
    assert_eq!(warned.len(), 2, "{warned:?}");
    assert!(warned[0].contains("cannot reach Redis"), "{}", warned[0]);
    assert!(warned[1].contains("reachable again"), "{}", warned[1]);
    // The Redis that came back was written to again: it started empty.
    let breaker = breaker(&redis, &server.origin());
    let outcomes = breaker["window"].as_array().map_or(0, Vec::len);
    assert!(outcomes >= 3, "the breaker's window after the restart: {breaker}");
}

#[test]
fn a_connection_redis_closed_while_idle_is_made_again_without_a_failure() {
    let _serial = serial();
    // Redis closes a client idle for a second: idle for more than one whole second of its
    // clock, which ticks in seconds (checked ten times a second), so up to 2.1 s after the last
    // step. Three seconds apart, every connection is closed before the next step (two seconds
    // were a race, lost once in a full run).
    let Some(redis) = Redis::with_args(&["--timeout", "1"]) else { return };
    let script = [vec![Reply::json(200, PENDING); 2], vec![Reply::json(200, DONE)]].concat();
    let server = Server::start(script);
    let connections = || -> u32 {
        let stats: String = redis.query(&["INFO", "stats"]);
        let count = stats.lines().find_map(|l| l.strip_prefix("total_connections_received:"));
        count.and_then(|n| n.trim().parse().ok()).expect("total_connections_received")
    };
    let before = connections();
    let args = ["--state", &redis.url(), "--state-fail", "closed", "-i", "3s", "--until", ".done", &server.url("/")];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    assert_eq!(server.hits(), 3);
    // Less the query that counts: one connection, then one more after each idle spell.
    let made = connections() - before - 1;
    assert_eq!(made, 3, "connections poll made");
}

/// A server that accepts connections and never answers; holds them until dropped.
struct Stalled {
    port: u16,
    held: Arc<Mutex<Vec<TcpStream>>>,
}

impl Stalled {
    fn start() -> Stalled {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let held = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&held);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                keep.lock().unwrap_or_else(PoisonError::into_inner).push(stream);
            }
        });
        Stalled { port, held }
    }

    fn connections(&self) -> usize {
        self.held.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[test]
fn a_stalled_redis_costs_about_a_second_a_step_and_never_runs_past_the_deadline() {
    let _serial = serial();
    let stalled = Stalled::start();
    let state = format!("redis://127.0.0.1:{}", stalled.port);
    let server = Server::start(vec![Reply::json(200, DONE)]);

    // One attempt: the admit waits a second for an answer that never comes; the
    // record leaves the store alone (the back-off).
    let started = Instant::now();
    let out = run(&["--state", &state, &server.url("/")]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 1);
    assert!(took >= Duration::from_millis(950) && took < Duration::from_millis(2_500), "{took:?}");
    let warned = warnings(&out);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("Redis did not answer within 1.0s"), "{}", warned[0]);
    assert_eq!(stalled.connections(), 1, "one step tried it");

    // The deadline bounds every step: no step may run past --timeout.
    let pending = Server::start(vec![Reply::json(200, PENDING)]);
    let started = Instant::now();
    let out = run(&["--state", &state, "--timeout", "1500ms", "-i", "0", "--until", ".done", &pending.url("/")]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(took >= Duration::from_millis(1_400) && took < Duration::from_millis(2_300), "{took:?}");

    // Closed: a second, then exit 6 without a request.
    let closed = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let started = Instant::now();
    let out = run(&["--state", &state, "--state-fail", "closed", &closed.url("/")]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert_eq!(closed.connections(), 0);
    assert!(took >= Duration::from_millis(950) && took < Duration::from_millis(2_500), "{took:?}");
}

/// A store that stalls (SIGSTOP: a partition, not a refused connection)
/// costs one 1 s bound, then is left alone for the back-off: 20 attempts at
/// 100 ms take less than 2 s more than with a store that answers.
#[test]
fn a_stalled_store_costs_one_bound_then_the_back_off() {
    let _serial = serial();
    let Some(redis) = Redis::start() else { return };
    let state = redis.url();
    let twenty = || Server::start([vec![Reply::json(200, PENDING); 19], vec![Reply::json(200, DONE)]].concat());
    let args = |url: &str| ["--state", &state, "-i", "100ms", "--until", ".done", url].map(str::to_string);
    let timed = |url: &str| {
        let args = args(url);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let started = Instant::now();
        (run(&args), started.elapsed())
    };
    let answering = twenty();
    let (out, base) = timed(&answering.url("/"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");

    redis.stall();
    let stalled = twenty();
    let (out, took) = timed(&stalled.url("/"));
    redis.resume();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stalled.hits(), 20);
    // 19 waits of 100 ms and one 1 s bound at least (against the base, noise in the base run would count).
    assert!(took >= Duration::from_millis(19 * 100 + 950), "one bound: {took:?} against {base:?}");
    assert!(took < base + Duration::from_secs(2), "{took:?} against {base:?}: more than one bound");
    let warned = warnings(&out);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("Redis did not answer within 1.0s"), "{}", warned[0]);
}

/// After the back-off the store is tried again, and a store that is back
/// (SIGCONT) is used again within the same run; -v says so in between.
#[test]
fn a_stalled_store_is_used_again_after_the_back_off_when_it_is_back() {
    let _serial = serial();
    let Some(redis) = Redis::start() else { return };
    let state = redis.url();
    // About 8 s of polls: a bound, the 5 s back-off, then the store again.
    let server = Server::start([vec![Reply::json(200, PENDING); 69], vec![Reply::json(200, DONE)]].concat());
    redis.stall();
    let child = Running::spawn(&["--state", &state, "-v", "-i", "100ms", "--until", ".done", &server.url("/")]);
    assert!(server.wait_hits(3, Duration::from_secs(10)), "the run goes on without the store");
    redis.resume();
    let out = child.wait();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 70);
    let warned = warnings(&out);
    assert_eq!(warned.len(), 2, "{warned:?}");
    assert!(warned[0].contains("Redis did not answer within 1.0s"), "{}", warned[0]);
    assert!(warned[1].contains("reachable again"), "{}", warned[1]);
    assert!(stderr(&out).contains("is left alone for"), "-v says so: {}", stderr(&out));
    let breaker = breaker(&redis, &server.origin());
    let outcomes = breaker["window"].as_array().map_or(0, Vec::len);
    assert!(outcomes >= 3, "written to again after the back-off: {breaker}");
}

#[test]
fn every_key_poll_writes_expires() {
    let _serial = serial();
    let Some(redis) = Redis::start() else { return };
    let state = redis.url();
    let mut down = vec![Reply::status(503); 4];
    down.push(Reply::hang());
    let server = Server::routes(vec![
        ("/good", vec![Reply::json(200, DONE)]),
        ("/busy", vec![Reply::status(429).header("Retry-After", "20")]),
        ("/down", down),
    ]);
    // Short, so that the probe below comes soon after the breaker opened.
    let cooldown = ["--breaker-cooldown", "500ms"];
    // The breaker's window and a last good body.
    let out = run(&["--state", &state, "--fallback", "last", cooldown[0], cooldown[1], &server.url("/good")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The server's advice, kept (under a key of its own, or it would hold up the rest) by a run
    // killed while it waits.
    let busy = Running::spawn(&["--state", &state, "--state-key", "advice-run", &server.url("/busy")]);
    assert!(server.wait_hits(2, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(200));
    busy.kill_9();
    // Four 503s open the breaker (1 of 5 succeeded); the probe hangs and its prober is killed.
    let down = server.url("/down");
    let out = run(&["--state", &state, "--retries", "9", "--backoff", "0", cooldown[0], cooldown[1], &down]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    // The cool-down, and then the next process is the probe.
    std::thread::sleep(Duration::from_millis(600));
    // The probe takes a --rate slot too; its lease outlasts its 1 s + 2 s budget by a second.
    let budget = ["--connect-timeout", "1s", "--request-timeout", "2s"];
    let prober = Running::spawn(&[
        "--state",
        &state,
        "--rate",
        "1/m",
        cooldown[0],
        cooldown[1],
        budget[0],
        budget[1],
        budget[2],
        budget[3],
        &down,
    ]);
    assert!(server.wait_hits(7, Duration::from_secs(10)), "the probe arrives");
    prober.kill_9();

    let key = server.origin();
    let mut layout = vec![state_key("advice-run", "advice"), state_key("advice-run", "breaker")];
    layout.extend(["breaker", "last", "last_at", "probe", "rate"].iter().map(|part| state_key(&key, part)));
    assert_eq!(redis.keys(), layout, "the key layout");
    let (second, hour) = (1_000, 60 * 60 * 1_000);
    let bounds = [
        (state_key("advice-run", "advice"), 10 * second, 20 * second),
        (state_key("advice-run", "breaker"), hour - 60 * second, hour),
        (state_key(&key, "breaker"), hour - 60 * second, hour + 4 * second),
        (state_key(&key, "last"), 24 * hour - 60 * second, 24 * hour),
        (state_key(&key, "last_at"), 24 * hour - 60 * second, 24 * hour),
        (state_key(&key, "probe"), 2 * second, 4 * second),
        (state_key(&key, "rate"), 60 * second, 120 * second),
    ];
    for (key, low, high) in bounds {
        let ttl: i64 = redis.query(&["PTTL", &key]);
        assert!((low..=high).contains(&ttl), "{key} expires in {ttl} ms, not in {low}..={high}");
    }
}

#[test]
fn a_password_in_the_url_works_and_never_shows_even_when_it_is_wrong() {
    let _serial = serial();
    let password = "s3cr3t-Pa55";
    let Some(redis) = Redis::with_password(password) else { return };
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let url = server.url("/");
    for userinfo in [format!(":{password}"), format!("default:{password}")] {
        let state = redis.url_with(&userinfo);
        let out = run(&["--state", &state, "--state-fail", "closed", "-vv", &url]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(!stderr(&out).contains(password), "{}", stderr(&out));
    }
    assert!(!redis.keys().is_empty(), "the runs wrote their state");

    let wrong = "wr0ng-Pa55";
    for userinfo in [format!(":{wrong}"), format!("default:{wrong}"), "bob:p%40ss".to_string()] {
        let state = redis.url_with(&userinfo);
        for extra in [&["-vv"][..], &["--log-format", "json"]] {
            let out = run(&[&["--state", &state][..], extra, &[&url]].concat());
            assert_eq!(out.status.code(), Some(0), "open goes on: {}", stderr(&out));
            let err = stderr(&out);
            for secret in [wrong, password, "p%40ss", "p@ss"] {
                assert!(!err.contains(secret), "{secret} in: {err}");
            }
            assert!(err.contains("redis://<redacted>@127.0.0.1"), "{err}");
            assert!(err.contains("Redis refused the user name or password"), "{err}");
        }
        let out = run(&["--state", &state, "--state-fail", "closed", &url]);
        assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
        assert!(!stderr(&out).contains(wrong) && !stderr(&out).contains("p@ss"), "{}", stderr(&out));
    }
    // No password for a server that wants one.
    let out = run(&["--state", &redis.url(), "--state-fail", "closed", &url]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("Redis wants a password"), "{}", stderr(&out));
    // A JSON log carries the warning, and the password nowhere.
    let out = run(&["--state", &redis.url_with(&format!(":{wrong}")), "--log-format", "json", &url]);
    let objects: Vec<Value> = stderr(&out).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(objects.iter().any(|o| o.to_string().contains("Redis refused")), "{}", stderr(&out));
}

#[test]
fn rediss_verifies_the_server_against_the_builtin_roots_plus_cacert() {
    let _serial = serial();
    let folder = Folder::new("redis-tls");
    if !certificates(&folder.path("")) {
        return;
    }
    let Some(redis) = Redis::with_tls(&folder.path("leaf.pem"), &folder.path("leaf.key"), &folder.path("ca.pem"))
    else {
        return;
    };
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let url = server.url("/");
    let ca = folder.path("ca.pem").display().to_string();
    let state = redis.tls_url();
    let out = run(&["--state", &state, "--cacert", &ca, "--state-fail", "closed", &url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(redis.keys().len(), 1, "{:?}", redis.keys());

    let before = server.hits();
    let out = run(&["--state", &state, "--state-fail", "closed", &url]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("invalid peer certificate: UnknownIssuer"), "{}", stderr(&out));
    assert_eq!(server.hits(), before, "nothing is sent");
    // -k applies to rediss:// as to https://: nothing is verified.
    let out = run(&["--state", &state, "-k", "--state-fail", "closed", &url]);
    assert_eq!(out.status.code(), Some(0), "-k: {}", stderr(&out));
    assert_eq!(server.hits(), before + 1);
    // The certificate is for 127.0.0.1, not for another name of it.
    let out =
        run(&["--state", &state.replace("127.0.0.1", "localhost"), "--cacert", &ca, "--state-fail", "closed", &url]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("not valid for name"), "{}", stderr(&out));
}

/// `--state rediss://` trusts the system's roots as https:// does: a CA only in `SSL_CERT_FILE`
/// needs no `--cacert`; with `SSL_CERT_FILE` naming an empty file nothing is trusted.
#[test]
fn rediss_trusts_the_ca_in_ssl_cert_file_without_cacert() {
    let _serial = serial();
    let folder = Folder::new("redis-tls-roots");
    if !certificates(&folder.path("")) {
        return;
    }
    let Some(redis) = Redis::with_tls(&folder.path("leaf.pem"), &folder.path("leaf.key"), &folder.path("ca.pem"))
    else {
        return;
    };
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let url = server.url("/");
    let state = redis.tls_url();
    let empty = folder.path("empty.pem");
    std::fs::write(&empty, b"").expect("an empty store");
    let with_store = |store: &std::path::Path, args: &[&str]| {
        let mut cmd = support::process::poll(&["--state", &state, "-v"]);
        cmd.args(args).arg(&url).env("SSL_CERT_FILE", store);
        cmd.output().expect("run poll")
    };

    let out = with_store(&folder.path("ca.pem"), &["--state-fail", "closed"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
    assert_eq!(redis.keys().len(), 1, "the state was written over TLS: {:?}", redis.keys());
    let trusted = format!("trusted roots: 1 from SSL_CERT_FILE={}", folder.path("ca.pem").display());
    assert!(stderr(&out).contains(&trusted), "{}", stderr(&out));
    assert!(warnings(&out).is_empty(), "{:?}", warnings(&out));

    // An empty store: under --state-fail closed the run ends with 6 before anything is sent...
    let before = server.hits();
    let out = with_store(&empty, &["--state-fail", "closed"]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("invalid peer certificate: UnknownIssuer"), "{}", stderr(&out));
    assert_eq!(server.hits(), before, "nothing is sent");
    // ...and under the default (open) one warning says so and the run goes on with its own limits.
    let out = with_store(&empty, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let warned = warnings(&out);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("invalid peer certificate: UnknownIssuer"), "{warned:?}");
    assert_eq!(server.hits(), before + 1);
}

#[test]
fn state_urls_that_do_not_parse_are_usage_errors_before_anything_is_sent() {
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let url = server.url("/");
    for (state, why) in [
        ("mongodb://127.0.0.1:27017", "`mongodb://` is not a state store this poll knows"),
        ("redis://", "it has no host"),
        ("redis://127.0.0.1:0", "port `0` is not a number from 1 to 65535"),
        ("redis://127.0.0.1:99999", "the port is not a number from 1 to 65535"),
        ("rediss://:hunter2@127.0.0.1:6379/x", "the path `/x` is not a database number"),
        ("redis://bob:hunter2@:6379", "it has no host"),
        ("redis+unix://host/tmp/s", "names no host"),
    ] {
        let out = run(&["--state", state, &url]);
        assert_eq!(out.status.code(), Some(2), "{state}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(why), "{state}: {err}");
        assert!(!err.contains("hunter2"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert_eq!(server.connections(), 0);
}
