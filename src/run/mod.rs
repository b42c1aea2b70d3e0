//! The run's coordinator: one loop per URL (`target.rs`), each on its own
//! thread, and the one place a run ends. Everything that can end it arrives
//! on one channel: a loop's ending or a signal; the deadline is the
//! channel's receive timeout, so no thread watches the clock.
//!
//!
//! The top floor: the coordinator here, and each URL's loop (`target`).

pub(crate) mod target;

use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cli::config::{self, Config, Fallback, StateSpec};
use crate::report::output::{Reporter, Summary, TargetSummary, Voice};
use crate::report::progress::Progress;
use crate::report::summary;
use crate::rules::condition::Message;
use crate::rules::policy::last_words;
use crate::run::target::{Common, TargetEnd};
use crate::state::{FileStore, RedisStore, Shared, Store};
use crate::util::error::{Error, Signal};
use crate::util::exec::Command;
use crate::util::wait::Cancel;
use crate::util::{child, signals};
use crate::util::{file, url};

/// How long after the deadline an attempt still in flight is abandoned; a
/// request's own timeout ends it at the deadline, so only a jq filter that
/// never finishes is still running then.
const DEADLINE_GRACE: Duration = Duration::from_millis(250);

/// jaq parses and evaluates filters recursively; a generous stack lets every
/// filter that passes the length and nesting limits (see `condition.rs`) run.
/// It is reserved, not used: untouched pages cost no memory.
pub const STACK_SIZE: usize = 256 << 20;

/// How a run ends: what goes to stdout, the one error line for stderr, the
/// exit code, and after exit 0 the command that takes poll's place (`-- CMD`).
#[derive(Debug)]
pub struct Ending {
    pub stdout: Vec<u8>,
    pub error_line: Option<String>,
    pub code: u8,
    /// How a late error line is written; `None` when stderr carries JSON only.
    voice: Option<Voice>,
    /// `-- CMD`, on exit 0.
    then: Option<Box<Command>>,
}

impl Ending {
    pub(crate) fn new(stdout: Vec<u8>, error: Option<&Error>, voice: Voice) -> Ending {
        let error_line = error.map(|e| voice.error_line(&e.to_string()));
        Ending { stdout, error_line, code: error.map_or(0, Error::exit_code), voice: Some(voice), then: None }
    }

    /// Once stdout and stderr are written: `-- CMD` runs in poll's place.
    /// On Unix this returns only when it could not be run (exit 126 or 127,
    /// with its error line); on Windows also with the command's exit status.
    pub fn hand_over(&mut self) -> Option<HandedOver> {
        let command = self.then.take()?;
        Some(match command.hand_over() {
            Ok(status) => HandedOver::Exited(status),
            Err(error) => {
                let voice = self.voice.unwrap_or_else(|| Voice::plain(false));
                HandedOver::Failed { error_line: voice.error_line(&error.to_string()), code: error.exit_code() }
            }
        })
    }

    /// The process could not even start its run (no thread for it).
    pub fn cannot_start(error: &std::io::Error) -> Ending {
        let voice = Voice::plain(config::github_actions(None));
        Ending::new(Vec::new(), Some(&Error::Permanent(format!("cannot start: {error}"))), voice)
    }

    /// stdout could not take the body (a closed pipe is fine and never gets
    /// here): a run that was to print its answer fails with exit 3; a
    /// fallback's exit code stands.
    pub fn stdout_failed(mut self, error: &std::io::Error) -> Ending {
        if matches!(self.code, 0 | 4) {
            let error = Error::Permanent(format!("cannot write the body to stdout: {error}"));
            self.error_line = self.voice.map(|voice| voice.error_line(&error.to_string()));
            self.code = error.exit_code();
        }
        self
    }
}

/// How `-- CMD` went, when it returned at all.
#[derive(Debug)]
pub enum HandedOver {
    /// It could not be run: exit 126 or 127, with this line on stderr.
    Failed { error_line: String, code: u8 },
    /// (Windows) it ran and exited with this status.
    Exited(i32),
}

/// What the run's coordinator hears.
enum Event {
    Signal(Signal),
    /// Loop `t` ended.
    Ended(usize, TargetEnd),
}

/// Why the run is over.
enum Over {
    /// Every URL is done (or, with `--any`, this one).
    Done,
    /// This URL's ending ends the run.
    Failed(usize),
    Signal(Signal),
    /// Still running after the deadline.
    Stuck,
}

/// Runs every URL's loop to the run's end.
pub fn run(config: Config) -> Ending {
    let Config {
        targets,
        client,
        conditional,
        conditions,
        print,
        policy,
        submit,
        idempotency_key,
        timeout,
        any,
        output_file,
        style,
        limits,
        command,
    } = config;
    let urls: Vec<String> = targets.iter().map(|t| t.request.url.clone()).collect();
    let reporter = Reporter::new(style, &urls, idempotency_key);
    let store: Option<Box<dyn Store>> = match &limits.state {
        Some(StateSpec::File(path)) => Some(Box::new(FileStore::new(path))),
        Some(StateSpec::Redis(url)) => match RedisStore::new(url, client.cacert.as_deref(), client.insecure) {
            Ok(store) => Some(Box::new(store)),
            Err(why) => {
                // Before anything is sent: the URL parsed, but its TLS roots did not.
                return stopped_early(&reporter, &Error::Usage(format!("--state `{}`: {why}", url.shown())));
            }
        },
        None => None,
    };
    let deadline = timeout.map(|timeout| Instant::now() + timeout);
    // How long a half-open probe may take: its lease must outlast it.
    let probe_budget = client.connect_timeout + client.request_timeout;
    let common = Arc::new(Common {
        client,
        conditional,
        conditions,
        print,
        policy,
        submit,
        keep_last: limits.fallback == Some(Fallback::Last),
        deadline,
        shared: Shared::new(store, limits.rate, limits.breaker, limits.state_fail, probe_budget),
        reporter,
        progress: Progress::new(urls.len()),
        cancel: Cancel::default(),
    });

    let (events_tx, events) = mpsc::channel();
    let signals = events_tx.clone();
    let mut ends: Vec<Option<TargetEnd>> = targets.iter().map(|_| None).collect();
    let started = signals::listen(move |signal| {
        let _ = signals.send(Event::Signal(signal));
    })
    .map_err(|e| format!("cannot install signal handlers: {e}"))
    .and_then(|()| {
        targets.iter().enumerate().try_for_each(|(t, target)| {
            let (common, target, events) = (Arc::clone(&common), target.clone(), events_tx.clone());
            let shown = url::redact(&target.request.url);
            let named = shown.clone();
            std::thread::Builder::new()
                .name(format!("poll-{t}"))
                .stack_size(STACK_SIZE)
                .spawn(move || {
                    // A bug that panics a loop still ends the run (release builds abort instead).
                    let ran =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target::run(&common, t, &target)));
                    let end = match ran {
                        Ok(Ok(end)) => end,
                        Ok(Err(_cancelled)) => return,
                        Err(_) => TargetEnd::failed(Error::Permanent(format!("internal error in the loop of {shown}"))),
                    };
                    let _ = events.send(Event::Ended(t, end));
                })
                .map(drop)
                .map_err(|e| format!("cannot start a thread for {named}: {e}"))
        })
    });
    let over = match started {
        Ok(()) => watch(&events, &mut ends, &common, any, deadline),
        Err(why) => {
            common.cancel.cancel();
            return stopped_early(&common.reporter, &Error::Permanent(why));
        }
    };
    // Loops still running stop at their next wait; one in a request ends with the process, and
    // an --auth-cmd still running is ended with what it started.
    common.cancel.cancel();
    child::end_all();
    let loops = Loops { targets: &targets, ends: &ends };
    finish(&common, &loops, over, output_file.as_deref(), &limits.fallback, command)
}

/// Waits for the event that ends the run.
fn watch(
    events: &mpsc::Receiver<Event>,
    ends: &mut [Option<TargetEnd>],
    common: &Common,
    any: bool,
    deadline: Option<Instant>,
) -> Over {
    loop {
        let event = match deadline {
            Some(deadline) => {
                let left = (deadline + DEADLINE_GRACE).saturating_duration_since(Instant::now());
                match events.recv_timeout(left) {
                    Ok(event) => event,
                    Err(_) => return Over::Stuck,
                }
            }
            None => match events.recv() {
                Ok(event) => event,
                Err(_) => return Over::Stuck,
            },
        };
        match event {
            Event::Signal(signal) => return Over::Signal(signal),
            Event::Ended(t, end) => {
                common.progress.ended(t);
                common.reporter.ended(t);
                let done = end.result.is_ok();
                if let Some(slot) = ends.get_mut(t) {
                    *slot = Some(end);
                }
                let all_ended = ends.iter().all(Option::is_some);
                match (any, done) {
                    (true, true) | (false, true) if any || all_ended => return Over::Done,
                    (false, false) => return Over::Failed(t),
                    (true, false) if all_ended => {
                        let worst = ends
                            .iter()
                            .enumerate()
                            .filter_map(|(t, end)| end.as_ref().and_then(|e| e.result.as_ref().err()).map(|e| (t, e)))
                            .max_by_key(|(t, e)| (e.severity(), std::cmp::Reverse(*t)))
                            .map_or(t, |(t, _)| t);
                        return Over::Failed(worst);
                    }
                    _ => {}
                }
            }
        }
    }
}

/// Each URL's loop as configured, and how it ended (`None`: the run ended first).
struct Loops<'a> {
    targets: &'a [config::Target],
    ends: &'a [Option<TargetEnd>],
}

impl Loops<'_> {
    /// How loop `t` ended, if it did.
    fn end(&self, t: usize) -> Option<&TargetEnd> {
        self.ends.get(t).and_then(Option::as_ref)
    }

    /// Every loop: its number, its target and its ending.
    fn each(&self) -> impl Iterator<Item = (usize, &config::Target, Option<&TargetEnd>)> + '_ {
        self.targets.iter().enumerate().map(|(t, target)| (t, target, self.end(t)))
    }
}

/// The one ending of a run: the error (if any), stdout (the body, `--print`'s
/// outputs, one line per URL, or the fallback), `-o`, then the reporter's
/// last word and the error line it renders. After exit 0, `command` (`--
/// CMD`) takes the place of stdout.
fn finish(
    common: &Common,
    loops: &Loops<'_>,
    over: Over,
    output_file: Option<&std::path::Path>,
    fallback: &Option<Fallback>,
    command: Option<Command>,
) -> Ending {
    let (reporter, progress) = (&common.reporter, &common.progress);
    let mut error = run_error(progress, loops, over);
    let (stdout, fell_back) = match loops.targets.len() {
        1 => single_stdout(common, loops, error.as_ref(), fallback),
        _ => (several_stdout(loops), false),
    };
    // `-o /dev/stdout` is stdout itself: `main` writes it through the stdout handle, as without `-o`.
    let to_stdout = output_file.is_some_and(file::names_stdout);
    let stdout = match output_file.filter(|_| !to_stdout) {
        Some(path) => {
            write_output(reporter, path, stdout, &mut error, fell_back, common.deadline);
            Vec::new()
        }
        None => stdout,
    };
    let summary = summarise(reporter, progress, loops, error.as_ref());
    let error_line = reporter.finish(&summary);
    let voice = (!reporter.is_json()).then(|| reporter.voice());
    match command.filter(|_| summary.code == 0) {
        // The command's own output is what follows: the body is not printed (`-o` has it, `-o /dev/stdout` too).
        Some(command) => {
            let stdout = if to_stdout { stdout } else { Vec::new() };
            Ending { stdout, error_line, code: 0, voice, then: Some(Box::new(command)) }
        }
        None => Ending { stdout, error_line, code: summary.code, voice, then: None },
    }
}

/// The run's error, if any: the failing URL's own, a signal, or a deadline
/// (with several URLs, naming those still pending).
fn run_error(progress: &Progress, loops: &Loops<'_>, over: Over) -> Option<Error> {
    let error = match over {
        Over::Done => None,
        Over::Failed(t) => loops.end(t).and_then(|end| end.result.clone().err()),
        Over::Signal(signal) => Some(Error::Interrupted { signal, attempts: progress.attempts() }),
        Over::Stuck => {
            let stuck = loops.ends.iter().position(Option::is_none).unwrap_or(0);
            Some(Error::Deadline(format!(
                "deadline reached while attempt {} was still being judged (does a jq filter loop forever?)",
                progress.attempts_of(stuck)
            )))
        }
    };
    match error {
        Some(Error::Deadline(_)) if loops.targets.len() > 1 => Some(Error::Deadline(pending(progress, loops))),
        error => error,
    }
}

/// stdout with several URLs: one JSON line for each URL that ended with 0 or 4, in the order given.
fn several_stdout(loops: &Loops<'_>) -> Vec<u8> {
    let mut stdout = Vec::new();
    for (_, target, end) in loops.each() {
        let Some(end) = end else { continue };
        let code = end.code();
        if !matches!(code, 0 | 4) {
            continue;
        }
        let body = match (&end.printed, &end.body) {
            (None, Some(body)) => Some(
                serde_json::from_slice(body)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned())),
            ),
            _ => None,
        };
        let line = Line { url: url::redact(&target.request.url), exit_code: code, body, print: end.printed.as_deref() };
        stdout.extend_from_slice(serde_json::to_string(&line).unwrap_or_default().as_bytes());
        stdout.push(b'\n');
    }
    stdout
}

/// stdout with one URL: the body (or `--print`'s outputs) on exit 0 and 4,
/// else the `--fallback` where the error takes one; and whether it fell back.
fn single_stdout(
    common: &Common,
    loops: &Loops<'_>,
    error: Option<&Error>,
    fallback: &Option<Fallback>,
) -> (Vec<u8>, bool) {
    let reporter = &common.reporter;
    if let Some(end) = loops.end(0)
        && (end.result.is_ok() || end.result.as_ref().err().is_some_and(Error::keeps_body))
    {
        let stdout = match (&end.printed, &end.body) {
            (Some(printed), _) => print_lines(printed),
            (None, Some(body)) => body.clone(),
            (None, None) => Vec::new(),
        };
        return (stdout, false);
    }
    let (Some(fallback), Some(true)) = (fallback, error.map(Error::takes_fallback)) else { return (Vec::new(), false) };
    let body = match fallback {
        Fallback::Body(body) => Some(body.clone()),
        Fallback::Last => loops.targets.first().and_then(|target| {
            let url = url::redact(&target.request.url);
            common.shared.last_good(&target.key, &url, &|w| reporter.warn(w))
        }),
    };
    let Some(body) = body else { return (Vec::new(), false) };
    // A fallback is no reply: no $status, no $headers.
    let message = Message { status: 0, headers: &[], body: &body };
    let stdout = match common.print.as_ref().map(|print| print.print(message)) {
        None => body,
        Some(Ok(values)) => print_lines(&values),
        Some(Err(e)) => {
            reporter.warn(&format!("--fallback: --print: {e}"));
            Vec::new()
        }
    };
    (stdout, true)
}

/// `-o FILE`: what would go to stdout, written atomically (a FIFO by the
/// run's `deadline`); a failure is the run's error, except that a run that
/// printed its `--fallback` keeps its code.
fn write_output(
    reporter: &Reporter,
    path: &std::path::Path,
    stdout: Vec<u8>,
    error: &mut Option<Error>,
    fell_back: bool,
    deadline: Option<Instant>,
) {
    if stdout.is_empty() && error.as_ref().is_some_and(|e| !e.keeps_body()) {
        return;
    }
    if let Err(e) = file::replace(path, &stdout, true, file::Access::Umask, deadline) {
        let why = format!("cannot write `{}`: {e}", path.display());
        if fell_back {
            reporter.warn(&format!("--fallback: {why}"));
        } else {
            *error = Some(Error::Permanent(why));
        }
    }
}

/// The run's summary for the reporter's last word, and the GitHub step summary.
fn summarise(reporter: &Reporter, progress: &Progress, loops: &Loops<'_>, error: Option<&Error>) -> Summary {
    let several = loops.targets.len() > 1;
    let operation = progress.operation(0).filter(|_| !several);
    let target_summaries = several.then(|| {
        loops
            .each()
            .map(|(t, target, end)| TargetSummary {
                url: url::redact(&target.request.url),
                exit_code: end.map(TargetEnd::code),
                reason: end
                    .map_or("abandoned", |end| end.result.as_ref().err().map_or("done", Error::reason))
                    .to_string(),
                attempts: progress.attempts_of(t),
            })
            .collect()
    });
    let mut summary = summary_of(error, target_summaries, operation.as_deref().map(url::redact), progress.attempts());
    // A --submit run that a signal ended names where its operation is, to resume the wait.
    if let (Some(Error::Interrupted { .. }), Some(operation)) = (error, &operation) {
        summary.message = summary.message.map(|m| format!("{m}{}", target::resume(operation)));
    }
    if let Some(path) = summary::path(reporter.github()) {
        let table = summary::render(&step_rows(progress, loops, error), summary.code, progress.elapsed());
        if let Err(why) = summary::append(&path, &table) {
            reporter.warn(&why);
        }
    }
    summary
}

/// The step summary's rows: each URL's own ending; one the run ended first
/// shares a signal or deadline of the run, and is abandoned otherwise.
fn step_rows(progress: &Progress, loops: &Loops<'_>, error: Option<&Error>) -> Vec<summary::Row> {
    let run_wide = error.filter(|e| matches!(e, Error::Interrupted { .. } | Error::Deadline(_)));
    let rows = loops.each().map(|(t, target, end)| summary::Row {
        url: url::redact(&target.request.url),
        exit_code: end.map(TargetEnd::code).or(run_wide.map(Error::exit_code)),
        message: end.and_then(|end| end.result.as_ref().err()).map(Error::to_string),
        attempts: progress.attempts_of(t),
        elapsed: progress.elapsed_of(t),
        last: progress.last(t).unwrap_or_default(),
    });
    rows.collect()
}

/// A run that ends before its loops could run: only the reporter's last word.
fn stopped_early(reporter: &Reporter, error: &Error) -> Ending {
    let error_line = reporter.finish(&summary_of(Some(error), None, None, 0));
    Ending {
        stdout: Vec::new(),
        error_line,
        code: error.exit_code(),
        voice: (!reporter.is_json()).then(|| reporter.voice()),
        then: None,
    }
}

fn summary_of(
    error: Option<&Error>,
    targets: Option<Vec<TargetSummary>>,
    operation_url: Option<String>,
    attempts: u32,
) -> Summary {
    Summary {
        attempts,
        code: error.map_or(0, Error::exit_code),
        reason: error.map_or("done", Error::reason),
        message: error.map(Error::to_string),
        targets,
        operation_url,
    }
}

/// One line of stdout with several URLs, its fields in the documented order.
#[derive(serde::Serialize)]
struct Line<'a> {
    url: String,
    exit_code: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    print: Option<&'a [Value]>,
}

/// `--print`'s outputs, one per line: strings raw (as `jq -r`), others as compact JSON.
fn print_lines(values: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for value in values {
        match value {
            Value::String(text) => out.extend_from_slice(text.as_bytes()),
            other => out.extend_from_slice(other.to_string().as_bytes()),
        }
        out.push(b'\n');
    }
    out
}

/// A deadline with several URLs names only those still pending, each with its last outcome.
fn pending(progress: &Progress, loops: &Loops<'_>) -> String {
    let pending: Vec<String> = loops
        .each()
        .filter(|(_, _, end)| end.is_none_or(|end| end.result.is_err()))
        .map(|(t, target, _)| {
            let last = match (progress.cause(t), progress.attempts_of(t)) {
                (Some(cause), _) => last_words(&cause),
                (None, 0) => "no attempt yet".to_string(),
                // Its first request is unanswered (or its body still being judged).
                (None, n) => format!("attempt {n} still running"),
            };
            format!("{} ({last})", url::redact(&target.request.url))
        })
        .collect();
    format!(
        "deadline reached with {} of {} URLs still pending: {} (raise --timeout to wait longer)",
        pending.len(),
        loops.targets.len(),
        first_few(&pending)
    )
}

/// How many URLs a line names before it counts the rest: the JSON log's final
/// object and the step summary name every one.
const NAMED_IN_A_LINE: usize = 3;

/// `a, b, c and 997 more`: one line stays short however many URLs there are.
fn first_few(items: &[String]) -> String {
    match items.len().checked_sub(NAMED_IN_A_LINE) {
        Some(rest) if rest > 0 => format!("{} and {rest} more", items[..NAMED_IN_A_LINE].join(", ")),
        _ => items.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_the_first_three_urls_and_counts_the_rest() {
        let urls: Vec<String> = (1..=1000).map(|n| format!("http://h/{n}")).collect();
        assert_eq!(first_few(&urls), "http://h/1, http://h/2, http://h/3 and 997 more");
        assert_eq!(first_few(&urls[..3]), "http://h/1, http://h/2, http://h/3");
        assert_eq!(first_few(&urls[..1]), "http://h/1");
    }
}
