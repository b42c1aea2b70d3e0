//! End-to-end tests of `--unix-socket`: the scripted server on a Unix socket
//! in a temporary folder; a socket that appears late, a path that is no
//! socket, several URLs, `--submit`, `--state`, TLS over the socket, proxies
//! bypassed; and the Docker health recipe of docs/guide/ci.md, as written.

// `--unix-socket` is a usage error off Unix (tests/windows.sh checks that under Wine).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use support::poll;
use support::server::{Reply, Server, cert_path};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A temporary folder of this test's own, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("poll-unix-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temporary folder");
        Dir(dir)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn path_arg(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temporary path")
}

#[test]
fn a_plain_poll_goes_through_the_socket_with_the_urls_host_and_path() {
    let dir = Dir::new("plain");
    let socket = dir.join("api.sock");
    let server = Server::routes_unix(
        &socket,
        vec![("/v1/health", vec![Reply::status(503), Reply::json(200, r#"{"ok":true}"#)])],
    );
    // A host that resolves nowhere: nothing is resolved, the URL only names the Host.
    let out = poll()
        .args(["--unix-socket", path_arg(&socket), "--backoff", "10ms", "--until", ".ok"])
        .args(["--state", path_arg(&dir.join("state")), "http://docker.invalid:2375/v1/health?x=1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"ok":true}"#);
    assert_eq!(stderr(&out), "");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!((request.method.as_str(), request.path.as_str()), ("GET", "/v1/health?x=1"));
        assert_eq!(request.header("host"), Some("docker.invalid:2375"));
    }
    // --state keeps its state under the URL's origin, as over TCP.
    let state = std::fs::read_to_string(dir.join("state")).unwrap_or_default();
    assert!(state.contains("http://docker.invalid:2375"), "{state}");
    assert_eq!(server.socket_path(), socket);
}

#[test]
fn a_socket_that_appears_a_second_after_the_start_is_waited_for() {
    let dir = Dir::new("late");
    let socket = dir.join("late.sock");
    let started = Instant::now();
    let child = support::poll_std()
        .args(["--unix-socket", path_arg(&socket), "-i", "100ms", "--retries", "0"])
        .args(["-v", "http://localhost/ready"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let server = Server::start_unix(&socket, vec![Reply::json(200, r#"{"ready":true}"#)]);
    let out = child.wait_with_output().unwrap();
    let elapsed = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"ready":true}"#);
    assert!(elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(10), "{elapsed:?}");
    let err = stderr(&out);
    // Tried again as a service not up yet, several times, before the socket was there: no retry spent.
    let refused = err.lines().filter(|l| l.contains(": connection refused in ")).count();
    assert!(refused >= 4, "{err}");
    assert!(err.contains("-> poll again in 100ms (not up yet)"), "{err}");
    assert_eq!(server.hits(), 1);
    assert!(server.requests()[0].at >= started + Duration::from_secs(1));
}

#[test]
fn a_regular_file_or_a_folder_given_as_the_socket_is_exit_3_at_once() {
    let dir = Dir::new("file");
    let file = dir.join("not-a-socket");
    std::fs::write(&file, b"hello").unwrap();
    let started = Instant::now();
    let out = poll().args(["--unix-socket", path_arg(&file), "-v", "http://localhost/x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(5));
    let err = stderr(&out);
    assert_eq!(err.matches("attempt ").count(), 1, "not retried: {err}");
    let last = err.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        format!(
            "poll: error: `{}` is a regular file, not a socket: not retryable [http://localhost/x]",
            file.display()
        )
    );
    assert!(out.stdout.is_empty());

    // Each says once what it is, a device and a FIFO too.
    let fifo = dir.join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for (path, what) in
        [(dir.0.as_path(), "a folder"), (Path::new("/dev/null"), "a character device"), (&fifo, "a FIFO")]
    {
        let out = poll().args(["--unix-socket", path_arg(path), "http://localhost/x"]).output().unwrap();
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        let line =
            format!("poll: error: `{}` is {what}, not a socket: not retryable [http://localhost/x]\n", path.display());
        assert_eq!(stderr(&out), line);
    }
}

#[test]
fn a_missing_socket_is_waited_for_until_the_deadline_and_says_so() {
    let dir = Dir::new("missing");
    let socket = dir.join("never.sock");
    let out = poll()
        .args(["--unix-socket", path_arg(&socket), "--retries", "0", "-i", "100ms", "--timeout", "500ms"])
        .arg("http://localhost/x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("never reached: connection refused (no socket at `{}` (yet))", socket.display())),
        "{err}"
    );
    assert!(err.contains("is --unix-socket its socket?"), "{err}");

    // A path the kernel could never take is a usage error, before anything.
    let long = format!("/tmp/{}.sock", "x".repeat(120));
    let out = poll().args(["--unix-socket", &long, "http://localhost/x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("poll: error: --unix-socket: "), "{}", stderr(&out));
}

#[test]
fn several_urls_share_one_socket() {
    let dir = Dir::new("several");
    let socket = dir.join("api.sock");
    let server = Server::routes_unix(
        &socket,
        vec![
            ("/a", vec![Reply::json(200, r#"{"n":1}"#)]),
            ("/b", vec![Reply::json(200, r#"{"n":0}"#), Reply::json(200, r#"{"n":2}"#)]),
            ("/c", vec![Reply::json(200, r#"{"n":3}"#)]),
        ],
    );
    let out = poll()
        .args(["--unix-socket", path_arg(&socket), "--until", ".n > 0", "-i", "50ms"])
        .args(["http://localhost/a", "http://localhost/b", "http://other.test/c"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\"url\":\"http://localhost/a\",\"exit_code\":0,\"body\":{\"n\":1}}\n\
         {\"url\":\"http://localhost/b\",\"exit_code\":0,\"body\":{\"n\":2}}\n\
         {\"url\":\"http://other.test/c\",\"exit_code\":0,\"body\":{\"n\":3}}\n"
    );
    assert_eq!(server.hits(), 4);
    let hosts: Vec<String> =
        server.requests().iter().filter_map(|r| r.header("host").map(str::to_string)).collect::<Vec<_>>();
    assert!(hosts.contains(&"other.test".to_string()) && hosts.contains(&"localhost".to_string()), "{hosts:?}");
}

#[test]
fn submit_and_its_status_polls_go_through_the_socket() {
    let dir = Dir::new("submit");
    let socket = dir.join("jobs.sock");
    let server = Server::routes_unix(
        &socket,
        vec![
            ("/jobs", vec![Reply::json(202, r#"{"id":7}"#).header("Operation-Location", "/jobs/7")]),
            (
                "/jobs/7",
                vec![Reply::json(200, r#"{"status":"running"}"#), Reply::json(200, r#"{"status":"succeeded"}"#)],
            ),
        ],
    );
    let out = poll()
        .args(["--unix-socket", path_arg(&socket), "--submit", "--json", r#"{"name":"build"}"#, "-i", "50ms"])
        .arg("http://localhost/jobs")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"status":"succeeded"}"#);
    let requests = server.requests();
    let seen: Vec<(&str, &str)> = requests.iter().map(|r| (r.method.as_str(), r.path.as_str())).collect();
    assert_eq!(seen, [("POST", "/jobs"), ("GET", "/jobs/7"), ("GET", "/jobs/7")]);
    assert_eq!(requests[0].body_str(), r#"{"name":"build"}"#);
}

#[test]
fn proxy_variables_are_not_used_over_the_socket() {
    let dir = Dir::new("proxy");
    let socket = dir.join("api.sock");
    let server = Server::start_unix(&socket, vec![Reply::json(200, "{}")]);
    let proxy = Server::start(vec![Reply::status(502)]).expect_hits(0);
    let out = poll()
        .env("http_proxy", proxy.url("/"))
        .env("HTTPS_PROXY", proxy.url("/"))
        // A SOCKS proxy would be a usage error over TCP; over the socket it is not read at all.
        .env("ALL_PROXY", "socks5://127.0.0.1:1")
        .args(["--unix-socket", path_arg(&socket), "http://api.test/x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(proxy.connections(), 0);
    // Origin form, as to the server itself, never a proxy's absolute form.
    assert_eq!(server.requests()[0].path, "/x");
}

#[test]
fn https_goes_over_the_socket_checked_against_the_urls_host() {
    let dir = Dir::new("tls");
    let socket = dir.join("tls.sock");
    let server = Server::routes_unix_tls(&socket, vec![("/x", vec![Reply::json(200, r#"{"tls":true}"#)])]);
    let cacert = cert_path();
    let out = poll()
        .args(["--unix-socket", path_arg(&socket), "--cacert", path_arg(&cacert), "https://localhost/x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"tls":true}"#);
    // The certificate names localhost, not this host: permanent, as over TCP.
    let out = poll()
        .args(["--unix-socket", path_arg(&socket), "--cacert", path_arg(&cacert), "https://api.test/x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("TLS"), "{}", stderr(&out));
    assert_eq!(server.hits(), 1);
}

/// The Docker health recipe of docs/guide/ci.md, word for word (its socket path is replaced).
const RECIPE: &str = r#"poll --unix-socket /var/run/docker.sock --until '.State.Health.Status=="healthy"' --fail-when '.State.Health.Status=="unhealthy" or .State.Status=="exited"' http://localhost/containers/db/json"#;

/// The recipe's words, as a shell splits them (single quotes only), with the socket at `socket`.
fn recipe(socket: &Path) -> Vec<String> {
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/guide/ci.md")).expect("guide");
    let joined = guide.replace("\\\n", " ");
    let squeezed = joined.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(squeezed.contains(RECIPE), "docs/guide/ci.md shows the recipe the tests run");
    let mut words = Vec::new();
    let (mut word, mut quoted) = (String::new(), false);
    for c in RECIPE.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => words.push(std::mem::take(&mut word)),
            c => word.push(c),
        }
    }
    words.push(word);
    assert_eq!(words.remove(0), "poll");
    words.iter().map(|w| w.replace("/var/run/docker.sock", path_arg(socket))).collect()
}

/// `docker inspect`'s body for a container with a health check.
fn container(status: &str, health: &str) -> Reply {
    Reply::json(
        200,
        &format!(
            r#"{{"Id":"4f2c","Name":"/db","State":{{"Status":"{status}","Running":true,"Health":{{"Status":"{health}","FailingStreak":0,"Log":[]}}}}}}"#
        ),
    )
}

#[test]
fn the_docker_health_recipe_waits_for_healthy() {
    let dir = Dir::new("docker-ok");
    let socket = dir.join("docker.sock");
    let server = Server::routes_unix(
        &socket,
        vec![(
            "/containers/db/json",
            vec![container("running", "starting"), container("running", "starting"), container("running", "healthy")],
        )],
    );
    let started = Instant::now();
    let out = poll().args(recipe(&socket)).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""Health":{"Status":"healthy""#));
    assert_eq!(server.hits(), 3);
    // The default --interval, 1s, between polls.
    assert!(started.elapsed() >= Duration::from_secs(2), "{:?}", started.elapsed());
}

#[test]
fn the_docker_health_recipe_fails_on_unhealthy_or_exited() {
    let dir = Dir::new("docker-bad");
    let socket = dir.join("docker.sock");
    let server = Server::routes_unix(
        &socket,
        vec![("/containers/db/json", vec![container("running", "starting"), container("running", "unhealthy")])],
    );
    let out = poll().args(recipe(&socket)).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""Status":"unhealthy""#));
    assert_eq!(server.hits(), 2);
    drop(server);

    let server = Server::routes_unix(&socket, vec![("/containers/db/json", vec![container("exited", "starting")])]);
    let out = poll().args(recipe(&socket)).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(server.hits(), 1);
}

#[test]
fn a_socket_whose_backlog_stays_full_times_out_at_the_connect_timeout() {
    let dir = Dir::new("backlog");
    let socket = dir.join("busy.sock");
    // A listener that never accepts, with room for one waiting connection, which the test takes.
    let listener = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None).unwrap();
    listener.bind(&socket2::SockAddr::unix(&socket).unwrap()).unwrap();
    listener.listen(0).unwrap();
    let _waiting = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    let started = Instant::now();
    let out = poll()
        .args([
            "--unix-socket",
            path_arg(&socket),
            "--connect-timeout",
            "500ms",
            "--retries",
            "0",
            "--timeout",
            "1200ms",
        ])
        .args(["-v", "http://localhost/x"])
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    // Not up yet: the next try, a second later, would start past the deadline.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("attempt 1: connect timed out in "), "{}", stderr(&out));
    assert!(elapsed >= Duration::from_millis(500) && elapsed < Duration::from_secs(5), "{elapsed:?}");
}
