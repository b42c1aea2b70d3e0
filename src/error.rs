//! The one error type of a run and the exit-code table of `../shared/contract.md`, in one place.

use std::fmt;

/// Why a run did not end with its condition met.
///
/// Each variant is one row of the contract's exit-code table, so the mapping
/// in [`Error::exit_code`] cannot drift from it.
#[derive(Debug)]
pub enum Error {
    /// Exit 1: `--timeout` passed, or would pass before the next attempt could start.
    Deadline(String),
    /// Exit 2: a bad flag, URL, duration, header, body or filter; nothing was sent.
    Usage(String),
    /// Exit 3: a non-retryable status or error.
    Permanent(String),
    /// Exit 4: `--fail-when` matched; the body is still printed.
    FailWhen(Vec<u8>),
    /// Exit 5: the retry budget is spent, or a non-idempotent request may not be retried.
    GaveUp(String),
    /// Exit 6: the circuit breaker for this origin is open.
    CircuitOpen(String),
    /// Exit 130 / 143: a signal ended the run.
    Interrupted { signal: Signal, attempts: u32 },
}

/// The signals that end a run early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Interrupt,
    Terminate,
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Deadline(_) => 1,
            Error::Usage(_) => 2,
            Error::Permanent(_) => 3,
            Error::FailWhen(_) => 4,
            Error::GaveUp(_) => 5,
            Error::CircuitOpen(_) => 6,
            Error::Interrupted { signal: Signal::Interrupt, .. } => 130,
            Error::Interrupted { signal: Signal::Terminate, .. } => 143,
        }
    }

    /// A short machine-readable name of the ending, for `--log-format json`.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::Deadline(_) => "deadline",
            Error::Usage(_) => "usage",
            Error::Permanent(_) => "permanent",
            Error::FailWhen(_) => "fail_when",
            Error::GaveUp(_) => "gave_up",
            Error::CircuitOpen(_) => "circuit_open",
            Error::Interrupted { signal: Signal::Interrupt, .. } => "interrupted",
            Error::Interrupted { signal: Signal::Terminate, .. } => "terminated",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Deadline(why)
            | Error::Usage(why)
            | Error::Permanent(why)
            | Error::GaveUp(why)
            | Error::CircuitOpen(why) => f.write_str(why),
            Error::FailWhen(_) => f.write_str("--fail-when matched"),
            Error::Interrupted { signal, attempts } => {
                let name = match signal {
                    Signal::Interrupt => "interrupted",
                    Signal::Terminate => "terminated",
                };
                let plural = if *attempts == 1 { "" } else { "s" };
                write!(f, "{name} after {attempts} attempt{plural}")
            }
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_match_the_contract_table() {
        let rows = [
            (Error::Deadline(String::new()), 1),
            (Error::Usage(String::new()), 2),
            (Error::Permanent(String::new()), 3),
            (Error::FailWhen(Vec::new()), 4),
            (Error::GaveUp(String::new()), 5),
            (Error::CircuitOpen(String::new()), 6),
            (Error::Interrupted { signal: Signal::Interrupt, attempts: 1 }, 130),
            (Error::Interrupted { signal: Signal::Terminate, attempts: 2 }, 143),
        ];
        for (error, code) in rows {
            assert_eq!(error.exit_code(), code, "{error:?}");
        }
    }

    #[test]
    fn interrupted_counts_attempts() {
        let e = Error::Interrupted { signal: Signal::Interrupt, attempts: 1 };
        assert_eq!(e.to_string(), "interrupted after 1 attempt");
        let e = Error::Interrupted { signal: Signal::Terminate, attempts: 3 };
        assert_eq!(e.to_string(), "terminated after 3 attempts");
    }
}
