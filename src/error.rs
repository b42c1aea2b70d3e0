//! The one error type of a run and the one table of how a run can end: each
//! [`Kind`] is a row ([`Kind::row`]) with its exit code, the `reason` of the
//! JSON log, the words of the step summary and what it means. `--help`, the
//! man page and README's table are made from [`EXIT_CODES`] (or checked
//! against it by a test); nothing else names a code.

use std::fmt;

/// One way a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitRow {
    pub code: u8,
    /// The `reason` of `--log-format json`'s final object.
    pub reason: &'static str,
    /// The step summary's words for it.
    pub words: &'static str,
    /// What it means, for `--help`, the man page and README.
    pub meaning: &'static str,
    /// How bad it is when several URLs failed under `--any` (higher wins).
    severity: u8,
}

/// A run whose condition was met.
pub const DONE: ExitRow = ExitRow {
    code: 0,
    reason: "done",
    words: "done",
    meaning: "condition met (without --until: a 2xx arrived, or a tcp:// or unix:// target accepted a connection; or a \
              status in --done-on arrived, refused included); with --start, the status of -- CMD",
    severity: 0,
};

/// Why a run did not end with its condition met: one row of the table each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Deadline,
    /// `--stall`: what the progress line shows did not change for that long.
    Stalled,
    Usage,
    Permanent,
    /// `--start`: the started command exited before the targets answered.
    StartExited,
    FailWhen,
    GaveUp,
    CircuitOpen,
    StateUnreachable,
    CannotRun,
    NotFound,
    HungUp,
    Interrupted,
    Terminated,
}

impl Kind {
    const ALL: [Kind; 14] = [
        Kind::Deadline,
        Kind::Stalled,
        Kind::Usage,
        Kind::Permanent,
        Kind::StartExited,
        Kind::FailWhen,
        Kind::GaveUp,
        Kind::CircuitOpen,
        Kind::StateUnreachable,
        Kind::CannotRun,
        Kind::NotFound,
        Kind::HungUp,
        Kind::Interrupted,
        Kind::Terminated,
    ];

    /// The table: the one place each ending is named.
    pub(crate) const fn row(self) -> ExitRow {
        let (code, reason, words, meaning, severity) = match self {
            Kind::Deadline => (
                1,
                "deadline",
                "deadline",
                "deadline: --timeout passed, or would pass before the next attempt could start",
                1,
            ),
            // A deadline of its own: the run gave up waiting; exit 1 as the deadline's.
            Kind::Stalled => (1, "stalled", "stalled", "", 1),
            Kind::Usage => (
                2,
                "usage",
                "usage error",
                "usage: bad flag, URL, duration, header, JSON body or jq filter; nothing sent",
                6,
            ),
            Kind::Permanent => {
                (3, "permanent", "permanent failure", "permanent failure: a non-retryable status or error", 4)
            }
            // A permanent failure of its own: a server that died will not come up by waiting.
            Kind::StartExited => (3, "start_exited", "the started server exited", "", 4),
            // One ending for --fail-when, --fail-on and --submit's built-in failure test: the words fit
            // each, and the error's own words say which.
            Kind::FailWhen => {
                (4, "fail_when", "failure condition met", "--fail-when matched, or a status in --fail-on arrived", 5)
            }
            Kind::GaveUp => (
                5,
                "gave_up",
                "gave up",
                "gave up on transient failures: --retries spent, or a non-idempotent request that may not be retried",
                2,
            ),
            Kind::CircuitOpen => (
                6,
                "circuit_open",
                "circuit open",
                "circuit open: the breaker for this origin is open (only with --state), or the state store is unreachable under --state-fail closed",
                3,
            ),
            Kind::StateUnreachable => (6, "state_unreachable", "circuit open", "", 3),
            Kind::CannotRun => {
                (126, "cannot_run", "could not run the command", "the command after -- could not be run", 6)
            }
            Kind::NotFound => (127, "not_found", "command not found", "the command after -- was not found", 6),
            Kind::HungUp => (129, "hung_up", "hung up", "hung up: SIGHUP", 7),
            Kind::Interrupted => (130, "interrupted", "interrupted", "interrupted by SIGINT (Ctrl-C)", 7),
            Kind::Terminated => (143, "terminated", "terminated", "terminated by SIGTERM", 7),
        };
        ExitRow { code, reason, words, meaning, severity }
    }
}

impl Kind {
    /// Whether `--fallback` stands in for the body: where there is no answer
    /// to give (a deadline, a stall, retries spent, the circuit open). A permanent
    /// failure is an answer. The one place that says which.
    pub(crate) const fn takes_fallback(self) -> bool {
        matches!(self, Kind::Deadline | Kind::Stalled | Kind::GaveUp | Kind::CircuitOpen | Kind::StateUnreachable)
    }
}

/// The exit codes a `--fallback` stands in on, in words: `1, 5 or 6`, for
/// `--help`, the man page and (checked by a test) README and the guide.
pub(crate) fn fallback_codes() -> String {
    let mut codes: Vec<u8> =
        Kind::ALL.iter().filter(|kind| kind.takes_fallback()).map(|kind| kind.row().code).collect();
    codes.dedup();
    let words: Vec<String> = codes.iter().map(u8::to_string).collect();
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => words.join(""),
    }
}

/// Every exit code `poll` uses, once each and in order, with what it means:
/// the table's rows, made when the crate compiles.
pub const EXIT_CODES: [(u8, &str); 12] = exit_codes();

const fn exit_codes() -> [(u8, &'static str); 12] {
    let mut codes = [(DONE.code, DONE.meaning); 12];
    let (mut i, mut n) = (0, 1);
    while i < Kind::ALL.len() {
        let row = Kind::ALL[i].row();
        // Endings that share a code (circuit open, state unreachable) share its line.
        if row.code != codes[n - 1].0 {
            codes[n] = (row.code, row.meaning);
            n += 1;
        }
        i += 1;
    }
    assert!(n == codes.len(), "EXIT_CODES has one line per code");
    codes
}

/// The step summary's words for an exit code (the first ending that has it).
pub(crate) fn words(code: u8) -> &'static str {
    std::iter::once(DONE).chain(Kind::ALL.map(Kind::row)).find(|row| row.code == code).map_or("failed", |row| row.words)
}

/// The signals that end a run early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// SIGINT; Ctrl-C on Windows.
    Interrupt,
    /// SIGTERM; Ctrl-Break on Windows.
    Terminate,
    /// SIGHUP: the terminal went away, or a CI runner cancelled the job.
    #[cfg_attr(windows, allow(dead_code, reason = "Windows has no SIGHUP (process/signals.rs)"))]
    HangUp,
}

/// Why a run did not end with its condition met: which ending, what
/// happened, where (the URL, placed by each reporter) and what may help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Error {
    kind: Kind,
    /// What happened, without the URL.
    what: String,
    /// The URL it happened on, redacted.
    url: Option<String>,
    /// What may help, written after the URL (`; is the server up ...?`).
    hint: String,
}

impl Error {
    pub(crate) fn new(kind: Kind, what: impl Into<String>) -> Error {
        Error { kind, what: what.into(), url: None, hint: String::new() }
    }

    pub(crate) fn deadline(what: impl Into<String>) -> Error {
        Error::new(Kind::Deadline, what)
    }

    pub(crate) fn usage(what: impl Into<String>) -> Error {
        Error::new(Kind::Usage, what)
    }

    pub(crate) fn permanent(what: impl Into<String>) -> Error {
        Error::new(Kind::Permanent, what)
    }

    /// A usage error about `flag` (its message starts `--flag:`) whose value
    /// came from `variable` (`POLL_STATE`): the line names the variable, and
    /// quotes no part of `secret`, the value when it may carry one.
    pub(crate) fn set_by(mut self, flag: &str, variable: &str, secret: Option<&str>) -> Error {
        let about = self.what.strip_prefix(flag).is_some_and(|rest| rest.starts_with(':'));
        if self.kind == Kind::Usage && about {
            self = self.redacted(secret);
            self.what = format!("{variable}: {}", self.what);
        }
        self
    }

    /// The same error quoting no part of `secret`, a value that may carry one.
    pub(crate) fn redacted(mut self, secret: Option<&str>) -> Error {
        if let Some(secret) = secret {
            self.what = crate::util::url::unquoted(&self.what, secret);
        }
        self
    }

    /// A signal ended the run after `attempts` attempts.
    pub(crate) fn signalled(signal: Signal, attempts: u32) -> Error {
        let kind = match signal {
            Signal::HangUp => Kind::HungUp,
            Signal::Interrupt => Kind::Interrupted,
            Signal::Terminate => Kind::Terminated,
        };
        Error::new(kind, format!("{} after {}", kind.row().words, crate::util::text::count(attempts, "attempt")))
    }

    /// The same error, on `url` (redacted here), unless it already names one.
    pub(crate) fn at(mut self, url: &str) -> Error {
        self.url.get_or_insert_with(|| crate::util::url::redact(url));
        self
    }

    /// The same error, with what may help.
    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Error {
        self.hint.push_str(&hint.into());
        self
    }

    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    pub(crate) fn exit_code(&self) -> u8 {
        self.kind.row().code
    }

    /// A short machine-readable name of the ending, for `--log-format json`.
    pub(crate) fn reason(&self) -> &'static str {
        self.kind.row().reason
    }

    /// The message for a reporter that shows the URL `shown` apart: without
    /// its URL when that is `shown`, with it when the error is elsewhere
    /// (a `--paginate` page after the first, a `--submit` status URL).
    pub(crate) fn beside(&self, shown: &str) -> String {
        match &self.url {
            Some(url) if url != shown => self.to_string(),
            _ => format!("{}{}", self.what, self.hint),
        }
    }

    /// Whether a signal ended the run.
    pub(crate) fn is_signal(&self) -> bool {
        matches!(self.kind, Kind::HungUp | Kind::Interrupted | Kind::Terminated)
    }

    /// Whether `--fallback` stands in for the body ([`Kind::takes_fallback`]).
    pub(crate) fn takes_fallback(&self) -> bool {
        self.kind.takes_fallback()
    }

    /// Whether the run still prints the final body (exit 4 does).
    pub(crate) fn keeps_body(&self) -> bool {
        self.kind == Kind::FailWhen
    }

    /// How bad an ending is when several URLs failed under `--any` (higher
    /// wins): a signal, then `--fail-when`, permanent, circuit open, gave up, deadline.
    pub(crate) fn severity(&self) -> u8 {
        self.kind.row().severity
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)?;
        if let Some(url) = &self.url {
            write!(f, " [{url}]")?;
        }
        f.write_str(&self.hint)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_ending() -> Vec<Error> {
        Kind::ALL.iter().map(|kind| Error::new(*kind, "")).collect()
    }

    #[test]
    fn every_code_is_listed_once_in_order() {
        let codes: Vec<u8> = EXIT_CODES.iter().map(|(code, _)| *code).collect();
        assert_eq!(codes, [0, 1, 2, 3, 4, 5, 6, 126, 127, 129, 130, 143]);
        assert!(EXIT_CODES.iter().all(|(_, meaning)| !meaning.is_empty()));
        let rows = [(Kind::Deadline, 1), (Kind::GaveUp, 5), (Kind::StateUnreachable, 6), (Kind::Terminated, 143)];
        for (kind, code) in rows {
            assert_eq!(Error::new(kind, "").exit_code(), code, "{kind:?}");
        }
        let reasons: std::collections::HashSet<&str> = every_ending().iter().map(Error::reason).collect();
        assert_eq!(reasons.len(), Kind::ALL.len(), "one reason per ending");
    }

    #[test]
    fn the_step_summary_has_words_for_every_code() {
        assert_eq!(words(0), "done");
        assert_eq!(words(6), "circuit open");
        assert_eq!(words(129), "hung up");
        assert_eq!(words(42), "failed");
        for (code, _) in EXIT_CODES {
            assert_ne!(words(code), "failed", "{code}");
        }
    }

    #[test]
    fn fallback_stands_in_on_1_5_and_6_only() {
        for error in every_ending() {
            assert_eq!(error.takes_fallback(), matches!(error.exit_code(), 1 | 5 | 6), "{error:?}");
        }
        assert_eq!(fallback_codes(), "1, 5 or 6");
    }

    #[test]
    fn the_most_severe_ending_follows_the_documented_order() {
        let order = [143, 4, 3, 6, 5, 1];
        let rank = |code: u8| every_ending().into_iter().find(|e| e.exit_code() == code).map(|e| e.severity());
        for pair in order.windows(2) {
            assert!(rank(pair[0]) > rank(pair[1]), "{} should outrank {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn the_url_sits_between_what_happened_and_the_hint_and_each_reporter_may_leave_it_out() {
        let error = Error::permanent("HTTP 404").at("http://u:secret@h/x?token=t").hint("; check the URL");
        assert_eq!(error.to_string(), "HTTP 404 [http://<redacted>@h/x?token=<redacted>]; check the URL");
        let shown = "http://<redacted>@h/x?token=<redacted>";
        assert_eq!(error.beside(shown), "HTTP 404; check the URL");
        assert_eq!(error.beside("http://h/first"), format!("HTTP 404 [{shown}]; check the URL"));
        assert_eq!(error.clone().at("http://other/").to_string(), error.to_string(), "the first URL stays");
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
    fn a_signal_counts_attempts() {
        let e = Error::signalled(Signal::Interrupt, 1);
        assert_eq!(e.to_string(), "interrupted after 1 attempt");
        let e = Error::signalled(Signal::Terminate, 3);
        assert_eq!(e.to_string(), "terminated after 3 attempts");
        let e = Error::signalled(Signal::HangUp, 2);
        assert_eq!((e.to_string().as_str(), e.exit_code(), e.reason()), ("hung up after 2 attempts", 129, "hung_up"));
    }
}
