//! Chaos soak: the test server answers with a seeded random mix of everything a
//! sick server does (pending bodies, 429 with odd Retry-After values, 5xx,
//! resets, truncated and slow bodies, garbage and oversized headers, invalid
//! JSON), then a scripted ending. `poll` must get through every answer without
//! a panic or a hang, end with the exit code the ending demands, and keep its
//! memory flat. CI runs 300 chaos answers; `SOAK_ATTEMPTS=5000 cargo test
//! --release --test it soak::` runs the large soak.

use crate::support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use support::server::{Reply, Server};

const DONE: &str = r#"{"status":"done","ok":true}"#;

fn attempts() -> usize {
    std::env::var("SOAK_ATTEMPTS").ok().and_then(|n| n.parse().ok()).unwrap_or(300)
}

/// One transient answer, drawn from `rng`.
fn chaos(rng: &mut StdRng) -> Reply {
    let odd_retry_after = ["-1", "garbage", "0.001", "0", "", "1e3", "Wed, 21 Oct 2015 07:28:00 GMT", "NaN", "0.0"];
    match rng.random_range(0..14) {
        0 | 1 => Reply::json(200, r#"{"status":"pending"}"#),
        2 => {
            let value = odd_retry_after[rng.random_range(0..odd_retry_after.len())];
            Reply::status(429).header("Retry-After", value)
        }
        3 => Reply::status(429).header("X-RateLimit-Reset", "-5").header("RateLimit", "garbage;;r=x"),
        4 => Reply::status([500, 502, 503, 504][rng.random_range(0..4)]),
        5 => Reply::reset(),
        6 => Reply::close(),
        7 => Reply::truncated(200, r#"{"status":"do"#),
        8 => Reply::json(200, r#"{"status":"pending"}"#).delay(Duration::from_millis(rng.random_range(1..5))),
        9 => Reply::raw("HTTP/1.1 200 OK\r\nX-\u{1}bad: header\r\nContent-Length: 2\r\n\r\n{}"),
        10 => Reply::json(503, "{}").header("X-Huge", &"h".repeat(rng.random_range(70_000..90_000))),
        11 => Reply::text(200, "{not json"),
        12 => Reply::raw("garbage\r\n\r\n"),
        _ => Reply::json(200, r#"{"status":"pending"}"#)
            .header("X-RateLimit-Remaining", "0")
            .header("X-RateLimit-Reset", "0"),
    }
}

/// Peak resident memory of a running process, in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Plays `chaos` answers then `ending`; returns (exit code, stdout, hits, early RSS, late RSS).
fn soak(seed: u64, ending: Vec<Reply>, retries: &str) -> (Option<i32>, Vec<u8>, usize, usize, u64, u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = attempts();
    let mut replies: Vec<Reply> = (0..n).map(|_| chaos(&mut rng)).collect();
    let ending_len = ending.len();
    replies.extend(ending);
    // All the chaos, then at least the first reply of the ending (a failure streak ends early).
    let server = Server::start(replies).expect_hits_between(n + 1, n + ending_len);
    let mut child = support::poll_std()
        .args(["--until", r#".status=="done""#, "--fail-when", r#".status=="failed""#])
        .args(["-i", "0", "--backoff", "1ms", "--backoff-max", "2ms", "--retries", retries])
        .args(["--request-timeout", "5s", "--timeout", "300s"])
        .arg(server.url("/soak"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn poll");
    // Sample memory once a tenth of the answers are served, and again near the end.
    let (mut early, mut late) = (0, 0);
    let started = Instant::now();
    while child.try_wait().ok().flatten().is_none() {
        let hits = server.hits();
        if let Some(rss) = rss_kib(child.id()) {
            if hits >= n / 10 && early == 0 {
                early = rss;
            }
            if hits >= n * 9 / 10 {
                late = late.max(rss);
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(280),
            "soak hangs: {hits} of {} answers served",
            n + ending_len
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let out = child.wait_with_output().expect("poll output");
    (out.status.code(), out.stdout, server.hits(), n + ending_len, early, late)
}

#[test]
fn chaos_then_done_exits_0_with_the_body_and_flat_memory() {
    let (code, stdout, hits, scripted, early, late) = soak(7, vec![Reply::json(200, DONE)], "1000000");
    assert_eq!(code, Some(0), "a panic exits 101");
    assert_eq!(stdout, DONE.as_bytes());
    assert_eq!(hits, scripted, "every answer was consumed, none skipped");
    eprintln!("resident memory: {early} KiB after a tenth of the answers, {late} KiB at the end");
    if early > 0 && late > 0 {
        assert!(late <= early + 4096, "memory grew from {early} KiB to {late} KiB");
    }
}

#[test]
fn chaos_then_fail_when_exits_4() {
    let (code, stdout, hits, scripted, ..) = soak(11, vec![Reply::json(200, r#"{"status":"failed"}"#)], "1000000");
    assert_eq!(code, Some(4));
    assert_eq!(stdout, br#"{"status":"failed"}"#);
    assert_eq!(hits, scripted);
}

#[test]
fn chaos_then_a_permanent_status_exits_3() {
    let (code, stdout, hits, scripted, ..) = soak(13, vec![Reply::status(404)], "1000000");
    assert_eq!(code, Some(3));
    assert_eq!(stdout, b"");
    assert_eq!(hits, scripted);
}

#[test]
fn chaos_then_a_failure_streak_spends_the_budget_and_exits_5() {
    // The chaos answers include 2xx pending bodies that reset the count; the
    // ending's 50 straight 503s cannot be tolerated by --retries 40.
    let ending = vec![Reply::status(503); 50];
    let (code, _, hits, scripted, ..) = soak(17, ending, "40");
    assert_eq!(code, Some(5));
    assert!(hits <= scripted && hits > attempts(), "stopped within the ending: {hits}");
}
