//! Per-origin state shared by every `poll` that names the same `--state` file:
//! the `--rate` bucket, the server's "not before" time, the circuit breaker and
//! the last good bodies. The per-attempt steps ([`Origin::admit`],
//! [`Origin::record`]) are pure; [`Store`] is the only file I/O: read-modify-write
//! under an exclusive lock on `FILE.lock`, written atomically (temp file + rename).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::breaker::{self, Admit, Breaker, Phase, Rejection, Sample, Settings};
use crate::bucket::Bucket;

/// The format version this `poll` reads and writes.
pub const VERSION: u64 = 1;

/// Larger bodies are not kept for `--fallback last`: the file is read and
/// written around every attempt, so it must stay small.
pub const MAX_KEPT_BODY: usize = 1 << 20;

/// Last good bodies kept per origin; the oldest goes first.
pub const MAX_KEPT_BODIES: usize = 16;

/// Everything in a state file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    /// Keyed by origin: `scheme://host:port`.
    pub origins: BTreeMap<String, Origin>,
}

/// What is known about one origin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    pub bucket: Bucket,
    /// Epoch ms before which nothing is sent: the server's `Retry-After` or
    /// rate-limit reset that a run honoured, so the next run honours it too.
    pub not_before: u64,
    pub breaker: Breaker,
    /// The final body of the last run that ended with exit 0, by URL (redacted).
    pub last_good: BTreeMap<String, Kept>,
}

/// A kept body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kept {
    /// Epoch ms when it was kept.
    pub at: u64,
    pub body: Vec<u8>,
}

/// What a run asks before an attempt.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    /// Epoch ms.
    pub now: u64,
    pub pid: u32,
    /// `--rate` spacing in ms.
    pub spacing: Option<u64>,
    /// Epoch ms of `--timeout`.
    pub deadline: Option<u64>,
    /// The breaker settings; `None` without `--state`.
    pub breaker: Option<&'a Settings>,
}

/// Whether and when the next attempt may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Send at `at` (epoch ms; `now` when there is nothing to wait for).
    Go { at: u64, why: Why },
    /// The breaker is open (or another process is probing): send nothing, exit 6.
    Open(Rejection),
    /// The turn would come only at or after the deadline: exit 1 now.
    TooLate { at: u64, why: Why },
}

/// What the next attempt waits for before it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    Nothing,
    /// The server's advice, kept in the state file by an earlier attempt or run.
    NotBefore,
    /// The `--rate` slot.
    Rate,
}

impl Why {
    pub fn describe(self) -> &'static str {
        match self {
            Why::Nothing => "now",
            Why::NotBefore => "the server's Retry-After or rate-limit reset, kept in --state",
            Why::Rate => "--rate",
        }
    }
}

/// What a run tells the state after an attempt.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    /// Epoch ms.
    pub now: u64,
    pub pid: u32,
    pub sample: Sample,
    /// Epoch ms of the server-advised wait the policy honoured, if any.
    pub not_before: Option<u64>,
    /// (URL, body) of a run that is done, to keep for `--fallback last`.
    pub good_body: Option<(&'a str, &'a [u8])>,
    pub breaker: Option<&'a Settings>,
}

impl Origin {
    /// Before an attempt: the breaker first, then the server's "not before",
    /// then the rate slot. Commits the slot (and a probe) only when it says `Go`.
    pub fn admit(&mut self, ask: &Ask) -> Admission {
        let probe = match ask.breaker.map(|_| self.breaker.admit(ask.now)) {
            Some(Admit::Reject(rejection)) => return Admission::Open(rejection),
            Some(Admit::Probe) => true,
            Some(Admit::Pass) | None => false,
        };
        let advised = self.not_before.max(ask.now);
        let at = if ask.spacing.is_some() { self.bucket.slot(advised) } else { advised };
        let why = if at > advised {
            Why::Rate
        } else if at > ask.now {
            Why::NotBefore
        } else {
            Why::Nothing
        };
        if let Some(deadline) = ask.deadline
            && at > ask.now
            && at >= deadline
        {
            return Admission::TooLate { at, why };
        }
        if let Some(spacing) = ask.spacing {
            self.bucket.take(at, spacing);
        }
        if let (true, Some(settings)) = (probe, ask.breaker) {
            self.breaker.start_probe(ask.pid, at, settings);
        }
        Admission::Go { at, why }
    }

    /// After an attempt: keep the server's advice and a good body, and feed the
    /// breaker. Returns the breaker's rejection when it is open afterwards.
    pub fn record(&mut self, report: &Report) -> Option<Rejection> {
        if let Some(not_before) = report.not_before {
            self.not_before = self.not_before.max(not_before);
        }
        if let Some((url, body)) = report.good_body {
            self.keep(url, body, report.now);
        }
        let settings = report.breaker?;
        self.breaker.record(report.now, report.pid, report.sample, settings)
    }

    /// Keeps `body` as the last good body of `url`. A body too large to keep
    /// drops the older one, so `last` never serves a body older than the last success.
    fn keep(&mut self, url: &str, body: &[u8], now: u64) {
        if body.len() > MAX_KEPT_BODY {
            self.last_good.remove(url);
            return;
        }
        self.last_good.insert(url.to_string(), Kept { at: now, body: body.to_vec() });
        while self.last_good.len() > MAX_KEPT_BODIES {
            let oldest = self.last_good.iter().min_by_key(|(_, kept)| kept.at).map(|(url, _)| url.clone());
            if let Some(url) = oldest {
                self.last_good.remove(&url);
            }
        }
    }
}

/// `scheme://host:port` of a URL, lowercased, the default port spelled out,
/// so `http://H/a` and `http://h:80/b` share one bucket and one breaker.
pub fn origin_of(url: &str) -> String {
    let Ok(uri) = url.parse::<ureq::http::Uri>() else { return url.to_string() };
    let (scheme, host, port) = crate::request::origin(&uri);
    format!("{scheme}://{host}:{port}")
}

/// Epoch milliseconds of `t` (0 before 1970).
pub fn epoch_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, breaker::duration_ms)
}

/// An epoch-ms instant for people: RFC 3339 and how far ahead, e.g.
/// `2026-11-30T01:44:00Z (in 25s)`.
pub fn when(at: u64, now: u64) -> String {
    let stamp = humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(at));
    let secs = at.saturating_sub(now).div_ceil(1000);
    format!("{stamp} (in {})", humantime::format_duration(Duration::from_secs(secs)))
}

// The file format, by hand rather than by derive: every field is checked, and
// a file that does not fit is set aside rather than half-read.

impl State {
    /// The JSON text of the state file.
    pub fn to_json(&self) -> Vec<u8> {
        let origins: Map<String, Value> =
            self.origins.iter().map(|(key, origin)| (key.clone(), origin_to_json(origin))).collect();
        let mut text = serde_json::to_vec_pretty(&json!({ "version": VERSION, "origins": origins }))
            .unwrap_or_else(|_| b"{}".to_vec());
        text.push(b'\n');
        text
    }

    /// Parses a state file; the error says what is wrong with it.
    pub fn from_json(bytes: &[u8]) -> Result<State, String> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        let top = value.as_object().ok_or("not a JSON object")?;
        match top.get("version").map(|v| (v, v.as_u64())) {
            Some((_, Some(VERSION))) => {}
            Some((v, _)) => return Err(format!("unknown version {v} (this poll reads version {VERSION})")),
            None => return Err("no version".into()),
        }
        let origins = top.get("origins").and_then(Value::as_object).ok_or("no `origins` object")?;
        let origins = origins
            .iter()
            .map(|(key, value)| origin_from_json(value).map(|o| (key.clone(), o)).map_err(|e| format!("{key}: {e}")))
            .collect::<Result<_, _>>()?;
        Ok(State { origins })
    }
}

fn origin_to_json(origin: &Origin) -> Value {
    let b = &origin.breaker;
    let mut breaker = json!({
        "state": match b.phase {
            Phase::Closed => "closed",
            Phase::Open { .. } => "open",
            Phase::HalfOpen { .. } => "half_open",
        },
        "cooldown_ms": b.cooldown,
        "reason": b.reason,
        "window": b.window.iter().map(|s| json!({ "ok": s.ok, "ms": s.latency })).collect::<Vec<_>>(),
    });
    match b.phase {
        Phase::Closed => {}
        Phase::Open { until } => breaker["until_ms"] = json!(until),
        Phase::HalfOpen { pid, lease_until } => {
            breaker["probe_pid"] = json!(pid);
            breaker["lease_until_ms"] = json!(lease_until);
        }
    }
    let last_good: Map<String, Value> = origin
        .last_good
        .iter()
        .map(|(url, kept)| {
            // Text stays readable in the file; anything else is base64.
            let body = match std::str::from_utf8(&kept.body) {
                Ok(text) => json!({ "at_ms": kept.at, "text": text }),
                Err(_) => {
                    json!({ "at_ms": kept.at, "base64": base64::engine::general_purpose::STANDARD.encode(&kept.body) })
                }
            };
            (url.clone(), body)
        })
        .collect();
    json!({
        "next_slot_ms": origin.bucket.next_free,
        "not_before_ms": origin.not_before,
        "breaker": breaker,
        "last_good": last_good,
    })
}

fn origin_from_json(value: &Value) -> Result<Origin, String> {
    let fields = value.as_object().ok_or("not an object")?;
    let mut origin = Origin {
        bucket: Bucket { next_free: number(fields, "next_slot_ms")?.unwrap_or(0) },
        not_before: number(fields, "not_before_ms")?.unwrap_or(0),
        ..Origin::default()
    };
    if let Some(breaker) = fields.get("breaker") {
        let b = breaker.as_object().ok_or("`breaker` is not an object")?;
        let at = |name| number(b, name)?.ok_or_else(|| format!("breaker: no `{name}`"));
        let phase = match b.get("state").and_then(Value::as_str) {
            Some("closed") | None => Phase::Closed,
            Some("open") => Phase::Open { until: at("until_ms")? },
            Some("half_open") => Phase::HalfOpen {
                pid: u32::try_from(at("probe_pid")?).map_err(|_| "breaker: `probe_pid` out of range")?,
                lease_until: at("lease_until_ms")?,
            },
            Some(other) => return Err(format!("breaker: unknown state `{other}`")),
        };
        let window = match b.get("window") {
            None => Default::default(),
            Some(window) => window
                .as_array()
                .ok_or("breaker: `window` is not an array")?
                .iter()
                .map(|s| {
                    let ok = s.get("ok").and_then(Value::as_bool);
                    let latency = s.get("ms").and_then(Value::as_u64);
                    ok.zip(latency).map(|(ok, latency)| Sample { ok, latency }).ok_or("breaker: bad `window` entry")
                })
                .collect::<Result<_, _>>()?,
        };
        let reason = match b.get("reason") {
            None => String::new(),
            Some(reason) => reason.as_str().ok_or("breaker: `reason` is not a string")?.to_string(),
        };
        origin.breaker = Breaker { phase, window, cooldown: number(b, "cooldown_ms")?.unwrap_or(0), reason };
    }
    if let Some(last_good) = fields.get("last_good") {
        for (url, kept) in last_good.as_object().ok_or("`last_good` is not an object")? {
            let at = kept.get("at_ms").and_then(Value::as_u64).unwrap_or(0);
            let body = match (kept.get("text").and_then(Value::as_str), kept.get("base64").and_then(Value::as_str)) {
                (Some(text), _) => text.as_bytes().to_vec(),
                (None, Some(encoded)) => base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .map_err(|e| format!("last_good {url}: bad base64: {e}"))?,
                (None, None) => return Err(format!("last_good {url}: no `text` or `base64`")),
            };
            origin.last_good.insert(url.clone(), Kept { at, body });
        }
    }
    Ok(origin)
}

/// An optional non-negative integer field.
fn number(fields: &Map<String, Value>, name: &str) -> Result<Option<u64>, String> {
    match fields.get(name) {
        None => Ok(None),
        Some(value) => value.as_u64().map(Some).ok_or_else(|| format!("`{name}` is not a non-negative integer")),
    }
}

/// The state file on disk.
#[derive(Debug, Clone)]
pub struct Store {
    path: PathBuf,
    /// `FILE.lock`: never renamed, so every process locks the same inode
    /// while `FILE` itself is replaced by each write.
    lock: PathBuf,
}

impl Store {
    pub fn new(path: &Path) -> Store {
        Store { path: path.to_path_buf(), lock: with_suffix(path, ".lock") }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the state, lets `change` update it, and writes it back when it
    /// changed, all under the exclusive lock, which is released on return (the
    /// lock is never held across a request or a wait). A file that cannot be
    /// read or parsed is set aside as `FILE.corrupt` with a warning, and a
    /// fresh state is used instead.
    pub fn update<R>(&self, warn: &mut dyn FnMut(&str), change: impl FnOnce(&mut State) -> R) -> Result<R, String> {
        let lock = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.lock)
            .map_err(|e| format!("cannot open `{}`: {e}", self.lock.display()))?;
        lock.lock().map_err(|e| format!("cannot lock `{}`: {e}", self.lock.display()))?;

        let (mut state, original) = match fs::read(&self.path) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => (State::default(), None),
            Ok(bytes) => match State::from_json(&bytes) {
                Ok(state) => (state, Some(bytes)),
                Err(why) => (self.set_aside(&why, warn)?, None),
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => (State::default(), None),
            Err(e) => (self.set_aside(&format!("cannot be read: {e}"), warn)?, None),
        };
        let result = change(&mut state);
        let fresh = state.to_json();
        let unchanged = match &original {
            Some(bytes) => *bytes == fresh,
            None => state == State::default(),
        };
        if !unchanged {
            self.write(&fresh).map_err(|e| format!("cannot write `{}`: {e}", self.path.display()))?;
        }
        // Closing the lock file releases the lock.
        drop(lock);
        Ok(result)
    }

    /// Renames a bad file to `FILE.corrupt` (or `.corrupt.1`, ... when taken,
    /// so no earlier one is lost) and returns a fresh state.
    fn set_aside(&self, why: &str, warn: &mut dyn FnMut(&str)) -> Result<State, String> {
        let target = (0..100)
            .map(|n| if n == 0 { ".corrupt".to_string() } else { format!(".corrupt.{n}") })
            .map(|suffix| with_suffix(&self.path, &suffix))
            .find(|candidate| !candidate.exists())
            .unwrap_or_else(|| with_suffix(&self.path, ".corrupt"));
        fs::rename(&self.path, &target).map_err(|e| {
            format!("`{}` {why}, and cannot be moved aside to `{}`: {e}", self.path.display(), target.display())
        })?;
        warn(&format!(
            "--state: `{}` is not a usable state file ({why}); moved it to `{}` and started afresh",
            self.path.display(),
            target.display()
        ));
        Ok(State::default())
    }

    /// Atomic replace: a temp file in the same folder, then rename over `FILE`.
    /// No fsync: the rename alone keeps a killed process from leaving half a
    /// file, and it keeps the lock short; after a power cut an empty or torn
    /// file is just a fresh state (or set aside).
    fn write(&self, bytes: &[u8]) -> io::Result<()> {
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = self.path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let written = File::create(&temp).and_then(|mut file| file.write_all(bytes));
        let renamed = written.and_then(|()| fs::rename(&temp, &self.path));
        if renamed.is_err() {
            let _ = fs::remove_file(&temp);
        }
        renamed
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

/// Where a run keeps its origin's state: in memory (`--rate` alone: per
/// process), or in the `--state` file, shared by every process.
pub struct Shared {
    store: Option<Store>,
    /// Without `--state`: the bucket of this process.
    local: Origin,
    origin: String,
    /// The URL that good bodies are kept under: redacted, as no secret goes into the file.
    key: String,
    pid: u32,
    spacing: Option<u64>,
    breaker: Settings,
}

impl Shared {
    pub fn new(state: Option<&Path>, rate: Option<Duration>, breaker: Settings, url: &str) -> Shared {
        Shared {
            store: state.map(Store::new),
            local: Origin::default(),
            origin: origin_of(url),
            key: crate::output::redact_url(url),
            pid: std::process::id(),
            spacing: rate.map(crate::bucket::spacing_ms),
            breaker,
        }
    }

    /// The origin this run's state is kept under.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Whether anything is to be asked at all.
    pub fn is_active(&self) -> bool {
        self.store.is_some() || self.spacing.is_some()
    }

    /// Before an attempt; see [`Origin::admit`].
    pub fn admit(&mut self, now: u64, deadline: Option<u64>, warn: &mut dyn FnMut(&str)) -> Result<Admission, String> {
        let mut ask = Ask { now, pid: self.pid, spacing: self.spacing, deadline, breaker: None };
        match &self.store {
            None => Ok(self.local.admit(&ask)),
            Some(store) => {
                ask.breaker = Some(&self.breaker);
                store.update(warn, |state| state.origins.entry(self.origin.clone()).or_default().admit(&ask))
            }
        }
    }

    /// After an attempt; see [`Origin::record`]. Without `--state` there is nothing to keep.
    pub fn record(
        &mut self,
        now: u64,
        sample: Sample,
        not_before: Option<u64>,
        good_body: Option<&[u8]>,
        warn: &mut dyn FnMut(&str),
    ) -> Result<Option<Rejection>, String> {
        let Some(store) = &self.store else { return Ok(None) };
        let good_body = good_body.map(|body| (self.key.as_str(), body));
        let report = Report { now, pid: self.pid, sample, not_before, good_body, breaker: Some(&self.breaker) };
        store.update(warn, |state| state.origins.entry(self.origin.clone()).or_default().record(&report))
    }
}

/// The last good body of `url` kept in the state file, if any.
pub fn last_good(store: &Store, url: &str, warn: &mut dyn FnMut(&str)) -> Result<Option<Vec<u8>>, String> {
    let origin = origin_of(url);
    let key = crate::output::redact_url(url);
    store.update(warn, |state| {
        state.origins.get(&origin).and_then(|o| o.last_good.get(&key)).map(|kept| kept.body.clone())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    const NOW: u64 = 1_795_000_000_000;

    /// A fresh folder under the system temp dir, removed on drop.
    struct Folder(PathBuf);

    impl Folder {
        fn new() -> Folder {
            static N: AtomicU32 = AtomicU32::new(0);
            let name = format!("poll-state-test-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
            let path = std::env::temp_dir().join(name);
            let _ = fs::remove_dir_all(&path);
            fs::create_dir_all(&path).expect("create a temp folder");
            Folder(path)
        }

        fn file(&self, name: &str) -> PathBuf {
            self.0.join(name)
        }
    }

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn ask(now: u64) -> Ask<'static> {
        Ask { now, pid: 1, spacing: Some(100), deadline: None, breaker: None }
    }

    #[test]
    fn admit_waits_for_the_slot_and_commits_it() {
        let mut origin = Origin::default();
        assert_eq!(origin.admit(&ask(NOW)), Admission::Go { at: NOW, why: Why::Nothing });
        assert_eq!(origin.admit(&ask(NOW)), Admission::Go { at: NOW + 100, why: Why::Rate });
        assert_eq!(origin.bucket.next_free, NOW + 200);
        // Without --rate there is no slot to wait for.
        let free = Ask { spacing: None, ..ask(NOW) };
        assert_eq!(origin.admit(&free), Admission::Go { at: NOW, why: Why::Nothing });
    }

    #[test]
    fn admit_honours_the_servers_not_before_then_the_slot() {
        let mut origin = Origin { not_before: NOW + 5_000, ..Origin::default() };
        assert_eq!(origin.admit(&ask(NOW)), Admission::Go { at: NOW + 5_000, why: Why::NotBefore });
        assert_eq!(origin.admit(&ask(NOW)), Admission::Go { at: NOW + 5_100, why: Why::Rate });
    }

    #[test]
    fn admit_never_waits_into_the_deadline_and_then_takes_nothing() {
        let mut origin = Origin { not_before: NOW + 5_000, ..Origin::default() };
        let before = origin.clone();
        let late = Ask { deadline: Some(NOW + 5_000), ..ask(NOW) };
        assert_eq!(origin.admit(&late), Admission::TooLate { at: NOW + 5_000, why: Why::NotBefore });
        assert_eq!(origin, before, "a slot that is not used is not taken");
        let ok = Ask { deadline: Some(NOW + 5_001), ..ask(NOW) };
        assert!(matches!(origin.admit(&ok), Admission::Go { .. }));
    }

    #[test]
    fn admit_asks_the_breaker_first_and_records_the_probe() {
        let settings = Settings::default();
        let mut origin = Origin::default();
        origin.breaker.cooldown = 1_000;
        origin.breaker.phase = Phase::Open { until: NOW + 1_000 };
        origin.breaker.reason = "down".into();
        let with_breaker = Ask { breaker: Some(&settings), ..ask(NOW) };
        let Admission::Open(rejection) = origin.admit(&with_breaker) else { panic!("open") };
        assert_eq!((rejection.retry_at, rejection.reason.as_str()), (NOW + 1_000, "down"));
        assert_eq!(origin.bucket, Bucket::default(), "a rejected caller takes no slot");

        let later = Ask { now: NOW + 1_000, pid: 7, ..with_breaker };
        assert_eq!(origin.admit(&later), Admission::Go { at: NOW + 1_000, why: Why::Nothing });
        assert_eq!(origin.breaker.phase, Phase::HalfOpen { pid: 7, lease_until: NOW + 2_000 });
        let other = Ask { pid: 8, ..later };
        assert!(matches!(origin.admit(&other), Admission::Open(Rejection { prober: Some(7), .. })));
    }

    #[test]
    fn record_keeps_advice_good_bodies_and_feeds_the_breaker() {
        let settings = Settings::default();
        let mut origin = Origin::default();
        let report = Report {
            now: NOW,
            pid: 1,
            sample: Sample { ok: false, latency: 1 },
            not_before: Some(NOW + 3_000),
            good_body: None,
            breaker: Some(&settings),
        };
        for _ in 0..4 {
            assert_eq!(origin.record(&report), None);
        }
        assert_eq!(origin.not_before, NOW + 3_000);
        let earlier = Report { not_before: Some(NOW + 1_000), ..report };
        assert!(origin.record(&earlier).is_some(), "the fifth failure opens the breaker");
        assert_eq!(origin.not_before, NOW + 3_000, "the later advice stands");

        let good = Report { good_body: Some(("http://h/a", b"{\"ok\":1}")), ..report };
        origin.record(&good);
        assert_eq!(origin.last_good.get("http://h/a").map(|k| &k.body[..]), Some(&b"{\"ok\":1}"[..]));
        let huge = vec![b' '; MAX_KEPT_BODY + 1];
        origin.record(&Report { good_body: Some(("http://h/a", &huge)), ..report });
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

    #[test]
    fn origins_are_scheme_host_and_port() {
        assert_eq!(origin_of("http://127.0.0.1:8080/a?b=1"), "http://127.0.0.1:8080");
        assert_eq!(origin_of("HTTP://Example.COM/x"), "http://example.com:80");
        assert_eq!(origin_of("https://example.com/"), "https://example.com:443");
        assert_eq!(origin_of("http://[::1]:9/"), "http://[::1]:9");
    }

    #[test]
    fn when_is_rfc3339_and_relative() {
        assert_eq!(when(25_000, 0), "1970-01-01T00:00:25Z (in 25s)");
        assert_eq!(when(90_500, 0), "1970-01-01T00:01:30Z (in 1m 31s)");
        assert_eq!(when(0, 5_000), "1970-01-01T00:00:00Z (in 0s)");
    }

    fn sample_state() -> State {
        let mut origin = Origin {
            bucket: Bucket { next_free: NOW + 100 },
            not_before: NOW + 2_000,
            breaker: Breaker {
                phase: Phase::HalfOpen { pid: 4242, lease_until: NOW + 30_000 },
                window: [Sample { ok: true, latency: 12 }, Sample { ok: false, latency: 5_001 }].into(),
                cooldown: 30_000,
                reason: "5 of the last 5 requests failed".into(),
            },
            last_good: BTreeMap::new(),
        };
        origin.keep("http://127.0.0.1:8080/a", br#"{"n":1}"#, NOW);
        origin.keep("http://127.0.0.1:8080/bin", &[0xff, 0x00, 0xfe], NOW);
        let mut state = State::default();
        state.origins.insert("http://127.0.0.1:8080".into(), origin);
        let open = Origin {
            breaker: Breaker { phase: Phase::Open { until: NOW }, ..Breaker::default() },
            ..Origin::default()
        };
        state.origins.insert("https://example.com:443".into(), open);
        state
    }

    #[test]
    fn the_file_format_round_trips() {
        let state = sample_state();
        let text = state.to_json();
        assert_eq!(State::from_json(&text), Ok(state));
        let value: Value = serde_json::from_slice(&text).unwrap_or_default();
        assert_eq!(value["version"], 1);
        let origin = &value["origins"]["http://127.0.0.1:8080"];
        assert_eq!(origin["breaker"]["state"], "half_open");
        assert_eq!(origin["breaker"]["probe_pid"], 4242);
        assert_eq!(origin["last_good"]["http://127.0.0.1:8080/a"]["text"], r#"{"n":1}"#);
        assert_eq!(origin["last_good"]["http://127.0.0.1:8080/bin"]["base64"], "/wD+");
    }

    #[test]
    fn bad_files_are_refused_with_a_reason() {
        let rows: [(&str, &str); 9] = [
            ("{", "not JSON"),
            ("[]", "not a JSON object"),
            (r#"{"origins":{}}"#, "no version"),
            (r#"{"version":2,"origins":{}}"#, "unknown version 2"),
            (r#"{"version":"1","origins":{}}"#, "unknown version \"1\""),
            (r#"{"version":1}"#, "no `origins`"),
            (r#"{"version":1,"origins":{"o":{"next_slot_ms":-1}}}"#, "next_slot_ms"),
            (r#"{"version":1,"origins":{"o":{"breaker":{"state":"ajar"}}}}"#, "unknown state `ajar`"),
            (r#"{"version":1,"origins":{"o":{"breaker":{"state":"open"}}}}"#, "no `until_ms`"),
        ];
        for (text, why) in rows {
            let err = State::from_json(text.as_bytes()).err().unwrap_or_default();
            assert!(err.contains(why), "{text}: {err:?} should say {why:?}");
        }
        // Fields this version does not know are ignored, not fatal.
        let extra = r#"{"version":1,"origins":{"o":{"future":true}},"note":"x"}"#;
        assert_eq!(State::from_json(extra.as_bytes()).map(|s| s.origins.len()), Ok(1));
    }

    #[test]
    fn a_fresh_store_starts_empty_and_writes_only_on_change() {
        let folder = Folder::new();
        let store = Store::new(&folder.file("state.json"));
        let mut warnings = Vec::new();
        let mut warn = |w: &str| warnings.push(w.to_string());
        let seen = store.update(&mut warn, |state| state.clone());
        assert_eq!(seen, Ok(State::default()));
        assert!(!folder.file("state.json").exists(), "nothing to keep, nothing written");
        assert!(folder.file("state.json.lock").exists());

        let wrote = store.update(&mut warn, |state| {
            state.origins.insert("http://h:80".into(), Origin { not_before: 5, ..Origin::default() });
        });
        assert_eq!(wrote, Ok(()));
        let read = store.update(&mut warn, |state| state.origins.get("http://h:80").map(|o| o.not_before));
        assert_eq!(read, Ok(Some(5)));
        assert!(warnings.is_empty(), "{warnings:?}");
        let leftovers: Vec<_> = fs::read_dir(&folder.0)
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let mut leftovers = leftovers;
        leftovers.sort();
        assert_eq!(leftovers, ["state.json", "state.json.lock"], "no temp file is left behind");
    }

    #[test]
    fn a_corrupt_file_is_set_aside_and_replaced() {
        let folder = Folder::new();
        let path = folder.file("state.json");
        fs::write(&path, b"{ not json").expect("write");
        let store = Store::new(&path);
        let mut warnings = Vec::new();
        let result = store.update(&mut |w| warnings.push(w.to_string()), |state| {
            state.origins.entry("http://h:80".into()).or_default().not_before = 1;
        });
        assert_eq!(result, Ok(()));
        assert_eq!(fs::read(folder.file("state.json.corrupt")).ok(), Some(b"{ not json".to_vec()));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("state.json.corrupt") && warnings[0].contains("not JSON"), "{}", warnings[0]);
        let fresh = fs::read(&path).map(|b| State::from_json(&b)).ok();
        assert!(matches!(fresh, Some(Ok(ref s)) if s.origins.len() == 1), "{fresh:?}");

        // A second bad file does not replace the first one set aside.
        fs::write(&path, br#"{"version":99,"origins":{}}"#).expect("write");
        let mut warnings = Vec::new();
        let result = store.update(&mut |w| warnings.push(w.to_string()), |_| ());
        assert_eq!(result, Ok(()));
        assert_eq!(fs::read(folder.file("state.json.corrupt")).ok(), Some(b"{ not json".to_vec()));
        assert_eq!(
            fs::read(folder.file("state.json.corrupt.1")).ok(),
            Some(br#"{"version":99,"origins":{}}"#.to_vec())
        );
        assert!(warnings[0].contains("unknown version 99"), "{warnings:?}");
    }

    #[test]
    fn an_empty_file_is_a_fresh_state_without_a_warning() {
        let folder = Folder::new();
        let path = folder.file("state.json");
        fs::write(&path, b"").expect("write");
        let mut warnings = Vec::new();
        let result = Store::new(&path).update(&mut |w| warnings.push(w.to_string()), |state| state.origins.len());
        assert_eq!(result, Ok(0));
        assert!(warnings.is_empty());
        assert!(!folder.file("state.json.corrupt").exists());
    }

    #[test]
    fn shared_state_is_seen_by_a_second_handle() {
        let folder = Folder::new();
        let path = folder.file("s.json");
        let url = "http://127.0.0.1:9/x";
        let mut one = Shared::new(Some(&path), Some(Duration::from_millis(100)), Settings::default(), url);
        let mut two = Shared::new(Some(&path), Some(Duration::from_millis(100)), Settings::default(), url);
        let mut warn = |_: &str| {};
        assert_eq!(one.admit(NOW, None, &mut warn), Ok(Admission::Go { at: NOW, why: Why::Nothing }));
        assert_eq!(two.admit(NOW, None, &mut warn), Ok(Admission::Go { at: NOW + 100, why: Why::Rate }));
        one.record(NOW, Sample { ok: true, latency: 1 }, None, Some(b"good"), &mut warn).ok();
        assert_eq!(last_good(&Store::new(&path), url, &mut warn), Ok(Some(b"good".to_vec())));
        assert_eq!(last_good(&Store::new(&path), "http://127.0.0.1:9/other", &mut warn), Ok(None));
    }
}
