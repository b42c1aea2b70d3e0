//! Where `--submit` polls its operation's status, and how: the submit reply's five
//! steps, the headers that name or move the status URL, and the final GET
//! of what a PUT or PATCH made. Pure: the parts of a reply in, a decision
//! out; the loop (`target.rs`) sends the requests.

use crate::rules::attempt::Verdict;
use crate::rules::condition::{Subject, Word};
use crate::util::url;

/// Where a submit's reply names the status URL, in this order, and the mode each starts.
const NAMING_HEADERS: [(&str, Mode); 3] = [
    ("operation-location", Mode::Operation { header: true }),
    ("azure-asyncoperation", Mode::Operation { header: true }),
    ("location", Mode::Location),
];

/// Whether header `name` (any case) names where an operation is: `-vv`
/// shows its value as a URL, redacted.
pub(crate) fn names_an_operation(name: &str) -> bool {
    NAMING_HEADERS.iter().any(|(naming, _)| naming.eq_ignore_ascii_case(name))
}

/// How the status polls read what they are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// An operation's status: from `Operation-Location` or
    /// `Azure-AsyncOperation` (`header`), or from `--status-url` or a 303.
    Operation { header: bool },
    /// A `Location` (ARM's way): 202 until the operation ends, then the resource.
    Location,
    /// Body polling: the submit's own URL, a resource that reports its
    /// `provisioningState` (ARM's PUT and PATCH without a header).
    Body,
}

impl Mode {
    /// Where the built-ins read the status word first.
    pub(crate) fn subject(self) -> Subject {
        match self {
            Mode::Operation { .. } => Subject::Operation,
            Mode::Location | Mode::Body => Subject::Resource,
        }
    }
}

/// The URL the status polls go to, and how they read its replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StatusPoll {
    pub url: String,
    pub mode: Mode,
}

/// What a submit's own 2xx leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum First {
    /// The reply is the ending: done ([`Verdict::Met`]) or failed ([`Verdict::FailWhen`]).
    End(Verdict),
    /// Poll there.
    Poll(StatusPoll),
    /// No status URL, nothing to poll: exit 3.
    NoStatusUrl,
}

/// A submit's own 2xx, as the five steps read it.
#[derive(Debug, Clone)]
pub(crate) struct SubmitReply<'a> {
    pub method: &'a str,
    pub url: &'a str,
    pub status: u16,
    /// The conditions' verdict on its body, read as a resource.
    pub verdict: Verdict,
    /// The built-ins' word on its body; `None` when it is not JSON or `--until` replaced them.
    pub word: Option<Word>,
    /// The built-in done test is in use (no `--until`).
    pub builtin_done: bool,
    /// The status URL it names, if any.
    pub named: Option<StatusPoll>,
}

/// The contract's five steps for the submit's own 2xx, in order.
pub(crate) fn first_reply(reply: SubmitReply<'_>) -> First {
    // 1. Done or failed at once, even when it names a status URL (ARM's PATCH answering 200 Succeeded).
    if reply.status != 202 && matches!(reply.verdict, Verdict::Met | Verdict::FailWhen) {
        return First::End(reply.verdict);
    }
    // 2. A 204, or a 200 with no status word, that names nowhere to poll is the ending.
    let quiet = reply.builtin_done && matches!(reply.word, None | Some(Word::Other));
    if reply.named.is_none() && (reply.status == 204 || reply.status == 200 && quiet) {
        return First::End(Verdict::Met);
    }
    // 3. Poll where it says.
    if let Some(named) = reply.named {
        return First::Poll(named);
    }
    // 4. A PUT or PATCH that is not done: poll the resource itself.
    if changes_a_resource(reply.method) {
        return First::Poll(StatusPoll { url: reply.url.to_string(), mode: Mode::Body });
    }
    First::NoStatusUrl
}

/// The status URL a submit's reply names by its headers, resolved against
/// the submit's URL. A header that names no usable URL is passed over.
pub(crate) fn named<'h>(header: impl Fn(&str) -> Option<&'h str>, submit_url: &str) -> Option<StatusPoll> {
    NAMING_HEADERS.iter().find_map(|(name, mode)| {
        let url = header(name).and_then(|value| url::resolve(submit_url, value))?;
        Some(StatusPoll { url, mode: *mode })
    })
}

/// Where a status reply `status` moves the polling, if anywhere: a new
/// `Operation-Location` or `Azure-AsyncOperation` on a 2xx in any mode, and
/// in Location mode a 202's new `Location` (ARM's POST).
pub(crate) fn moved<'h>(header: impl Fn(&str) -> Option<&'h str>, status: u16, now: &StatusPoll) -> Option<StatusPoll> {
    if !(200..300).contains(&status) {
        return None;
    }
    let resolved = |name: &str| header(name).and_then(|value| url::resolve(&now.url, value));
    // The headers of an operation's status move the polling in any mode; `Location` only in its own.
    let mut moving = NAMING_HEADERS.iter().filter(|(_, mode)| *mode != Mode::Location);
    let next = match moving.find_map(|(name, _)| resolved(name)) {
        Some(url) => StatusPoll { url, mode: Mode::Operation { header: true } },
        None if now.mode == Mode::Location && status == 202 => {
            StatusPoll { url: resolved("location")?, mode: Mode::Location }
        }
        None => return None,
    };
    (next.url != now.url).then_some(next)
}

/// Whether an operation that ended done, its status polled in `mode`, is
/// followed by a GET of the submit's URL: one a PUT or PATCH started, done through an
/// operation header. Its reply, the resource, is the final body.
pub(crate) fn final_get(method: &str, mode: Mode) -> bool {
    changes_a_resource(method) && mode == Mode::Operation { header: true }
}

/// PUT and PATCH create or change the resource at their own URL.
fn changes_a_resource(method: &str) -> bool {
    method.eq_ignore_ascii_case("PUT") || method.eq_ignore_ascii_case("PATCH")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBMIT: &str = "http://h/v1/things/1";

    type Headers = &'static [(&'static str, &'static str)];

    /// The header `name` of `headers`, as a reply answers it.
    fn lookup(headers: Headers) -> impl Fn(&str) -> Option<&'static str> {
        move |name| headers.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    fn poll_at(url: &str, mode: Mode) -> Option<StatusPoll> {
        Some(StatusPoll { url: url.to_string(), mode })
    }

    #[test]
    fn the_submit_reply_is_read_in_the_contracts_five_steps() {
        use Verdict::{FailWhen, Met, NotJson, NotMet};
        let op = || poll_at("http://h/ops/1", Mode::Operation { header: true });
        let body = First::Poll(StatusPoll { url: SUBMIT.to_string(), mode: Mode::Body });
        let poll_op =
            First::Poll(StatusPoll { url: "http://h/ops/1".to_string(), mode: Mode::Operation { header: true } });
        #[rustfmt::skip] // One row per line: the table is the test.
        type Row = (&'static str, &'static str, u16, Verdict, Option<Word>, bool, Option<StatusPoll>, First);
        let rows: Vec<Row> = vec![
            // 1. terminal at once, even with a header that may point nowhere
            ("PATCH 200 Succeeded + header", "PATCH", 200, Met, Some(Word::Done), true, op(), First::End(Met)),
            ("PUT 201 Failed", "PUT", 201, FailWhen, Some(Word::Failed), true, None, First::End(FailWhen)),
            ("a 202 is never the ending", "POST", 202, Met, Some(Word::Done), true, op(), poll_op.clone()),
            // 2. no state, nowhere to poll
            ("DELETE 204", "DELETE", 204, NotJson, None, true, None, First::End(Met)),
            ("POST 200 no word", "POST", 200, NotMet, Some(Word::Other), true, None, First::End(Met)),
            ("POST 200 not JSON", "POST", 200, NotJson, None, true, None, First::End(Met)),
            ("204 with --until", "DELETE", 204, NotJson, None, false, None, First::End(Met)),
            // 3. a status URL
            ("POST 202 + header", "POST", 202, NotJson, None, true, op(), poll_op.clone()),
            ("POST 200 no word + header", "POST", 200, NotMet, Some(Word::Other), true, op(), poll_op.clone()),
            ("PUT 201 Creating + header", "PUT", 201, NotMet, Some(Word::Running), true, op(), poll_op),
            // 4. body polling
            ("PUT 201 Creating", "PUT", 201, NotMet, Some(Word::Running), true, None, body.clone()),
            ("PUT 201 no word", "put", 201, NotMet, Some(Word::Other), true, None, body.clone()),
            ("PUT 200 Accepted", "PUT", 200, NotMet, Some(Word::Running), true, None, body.clone()),
            ("PATCH 202 no body", "PATCH", 202, NotJson, None, true, None, body.clone()),
            ("PUT 200 --until not met", "PUT", 200, NotMet, None, false, None, body),
            // 5. nothing to go on
            ("POST 202 no header", "POST", 202, NotJson, None, true, None, First::NoStatusUrl),
            ("POST 201 Creating", "POST", 201, NotMet, Some(Word::Running), true, None, First::NoStatusUrl),
            ("DELETE 202 no header", "DELETE", 202, NotMet, None, true, None, First::NoStatusUrl),
            ("POST 200 --until not met", "POST", 200, NotMet, None, false, None, First::NoStatusUrl),
        ];
        for (what, method, status, verdict, word, builtin_done, named, want) in rows {
            let reply = SubmitReply { method, url: SUBMIT, status, verdict, word, builtin_done, named };
            assert_eq!(first_reply(reply), want, "{what}");
        }
    }

    #[test]
    fn headers_name_the_status_url_in_order_and_resolve_by_rfc_3986() {
        let rows: [(Headers, Option<StatusPoll>); 5] = [
            (
                &[("location", "/l"), ("azure-asyncoperation", "/a"), ("operation-location", "../ops/1")],
                poll_at("http://h/v1/ops/1", Mode::Operation { header: true }),
            ),
            (
                &[("location", "/l"), ("azure-asyncoperation", "/a")],
                poll_at("http://h/a", Mode::Operation { header: true }),
            ),
            (&[("location", "jobs/2")], poll_at("http://h/v1/things/jobs/2", Mode::Location)),
            // An unusable header is passed over for the next.
            (&[("operation-location", "ftp://x/1"), ("location", "/l")], poll_at("http://h/l", Mode::Location)),
            (&[("retry-after", "1")], None),
        ];
        for (headers, want) in rows {
            assert_eq!(named(lookup(headers), SUBMIT), want, "{headers:?}");
        }
    }

    #[test]
    fn status_replies_move_the_polling_by_mode() {
        let location = StatusPoll { url: "http://h/ops/1".to_string(), mode: Mode::Location };
        let op = StatusPoll { url: "http://h/ops/1".to_string(), mode: Mode::Operation { header: true } };
        let body = StatusPoll { url: SUBMIT.to_string(), mode: Mode::Body };
        #[rustfmt::skip]
        let rows: Vec<(&str, &StatusPoll, u16, Headers, Option<StatusPoll>)> = vec![
            ("Location mode, 202 + new Location", &location, 202, &[("location", "/ops/2")], poll_at("http://h/ops/2", Mode::Location)),
            ("Location mode, same Location", &location, 202, &[("location", "/ops/1")], None),
            ("Location mode, 200 + Location is the resource", &location, 200, &[("location", "/ops/2")], None),
            ("operation mode ignores Location", &op, 202, &[("location", "/ops/2")], None),
            ("any mode, Operation-Location", &location, 202, &[("operation-location", "/ops/3")], poll_at("http://h/ops/3", Mode::Operation { header: true })),
            ("body polling, Azure-AsyncOperation", &body, 200, &[("azure-asyncoperation", "/ops/4")], poll_at("http://h/ops/4", Mode::Operation { header: true })),
            ("not on a 5xx", &op, 500, &[("operation-location", "/ops/5")], None),
        ];
        for (what, now, status, headers, want) in rows {
            assert_eq!(moved(lookup(headers), status, now), want, "{what}");
        }
    }

    #[test]
    fn only_what_a_put_or_patch_made_through_an_operation_header_is_fetched_at_the_end() {
        let header = Mode::Operation { header: true };
        assert!(final_get("PUT", header));
        assert!(final_get("patch", header));
        assert!(!final_get("POST", header));
        assert!(!final_get("DELETE", header));
        assert!(!final_get("PUT", Mode::Location));
        assert!(!final_get("PUT", Mode::Body));
        assert!(!final_get("PUT", Mode::Operation { header: false }));
    }
}
