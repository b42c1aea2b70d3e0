//! The dispatch of what a run tells on stderr: each loop's attempts, waits
//! and details go to its live line (`live.rs`), its `-v` lines, or the JSON
//! log (`log.rs`), warnings and the final error line in the run's voice
//! (`voice.rs`), all with secrets redacted and written from many threads
//! through one sink. It writes no file and ends no process: `main` prints
//! the line rendered here, and the body.

use std::io::{self, IsTerminal, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use indicatif::MultiProgress;
use serde_json::{Value, json};

use crate::error::{DONE, Kind};
use crate::http::request::Request;
use crate::report::live::{self, Live};
use crate::report::log;
use crate::report::progress::LoopProgress;
use crate::report::record::Record;
use crate::report::result::RunEnd;
use crate::report::voice::{self, Voice};
use crate::rules::attempt::Outcome;
use crate::rules::condition::JqError;
use crate::rules::operation;
use crate::rules::policy::{Action, Stop, WaitReason};
use crate::util::sync::lock;
use crate::util::text::{count, human, json_line, printable};
use crate::util::url;

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// How stderr is used for this run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Style {
    pub verbose: u8,
    pub quiet: bool,
    /// `--log-format json`: NDJSON only.
    pub json: bool,
    pub color: ColorChoice,
    /// GitHub Actions workflow commands (`--ci github`, or `GITHUB_ACTIONS=true`).
    pub github: bool,
    /// GitLab CI collapsed sections around `-v` lines (`--ci gitlab`, or `GITLAB_CI=true`).
    pub gitlab: bool,
    /// The `--timeout`, shown beside the elapsed time.
    pub deadline: Option<Duration>,
    /// The variables that set an option (`POLL_TIMEOUT`), which `-v` names.
    pub from_environment: Vec<String>,
    /// The variables set but ignored, each with why (`POLL_QUIET (the command line gives --verbose)`), which `-v` names.
    pub ignored_environment: Vec<String>,
    /// What the configuration warns of (a private key others may read), said when the run starts.
    pub warnings: Vec<String>,
}

/// Writes progress, attempt lines and the JSON log's objects to stderr, for every loop of
/// the run (each loop is a target, numbered from 0).
pub(crate) struct Reporter {
    style: Style,
    voice: Voice,
    is_terminal: bool,
    multi: MultiProgress,
    started: Instant,
    targets: Vec<TargetView>,
    /// `--idempotency-key`, when requests carry it (every one but status polls).
    idempotency_key: Option<String>,
    /// Everything written from more than one thread goes through here.
    out: Mutex<Sink>,
}

/// What the reporter knows of one URL's loop.
struct TargetView {
    /// The URL as given, redacted.
    url: String,
    /// Its progress line.
    live: Live,
    /// The attempt in flight was refused (401) and sent again with a new `--auth-cmd` token.
    reauthenticated: AtomicBool,
}

#[derive(Default)]
struct Sink {
    /// After [`Reporter::finish`], loops still running write nothing more.
    closed: bool,
    /// [`Reporter::settle`] ran.
    settled: bool,
    /// `--log-format json` warnings not yet printed: they ride on the next
    /// object, so that stderr holds exactly one object per attempt plus one.
    pending_warnings: Vec<String>,
    /// GitHub `-v` groups (GitLab sections) of several URLs, their opening
    /// line first, buffered until the URL ends so that groups never
    /// interleave; `None` once flushed.
    groups: Vec<Option<Vec<String>>>,
    /// `groups` are in use: a line of a group already flushed (a loop still
    /// writing as the run ends at the deadline) is dropped, not written
    /// outside every group.
    grouped: bool,
    /// The filters (by flag) whose jq runtime error has been warned of.
    jq_failed: Vec<&'static str>,
}

impl Reporter {
    /// A reporter for loops on `targets` (their URLs as given).
    /// A reporter for the URLs `shown` (as every output shows them, redacted).
    pub(crate) fn new(style: Style, shown: &[&str], idempotency_key: Option<String>) -> Reporter {
        let is_terminal = io::stderr().is_terminal();
        let color = match style.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        };
        let live = is_terminal && !style.quiet && !style.json;
        let multi = live::lines(live);
        let several = shown.len() > 1;
        let targets: Vec<TargetView> = shown
            .iter()
            .map(|url| {
                let prefix = if several { format!("{url} · ") } else { String::new() };
                let live = Live::new(&multi, live, style.deadline, prefix);
                TargetView { url: url.to_string(), live, reauthenticated: AtomicBool::new(false) }
            })
            .collect();
        let buffered = (style.github || style.gitlab) && style.verbose >= 1 && several;
        let groups = targets.iter().map(|_| buffered.then(Vec::new)).collect();
        let out = Sink { groups, grouped: buffered, ..Sink::default() };
        let warnings = style.warnings.clone();
        let reporter = Reporter {
            voice: Voice { color, github: style.github },
            style,
            is_terminal,
            multi,
            started: Instant::now(),
            targets,
            idempotency_key,
            out: Mutex::new(out),
        };
        for warning in &warnings {
            reporter.warn(warning);
        }
        reporter
    }

    /// Loop `t`'s reporter, which also keeps its `progress`.
    pub(crate) fn for_loop<'a>(&'a self, t: usize, progress: &'a LoopProgress) -> LoopReporter<'a> {
        LoopReporter { reporter: self, progress, t }
    }

    /// How the final error line is to be written.
    pub(crate) fn voice(&self) -> Voice {
        self.voice
    }

    /// Whether stderr carries NDJSON only.
    pub(crate) fn is_json(&self) -> bool {
        self.style.json
    }

    fn several(&self) -> bool {
        self.targets.len() > 1
    }

    fn verbose_text(&self) -> bool {
        self.style.verbose >= 1 && !self.style.json
    }

    /// Whether the run is in GitHub Actions (`--ci github`, `GITHUB_ACTIONS=true`).
    pub(crate) fn github(&self) -> bool {
        self.style.github
    }

    /// Before loop `t`'s first attempt: `-v` opens its group (a CI's fold)
    /// and, for the first loop, names the variables read and ignored.
    fn open(&self, t: usize) {
        if !self.verbose_text() {
            return;
        }
        // With several URLs the opening line is buffered with the URL's lines (see `ended`).
        if let Some(open) = self.fold_open(t) {
            self.line(t, &open);
        }
        let named = self.named(t);
        if t == 0 && !self.style.from_environment.is_empty() {
            self.line(t, &format!("{named}settings from the environment: {}", self.style.from_environment.join(", ")));
        }
        if t == 0 && !self.style.ignored_environment.is_empty() {
            let ignored = self.style.ignored_environment.join(", ");
            self.line(t, &format!("{named}ignored from the environment: {ignored}"));
        }
    }

    /// Before loop `t`'s first attempt at an HTTP target: `-v` opens its
    /// group and shows the request, secrets redacted.
    fn start(&self, t: usize, request: &Request, user_agent: &str, proxy: Option<&str>) {
        if !self.verbose_text() {
            return;
        }
        self.open(t);
        let named = self.named(t);
        self.line(t, &format!("{named}> {} {}", request.method, url::redact(&request.url)));
        self.line(t, &format!("{named}> User-Agent: {}", printable(user_agent)));
        for (name, value) in request.headers.iter() {
            // The idempotency key shows whatever its header is called: it is needed to re-run.
            let shown =
                if self.idempotency_key.as_deref() == Some(value) { value } else { url::redact_header(name, value) };
            self.line(t, &format!("{named}> {name}: {}", printable(shown)));
        }
        if let Some(proxy) = proxy {
            self.line(t, &format!("{named}proxy: {}", printable(proxy)));
        }
    }

    /// Loop `t` sends attempt `number`; the progress line names what the last one saw.
    fn sending(&self, t: usize, number: u32, progress: &LoopProgress) {
        let Some(target) = self.targets.get(t) else { return };
        if target.live.bar.is_hidden() {
            return; // Nothing to draw: tight polling pays for no formatting.
        }
        target.live.busy();
        let last = progress.last().map(|last| format!(" · last: {last}")).unwrap_or_default();
        target.live.bar.set_message(format!("attempt {number}{last} · sending request"));
    }

    /// Attempt `number` of loop `t` waits `wait` for its turn: its `--rate`
    /// slot, or the server's advice kept in `--state`, which `-v` names since
    /// no reply of this run asked for it.
    fn queued(&self, t: usize, number: u32, wait: Duration, why: WaitReason, learned: Option<f64>) {
        let Some(target) = self.targets.get(t) else { return };
        let shown = match (why, learned) {
            (WaitReason::StoredAdvice, _) => " (server advice in --state)".to_string(),
            (WaitReason::Rate, Some(rate)) => format!(" (rate {}, learned)", per_second(rate)),
            (other, _) => format!(" ({other})"),
        };
        target.live.waits(wait, "next attempt", shown);
        if !self.verbose_text() {
            return;
        }
        let line = match (why, learned) {
            // Only a --paginate walk waits for a reset between requests of one attempt: a page said none is left.
            (WaitReason::StoredAdvice | WaitReason::RateLimitReset, _) => format!("waits {} for {why}", human(wait)),
            (WaitReason::Rate, Some(rate)) => {
                format!("waits {} for its turn (rate {}, learned)", human(wait), per_second(rate))
            }
            _ => return,
        };
        self.line(t, &format!("{}attempt {number}: {line}", self.named(t)));
    }

    /// A detail of loop `t` that `-v` shows, such as a state store left alone.
    fn detail(&self, t: usize, message: &str) {
        if self.verbose_text() {
            self.line(t, &format!("{}{message}", self.named(t)));
        }
    }

    /// `--paginate`: page `page` of attempt `number` of loop `t`, at `url`,
    /// came back as `words` after `latency`; the progress line follows the walk.
    fn page(&self, t: usize, number: u32, page: u32, url: &str, words: &str, latency: Duration) {
        let Some(target) = self.targets.get(t) else { return };
        if !target.live.bar.is_hidden() {
            target.live.bar.set_message(format!("attempt {number} · page {page} · {words}"));
        }
        if self.verbose_text() {
            let (named, latency, url) = (self.named(t), human(latency), printable(&url::redact(url)));
            self.line(t, &format!("{named}attempt {number} · page {page}: {words} in {latency} · {url}"));
        }
    }

    /// `--submit`: loop `t` now polls the operation's status at `url`.
    fn operation_at(&self, t: usize, url: &str) {
        if self.verbose_text() {
            self.line(t, &format!("{}operation: {}", self.named(t), url::redact(url)));
        }
    }

    /// `--watch`: loop `t`'s request to `url` is answered with a stream.
    fn watching(&self, t: usize, url: &str) {
        if self.verbose_text() {
            self.line(t, &format!("{}watching {}", self.named(t), url::redact(url)));
        }
    }

    /// `--watch`: loop `t` judged event `n` (of SSE type `kind`, with `id`) in `record`.
    fn event(&self, t: usize, n: u32, kind: Option<&str>, id: Option<&str>, record: &Record) {
        let Some(target) = self.targets.get(t) else { return };
        let shown = record.judgement.as_ref().and_then(|j| j.shown.as_deref());
        let shown = shown.map(|shown| format!(" {}", printable(&crate::util::text::shorten(shown))));
        if self.style.json {
            let mut object = log::event_object(n, kind, id, record, self.started.elapsed());
            if self.several() {
                object["target"] = json!(t);
            }
            self.log_object(object);
        } else if self.style.verbose >= 1 {
            let named =
                [kind.map(|kind| format!("type {}", printable(kind))), id.map(|id| format!("id {}", printable(id)))];
            let named: Vec<String> = named.into_iter().flatten().collect();
            let named = if named.is_empty() { String::new() } else { format!(" ({})", named.join(", ")) };
            let verdict = match &record.action {
                Action::Poll { .. } | Action::Stop(Stop::Deadline { .. }) if record.held.is_some() => {
                    record.held.map(|(held, of)| format!("met, {held} of {of}")).unwrap_or_default()
                }
                Action::Poll { .. } | Action::Stop(Stop::Deadline { .. }) => "not yet".to_string(),
                _ => decision(record),
            };
            let line = format!("{}event {n}{named}{} -> {verdict}", self.named(t), shown.clone().unwrap_or_default());
            self.line(t, &line);
        }
        target.live.bar.set_message(format!("attempt {} · {n} events{}", record.number, shown.unwrap_or_default()));
    }

    /// An attempt of loop `t` sent `request`, and the policy decided; under
    /// `--watch`, a stream that ended names what the next request resumes with (`resume`).
    fn attempt(&self, t: usize, request: &Request, record: &Record, resume: Option<&str>) {
        let Some(target) = self.targets.get(t) else { return };
        if target.live.bar.is_hidden() && self.style.verbose == 0 && !self.style.json {
            return;
        }
        let summary = match record.pages {
            Some(pages) => format!("{} ({})", record.summary(), count(pages, "page")),
            None => record.summary(),
        };
        if self.style.json {
            let url = url::redact(&request.url);
            let method = if record.port.is_some() { None } else { Some(request.method.as_str()) };
            let mut object = log::attempt_object(record, method, &url, self.started.elapsed());
            if self.several() {
                object["target"] = json!(t);
            }
            if let (Some(key), true) = (&self.idempotency_key, record.phase.sends_the_key()) {
                object["idempotency_key"] = json!(key);
            }
            if target.reauthenticated.swap(false, Ordering::SeqCst) {
                object["reauthenticated"] = json!(true);
            }
            self.log_object(object);
        } else if self.style.verbose >= 1 {
            let latency = human(record.latency);
            let line = match (&record.outcome, &record.action) {
                // A port: what was connected to, and what happened, where a reply's status would be.
                _ if record.port.is_some() => {
                    let port = record.port.as_ref().map(|p| format!("{} {} {}", p.scheme, p.address, p.words));
                    // `--stable`: open, but not yet often enough in a row, as an HTTP line's "met, 1 of 3".
                    let held = record.held.map(|(held, of)| format!(", {held} of {of}")).unwrap_or_default();
                    format!("{}{held} in {latency} -> {}", port.unwrap_or_default(), decision(record))
                }
                (Outcome::StreamEnded { .. }, Action::Poll { after, .. }) => {
                    let when = if after.is_zero() { String::new() } else { format!(" in {}", human(*after)) };
                    let resume = resume.map(|resume| format!(" ({resume})")).unwrap_or_default();
                    format!("{summary} after {latency}, asking again{when}{resume}")
                }
                // An etcd watch's read of the current state, not yet: the watch follows at once.
                (Outcome::Success { .. }, Action::Poll { after, .. }) if after.is_zero() => match resume {
                    Some(resume) => format!("{summary} in {latency} -> watching from {resume}"),
                    None => format!("{summary} in {latency} -> {}", decision(record)),
                },
                _ => format!("{summary} in {latency} -> {}", decision(record)),
            };
            self.line(t, &format!("{}attempt {}: {line}", self.named(t), record.number));
            if let (true, Ok(reply)) = (self.style.verbose >= 2, &record.reply) {
                for (name, value) in reply.headers.iter() {
                    let value = if operation::names_an_operation(name) {
                        url::redact(value)
                    } else {
                        url::redact_header(name, value).to_string()
                    };
                    self.line(t, &format!("{}< {name}: {}", self.named(t), printable(&value)));
                }
            }
        }
        if let Action::Poll { after, reason }
        | Action::Retry { after, reason }
        | Action::HeldBack { after, reason, .. } = &record.action
        {
            let what = if matches!(record.action, Action::Retry { .. }) { "retrying" } else { "next poll" };
            let why = match reason {
                WaitReason::Interval => String::new(),
                other => format!(" ({other})"),
            };
            target.live.waits(*after, what, why);
            target.live.bar.set_message(format!("attempt {} · {summary}", record.number));
        } else {
            // This loop is over: its line stops and says how, while other URLs' lines go on.
            target.live.bar.finish_with_message(format!("attempt {} · {summary}", record.number));
        }
    }

    /// Loop `t` had `--auth-cmd` make a token. In GitHub Actions a `new`
    /// one is masked first (`::add-mask::TOKEN`, whatever `-q` or
    /// `--log-format` say), so that the runner hides it in every log; `-v`
    /// then says when it expires, never what it is.
    fn token(&self, t: usize, token: &str, expires: Option<SystemTime>, new: bool) {
        if self.style.github && new {
            let line = voice::add_mask(token);
            self.multi.suspend(|| {
                let _ = writeln!(io::stderr().lock(), "{line}");
            });
        }
        if self.verbose_text() {
            let expires =
                expires.map_or(String::new(), |at| format!(", expires {}", humantime::format_rfc3339_seconds(at)));
            self.line(t, &format!("{}token: made by --auth-cmd{expires}", self.named(t)));
        }
    }

    /// Attempt `number` of loop `t` got a 401 after `latency`: the token is
    /// made again and the attempt sent again at once (no retry). `-v` says
    /// so; the JSON attempt object of the re-sent attempt has `"reauthenticated": true`.
    fn reauthenticated(&self, t: usize, number: u32, latency: Duration) {
        let Some(target) = self.targets.get(t) else { return };
        target.reauthenticated.store(true, Ordering::SeqCst);
        if self.verbose_text() {
            let latency = human(latency);
            let line = format!(
                "{}attempt {number}: 401 in {latency} -> new token (--auth-cmd), sent again at once",
                self.named(t)
            );
            self.line(t, &line);
        }
    }

    /// A line of the run as a whole that `-v` shows (`--start`'s server), under no URL.
    pub(crate) fn note(&self, message: &str) {
        if self.verbose_text() {
            self.write(&format!("poll: {message}"));
        }
    }

    /// A warning, such as a jq runtime error; shown once by the caller's choice.
    pub(crate) fn warn(&self, message: &str) {
        if self.style.json {
            lock(&self.out).pending_warnings.push(message.to_string());
        } else if !self.style.quiet {
            self.write(&self.voice.warning_line(message));
        }
    }

    /// A jq runtime error, warned of the first time its filter fails in this
    /// run only: a filter that fails on every body is one line, not one per
    /// attempt (nor per URL). The run's final line names the last one.
    pub(crate) fn jq_error(&self, error: &JqError) {
        let mut out = lock(&self.out);
        if out.jq_failed.contains(&error.flag()) {
            return;
        }
        out.jq_failed.push(error.flag());
        drop(out);
        self.warn(error);
    }

    /// Loop `t` is over: its buffered GitHub group (GitLab section) is written out whole.
    pub(crate) fn ended(&self, t: usize) {
        let mut out = lock(&self.out);
        let Some(lines) = out.groups.get_mut(t).and_then(Option::take) else { return };
        // Its opening line alone is no group.
        if out.closed || lines.len() <= 1 {
            return;
        }
        let text = format!("{}\n{}", lines.join("\n"), self.fold_close(t));
        self.multi.suspend(|| {
            let _ = writeln!(io::stderr().lock(), "{text}");
        });
    }

    /// The run is over, before its body goes to stdout: the progress lines
    /// are cleared (so the body never lands in one), `-v`'s groups closed,
    /// and a run that ends with its answer says how, on a terminal or with
    /// `-v` (the others have their error line, after stdout).
    pub(crate) fn settle(&self, summary: &RunEnd) {
        let settled = std::mem::replace(&mut lock(&self.out).settled, true);
        if settled {
            return;
        }
        for t in 0..self.targets.len() {
            self.ended(t);
        }
        let _ = self.multi.clear();
        for target in &self.targets {
            target.live.bar.finish_and_clear();
        }
        if (self.style.github || self.style.gitlab) && self.verbose_text() && !self.several() {
            self.write(&self.fold_close(0));
        }
        let show_summary = !self.style.json && !self.style.quiet && (self.is_terminal || self.style.verbose >= 1);
        if show_summary && (summary.row == DONE || summary.row == Kind::FailWhen.row()) {
            let attempts = count(summary.attempts, "attempt");
            let elapsed = human(self.started.elapsed());
            self.write(&format!("poll: {} after {attempts} in {elapsed}", summary.row.words));
        }
    }

    /// The run is over and its body written: the JSON log's final object,
    /// and the error line rendered for `main` to print. Loops still running
    /// write nothing after this.
    pub(crate) fn finish(&self, summary: &RunEnd) -> Option<String> {
        self.settle(summary);
        let elapsed = self.started.elapsed();
        if self.style.json {
            let object = log::final_object(summary, elapsed, self.idempotency_key.as_deref());
            // Written and closed under one lock: a loop still running cannot slip a line in after it.
            self.emit(object, true);
            return None;
        }
        lock(&self.out).closed = true;
        summary.message.as_deref().map(|message| self.voice.error_line(message))
    }

    /// The line that opens loop `t`'s `-v` lines in the CI's log, if it folds them.
    fn fold_open(&self, t: usize) -> Option<String> {
        let url = self.targets.get(t).map(|target| target.url.as_str()).unwrap_or_default();
        voice::fold_open(self.style.github, self.style.gitlab, t, url)
    }

    /// The line that closes what [`Reporter::fold_open`] opened.
    fn fold_close(&self, t: usize) -> String {
        voice::fold_close(self.style.github, self.style.gitlab, t)
    }

    /// `[url] ` before a line of loop `t`, when there are several.
    fn named(&self, t: usize) -> String {
        match self.targets.get(t) {
            Some(target) if self.several() => format!("[{}] ", target.url),
            _ => String::new(),
        }
    }

    /// A line of loop `t`: buffered in its GitHub group, or written now.
    fn line(&self, t: usize, text: &str) {
        let mut out = lock(&self.out);
        if out.closed {
            return;
        }
        let grouped = out.grouped;
        match out.groups.get_mut(t) {
            Some(Some(group)) => {
                group.push(text.to_string());
                return;
            }
            Some(None) if grouped => return,
            _ => {}
        }
        drop(out);
        self.write(text);
    }

    fn write(&self, text: &str) {
        let out = lock(&self.out);
        if out.closed {
            return;
        }
        self.multi.suspend(|| {
            let _ = writeln!(io::stderr().lock(), "{text}");
        });
    }

    /// One object of the JSON log, not the last.
    fn log_object(&self, object: Value) {
        self.emit(object, false);
    }

    /// One JSON line, with the warnings waiting for it; `last`: nothing follows it.
    fn emit(&self, mut value: Value, last: bool) {
        let mut out = lock(&self.out);
        if out.closed {
            return;
        }
        out.closed = last;
        if !out.pending_warnings.is_empty() {
            value["warnings"] = json!(std::mem::take(&mut out.pending_warnings));
        }
        // The server's text in it escaped as the text reporter escapes it, in JSON's own way.
        let _ = writeln!(io::stderr().lock(), "{}", json_line(&value));
    }
}

/// What the policy decided, in words; a status only `--done-on` or `--fail-on` can have ended the run says so.
fn decision(record: &Record) -> String {
    let listed = matches!(record.outcome, Outcome::Status { .. });
    match &record.action {
        Action::Done if listed => "done (--done-on)".into(),
        Action::Done if matches!(record.outcome, Outcome::Failed(_)) => "done (--done-on refused)".into(),
        Action::Done => "done".into(),
        Action::FailWhen if listed => "stop (--fail-on)".into(),
        Action::FailWhen => "stop (--fail-when matched)".into(),
        Action::Poll { after, reason } => format!("poll again in {} ({reason})", human(*after)),
        Action::Retry { after, reason } => format!("retry in {} ({reason})", human(*after)),
        Action::HeldBack { after, reason, counts } => format!(
            "retry held back (retry budget: {} retries of {} requests in {}s); next poll in {} ({reason})",
            counts.retries,
            counts.requests + counts.retries,
            crate::rules::budget::WINDOW_SECS,
            human(*after)
        ),
        Action::Stop(stop) => format!("stop ({})", stop.name()),
    }
}

/// A rate as `-v` shows it: `7.1/s`.
fn per_second(rate: f64) -> String {
    format!("{:.1}/s", rate)
}

/// One loop's reporter: what the loop tells goes to its progress line, its
/// `-v` lines and JSON objects, and into its [`LoopProgress`], which the
/// run's ending reads. Each loop holds this one handle.
pub(crate) struct LoopReporter<'a> {
    reporter: &'a Reporter,
    progress: &'a LoopProgress,
    t: usize,
}

impl LoopReporter<'_> {
    /// Before the first attempt at a port: `-v` opens the loop's group (it has no request to show).
    pub(crate) fn open(&self) {
        self.reporter.open(self.t);
    }

    /// Before the first attempt: `-v` shows the request, secrets redacted.
    pub(crate) fn start(&self, request: &Request, user_agent: &str, proxy: Option<&str>) {
        self.reporter.start(self.t, request, user_agent, proxy);
    }

    /// Attempt `number` goes out; the progress line names what the last one saw.
    pub(crate) fn sending(&self, number: u32) {
        self.progress.sending(number);
        self.reporter.sending(self.t, number, self.progress);
    }

    /// Attempt `number` waits `wait` for its turn (`--rate`, or advice kept in `--state`).
    pub(crate) fn queued(&self, number: u32, wait: Duration, why: WaitReason, learned: Option<f64>) {
        self.reporter.queued(self.t, number, wait, why, learned);
    }

    /// A detail that `-v` shows, such as a state store left alone.
    pub(crate) fn detail(&self, message: &str) {
        self.reporter.detail(self.t, message);
    }

    /// `--submit`: the loop now polls the operation's status at `url`.
    pub(crate) fn operation_at(&self, url: &str) {
        self.progress.operation_at(url);
        self.reporter.operation_at(self.t, url);
    }

    /// An attempt sent `request`, and the policy decided.
    pub(crate) fn attempt(&self, request: &Request, record: &Record) {
        self.progress.made(record);
        self.reporter.attempt(self.t, request, record, None);
    }

    /// `--watch`: a request whose stream ended, and what the next resumes with (`Last-Event-ID: 17`).
    pub(crate) fn stream_ended(&self, request: &Request, record: &Record, resume: Option<&str>) {
        // A deadline names the last event judged, not the end of the stream it came on.
        if self.progress.events() == 0 {
            self.progress.made(record);
        }
        self.reporter.attempt(self.t, request, record, resume);
    }

    /// `--paginate`: page `page` of attempt `number`, at `url`, came back as `words` after `latency`.
    pub(crate) fn page(&self, number: u32, page: u32, url: &str, words: &str, latency: Duration) {
        self.reporter.page(self.t, number, page, url, words, latency);
    }

    /// `--watch`: the request to `url` is answered with a stream.
    pub(crate) fn watching(&self, url: &str) {
        self.reporter.watching(self.t, url);
    }

    /// `--watch`: an event (of SSE type `kind`, with `id`) was judged in `record`.
    pub(crate) fn event(&self, kind: &Option<String>, id: &Option<String>, record: &Record) {
        let n = self.progress.event(record);
        self.reporter.event(self.t, n, kind.as_deref(), id.as_deref(), record);
    }

    /// Under `--watch`, an event ended the run and with it its attempt: the
    /// JSON log writes that attempt's object, whose `action` says the ending
    /// (the text log's event line has said it).
    pub(crate) fn ended_by_event(&self, request: &Request, record: &Record) {
        if self.reporter.style.json {
            self.reporter.attempt(self.t, request, record, None);
        }
    }

    /// `--auth-cmd` made a token (`new`: never seen before in this run).
    pub(crate) fn token(&self, token: &str, expires: Option<SystemTime>, new: bool) {
        self.reporter.token(self.t, token, expires, new);
    }

    /// Attempt `number` got a 401 after `latency` and is sent again with a new token.
    pub(crate) fn reauthenticated(&self, number: u32, latency: Duration) {
        self.reporter.reauthenticated(self.t, number, latency);
    }

    pub(crate) fn warn(&self, message: &str) {
        self.reporter.warn(message);
    }

    pub(crate) fn jq_error(&self, error: &JqError) {
        self.reporter.jq_error(error);
    }

    /// The last outcome as a deadline names it.
    pub(crate) fn cause(&self) -> Option<String> {
        self.progress.cause()
    }
}
