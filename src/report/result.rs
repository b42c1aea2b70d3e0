//! How a run ended ([`RunEnd`]) and how each URL did ([`UrlResult`]: how
//! its loop ended and what it did, the one record of a URL's result). Its loop makes it when it ends, the run's ending makes
//! one for a URL the run ended first, and every output of the end reads it:
//! stdout's line per URL, the JSON log's final object, the step summary.

use std::time::Duration;

use serde_json::Value;

use crate::error::{DONE, Error, ExitRow};
use crate::process::start::{Exit, StoppedBy};
use crate::report::progress::LoopProgress;

/// One URL's result.
#[derive(Debug)]
pub(crate) struct UrlResult {
    /// The URL as every output shows it (secrets redacted).
    pub url: String,
    /// How its loop ended; `None`: the run ended first (abandoned).
    pub ended: Option<Result<(), Error>>,
    /// The final body, on exit 0 and 4.
    pub body: Option<Vec<u8>>,
    /// `--print`'s outputs on that body.
    pub printed: Option<Vec<Value>>,
    pub attempts: u32,
    /// From the start of the run to the loop's end (or now).
    pub elapsed: Duration,
    /// The last outcome in words (`200 done`, `503`, `connection refused`); empty before any.
    pub last: String,
}

impl UrlResult {
    /// The loop of `url` ended with `result` (and on exit 0 and 4, `body`
    /// and `--print`'s outputs), having done what `progress` kept.
    pub(crate) fn ended(
        url: &str,
        result: Result<(), Error>,
        body: Option<Vec<u8>>,
        printed: Option<Vec<Value>>,
        progress: &LoopProgress,
    ) -> UrlResult {
        progress.ended();
        UrlResult { ended: Some(result), body, printed, ..UrlResult::abandoned(url, progress) }
    }

    /// The loop of `url` ended with `error` and no body.
    pub(crate) fn failed(url: &str, error: Error, progress: &LoopProgress) -> UrlResult {
        UrlResult::ended(url, Err(error), None, None, progress)
    }

    /// The run ended before the loop of `url` did.
    pub(crate) fn abandoned(url: &str, progress: &LoopProgress) -> UrlResult {
        UrlResult {
            url: url.to_string(),
            ended: None,
            body: None,
            printed: None,
            attempts: progress.attempts(),
            elapsed: progress.elapsed(),
            last: progress.last().unwrap_or_default(),
        }
    }

    /// The error it ended with, if any.
    pub(crate) fn error(&self) -> Option<&Error> {
        self.ended.as_ref().and_then(|ended| ended.as_ref().err())
    }

    /// Its exit code; `None` when abandoned.
    pub(crate) fn exit_code(&self) -> Option<u8> {
        self.ended.as_ref().map(|ended| ended.as_ref().err().map_or(0, Error::exit_code))
    }

    /// The JSON log's `reason`: its ending's, or `abandoned`.
    pub(crate) fn reason(&self) -> &'static str {
        match &self.ended {
            None => "abandoned",
            Some(ended) => ended.as_ref().err().map_or("done", Error::reason),
        }
    }

    /// Whether it ended done.
    pub(crate) fn is_done(&self) -> bool {
        matches!(self.ended, Some(Ok(())))
    }

    /// Whether stdout gets its body: on exit 0 and 4.
    pub(crate) fn answered(&self) -> bool {
        self.ended.as_ref().is_some_and(|ended| ended.as_ref().err().is_none_or(Error::keeps_body))
    }
}

/// The end of the run, as the reporter shows it.
#[derive(Debug)]
pub(crate) struct RunEnd {
    /// Its row of the exit-code table.
    pub row: ExitRow,
    /// The error line's message; `None` on success.
    pub message: Option<String>,
    /// One per URL, when there are several.
    pub targets: Option<Vec<UrlResult>>,
    /// `--submit`: the status URL, redacted.
    pub operation_url: Option<String>,
    /// Attempts made by every loop.
    pub attempts: u32,
    /// `--watch`: events judged by every loop.
    pub events: Option<u32>,
    /// stdout holds the run's answer (the body, `--print`'s outputs), not a fallback.
    pub answered: bool,
    /// `--start`: the started command, once stopped.
    pub start: Option<StartEnd>,
    /// `--start`: how `-- CMD`, run as a child, exited; its status is the run's.
    pub command: Option<Exit>,
}

/// `--start`'s command at the end: the process poll started, how it ended, what stopped it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StartEnd {
    pub pid: u32,
    /// `None`: still not gone after SIGKILL (a process stuck in the kernel).
    pub exit: Option<Exit>,
    pub stopped_by: StoppedBy,
}

impl RunEnd {
    /// A run that ended with `error` (`None`: done).
    pub(crate) fn of(
        error: Option<&Error>,
        targets: Option<Vec<UrlResult>>,
        operation_url: Option<String>,
        attempts: u32,
    ) -> RunEnd {
        let mut end = RunEnd {
            row: DONE,
            message: None,
            targets,
            operation_url,
            attempts,
            events: None,
            answered: false,
            start: None,
            command: None,
        };
        if let Some(error) = error {
            end.failed(error);
        }
        end
    }

    /// The run ends with `error` after all.
    pub(crate) fn failed(&mut self, error: &Error) {
        self.row = error.kind().row();
        self.message = Some(error.to_string());
    }

    /// The exit code: the row's, or once the wait was done, the status of `-- CMD` run as a
    /// child under `--start` (a signal's as a shell gives it: 128 plus its number).
    pub(crate) fn code(&self) -> u8 {
        match (self.row == DONE, self.command) {
            (true, Some(Exit::Code(code))) => u8::try_from(code & 0xff).unwrap_or(1),
            (true, Some(Exit::Signal(signal))) => u8::try_from((128 + signal) & 0xff).unwrap_or(1),
            _ => self.row.code,
        }
    }
}
