//! URLs: checking the ones a user gives, their origin, resolving a `Location`
//! against them, and redaction for display, with the one list of names that
//! mark a header or a query key as a secret.

use url::Url;

/// Words that mark a header name or a query key as a secret wherever they
/// appear in it (lowercased): `Authorization`, `Set-Cookie`, `X-Api-Key`,
/// `?access_token=`, `?sig=`. Redacting a harmless value costs nothing;
/// showing a secret cannot be undone.
const SECRET_WORDS: [&str; 12] =
    ["auth", "cookie", "token", "secret", "password", "passwd", "pwd", "key", "sig", "credential", "session", "jwt"];

/// What replaces a secret in every output.
pub(crate) const REDACTED: &str = "<redacted>";

/// A URL cut at its authority: `scheme://[userinfo@]host` and the rest.
pub(crate) struct UrlParts<'a> {
    pub scheme: &'a str,
    pub userinfo: Option<&'a str>,
    /// Host and port, as written.
    pub host: &'a str,
    /// Path, query and fragment.
    pub rest: &'a str,
}

impl<'a> UrlParts<'a> {
    /// `None` when there is no `scheme://`.
    pub(crate) fn split(url: &'a str) -> Option<UrlParts<'a>> {
        let (scheme, after) = url.split_once("://")?;
        let (authority, rest) = after.split_at(after.find(['/', '?', '#']).unwrap_or(after.len()));
        let (userinfo, host) = match authority.rsplit_once('@') {
            Some((userinfo, host)) => (Some(userinfo), host),
            None => (None, authority),
        };
        Some(UrlParts { scheme, userinfo, host, rest })
    }
}

/// A URL as given on the command line, checked: `http://` or `https://`, a
/// host (an internationalised one sent as punycode, as curl does), a port
/// from 1 to 65535 if any. `user:password@` is split off (percent-decoded),
/// to become basic auth so that it never travels in the URL or shows in logs;
/// a fragment is dropped, as it never goes on the wire.
pub(crate) fn check(raw: &str) -> Result<(String, Option<String>), String> {
    let bad = |why: &str| format!("invalid URL `{}`: {why}", crate::util::text::printable(&redact(raw)));
    let Some(parts) = UrlParts::split(raw) else {
        return Err(bad("it needs a scheme, e.g. http://host/path or https://host/path"));
    };
    if !parts.scheme.eq_ignore_ascii_case("http") && !parts.scheme.eq_ignore_ascii_case("https") {
        return Err(bad("a target is http://, https://, tcp://HOST:PORT or unix:///PATH"));
    }
    // The URL standard drops tabs and newlines and escapes spaces; a user who typed them made a mistake.
    if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("it has a space or a control character in it"));
    }
    let (host, port) = split_port(parts.host);
    if host.is_empty() || host == "[]" {
        return Err(bad("it has no host"));
    }
    if let Some(port) = port {
        self::port(port).map_err(|why| bad(&why))?;
    }
    let mut url = Url::parse(raw).map_err(|e| bad(&e.to_string()))?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("it has no host"));
    }
    url.set_fragment(None);
    let credentials = match (url.username(), url.password()) {
        ("", None) => None,
        (user, None) => Some(percent_decode(user)),
        (user, Some(password)) => Some(format!("{}:{}", percent_decode(user), percent_decode(password))),
    };
    // Infallible for an http(s) URL with a host.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    Ok((url.into(), credentials))
}

/// A target that is up when a connection opens, with nothing sent: `tcp://HOST:PORT` or
/// `unix:///PATH` (issue 50's ports). The connection itself is `net/probe.rs`'s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// A host name or IP literal (an IPv6 one without its brackets) and a port.
    Tcp { host: String, port: u16 },
    /// An absolute socket path.
    Unix(std::path::PathBuf),
}

impl Endpoint {
    /// The scheme, as the JSON log's `scheme` says it.
    pub(crate) fn scheme(&self) -> &'static str {
        match self {
            Endpoint::Tcp { .. } => "tcp",
            Endpoint::Unix(_) => "unix",
        }
    }

    /// What `-v` and messages name: `127.0.0.1:5432`, `[::1]:5432`, `/run/pg.sock`.
    pub(crate) fn address(&self) -> String {
        match self {
            Endpoint::Tcp { host, port } if host.contains(':') => format!("[{host}]:{port}"),
            Endpoint::Tcp { host, port } => format!("{host}:{port}"),
            Endpoint::Unix(path) => crate::util::text::printable(&path.to_string_lossy()),
        }
    }
}

/// A `tcp://` or `unix://` URL checked (`None`: another scheme, for [`check`]): a `tcp://` URL
/// has a host and a port from 1 to 65535, and no user, path other than `/`, query or
/// fragment; a `unix://` URL has an empty host and an absolute path (`unix:///run/pg.sock`).
pub(crate) fn endpoint(raw: &str) -> Option<Result<Endpoint, String>> {
    let parts = UrlParts::split(raw)?;
    let tcp = parts.scheme.eq_ignore_ascii_case("tcp");
    if !tcp && !parts.scheme.eq_ignore_ascii_case("unix") {
        return None;
    }
    let bad = |why: &str| format!("invalid URL `{}`: {why}", crate::util::text::printable(&redact(raw)));
    if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some(Err(bad("it has a space or a control character in it")));
    }
    if parts.userinfo.is_some() {
        return Some(Err(bad("a user or password means nothing here (nothing is sent)")));
    }
    if !tcp {
        if !parts.host.is_empty() {
            return Some(Err(bad("give an absolute socket path: unix:///PATH (three slashes)")));
        }
        if parts.rest.contains(['?', '#']) || !parts.rest.starts_with('/') || parts.rest.len() < 2 {
            return Some(Err(bad("give an absolute socket path: unix:///PATH, with no query or fragment")));
        }
        return Some(Ok(Endpoint::Unix(std::path::PathBuf::from(percent_decode(parts.rest)))));
    }
    if !matches!(parts.rest, "" | "/") {
        return Some(Err(bad("a tcp:// URL is HOST:PORT only: no path, query or fragment")));
    }
    let (host, port) = split_port(parts.host);
    let bracketed = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    if bracketed.is_none() && host.contains(':') {
        return Some(Err(bad("an IPv6 address goes in brackets: tcp://[::1]:PORT")));
    }
    let host = bracketed.unwrap_or(host);
    if host.is_empty() {
        return Some(Err(bad("it has no host")));
    }
    if host.contains('%') && bracketed.is_none() {
        return Some(Err(bad("a host name has no %-escapes")));
    }
    let Some(port) = port else { return Some(Err(bad("it needs a port: tcp://HOST:PORT"))) };
    let port = match self::port(port) {
        Ok(port) => port,
        Err(why) => return Some(Err(bad(&why))),
    };
    if parts.host.starts_with('[') && host.parse::<std::net::Ipv6Addr>().is_err() {
        return Some(Err(bad("the address in brackets is no IPv6 address")));
    }
    Some(Ok(Endpoint::Tcp { host: host.to_ascii_lowercase(), port }))
}

/// An `http(s)://` URL's host (an IPv6 literal without its brackets) and port, the default
/// one filled in: where `--start` looks for another server before it starts its own.
pub(crate) fn host_port(url: &str) -> Option<(String, u16)> {
    let (_, host, port) = origin(url)?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).map(str::to_string).unwrap_or(host);
    Some((host, port))
}

/// `host:port` -> (`host`, `port`); an IPv6 literal keeps its brackets.
fn split_port(authority: &str) -> (&str, Option<&str>) {
    let after_brackets = if authority.starts_with('[') { authority.find(']').map_or(0, |i| i + 1) } else { 0 };
    match authority[after_brackets..].rfind(':') {
        Some(i) => (&authority[..after_brackets + i], Some(&authority[after_brackets + i + 1..])),
        None => (authority, None),
    }
}

/// A port as written in a URL: digits only, 1 to 65535.
pub(crate) fn port(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(n) if n >= 1 && text.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(format!("port `{}` is not a number from 1 to 65535", crate::util::text::printable(text))),
    }
}

/// The port a scheme uses when the URL names none.
pub(crate) fn default_port(scheme: &str) -> u16 {
    if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 }
}

/// (scheme, host, port), lowercased, with the default port filled in: two
/// URLs are on the same origin when these are equal.
fn origin(url: &str) -> Option<(String, String, u16)> {
    let url = Url::parse(url).ok()?;
    let host = url.host_str()?.to_ascii_lowercase();
    let port = url.port_or_known_default().unwrap_or_else(|| default_port(url.scheme()));
    Some((url.scheme().to_string(), host, port))
}

/// `scheme://host:port` of a URL, the default port spelled out, so that
/// `http://H/a` and `http://h:80/b` share one bucket and one breaker.
pub(crate) fn origin_key(url: &str) -> String {
    match origin(url) {
        Some((scheme, host, port)) => format!("{scheme}://{host}:{port}"),
        None => url.to_string(),
    }
}

/// Whether two URLs are on the same origin.
pub(crate) fn same_origin(a: &str, b: &str) -> bool {
    matches!((origin(a), origin(b)), (Some(a), Some(b)) if a == b)
}

/// Resolves a `Location` (or any URL reference a server sends) against the
/// URL that sent it, by RFC 3986 section 5.2 (`..` and `.` removed); `None`
/// when it is empty or not http(s). The fragment never goes on the wire.
pub(crate) fn resolve(base: &str, location: &str) -> Option<String> {
    let location = location.trim();
    if location.is_empty() {
        return None;
    }
    let mut url = Url::parse(base).ok()?.join(location).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return None;
    }
    url.set_fragment(None);
    Some(url.into())
}

/// `url` with each of `pairs` set in its query string: the user's own
/// pairs kept as written, a pair of the same name replaced. `url` as it is
/// when it does not parse.
pub(crate) fn with_query(url: &str, pairs: &[(&str, String)]) -> String {
    let Ok(mut parsed) = Url::parse(url) else { return url.to_string() };
    let ours = |part: &&str| pairs.iter().any(|(name, _)| part.split('=').next() == Some(*name));
    let users = parsed.query().unwrap_or_default().split('&').filter(|part| !part.is_empty() && !ours(part));
    let set = pairs.iter().map(|(name, value)| {
        format!("{name}={}", url::form_urlencoded::byte_serialize(value.as_bytes()).collect::<String>())
    });
    let query: Vec<String> = users.map(str::to_string).chain(set).collect();
    parsed.set_query(Some(&query.join("&")));
    parsed.into()
}

/// `url` without the pairs named `name` in its query string, the user's
/// others kept as written. `url` as it is when it does not parse.
pub(crate) fn without_query(url: &str, name: &str) -> String {
    let Ok(mut parsed) = Url::parse(url) else { return url.to_string() };
    let Some(query) = parsed.query() else { return url.to_string() };
    let kept: Vec<&str> =
        query.split('&').filter(|part| !part.is_empty() && part.split('=').next() != Some(name)).collect();
    let kept = kept.join("&");
    parsed.set_query((!kept.is_empty()).then_some(kept.as_str()));
    parsed.into()
}

/// Whether a header name or query key names a secret (see [`SECRET_WORDS`]).
/// An idempotency key is no secret: it is shown so that a failed run can be
/// re-run with the same key.
pub(crate) fn is_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|word| name.contains(word)) && !name.contains("idempotency")
}

/// A header value for display.
pub(crate) fn redact_header<'a>(name: &str, value: &'a str) -> &'a str {
    if is_secret(name) { REDACTED } else { value }
}

/// A `Name: value` header as typed (`-H`), for messages: the value of a secret one redacted.
/// A line missing its colon (`Authorization Bearer ...`) is judged by its first word.
pub(crate) fn redact_header_line(line: &str) -> String {
    match line.split_once(':') {
        Some((name, _)) if is_secret(name.trim()) => format!("{name}: {REDACTED}"),
        Some(_) => line.to_string(),
        None => {
            let name = line.trim_start().split([' ', '\t', ';', '=']).next().unwrap_or_default();
            match is_secret(name) && line.trim() != name {
                true => format!("{name} {REDACTED}"),
                false => line.to_string(),
            }
        }
    }
}

/// The URL with any `user:password@` replaced, for messages.
pub(crate) fn redact_userinfo(url: &str) -> String {
    match UrlParts::split(url) {
        Some(parts) if parts.userinfo.is_some() => {
            format!("{}://{REDACTED}@{}{}", parts.scheme, parts.host, parts.rest)
        }
        _ => url.to_string(),
    }
}

/// The URL for display: userinfo and the values of secret-looking query keys redacted.
pub(crate) fn redact(url: &str) -> String {
    let url = redact_userinfo(url);
    let Some((base, query)) = url.split_once('?') else { return url };
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if is_secret(key) => format!("{key}={REDACTED}"),
            _ => pair.to_string(),
        })
        .collect();
    format!("{base}?{}", query.join("&"))
}

/// `%XX` escapes decoded; anything else kept as it is.
pub(crate) fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

/// `message` quoting no part of `secret` (a value that may carry one, such
/// as a filter or a body from the environment): every quoted fragment
/// (between backticks or single quotes) that is part of it, as given or as
/// [`printable`](crate::util::text::printable) escapes it, and the whole of
/// it anywhere, become [`REDACTED`].
pub(crate) fn unquoted(message: &str, secret: &str) -> String {
    let forms = [secret.to_string(), crate::util::text::printable(secret)];
    // A fragment cut short by `shorten` ends in `…`.
    let part = |fragment: &str| {
        let fragment = fragment.trim_end_matches('…');
        !fragment.is_empty() && forms.iter().any(|form| form.contains(fragment))
    };
    let (mut out, mut rest) = (String::with_capacity(message.len()), message);
    while let Some(open) = rest.find(['`', '\'']) {
        let quote = &rest[open..=open];
        let Some(length) = rest[open + 1..].find(quote) else { break };
        let fragment = &rest[open + 1..open + 1 + length];
        out.push_str(&rest[..=open]);
        out.push_str(if part(fragment) { REDACTED } else { fragment });
        out.push_str(quote);
        rest = &rest[open + length + 2..];
    }
    out.push_str(rest);
    forms.iter().filter(|form| !form.is_empty()).fold(out, |out, form| out.replace(form.as_str(), REDACTED))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_and_sockets_are_checked_as_usage() {
        let ok = |raw: &str| endpoint(raw).and_then(Result::ok);
        let tcp = |host: &str, port| Some(Endpoint::Tcp { host: host.into(), port });
        assert_eq!(ok("tcp://127.0.0.1:5432"), tcp("127.0.0.1", 5432));
        assert_eq!(ok("tcp://[::1]:5432/"), tcp("::1", 5432));
        assert_eq!(ok("TCP://DB:6379"), tcp("db", 6379));
        assert_eq!(ok("unix:///run/pg.sock"), Some(Endpoint::Unix("/run/pg.sock".into())));
        assert_eq!(ok("tcp://[::1]:5432").map(|e| e.address()).as_deref(), Some("[::1]:5432"));
        assert!(endpoint("http://h/").is_none() && endpoint("nothing").is_none());
        for bad in [
            "tcp://h",
            "tcp://h:0",
            "tcp://h:65536",
            "tcp://h:x",
            "tcp://:80",
            "tcp://h:80/path",
            "tcp://h:80?q",
            "tcp://h:80#f",
            "tcp://u:p@h:80",
            "tcp://[nope]:80",
            "tcp://::1",
            "tcp://::1:5432",
            "tcp://127.0.0.1:5432:22",
            "tcp://%31%32%37.0.0.1:80",
            "unix://run/pg.sock",
            "unix://",
            "unix:///",
            "unix:///run/pg.sock?x",
        ] {
            assert!(endpoint(bad).is_some_and(|e| e.is_err()), "{bad}");
        }
        let said = endpoint("tcp://u:secret@h:80").and_then(Result::err).unwrap_or_default();
        assert!(!said.contains("secret"), "{said}");
    }

    #[test]
    fn a_query_pair_is_dropped_and_the_users_others_kept() {
        let table = [
            ("http://h/pods?watch=1&resourceVersion=5", "http://h/pods?watch=1"),
            ("http://h/pods?resourceVersion=5&watch=1&resourceVersion=6", "http://h/pods?watch=1"),
            ("http://h/pods?resourceVersion=5", "http://h/pods"),
            ("http://h/pods?resourceVersionMatch=x", "http://h/pods?resourceVersionMatch=x"),
            ("http://h/pods", "http://h/pods"),
        ];
        for (url, dropped) in table {
            assert_eq!(without_query(url, "resourceVersion"), dropped, "{url}");
        }
    }

    #[test]
    fn query_pairs_are_set_beside_the_users_own() {
        let pairs = [("index", "42".to_string()), ("wait", "72s".to_string())];
        let set = |url: &str| with_query(url, &pairs);
        assert_eq!(set("http://h/v1/kv/a"), "http://h/v1/kv/a?index=42&wait=72s");
        assert_eq!(set("http://h/kv?recurse=1&index=3"), "http://h/kv?recurse=1&index=42&wait=72s");
        assert_eq!(set("http://h/kv?q=a%20b&wait=1s"), "http://h/kv?q=a%20b&index=42&wait=72s");
        assert_eq!(set("not a url"), "not a url");
    }

    #[test]
    fn urls_are_checked_and_credentials_split_off() {
        let ok = |raw: &str| check(raw);
        assert_eq!(ok("http://127.0.0.1:8080/a?b=1"), Ok(("http://127.0.0.1:8080/a?b=1".into(), None)));
        assert_eq!(ok("https://h/x#frag"), Ok(("https://h/x".into(), None)));
        assert_eq!(ok("HTTP://h:65535/"), Ok(("http://h:65535/".into(), None)));
        assert_eq!(ok("http://[::1]:9/"), Ok(("http://[::1]:9/".into(), None)));
        assert_eq!(
            ok("http://al%40ice:s3cret@127.0.0.1/"),
            Ok(("http://127.0.0.1/".into(), Some("al@ice:s3cret".into())))
        );
        for bad in ["127.0.0.1:8080", "ftp://h/", "http://", "http:// spaces/", "http://h/\n", "http://:80/"] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
        let Err(e) = check("ftp://bob:pw@h/") else { panic!("ftp is refused") };
        assert!(!e.contains("pw"), "{e}");
    }

    #[test]
    fn ports_outside_1_to_65535_are_refused() {
        for bad in ["http://127.0.0.1:0/", "http://127.0.0.1:99999/", "http://h:65536/", "http://h:-1/", "http://h:/"] {
            let Err(e) = check(bad) else { panic!("{bad} is accepted") };
            assert!(e.contains("is not a number from 1 to 65535"), "{bad}: {e}");
        }
    }

    #[test]
    fn internationalised_hosts_become_punycode() {
        assert_eq!(check("http://bücher.example/a"), Ok(("http://xn--bcher-kva.example/a".into(), None)));
        assert_eq!(check("https://ÄÖ.test:8443/"), Ok(("https://xn--4ca0b.test:8443/".into(), None)));
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        assert_eq!(origin_key("http://127.0.0.1:8080/a?b=1"), "http://127.0.0.1:8080");
        assert_eq!(origin_key("HTTP://Example.COM/x"), "http://example.com:80");
        assert_eq!(origin_key("https://example.com/"), "https://example.com:443");
        assert_eq!(origin_key("http://[::1]:9/"), "http://[::1]:9");
        assert!(same_origin("http://H:80/a", "http://h/b"));
        assert!(!same_origin("http://h/", "https://h/"));
        assert!(!same_origin("http://h:1/", "http://h:2/"));
    }

    #[test]
    fn locations_resolve_against_the_url_that_sent_them() {
        let base = "http://h:8080/a/b?q=1";
        let rows = [
            ("https://other/x", Some("https://other/x")),
            ("//other:9/y", Some("http://other:9/y")),
            ("/root", Some("http://h:8080/root")),
            ("c", Some("http://h:8080/a/c")),
            ("?z=2", Some("http://h:8080/a/b?z=2")),
            ("../ops/1", Some("http://h:8080/ops/1")),
            ("./c/../d#f", Some("http://h:8080/a/d")),
            ("ftp://x/", None),
            ("", None),
        ];
        for (location, want) in rows {
            assert_eq!(resolve(base, location).as_deref(), want, "{location}");
        }
        // RFC 3986 section 5.2's own example of the issue: `..` is resolved, not sent.
        assert_eq!(resolve("http://h/v1/jobs/new", "../ops/1").as_deref(), Some("http://h/v1/ops/1"));
    }

    #[test]
    fn urls_are_redacted() {
        assert_eq!(redact("http://h/p?a=1&token=abc&api_key=k"), "http://h/p?a=1&token=<redacted>&api_key=<redacted>");
        assert_eq!(redact("https://bob:pw@h/x"), "https://<redacted>@h/x");
        assert_eq!(redact("http://h/plain"), "http://h/plain");
    }

    #[test]
    fn secret_headers_are_redacted() {
        for name in ["Authorization", "proxy-authorization", "Cookie", "SET-COOKIE", "X-Auth-Token", "X-Api-Key"] {
            assert_eq!(redact_header(name, "s3cret"), "<redacted>", "{name}");
        }
        assert_eq!(redact_header("Accept", "application/json"), "application/json");
        assert_eq!(redact_header("Idempotency-Key", "run-42"), "run-42", "shown, so a run can be repeated");
    }

    #[test]
    fn a_secret_is_quoted_in_no_part() {
        let secret = ".token == \"s3cret\" and bogus_fn";
        let cases = [
            (
                "--until: `.token == \"s3cret\" and bogus_fn` does not compile: undefined filter `bogus_fn`",
                "--until: `<redacted>` does not compile: undefined filter `<redacted>`",
            ),
            ("--until: `.token == \"s3c…` does not compile", "--until: `<redacted>` does not compile"),
            ("--until: value of header `Idempotency-Key` is bad", "--until: value of header `Idempotency-Key` is bad"),
            ("no quotes but .token == \"s3cret\" and bogus_fn here", "no quotes but <redacted> here"),
            ("an open `quote never closed", "an open `quote never closed"),
        ];
        for (message, said) in cases {
            assert_eq!(unquoted(message, secret), said, "{message}");
        }
        assert_eq!(unquoted("--user: `a\\rb` is bad", "a\rb"), "--user: `<redacted>` is bad");
    }
}
