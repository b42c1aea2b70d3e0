//! The cookies of one loop (RFC 6265): what any reply sets is sent back on
//! the later requests of the same run, by domain, path, expiry and `Secure`,
//! from memory only, as curl's engine does with `-b ''`. Load balancers and
//! operation services that pin a client to one backend rely on it.

use std::sync::Mutex;

use crate::util::sync::lock;

use cookie_store::CookieStore;
use url::Url;

/// One loop's jar; each of several URLs has its own.
#[derive(Debug, Default)]
pub(crate) struct Jar(Mutex<CookieStore>);

impl Jar {
    /// Keeps what a reply from `url` sets. A cookie that does not parse, or
    /// that `url` may not set (another domain), is passed over, as browsers do.
    pub(crate) fn store<'a>(&self, url: &str, set_cookies: impl Iterator<Item = &'a str>) {
        // Most replies set none: then the URL is not parsed (tight polling pays for nothing here).
        let mut set_cookies = set_cookies.peekable();
        if set_cookies.peek().is_none() {
            return;
        }
        let Ok(url) = Url::parse(url) else { return };
        let mut jar = lock(&self.0);
        for set_cookie in set_cookies {
            let _ = jar.parse(set_cookie, &url);
        }
    }

    /// The `Cookie` value for a request to `url`, if the jar has any for it.
    /// A `Secure` cookie goes only over https://, loopback included (where
    /// the cookie crate, as browsers, would also send it over http://).
    pub(crate) fn header(&self, url: &str) -> Option<String> {
        let jar = lock(&self.0);
        // An empty jar (the common case) sends nothing, without parsing the URL.
        jar.iter_any().next()?;
        let url = Url::parse(url).ok()?;
        let https = url.scheme() == "https";
        let pairs: Vec<String> = jar
            .matches(&url)
            .into_iter()
            .filter(|cookie| https || cookie.secure() != Some(true))
            .map(|cookie| format!("{}={}", cookie.name(), cookie.value()))
            .collect();
        (!pairs.is_empty()).then(|| pairs.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_go_back_by_domain_path_expiry_and_secure() {
        let jar = Jar::default();
        jar.store(
            "https://api.example/v1/jobs",
            ["a=1; Path=/", "b=2; Path=/v1", "c=3; Path=/other", "d=4; Secure; Path=/", "bad"].into_iter(),
        );
        let sent = jar.header("https://api.example/v1/ops/1").unwrap_or_default();
        let mut names: Vec<&str> = sent.split("; ").collect();
        names.sort_unstable();
        assert_eq!(names, ["a=1", "b=2", "d=4"]);
        // No Secure cookie over http://, not even to the same host.
        assert_eq!(jar.header("http://api.example/").as_deref(), Some("a=1"));
        assert_eq!(jar.header("https://other.example/"), None);
        // Max-Age=0 removes one.
        jar.store("https://api.example/", ["a=1; Path=/; Max-Age=0"].into_iter());
        assert_eq!(jar.header("http://api.example/"), None);
        assert_eq!(jar.header("not a url"), None);
    }
}
