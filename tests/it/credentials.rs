//! End-to-end tests of credentials that change during a wait: `-H @FILE` read again when the
//! file changes, and `--auth-cmd`'s token made again before it expires and after a 401,
//! against a loopback server that accepts only the tokens it holds valid (support/tokens.rs).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use predicates::prelude::PredicateBooleanExt as _;
use predicates::str::contains;
use support::process::none_running;
use support::server::{Reply, Server};
use support::tokens::{Answer, TokenServer};
use support::{poll, poll_std};

const JOB: &str = r#"{"n":{n}}"#;

/// The token the counting command makes on its n-th run: distinctive, so a grep finds only it.
fn token(n: usize) -> String {
    format!("s3cr3t-tok-{n}")
}

/// A folder of its own for one test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("poll-credentials-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch folder");
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// How many times the counting command ran.
    fn runs(&self) -> usize {
        std::fs::read_to_string(self.path("runs")).map_or(0, |text| text.lines().count())
    }

    /// A command that counts its runs in `runs` and prints `token(n)` on its n-th run, after
    /// `before` (more shell, run first).
    fn counting(&self, before: &str) -> String {
        let runs = self.path("runs");
        format!("{before} echo run >> '{runs}'; n=$(wc -l < '{runs}'); echo \"s3cr3t-tok-$n\"", runs = runs.display())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn job_server(token: &str) -> TokenServer {
    TokenServer::start(token, vec![("/job", Answer::json(200, JOB))])
}

/// Runs `poll` in the background with `args`, so that the test can act while it waits.
fn spawn(args: &[&str]) -> std::process::Child {
    poll_std().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn poll")
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write header file");
}

#[test]
fn a_header_file_rewritten_mid_run_is_read_again() {
    let scratch = Scratch::new("rewrite");
    let file = scratch.path("headers");
    write(&file, "X-Tenant: 7\nAuthorization: Bearer aaaa\n");
    let server = job_server("aaaa");
    let header = format!("@{}", file.display());
    let child = spawn(&["-H", &header, "--until", ".n >= 6", "-i", "300ms", "--timeout", "20s", &server.url("/job")]);
    assert!(server.wait_hits(2, Duration::from_secs(10)), "two polls with the first file");
    // Both are valid now; the requests say which one poll sent. The same size: the time tells.
    server.accept("bbbb");
    write(&file, "X-Tenant: 7\nAuthorization: Bearer bbbb\n");
    let output = child.wait_with_output().expect("poll ends");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tokens: Vec<Option<String>> = server.requests().iter().map(|seen| seen.token().map(str::to_string)).collect();
    let want: Vec<Option<String>> =
        ["aaaa", "aaaa", "bbbb", "bbbb", "bbbb", "bbbb"].iter().map(|t| Some(t.to_string())).collect();
    assert_eq!(tokens, want, "read again before the first attempt after the rewrite, and only then");
    assert_eq!(String::from_utf8_lossy(&output.stdout), r#"{"n":6}"#);
}

#[test]
fn a_header_file_that_cannot_be_read_at_the_start_is_a_usage_error() {
    let scratch = Scratch::new("missing");
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    let header = format!("@{}", scratch.path("nothing-here").display());
    poll().args(["-H", &header, &server.url("/")]).assert().code(2).stderr(contains("nothing-here: cannot read it"));

    // A line that is no header is named by its number, never quoted: it may hold a secret.
    let file = scratch.path("bad");
    write(&file, "X-Ok: 1\nAuthorization Bearer hush-hush\n");
    let header = format!("@{}", file.display());
    poll()
        .args(["-H", &header, &server.url("/")])
        .assert()
        .code(2)
        .stderr(contains("line 2 is not a header").and(contains("hush-hush").not()));

    poll().args(["-H", "@-", &server.url("/")]).assert().code(2);
}

#[test]
fn a_header_file_deleted_mid_run_keeps_its_headers_and_warns_once() {
    let scratch = Scratch::new("deleted");
    let file = scratch.path("headers");
    write(&file, "Authorization: Bearer aaaa\n");
    let server = job_server("aaaa");
    let header = format!("@{}", file.display());
    let child = spawn(&["-H", &header, "--until", ".n >= 5", "-i", "200ms", "--timeout", "20s", &server.url("/job")]);
    assert!(server.wait_hits(2, Duration::from_secs(10)));
    std::fs::remove_file(&file).expect("delete the header file");
    let output = child.wait_with_output().expect("poll ends");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(server.statuses(), [200; 5]);
    assert!(server.requests().iter().all(|seen| seen.token() == Some("aaaa")));
    let text = stderr(&output);
    let warnings: Vec<&str> = text.lines().filter(|line| line.contains("poll: warning:")).collect();
    assert_eq!(warnings.len(), 1, "{text}");
    assert!(warnings[0].contains("cannot read it") && warnings[0].contains("headers read before"), "{text}");
}

#[test]
fn the_auth_command_runs_once_for_a_run_that_sees_no_401() {
    let scratch = Scratch::new("once");
    let server = job_server(&token(1));
    let output = poll()
        .args(["--auth-cmd", &scratch.counting(""), "--until", ".n >= 3", "-i", "100ms", &server.url("/job")])
        .output()
        .expect("poll runs");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(scratch.runs(), 1);
    assert_eq!(server.statuses(), [200, 200, 200]);
    let bearer = format!("Bearer {}", token(1));
    assert!(server.requests().iter().all(|seen| seen.authorization.as_deref() == Some(bearer.as_str())));
    assert_eq!(String::from_utf8_lossy(&output.stdout), r#"{"n":3}"#);
}

#[test]
fn a_401_runs_the_command_once_more_and_sends_the_attempt_again_at_once() {
    let scratch = Scratch::new("refresh");
    let server = job_server(&token(1)).rotate_at(3, &token(2));
    // No retry is spent (--retries 0) and no backoff waited (--backoff 10s).
    let args = ["--auth-cmd", &scratch.counting(""), "--until", ".n >= 4", "-i", "400ms", "--retries", "0"];
    let output = poll().args(args).args(["--backoff", "10s", "-v", &server.url("/job")]).output().expect("poll runs");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(scratch.runs(), 2, "one run at the start, one after the 401");
    assert_eq!(server.statuses(), [200, 200, 401, 200, 200]);
    let requests = server.requests();
    let tokens: Vec<String> = requests.iter().map(|seen| seen.token().unwrap_or("").to_string()).collect();
    assert_eq!(tokens, [token(1), token(1), token(1), token(2), token(2)]);
    let resent = requests[3].at - requests[2].at;
    assert!(resent < Duration::from_millis(300), "sent again at once, not after the interval: {resent:?}");
    let text = stderr(&output);
    assert!(text.contains("attempt 3: 401") && text.contains("new token (--auth-cmd), sent again at once"), "{text}");
    assert!(text.contains("attempt 3: 200 pending"), "the re-sent attempt keeps its number: {text}");
}

#[test]
fn a_401_to_the_resent_attempt_is_exit_3() {
    let scratch = Scratch::new("refused");
    let server = job_server(&token(1)).rotate_at(2, "nobody-has-this");
    // Even when 401 is made transient: the newest token was refused.
    let output = poll()
        .args(["--auth-cmd", &scratch.counting(""), "--until", ".n >= 4", "-i", "100ms", "--retry-on", "401"])
        .arg(server.url("/job"))
        .output()
        .expect("poll runs");
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert_eq!(scratch.runs(), 2);
    assert_eq!(server.statuses(), [200, 401, 401], "nothing after the second 401");
    let text = stderr(&output);
    assert!(text.contains("HTTP 401") && text.contains("the newest token from --auth-cmd was refused too"), "{text}");
}

#[test]
fn an_exec_credential_is_made_again_before_it_expires_without_a_401() {
    let scratch = Scratch::new("expiry");
    let runs = scratch.path("runs");
    // The first token claims 62 s of life: 2 s past the 60 s margin. The second, an hour.
    let command = format!(
        r#"echo run >> '{runs}'; n=$(wc -l < '{runs}'); life=3600; [ "$n" = 1 ] && life=62;
        exp=$(date -u -d "@$(( $(date +%s) + life ))" +%Y-%m-%dT%H:%M:%SZ);
        printf '{{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{{"token":"s3cr3t-tok-%s","expirationTimestamp":"%s"}}}}' "$n" "$exp""#,
        runs = runs.display()
    );
    let server = job_server(&token(1));
    server.accept(&token(2));
    // The first token stops working at 4 s, long before it says: only the margin saves the run.
    server.rotate_after(Duration::from_secs(4), &token(2));
    let started = Instant::now();
    let output = poll()
        .args(["--auth-cmd", &command, "--until", ".n >= 12", "-i", "500ms", &server.url("/job")])
        .output()
        .expect("poll runs");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(started.elapsed() >= Duration::from_millis(5500));
    assert_eq!(scratch.runs(), 2);
    let requests = server.requests();
    assert!(requests.iter().all(|seen| seen.status == 200), "no 401 seen: {:?}", server.statuses());
    let second = requests.iter().position(|seen| seen.token() == Some(token(2).as_str())).expect("a second token");
    let refreshed = requests[second].at - requests[0].at;
    assert!(
        refreshed >= Duration::from_millis(400) && refreshed < Duration::from_millis(3500),
        "made again once less than 60 s were left (1 to 2 s in): {refreshed:?}"
    );
    assert!(requests[second..].iter().all(|seen| seen.token() == Some(token(2).as_str())));
}

/// `sleep SECONDS.0PID`: a sleep of about `seconds` whose command line (and that of the sh
/// running it) is this test's alone, so that a test can see that none is left once poll ended,
/// rather than wait until it would have finished.
fn unique_sleep(seconds: u32) -> String {
    format!("sleep {seconds}.{:07}", std::process::id())
}

/// Runs a command that gives no token; returns (exit code, stderr, elapsed).
fn broken(command: &str) -> (Option<i32>, String, Duration) {
    broken_within(command, None)
}

/// As [`broken`], with `--auth-cmd`'s 30 s limit shortened to `limit_ms` by the variable that
/// exists for this.
fn broken_within(command: &str, limit_ms: Option<&str>) -> (Option<i32>, String, Duration) {
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    let mut poll = poll();
    if let Some(ms) = limit_ms {
        poll.env("POLL_TEST_AUTH_CMD_LIMIT_MS", ms);
    }
    let started = Instant::now();
    let output = poll.args(["--auth-cmd", command, &server.url("/")]).output().expect("poll runs");
    (output.status.code(), stderr(&output), started.elapsed())
}

#[test]
fn a_command_that_fails_or_prints_nothing_is_exit_3_with_its_last_stderr_line() {
    let (code, text, _) = broken("echo stdout-secret; echo first >&2; echo 'last words' >&2; exit 7");
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("--auth-cmd failed (exit status 7): last words"), "{text}");
    assert!(!text.contains("stdout-secret") && !text.contains("first"), "{text}");
    assert_eq!(text.lines().count(), 1, "one error line: {text}");

    let (code, text, _) = broken("echo 'no token today' >&2");
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("--auth-cmd printed no token (exit status 0): no token today"), "{text}");

    let (code, text, _) = broken(r#"echo '{"kind":"ExecCredential","status":{}}'"#);
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("no ExecCredential with a status.token") && text.contains("nothing on stderr"), "{text}");
}

#[test]
fn a_command_that_runs_longer_than_its_limit_is_killed_and_exit_3() {
    let scratch = Scratch::new("slow");
    let marker = scratch.path("still-running");
    // The child of sh must die too: it would write the marker at 40 s.
    let sleep = unique_sleep(40);
    let command = format!("echo stdout-secret; echo 'still working' >&2; {sleep}; touch '{}'", marker.display());
    // 1 s in place of the 30 s (the unit tests of src/http/credentials.rs check that it is 30 s
    // without the variable), so that the test does not wait half a minute.
    let (code, text, elapsed) = broken_within(&command, Some("1000"));
    assert_eq!(code, Some(3), "{text}");
    // The upper bound is loose (a loaded machine starts poll and sh late), but short of 30 s.
    assert!(elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(20), "{elapsed:?}");
    assert!(text.contains("--auth-cmd: ran longer than 1s and was killed: still working"), "{text}");
    assert!(!text.contains("stdout-secret"), "{text}");
    assert!(none_running(&sleep, Duration::from_secs(5)), "`{sleep}` (sh or its sleep) outlived poll");
    assert!(!marker.exists(), "the command's whole process group was killed");
}

#[test]
fn five_urls_that_get_a_401_together_run_the_command_once() {
    let scratch = Scratch::new("five");
    let paths = ["/a", "/b", "/c", "/d", "/e"];
    // A slow 401: the five requests of a round are all on their way before the first is refused.
    let server = TokenServer::start(&token(1), paths.iter().map(|p| (*p, Answer::json(200, JOB))).collect())
        .slow_401(Duration::from_millis(300));
    let urls: Vec<String> = paths.iter().map(|p| server.url(p)).collect();
    let command = scratch.counting("sleep 0.3;");
    let mut args = vec!["--auth-cmd", &command, "--until", ".n >= 3", "-i", "1s", "--timeout", "30s"];
    args.extend(urls.iter().map(String::as_str));
    let child = spawn(&args);
    assert!(server.wait_hits(5, Duration::from_secs(10)), "each URL polled once");
    server.rotate(&token(2));
    let output = child.wait_with_output().expect("poll ends");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(scratch.runs(), 2, "one run for the start, one for the five 401s");
    let statuses = server.statuses();
    assert_eq!(statuses.iter().filter(|s| **s == 401).count(), 5, "{statuses:?}");
    assert_eq!(statuses.len(), 20, "{statuses:?}");
    for path in paths {
        let seen: Vec<u16> = server.requests().iter().filter(|s| s.path == path).map(|s| s.status).collect();
        assert_eq!(seen, [200, 401, 200, 200], "{path}");
    }
}

#[test]
fn with_submit_the_token_goes_to_the_submit_origin_only_unless_trusted() {
    let scratch = Scratch::new("submit");
    let command = scratch.counting("");
    let done = r#"{"status":"Succeeded"}"#;

    // Status polls on the submit's origin carry the token.
    let api = TokenServer::start(
        &token(1),
        vec![
            ("/jobs", Answer::json(202, "{}").header("Operation-Location", "/ops/1")),
            ("/ops/1", Answer::json(200, done)),
        ],
    );
    let output = poll()
        .args(["--submit", "-X", "POST", "--auth-cmd", &command, "-i", "50ms", &api.url("/jobs")])
        .output()
        .expect("poll runs");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let seen: Vec<(String, Option<String>)> =
        api.requests().into_iter().map(|s| (s.path.clone(), s.token().map(str::to_string))).collect();
    assert_eq!(seen, [("/jobs".into(), Some(token(1))), ("/ops/1".into(), Some(token(1)))]);

    // Another origin gets none, unless --location-trusted.
    for trusted in [false, true] {
        let _ = std::fs::remove_file(scratch.path("runs"));
        let status = Server::start(vec![Reply::json(200, done)]);
        let api = TokenServer::start(
            &token(1),
            vec![("/jobs", Answer::json(202, "{}").header("Operation-Location", &status.url("/ops/9")))],
        );
        let mut cmd = poll();
        cmd.args(["--submit", "-X", "POST", "--auth-cmd", &command, "-i", "50ms", &api.url("/jobs")]);
        if trusted {
            cmd.arg("--location-trusted");
        }
        let output = cmd.output().expect("poll runs");
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(api.statuses(), [202]);
        let polls = status.requests();
        assert_eq!(polls.len(), 1);
        let want = trusted.then(|| format!("Bearer {}", token(1)));
        assert_eq!(polls[0].header("authorization").map(str::to_string), want, "trusted: {trusted}");
    }
}

/// Every line of `bytes` that holds a token made in the run (tokens 1 to 3) must be exactly
/// that token's `::add-mask::` line; returns the tokens masked, in order.
fn only_masks_hold_tokens(bytes: &[u8], what: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut masked = Vec::new();
    for line in text.lines() {
        for n in 1..=3 {
            if line.contains(&token(n)) {
                assert_eq!(line, format!("::add-mask::{}", token(n)), "{what}: a token outside its mask:\n{text}");
                masked.push(token(n));
            }
        }
    }
    masked
}

#[test]
fn the_token_is_in_no_output_but_its_add_mask_line() {
    let scratch = Scratch::new("grep");
    let runs = scratch.path("runs");
    // The command's own stderr names the token it made before, which the error line quotes.
    let command = format!(
        "echo run >> '{runs}'; n=$(wc -l < '{runs}'); echo \"refreshing s3cr3t-tok-$((n - 1))\" >&2; \
         [ \"$n\" -ge 3 ] && exit 1; echo \"s3cr3t-tok-$n\"",
        runs = runs.display()
    );
    let cases: [(&str, &[&str], i32); 3] = [
        ("-v", &["-v", "--until", ".n >= 3"], 0),
        ("json", &["--log-format", "json", "--until", ".n >= 3"], 0),
        // The third run fails, and the error line quotes its stderr, which names the token before.
        ("error", &["-v", "--until", ".n >= 9"], 3),
    ];
    for (what, args, code) in cases {
        let _ = std::fs::remove_file(&runs);
        let mut server = job_server(&token(1)).rotate_at(2, &token(2));
        if code == 3 {
            server = server.rotate_at(4, "nobody-has-this");
        }
        let output = poll()
            .env("GITHUB_ACTIONS", "true")
            .args(["--auth-cmd", &command, "-i", "50ms"])
            .args(args)
            .arg(server.url("/job"))
            .output()
            .expect("poll runs");
        assert_eq!(output.status.code(), Some(code), "{what}: {}", stderr(&output));
        assert!(only_masks_hold_tokens(&output.stdout, what).is_empty(), "{what}: stdout holds no mask");
        let masked = only_masks_hold_tokens(&output.stderr, what);
        assert_eq!(masked, [token(1), token(2)], "{what}: one mask per new token:\n{}", stderr(&output));
        let first = stderr(&output).lines().next().map(str::to_string);
        assert_eq!(first, Some(format!("::add-mask::{}", token(1))), "{what}: the mask comes first");
        if what == "json" {
            let refreshed = stderr(&output).lines().filter(|line| line.contains(r#""reauthenticated":true"#)).count();
            assert_eq!(refreshed, 1, "the re-sent attempt says so: {}", stderr(&output));
        }
        if code == 3 {
            let text = stderr(&output);
            let error = text.lines().last().unwrap_or("");
            assert!(error.starts_with("::error title=poll::--auth-cmd failed (exit status 1)"), "{text}");
            assert!(error.contains(": refreshing <redacted>"), "{text}");
        }
    }
}

#[test]
fn auth_cmd_with_other_credentials_is_a_usage_error() {
    let scratch = Scratch::new("conflicts");
    let file = scratch.path("headers");
    write(&file, "Authorization: Bearer x\n");
    let header = format!("@{}", file.display());
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    let url = server.url("/");
    let userinfo = url.replace("http://", "http://me:pw@");
    for args in [
        vec!["--auth-cmd", "echo t", "-u", "me:pw", url.as_str()],
        vec!["--auth-cmd", "echo t", "-H", "authorization: Basic x", url.as_str()],
        vec!["--auth-cmd", "echo t", userinfo.as_str()],
        vec!["--auth-cmd", "echo t", "-H", header.as_str(), url.as_str()],
        vec!["--auth-cmd", " ", url.as_str()],
    ] {
        poll().args(&args).assert().code(2).stderr(contains("--auth-cmd").or(contains("--user")));
    }
    assert_eq!(scratch.runs(), 0);
}

#[test]
fn a_command_still_running_at_the_deadline_is_killed_and_exit_1() {
    let scratch = Scratch::new("deadline");
    let marker = scratch.path("still-running");
    let sleep = unique_sleep(5);
    let command = format!("{sleep}; touch '{}'; echo t", marker.display());
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    let started = Instant::now();
    let output =
        poll().args(["--auth-cmd", &command, "--timeout", "1s", &server.url("/")]).output().expect("poll runs");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert!(stderr(&output).contains("deadline reached while --auth-cmd ran"), "{}", stderr(&output));
    assert!(none_running(&sleep, Duration::from_secs(5)), "`{sleep}` (sh or its sleep) outlived poll");
    assert!(!marker.exists(), "the command was killed");
}
