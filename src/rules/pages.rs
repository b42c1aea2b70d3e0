//! `--paginate`: the rules of one walk through a collection's pages, from
//! plain values. Where the next page is (what a page names, resolved against
//! its URL), the pages one walk may not read (another scheme, one read
//! already, one past `--max-pages`), which page's credentials go where, and
//! the array of the pages' bodies the filters read (`gh api --paginate --slurp`).

use std::time::Duration;

use url::Url;

use crate::rules::advice::Advice;
use crate::util::url as urls;

/// `--max-pages`' default: the most pages one attempt reads.
pub(crate) const MAX_PAGES: u32 = 100;

/// Why a walk cannot go on to the page a page named: exit 3, in these words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WalkStop {
    /// The next URL is not http(s) (or is no URL at all): as written, and resolved when it could be.
    NotHttp(String),
    /// The next URL names a page this walk has read already: a loop.
    ReadAlready(String),
    /// The walk has read `--max-pages` pages and another is named.
    TooMany { max: u32, next: String },
}

impl std::fmt::Display for WalkStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |url: &str| crate::util::text::printable(&urls::redact(url));
        match self {
            WalkStop::NotHttp(next) => write!(f, "the next page `{}` is not an http(s) URL", shown(next)),
            WalkStop::ReadAlready(next) => {
                write!(f, "the next page {} was read already in this walk (the pages loop)", shown(next))
            }
            WalkStop::TooMany { max, next } => {
                write!(f, "more than {max} pages: raise --max-pages (the next one is {})", shown(next))
            }
        }
    }
}

/// What a loop keeps of its walks between attempts.
#[derive(Debug, Default)]
pub(crate) struct Paging {
    /// The array of the last walk that was read to its end and judged; a walk
    /// whose every page is a 304 after it is this very array, judged then.
    pub judged_whole: Option<Vec<u8>>,
    /// The page after the first that ended the last walk, which the run's
    /// error names (a 404 on page 3 is page 3's).
    pub stopped_at: Option<String>,
    /// The pages' URLs of the last walk read to its end: with the current
    /// walk's, those whose validators and bodies are worth keeping.
    pub walked: Vec<String>,
    /// A `Link` that did not parse has been warned of (once a loop).
    pub said_unread: bool,
}

/// How long the next page of a walk waits for the quota a page's reply
/// says is left: until the reset, when none is (GitHub's
/// `X-RateLimit-Remaining: 0`); a page sent sooner only earns a 429 and a
/// walk from page 1 again. Between walks the policy paces as for one reply.
pub(crate) fn quota_wait(advice: &Advice) -> Option<Duration> {
    match (advice.remaining, advice.reset) {
        (Some(0), Some(reset)) if !reset.is_zero() => Some(reset),
        _ => None,
    }
}

/// One walk: the pages read so far (each URL as it is compared), and the cap.
#[derive(Debug, Clone)]
pub(crate) struct Walk {
    read: Vec<String>,
    max: u32,
}

impl Walk {
    /// A walk that has read its first page, at `first`.
    pub(crate) fn new(first: &str, max: u32) -> Walk {
        Walk { read: vec![compared(first).unwrap_or_else(|| first.to_string())], max }
    }

    /// How many pages this walk has read.
    pub(crate) fn pages(&self) -> u32 {
        u32::try_from(self.read.len()).unwrap_or(u32::MAX)
    }

    /// The page `reference` names, as read on the page at `base`: resolved
    /// against `base` (RFC 3986; the fragment dropped, as it never goes on the
    /// wire), checked, and counted as read.
    pub(crate) fn next(&mut self, base: &str, reference: &str) -> Result<String, WalkStop> {
        let reference = reference.trim();
        let joined = Url::parse(base).and_then(|base| base.join(reference));
        let Ok(mut url) = joined else { return Err(WalkStop::NotHttp(reference.to_string())) };
        url.set_fragment(None);
        let nowhere = url.host_str().is_none_or(str::is_empty) || url.port() == Some(0);
        if !matches!(url.scheme(), "http" | "https") || nowhere {
            return Err(WalkStop::NotHttp(url.into()));
        }
        // The url crate writes the scheme and host in lower case and drops a default port.
        let next: String = url.into();
        if self.read.contains(&next) {
            return Err(WalkStop::ReadAlready(next));
        }
        if self.pages() >= self.max {
            return Err(WalkStop::TooMany { max: self.max, next });
        }
        self.read.push(next.clone());
        Ok(next)
    }
}

/// A page's URL as walks compare them: parsed and written again, so that
/// the scheme and host are in lower case, a default port is dropped, and
/// without its fragment.
fn compared(url: &str) -> Option<String> {
    let mut url = Url::parse(url).ok()?;
    url.set_fragment(None);
    Some(url.into())
}

/// Whether a page at `url` gets the credentials of the first page, at
/// `first`: on its origin, or anywhere with `--location-trusted` (`trusted`),
/// as a redirect's.
pub(crate) fn carries_credentials(first: &str, url: &str, trusted: bool) -> bool {
    trusted || urls::same_origin(first, url)
}

/// The filters' input: the pages' bodies as one JSON array, in order, each
/// page one value, compact (insignificant whitespace dropped, every other
/// byte as the server sent it, so numbers and key order are kept). A page
/// that is not JSON is the string of its text (as a body is on a line of
/// several URLs), an empty one `null`.
pub(crate) fn slurp<'a>(bodies: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = vec![b'['];
    for (i, body) in bodies.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            out.extend_from_slice(b"null");
        } else if reads_as_json(body) {
            compact(body, &mut out);
        } else {
            let text = serde_json::Value::String(String::from_utf8_lossy(body).into_owned());
            out.extend_from_slice(text.to_string().as_bytes());
        }
    }
    out.push(b']');
    out
}

/// Whether a page's body is one JSON value in the array: JSON, or empty (`null`).
/// A page that is neither fails a walk whose filters read it, as one reply does.
pub(crate) fn reads_as_json(body: &[u8]) -> bool {
    body.iter().all(u8::is_ascii_whitespace) || serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok()
}

/// `json` (valid JSON) without its insignificant whitespace, onto `out`.
fn compact(json: &[u8], out: &mut Vec<u8>) {
    let (mut in_string, mut escaped) = (false, false);
    out.reserve(json.len());
    for &b in json {
        if in_string {
            out.push(b);
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            in_string = b == b'"';
            out.push(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_page_is_resolved_against_the_page_and_checked() {
        let base = "http://h:8080/repos/o/r/commits/abc/check-runs?per_page=100";
        let rows: &[(&str, Result<&str, WalkStop>)] = &[
            (
                "http://h:8080/repos/o/r/commits/abc/check-runs?per_page=100&page=2",
                Ok("http://h:8080/repos/o/r/commits/abc/check-runs?per_page=100&page=2"),
            ),
            ("?per_page=100&page=3", Ok("http://h:8080/repos/o/r/commits/abc/check-runs?per_page=100&page=3")),
            ("/runs?continue=eyJ2", Ok("http://h:8080/runs?continue=eyJ2")),
            ("../x/page4#frag", Ok("http://h:8080/repos/o/r/commits/x/page4")),
            ("  HTTPS://OTHER.example:443/p5 ", Ok("https://other.example/p5")),
            ("ftp://h/p", Err(WalkStop::NotHttp("ftp://h/p".into()))),
            ("javascript:alert(1)", Err(WalkStop::NotHttp("javascript:alert(1)".into()))),
            ("http://[bad", Err(WalkStop::NotHttp("http://[bad".into()))),
            ("http://h:0/p", Err(WalkStop::NotHttp("http://h:0/p".into()))),
            // The first page, however it is written: a loop.
            (
                "HTTP://H:8080/repos/o/r/commits/abc/check-runs?per_page=100#top",
                Err(WalkStop::ReadAlready(base.into())),
            ),
        ];
        for (reference, expected) in rows {
            let mut walk = Walk::new(base, 100);
            let got = walk.next(base, reference);
            assert_eq!(got, expected.clone().map(str::to_string), "{reference}");
        }
    }

    #[test]
    fn the_next_page_waits_for_the_reset_only_when_no_request_is_left() {
        let secs = Duration::from_secs;
        let advice = |remaining, reset: Option<u64>| Advice { remaining, reset: reset.map(secs), ..Advice::default() };
        assert_eq!(quota_wait(&advice(Some(0), Some(30))), Some(secs(30)));
        assert_eq!(quota_wait(&advice(Some(1), Some(30))), None);
        assert_eq!(quota_wait(&advice(Some(0), None)), None);
        assert_eq!(quota_wait(&advice(Some(0), Some(0))), None);
        assert_eq!(quota_wait(&advice(None, Some(30))), None);
    }

    #[test]
    fn a_page_read_already_is_a_loop_and_the_cap_counts_every_page() {
        let mut walk = Walk::new("http://h/p1", 3);
        assert_eq!(walk.next("http://h/p1", "/p2"), Ok("http://h/p2".to_string()));
        assert_eq!(walk.next("http://h/p2", "http://h:80/p1"), Err(WalkStop::ReadAlready("http://h/p1".into())));
        assert_eq!(walk.next("http://h/p2", "/p3"), Ok("http://h/p3".to_string()));
        assert_eq!(walk.pages(), 3);
        let more = walk.next("http://h/p3", "/p4");
        assert_eq!(more, Err(WalkStop::TooMany { max: 3, next: "http://h/p4".into() }));
        assert_eq!(
            more.map_err(|e| e.to_string()),
            Err("more than 3 pages: raise --max-pages (the next one is http://h/p4)".to_string())
        );
        // The loop is named before the cap: it is what went wrong.
        assert!(matches!(walk.next("http://h/p3", "/p2"), Err(WalkStop::ReadAlready(_))));
    }

    #[test]
    fn the_words_name_the_page_with_its_secrets_redacted() {
        let loop_ = WalkStop::ReadAlready("http://h/p?access_token=s3cr3t".into()).to_string();
        assert!(!loop_.contains("s3cr3t") && loop_.contains("http://h/p?access_token="), "{loop_}");
        assert_eq!(
            WalkStop::NotHttp("ftp://h/\u{1b}".into()).to_string(),
            "the next page `ftp://h/\\u{1b}` is not an http(s) URL"
        );
    }

    #[test]
    fn credentials_go_to_the_first_pages_origin_or_everywhere_when_trusted() {
        assert!(carries_credentials("http://h/a", "http://H:80/b?page=2", false));
        assert!(!carries_credentials("http://h/a", "http://h:81/b", false));
        assert!(!carries_credentials("http://h/a", "https://h/b", false));
        assert!(carries_credentials("http://h/a", "http://other/b", true));
    }

    #[test]
    fn the_pages_are_one_array_each_compact_as_sent() {
        let rows: &[(&[&str], &str)] = &[
            (&["{\"a\": 1}"], r#"[{"a":1}]"#),
            (
                &["{ \"z\" : [1 , 2.50, 1e3],\n \"a\": \"x y\\\" }\" }", "[]"],
                r#"[{"z":[1,2.50,1e3],"a":"x y\" }"},[]]"#,
            ),
            (&["{\"s\":\"tab\\t \\\\\"}", " \n"], r#"[{"s":"tab\t \\"},null]"#),
            (&["<html>oops</html>", "17"], r#"["<html>oops</html>",17]"#),
            (&[], "[]"),
        ];
        for (bodies, expected) in rows {
            let slurped = slurp(bodies.iter().map(|b| b.as_bytes()));
            assert_eq!(String::from_utf8_lossy(&slurped), *expected, "{bodies:?}");
            assert!(serde_json::from_slice::<serde_json::Value>(&slurped).is_ok(), "{expected} is JSON");
        }
    }
}
