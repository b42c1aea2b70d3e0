//! `--watch`: one URL's attempt is one request that resumes where the last
//! reply ended (`Last-Event-ID`, a blocking query's `index`, the validators of
//! a long poll, etcd's revision, a Kubernetes `resourceVersion`), and a 2xx's
//! body is read as it arrives, each event judged and decided on as a body is,
//! until one decides or the reply ends, breaks or goes idle. An etcd watch's
//! first attempt (and its first after a compaction) reads the current state
//! instead, judged as the watch's first event. The loop itself, and all that polling and watching share (the
//! turn, sending, judging, deciding, sharing), is `target.rs`'s: its
//! `Loop::attempts` calls [`Loop::watch`] here for each attempt under `--watch`.

use std::time::{Duration, Instant};

use crate::error::Error;
use crate::http::conditional::Answer;
use crate::http::request::{Client, Fault, Idle, Opened, Reply, Request, Stream};
use crate::report::record::Record;
use crate::rules::attempt::{Failure, Outcome, Verdict};
use crate::rules::policy::{Action, Stop, WaitReason};
use crate::rules::resume::{Handling, StateRead};
use crate::run::explain;
use crate::run::target::{Counts, Delivery, Halt, Loop};
use crate::util::url;

/// The `Accept` of a watch's requests, unless `-H` gives one.
const WATCH_ACCEPT: &str = "text/event-stream, application/json;q=0.9, */*;q=0.8";

impl Loop<'_> {
    /// `--watch`: attempt `counts.number` is one request, resuming where the
    /// last reply ended; a 2xx's events are judged as they arrive, each as a
    /// body is, until one decides or the reply ends.
    pub(super) fn watch(
        &mut self,
        client: &Client,
        counts: &mut Counts,
        rng: &mut impl rand::Rng,
    ) -> Result<Record, Halt> {
        if let Some(read) = self.resume.state_read() {
            return self.read_state(client, read, counts, rng);
        }
        let number = counts.number;
        self.reporter.sending(number);
        let resumed = self.resumed();
        // Validators are kept by the URL as given: a blocking query's `index` and `wait` change its
        // query on every request, and a long poll's ETag must still go with the next one.
        let keyed = Request { url: self.request.url.clone(), ..resumed.clone() };
        let (prepared, validated) = self.validators.prepare(&keyed, false);
        let sending = Request { url: resumed.url.clone(), ..prepared.into_owned() };
        let started = Instant::now();
        let open = |request: &Request| client.open(request, self.left(), &|status| self.cuts(status));
        let sent = self.send(&sending, number, &open, Opened::status);
        drop(sending);
        let Delivery { reply: opened, latency, .. } = self.delivered(client, sent)?;
        let mut reply = match opened {
            Ok(Opened::Stream(stream)) => {
                let head =
                    Reply { status: stream.status, headers: stream.headers.clone(), body: Vec::new(), cut: false };
                let mut head = Ok(head);
                // A long poll resumes by the validators of the reply it held.
                self.validators.settle(&keyed, false, validated, &mut head);
                return self.stream(stream, head, started, counts, rng);
            }
            Ok(Opened::Reply(reply)) => Ok(reply),
            // A held head woken where --stall fires: the wait stalled. Else, before the deadline,
            // a silence of --idle-timeout: a long poll held as asked, dropped and asked again as a
            // silent stream is (no failure: no --retries spent, a success for the breaker).
            Err(fault) if fault.failure == Failure::Timeout => {
                self.stall_due()?;
                // Held until the deadline: the run ends naming the last event judged, as a stream's
                // does, not a timeout of the hold it asked for (a watch has no request timeout).
                if self.left().is_some_and(|left| left.is_zero()) {
                    return Err(self.deadline().into());
                }
                if self.left().is_none_or(|left| !left.is_zero()) {
                    let retry = self.resume.reconnection(None);
                    let idle = Outcome::StreamEnded { held: started.elapsed(), retry, idle: true };
                    let record = self.decided(Err(fault), idle, latency, counts, rng);
                    self.reporter.stream_ended(&self.request, &record, self.resume.note().as_deref());
                    return Ok(record);
                }
                Err(fault)
            }
            Err(fault) => Err(fault),
        };
        let answer = self.validators.settle(&keyed, false, validated, &mut reply);
        // A 304 to a long poll's validators: nothing new yet, asked again as a stream that ended.
        // (One to a request that carried none has no body to judge: exit 3, as when polling.)
        if matches!(answer, Answer::NotModified { .. } | Answer::Unchanged) {
            // A blocking query's 304 still moves its index (Consul answers one with X-Consul-Index).
            if let Ok(reply) = &reply {
                let event_stream = self.resume.event_stream;
                self.resume.replied(&reply.headers, event_stream);
            }
            let ended = Outcome::StreamEnded { held: started.elapsed(), retry: None, idle: false };
            let record = self.decided(reply, ended, latency, counts, rng);
            self.reporter.stream_ended(&self.request, &record, self.resume.note().as_deref());
            return Ok(record);
        }
        let (record, _) = self.conclude(reply, answer, None, latency, counts, rng);
        Ok(self.report(record))
    }

    /// `--watch`: a 2xx reply's events, each judged and decided on as a body
    /// is, until one ends the run (the record of that event) or the reply
    /// ends, breaks or goes idle (the record of the request).
    fn stream(
        &mut self,
        mut stream: Stream,
        head: Result<Reply, Fault>,
        started: Instant,
        counts: &mut Counts,
        rng: &mut impl rand::Rng,
    ) -> Result<Record, Halt> {
        // EventSource stops reconnecting when a reconnect is answered 204.
        if stream.status == 204 && self.resume.event_stream {
            let record = self.decided(head, Outcome::StreamClosed, started.elapsed(), counts, rng);
            return Ok(self.report(record));
        }
        self.resume.replied(&stream.headers, stream.is_event_stream());
        self.replied = true;
        self.reporter.watching(&self.request.url);
        loop {
            self.common.cancel.check()?;
            // --stall's clock runs on time: a stream quiet (heartbeats, or nothing) wakes the loop when it fires.
            stream.wake_by(self.stall_wake());
            let next = stream.next_event();
            // WHATWG: a block's `id:` sets the last event ID at its end, with data or without.
            if let Some(warning) = self.resume.event_id(stream.last_event_id()) {
                self.reporter.warn(&warning);
            }
            let event = match next {
                Some(Ok(event)) => event,
                Some(Err(fault)) if fault.failure != Failure::Timeout => {
                    let (record, _) = self.conclude(Err(fault), Answer::Fresh, None, started.elapsed(), counts, rng);
                    return Ok(self.report(record));
                }
                ended => {
                    // The request's bound is the deadline: the run ends, naming the last event judged.
                    if ended.is_some() && self.left().is_some_and(|left| left.is_zero()) {
                        return Err(self.deadline().into());
                    }
                    // A read woken where --stall fires: the wait stalled.
                    if ended.is_some() {
                        self.stall_due()?;
                    }
                    // A silence of --idle-timeout drops the reply, as an end does: asked again, resuming.
                    let idle = ended.is_some();
                    let retry = self.resume.reconnection(stream.retry());
                    let outcome = Outcome::StreamEnded { held: started.elapsed(), retry, idle };
                    let record = self.decided(head, outcome, started.elapsed(), counts, rng);
                    self.reporter.stream_ended(&self.request, &record, self.resume.note().as_deref());
                    return Ok(record);
                }
            };
            match self.resume.seen(&event.data, event.kind.is_none()) {
                Handling::Judged => {}
                // A bookmark, etcd's "created" or progress notice: the resume point moved, nothing to judge.
                Handling::Skipped => continue,
                // A 410, a compacted history, an error: dropped as a reply that ended, and resumed as -v says.
                Handling::Ended(why) => {
                    self.reporter.detail(&why);
                    let retry = self.resume.reconnection(stream.retry());
                    let outcome = Outcome::StreamEnded { held: started.elapsed(), retry, idle: false };
                    let record = self.decided(head, outcome, started.elapsed(), counts, rng);
                    self.reporter.stream_ended(&self.request, &record, self.resume.note().as_deref());
                    return Ok(record);
                }
            }
            let body = Reply { status: stream.status, headers: stream.headers.clone(), body: event.data, cut: false };
            let kind = event.kind.as_deref();
            let (record, _) = self.conclude(Ok(body), Answer::Fresh, kind, started.elapsed(), counts, rng);
            self.reporter.event(&event.kind, &event.id, &record);
            match &record.action {
                // Not yet (or met, not yet --stable): the stream goes on; the deadline ends the run on its own.
                Action::Poll { .. } | Action::Stop(Stop::Deadline { .. }) => {
                    let held = self.common.polling.policy.holds(&record.outcome, record.phase);
                    counts.streak = if held { counts.streak + 1 } else { 0 };
                    self.stalled(&record)?;
                }
                _ => {
                    // `$event` to --print: the type of the event that ended the run.
                    self.event = event.kind;
                    self.reporter.ended_by_event(&self.request, &record);
                    return Ok(record);
                }
            }
        }
    }

    /// An etcd watch's read of the current state (`kubectl wait`'s list before its watch): one
    /// request, whose reply is the state as one watch-shaped event, judged as the watch's first.
    /// Not yet, and the watch from just after it follows at once, whatever is left of `--interval`:
    /// a change made in between is the watch's first.
    fn read_state(
        &mut self,
        client: &Client,
        read: StateRead,
        counts: &mut Counts,
        rng: &mut impl rand::Rng,
    ) -> Result<Record, Halt> {
        let number = counts.number;
        self.reporter.sending(number);
        let request = Request { url: read.url, body: Some(read.body), ..self.request.clone() };
        self.reporter.detail(&format!("reading the current state: POST {}", url::redact(&request.url)));
        let fetch = |request: &Request| self.fetch(client, request);
        let sent = self.send(&request, number, &fetch, |reply| reply.status);
        let Delivery { reply, latency, .. } = self.delivered(client, sent)?;
        let state = reply.and_then(|mut reply| {
            if (200..300).contains(&reply.status) {
                reply.body = self.resume.state(&reply.body).map_err(|detail| Fault::new(Failure::Malformed, detail))?;
            }
            Ok(reply)
        });
        let judged = state.as_ref().is_ok_and(|reply| (200..300).contains(&reply.status));
        let (mut record, _) = self.conclude(state, Answer::Fresh, None, latency, counts, rng);
        if judged {
            self.reporter.event(&None, &None, &record);
        }
        let not_yet = matches!(record.outcome, Outcome::Success { verdict: Verdict::NotMet | Verdict::Met, .. })
            && matches!(record.action, Action::Poll { .. } | Action::Stop(Stop::Deadline { .. }));
        if not_yet && self.left().is_none_or(|left| !left.is_zero()) {
            record.action = Action::Poll { after: Duration::ZERO, reason: WaitReason::Interval };
        }
        // As a stream's end is told: a deadline names the state, the last event judged.
        self.reporter.stream_ended(&request, &record, self.resume.note().as_deref());
        Ok(record)
    }

    /// The deadline came while a reply was held: its error names the last event judged.
    fn deadline(&self) -> Error {
        let stop = Stop::Deadline {
            wait: Duration::ZERO,
            reason: WaitReason::Interval,
            remaining: Duration::ZERO,
            cause: self.reporter.cause(),
        };
        explain::error(&stop, None, "", None)
    }

    /// The request the next watch sends: the one given, resuming where the
    /// last reply ended (`Last-Event-ID`, a blocking query's `index`, etcd's
    /// `start_revision`, a Kubernetes `resourceVersion` or none after a 410).
    fn resumed(&self) -> Request {
        let mut request = self.request.clone();
        // As EventSource asks (nchan refuses an event stream to a request that does not), JSON welcome too.
        request.headers.set_default("Accept", WATCH_ACCEPT);
        if let Some(id) = self.resume.last_event_id() {
            request.headers.set("Last-Event-ID", id.to_string());
        }
        if let Some(body) = self.resume.body() {
            request.body = Some(body);
        }
        if let Some(name) = self.resume.dropped() {
            request.url = url::without_query(&request.url, name);
        }
        let idle = self.common.polling.client.watch.and_then(|Idle(idle)| idle);
        let query = self.resume.query(idle, self.left());
        if !query.is_empty() {
            request.url = url::with_query(&request.url, &query);
        }
        request
    }

    /// `record`, as the reporter shows an attempt.
    fn report(&self, record: Record) -> Record {
        self.reporter.attempt(&self.request, &record);
        record
    }
}
