//! `poll`: send one HTTP request until a jq condition holds on its JSON body.
//!
//! The run is one loop: fetch (on a worker thread, so a signal or the deadline
//! can abandon it) -> judge the body -> [`policy::Policy::decide`] -> wait.
#![forbid(unsafe_code)]

pub mod advice;
pub mod cli;
pub mod condition;
pub mod config;
pub mod error;
pub mod output;
pub mod parse;
pub mod policy;
pub mod request;
pub mod wait;

use std::collections::HashSet;
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant, SystemTime};

use crate::advice::Advice;
use crate::condition::{Conditions, Judgement};
use crate::config::{Config, RequestSpec};
use crate::error::Error;
use crate::output::{AttemptReport, Reporter};
use crate::policy::{Action, Attempt, Failure, Outcome, Stop};
use crate::request::{Client, Fault, Reply};
use crate::wait::{Event, Waiter};

pub use crate::error::Signal;

/// How long past the deadline a judge that never finishes (a jq filter that
/// loops) is given before the run stops anyway; requests end at the deadline.
const DEADLINE_GRACE: Duration = Duration::from_millis(50);

/// What the worker reports for one attempt.
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
    let waiter: Waiter<Probe> =
        Waiter::install().map_err(|e| Error::Permanent(format!("cannot install signal handlers: {e}")))?;
    let request_timeout = config.request.request_timeout;
    let url = config.request.url.clone();
    reporter.start(&config.request);
    let worker = Worker::spawn(config.request, config.conditions, waiter.sender())?;

    let started = Instant::now();
    let deadline = config.timeout.map(|timeout| started + timeout);
    let time_left = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
    let mut rng = rand::rng();
    let mut failures = 0;
    let mut number = 0;
    let mut reported_errors = HashSet::new();
    loop {
        number += 1;
        let remaining = time_left();
        let budget = remaining.map_or(request_timeout, |left| left.min(request_timeout));
        worker.start(budget);
        reporter.in_flight(number, started.elapsed());
        let interrupted = |signal| Error::Interrupted { signal, attempts: number };
        let Some(probe) = waiter.next(remaining.map(|left| left + DEADLINE_GRACE)).map_err(interrupted)? else {
            return Err(Error::Deadline("deadline reached while the condition was being evaluated".into()));
        };

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
        waiter.sleep(after).map_err(interrupted)?;
    }
}

/// The error for a run the policy stopped, with the detail and a hint a person needs.
fn ending(stop: &Stop, probe: &Probe, url: &str) -> Error {
    // The transport's own words help where the class alone does not say enough.
    let detail = match &probe.result {
        Err(fault)
            if matches!(fault.failure, Failure::Tls | Failure::Malformed | Failure::Dns | Failure::BadRedirect) =>
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
        (Ok(reply), _) if matches!(reply.status, 401 | 403) => {
            "; check the credentials (-u USER:PASS or -H 'Authorization: ...')"
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

/// The thread that sends requests and judges their bodies, so that the main
/// thread stays free to notice signals and the deadline.
struct Worker {
    jobs: Sender<Duration>,
}

impl Worker {
    fn spawn(spec: RequestSpec, conditions: Conditions, results: Sender<Event<Probe>>) -> Result<Worker, Error> {
        let client = Client::new(spec).map_err(Error::Usage)?;
        let (jobs, queue) = mpsc::channel::<Duration>();
        std::thread::Builder::new()
            .name("request".into())
            .spawn(move || {
                for budget in queue {
                    let started = Instant::now();
                    let result = client.fetch(budget);
                    let latency = started.elapsed();
                    let judgement = match &result {
                        Ok(reply) if (200..300).contains(&reply.status) => Some(conditions.judge(&reply.body)),
                        _ => None,
                    };
                    if results.send(Event::Ready(Probe { result, latency, judgement })).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| Error::Permanent(format!("cannot start the request thread: {e}")))?;
        Ok(Worker { jobs })
    }

    fn start(&self, budget: Duration) {
        // The worker only stops when this sender is dropped, so the send cannot fail.
        let _ = self.jobs.send(budget);
    }
}
