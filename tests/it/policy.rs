//! Table tests of the retry policy, [`Policy::decide`], as a pure function:
//! (description, policy tweak, outcome, attempt) -> expected action. No sockets,
//! no sleeping, no clock: time is plain durations and jitter comes from a seeded rng.

use std::time::Duration;

use Failure::*;
use Verdict::*;
use WaitReason::{Backoff, Interval, PollInterval, RateLimitReset, RetryAfter};
use poll::advice::Advice;
use poll::policy::{
    Action, Attempt, Failure, Jitter, MAX_ADVISED_WAIT, Outcome, Phase, Policy, RetryRoom, Stop, Verdict, WaitReason,
    Window,
};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// A change to the base policy; non-capturing closures coerce to it, so each row stays one line.
type Tweak = fn(&mut Policy);

type Row = (&'static str, Tweak, Outcome, Attempt, Action);

const SEED: u64 = 0x5eed;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// The defaults, but with exact backoff so rows can name the delay:
/// interval 1s, backoff 200ms doubling to 30s, 6 retries, idempotent.
fn base() -> Policy {
    Policy { jitter: Jitter::None, ..Policy::default() }
}

fn same(_: &mut Policy) {}

fn non_idempotent(p: &mut Policy) {
    p.idempotent = false;
}

fn non_idempotent_forced(p: &mut Policy) {
    p.idempotent = false;
    p.retry_non_idempotent = true;
}

// Outcomes.

fn ok(verdict: Verdict) -> Outcome {
    Outcome::Success { verdict, advice: Advice::default() }
}

fn ok_advised(verdict: Verdict, advice: Advice) -> Outcome {
    Outcome::Success { verdict, advice }
}

fn status(code: u16) -> Outcome {
    Outcome::Status { code, advice: Advice::default() }
}

fn status_advised(code: u16, advice: Advice) -> Outcome {
    Outcome::Status { code, advice }
}

fn failed(failure: Failure) -> Outcome {
    Outcome::Failed(failure)
}

// Advice.

fn retry_after(wait: Duration) -> Advice {
    Advice { retry_after: Some(wait), ..Advice::default() }
}

fn reset(wait: Duration) -> Advice {
    Advice { reset: Some(wait), ..Advice::default() }
}

fn quota(remaining: u64, reset: Duration) -> Advice {
    Advice { remaining: Some(remaining), reset: Some(reset), ..Advice::default() }
}

// Attempts.

/// After `failures` consecutive transient failures, no deadline.
fn after(failures: u32) -> Attempt {
    Attempt { number: failures + 1, failures, remaining: None, ..Attempt::default() }
}

/// The first attempt, with `remaining` left before the deadline.
fn left(remaining: Duration) -> Attempt {
    Attempt { number: 1, failures: 0, remaining: Some(remaining), ..Attempt::default() }
}

/// After `failures` consecutive failures, with `remaining` left.
fn after_left(failures: u32, remaining: Duration) -> Attempt {
    Attempt { number: failures + 1, failures, remaining: Some(remaining), ..Attempt::default() }
}

// Actions.

fn poll(after: Duration, reason: WaitReason) -> Action {
    Action::Poll { after, reason }
}

fn retry(after: Duration, reason: WaitReason) -> Action {
    Action::Retry { after, reason }
}

/// Retry after the base policy's exact backoff for retry `n`: min(200ms * 2^(n-1), 30s).
fn backoff(n: u32) -> Action {
    let d = ms(200).saturating_mul(2u32.saturating_pow(n - 1)).min(secs(30));
    retry(d, WaitReason::Backoff)
}

fn permanent(cause: &str) -> Action {
    Action::Stop(Stop::Permanent { cause: cause.into() })
}

fn budget_spent(failures: u32, cause: &str) -> Action {
    Action::Stop(Stop::BudgetSpent { failures, cause: cause.into() })
}

fn not_retryable(cause: &str) -> Action {
    Action::Stop(Stop::NotRetryable { cause: cause.into() })
}

fn deadline(wait: Duration, reason: WaitReason, remaining: Duration, cause: &str) -> Action {
    Action::Stop(Stop::Deadline { wait, reason, remaining, cause: Some(cause.into()) })
}

fn too_long(wait: Duration, reason: WaitReason, cause: &str) -> Action {
    Action::Stop(Stop::WaitTooLong { wait, reason, cause: cause.into() })
}

fn check(rows: &[Row]) {
    for (description, tweak, outcome, attempt, want) in rows {
        let mut policy = base();
        tweak(&mut policy);
        let mut rng = StdRng::seed_from_u64(SEED);
        let got = policy.decide(outcome, attempt, &mut rng);
        assert_eq!(&got, want, "{description}: {outcome:?} {attempt:?} with {policy:?}");
    }
}

const NOT_MET: &str = "condition not met yet";
const NOT_JSON: &str = "2xx body is not JSON";

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn every_verdict_of_a_2xx() {
    check(&[
        ("met is done", same, ok(Met), after(0), Action::Done),
        ("fail-when stops", same, ok(FailWhen), after(0), Action::FailWhen),
        ("not met polls after the interval", same, ok(NotMet), after(0), poll(secs(1), Interval)),
        ("not met after failures still polls after the interval", same, ok(NotMet), after(5), poll(secs(1), Interval)),
        ("not met with a zero interval", |p| p.interval = Duration::ZERO, ok(NotMet), after(0), poll(Duration::ZERO, Interval)),
        ("not JSON is a transient failure", same, ok(NotJson), after(0), backoff(1)),
        ("not JSON backs off like any failure", same, ok(NotJson), after(3), backoff(4)),
        ("met even with the deadline reached", same, ok(Met), left(Duration::ZERO), Action::Done),
        ("fail-when even with the deadline reached", same, ok(FailWhen), left(Duration::ZERO), Action::FailWhen),
        ("met even with the budget spent", same, ok(Met), after(100), Action::Done),
        ("met is done for a POST", non_idempotent, ok(Met), after(0), Action::Done),
        ("fail-when for a POST", non_idempotent, ok(FailWhen), after(0), Action::FailWhen),
        ("a POST not met yet is polled again", non_idempotent, ok(NotMet), after(0), poll(secs(1), Interval)),
        ("met ignores the server's advice", same, ok_advised(Met, retry_after(secs(60))), after(0), Action::Done),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn every_status_class() {
    let transient = [408, 429, 500, 502, 503, 504, 505, 507, 520, 599];
    for code in transient {
        check(&[(
            "transient status is retried with backoff",
            same,
            status(code),
            after(0),
            backoff(1),
        )]);
    }
    let permanent_codes =
        [300, 301, 302, 303, 304, 307, 308, 400, 401, 402, 403, 404, 405, 406, 409, 410, 413, 418, 422, 451, 501];
    for code in permanent_codes {
        let cause = format!("HTTP {code}");
        let want = permanent(&cause);
        check(&[("permanent status stops", same, status(code), after(0), want.clone())]);
        check(&[("permanent status stops with any budget left", |p| p.retries = 100, status(code), after(0), want)]);
    }
    check(&[
        ("retry-on makes 404 transient", |p| p.retry_on = vec![404, 409], status(404), after(0), backoff(1)),
        ("retry-on makes 409 transient", |p| p.retry_on = vec![404, 409], status(409), after(2), backoff(3)),
        ("retry-on makes 501 transient", |p| p.retry_on = vec![501], status(501), after(0), backoff(1)),
        ("retry-on leaves other codes permanent", |p| p.retry_on = vec![409], status(404), after(0), permanent("HTTP 404")),
        ("retry-on statuses spend the budget", |p| p.retry_on = vec![404], status(404), after(6), budget_spent(7, "HTTP 404")),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn every_failure_variant() {
    let transient = [
        (Refused, "connection refused"),
        (Dns, "host name did not resolve"),
        (ConnectTimeout, "connect timed out"),
        (Timeout, "request timed out"),
        (Reset, "connection reset"),
        (Closed, "the server closed the connection before replying"),
        (Truncated, "body truncated"),
        (Malformed, "malformed reply"),
    ];
    for (failure, cause) in transient {
        check(&[
            ("transient failure is retried", same, failed(failure), after(0), backoff(1)),
            ("transient failure backs off", same, failed(failure), after(4), backoff(5)),
            ("transient failure spends the budget", same, failed(failure), after(6), budget_spent(7, cause)),
        ]);
    }
    let permanent_failures = [
        (Tls, "TLS handshake failed"),
        (TooManyRedirects, "too many redirects"),
        (BadRedirect, "redirect cannot be followed"),
        (Unsendable, "the request cannot be sent"),
        (BodyTooLarge, "body larger than --max-body"),
        (ProxyRefused, "the proxy refused the connection"),
        (CertRefused, "the server refused the client certificate"),
        (CertWanted, "the server asks for a client certificate"),
    ];
    for (failure, cause) in permanent_failures {
        check(&[
            ("permanent failure stops", same, failed(failure), after(0), permanent(cause)),
            ("permanent failure stops for a POST too", non_idempotent_forced, failed(failure), after(0), permanent(cause)),
            ("permanent failure stops before the budget", same, failed(failure), after(6), permanent(cause)),
        ]);
    }
}

#[test]
fn backoff_doubles_to_the_cap_without_jitter() {
    // d = min(200ms * 2^(n-1), 30s), written out rather than recomputed.
    let schedule_ms = [200, 400, 800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000, 30_000, 30_000];
    let policy = Policy { retries: 100, ..base() };
    let mut rng = StdRng::seed_from_u64(SEED);
    for (n, want) in (1..).zip(schedule_ms) {
        assert_eq!(policy.backoff_delay(n, &mut rng), ms(want), "backoff_delay({n})");
        let action = policy.decide(&status(503), &after(n - 1), &mut rng);
        assert_eq!(action, retry(ms(want), Backoff), "retry {n} after {} failures", n - 1);
    }
    // Other bases: 1s doubling to 5s.
    let policy = Policy { backoff: secs(1), backoff_max: secs(5), ..base() };
    for (n, want) in (1..).zip([1, 2, 4, 5, 5, 5]) {
        assert_eq!(policy.backoff_delay(n, &mut rng), secs(want), "1s base, retry {n}");
    }
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn jitter_stays_within_its_range() {
    for seed in 0..200 {
        let mut rng = StdRng::seed_from_u64(seed);
        for n in 1..=12 {
            let d = ms(200).saturating_mul(1 << (n - 1)).min(secs(30));
            let full = Policy { jitter: Jitter::Full, ..base() }.backoff_delay(n, &mut rng);
            assert!(full <= d, "full jitter, seed {seed}, retry {n}: {full:?} > {d:?}");
            let equal = Policy { jitter: Jitter::Equal, ..base() }.backoff_delay(n, &mut rng);
            assert!(d / 2 <= equal && equal <= d, "equal jitter, seed {seed}, retry {n}: {equal:?} not in [{:?}, {d:?}]", d / 2);
            // The jittered delay reaches decide() unchanged, with its reason.
            let mut fresh = StdRng::seed_from_u64(seed);
            let direct = Policy { jitter: Jitter::Full, ..base() }.backoff_delay(n, &mut fresh);
            let mut fresh = StdRng::seed_from_u64(seed);
            let decided = Policy { jitter: Jitter::Full, retries: 100, ..base() }.decide(&failed(Reset), &after(n - 1), &mut fresh);
            assert_eq!(decided, retry(direct, Backoff), "decide passes the jittered delay, seed {seed}, retry {n}");
        }
    }
}

#[test]
fn jitter_spreads_over_its_range() {
    // Not a statistics test: only that jitter is not stuck at one end.
    let d = secs(30);
    let policy = |jitter| Policy { jitter, backoff: d, backoff_max: d, ..base() };
    let mut rng = StdRng::seed_from_u64(SEED);
    let full: Vec<_> = (0..1000).map(|_| policy(Jitter::Full).backoff_delay(1, &mut rng)).collect();
    let equal: Vec<_> = (0..1000).map(|_| policy(Jitter::Equal).backoff_delay(1, &mut rng)).collect();
    assert!(full.iter().any(|x| *x < d / 10) && full.iter().any(|x| *x > d * 9 / 10), "full jitter covers [0, d]");
    assert!(
        equal.iter().any(|x| *x < d * 11 / 20) && equal.iter().any(|x| *x > d * 19 / 20),
        "equal jitter covers [d/2, d]"
    );
}

#[test]
fn jitter_is_exact_for_a_seed() {
    // One uniform draw u in [0, 1] per retry: full = d*u, equal = d/2 + (d/2)*u.
    for (jitter, name) in [(Jitter::Full, "full"), (Jitter::Equal, "equal")] {
        let policy = Policy { jitter, retries: 100, ..base() };
        let mut draws = StdRng::seed_from_u64(SEED);
        let mut rng = StdRng::seed_from_u64(SEED);
        for n in 1..=12u32 {
            let d = ms(200).saturating_mul(1 << (n - 1)).min(secs(30));
            let u: f64 = draws.random_range(0.0..=1.0);
            let want = match jitter {
                Jitter::Full => d.mul_f64(u),
                _ => d / 2 + (d / 2).mul_f64(u),
            };
            let action = policy.decide(&status(502), &after(n - 1), &mut rng);
            assert_eq!(action, retry(want, Backoff), "{name} jitter, seed {SEED}, retry {n}");
        }
    }
}

#[test]
fn jitter_is_deterministic_per_seed() {
    let sequence = |jitter, seed| {
        let policy = Policy { jitter, ..base() };
        let mut rng = StdRng::seed_from_u64(seed);
        (1..=12).map(|n| policy.backoff_delay(n, &mut rng)).collect::<Vec<_>>()
    };
    for jitter in [Jitter::Full, Jitter::Equal] {
        assert_eq!(sequence(jitter, 1), sequence(jitter, 1), "{jitter:?}: same seed, same delays");
        assert_ne!(sequence(jitter, 1), sequence(jitter, 2), "{jitter:?}: another seed, other delays");
    }
    // No jitter draws nothing worth noticing: every seed gives the exact schedule.
    assert_eq!(sequence(Jitter::None, 1), sequence(Jitter::None, 2));
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn backoff_never_overflows() {
    let mut rng = StdRng::seed_from_u64(SEED);
    let huge = Duration::MAX;
    let century = Duration::from_secs(100 * 365 * 24 * 3600);
    let rows: [(&str, Policy, u32, Duration); 17] = [
        ("retry 0 is the base delay", base(), 0, ms(200)),
        ("retry 33 (2^32) is capped", base(), 33, secs(30)),
        ("retry 40 is capped", base(), 40, secs(30)),
        ("retry 1000 is capped", base(), 1000, secs(30)),
        ("retry u32::MAX is capped", base(), u32::MAX, secs(30)),
        ("a huge backoff is capped at once", Policy { backoff: huge, ..base() }, 1, secs(30)),
        ("a huge backoff doubled is capped", Policy { backoff: huge, ..base() }, 2, secs(30)),
        ("a huge backoff at retry u32::MAX is capped", Policy { backoff: huge, ..base() }, u32::MAX, secs(30)),
        ("a huge cap is reached without overflow", Policy { backoff: huge, backoff_max: huge, ..base() }, 2, huge),
        ("a century cap at retry u32::MAX", Policy { backoff: secs(1), backoff_max: century, ..base() }, u32::MAX, century),
        ("a zero backoff stays zero", Policy { backoff: Duration::ZERO, ..base() }, u32::MAX, Duration::ZERO),
        ("a zero cap", Policy { backoff: Duration::ZERO, backoff_max: Duration::ZERO, ..base() }, 40, Duration::ZERO),
        // Past 2^32 the doubling stays exact: 1ns * 2^33 and 2^39, under a 1h cap.
        ("retry 34 of 1ns is 2^33 ns", Policy { backoff: Duration::from_nanos(1), backoff_max: secs(3600), ..base() }, 34, Duration::from_nanos(1 << 33)),
        ("retry 40 of 1ns is 2^39 ns", Policy { backoff: Duration::from_nanos(1), backoff_max: secs(3600), ..base() }, 40, Duration::from_nanos(1 << 39)),
        ("retry 43 of 1ns reaches the 1h cap", Policy { backoff: Duration::from_nanos(1), backoff_max: secs(3600), ..base() }, 43, secs(3600)),
        ("a 1ns backoff reaches the default cap", Policy { backoff: Duration::from_nanos(1), ..base() }, 1000, secs(30)),
        ("a backoff above its cap is capped", Policy { backoff: secs(60), ..base() }, 1, secs(30)),
    ];
    for (description, policy, n, want) in rows {
        assert_eq!(policy.backoff_delay(n, &mut rng), want, "{description}");
        for jitter in [Jitter::Full, Jitter::Equal] {
            let got = Policy { jitter, ..policy.clone() }.backoff_delay(n, &mut rng);
            assert!(got <= want, "{description}, {jitter:?} jitter: {got:?} > {want:?}");
        }
    }
    // Through decide(): a failure count at the top of u32 neither panics nor wraps.
    check(&[
        ("failures near u32::MAX with an endless budget", |p| p.retries = u32::MAX, failed(Reset), after(u32::MAX - 1), retry(secs(30), Backoff)),
        ("failures at u32::MAX saturate instead of wrapping", |p| p.retries = u32::MAX, failed(Reset), Attempt { number: u32::MAX, failures: u32::MAX, remaining: None, ..Attempt::default() }, retry(secs(30), Backoff)),
        ("failures at u32::MAX spend a finite budget", same, failed(Reset), Attempt { number: u32::MAX, failures: u32::MAX, remaining: None, ..Attempt::default() }, budget_spent(u32::MAX, "connection reset")),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn budget_tolerates_exactly_retries_failures() {
    for retries in [1, 2, 3, 6, 10] {
        let tweak: Tweak = match retries {
            1 => |p| p.retries = 1,
            2 => |p| p.retries = 2,
            3 => |p| p.retries = 3,
            6 => |p| p.retries = 6,
            _ => |p| p.retries = 10,
        };
        check(&[
            ("the first failure is retried", tweak, failed(Refused), after(0), backoff(1)),
            ("failure N is retried", tweak, failed(Refused), after(retries - 1), backoff(retries)),
            ("failure N+1 gives up", tweak, failed(Refused), after(retries), budget_spent(retries + 1, "connection refused")),
            ("a 503 spends it alike", tweak, status(503), after(retries), budget_spent(retries + 1, "HTTP 503")),
            ("a 429 spends it alike", tweak, status(429), after(retries), budget_spent(retries + 1, "HTTP 429")),
            ("not JSON spends it alike", tweak, ok(NotJson), after(retries), budget_spent(retries + 1, NOT_JSON)),
            ("server advice does not refill it", tweak, status_advised(503, retry_after(secs(1))), after(retries), budget_spent(retries + 1, "HTTP 503")),
        ]);
    }
    check(&[
        ("retries=0 gives up on the first failure", |p| p.retries = 0, failed(Timeout), after(0), budget_spent(1, "request timed out")),
        ("retries=0 gives up on the first 503", |p| p.retries = 0, status(503), after(0), budget_spent(1, "HTTP 503")),
        ("retries=0 still polls a healthy 2xx", |p| p.retries = 0, ok(NotMet), after(0), poll(secs(1), Interval)),
        ("retries=0 still stops permanently on 404", |p| p.retries = 0, status(404), after(0), permanent("HTTP 404")),
        ("the default budget is 6", same, failed(Reset), after(5), backoff(6)),
        ("the default budget is 6, not 7", same, failed(Reset), after(6), budget_spent(7, "connection reset")),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn non_idempotent_requests_are_resent_only_when_surely_unprocessed() {
    check(&[
        // Surely not processed: re-sent.
        ("POST refused is retried", non_idempotent, failed(Refused), after(0), backoff(1)),
        ("POST dns failure is retried", non_idempotent, failed(Dns), after(1), backoff(2)),
        ("POST connect timeout is retried", non_idempotent, failed(ConnectTimeout), after(2), backoff(3)),
        ("POST 429 is retried", non_idempotent, status(429), after(0), backoff(1)),
        ("POST 429 honours Retry-After", non_idempotent, status_advised(429, retry_after(secs(3))), after(0), retry(secs(3), RetryAfter)),
        ("POST connect failures still spend the budget", non_idempotent, failed(Refused), after(6), budget_spent(7, "connection refused")),
        // A --paginate walk's later page: the retry walks from the POST again, which was processed.
        ("POST walk, page 2 refused, is not re-sent", non_idempotent, failed(Refused), Attempt { later_page: true, ..after(0) }, not_retryable("connection refused")),
        ("POST walk, page 2's 429, is not re-sent", non_idempotent, status(429), Attempt { later_page: true, ..after(0) }, not_retryable("HTTP 429")),
        ("forced POST walk, page 2 refused, is retried", non_idempotent_forced, failed(Refused), Attempt { later_page: true, ..after(0) }, backoff(1)),
        ("GET walk, page 2's 503, is retried", same, status(503), Attempt { later_page: true, ..after(0) }, backoff(1)),
        // May have been processed: not re-sent, whatever the budget.
        ("POST 500 is not re-sent", non_idempotent, status(500), after(0), not_retryable("HTTP 500")),
        ("POST 502 is not re-sent", non_idempotent, status(502), after(0), not_retryable("HTTP 502")),
        ("POST 503 is not re-sent", non_idempotent, status(503), after(0), not_retryable("HTTP 503")),
        ("POST 503 with Retry-After is not re-sent", non_idempotent, status_advised(503, retry_after(secs(1))), after(0), not_retryable("HTTP 503")),
        ("POST 504 is not re-sent", non_idempotent, status(504), after(0), not_retryable("HTTP 504")),
        ("POST 408 is not re-sent", non_idempotent, status(408), after(0), not_retryable("HTTP 408")),
        ("POST timeout is not re-sent", non_idempotent, failed(Timeout), after(0), not_retryable("request timed out")),
        ("POST reset is not re-sent", non_idempotent, failed(Reset), after(0), not_retryable("connection reset")),
        ("POST truncated is not re-sent", non_idempotent, failed(Truncated), after(0), not_retryable("body truncated")),
        ("POST malformed is not re-sent", non_idempotent, failed(Malformed), after(0), not_retryable("malformed reply")),
        ("POST not JSON is not re-sent", non_idempotent, ok(NotJson), after(0), not_retryable(NOT_JSON)),
        ("POST retry-on 404 is not re-sent", |p| { p.idempotent = false; p.retry_on = vec![404] }, status(404), after(0), not_retryable("HTTP 404")),
        ("not re-sent wins over a spent budget", |p| { p.idempotent = false; p.retries = 0 }, status(503), after(0), not_retryable("HTTP 503")),
        // --retry-non-idempotent: retried like GET.
        ("forced POST 500 is retried", non_idempotent_forced, status(500), after(0), backoff(1)),
        ("forced POST 502 is retried", non_idempotent_forced, status(502), after(1), backoff(2)),
        ("forced POST 503 is retried", non_idempotent_forced, status(503), after(0), backoff(1)),
        ("forced POST 503 honours Retry-After", non_idempotent_forced, status_advised(503, retry_after(secs(4))), after(0), retry(secs(4), RetryAfter)),
        ("forced POST timeout is retried", non_idempotent_forced, failed(Timeout), after(0), backoff(1)),
        ("forced POST reset is retried", non_idempotent_forced, failed(Reset), after(0), backoff(1)),
        ("forced POST truncated is retried", non_idempotent_forced, failed(Truncated), after(0), backoff(1)),
        ("forced POST malformed is retried", non_idempotent_forced, failed(Malformed), after(0), backoff(1)),
        ("forced POST not JSON is retried", non_idempotent_forced, ok(NotJson), after(0), backoff(1)),
        ("forced POST refused is retried", non_idempotent_forced, failed(Refused), after(0), backoff(1)),
        ("forced POST still spends the budget", non_idempotent_forced, status(503), after(6), budget_spent(7, "HTTP 503")),
        // Permanent stays permanent.
        ("POST 404 is permanent", non_idempotent, status(404), after(0), permanent("HTTP 404")),
        ("POST 501 is permanent", non_idempotent, status(501), after(0), permanent("HTTP 501")),
        ("POST TLS failure is permanent", non_idempotent, failed(Tls), after(0), permanent("TLS handshake failed")),
        ("forced POST 400 is permanent", non_idempotent_forced, status(400), after(0), permanent("HTTP 400")),
        ("forced POST body too large is permanent", non_idempotent_forced, failed(BodyTooLarge), after(0), permanent("body larger than --max-body")),
        // retry_non_idempotent alone changes nothing for GET.
        ("GET with the flag retries as ever", |p| p.retry_non_idempotent = true, status(503), after(0), backoff(1)),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn server_advice_wins_over_backoff() {
    check(&[
        // Retry-After on retried statuses.
        ("503 Retry-After longer than backoff", same, status_advised(503, retry_after(secs(5))), after(0), retry(secs(5), RetryAfter)),
        ("503 Retry-After shorter than backoff", same, status_advised(503, retry_after(ms(50))), after(0), retry(ms(50), RetryAfter)),
        ("503 Retry-After shorter than a late backoff", same, status_advised(503, retry_after(secs(1))), after(5), retry(secs(1), RetryAfter)),
        ("503 Retry-After of zero", same, status_advised(503, retry_after(Duration::ZERO)), after(0), retry(Duration::ZERO, RetryAfter)),
        ("429 Retry-After longer than backoff", same, status_advised(429, retry_after(secs(7))), after(0), retry(secs(7), RetryAfter)),
        ("429 Retry-After shorter than backoff", same, status_advised(429, retry_after(ms(10))), after(3), retry(ms(10), RetryAfter)),
        ("429 Retry-After wins over reset", same, status_advised(429, Advice { retry_after: Some(secs(7)), reset: Some(secs(60)), remaining: Some(0), ..Advice::default() }), after(0), retry(secs(7), RetryAfter)),
        ("500 Retry-After", same, status_advised(500, retry_after(secs(2))), after(0), retry(secs(2), RetryAfter)),
        ("502 Retry-After", same, status_advised(502, retry_after(secs(2))), after(0), retry(secs(2), RetryAfter)),
        ("504 Retry-After", same, status_advised(504, retry_after(secs(2))), after(0), retry(secs(2), RetryAfter)),
        ("408 Retry-After", same, status_advised(408, retry_after(secs(2))), after(0), retry(secs(2), RetryAfter)),
        ("retry-on 404 Retry-After", |p| p.retry_on = vec![404], status_advised(404, retry_after(secs(3))), after(0), retry(secs(3), RetryAfter)),
        // Rate-limit reset: on 429 only.
        ("429 with only reset waits for it", same, status_advised(429, reset(secs(20))), after(0), retry(secs(20), RateLimitReset)),
        ("429 with only a short reset waits for it", same, status_advised(429, reset(ms(5))), after(4), retry(ms(5), RateLimitReset)),
        ("429 with remaining 0 and reset waits for it", same, status_advised(429, quota(0, secs(20))), after(0), retry(secs(20), RateLimitReset)),
        ("429 without advice backs off", same, status(429), after(2), backoff(3)),
        ("429 with remaining but no reset backs off", same, status_advised(429, Advice { remaining: Some(0), ..Advice::default() }), after(0), backoff(1)),
        ("503 with only reset backs off", same, status_advised(503, reset(secs(20))), after(0), backoff(1)),
        ("503 with remaining 0 and reset backs off", same, status_advised(503, quota(0, secs(20))), after(1), backoff(2)),
        // Advice never makes a permanent status transient.
        ("404 Retry-After stays permanent", same, status_advised(404, retry_after(secs(1))), after(0), permanent("HTTP 404")),
        ("501 Retry-After stays permanent", same, status_advised(501, retry_after(secs(1))), after(0), permanent("HTTP 501")),
        // A 2xx body that is not JSON yet (202 Accepted, empty body) is retried after its Retry-After.
        ("not JSON with Retry-After", same, ok_advised(NotJson, retry_after(secs(5))), after(0), retry(secs(5), RetryAfter)),
        ("not JSON with a short Retry-After", same, ok_advised(NotJson, retry_after(ms(10))), after(2), retry(ms(10), RetryAfter)),
        ("not JSON with only reset backs off", same, ok_advised(NotJson, reset(secs(20))), after(0), backoff(1)),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn server_advice_stretches_polls() {
    let quiet = Advice::default();
    check(&[
        ("no advice polls after the interval", same, ok_advised(NotMet, quiet), after(0), poll(secs(1), Interval)),
        // 202 Accepted + Retry-After: the async request-reply pattern.
        ("Retry-After longer than the interval", same, ok_advised(NotMet, retry_after(secs(5))), after(0), poll(secs(5), RetryAfter)),
        ("Retry-After shorter than the interval is ignored", same, ok_advised(NotMet, retry_after(ms(500))), after(0), poll(secs(1), Interval)),
        ("Retry-After equal to the interval", same, ok_advised(NotMet, retry_after(secs(1))), after(0), poll(secs(1), Interval)),
        ("Retry-After against a long interval", |p| p.interval = secs(10), ok_advised(NotMet, retry_after(secs(5))), after(0), poll(secs(10), Interval)),
        // Remaining quota spread over the time to the reset.
        ("remaining 0 waits for the reset", same, ok_advised(NotMet, quota(0, secs(30))), after(0), poll(secs(30), RateLimitReset)),
        ("remaining 0 with a reset sooner than the interval", same, ok_advised(NotMet, quota(0, ms(300))), after(0), poll(secs(1), Interval)),
        ("remaining 0 without a reset", same, ok_advised(NotMet, Advice { remaining: Some(0), ..quiet }), after(0), poll(secs(1), Interval)),
        ("a reset without remaining", same, ok_advised(NotMet, reset(secs(30))), after(0), poll(secs(1), Interval)),
        ("remaining 4 over 40s paces 10s", same, ok_advised(NotMet, quota(4, secs(40))), after(0), poll(secs(10), RateLimitReset)),
        ("remaining 4 over 40s under a 15s interval", |p| p.interval = secs(15), ok_advised(NotMet, quota(4, secs(40))), after(0), poll(secs(15), Interval)),
        ("remaining 3 over 1s paces 333ms", |p| p.interval = ms(100), ok_advised(NotMet, quota(3, secs(1))), after(0), poll(Duration::from_nanos(333_333_333), RateLimitReset)),
        ("a huge remaining quota", same, ok_advised(NotMet, quota(u64::MAX, secs(40))), after(0), poll(secs(1), Interval)),
        ("pacing longer than Retry-After wins", same, ok_advised(NotMet, Advice { retry_after: Some(secs(8)), ..quota(4, secs(40)) }), after(0), poll(secs(10), RateLimitReset)),
        ("Retry-After longer than pacing wins", same, ok_advised(NotMet, Advice { retry_after: Some(secs(12)), ..quota(4, secs(40)) }), after(0), poll(secs(12), RetryAfter)),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn no_wait_runs_past_the_deadline() {
    check(&[
        // Polls.
        ("a poll due exactly at the deadline stops", same, ok(NotMet), left(secs(1)), deadline(secs(1), Interval, secs(1), NOT_MET)),
        ("a poll due after the deadline stops", same, ok(NotMet), left(ms(999)), deadline(secs(1), Interval, ms(999), NOT_MET)),
        ("a poll due before the deadline proceeds", same, ok(NotMet), left(ms(1001)), poll(secs(1), Interval)),
        ("no time left stops even a zero interval", |p| p.interval = Duration::ZERO, ok(NotMet), left(Duration::ZERO), deadline(Duration::ZERO, Interval, Duration::ZERO, NOT_MET)),
        ("a zero interval with 1ns left proceeds", |p| p.interval = Duration::ZERO, ok(NotMet), left(Duration::from_nanos(1)), poll(Duration::ZERO, Interval)),
        ("an advised poll past the deadline stops", same, ok_advised(NotMet, retry_after(secs(5))), left(secs(5)), deadline(secs(5), RetryAfter, secs(5), NOT_MET)),
        ("a rate-limited poll past the deadline stops", same, ok_advised(NotMet, quota(0, secs(30))), left(secs(10)), deadline(secs(30), RateLimitReset, secs(10), NOT_MET)),
        ("an advised poll before the deadline proceeds", same, ok_advised(NotMet, retry_after(secs(5))), left(secs(6)), poll(secs(5), RetryAfter)),
        // Backoff retries.
        ("a backoff due at the deadline stops", same, status(503), after_left(2, ms(800)), deadline(ms(800), Backoff, ms(800), "HTTP 503")),
        ("a backoff due before the deadline proceeds", same, status(503), after_left(2, ms(801)), backoff(3)),
        ("a failure with no time left stops", same, failed(Reset), after_left(0, Duration::ZERO), deadline(ms(200), Backoff, Duration::ZERO, "connection reset")),
        ("not JSON past the deadline stops", same, ok(NotJson), after_left(0, ms(100)), deadline(ms(200), Backoff, ms(100), NOT_JSON)),
        // Server-advised retries.
        ("Retry-After past the deadline stops", same, status_advised(503, retry_after(secs(10))), left(secs(10)), deadline(secs(10), RetryAfter, secs(10), "HTTP 503")),
        ("Retry-After before the deadline proceeds", same, status_advised(503, retry_after(secs(10))), left(secs(11)), retry(secs(10), RetryAfter)),
        ("a 429 reset past the deadline stops", same, status_advised(429, reset(secs(20))), left(secs(5)), deadline(secs(20), RateLimitReset, secs(5), "HTTP 429")),
        ("a 429 reset before the deadline proceeds", same, status_advised(429, reset(secs(20))), left(secs(21)), retry(secs(20), RateLimitReset)),
        // What stops first when several would.
        ("a permanent status stops as permanent with no time left", same, status(404), left(Duration::ZERO), permanent("HTTP 404")),
        ("a spent budget stops as spent with no time left", same, failed(Reset), after_left(6, Duration::ZERO), budget_spent(7, "connection reset")),
        ("a POST that may not be re-sent stops so with no time left", non_idempotent, status(503), left(Duration::ZERO), not_retryable("HTTP 503")),
        // The deadline, not MAX_ADVISED_WAIT, bounds advice when there is one.
        ("a day-long Retry-After inside a longer deadline", same, status_advised(503, retry_after(MAX_ADVISED_WAIT + secs(1))), left(MAX_ADVISED_WAIT * 2), retry(MAX_ADVISED_WAIT + secs(1), RetryAfter)),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn absurd_advice_without_a_deadline_gives_up() {
    const ABSURD: Duration = Duration::from_secs(MAX_ADVISED_WAIT.as_secs() + 1);
    let absurd = ABSURD;
    check(&[
        ("Retry-After at the limit is waited for", same, status_advised(503, retry_after(MAX_ADVISED_WAIT)), after(0), retry(MAX_ADVISED_WAIT, RetryAfter)),
        ("Retry-After past the limit gives up", same, status_advised(503, retry_after(absurd)), after(0), too_long(absurd, RetryAfter, "HTTP 503")),
        ("a 429 Retry-After past the limit gives up", same, status_advised(429, retry_after(absurd)), after(0), too_long(absurd, RetryAfter, "HTTP 429")),
        ("a 429 reset past the limit gives up", same, status_advised(429, reset(absurd)), after(0), too_long(absurd, RateLimitReset, "HTTP 429")),
        ("a 429 reset at the limit is waited for", same, status_advised(429, reset(MAX_ADVISED_WAIT)), after(0), retry(MAX_ADVISED_WAIT, RateLimitReset)),
        ("a 2xx Retry-After past the limit gives up", same, ok_advised(NotMet, retry_after(absurd)), after(0), too_long(absurd, RetryAfter, NOT_MET)),
        ("a 2xx Retry-After at the limit is waited for", same, ok_advised(NotMet, retry_after(MAX_ADVISED_WAIT)), after(0), poll(MAX_ADVISED_WAIT, RetryAfter)),
        ("a 2xx quota reset past the limit gives up", same, ok_advised(NotMet, quota(0, absurd)), after(0), too_long(absurd, RateLimitReset, NOT_MET)),
        ("not JSON with a Retry-After past the limit gives up", same, ok_advised(NotJson, retry_after(absurd)), after(0), too_long(absurd, RetryAfter, NOT_JSON)),
        // The user's own long waits are not the server's advice.
        ("a two-day interval is the user's choice", |p| p.interval = secs(2 * 86_400), ok(NotMet), after(0), poll(secs(2 * 86_400), Interval)),
        ("a two-day backoff is the user's choice", |p| { p.backoff = secs(2 * 86_400); p.backoff_max = secs(2 * 86_400) }, status(503), after(0), retry(secs(2 * 86_400), Backoff)),
        ("a long interval beats a shorter absurd advice", |p| p.interval = ABSURD * 2, ok_advised(NotMet, retry_after(absurd)), after(0), poll(absurd * 2, Interval)),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn stops_say_which_flag_would_help() {
    let cases: [(Stop, &[&str]); 6] = [
        (Stop::Permanent { cause: "HTTP 404".into() }, &["HTTP 404", "not retryable"]),
        (Stop::BudgetSpent { failures: 7, cause: "HTTP 503".into() }, &["7 consecutive failures", "HTTP 503", "--retries"]),
        (Stop::NotRetryable { cause: "HTTP 502".into() }, &["HTTP 502", "--retry-non-idempotent"]),
        (Stop::WaitTooLong { wait: secs(2 * 86_400), reason: RetryAfter, cause: "HTTP 503".into() }, &["HTTP 503", "2days", "Retry-After"]),
        (Stop::Deadline { wait: secs(5), reason: RetryAfter, remaining: secs(2), cause: Some("HTTP 503".into()) }, &["5.0s", "2.0s", "Retry-After", "HTTP 503", "--timeout"]),
        (Stop::Deadline { wait: ms(200), reason: Interval, remaining: Duration::ZERO, cause: Some(NOT_MET.into()) }, &["deadline", NOT_MET, "--timeout"]),
    ];
    for (stop, needles) in cases {
        let text = stop.to_string();
        for needle in needles {
            assert!(text.contains(needle), "{stop:?} displays {text:?}, which lacks {needle:?}");
        }
        assert_eq!(text, stop.describe(None), "Display is describe(None)");
        let detailed = stop.describe(Some("certificate expired"));
        assert!(detailed.contains("certificate expired"), "describe(Some) adds the detail: {detailed:?}");
    }
    // The stops decide() produces carry the hints too.
    let mut rng = StdRng::seed_from_u64(SEED);
    let Action::Stop(stop) = Policy { idempotent: false, ..base() }.decide(&status(502), &after(0), &mut rng) else {
        panic!("a POST's 502 stops");
    };
    assert!(stop.to_string().contains("--retry-non-idempotent"), "{stop}");
    let Action::Stop(stop) = base().decide(&ok(NotMet), &left(ms(10)), &mut rng) else {
        panic!("a poll past the deadline stops");
    };
    assert!(stop.to_string().contains("--timeout"), "{stop}");
}

#[test]
fn names_are_stable() {
    // `--log-format json` field values: a promise to scripts.
    let reasons = [
        (Interval, "interval"),
        (Backoff, "backoff"),
        (RetryAfter, "retry_after"),
        (RateLimitReset, "rate_limit_reset"),
        (PollInterval, "poll_interval"),
    ];
    for (reason, name) in reasons {
        assert_eq!(reason.name(), name);
    }
    let kinds = [
        (Refused, "connect"),
        (Dns, "dns"),
        (ConnectTimeout, "connect"),
        (Timeout, "timeout"),
        (Reset, "reset"),
        (Truncated, "truncated"),
        (Malformed, "malformed"),
        (Tls, "tls"),
        (TooManyRedirects, "redirects"),
        (BadRedirect, "redirects"),
        (BodyTooLarge, "body_too_large"),
        (ProxyRefused, "proxy"),
    ];
    for (failure, kind) in kinds {
        assert_eq!(failure.kind(), kind, "{failure:?}");
    }
}

#[test]
fn defaults_match_the_contract() {
    let policy = Policy::default();
    assert_eq!(policy.interval, secs(1));
    assert_eq!(policy.backoff, ms(200));
    assert_eq!(policy.backoff_max, secs(30));
    assert_eq!(policy.jitter, Jitter::Equal);
    assert_eq!(policy.retries, 6);
    assert!(policy.retry_on.is_empty());
    assert!(policy.idempotent && !policy.retry_non_idempotent);
    assert_eq!(policy.interval_max, None, "a fixed --interval");
}

// `--submit`, idempotency keys and `--stable`.

fn keyed(p: &mut Policy) {
    p.idempotent = false;
    p.keyed = true;
}

fn stable3(p: &mut Policy) {
    p.stable = 3;
}

fn submitted(advice: Advice) -> Outcome {
    Outcome::Submitted { advice }
}

/// The submit, after `failures` consecutive failures, no deadline.
fn submit(failures: u32) -> Attempt {
    Attempt { phase: Phase::Submit, ..after(failures) }
}

/// The submit, with `remaining` left before the deadline.
fn submit_left(remaining: Duration) -> Attempt {
    Attempt { phase: Phase::Submit, ..left(remaining) }
}

/// A status poll, after `failures` consecutive failures, no deadline.
fn wait(failures: u32) -> Attempt {
    Attempt { phase: Phase::Wait, ..after(failures) }
}

/// A poll on which the condition held on the `streak` polls just before.
fn streak(streak: u32) -> Attempt {
    Attempt { streak, ..after(0) }
}

fn no_status_url() -> Action {
    Action::Stop(Stop::NoStatusUrl)
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn a_post_submit_is_resent_only_where_it_surely_was_not_processed_and_a_put_on_any_transient_failure() {
    check(&[
        // A POST (or PATCH) submit may have been processed: not re-sent.
        ("POST submit 502", non_idempotent, status(502), submit(0), not_retryable("HTTP 502")),
        ("POST submit 503 with Retry-After", non_idempotent, status_advised(503, retry_after(secs(1))), submit(0), not_retryable("HTTP 503")),
        ("POST submit 500", non_idempotent, status(500), submit(0), not_retryable("HTTP 500")),
        ("POST submit 408", non_idempotent, status(408), submit(0), not_retryable("HTTP 408")),
        ("POST submit timeout", non_idempotent, failed(Timeout), submit(0), not_retryable("request timed out")),
        ("POST submit reset", non_idempotent, failed(Reset), submit(0), not_retryable("connection reset")),
        ("POST submit truncated", non_idempotent, failed(Truncated), submit(0), not_retryable("body truncated")),
        ("POST submit malformed", non_idempotent, failed(Malformed), submit(0), not_retryable("malformed reply")),
        // Surely not processed: re-sent.
        ("POST submit refused", non_idempotent, failed(Refused), submit(1), backoff(2)),
        ("POST submit dns failure", non_idempotent, failed(Dns), submit(0), backoff(1)),
        ("POST submit connect timeout", non_idempotent, failed(ConnectTimeout), submit(2), backoff(3)),
        ("POST submit 429", non_idempotent, status(429), submit(0), backoff(1)),
        ("POST submit 429 honours Retry-After", non_idempotent, status_advised(429, retry_after(secs(3))), submit(0), retry(secs(3), RetryAfter)),
        ("POST submit connect failures spend the budget", non_idempotent, failed(Refused), submit(6), budget_spent(7, "connection refused")),
        // --retry-non-idempotent re-sends it anyway.
        ("forced submit 502", non_idempotent_forced, status(502), submit(0), backoff(1)),
        ("forced submit reset", non_idempotent_forced, failed(Reset), submit(1), backoff(2)),
        // A PUT or DELETE submit is idempotent (RFC 9110 9.2.2): re-sent on any transient failure.
        ("PUT submit 502", same, status(502), submit(0), backoff(1)),
        ("PUT submit 500", same, status(500), submit(1), backoff(2)),
        ("PUT submit 503 honours Retry-After", same, status_advised(503, retry_after(secs(1))), submit(0), retry(secs(1), RetryAfter)),
        ("PUT submit timeout", same, failed(Timeout), submit(0), backoff(1)),
        ("PUT submit reset", same, failed(Reset), submit(0), backoff(1)),
        ("PUT submit truncated", same, failed(Truncated), submit(0), backoff(1)),
        ("PUT submit failures spend the budget", same, status(500), submit(6), budget_spent(7, "HTTP 500")),
        // Permanent stays permanent.
        ("submit 400", same, status(400), submit(0), permanent("HTTP 400")),
        ("submit 409 without a key", same, status(409), submit(0), permanent("HTTP 409")),
        ("submit 422 without a key", same, status(422), submit(0), permanent("HTTP 422")),
        ("submit TLS failure", same, failed(Tls), submit(0), permanent("TLS handshake failed")),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn a_request_with_an_idempotency_key_is_retried_like_a_get() {
    check(&[
        // The submit.
        ("keyed submit 502", keyed, status(502), submit(0), backoff(1)),
        ("keyed submit 503 honours Retry-After", keyed, status_advised(503, retry_after(secs(4))), submit(0), retry(secs(4), RetryAfter)),
        ("keyed submit timeout", keyed, failed(Timeout), submit(1), backoff(2)),
        ("keyed submit reset", keyed, failed(Reset), submit(0), backoff(1)),
        ("keyed submit refused", keyed, failed(Refused), submit(0), backoff(1)),
        ("keyed submit 409: the first one is still being processed", keyed, status(409), submit(0), backoff(1)),
        ("keyed submit 409 honours Retry-After", keyed, status_advised(409, retry_after(secs(2))), submit(0), retry(secs(2), RetryAfter)),
        ("keyed submit 422: the key was reused with another body", keyed, status(422), submit(0), permanent("HTTP 422")),
        ("keyed submit 400", keyed, status(400), submit(0), permanent("HTTP 400")),
        ("keyed submit spends the budget", keyed, status(502), submit(6), budget_spent(7, "HTTP 502")),
        ("keyed submit 409 spends the budget", keyed, status(409), submit(6), budget_spent(7, "HTTP 409")),
        // A plain POST (no --submit).
        ("keyed POST 502", keyed, status(502), after(0), backoff(1)),
        ("keyed POST reset", keyed, failed(Reset), after(2), backoff(3)),
        ("keyed POST not JSON", keyed, ok(NotJson), after(0), backoff(1)),
        ("keyed POST 409", keyed, status(409), after(0), backoff(1)),
        ("keyed POST 422", keyed, status(422), after(0), permanent("HTTP 422")),
        ("keyed POST not met polls", keyed, ok(NotMet), after(0), poll(secs(1), Interval)),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn a_status_poll_is_retried_like_a_get_and_carries_no_key() {
    check(&[
        ("status 502 after a POST submit", non_idempotent, status(502), wait(0), backoff(1)),
        ("status 503", same, status(503), wait(1), backoff(2)),
        ("status 503 Retry-After", non_idempotent, status_advised(503, retry_after(secs(5))), wait(0), retry(secs(5), RetryAfter)),
        ("status timeout", non_idempotent, failed(Timeout), wait(0), backoff(1)),
        ("status reset", non_idempotent, failed(Reset), wait(0), backoff(1)),
        ("status not JSON with a filter", non_idempotent, ok(NotJson), wait(0), backoff(1)),
        ("status failures spend the budget", non_idempotent, status(503), wait(6), budget_spent(7, "HTTP 503")),
        ("status 409 is permanent even with a key", keyed, status(409), wait(0), permanent("HTTP 409")),
        ("status 409 is permanent without one", same, status(409), wait(0), permanent("HTTP 409")),
        ("status 422 with a key", keyed, status(422), wait(0), permanent("HTTP 422")),
        ("status 404", non_idempotent, status(404), wait(0), permanent("HTTP 404")),
        ("status 409 with retry-on", |p| { keyed(p); p.retry_on = vec![409] }, status(409), wait(0), backoff(1)),
        ("status met is done", non_idempotent, ok(Met), wait(0), Action::Done),
        ("status failed", non_idempotent, ok(FailWhen), wait(0), Action::FailWhen),
        ("status not met polls", non_idempotent, ok(NotMet), wait(3), poll(secs(1), Interval)),
        ("status not met with a longer Retry-After", non_idempotent, ok_advised(NotMet, retry_after(secs(5))), wait(0), poll(secs(5), RetryAfter)),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn a_submit_2xx_is_judged_by_whether_it_names_its_operation() {
    check(&[
        // It names a status URL: the first status poll waits for its Retry-After, else the interval.
        ("submitted polls after the interval", same, submitted(Advice::default()), submit(0), poll(secs(1), Interval)),
        ("submitted after failures polls after the interval", same, submitted(Advice::default()), submit(3), poll(secs(1), Interval)),
        ("submitted with Retry-After", same, submitted(retry_after(secs(5))), submit(0), poll(secs(5), RetryAfter)),
        ("submitted with a Retry-After shorter than the interval", same, submitted(retry_after(ms(200))), submit(0), poll(ms(200), RetryAfter)),
        ("submitted with Retry-After 0", same, submitted(retry_after(Duration::ZERO)), submit(0), poll(Duration::ZERO, RetryAfter)),
        ("submitted with a long interval", |p| p.interval = secs(10), submitted(Advice::default()), submit(0), poll(secs(10), Interval)),
        ("submitted with no quota left waits for the reset", same, submitted(quota(0, secs(30))), submit(0), poll(secs(30), RateLimitReset)),
        ("submitted paces what is left of the quota", same, submitted(quota(4, secs(40))), submit(0), poll(secs(10), RateLimitReset)),
        ("submitted with plenty of quota polls after the interval", same, submitted(quota(1000, secs(40))), submit(0), poll(secs(1), Interval)),
        ("submitted: the poll is due after the deadline", same, submitted(Advice::default()), submit_left(ms(999)), deadline(secs(1), Interval, ms(999), "submitted")),
        ("submitted: Retry-After past the deadline", same, submitted(retry_after(secs(30))), submit_left(secs(10)), deadline(secs(30), RetryAfter, secs(10), "submitted")),
        ("submitted: Retry-After before the deadline", same, submitted(retry_after(secs(5))), submit_left(secs(6)), poll(secs(5), RetryAfter)),
        ("submitted: an absurd Retry-After without a deadline", same, submitted(retry_after(MAX_ADVISED_WAIT + secs(1))), submit(0), too_long(MAX_ADVISED_WAIT + secs(1), RetryAfter, "submitted")),
        // It names none: done only by its own body.
        ("no status URL, not met", same, ok(NotMet), submit(0), no_status_url()),
        ("no status URL, not met, for a POST", non_idempotent, ok(NotMet), submit(0), no_status_url()),
        ("no status URL, not JSON", same, ok(NotJson), submit(0), no_status_url()),
        ("no status URL, not JSON, with a key", keyed, ok(NotJson), submit(0), no_status_url()),
        ("no status URL, not met, with Retry-After", same, ok_advised(NotMet, retry_after(secs(5))), submit(0), no_status_url()),
        ("no status URL, met", same, ok(Met), submit(0), Action::Done),
        ("no status URL, failed", same, ok(FailWhen), submit(0), Action::FailWhen),
        ("no status URL, met under --stable", stable3, ok(Met), submit(0), Action::Done),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn stable_needs_the_condition_on_n_polls_in_a_row() {
    check(&[
        ("stable 3, first met", stable3, ok(Met), streak(0), poll(secs(1), Interval)),
        ("stable 3, second met", stable3, ok(Met), streak(1), poll(secs(1), Interval)),
        ("stable 3, third met", stable3, ok(Met), streak(2), Action::Done),
        ("stable 3, a longer streak", stable3, ok(Met), streak(7), Action::Done),
        ("stable 3 keeps the interval, not the server's advice", stable3, ok_advised(Met, retry_after(secs(5))), streak(0), poll(secs(1), Interval)),
        ("stable 3, not met", stable3, ok(NotMet), streak(2), poll(secs(1), Interval)),
        ("stable 3, fail-when", stable3, ok(FailWhen), streak(2), Action::FailWhen),
        ("stable 3 on a status poll", stable3, ok(Met), Attempt { phase: Phase::Wait, ..streak(1) }, poll(secs(1), Interval)),
        ("stable 3 on a status poll, third met", stable3, ok(Met), Attempt { phase: Phase::Wait, ..streak(2) }, Action::Done),
        ("stable 3, met past the deadline", stable3, ok(Met), Attempt { streak: 1, ..left(ms(500)) }, deadline(secs(1), Interval, ms(500), "condition met, not yet --stable")),
        ("stable 1 is done at once", same, ok(Met), streak(0), Action::Done),
    ]);
}

// `--interval-max`, X-Poll-Interval and the millisecond Retry-After.

/// --interval 2s growing up to 10s.
fn growing(p: &mut Policy) {
    p.interval = secs(2);
    p.interval_max = Some(secs(10));
}

/// After `not_yet` "not yet" waits, no deadline.
fn not_yet(not_yet: u32) -> Attempt {
    Attempt { not_yet, ..after(0) }
}

fn poll_interval(wait: Duration) -> Advice {
    Advice { poll_interval: Some(wait), ..Advice::default() }
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn interval_max_grows_not_yet_waits_and_server_advice_still_wins() {
    check(&[
        ("the first wait is --interval", growing, ok(NotMet), not_yet(0), poll(secs(2), Interval)),
        ("then 1.5x", growing, ok(NotMet), not_yet(1), poll(secs(3), Interval)),
        ("then 1.5x again", growing, ok(NotMet), not_yet(2), poll(ms(4500), Interval)),
        ("then 6.75s", growing, ok(NotMet), not_yet(3), poll(ms(6750), Interval)),
        ("capped at --interval-max", growing, ok(NotMet), not_yet(4), poll(secs(10), Interval)),
        ("and stays there", growing, ok(NotMet), not_yet(u32::MAX), poll(secs(10), Interval)),
        ("without --interval-max it never grows", same, ok(NotMet), not_yet(9), poll(secs(1), Interval)),
        ("interval 0 stays 0", |p| { p.interval = Duration::ZERO; p.interval_max = Some(secs(5)) }, ok(NotMet), not_yet(3), poll(Duration::ZERO, Interval)),
        ("Retry-After longer than the grown wait wins", growing, ok_advised(NotMet, retry_after(secs(8))), not_yet(2), poll(secs(8), RetryAfter)),
        ("Retry-After shorter than the grown wait is ignored", growing, ok_advised(NotMet, retry_after(secs(3))), not_yet(2), poll(ms(4500), Interval)),
        ("a quota reset beyond the cap wins", growing, ok_advised(NotMet, quota(0, secs(60))), not_yet(9), poll(secs(60), RateLimitReset)),
        ("the first status poll after a submit is --interval", growing, submitted(Advice::default()), submit(0), poll(secs(2), Interval)),
        ("--stable keeps the plain interval", |p| { growing(p); p.stable = 3 }, ok(Met), not_yet(4), poll(secs(2), Interval)),
        ("a retry is backoff, not the grown wait", growing, status(503), not_yet(4), backoff(1)),
        ("the grown wait past the deadline stops", growing, ok(NotMet), Attempt { not_yet: 4, ..left(secs(9)) }, deadline(secs(10), Interval, secs(9), "condition not met yet")),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn x_poll_interval_is_a_floor_for_the_next_poll() {
    check(&[
        ("longer than the interval", same, ok_advised(NotMet, poll_interval(secs(60))), after(0), poll(secs(60), PollInterval)),
        ("shorter than the interval", same, ok_advised(NotMet, poll_interval(ms(500))), after(0), poll(secs(1), Interval)),
        ("longer than Retry-After", same, ok_advised(NotMet, Advice { retry_after: Some(secs(5)), ..poll_interval(secs(6)) }), after(0), poll(secs(6), PollInterval)),
        ("shorter than Retry-After", same, ok_advised(NotMet, Advice { retry_after: Some(secs(7)), ..poll_interval(secs(6)) }), after(0), poll(secs(7), RetryAfter)),
        ("longer than the grown wait", growing, ok_advised(NotMet, poll_interval(secs(5))), not_yet(1), poll(secs(5), PollInterval)),
        ("on the submit's reply", same, submitted(poll_interval(secs(5))), submit(0), poll(secs(5), PollInterval)),
        ("the condition met is done at once", same, ok_advised(Met, poll_interval(secs(60))), after(0), Action::Done),
        ("a poll interval past the deadline stops", same, ok_advised(NotMet, poll_interval(secs(60))), left(secs(30)), deadline(secs(60), PollInterval, secs(30), "condition not met yet")),
    ]);
}

#[test]
fn the_millisecond_retry_after_reaches_decide_as_retry_after() {
    let now = std::time::SystemTime::now();
    let advice = Advice::from_headers([("Retry-After", "30"), ("x-ms-retry-after-ms", "1200")], now);
    let mut rng = StdRng::seed_from_u64(SEED);
    let action = base().decide(&status_advised(503, advice), &after(0), &mut rng);
    assert_eq!(action, retry(ms(1200), RetryAfter));
}

// First contact: before a URL's first reply, a connection failure is "not up yet".

/// The first attempts of a URL nothing has answered yet, after `failures` transient failures.
fn unreached(failures: u32) -> Attempt {
    Attempt { unreached: true, ..after(failures) }
}

fn not_up_yet(after: Duration) -> Action {
    poll(after, WaitReason::NotUpYet)
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn before_the_first_reply_a_connection_failure_is_not_up_yet_and_spends_no_retry() {
    check(&[
        ("refused: not up yet, at the interval", same, failed(Refused), unreached(0), not_up_yet(secs(1))),
        ("reset", same, failed(Reset), unreached(0), not_up_yet(secs(1))),
        ("dns", same, failed(Dns), unreached(0), not_up_yet(secs(1))),
        ("connect timeout", same, failed(ConnectTimeout), unreached(0), not_up_yet(secs(1))),
        ("however long it takes: no budget is spent", same, failed(Refused), unreached(600), not_up_yet(secs(1))),
        ("no retries at all", |p| p.retries = 0, failed(Refused), unreached(0), not_up_yet(secs(1))),
        ("the interval grows with --interval-max", growing, failed(Refused), Attempt { not_yet: 1, ..unreached(0) }, not_up_yet(secs(3))),
        ("the deadline says it was never reached", same, failed(Refused), Attempt { remaining: Some(ms(500)), ..unreached(0) }, deadline(secs(1), WaitReason::NotUpYet, ms(500), "never reached: connection refused")),
        // A connection was made: the server is up and failing.
        ("a timed-out request is a failure", same, failed(Timeout), unreached(0), backoff(1)),
        ("a truncated body is a failure", same, failed(Truncated), unreached(0), backoff(1)),
        ("a malformed reply is a failure", same, failed(Malformed), unreached(0), backoff(1)),
        ("TLS is permanent still", same, failed(Tls), unreached(0), permanent("TLS handshake failed")),
        ("a 503 is an answer", same, status(503), unreached(0), backoff(1)),
        // A POST that may have been processed is not re-sent, up or not.
        ("POST refused is not up yet", non_idempotent, failed(Refused), unreached(0), not_up_yet(secs(1))),
        ("POST reset may have been processed", non_idempotent, failed(Reset), unreached(0), not_retryable("connection reset")),
        // From the first reply on, failures count as before.
        ("after a reply, refused spends a retry", same, failed(Refused), after(0), backoff(1)),
        ("after a reply, reset spends the last one", same, failed(Reset), after(6), budget_spent(7, "connection reset")),
    ]);
}

// `--done-on`, `--pending-on`, `--fail-on`: statuses the user expected.

fn listed(p: &mut Policy) {
    p.done_on = vec![404, 410];
    p.pending_on = vec![409, 202];
    p.fail_on = vec![451];
}

fn listed_stable3(p: &mut Policy) {
    listed(p);
    p.stable = 3;
}

fn pending_on(after: Duration) -> Action {
    poll(after, WaitReason::PendingOn)
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn statuses_in_the_lists_are_answers_the_user_expected() {
    check(&[
        ("--done-on is done", listed, status(404), after(0), Action::Done),
        ("--done-on, another status", listed, status(410), after(0), Action::Done),
        ("--fail-on fails as --fail-when", listed, status(451), after(0), Action::FailWhen),
        ("--pending-on polls at the interval", listed, status(409), after(0), pending_on(secs(1))),
        ("--pending-on resets nothing it need not: no retry spent", listed, status(409), after(6), pending_on(secs(1))),
        ("--pending-on, a 2xx too", listed, status(202), after(0), pending_on(secs(1))),
        ("--pending-on: Retry-After still wins", listed, status_advised(409, retry_after(secs(5))), after(0), poll(secs(5), RetryAfter)),
        ("--pending-on: a shorter Retry-After does not", listed, status_advised(409, retry_after(ms(10))), after(0), pending_on(secs(1))),
        ("--pending-on grows with --interval-max", |p| { listed(p); growing(p) }, status(409), not_yet(2), pending_on(ms(4500))),
        ("--pending-on past the deadline", listed, status(409), left(ms(500)), deadline(secs(1), WaitReason::PendingOn, ms(500), "HTTP 409 (--pending-on)")),
        ("--done-on counts for --stable", listed_stable3, status(404), streak(1), poll(secs(1), Interval)),
        ("--done-on, third in a row", listed_stable3, status(404), streak(2), Action::Done),
        ("--done-on, not yet --stable past the deadline", listed_stable3, status(404), Attempt { streak: 1, ..left(ms(500)) }, deadline(secs(1), Interval, ms(500), "HTTP 404 (--done-on), not yet --stable")),
        ("a status poll is judged by the lists", listed, status(404), wait(0), Action::Done),
        ("the submit's own reply is not", listed, status(404), submit(0), permanent("HTTP 404")),
        ("nor the final GET", listed, status(404), Attempt { phase: Phase::Final, ..after(0) }, permanent("HTTP 404")),
        ("an unlisted 404 is permanent as ever", same, status(404), after(0), permanent("HTTP 404")),
        ("an unlisted 503 is retried as ever", listed, status(503), after(0), backoff(1)),
    ]);
    let policy = Policy { done_on: vec![404], pending_on: vec![409], fail_on: vec![451], ..base() };
    let holds = |code| policy.holds(&status(code), Phase::Poll);
    assert_eq!((holds(404), holds(409), holds(451), holds(200)), (true, false, false, false));
    assert!(policy.holds(&ok(Met), Phase::Poll) && !policy.holds(&ok(NotMet), Phase::Poll));
}

/// `--done-on` without `--until`.
fn done_on_alone(p: &mut Policy) {
    listed(p);
    p.no_until = true;
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn with_done_on_a_2xx_is_done_only_by_until() {
    check(&[
        ("without --until a 2xx is not yet", done_on_alone, ok(Met), after(0), poll(secs(1), Interval)),
        ("and spends no retry", done_on_alone, ok(Met), after(6), poll(secs(1), Interval)),
        ("its wait grows with --interval-max", |p| { done_on_alone(p); growing(p) }, ok(Met), not_yet(2), poll(ms(4500), Interval)),
        ("its Retry-After wins", done_on_alone, ok_advised(Met, retry_after(secs(5))), after(0), poll(secs(5), RetryAfter)),
        ("past the deadline it is not met yet", done_on_alone, ok(Met), left(ms(500)), deadline(secs(1), Interval, ms(500), "condition not met yet")),
        ("--fail-when still judges it", done_on_alone, ok(FailWhen), after(0), Action::FailWhen),
        ("a body that is not JSON is still transient", done_on_alone, ok(NotJson), after(0), backoff(1)),
        ("with --until holding it is done", listed, ok(Met), after(0), Action::Done),
        ("with --until not holding it is not yet", listed, ok(NotMet), after(0), poll(secs(1), Interval)),
        ("without --done-on any 2xx is done", |p| p.no_until = true, ok(Met), after(0), Action::Done),
        ("the listed statuses still decide", done_on_alone, status(404), after(0), Action::Done),
    ]);
    let alone = Policy { done_on: vec![404], no_until: true, ..base() };
    assert!(!alone.holds(&ok(Met), Phase::Poll), "not counted by --stable");
    assert_eq!(alone.read(&ok(Met), Phase::Poll).into_owned(), ok(NotMet), "what -v and the log say");
    let until = Policy { done_on: vec![404], ..base() };
    assert!(until.holds(&ok(Met), Phase::Poll));
    assert_eq!(until.read(&ok(Met), Phase::Poll).into_owned(), ok(Met));
}

/// `--done-on refused` without `--until`: the run waits for nothing to answer.
fn until_gone(p: &mut Policy) {
    p.done_refused = true;
    p.no_until = true;
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn until_gone_any_answer_is_not_yet_and_a_refusal_is_done() {
    check(&[
        ("refused is done", until_gone, failed(Refused), after(0), Action::Done),
        ("refused is done before any reply", until_gone, failed(Refused), unreached(0), Action::Done),
        ("a 2xx is not yet", until_gone, ok(Met), after(0), poll(secs(1), Interval)),
        ("a draining server's 503 is not yet, no retry spent", until_gone, status(503), after(6), poll(secs(1), Interval)),
        ("its Retry-After stretches the wait", until_gone, status_advised(503, retry_after(secs(5))), after(0), poll(secs(5), RetryAfter)),
        ("a 404 is not yet", until_gone, status(404), after(0), poll(secs(1), Interval)),
        ("a 301 is not yet", until_gone, status(301), after(0), poll(secs(1), Interval)),
        ("a listed status still ends it", |p| { until_gone(p); p.done_on = vec![404] }, status(404), after(0), Action::Done),
        ("--fail-on still fails it", |p| { until_gone(p); p.fail_on = vec![500] }, status(500), after(0), Action::FailWhen),
        ("--pending-on says its own reason", |p| { until_gone(p); p.pending_on = vec![409] }, status(409), after(0), poll(secs(1), WaitReason::PendingOn)),
        ("past the deadline it says it still answers", until_gone, status(503), left(ms(500)), deadline(secs(1), Interval, ms(500), "HTTP 503, still answering (--done-on refused)")),
        ("a reset still spends a retry", until_gone, failed(Reset), after(0), backoff(1)),
    ]);
}

#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn not_up_yet_is_a_connection_failure_before_the_first_reply() {
    let rows = [
        (failed(Refused), unreached(0), true),
        (failed(Reset), unreached(0), true),
        (failed(Dns), unreached(0), true),
        (failed(ConnectTimeout), unreached(0), true),
        (failed(Timeout), unreached(0), false),
        (failed(Tls), unreached(0), false),
        (status(503), unreached(0), false),
        (failed(Refused), after(0), false),
    ];
    for (outcome, attempt, want) in rows {
        assert_eq!(outcome.not_up_yet(&attempt), want, "{outcome:?} {attempt:?}");
    }
}

#[test]
fn the_new_wait_reasons_have_stable_names() {
    assert_eq!((WaitReason::PendingOn.name(), WaitReason::NotUpYet.name()), ("pending_on", "not_up_yet"));
    assert_eq!(WaitReason::PendingOn.to_string(), "--pending-on");
    assert_eq!(WaitReason::NotUpYet.to_string(), "not up yet");
}

fn stream_ended(held: Duration, retry: Option<Duration>) -> Outcome {
    Outcome::StreamEnded { held, retry, idle: false }
}

/// `--watch`: a stream that ends or goes silent is asked again (after `--interval` since the
/// request started, or the stream's `retry:` when that is longer), spending no `--retries`; each
/// event is judged as a body is; a 204 to a reconnect of an event stream stops with exit 3.
#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn every_stream_outcome() {
    let idle = Outcome::StreamEnded { held: secs(90), retry: None, idle: true };
    check(&[
        ("an event that meets the condition is done", same, ok(Met), after(0), Action::Done),
        ("an event that fail-when matches stops", same, ok(FailWhen), after(0), Action::FailWhen),
        ("an event not met yet keeps the stream read", same, ok(NotMet), after(0), poll(secs(1), Interval)),
        ("a stream that ended at once is paced at the interval", same, stream_ended(ms(200), None), after(0), poll(ms(800), Interval)),
        ("a stream held longer than the interval is asked again at once", same, stream_ended(secs(41), None), after(0), poll(Duration::ZERO, Interval)),
        ("an event stream's retry: replaces the interval", same, stream_ended(ms(200), Some(ms(3000))), after(0), poll(ms(3000), WaitReason::StreamRetry)),
        ("retry: 0 is asked again at once", same, stream_ended(secs(5), Some(Duration::ZERO)), after(0), poll(Duration::ZERO, WaitReason::StreamRetry)),
        ("a retry: after a reply held past the interval is waited", same, stream_ended(secs(5), Some(ms(300))), after(0), poll(ms(300), WaitReason::StreamRetry)),
        ("retry: 0 never asks sooner than the interval", same, stream_ended(ms(200), Some(Duration::ZERO)), after(0), poll(ms(800), Interval)),
        ("a retry: shorter than the rest of the interval waits the interval", same, stream_ended(ms(200), Some(ms(500))), after(0), poll(ms(800), Interval)),
        ("a retry: as long as the rest of the interval is the stream's", same, stream_ended(ms(200), Some(ms(800))), after(0), poll(ms(800), WaitReason::StreamRetry)),
        ("a stream that ended spends no retries, whatever the failures before", same, stream_ended(ms(10), None), after(100), poll(ms(990), Interval)),
        ("a stream that went idle is asked again at once", same, idle.clone(), after(0), poll(Duration::ZERO, Interval)),
        ("a stream that ended with the deadline nearer than the wait stops", same, stream_ended(Duration::ZERO, None), left(ms(500)), deadline(secs(1), Interval, ms(500), "stream ended")),
        ("a reset stream is a transient failure", same, failed(Reset), after(0), backoff(1)),
        ("a malformed event is a transient failure", same, failed(Malformed), after(2), backoff(3)),
        ("a 204 to a reconnect of an event stream stops", same, Outcome::StreamClosed, after(0), permanent("the server ended the event stream before the condition held")),
    ]);
    assert_eq!(WaitReason::StreamRetry.name(), "stream_retry");
    assert_eq!(idle.to_string(), "stream went idle");
}

fn pending(code: u16, advice: Advice) -> Outcome {
    Outcome::Pending { code, advice }
}

/// `--pending-when`: a status no list names that the filter called not yet is polled again at the
/// interval (the server's advice first), spending no `--retries`, until the deadline.
#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn a_status_pending_when_calls_not_yet() {
    check(&[
        ("a 404 it calls not yet polls at the interval", same, pending(404, Advice::default()), after(0), poll(secs(1), WaitReason::PendingWhen)),
        ("a 400 it calls not yet spends no retries", same, pending(400, Advice::default()), after(6), poll(secs(1), WaitReason::PendingWhen)),
        ("a POST's 404 it calls not yet is polled too", non_idempotent, pending(404, Advice::default()), after(0), poll(secs(1), WaitReason::PendingWhen)),
        ("the server's Retry-After wins", same, pending(404, retry_after(secs(5))), after(0), poll(secs(5), RetryAfter)),
        ("the deadline nearer than the interval stops", same, pending(404, Advice::default()), left(ms(500)), deadline(secs(1), WaitReason::PendingWhen, ms(500), "HTTP 404 (--pending-when)")),
        ("a 404 it does not call not yet stays permanent", same, status(404), after(0), permanent("HTTP 404")),
        ("a 503 it does not call not yet is retried", same, status(503), after(0), backoff(1)),
    ]);
    assert_eq!((WaitReason::PendingWhen.name(), WaitReason::PendingWhen.to_string()), ("pending_when", "--pending-when".to_string()));
}

/// `--retry-budget`: the fleet's window, as the shared state counted it before the attempt.
fn budget(room: bool, requests: u64, retries: u64) -> Option<RetryRoom> {
    Some(RetryRoom { room, counts: Window { requests, retries } })
}

/// After `failures` consecutive failures, with the fleet's budget as given.
fn budgeted(failures: u32, budget: Option<RetryRoom>) -> Attempt {
    Attempt { budget, ..after(failures) }
}

fn held_back(after: Duration, reason: WaitReason, requests: u64, retries: u64) -> Action {
    Action::HeldBack { after, reason, counts: Window { requests, retries } }
}

/// `--retry-budget`: a transient failure is retried when the fleet's budget has room; without
/// room, no retry: the next regular poll after the interval (or the server's advice when longer),
/// the failure still counted (`--retries`, the deadline). What is no retry never asks it.
#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn a_retry_the_fleets_budget_has_no_room_for_is_held_back() {
    let no_room = budget(false, 48, 12);
    check(&[
        ("room: retried after the backoff", same, status(503), budgeted(0, budget(true, 48, 2)), backoff(1)),
        ("no room: the next poll after the interval", same, status(503), budgeted(0, no_room), held_back(secs(1), Interval, 48, 12)),
        ("no room for a connection failure either", same, failed(Reset), budgeted(2, no_room), held_back(secs(1), Interval, 48, 12)),
        ("no room: the server's longer advice first", same, status_advised(503, retry_after(secs(7))), budgeted(0, no_room), held_back(secs(7), RetryAfter, 48, 12)),
        ("no room: a shorter advice waits the interval", same, status_advised(429, retry_after(ms(10))), budgeted(0, no_room), held_back(secs(1), Interval, 48, 12)),
        ("no room: the retries are still spent", same, status(503), budgeted(6, no_room), budget_spent(7, "HTTP 503")),
        ("no room: the deadline still holds", same, status(503), Attempt { remaining: Some(ms(500)), ..budgeted(0, no_room) }, deadline(secs(1), Interval, ms(500), "HTTP 503")),
        ("no room: a POST that may have been processed still stops", non_idempotent, status(503), budgeted(0, no_room), not_retryable("HTTP 503")),
        ("no room is nothing to a 'not yet'", same, ok(NotMet), budgeted(0, no_room), poll(secs(1), Interval)),
        ("no room is nothing to a permanent failure", same, status(404), budgeted(0, no_room), permanent("HTTP 404")),
        ("no room is nothing to a service not up yet", same, failed(Refused), Attempt { unreached: true, ..budgeted(0, no_room) }, poll(secs(1), WaitReason::NotUpYet)),
    ]);
}

/// `--rate auto`: a bare 429 waits the fleet's turn (the 429 cuts the shared rate, whose bucket
/// spaces the next attempt), not a backoff of its own; the server's advice still wins, other
/// failures back off.
#[test]
#[rustfmt::skip] // One row per line: the table is the test.
fn a_bare_429_under_a_learned_rate_waits_the_fleets_turn() {
    let paced = |failures| Attempt { paced: true, ..after(failures) };
    check(&[
        ("a bare 429 waits its turn", same, status(429), paced(3), retry(Duration::ZERO, WaitReason::Rate)),
        ("Retry-After still wins", same, status_advised(429, retry_after(secs(3))), paced(0), retry(secs(3), RetryAfter)),
        ("a reset still wins", same, status_advised(429, reset(secs(20))), paced(0), retry(secs(20), RateLimitReset)),
        ("a 503 still backs off", same, status(503), paced(0), backoff(1)),
        ("a bare 429 still spends a retry", same, status(429), paced(6), budget_spent(7, "HTTP 429")),
        ("without --rate auto a bare 429 backs off", same, status(429), after(0), backoff(1)),
    ]);
}
