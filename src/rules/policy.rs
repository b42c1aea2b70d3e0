//! The retry policy: one pure function, [`Policy::decide`], that turns what an
//! attempt produced into what to do next. No sockets, no clock, no sleeping:
//! time arrives as durations and randomness through an injected source.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use rand::{Rng, RngExt};

use crate::rules::advice::Advice;
use crate::rules::attempt::StatusTraits;
pub use crate::rules::attempt::{Attempt, Failure, Outcome, Phase, RetryRoom, Verdict};
pub use crate::rules::budget::Window;
use crate::util::text::{human, human_pair};

/// Server-advised waits longer than this are not waited for when there is no
/// deadline: a hostile or broken `Retry-After: 99999999` must not hang a CI job.
pub const MAX_ADVISED_WAIT: Duration = Duration::from_secs(24 * 3600);

// The defaults of the schedule flags: `cli/flags.rs` shows these, `Policy::default` uses them.
pub(crate) const INTERVAL: Duration = Duration::from_secs(1);
pub(crate) const TIMEOUT: Duration = Duration::from_secs(300);
pub(crate) const RETRIES: u32 = 6;
pub(crate) const BACKOFF: Duration = Duration::from_millis(200);
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(30);
pub(crate) const STABLE: u32 = 1;

/// How a backoff delay is randomised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Jitter {
    /// Uniform in [d/2, d].
    #[default]
    Equal,
    /// Uniform in [0, d].
    Full,
    /// Exactly d.
    None,
}

/// The schedule and budget flags, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub interval: Duration,
    pub backoff: Duration,
    pub backoff_max: Duration,
    pub jitter: Jitter,
    pub retries: u32,
    pub retry_on: Vec<u16>,
    /// False for POST, PATCH and unknown methods.
    pub idempotent: bool,
    pub retry_non_idempotent: bool,
    /// The request carries an `--idempotency-key`: safe to re-send, and a 409 is transient.
    pub keyed: bool,
    /// `--stable`: polls in a row on which the condition must hold.
    pub stable: u32,
    /// `--interval-max`: "not yet" waits grow by [`GROWTH`] from `interval` up to this.
    pub interval_max: Option<Duration>,
    /// `--done-on`: statuses that end the run with exit 0.
    pub done_on: Vec<u16>,
    /// `refused` in `--done-on`: a refused connection (nothing listens there any more) ends the
    /// run with exit 0, first contact or not; a target that still accepts is "not yet".
    pub done_refused: bool,
    /// `--pending-on`: statuses that mean "not yet".
    pub pending_on: Vec<u16>,
    /// `--fail-on`: statuses that end the run with exit 4.
    pub fail_on: Vec<u16>,
    /// Neither `--until` nor `--submit`'s built-in test says when a 2xx is
    /// done: with `--done-on`, which names the statuses that are, a 2xx is
    /// then "not yet". False by default, where no `--done-on` makes it matter.
    pub no_until: bool,
}

/// Which status list a status is in: an answer the user expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listed {
    /// `--done-on`.
    Done,
    /// `--pending-on`.
    Pending,
    /// `--fail-on`.
    Fail,
    /// `--done-on refused`: a reply that no list names, not a 2xx. The run
    /// waits for nothing to answer, so any answer (a draining server's 503
    /// included) says it is not gone yet: polled again at `--interval`.
    NotGone,
}

impl Listed {
    /// The flag that names the list, as `-v` and messages show it.
    pub fn flag(self) -> &'static str {
        match self {
            Listed::Done | Listed::NotGone => "--done-on",
            Listed::Pending => "--pending-on",
            Listed::Fail => "--fail-on",
        }
    }
}

/// How much longer each "not yet" wait is than the one before, with
/// `--interval-max` (google-api-core's polling multiplier).
pub const GROWTH: f64 = 1.5;

impl Default for Policy {
    fn default() -> Self {
        Policy {
            interval: INTERVAL,
            backoff: BACKOFF,
            backoff_max: BACKOFF_MAX,
            jitter: Jitter::Equal,
            retries: RETRIES,
            retry_on: Vec::new(),
            idempotent: true,
            retry_non_idempotent: false,
            keyed: false,
            stable: STABLE,
            interval_max: None,
            done_on: Vec::new(),
            done_refused: false,
            pending_on: Vec::new(),
            fail_on: Vec::new(),
            no_until: false,
        }
    }
}

/// What to do after an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The condition holds: print the body, exit 0.
    Done,
    /// `--fail-when` holds: print the body, exit 4.
    FailWhen,
    /// The response was healthy but the condition does not hold yet.
    Poll { after: Duration, reason: WaitReason },
    /// A transient failure: try again.
    Retry { after: Duration, reason: WaitReason },
    /// A transient failure whose retry `--retry-budget` had no room for
    /// (`counts`: what the fleet's window held): no retry is sent, the next
    /// regular poll comes after `after`. The failure counts as a retry's would.
    HeldBack { after: Duration, reason: WaitReason, counts: Window },
    /// Give up.
    Stop(Stop),
}

/// Why the next attempt waits as long as it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitReason {
    Interval,
    Backoff,
    RetryAfter,
    RateLimitReset,
    /// GitHub's `X-Poll-Interval` on the last reply.
    PollInterval,
    /// The `--rate` slot (shared state, not the policy).
    Rate,
    /// The server's advice that an earlier attempt or run kept in `--state`.
    StoredAdvice,
    /// A status in `--pending-on`: polled at the interval.
    PendingOn,
    /// A status `--pending-when` called not yet: polled at the interval.
    PendingWhen,
    /// No connection before the URL's first reply: the service is not up yet.
    NotUpYet,
    /// `--watch`: an event stream's own `retry:`, waited instead of `--interval`.
    StreamRetry,
}

impl WaitReason {
    /// The stable name of a wait after an attempt, in `--log-format json`'s
    /// `wait_reason`; the waits before one (`rate`, `kept_advice`) have a name
    /// too, though no attempt object carries them.
    pub fn name(self) -> &'static str {
        match self {
            WaitReason::Interval => "interval",
            WaitReason::Backoff => "backoff",
            WaitReason::RetryAfter => "retry_after",
            WaitReason::RateLimitReset => "rate_limit_reset",
            WaitReason::PollInterval => "poll_interval",
            WaitReason::Rate => "rate",
            WaitReason::StoredAdvice => "kept_advice",
            WaitReason::PendingOn => "pending_on",
            WaitReason::PendingWhen => "pending_when",
            WaitReason::NotUpYet => "not_up_yet",
            WaitReason::StreamRetry => "stream_retry",
        }
    }

    /// Whether the wait is the server's advice, which other runs should honour too.
    pub fn is_advice(self) -> bool {
        matches!(self, WaitReason::RetryAfter | WaitReason::RateLimitReset)
    }
}

impl fmt::Display for WaitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WaitReason::Interval => "interval",
            WaitReason::Backoff => "backoff",
            WaitReason::RetryAfter => "Retry-After",
            WaitReason::RateLimitReset => "rate-limit reset",
            WaitReason::PollInterval => "X-Poll-Interval",
            WaitReason::Rate => "--rate",
            WaitReason::StoredAdvice => "the server's Retry-After or rate-limit reset, kept in --state",
            WaitReason::PendingOn => "--pending-on",
            WaitReason::PendingWhen => "--pending-when",
            WaitReason::NotUpYet => "not up yet",
            WaitReason::StreamRetry => "the stream's retry:",
        })
    }
}

/// How a deadline names the failure of a URL that never answered at all.
const NEVER_REACHED: &str = "never reached";

/// A deadline's cause for a URL not up yet: `never reached: connection refused`.
pub fn never_reached(failure: &Failure) -> String {
    format!("{NEVER_REACHED}: {failure}")
}

/// A deadline's cause as its line says it: `last: 200 pending`, and a cause
/// made by [`never_reached`] as it is, since it says itself what came last.
pub fn last_words(cause: &str) -> String {
    match cause.starts_with(NEVER_REACHED) {
        true => cause.to_string(),
        false => format!("last: {cause}"),
    }
}

/// Why a run ends without its condition met; each maps to one exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// Exit 3: a status or error that retrying cannot fix.
    Permanent { cause: String },
    /// Exit 5: `--retries` consecutive transient failures.
    BudgetSpent { failures: u32, cause: String },
    /// Exit 5: a POST/PATCH failed in a way that may have been processed.
    NotRetryable { cause: String },
    /// Exit 5: no deadline, and the server asked for an absurd wait.
    WaitTooLong { wait: Duration, reason: WaitReason, cause: String },
    /// Exit 1: the next attempt could only start after the deadline. `cause`
    /// is the last outcome, if an attempt was made.
    Deadline { wait: Duration, reason: WaitReason, remaining: Duration, cause: Option<String> },
    /// Exit 3: `--submit`'s 2xx named no status URL and its body does not meet the condition.
    NoStatusUrl,
}

impl Stop {
    /// The stop in words; `detail` (the transport's own message) follows the cause.
    pub fn describe(&self, detail: Option<&str>) -> String {
        let with_detail = |cause: &str| match detail {
            // A detail that says the cause itself stands alone (`... is a FIFO, not a socket`).
            Some(detail) if detail.contains(cause) => detail.to_string(),
            Some(detail) => format!("{cause} ({detail})"),
            None => cause.to_string(),
        };
        match self {
            Stop::Permanent { cause } => format!("{}: not retryable", with_detail(cause)),
            Stop::BudgetSpent { failures: 1, cause } => {
                format!("gave up after 1 failure: {} (raise --retries to tolerate more)", with_detail(cause))
            }
            Stop::BudgetSpent { failures, cause } => format!(
                "gave up after {failures} consecutive failures; last: {} (raise --retries to tolerate more)",
                with_detail(cause)
            ),
            Stop::NotRetryable { cause } => format!(
                "{}: the request may have been processed, so it is not re-sent (use --retry-non-idempotent to retry it anyway)",
                with_detail(cause)
            ),
            Stop::WaitTooLong { wait, reason, cause } => {
                format!("{}: the server asked to wait {} ({reason}); giving up", with_detail(cause), human(*wait))
            }
            Stop::Deadline { wait, reason, remaining, cause } => {
                let last = cause.as_deref().map(|cause| format!("; {}", last_words(&with_detail(cause))));
                let last = last.unwrap_or_default();
                if remaining.is_zero() {
                    format!("deadline reached{last} (raise --timeout to wait longer)")
                } else {
                    let (wait, remaining) = human_pair(*wait, *remaining);
                    format!(
                        "deadline: the next attempt would start in {wait} ({reason}) but only {remaining} is left{last} (raise --timeout to wait longer)"
                    )
                }
            }
            Stop::NoStatusUrl => "the submit reply named no status URL; give --status-url".to_string(),
        }
    }

    /// The short name shown in `-v` lines: `stop (retries spent)`.
    pub fn name(&self) -> &'static str {
        match self {
            Stop::Permanent { .. } | Stop::NoStatusUrl => "permanent",
            Stop::BudgetSpent { .. } => "retries spent",
            Stop::NotRetryable { .. } => "not retryable",
            Stop::WaitTooLong { .. } => "wait too long",
            Stop::Deadline { .. } => "deadline",
        }
    }
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(None))
    }
}

/// Whether the status lists judge the replies of `phase`: the requests the
/// user polls and a `--submit`'s status polls, not the submit's own reply nor
/// the final GET of what it made.
fn lists_judge(phase: Phase) -> bool {
    matches!(phase, Phase::Poll | Phase::Wait)
}

/// A 429, or a 403 whose remaining quota is 0 with a reset or `Retry-After`:
/// GitHub's API (and others) answer an exhausted quota with 403, and it means
/// exactly what 429 means: come back after the reset.
pub fn is_rate_limited(code: u16, advice: &Advice) -> bool {
    code == 429
        || code == 403 && advice.remaining == Some(0) && (advice.reset.is_some() || advice.retry_after.is_some())
}

impl Policy {
    /// Decides what follows an attempt. `rng` only draws jitter.
    pub fn decide(&self, outcome: &Outcome, attempt: &Attempt, rng: &mut impl Rng) -> Action {
        let outcome = &*self.read(outcome, attempt.phase);
        match self.answer(outcome, attempt) {
            Some(action) => action,
            None => self.retry(outcome, attempt, rng),
        }
    }

    /// What follows an outcome that answers: done, failed, not yet, or a
    /// permanent failure; `None` for a transient failure.
    fn answer(&self, outcome: &Outcome, attempt: &Attempt) -> Option<Action> {
        let submit = attempt.phase == Phase::Submit;
        let poll =
            |(after, reason)| self.within_deadline(after, reason, attempt, outcome, Action::Poll { after, reason });
        if let Outcome::Status { code, advice } = outcome
            && let Some(listed) = self.listed(*code, attempt.phase)
        {
            return Some(self.answer_listed(listed, advice, attempt, outcome));
        }
        Some(match outcome {
            // A submit whose reply names no status URL is done only by its own body.
            Outcome::Success { verdict: Verdict::NotMet | Verdict::NotJson, .. } if submit => {
                Action::Stop(Stop::NoStatusUrl)
            }
            Outcome::Success { verdict: Verdict::Met, .. }
                if submit || attempt.phase == Phase::Final || attempt.streak.saturating_add(1) >= self.stable =>
            {
                Action::Done
            }
            // `--stable`: met, but not yet often enough in a row.
            Outcome::Success { verdict: Verdict::Met, .. } => poll((self.interval, WaitReason::Interval)),
            Outcome::Success { verdict: Verdict::FailWhen, .. } => Action::FailWhen,
            // A port that opened: done, or --stable short of its count; under --done-on, not yet.
            Outcome::Open { met: true } if attempt.streak.saturating_add(1) >= self.stable => Action::Done,
            Outcome::Open { met: true } => poll((self.interval, WaitReason::Interval)),
            Outcome::Open { met: false } => poll(self.next_poll(&Advice::default(), attempt.not_yet)),
            // `--done-on refused`: nothing listens there any more (before a first contact too).
            Outcome::Failed(Failure::Refused) if self.done_refused && lists_judge(attempt.phase) => {
                match attempt.streak.saturating_add(1) >= self.stable {
                    true => Action::Done,
                    false => poll((self.interval, WaitReason::Interval)),
                }
            }
            Outcome::Success { verdict: Verdict::NotMet, advice } => poll(self.next_poll(advice, attempt.not_yet)),
            // The first status poll waits for the submit's Retry-After, else the
            // interval (stretched by an exhausted quota, as after any 2xx).
            Outcome::Submitted { advice } => poll(match advice.retry_after {
                Some(wait) => (wait, WaitReason::RetryAfter),
                None => self.next_poll(advice, attempt.not_yet),
            }),
            Outcome::Success { verdict: Verdict::NotJson, .. } => return None,
            // A stream that ended is asked again, resuming: --interval after the last request
            // started (a held reply at once), or after the stream's own retry: as EventSource
            // waits; but a retry: never asks sooner than --interval would (`retry: 0` is no licence to hammer).
            Outcome::StreamEnded { held, retry, .. } => {
                let paced = self.interval.saturating_sub(*held);
                poll(match retry {
                    Some(retry) if *retry >= paced => (*retry, WaitReason::StreamRetry),
                    _ => (paced, WaitReason::Interval),
                })
            }
            Outcome::StreamClosed => Action::Stop(Stop::Permanent { cause: outcome.to_string() }),
            // Not yet, as a status in --pending-on is: at the interval (the server's advice first), no --retries spent.
            Outcome::Pending { advice, .. } => poll(match self.next_poll(advice, attempt.not_yet) {
                (after, WaitReason::Interval) => (after, WaitReason::PendingWhen),
                advised => advised,
            }),
            Outcome::Status { code, advice }
                if self.is_transient_status(*code, attempt.phase) || is_rate_limited(*code, advice) =>
            {
                return None;
            }
            Outcome::Failed(failure) if failure.traits().transient => return None,
            Outcome::Status { .. } | Outcome::Failed(_) => Action::Stop(Stop::Permanent { cause: outcome.to_string() }),
        })
    }

    /// What follows a transient failure: not up yet, a retry after the
    /// server's advice or the backoff, or a stop (the request may not be
    /// re-sent, the budget is spent, the deadline is too near).
    fn retry(&self, outcome: &Outcome, attempt: &Attempt, rng: &mut impl Rng) -> Action {
        let cause = outcome.to_string();

        let safe_to_resend = match outcome {
            // Page 1 of the walk was processed: the retry sends it again.
            _ if attempt.later_page => false,
            Outcome::Failed(failure) => failure.traits().surely_unprocessed,
            // A rate limit turned the request away before it was processed.
            Outcome::Status { code, advice } => is_rate_limited(*code, advice),
            _ => false,
        };
        // Status polls are GETs; a submit is as idempotent as its method (a PUT or DELETE is).
        let idempotent = match attempt.phase {
            Phase::Poll | Phase::Submit => self.idempotent,
            Phase::Wait | Phase::Final => true,
        };
        let keyed = self.keyed && attempt.phase.sends_the_key();
        if !idempotent && !keyed && !self.retry_non_idempotent && !safe_to_resend {
            return Action::Stop(Stop::NotRetryable { cause });
        }

        // Before the first reply the service is not up yet: polled at the interval, no retry spent.
        if outcome.not_up_yet(attempt) {
            let (after, reason) = (self.grown_interval(attempt.not_yet), WaitReason::NotUpYet);
            return self.within_deadline(after, reason, attempt, outcome, Action::Poll { after, reason });
        }

        let failures = attempt.failures.saturating_add(1);
        if failures > self.retries {
            return Action::Stop(Stop::BudgetSpent { failures, cause });
        }

        let advised = match outcome {
            Outcome::Status { code, advice } => match (advice.retry_after, is_rate_limited(*code, advice)) {
                (Some(wait), _) => Some((wait, WaitReason::RetryAfter)),
                (None, true) => advice.reset.map(|wait| (wait, WaitReason::RateLimitReset)),
                (None, false) => None,
            },
            // A 2xx whose body is not JSON yet (202 Accepted, empty body): its Retry-After still wins.
            Outcome::Success { advice, .. } | Outcome::Submitted { advice } => {
                advice.retry_after.map(|wait| (wait, WaitReason::RetryAfter))
            }
            Outcome::Failed(_)
            | Outcome::StreamEnded { .. }
            | Outcome::StreamClosed
            | Outcome::Pending { .. }
            | Outcome::Open { .. } => None,
        };
        // Under a learned rate a bare 429 waits the fleet's turn, not a backoff of its own: the
        // 429 cuts the shared rate, whose bucket spaces the fleet; backing off on top would leave the limit unused.
        let learned = match outcome {
            Outcome::Status { code, advice } if attempt.paced && is_rate_limited(*code, advice) => {
                Some((Duration::ZERO, WaitReason::Rate))
            }
            _ => None,
        };
        let (after, reason) =
            advised.or(learned).unwrap_or_else(|| (self.backoff_delay(failures, rng), WaitReason::Backoff));
        // No room in the fleet's retry budget: no retry, the next regular poll (the server's advice when longer).
        if let Some(RetryRoom { room: false, counts }) = attempt.budget {
            let (after, reason) = match advised {
                Some((wait, reason)) if wait > self.interval => (wait, reason),
                _ => (self.interval, WaitReason::Interval),
            };
            return self.within_deadline(after, reason, attempt, outcome, Action::HeldBack { after, reason, counts });
        }
        self.within_deadline(after, reason, attempt, outcome, Action::Retry { after, reason })
    }

    /// The list of `code`, if the user listed it: `--fail-on`, `--done-on`,
    /// `--pending-on`, checked in that order. They judge the requests the
    /// user polls (and a `--submit`'s status polls), not a submit's own reply
    /// nor the final GET of what it made.
    pub fn listed(&self, code: u16, phase: Phase) -> Option<Listed> {
        if !lists_judge(phase) {
            return None;
        }
        let lists = [(&self.fail_on, Listed::Fail), (&self.done_on, Listed::Done), (&self.pending_on, Listed::Pending)];
        let named = lists.into_iter().find_map(|(codes, listed)| codes.contains(&code).then_some(listed));
        named.or_else(|| (self.done_refused && !(200..300).contains(&code)).then_some(Listed::NotGone))
    }

    /// What `outcome` means under these flags, as [`Policy::decide`] reads it
    /// (the loop records this reading, so that `-v` and the log say what was
    /// decided on). With `--done-on` a status ends the run, so a 2xx is done
    /// only when `--until` holds on it: without `--until` ([`Policy::no_until`]),
    /// the filters' "met" (nothing objected) is "not yet".
    pub fn read<'a>(&self, outcome: &'a Outcome, phase: Phase) -> Cow<'a, Outcome> {
        match outcome {
            Outcome::Success { verdict: Verdict::Met, advice } if self.no_until && self.waits_for_done_on(phase) => {
                Cow::Owned(Outcome::Success { verdict: Verdict::NotMet, advice: *advice })
            }
            // A port that still accepts, while --done-on waits for it to be gone.
            Outcome::Open { met: true } if self.waits_for_done_on(phase) => Cow::Owned(Outcome::Open { met: false }),
            _ => Cow::Borrowed(outcome),
        }
    }

    /// Whether `--done-on` names what ends the run (a status, or `refused`), so that a 2xx
    /// (without `--until`) or an open port is "not yet".
    fn waits_for_done_on(&self, phase: Phase) -> bool {
        (!self.done_on.is_empty() || self.done_refused) && lists_judge(phase)
    }

    /// Whether `outcome` met what the run waits for (counted by `--stable`):
    /// the condition held on a 2xx, or a status in `--done-on` came.
    pub fn holds(&self, outcome: &Outcome, phase: Phase) -> bool {
        match &*self.read(outcome, phase) {
            Outcome::Success { verdict: Verdict::Met, .. } | Outcome::Open { met: true } => true,
            Outcome::Status { code, .. } => self.listed(*code, phase) == Some(Listed::Done),
            Outcome::Failed(Failure::Refused) => self.done_refused && lists_judge(phase),
            _ => false,
        }
    }

    /// A status the user listed: an expected answer, never a failure.
    fn answer_listed(&self, listed: Listed, advice: &Advice, attempt: &Attempt, outcome: &Outcome) -> Action {
        let (after, reason) = match listed {
            Listed::Fail => return Action::FailWhen,
            Listed::Done if attempt.streak.saturating_add(1) >= self.stable => return Action::Done,
            // `--stable`: done, but not yet often enough in a row.
            Listed::Done => (self.interval, WaitReason::Interval),
            Listed::Pending => match self.next_poll(advice, attempt.not_yet) {
                (after, WaitReason::Interval) => (after, WaitReason::PendingOn),
                advised => advised,
            },
            Listed::NotGone => self.next_poll(advice, attempt.not_yet),
        };
        self.within_deadline(after, reason, attempt, outcome, Action::Poll { after, reason })
    }

    /// The wait before the next poll of a healthy, not-yet-done response,
    /// after `not_yet` such waits: the interval (grown with `--interval-max`),
    /// stretched by the server's advice.
    fn next_poll(&self, advice: &Advice, not_yet: u32) -> (Duration, WaitReason) {
        let mut next = (self.grown_interval(not_yet), WaitReason::Interval);
        // 202 Accepted + Retry-After: the async request-reply pattern.
        if let Some(wait) = advice.retry_after.filter(|wait| *wait > next.0) {
            next = (wait, WaitReason::RetryAfter);
        }
        // GitHub's floor for the next poll.
        if let Some(wait) = advice.poll_interval.filter(|wait| *wait > next.0) {
            next = (wait, WaitReason::PollInterval);
        }
        if let (Some(remaining), Some(reset)) = (advice.remaining, advice.reset) {
            // Spread what is left of the quota over the time until it resets.
            let paced = if remaining == 0 { reset } else { reset / u32::try_from(remaining).unwrap_or(u32::MAX) };
            if paced > next.0 {
                next = (paced, WaitReason::RateLimitReset);
            }
        }
        next
    }

    /// The "not yet" wait after `not_yet` of them: `--interval`, or with
    /// `--interval-max` `min(interval * 1.5^not_yet, interval-max)`. It never
    /// shrinks as `not_yet` grows.
    pub fn grown_interval(&self, not_yet: u32) -> Duration {
        let Some(max) = self.interval_max else { return self.interval };
        // Grown step by step and stopped once capped, as the backoff is: no power overflows.
        let mut d = self.interval.min(max);
        for _ in 0..not_yet {
            if d.is_zero() || d == max {
                break;
            }
            d = d.mul_f64(GROWTH).min(max);
        }
        d
    }

    /// `d = min(backoff * 2^(n-1), backoff-max)`, then jitter.
    pub fn backoff_delay(&self, retry: u32, rng: &mut impl Rng) -> Duration {
        // Doubled step by step, not by a `u32` factor that would saturate at 2^32
        // and hold a tiny backoff below the cap forever; stops once capped.
        let mut d = self.backoff.min(self.backoff_max);
        for _ in 1..retry {
            if d.is_zero() || d == self.backoff_max {
                break;
            }
            d = d.saturating_mul(2).min(self.backoff_max);
        }
        match self.jitter {
            Jitter::None => d,
            Jitter::Full => d.mul_f64(rng.random_range(0.0..=1.0)),
            Jitter::Equal => d / 2 + (d / 2).mul_f64(rng.random_range(0.0..=1.0)),
        }
    }

    /// 408, 429, 5xx but 501 ([`StatusTraits`], beside what the breaker counts),
    /// `--retry-on`; and 409 for a request that carries an idempotency key (the
    /// server is still processing the first one).
    fn is_transient_status(&self, code: u16, phase: Phase) -> bool {
        StatusTraits::of(code).transient
            || self.retry_on.contains(&code)
            || code == 409 && self.keyed && phase.sends_the_key()
    }

    /// Keeps `action` only if the next attempt can start before the deadline.
    fn within_deadline(
        &self,
        wait: Duration,
        reason: WaitReason,
        attempt: &Attempt,
        outcome: &Outcome,
        action: Action,
    ) -> Action {
        let cause = || match outcome {
            Outcome::Success { verdict: Verdict::NotMet, .. } => Some("condition not met yet".to_string()),
            Outcome::Success { verdict: Verdict::Met, .. } => Some("condition met, not yet --stable".to_string()),
            Outcome::Open { met: true } => Some("open, not yet --stable".to_string()),
            Outcome::Open { met: false } => Some("still open (--done-on refused)".to_string()),
            Outcome::Failed(Failure::Refused) if self.done_refused && lists_judge(attempt.phase) => {
                Some("refused (--done-on), not yet --stable".to_string())
            }
            Outcome::Status { code, .. } => match self.listed(*code, attempt.phase) {
                Some(Listed::Done) => Some(format!("HTTP {code} (--done-on), not yet --stable")),
                Some(Listed::NotGone) => Some(format!("HTTP {code}, still answering (--done-on refused)")),
                Some(listed) => Some(format!("HTTP {code} ({})", listed.flag())),
                None => Some(outcome.to_string()),
            },
            Outcome::Failed(failure) if outcome.not_up_yet(attempt) => Some(never_reached(failure)),
            other => Some(other.to_string()),
        };
        match attempt.remaining {
            Some(remaining) if wait >= remaining => {
                Action::Stop(Stop::Deadline { wait, reason, remaining, cause: cause() })
            }
            // Only the server's advice is suspect; a long --interval or --backoff is the user's choice.
            None if wait > MAX_ADVISED_WAIT && reason.is_advice() => {
                Action::Stop(Stop::WaitTooLong { wait, reason, cause: cause().unwrap_or_default() })
            }
            _ => action,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Rows for the rate-limited 403; the full table of `decide` is in `tests/it/policy.rs`.
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use WaitReason::{RateLimitReset, RetryAfter};

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    /// `code` with `remaining` left, a reset in `reset` seconds and a `Retry-After` of `retry_after`.
    fn status(code: u16, remaining: Option<u64>, reset: Option<u64>, retry_after: Option<u64>) -> Outcome {
        let advice =
            Advice { remaining, reset: reset.map(secs), retry_after: retry_after.map(secs), ..Advice::default() };
        Outcome::Status { code, advice }
    }

    fn retry(after: u64, reason: WaitReason) -> Action {
        Action::Retry { after: secs(after), reason }
    }

    fn permanent(code: u16) -> Action {
        Action::Stop(Stop::Permanent { cause: format!("HTTP {code}") })
    }

    fn first(remaining: Option<u64>) -> Attempt {
        Attempt { number: 1, failures: 0, remaining: remaining.map(secs), ..Attempt::default() }
    }

    #[test]
    fn a_403_with_no_quota_left_is_a_rate_limit_like_429() {
        let (get, post) = (true, false);
        let decide = |idempotent, outcome: &Outcome, attempt: &Attempt| {
            let policy = Policy { jitter: Jitter::None, idempotent, ..Policy::default() };
            policy.decide(outcome, attempt, &mut StdRng::seed_from_u64(1))
        };
        let rows: [(&str, bool, Outcome, Action); 9] = [
            ("403 + no quota + reset", get, status(403, Some(0), Some(30), None), retry(30, RateLimitReset)),
            ("429 + no quota + reset", get, status(429, Some(0), Some(30), None), retry(30, RateLimitReset)),
            ("403 + no quota + Retry-After", get, status(403, Some(0), None, Some(7)), retry(7, RetryAfter)),
            ("Retry-After wins", get, status(403, Some(0), Some(30), Some(7)), retry(7, RetryAfter)),
            ("POST may re-send it", post, status(403, Some(0), Some(30), None), retry(30, RateLimitReset)),
            ("no reset, no limit", get, status(403, Some(0), None, None), permanent(403)),
            ("quota left", get, status(403, Some(5), Some(30), None), permanent(403)),
            ("a plain 403", get, status(403, None, None, None), permanent(403)),
            ("401 is never a limit", get, status(401, Some(0), Some(30), None), permanent(401)),
        ];
        for (what, idempotent, outcome, want) in rows {
            assert_eq!(decide(idempotent, &outcome, &first(None)), want, "{what}");
        }

        let limited = status(403, Some(0), Some(30), None);
        let spent = Attempt { number: 7, failures: 6, remaining: None, ..Attempt::default() };
        let cause = "HTTP 403".to_string();
        assert_eq!(
            decide(get, &limited, &spent),
            Action::Stop(Stop::BudgetSpent { failures: 7, cause: cause.clone() })
        );
        let (wait, remaining) = (secs(30), secs(10));
        let late = Stop::Deadline { wait, reason: RateLimitReset, remaining, cause: Some(cause) };
        assert_eq!(decide(get, &limited, &first(Some(10))), Action::Stop(late), "a reset past the deadline");
    }

    #[test]
    fn the_guide_lists_every_error_kind_of_the_json_log() {
        // The crate as packaged carries no docs/.
        let Ok(guide) = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/guide/output.md")) else {
            return;
        };
        let row = guide.lines().find(|line| line.starts_with("| `error`, `error_kind` |")).unwrap_or_default();
        use Failure::*;
        #[rustfmt::skip] // One list, not a column.
        let every = [
            Refused, Dns, ConnectTimeout, Timeout, Reset, Closed, Truncated, Malformed, Tls, TooManyRedirects,
            BadRedirect, BodyTooLarge, ProxyRefused, NotASocket, NoPermission, Credential, CertRefused, CertWanted,
            Unsendable,
        ];
        for kind in every.map(Failure::kind).into_iter().chain(["not_json"]) {
            assert!(row.contains(&format!("`{kind}`")), "`{kind}` is missing: {row}");
        }
    }

    #[test]
    fn pacing_spreads_the_quota_over_the_reset() {
        let ok = |remaining, reset| Outcome::Success {
            verdict: Verdict::NotMet,
            advice: Advice { remaining: Some(remaining), reset: Some(secs(reset)), ..Advice::default() },
        };
        let poll = |after, reason| Action::Poll { after: secs(after), reason };
        let rows = [
            (ok(10, 60), poll(6, RateLimitReset)),
            (ok(0, 60), poll(60, RateLimitReset)),
            // Plenty of quota: the interval stands.
            (ok(1000, 60), poll(1, WaitReason::Interval)),
        ];
        let mut rng = StdRng::seed_from_u64(1);
        for (outcome, want) in rows {
            assert_eq!(Policy::default().decide(&outcome, &first(None), &mut rng), want, "{outcome:?}");
        }
    }
}
