//! The `--state redis://...` store: the same state as the file store, kept in
//! Redis so that every machine that names the server shares it. Each step is
//! one Lua script run atomically on the server (`admit.lua`, `record.lua`,
//! `last_good.lua` beside this file), sent by EVALSHA and loaded on NOSCRIPT,
//! so two machines never race a read-modify-write, and all times come from
//! the server's own clock (`TIME`), so machines whose clocks disagree still
//! share one budget.
//!
//! Keys, all under `poll:{KEY}:` (KEY: the origin, or `--state-key`; the
//! braces are a hash tag, see [`key`]), each with an expiry so that a shared
//! Redis never fills with poll's leftovers. [`PARTS`] names them; what each
//! holds and when it expires is in the one table of them, "Keys and expiries"
//! in `docs/DESIGN.md`, which a test below checks against the scripts.
//!
//! No lock is held across a request: the half-open probe is a lease (`SET
//! probe TOKEN NX PX LEASE`) that exactly one process in the fleet wins and
//! that expires by itself. It outlasts the probe (see [`super::Ask::lease`]),
//! so no second probe starts while the first is in flight, and a prober
//! killed with `kill -9` holds the origin for no longer than the lease, as in
//! the file store.
//!
//! Where the keys are: the server a URL names may be a single node, or any
//! node of a Redis Cluster. The first connection asks it (`CLUSTER SLOTS`);
//! a cluster node answers with its slot map, and each step then goes to the
//! master of its slot (all keys of one state key share one slot), follows
//! `MOVED` and `ASK`, and waits out a `TRYAGAIN` within its time. A
//! `redis+sentinel://` URL asks the Sentinels where the master is, and asks
//! again when the master fails or turns out to be a replica. Each script is
//! loaded on the node that runs it, when that node says NOSCRIPT.
//!
//! A step that cannot connect, fails, or takes longer than its timeout (a
//! second, never past `--timeout`) is an `Err`; the connection is dropped and
//! made again at the next step, so a Redis that comes back is used again.

mod cluster;
mod node;
mod route;
mod sentinel;
#[cfg(test)]
mod twins;
mod url;

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use ::redis::{FromRedisValue, RedisError, Script, ToRedisArgs, Value};

use self::node::Dialer;
use self::route::{Router, StepFailure};
pub(crate) use self::url::RedisUrl;
use super::origin::{HORIZON, LEARNED_KEPT, MAX_AHEAD, MAX_KEPT_BODIES, MAX_KEPT_BODY, MAX_WINDOW};
use super::{Admission, Ask, AttemptReport, Fleet, Refusal, Store, Turn};
use crate::net::tls::Trust;
use crate::rules::attempt::RetryRoom;
use crate::rules::breaker::{self, MAX_COOLDOWN, MIN_OUTCOMES, Settings};
use crate::rules::budget::{MAX_COUNT, WINDOW_SECS, Window};
use crate::rules::cubic::{BETA, MAX_RATE, MIN_RATE, SCALE};
use crate::rules::policy::WaitReason;
use crate::util::clock;
use crate::util::text::{LAST_RFC3339_MS, printable, shorten};

/// Every key poll writes starts with this.
pub(crate) const PREFIX: &str = "poll:";

/// How long a breaker nobody writes to is kept (or the cool-down cap, when
/// longer): a window of outcomes older than that says little of the origin now.
pub(crate) const BREAKER_KEPT: Duration = Duration::from_secs(60 * 60);

/// How long a last good body is kept after it was written.
pub(crate) const BODY_KEPT: Duration = Duration::from_secs(24 * 60 * 60);

// Each script starts with the bounds of what it reads, the one clock they
// share and the one check of what they read (`checked.lua`); the two that
// judge the breaker, with the one refusal they share and the fleet's counts.
static ADMIT: LazyLock<Script> = LazyLock::new(|| {
    script(&[
        include_str!("clock.lua"),
        include_str!("checked.lua"),
        include_str!("fleet.lua"),
        include_str!("refusal.lua"),
        include_str!("admit.lua"),
    ])
});
static RECORD: LazyLock<Script> = LazyLock::new(|| {
    script(&[
        include_str!("clock.lua"),
        include_str!("checked.lua"),
        include_str!("fleet.lua"),
        include_str!("refusal.lua"),
        include_str!("record.lua"),
    ])
});
static LAST_GOOD: LazyLock<Script> =
    LazyLock::new(|| script(&[include_str!("clock.lua"), include_str!("checked.lua"), include_str!("last_good.lua")]));

/// A script of `parts`, after the bounds `checked.lua` holds what it reads
/// to, written from the Rust rules the file store follows, so the two stores
/// can never disagree on them.
fn script(parts: &[&str]) -> Script {
    Script::new(&source(parts))
}

/// The text of [`script`]: the bounds, then `parts`.
fn source(parts: &[&str]) -> String {
    let bounds = format!(
        "local MAX_AHEAD, MAX_WINDOW, MAX_KEPT_BODY, LAST = {MAX_AHEAD}, {MAX_WINDOW}, {MAX_KEPT_BODY}, {LAST_RFC3339_MS}\n\
         local WINDOW_SECS, MAX_COUNT, LEARNED_KEPT, HORIZON = {WINDOW_SECS}, {MAX_COUNT}, {LEARNED_KEPT}, {HORIZON}\n\
         local BETA, SCALE, MIN_RATE, MAX_RATE = {BETA:?}, {SCALE:?}, {MIN_RATE:?}, {MAX_RATE:?}\n"
    );
    [bounds.as_str()].iter().chain(parts).copied().collect()
}

// A kept body comes back as one reply (`$LEN\r\nBODY\r\n`): it must fit in what a step reads.
const _: () = assert!(MAX_KEPT_BODY + 64 <= node::MAX_REPLY);

/// The parts of a state key, as the scripts name them when they find one odd
/// (and as the key table of `docs/DESIGN.md` lists them, in this order).
const PARTS: [&str; 9] = ["rate", "advice", "breaker", "probe", "last", "last_at", "traffic", "learned", "queue"];

/// The shared state in Redis: one connection per server it talks to, each made on demand.
pub(crate) struct RedisStore {
    /// Where each step goes: the node, the cluster's slot owner, the Sentinels' master.
    router: Router,
    /// The URL for messages, userinfo redacted.
    shown: String,
    /// Scrubbed from every message, whatever said it.
    secrets: Vec<String>,
    /// With the pid, this process's token: pids repeat across machines.
    nonce: u64,
    /// Pins the scripts' clock (epoch ms), for tests; `None`: the Redis server's `TIME`.
    now: Option<u64>,
    /// Warnings not yet shown: keys holding values poll did not write.
    notes: Vec<String>,
    /// Such a key was warned of (once a run).
    odd_said: bool,
}

/// One step: a script by EVALSHA, with its keys (all of one state key, so in one slot) and arguments.
struct Call {
    script: &'static Script,
    cmd: ::redis::Cmd,
    slot: u16,
}

impl Call {
    /// EVALSHA of `script` on the `parts` of the state kept under `state_key`.
    fn new(script: &'static LazyLock<Script>, state_key: &str, parts: &[&str]) -> Call {
        let script: &'static Script = script;
        let mut cmd = ::redis::cmd("EVALSHA");
        cmd.arg(script.get_hash()).arg(parts.len());
        for part in parts {
            cmd.arg(key(state_key, part));
        }
        Call { script, cmd, slot: cluster::slot(key(state_key, "").as_bytes()) }
    }

    fn arg<T: ToRedisArgs>(&mut self, arg: T) -> &mut Call {
        self.cmd.arg(arg);
        self
    }
}

impl RedisStore {
    /// A store for `url`; `rediss://` trusts what `https://` does (`trust`).
    /// Nothing is sent yet: the first step connects.
    pub(crate) fn new(url: &RedisUrl, trust: &Trust) -> Result<RedisStore, String> {
        // The TLS configuration is made now, before the first request: a bad one is a usage error.
        let dialer = Dialer::new(url, trust).map_err(|e| scrub(&e, &url.secrets))?;
        Ok(RedisStore {
            router: Router::new(&url.servers, dialer),
            shown: url.shown.clone(),
            secrets: url.secrets.clone(),
            nonce: rand::random(),
            now: None,
            notes: Vec::new(),
            odd_said: false,
        })
    }

    fn token(&self, pid: u32) -> String {
        format!("{pid}:{:016x}", self.nonce)
    }

    /// The scripts' first argument: the pinned clock, or "" for the server's.
    fn now_arg(&self) -> String {
        self.now.map(|now| now.to_string()).unwrap_or_default()
    }

    /// Runs `call` (the admit or record script) within `timeout` and reads its
    /// answer; what the script found odd in `state_key` is said once.
    fn answer(&mut self, timeout: Duration, call: &Call, state_key: &str) -> Result<Turn, String> {
        let mut values: Vec<Value> = self.step(timeout, call)?;
        let unreadable = |e: ::redis::ParsingError, store: &RedisStore| {
            scrub(&store.router.describe(&StepFailure::Redis(RedisError::from(e)), timeout), &store.secrets)
        };
        // The fleet's five after the sixth (checked.lua); a server that answers as an older poll's did has none.
        let fleet = if values.len() == 11 { values.split_off(6) } else { Vec::new() };
        let fleet = match fleet.is_empty() {
            true => Fleet::default(),
            false => fleet_of(FleetAnswer::from_redis_value(Value::Array(fleet)).map_err(|e| unreadable(e, self))?),
        };
        // The sixth, what the script set aside (checked.lua).
        let odd = if values.len() == 6 { values.pop() } else { None };
        let odd: String = odd.map(FromRedisValue::from_redis_value).transpose().ok().flatten().unwrap_or_default();
        let reply = ScriptAnswer::from_redis_value(Value::Array(values)).map_err(|e| unreadable(e, self))?;
        let parts: Vec<String> = odd
            .split(',')
            .filter(|part| PARTS.contains(part))
            .map(|part| format!("`{}`", key(state_key, part)))
            .collect();
        if !parts.is_empty() && !self.odd_said {
            self.odd_said = true;
            let holds = if parts.len() == 1 { "holds" } else { "hold" };
            self.notes.push(format!(
                "--state {}: {} {holds} a value poll did not write (not JSON, of the wrong type, or out of bounds); \
                 treated as absent (is something else writing it?)",
                self.name(),
                parts.join(", ")
            ));
        }
        Ok(Turn { admission: admission(reply)?, fleet })
    }

    /// Runs `call` within `timeout` and reads its answer as a `T`.
    fn step<T: FromRedisValue>(&mut self, timeout: Duration, call: &Call) -> Result<T, String> {
        let timeout = timeout.max(Duration::from_millis(1));
        let deadline = Instant::now() + timeout;
        let value =
            self.router.run(deadline, call).and_then(|value| Ok(T::from_redis_value(value).map_err(RedisError::from)?));
        value.map_err(|e| scrub(&self.router.describe(&e, timeout), &self.secrets))
    }
}

/// The key of `part` of the state kept under `key`: `poll:{KEY}:PART`. The
/// braces are Redis Cluster's hash tag, so that every key of one state key
/// sits in one slot and each step stays one script on one node (a cluster
/// refuses a script whose keys are in two slots: CROSSSLOT). A KEY holding a
/// `}` still works: the tag ends at the first one, the same for every part.
/// An empty tag would not be one (the whole key is hashed then), so a KEY
/// that is empty or starts with `}` gets a `\` in front, as does one that
/// starts with `\`, so that two KEYs never share names.
fn key(key: &str, part: &str) -> String {
    let escape = if key.is_empty() || key.starts_with(['}', '\\']) { "\\" } else { "" };
    format!("{PREFIX}{{{escape}{key}}}:{part}")
}

/// How long a breaker is kept after its last write.
fn breaker_kept(settings: &Settings) -> u64 {
    cap(settings).max(clock::ms(BREAKER_KEPT))
}

/// The longest a doubled cool-down grows: 10m, or the flag's when longer.
fn cap(settings: &Settings) -> u64 {
    clock::ms(MAX_COOLDOWN).max(settings.cooldown)
}

impl Store for RedisStore {
    fn name(&self) -> String {
        format!("`{}`", self.shown)
    }

    fn admit(&mut self, state_key: &str, ask: &Ask, timeout: Duration) -> Result<Turn, String> {
        let settings = ask.breaker.unwrap_or_default();
        let parts = ["rate", "advice", "breaker", "probe", "traffic", "learned", "queue"];
        let mut call = Call::new(&ADMIT, state_key, &parts);
        call.arg(self.now_arg())
            .arg(ask.spacing.unwrap_or(0))
            .arg(ask.deadline_in.map_or(-1, |left| i64::try_from(left).unwrap_or(i64::MAX)))
            .arg(u8::from(ask.breaker.is_some()))
            .arg(self.token(ask.pid))
            .arg(settings.cooldown)
            .arg(breaker_kept(&settings))
            .arg(ask.lease)
            .arg(u8::from(ask.retry))
            .arg(ask.budget.map_or(-1, |budget| i64::from(budget.percent)))
            .arg(ask.budget.map_or(0, |budget| budget.per_second))
            .arg(u8::from(ask.auto));
        self.answer(timeout, &call, state_key)
    }

    fn record(
        &mut self,
        state_key: &str,
        report: &AttemptReport,
        timeout: Duration,
    ) -> Result<Option<Refusal>, String> {
        let settings = report.breaker.unwrap_or_default();
        let (good, url, body): (&str, &str, &[u8]) = match report.good_body {
            Some((url, body)) if body.len() > MAX_KEPT_BODY => ("drop", url, b""),
            Some((url, body)) => ("keep", url, body),
            None => ("", "", b""),
        };
        let parts = ["advice", "breaker", "probe", "last", "last_at", "traffic", "learned"];
        let mut call = Call::new(&RECORD, state_key, &parts);
        call.arg(self.now_arg())
            .arg(report.not_before_in.map_or(-1, |ms| i64::try_from(ms).unwrap_or(i64::MAX)))
            .arg(u8::from(report.breaker.is_some()))
            .arg(self.token(report.pid))
            .arg(u8::from(report.sample.ok))
            .arg(report.sample.latency)
            .arg(settings.window)
            .arg(settings.min_success)
            .arg(settings.max_p95)
            .arg(settings.cooldown)
            .arg(cap(&settings))
            .arg(breaker_kept(&settings))
            .arg(MIN_OUTCOMES)
            .arg(good)
            .arg(url)
            .arg(body)
            .arg(MAX_KEPT_BODIES)
            .arg(clock::ms(BODY_KEPT))
            .arg(report.throttled_at.map_or(-1, |at| i64::try_from(at).unwrap_or(i64::MAX)));
        match self.answer(timeout, &call, state_key)?.admission {
            Admission::Open(refusal) => Ok(Some(refusal)),
            _ => Ok(None),
        }
    }

    fn worth_a_try(&mut self, timeout: Duration) -> bool {
        self.router.worth_a_try(timeout)
    }

    fn last_good(&mut self, state_key: &str, url: &str, timeout: Duration) -> Result<Option<Vec<u8>>, String> {
        let mut call = Call::new(&LAST_GOOD, state_key, &["last", "last_at"]);
        call.arg(url).arg(clock::ms(BODY_KEPT)).arg(self.now_arg());
        self.step(timeout, &call)
    }

    fn notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }
}

/// What the admit and record scripts answer: kind, ms, why, prober, reason
/// (then what they found odd, read by [`RedisStore::answer`]).
type ScriptAnswer = (String, u64, u8, String, String);

/// What the admit script says of the fleet: room (-1: no budget), requests,
/// retries, the learned rate ("" for none), the turn's time.
type FleetAnswer = (i8, u64, u64, String, u64);

fn fleet_of((room, requests, retries, rate, at): FleetAnswer) -> Fleet {
    Fleet {
        budget: (room >= 0).then_some(RetryRoom { room: room == 1, counts: Window { requests, retries } }),
        rate: rate.parse().ok(),
        at,
    }
}

/// A script's answer as the trait's types (`record` answers `ok` or `open`).
fn admission((kind, ms, why, prober, reason): ScriptAnswer) -> Result<Admission, String> {
    let why = match why {
        1 => Some(WaitReason::Rate),
        2 => Some(WaitReason::StoredAdvice),
        _ => None,
    };
    match kind.as_str() {
        "go" | "ok" => Ok(Admission::Go { wait: ms, why }),
        "late" => Ok(Admission::TooLate { wait: ms, why: why.unwrap_or(WaitReason::StoredAdvice) }),
        "defer" => Ok(Admission::Defer { wait: ms }),
        "open" => Ok(Admission::Open(Refusal {
            retry_in: ms,
            // The token is `PID:NONCE`; the pid is what a person can look for.
            prober: prober.split(':').next().and_then(|pid| pid.parse().ok()),
            reason: reason_in_words(&reason),
        })),
        other => Err(format!("the script answered `{}`, which this poll does not know", printable(&shorten(other)))),
    }
}

/// A breaker's reason as the record script keeps it, in the words the file
/// store uses (`breaker.rs`); anything else is shown as it is.
fn reason_in_words(code: &str) -> String {
    let parts: Vec<&str> = code.split(':').collect();
    let number = |i: usize| parts.get(i).and_then(|n| n.parse::<u64>().ok());
    let size = |i: usize| number(i).and_then(|n| usize::try_from(n).ok());
    match parts.first().copied() {
        Some("rate") if parts.len() == 4 => match (size(1), size(2), number(3).and_then(|n| u8::try_from(n).ok())) {
            (Some(failed), Some(n), Some(pct)) => breaker::too_many_failures(failed, n, pct),
            _ => code.to_string(),
        },
        Some("p95") if parts.len() == 4 => match (size(1), number(2), number(3)) {
            (Some(n), Some(p95), Some(max)) => breaker::too_slow(n, p95, max),
            _ => code.to_string(),
        },
        Some("probe") if parts.len() == 1 => breaker::PROBE_FAILED.to_string(),
        _ => code.to_string(),
    }
}

/// `text` with the password replaced wherever it appears (as given, or
/// percent-decoded), whoever wrote it.
fn scrub(text: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .filter(|s| !s.is_empty())
        .fold(text.to_string(), |text, secret| text.replace(secret, crate::util::url::REDACTED))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    use super::*;
    use crate::rules::breaker::Sample;
    use crate::rules::budget::RetryBudget;
    use crate::state::origin::Origin;

    const SECOND: Duration = Duration::from_secs(1);

    fn parsed(raw: &str) -> RedisUrl {
        RedisUrl::parse(raw).unwrap_or_else(|e| panic!("{raw}: {e}"))
    }

    /// Every part of one state key in one slot (a hash tag that is never
    /// empty), and two state keys never under one name.
    #[test]
    fn the_keys_of_one_state_key_share_a_slot_and_no_two_state_keys_share_names() {
        let keys = ["", "}", "}}", "\\", "\\}", "a", "a}b", "{a}", "https://h:443", "k"];
        let mut names = std::collections::BTreeSet::new();
        for state_key in keys {
            let slots: Vec<u16> = PARTS.map(|part| cluster::slot(key(state_key, part).as_bytes())).to_vec();
            assert!(slots.iter().all(|slot| *slot == slots[0]), "{state_key:?}: {slots:?}");
            assert_eq!(Call::new(&ADMIT, state_key, &["rate"]).slot, slots[0], "{state_key:?}");
            assert!(names.insert(key(state_key, "rate")), "{state_key:?} shares its name");
        }
        assert_eq!(key("k", "rate"), "poll:{k}:rate");
        assert_eq!(key("", "rate"), "poll:{\\}:rate");
        assert_eq!(key("}x", "rate"), "poll:{\\}x}:rate");
        assert_eq!(key("\\", "rate"), "poll:{\\\\}:rate");
    }

    #[test]
    fn reasons_kept_as_numbers_read_as_the_file_store_words_them() {
        assert_eq!(reason_in_words("rate:3:5:60"), breaker::too_many_failures(3, 5, 60));
        assert_eq!(reason_in_words("p95:10:6000:5000"), breaker::too_slow(10, 6_000, 5_000));
        assert_eq!(reason_in_words("probe"), breaker::PROBE_FAILED);
        for other in ["", "rate:x:5:60", "rate:1:2", "p95:1:2:3:4", "something else"] {
            assert_eq!(reason_in_words(other), other);
        }
        let open = admission(("open".into(), 1_500, 0, "4242:00ff".into(), "probe".into()));
        let refusal = Refusal { retry_in: 1_500, prober: Some(4242), reason: breaker::PROBE_FAILED.into() };
        assert_eq!(open, Ok(Admission::Open(refusal)));
        let go = admission(("go".into(), 20, 1, String::new(), String::new()));
        assert_eq!(go, Ok(Admission::Go { wait: 20, why: Some(WaitReason::Rate) }));
        assert!(admission(("what".into(), 0, 0, String::new(), String::new())).is_err());
    }

    #[test]
    fn the_password_is_scrubbed_from_any_message_as_given_and_decoded() {
        let url = parsed("redis://bob:p%40ss@h");
        let text = "AUTH bob p@ss failed; url redis://bob:p%40ss@h";
        assert_eq!(scrub(text, &url.secrets), "AUTH bob <redacted> failed; url redis://bob:<redacted>@h");
        assert_eq!(scrub("nothing", &[]), "nothing");
    }

    #[test]
    fn a_tls_store_is_made_with_a_cacert_or_with_k() {
        let pem = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cert.pem")).unwrap_or_default();
        let url = parsed("rediss://127.0.0.1:1");
        let cacert = crate::net::roots::certificates(&pem).0;
        assert!(RedisStore::new(&url, &Trust { cacert, insecure: false, identity: None }).is_ok());
        assert!(RedisStore::new(&url, &Trust { cacert: Vec::new(), insecure: true, identity: None }).is_ok());
    }

    use crate::state::test_support::redis::Redis as Server;

    /// The store's view of the test's server: over its unix socket.
    fn url_of(server: &Server) -> RedisUrl {
        parsed(&server.unix_url())
    }

    /// The Lua scripts against the pure rules the file store runs: a seeded
    /// mix of admits and records by three processes, on a pinned clock, must
    /// get the same answer from both at every step.
    #[test]
    fn the_scripts_follow_the_file_stores_rules_step_for_step() {
        let Some(server) = Server::start() else { return };
        let mut store = RedisStore::new(&url_of(&server), &Trust::default()).expect("a store");
        let mut origin = Origin::default();
        let mut rng = StdRng::seed_from_u64(14);
        let settings = Settings { window: 6, min_success: 60, max_p95: 800, cooldown: 1_000 };
        let urls: Vec<String> = (0..20).map(|i| format!("http://h/{i}")).collect();
        let huge = vec![b'x'; MAX_KEPT_BODY + 1];
        let start = 1_795_000_000_000;
        let mut now = start;
        let mut seen = std::collections::BTreeMap::<&str, u32>::new();
        for step in 0..4_000 {
            now += rng.random_range(0..400);
            store.now = Some(now);
            let pid = rng.random_range(1..=3);
            let at = now - start;
            if rng.random_bool(0.55) {
                let ask = Ask {
                    pid,
                    spacing: [None, Some(50), Some(300)][rng.random_range(0..3)],
                    deadline_in: rng.random_bool(0.3).then(|| rng.random_range(0..2_000)),
                    breaker: rng.random_bool(0.95).then_some(settings),
                    lease: [0, 500, 2_500][rng.random_range(0..3)],
                    retry: rng.random_bool(0.4),
                    budget: rng.random_bool(0.9).then_some(RetryBudget { percent: 20, per_second: 0 }),
                    auto: rng.random_bool(0.8),
                };
                let want = origin.admit(now, &ask);
                let got = store.admit("k", &ask, SECOND);
                assert_eq!(got.as_ref(), Ok(&want), "step {step} at +{at}ms: admit {ask:?}");
                if want.fleet.budget.is_some_and(|budget| !budget.room) {
                    *seen.entry("no room for a retry").or_default() += 1;
                }
                if want.fleet.rate.is_some() {
                    *seen.entry("a learned rate").or_default() += 1;
                }
                *seen
                    .entry(match want.admission {
                        Admission::Defer { .. } => "deferred to a ticket",
                        Admission::Go { why: None, .. } => "go",
                        Admission::Go { why: Some(WaitReason::Rate), .. } => "go after the rate slot",
                        Admission::Go { .. } => "go after the server's advice",
                        Admission::TooLate { .. } => "too late",
                        Admission::Open(Refusal { prober: Some(_), .. }) => "turned away by a probe",
                        Admission::Open(_) => "turned away while open",
                    })
                    .or_default() += 1;
            } else {
                let body: Vec<u8> = (0..rng.random_range(0..40)).map(|_| rng.random::<u8>()).collect();
                let url = &urls[rng.random_range(0..urls.len())];
                let good_body = match rng.random_range(0..100) {
                    0 => Some((url.as_str(), huge.as_slice())),
                    1..=15 => Some((url.as_str(), body.as_slice())),
                    _ => None,
                };
                let slow = rng.random_bool(0.1);
                let report = AttemptReport {
                    pid,
                    sample: Sample {
                        ok: rng.random_bool(0.65),
                        latency: if slow { rng.random_range(500..2_000) } else { rng.random_range(0..300) },
                    },
                    not_before_in: rng.random_bool(0.2).then(|| rng.random_range(0..3_000)),
                    good_body,
                    breaker: rng.random_bool(0.95).then_some(settings),
                    throttled_at: rng.random_bool(0.05).then(|| now - rng.random_range(0..3_000)),
                };
                let want = origin.record(now, &report);
                let got = store.record("k", &report, SECOND);
                assert_eq!(got.as_ref(), Ok(&want), "step {step} at +{at}ms: record {:?}", report.sample);
                *seen.entry(if want.is_some() { "record: open" } else { "record: ok" }).or_default() += 1;
            }
            if step % 100 == 0 {
                for url in &urls {
                    let want = origin.last_good.get(url).map(|kept| kept.body.clone());
                    assert_eq!(store.last_good("k", url, SECOND), Ok(want), "step {step}: last good body of {url}");
                }
            }
        }
        for kind in [
            "go",
            "go after the rate slot",
            "go after the server's advice",
            "too late",
            "turned away by a probe",
            "turned away while open",
            "record: open",
            "no room for a retry",
            "a learned rate",
            "deferred to a ticket",
        ] {
            assert!(seen.get(kind).is_some_and(|n| *n > 5), "the mix never saw `{kind}`: {seen:?}");
        }
        assert!(origin.breaker.cooldown > settings.cooldown, "a probe failed: {:?}", origin.breaker);

        // Every key has an expiry.
        let mut connection = server.connection();
        let keys: Vec<String> = ::redis::cmd("KEYS").arg("*").query(&mut connection).expect("KEYS");
        assert!(keys.len() >= 4, "{keys:?}");
        for key in keys {
            assert!(key.starts_with("poll:{k}:"), "{key}");
            let ttl: i64 = ::redis::cmd("PTTL").arg(&key).query(&mut connection).expect("PTTL");
            assert!(ttl > 0, "{key} has no expiry ({ttl})");
        }
    }

    /// The edges a random mix seldom hits exactly, on both stores.
    #[test]
    fn the_edges_match_the_file_stores_too() {
        let Some(server) = Server::start() else { return };
        let mut store = RedisStore::new(&url_of(&server), &Trust::default()).expect("a store");
        let mut origin = Origin::default();
        let settings = Settings { window: 5, min_success: 60, max_p95: 100, cooldown: 1_000 };
        let now = 1_795_000_000_000;
        let ask =
            |pid, spacing, deadline_in| Ask { pid, spacing, deadline_in, breaker: Some(settings), ..Ask::default() };
        let report = |pid, ok, latency, not_before_in| AttemptReport {
            pid,
            sample: Sample { ok, latency },
            not_before_in,
            good_body: None,
            breaker: Some(settings),
            throttled_at: None,
        };
        enum Step {
            Admit(u64, Ask),
            Record(u64, AttemptReport<'static>),
        }
        let steps = [
            Step::Record(0, report(1, true, 1, Some(5_000))),
            Step::Admit(0, ask(1, Some(100), Some(5_000))),
            Step::Admit(0, ask(1, Some(100), Some(5_001))),
            Step::Admit(0, ask(1, Some(100), Some(5_101))),
            Step::Admit(5_200, ask(1, Some(100), Some(1))),
            // The p95 rule: four fast, then one at the limit, then one above it.
            Step::Record(6_000, report(1, true, 100, None)),
            Step::Record(6_000, report(1, true, 100, None)),
            Step::Record(6_000, report(1, true, 100, None)),
            Step::Record(6_000, report(1, true, 100, None)),
            Step::Record(6_000, report(2, true, 101, None)),
            Step::Admit(6_999, ask(2, None, None)),
            Step::Admit(7_000, ask(2, None, None)),
            Step::Admit(7_000, ask(3, None, None)),
            Step::Record(7_500, report(3, false, 1, None)),
            Step::Admit(7_999, ask(3, None, None)),
            Step::Admit(8_000, ask(3, None, None)),
            Step::Record(8_000, report(2, true, 1, None)),
            Step::Record(8_001, report(3, false, 1, None)),
            Step::Admit(10_001, ask(1, None, None)),
            Step::Record(10_002, report(1, true, 1, None)),
            Step::Admit(10_003, ask(2, None, None)),
        ];
        for (i, step) in steps.iter().enumerate() {
            match step {
                Step::Admit(at, ask) => {
                    store.now = Some(now + at);
                    let want = origin.admit(now + at, ask);
                    assert_eq!(store.admit("e", ask, SECOND), Ok(want), "step {i}");
                }
                Step::Record(at, report) => {
                    store.now = Some(now + at);
                    let want = origin.record(now + at, report);
                    assert_eq!(store.record("e", report, SECOND), Ok(want), "step {i}");
                }
            }
        }
        assert_eq!(origin.breaker, crate::rules::breaker::Breaker::default(), "closed again by the last probe");
    }

    /// The rows of the key table in `docs/DESIGN.md` ("Keys and expiries"), the
    /// one list of the keys: (parts, what they hold, when they expire).
    fn key_table() -> Vec<(Vec<String>, String, String)> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/DESIGN.md");
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let table = text.split("### Keys and expiries").nth(1).expect("DESIGN.md has a section `Keys and expiries`");
        let rows =
            table.lines().skip_while(|line| !line.starts_with("| `poll:")).take_while(|line| line.starts_with('|'));
        rows.map(|row| {
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(cells.len(), 3, "a row of three cells: {row}");
            let parts = cells[0].split(", ").map(|name| name.trim_matches('`').replace("poll:{KEY}:", "")).collect();
            (parts, cells[1].to_string(), cells[2].to_string())
        })
        .collect()
    }

    /// The key table against the code: its parts are [`PARTS`], each row says
    /// what the scripts keep there and the numbers of its expiry, and a run
    /// that writes every part leaves each key of the type its row says, expiring
    /// when its row says.
    #[test]
    fn the_key_table_in_design_md_is_what_the_scripts_write() {
        let table = key_table();
        let named: Vec<String> = table.iter().flat_map(|(parts, ..)| parts.clone()).collect();
        assert_eq!(named, PARTS, "docs/DESIGN.md's key table names these parts");
        let hours = |kept: Duration| format!("{} hour", kept.as_secs() / 3600);
        let learned_kept = Duration::from_millis(LEARNED_KEPT);
        // (part, what its row holds, what its row's expiry says), each number from the code.
        let rows: [(&str, &str, Vec<String>); 9] = [
            ("rate", "(epoch ms)", vec!["one spacing after that slot".into()]),
            ("advice", "(epoch ms)", vec!["when it passes".into()]),
            ("breaker", "as JSON", vec![hours(BREAKER_KEPT), "cool-down cap".into(), "its lease".into()]),
            (
                "probe",
                "token",
                vec!["one cool-down after".into(), format!("plus {} s", super::super::LEASE_MARGIN.as_secs())],
            ),
            ("last", "hashes", vec![hours(BODY_KEPT), format!("at most {MAX_KEPT_BODIES}")]),
            ("last_at", "hashes", vec![hours(BODY_KEPT), format!("at most {MAX_KEPT_BODIES}")]),
            (
                "traffic",
                "as JSON",
                vec![format!("{} s after the last request", WINDOW_SECS + 2), format!("last {WINDOW_SECS} s")],
            ),
            ("learned", "as JSON", vec![hours(learned_kept)]),
            ("queue", "(epoch ms)", vec![format!("{HORIZON} ms after that ticket"), format!("{HORIZON} ms ahead")]),
        ];
        for (part, holds, says) in &rows {
            let (_, held, expires) = table.iter().find(|(parts, ..)| parts.iter().any(|p| p == part)).expect("a row");
            assert!(held.contains(holds), "`{part}` holds {holds}; the table says: {held}");
            for words in says {
                assert!(
                    format!("{held} {expires}").contains(words.as_str()),
                    "`{part}`: {words:?} in: {held} | {expires}"
                );
            }
        }

        // A run that writes every part, on a pinned clock.
        let Some(server) = Server::start() else { return };
        let mut store = RedisStore::new(&url_of(&server), &Trust::default()).expect("a store");
        let settings = Settings { window: 5, min_success: 60, max_p95: 1_000, cooldown: 1_000 };
        let now = 1_795_000_000_000;
        let budget = Some(RetryBudget { percent: 20, per_second: 1 });
        let ask = Ask { pid: 1, spacing: Some(60_000), breaker: Some(settings), budget, auto: true, ..Ask::default() };
        let report = |ok, not_before_in, good_body, throttled_at| AttemptReport {
            pid: 1,
            sample: Sample { ok, latency: 1 },
            not_before_in,
            good_body,
            breaker: Some(settings),
            throttled_at,
        };
        store.now = Some(now);
        let go = store.admit("k", &ask, SECOND).map(|turn| turn.admission);
        assert_eq!(go, Ok(Admission::Go { wait: 0, why: None }), "rate, traffic");
        let kept = store.record("k", &report(true, Some(5_000), Some(("http://h/", b"{}")), Some(now)), SECOND);
        assert_eq!(kept, Ok(None), "advice, last, last_at, learned, breaker");
        let deferred = store.admit("k", &Ask { pid: 2, ..ask }, SECOND).map(|turn| turn.admission);
        assert!(matches!(deferred, Ok(Admission::Defer { .. })), "queue: {deferred:?}");
        for _ in 0..MIN_OUTCOMES {
            store.record("k", &report(false, None, None, None), SECOND).expect("a record");
        }
        store.now = Some(now + settings.cooldown);
        let probe = Ask { pid: 3, breaker: Some(settings), lease: 2_500, ..Ask::default() };
        let probing = store.admit("k", &probe, SECOND).map(|turn| turn.admission);
        assert_eq!(probing, Ok(Admission::Go { wait: 4_000, why: Some(WaitReason::StoredAdvice) }), "probe");

        // Each key is of the type its row says, and expires when it says (less the few ms the test took).
        let keys = server.keys();
        assert_eq!(keys.len(), PARTS.len(), "{keys:?}");
        let number = |key: &str| server.query::<String>(&["GET", key]).parse::<u64>().expect("a number");
        for (part, holds, _) in &rows {
            let key = key("k", part);
            assert!(keys.contains(&key), "{key} was written: {keys:?}");
            let kind: String = server.query(&["TYPE", &key]);
            assert_eq!(kind, if *holds == "hashes" { "hash" } else { "string" }, "{key}");
            match *holds {
                "as JSON" => {
                    let value: String = server.query(&["GET", &key]);
                    assert!(serde_json::from_str::<serde_json::Value>(&value).is_ok(), "{key}: {value}");
                }
                "(epoch ms)" => assert!(number(&key) > now, "{key}"),
                _ => {}
            }
            let left: u64 = server.query(&["PTTL", &key]);
            let after_the_slot = |slot: u64| slot - now;
            let want = match *part {
                "rate" => after_the_slot(number(&key)) + 60_000,
                "advice" => after_the_slot(number(&key)),
                "breaker" => 4_000 + 2_500 + clock::ms(BREAKER_KEPT),
                // Written at now + cool-down: the slot 4 s on (the advice), and the budget's lease, the longer.
                "probe" => 4_000 + 2_500,
                "last" | "last_at" => clock::ms(BODY_KEPT),
                "traffic" => (WINDOW_SECS + 2) * 1000,
                "learned" => LEARNED_KEPT + 1,
                _ => after_the_slot(number(&key)) + HORIZON,
            };
            assert!(left <= want && left + 2_000 > want, "{key} expires in {left} ms, the table says {want}");
        }
    }

    #[test]
    fn a_store_that_cannot_connect_says_so_and_connects_again_when_it_can() {
        let Some(server) = Server::start() else { return };
        let socket = server.socket();
        let mut store = RedisStore::new(&url_of(&server), &Trust::default()).expect("a store");
        let ask = Ask { pid: 1, spacing: Some(100), ..Ask::default() };
        assert_eq!(store.admit("k", &ask, SECOND).map(|turn| turn.admission), Ok(Admission::Go { wait: 0, why: None }));
        drop(server);
        let Err(e) = store.admit("k", &ask, SECOND) else { panic!("the server is gone") };
        assert!(e.starts_with("cannot reach Redis: "), "{e}");
        assert!(!store.router.any_open(), "a failed step drops its connection");
        assert!(!Path::new(&socket).exists());
    }
}
