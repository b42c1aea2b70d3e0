//! Conditional polls: the validators (`ETag`, `Last-Modified`) of the last
//! 2xx to each URL a loop polls, with its body, kept in memory so that the
//! next GET asks `If-None-Match` / `If-Modified-Since` and a `304 Not
//! Modified` is answered from the body kept. One [`Validators`] per loop.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::http::request::{Fault, Reply, Request};

/// The request headers that make a request conditional.
const VALIDATOR_HEADERS: [&str; 2] = ["if-none-match", "if-modified-since"];

/// Which validators a request carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    /// None: a 304 leaves no body to judge.
    Nothing,
    /// Ours, from the last 2xx to its URL.
    Ours,
    /// The user's own `-H If-None-Match` / `-H If-Modified-Since`.
    Users,
}

/// What a reply means once the validators have been settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Not a 304: judged as it came.
    Fresh,
    /// A 304 to our validators: the reply now holds the body kept, to be
    /// judged as the 2xx `status` it came with.
    NotModified { status: u16 },
    /// A 304 to the user's own validator: what the user knows has not changed, not yet.
    Unchanged,
    /// A 304 to a request that carried no validator: there is no body to judge.
    Unasked,
}

/// The last 2xx to one URL.
#[derive(Debug)]
struct LastReply {
    status: u16,
    etag: Option<String>,
    last_modified: Option<String>,
    body: Vec<u8>,
    /// Its `Link` fields, for a 304 that carries none (`--paginate` reads the next page there).
    links: Vec<String>,
}

/// The validators and bodies kept by one loop, by URL (the status URL of a
/// `--submit` may move). Bodies are those read within `--max-body`.
#[derive(Debug)]
pub(crate) struct Validators {
    /// `--no-conditional` turns the automatic validators off.
    on: bool,
    kept: HashMap<String, LastReply>,
}

impl Validators {
    pub(crate) fn new(on: bool) -> Validators {
        Validators { on, kept: HashMap::new() }
    }

    /// The request to send for `request`: with our validators when it is a GET
    /// (never a `--submit`'s submit, `submit`) to a URL whose last 2xx had some
    /// and the user gave none of their own; and which validators it carries.
    pub(crate) fn prepare<'r>(&self, request: &'r Request, submit: bool) -> (Cow<'r, Request>, Sent) {
        // The user's own validator replaces both of ours: mixed, the server would weigh ours first.
        let users = VALIDATOR_HEADERS.iter().any(|name| request.headers.contains(name));
        if users {
            return (Cow::Borrowed(request), Sent::Users);
        }
        let kept = (self.on && !submit && request.method == "GET").then(|| self.kept.get(&request.url)).flatten();
        let Some(kept) = kept else { return (Cow::Borrowed(request), Sent::Nothing) };
        let mut conditional = request.clone();
        if let Some(etag) = &kept.etag {
            conditional.headers.push("If-None-Match", etag.clone());
        }
        if let Some(date) = &kept.last_modified {
            conditional.headers.push("If-Modified-Since", date.clone());
        }
        (Cow::Owned(conditional), Sent::Ours)
    }

    /// After the reply to `request` (sent with `sent`): a full 2xx to a GET
    /// keeps its validators and body (one without validators forgets the
    /// URL's); a 304 to our validators gets the body kept put in.
    pub(crate) fn settle(
        &mut self,
        request: &Request,
        submit: bool,
        sent: Sent,
        reply: &mut Result<Reply, Fault>,
    ) -> Answer {
        let Ok(reply) = reply else { return Answer::Fresh };
        if reply.status == 304 {
            return match (sent, self.kept.get(&request.url)) {
                (Sent::Ours, Some(kept)) => {
                    reply.body.clone_from(&kept.body);
                    Answer::NotModified { status: kept.status }
                }
                (Sent::Users, _) => Answer::Unchanged,
                _ => Answer::Unasked,
            };
        }
        // 206 is a part of the body, not one to judge again.
        if !self.on || submit || request.method != "GET" || !(200..300).contains(&reply.status) || reply.status == 206 {
            return Answer::Fresh;
        }
        let etag = reply.headers.get("etag").map(str::to_owned);
        let last_modified = reply.headers.get("last-modified").map(str::to_owned);
        if etag.is_none() && last_modified.is_none() {
            // Most servers send neither: the URL is not hashed for nothing.
            if !self.kept.is_empty() {
                self.kept.remove(&request.url);
            }
            return Answer::Fresh;
        }
        let links = reply.headers.iter().filter(|(name, _)| name.eq_ignore_ascii_case("link"));
        let links = links.map(|(_, value)| value.to_owned()).collect();
        let kept = LastReply { status: reply.status, etag, last_modified, body: reply.body.clone(), links };
        self.kept.insert(request.url.clone(), kept);
        Answer::Fresh
    }

    /// Forgets every URL but those `keep` says: a collection whose page URLs
    /// change on every walk (a cursor in them) is otherwise kept without end.
    pub(crate) fn keep_only(&mut self, keep: impl Fn(&str) -> bool) {
        self.kept.retain(|url, _| keep(url));
    }

    /// The `Link` fields of the 2xx kept for `url` (none when none is).
    pub(crate) fn kept_links(&self, url: &str) -> &[String] {
        self.kept.get(url).map_or(&[], |kept| kept.links.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(url: &str, headers: &[(&str, &str)]) -> Request {
        Request {
            method: "GET".into(),
            url: url.into(),
            headers: headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
            body: None,
            see_other_is_the_answer: false,
        }
    }

    fn reply(status: u16, headers: &[(&str, &str)], body: &str) -> Result<Reply, Fault> {
        let headers = headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        Ok(Reply { status, headers, body: body.as_bytes().to_vec(), cut: false })
    }

    fn names(request: &Request) -> Vec<(String, String)> {
        request.headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    #[test]
    fn only_the_urls_kept_keep_their_validators_and_bodies() {
        let mut validators = Validators::new(true);
        for url in ["http://a/p1", "http://a/p2?cursor=1", "http://a/p2?cursor=2"] {
            let request = get(url, &[]);
            let mut ok = reply(200, &[("ETag", "\"1\"")], "{}");
            validators.settle(&request, false, Sent::Nothing, &mut ok);
        }
        validators.keep_only(|url| url != "http://a/p2?cursor=1");
        let sent = |url: &str| validators.prepare(&get(url, &[]), false).1;
        assert_eq!(
            [sent("http://a/p1"), sent("http://a/p2?cursor=1"), sent("http://a/p2?cursor=2")],
            [Sent::Ours, Sent::Nothing, Sent::Ours]
        );
    }

    #[test]
    fn a_304_to_our_validators_is_answered_from_the_kept_body() {
        let mut validators = Validators::new(true);
        let request = get("http://a/x", &[]);
        let (first, sent) = validators.prepare(&request, false);
        assert_eq!((names(&first), sent), (vec![], Sent::Nothing));
        let mut ok = reply(200, &[("ETag", "W/\"1\""), ("Last-Modified", "Tue, 01 Dec 2026 00:00:00 GMT")], "{}");
        assert_eq!(validators.settle(&request, false, sent, &mut ok), Answer::Fresh);

        let (second, sent) = validators.prepare(&request, false);
        assert_eq!(sent, Sent::Ours);
        assert_eq!(
            names(&second),
            [
                ("If-None-Match".to_string(), "W/\"1\"".to_string()),
                ("If-Modified-Since".to_string(), "Tue, 01 Dec 2026 00:00:00 GMT".to_string())
            ]
        );
        let mut not_modified = reply(304, &[], "");
        assert_eq!(validators.settle(&request, false, sent, &mut not_modified), Answer::NotModified { status: 200 });
        assert_eq!(not_modified.map(|r| r.body).ok(), Some(b"{}".to_vec()));

        // Another URL has validators of its own; a 2xx without any forgets them.
        assert_eq!(validators.prepare(&get("http://a/y", &[]), false).1, Sent::Nothing);
        validators.settle(&request, false, Sent::Ours, &mut reply(200, &[], "new"));
        assert_eq!(validators.prepare(&request, false).1, Sent::Nothing);
    }

    #[test]
    fn the_users_validator_the_submit_and_no_conditional_send_none_of_ours() {
        let request = get("http://a/x", &[]);
        let etag = [("ETag", "\"1\"")];
        let mut off = Validators::new(false);
        off.settle(&request, false, Sent::Nothing, &mut reply(200, &etag, "{}"));
        assert_eq!(off.prepare(&request, false).1, Sent::Nothing);
        assert_eq!(off.settle(&request, false, Sent::Nothing, &mut reply(304, &[], "")), Answer::Unasked);

        let mut on = Validators::new(true);
        on.settle(&request, true, Sent::Nothing, &mut reply(200, &etag, "{}"));
        assert_eq!(on.prepare(&request, false).1, Sent::Nothing, "a submit's reply keeps nothing");
        on.settle(&request, false, Sent::Nothing, &mut reply(200, &etag, "{}"));
        assert_eq!(on.prepare(&request, true).1, Sent::Nothing, "a submit is never conditional");

        let users = get("http://a/x", &[("if-none-match", "\"mine\"")]);
        let (sent_request, sent) = on.prepare(&users, false);
        assert_eq!((names(&sent_request), sent), (names(&users), Sent::Users));
        assert_eq!(on.settle(&users, false, sent, &mut reply(304, &[], "")), Answer::Unchanged);
    }
}
