//! `--watch`: how the next request resumes where a reply ended, as each kind
//! of server expects, and what a watch's own events say of that. An event
//! stream is asked again with `Last-Event-ID` (WHATWG: an `id:` sets it even
//! in a block with no data; one that cannot go in a header is not sent); a
//! blocking query (Consul, Nomad) with `index=N&wait=SECONDS` from the last
//! reply's `X-Consul-Index` or `X-Nomad-Index`, the index reset to 0 when it
//! goes backwards, as Consul's own clients do. (A long poll resumes by the
//! reply's validators: `http/conditional.rs` keeps those.)
//!
//! Two watches send only what changes after they start, and say so in their
//! events: etcd's `POST /v3/watch` and a Kubernetes watch given a
//! `resourceVersion`. For etcd the current state is read first
//! (`/v3/kv/range`) and the watch starts just after its revision, then
//! resumes from the last revision seen, as `kubectl wait` lists, then
//! watches; a compacted history (etcd's `canceled`) or a Kubernetes `ERROR`
//! 410 starts again from the current state, as client-go's reflector does.
//! A Kubernetes watch resumes from the last `resourceVersion` seen, a
//! `BOOKMARK` included, which is not judged; Nomad's event stream from the
//! index after its last frame's, its heartbeats (`{}`) not judged. Plain values
//! in, plain values out.

use std::time::Duration;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value, json};

use crate::util::headers::Headers;
use crate::util::parse;
use crate::util::text::{cut, printable};

/// The headers that carry a blocking query's index, in the order they are read.
const INDEX_HEADERS: [&str; 2] = ["x-consul-index", "x-nomad-index"];

/// The share of `--idle-timeout` a blocking query is asked to wait, so that
/// the server answers before `poll` would call the reply idle.
const WAIT_SHARE: f64 = 0.8;

/// The path segments etcd's gateway serves its watch under (`/v3/watch`;
/// 3.3 and 3.4 also `/v3beta/`, 3.2 `/v3alpha/`).
const ETCD_VERSIONS: [&str; 3] = ["v3", "v3beta", "v3alpha"];

/// The query key of a Kubernetes watch's resume point.
const RESOURCE_VERSION: &str = "resourceVersion";

/// What one URL's watch has learnt from the replies so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Resume {
    /// The last 2xx was an event stream: a `204` to the next request ends the run.
    pub event_stream: bool,
    /// The event stream's last event ID (WHATWG: the empty string sends none).
    last_event_id: Option<String>,
    /// An `id:` that cannot be sent back was warned of (once a run).
    said_unsendable: bool,
    /// A blocking query's index, from the last reply that carried one.
    index: Option<u64>,
    /// What kind of watch the request is.
    watch: Watch,
    /// The last `retry:` an event stream gave: the reconnection time holds for
    /// the life of the watch, as an EventSource's does, not for one stream.
    retry: Option<std::time::Duration>,
}

/// A watch whose events carry its resume point.
#[derive(Debug, Clone, Default, PartialEq)]
enum Watch {
    /// Any other request: resumed by its headers alone.
    #[default]
    Plain,
    Etcd(Etcd),
    Kubernetes(Kubernetes),
    /// Nomad's `/v1/event/stream`: the index after the last frame's, once one came.
    Nomad(Option<u64>),
}

/// etcd's `POST /v3/watch` with a body that only asks to watch.
#[derive(Debug, Clone, PartialEq)]
struct Etcd {
    /// The request's `create_request`, as given.
    create: Map<String, Value>,
    /// Where the current state is read: the watch's URL, `watch` made `kv/range`.
    range_url: String,
    /// The revision the next watch starts at; `None` until the current state is read (again).
    next: Option<u64>,
}

/// A Kubernetes watch (`?watch=1`, `?watch=true`, or a `/watch/` path).
#[derive(Debug, Clone, PartialEq)]
struct Kubernetes {
    /// The URL names a `resourceVersion`: the watch resumes from the last one seen.
    resumes: bool,
    /// The `resourceVersion` the next request sends; `None` after a 410: the current state.
    version: Option<String>,
}

/// What a watch's event is to the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Handling {
    /// A change (or the state): judged by the filters.
    Judged,
    /// Not judged: a `BOOKMARK`, etcd's "created" or progress notice; it may have moved the resume point.
    Skipped,
    /// The server ended the watch in an event (a 410, a compacted history, an error): the reply is
    /// dropped as one that ended, and the next request resumes as the words (for `-v`) say.
    Ended(String),
}

/// The read of an etcd key's current state, made before its watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StateRead {
    pub url: String,
    pub body: Vec<u8>,
}

impl Resume {
    /// A watch of `method url` with `body`: an etcd watch when the body only asks to watch (a
    /// `create_request`), a Kubernetes watch by its URL; any other is plain.
    pub(crate) fn of(method: &str, url: &str, body: Option<&[u8]>) -> Resume {
        let Ok(parsed) = url::Url::parse(url) else { return Resume::default() };
        let watch = etcd(method, &parsed, body)
            .map(Watch::Etcd)
            .or_else(|| kubernetes(&parsed).map(Watch::Kubernetes))
            .or_else(|| nomad_stream(&parsed).then_some(Watch::Nomad(None)));
        Resume { watch: watch.unwrap_or_default(), ..Resume::default() }
    }

    /// The wait before asking again after a stream whose own `retry:` is `given`:
    /// the last one any stream of this watch gave.
    pub(crate) fn reconnection(&mut self, given: Option<std::time::Duration>) -> Option<std::time::Duration> {
        self.retry = given.or(self.retry);
        self.retry
    }

    /// Whether the request only asks etcd to watch: re-sent after a break like a GET.
    pub(crate) fn only_watches(&self) -> bool {
        matches!(self.watch, Watch::Etcd(_))
    }

    /// A 2xx reply's head arrived: whether it is an event stream, and its
    /// blocking-query index, if it has one.
    pub(crate) fn replied(&mut self, headers: &Headers, event_stream: bool) {
        self.event_stream = event_stream;
        let index = INDEX_HEADERS.iter().find_map(|name| headers.get(name)).and_then(|v| v.trim().parse().ok());
        if let Some(index) = index {
            // Backwards (a restarted server, a snapshot restored): start again from the current state.
            self.index = Some(if self.index.is_some_and(|last| index < last) { 0 } else { index });
        }
    }

    /// An event stream's last event ID as of now (set at each dispatch, with or without data). An
    /// ID that cannot be sent back in a header (a control character) is not: the next request
    /// sends none, and the first such ID is a warning, returned.
    pub(crate) fn event_id(&mut self, id: Option<&str>) -> Option<String> {
        let id = id?;
        // Asked after every read of the stream: most times, nothing new.
        if self.last_event_id.as_deref() == Some(id) {
            return None;
        }
        if parse::check_header_value("Last-Event-ID", id).is_ok() {
            self.last_event_id = Some(id.to_string());
            return None;
        }
        self.last_event_id = None;
        let first = !std::mem::replace(&mut self.said_unsendable, true);
        first.then(|| {
            format!(
                "the event stream's id `{}` has a control character and cannot be sent back: the next request carries no Last-Event-ID",
                printable(&cut(id))
            )
        })
    }

    /// The `Last-Event-ID` the next request sends, if any.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref().filter(|id| !id.is_empty())
    }

    /// What the next request resumes with, for `-v`: `Last-Event-ID: 17`, `index 41`,
    /// `revision 8`, `resourceVersion 12`, `the current state`.
    pub(crate) fn note(&self) -> Option<String> {
        let id = self.last_event_id().map(|id| format!("Last-Event-ID: {}", printable(id)));
        let index = self.index.filter(|_| !matches!(self.watch, Watch::Nomad(_))).map(|index| format!("index {index}"));
        let watch = match &self.watch {
            Watch::Plain => None,
            Watch::Etcd(Etcd { next: Some(next), .. }) => Some(format!("revision {next}")),
            Watch::Kubernetes(Kubernetes { resumes: false, .. }) => None,
            Watch::Kubernetes(Kubernetes { version: Some(version), .. }) => {
                Some(format!("{RESOURCE_VERSION} {}", printable(&cut(version))))
            }
            Watch::Nomad(index) => index.map(|index| format!("index {index}")),
            Watch::Etcd(_) | Watch::Kubernetes(_) => Some("the current state".to_string()),
        };
        let all: Vec<String> = id.into_iter().chain(index).chain(watch).collect();
        (!all.is_empty()).then(|| all.join(", "))
    }

    /// The query pairs the next request sets in the user's own: `index` and
    /// `wait` (whole seconds, the smaller of 80% of `idle` and `left`) once a
    /// reply carried an index; a Kubernetes watch's last `resourceVersion`.
    pub(crate) fn query(&self, idle: Option<Duration>, left: Option<Duration>) -> Vec<(&'static str, String)> {
        let mut pairs = Vec::new();
        match &self.watch {
            Watch::Kubernetes(Kubernetes { resumes: true, version: Some(version) }) => {
                pairs.push((RESOURCE_VERSION, version.clone()));
            }
            // An event stream, not a blocking query: its own index, and no wait.
            Watch::Nomad(index) => return index.map(|index| ("index", index.to_string())).into_iter().collect(),
            _ => {}
        }
        let Some(index) = self.index else { return pairs };
        pairs.push(("index", index.to_string()));
        let wait = [idle.map(|idle| idle.mul_f64(WAIT_SHARE)), left].into_iter().flatten().min();
        if let Some(wait) = wait {
            pairs.push(("wait", format!("{}s", wait.as_secs().max(1))));
        }
        pairs
    }

    /// The query key the next request drops from the user's URL: a Kubernetes watch's
    /// `resourceVersion` after a 410, so that it starts again from the current state.
    pub(crate) fn dropped(&self) -> Option<&'static str> {
        match &self.watch {
            Watch::Kubernetes(Kubernetes { resumes: true, version: None }) => Some(RESOURCE_VERSION),
            _ => None,
        }
    }

    /// The read of the current state the next attempt makes before it watches: an etcd watch's
    /// first, and its first after a compaction.
    pub(crate) fn state_read(&self) -> Option<StateRead> {
        let Watch::Etcd(etcd @ Etcd { next: None, .. }) = &self.watch else { return None };
        let mut range = Map::new();
        for field in ["key", "range_end"] {
            if let Some(value) = etcd.create.get(field) {
                range.insert(field.to_string(), value.clone());
            }
        }
        Some(StateRead { url: etcd.range_url.clone(), body: Value::Object(range).to_string().into_bytes() })
    }

    /// etcd's answer to the [`StateRead`]: the current state as one watch-shaped event
    /// (`{"result":{"header":...,"events":[{"kv":...}]}}`, a PUT of each key as etcd writes it),
    /// so that the filters written for the watch's events judge it; the next watch starts just
    /// after its revision. Why not, when it is no range reply.
    pub(crate) fn state(&mut self, body: &[u8]) -> Result<Vec<u8>, String> {
        let Watch::Etcd(etcd) = &mut self.watch else { return Err("no etcd watch".to_string()) };
        let range: Range = serde_json::from_slice(body).map_err(|_| "etcd's range reply is not JSON".to_string())?;
        let revision = range.header.as_ref().and_then(|header| header.get("revision")).and_then(int);
        let Some(revision) = revision else {
            return Err("etcd's range reply has no header.revision".to_string());
        };
        etcd.next = Some(revision.saturating_add(1));
        let events: Vec<Value> = range.kvs.into_iter().map(|kv| json!({ "kv": kv })).collect();
        let header = range.header.map_or(Value::Null, Value::Object);
        Ok(json!({ "result": { "header": header, "events": events } }).to_string().into_bytes())
    }

    /// The next etcd watch's body: the `create_request` as given, from the revision after the last
    /// one seen (`start_revision`). `None` for any other request: its body as given.
    pub(crate) fn body(&self) -> Option<Vec<u8>> {
        let Watch::Etcd(Etcd { create, next: Some(next), .. }) = &self.watch else { return None };
        let mut create = create.clone();
        // As etcd's gateway writes an int64: a string.
        create.insert("start_revision".to_string(), Value::String(next.to_string()));
        Some(json!({ "create_request": create }).to_string().into_bytes())
    }

    /// A JSON stream's event (`json`; an event stream's are judged as they are): what it is to
    /// the run, and the resume point it moves.
    pub(crate) fn seen(&mut self, data: &[u8], json: bool) -> Handling {
        match &mut self.watch {
            Watch::Etcd(etcd) if json => etcd.seen(data),
            Watch::Kubernetes(kubernetes) if json => kubernetes.seen(data),
            Watch::Nomad(index) if json => nomad(index, data),
            _ => Handling::Judged,
        }
    }
}

/// The etcd watch that `method url` with `body` asks for, if it only asks to watch.
fn etcd(method: &str, url: &url::Url, body: Option<&[u8]>) -> Option<Etcd> {
    let segments: Vec<&str> = url.path_segments()?.collect();
    let [.., version, "watch"] = segments.as_slice() else { return None };
    if method != "POST" || !ETCD_VERSIONS.contains(version) {
        return None;
    }
    let body: Map<String, Value> = serde_json::from_slice(body?).ok()?;
    let create = match body.get("create_request") {
        Some(Value::Object(create)) if body.len() == 1 => create.clone(),
        _ => return None,
    };
    let mut range_url = url.clone();
    range_url.path_segments_mut().ok()?.pop().push("kv").push("range");
    // A watch that names where it starts starts there: no read of the current state.
    let next = create.get("start_revision").and_then(int).filter(|start| *start > 0);
    Some(Etcd { create, range_url: range_url.into(), next })
}

/// The Kubernetes watch `url` asks for, if it is one.
fn kubernetes(url: &url::Url) -> Option<Kubernetes> {
    let query: Vec<(String, String)> = url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let asked = query.iter().any(|(k, v)| k == "watch" && matches!(v.as_str(), "1" | "true"));
    // The older form, `/api/v1/watch/namespaces/...`: `watch` before the resource's path.
    let segments: Vec<&str> = url.path_segments().map(Iterator::collect).unwrap_or_default();
    let path = segments.split_last().is_some_and(|(_, before)| before.contains(&"watch"));
    if !asked && !path {
        return None;
    }
    let version = query.into_iter().find(|(k, _)| k == RESOURCE_VERSION).map(|(_, v)| v);
    Some(Kubernetes { resumes: version.is_some(), version })
}

/// Whether `url` is Nomad's event stream (`/v1/event/stream`); an `index` the user gave is theirs
/// until a frame moves it.
fn nomad_stream(url: &url::Url) -> bool {
    url.path().ends_with("/v1/event/stream")
}

/// A frame of Nomad's event stream: `{"Index":N,"Events":[...]}`, or a heartbeat (`{}`), not judged.
fn nomad(index: &mut Option<u64>, data: &[u8]) -> Handling {
    #[derive(Deserialize)]
    struct Frame {
        #[serde(rename = "Index")]
        index: Option<u64>,
        #[serde(rename = "Events")]
        events: Option<IgnoredAny>,
    }
    let Ok(frame) = serde_json::from_slice::<Frame>(data) else { return Handling::Judged };
    if let Some(at) = frame.index {
        *index = Some(index.map_or(at.saturating_add(1), |next| next.max(at.saturating_add(1))));
    }
    match (frame.index, frame.events) {
        (None, None) if data.iter().filter(|b| !b.is_ascii_whitespace()).eq(b"{}") => Handling::Skipped,
        _ => Handling::Judged,
    }
}

/// An int64 as etcd's gateway writes it (a string) or as JSON does (a number).
fn int(value: &Value) -> Option<u64> {
    match value {
        Value::String(text) => text.parse().ok(),
        other => other.as_u64(),
    }
}

/// etcd's `/v3/kv/range` reply, as far as the state needs it.
#[derive(Deserialize)]
struct Range {
    header: Option<Map<String, Value>>,
    #[serde(default)]
    kvs: Vec<Value>,
}

/// One value of etcd's watch stream, as far as resuming needs it.
#[derive(Deserialize)]
struct EtcdReply {
    result: Option<EtcdResult>,
    error: Option<EtcdError>,
}

/// A `WatchResponse`: the gateway omits what is false, zero or empty.
#[derive(Deserialize, Default)]
struct EtcdResult {
    header: Option<Map<String, Value>>,
    #[serde(default)]
    created: bool,
    #[serde(default)]
    canceled: bool,
    compact_revision: Option<Value>,
    cancel_reason: Option<String>,
    #[serde(default)]
    events: Vec<EtcdEvent>,
}

#[derive(Deserialize)]
struct EtcdEvent {
    kv: Option<Map<String, Value>>,
}

/// The gateway's word that the stream broke (`transport is closing` when etcd stops).
#[derive(Deserialize)]
struct EtcdError {
    message: Option<String>,
    grpc_code: Option<Value>,
}

impl Etcd {
    fn seen(&mut self, data: &[u8]) -> Handling {
        let Ok(reply) = serde_json::from_slice::<EtcdReply>(data) else { return Handling::Judged };
        if let Some(error) = reply.error {
            let code = error.grpc_code.as_ref().and_then(int).map(|code| format!(" (gRPC code {code})"));
            let message = error.message.unwrap_or_default();
            return Handling::Ended(format!(
                "etcd ended the watch: {}{}; asking again{}",
                printable(&cut(&message)),
                code.unwrap_or_default(),
                self.from()
            ));
        }
        let Some(result) = reply.result else { return Handling::Judged };
        let compacted = result.compact_revision.as_ref().and_then(int).filter(|revision| *revision > 0);
        if let Some(compacted) = compacted {
            let wanted = self.next.map(|next| format!(" from revision {next}")).unwrap_or_default();
            self.next = None;
            return Handling::Ended(format!(
                "etcd cannot watch{wanted}: its history is compacted up to revision {compacted}; reading the current state again"
            ));
        }
        if result.canceled {
            let reason = result.cancel_reason.unwrap_or_else(|| "no reason given".to_string());
            return Handling::Ended(format!(
                "etcd canceled the watch: {}; asking again{}",
                printable(&cut(&reason)),
                self.from()
            ));
        }
        let last = result.events.iter().filter_map(|event| event.kv.as_ref()?.get("mod_revision").and_then(int)).max();
        if let Some(last) = last {
            self.next = Some(self.next.map_or(last + 1, |next| next.max(last.saturating_add(1))));
            return Handling::Judged;
        }
        // A progress notice (no event, not the "created" one): every change up to its revision was sent.
        let revision = result.header.as_ref().and_then(|header| header.get("revision")).and_then(int);
        if let (false, Some(revision), Some(next)) = (result.created, revision, self.next) {
            self.next = Some(next.max(revision.saturating_add(1)));
        }
        Handling::Skipped
    }

    /// Where the next watch starts, for `-v`: ` from revision 8`.
    fn from(&self) -> String {
        self.next.map(|next| format!(" from revision {next}")).unwrap_or_default()
    }
}

/// One value of a Kubernetes watch stream, as far as resuming needs it.
#[derive(Deserialize)]
struct KubernetesEvent {
    #[serde(rename = "type")]
    kind: Option<String>,
    object: Option<KubernetesObject>,
}

/// The event's object: a resource, or for an `ERROR` a `Status`.
#[derive(Deserialize)]
struct KubernetesObject {
    metadata: Option<Metadata>,
    code: Option<Value>,
    reason: Option<String>,
    message: Option<String>,
}

#[derive(Deserialize)]
struct Metadata {
    #[serde(rename = "resourceVersion")]
    resource_version: Option<String>,
}

impl Kubernetes {
    fn seen(&mut self, data: &[u8]) -> Handling {
        let Ok(event) = serde_json::from_slice::<KubernetesEvent>(data) else { return Handling::Judged };
        let Some(object) = event.object else { return Handling::Judged };
        match event.kind.as_deref() {
            // client-go's reflector: Expired and Gone both mean "list again".
            Some("ERROR")
                if object.code.as_ref().and_then(Value::as_u64) == Some(410)
                    || matches!(object.reason.as_deref(), Some("Expired" | "Gone")) =>
            {
                let was =
                    self.version.take().map(|version| format!(" {RESOURCE_VERSION} {}", printable(&cut(&version))));
                let said = [object.reason, object.message].into_iter().flatten().collect::<Vec<_>>().join(": ");
                Handling::Ended(format!(
                    "the watch cannot resume from{} (410 {}): watching again from the current state",
                    was.unwrap_or_else(|| " where it was".to_string()),
                    printable(&cut(&said))
                ))
            }
            Some(kind) => {
                let version = object.metadata.and_then(|metadata| metadata.resource_version);
                if let (true, Some(version)) = (self.resumes, version) {
                    self.version = Some(version);
                }
                if kind == "BOOKMARK" { Handling::Skipped } else { Handling::Judged }
            }
            None => Handling::Judged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(fields: &[(&str, &str)]) -> Headers {
        fields.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect()
    }

    #[test]
    fn a_blocking_query_resumes_from_the_last_index_and_starts_again_when_it_goes_backwards() {
        let mut resume = Resume::default();
        assert!(resume.query(None, None).is_empty(), "no index yet: the user's query alone");
        type Fields = &'static [(&'static str, &'static str)];
        let cases: [(Fields, Option<&str>); 5] = [
            (&[("X-Consul-Index", "17")], Some("17")),
            (&[("Content-Type", "application/json")], Some("17")),
            (&[("X-Consul-Index", "42")], Some("42")),
            (&[("X-Consul-Index", "40")], Some("0")),
            (&[("X-Nomad-Index", "9")], Some("9")),
        ];
        for (fields, index) in cases {
            resume.replied(&headers(fields), false);
            let query = resume.query(None, None);
            assert_eq!(query.first().map(|(_, v)| v.as_str()), index, "{fields:?}");
        }
        resume.replied(&headers(&[("X-Consul-Index", "not a number")]), false);
        assert_eq!(resume.query(None, None), [("index", "9".to_string())]);
    }

    #[test]
    fn the_wait_asked_is_the_smaller_of_most_of_the_idle_bound_and_the_time_left() {
        let mut resume = Resume::default();
        resume.replied(&headers(&[("X-Consul-Index", "3")]), false);
        let secs = Duration::from_secs;
        let wait = |idle, left| resume.query(idle, left).get(1).map(|(_, v)| v.clone());
        assert_eq!(wait(Some(secs(90)), None).as_deref(), Some("72s"));
        assert_eq!(wait(Some(secs(90)), Some(secs(30))).as_deref(), Some("30s"));
        assert_eq!(wait(None, Some(Duration::from_millis(300))).as_deref(), Some("1s"));
        assert_eq!(wait(None, None), None);
    }

    #[test]
    fn an_event_stream_resumes_from_its_last_event_id_and_an_empty_one_sends_none() {
        let mut resume = Resume::default();
        assert_eq!(resume.last_event_id(), None);
        resume.event_id(Some("17"));
        resume.event_id(None);
        assert_eq!(resume.last_event_id(), Some("17"));
        resume.event_id(Some(""));
        assert_eq!(resume.last_event_id(), None);
        resume.replied(&Headers::default(), true);
        assert!(resume.event_stream);
    }

    #[test]
    fn an_id_that_cannot_go_in_a_header_is_not_sent_back_and_is_warned_of_once() {
        let mut resume = Resume::default();
        // (id, the Last-Event-ID after it, warned)
        let table: [(&str, Option<&str>, bool); 7] = [
            ("41", Some("41"), false),
            ("a\u{1}b", None, true),
            ("42", Some("42"), false),
            ("x\ry", None, false),
            ("tab\tand space é", Some("tab\tand space é"), false),
            ("del\u{7f}", None, false),
            ("43", Some("43"), false),
        ];
        for (id, sent, warned) in table {
            let warning = resume.event_id(Some(id));
            assert_eq!(resume.last_event_id(), sent, "{id:?}");
            assert_eq!(warning.is_some(), warned, "{id:?}: {warning:?}");
        }
        let mut resume = Resume::default();
        let warning = resume.event_id(Some("a\u{1}b")).expect("a warning");
        assert_eq!(
            warning,
            "the event stream's id `a\\u{1}b` has a control character and cannot be sent back: the next request carries no Last-Event-ID"
        );
    }

    const ETCD_WATCH: &str = r#"{"create_request":{"key":"ZGVwbG95","range_end":"ZGVwbG96"}}"#;

    #[test]
    fn an_etcd_watch_is_a_post_to_v3_watch_that_only_asks_to_watch() {
        // (method, URL, body, an etcd watch)
        let table: [(&str, &str, Option<&str>, bool); 10] = [
            ("POST", "http://h:2379/v3/watch", Some(ETCD_WATCH), true),
            ("POST", "https://h/etcd/v3beta/watch?x=1", Some(ETCD_WATCH), true),
            ("POST", "http://h/v3alpha/watch", Some(r#"{"create_request":{}}"#), true),
            ("GET", "http://h:2379/v3/watch", Some(ETCD_WATCH), false),
            ("POST", "http://h:2379/v3/watch/", Some(ETCD_WATCH), false),
            ("POST", "http://h:2379/v2/watch", Some(ETCD_WATCH), false),
            ("POST", "http://h:2379/v3/watch", None, false),
            ("POST", "http://h:2379/v3/watch", Some(r#"{"cancel_request":{"watch_id":1}}"#), false),
            ("POST", "http://h:2379/v3/watch", Some(r#"{"create_request":{},"progress_request":{}}"#), false),
            ("POST", "http://h:2379/v3/watch", Some("create_request"), false),
        ];
        for (method, url, body, etcd) in table {
            let resume = Resume::of(method, url, body.map(str::as_bytes));
            assert_eq!(resume.only_watches(), etcd, "{method} {url} {body:?}");
            assert_eq!(resume.state_read().is_some(), etcd, "{method} {url} {body:?}");
        }
        let read = Resume::of("POST", "https://h/etcd/v3beta/watch?x=1", Some(ETCD_WATCH.as_bytes())).state_read();
        let read = read.expect("a read of the state");
        assert_eq!(read.url, "https://h/etcd/v3beta/kv/range?x=1");
        assert_eq!(String::from_utf8_lossy(&read.body), r#"{"key":"ZGVwbG95","range_end":"ZGVwbG96"}"#);
    }

    #[test]
    fn an_etcd_watch_reads_the_state_then_watches_from_just_after_it_and_resumes_from_the_last_revision() {
        let mut resume = Resume::of("POST", "http://h/v3/watch", Some(br#"{"create_request":{"key":"a2V5"}}"#));
        assert_eq!(resume.body(), None, "no watch before the state");
        let range = br#"{"header":{"cluster_id":"1","revision":"7","raft_term":"2"},"kvs":[{"key":"a2V5","mod_revision":"5","value":"eA=="}],"count":"1"}"#;
        let state = resume.state(range).expect("a range reply");
        assert_eq!(
            String::from_utf8_lossy(&state),
            r#"{"result":{"header":{"cluster_id":"1","revision":"7","raft_term":"2"},"events":[{"kv":{"key":"a2V5","mod_revision":"5","value":"eA=="}}]}}"#
        );
        assert_eq!(resume.state_read(), None);
        let body = |resume: &Resume| String::from_utf8(resume.body().expect("a body")).expect("UTF-8");
        assert_eq!(body(&resume), r#"{"create_request":{"key":"a2V5","start_revision":"8"}}"#);
        assert_eq!(resume.note().as_deref(), Some("revision 8"));
        let header = r#""header":{"revision":"9"}"#;
        // (a value of the stream, what it is, the revision the next watch starts at)
        let table: Vec<(String, Handling, u64)> = vec![
            (format!(r#"{{"result":{{{header},"created":true}}}}"#), Handling::Skipped, 8),
            (
                format!(
                    r#"{{"result":{{{header},"events":[{{"kv":{{"mod_revision":"9"}}}},{{"type":"DELETE","kv":{{"mod_revision":"11"}}}}]}}}}"#
                ),
                Handling::Judged,
                12,
            ),
            // A progress notice moves it on; an older one does not move it back.
            (r#"{"result":{"header":{"revision":"20"}}}"#.to_string(), Handling::Skipped, 21),
            (r#"{"result":{"header":{"revision":"15"}}}"#.to_string(), Handling::Skipped, 21),
            (
                r#"{"result":{"header":{"revision":30},"events":[{"kv":{"mod_revision":22}}]}}"#.to_string(),
                Handling::Judged,
                23,
            ),
            ("[1]".to_string(), Handling::Judged, 23),
            (r#"{"result":{"header":{"revision":"40"},"created":true}}"#.to_string(), Handling::Skipped, 23),
        ];
        for (data, seen, next) in table {
            assert_eq!(resume.seen(data.as_bytes(), true), seen, "{data}");
            assert!(body(&resume).contains(&format!(r#""start_revision":"{next}""#)), "{data}: {}", body(&resume));
        }
        assert_eq!(resume.seen(br#"{"result":{"events":[{"kv":{"mod_revision":"99"}}]}}"#, false), Handling::Judged);
        assert!(body(&resume).contains(r#""start_revision":"23""#), "an event stream's events move nothing");
    }

    #[test]
    fn a_compacted_etcd_history_reads_the_state_again_and_an_error_ends_the_reply() {
        let mut resume = Resume::of("POST", "http://h/v3/watch", Some(br#"{"create_request":{"key":"a2V5"}}"#));
        resume.state(br#"{"header":{"revision":"3"}}"#).expect("a range reply");
        let compacted = br#"{"result":{"header":{"raft_term":"2"},"canceled":true,"compact_revision":"4"}}"#;
        assert_eq!(
            resume.seen(compacted, true),
            Handling::Ended(
                "etcd cannot watch from revision 4: its history is compacted up to revision 4; reading the current state again"
                    .to_string()
            )
        );
        assert!(resume.state_read().is_some());
        assert_eq!(resume.note().as_deref(), Some("the current state"));
        let state = resume.state(br#"{"header":{"revision":"6"}}"#).expect("a range reply");
        assert_eq!(String::from_utf8_lossy(&state), r#"{"result":{"header":{"revision":"6"},"events":[]}}"#);
        let error = br#"{"error":{"grpc_code":14,"http_code":503,"message":"transport is closing","http_status":"Service Unavailable"}}"#;
        assert_eq!(
            resume.seen(error, true),
            Handling::Ended(
                "etcd ended the watch: transport is closing (gRPC code 14); asking again from revision 7".to_string()
            )
        );
        let canceled = br#"{"result":{"canceled":true,"cancel_reason":"etcdserver: permission denied"}}"#;
        assert_eq!(
            resume.seen(canceled, true),
            Handling::Ended(
                "etcd canceled the watch: etcdserver: permission denied; asking again from revision 7".to_string()
            )
        );
        assert_eq!(resume.state_read(), None);
        for bad in [&b"not json"[..], br#"{"kvs":[]}"#, br#"{"header":{"revision":"x"}}"#] {
            assert!(resume.state(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn an_etcd_watch_that_names_its_start_starts_there() {
        let body = br#"{"create_request":{"key":"a2V5","start_revision":"5"}}"#;
        let resume = Resume::of("POST", "http://h/v3/watch", Some(body));
        assert!(resume.only_watches());
        assert_eq!(resume.state_read(), None);
        assert_eq!(resume.body().map(String::from_utf8), Some(Ok(String::from_utf8_lossy(body).into_owned())));
    }

    #[test]
    fn nomads_event_stream_resumes_from_the_index_after_its_last_frame() {
        let mut resume = Resume::of("GET", "http://h:4646/v1/event/stream?topic=Job", None);
        // Its own index, never the blocking query's (nor its wait).
        resume.replied(&headers(&[("X-Nomad-Index", "3")]), false);
        assert!(resume.query(Some(Duration::from_secs(90)), None).is_empty());
        // (a frame, what it is, the index the next request sends)
        let table: [(&str, Handling, Option<&str>); 5] = [
            ("{}", Handling::Skipped, None),
            (r#"{"Index":7,"Events":[{"Topic":"Job","Index":7}]}"#, Handling::Judged, Some("8")),
            (" { } ", Handling::Skipped, Some("8")),
            (r#"{"Index":5,"Events":[]}"#, Handling::Judged, Some("8")),
            (r#"{"Other":1}"#, Handling::Judged, Some("8")),
        ];
        for (frame, handling, index) in table {
            assert_eq!(resume.seen(frame.as_bytes(), true), handling, "{frame}");
            let query = resume.query(Some(Duration::from_secs(90)), None);
            assert_eq!(query.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>(), Vec::from_iter(index), "{frame}");
        }
        assert_eq!(resume.note().as_deref(), Some("index 8"));
        assert_eq!(Resume::of("GET", "http://h/v1/events/stream", None).seen(b"{}", true), Handling::Judged);
    }

    #[test]
    fn a_kubernetes_watch_resumes_from_the_last_resource_version_and_a_410_starts_from_the_current_state() {
        let event = |kind: &str, version: &str| {
            format!(
                r#"{{"type":"{kind}","object":{{"kind":"Pod","metadata":{{"name":"p","resourceVersion":"{version}"}}}}}}"#
            )
        };
        let expired = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (12)","reason":"Expired","code":410}}"#;
        let mut resume = Resume::of("GET", "http://h/api/v1/namespaces/ci/pods?watch=1&resourceVersion=5", None);
        assert!(!resume.only_watches());
        assert_eq!(resume.query(None, None), [("resourceVersion", "5".to_string())]);
        // (a value of the stream, what it is, the resourceVersion the next request sends)
        let table: Vec<(String, Handling, Option<&str>)> = vec![
            (event("ADDED", "7"), Handling::Judged, Some("7")),
            (event("BOOKMARK", "12"), Handling::Skipped, Some("12")),
            (
                expired.to_string(),
                Handling::Ended(
                    "the watch cannot resume from resourceVersion 12 (410 Expired: too old resource version: 5 (12)): watching again from the current state"
                        .to_string(),
                ),
                None,
            ),
            (event("ADDED", "13"), Handling::Judged, Some("13")),
            (r#"{"type":"ERROR","object":{"kind":"Status","code":500,"message":"x"}}"#.to_string(), Handling::Judged, Some("13")),
            ("{}".to_string(), Handling::Judged, Some("13")),
        ];
        for (data, seen, version) in table {
            assert_eq!(resume.seen(data.as_bytes(), true), seen, "{data}");
            let query = resume.query(None, None);
            assert_eq!(query.first().map(|(_, v)| v.as_str()), version, "{data}");
            assert_eq!(resume.dropped(), version.is_none().then_some("resourceVersion"), "{data}");
        }
        // Without a resourceVersion: asked again as it was (the server starts from the current state).
        let mut resume = Resume::of("GET", "http://h/apis/batch/v1/watch/namespaces/ci/jobs/j", None);
        assert_eq!(resume.seen(event("BOOKMARK", "3").as_bytes(), true), Handling::Skipped);
        assert!(matches!(resume.seen(expired.as_bytes(), true), Handling::Ended(_)));
        assert_eq!((resume.query(None, None), resume.dropped(), resume.note()), (Vec::new(), None, None));
        // Not a Kubernetes watch: every value is judged.
        let mut resume = Resume::of("GET", "http://h/jobs?watch=0&resourceVersion=5", None);
        assert_eq!(resume.seen(event("BOOKMARK", "3").as_bytes(), true), Handling::Judged);
        assert!(resume.query(None, None).is_empty());
    }
}
