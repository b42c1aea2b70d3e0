//! What is known about one key (an origin, or `--state-key`), and the two
//! steps every attempt takes on it: [`Origin::admit`] before, [`Origin::record`]
//! after. Pure: time is epoch milliseconds passed in. The file and memory
//! stores run these steps; the Redis store runs the same rules in Lua.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Admission, Ask, AttemptReport, Fleet, Refusal, Turn};
use crate::rules::attempt::RetryRoom;
use crate::rules::breaker::{Admit, Breaker, BreakerState};
use crate::rules::bucket::Bucket;
use crate::rules::budget::Traffic;
use crate::rules::cubic::{self, Learned};
use crate::rules::policy::WaitReason;
use crate::util::clock;
use crate::util::text::LAST_RFC3339_MS;

/// Larger bodies are not kept for `--fallback last`: the file is read and
/// written around every attempt, so it must stay small. Under 1 MiB (1 KiB
/// less), so that a body Redis keeps comes back in one reply of at most
/// 1 MiB, its framing included (`redis/node.rs`); both stores keep the same.
pub(crate) const MAX_KEPT_BODY: usize = (1 << 20) - 1024;

/// Last good bodies kept per key; the oldest goes first.
pub(crate) const MAX_KEPT_BODIES: usize = 16;

/// How long a learned rate is kept after its cut: by then the curve has
/// grown past any limit, as if no `429` had come.
pub(crate) const LEARNED_KEPT: u64 = 3600 * 1000;

/// How far ahead a learned rate hands out turns: a process whose turn is
/// further takes a ticket and asks again near it, so that the turns a cut
/// cannot take back (taken at the old rate) are at most this far ahead.
pub(crate) const HORIZON: u64 = 250;

/// What is known about one key. The serde attributes are the state file's
/// format; the fields after `last_good` are written only once used, so a
/// file without them is byte for byte what the first version wrote.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Origin {
    #[serde(rename = "next_slot_ms", default)]
    pub bucket: Bucket,
    /// Epoch ms before which nothing is sent: the server's `Retry-After` or
    /// rate-limit reset that a run honoured, so the next run honours it too.
    #[serde(rename = "not_before_ms", default, deserialize_with = "clock::stored_ms")]
    pub not_before: u64,
    #[serde(default)]
    pub breaker: Breaker,
    /// The final body of the last run that ended with exit 0, by URL (redacted).
    #[serde(default)]
    pub last_good: BTreeMap<String, GoodBody>,
    /// `--retry-budget` and `--rate auto`: the fleet's requests and retries per second.
    #[serde(default, skip_serializing_if = "Traffic::is_empty", deserialize_with = "lenient")]
    pub traffic: Traffic,
    /// `--rate auto`: the rate learned at the last `429`.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub learned: Option<Learned>,
    /// `--rate auto`: epoch ms of the next ticket (see [`HORIZON`]).
    #[serde(rename = "queue_ms", default, skip_serializing_if = "is_zero", deserialize_with = "clock::stored_ms")]
    pub queue: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A value of the wrong shape is one that [`Origin::checked`] drops and
/// names ([`Odd`]), not a state file that cannot
/// be read at all.
fn lenient<'de, D: serde::Deserializer<'de>, T: serde::de::DeserializeOwned + Odd>(
    deserializer: D,
) -> Result<T, D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).unwrap_or_else(|_| T::odd()))
}

/// A value read from a store that [`Origin::checked`] will find odd.
pub(crate) trait Odd {
    fn odd() -> Self;
}

impl Odd for Traffic {
    fn odd() -> Traffic {
        Traffic::odd()
    }
}

impl Odd for Option<Learned> {
    fn odd() -> Option<Learned> {
        Some(Learned { sending: f64::NAN, cut_at: 0 })
    }
}

/// A kept body: text stays readable in the file, anything else is base64.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "GoodBodyForm", try_from = "GoodBodyForm")]
pub(crate) struct GoodBody {
    /// Epoch ms when it was kept.
    pub at: u64,
    pub body: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
struct GoodBodyForm {
    #[serde(default, deserialize_with = "clock::stored_ms")]
    at_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    base64: Option<String>,
}

impl From<GoodBody> for GoodBodyForm {
    fn from(kept: GoodBody) -> GoodBodyForm {
        use base64::Engine as _;
        match String::from_utf8(kept.body) {
            Ok(text) => GoodBodyForm { at_ms: kept.at, text: Some(text), base64: None },
            Err(e) => GoodBodyForm {
                at_ms: kept.at,
                text: None,
                base64: Some(base64::engine::general_purpose::STANDARD.encode(e.as_bytes())),
            },
        }
    }
}

impl TryFrom<GoodBodyForm> for GoodBody {
    type Error = String;

    fn try_from(kept: GoodBodyForm) -> Result<GoodBody, String> {
        use base64::Engine as _;
        let body = match (kept.text, kept.base64) {
            (Some(text), _) => text.into_bytes(),
            (None, Some(encoded)) => base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| format!("last_good: bad base64: {e}"))?,
            (None, None) => return Err("last_good: no `text` or `base64`".into()),
        };
        Ok(GoodBody { at: kept.at_ms, body })
    }
}

/// The furthest ahead a time read from a state store may be: a server's
/// advice is honoured for at most this long, and a breaker's cool-down and a
/// probe's lease are far shorter. A time past it (a year 9999, a lease of
/// `u64::MAX`) is hostile or broken, and is treated as absent.
pub(crate) const MAX_AHEAD: u64 = 24 * 3600 * 1000;

/// The most outcomes a breaker's window keeps (`--breaker-window`'s maximum).
pub(crate) const MAX_WINDOW: usize = 1000;

impl Origin {
    /// This origin as read from a store, made safe to reason with at `now`:
    /// a time that is negative (read as `u64::MAX`, [`clock::stored_ms`]) or
    /// more than [`MAX_AHEAD`] away is absent (the advice forgotten, the
    /// breaker closed, a kept body as old as can be), so is a cool-down or a
    /// latency that is negative or past year 9999, and a window longer than
    /// [`MAX_WINDOW`] keeps its newest outcomes. Says what it found first and
    /// what it did, if anything.
    pub(crate) fn checked(&mut self, now: u64) -> Option<&'static str> {
        let far = |at: u64| at > now.saturating_add(MAX_AHEAD);
        let mut found = Vec::new();
        if far(self.not_before) {
            self.not_before = 0;
            found.push("a wait that is negative or more than 24 h away; treated as absent");
        }
        if far(self.bucket.next_free) {
            self.bucket = Bucket::default();
            found.push("a rate slot that is negative or more than 24 h away; treated as absent");
        }
        if let BreakerState::Open { until: at } | BreakerState::HalfOpen { lease_until: at, .. } = self.breaker.state
            && far(at)
        {
            self.breaker.state = BreakerState::Closed;
            found.push("a breaker time that is negative or more than 24 h away; treated as absent");
        }
        if self.breaker.cooldown > LAST_RFC3339_MS {
            self.breaker.cooldown = 0;
            found.push("a breaker cool-down that is negative or past year 9999; treated as absent");
        }
        if self.breaker.window.iter().any(|sample| sample.latency > LAST_RFC3339_MS) {
            self.breaker.window.clear();
            found.push("a breaker window with a latency that is negative or past year 9999; treated as absent");
        }
        for kept in self.last_good.values_mut().filter(|kept| far(kept.at)) {
            kept.at = 0;
            found.push("a last good body kept at a time negative or more than 24 h away; treated as kept long ago");
        }
        if let Some(extra) = self.breaker.window.len().checked_sub(MAX_WINDOW).filter(|extra| *extra > 0) {
            self.breaker.window.drain(..extra);
            found.push("a breaker window of more than 1000 outcomes; cut to its newest 1000");
        }
        if self.traffic.checked(now) {
            found.push("request counts that are not counts poll keeps; treated as absent");
        }
        if self.learned.is_some_and(|learned| !learned.is_sound() || far(learned.cut_at)) {
            self.learned = None;
            found.push("a learned rate that is negative, not a number or past 1,000,000 a second; treated as absent");
        }
        if far(self.queue) {
            self.queue = 0;
            found.push("a ticket time that is negative or more than 24 h away; treated as absent");
        }
        found.first().copied()
    }

    /// Before an attempt at `now`: the breaker first, then the server's "not
    /// before", then the rate slot (`--rate`, or the learned rate, which hands
    /// out a ticket instead of a turn past [`HORIZON`]). Commits the slot (and
    /// a probe), and counts the request, only when it says `Go`.
    pub(crate) fn admit(&mut self, now: u64, ask: &Ask) -> Turn {
        let probe = match ask.breaker.map(|_| self.breaker.admit(now)) {
            Some(Admit::Reject(rejection)) => return Turn::alone(Admission::Open(Refusal::new(rejection, now))),
            Some(Admit::Probe) => true,
            Some(Admit::Pass) | None => false,
        };
        if self.learned.is_some_and(|learned| now.saturating_sub(learned.cut_at) > LEARNED_KEPT) {
            self.learned = None;
        }
        let rate = self.learned.filter(|_| ask.auto).map(|learned| learned.rate(now));
        let spacing = rate.map(cubic::spacing_ms).or(ask.spacing);
        let advised = self.not_before.max(now);
        let at = if spacing.is_some() { self.bucket.slot(advised) } else { advised };
        let why = if at > advised {
            Some(WaitReason::Rate)
        } else if at > now {
            Some(WaitReason::StoredAdvice)
        } else {
            None
        };
        let too_late = |wait: u64| ask.deadline_in.is_some_and(|left| wait >= left);
        if let (Some(spacing), Some(_)) = (spacing, rate)
            && at > now + HORIZON
        {
            let ticket = self.queue.max(at);
            let wait = ticket - HORIZON - now;
            if too_late(wait) {
                return Turn::alone(Admission::TooLate { wait, why: WaitReason::Rate });
            }
            self.queue = ticket.saturating_add(spacing);
            return Turn { admission: Admission::Defer { wait }, fleet: Fleet { rate, ..Fleet::default() } };
        }
        let wait = at - now;
        if let Some(why) = why
            && too_late(wait)
        {
            return Turn::alone(Admission::TooLate { wait, why });
        }
        if let Some(spacing) = spacing {
            self.bucket.take(at, spacing);
        }
        if let (true, Some(settings)) = (probe, &ask.breaker) {
            self.breaker.start_probe(ask.pid, at, settings, ask.lease);
        }
        if ask.budget.is_some() || ask.auto {
            self.traffic.count(now, ask.retry);
        }
        let budget = ask.budget.map(|budget| {
            let counts = self.traffic.window(now);
            RetryRoom { room: budget.has_room(counts), counts }
        });
        Turn { admission: Admission::Go { wait, why }, fleet: Fleet { budget, rate, at: now } }
    }

    /// After an attempt at `now`: keep the server's advice and a good body,
    /// and feed the breaker. Returns the refusal a caller would now get, when
    /// the breaker is open afterwards.
    pub(crate) fn record(&mut self, now: u64, report: &AttemptReport) -> Option<Refusal> {
        if let Some(not_before_in) = report.not_before_in {
            self.not_before = self.not_before.max(now.saturating_add(not_before_in));
        }
        if let Some((url, body)) = report.good_body {
            self.keep(url, body, now);
        }
        // A 429 cuts the learned rate, unless its turn was taken before the last cut (at the old rate): it says nothing new.
        if let Some(sent) = report.throttled_at
            && self.learned.is_none_or(|learned| learned.cut_at <= sent)
        {
            self.learned = Some(Learned::cut(self.learned, self.traffic.last_second(now), now));
        }
        let settings = report.breaker.as_ref()?;
        self.breaker.record(now, report.pid, report.sample, settings).map(|rejection| Refusal::new(rejection, now))
    }

    /// Keeps `body` as the last good body of `url`. A body too large to keep
    /// drops the older one, so `last` never serves a body older than the last success.
    pub(crate) fn keep(&mut self, url: &str, body: &[u8], now: u64) {
        if body.len() > MAX_KEPT_BODY {
            self.last_good.remove(url);
            return;
        }
        self.last_good.insert(url.to_string(), GoodBody { at: now, body: body.to_vec() });
        while self.last_good.len() > MAX_KEPT_BODIES {
            let oldest = self.last_good.iter().min_by_key(|(_, kept)| kept.at).map(|(url, _)| url.clone());
            if let Some(url) = oldest {
                self.last_good.remove(&url);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::breaker::{Sample, Settings};

    const NOW: u64 = 1_795_000_000_000;

    fn ask() -> Ask {
        Ask { pid: 1, spacing: Some(100), ..Ask::default() }
    }

    #[test]
    fn values_from_a_store_are_checked_before_anything_reasons_with_them() {
        let year_9999 = 253_402_300_800_000;
        let hostile = Origin {
            bucket: Bucket { next_free: u64::MAX },
            not_before: year_9999,
            breaker: Breaker {
                state: BreakerState::HalfOpen { pid: 7, lease_until: u64::MAX },
                window: (0..1500).map(|n| Sample { ok: n % 2 == 0, latency: n }).collect(),
                ..Breaker::default()
            },
            ..Origin::default()
        };
        let mut checked = hostile.clone();
        assert!(checked.checked(NOW).is_some());
        assert_eq!((checked.not_before, checked.bucket.next_free, checked.breaker.state), (0, 0, BreakerState::Closed));
        assert_eq!(checked.breaker.window.len(), MAX_WINDOW);
        assert_eq!(checked.breaker.window.front().map(|s| s.latency), Some(500), "the newest outcomes are kept");
        // Negative numbers read as u64::MAX (clock::stored_ms): absent, each value alone.
        let negative = r#"{"not_before_ms":-1,"breaker":{"state":"closed","cooldown_ms":-2,"window":[{"ok":true,"ms":-3}]},
            "last_good":{"u":{"at_ms":-4,"text":"kept"}}}"#;
        let mut origin: Origin = serde_json::from_str(negative).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(origin.checked(NOW), Some("a wait that is negative or more than 24 h away; treated as absent"));
        assert_eq!((origin.not_before, origin.breaker.cooldown, origin.breaker.window.len()), (0, 0, 0));
        assert_eq!(origin.last_good.get("u").map(|kept| (kept.at, &kept.body[..])), Some((0, &b"kept"[..])));
        // What is within a day stays as it is.
        let sound = Origin {
            not_before: NOW + 60_000,
            breaker: Breaker { state: BreakerState::Open { until: NOW + 30_000 }, ..Breaker::default() },
            ..Origin::default()
        };
        let mut same = sound.clone();
        assert_eq!(same.checked(NOW), None);
        assert_eq!(same, sound);
    }

    #[test]
    fn admit_waits_for_the_slot_and_commits_it() {
        let mut origin = Origin::default();
        assert_eq!(origin.admit(NOW, &ask()).admission, Admission::Go { wait: 0, why: None });
        assert_eq!(origin.admit(NOW, &ask()).admission, Admission::Go { wait: 100, why: Some(WaitReason::Rate) });
        assert_eq!(origin.bucket.next_free, NOW + 200);
        // Without --rate there is no slot to wait for.
        let free = Ask { spacing: None, ..ask() };
        assert_eq!(origin.admit(NOW, &free).admission, Admission::Go { wait: 0, why: None });
    }

    #[test]
    fn admit_honours_the_servers_not_before_then_the_slot() {
        let mut origin = Origin { not_before: NOW + 5_000, ..Origin::default() };
        assert_eq!(
            origin.admit(NOW, &ask()).admission,
            Admission::Go { wait: 5_000, why: Some(WaitReason::StoredAdvice) }
        );
        assert_eq!(origin.admit(NOW, &ask()).admission, Admission::Go { wait: 5_100, why: Some(WaitReason::Rate) });
    }

    #[test]
    fn admit_never_waits_into_the_deadline_and_then_takes_nothing() {
        let mut origin = Origin { not_before: NOW + 5_000, ..Origin::default() };
        let before = origin.clone();
        let late = Ask { deadline_in: Some(5_000), ..ask() };
        assert_eq!(
            origin.admit(NOW, &late).admission,
            Admission::TooLate { wait: 5_000, why: WaitReason::StoredAdvice }
        );
        assert_eq!(origin, before, "a slot that is not used is not taken");
        let ok = Ask { deadline_in: Some(5_001), ..ask() };
        assert!(matches!(origin.admit(NOW, &ok).admission, Admission::Go { .. }));
    }

    #[test]
    fn admit_asks_the_breaker_first_and_records_the_probe() {
        let settings = Settings::default();
        let mut origin = Origin::default();
        origin.breaker.cooldown = 1_000;
        origin.breaker.state = BreakerState::Open { until: NOW + 1_000 };
        origin.breaker.reason = "down".into();
        let with_breaker = Ask { breaker: Some(settings), ..ask() };
        let Admission::Open(refusal) = origin.admit(NOW, &with_breaker).admission else { panic!("open") };
        assert_eq!((refusal.retry_in, refusal.reason.as_str()), (1_000, "down"));
        assert_eq!(origin.bucket, Bucket::default(), "a rejected caller takes no slot");

        let later = Ask { pid: 7, ..with_breaker };
        assert_eq!(origin.admit(NOW + 1_000, &later).admission, Admission::Go { wait: 0, why: None });
        assert_eq!(origin.breaker.state, BreakerState::HalfOpen { pid: 7, lease_until: NOW + 2_000 });
        let other = Ask { pid: 8, ..later };
        assert!(matches!(
            origin.admit(NOW + 1_000, &other).admission,
            Admission::Open(Refusal { prober: Some(7), .. })
        ));
    }

    #[test]
    fn record_keeps_advice_good_bodies_and_feeds_the_breaker() {
        let settings = Settings::default();
        let mut origin = Origin::default();
        let report = AttemptReport {
            pid: 1,
            sample: Sample { ok: false, latency: 1 },
            not_before_in: Some(3_000),
            good_body: None,
            breaker: Some(settings),
            throttled_at: None,
        };
        for _ in 0..4 {
            assert_eq!(origin.record(NOW, &report), None);
        }
        assert_eq!(origin.not_before, NOW + 3_000);
        let earlier = AttemptReport { not_before_in: Some(1_000), ..report };
        assert!(origin.record(NOW, &earlier).is_some(), "the fifth failure opens the breaker");
        assert_eq!(origin.not_before, NOW + 3_000, "the later advice stands");

        let good = AttemptReport { good_body: Some(("http://h/a", b"{\"ok\":1}")), ..report };
        origin.record(NOW, &good);
        assert_eq!(origin.last_good.get("http://h/a").map(|k| &k.body[..]), Some(&b"{\"ok\":1}"[..]));
        let huge = vec![b' '; MAX_KEPT_BODY + 1];
        origin.record(NOW, &AttemptReport { good_body: Some(("http://h/a", &huge)), ..report });
        assert!(origin.last_good.is_empty(), "a body too large to keep drops the older one");
    }

    #[test]
    fn only_the_newest_bodies_are_kept() {
        let mut origin = Origin::default();
        for i in 0..(MAX_KEPT_BODIES as u64 + 3) {
            origin.keep(&format!("http://h/{i}"), b"1", NOW + i);
        }
        assert_eq!(origin.last_good.len(), MAX_KEPT_BODIES);
        assert!(!origin.last_good.contains_key("http://h/2"));
        assert!(origin.last_good.contains_key("http://h/3"));
    }
}
