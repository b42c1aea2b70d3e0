//! One attempt, recorded once ([`Record`]): what came back, what the
//! conditions and the policy said of it. The reporter (its `-v` lines and JSON
//! log), each loop's progress, the words of a stop and the URL's result (made
//! from the last) read this one record.
//! The shared state is told less, and after it: `state::AttemptReport`, which
//! the loop makes from the record (`run/target.rs`, `share`).

use std::time::Duration;

use crate::http::request::{Fault, Reply};
use crate::rules::attempt::{Outcome, Phase, Verdict};
use crate::rules::condition::{JqError, Judgement};
use crate::rules::policy::{self, Action};

/// One attempt of one URL's loop.
#[derive(Debug)]
pub(crate) struct Record {
    /// From 1, counting every request the loop sent.
    pub number: u32,
    pub phase: Phase,
    /// The response (read to its end), or why there was none.
    pub reply: Result<Reply, Fault>,
    pub latency: Duration,
    /// What the filters said of a 2xx body: jq errors and `--show` output too.
    pub judgement: Option<Judgement>,
    /// The plain-data view of all this that the policy decided on.
    pub outcome: Outcome,
    /// A connection failure before the URL's first reply ([`Outcome::not_up_yet`]):
    /// no `--retries` spent, nothing told to the breaker, "never reached" at the deadline.
    pub not_up_yet: bool,
    /// `--stable N`: the condition held on this many polls in a row, of N, and that was not yet
    /// enough (polled again, or the deadline came first).
    pub held: Option<(u32, u32)>,
    pub action: Action,
    /// `--rate auto`: the rate the fleet had learned at this attempt's turn, in requests a second.
    pub rate: Option<f64>,
    /// A `tcp://` or `unix://` target's attempt: its scheme and address, and what happened in
    /// words; `None` for an HTTP request.
    pub port: Option<PortSeen>,
    /// `--paginate`: the pages this attempt read, the one that ended it included.
    pub pages: Option<u32>,
}

/// What a connect-only attempt names, for `-v` and the JSON log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PortSeen {
    /// `tcp` or `unix`.
    pub scheme: &'static str,
    /// `127.0.0.1:5432`, `/run/pg.sock`.
    pub address: String,
    /// What happened: `open`, `refused`, `no socket at ... (yet)`.
    pub words: String,
}

impl Record {
    /// The HTTP status, when a response arrived (a port that opened has none).
    pub(crate) fn status(&self) -> Option<u16> {
        self.reply.as_ref().ok().filter(|_| self.port.is_none()).map(|reply| reply.status)
    }

    /// The outcome in a few words: `200 pending`, `503`, `connection refused`.
    pub(crate) fn summary(&self) -> String {
        self.seen().words()
    }

    /// What [`Record::summary`] is made of, kept without putting it in words:
    /// tight polling pays for no formatting that nobody reads.
    pub(crate) fn seen(&self) -> Seen {
        let shown = self.judgement.as_ref().and_then(|j| j.shown.clone());
        let failed = self.judgement.as_ref().and_then(|j| j.errors.last().cloned());
        let (outcome, status, not_up_yet, held) =
            (Some(self.outcome.clone()), self.status(), self.not_up_yet, self.held);
        Seen { outcome, status, shown, not_up_yet, failed, held, event: None }
    }

    /// The body of the final response, for stdout.
    pub(crate) fn into_body(self) -> Vec<u8> {
        self.reply.map(|reply| reply.body).unwrap_or_default()
    }
}

/// An attempt's outcome, its status and `--show` output, to be put in words
/// when someone asks (the progress line, a deadline naming what is pending).
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen {
    outcome: Option<Outcome>,
    status: Option<u16>,
    shown: Option<String>,
    /// See [`Record::not_up_yet`].
    not_up_yet: bool,
    /// The jq error that kept the filters from holding on the body, if any.
    failed: Option<JqError>,
    /// See [`Record::held`].
    held: Option<(u32, u32)>,
    /// `--watch`: the number of the event judged, when this is one.
    pub event: Option<u32>,
}

impl Seen {
    /// The outcome as a deadline names it, as a single URL's ending does:
    /// `never reached: connection refused` for a URL not up yet, the jq error
    /// on the last body (`--until failed on the body: ...`), else
    /// [`Seen::words`]. `None` before the first attempt.
    pub(crate) fn cause(&self) -> Option<String> {
        Some(match (self.outcome.as_ref()?, &self.failed) {
            (Outcome::Failed(failure), _) if self.not_up_yet => policy::never_reached(failure),
            (_, Some(failed)) => failed.as_cause(),
            _ => self.words(),
        })
    }

    /// `200 pending · progress 42`; empty before the first attempt.
    pub(crate) fn words(&self) -> String {
        let Some(outcome) = &self.outcome else { return String::new() };
        let mut text = match (outcome, self.status) {
            (Outcome::Failed(failure), _) => failure.to_string(),
            (Outcome::Open { met: true }, _) => "open".to_string(),
            (Outcome::Open { met: false }, _) => "open, not yet gone".to_string(),
            (Outcome::StreamEnded { .. } | Outcome::StreamClosed, _) => outcome.to_string(),
            // Judged on the body kept; -v and the progress line say what came.
            (Outcome::Success { .. }, Some(304)) => "304 not modified".to_string(),
            (Outcome::Success { verdict, .. }, Some(status)) => {
                let word = match verdict {
                    Verdict::Met => "done",
                    Verdict::FailWhen => "failed",
                    Verdict::NotMet => "pending",
                    Verdict::NotJson => "not JSON",
                };
                format!("{status} {word}")
            }
            (Outcome::Submitted { .. }, Some(status)) => format!("{status} submitted"),
            (Outcome::Pending { .. }, Some(status)) => format!("{status} pending (--pending-when)"),
            (_, status) => status.map(|s| s.to_string()).unwrap_or_default(),
        };
        // `--stable`: met, but not yet often enough in a row (a 2xx's "done" would say it is over).
        match (self.held, self.status, outcome) {
            (Some((held, stable)), _, Outcome::Open { .. }) => text = format!("open, {held} of {stable}"),
            (Some((held, stable)), _, Outcome::Failed(_)) => text = format!("{text}, {held} of {stable}"),
            (Some((held, stable)), Some(status), _) => text = format!("{status} met, {held} of {stable}"),
            _ => {}
        }
        // `--watch`: an event, not a reply, was judged last.
        if let (Some(n), Some(status)) = (self.event, self.status) {
            text = format!("event {n}{}", text.strip_prefix(&status.to_string()).unwrap_or(&text));
        }
        if let Some(shown) = &self.shown {
            text.push_str(&format!(" · {}", crate::util::text::printable(&crate::util::text::shorten(shown))));
        }
        text
    }
}
