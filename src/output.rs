//! Everything a person or a pipeline sees: the body on stdout (or `-o`), and on
//! stderr the progress line, `-v` attempt lines, `--log-format json` events and
//! warnings, with secrets redacted. The error line itself is printed by `main`.

use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};

use crate::Probe;
use crate::config::RequestSpec;
use crate::error::Error;
use crate::policy::{Action, Outcome, Stop, Verdict, WaitReason, human};
use crate::state::Why;

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// How stderr is used for this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    pub verbose: u8,
    pub quiet: bool,
    pub log_format: LogFormat,
    pub color: ColorChoice,
    /// The `--timeout`, shown beside the elapsed time.
    pub deadline: Option<Duration>,
}

/// One attempt, as the run loop saw it.
pub struct AttemptReport<'a> {
    pub number: u32,
    pub probe: &'a Probe,
    pub outcome: &'a Outcome,
    pub action: &'a Action,
    pub elapsed: Duration,
}

/// Writes progress, attempt lines and events to stderr.
pub struct Reporter {
    style: Style,
    bar: ProgressBar,
    /// The current wait; read by the progress line's live countdown.
    wait: Arc<Mutex<Option<Wait>>>,
    is_terminal: bool,
    color: bool,
    method: String,
    url: String,
    started: Instant,
    /// The attempt in flight or last made; shared with the threads that may end
    /// the run while it is in flight (see [`EndHandle`]).
    in_flight: Arc<AtomicU32>,
    /// `--log-format json` warnings not yet printed: they ride on the next
    /// object, so that stderr holds exactly one object per attempt plus one.
    pending_warnings: Vec<String>,
    /// The last outcome in words, for the progress line.
    last: String,
}

impl Reporter {
    pub fn new(style: Style) -> Reporter {
        let is_terminal = io::stderr().is_terminal();
        let color = match style.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        };
        let wait = Arc::new(Mutex::new(None));
        let live = is_terminal && !style.quiet && style.log_format == LogFormat::Text;
        let bar = if live { progress_bar(&wait, style.deadline) } else { ProgressBar::hidden() };
        Reporter {
            style,
            bar,
            wait,
            is_terminal,
            color,
            method: String::new(),
            url: String::new(),
            started: Instant::now(),
            in_flight: Arc::new(AtomicU32::new(0)),
            pending_warnings: Vec::new(),
            last: String::new(),
        }
    }

    /// The attempt in flight or last made.
    fn attempts(&self) -> u32 {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Whether error lines may be coloured.
    pub fn color(&self) -> bool {
        self.color
    }

    /// Whether stderr carries NDJSON only.
    pub fn is_json(&self) -> bool {
        self.style.log_format == LogFormat::Json
    }

    /// Before the first attempt: `-v` shows the request, secrets redacted.
    pub fn start(&mut self, request: &RequestSpec) {
        self.method = request.method.clone();
        self.url = redact_url(&request.url);
        self.started = Instant::now();
        if self.style.verbose >= 1 && !self.is_json() {
            self.line(&format!("> {} {}", self.method, self.url));
            self.line(&format!("> User-Agent: {}", request.user_agent));
            for (name, value) in &request.headers {
                self.line(&format!("> {name}: {}", redact_header(name, value)));
            }
        }
    }

    /// A request is on its way.
    pub fn in_flight(&mut self, number: u32) {
        self.in_flight.store(number, Ordering::SeqCst);
        if self.bar.is_hidden() {
            return; // Nothing to draw: tight polling pays for no formatting.
        }
        self.set_wait(None);
        let last = if self.last.is_empty() { String::new() } else { format!(" · last: {}", self.last) };
        self.bar.set_message(format!("attempt {number}{last} · sending request"));
    }

    /// Attempt `number` waits `after` for its turn: its `--rate` slot, or the
    /// server's advice kept in `--state`, which `-v` names since no reply of
    /// this run asked for it.
    pub fn queued(&mut self, number: u32, after: Duration, why: Why) {
        let shown = match why {
            Why::Rate => " (--rate)",
            Why::NotBefore => " (server advice in --state)",
            Why::Nothing => "",
        };
        self.set_wait(Some(Wait { until: Instant::now() + after, what: "next attempt", why: shown.into() }));
        if why == Why::NotBefore && self.style.verbose >= 1 && !self.is_json() {
            self.line(&format!("attempt {number}: waits {} for {}", human(after), why.describe()));
        }
    }

    /// An attempt finished and the policy decided.
    pub fn attempt(&mut self, report: &AttemptReport) {
        if self.bar.is_hidden() && self.style.verbose == 0 && !self.is_json() {
            return;
        }
        self.last = describe(report);
        if self.is_json() {
            self.event(attempt_event(report, &self.method, &self.url, self.started.elapsed()));
            return;
        }
        if self.style.verbose >= 1 {
            let latency = human(report.probe.latency);
            self.line(&format!("attempt {}: {} in {latency} -> {}", report.number, self.last, decision(report.action)));
            if self.style.verbose >= 2
                && let Ok(reply) = &report.probe.result
            {
                for (name, value) in &reply.headers {
                    let value = if name.eq_ignore_ascii_case("location") {
                        redact_url(value)
                    } else {
                        redact_header(name, value).to_string()
                    };
                    self.line(&format!("< {name}: {}", printable(&value)));
                }
            }
        }
        if let Action::Poll { after, reason } | Action::Retry { after, reason } = report.action {
            let what = match report.action {
                Action::Poll { .. } => "next poll",
                _ => "retrying",
            };
            let why = match reason {
                WaitReason::Interval => String::new(),
                other => format!(" ({other})"),
            };
            self.set_wait(Some(Wait { until: Instant::now() + *after, what, why }));
            self.bar.set_message(format!("attempt {} · {}", report.number, self.last));
        }
    }

    /// A warning, such as a jq runtime error; shown once by the caller's choice.
    pub fn warn(&mut self, message: &str) {
        if self.is_json() {
            self.pending_warnings.push(message.to_string());
        } else if !self.style.quiet {
            let prefix = self.paint("warning:", "33");
            self.line(&format!("poll: {prefix} {}", printable(message)));
        }
    }

    /// The run is over: clear the progress line and leave one summary.
    pub fn finish(&mut self, result: &Result<Vec<u8>, Error>) {
        self.bar.finish_and_clear();
        let elapsed = self.started.elapsed();
        if self.is_json() {
            let (code, reason, message) = match result {
                Ok(_) => (0, "done", None),
                Err(e) => (e.exit_code(), e.reason(), Some(e.to_string())),
            };
            self.event(done_event(self.attempts(), elapsed, code, reason, message));
            return;
        }
        let show_summary = !self.style.quiet && (self.is_terminal || self.style.verbose >= 1);
        if show_summary && let Ok(_) | Err(Error::FailWhen(_)) = result {
            let attempts = self.attempts();
            let plural = if attempts == 1 { "" } else { "s" };
            let what = if result.is_ok() { "done" } else { "--fail-when matched" };
            self.line(&format!("poll: {what} after {attempts} attempt{plural} in {}", human(elapsed)));
        }
    }

    /// The error line printed by `main`, coloured when allowed.
    pub fn error_line(&self, error: &Error) -> Option<String> {
        (!self.is_json()).then(|| error_line(error, self.color))
    }

    /// What another thread needs to end the run while the main thread is
    /// blocked in an attempt (a request, a jq filter) and cannot return.
    pub fn end_handle(&self) -> EndHandle {
        EndHandle {
            bar: self.bar.clone(),
            in_flight: Arc::clone(&self.in_flight),
            json: self.is_json(),
            color: self.color,
            started: Instant::now(),
        }
    }

    fn set_wait(&self, wait: Option<Wait>) {
        *self.wait.lock().unwrap_or_else(PoisonError::into_inner) = wait;
    }

    fn paint(&self, text: &str, code: &str) -> String {
        paint(text, code, self.color)
    }

    fn line(&self, text: &str) {
        self.bar.suspend(|| {
            let _ = writeln!(io::stderr().lock(), "{text}");
        });
    }

    fn event(&mut self, mut value: Value) {
        if !self.pending_warnings.is_empty() {
            value["warnings"] = json!(std::mem::take(&mut self.pending_warnings));
        }
        let _ = writeln!(io::stderr().lock(), "{value}");
    }
}

fn paint(text: &str, code: &str, color: bool) -> String {
    if color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
}

fn error_line(error: &Error, color: bool) -> String {
    format!("poll: {} {}", paint("error:", "31", color), printable(&error.to_string()))
}

/// Text from outside (a body, a header, a typed flag) with its control
/// characters escaped (`\u{1b}`, `\r`): it can neither break a line apart
/// nor send escape sequences to the terminal.
pub fn printable(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() }).collect()
}

/// The final `--log-format json` object.
fn done_event(attempts: u32, elapsed: Duration, exit_code: u8, reason: &str, message: Option<String>) -> Value {
    json!({
        "event": "done",
        "ts": now_rfc3339(),
        "elapsed_ms": elapsed.as_millis() as u64,
        "attempts": attempts,
        "exit_code": exit_code,
        "reason": reason,
        "message": message,
    })
}

/// Ends the run from another thread with the same last line `main` would print.
#[derive(Clone)]
pub struct EndHandle {
    bar: ProgressBar,
    in_flight: Arc<AtomicU32>,
    json: bool,
    color: bool,
    started: Instant,
}

impl EndHandle {
    /// The attempt in flight.
    pub fn attempts(&self) -> u32 {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Clears the progress line, prints the ending and exits with its code.
    pub fn end(&self, error: Error) -> ! {
        self.bar.finish_and_clear();
        let line = if self.json {
            let message = Some(error.to_string());
            done_event(self.attempts(), self.started.elapsed(), error.exit_code(), error.reason(), message).to_string()
        } else {
            error_line(&error, self.color)
        };
        let _ = writeln!(io::stderr().lock(), "{line}");
        std::process::exit(error.exit_code().into());
    }
}

/// A wait between attempts, as the progress line shows it.
struct Wait {
    until: Instant,
    /// "next poll" or "retrying".
    what: &'static str,
    /// " (Retry-After)" and the like; empty for the interval.
    why: String,
}

/// The live progress line: `⠋ attempt 3 · 503 · retrying in 1.6s (backoff) · 4.2s / 5m`.
/// `{wait}` counts down the current wait; `{clock}` is the elapsed time against the deadline.
fn progress_bar(wait: &Arc<Mutex<Option<Wait>>>, deadline: Option<Duration>) -> ProgressBar {
    let wait = Arc::clone(wait);
    let started = Instant::now();
    let of = deadline.map(|d| format!(" / {}", human(d))).unwrap_or_default();
    let style = ProgressStyle::with_template("{spinner} {msg}{wait} · {clock}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .with_key("wait", move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            if let Some(wait) = wait.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
                let left = wait.until.saturating_duration_since(Instant::now());
                let _ = write!(w, " · {} in {:.1}s{}", wait.what, left.as_secs_f64(), wait.why);
            }
        })
        .with_key("clock", move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.1}s{of}", started.elapsed().as_secs_f64());
        });
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(style);
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// The outcome in a few words: `200 pending`, `503`, `connection refused`.
fn describe(report: &AttemptReport) -> String {
    let shown = report.probe.judgement.as_ref().and_then(|j| j.shown.as_deref());
    let mut text = match (&report.probe.result, report.outcome) {
        (Err(fault), _) => fault.failure.to_string(),
        (Ok(reply), Outcome::Success { verdict, .. }) => {
            let word = match verdict {
                Verdict::Met => "done",
                Verdict::FailWhen => "failed",
                Verdict::NotMet => "pending",
                Verdict::NotJson => "not JSON",
            };
            format!("{} {word}", reply.status)
        }
        (Ok(reply), _) => reply.status.to_string(),
    };
    if let Some(shown) = shown {
        text.push_str(&format!(" · {}", printable(&shorten(shown))));
    }
    text
}

fn decision(action: &Action) -> String {
    match action {
        Action::Done => "done".into(),
        Action::FailWhen => "stop (--fail-when matched)".into(),
        Action::Poll { after, reason } => format!("poll again in {} ({reason})", human(*after)),
        Action::Retry { after, reason } => format!("retry in {} ({reason})", human(*after)),
        Action::Stop(stop) => format!("stop ({})", stop_name(stop)),
    }
}

fn stop_name(stop: &Stop) -> &'static str {
    match stop {
        Stop::Permanent { .. } => "permanent",
        Stop::BudgetSpent { .. } => "retries spent",
        Stop::NotRetryable { .. } => "not retryable",
        Stop::WaitTooLong { .. } => "wait too long",
        Stop::Deadline { .. } => "deadline",
    }
}

fn attempt_event(report: &AttemptReport, method: &str, url: &str, elapsed: Duration) -> Value {
    let mut event = json!({
        "event": "attempt",
        "attempt": report.number,
        "ts": now_rfc3339(),
        "elapsed_ms": elapsed.as_millis() as u64,
        "method": method,
        "url": url,
        "latency_ms": report.probe.latency.as_millis() as u64,
    });
    let fields = &mut event;
    match &report.probe.result {
        Ok(reply) => fields["status"] = json!(reply.status),
        Err(fault) => {
            fields["error"] = json!(fault.detail);
            fields["error_kind"] = json!(fault.failure.kind());
        }
    }
    if let Outcome::Success { verdict, .. } = report.outcome {
        let has_errors = report.probe.judgement.as_ref().is_some_and(|j| !j.errors.is_empty());
        fields["condition"] = json!(match verdict {
            Verdict::Met => "met",
            Verdict::FailWhen => "failed",
            Verdict::NotMet if has_errors => "error",
            Verdict::NotMet => "not_met",
            Verdict::NotJson => "error",
        });
        if *verdict == Verdict::NotJson {
            fields["error_kind"] = json!("not_json");
        }
    }
    if let Some(shown) = report.probe.judgement.as_ref().and_then(|j| j.shown.as_ref()) {
        fields["show"] = json!(shown);
    }
    let (action, wait) = match report.action {
        Action::Done | Action::FailWhen => ("done", None),
        Action::Poll { after, reason } => ("poll", Some((after, reason))),
        Action::Retry { after, reason } => ("retry", Some((after, reason))),
        Action::Stop(_) => ("stop", None),
    };
    fields["action"] = json!(action);
    if let Some((after, reason)) = wait {
        fields["wait_ms"] = json!(after.as_millis() as u64);
        fields["wait_reason"] = json!(reason.name());
    }
    event
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// `text` cut to its first 60 characters, so that a long value (a `--show`
/// output, a 4 KiB filter) keeps its line readable.
pub fn shorten(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Header values that are secrets: the contract's four, plus names that say so.
fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(name.as_str(), "authorization" | "proxy-authorization" | "cookie" | "set-cookie")
        || ["token", "secret", "api-key", "apikey", "password"].iter().any(|word| name.contains(word))
}

/// A header value for display.
pub fn redact_header<'a>(name: &str, value: &'a str) -> &'a str {
    if is_secret_header(name) { "<redacted>" } else { value }
}

/// The URL for display: userinfo and the values of secret-looking query keys redacted.
pub fn redact_url(url: &str) -> String {
    let url = crate::config::redact_userinfo(url);
    let Some((base, query)) = url.split_once('?') else { return url };
    let secret = |key: &str| {
        let key = key.to_ascii_lowercase();
        ["token", "key", "secret", "password", "passwd", "pwd", "auth", "signature", "sig", "credential", "session"]
            .iter()
            .any(|word| key.contains(word))
    };
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if secret(key) => format!("{key}=<redacted>"),
            _ => pair.to_string(),
        })
        .collect();
    format!("{base}?{}", query.join("&"))
}

/// Writes the final body to stdout, or atomically to `file` (temp file + rename).
/// A closed stdout (`poll URL | head -c1`) is not an error.
pub fn write_body(body: &[u8], file: Option<&Path>) -> Result<(), Error> {
    let Some(file) = file else {
        let mut stdout = io::stdout().lock();
        return match stdout.write_all(body).and_then(|()| stdout.flush()) {
            Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
                Err(Error::Permanent(format!("cannot write the body to stdout: {e}")))
            }
            _ => Ok(()),
        };
    };
    let failed = |e: io::Error| Error::Permanent(format!("cannot write `{}`: {e}", file.display()));
    let folder = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = folder.join(format!(".{name}.poll-{}.tmp", std::process::id()));
    let written = std::fs::File::create(&temp).and_then(|mut f| {
        f.write_all(body)?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&temp, file)) {
        let _ = std::fs::remove_file(&temp);
        return Err(failed(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_redacted() {
        assert_eq!(
            redact_url("http://h/p?a=1&token=abc&api_key=k"),
            "http://h/p?a=1&token=<redacted>&api_key=<redacted>"
        );
        assert_eq!(redact_url("https://bob:pw@h/x"), "https://<redacted>@h/x");
        assert_eq!(redact_url("http://h/plain"), "http://h/plain");
    }

    #[test]
    fn secret_headers_are_redacted() {
        for name in ["Authorization", "proxy-authorization", "Cookie", "SET-COOKIE", "X-Auth-Token", "X-Api-Key"] {
            assert_eq!(redact_header(name, "s3cret"), "<redacted>", "{name}");
        }
        assert_eq!(redact_header("Accept", "application/json"), "application/json");
    }
}
