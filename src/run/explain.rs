//! The words of a loop's end that is no answer: the error of a stop the
//! policy decided, with the transport's detail where the class alone does
//! not say enough and a hint of what may help, and the error of an open
//! circuit. Plain values in, an [`Error`] out.

use crate::error::{Error, Kind};
use crate::http::request::Fault;
use crate::report::record::Record;
use crate::rules::attempt::{Failure, Outcome, Phase, Verdict};
use crate::rules::policy::Stop;
use crate::state::Refusal;
use crate::util::clock;
use crate::util::text::when;
use crate::util::url;

/// What a loop connects to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listener {
    /// A host and port: an http(s):// URL's or a tcp:// target's.
    Port,
    /// `--unix-socket`'s daemon, which HTTP goes to.
    Daemon,
    /// A unix:// target's socket.
    Socket,
}

/// What the words of a stop need to know of the loop that stopped.
pub(crate) struct Situation<'a> {
    /// What the loop connects to, for the words when nothing answered there.
    pub listener: Listener,
    /// Requests carry an `--idempotency-key`.
    pub keyed: bool,
    /// The last attempt was sent again with a new `--auth-cmd` token.
    pub reauthenticated: bool,
    /// `--cert` is given: a server that asked for one and got none is on
    /// another origin than the loop's URL.
    pub client_cert: bool,
    /// `--submit`: where the operation is, once known.
    pub operation: Option<&'a str>,
    /// The attempt that stopped the loop.
    pub record: &'a Record,
}

/// Exit 6, naming the key (the origin) and when it will be tried again.
pub(crate) fn circuit_open(state_key: &str, refusal: &Refusal) -> Error {
    let (why, latest) = match refusal.prober {
        Some(pid) => (format!("process {pid} is probing it"), " at the latest"),
        None if refusal.reason.is_empty() => ("the breaker is open".to_string(), ""),
        None => (refusal.reason.clone(), ""),
    };
    let next = when(clock::now_ms(), refusal.retry_in);
    Error::new(Kind::CircuitOpen, format!("circuit open for {state_key} ({why}); next try at {next}{latest}"))
}

/// The error for a run the policy stopped, with the detail and a hint a person needs.
pub(crate) fn stopped(stop: &Stop, at: &Situation<'_>) -> Error {
    let record = at.record;
    // A filter that failed on the last body is why its condition is not met.
    let failed = record.judgement.as_ref().and_then(|judgement| judgement.errors.last());
    let unread = matches!(record.outcome, Outcome::Success { verdict: Verdict::NotJson, .. });
    let explained = match (stop, failed) {
        (Stop::Deadline { wait, reason, remaining, cause: Some(_) }, Some(error)) => {
            Some(Stop::Deadline { wait: *wait, reason: *reason, remaining: *remaining, cause: Some(error.as_cause()) })
        }
        // A body the filter could not read (nested too deep) ends retries in the warning's words, not "not JSON".
        (Stop::BudgetSpent { failures, .. }, Some(error)) if unread => {
            Some(Stop::BudgetSpent { failures: *failures, cause: error.as_cause() })
        }
        (Stop::NotRetryable { .. }, Some(error)) if unread => Some(Stop::NotRetryable { cause: error.as_cause() }),
        _ => None,
    };
    let stop = explained.as_ref().unwrap_or(stop);
    // The transport's own words help where the class alone does not say enough.
    let detail = match &record.reply {
        // Where the redirect led, which the URL does not say.
        Err(fault) if fault.failure.traits().shows_detail || fault.redirected => Some(fault.detail.as_str()),
        // Over a socket, the detail says which: no socket yet, nobody listening, a path that cannot be one.
        Err(fault) if matches!(fault.failure, Failure::Refused | Failure::Reset) && at.listener != Listener::Port => {
            Some(fault.detail.as_str())
        }
        _ => None,
    };
    error(stop, detail, &hint(stop, at), at.operation)
}

/// What may help after a stop.
fn hint(stop: &Stop, at: &Situation<'_>) -> String {
    let record = at.record;
    let hint = match (&record.reply, stop) {
        // A URL never reached gets the hint of its failure, whatever ended the run.
        (Err(fault), Stop::Deadline { .. }) if record.not_up_yet => return unreached_hint(fault, at.listener),
        (_, Stop::NotRetryable { .. } | Stop::Deadline { .. } | Stop::WaitTooLong { .. } | Stop::NoStatusUrl) => "",
        (Ok(reply), Stop::Permanent { .. }) if reply.status == 304 => {
            "; a 304 Not Modified answered a request that carried no If-None-Match or If-Modified-Since: there is no body to judge"
        }
        (Err(Fault { failure: Failure::Tls, .. }), _) => {
            "; to trust this server, pass its CA with --cacert FILE (or -k to skip verification)"
        }
        // Not the --cacert hint: the server was trusted, the caller was not.
        (Err(Fault { failure: Failure::CertRefused, .. }), _) => {
            "; check that the server trusts the CA that signed --cert, and that the certificate has not expired"
        }
        (Err(Fault { failure: Failure::CertWanted, .. }), _) if at.client_cert => {
            "; --cert goes only to the origin of the URL given (with --submit, --location-trusted sends it to every origin)"
        }
        (Err(Fault { failure: Failure::CertWanted, .. }), _) => "; give one with --cert FILE (and --key FILE)",
        (Err(Fault { failure: Failure::NotTls, .. }), _) => {
            "; something else than TLS answered on that port: is the URL http://, not https://?"
        }
        (Err(fault @ Fault { failure: Failure::Refused, .. }), _) => return unreached_hint(fault, at.listener),
        (Err(Fault { failure: Failure::NoPermission, .. }), _) => {
            "; waiting cannot fix a permission: run poll as a user who may open the socket"
        }
        // A status poll carries no key: its 422 says nothing of one.
        (Ok(reply), Stop::Permanent { .. }) if reply.status == 422 && at.keyed && record.phase != Phase::Wait => {
            "; the idempotency key may have been used before with another body: use a new --idempotency-key"
        }
        (Ok(reply), Stop::Permanent { .. }) if reply.status == 401 && at.reauthenticated => {
            "; the newest token from --auth-cmd was refused too"
        }
        // Not for a 403 that was a rate limit (remaining quota 0) and so was retried.
        (Ok(reply), Stop::Permanent { .. }) if matches!(reply.status, 401 | 403) => {
            "; check the credentials (-u USER:PASS or -H 'Authorization: ...')"
        }
        // The proxy wants credentials: 407 to an absolute-form request, 407 (or 401) to a CONNECT.
        (Ok(reply), Stop::Permanent { .. }) if reply.status == 407 => {
            "; check the credentials in the proxy URL (http_proxy)"
        }
        (Err(Fault { failure: Failure::ProxyRefused, proxy_status: Some(401 | 407), .. }), _) => {
            "; check the credentials in the proxy URL (https_proxy)"
        }
        _ => "",
    };
    hint.to_string()
}

/// What to check when nothing answered the connection: the proxy it went
/// through, the daemon behind `--unix-socket`, or the server.
fn unreached_hint(fault: &Fault, listener: Listener) -> String {
    match fault {
        // The detail names the redirect's Location, which is what did not answer.
        Fault { redirected: true, .. } => String::new(),
        Fault { proxy: Some(proxy), .. } => {
            format!("; nothing answered at the proxy {proxy}: is it up? (NO_PROXY=HOST goes around it)")
        }
        // Over --unix-socket, the detail says which: no socket yet, nobody listening, not opened yet.
        Fault { failure: Failure::Refused, .. } if listener == Listener::Daemon => {
            "; is the daemon up, and is --unix-socket its socket?".to_string()
        }
        Fault { failure: Failure::Refused, .. } if listener == Listener::Socket => {
            "; is the server up and listening on that socket?".to_string()
        }
        Fault { failure: Failure::Refused, .. } => "; is the server up and listening on that port?".to_string(),
        _ => String::new(),
    }
}

/// A stop as an error, with its hint; after the submit, where the
/// operation is, so that a deadline can be resumed with `poll URL`.
pub(crate) fn error(stop: &Stop, detail: Option<&str>, hint: &str, operation: Option<&str>) -> Error {
    let kind = match stop {
        Stop::Permanent { .. } | Stop::NoStatusUrl => Kind::Permanent,
        Stop::BudgetSpent { .. } | Stop::NotRetryable { .. } | Stop::WaitTooLong { .. } => Kind::GaveUp,
        Stop::Deadline { .. } => Kind::Deadline,
    };
    let error = Error::new(kind, stop.describe(detail)).hint(hint);
    match (operation, stop) {
        (Some(operation), Stop::Deadline { .. }) => error.hint(resume(operation)),
        _ => error,
    }
}

/// How to go on waiting for an operation after this run.
pub(crate) fn resume(operation: &str) -> String {
    format!("; the operation is at {0}: resume the wait with `poll {0}`", url::redact(operation))
}
