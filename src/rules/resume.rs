//! `--watch`: how the next request resumes where a reply ended, as each kind
//! of server expects. An event stream is asked again with `Last-Event-ID`;
//! a blocking query (Consul, Nomad) with `index=N&wait=SECONDS` from the
//! last reply's `X-Consul-Index` or `X-Nomad-Index`, the index reset to 0
//! when it goes backwards, as Consul's own clients do. (A long poll resumes
//! by the reply's validators: `http/conditional.rs` keeps those.) Plain
//! values in, plain values out.

use std::time::Duration;

use crate::util::headers::Headers;

/// The headers that carry a blocking query's index, in the order they are read.
const INDEX_HEADERS: [&str; 2] = ["x-consul-index", "x-nomad-index"];

/// The share of `--idle-timeout` a blocking query is asked to wait, so that
/// the server answers before `poll` would call the reply idle.
const WAIT_SHARE: f64 = 0.8;

/// What one URL's watch has learnt from the replies so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Resume {
    /// The last 2xx was an event stream: a `204` to the next request ends the run.
    pub event_stream: bool,
    /// The event stream's last event ID (WHATWG: the empty string sends none).
    last_event_id: Option<String>,
    /// A blocking query's index, from the last reply that carried one.
    index: Option<u64>,
}

impl Resume {
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

    /// An event stream's last event ID as of the last event dispatched.
    pub(crate) fn event_id(&mut self, id: Option<&str>) {
        if let Some(id) = id {
            self.last_event_id = Some(id.to_string());
        }
    }

    /// The `Last-Event-ID` the next request sends, if any.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref().filter(|id| !id.is_empty())
    }

    /// What the next request resumes with, for `-v`: `Last-Event-ID: 17`, `index 41`.
    pub(crate) fn note(&self) -> Option<String> {
        let id = self.last_event_id().map(|id| format!("Last-Event-ID: {id}"));
        let index = self.index.map(|index| format!("index {index}"));
        let both: Vec<String> = id.into_iter().chain(index).collect();
        (!both.is_empty()).then(|| both.join(", "))
    }

    /// The query pairs the next request adds to the user's own: `index` and
    /// `wait` (whole seconds, the smaller of 80% of `idle` and `left`) once a
    /// reply carried an index.
    pub(crate) fn query(&self, idle: Option<Duration>, left: Option<Duration>) -> Vec<(&'static str, String)> {
        let Some(index) = self.index else { return Vec::new() };
        let mut pairs = vec![("index", index.to_string())];
        let wait = [idle.map(|idle| idle.mul_f64(WAIT_SHARE)), left].into_iter().flatten().min();
        if let Some(wait) = wait {
            pairs.push(("wait", format!("{}s", wait.as_secs().max(1))));
        }
        pairs
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
}
