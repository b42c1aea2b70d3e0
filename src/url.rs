//! URLs: checking the ones a user gives, their origin, resolving a `Location`
//! against them, and redaction for display, with the one list of names that
//! mark a header or a query key as a secret.

use ureq::http::Uri;

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
    let bad = |why: &str| format!("invalid URL `{}`: {why}", redact_userinfo(raw));
    let Some(parts) = UrlParts::split(raw) else {
        return Err(bad("it needs a scheme, e.g. http://host/path or https://host/path"));
    };
    if !parts.scheme.eq_ignore_ascii_case("http") && !parts.scheme.eq_ignore_ascii_case("https") {
        return Err(bad("only http:// and https:// are supported"));
    }
    let (host, port) = split_port(parts.host);
    if host.is_empty() || host == "[]" {
        return Err(bad("it has no host"));
    }
    let host = if host.is_ascii() {
        host.to_string()
    } else {
        idna::domain_to_ascii(host).map_err(|_| bad(&format!("`{host}` is not a valid host name")))?
    };
    let port = match port {
        None => String::new(),
        Some(port) => format!(":{}", self::port(port).map_err(|why| bad(&why))?),
    };
    let path = parts.rest.split('#').next().unwrap_or_default();
    let url = format!("{}://{host}{port}{path}", parts.scheme.to_ascii_lowercase());
    let uri: Uri = url.parse().map_err(|e| bad(&format!("{e}")))?;
    if uri.host().is_none_or(str::is_empty) {
        return Err(bad("it has no host"));
    }
    Ok((url, parts.userinfo.map(percent_decode)))
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
        _ => Err(format!("port `{}` is not a number from 1 to 65535", crate::text::printable(text))),
    }
}

/// The port a scheme uses when the URL names none.
pub(crate) fn default_port(scheme: &str) -> u16 {
    if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 }
}

/// (scheme, host, port), lowercased, with the default port filled in: two
/// URLs are on the same origin when these are equal.
pub(crate) fn origin(uri: &Uri) -> (String, String, u16) {
    let scheme = uri.scheme_str().unwrap_or("").to_ascii_lowercase();
    let host = uri.host().unwrap_or("").to_ascii_lowercase();
    let port = uri.port_u16().unwrap_or_else(|| default_port(&scheme));
    (scheme, host, port)
}

/// `scheme://host:port` of a URL, the default port spelled out, so that
/// `http://H/a` and `http://h:80/b` share one bucket and one breaker.
pub(crate) fn origin_key(url: &str) -> String {
    let Ok(uri) = url.parse::<Uri>() else { return url.to_string() };
    let (scheme, host, port) = origin(&uri);
    format!("{scheme}://{host}:{port}")
}

/// Whether two URLs are on the same origin.
pub(crate) fn same_origin(a: &str, b: &str) -> bool {
    matches!((a.parse::<Uri>(), b.parse::<Uri>()), (Ok(a), Ok(b)) if origin(&a) == origin(&b))
}

/// Resolves a `Location` (or any URL reference a server sends) against the
/// URL that sent it; `None` when it is empty or not http(s).
pub(crate) fn resolve(base: &str, location: &str) -> Option<String> {
    let base: Uri = base.parse().ok()?;
    let location = location.trim();
    let scheme = base.scheme_str()?;
    let authority = base.authority()?.as_str();
    if location.is_empty() {
        return None;
    }
    if let Some((s, _)) = location.split_once("://")
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        let lower = s.to_ascii_lowercase();
        return (lower == "http" || lower == "https").then(|| location.to_string());
    }
    if let Some(rest) = location.strip_prefix("//") {
        return Some(format!("{scheme}://{rest}"));
    }
    if location.starts_with('/') {
        return Some(format!("{scheme}://{authority}{location}"));
    }
    let path = base.path();
    if location.starts_with('?') {
        return Some(format!("{scheme}://{authority}{path}{location}"));
    }
    let folder = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    let folder = if folder.is_empty() { "/" } else { folder };
    Some(format!("{scheme}://{authority}{folder}{location}"))
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
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ("ftp://x/", None),
            ("", None),
        ];
        for (location, want) in rows {
            assert_eq!(resolve(base, location).as_deref(), want, "{location}");
        }
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
}
