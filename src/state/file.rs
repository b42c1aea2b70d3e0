//! The `--state FILE` store: a small versioned JSON file, changed by
//! read-modify-write under an exclusive lock on `FILE.lock` and replaced
//! atomically (temp file + rename), so processes on one machine share it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::{self, File, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize as _;
use serde_json::Value;

use super::origin::Origin;
use super::{Ask, AttemptReport, Refusal, Store, Turn};
use crate::util::text::cut;
use crate::util::{clock, file};

/// The format version this `poll` reads and writes.
const VERSION: u64 = 1;

/// The most keys a state file holds: each attempt reads and writes it whole,
/// so a file of 200,000 keys (a hostile one) would cost seconds an attempt.
const MAX_KEYS: usize = 10_000;

/// How often a held lock is tried again while waiting for it.
const LOCK_RETRY: Duration = Duration::from_millis(1);

/// Everything in a state file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    /// Keyed by origin (`scheme://host:port`) or `--state-key`.
    pub(crate) origins: BTreeMap<String, Origin>,
}

impl State {
    /// Every key's values checked at `now`, then its two steps (admit, then
    /// record a failure and a success) taken as a store takes them, with the
    /// widest settings a user can give: what the `state` fuzz target runs on
    /// whatever a hostile file held.
    pub(crate) fn step_every_key(&mut self, now: u64) {
        let settings =
            crate::rules::breaker::Settings { window: 1000, min_success: 100, max_p95: 1, cooldown: u64::MAX };
        let ask = Ask {
            pid: 1,
            spacing: Some(u64::MAX),
            deadline_in: Some(u64::MAX),
            breaker: Some(settings),
            lease: u64::MAX,
            retry: true,
            budget: Some(crate::rules::budget::RetryBudget { percent: 100, per_second: 10_000 }),
            auto: true,
        };
        for origin in self.origins.values_mut() {
            origin.checked(now);
            let _ = origin.admit(now, &ask);
            for (ok, throttled_at) in [(false, Some(now)), (true, None)] {
                let sample = crate::rules::breaker::Sample { ok, latency: u64::MAX };
                let report = AttemptReport {
                    pid: 1,
                    sample,
                    not_before_in: Some(u64::MAX),
                    good_body: None,
                    breaker: Some(settings),
                    throttled_at,
                };
                let _ = origin.record(now, &report);
            }
        }
    }

    /// The JSON text of the state file: keys sorted, pretty, one newline at the end.
    pub fn to_json(&self) -> Vec<u8> {
        // Through a `Value` with its keys sorted: the bytes do not depend on field order.
        let mut value = serde_json::json!({ "version": VERSION, "origins": self.origins });
        sort_keys(&mut value);
        let mut text = serde_json::to_vec_pretty(&value).unwrap_or_else(|_| b"{}".to_vec());
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
        if origins.len() > MAX_KEYS {
            return Err(format!("it holds {} keys; a state file holds at most {MAX_KEYS}", origins.len()));
        }
        let origins = origins
            .iter()
            // serde quotes the value it could not take, which may be a kept body: cut, as every quote is.
            .map(|(key, value)| {
                Origin::deserialize(value)
                    .map(|o| (key.clone(), o))
                    .map_err(|e| format!("{}: {}", cut(key), cut(&e.to_string())))
            })
            .collect::<Result<_, _>>()?;
        Ok(State { origins })
    }
}

/// Sorts every object's keys, all the way down.
fn sort_keys(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.sort_keys();
            map.values_mut().for_each(sort_keys);
        }
        Value::Array(items) => items.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

/// The state file on disk.
#[derive(Debug, Clone)]
pub(crate) struct FileStore {
    path: PathBuf,
    /// `FILE.lock`: never renamed, so every process locks the same inode
    /// while `FILE` itself is replaced by each write.
    lock: PathBuf,
    /// Warnings about the file (a corrupt one set aside) not yet shown.
    notes: Vec<String>,
    /// A value out of bounds was warned of.
    checked: bool,
}

impl FileStore {
    pub(crate) fn new(path: &Path) -> FileStore {
        FileStore { path: path.to_path_buf(), lock: FileStore::lock_path(path), notes: Vec::new(), checked: false }
    }

    /// `FILE.lock`, the lock of the state file `FILE`.
    pub(crate) fn lock_path(path: &Path) -> PathBuf {
        with_suffix(path, ".lock")
    }

    /// Reads the state, lets `change` update it, and writes it back when it
    /// changed, all under the exclusive lock, which is released on return (the
    /// lock is never held across a request or a wait). A file that cannot be
    /// read or parsed is set aside as `FILE.corrupt` with a warning, and a
    /// fresh state is used instead. Waiting for the lock gives up after `timeout`.
    pub(crate) fn update<R>(&mut self, timeout: Duration, change: impl FnOnce(&mut State) -> R) -> Result<R, String> {
        let lock = self.lock(timeout)?;
        // Checked as before the first request, at every read and write: a name swapped mid-run for another
        // user's link, or a FIFO, fails the step (--state-fail says what follows) and is never read nor moved.
        // A file over 16 MiB is no state file poll wrote: set aside as corrupt, not read whole.
        let (mut state, original) = match file::read_private(&self.path) {
            Ok(None) => (State::default(), None),
            Ok(Some(bytes)) if bytes.iter().all(u8::is_ascii_whitespace) => (State::default(), None),
            Ok(Some(bytes)) => match State::from_json(&bytes) {
                Ok(state) => (state, Some(bytes)),
                Err(why) => (self.set_aside(&why)?, None),
            },
            Err(file::Unread::Refused(why)) => return Err(why),
            Err(file::Unread::Failed(e)) => (self.set_aside(&format!("cannot be read: {e}"))?, None),
        };
        self.check(&mut state);
        let result = change(&mut state);
        let fresh = state.to_json();
        let unchanged = match &original {
            Some(bytes) => *bytes == fresh,
            None => state == State::default(),
        };
        if !unchanged {
            // What sits at the name now, just before it is replaced (or its link's target is): the state is
            // never written in place into a FIFO or a device swapped in since it was read.
            file::check_private(&self.path)?;
            if fs::metadata(&self.path).is_ok_and(|meta| !meta.is_file()) {
                return Err(file::not_regular(&self.path));
            }
            let written = file::replace(&self.path, &fresh, false, file::Access::Owner, Some(Instant::now() + timeout));
            written.map_err(|e| format!("cannot write it: {e}"))?;
        }
        // Closing the lock file releases the lock.
        drop(lock);
        Ok(result)
    }

    fn lock(&self, timeout: Duration) -> Result<File, String> {
        let file = file::open_lock(&self.lock)?;
        let until = Instant::now() + timeout;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(file),
                Err(TryLockError::WouldBlock) if Instant::now() < until => std::thread::sleep(LOCK_RETRY),
                Err(TryLockError::WouldBlock) => {
                    let waited = crate::util::text::human(timeout);
                    return Err(format!("still locked after {waited} (is another poll stuck?)"));
                }
                Err(TryLockError::Error(e)) => return Err(format!("cannot lock `{}`: {e}", self.lock.display())),
            }
        }
    }

    /// Makes every origin's values safe to reason with ([`Origin::checked`]),
    /// saying once per store what was dropped.
    fn check(&mut self, state: &mut State) {
        let now = clock::now_ms();
        let changed: Vec<&str> = state.origins.values_mut().filter_map(|origin| origin.checked(now)).collect();
        if let (Some(what), false) = (changed.first(), self.checked) {
            self.checked = true;
            self.notes.push(format!("--state: `{}` holds {what} (is something else writing it?)", self.path.display()));
        }
    }

    /// Renames a bad file to `FILE.corrupt` (or `.corrupt.1`, ... when taken,
    /// so no earlier one is lost) and returns a fresh state.
    fn set_aside(&mut self, why: &str) -> Result<State, String> {
        let target = (0..100)
            .map(|n| if n == 0 { ".corrupt".to_string() } else { format!(".corrupt.{n}") })
            .map(|suffix| with_suffix(&self.path, &suffix))
            .find(|candidate| !candidate.exists())
            .unwrap_or_else(|| with_suffix(&self.path, ".corrupt"));
        fs::rename(&self.path, &target).map_err(|e| {
            format!("`{}` {why}, and cannot be moved aside to `{}`: {e}", self.path.display(), target.display())
        })?;
        self.notes.push(format!(
            "--state: `{}` is not a usable state file ({why}); moved it to `{}` and started afresh",
            self.path.display(),
            target.display()
        ));
        Ok(State::default())
    }
}

impl Store for FileStore {
    fn name(&self) -> String {
        format!("`{}`", self.path.display())
    }

    // The clock is read under the lock: a process that waited for it must
    // not take a slot from a moment that has already passed.
    fn admit(&mut self, key: &str, ask: &Ask, timeout: Duration) -> Result<Turn, String> {
        self.update(timeout, |state| state.origins.entry(key.to_string()).or_default().admit(clock::now_ms(), ask))
    }

    fn record(&mut self, key: &str, report: &AttemptReport, timeout: Duration) -> Result<Option<Refusal>, String> {
        self.update(timeout, |state| state.origins.entry(key.to_string()).or_default().record(clock::now_ms(), report))
    }

    fn last_good(&mut self, key: &str, url: &str, timeout: Duration) -> Result<Option<Vec<u8>>, String> {
        self.update(timeout, |state| {
            state.origins.get(key).and_then(|o| o.last_good.get(url)).map(|kept| kept.body.clone())
        })
    }

    fn notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::breaker::{Breaker, BreakerState, Sample};
    use crate::rules::bucket::Bucket;
    use crate::state::Admission;
    use std::sync::atomic::{AtomicU32, Ordering};

    const NOW: u64 = 1_795_000_000_000;
    const SECOND: Duration = Duration::from_secs(1);

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

    fn sample_state() -> State {
        let mut origin = Origin {
            bucket: Bucket { next_free: NOW + 100 },
            not_before: NOW + 2_000,
            breaker: Breaker {
                state: BreakerState::HalfOpen { pid: 4242, lease_until: NOW + 30_000 },
                window: [Sample { ok: true, latency: 12 }, Sample { ok: false, latency: 5_001 }].into(),
                cooldown: 30_000,
                reason: "5 of the last 5 requests failed".into(),
            },
            ..Origin::default()
        };
        origin.keep("http://127.0.0.1:8080/a", br#"{"n":1}"#, NOW);
        origin.keep("http://127.0.0.1:8080/bin", &[0xff, 0x00, 0xfe], NOW);
        let mut state = State::default();
        state.origins.insert("http://127.0.0.1:8080".into(), origin);
        let open = Origin {
            breaker: Breaker { state: BreakerState::Open { until: NOW }, ..Breaker::default() },
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
    fn a_file_written_by_the_first_version_reads_and_writes_back_byte_for_byte() {
        let fixture = include_bytes!("../../tests/fixtures/state-v1.json");
        let state = State::from_json(fixture).unwrap_or_else(|e| panic!("the fixture reads: {e}"));
        let origin = &state.origins["http://127.0.0.1:18765"];
        assert_eq!(origin.breaker.state, BreakerState::Open { until: 1_796_114_048_705 });
        assert_eq!(origin.breaker.window.len(), 5);
        assert_eq!(origin.last_good.len(), 1);
        assert_eq!(String::from_utf8_lossy(&state.to_json()), String::from_utf8_lossy(fixture));
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
            (r#"{"version":1,"origins":{"o":{"next_slot_ms":"soon"}}}"#, "o: invalid type: string \"soon\""),
            (r#"{"version":1,"origins":{"o":{"breaker":{"state":"ajar"}}}}"#, "unknown variant `ajar`"),
            (r#"{"version":1,"origins":{"o":{"breaker":{"state":"open"}}}}"#, "missing field `until_ms`"),
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
        let mut store = FileStore::new(&folder.file("state.json"));
        let seen = store.update(SECOND, |state| state.clone());
        assert_eq!(seen, Ok(State::default()));
        assert!(!folder.file("state.json").exists(), "nothing to keep, nothing written");
        assert!(folder.file("state.json.lock").exists());

        let wrote = store.update(SECOND, |state| {
            state.origins.insert("http://h:80".into(), Origin { not_before: 5, ..Origin::default() });
        });
        assert_eq!(wrote, Ok(()));
        let read = store.update(SECOND, |state| state.origins.get("http://h:80").map(|o| o.not_before));
        assert_eq!(read, Ok(Some(5)));
        assert!(store.notes().is_empty());
        let mut leftovers: Vec<_> = fs::read_dir(&folder.0)
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        leftovers.sort();
        assert_eq!(leftovers, ["state.json", "state.json.lock"], "no temp file is left behind");
    }

    #[test]
    fn a_corrupt_file_is_set_aside_and_replaced() {
        let folder = Folder::new();
        let path = folder.file("state.json");
        fs::write(&path, b"{ not json").expect("write");
        let mut store = FileStore::new(&path);
        let result = store.update(SECOND, |state| {
            state.origins.entry("http://h:80".into()).or_default().not_before = 1;
        });
        assert_eq!(result, Ok(()));
        assert_eq!(fs::read(folder.file("state.json.corrupt")).ok(), Some(b"{ not json".to_vec()));
        let warnings = store.notes();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("state.json.corrupt") && warnings[0].contains("not JSON"), "{}", warnings[0]);
        let fresh = fs::read(&path).map(|b| State::from_json(&b)).ok();
        assert!(matches!(fresh, Some(Ok(ref s)) if s.origins.len() == 1), "{fresh:?}");

        // A second bad file does not replace the first one set aside.
        fs::write(&path, br#"{"version":99,"origins":{}}"#).expect("write");
        let result = store.update(SECOND, |_| ());
        assert_eq!(result, Ok(()));
        assert_eq!(fs::read(folder.file("state.json.corrupt")).ok(), Some(b"{ not json".to_vec()));
        assert_eq!(
            fs::read(folder.file("state.json.corrupt.1")).ok(),
            Some(br#"{"version":99,"origins":{}}"#.to_vec())
        );
        assert!(store.notes()[0].contains("unknown version 99"));
    }

    #[test]
    fn an_empty_file_is_a_fresh_state_without_a_warning() {
        let folder = Folder::new();
        let path = folder.file("state.json");
        fs::write(&path, b"").expect("write");
        let mut store = FileStore::new(&path);
        assert_eq!(store.update(SECOND, |state| state.origins.len()), Ok(0));
        assert!(store.notes().is_empty());
        assert!(!folder.file("state.json.corrupt").exists());
    }

    #[test]
    fn a_lock_held_too_long_is_an_error_after_the_timeout() {
        let folder = Folder::new();
        let path = folder.file("state.json");
        let mut store = FileStore::new(&path);
        let held = File::create(folder.file("state.json.lock")).expect("lock file");
        held.lock().expect("lock");
        let started = Instant::now();
        let result = store.update(Duration::from_millis(200), |_| ());
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(result.is_err_and(|e| e.contains("still locked after 200ms")));
        drop(held);
        assert_eq!(store.update(SECOND, |_| 7), Ok(7));
    }

    #[test]
    fn a_second_store_sees_what_the_first_wrote() {
        let folder = Folder::new();
        let path = folder.file("s.json");
        let key = "http://127.0.0.1:9";
        let ask = Ask { spacing: Some(100), ..Ask::default() };
        let (mut one, mut two) = (FileStore::new(&path), FileStore::new(&path));
        assert!(matches!(one.admit(key, &ask, SECOND).map(|t| t.admission), Ok(Admission::Go { wait: 0, .. })));
        assert!(matches!(two.admit(key, &ask, SECOND).map(|t| t.admission), Ok(Admission::Go { wait: 51..=100, .. })));
        let good = AttemptReport {
            pid: 1,
            sample: Sample { ok: true, latency: 1 },
            not_before_in: None,
            good_body: Some(("http://127.0.0.1:9/x", b"good")),
            breaker: None,
            throttled_at: None,
        };
        assert_eq!(one.record(key, &good, SECOND), Ok(None));
        assert_eq!(two.last_good(key, "http://127.0.0.1:9/x", SECOND), Ok(Some(b"good".to_vec())));
        assert_eq!(two.last_good(key, "http://127.0.0.1:9/other", SECOND), Ok(None));
    }
}
