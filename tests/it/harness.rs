//! The test harness checks itself: the scripted server panics on drop when it was not used
//! as scripted (`tests/support/server.rs`), so that a test that stops reaching it fails.
//! A raw loopback client stands in for `poll` here, so these tests hold whatever `poll` does.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

#[cfg(unix)] // Its tests run `sh`.
use support::daemon::Daemon;
use support::server::{Reply, Server};

/// Sends `request` (a request line and headers, or anything) and returns what came back.
fn send(server: &Server, request: &str) -> String {
    let mut tcp = TcpStream::connect(server.addr()).expect("connect to the test server");
    tcp.set_read_timeout(Some(Duration::from_secs(10))).expect("set a read timeout");
    tcp.write_all(request.as_bytes()).expect("send");
    let mut reply = String::new();
    // A reset or an early close is a reply too, for these tests.
    let _ = tcp.read_to_string(&mut reply);
    reply
}

/// `GET path` on a connection of its own; returns the status line.
fn get(server: &Server, path: &str) -> String {
    let reply = send(server, &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
    reply.lines().next().unwrap_or_default().to_owned()
}

#[test]
fn a_script_played_through_passes_and_its_last_reply_repeats() {
    let server = Server::start(vec![Reply::status(503), Reply::status(200)]);
    assert_eq!(get(&server, "/"), "HTTP/1.1 503 Service Unavailable");
    assert_eq!(get(&server, "/"), "HTTP/1.1 200 OK");
    assert_eq!(get(&server, "/"), "HTTP/1.1 200 OK");
}

#[test]
#[should_panic(expected = "the script: only 1 of its 2 scripted replies were played")]
fn a_script_not_played_through_fails() {
    let server = Server::start(vec![Reply::status(503), Reply::status(200)]);
    get(&server, "/");
}

#[test]
#[should_panic(expected = "route /b: only 0 of its 1 scripted replies were played")]
fn every_route_must_be_played_through() {
    let server = Server::routes(vec![("/a", vec![Reply::status(200)]), ("/b", vec![Reply::status(200)])]);
    get(&server, "/a");
}

#[test]
#[should_panic(expected = "1 request(s) that no route answered (got 404): GET /nope?x=1")]
fn a_request_no_route_answers_gets_404_and_fails() {
    let server = Server::routes(vec![("/a", vec![Reply::status(200)])]);
    assert_eq!(get(&server, "/a"), "HTTP/1.1 200 OK");
    assert_eq!(get(&server, "/nope?x=1"), "HTTP/1.1 404 Not Found");
}

#[test]
#[should_panic(expected = "1 malformed request(s)")]
fn a_malformed_request_fails() {
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    assert!(send(&server, "garbage\r\n\r\n").starts_with("HTTP/1.1 400 "));
}

#[test]
fn expect_hits_replaces_the_default() {
    let never = Server::start(vec![Reply::status(200)]).expect_hits(0);
    let once =
        Server::routes(vec![("/a", vec![Reply::status(302), Reply::status(200)]), ("/b", vec![Reply::status(200)])])
            .expect_hits(1);
    get(&once, "/a");
    let some = Server::start(vec![Reply::status(200); 10]).expect_hits_between(2, 3);
    get(&some, "/");
    get(&some, "/");
    drop((never, once, some));
}

#[test]
#[should_panic(expected = "expected exactly 0 request(s) in all, got 1")]
fn a_server_that_must_not_be_reached_fails_when_it_is() {
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    get(&server, "/");
}

#[test]
#[should_panic(expected = "expected 2 to 3 request(s) in all, got 4")]
fn more_requests_than_expected_fail() {
    let server = Server::start(vec![Reply::status(200)]).expect_hits_between(2, 3);
    for _ in 0..4 {
        get(&server, "/");
    }
}

#[test]
fn expect_route_hits_replaces_the_default_of_that_route_only() {
    let server = Server::routes(vec![("/a", vec![Reply::status(200)]), ("/b", vec![Reply::status(200)])])
        .expect_route_hits("b", 0);
    get(&server, "/a");
}

#[test]
#[should_panic(expected = "route /a: expected exactly 1 request(s), got 2")]
fn expect_route_hits_is_exact() {
    let server = Server::routes(vec![("/a", vec![Reply::status(200)])]).expect_route_hits("/a", 1);
    get(&server, "/a");
    get(&server, "/a");
}

#[test]
#[should_panic(expected = "a server thread panicked: scripted boom")]
fn a_panic_in_a_server_thread_fails() {
    let server = Server::start(vec![Reply::panic("scripted boom")]);
    get(&server, "/");
}

#[test]
fn wait_replies_waits_for_the_reply_written_not_the_request_come() {
    let server = Server::start(vec![Reply::status(200).delay(Duration::from_secs(1))]);
    std::thread::scope(|scope| {
        let client = scope.spawn(|| get(&server, "/"));
        assert!(server.wait_hits(1, Duration::from_secs(10)));
        assert!(!server.wait_replies(1, Duration::from_millis(10)), "the reply is still held back");
        assert!(server.wait_replies(1, Duration::from_secs(10)));
        assert_eq!(client.join().unwrap(), "HTTP/1.1 200 OK");
    });
}

// The daemon helper under every real server (tests/support/daemon.rs), with `sh` as the daemon.

/// A daemon that exits before it is ready is started again, in a new folder on new ports, up to
/// five times; then the test fails with what it printed.
#[cfg(unix)]
#[test]
fn a_daemon_that_never_starts_is_tried_five_times_and_fails_with_what_it_said() {
    let mut tries = Vec::new();
    let started = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Daemon::new("sh").start(
            |cmd, dir, ports| {
                tries.push((dir.to_path_buf(), ports[0]));
                cmd.args(["-c", "echo cannot bind port $0; exit 3", &ports[0].to_string()]);
            },
            Daemon::accepting,
        )
    }));
    let why = started.err().and_then(|e| e.downcast::<String>().ok()).expect("a panic with a message");
    assert_eq!(tries.len(), 5, "{why}");
    let (_, port) = tries[4];
    assert!(why.contains("did not start after 5 tries"), "{why}");
    assert!(why.contains(&format!("exited with exit status: 3: cannot bind port {port}")), "{why}");
    assert!(tries.iter().all(|(dir, _)| !dir.exists()), "every folder is removed: {tries:?}");
}

/// A daemon is ready when its check says so, keeps what it printed, and is killed by its PID,
/// reaped, and its folder removed when dropped.
#[cfg(unix)]
#[test]
fn a_dropped_daemon_is_killed_and_its_folder_removed() {
    // A sleep of its own, to find among the processes (GNU sleep takes fractions).
    let sleep = format!("sleep 600.{}", std::process::id());
    let seen = sleep.clone();
    let daemon = Daemon::new("sh").start(
        |cmd, _, _| {
            cmd.args(["-c", &format!("echo started; exec {sleep}")]);
        },
        // Ready once the shell has become the sleep.
        move |_| support::process::command_lines().contains(&seen),
    );
    assert!(daemon.running());
    assert_eq!(daemon.output(), "started\n");
    assert!(support::process::command_lines().contains(&sleep));
    let dir = daemon.dir().to_path_buf();
    drop(daemon);
    assert!(!dir.exists(), "{} is removed", dir.display());
    assert!(support::process::none_running(&sleep, Duration::from_secs(10)), "{sleep} is killed");
}
