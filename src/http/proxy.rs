//! HTTP proxies: which one a request uses (from the environment, as curl reads
//! it), and the one thing ureq cannot do itself: send an `http://` request to
//! the proxy in absolute form (`GET http://host/path HTTP/1.1`), as curl does.
//! An `https://` request goes through ureq's own `CONNECT` tunnel.
//!
//! The proxy is set per request in ureq's request-level config, so every hop of
//! a redirect is checked against `no_proxy` again. [`ProxyConnector`] then sees it
//! in [`ConnectionDetails::config`]: for an `http://` target it connects to the
//! proxy itself and wraps the connection in [`AbsoluteForm`], which rewrites
//! the request line ureq writes (ureq 3 only writes origin form). ureq's pool
//! keys connections by target and proxy, so a wrapped connection only ever
//! carries requests for the target it was made for.

use std::fmt;

use base64::Engine as _;
use ureq::http::Uri;
use ureq::http::uri::Scheme;
use ureq::unversioned::transport::{
    self, Buffers, ConnectProxyConnector, ConnectionDetails, Connector as _, NextTimeout, Transport,
};
use ureq::{Proxy, ProxyProtocol};

use crate::http::tls;
use crate::http::wire::TcpConnector;

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

/// ureq's `DefaultConnector` (with the TLS of `tls.rs`), except for an `http://` target whose request
/// config names an HTTP proxy: that one connects to the proxy and speaks
/// absolute form to it, where ureq would open a `CONNECT` tunnel.
#[derive(Debug)]
pub(crate) struct ProxyConnector {
    /// ureq's CONNECT tunnel, then TCP and TLS: for a request through a proxy.
    tunnelled: Box<dyn transport::Connector<(), Out = Box<dyn Transport>>>,
    /// TCP and TLS, for a request with no proxy: a chain of its own, so that
    /// the tunnel's stack frame (kilobytes) is not part of every connect.
    straight: Box<dyn transport::Connector<(), Out = Box<dyn Transport>>>,
    /// The agent's config, which names no proxy, for the connection to the
    /// proxy itself: plain TCP, or TLS for an `https://` proxy URL.
    direct: ureq::config::Config,
}

impl ProxyConnector {
    /// `agent` is the config the agent is built with; it must name no proxy.
    /// `cacert` is `--cacert`'s PEM, trusted besides the system's roots.
    pub(crate) fn new(agent: ureq::config::Config, cacert: Option<Vec<u8>>) -> ProxyConnector {
        // ureq's DefaultConnector, with the socket of `wire.rs` and the TLS of `tls.rs` (SOCKS is refused
        // before any request).
        let straight = ().chain(TcpConnector).chain(tls::TlsConnector::new(cacert.clone()));
        let tunnelled =
            ().chain(ConnectProxyConnector::default()).chain(TcpConnector).chain(tls::TlsConnector::new(cacert));
        ProxyConnector { tunnelled: Box::new(tunnelled), straight: Box::new(straight), direct: agent }
    }
}

impl transport::Connector for ProxyConnector {
    type Out = Box<dyn Transport>;

    fn connect(&self, details: &ConnectionDetails, chained: Option<()>) -> Result<Option<Self::Out>, ureq::Error> {
        let proxy =
            details.config.proxy().filter(|p| matches!(p.protocol(), ProxyProtocol::Http | ProxyProtocol::Https));
        let Some(proxy) = proxy.filter(|_| details.uri.scheme() == Some(&Scheme::HTTP)) else {
            return match details.config.proxy() {
                Some(_) => self.tunnelled.connect(details, chained),
                None => self.straight.connect(details, chained),
            };
        };
        self.absolute_form(details, proxy).map(Some)
    }
}

impl ProxyConnector {
    /// A connection to `proxy` that speaks absolute form for `details.uri`. Not
    /// inlined: its stack frame would be part of every connect.
    #[inline(never)]
    fn absolute_form(&self, details: &ConnectionDetails, proxy: &Proxy) -> Result<Box<dyn Transport>, ureq::Error> {
        // The target's name is left to the proxy (ureq resolves nothing for a
        // proxied request); the proxy's own resolves within the connect timeout,
        // as in ureq's CONNECT connector.
        let addrs = details.resolver.resolve(proxy.uri(), &self.direct, details.timeout)?;
        let to_proxy = ConnectionDetails {
            uri: proxy.uri(),
            addrs,
            config: &self.direct,
            request_level: false,
            resolver: details.resolver,
            now: details.now,
            timeout: details.timeout,
            current_time: details.current_time.clone(),
            run_connector: details.run_connector.clone(),
            register_shutdown: details.register_shutdown.clone(),
        };
        let transport = self.straight.connect(&to_proxy, None)?.ok_or(ureq::Error::ConnectionFailed)?;
        Ok(Box::new(AbsoluteForm::new(transport, details.uri, proxy)))
    }
}

/// A connection to an HTTP proxy on which ureq's origin-form request heads
/// (`GET /path HTTP/1.1`) go out in absolute form (`GET http://host/path
/// HTTP/1.1`), followed by `Proxy-Authorization` when the proxy URL has
/// credentials. Bodies and everything read pass through untouched.
pub(crate) struct AbsoluteForm {
    inner: Box<dyn Transport>,
    /// `http://host[:port]` of the target, put before each origin-form target.
    origin: String,
    /// The whole `Proxy-Authorization: Basic ...\r\n` line; never in `Debug`.
    credentials: Option<String>,
    /// The next bytes ureq transmits start a request head: true on a new
    /// connection, and again once the response to the last request began.
    at_head: bool,
}

impl AbsoluteForm {
    fn new(inner: Box<dyn Transport>, target: &Uri, proxy: &Proxy) -> AbsoluteForm {
        // The target's userinfo became `Authorization` (ureq-proto); it is not part of the URL sent.
        let authority = target.authority().map_or("", |a| a.as_str());
        let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
        let credentials = (proxy.username().is_some() || proxy.password().is_some()).then(|| {
            let pair = format!("{}:{}", proxy.username().unwrap_or(""), proxy.password().unwrap_or(""));
            format!("Proxy-Authorization: Basic {}\r\n", base64::engine::general_purpose::STANDARD.encode(pair))
        });
        AbsoluteForm { inner, origin: format!("http://{host}"), credentials, at_head: true }
    }
}

impl Transport for AbsoluteForm {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        if !self.at_head {
            return self.inner.transmit_output(amount, timeout);
        }
        self.at_head = false;
        let chunk = &self.inner.buffers().output()[..amount];
        let head = absolute_form(chunk, &self.origin, self.credentials.as_deref()).ok_or_else(|| {
            ureq::Error::Io(std::io::Error::other("request head without a request line for the proxy"))
        })?;
        // The rewritten head can be longer than ureq's output buffer: it goes
        // through that buffer in pieces, each with the timeout ureq gave.
        for piece in head.chunks(self.inner.buffers().output().len().max(1)) {
            self.inner.buffers().output()[..piece.len()].copy_from_slice(piece);
            self.inner.transmit_output(piece.len(), timeout)?;
        }
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let progress = self.inner.await_input(timeout)?;
        // Once a final response begins, ureq sends nothing more for this
        // request (it reads only after sending the body, or instead of it),
        // so what it sends next is the next request on this connection.
        if final_response_began(self.inner.buffers().input()) {
            self.at_head = true;
        }
        Ok(progress)
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    /// No TLS to the target: it is an `http://` URL (a TLS connection to an
    /// `https://` proxy is a hop, as in ureq's CONNECT tunnel).
    fn is_tls(&self) -> bool {
        false
    }
}

impl fmt::Debug for AbsoluteForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbsoluteForm").field("origin", &self.origin).field("at_head", &self.at_head).finish()
    }
}

/// The first bytes of a request head with its request line in absolute form
/// and `credentials` (the whole header line) after it. ureq-proto writes the
/// request line first and whole (`METHOD /target HTTP/1.1\r\n`), so `chunk` holds it.
fn absolute_form(chunk: &[u8], origin: &str, credentials: Option<&str>) -> Option<Vec<u8>> {
    let line_end = chunk.windows(2).position(|w| w == b"\r\n")? + 2;
    let target = chunk[..line_end].iter().position(|&b| b == b' ')? + 1;
    let (line, headers) = chunk.split_at(line_end);
    // A `-H 'Proxy-Authorization: ...'` of the user's wins, as in curl (sought in this chunk only).
    let credentials = credentials.filter(|_| !has_header(headers, b"proxy-authorization")).unwrap_or("");
    let mut head = Vec::with_capacity(chunk.len() + origin.len() + credentials.len());
    head.extend_from_slice(&line[..target]);
    head.extend_from_slice(origin.as_bytes());
    head.extend_from_slice(&line[target..]);
    head.extend_from_slice(credentials.as_bytes());
    head.extend_from_slice(headers);
    Some(head)
}

/// Whether `input`, the unread bytes, starts with the status line of a final
/// response, after any complete interim ones: a `100 Continue` comes between
/// a head and its body (`Expect: 100-continue`), so it does not end a request.
fn final_response_began(mut input: &[u8]) -> bool {
    loop {
        // `HTTP/1.1 200` is the shortest status line that tells.
        if input.len() < 12 || !input.starts_with(b"HTTP/") {
            return false;
        }
        if input[9] != b'1' {
            return true;
        }
        match input.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(end) => input = &input[end + 4..],
            None => return false,
        }
    }
}

/// Whether the header lines in `headers` (up to the blank line) include `name`, any case.
fn has_header(headers: &[u8], name: &[u8]) -> bool {
    headers.split(|&b| b == b'\n').take_while(|line| *line != b"\r" && !line.is_empty()).any(|line| {
        line.len() > name.len() && line[..name.len()].eq_ignore_ascii_case(name) && line[name.len()] == b':'
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use ureq::unversioned::transport::LazyBuffers;

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

    #[test]
    fn interim_responses_do_not_end_a_request() {
        let rows: [(&[u8], bool); 7] = [
            (b"HTTP/1.1 200 OK\r\n", true),
            (b"HTTP/1.0 407 Proxy Authentication Required\r\n", true),
            (b"HTTP/1.1 100 Continue\r\n\r\n", false),
            (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", true),
            (b"HTTP/1.1 2", false),
            (b"HTTP/1.1 103 Early", false),
            (b"{\"body\":1}", false),
        ];
        for (input, want) in rows {
            assert_eq!(final_response_began(input), want, "{}", String::from_utf8_lossy(input));
        }
    }

    /// A transport that records what is sent and plays scripted input, with small buffers.
    #[derive(Debug)]
    struct Fake {
        buffers: LazyBuffers,
        sent: Arc<Mutex<Vec<u8>>>,
        replies: Vec<&'static [u8]>,
    }

    impl Transport for Fake {
        fn buffers(&mut self) -> &mut dyn Buffers {
            &mut self.buffers
        }

        fn transmit_output(&mut self, amount: usize, _: NextTimeout) -> Result<(), ureq::Error> {
            let bytes = self.buffers.output()[..amount].to_vec();
            crate::util::sync::lock(&self.sent).extend(bytes);
            Ok(())
        }

        fn await_input(&mut self, _: NextTimeout) -> Result<bool, ureq::Error> {
            let reply = self.replies.remove(0);
            self.buffers.input_append_buf()[..reply.len()].copy_from_slice(reply);
            self.buffers.input_appended(reply.len());
            Ok(true)
        }

        fn is_open(&mut self) -> bool {
            true
        }
    }

    /// Sends `chunks` as ureq would (each written into the output buffer, then
    /// transmitted), after reading one scripted reply where a chunk is `None`.
    fn wire(proxy: &str, chunks: &[Option<&[u8]>], replies: Vec<&'static [u8]>) -> String {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let fake = Fake { buffers: LazyBuffers::new(64, 48), sent: Arc::clone(&sent), replies };
        let Ok(target) = "http://user:pw@example.test:8080/".parse::<Uri>() else { panic!("valid target") };
        let Ok(proxy) = Proxy::new(proxy) else { panic!("valid proxy") };
        let mut transport = AbsoluteForm::new(Box::new(fake), &target, &proxy);
        for chunk in chunks {
            match chunk {
                Some(bytes) => {
                    transport.buffers().output()[..bytes.len()].copy_from_slice(bytes);
                    assert!(transport.transmit_output(bytes.len(), NextTimeout::default()).is_ok());
                }
                None => {
                    assert!(transport.await_input(NextTimeout::default()).is_ok());
                    let unread = transport.buffers().input().len();
                    transport.buffers().input_consume(unread);
                }
            }
        }
        String::from_utf8_lossy(&crate::util::sync::lock(&sent)).into_owned()
    }

    #[test]
    fn heads_go_in_absolute_form_and_bodies_untouched() {
        const GET: &[u8] = b"GET /a?b HTTP/1.1\r\nHost: x\r\n\r\n";
        const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        // The second head comes after a response, on the same connection: rewritten too.
        let sent = wire("http://p:1", &[Some(GET), None, Some(GET)], vec![OK]);
        let want = "GET http://example.test:8080/a?b HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(sent, want.repeat(2));

        // A body after `100 Continue` is not a head, even when it looks like one.
        let post = b"POST / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n".as_slice();
        let sent = wire("http://p:1", &[Some(post), None, Some(GET)], vec![b"HTTP/1.1 100 Continue\r\n\r\n"]);
        let head = "POST http://example.test:8080/ HTTP/1.1\r\nExpect: 100-continue\r\n\r\n";
        assert_eq!(sent, format!("{head}{}", String::from_utf8_lossy(GET)));

        // A head in two chunks: only the first holds the request line.
        let sent = wire("http://p:1", &[Some(b"GET / HTTP/1.1\r\n"), Some(b"Host: x\r\n\r\n")], vec![]);
        assert_eq!(sent, "GET http://example.test:8080/ HTTP/1.1\r\nHost: x\r\n\r\n");
    }

    #[test]
    fn proxy_credentials_follow_the_request_line_in_pieces() {
        // Longer than the 48-byte output buffer once rewritten.
        const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        let sent = wire("http://us%40r:p%3Ass@p:1", &[Some(GET)], vec![]);
        let basic = base64::engine::general_purpose::STANDARD.encode("us@r:p:ss");
        assert_eq!(
            sent,
            format!("GET http://example.test:8080/ HTTP/1.1\r\nProxy-Authorization: Basic {basic}\r\nHost: x\r\n\r\n")
        );

        // The user's own header wins.
        let own = b"GET / HTTP/1.1\r\nproxy-authorization: X\r\n\r\n".as_slice();
        let sent = wire("http://u:p@p:1", &[Some(own)], vec![]);
        assert_eq!(sent, "GET http://example.test:8080/ HTTP/1.1\r\nproxy-authorization: X\r\n\r\n");
    }

    #[test]
    fn debug_hides_the_proxy_credentials() {
        let Ok(target) = "http://t/".parse::<Uri>() else { panic!("valid target") };
        let Ok(proxy) = Proxy::new("http://user:secret@p:1") else { panic!("valid proxy") };
        let fake = Fake { buffers: LazyBuffers::new(8, 8), sent: Arc::default(), replies: vec![] };
        let shown = format!("{:?}", AbsoluteForm::new(Box::new(fake), &target, &proxy));
        assert!(
            !shown.contains("secret")
                && !shown.contains(&base64::engine::general_purpose::STANDARD.encode("user:secret"))
        );
    }
}
