//! The one place a run ends: from how each loop ended (or why the run ended
//! first) to the run's error, what goes to stdout (the body, `--print`'s
//! outputs, one line per URL, or the `--fallback`), `-o`, the step summary,
//! and the reporter's last word, said once stdout is written ([`Ending::close`]).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::cli::config::{self, Fallback};
use crate::error::{Error, Kind, Signal};
use crate::process::exec::Command;
use crate::process::start::Exit;
use crate::report::progress::{LoopProgress, Progress};
use crate::report::reporter::Reporter;
use crate::report::result::{RunEnd, UrlResult};
use crate::report::voice::Voice;
use crate::report::{junit, summary};
use crate::rules::condition::Message;
use crate::rules::policy::last_words;
use crate::run::explain;
use crate::run::serve::Server;
use crate::run::target::Common;
use crate::util::headers::Headers;
use crate::util::{file, url};

/// How a run ends: what goes to stdout, then the reporter's last word (the
/// error line, the JSON log's final object), which waits for stdout to be
/// written so that it can tell the truth about it; after exit 0, the command
/// that takes poll's place (`-- CMD`).
pub struct Ending {
    stdout: Vec<u8>,
    last_word: LastWord,
    then: Option<Box<Command>>,
    /// `--start`'s server, stopped before the last word (after `-- CMD`, when it runs).
    server: Option<Arc<Server>>,
}

/// The reporter's last word: already said, or to be said once stdout is written.
pub(super) enum LastWord {
    Said { error_line: Option<String>, code: u8, voice: Option<Voice> },
    Due { common: Arc<Common>, summary: Box<RunEnd> },
}

/// An ending once stdout is written: the error line for stderr and the exit
/// code, and `-- CMD` to hand over to.
pub struct Closed {
    pub error_line: Option<String>,
    pub code: u8,
    /// How a late error line is written; `None` when stderr carries JSON only.
    voice: Option<Voice>,
    then: Option<Box<Command>>,
    /// `--start` with `-- CMD` due: the last word waits for the command and the server's stop.
    after: Option<Box<After>>,
}

/// What is left to do once `-- CMD`, run as a child under `--start`, is over.
struct After {
    common: Arc<Common>,
    summary: Box<RunEnd>,
    server: Arc<Server>,
}

/// How `-- CMD` went, when it returned at all.
#[derive(Debug)]
pub enum HandedOver {
    /// It could not be run: exit 126 or 127, with this line on stderr.
    Failed { error_line: String, code: u8 },
    /// (Windows) it ran and exited with this status.
    Exited(i32),
    /// Under `--start` it ran as a child, and the started server was stopped: the run's error
    /// line, if any, and its exit code (the command's status, or a signal's code).
    Served { error_line: Option<String>, code: u8 },
}

impl Ending {
    /// The ending of a run that never started its loops (`--help`, a usage
    /// error): `stdout`, and the error line in `voice`.
    pub(crate) fn new(stdout: Vec<u8>, error: Option<&Error>, voice: Voice) -> Ending {
        let error_line = error.map(|e| voice.error_line(&e.to_string()));
        let code = error.map_or(0, Error::exit_code);
        Ending { stdout, last_word: LastWord::Said { error_line, code, voice: Some(voice) }, then: None, server: None }
    }

    /// The process could not even start its run (no thread for it).
    pub fn cannot_start(error: &io::Error) -> Ending {
        let voice = Voice::plain(config::github_actions(None));
        Ending::new(Vec::new(), Some(&Error::permanent(format!("cannot start: {error}"))), voice)
    }

    /// What goes to stdout.
    pub fn stdout(&self) -> &[u8] {
        &self.stdout
    }

    /// stdout is written (`written`; a closed pipe counts as written): the
    /// reporter's last word. stdout that could not take the answer fails the
    /// run with exit 3, and the JSON log's final object says so; a
    /// fallback's exit code stands.
    pub fn close(self, written: io::Result<()>) -> Closed {
        // A closed stdout (`poll URL | head -c1`) is not an error.
        let written = written.or_else(|e| if file::reader_closed(&e) { Ok(()) } else { Err(e) });
        let Ending { last_word, then, server, .. } = self;
        let (error_line, code, voice, after) = match last_word {
            LastWord::Said { error_line, code, voice } => match written {
                // `--help` and `--generate` print their answer too.
                Err(e) if code == 0 => {
                    let error = Error::permanent(format!("cannot write to stdout: {e}"));
                    (voice.map(|voice| voice.error_line(&error.to_string())), error.exit_code(), voice, None)
                }
                _ => (error_line, code, voice, None),
            },
            LastWord::Due { common, mut summary } => {
                if !common.signal_end.speak() {
                    // A later signal found this ending stuck and is ending the process with the run's words.
                    loop {
                        std::thread::park();
                    }
                }
                if let (Err(e), true) = (written, summary.answered) {
                    let error = Error::permanent(format!("cannot write the body to stdout: {e}"));
                    summary.failed(&error);
                }
                let reporter = &common.reporter;
                let voice = (!reporter.is_json()).then(|| reporter.voice());
                match server {
                    // `-- CMD` runs first, as a child; the last word follows the server's stop.
                    Some(server) if then.is_some() && summary.code() == 0 => {
                        (None, 0, voice, Some(Box::new(After { common, summary, server })))
                    }
                    server => {
                        if let Some(server) = server {
                            summary.start = Some(server.stop(reporter));
                        }
                        (reporter.finish(&summary), summary.code(), voice, None)
                    }
                }
            }
        };
        let then = then.filter(|_| code == 0);
        Closed { error_line, code, voice, then, after }
    }
}

impl Closed {
    /// Once stdout and stderr are written: `-- CMD` runs in poll's place.
    /// On Unix this returns only when it could not be run (exit 126 or 127,
    /// with its error line); on Windows also with the command's exit status;
    /// with `--start`, once it ran as a child and the started server is stopped.
    pub fn hand_over(&mut self) -> Option<HandedOver> {
        let command = self.then.take()?;
        if let Some(after) = self.after.take() {
            return Some(after.run(&command));
        }
        Some(match command.hand_over() {
            Ok(status) => HandedOver::Exited(status),
            Err(error) => {
                let voice = self.voice.unwrap_or_else(|| Voice::plain(false));
                HandedOver::Failed { error_line: voice.error_line(&error.to_string()), code: error.exit_code() }
            }
        })
    }
}

impl After {
    /// `--start`: `-- CMD` as a child, the terminal's signals passed on to it (`SignalEnd`);
    /// then the server's stop, then the last word. A signal that came as the run ended keeps
    /// the command from starting; one that came at all makes the run's code its own.
    fn run(self, command: &Command) -> HandedOver {
        let After { common, mut summary, server } = self;
        let signal_end = &common.signal_end;
        if signal_end.held().is_none() {
            match command.spawn() {
                Ok(mut child) => {
                    signal_end.pass_to(Some(child.id()));
                    let waited = child.wait();
                    signal_end.pass_to(None);
                    summary.command = waited.ok().map(|status| Exit::of(&status));
                }
                Err(error) => summary.failed(&error),
            }
        }
        summary.start = Some(server.stop(&common.reporter));
        if let Some(signal) = signal_end.held() {
            summary.failed(&Error::signalled(signal, summary.attempts));
        }
        let error_line = common.reporter.finish(&summary);
        HandedOver::Served { error_line, code: summary.code() }
    }
}

/// Why the run is over.
pub(super) enum Over {
    /// Every URL is done (or, with `--any`, this one).
    Done,
    /// This URL's ending ends the run.
    Failed(usize),
    Signal(Signal),
    /// Still running after the deadline.
    Stuck,
    /// `--start`'s command exited before the targets were up.
    StartExited(Exit),
}

/// What the run's ending does besides the reporter's last word: `-o`,
/// `--fallback`, `-- CMD`.
pub(super) struct Finale {
    pub output_file: Option<PathBuf>,
    /// `--report-junit`.
    pub junit: Option<PathBuf>,
    pub fallback: Option<Fallback>,
    pub command: Option<Command>,
    /// `--start`'s server.
    pub server: Option<Arc<Server>>,
}

/// The run's ending, from each URL's result (`ends`: `None` where the run
/// ended first). After exit 0, `-- CMD` takes the place of stdout.
pub(super) fn finish(
    common: Arc<Common>,
    targets: &[config::Target],
    ends: Vec<Option<UrlResult>>,
    over: Over,
    finale: Finale,
) -> Ending {
    let (reporter, progress) = (&common.reporter, &common.progress);
    let results: Vec<UrlResult> = ends
        .into_iter()
        .zip(targets.iter().zip(progress.each()))
        .map(|(end, (target, progress))| end.unwrap_or_else(|| UrlResult::abandoned(&target.shown, progress)))
        .collect();
    let conditions = &common.polling.conditions;
    let filtered = conditions.until.is_some() || conditions.fail_when.is_some() || conditions.show.is_some();
    let error = run_error(progress, &results, over, finale.server.as_deref(), filtered);
    let (stdout, fell_back) = match (targets, results.as_slice()) {
        ([target], [result]) => single_stdout(&common, target, result, error.as_ref(), finale.fallback.as_ref()),
        _ => (several_stdout(&results), false),
    };
    // `-o /dev/stdout` is stdout itself: `main` writes it through the stdout handle, as without `-o`.
    let to_stdout = finale.output_file.as_deref().is_some_and(file::names_stdout);
    let (stdout, error) = match finale.output_file.as_deref().filter(|_| !to_stdout) {
        Some(path) => (Vec::new(), write_output(&common, path, &stdout, error, fell_back)),
        None => (stdout, error),
    };
    // `-- CMD` is due: found again now, so that one gone meanwhile is the run's ending (127, 126).
    let due = finale.command.filter(|_| error.is_none());
    let hands_over = due.is_some();
    let (command, error) = match due.map(Command::found_again) {
        Some(Err(gone)) => (None, Some(gone)),
        Some(Ok(command)) => (Some(command), error),
        None => (None, error),
    };
    let mut summary = summarise(&common, results, error.as_ref(), finale.junit.as_deref());
    summary.events = common.polling.client.watch.is_some().then(|| progress.events());
    reporter.settle(&summary);
    // What stdout holds is the run's answer (not a fallback), so a stdout that cannot take it fails the run.
    summary.answered = !fell_back && error.as_ref().is_none_or(Error::keeps_body);
    let then = command.filter(|_| summary.code() == 0).map(Box::new);
    // The command's own output is what follows: the body is not printed (`-o` has it, `-o /dev/stdout` too);
    // nor when it could not be found again, as when it could not be exec'd.
    let stdout = if hands_over && !to_stdout { Vec::new() } else { stdout };
    let last_word = LastWord::Due { common: Arc::clone(&common), summary: Box::new(summary) };
    Ending { stdout, last_word, then, server: finale.server }
}

/// The run's error, if any: the failing URL's own, a signal, or a deadline
/// (with several URLs, naming those still pending).
fn run_error(
    progress: &Progress,
    results: &[UrlResult],
    over: Over,
    server: Option<&Server>,
    filtered: bool,
) -> Option<Error> {
    let error = match over {
        Over::Done => None,
        Over::StartExited(exit) => {
            let pending: Vec<String> =
                results.iter().filter(|result| !result.is_done()).map(|result| result.url.clone()).collect();
            server.map(|server| server.exited_early(exit, &first_few(&pending)))
        }
        Over::Failed(t) => results.get(t).and_then(UrlResult::error).cloned(),
        Over::Signal(signal) => Some(Error::signalled(signal, progress.attempts())),
        Over::Stuck => {
            let stuck = results.iter().position(|result| result.ended.is_none()).unwrap_or(0);
            let attempt = progress.of(stuck).map_or(0, LoopProgress::attempts);
            Some(Error::deadline(match filtered {
                true => format!(
                    "deadline reached while attempt {attempt} was still being judged (does a jq filter loop forever?)"
                ),
                false => format!("deadline reached while attempt {attempt} was still running"),
            }))
        }
    };
    match error {
        Some(error) if error.kind() == Kind::Deadline && results.len() > 1 => {
            Some(Error::deadline(pending(progress, results)))
        }
        error => error,
    }
}

/// stdout with several URLs: one JSON line for each URL that ended with 0
/// or 4, in the order given: `url`, `exit_code`, then `body` (a string when
/// it is not JSON) or `--print`'s outputs as `print`.
fn several_stdout(results: &[UrlResult]) -> Vec<u8> {
    let mut stdout = Vec::new();
    for result in results.iter().filter(|result| result.answered()) {
        let mut line = serde_json::Map::new();
        line.insert("url".into(), Value::from(result.url.as_str()));
        line.insert("exit_code".into(), Value::from(result.exit_code()));
        match (&result.printed, &result.body) {
            (Some(printed), _) => {
                line.insert("print".into(), Value::from(printed.clone()));
            }
            (None, Some(body)) => {
                let body = serde_json::from_slice(body)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()));
                line.insert("body".into(), body);
            }
            // A tcp:// or unix:// target (or a --done-on refused): no body came.
            (None, None) => {
                line.insert("body".into(), Value::Null);
            }
        }
        stdout.extend_from_slice(Value::Object(line).to_string().as_bytes());
        stdout.push(b'\n');
    }
    stdout
}

/// stdout with one URL: the body (or `--print`'s outputs) on exit 0 and 4,
/// else the `--fallback` where the error takes one; and whether it fell back.
fn single_stdout(
    common: &Common,
    target: &config::Target,
    result: &UrlResult,
    error: Option<&Error>,
    fallback: Option<&Fallback>,
) -> (Vec<u8>, bool) {
    let reporter = &common.reporter;
    if result.answered() {
        let stdout = match (&result.printed, &result.body) {
            (Some(printed), _) => print_lines(printed),
            (None, Some(body)) => body.clone(),
            (None, None) => Vec::new(),
        };
        return (stdout, false);
    }
    let (Some(fallback), Some(true)) = (fallback, error.map(Error::takes_fallback)) else { return (Vec::new(), false) };
    let body = match fallback {
        Fallback::Body(body) => Some(body.clone()),
        Fallback::Last => common.shared.last_good(&target.state_key, &target.shown, &|w| reporter.warn(w)),
    };
    let Some(body) = body else { return (Vec::new(), false) };
    // A fallback is no reply: no $status, no $headers.
    let none = Headers::default();
    let message = Message::reply(0, &none, &body);
    let stdout = match common.polling.print.as_ref().map(|print| print.print(message)) {
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
/// run's deadline); the run's error after it. A failure is the run's error,
/// except that a run that printed its `--fallback` keeps its own.
fn write_output(
    common: &Common,
    path: &std::path::Path,
    stdout: &[u8],
    error: Option<Error>,
    fell_back: bool,
) -> Option<Error> {
    if stdout.is_empty() && error.as_ref().is_some_and(|e| !e.keeps_body()) {
        return error;
    }
    let Err(e) = file::replace(path, stdout, true, file::Access::Umask, common.deadline) else { return error };
    let why = format!("cannot write `{}`: {e}", path.display());
    if fell_back {
        common.reporter.warn(&format!("--fallback: {why}"));
        return error;
    }
    Some(Error::permanent(why))
}

/// The run's summary for the reporter's last word, and the GitHub step summary.
fn summarise(common: &Common, results: Vec<UrlResult>, error: Option<&Error>, junit: Option<&Path>) -> RunEnd {
    let (reporter, progress) = (&common.reporter, &common.progress);
    let several = results.len() > 1;
    let operation = progress.of(0).and_then(LoopProgress::operation).filter(|_| !several);
    // A --submit run that a signal ended names where its operation is, to resume the wait.
    let resumable = match (error, &operation) {
        (Some(error), Some(operation)) if error.is_signal() => Some(error.clone().hint(explain::resume(operation))),
        _ => None,
    };
    let error = resumable.as_ref().or(error);
    let code = error.map_or(0, Error::exit_code);
    // A URL the run ended first shares a signal, the deadline or the started server's exit.
    let run_wide = error.filter(|e| e.is_signal() || matches!(e.kind(), Kind::Deadline | Kind::StartExited));
    if let Some(path) = junit {
        let report = junit::render(&results, run_wide, progress.elapsed(), std::time::SystemTime::now());
        if let Err(e) = file::replace(path, report.as_bytes(), true, file::Access::Umask, common.deadline) {
            reporter.warn(&format!("cannot write the JUnit report `{}`: {e}", path.display()));
        }
    }
    if let Some(path) = summary::path(reporter.github()) {
        let run_wide = run_wide.map(Error::exit_code);
        let table = summary::render(&results, run_wide, code, progress.elapsed());
        if let Err(why) = summary::append(&path, &table, common.deadline) {
            reporter.warn(&why);
        }
    }
    let targets = several.then_some(results);
    RunEnd::of(error, targets, operation.as_deref().map(url::redact), progress.attempts())
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
fn pending(progress: &Progress, results: &[UrlResult]) -> String {
    // Still waiting at the deadline: not a URL that ended otherwise first (stalled, under --any).
    let waiting = |result: &UrlResult| match result.error() {
        Some(error) => error.kind() == Kind::Deadline,
        None => !result.is_done(),
    };
    let pending: Vec<String> = results
        .iter()
        .zip(progress.each())
        .filter(|(result, _)| waiting(result))
        .map(|(result, progress)| {
            let last = match (progress.cause(), progress.attempts()) {
                (Some(cause), _) => last_words(&cause),
                (None, 0) => "no attempt yet".to_string(),
                // Its first request is unanswered (or its body still being judged).
                (None, n) => format!("attempt {n} still running"),
            };
            format!("{} ({last})", result.url)
        })
        .collect();
    // Those that ended otherwise say how (`stalled: ...`), as their own error line would have.
    let ended: String = results
        .iter()
        .filter_map(|result| result.error().filter(|error| error.kind() != Kind::Deadline))
        .map(|error| format!("; {error}"))
        .collect();
    format!(
        "deadline reached with {} of {} URLs still pending: {} (raise --timeout to wait longer){ended}",
        pending.len(),
        results.len(),
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

/// A run that ends before its loops could run: only the reporter's last word.
pub(super) fn stopped_early(reporter: &Reporter, error: &Error) -> Ending {
    let error_line = reporter.finish(&RunEnd::of(Some(error), None, None, 0));
    let voice = (!reporter.is_json()).then(|| reporter.voice());
    let last_word = LastWord::Said { error_line, code: error.exit_code(), voice };
    Ending { stdout: Vec::new(), last_word, then: None, server: None }
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
