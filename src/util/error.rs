//! The one error type of a run and the exit-code table, in one place: the
//! help text, the man page and README's table are all made from
//! [`EXIT_CODES`] (or checked against it by a test).

use std::fmt;

/// Every exit code `poll` uses, with what it means.
pub const EXIT_CODES: [(u8, &str); 12] = [
    (0, "condition met (without --until: a 2xx arrived; or a status in --done-on arrived)"),
    (1, "deadline: --timeout passed, or would pass before the next attempt could start"),
    (2, "usage: bad flag, URL, duration, header, JSON body or jq filter; nothing sent"),
    (3, "permanent failure: a non-retryable status or error"),
    (4, "--fail-when matched, or a status in --fail-on arrived"),
    (5, "gave up on transient failures: --retries spent, or a non-idempotent request that may not be retried"),
    (
        6,
        "circuit open: the breaker for this origin is open (only with --state), or the state store is unreachable under --state-fail closed",
    ),
    (126, "the command after -- could not be run"),
    (127, "the command after -- was not found"),
    (129, "hung up: SIGHUP"),
    (130, "interrupted by SIGINT (Ctrl-C)"),
    (143, "terminated by SIGTERM"),
];

/// Why a run did not end with its condition met.
///
/// Each variant is one row of [`EXIT_CODES`], so [`Error::exit_code`] cannot
/// drift from it (a test checks every row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Error {
    /// Exit 1: `--timeout` passed, or would pass before the next attempt could start.
    Deadline(String),
    /// Exit 2: a bad flag, URL, duration, header, body or filter; nothing was sent.
    Usage(String),
    /// Exit 3: a non-retryable status or error.
    Permanent(String),
    /// Exit 4: `--fail-when` matched (the body is still printed).
    FailWhen(String),
    /// Exit 5: the retry budget is spent, or a non-idempotent request may not be retried.
    GaveUp(String),
    /// Exit 6: the circuit breaker for this origin is open.
    CircuitOpen(String),
    /// Exit 6: the state store cannot be reached and `--state-fail closed` says stop.
    StateUnreachable(String),
    /// Exit 126: the command after `--` exists but could not be run.
    CommandCannotRun(String),
    /// Exit 127: the command after `--` was not found.
    CommandNotFound(String),
    /// Exit 129 / 130 / 143: a signal ended the run.
    Interrupted { signal: Signal, attempts: u32 },
}

/// The signals that end a run early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// SIGINT; Ctrl-C on Windows.
    Interrupt,
    /// SIGTERM; Ctrl-Break on Windows.
    Terminate,
    /// SIGHUP: the terminal went away, or a CI runner cancelled the job.
    #[cfg_attr(windows, allow(dead_code, reason = "Windows has no SIGHUP (util/signals.rs)"))]
    HangUp,
}

impl Error {
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Error::Deadline(_) => 1,
            Error::Usage(_) => 2,
            Error::Permanent(_) => 3,
            Error::FailWhen(_) => 4,
            Error::GaveUp(_) => 5,
            Error::CircuitOpen(_) | Error::StateUnreachable(_) => 6,
            Error::CommandCannotRun(_) => 126,
            Error::CommandNotFound(_) => 127,
            Error::Interrupted { signal: Signal::HangUp, .. } => 129,
            Error::Interrupted { signal: Signal::Interrupt, .. } => 130,
            Error::Interrupted { signal: Signal::Terminate, .. } => 143,
        }
    }

    /// A short machine-readable name of the ending, for `--log-format json`.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            Error::Deadline(_) => "deadline",
            Error::Usage(_) => "usage",
            Error::Permanent(_) => "permanent",
            Error::FailWhen(_) => "fail_when",
            Error::GaveUp(_) => "gave_up",
            Error::CircuitOpen(_) => "circuit_open",
            Error::StateUnreachable(_) => "state_unreachable",
            Error::CommandCannotRun(_) => "cannot_run",
            Error::CommandNotFound(_) => "not_found",
            Error::Interrupted { signal: Signal::HangUp, .. } => "hung_up",
            Error::Interrupted { signal: Signal::Interrupt, .. } => "interrupted",
            Error::Interrupted { signal: Signal::Terminate, .. } => "terminated",
        }
    }

    /// Whether `--fallback` stands in for the body: on exit 1, 5 and 6,
    /// when there is no answer to give. A permanent failure is an answer.
    pub(crate) fn takes_fallback(&self) -> bool {
        matches!(self, Error::Deadline(_) | Error::GaveUp(_) | Error::CircuitOpen(_) | Error::StateUnreachable(_))
    }

    /// Whether the run still prints the final body (exit 4 does).
    pub(crate) fn keeps_body(&self) -> bool {
        matches!(self, Error::FailWhen(_))
    }

    /// How bad an ending is when several URLs failed under `--any` (higher
    /// wins): a signal, then `--fail-when`, permanent, circuit open, gave up, deadline.
    pub(crate) fn severity(&self) -> u8 {
        match self {
            Error::Interrupted { .. } => 7,
            Error::Usage(_) | Error::CommandCannotRun(_) | Error::CommandNotFound(_) => 6,
            Error::FailWhen(_) => 5,
            Error::Permanent(_) => 4,
            Error::CircuitOpen(_) | Error::StateUnreachable(_) => 3,
            Error::GaveUp(_) => 2,
            Error::Deadline(_) => 1,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Deadline(why)
            | Error::Usage(why)
            | Error::Permanent(why)
            | Error::FailWhen(why)
            | Error::GaveUp(why)
            | Error::CircuitOpen(why)
            | Error::StateUnreachable(why)
            | Error::CommandCannotRun(why)
            | Error::CommandNotFound(why) => f.write_str(why),
            Error::Interrupted { signal, attempts } => {
                let name = match signal {
                    Signal::HangUp => "hung up",
                    Signal::Interrupt => "interrupted",
                    Signal::Terminate => "terminated",
                };
                write!(f, "{name} after {}", crate::util::text::count(*attempts, "attempt"))
            }
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_ending() -> [Error; 12] {
        [
            Error::Deadline(String::new()),
            Error::Usage(String::new()),
            Error::Permanent(String::new()),
            Error::FailWhen(String::new()),
            Error::GaveUp(String::new()),
            Error::CircuitOpen(String::new()),
            Error::StateUnreachable(String::new()),
            Error::CommandCannotRun(String::new()),
            Error::CommandNotFound(String::new()),
            Error::Interrupted { signal: Signal::Interrupt, attempts: 1 },
            Error::Interrupted { signal: Signal::Terminate, attempts: 2 },
            Error::Interrupted { signal: Signal::HangUp, attempts: 0 },
        ]
    }

    #[test]
    fn exit_codes_match_the_table() {
        let table: Vec<u8> = EXIT_CODES.iter().map(|(code, _)| *code).collect();
        for error in every_ending() {
            assert!(table.contains(&error.exit_code()), "{error:?} exits with a code the table lacks");
        }
        let mut used: Vec<u8> = every_ending().iter().map(Error::exit_code).collect();
        used.extend([0]);
        for code in table {
            assert!(used.contains(&code), "the table lists {code}, which no ending uses");
        }
        let rows = [(Error::Deadline(String::new()), 1), (Error::GaveUp(String::new()), 5)];
        for (error, code) in rows {
            assert_eq!(error.exit_code(), code, "{error:?}");
        }
    }

    #[test]
    fn fallback_stands_in_on_1_5_and_6_only() {
        for error in every_ending() {
            assert_eq!(error.takes_fallback(), matches!(error.exit_code(), 1 | 5 | 6), "{error:?}");
        }
    }

    #[test]
    fn the_most_severe_ending_follows_the_documented_order() {
        let order = [143, 4, 3, 6, 5, 1];
        let rank = |code: u8| every_ending().into_iter().find(|e| e.exit_code() == code).map(|e| e.severity());
        for pair in order.windows(2) {
            assert!(rank(pair[0]) > rank(pair[1]), "{} should outrank {}", pair[0], pair[1]);
        }
    }

    /// The guide's row of `reason` values, or `None` for the crate as packaged, which carries no docs/.
    fn guide_row(starts: &str) -> Option<String> {
        let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/guide/output.md")).ok()?;
        guide.lines().find(|line| line.starts_with(starts)).map(str::to_string)
    }

    #[test]
    fn the_guide_lists_every_reason_of_the_json_log() {
        let Some(row) = guide_row("| `attempts`, `exit_code`, `reason`, `message` |") else { return };
        for error in every_ending() {
            let reason = error.reason();
            assert!(row.contains(&format!("`{reason}`")), "{error:?}: `{reason}` is missing: {row}");
        }
        assert!(row.contains("`done`"), "{row}");
    }

    #[test]
    fn interrupted_counts_attempts() {
        let e = Error::Interrupted { signal: Signal::Interrupt, attempts: 1 };
        assert_eq!(e.to_string(), "interrupted after 1 attempt");
        let e = Error::Interrupted { signal: Signal::Terminate, attempts: 3 };
        assert_eq!(e.to_string(), "terminated after 3 attempts");
        let e = Error::Interrupted { signal: Signal::HangUp, attempts: 2 };
        assert_eq!((e.to_string().as_str(), e.exit_code(), e.reason()), ("hung up after 2 attempts", 129, "hung_up"));
    }
}
