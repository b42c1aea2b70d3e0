//! `--watch` end to end against real servers nobody here wrote, each started by its test on
//! 127.0.0.1 and stopped by its PID: nginx's nchan module (an EventSource stream, a message
//! published between two streams and recovered by `Last-Event-ID`, a long poll held until the
//! next message) and etcd's `/v3/watch` (one chunked reply of JSON values). A test whose server is
//! not installed skips with one `SKIPPED` line, or fails with `POLL_TEST_REQUIRE_TOOLS=1`.

use crate::support;

use std::io::{BufRead as _, BufReader, Read as _};
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::etcd::{Etcd, base64};
use support::nginx::Nchan;

const UNTIL_DONE: &str = r#".status=="done""#;
const PENDING: &str = r#"{"status":"pending"}"#;
const DONE: &str = r#"{"status":"done","n":2}"#;
/// nchan's EventSource subscriber answers 403 to a request that does not accept
/// `text/event-stream` (a browser's EventSource sends this).
const ACCEPT_SSE: &str = "Accept: text/event-stream";
/// The bound on anything a test waits for: a line of poll's, the end of its run.
const PATIENCE: Duration = Duration::from_secs(30);

/// A `poll --watch` process whose stderr is read line by line as it comes; killed if the test
/// fails before it ends. (Also `watch_resume.rs`'s.)
pub(crate) struct Watching {
    child: Option<Child>,
    lines: Receiver<String>,
    seen: Vec<String>,
    started: Instant,
}

/// How a [`Watching`] ended.
pub(crate) struct Ended {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: String,
    pub(crate) took: Duration,
}

impl Watching {
    pub(crate) fn spawn(args: &[&str]) -> Watching {
        let mut child = support::poll_std()
            .arg("--watch")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn poll");
        let started = Instant::now();
        let stderr = child.stderr.take().expect("piped stderr");
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Watching { child: Some(child), lines, seen: Vec::new(), started }
    }

    /// Reads poll's stderr up to the first line that holds `needle`, and returns it.
    pub(crate) fn line_with(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) if line.contains(needle) => {
                    self.seen.push(line.clone());
                    return line;
                }
                Ok(line) => self.seen.push(line),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no line with {needle:?} after {PATIENCE:?}; stderr:\n{}", self.seen.join("\n"))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("poll ended before a line with {needle:?}; stderr:\n{}", self.seen.join("\n"))
                }
            }
        }
    }

    /// Waits for poll to end, for `PATIENCE` at most (then it is killed and the test fails).
    pub(crate) fn end(mut self) -> Ended {
        let mut child = self.child.take().expect("not ended yet");
        let mut stdout = child.stdout.take().expect("piped stdout");
        let reader = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = stdout.read_to_end(&mut bytes);
            bytes
        });
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for poll") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                self.seen.extend(self.lines.try_iter());
                panic!("poll still running after {PATIENCE:?}; stderr:\n{}", self.seen.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let took = self.started.elapsed();
        let stdout = reader.join().expect("read poll's stdout");
        // The reader's channel closes with the pipe, which closed when poll ended.
        self.seen.extend(self.lines.iter());
        Ended { code: status.code(), stdout, stderr: self.seen.join("\n"), took }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The `-v` lines of a run that say a reply began streaming.
fn streams(stderr: &str) -> usize {
    stderr.lines().filter(|line| line.starts_with("watching ")).count()
}

/// The id in a `-v` event line: `event 1 (type message, id ID) -> not yet`.
fn event_id(line: &str) -> &str {
    let id = line.split_once(", id ").and_then(|(_, rest)| rest.split_once(')'));
    id.unwrap_or_else(|| panic!("no id in {line:?}")).0
}

/// The final JSON object of a run under `--log-format json`.
fn summary(ended: &Ended) -> Value {
    let last = ended.stderr.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {last:?}\n{}", ended.stderr))
}

#[test]
fn an_nchan_event_stream_is_judged_event_by_event_until_the_published_done() {
    let Some(nchan) = Nchan::start() else { return };
    let url = nchan.url("/sse/jobs");
    let mut poll = Watching::spawn(&["-v", "-H", ACCEPT_SSE, "--until", UNTIL_DONE, "--timeout", "20s", &url]);
    poll.line_with(&format!("watching {url}"));
    let pending = nchan.publish("jobs", PENDING);
    // 201: delivered to a subscriber; poll's stream is the only one.
    assert_eq!((pending.status, pending.subscribers), (201, Some(1)), "{}", nchan.log());
    let first = poll.line_with("event 1 ");
    assert!(first.ends_with("-> not yet"), "{first}");
    let done = nchan.publish("jobs", DONE);
    assert_eq!((done.status, done.subscribers), (201, Some(1)), "{}", nchan.log());
    let ended = poll.end();
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert_eq!(ended.stdout, DONE.as_bytes());
    let second = ended.stderr.lines().find(|line| line.starts_with("event 2 ")).unwrap_or_default();
    assert!(second.starts_with("event 2 (type message, id ") && second.ends_with("-> done"), "{}", ended.stderr);
    assert_ne!(event_id(&first), event_id(second), "nchan gives each message its own id");
    assert_eq!(streams(&ended.stderr), 1, "{}", ended.stderr);
    assert!(ended.took < Duration::from_secs(15), "{:?}", ended.took);
}

#[test]
fn an_nchan_event_stream_is_watched_without_an_accept_header() {
    let Some(nchan) = Nchan::start() else { return };
    let url = nchan.url("/sse/jobs");
    let mut poll = Watching::spawn(&["-v", "--until", UNTIL_DONE, "--timeout", "20s", &url]);
    poll.line_with(&format!("watching {url}"));
    assert_eq!(nchan.publish("jobs", DONE).status, 201, "{}", nchan.log());
    let ended = poll.end();
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert_eq!(ended.stdout, DONE.as_bytes());
}

#[test]
fn a_message_published_between_two_nchan_event_streams_is_recovered_by_last_event_id() {
    let Some(nchan) = Nchan::start() else { return };
    // nchan ends each /brief/ stream after 1 s, and poll asks again 3 s after the last request
    // began: for 2 s no one is subscribed, and a new subscriber starts at the next message.
    let url = nchan.url("/brief/jobs");
    let args = ["-v", "-H", ACCEPT_SSE, "--interval", "3s", "--until", UNTIL_DONE, "--timeout", "20s", &url];
    let mut poll = Watching::spawn(&args);
    poll.line_with(&format!("watching {url}"));
    assert_eq!(nchan.publish("jobs", PENDING).status, 201, "{}", nchan.log());
    let first = poll.line_with("event 1 ");
    assert!(first.ends_with("-> not yet"), "{first}");
    let ended = poll.line_with("stream ended after ");
    let id = event_id(&first);
    assert!(ended.contains(", asking again in ") && ended.ends_with(&format!(" (Last-Event-ID: {id})")), "{ended}");
    // Between the streams: queued (202), no one subscribed; then one more, which a resume
    // starting at the newest message kept, not after the last id seen, would get instead.
    let done = nchan.publish("jobs", DONE);
    assert_eq!((done.status, done.subscribers), (202, Some(0)), "{}", nchan.log());
    assert_eq!(nchan.publish("jobs", r#"{"status":"later","n":3}"#).status, 202);
    let ended = poll.end();
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert_eq!(ended.stdout, DONE.as_bytes());
    assert_eq!(streams(&ended.stderr), 2, "{}", ended.stderr);
    assert!(ended.took >= Duration::from_secs(3), "asked again before --interval: {:?}", ended.took);
    assert!(ended.took < Duration::from_secs(15), "{:?}", ended.took);
}

#[test]
fn an_nchan_long_poll_is_held_until_the_next_message_not_asked_again_and_again() {
    const HOLD: Duration = Duration::from_millis(1500);
    let Some(nchan) = Nchan::start() else { return };
    // Before poll asks: nchan's answer to its first request, at once (the oldest message kept).
    let pending = nchan.publish("jobs", PENDING);
    assert_eq!((pending.status, pending.subscribers), (202, Some(0)), "{}", nchan.log());
    let url = nchan.url("/lp/jobs");
    // An --interval of 100 ms: were the next request not held, it would come 15 times in HOLD.
    let args = ["--interval", "100ms", "--until", UNTIL_DONE, "--log-format", "json", "--timeout", "20s", &url];
    let mut poll = Watching::spawn(&args);
    let first = poll.line_with(r#"{"event":"attempt","attempt":1,"#);
    assert!(first.contains(r#""status":200,"stream":"ended""#), "{first}");
    std::thread::sleep(HOLD);
    let done = nchan.publish("jobs", DONE);
    // 201 to one subscriber: poll's second request, held all this time.
    assert_eq!((done.status, done.subscribers), (201, Some(1)), "{}", nchan.log());
    let ended = poll.end();
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert_eq!(ended.stdout, DONE.as_bytes());
    assert!(ended.took >= HOLD, "ended before the message: {:?}", ended.took);
    assert!(ended.took < Duration::from_secs(15), "{:?}", ended.took);
    let summary = summary(&ended);
    assert_eq!((&summary["event"], &summary["events"], &summary["requests"]), (&json!("done"), &json!(2), &json!(2)));
    assert_eq!(nchan.requests("/lp/jobs"), 2, "{}", ended.stderr);
}

#[test]
fn an_etcd_watch_is_one_chunked_reply_whose_json_values_are_judged_one_by_one() {
    let Some(etcd) = Etcd::start() else { return };
    let key = "jobs/42";
    let until = r#".result.events[]?.kv.value | @base64d | fromjson? | .status == "ready""#;
    let create = json!({"create_request": {"key": base64(key)}}).to_string();
    let url = etcd.url("/v3/watch");
    // docs/guide/watch.md's recipe as written there: -d (etcd's gateway reads the JSON whatever its Content-Type).
    let args = ["--until", until, "-d", &create, "--log-format", "json", "--timeout", "20s", &url];
    let mut poll = Watching::spawn(&args);
    // The first event is the current state (no key yet), read before the watch (`/v3/kv/range`);
    // the watch starts just after its revision, so the put below is its first event.
    poll.line_with(r#"{"event":"stream_event","n":1,"#);
    let starting = etcd.put(key, r#"{"status":"starting"}"#);
    poll.line_with(r#"{"event":"stream_event","n":2,"#);
    let ready = etcd.put(key, r#"{"status":"ready"}"#);
    let ended = poll.end();
    assert_eq!(ended.code, Some(0), "{}\n{}", ended.stderr, etcd.log());
    // The event of the second put, as etcd sent it: the same header as the put's reply.
    let kv = json!({
        "key": base64(key),
        "create_revision": starting["header"]["revision"],
        "mod_revision": ready["header"]["revision"],
        "version": "2",
        "value": base64(r#"{"status":"ready"}"#),
    });
    let expected = json!({"result": {"header": ready["header"], "events": [{"kv": kv}]}});
    let stdout: Value = serde_json::from_slice(&ended.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON value: {e}: {}", String::from_utf8_lossy(&ended.stdout)));
    assert_eq!(stdout, expected);
    let verdicts: Vec<Value> = ended
        .stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|object| object["event"] == "stream_event")
        .map(|object| object["verdict"].clone())
        .collect();
    assert_eq!(verdicts, [json!("not_met"), json!("not_met"), json!("met")], "{}", ended.stderr);
    let summary = summary(&ended);
    // Two requests: the read of the state and the watch (etcd's "created" notice is not judged).
    assert_eq!((&summary["event"], &summary["events"], &summary["requests"]), (&json!("done"), &json!(3), &json!(2)));
}
