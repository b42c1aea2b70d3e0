//! End-to-end tests of `--state` on the Redis a fleet is given when it is not
//! one node: a three-master Redis Cluster (`redis://ANY-NODE`) and a Sentinel
//! group (`redis+sentinel://`). Each test starts its own servers
//! (`support::redis`), on free loopback ports, stopped by their PIDs.

use crate::support;

use std::time::{Duration, Instant};

use support::breaker::open_breaker;
use support::process::{Folder, Running, busiest_second, five_requests_each, run, serial, stderr, stdout, warnings};
use support::redis::{Cluster, SentinelGroup, certificates, free_port, state_key};
use support::server::{Reply, Server};

const PENDING: &str = r#"{"done":false}"#;
const DONE: &str = r#"{"done":true}"#;

/// Two nodes other than the one that serves `slot`, and that one.
fn others(cluster: &Cluster, slot: u16) -> (usize, usize, usize) {
    let owner = cluster.owner(slot);
    let mut rest = (0..3).filter(|n| *n != owner);
    (rest.next().unwrap_or(0), rest.next().unwrap_or(0), owner)
}

#[test]
fn processes_seeded_at_different_nodes_share_one_rate_and_every_key_sits_in_one_slot() {
    let _serial = serial();
    let Some(cluster) = Cluster::start() else { return };
    let slot = cluster.keyslot("token-a");
    // 409 is retried and is an answer, so the breaker stays closed: five requests each.
    let server = Server::start(vec![Reply::status(409)]);
    let url = server.url("/jobs");
    let started = Instant::now();
    five_requests_each(6, |i| {
        let node = cluster.url(i % 3);
        ["--state", &node, "--state-fail", "closed", "--fallback", "last", &url].map(str::to_string).to_vec()
    });
    let took = started.elapsed();
    assert_eq!(server.hits(), 30);
    assert!(took >= Duration::from_millis(2_800), "30 requests at 10/s took only {took:?}");
    let busiest = busiest_second(&[&server]);
    assert!(busiest <= 11, "{busiest} requests in one second at --rate 10/s");

    // Every key of the state key is on the node that serves its slot, and in that slot.
    let keys = cluster.keys();
    assert_eq!(keys, ["breaker", "rate"].map(|part| state_key("token-a", part)), "the key layout");
    for key in &keys {
        assert_eq!(cluster.keyslot(key), slot, "{key}");
    }
    let owner = cluster.owner(slot);
    assert_eq!(cluster.node(owner).keys(), keys, "all on node {owner}");
    // Two steps an attempt, each one EVALSHA on the owner, and none anywhere else.
    let evalsha = cluster.calls("evalsha");
    assert_eq!(evalsha.iter().sum::<u64>(), evalsha[owner], "{evalsha:?}");
    assert!(evalsha[owner] >= 60, "{evalsha:?}");
}

#[test]
fn a_breaker_opened_through_one_node_turns_away_a_process_seeded_at_another() {
    let _serial = serial();
    let Some(cluster) = Cluster::start() else { return };
    let server = Server::start(vec![Reply::status(503)]);
    let (a, b, owner) = others(&cluster, cluster.keyslot(&server.origin()));
    open_breaker(&server, &cluster.url(a), &["--state-fail", "closed"]);
    for seed in [b, owner] {
        let out = run(&["--state", &cluster.url(seed), "--state-fail", "closed", &server.url("/other")]);
        assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(&format!("circuit open for {}", server.origin())), "{err}");
        assert!(err.contains("5 of the last 5 requests failed"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert_eq!(server.hits(), 5, "an open breaker sends nothing");
    assert_eq!(cluster.node(owner).keys(), [state_key(&server.origin(), "breaker")]);
}

/// A state key that is empty or starts with `}` would make an empty hash tag
/// (the whole key hashed, each part in a slot of its own: CROSSSLOT): it is
/// given a `\` in front.
#[test]
fn odd_state_keys_still_keep_their_keys_in_one_slot() {
    let _serial = serial();
    let Some(cluster) = Cluster::start() else { return };
    let server = Server::start(vec![Reply::json(200, DONE)]);
    for key in ["", "}", "}x{y}", "\\", "a}b", "{a}"] {
        let out = run(&[
            "--state",
            &cluster.url(0),
            "--state-key",
            key,
            "--state-fail",
            "closed",
            "--rate",
            "1/s",
            &server.url("/"),
        ]);
        assert_eq!(out.status.code(), Some(0), "--state-key {key:?}: {}", stderr(&out));
    }
    let keys = cluster.keys();
    assert_eq!(keys.len(), 12, "a rate and a breaker each: {keys:?}");
    for pair in keys.chunks(2) {
        assert_eq!(cluster.keyslot(&pair[0]), cluster.keyslot(&pair[1]), "{pair:?}");
    }
    assert!(keys.contains(&"poll:{\\}x{y}}:rate".to_string()), "{keys:?}");
    assert!(keys.contains(&"poll:{\\\\}:rate".to_string()), "{keys:?}");
}

/// A slot moved to another node while a run polls (IMPORTING, MIGRATING,
/// MIGRATE, NODE, held half-moved for a while as a big slot would be) costs
/// no failure: `TRYAGAIN` is waited out within the step, `MOVED` followed.
#[test]
fn a_slot_migrated_mid_run_costs_no_failure() {
    let _serial = serial();
    let Some(cluster) = Cluster::start() else { return };
    let slot = cluster.keyslot("moving");
    let (to, other, from) = others(&cluster, slot);
    let script = [vec![Reply::json(200, PENDING); 59], vec![Reply::json(200, DONE)]].concat();
    let server = Server::start(script);
    let args = [
        "--state",
        &cluster.url(other),
        "--state-key",
        "moving",
        "--state-fail",
        "closed",
        "--rate",
        "20/s",
        "-i",
        "0",
        "--until",
        ".done",
        &server.url("/"),
    ];
    let child = Running::spawn(&args);
    assert!(server.wait_hits(10, Duration::from_secs(10)));
    cluster.migrate(slot, from, to, Duration::from_millis(300));
    assert!(server.wait_hits(30, Duration::from_secs(10)));
    // And back, with no pause.
    cluster.migrate(slot, to, from, Duration::ZERO);
    let out = child.wait();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
    assert_eq!(stderr(&out), "", "no warning, no failure");
    assert_eq!(server.hits(), 60);
    assert_eq!(cluster.owner(slot), from);
    assert_eq!(cluster.node(from).keys(), ["breaker", "rate"].map(|part| state_key("moving", part)));
    // The shared rate held through both moves: 60 requests at 20/s.
    let requests = server.requests();
    let span = requests[59].at.duration_since(requests[0].at);
    assert!(span >= Duration::from_millis(2_850), "{span:?}");
}

/// A stalled node (SIGSTOP) costs one 1 s bound, then the back-off, as a
/// stalled single node does; under `--state-fail closed` it ends the run.
#[test]
fn a_stalled_cluster_node_costs_one_bound_then_the_back_off() {
    let _serial = serial();
    let Some(cluster) = Cluster::start() else { return };
    let slot = cluster.keyslot("stalled");
    let (seed, _, owner) = others(&cluster, slot);
    let twenty = || Server::start([vec![Reply::json(200, PENDING); 19], vec![Reply::json(200, DONE)]].concat());
    let state = cluster.url(seed);
    let timed = |server: &Server, extra: &[&str]| {
        let url = server.url("/");
        let args =
            [&["--state", &state, "--state-key", "stalled", "-i", "100ms", "--until", ".done"][..], extra, &[&url]]
                .concat();
        let started = Instant::now();
        (run(&args), started, started.elapsed())
    };
    let answering = twenty();
    let (out, _, base) = timed(&answering, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");

    cluster.node(owner).stall();
    let stalled = twenty();
    let (out, started, took) = timed(&stalled, &[]);
    let closed = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let (closed_out, _, closed_took) = timed(&closed, &["--state-fail", "closed"]);
    cluster.node(owner).resume();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stalled.hits(), 20);
    // 19 waits of 100 ms and one 1 s bound at least, as for a single node in tests/it/redis.rs
    // (against the base, noise in the base run would count: the answering run spends a round
    // trip to the store on every poll, which the stalled run, leaving the store alone after the
    // bound, does not). The bound comes before the first request: the store is asked first.
    let first = stalled.requests()[0].at.duration_since(started);
    assert!(first >= Duration::from_millis(950), "one bound before the first request: {first:?}");
    assert!(took >= Duration::from_millis(19 * 100 + 950), "one bound: {took:?} against {base:?}");
    assert!(took < base + Duration::from_secs(2), "{took:?} against {base:?}: more than one bound");
    let warned = warnings(&out);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("Redis did not answer within 1.0s"), "{}", warned[0]);

    assert_eq!(closed_out.status.code(), Some(6), "{}", stderr(&closed_out));
    assert!(closed_took >= Duration::from_millis(950) && closed_took < Duration::from_millis(2_500), "{closed_took:?}");
    assert!(stderr(&closed_out).contains("nothing more is sent (--state-fail closed)"), "{}", stderr(&closed_out));
}

/// The master of the state key's slot is killed (SIGKILL) while a run polls:
/// its replica takes over (`cluster-node-timeout 1000`), and the run, which
/// asks the other nodes for the slot map while it leaves the store alone, is
/// on the new master sooner than the 5 s back-off; no attempt fails.
#[test]
fn a_cluster_failover_is_followed_to_the_promoted_replica() {
    let _serial = serial();
    let Some(mut cluster) = Cluster::with_replicas() else { return };
    let slot = cluster.keyslot("failover");
    let owner = cluster.owner(slot);
    let seed = (0..3).find(|n| *n != owner).unwrap_or(0);
    // About 8 s of polls at 20/s: past the failover, and past the 5 s back-off too.
    let script = [vec![Reply::json(200, PENDING); 159], vec![Reply::json(200, DONE)]].concat();
    let server = Server::start(script);
    let args =
        ["--state", &cluster.url(seed), "--state-key", "failover", "--rate", "20/s", "-i", "0", "--until", ".done"];
    let child = Running::spawn(&[&args[..], &[&server.url("/")]].concat());
    assert!(server.wait_hits(10, Duration::from_secs(10)));
    let killed = Instant::now();
    cluster.kill(owner);
    // A replica has seen no client's EVALSHA until the run reaches it as a master.
    let reached = || (3..6).any(|n| cluster.node(n).calls("evalsha") > 0);
    while !reached() {
        assert!(killed.elapsed() < Duration::from_secs(20), "the run never reached a new master");
        std::thread::sleep(Duration::from_millis(10));
    }
    let gap = killed.elapsed();
    eprintln!("cluster failover gap: {} ms from SIGKILL to the first step on the new master", gap.as_millis());
    let out = child.wait();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
    assert_eq!(server.hits(), 160, "every attempt was made");
    let warned = warnings(&out);
    assert_eq!(warned.len(), 2, "one when the store is left, one when it is back: {warned:?}");
    assert!(warned[1].contains("reachable again"), "{}", warned[1]);
    let promoted = cluster.owner(slot);
    assert!(promoted >= 3, "a replica serves the slot now: node {promoted}");
    assert!(cluster.node(promoted).calls("evalsha") > 0, "the run's steps reached the new master");
    // The node counts as failed after 1 s, then its replica is elected: sooner than the back-off.
    assert!(gap >= Duration::from_millis(1_000) && gap < Duration::from_secs(5), "{gap:?}");
}

#[test]
fn a_cluster_with_a_password_takes_it_and_never_shows_it() {
    let _serial = serial();
    let password = "cl-s3cr3t";
    let Some(cluster) = Cluster::with_password(password) else { return };
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let url = server.url("/");
    for i in 0..3 {
        let state = cluster.node(i).url_with(&format!(":{password}"));
        let out = run(&["--state", &state, "--state-fail", "closed", "-vv", &url]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(!stderr(&out).contains(password), "{}", stderr(&out));
    }
    assert_eq!(cluster.keys(), [state_key(&server.origin(), "breaker")]);
    let wrong = cluster.node(0).url_with(":wr0ng-pw");
    let out = run(&["--state", &wrong, "--state-fail", "closed", &url]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("Redis refused the user name or password") && !err.contains("wr0ng-pw"), "{err}");
    assert!(err.contains("redis://<redacted>@127.0.0.1"), "{err}");
}

/// TLS to every node, as to one: verified against the built-in roots plus
/// `--cacert`, not at all with `-k`, refused without either.
#[test]
fn a_tls_cluster_is_verified_against_cacert_and_not_at_all_with_minus_k() {
    let _serial = serial();
    let folder = Folder::new("cluster-tls");
    if !certificates(&folder.path("")) {
        return;
    }
    let (cert, key, ca) = (folder.path("leaf.pem"), folder.path("leaf.key"), folder.path("ca.pem"));
    let Some(cluster) = Cluster::with_tls(&cert, &key, &ca) else { return };
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let url = server.url("/");
    let (seed, _, owner) = others(&cluster, cluster.keyslot(&server.origin()));
    let state = cluster.url(seed);
    assert!(state.starts_with("rediss://"), "{state}");
    let ca = ca.display().to_string();
    let out = run(&["--state", &state, "--cacert", &ca, "--state-fail", "closed", &url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(cluster.node(owner).keys(), [state_key(&server.origin(), "breaker")]);
    let out = run(&["--state", &state, "-k", "--state-fail", "closed", &url]);
    assert_eq!(out.status.code(), Some(0), "-k: {}", stderr(&out));
    let out = run(&["--state", &state, "--state-fail", "closed", &url]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("invalid peer certificate: UnknownIssuer"), "{}", stderr(&out));
    assert_eq!(server.hits(), 2, "nothing is sent after the refusal");
}

/// The master is killed (SIGKILL) while two runs poll through the Sentinel
/// with one shared `--rate`: no attempt fails under `--state-fail open`, the
/// runs are on the new master within the Sentinel's failover time (they ask
/// the Sentinel again while the store is left alone, before the back-off
/// ends), and the shared rate holds before and after the failover.
#[test]
fn a_sentinel_url_follows_the_master_through_a_failover() {
    let _serial = serial();
    let Some(mut group) = SentinelGroup::start() else { return };
    let state = group.url();
    let script = [vec![Reply::json(200, PENDING); 139], vec![Reply::json(200, DONE)]].concat();
    let server = Server::routes(vec![("/a", script.clone()), ("/b", script)]);
    let (a, b) = (server.url("/a"), server.url("/b"));
    let flags = ["--state", &state, "--state-key", "fleet", "--rate", "20/s", "-i", "0", "--until", ".done"];
    let children = [&a, &b].map(|url| Running::spawn(&[&flags[..], &[url]].concat()));
    assert!(server.wait_hits(40, Duration::from_secs(10)));
    assert!(group.master.calls("evalsha") > 0, "the runs use the master");
    let killed = Instant::now();
    group.master.kill();
    // The new master has seen no client's EVALSHA until the runs reach it.
    while group.replica.calls("evalsha") == 0 {
        assert!(killed.elapsed() < Duration::from_secs(20), "no run reached the new master: {}", group.sentinel_log());
        std::thread::sleep(Duration::from_millis(10));
    }
    let gap = killed.elapsed();
    let promoted = group.master_port();
    eprintln!("failover gap: {} ms from SIGKILL to the first step on the new master", gap.as_millis());
    for child in children {
        let out = child.wait();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stdout(&out), DONE);
        let warned = warnings(&out);
        assert_eq!(warned.len(), 2, "one when the store is left, one when it is back: {warned:?}");
        assert!(warned[0].contains("cannot reach Redis"), "{}", warned[0]);
        assert!(warned[1].contains("reachable again"), "{}", warned[1]);
    }
    assert_eq!(server.hits(), 280, "every attempt was made");
    assert_eq!(promoted, Some(group.replica.port()));
    // Down after 1 s, then the Sentinel's failover (up to a second's random delay,
    // a second for the promotion to show): sooner than the 5 s back-off, since the
    // runs ask the Sentinel again while they leave the store alone.
    assert!(gap >= Duration::from_millis(1_000) && gap < Duration::from_secs(5), "{gap:?}");
    // The shared budget, on both sides: at most 20 a second before the kill, and
    // again from a second after the runs reached the new master (between, each run
    // keeps its own --rate). Up to 24 in a second: a request sent late under load
    // (22 were seen) comes less than its 50 ms before the next, which keeps its turn;
    // two budgets would be 40.
    let requests = server.requests();
    let before: Vec<Instant> = requests.iter().map(|r| r.at).filter(|at| *at < killed).collect();
    let after: Vec<Instant> =
        requests.iter().map(|r| r.at).filter(|at| *at > killed + gap + Duration::from_secs(1)).collect();
    assert!(before.len() >= 40 && after.len() >= 40, "{} before, {} after", before.len(), after.len());
    for (side, at) in [("before", before), ("after", after)] {
        let busiest = at
            .iter()
            .map(|start| at.iter().filter(|t| **t >= *start && **t < *start + Duration::from_secs(1)).count())
            .max();
        assert!(busiest.unwrap_or(0) <= 24, "{side} the failover: {busiest:?} requests in one second at --rate 20/s");
    }
}

#[test]
fn a_sentinel_url_takes_the_data_nodes_password_and_says_what_the_sentinels_do_not_know() {
    let _serial = serial();
    let password = "s3nt-Pa55";
    let Some(group) = SentinelGroup::with_password(password) else { return };
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let url = server.url("/");
    let out = run(&["--state", &group.url_with(&format!(":{password}")), "--state-fail", "closed", "-vv", &url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains(password), "{}", stderr(&out));
    assert_eq!(group.master.keys(), [state_key(&server.origin(), "breaker")]);

    let out = run(&["--state", &group.url_with(":wr0ng-pw"), "--state-fail", "closed", &url]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("Redis refused the user name or password") && !err.contains("wr0ng-pw"), "{err}");
    assert!(err.contains("redis+sentinel://<redacted>@127.0.0.1"), "{err}");

    let unknown = format!("redis+sentinel://:{password}@127.0.0.1:{}/nope", group.sentinel_port());
    let out = run(&["--state", &unknown, "--state-fail", "closed", &url]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("the Sentinels know no master named `nope`"), "{}", stderr(&out));

    // No Sentinel there: open goes on with its own limits after one warning.
    let nobody = format!("redis+sentinel://127.0.0.1:{},127.0.0.1:{}/m", free_port(), free_port());
    let out = run(&["--state", &nobody, &url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let warned = warnings(&out);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("no Sentinel answered: cannot reach Redis"), "{}", warned[0]);
    assert_eq!(server.hits(), 2);
}
