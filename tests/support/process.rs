//! `poll` as a process of its own, for tests that run several side by side,
//! kill them, or count what reached a server when: the shared-state tests,
//! on the file and on Redis, and the tests of several URLs.

use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::server::{Recorded, Server};

/// Tests that time processes against each other run one at a time, so that
/// they do not share two cores with each other's processes.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `poll_std()` with `args`, no stdin and both outputs captured.
pub fn poll(args: &[&str]) -> Command {
    let mut cmd = super::poll_std();
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// Runs `poll` with `args` to its end.
pub fn run(args: &[&str]) -> Output {
    poll(args).output().expect("run poll")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The warning lines of a run.
pub fn warnings(out: &Output) -> Vec<String> {
    stderr(out).lines().filter(|line| line.contains("warning")).map(str::to_string).collect()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A `poll` process that is killed if the test fails before it is waited for.
pub struct Running(Option<Child>);

impl Running {
    pub fn spawn(args: &[&str]) -> Running {
        Running(Some(poll(args).spawn().expect("spawn poll")))
    }

    pub fn pid(&self) -> u32 {
        self.0.as_ref().map_or(0, Child::id)
    }

    pub fn wait(mut self) -> Output {
        self.0.take().expect("not waited yet").wait_with_output().expect("wait for poll")
    }

    pub fn kill_9(mut self) {
        if let Some(mut child) = self.0.take() {
            child.kill().expect("SIGKILL");
            let _ = child.wait();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The command lines of this machine's processes, their arguments joined by spaces (read from
/// Linux's `/proc`; none where there is no `/proc`). A zombie's is empty.
pub fn command_lines() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " ").trim_end().to_string())
        .collect()
}

/// Waits until no process's command line holds `token` (a process being killed can be seen for
/// a moment after the kill); false if one still did after `timeout`.
pub fn none_running(token: &str, timeout: Duration) -> bool {
    super::eventually(timeout, || !command_lines().iter().any(|line| line.contains(token)))
}

/// The flags of a process that spends five requests of a shared `--rate 10/s`
/// under the state key `token-a`: a 409, retried four times at once, ends with exit 5.
pub const FIVE_REQUESTS_AT_10_PER_S: [&str; 11] =
    ["--state-key", "token-a", "--rate", "10/s", "--retry-on", "409", "--retries", "4", "--backoff", "0", "-q"];

/// Runs `n` processes at once, process `i` with `args(i)`, and waits for them
/// all; each must end with exit 5 ([`FIVE_REQUESTS_AT_10_PER_S`]) and no warning.
pub fn five_requests_each(n: usize, args: impl Fn(usize) -> Vec<String>) {
    let children: Vec<Running> = (0..n)
        .map(|i| {
            let args = args(i);
            let args: Vec<&str> = args.iter().map(String::as_str).chain(FIVE_REQUESTS_AT_10_PER_S).collect();
            Running::spawn(&args)
        })
        .collect();
    for child in children {
        let out = child.wait();
        assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
        assert_eq!(warnings(&out), Vec::<String>::new());
    }
}

/// Most requests that `servers` saw together in any one-second window.
pub fn busiest_second(servers: &[&Server]) -> usize {
    let at: Vec<Instant> = servers.iter().flat_map(|s| s.requests()).map(|r| r.at).collect();
    at.iter()
        .map(|start| at.iter().filter(|t| **t >= *start && **t < *start + Duration::from_secs(1)).count())
        .max()
        .unwrap_or(0)
}

/// The requests that came before their turn at one every `spacing`: request `k` (from 0) before
/// `started` plus `k` turns, `started` being an instant before the process that sent them began.
/// Each as `request K at T after the start`, for a failure's message; none when every turn held.
///
/// This, not the gap between two requests, is what `--rate` promises: a request takes its turn
/// before it is sent, so one sent late (its process descheduled under load, or making its first
/// connection) arrives less than `spacing` before the next, which keeps its own turn. The gaps
/// measured on a machine kept busy came down to 112 ms at 5/s, each request still in its turn.
pub fn before_their_turn(requests: &[Recorded], started: Instant, spacing: Duration) -> Vec<String> {
    (0u32..)
        .zip(requests)
        .filter(|(k, request)| request.at < started + spacing * *k)
        .map(|(k, request)| format!("request {k} at {:?} after the start", request.at.duration_since(started)))
        .collect()
}

/// A fresh folder for one test's files (a state file, certificates), under
/// cargo's temp dir for tests, removed on drop.
pub struct Folder(std::path::PathBuf);

impl Folder {
    pub fn new(name: &str) -> Folder {
        let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create the test folder");
        Folder(path)
    }

    pub fn path(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }

    /// `path`, as the text a flag takes.
    pub fn file(&self, name: &str) -> String {
        self.path(name).to_string_lossy().into_owned()
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
