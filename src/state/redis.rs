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
//! Redis never fills with poll's leftovers:
//!
//! | key | holds | expires |
//! |---|---|---|
//! | `rate` | the next free `--rate` slot | one spacing after that slot |
//! | `advice` | the server's "not before" | when it passes |
//! | `breaker` | JSON: state, until, cool-down, reason, last prober, window | [`BREAKER_KEPT`] (or the cool-down cap, if longer) after it was last written, plus the time it stays open |
//! | `probe` | the half-open lease: the prober's token | when the lease ends: one cool-down after the probe's slot, or the probe's budget (connect plus request timeout) plus 1 s when longer |
//! | `last`, `last_at` | hashes: URL -> last good body, and when it was kept | [`BODY_KEPT`] after each body was written |
//!
//! No lock is held across a request: the half-open probe is a lease (`SET
//! probe TOKEN NX PX LEASE`) that exactly one process in the fleet wins and
//! that expires by itself. It outlasts the probe (see [`super::Ask::lease`]),
//! so no second probe starts while the first is in flight, and a prober
//! killed with `kill -9` holds the origin for no longer than the lease, as in
//! the file store.
//!
//! A step that cannot connect, fails, or takes longer than its timeout (a
//! second, never past `--timeout`) is an `Err`; the connection is dropped and
//! made again at the next step, so a Redis that comes back is used again.

use std::fmt;
use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use ::redis::{
    Client, ConnectionAddr, ConnectionInfo, ErrorKind, IntoConnectionInfo as _, RedisConnectionInfo, RedisError,
    Script, ScriptInvocation, TlsCertificates,
};

use super::origin::{MAX_KEPT_BODIES, MAX_KEPT_BODY};
use super::{Admission, Ask, Refusal, Report, Store};
use crate::breaker::{self, MAX_COOLDOWN, MIN_OUTCOMES, Settings};
use crate::clock;
use crate::policy::WaitReason;
use crate::text::{human, printable, shorten};
use crate::url;

/// Every key poll writes starts with this.
pub(crate) const PREFIX: &str = "poll:";

/// How long a breaker nobody writes to is kept (or the cool-down cap, when
/// longer): a window of outcomes older than that says little of the origin now.
pub(crate) const BREAKER_KEPT: Duration = Duration::from_secs(60 * 60);

/// How long a last good body is kept after it was written.
pub(crate) const BODY_KEPT: Duration = Duration::from_secs(24 * 60 * 60);

/// The port of a `redis://` URL that names none.
const DEFAULT_PORT: u16 = 6379;

// Each script starts with the one clock they share; the two that judge the
// breaker, with the one refusal they share.
static ADMIT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(include_str!("clock.lua"), include_str!("refusal.lua"), include_str!("admit.lua")))
});
static RECORD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(include_str!("clock.lua"), include_str!("refusal.lua"), include_str!("record.lua")))
});
static LAST_GOOD: LazyLock<Script> =
    LazyLock::new(|| Script::new(concat!(include_str!("clock.lua"), include_str!("last_good.lua"))));

/// A `--state` Redis URL, checked: `redis://[USER:PASS@]HOST[:PORT][/DB]`,
/// `rediss://...` (TLS) or `redis+unix://[USER:PASS@]/PATH[?db=N]`, or the
/// same under Valkey's names (`valkey://`, `valkeys://`, `valkey+unix://`).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct RedisUrl {
    addr: Addr,
    db: i64,
    user: Option<String>,
    password: Option<String>,
    /// The password as given and percent-decoded: scrubbed from every message.
    secrets: Vec<String>,
    /// The URL as given, with any userinfo redacted.
    shown: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Addr {
    /// A host name or IP address (an IPv6 one without its brackets).
    Tcp { host: String, port: u16, tls: bool },
    /// Not checked for existence: the server may start later.
    Unix(PathBuf),
}

/// Never shows the password: `Config` is `Debug`.
impl fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RedisUrl").field(&self.shown).finish()
    }
}

impl RedisUrl {
    /// Whether `value` names a Redis store (or tries to: any `scheme://`).
    pub(crate) fn is_url(value: &str) -> bool {
        value.contains("://")
    }

    /// The URL for messages, userinfo redacted.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// Checks a `--state` URL (parsed by the `url` crate); the error never
    /// holds the password.
    pub(crate) fn parse(raw: &str) -> Result<RedisUrl, String> {
        let shown = url::redact_userinfo(raw);
        let bad = |why: &str| format!("invalid Redis URL `{}`: {why}", printable(&shown));
        let scheme = raw.split_once("://").map_or(raw, |(scheme, _)| scheme).to_ascii_lowercase();
        let Some(kind) = Kind::of(&scheme) else {
            return Err(format!(
                "`{}://` is not a state store this poll knows; give a file path, or a redis://, rediss://, \
                 redis+unix://, valkey://, valkeys:// or valkey+unix:// URL",
                printable(&shorten(&scheme))
            ));
        };
        // `redis+unix://:PASS@/PATH` has a login but no host, which the url crate
        // refuses: such a URL is parsed with a stand-in host, taken out again below.
        let stand_in = match (kind, raw.split_once("://")) {
            (Kind::Unix, Some((scheme, rest))) => {
                let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
                authority.ends_with('@').then(|| format!("{scheme}://{authority}{UNIX_HOST}{path}"))
            }
            _ => None,
        };
        let parsed = ::url::Url::parse(stand_in.as_deref().unwrap_or(raw)).map_err(|e| {
            bad(match e {
                ::url::ParseError::EmptyHost => "it has no host",
                ::url::ParseError::InvalidPort => "the port is not a number from 1 to 65535",
                ::url::ParseError::InvalidIpv6Address => "the IPv6 address in `[...]` is not one",
                ::url::ParseError::RelativeUrlWithoutBase => "it needs a scheme",
                _ => "the host is not a host name or address",
            })
        })?;
        if parsed.fragment().is_some() {
            return Err(bad("a fragment (`#...`) means nothing here"));
        }
        let (user, password, secrets) = match (parsed.username(), parsed.password()) {
            ("", None) => (None, None, Vec::new()),
            (_, None | Some("")) => return Err(bad("a user needs a password: USER:PASS@HOST, or :PASS@HOST")),
            (user, Some(pass)) => {
                let password = decode(pass);
                let secrets = vec![password.clone(), pass.to_string()];
                (Some(decode(user)).filter(|u| !u.is_empty()), Some(password), secrets)
            }
        };
        let host = match parsed.host_str() {
            Some(UNIX_HOST) if stand_in.is_some() => "",
            host => host.unwrap_or_default(),
        };
        let path = parsed.path();

        let (addr, db) = match kind {
            Kind::Unix => {
                if !host.is_empty() {
                    return Err(bad("a unix socket URL names no host: redis+unix:///PATH"));
                }
                if path.len() < 2 {
                    return Err(bad("it names no socket: redis+unix:///PATH"));
                }
                let mut db = 0;
                for (name, value) in parsed.query_pairs() {
                    if name != "db" {
                        return Err(bad("the only query it takes is ?db=N"));
                    }
                    db = database(&value).ok_or_else(|| bad(&format!("`{value}` is not a database number")))?;
                }
                (Addr::Unix(PathBuf::from(decode(path))), db)
            }
            Kind::Tcp { tls } => {
                if parsed.query().is_some() {
                    return Err(bad("a query (`?...`) means nothing here; the database is the path, /0, /1, ..."));
                }
                let host = match parsed.host() {
                    None => return Err(bad("it has no host")),
                    Some(::url::Host::Ipv6(ip)) => ip.to_string(),
                    Some(_) => host.to_ascii_lowercase(),
                };
                if host.is_empty() {
                    return Err(bad("it has no host"));
                }
                if matches!(host.as_str(), "0.0.0.0" | "::") {
                    return Err(bad(&format!("`{host}` is where a server listens, not an address to connect to")));
                }
                let port = match parsed.port() {
                    None => DEFAULT_PORT,
                    Some(0) => return Err(bad("port `0` is not a number from 1 to 65535")),
                    Some(port) => port,
                };
                let db = match path.trim_start_matches('/') {
                    "" => 0,
                    db => database(db).ok_or_else(|| bad(&format!("the path `{path}` is not a database number")))?,
                };
                (Addr::Tcp { host, port, tls }, db)
            }
        };
        Ok(RedisUrl { addr, db, user, password, secrets, shown })
    }
}

/// The stand-in host of a unix socket URL with a login (see [`RedisUrl::parse`]).
const UNIX_HOST: &str = "unix-socket.invalid";

/// What a scheme names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tcp { tls: bool },
    Unix,
}

impl Kind {
    /// The redis schemes, and Valkey's names for the same (it speaks the same protocol).
    fn of(scheme: &str) -> Option<Kind> {
        match scheme {
            "redis" | "valkey" => Some(Kind::Tcp { tls: false }),
            "rediss" | "valkeys" => Some(Kind::Tcp { tls: true }),
            "redis+unix" | "valkey+unix" => Some(Kind::Unix),
            _ => None,
        }
    }
}

/// A percent-decoded URL part (bytes that are not UTF-8 shown as U+FFFD).
fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

/// A database number: digits only.
fn database(text: &str) -> Option<i64> {
    text.bytes().all(|b| b.is_ascii_digit()).then(|| text.parse().ok()).flatten()
}

/// The shared state in Redis, through one connection made on demand.
pub(crate) struct RedisStore {
    client: Client,
    connection: Option<::redis::Connection>,
    /// The read and write timeout the connection has now.
    bound: Option<Duration>,
    /// The URL for messages, userinfo redacted.
    shown: String,
    /// Scrubbed from every message, whatever said it.
    secrets: Vec<String>,
    /// With the pid, this process's token: pids repeat across machines.
    nonce: u64,
    /// Pins the scripts' clock (epoch ms), for tests; `None`: the Redis server's `TIME`.
    now: Option<u64>,
}

impl RedisStore {
    /// A store for `url`; `cacert` (PEM) is trusted besides the built-in
    /// roots for `rediss://`, and `insecure` (`-k`) verifies nothing, as for
    /// https. Nothing is sent yet: the first step connects.
    pub(crate) fn new(url: &RedisUrl, cacert: Option<&[u8]>, insecure: bool) -> Result<RedisStore, String> {
        let mut settings = RedisConnectionInfo::default().set_db(url.db).set_skip_set_lib_name();
        if let Some(user) = &url.user {
            settings = settings.set_username(user);
        }
        if let Some(password) = &url.password {
            settings = settings.set_password(password);
        }
        let addr = match &url.addr {
            Addr::Tcp { host, port, tls: false } => ConnectionAddr::Tcp(host.clone(), *port),
            Addr::Tcp { host, port, tls: true } => {
                ConnectionAddr::TcpTls { host: host.clone(), port: *port, insecure, tls_params: None }
            }
            Addr::Unix(path) => ConnectionAddr::Unix(path.clone()),
        };
        let scrub = |e: RedisError| scrub(&e.to_string(), &url.secrets);
        // Each step is one small request and its reply: no Nagle delay.
        let tcp = ::redis::io::tcp::TcpSettings::default().set_nodelay(true);
        let info: ConnectionInfo =
            addr.into_connection_info().map_err(scrub)?.set_redis_settings(settings).set_tcp_settings(tcp);
        let client = match (cacert.filter(|_| !insecure), matches!(url.addr, Addr::Tcp { tls: true, .. })) {
            // Given roots replace redis-rs's built-in ones, so the built-in roots come along.
            (Some(pem), true) => {
                let roots = TlsCertificates { client_tls: None, root_cert: Some(roots_and(pem)) };
                Client::build_with_tls(info, roots).map_err(scrub)?
            }
            _ => Client::open(info).map_err(scrub)?,
        };
        Ok(RedisStore {
            client,
            connection: None,
            bound: None,
            shown: url.shown.clone(),
            secrets: url.secrets.clone(),
            nonce: rand::random(),
            now: None,
        })
    }

    fn token(&self, pid: u32) -> String {
        format!("{pid}:{:016x}", self.nonce)
    }

    /// The scripts' first argument: the pinned clock, or "" for the server's.
    fn now_arg(&self) -> String {
        self.now.map(|now| now.to_string()).unwrap_or_default()
    }

    /// Runs `call` within `timeout`: connects if there is no connection, and
    /// bounds every read and write by the time left. A connection that was
    /// dropped while idle (a server restart, Redis's `timeout`) is made again
    /// once within the same step; any failure drops the connection, so the
    /// next step connects afresh.
    fn step<T: ::redis::FromRedisValue>(&mut self, timeout: Duration, call: &ScriptInvocation) -> Result<T, String> {
        let started = Instant::now();
        let timeout = timeout.max(Duration::from_millis(1));
        let reused = self.connection.is_some();
        let mut result = self.try_step(started, timeout, call);
        if let Err(e) = &result
            && reused
            && e.is_connection_dropped()
            && !e.is_timeout()
            && started.elapsed() < timeout
        {
            self.connection = None;
            result = self.try_step(started, timeout, call);
        }
        result.map_err(|e| {
            self.connection = None;
            scrub(&describe(&e, timeout), &self.secrets)
        })
    }

    fn try_step<T: ::redis::FromRedisValue>(
        &mut self,
        started: Instant,
        timeout: Duration,
        call: &ScriptInvocation,
    ) -> Result<T, RedisError> {
        let left = || {
            let left = timeout.saturating_sub(started.elapsed());
            if left.is_zero() { Err(timed_out()) } else { Ok(left) }
        };
        let connection = match &mut self.connection {
            Some(connection) => connection,
            None => {
                self.bound = None;
                self.connection.insert(self.client.get_connection_with_timeout(left()?)?)
            }
        };
        // The time left, cut to whole 10 ms: the same step after step, so that the
        // socket's timeouts are set only when it changes, not twice a step.
        let left = left()?;
        let bound = Duration::from_millis(clock::ms(left) / 10 * 10).max(Duration::from_millis(1));
        if self.bound != Some(bound) {
            connection.set_read_timeout(Some(bound))?;
            connection.set_write_timeout(Some(bound))?;
            self.bound = Some(bound);
        }
        call.invoke(connection)
    }
}

/// The key of `part` of the state kept under `key`: `poll:{KEY}:PART`. The
/// braces are Redis Cluster's hash tag, so that every key of one state key
/// sits in one slot and each step stays one script on one node (a cluster
/// refuses a script whose keys are in two slots: CROSSSLOT). A KEY holding a
/// `}` still works: the tag ends at the first one, the same for every part.
fn key(key: &str, part: &str) -> String {
    format!("{PREFIX}{{{key}}}:{part}")
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

    fn admit(&mut self, state_key: &str, ask: &Ask, timeout: Duration) -> Result<Admission, String> {
        let settings = ask.breaker.unwrap_or_default();
        let mut call = ADMIT.prepare_invoke();
        call.key(key(state_key, "rate"))
            .key(key(state_key, "advice"))
            .key(key(state_key, "breaker"))
            .key(key(state_key, "probe"))
            .arg(self.now_arg())
            .arg(ask.spacing.unwrap_or(0))
            .arg(ask.deadline_in.map_or(-1, |left| i64::try_from(left).unwrap_or(i64::MAX)))
            .arg(u8::from(ask.breaker.is_some()))
            .arg(self.token(ask.pid))
            .arg(settings.cooldown)
            .arg(breaker_kept(&settings))
            .arg(ask.lease);
        let reply: Reply = self.step(timeout, &call)?;
        admission(reply)
    }

    fn record(&mut self, state_key: &str, report: &Report, timeout: Duration) -> Result<Option<Refusal>, String> {
        let settings = report.breaker.unwrap_or_default();
        let (good, url, body): (&str, &str, &[u8]) = match report.good_body {
            Some((url, body)) if body.len() > MAX_KEPT_BODY => ("drop", url, b""),
            Some((url, body)) => ("keep", url, body),
            None => ("", "", b""),
        };
        let mut call = RECORD.prepare_invoke();
        call.key(key(state_key, "advice"))
            .key(key(state_key, "breaker"))
            .key(key(state_key, "probe"))
            .key(key(state_key, "last"))
            .key(key(state_key, "last_at"))
            .arg(self.now_arg())
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
            .arg(clock::ms(BODY_KEPT));
        let reply: Reply = self.step(timeout, &call)?;
        match admission(reply)? {
            Admission::Open(refusal) => Ok(Some(refusal)),
            _ => Ok(None),
        }
    }

    fn last_good(&mut self, state_key: &str, url: &str, timeout: Duration) -> Result<Option<Vec<u8>>, String> {
        let mut call = LAST_GOOD.prepare_invoke();
        call.key(key(state_key, "last"))
            .key(key(state_key, "last_at"))
            .arg(url)
            .arg(clock::ms(BODY_KEPT))
            .arg(self.now_arg());
        self.step(timeout, &call)
    }
}

/// What the admit and record scripts answer: kind, ms, why, prober, reason.
type Reply = (String, u64, u8, String, String);

/// A script's answer as the trait's types (`record` answers `ok` or `open`).
fn admission((kind, ms, why, prober, reason): Reply) -> Result<Admission, String> {
    let why = match why {
        1 => Some(WaitReason::Rate),
        2 => Some(WaitReason::Kept),
        _ => None,
    };
    match kind.as_str() {
        "go" | "ok" => Ok(Admission::Go { wait: ms, why }),
        "late" => Ok(Admission::TooLate { wait: ms, why: why.unwrap_or(WaitReason::Kept) }),
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

/// A failed step in words.
fn describe(e: &RedisError, timeout: Duration) -> String {
    if e.is_timeout() {
        format!("Redis did not answer within {}", human(timeout))
    } else if e.kind() == ErrorKind::AuthenticationFailed {
        "Redis refused the user name or password of the URL".to_string()
    } else if e.code() == Some("NOAUTH")
        || ["unauthenticated", "Authentication required"].iter().any(|w| e.to_string().contains(w))
    {
        // Redis 7 answers a long command of a client that has not logged in with a protocol error.
        "Redis wants a password: redis://:PASS@HOST or redis://USER:PASS@HOST".to_string()
    } else if e.is_io_error() || e.is_connection_refusal() {
        format!("cannot reach Redis: {e}")
    } else {
        format!("Redis failed: {e}")
    }
}

fn timed_out() -> RedisError {
    RedisError::from(std::io::Error::new(std::io::ErrorKind::TimedOut, "the step's time is up"))
}

/// `text` with the password replaced wherever it appears (as given, or
/// percent-decoded), whoever wrote it.
fn scrub(text: &str, secrets: &[String]) -> String {
    secrets.iter().filter(|s| !s.is_empty()).fold(text.to_string(), |text, secret| text.replace(secret, url::REDACTED))
}

/// The built-in (Mozilla) roots and `pem`, as one PEM bundle: redis-rs takes
/// a custom root store only as PEM, and given roots replace its built-in ones.
fn roots_and(pem: &[u8]) -> Vec<u8> {
    let builtin: Vec<::pem::Pem> = webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .map(|root| ::pem::Pem::new("CERTIFICATE", root.as_ref().to_vec()))
        .collect();
    let mut bundle = pem.to_vec();
    bundle.push(b'\n');
    bundle.extend_from_slice(::pem::encode_many(&builtin).as_bytes());
    bundle
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    use super::*;
    use crate::breaker::Sample;
    use crate::state::origin::Origin;

    const SECOND: Duration = Duration::from_secs(1);

    fn parsed(raw: &str) -> RedisUrl {
        RedisUrl::parse(raw).unwrap_or_else(|e| panic!("{raw}: {e}"))
    }

    #[test]
    fn urls_name_the_server_the_database_and_the_login() {
        let tcp = |host: &str, port, tls| Addr::Tcp { host: host.into(), port, tls };
        let rows = [
            ("redis://127.0.0.1", tcp("127.0.0.1", 6379, false), 0, None, None),
            ("REDIS://Cache.Internal:6380/2", tcp("cache.internal", 6380, false), 2, None, None),
            ("rediss://h:6390/", tcp("h", 6390, true), 0, None, None),
            ("redis://[::1]:7000/15", tcp("::1", 7000, false), 15, None, None),
            ("redis://:s3cret@h", tcp("h", 6379, false), 0, None, Some("s3cret")),
            ("redis://bob:p%40ss@h/1", tcp("h", 6379, false), 1, Some("bob"), Some("p@ss")),
            ("redis+unix:///run/redis.sock", Addr::Unix("/run/redis.sock".into()), 0, None, None),
            ("redis+unix:///tmp/a%20b?db=3", Addr::Unix("/tmp/a b".into()), 3, None, None),
            ("redis+unix://:pw@/tmp/s", Addr::Unix("/tmp/s".into()), 0, None, Some("pw")),
            ("valkey://h:7000/3", tcp("h", 7000, false), 3, None, None),
            ("VALKEYS://u:pw@h", tcp("h", 6379, true), 0, Some("u"), Some("pw")),
            ("valkey+unix:///run/v.sock?db=2", Addr::Unix("/run/v.sock".into()), 2, None, None),
        ];
        for (raw, addr, db, user, password) in rows {
            let url = parsed(raw);
            assert_eq!(url.addr, addr, "{raw}");
            assert_eq!(url.db, db, "{raw}");
            assert_eq!((url.user.as_deref(), url.password.as_deref()), (user, password), "{raw}");
            assert!(password.is_none_or(|pw| !format!("{url:?}").contains(pw)), "{url:?}");
        }
        assert_eq!(parsed("redis://bob:p%40ss@h/1").shown(), "redis://<redacted>@h/1");
        assert!(RedisUrl::is_url("redis://h") && RedisUrl::is_url("mongodb://h") && !RedisUrl::is_url("/tmp/a.state"));
    }

    #[test]
    fn bad_urls_say_why_and_never_show_the_password() {
        let rows = [
            ("mongodb://h", "`mongodb://` is not a state store"),
            ("redis://", "it has no host"),
            ("redis://:6379", "it has no host"),
            ("redis://h:0", "port `0` is not a number from 1 to 65535"),
            ("redis://h:99999", "the port is not a number from 1 to 65535"),
            ("redis://h:+1", "the port is not"),
            ("redis://h/x", "the path `/x` is not a database number"),
            ("redis://h/1/2", "the path `/1/2`"),
            ("redis://h?db=1", "a query"),
            ("redis://h#insecure", "a fragment"),
            ("redis://h h", "is not a host name"),
            ("redis://h<", "is not a host name"),
            ("redis://[::1", "the IPv6 address"),
            ("redis://[nope]", "the IPv6 address"),
            ("redis://0.0.0.0", "where a server listens"),
            ("redis://[::]:1", "where a server listens"),
            ("redis://bob@h", "a user needs a password"),
            ("redis://bob:@h", "a user needs a password"),
            ("valkey://", "it has no host"),
            ("redis+unix://h/tmp/s", "names no host"),
            ("redis+unix://", "names no socket"),
            ("redis+unix:///tmp/s?pass=x", "the only query it takes is ?db=N"),
            ("redis+unix:///tmp/s?db=x", "`x` is not a database number"),
            ("valkey+unix://h/tmp/s", "names no host"),
        ];
        for (raw, why) in rows {
            let Err(e) = RedisUrl::parse(raw) else { panic!("{raw} is accepted") };
            assert!(e.contains(why), "{raw}: {e:?} should say {why:?}");
        }
        for raw in ["redis://bob:hunter2@", "redis://:hunter2@h:0", "rediss://u:hunter2@h/x"] {
            let e = RedisUrl::parse(raw).err().unwrap_or_default();
            assert!(!e.is_empty() && !e.contains("hunter2"), "{raw}: {e}");
        }
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
    fn a_cacert_joins_the_builtin_roots() {
        let pem = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cert.pem")).unwrap_or_default();
        let bundle = roots_and(&pem);
        let certificates =
            ureq::tls::parse_pem(&bundle).filter(|item| matches!(item, Ok(ureq::tls::PemItem::Certificate(_)))).count();
        assert_eq!(certificates, 1 + webpki_root_certs::TLS_SERVER_ROOT_CERTS.len());
        let url = parsed("rediss://127.0.0.1:1");
        assert!(RedisStore::new(&url, Some(&pem), false).is_ok());
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
        let mut store = RedisStore::new(&url_of(&server), None, false).expect("a store");
        let mut origin = Origin::default();
        let mut rng = StdRng::seed_from_u64(11);
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
                };
                let want = origin.admit(now, &ask);
                let got = store.admit("k", &ask, SECOND);
                assert_eq!(got.as_ref(), Ok(&want), "step {step} at +{at}ms: admit {ask:?}");
                *seen
                    .entry(match want {
                        Admission::Go { why: None, .. } => "go",
                        Admission::Go { why: Some(WaitReason::Rate), .. } => "go after the rate slot",
                        Admission::Go { .. } => "go after the server's advice",
                        Admission::TooLate { .. } => "too late",
                        Admission::Open(Refusal { prober: Some(_), .. }) => "turned away by a probe",
                        Admission::Open(_) => "turned away while open",
                    })
                    .or_default() += 1;
            } else {
                let body: Vec<u8> = (0..rng.random_range(0..40)).map(|_| rng.random()).collect();
                let url = &urls[rng.random_range(0..urls.len())];
                let good_body = match rng.random_range(0..100) {
                    0 => Some((url.as_str(), huge.as_slice())),
                    1..=15 => Some((url.as_str(), body.as_slice())),
                    _ => None,
                };
                let slow = rng.random_bool(0.1);
                let report = Report {
                    pid,
                    sample: Sample {
                        ok: rng.random_bool(0.65),
                        latency: if slow { rng.random_range(500..2_000) } else { rng.random_range(0..300) },
                    },
                    not_before_in: rng.random_bool(0.2).then(|| rng.random_range(0..3_000)),
                    good_body,
                    breaker: rng.random_bool(0.95).then_some(settings),
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
        let mut store = RedisStore::new(&url_of(&server), None, false).expect("a store");
        let mut origin = Origin::default();
        let settings = Settings { window: 5, min_success: 60, max_p95: 100, cooldown: 1_000 };
        let now = 1_795_000_000_000;
        let ask = |pid, spacing, deadline_in| Ask { pid, spacing, deadline_in, breaker: Some(settings), lease: 0 };
        let report = |pid, ok, latency, not_before_in| Report {
            pid,
            sample: Sample { ok, latency },
            not_before_in,
            good_body: None,
            breaker: Some(settings),
        };
        enum Step {
            Admit(u64, Ask),
            Record(u64, Report<'static>),
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
        assert_eq!(origin.breaker, crate::breaker::Breaker::default(), "closed again by the last probe");
    }

    #[test]
    fn a_store_that_cannot_connect_says_so_and_connects_again_when_it_can() {
        let Some(server) = Server::start() else { return };
        let socket = server.socket();
        let mut store = RedisStore::new(&url_of(&server), None, false).expect("a store");
        let ask = Ask { pid: 1, spacing: Some(100), deadline_in: None, breaker: None, lease: 0 };
        assert_eq!(store.admit("k", &ask, SECOND), Ok(Admission::Go { wait: 0, why: None }));
        drop(server);
        let Err(e) = store.admit("k", &ask, SECOND) else { panic!("the server is gone") };
        assert!(e.starts_with("cannot reach Redis: "), "{e}");
        assert!(store.connection.is_none(), "a failed step drops its connection");
        assert!(!Path::new(&socket).exists());
    }
}
