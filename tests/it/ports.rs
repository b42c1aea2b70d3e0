//! `tcp://` and `unix://` targets and `--done-on refused` (contract: "Ports and the server it
//! starts"): a connection opened and closed with nothing sent, the first-contact rules, every
//! address of a name, the flags that need a body refused, mixed with `http://` targets under
//! one deadline; against listeners of the test's own, a Python listener on `::1`, a real
//! redis-server started late and a real nginx stopped mid-wait.

use crate::support;

use std::io::Read as _;
use std::net::{TcpListener, TcpStream};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use support::daemon::free_port;
use support::process::Folder;
use support::server::{Reply, Server};
use support::{poll, poll_std};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The `-v` lines that name attempts, without their latency (`in 0ms`), which no test can pin.
fn attempts(output: &Output) -> Vec<String> {
    stderr(output)
        .lines()
        .filter(|line| line.starts_with("attempt "))
        .map(|line| match (line.find(" in "), line.find(" -> ")) {
            (Some(at), Some(arrow)) if at < arrow => format!("{}{}", &line[..at], &line[arrow..]),
            _ => line.to_string(),
        })
        .collect()
}

/// A listener on 127.0.0.1:`port` bound `after` from now, on a thread, kept `for_` long; the
/// bytes each connection sent, in the order they came.
fn bind_late(port: u16, after: Duration, for_: Duration) -> std::thread::JoinHandle<Vec<Vec<u8>>> {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind the late listener");
        listener.set_nonblocking(true).expect("nonblocking");
        let until = Instant::now() + for_;
        let mut sent = Vec::new();
        while Instant::now() < until {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    stream.set_nonblocking(false).expect("blocking");
                    stream.set_read_timeout(Some(Duration::from_secs(2))).expect("read timeout");
                    let mut bytes = Vec::new();
                    let _ = stream.read_to_end(&mut bytes);
                    sent.push(bytes);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        sent
    })
}

#[test]
fn a_tcp_target_is_not_up_yet_until_a_listener_binds_and_nothing_is_sent_to_it() {
    let port = free_port();
    let listener = bind_late(port, Duration::from_millis(700), Duration::from_secs(3));
    let started = Instant::now();
    let target = format!("tcp://127.0.0.1:{port}");
    let out = poll().args(["-v", "-i", "200ms", "--retries", "0", "--timeout", "20s", &target]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started.elapsed() >= Duration::from_millis(700));
    assert_eq!(out.stdout, b"", "a port has no body");
    let lines = attempts(&out);
    assert_eq!(lines[0], format!("attempt 1: tcp 127.0.0.1:{port} refused -> poll again in 200ms (not up yet)"));
    assert_eq!(lines.last().cloned(), Some(format!("attempt {}: tcp 127.0.0.1:{port} open -> done", lines.len())));
    assert!(!stderr(&out).contains("> GET"), "no request is shown: none is sent");
    // `--retries 0`: the refusals before the first contact spent none.
    assert_eq!(listener.join().unwrap(), vec![Vec::<u8>::new()], "one connection, nothing sent on it");
}

#[test]
fn a_tcp_wait_on_a_real_redis_server_started_late() {
    let _serial = support::process::serial();
    let port = free_port();
    let target = format!("tcp://127.0.0.1:{port}");
    let child = support::process::Running::spawn(&["-i", "100ms", "--timeout", "30s", &target]);
    std::thread::sleep(Duration::from_millis(500));
    let Some(_redis) = support::redis::Late::start(port) else { return };
    let out = child.wait();
    assert_eq!((out.status.code(), out.stdout.as_slice()), (Some(0), &b""[..]), "{}", stderr(&out));
}

#[test]
fn every_address_of_a_name_is_tried_and_a_python_listener_on_ipv6_loopback_is_found() {
    if !support::have_tool("python3", "apt-get install python3") {
        return;
    }
    let port = free_port();
    // Bound on ::1 only, a moment after the wait begins.
    let script = format!(
        "import socket,time\ntime.sleep(0.5)\ns=socket.socket(socket.AF_INET6)\ns.bind(('::1',{port}))\n\
         s.listen()\nc,_=s.accept()\nprint(len(c.recv(10)))\ntime.sleep(0.5)"
    );
    let listener = std::process::Command::new("python3").args(["-c", &script]).stdout(Stdio::piped()).spawn().unwrap();
    let target = format!("tcp://[::1]:{port}");
    let out = poll().args(["-v", "-i", "100ms", "--timeout", "20s", &target]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(attempts(&out).last().is_some_and(|line| line.ends_with(&format!("tcp [::1]:{port} open -> done"))));
    let said = listener.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&said.stdout).trim(), "0", "nothing was sent");
    // `localhost` names ::1 and 127.0.0.1: with neither listening, each is tried and named.
    let gone = free_port();
    let out = poll().args(["-v", "--timeout", "1s", &format!("tcp://localhost:{gone}")]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let first = attempts(&out).first().cloned().unwrap_or_default();
    assert!(first.contains(&format!("127.0.0.1:{gone} refused")), "{first}");
    assert!(stderr(&out).contains("never reached: connection refused"), "{}", stderr(&out));
}

#[test]
fn a_unix_target_waits_for_its_socket_file() {
    let folder = Folder::new("poll-ports-unix");
    let path = folder.path("db.sock");
    let target = format!("unix://{}", path.display());
    let child = poll_std()
        .args(["-v", "-i", "100ms", "--timeout", "20s", &target])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let out = child.wait_with_output().unwrap();
    drop(listener);
    assert_eq!((out.status.code(), out.stdout.as_slice()), (Some(0), &b""[..]), "{}", stderr(&out));
    let lines = attempts(&out);
    let shown = path.display();
    assert_eq!(
        lines[0],
        format!("attempt 1: unix {shown} no socket at `{shown}` (yet) -> poll again in 100ms (not up yet)")
    );
    assert!(lines.last().is_some_and(|line| line.ends_with(&format!("unix {shown} open -> done"))), "{lines:?}");
    // Never there: the deadline's line says which socket and asks after its server, not a port.
    let missing = format!("unix://{}", folder.file("never.sock"));
    let out = poll().args(["-i", "100ms", "--timeout", "500ms", &missing]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = stderr(&out);
    assert!(
        line.contains(&format!("never reached: connection refused (no socket at `{}` (yet))", &missing[7..])),
        "{line}"
    );
    assert!(line.trim_end().ends_with("; is the server up and listening on that socket?"), "{line}");
    // A regular file there is no socket, in words that name no flag the user did not give.
    let file = folder.file("plain.txt");
    std::fs::write(&file, "x").unwrap();
    let out = poll().arg(format!("unix://{file}")).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!("poll: error: `{file}` is a regular file, not a socket: not retryable [unix://{file}]\n")
    );
}

#[test]
fn done_on_refused_waits_until_nothing_listens_and_needs_no_first_contact() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let target = format!("tcp://127.0.0.1:{port}");
    let child = poll_std()
        .args(["-v", "-i", "100ms", "--timeout", "20s", "--done-on", "refused", &target])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    drop(listener);
    let out = child.wait_with_output().unwrap();
    assert_eq!((out.status.code(), out.stdout.as_slice()), (Some(0), &b""[..]), "{}", stderr(&out));
    let lines = attempts(&out);
    assert_eq!(
        lines[0],
        format!("attempt 1: tcp 127.0.0.1:{port} open, not yet gone -> poll again in 100ms (interval)")
    );
    let last = lines.last().cloned().unwrap_or_default();
    assert_eq!(last, format!("attempt {}: tcp 127.0.0.1:{port} refused -> done (--done-on refused)", lines.len()));
    // A port already closed is done at once; so is a Unix socket file that is gone.
    let out = poll().args(["--done-on", "refused", &target]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let folder = Folder::new("poll-ports-gone");
    let gone = format!("unix://{}", folder.file("gone.sock"));
    let out = poll().args(["--done-on", "refused", "-v", &gone]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(attempts(&out).len(), 1);
}

/// A template's `POLL_DONE_ON=404,410,refused` on a call with ports only: its statuses need an
/// http(s):// target, its `refused` stands, so the wait is still until the port is gone.
#[test]
fn a_done_on_variable_keeps_refused_beside_ports_alone() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let target = format!("tcp://{}", listener.local_addr().unwrap());
    let template = || {
        let mut command = poll();
        command.env("POLL_DONE_ON", "404,410,refused").args(["-v", "-i", "50ms", "--timeout", "1s", &target]);
        command
    };
    // Open: not yet gone, until the deadline (without its `refused` it would be done at once).
    let out = template().output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "ignored from the environment: POLL_DONE_ON (its statuses: the command line gives no http(s):// \
             target; `refused` is read)"
        ),
        "{}",
        stderr(&out)
    );
    assert!(attempts(&out)[0].ends_with("open, not yet gone -> poll again in 50ms (interval)"), "{}", stderr(&out));
    drop(listener);
    let out = template().output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(attempts(&out)[0].ends_with("refused -> done (--done-on refused)"), "{}", stderr(&out));
}

#[test]
fn done_on_refused_on_a_real_nginx_stopped_mid_wait() {
    let Some(mut nginx) = support::nginx::Gzip::start(&[("health.json", "{\"ok\":true}")]) else { return };
    let url = nginx.url("/health.json");
    let child = poll_std()
        .args(["-v", "-i", "100ms", "--timeout", "20s", "--done-on", "404,410,refused", &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    nginx.stop();
    let out = child.wait_with_output().unwrap();
    assert_eq!((out.status.code(), out.stdout.as_slice()), (Some(0), &b""[..]), "{}", stderr(&out));
    let lines = attempts(&out);
    assert_eq!(lines[0], "attempt 1: 200 pending -> poll again in 100ms (interval)");
    let last = lines.last().cloned().unwrap_or_default();
    assert_eq!(last, format!("attempt {}: connection refused -> done (--done-on refused)", lines.len()));
}

#[test]
fn done_on_refused_waits_through_a_draining_servers_503s_spending_no_retry() {
    // A server shutting down answers 503 for a while: still there, not a failure. --retries 1 and a
    // shared state's breaker (5 outcomes) would each have ended the run among six 503s.
    let mut replies = vec![Reply::json(200, "{}")];
    replies.extend((0..6).map(|_| Reply::status(503)));
    let server = Server::start(replies);
    let folder = Folder::new("poll-ports-draining");
    let state = folder.file("state.json");
    let url = server.url("/health");
    let child = poll_std()
        .args(["-v", "-i", "50ms", "--timeout", "20s", "--retries", "1", "--breaker-window", "5"])
        .args(["--state", &state, "--done-on", "refused", &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(server.wait_replies(7, Duration::from_secs(10)));
    drop(server);
    let out = child.wait_with_output().unwrap();
    assert_eq!((out.status.code(), out.stdout.as_slice()), (Some(0), &b""[..]), "{}", stderr(&out));
    let lines = attempts(&out);
    assert_eq!(lines[1], "attempt 2: 503 -> poll again in 50ms (interval)", "{lines:?}");
    assert_eq!(lines[6], "attempt 7: 503 -> poll again in 50ms (interval)", "{lines:?}");
    let last = lines.last().cloned().unwrap_or_default();
    assert!(last.ends_with("connection refused -> done (--done-on refused)"), "{lines:?}");
}

#[test]
fn done_on_a_status_or_refused_prints_the_statuss_body() {
    let server = Server::start(vec![Reply::json(200, "{}"), Reply::json(410, "{\"gone\":true}")]).expect_hits(2);
    let out = poll().args(["-i", "10ms", "--done-on", "404,410,refused", &server.url("/route")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"{\"gone\":true}");
}

#[test]
fn a_flag_that_needs_a_body_or_a_request_is_a_usage_error_without_an_http_target() {
    let port = free_port();
    let target = format!("tcp://127.0.0.1:{port}");
    let folder = Folder::new("poll-ports-usage");
    let output = folder.file("out");
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("--until", vec!["--until", ".ok"]),
        ("--fail-when", vec!["--fail-when", ".bad"]),
        ("--show", vec!["--show", ".x"]),
        ("--print", vec!["--print", ".x"]),
        ("--stall", vec!["--stall", "5s"]),
        ("--output", vec!["-o", &output]),
        ("--data", vec!["-d", "x"]),
        ("--json", vec!["--json", "{}"]),
        ("--request", vec!["-X", "PUT"]),
        ("--header", vec!["-H", "X-A: 1"]),
        ("--user", vec!["-u", "me:pw"]),
        ("--head", vec!["-I"]),
        ("--watch", vec!["--watch"]),
        ("--submit", vec!["--submit"]),
        ("--pending-on", vec!["--pending-on", "404"]),
        ("--fail-on", vec!["--fail-on", "500"]),
        ("--retry-on", vec!["--retry-on", "409"]),
        ("--pending-when", vec!["--pending-when", ".x"]),
        ("--done-on", vec!["--done-on", "404,refused"]),
        ("--auth-cmd", vec!["--auth-cmd", "echo token"]),
        ("--user-agent", vec!["-A", "ci/1"]),
        ("--idempotency-key", vec!["--idempotency-key", "k-1"]),
        ("--prefer-wait", vec!["--prefer-wait", "10s"]),
    ];
    for (flag, args) in cases {
        let out = poll().args(&args).arg(&target).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr(&out));
        let line = stderr(&out);
        assert!(line.starts_with(&format!("poll: error: {flag}: needs an http(s):// target")), "{flag}: {line}");
        assert_eq!(line.lines().count(), 1, "{line}");
    }
    // Beside an http:// target they apply to it; `--done-on refused` needs none.
    let server = Server::start(vec![Reply::json(200, "{\"ok\":true}")]).expect_hits(1);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let open = format!("tcp://{}", listener.local_addr().unwrap());
    let out = poll().args(["--until", ".ok", &server.url("/"), &open]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = poll().args(["--done-on", "refused", &target]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn malformed_tcp_and_unix_urls_are_usage_errors() {
    for (raw, why) in [
        ("tcp://127.0.0.1", "it needs a port"),
        ("tcp://127.0.0.1:0", "is not a number from 1 to 65535"),
        ("tcp://127.0.0.1:70000", "is not a number from 1 to 65535"),
        ("tcp://127.0.0.1:80/path", "no path, query or fragment"),
        ("tcp://127.0.0.1:80?x=1", "no path, query or fragment"),
        ("tcp://127.0.0.1:80#top", "no path, query or fragment"),
        ("tcp://me:secret@127.0.0.1:80", "a user or password means nothing here"),
        ("tcp://::1", "an IPv6 address goes in brackets: tcp://[::1]:PORT"),
        ("tcp://::1:5432", "an IPv6 address goes in brackets"),
        ("tcp://127.0.0.1:5432:22", "an IPv6 address goes in brackets"),
        ("tcp://%31%32%37.0.0.1:80", "a host name has no %-escapes"),
        ("unix://relative.sock", "give an absolute socket path"),
        ("unix:///", "give an absolute socket path"),
        ("udp://127.0.0.1:53", "a target is http://, https://, tcp://HOST:PORT or unix:///PATH"),
    ] {
        let out = poll().arg(raw).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{raw}");
        let line = stderr(&out);
        assert!(line.starts_with("poll: error: invalid URL `") && line.contains(why), "{raw}: {line}");
        assert!(!line.contains("secret"), "{line}");
    }
}

#[test]
fn ports_mix_with_http_targets_in_stdout_the_log_junit_and_the_step_summary() {
    let server = Server::start(vec![Reply::json(200, "{\"ok\":true}")]).expect_hits(1);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let open = format!("tcp://{}", listener.local_addr().unwrap());
    let folder = Folder::new("poll-ports-mix");
    let (junit, summary) = (folder.file("junit.xml"), folder.file("summary.md"));
    let url = server.url("/");
    let out = poll()
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args(["--ci", "github", "--log-format", "json", "--report-junit", &junit, &url, &open])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        stdout,
        format!(
            "{{\"url\":\"{url}\",\"exit_code\":0,\"body\":{{\"ok\":true}}}}\n{{\"url\":\"{open}\",\"exit_code\":0,\"body\":null}}\n"
        )
    );
    let objects: Vec<serde_json::Value> =
        stderr(&out).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let port = objects.iter().find(|o| o["target"] == 1).expect("the tcp target's attempt");
    assert_eq!((&port["scheme"], &port["open"], &port["action"]), (&"tcp".into(), &true.into(), &"done".into()));
    assert!(port.get("method").is_none(), "{port}");
    let last = objects.last().unwrap();
    assert_eq!(last["targets"][1]["url"], open.as_str());
    let report = std::fs::read_to_string(&junit).unwrap();
    assert!(report.contains(&format!("name=\"{open}\"")), "{report}");
    let table = std::fs::read_to_string(&summary).unwrap();
    assert!(table.contains("tcp") && table.lines().filter(|line| line.contains("| done |")).count() == 2, "{table}");
}

#[test]
fn a_ports_verbose_lines_open_their_ci_group_and_name_the_environment() {
    let closed = format!("tcp://127.0.0.1:{}", free_port());
    let attempt = format!("attempt 1: tcp {} refused", &closed["tcp://".len()..]);
    // Alone: its group opens before its lines and closes after them; the variables read are named.
    let out = poll()
        .env("POLL_TIMEOUT", "5s")
        .env("POLL_STATE_KEY", "jobs")
        .args(["--ci", "github", "-v", "--done-on", "refused", &closed])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<String> = stderr(&out).lines().map(str::to_string).collect();
    assert_eq!(lines[0], format!("::group::poll {closed}"), "{lines:?}");
    assert_eq!(lines[1], "settings from the environment: POLL_TIMEOUT", "{lines:?}");
    assert_eq!(lines[2], "ignored from the environment: POLL_STATE_KEY (only means something with --state)");
    assert!(lines[3].starts_with(&attempt), "{lines:?}");
    assert_eq!(lines[4], "::endgroup::", "{lines:?}");
    // Beside an http:// target: the port's group is written whole, as the URL's is.
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(1);
    let url = server.url("/");
    let out = poll().args(["--ci", "github", "-v", "--done-on", "200,refused", &closed, &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stderr(&out);
    let group = format!("::group::poll {closed}\n[{closed}] {attempt}");
    assert!(text.contains(&group), "{text}");
    assert_eq!(text.matches("::group::").count(), 2, "{text}");
    assert_eq!(text.matches("::endgroup::").count(), 2, "{text}");
}

#[test]
fn any_stable_and_the_deadline_treat_a_port_as_a_url() {
    // --any: the port that opens ends the run while the other is still refused.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let open = format!("tcp://{}", listener.local_addr().unwrap());
    let closed = format!("tcp://127.0.0.1:{}", free_port());
    let out = poll().args(["--any", "--timeout", "10s", &closed, &open]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // --stable 3: three connections, each closed before the next.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = std::thread::spawn(move || {
        (0..3).map(|_| listener.accept().map(|(mut s, _)| s.read(&mut [0; 8]).unwrap_or(9))).collect::<Vec<_>>()
    });
    let target = format!("tcp://127.0.0.1:{port}");
    let out = poll().args(["-v", "--stable", "3", "-i", "50ms", &target]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        attempts(&out)[0],
        format!("attempt 1: tcp 127.0.0.1:{port} open, 1 of 3 -> poll again in 50ms (interval)")
    );
    assert_eq!(accepted.join().unwrap().into_iter().map(Result::unwrap).collect::<Vec<_>>(), [0, 0, 0]);
    // The deadline names a port never reached, as a URL.
    let out = poll().args(["--timeout", "1s", "-i", "100ms", &closed]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let line = stderr(&out);
    assert!(line.contains("never reached: connection refused") && line.contains(&closed), "{line}");
}

#[test]
fn connect_timeout_bounds_each_connect_to_a_port_whose_backlog_is_full() {
    // A listener that never accepts, its backlog filled: the kernel drops the next SYN.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.bind(&"127.0.0.1:0".parse::<std::net::SocketAddr>().unwrap().into()).unwrap();
    socket.listen(0).unwrap();
    let address = socket.local_addr().unwrap().as_socket().unwrap();
    let fillers: Vec<TcpStream> =
        (0..4).filter_map(|_| TcpStream::connect_timeout(&address, Duration::from_millis(200)).ok()).collect();
    let target = format!("tcp://{address}");
    let started = Instant::now();
    let out =
        poll().args(["-v", "--connect-timeout", "300ms", "-i", "10ms", "--timeout", "2s", &target]).output().unwrap();
    drop(fillers);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let first = attempts(&out).first().cloned().unwrap_or_default();
    assert_eq!(first, format!("attempt 1: tcp {address} connect timed out -> poll again in 10ms (not up yet)"));
    let made = attempts(&out).len();
    assert!((3..=7).contains(&made), "about 2s / 300ms: {made}");
    assert!(started.elapsed() < Duration::from_secs(4));
}
