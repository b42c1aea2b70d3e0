//! `--log-format json`: NDJSON on stderr, one object per attempt
//! ([`attempt_object`]), one per `--watch` event judged ([`event_object`])
//! and one final object ([`final_object`]), with the keys README's schema
//! lists, in that order. In the code an event is a `--watch` event; the JSON
//! key `"event"` (the contract's word) names an object's kind.

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::process::start::Exit;
use crate::report::record::Record;
use crate::report::result::RunEnd;
use crate::rules::attempt::{Outcome, Verdict};
use crate::rules::policy::Action;

/// The object of one attempt (the reporter adds `target`, `idempotency_key`, `reauthenticated`).
/// A `tcp://` or `unix://` target's has no `method` (nothing is sent) but `scheme` and `address`.
pub(crate) fn attempt_object(record: &Record, method: Option<&str>, url: &str, elapsed: Duration) -> Value {
    let mut object = json!({
        "event": "attempt",
        "attempt": record.number,
        "ts": now_rfc3339(),
        "elapsed_ms": elapsed.as_millis() as u64,
    });
    match (&record.port, method) {
        (Some(port), _) => {
            object["scheme"] = json!(port.scheme);
            object["url"] = json!(url);
            object["address"] = json!(port.address);
        }
        (None, method) => {
            object["method"] = json!(method.unwrap_or_default());
            object["url"] = json!(url);
        }
    }
    object["latency_ms"] = json!(record.latency.as_millis() as u64);
    if let Some(phase) = record.phase.name() {
        object["phase"] = json!(phase);
    }
    if let Some(pages) = record.pages {
        object["pages"] = json!(pages);
    }
    match &record.reply {
        Ok(_) if record.port.is_some() => object["open"] = json!(true),
        Ok(reply) => object["status"] = json!(reply.status),
        Err(fault) => {
            object["error"] = json!(fault.detail);
            object["error_kind"] = json!(fault.failure.kind());
        }
    }
    if let Some(condition) = condition(record) {
        object["condition"] = json!(condition);
    }
    // --watch: how the request's stream ended, when no event decided.
    match &record.outcome {
        Outcome::StreamEnded { idle: false, .. } => object["stream"] = json!("ended"),
        Outcome::StreamEnded { idle: true, .. } => object["stream"] = json!("idle"),
        Outcome::StreamClosed => object["stream"] = json!("closed"),
        _ => {}
    }
    if let Outcome::Success { verdict: Verdict::NotJson, .. } = &record.outcome {
        object["error_kind"] = json!("not_json");
    }
    if let Some(shown) = record.judgement.as_ref().and_then(|j| j.shown.as_ref()) {
        object["show"] = json!(shown);
    }
    // `done` is for exit 0 only: a --fail-when match ends the run too, but with 4.
    let (action, wait) = match &record.action {
        Action::Done => ("done", None),
        Action::FailWhen | Action::Stop(_) => ("stop", None),
        Action::Poll { after, reason } => ("poll", Some((after, reason))),
        Action::Retry { after, reason } => ("retry", Some((after, reason))),
        // No retry was sent: the budget had no room; the next regular poll follows.
        Action::HeldBack { after, reason, .. } => ("held_back", Some((after, reason))),
    };
    object["action"] = json!(action);
    if let Some((after, reason)) = wait {
        object["wait_ms"] = json!(after.as_millis() as u64);
        object["wait_reason"] = json!(reason.name());
    }
    if let Action::HeldBack { counts, .. } = &record.action {
        object["retry_budget"] = json!({ "retries": counts.retries, "requests": counts.requests + counts.retries });
    }
    // --rate auto: the learned rate in force, to a hundredth of a request a second.
    if let Some(rate) = record.rate {
        object["rate"] = json!((rate * 100.0).round() / 100.0);
    }
    object
}

/// The final object: how the run ended, and with several URLs how each did.
pub(crate) fn final_object(summary: &RunEnd, elapsed: Duration, idempotency_key: Option<&str>) -> Value {
    let mut object = json!({
        "event": "done",
        // What a consumer may rely on (docs/guide/output.md): the keys and meanings of schema 1.
        "schema": 1,
        "version": env!("CARGO_PKG_VERSION"),
        "ts": now_rfc3339(),
        "elapsed_ms": elapsed.as_millis() as u64,
        "attempts": summary.attempts,
        "exit_code": summary.code(),
        "reason": summary.row.reason,
        "message": summary.message,
    });
    if let Some(targets) = &summary.targets {
        object["targets"] = targets
            .iter()
            .map(|t| json!({ "url": t.url, "exit_code": t.exit_code(), "reason": t.reason(), "attempts": t.attempts }))
            .collect();
    }
    if let Some(operation) = &summary.operation_url {
        object["operation_url"] = json!(operation);
    }
    // --watch: a request is one attempt, and many events may come on it.
    if let Some(events) = summary.events {
        object["events"] = json!(events);
        object["requests"] = json!(summary.attempts);
    }
    if let Some(key) = idempotency_key {
        object["idempotency_key"] = json!(key);
    }
    // --start: the server poll started and stopped, and -- CMD run as a child.
    if let Some(start) = &summary.start {
        let mut fields = json!({ "pid": start.pid });
        exit_fields(&mut fields, start.exit);
        fields["stopped_by"] = json!(start.stopped_by.name());
        object["start"] = fields;
    }
    if let Some(command) = summary.command {
        let mut fields = json!({});
        exit_fields(&mut fields, Some(command));
        object["command"] = fields;
    }
    object
}

/// `exit_code` or `signal`, as a process ended.
fn exit_fields(object: &mut Value, exit: Option<Exit>) {
    match exit {
        Some(Exit::Code(code)) => object["exit_code"] = json!(code),
        Some(Exit::Signal(signal)) => object["signal"] = json!(signal),
        None => {}
    }
}

/// `--watch`: the object of event `n` of a stream, judged in `record`.
pub(crate) fn event_object(n: u32, kind: Option<&str>, id: Option<&str>, record: &Record, elapsed: Duration) -> Value {
    let mut object = json!({
        "event": "stream_event",
        "n": n,
        "ts": now_rfc3339(),
        "elapsed_ms": elapsed.as_millis() as u64,
        "attempt": record.number,
        "type": kind,
        "id": id,
        "verdict": condition(record),
    });
    if let Some(shown) = record.judgement.as_ref().and_then(|j| j.shown.as_ref()) {
        object["show"] = json!(shown);
    }
    object
}

/// What the conditions said of a 2xx body: `met`, `failed`, `not_met` or `error`.
fn condition(record: &Record) -> Option<&'static str> {
    let Outcome::Success { verdict, .. } = &record.outcome else { return None };
    let has_errors = record.judgement.as_ref().is_some_and(|j| !j.errors.is_empty());
    Some(match verdict {
        Verdict::Met => "met",
        Verdict::FailWhen => "failed",
        Verdict::NotMet if has_errors => "error",
        Verdict::NotMet => "not_met",
        Verdict::NotJson => "error",
    })
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}
