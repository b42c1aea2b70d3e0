//! The vocabulary of one attempt, shared by the floors that make, judge and
//! report it: which request it sent ([`Phase`]), where the run stood
//! ([`Attempt`]), what came back ([`Outcome`], [`Verdict`]) and why nothing
//! usable did ([`Failure`], whose rules are one table, [`Failure::traits`]).
//! Plain data: the policy decides on it, `http/` names its failures with it.

use std::fmt;
use std::time::Duration;

use crate::rules::advice::Advice;

/// What one attempt produced, as plain data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A 2xx response, with what the conditions said of its body.
    Success { verdict: Verdict, advice: Advice },
    /// `--submit`: the submit's 2xx named where the operation's status can be polled.
    Submitted { advice: Advice },
    /// A response with any other status.
    Status { code: u16, advice: Advice },
    /// A response with any other status that `--pending-when` called "not yet"
    /// (Azure's `ResourceNotFound` 404, where `ResourceGroupNotFound` fails).
    Pending { code: u16, advice: Advice },
    /// No usable response.
    Failed(Failure),
    /// A `tcp://` or `unix://` target accepted a connection: what the run waits for (`met`),
    /// or under `--done-on` (which waits for it to be gone) "not yet".
    Open { met: bool },
    /// `--watch`: the reply's stream ended before the condition held, `held`
    /// after the request was sent; or it went silent for `--idle-timeout`
    /// (`idle`). `retry` is an event stream's own `retry:`.
    StreamEnded { held: Duration, retry: Option<Duration>, idle: bool },
    /// `--watch`: a `204` in answer to a reconnect of an event stream: the
    /// server says stop, as a browser's EventSource hears it.
    StreamClosed,
}

/// What the conditions said of a 2xx body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// `--until` holds (or there is none).
    Met,
    /// `--fail-when` holds.
    FailWhen,
    /// `--until` does not hold yet (or failed at run time).
    NotMet,
    /// A filter was given but the body is not JSON: a transient failure.
    NotJson,
}

/// Why an attempt produced no usable response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Nothing listened on the port: surely not processed.
    Refused,
    /// The host name did not resolve: surely not processed.
    Dns,
    /// No connection within `--connect-timeout`: surely not processed.
    ConnectTimeout,
    /// The connection was set up but the reply did not finish in time.
    Timeout,
    /// The connection was reset (ECONNRESET, a broken pipe) before a reply.
    Reset,
    /// The server closed the connection cleanly before replying: retried
    /// as a reset is, and the same `error_kind`; only the words differ.
    Closed,
    /// The reply ended before its body did.
    Truncated,
    /// A status line, header or chunk that does not parse.
    Malformed,
    /// The TLS handshake or certificate check failed.
    Tls,
    /// What answered the TLS handshake was no TLS (a plain-HTTP port).
    NotTls,
    /// The server refused the client certificate (`--cert`) it was shown.
    CertRefused,
    /// The server asks for a client certificate and was shown none.
    CertWanted,
    /// More redirects than `--max-redirs`, or a redirect loop.
    TooManyRedirects,
    /// A redirect whose `Location` cannot be followed.
    BadRedirect,
    /// The body is larger than `--max-body`.
    BodyTooLarge,
    /// The proxy turned the request away: it answered `CONNECT` with another status than 200.
    ProxyRefused,
    /// `--unix-socket` names something that is no socket (a file, a folder).
    NotASocket,
    /// `--unix-socket` names a socket this user may not open or reach (EACCES).
    NoPermission,
    /// A credential that cannot be sent (a cookie too large to send back):
    /// nothing was sent, so nothing is retried and the server is not blamed.
    Credential,
    /// A request that cannot be sent as it is: a header `poll` adds that is
    /// too large (`Last-Event-ID`, `tracestate`), or one that cannot be
    /// written. Nothing was sent, as with [`Failure::Credential`].
    Unsendable,
}

/// Which request an attempt sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Phase {
    /// The request as given, repeated until the condition holds.
    #[default]
    Poll,
    /// `--submit`: the request that starts an operation, sent once.
    Submit,
    /// `--submit`: a GET of the operation's status URL.
    Wait,
    /// `--submit`: the GET of the submit's URL after an operation that a PUT
    /// or PATCH started is done; any 2xx is the final body.
    Final,
}

impl Phase {
    /// Whether this request carries `--idempotency-key`: the status polls and the final GET do not.
    pub(crate) fn sends_the_key(self) -> bool {
        matches!(self, Phase::Poll | Phase::Submit)
    }

    /// The stable name used in `--log-format json` (`phase`); `None` without `--submit`.
    pub fn name(self) -> Option<&'static str> {
        match self {
            Phase::Poll => None,
            Phase::Submit => Some("submit"),
            // The contract names two phases: the final GET is one more GET of the wait.
            Phase::Wait | Phase::Final => Some("wait"),
        }
    }
}

/// What a class of failure is, in one row: every rule about failures reads it here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traits {
    /// Retried (with backoff, against `--retries`); otherwise the run stops with exit 3.
    pub transient: bool,
    /// The request surely never reached the server's application: a POST
    /// may be sent again, and through a proxy, the proxy is what was not reached.
    pub surely_unprocessed: bool,
    /// Before a URL's first reply, the service is not up yet (still
    /// starting) rather than failing: no connection was made or kept.
    pub not_up_yet: bool,
    /// Counts against the origin in the circuit breaker: the origin did not
    /// answer. A proxy's refusal, a path that is no socket, a credential not
    /// sent say nothing of it; a redirect loop or an oversized body got answers.
    pub counts_for_breaker: bool,
    /// The error line quotes the transport's own words: the class alone does not say enough.
    pub shows_detail: bool,
    /// The stable name in `--log-format json` (`error_kind`).
    pub kind: &'static str,
    /// In words, for `-v` and the error line.
    pub words: &'static str,
}

impl Failure {
    /// The one table of the failure classes.
    pub const fn traits(self) -> Traits {
        // transient, surely unprocessed, not up yet, counts for the breaker, shows its detail, kind, words
        let (transient, surely_unprocessed, not_up_yet, counts_for_breaker, shows_detail, kind, words) = match self {
            Failure::Refused => (true, true, true, true, false, "connect", "connection refused"),
            Failure::Dns => (true, true, true, true, true, "dns", "host name did not resolve"),
            Failure::ConnectTimeout => (true, true, true, true, false, "connect", "connect timed out"),
            Failure::Timeout => (true, false, false, true, false, "timeout", "request timed out"),
            Failure::Reset => (true, false, true, true, false, "reset", "connection reset"),
            Failure::Closed => {
                (true, false, true, true, false, "reset", "the server closed the connection before replying")
            }
            Failure::Truncated => (true, false, false, true, false, "truncated", "body truncated"),
            Failure::Malformed => (true, false, false, true, true, "malformed", "malformed reply"),
            Failure::Tls => (false, false, false, true, true, "tls", "TLS handshake failed"),
            Failure::NotTls => (false, false, false, true, true, "tls", "the server does not speak TLS there"),
            // The origin answered, as a 401 does: what it refused is ours.
            Failure::CertRefused => {
                (false, false, false, false, true, "tls", "the server refused the client certificate")
            }
            Failure::CertWanted => {
                (false, false, false, false, true, "tls", "the server asks for a client certificate")
            }
            Failure::TooManyRedirects => (false, false, false, false, false, "redirects", "too many redirects"),
            Failure::BadRedirect => (false, false, false, false, true, "redirects", "redirect cannot be followed"),
            Failure::BodyTooLarge => {
                (false, false, false, false, false, "body_too_large", "body larger than --max-body")
            }
            Failure::ProxyRefused => (false, false, false, false, true, "proxy", "the proxy refused the connection"),
            Failure::NotASocket => (false, false, false, false, true, "connect", "not a socket"),
            Failure::NoPermission => (false, false, false, false, true, "connect", "permission denied"),
            Failure::Credential => (false, false, false, false, true, "credential", "a credential that cannot be sent"),
            Failure::Unsendable => (false, false, false, false, true, "request", "the request cannot be sent"),
        };
        Traits { transient, surely_unprocessed, not_up_yet, counts_for_breaker, shows_detail, kind, words }
    }

    /// The stable name used in `--log-format json` (`error_kind`).
    pub fn kind(self) -> &'static str {
        self.traits().kind
    }
}

/// What a reply's status means to the retries and to the circuit breaker, in one row per
/// class: the policy and the breaker both read it here. The two columns differ on purpose: a
/// 429 is retried (after the server's advice) but the origin answered it, up and counting, so
/// the breaker does not count it; a 501 is the origin's 5xx, so the breaker counts it, but no
/// retry implements the method. `--retry-on` and a keyed 409 add to the retries
/// (the policy's), not to this table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StatusTraits {
    /// Retried with backoff, against `--retries`; otherwise the status ends the run (exit 3)
    /// unless a list (`--done-on`, `--pending-on`, `--fail-on`) names it.
    pub transient: bool,
    /// Counts against the origin in the circuit breaker: the origin failed to answer well.
    pub counts_for_breaker: bool,
}

impl StatusTraits {
    /// The one table of the statuses.
    pub(crate) const fn of(code: u16) -> StatusTraits {
        // transient, counts for the breaker
        let (transient, counts_for_breaker) = match code {
            // Request Timeout: the server gave up waiting for the request.
            408 => (true, true),
            // Too Many Requests: come back later; the origin is up and said so.
            429 => (true, false),
            // Not Implemented: the origin's 5xx, and the same answer every time.
            501 => (false, true),
            500..=599 => (true, true),
            _ => (false, false),
        };
        StatusTraits { transient, counts_for_breaker }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.traits().words)
    }
}

impl Outcome {
    /// Whether this outcome says the service is not up yet: a connection
    /// failure before the URL's first reply. Such an attempt spends no
    /// `--retries`, is no outcome for the circuit breaker, and a deadline
    /// says the URL was never reached. The one place that says so.
    pub fn not_up_yet(&self, attempt: &Attempt) -> bool {
        matches!(self, Outcome::Failed(failure) if attempt.unreached && failure.traits().not_up_yet)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Success { verdict: Verdict::NotJson, .. } => f.write_str("2xx body is not JSON"),
            Outcome::Success { .. } => f.write_str("2xx"),
            Outcome::Submitted { .. } => f.write_str("submitted"),
            Outcome::Status { code, .. } => write!(f, "HTTP {code}"),
            Outcome::Pending { code, .. } => write!(f, "HTTP {code} (--pending-when)"),
            Outcome::Failed(failure) => failure.fmt(f),
            Outcome::Open { .. } => f.write_str("open"),
            Outcome::StreamEnded { idle: false, .. } => f.write_str("stream ended"),
            Outcome::StreamEnded { idle: true, .. } => f.write_str("stream went idle"),
            Outcome::StreamClosed => f.write_str("the server ended the event stream before the condition held"),
        }
    }
}

/// Where the run stands when an outcome arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Attempt {
    /// The attempt that produced the outcome, from 1.
    pub number: u32,
    /// Consecutive transient failures before this outcome.
    pub failures: u32,
    /// Time left until `--timeout`; `None` without a deadline.
    pub remaining: Option<Duration>,
    /// Which request the attempt sent.
    pub phase: Phase,
    /// Polls in a row, just before this one, on which the condition held (for `--stable`).
    pub streak: u32,
    /// "Not yet" waits the loop has made so far: with `--interval-max`, each
    /// one makes the next 1.5 times longer.
    pub not_yet: u32,
    /// No reply (of any status) has come back for this URL yet: a connection
    /// failure means "not up yet", not a failure (see [`Traits::not_up_yet`]).
    pub unreached: bool,
    /// `--retry-budget`: what the fleet's budget held before this attempt,
    /// as the shared state counted it; `None` without a budget.
    pub budget: Option<RetryRoom>,
    /// `--rate auto`: the fleet's learned rate paces a `429`'s retry (the
    /// `429` itself cuts the rate before the next turn).
    pub paced: bool,
    /// The outcome is a `--paginate` walk's page after the first: the first
    /// request was answered, and a retry walks from it again, so whatever
    /// this page's failure, the first request would be sent twice.
    pub later_page: bool,
}

/// What `--retry-budget` held before an attempt: whether one more retry
/// fits, and what the window counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryRoom {
    pub room: bool,
    pub counts: crate::rules::budget::Window,
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Failure; 20] = [
        Failure::Refused,
        Failure::Dns,
        Failure::ConnectTimeout,
        Failure::Timeout,
        Failure::Reset,
        Failure::Closed,
        Failure::Truncated,
        Failure::Malformed,
        Failure::Tls,
        Failure::NotTls,
        Failure::CertRefused,
        Failure::CertWanted,
        Failure::TooManyRedirects,
        Failure::BadRedirect,
        Failure::BodyTooLarge,
        Failure::ProxyRefused,
        Failure::NotASocket,
        Failure::NoPermission,
        Failure::Credential,
        Failure::Unsendable,
    ];

    /// The rows agree with each other: what surely never reached the server
    /// is retried, means "not up yet" before a first reply, and tells of the
    /// origin; what is not up yet is retried too.
    #[test]
    fn the_table_of_failures_holds_together() {
        for failure in ALL {
            let t = failure.traits();
            assert!(!t.surely_unprocessed || (t.transient && t.not_up_yet && t.counts_for_breaker), "{failure:?}");
            assert!(!t.not_up_yet || t.transient, "{failure:?}");
            assert!(!t.kind.is_empty() && !t.words.is_empty(), "{failure:?}");
        }
        let transient: Vec<Failure> = ALL.into_iter().filter(|f| f.traits().transient).collect();
        assert_eq!(transient.len(), 8, "README's transient list: {transient:?}");
    }

    /// The retries and the breaker part ways on 429 and 501 only, and on purpose.
    #[test]
    fn the_table_of_statuses_says_where_retries_and_the_breaker_differ() {
        // status, transient, counts for the breaker
        let rows = [
            (200, false, false),
            (304, false, false),
            (404, false, false),
            (408, true, true),
            (409, false, false),
            (429, true, false),
            (500, true, true),
            (501, false, true),
            (503, true, true),
            (599, true, true),
            (600, false, false),
        ];
        for (code, transient, counts_for_breaker) in rows {
            assert_eq!(StatusTraits::of(code), StatusTraits { transient, counts_for_breaker }, "{code}");
        }
        let differ: Vec<u16> = (100..=699)
            .filter(|code| StatusTraits::of(*code).transient != StatusTraits::of(*code).counts_for_breaker)
            .collect();
        assert_eq!(differ, [429, 501]);
    }
}
