//! One URL's loop, on a thread of its own: wait for the turn (breaker,
//! server advice, `--rate`) -> fetch -> judge the body -> [`Policy::decide`]
//! -> share it with the shared state -> wait. With `--submit` the first request is the
//! submit and the rest poll where its reply points ([`operation`] decides).
//! Under `--watch` each attempt is one held request (`watch.rs`); the rest of
//! the loop, here, is the same for both.
//!
//! The loop never prints the end of the run: it returns a [`UrlResult`] and
//! the run's ending (`run/ending.rs`) decides what the whole run says.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::cli::config::{Polling, Target};
use crate::error::{Error, Kind};
use crate::http::conditional::{Answer, Validators};
use crate::http::credentials::{Credentials, Hooks};
use crate::http::request::{self, Client, Fault, Reply, Request};
use crate::process::signals::SignalEnd;
use crate::report::progress::{LoopProgress, Progress};
use crate::report::record::Record;
use crate::report::reporter::{LoopReporter, Reporter};
use crate::report::result::UrlResult;
use crate::rules::advice::Advice;
use crate::rules::attempt::{Attempt, Failure, Outcome, Phase, Verdict};
use crate::rules::breaker::{self, Sample};
use crate::rules::condition::{Input, Judgement, Message, Subject};
use crate::rules::operation::{self, First, Mode, StatusPoll, SubmitReply};
use crate::rules::pages::Paging;
use crate::rules::policy::{self, Action, Stop, WaitReason};
use crate::rules::resume::Resume;
use crate::rules::stall::Stall;
use crate::run::explain::{self, Listener, Situation};
use crate::state::{Admission, AttemptReport, Fleet, Refusal, Shared};
use crate::util::headers::Headers;
use crate::util::text::{human, printable};
use crate::util::url::{self, Endpoint};
use crate::util::wait::{Cancel, Cancelled};

/// What every loop of a run shares.
pub(crate) struct Common {
    /// How every URL is polled.
    pub polling: Polling,
    /// `--fallback last`: keep the final body of a run that is done.
    pub keep_last: bool,
    pub deadline: Option<Instant>,
    pub shared: Shared,
    pub reporter: Reporter,
    /// What each loop has done so far, for the run's ending.
    pub progress: Progress,
    pub cancel: Cancel,
    /// The signal that ended the run, and who says its last word.
    pub signal_end: Arc<SignalEnd>,
}

/// Why a loop stopped without its ending: an error, or the run ended first.
pub(crate) enum Halt {
    Failed(Error),
    Cancelled,
}

impl From<Error> for Halt {
    fn from(error: Error) -> Halt {
        Halt::Failed(error)
    }
}

impl From<Cancelled> for Halt {
    fn from(_: Cancelled) -> Halt {
        Halt::Cancelled
    }
}

/// Runs loop `t` to its end; `Err` when the run ended first.
pub(crate) fn run(common: &Common, t: usize, target: &Target, progress: &LoopProgress) -> Result<UrlResult, Cancelled> {
    let reporter = common.reporter.for_loop(t, progress);
    let warn = |message: &str| reporter.warn(message);
    let detail = |message: &str| reporter.detail(message);
    let made = |token: &str, expires, new| reporter.token(token, expires, new);
    let mut looping = Loop {
        common,
        reporter: &reporter,
        hooks: Hooks { warn: &warn, made: &made, cancel: &common.cancel, deadline: common.deadline },
        detail: &detail,
        credentials: &target.credentials,
        reauthenticated: false,
        state_key: &target.state_key,
        shown: &target.shown,
        submit: target.request.clone(),
        request: target.request.clone(),
        phase: target.phase,
        status_poll: None,
        replied: false,
        validators: Validators::new(common.polling.conditional),
        judged: None,
        resume: Resume::of(&target.request.method, &target.request.url, target.request.body.as_deref()),
        event: None,
        // --stall judges bodies: a port has none.
        stall: common.polling.stall.filter(|_| target.endpoint.is_none()).map(Stall::new),
        said_cut: false,
        endpoint: target.endpoint.as_ref(),
        paging: Paging::default(),
    };
    let client = Client::new(&common.polling.client, &target.request);
    let ended = looping.start(&client).and_then(|()| looping.attempts(&client));
    match ended {
        Ok(record) => Ok(looping.finish(record, &target.shown, progress)),
        // Each error is on the URL the loop was at when it ended (a status URL, after the submit).
        Err(Halt::Failed(error)) => Ok(UrlResult::failed(&target.shown, error.at(&looping.request.url), progress)),
        Err(Halt::Cancelled) => Err(Cancelled),
    }
}

/// One URL's loop: what it holds between attempts. Its fields and methods
/// that the `--watch` attempt (`watch.rs`) uses are `pub(super)`.
pub(crate) struct Loop<'a> {
    pub(super) common: &'a Common,
    /// What this loop shows on stderr, and the progress it keeps.
    pub(super) reporter: &'a LoopReporter<'a>,
    /// How `--auth-cmd` warns, shows its tokens, and ends with the run.
    hooks: Hooks<'a>,
    /// What `-v` shows of this loop, such as a state store left alone.
    detail: &'a dyn Fn(&str),
    /// `-H @FILE` and `--auth-cmd`, shared by every loop of the run.
    credentials: &'a Credentials,
    /// The last attempt got a 401 and was sent again with a new token.
    reauthenticated: bool,
    /// Where this URL's shared state is kept.
    state_key: &'a str,
    /// The request as given's URL, as outputs show it.
    shown: &'a str,
    /// The request as given: with `--submit`, the submit.
    submit: Request,
    /// The request the next attempt sends.
    pub(super) request: Request,
    phase: Phase,
    /// `--submit`: where the status polls go and how they read the replies,
    /// once the submit's reply said.
    status_poll: Option<StatusPoll>,
    /// A reply (of any status) has come: from then on a connection failure is a failure, not "not up yet".
    pub(super) replied: bool,
    /// The last 2xx's validators and body, by URL, for conditional polls.
    pub(super) validators: Validators,
    /// The last body judged, by what was asked of it, and what it was found.
    judged: Option<(JudgedFor, Judgement)>,
    /// `--watch`: what the next request resumes with.
    pub(super) resume: Resume,
    /// `--watch`: the type of the event that ended the run, `$event` to `--print`.
    pub(super) event: Option<String>,
    /// `--stall`: how long the progress line has shown the same.
    stall: Option<Stall>,
    /// A status list's body over `--max-body` was cut, and the warning said so.
    said_cut: bool,
    /// A `tcp://` or `unix://` target: each attempt is a connection (`port.rs`), not a request.
    endpoint: Option<&'a crate::util::url::Endpoint>,
    /// `--paginate`: what the walks keep between attempts (`walk.rs`).
    pub(super) paging: Paging,
}

/// What one attempt's sending brought back: the reply (or under `--watch`,
/// the opened stream) and latency of its last request, and whether that was
/// the second, with a new `--auth-cmd` token.
pub(super) struct Delivery<T> {
    pub(super) reply: Result<T, Fault>,
    pub(super) latency: Duration,
    reauthenticated: bool,
}

/// What a loop counts between its attempts, for the policy.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    /// The attempt in flight, from 1.
    pub(super) number: u32,
    /// Transient failures in a row.
    failures: u32,
    /// Polls in a row on which the condition held (`--stable`).
    pub(super) streak: u32,
    /// "Not yet" polls so far (`--interval-max` grows the wait with them).
    not_yet: u32,
    /// What the shared state said of the fleet at this attempt's turn.
    fleet: Fleet,
}

/// What a judgement was asked: the same of the same bytes gets the same answer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct JudgedFor {
    url: String,
    phase: Phase,
    subject: Subject,
    status: u16,
}

impl Loop<'_> {
    /// Before the first attempt: `-v` shows the request with its credentials
    /// of the moment (redacted), so `--auth-cmd` runs here.
    fn start(&self, client: &Client) -> Result<(), Halt> {
        if self.endpoint.is_some() {
            self.reporter.open();
            return Ok(());
        }
        let authorised = match self.credentials.is_empty() {
            true => None,
            false => match self.credentials.authorise(&self.request, self.carries_credentials(), &self.hooks) {
                Ok(authorised) => Some(authorised.request),
                Err(error) => {
                    self.common.cancel.check()?;
                    return Err(error.into());
                }
            },
        };
        let request = authorised.as_ref().unwrap_or(&self.request);
        self.reporter.start(request, &self.common.polling.client.user_agent, client.proxy_for(&request.url));
        if let Some(note) = client.certificate_note() {
            self.reporter.detail(&note);
        }
        Ok(())
    }

    /// The attempts, each a poll or under `--watch` a watch, until one ends the
    /// loop with exit 0 or 4 (the record holds the final body).
    fn attempts(&mut self, client: &Client) -> Result<Record, Halt> {
        let policy = &self.common.polling.policy;
        let mut rng = rand::rng();
        let mut counts = Counts::default();
        // The next attempt follows a transient failure after a backoff: a retry, as --retry-budget counts them.
        let mut retrying = false;
        loop {
            self.common.cancel.check()?;
            counts.number += 1;
            counts.fleet = self.turn(counts.number, retrying, false)?;
            let (record, found) = match (self.endpoint, self.common.polling.client.watch) {
                (Some(endpoint), _) => (self.knock(endpoint, &counts, &mut rng)?, None),
                (None, Some(_)) => {
                    // --stall: a reply held past the moment it would fire (a long poll's head) wakes the loop then.
                    client.wake_by(self.stall_wake());
                    (self.watch(client, &mut counts, &mut rng)?, None)
                }
                (None, None) if self.common.polling.pages.is_some() => (self.walk(client, &counts, &mut rng)?, None),
                (None, None) => self.poll(client, &counts, &mut rng)?,
            };
            // Known from here on, even when this attempt ends the run: the ending names it.
            if let Some(found) = &found {
                self.poll_status_at(found.clone());
            }
            let refusal = self.share(&record, &counts.fleet)?;
            retrying = matches!(record.action, Action::Retry { .. });
            let held = policy.holds(&record.outcome, record.phase);
            let after = match &record.action {
                Action::Done if self.resource_due() => {
                    self.fetch_resource();
                    counts.failures = 0;
                    continue;
                }
                Action::Done | Action::FailWhen => return Ok(record),
                Action::Stop(stop) => {
                    return Err(self.at_page(explain::stopped(stop, &self.situation(&record))).into());
                }
                Action::Poll { after, .. } => {
                    counts.failures = 0;
                    // A "not yet" wait (not one for --stable) grows the next with --interval-max.
                    counts.not_yet += u32::from(!held);
                    self.stalled(&record)?;
                    *after
                }
                // A failure whose retry was held back counts as one whose retry was sent.
                Action::Retry { after, .. } | Action::HeldBack { after, .. } => {
                    counts.failures += 1;
                    self.stall.as_mut().map(Stall::failed);
                    *after
                }
            };
            counts.streak = if held { counts.streak + 1 } else { 0 };
            // The breaker opened (here or in another process): stop now rather than at the next turn.
            if let Some(refusal) = refusal {
                return Err(explain::circuit_open(self.state_key, &refusal).into());
            }
            self.follow(found.is_some(), &record);
            self.wait(after)?;
        }
    }

    /// Attempt `counts.number`, a poll: sent, its validators settled, judged,
    /// and decided on, as the reporter shows; and where a submit's reply says
    /// the status polls go.
    fn poll(
        &mut self,
        client: &Client,
        counts: &Counts,
        rng: &mut impl rand::Rng,
    ) -> Result<(Record, Option<StatusPoll>), Halt> {
        let number = counts.number;
        self.reporter.sending(number);
        let submit = self.phase == Phase::Submit;
        let (sending, validated) = self.validators.prepare(&self.request, submit);
        let sent = self.send(&sending, number, &|request| self.fetch(client, request), |reply| reply.status);
        drop(sending);
        let Delivery { mut reply, latency, .. } = self.delivered(client, sent)?;
        let answer = self.validators.settle(&self.request, submit, validated, &mut reply);
        let (record, found) = self.conclude(reply, answer, None, latency, counts, rng);
        self.reporter.attempt(&self.request, &record);
        Ok((record, found))
    }

    /// `--stall`: the error of a wait whose progress line has shown the same
    /// for that long (a "not yet" reply or event just recorded in `record`).
    /// A target not up yet has shown nothing: the clock starts with the first
    /// value judged. A reply that ended (under `--watch`) brought no value:
    /// the time alone is weighed, so a reconnect does not start the clock again.
    pub(super) fn stalled(&mut self, record: &Record) -> Result<(), Error> {
        let Some(stall) = &mut self.stall else { return Ok(()) };
        let now = Instant::now();
        let unchanged = match &record.outcome {
            _ if record.not_up_yet => {
                stall.failed();
                None
            }
            Outcome::StreamEnded { .. } => stall.check(now),
            _ => {
                let shown = record.judgement.as_ref().and_then(|judgement| judgement.shown.as_deref());
                let body = record.reply.as_ref().map_or(&[][..], |reply| reply.body.as_slice());
                let show = &self.common.polling.conditions.show;
                let what = || match (shown, show) {
                    (Some(shown), Some(show)) => {
                        let label = format!("{} ", show.source().trim_start_matches('.'));
                        format!("{} has been {}", show.source(), shown.strip_prefix(&label).unwrap_or(shown))
                    }
                    _ => "the body has been the same".to_string(),
                };
                stall.seen(shown.map_or(body, str::as_bytes), what, now)
            }
        };
        match unchanged {
            Some(unchanged) => Err(stall_error(stall.what(), unchanged)),
            None => Ok(()),
        }
    }

    /// `--stall` under `--watch`, where the clock runs on time: when a held
    /// read must wake to say the wait stalled (`None`: the clock is not running).
    pub(super) fn stall_wake(&self) -> Option<Instant> {
        let now = Instant::now();
        self.stall.as_ref()?.left(now).map(|left| now + left)
    }

    /// `--stall` under `--watch`, with no new value (a held read woke, a
    /// stream went quiet): the stall's error once the clock has reached it.
    pub(super) fn stall_due(&self) -> Result<(), Error> {
        let Some(stall) = &self.stall else { return Ok(()) };
        match stall.check(Instant::now()) {
            Some(unchanged) => Err(stall_error(stall.what(), unchanged)),
            None => Ok(()),
        }
    }

    /// The wait before the next attempt. Under `--watch` the `--stall` clock
    /// runs on time, so a wait it would outlast (`--interval`, a `retry:`)
    /// ends where it stalls, with its error.
    fn wait(&self, after: Duration) -> Result<(), Halt> {
        let watch = self.common.polling.client.watch.is_some();
        let left = self.stall.as_ref().filter(|_| watch).and_then(|stall| stall.left(Instant::now()));
        match left {
            Some(left) if left < after => {
                self.common.cancel.sleep(left)?;
                self.stall_due()?;
                self.common.cancel.sleep(after.saturating_sub(left))?;
            }
            _ => self.common.cancel.sleep(after)?,
        }
        Ok(())
    }

    /// What was sent, or the error that kept it from being sent (a credential
    /// command that failed); the roots' note for `-v` once they are read.
    pub(super) fn delivered<T>(
        &mut self,
        client: &Client,
        sent: Result<Delivery<T>, Error>,
    ) -> Result<Delivery<T>, Halt> {
        let delivery = match sent {
            Ok(sent) => sent,
            Err(error) => {
                self.common.cancel.check()?;
                return Err(error.into());
            }
        };
        self.reauthenticated = delivery.reauthenticated;
        if let Some(note) = client.roots_note() {
            self.reporter.detail(&note);
        }
        Ok(delivery)
    }

    /// A reply settled by the validators, judged (as an event of type `event`
    /// under `--watch`) and decided on; and for a submit, where the polls go.
    pub(super) fn conclude(
        &mut self,
        reply: Result<Reply, Fault>,
        answer: Answer,
        event: Option<&str>,
        latency: Duration,
        counts: &Counts,
        rng: &mut impl rand::Rng,
    ) -> (Record, Option<StatusPoll>) {
        let status = match (&reply, answer) {
            (_, Answer::NotModified { status }) => status,
            (Ok(reply), _) => reply.status,
            (Err(_), _) => 0,
        };
        if reply.as_ref().is_ok_and(|reply| reply.cut) && !std::mem::replace(&mut self.said_cut, true) {
            let limit = self.common.polling.client.max_body;
            let cut = format!(
                "the {status}'s body is larger than --max-body ({limit} bytes): cut to its first {limit} bytes"
            );
            self.reporter.warn(&format!("{cut} (a status list decides on the status, not the body)"));
        }
        let (judgement, found) = self.judge(&reply, status, answer, event);
        let outcome = self.pending_when(&reply, outcome(&reply, status, judgement.as_ref(), found.is_some()));
        // Kept as decide() reads it (a 2xx under --done-on without --until is not yet): -v and the log say that.
        let outcome = self.common.polling.policy.read(&outcome, self.phase).into_owned();
        let mut record = self.decided(reply, outcome, latency, counts, rng);
        record.judgement = judgement;
        (record, found)
    }

    /// `outcome` as `--pending-when` reads it: a status no list names, not a
    /// 2xx, on which the filter holds is "not yet" ([`Outcome::Pending`]).
    fn pending_when(&self, reply: &Result<Reply, Fault>, outcome: Outcome) -> Outcome {
        let polling = &self.common.polling;
        let (Some(filter), Ok(reply), Outcome::Status { code, advice }) = (&polling.pending_when, reply, &outcome)
        else {
            return outcome;
        };
        if polling.policy.listed(*code, self.phase).is_some() {
            return outcome;
        }
        match filter.holds_on(Message::reply(reply.status, &reply.headers, &reply.body)) {
            Ok(true) => Outcome::Pending { code: *code, advice: *advice },
            Ok(false) => outcome,
            Err(error) => {
                self.reporter.jq_error(&error);
                outcome
            }
        }
    }

    /// The record of `reply`, whose outcome is `outcome`, with the policy's decision on it.
    pub(super) fn decided(
        &mut self,
        reply: Result<Reply, Fault>,
        outcome: Outcome,
        latency: Duration,
        counts: &Counts,
        rng: &mut impl rand::Rng,
    ) -> Record {
        let (policy, number, phase) = (&self.common.polling.policy, counts.number, self.phase);
        // A reply of any status, a redirect's included, says the URL was reached.
        self.replied |= reply.as_ref().map_or_else(|fault| fault.redirected, |_| true);
        let unreached = !self.replied;
        let Counts { failures, streak, not_yet, fleet, .. } = *counts;
        let attempt = Attempt {
            number,
            failures,
            remaining: self.left(),
            phase,
            streak,
            not_yet,
            unreached,
            budget: fleet.budget,
            paced: self.common.shared.learns_rate(),
            later_page: self.paging.stopped_at.is_some(),
        };
        let not_up_yet = outcome.not_up_yet(&attempt);
        let action = match &reply {
            // The command's newest token was refused: no retry helps (whatever --retry-on says).
            Ok(reply) if self.reauthenticated && reply.status == 401 => {
                Action::Stop(Stop::Permanent { cause: outcome.to_string() })
            }
            _ => policy.decide(&outcome, &attempt, rng),
        };
        // Met but not done: polled again, or the deadline came first (still "met, 3 of 5", not "done").
        let short_of_stable = !matches!(action, Action::Done) && policy.holds(&outcome, phase);
        let held = (policy.stable > 1 && short_of_stable).then_some((streak + 1, policy.stable));
        Record {
            number,
            phase,
            reply,
            latency,
            judgement: None,
            outcome,
            not_up_yet,
            held,
            action,
            rate: fleet.rate,
            port: None,
            pages: None,
        }
    }

    /// One attempt by `exchange`: the request with its credentials of the
    /// moment, and when `--auth-cmd`'s token gets a 401 (a reply's `status`),
    /// a new token and the request sent again at once (no retry: no backoff,
    /// nothing spent of `--retries`).
    pub(super) fn send<T>(
        &self,
        request: &Request,
        number: u32,
        exchange: &dyn Fn(&Request) -> Result<T, Fault>,
        status: fn(&T) -> u16,
    ) -> Result<Delivery<T>, Error> {
        let carry = !self.credentials.is_empty() && self.carries_credentials();
        self.send_carrying(request, number, carry, exchange, status)
    }

    /// [`Loop::send`], with `-H @FILE`'s and `--auth-cmd`'s credentials when
    /// `carry` says they go (a `--paginate` page on another origin: not unless trusted).
    pub(super) fn send_carrying<T>(
        &self,
        request: &Request,
        number: u32,
        carry: bool,
        exchange: &dyn Fn(&Request) -> Result<T, Fault>,
        status: fn(&T) -> u16,
    ) -> Result<Delivery<T>, Error> {
        let once = |request: &Request, reauthenticated| {
            let traced = self.traced(request);
            let sent = Instant::now();
            let reply = exchange(&traced);
            Delivery { reply, latency: sent.elapsed(), reauthenticated }
        };
        if self.credentials.is_empty() {
            return Ok(once(request, false));
        }
        let authorised = self.credentials.authorise(request, carry, &self.hooks)?;
        let first = once(&authorised.request, false);
        let (Ok(refused), Some(generation)) = (&first.reply, authorised.generation) else { return Ok(first) };
        if status(refused) != 401 {
            return Ok(first);
        }
        self.reporter.reauthenticated(number, first.latency);
        self.credentials.refused(generation, &self.hooks)?;
        let again = self.credentials.authorise(request, carry, &self.hooks)?;
        Ok(once(&again.request, true))
    }

    /// `request` as it is sent: with the run's trace (`TRACEPARENT`), a span of its own.
    fn traced<'r>(&self, request: &'r Request) -> Cow<'r, Request> {
        let Ok(Some(trace)) = &self.common.polling.trace else { return Cow::Borrowed(request) };
        let mut traced = request.clone();
        traced.headers.set("traceparent", trace.parent(rand::random()));
        if let Some(state) = trace.state() {
            traced.headers.set("tracestate", state.to_string());
        }
        Cow::Owned(traced)
    }

    /// `request` sent within `--request-timeout` or the time left, whichever is less.
    pub(super) fn fetch(&self, client: &Client, request: &Request) -> Result<Reply, Fault> {
        let timeout = self.common.polling.client.request_timeout;
        client.fetch(request, self.left().map_or(timeout, |left| left.min(timeout)), &|status| self.cuts(status))
    }

    /// Whether a reply of `status` has a body over `--max-body` cut, not refused: a status
    /// list (`--done-on`, `--fail-on`, `--pending-on`) decides on it whatever its body says.
    pub(super) fn cuts(&self, status: u16) -> bool {
        self.common.polling.policy.listed(status, self.phase).is_some()
    }

    /// Whether the next request may carry credentials: any but a `--submit`
    /// status poll on another origin without `--location-trusted`, where `-u` does not go either.
    fn carries_credentials(&self) -> bool {
        self.phase != Phase::Wait
            || self.common.polling.submit.as_ref().is_some_and(|submit| submit.trusted)
            || url::same_origin(&self.submit.url, &self.request.url)
    }

    /// Time left before `--timeout`.
    pub(super) fn left(&self) -> Option<Duration> {
        self.common.deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()))
    }

    /// Before attempt `number` (a `retry`, or any other): asks the breaker,
    /// then waits for the server's "not before" and the `--rate` slot (a
    /// learned rate's far turn is asked for again near it), never past the
    /// deadline. Before a `--paginate` walk's later `page`, the same but the
    /// breaker: the walk is one attempt for it.
    pub(super) fn turn(&self, number: u32, retry: bool, page: bool) -> Result<Fleet, Halt> {
        let common = self.common;
        if !common.shared.is_active() {
            return Ok(Fleet::default());
        }
        loop {
            let left = self.left();
            let turn = match page {
                true => common.shared.admit_page(self.state_key, left, self.hooks.warn, self.detail)?,
                false => common.shared.admit(self.state_key, retry, left, self.hooks.warn, self.detail)?,
            };
            let (wait, why, again) = match turn.admission {
                Admission::Go { wait, why } => (wait, why, false),
                Admission::Defer { wait } => (wait, Some(WaitReason::Rate), true),
                Admission::Open(refusal) => return Err(explain::circuit_open(self.state_key, &refusal).into()),
                Admission::TooLate { wait, why } => return Err(self.too_late(wait, why, left).into()),
            };
            if let (Some(why), false) = (why, wait == 0) {
                let wait = Duration::from_millis(wait);
                self.reporter.queued(number, wait, why, turn.fleet.rate);
                common.cancel.sleep(wait)?;
            }
            if !again {
                return Ok(turn.fleet);
            }
        }
    }

    /// The error of a turn that would come only at or after the deadline.
    pub(super) fn too_late(&self, wait: u64, why: WaitReason, left: Option<Duration>) -> Error {
        let stop = Stop::Deadline {
            wait: Duration::from_millis(wait),
            reason: why,
            remaining: left.unwrap_or_default(),
            cause: self.reporter.cause(),
        };
        let operation = self.status_poll.as_ref().map(|poll| poll.url.as_str());
        explain::error(&stop, None, "", operation)
    }

    /// What the filters say of a 2xx reply (or of a 304's body kept, as the
    /// 2xx it came with); and for a submit, where the polls go next, if
    /// anywhere (then the body is not judged: the operation is).
    fn judge(
        &mut self,
        reply: &Result<Reply, Fault>,
        status: u16,
        answer: Answer,
        event: Option<&str>,
    ) -> (Option<Judgement>, Option<StatusPoll>) {
        let Ok(reply) = reply else { return (None, None) };
        // What the user's own validator names has not changed: not yet.
        if answer == Answer::Unchanged {
            return (
                Some(Judgement { verdict: Verdict::NotMet, errors: Vec::new(), shown: None, show_error: None }),
                None,
            );
        }
        // A status in --done-on, --pending-on or --fail-on is judged by its list, not by the filters.
        if self.common.polling.policy.listed(status, self.phase).is_some() {
            return (None, None);
        }
        if self.phase == Phase::Submit && request::is_see_other(reply.status) {
            // A status monitor, not ARM's Location mode: it answers with a status.
            let location = reply.headers.get("location").and_then(|location| url::resolve(&self.submit.url, location));
            return (None, location.map(|url| StatusPoll { url, mode: Mode::Operation { header: false } }));
        }
        if !(200..300).contains(&status) {
            return (None, None);
        }
        // What a PUT or PATCH made or changed: any 2xx is the final body.
        if self.phase == Phase::Final {
            return (
                Some(Judgement { verdict: Verdict::Met, errors: Vec::new(), shown: None, show_error: None }),
                None,
            );
        }
        let subject = self.status_poll.as_ref().map_or(Subject::Resource, |poll| poll.mode.subject());
        // Kept only for conditional polls: a 304 hands back the very bytes judged
        // last time, and gets the same verdict without parsing them again.
        let conditional = self.common.polling.conditional;
        let asked =
            conditional.then(|| JudgedFor { url: self.request.url.clone(), phase: self.phase, subject, status });
        if let (Answer::NotModified { .. }, Some(asked), Some((last, judgement))) = (answer, &asked, &self.judged)
            && last == asked
        {
            return (Some(judgement.clone()), None);
        }
        let conditions = &self.common.polling.conditions;
        let message = Message { event, ..Message::reply(status, &reply.headers, &reply.body) };
        let (mut judgement, word) = conditions.judge_reply(self.phase, subject, message);
        for error in judgement.errors.iter().chain(&judgement.show_error) {
            self.reporter.jq_error(error);
        }
        if self.phase != Phase::Submit {
            self.judged = asked.map(|asked| (asked, judgement.clone()));
            return (Some(judgement), None);
        }
        let named = self.status_url(reply);
        let first = operation::first_reply(SubmitReply {
            method: &self.submit.method,
            url: &self.submit.url,
            status,
            verdict: judgement.verdict,
            word,
            builtin_done: self.common.polling.conditions.builtin_done(),
            named,
        });
        match first {
            First::End(verdict) => judgement.verdict = verdict,
            First::Poll(poll) => return (None, Some(poll)),
            // The policy says "give --status-url" to a submit that is not done.
            First::NoStatusUrl => judgement.verdict = Verdict::NotMet,
        }
        (Some(judgement), None)
    }

    /// The status URL a submit's 2xx names: its headers first, then `--status-url`.
    fn status_url(&self, reply: &Reply) -> Option<StatusPoll> {
        let base = &self.submit.url;
        if let Some(named) = operation::named(|name| reply.headers.get(name), base) {
            return Some(named);
        }
        let filter = self.common.polling.submit.as_ref()?.status_url.as_ref()?;
        let message = Message::reply(reply.status, &reply.headers, &reply.body);
        let input = Input::of(message, filter.reads_headers()).ok()?;
        match filter.first_string(&input) {
            Ok(found) => {
                let url = found.and_then(|found| url::resolve(base, &found))?;
                Some(StatusPoll { url, mode: Mode::Operation { header: false } })
            }
            Err(error) => {
                self.reporter.jq_error(&error);
                None
            }
        }
    }

    /// After an attempt: the next request. A submit that named its status URL
    /// (`named`, already in `status_poll`) turns into status polls; a status reply
    /// may move them elsewhere.
    fn follow(&mut self, named: bool, record: &Record) {
        let moved = match (&record.reply, self.phase, &self.status_poll) {
            (Ok(reply), Phase::Wait, Some(now)) => operation::moved(|name| reply.headers.get(name), reply.status, now),
            _ => None,
        };
        if let Some(moved) = moved {
            self.poll_status_at(moved);
        } else if !named {
            return;
        }
        let (Some(poll), Some(submit)) = (&self.status_poll, &self.common.polling.submit) else { return };
        self.request = self.submit.status_poll(&poll.url, submit.key_header.as_deref(), submit.trusted);
        self.phase = Phase::Wait;
    }

    /// The status polls go to `poll` from now on: kept, and shown by the progress and the reporter.
    fn poll_status_at(&mut self, poll: StatusPoll) {
        self.reporter.operation_at(&poll.url);
        self.status_poll = Some(poll);
    }

    /// Whether an operation that is done now is followed by a GET of the
    /// submit's URL: the resource that a PUT or PATCH made or changed.
    fn resource_due(&self) -> bool {
        self.phase == Phase::Wait
            && self.status_poll.as_ref().is_some_and(|poll| operation::final_get(&self.submit.method, poll.mode))
    }

    /// The next request is the final GET of the submit's URL, retried like any GET.
    fn fetch_resource(&mut self) {
        let Some(submit) = &self.common.polling.submit else { return };
        self.request = self.submit.status_poll(&self.submit.url, submit.key_header.as_deref(), submit.trusted);
        self.phase = Phase::Final;
        let message = format!("the operation is done; the resource is at {}", self.shown);
        self.reporter.detail(&message);
    }

    /// After an attempt: feeds the breaker and keeps the server's advice the
    /// policy honoured (and, when the run is done, its body for `--fallback
    /// last`), so other runs see them. Returns the breaker's refusal, if it is open now.
    fn share(&self, record: &Record, fleet: &Fleet) -> Result<Option<Refusal>, Error> {
        let common = self.common;
        if !common.shared.is_active() {
            return Ok(None);
        }
        // The origin's advice: a throttle's wait (a 429's or 503's Retry-After) or a spent quota's
        // reset, which hold for every request there. A 2xx's Retry-After paces that one URL (an
        // operation's status, Azure's 202s): kept, it would hold back every URL of the origin.
        let advised = match &record.action {
            Action::Retry { after, reason } | Action::HeldBack { after, reason, .. } if reason.is_advice() => {
                Some(*after)
            }
            Action::Poll { after, reason: WaitReason::RateLimitReset } => Some(*after),
            _ => None,
        };
        // Kept under the URL as given, redacted: no secret goes into the store.
        let ending = record.action == Action::Done && !self.resource_due();
        let kept_url = (common.keep_last && ending).then_some(self.shown);
        let good_body = match (&kept_url, &record.reply) {
            (Some(url), Ok(reply)) => Some((*url, reply.body.as_slice())),
            _ => None,
        };
        // A service not up yet has answered nothing the breaker could weigh, nor a request that was not sent.
        let unsent = matches!(&record.reply, Err(Fault { failure: Failure::Credential | Failure::Unsendable, .. }));
        if unsent || record.not_up_yet {
            return Ok(None);
        }
        // A status the user listed is an answer they expected.
        let listed = matches!(record.outcome, Outcome::Status { code, .. } if common.polling.policy.listed(code, record.phase).is_some());
        let ok = listed || !breaker::counts_as_failure(&record.outcome);
        // A hold the request asked for (a watch, a long poll, --prefer-wait) is not latency. A
        // --paginate walk's latency is its pages' together: the breaker weighs one request of it.
        let latency = record.latency / record.pages.unwrap_or(1).max(1);
        let sample = Sample { ok, latency: breaker::latency(latency, common.polling.hold) };
        let mut report = AttemptReport::of(sample, advised, good_body);
        // What --rate auto learns from: a request turned away for going too fast.
        if let Outcome::Status { code, advice } = &record.outcome
            && policy::is_rate_limited(*code, advice)
        {
            report.throttled_at = Some(fleet.at);
        }
        common.shared.record(self.state_key, report, self.left(), self.hooks.warn)
    }

    /// Exit 0 or 4: the result, the body and `--print`'s outputs on it (a jq error there is exit 3).
    fn finish(&self, record: Record, shown: &str, progress: &LoopProgress) -> UrlResult {
        // A port that opened, or a target that refused under --done-on refused: no body, nothing to print.
        if record.port.is_some() || matches!(record.outcome, Outcome::Failed(_)) {
            return UrlResult::ended(shown, Ok(()), None, None, progress);
        }
        let result = match (&record.action, &record.outcome) {
            (Action::FailWhen, Outcome::Status { code, .. }) => Err(format!("HTTP {code} is in --fail-on")),
            (Action::FailWhen, _) if self.common.polling.conditions.builtin_fails() => {
                Err("the operation failed (by --submit's built-in failure test)".to_string())
            }
            (Action::FailWhen, _) => Err("--fail-when matched".to_string()),
            _ => Ok(()),
        };
        let result = result.map_err(|what| self.at_page(Error::new(Kind::FailWhen, what)).at(&self.request.url));
        let printed = self.common.polling.print.as_ref().map(|print| {
            let none = Headers::default();
            let (status, headers) = record.reply.as_ref().map_or((0, &none), |r| (r.status, &r.headers));
            let body = record.reply.as_ref().map_or(&[][..], |r| r.body.as_slice());
            // A run ended by its status (--done-on, --fail-on) may have any body (nginx's HTML
            // 404): --print reads one that is not JSON as null, and $status still says what came.
            let listed = matches!(record.outcome, Outcome::Status { .. });
            let body = if listed && Input::parse(body).is_err() { &[][..] } else { body };
            print.print(Message { event: self.event.as_deref(), ..Message::reply(status, headers, body) })
        });
        let body = record.into_body();
        let printed = match printed.transpose() {
            Ok(printed) => printed,
            Err(why) => {
                let error = Error::permanent(format!("--print: {why}")).at(&self.request.url);
                return UrlResult::failed(shown, error, progress);
            }
        };
        UrlResult::ended(shown, result, Some(body), printed, progress)
    }

    /// `error`, of the `--paginate` page that ended the attempt when that was not the first.
    fn at_page(&self, error: Error) -> Error {
        match &self.paging.stopped_at {
            Some(page) => error.at(page),
            None => error,
        }
    }

    /// What the words of a stop need to know of this loop.
    fn situation<'s>(&'s self, record: &'s Record) -> Situation<'s> {
        let polling = &self.common.polling;
        Situation {
            listener: match (self.endpoint, &polling.client.unix_socket) {
                (Some(Endpoint::Unix(_)), _) => Listener::Socket,
                (None, Some(_)) => Listener::Daemon,
                _ => Listener::Port,
            },
            keyed: polling.policy.keyed,
            reauthenticated: self.reauthenticated,
            client_cert: polling.client.trust.identity.is_some(),
            operation: self.status_poll.as_ref().map(|poll| poll.url.as_str()),
            record,
        }
    }
}

/// `--stall`'s error: `what` (`.progress has been 40`) stood still for `unchanged`.
fn stall_error(what: &str, unchanged: Duration) -> Error {
    Error::new(Kind::Stalled, format!("stalled: {} for {}", printable(what), human(unchanged)))
}

/// The plain-data outcome of a reply, where HTTP becomes the rules' words:
/// its class, the verdict of a 2xx, and the server's advice from its headers,
/// read against the clock now (`Retry-After` may be a date). `status` is the
/// reply's, or for a 304 answered from the body kept, that body's.
/// `submitted` says that a submit's 2xx named a status URL.
fn outcome(reply: &Result<Reply, Fault>, status: u16, judgement: Option<&Judgement>, submitted: bool) -> Outcome {
    match reply {
        Err(fault) => Outcome::Failed(fault.failure),
        Ok(reply) => {
            let headers = reply.headers.iter();
            let advice = Advice::from_headers(headers, SystemTime::now());
            match judgement {
                _ if submitted => Outcome::Submitted { advice },
                Some(judgement) => Outcome::Success { verdict: judgement.verdict, advice },
                None => Outcome::Status { code: status, advice },
            }
        }
    }
}
