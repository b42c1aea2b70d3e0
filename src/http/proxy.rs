//! HTTP proxies: which one a request uses, from the environment as curl
//! reads it (`http_proxy`, `https_proxy`, `all_proxy`, `no_proxy`). The
//! proxy is set per request in ureq's request-level config, so every hop of
//! a redirect is checked against `no_proxy` again; the connection to it is
//! made in `transport/connect.rs` (an `https://` URL through ureq's own `CONNECT`
//! tunnel, an `http://` one in absolute form).

use ureq::http::Uri;
use ureq::http::uri::Scheme;
use ureq::{Proxy, ProxyProtocol};

/// The variables that name the proxy of http:// and of https:// URLs, first found wins.
const HTTP_VARS: [&str; 4] = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"];
const HTTPS_VARS: [&str; 4] = ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"];

/// An HTTP (or HTTPS) proxy, not a SOCKS one.
fn is_http(proxy: &Proxy) -> bool {
    matches!(proxy.protocol(), ProxyProtocol::Http | ProxyProtocol::Https)
}

/// A proxy, and how messages name it: its URL (redacted) and the variable it came from.
#[derive(Debug)]
struct Named {
    proxy: Proxy,
    shown: String,
}

/// The run's proxy settings, read once from the environment.
#[derive(Debug)]
pub(crate) struct Proxies {
    http: Option<Named>,
    https: Option<Named>,
    /// `no_proxy` entries, lowercased, without a leading `*.` or `.` (nor an
    /// IPv6 address's brackets); `*` exempts every host.
    exempt: Vec<String>,
}

impl Proxies {
    /// `https_proxy` for https, `http_proxy` for http (either case), else
    /// `all_proxy`; `no_proxy` exempts hosts. Unlike curl, the uppercase
    /// `HTTP_PROXY` is honoured (the man page promises it). A value ureq
    /// cannot parse is ignored.
    pub(crate) fn from_env() -> Proxies {
        Proxies::from_lookup(|name| std::env::var(name).ok())
    }

    /// No proxy for any URL (`--unix-socket`).
    pub(crate) fn none() -> Proxies {
        Proxies { http: None, https: None, exempt: Vec::new() }
    }

    fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Proxies {
        // A SOCKS proxy never reaches ureq, which is built without it (and
        // would panic): `check_env` has refused it for the URLs given.
        let proxy = |names: [&str; 4]| {
            let (name, value) =
                names.iter().find_map(|name| Some((name, var(name).filter(|v| !v.trim().is_empty())?)))?;
            let proxy = Proxy::new(value.trim()).ok().filter(is_http)?;
            Some(Named { proxy, shown: format!("{} ({name})", crate::util::url::redact_userinfo(value.trim())) })
        };
        let exempt = ["no_proxy", "NO_PROXY"].iter().find_map(|name| var(name)).unwrap_or_default();
        let exempt = exempt
            .split(',')
            .map(|entry| entry.trim().trim_start_matches("*.").trim_start_matches('.'))
            .map(|entry| entry.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase())
            .filter(|entry| !entry.is_empty())
            .collect();
        Proxies { http: proxy(HTTP_VARS), https: proxy(HTTPS_VARS), exempt }
    }

    /// The proxy variable each of `urls` would go through, checked before
    /// anything is sent: one that is no proxy URL, or names a SOCKS proxy
    /// (not built in), is a usage error rather than a proxy silently skipped.
    pub(crate) fn check_env(urls: &[&str]) -> Result<(), String> {
        Proxies::check_lookup(urls, |name| std::env::var(name).ok())
    }

    fn check_lookup(urls: &[&str], var: impl Fn(&str) -> Option<String>) -> Result<(), String> {
        let exempt = Proxies::from_lookup(&var);
        for url in urls {
            let https = url.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://"));
            let names = if https { HTTPS_VARS } else { HTTP_VARS };
            let Some((name, value)) =
                names.iter().find_map(|n| var(n).filter(|v| !v.trim().is_empty()).map(|v| (n, v)))
            else {
                continue;
            };
            let host = url.parse::<Uri>().ok().and_then(|uri| uri.host().map(str::to_owned)).unwrap_or_default();
            if exempt.is_exempt(&host) {
                continue;
            }
            let shown = crate::util::url::redact_userinfo(value.trim());
            match Proxy::new(value.trim()) {
                Err(_) => return Err(format!("{name}: `{shown}` is not a proxy URL; use e.g. http://host:3128")),
                Ok(proxy) if !is_http(&proxy) => {
                    return Err(format!(
                        "{name}: `{shown}` is a SOCKS proxy, which poll does not speak; use an HTTP proxy"
                    ));
                }
                Ok(_) => {}
            }
        }
        Ok(())
    }

    /// The proxy a request to `uri` goes through, if any.
    pub(crate) fn for_uri(&self, uri: &Uri) -> Option<&Proxy> {
        self.named(uri).map(|named| &named.proxy)
    }

    /// The proxy a request to `uri` goes through, as messages name it:
    /// `http://proxy:3128 (HTTP_PROXY)`, credentials redacted.
    pub(crate) fn shown_for(&self, uri: &Uri) -> Option<&str> {
        self.named(uri).map(|named| named.shown.as_str())
    }

    fn named(&self, uri: &Uri) -> Option<&Named> {
        let proxy = if uri.scheme() == Some(&Scheme::HTTPS) { &self.https } else { &self.http };
        proxy.as_ref().filter(|_| !self.is_exempt(uri.host().unwrap_or("")))
    }

    /// `no_proxy` as curl reads it: the host itself or any name under it.
    fn is_exempt(&self, host: &str) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        self.exempt.iter().any(|entry| {
            entry == "*"
                || host == *entry
                || host.strip_suffix(entry.as_str()).is_some_and(|under| under.ends_with('.'))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Environment variables, as (name, value).
    type Vars<'a> = &'a [(&'a str, &'a str)];

    fn proxies(vars: Vars) -> Proxies {
        Proxies::from_lookup(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string()))
    }

    fn chosen(proxies: &Proxies, url: &str) -> Option<String> {
        let Ok(uri) = url.parse::<Uri>() else { panic!("valid url {url}") };
        proxies.for_uri(&uri).map(|p| format!("{}:{}", p.host(), p.port()))
    }

    #[test]
    fn proxies_are_chosen_by_scheme_as_curl() {
        let both = [("http_proxy", "http://h:1"), ("HTTPS_PROXY", "http://s:2"), ("ALL_PROXY", "http://a:3")];
        let rows: [(Vars, &str, Option<&str>); 9] = [
            (&both, "http://x/", Some("h:1")),
            (&both, "https://x/", Some("s:2")),
            (&both[2..], "http://x/", Some("a:3")),
            (&both[2..], "HTTPS://x/", Some("a:3")),
            (&[("HTTP_PROXY", "h:1")], "http://x/", Some("h:1")),
            (&[("HTTP_PROXY", "h:1")], "https://x/", None),
            (&[("http_proxy", " "), ("HTTP_PROXY", "http://u:4")], "http://x/", Some("u:4")),
            (&[("http_proxy", "ftp://h:1")], "http://x/", None),
            (&[], "http://x/", None),
        ];
        for (vars, url, want) in rows {
            assert_eq!(chosen(&proxies(vars), url).as_deref(), want, "{vars:?} {url}");
        }
    }

    #[test]
    fn a_socks_or_unparsable_proxy_that_would_be_used_is_a_usage_error() {
        let check = |vars: Vars, url: &str| {
            Proxies::check_lookup(&[url], |name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string()))
        };
        let socks = [("ALL_PROXY", "socks5://bob:pw@h:1080")];
        let Err(e) = check(&socks, "http://x/") else { panic!("socks is refused") };
        assert!(e.contains("is a SOCKS proxy") && e.contains("ALL_PROXY") && !e.contains("pw"), "{e}");
        assert!(check(&[("https_proxy", "http://[bad")], "https://x/").is_err_and(|e| e.contains("not a proxy URL")));
        // Not used for this URL: not checked.
        assert_eq!(check(&[("https_proxy", "socks5://h:1080")], "http://x/"), Ok(()));
        assert_eq!(check(&[("ALL_PROXY", "socks5://h:1080"), ("NO_PROXY", "x")], "http://x/"), Ok(()));
        assert_eq!(check(&[("http_proxy", "http://h:3128")], "http://x/"), Ok(()));
        // And a SOCKS proxy never reaches ureq, which would panic on it.
        assert_eq!(chosen(&proxies(&socks), "http://x/"), None);
    }

    #[test]
    fn no_proxy_exempts_hosts_and_names_under_them() {
        let rows = [
            ("localhost", "http://localhost:8080/", true),
            ("other.test, .Example.com", "http://api.example.com/", true),
            ("*.example.com", "http://example.com/", true),
            ("example.com", "http://badexample.com/", false),
            ("example.com", "http://example.com.evil/", false),
            ("*", "https://anything/", true),
            ("::1", "http://[::1]:9/", true),
            ("", "http://localhost/", false),
        ];
        for (list, url, exempt) in rows {
            let proxies = proxies(&[("http_proxy", "http://p:1"), ("https_proxy", "http://p:1"), ("NO_PROXY", list)]);
            assert_eq!(chosen(&proxies, url).is_none(), exempt, "no_proxy={list:?} {url}");
        }
    }
}
