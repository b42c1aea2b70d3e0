//! `poll`: send one HTTP request until a jq condition holds on its JSON body.
//!
//! The run is one loop on one thread: wait for the turn (breaker, server
//! advice, `--rate`; see [`state`]) -> fetch -> judge the body ->
//! [`policy::Policy::decide`] -> tell the shared state -> wait. Handing each
//! request to another thread cost more than the request itself on loopback
//! (about 100 µs against 18 µs), so signals reach an attempt in flight
//! through [`wait::Waiter`] instead.
#![forbid(unsafe_code)]

pub mod advice;
pub mod breaker;
pub mod bucket;
pub mod cli;
pub mod condition;
pub mod config;
pub mod error;
pub mod fallback;
pub mod output;
pub mod parse;
pub mod policy;
mod proxy;
pub mod request;
pub mod state;
pub mod wait;

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime};

use crate::advice::Advice;
use crate::breaker::{Rejection, Sample, duration_ms};
use crate::condition::Judgement;
use crate::config::{Config, Fallback};
use crate::error::Error;
use crate::output::{AttemptReport, Reporter};
use crate::policy::{Action, Attempt, Failure, Outcome, Stop, WaitReason, human};
use crate::request::{Client, Fault, Reply};
use crate::state::{Admission, Shared, epoch_ms, when};
use crate::wait::Waiter;

pub use crate::error::Signal;

/// How long after the deadline an attempt still in flight is ended from the
/// watchdog thread; a request's own timeout ends it at the deadline.
const DEADLINE_GRACE: Duration = Duration::from_millis(250);

/// What one attempt produced.
pub struct Probe {
    pub result: Result<Reply, Fault>,
    pub latency: Duration,
    /// Set for 2xx replies only.
    pub judgement: Option<Judgement>,
}

impl Probe {
    /// The plain-data outcome the policy decides on.
    fn outcome(&self, now: SystemTime) -> Outcome {
        match (&self.result, &self.judgement) {
            (Err(fault), _) => Outcome::Failed(fault.failure),
            (Ok(reply), judgement) => {
                let advice = Advice::from_headers(reply.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())), now);
                match judgement {
                    Some(judgement) => Outcome::Success { verdict: judgement.verdict, advice },
                    None => Outcome::Status { code: reply.status, advice },
                }
            }
        }
    }
}

/// Runs the poll loop to its end. `Ok` holds the final body (exit 0).
pub fn run(config: Config, reporter: &mut Reporter) -> Result<Vec<u8>, Error> {
    let ender = reporter.end_handle();
    let on_signal = {
        let ender = ender.clone();
        move |signal| ender.end(Error::Interrupted { signal, attempts: ender.attempts() })
    };
    let waiter =
        Waiter::install(on_signal).map_err(|e| Error::Permanent(format!("cannot install signal handlers: {e}")))?;
    let request_timeout = config.request.request_timeout;
    let url = config.request.url.clone();
    let limits = &config.limits;
    let mut shared = Shared::new(limits.state.as_deref(), limits.rate, limits.breaker, &url);
    let keep_last = limits.fallback == Some(Fallback::Last);
    reporter.start(&config.request);
    let conditions = config.conditions;
    let client = Client::new(config.request);

    let started = Instant::now();
    let deadline = config.timeout.map(|timeout| started + timeout);
    if let Some(deadline) = deadline {
        // Requests end at the deadline by their own timeouts; this catches a filter that never does.
        let end = move || {
            let attempt = ender.attempts();
            ender.end(Error::Deadline(format!(
                "deadline reached while attempt {attempt} was still being judged (does a jq filter loop forever?)"
            )))
        };
        waiter.watch(deadline + DEADLINE_GRACE, end).map_err(|e| Error::Permanent(format!("cannot start: {e}")))?;
    }
    let time_left = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
    let mut rng = rand::rng();
    let mut failures = 0;
    let mut number = 0;
    let mut reported_errors = HashSet::new();
    loop {
        number += 1;
        if shared.is_active() {
            wait_turn(&mut shared, number, time_left(), &waiter, reporter, &url)?;
        }
        let remaining = time_left();
        let budget = remaining.map_or(request_timeout, |left| left.min(request_timeout));
        reporter.in_flight(number);
        let interrupted = |signal| Error::Interrupted { signal, attempts: number };
        let probe = waiter
            .attempt(|| {
                let sent = Instant::now();
                let result = client.fetch(budget);
                let latency = sent.elapsed();
                let judgement = match &result {
                    Ok(reply) if (200..300).contains(&reply.status) => Some(conditions.judge(&reply.body)),
                    _ => None,
                };
                Probe { result, latency, judgement }
            })
            .map_err(|signal| Error::Interrupted { signal, attempts: number - 1 })?;

        for error in probe.judgement.iter().flat_map(|j| &j.errors) {
            if reported_errors.insert(error.clone()) {
                reporter.warn(error);
            }
        }
        let outcome = probe.outcome(SystemTime::now());
        let attempt = Attempt { number, failures, remaining: time_left() };
        let action = config.policy.decide(&outcome, &attempt, &mut rng);
        reporter.attempt(&AttemptReport {
            number,
            probe: &probe,
            outcome: &outcome,
            action: &action,
            elapsed: started.elapsed(),
        });
        let rejection = tell(&mut shared, &probe, &outcome, &action, keep_last, reporter)?;

        let body = |probe: Probe| probe.result.map(|reply| reply.body).unwrap_or_default();
        let after = match action {
            Action::Done => return Ok(body(probe)),
            Action::FailWhen => return Err(Error::FailWhen(body(probe))),
            Action::Stop(stop) => return Err(ending(&stop, &probe, &url)),
            Action::Poll { after, .. } => {
                failures = 0;
                after
            }
            Action::Retry { after, .. } => {
                failures += 1;
                after
            }
        };
        // The breaker opened (here or in another process): stop now rather than at the next turn.
        if let Some((rejection, now)) = rejection {
            return Err(circuit_open(&rejection, shared.origin(), now, &url));
        }
        waiter.sleep(after).map_err(interrupted)?;
    }
}

/// Before attempt `number`: asks the breaker, then waits for the server's
/// "not before" and the `--rate` slot, never past the deadline.
fn wait_turn(
    shared: &mut Shared,
    number: u32,
    left: Option<Duration>,
    waiter: &Waiter,
    reporter: &mut Reporter,
    url: &str,
) -> Result<(), Error> {
    let now = epoch_ms(SystemTime::now());
    let deadline = left.map(|left| now.saturating_add(duration_ms(left)));
    let admission = shared.admit(now, deadline, &mut |w| reporter.warn(w)).map_err(|e| state_error(&e, number > 1))?;
    match admission {
        Admission::Go { at, why } => {
            let wait = Duration::from_millis(at.saturating_sub(now));
            if !wait.is_zero() {
                reporter.queued(number, wait, why);
                waiter.sleep(wait).map_err(|signal| Error::Interrupted { signal, attempts: number - 1 })?;
            }
            Ok(())
        }
        Admission::Open(rejection) => Err(circuit_open(&rejection, shared.origin(), now, url)),
        Admission::TooLate { at, why } => Err(Error::Deadline(format!(
            "deadline: the next attempt would start in {} ({}) but only {} is left (raise --timeout to wait longer) [{}]",
            human(Duration::from_millis(at.saturating_sub(now))),
            why.describe(),
            human(left.unwrap_or_default()),
            output::redact_url(url)
        ))),
    }
}

/// After an attempt: feeds the breaker and keeps the server's advice the
/// policy honoured (and, when the run is done, its body for `--fallback last`),
/// so other runs see them. Returns the breaker's rejection, and when, if it is open now.
fn tell(
    shared: &mut Shared,
    probe: &Probe,
    outcome: &Outcome,
    action: &Action,
    keep_last: bool,
    reporter: &mut Reporter,
) -> Result<Option<(Rejection, u64)>, Error> {
    let now = epoch_ms(SystemTime::now());
    let not_before = match action {
        Action::Poll { after, reason: WaitReason::RetryAfter | WaitReason::RateLimitReset }
        | Action::Retry { after, reason: WaitReason::RetryAfter | WaitReason::RateLimitReset } => {
            Some(now.saturating_add(duration_ms(*after)))
        }
        _ => None,
    };
    let good_body = match (action, &probe.result) {
        (Action::Done, Ok(reply)) if keep_last => Some(reply.body.as_slice()),
        _ => None,
    };
    let sample = Sample { ok: !breaker::counts_as_failure(outcome), latency: duration_ms(probe.latency) };
    let rejection = shared
        .record(now, sample, not_before, good_body, &mut |w| reporter.warn(w))
        .map_err(|e| state_error(&e, true))?;
    Ok(rejection.map(|rejection| (rejection, now)))
}

/// Exit 6, naming the origin and when it will be tried again.
fn circuit_open(rejection: &Rejection, origin: &str, now: u64, url: &str) -> Error {
    let (why, latest) = match rejection.prober {
        Some(pid) => (format!("process {pid} is probing it"), " at the latest"),
        None if rejection.reason.is_empty() => ("the breaker is open".to_string(), ""),
        None => (rejection.reason.clone(), ""),
    };
    Error::CircuitOpen(format!(
        "circuit open for {origin} ({why}); next try at {}{latest} [{}]",
        when(rejection.retry_at, now),
        output::redact_url(url)
    ))
}

/// A `--state` file that cannot be locked, read or written: a usage error
/// while nothing was sent yet, else a permanent failure.
fn state_error(message: &str, sent: bool) -> Error {
    let message = format!("--state: {message}");
    if sent { Error::Permanent(message) } else { Error::Usage(message) }
}

/// The error for a run the policy stopped, with the detail and a hint a person needs.
fn ending(stop: &Stop, probe: &Probe, url: &str) -> Error {
    // The transport's own words help where the class alone does not say enough.
    let detail = match &probe.result {
        Err(fault)
            if matches!(
                fault.failure,
                Failure::Tls | Failure::Malformed | Failure::Dns | Failure::BadRedirect | Failure::ProxyRefused
            ) =>
        {
            Some(fault.detail.as_str())
        }
        _ => None,
    };
    let hint = match (&probe.result, stop) {
        (_, Stop::NotRetryable { .. } | Stop::Deadline { .. } | Stop::WaitTooLong { .. }) => "",
        (Err(Fault { failure: Failure::Tls, .. }), _) => {
            "; to trust this server, pass its CA with --cacert FILE (or -k to skip verification)"
        }
        (Err(Fault { failure: Failure::Refused, .. }), _) => "; is the server up and listening on that port?",
        // Not for a 403 that was a rate limit (remaining quota 0) and so was retried.
        (Ok(reply), Stop::Permanent { .. }) if matches!(reply.status, 401 | 403) => {
            "; check the credentials (-u USER:PASS or -H 'Authorization: ...')"
        }
        // The proxy wants credentials: 407 to an absolute-form request, 407 (or 401) to a CONNECT.
        (Ok(reply), Stop::Permanent { .. }) if reply.status == 407 => {
            "; check the credentials in the proxy URL (http_proxy)"
        }
        (Err(Fault { failure: Failure::ProxyRefused, detail }), _)
            if detail.contains(" 407") || detail.contains(" 401") =>
        {
            "; check the credentials in the proxy URL (https_proxy)"
        }
        _ => "",
    };
    let message = format!("{} [{}]{hint}", stop.describe(detail), output::redact_url(url));
    match stop {
        Stop::Permanent { .. } => Error::Permanent(message),
        Stop::BudgetSpent { .. } | Stop::NotRetryable { .. } | Stop::WaitTooLong { .. } => Error::GaveUp(message),
        Stop::Deadline { .. } => Error::Deadline(message),
    }
}
