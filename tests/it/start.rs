//! `--start CMD` (contract: "Ports and the server it starts"): the targets checked before it
//! starts, the started command watched while the run waits (any exit ends the run at once),
//! `-- CMD` run as a child with the terminal's signals passed on, and the whole process group
//! stopped at every ending; against a real nginx started by `poll` itself, and commands that
//! fork, ignore SIGTERM or die.

use crate::support;

use std::net::TcpStream;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use support::daemon::free_port;
use support::process::{Folder, none_running};
use support::{poll, poll_std};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A Python HTTP server on 127.0.0.1:`port` that starts answering after `delay` seconds, its
/// command line marked with `token` so that a test can see whether it still runs.
fn late_server(port: u16, delay: f32, token: &str) -> String {
    format!("sleep {delay}; exec python3 -m http.server {port} --bind 127.0.0.1 --directory /tmp/{token} 2>/dev/null")
}

fn refused(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_err()
}

#[test]
fn a_real_nginx_that_binds_late_is_started_waited_for_and_stopped_with_its_worker() {
    let folder = Folder::new("poll-start-nginx");
    let port = free_port();
    let Some(nginx) = support::nginx::served(&folder.path("nginx"), port, false) else { return };
    let marker = folder.file("tests-ran");
    let url = format!("http://127.0.0.1:{port}/health.json");
    let start = format!("sleep 0.5; exec {nginx} -g 'daemon off;'");
    let out = poll()
        .args(["-v", "-i", "100ms", "--timeout", "30s", "--start", &start, &url, "--", "touch", &marker])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"", "-- CMD's own output follows, not the body");
    assert!(std::path::Path::new(&marker).exists(), "-- CMD ran");
    let said = stderr(&out);
    let notes: Vec<&str> = said.lines().filter(|line| line.starts_with("poll: --start:")).collect();
    assert_eq!(notes.len(), 3, "{said}");
    assert!(notes[0].starts_with(&format!("poll: --start: `{start}` started (pid ")), "{said}");
    assert!(notes[1].starts_with("poll: --start: the targets answered "), "{said}");
    assert!(notes[2].starts_with("poll: --start: stopped by SIGTERM in "), "{said}");
    // The master and its worker are gone, and the port is free.
    assert!(none_running(&folder.file("nginx"), Duration::from_secs(5)), "nginx is still running");
    assert!(refused(port));
}

#[test]
fn a_server_that_fails_to_start_ends_the_run_at_once_with_its_status() {
    let folder = Folder::new("poll-start-broken");
    let port = free_port();
    let Some(nginx) = support::nginx::served(&folder.path("nginx"), port, true) else { return };
    let url = format!("http://127.0.0.1:{port}/health.json");
    let start = format!("{nginx} -g 'daemon off;'");
    let started = Instant::now();
    let out = poll().args(["-i", "10s", "--timeout", "60s", "--start", &start, &url, "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    // The next poll was 10 s away: the exit, not the schedule, ended the run.
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let said = stderr(&out);
    assert!(said.contains("nonsense"), "nginx's own words reach stderr: {said}");
    let last = said.lines().last().unwrap_or_default();
    assert_eq!(last, format!("poll: error: the server command exited with status 1 before {url} answered"));
}

#[test]
fn a_started_command_that_exits_0_is_told_to_stay_in_the_foreground_and_the_log_says_start_exited() {
    let port = free_port();
    let target = format!("tcp://127.0.0.1:{port}");
    let folder = Folder::new("poll-start-exited");
    let (junit, summary) = (folder.file("junit.xml"), folder.file("summary.md"));
    let out = poll()
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args(["--ci", "github", "--report-junit", &junit, "--log-format", "json", "--timeout", "30s"])
        .args(["--start", "true", &target, "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let last: serde_json::Value = serde_json::from_str(stderr(&out).lines().last().unwrap()).unwrap();
    assert_eq!(last["reason"], "start_exited");
    // The target the exit cut short fails in the reports too: never a skipped test of a run that exits 3.
    let report = std::fs::read_to_string(&junit).unwrap();
    assert!(report.contains("failures=\"1\" errors=\"0\" skipped=\"0\""), "{report}");
    assert!(report.contains("<failure type=\"start_exited\""), "{report}");
    let table = std::fs::read_to_string(&summary).unwrap();
    // Its attempts: 0 or 1, as the exit came before or after the first.
    assert!(table.contains(&format!("| `{target}` | permanent failure | 3 | ")), "{table}");
    assert_eq!(last["start"]["exit_code"], 0);
    assert_eq!(last["start"]["stopped_by"], "exited");
    let message = last["message"].as_str().unwrap_or_default();
    assert!(message.starts_with(&format!("the server command exited with status 0 before {target} answered;")));
    assert!(message.contains("nginx -g 'daemon off;'"), "{message}");
    // One ended by a signal names it.
    let out = poll().args(["--timeout", "30s", "--start", "kill -9 $$", &target, "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("was ended by signal 9 (SIGKILL) before"), "{}", stderr(&out));
}

#[test]
fn a_target_that_already_answers_is_another_servers_and_nothing_starts() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let folder = Folder::new("poll-start-held");
    let marker = folder.file("started");
    let url = format!("http://{address}/health");
    let out = poll().args(["--start", &format!("touch {marker}"), &url, "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "poll: error: {url} already answers before --start ran: another server holds it ({address} accepted a \
             connection); stop it, or wait for it without --start\n"
        )
    );
    assert!(!std::path::Path::new(&marker).exists(), "the command did not start");
    // --start without -- CMD: nothing would run before its stop.
    let out = poll().args(["--start", "true", &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("poll: error: --start: give the command to run once the targets are up after --"));
}

#[test]
fn the_commands_status_is_the_runs_and_the_log_says_how_the_server_was_stopped() {
    if !support::have_tool("python3", "apt-get install python3") {
        return;
    }
    let port = free_port();
    let token = format!("poll-start-status-{port}");
    std::fs::create_dir_all(format!("/tmp/{token}")).unwrap();
    let target = format!("tcp://127.0.0.1:{port}");
    let out = poll()
        .args(["--log-format", "json", "-i", "50ms", "--timeout", "30s"])
        .args(["--start", &late_server(port, 0.2, &token), &target, "--", "sh", "-c", "exit 7"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let last: serde_json::Value = serde_json::from_str(stderr(&out).lines().last().unwrap()).unwrap();
    assert_eq!(
        (&last["exit_code"], &last["reason"], &last["command"]["exit_code"]),
        (&7.into(), &"done".into(), &7.into())
    );
    assert_eq!((&last["start"]["signal"], &last["start"]["stopped_by"]), (&15.into(), &"sigterm".into()));
    assert!(last["start"]["pid"].as_u64().is_some_and(|pid| pid > 1));
    assert!(none_running(&token, Duration::from_secs(5)));
    let _ = std::fs::remove_dir_all(format!("/tmp/{token}"));
}

#[test]
fn a_grandchild_holding_the_port_is_stopped_with_the_group_and_sigkill_follows_the_grace() {
    if !support::have_tool("python3", "apt-get install python3") {
        return;
    }
    let port = free_port();
    let token = format!("poll-start-grandchild-{port}");
    std::fs::create_dir_all(format!("/tmp/{token}")).unwrap();
    // sh starts the listener in the background and waits: the listener is sh's child, in its group.
    let start = format!("{} & wait", late_server(port, 0.0, &token));
    let target = format!("tcp://127.0.0.1:{port}");
    let out =
        poll().args(["-i", "50ms", "--timeout", "30s", "--start", &start, &target, "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(none_running(&token, Duration::from_secs(5)), "the grandchild outlived the run");
    assert!(refused(port), "the port is free again");
    // A group that ignores SIGTERM gets SIGKILL after --start-grace.
    let stubborn = format!("trap '' TERM; {} & wait", late_server(port, 0.0, &token));
    let started = Instant::now();
    let out = poll()
        .args(["--log-format", "json", "-i", "50ms", "--start-grace", "300ms", "--start", &stubborn, &target])
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let last: serde_json::Value = serde_json::from_str(stderr(&out).lines().last().unwrap()).unwrap();
    assert_eq!((&last["start"]["stopped_by"], &last["start"]["signal"]), (&"sigkill".into(), &9.into()));
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(none_running(&token, Duration::from_secs(5)));
    let _ = std::fs::remove_dir_all(format!("/tmp/{token}"));
}

/// Ctrl-C (SIGINT), SIGTERM and SIGHUP to `poll` while `-- CMD` runs: each is passed on, the server is
/// stopped, and the run exits with the signal's code.
#[test]
fn a_signal_during_the_command_stops_both_and_exits_with_its_code() {
    if !support::have_tool("python3", "apt-get install python3") {
        return;
    }
    for (signal, code) in [("-INT", 130), ("-TERM", 143), ("-HUP", 129)] {
        let port = free_port();
        let token = format!("poll-start-signal-{port}");
        std::fs::create_dir_all(format!("/tmp/{token}")).unwrap();
        let folder = Folder::new(&format!("poll-start-signal{signal}"));
        let pidfile = folder.file("cmd.pid");
        let target = format!("tcp://127.0.0.1:{port}");
        let command = format!("echo $$ > {pidfile}; exec sleep 30");
        let child = poll_std()
            .args(["-i", "50ms", "--timeout", "60s", "--start", &late_server(port, 0.0, &token), &target])
            .args(["--", "sh", "-c", &command])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        assert!(support::eventually(Duration::from_secs(20), || std::fs::metadata(&pidfile).is_ok_and(|m| m.len() > 0)));
        let cmd_pid = std::fs::read_to_string(&pidfile).unwrap().trim().to_string();
        let sent = Instant::now();
        std::process::Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{signal}: {}", stderr(&out));
        assert!(sent.elapsed() < Duration::from_secs(5), "{signal}: {:?}", sent.elapsed());
        assert!(!std::path::Path::new(&format!("/proc/{cmd_pid}")).exists(), "{signal}: -- CMD still runs");
        assert!(none_running(&token, Duration::from_secs(5)), "{signal}: the server still runs");
        let _ = std::fs::remove_dir_all(format!("/tmp/{token}"));
    }
}

/// The deadline, and Ctrl-C while the run still waits: the started command's group is stopped
/// either way, and the run's own code stands (1, 130).
#[test]
fn the_deadline_and_a_signal_during_the_wait_stop_the_started_group() {
    if !support::have_tool("python3", "apt-get install python3") {
        return;
    }
    let port = free_port();
    let target = format!("tcp://127.0.0.1:{port}");
    let token = format!("poll-start-wait-{port}");
    // A process whose command line names the token (as poll's own does, which the wait below skips).
    let start = format!("exec python3 -c 'import time; time.sleep(60)' {token}");
    let out = poll()
        .args(["--log-format", "json", "--timeout", "1s", "--start", &start, &target, "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let last: serde_json::Value = serde_json::from_str(stderr(&out).lines().last().unwrap()).unwrap();
    assert_eq!((&last["reason"], &last["start"]["stopped_by"]), (&"deadline".into(), &"sigterm".into()));
    assert!(none_running(&token, Duration::from_secs(5)), "the started command outlived the deadline");
    let child = poll_std()
        .args(["--timeout", "60s", "--start", &start, &target, "--", "true"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = || {
        support::process::command_lines()
            .iter()
            .any(|l| l.contains("python3 -c") && !l.contains("--start") && l.contains(&token))
    };
    assert!(support::eventually(Duration::from_secs(10), started));
    std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(none_running(&token, Duration::from_secs(5)), "the started command outlived Ctrl-C");
}
