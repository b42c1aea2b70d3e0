//! `--paginate` and `--next`: one URL's attempt is a walk through a
//! collection's pages. The first page is the request as given; each page
//! names the next (`--next` on its body, else its `Link: rel="next"`), read
//! with a GET until one names none. Each page is sent, settled by the
//! validators kept for its own URL (a 304 is its body kept) and shown by `-v`;
//! a page that is no 2xx, or not JSON where a filter reads it, ends the
//! attempt as a reply would, judged and decided on as one. A page that says
//! the quota is spent holds the next one until the reset. A walk read to its
//! end is judged once, on the array of its pages' bodies, with the last
//! page's `$status` and `$headers`; the validators kept are those of its
//! pages (and of the last whole walk's, while one fails). The loop, and
//! all that polling and walking share (the turn, sending, judging, deciding,
//! sharing), is `target.rs`'s: its `Loop::attempts` calls [`Loop::walk`] here.

use std::time::{Duration, SystemTime};

use crate::error::Error;
use crate::http::conditional::Answer;
use crate::http::request::{Client, Reply};
use crate::report::record::Record;
use crate::rules::advice::Advice;
use crate::rules::condition::Message;
use crate::rules::pages::{self, Walk};
use crate::rules::policy::WaitReason;
use crate::run::target::{Counts, Delivery, Halt, Loop};
use crate::util::headers::Headers;
use crate::util::link;
use crate::util::text::printable;
use crate::util::url;

/// The last page of a walk read so far: its status (a 304's, the kept
/// body's) and headers, for `$status` and `$headers`.
struct Last {
    status: u16,
    headers: Headers,
}

impl Loop<'_> {
    /// `--paginate`: attempt `counts.number` reads the first page and every
    /// page it leads to, up to `--max-pages`; the record of the walk judged
    /// on its pages' bodies, or of the page that ended it.
    pub(super) fn walk(&mut self, client: &Client, counts: &Counts, rng: &mut impl rand::Rng) -> Result<Record, Halt> {
        let common = self.common;
        let (next_filter, max, trusted, key_header) = match &common.polling.pages {
            Some(pages) => (pages.next.as_ref(), pages.max, pages.trusted, pages.key_header.as_deref()),
            None => (None, pages::MAX_PAGES, false, None),
        };
        let number = counts.number;
        self.reporter.sending(number);
        self.paging.stopped_at = None;
        let first = self.request.clone();
        let mut walk = Walk::new(&first.url, max);
        let mut page = first.clone();
        let mut bodies: Vec<Vec<u8>> = Vec::new();
        let mut visited: Vec<String> = Vec::new();
        let (mut spent, mut unchanged) = (Duration::ZERO, true);
        let conditions = &common.polling.conditions;
        let filtered = conditions.until.is_some() || conditions.fail_when.is_some();
        let last = loop {
            let n = walk.pages();
            visited.push(page.url.clone());
            let carry = n == 1 || pages::carries_credentials(&first.url, &page.url, trusted);
            let (sending, validated) = self.validators.prepare(&page, false);
            let sent = self.send_carrying(&sending, number, carry, &|r| self.fetch(client, r), |r| r.status);
            drop(sending);
            let Delivery { mut reply, latency, .. } = self.delivered(client, sent)?;
            spent += latency;
            let answer = self.validators.settle(&page, false, validated, &mut reply);
            self.reporter.page(number, n, &page.url, &page_words(&reply, answer), latency);
            let status = match (&reply, answer) {
                (Ok(_), Answer::NotModified { status }) => Some(status),
                (Ok(reply), Answer::Fresh) => Some(reply.status),
                _ => None,
            };
            let page_read = match reply {
                Ok(reply)
                    if status.is_some_and(|status| (200..300).contains(&status))
                        && (!filtered || pages::reads_as_json(&reply.body)) =>
                {
                    reply
                }
                // A page that failed, is no 2xx (or a 304 with no body kept), or is not JSON
                // where a filter reads it: the attempt's outcome, judged by the status lists
                // and the filters and decided on as one reply.
                reply => {
                    if n > 1 {
                        self.paging.stopped_at = Some(page.url.clone());
                    }
                    self.paging.judged_whole = None;
                    let walked = &self.paging.walked;
                    self.validators.keep_only(|url| visited.iter().chain(walked).any(|kept| kept == url));
                    let (mut record, _) = self.conclude(reply, answer, None, spent, counts, rng);
                    record.pages = Some(n);
                    self.reporter.attempt(&self.request, &record);
                    return Ok(record);
                }
            };
            // The pages after this one are of a service that answers.
            self.replied = true;
            unchanged &= matches!(answer, Answer::NotModified { .. });
            let status = status.unwrap_or(page_read.status);
            let next = match next_filter {
                Some(filter) => {
                    let message = Message::reply(status, &page_read.headers, &page_read.body);
                    let next = filter.next_page(message);
                    next.map_err(|why| Error::permanent(format!("--next on page {n}: {why}")).at(&page.url))?
                }
                None => self.next_link(&page.url, &page_read),
            };
            let Reply { headers, body, .. } = page_read;
            bodies.push(body);
            let Some(next) = next else { break Last { status, headers } };
            let next =
                walk.next(&page.url, &next).map_err(|refused| Error::permanent(refused.to_string()).at(&page.url))?;
            // The next page waits its turn as any request does: the quota this page says is
            // spent, a --rate token, the server's "not before".
            self.common.cancel.check()?;
            if let Some(wait) = pages::quota_wait(&Advice::from_headers(headers.iter(), SystemTime::now())) {
                self.wait_before_page(number, wait)?;
            }
            self.turn(number, false, true)?;
            page = first.page(&next, key_header, trusted);
        };
        // Every page unchanged since a walk judged whole: the array judged then, as a 304 is.
        let (body, shown, answer) = match (unchanged, self.paging.judged_whole.take()) {
            (true, Some(judged)) => (judged, 304, Answer::NotModified { status: last.status }),
            _ => (pages::slurp(bodies.iter().map(Vec::as_slice)), last.status, Answer::Fresh),
        };
        self.paging.judged_whole = Some(body.clone());
        self.validators.keep_only(|url| visited.iter().any(|kept| kept == url));
        self.paging.walked = visited;
        let whole = Reply { status: shown, headers: last.headers, body, cut: false };
        let (mut record, _) = self.conclude(Ok(whole), answer, None, spent, counts, rng);
        record.pages = Some(walk.pages());
        self.reporter.attempt(&self.request, &record);
        Ok(record)
    }

    /// Waits `wait` before the next page of attempt `number`, as `-v` says,
    /// or ends the run when the deadline comes first.
    fn wait_before_page(&self, number: u32, wait: Duration) -> Result<(), Halt> {
        let left = self.left();
        if left.is_some_and(|left| wait >= left) {
            let millis = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
            return Err(self.too_late(millis, WaitReason::RateLimitReset, left).into());
        }
        self.reporter.queued(number, wait, WaitReason::RateLimitReset, None);
        Ok(self.common.cancel.sleep(wait)?)
    }

    /// The page a page at `url` names in its `Link: <...>; rel="next"`
    /// fields (the first, when several do), or in those of the 2xx kept for
    /// it when it is a 304 that carries none.
    /// When it names none but a link there does not parse, the first time in
    /// this loop, a warning says the walk may end too soon.
    fn next_link(&mut self, url: &str, page: &Reply) -> Option<String> {
        let fields: Vec<&str> =
            page.headers.iter().filter(|(name, _)| name.eq_ignore_ascii_case("link")).map(|(_, v)| v).collect();
        let fields = match (fields.is_empty(), page.status) {
            (true, 304) => self.validators.kept_links(url).iter().map(String::as_str).collect(),
            _ => fields,
        };
        let next = link::targets(fields.iter().copied(), "next").into_iter().next();
        if next.is_none()
            && !self.paging.said_unread
            && let Some(unread) = link::unread(fields)
        {
            self.paging.said_unread = true;
            let shown = printable(&unread);
            self.reporter.warn(&format!(
                "a Link header of {} has a link poll cannot read (`{shown}`): the walk ends at that page",
                url::redact(url)
            ));
        }
        next
    }
}

/// A page as `-v` says what came back: `200`, `304 not modified`, `503`, `connection refused`.
fn page_words(reply: &Result<Reply, crate::http::request::Fault>, answer: Answer) -> String {
    match (reply, answer) {
        (Err(fault), _) => fault.failure.to_string(),
        (Ok(_), Answer::NotModified { .. }) => "304 not modified".to_string(),
        (Ok(reply), _) => reply.status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::request::Fault;
    use crate::rules::attempt::Failure;

    #[test]
    fn a_page_is_said_in_a_few_words() {
        let reply = |status| Ok(Reply { status, headers: Headers::default(), body: Vec::new(), cut: false });
        assert_eq!(page_words(&reply(200), Answer::Fresh), "200");
        assert_eq!(page_words(&reply(304), Answer::NotModified { status: 200 }), "304 not modified");
        assert_eq!(page_words(&reply(503), Answer::Fresh), "503");
        let refused = Fault::new(Failure::Refused, "refused");
        assert_eq!(page_words(&Err(refused), Answer::Fresh), Failure::Refused.to_string());
    }
}
