//! The only network code: one ureq `Agent` for the whole run and [`Client::fetch`],
//! which sends the request, follows redirects by the contract's rules and reads
//! the body to the end. It returns plain data; no ureq type leaves this module.
//! Each request (each redirect hop too) takes its proxy from `Proxies`; see
//! `src/proxy.rs` for how an `http://` URL reaches an HTTP proxy.

use std::io::{ErrorKind, Read};
use std::time::{Duration, Instant};

use ureq::http::{self, Uri};

use crate::config::RequestSpec;
use crate::policy::Failure;
use crate::proxy::{self, Proxies};

/// A response read to its last byte (decoded when compressed).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// An attempt that produced no usable response: its class, and the detail for people.
#[derive(Debug, Clone)]
pub struct Fault {
    pub failure: Failure,
    pub detail: String,
}

impl Fault {
    fn new(failure: Failure, detail: impl Into<String>) -> Fault {
        Fault { failure, detail: detail.into() }
    }
}

/// Headers that must not follow a redirect to another origin (as curl).
const CREDENTIAL_HEADERS: [&str; 3] = ["authorization", "proxy-authorization", "cookie"];

/// How much of a redirect's own body is read, so its connection can be reused.
const REDIRECT_BODY_LIMIT: u64 = 64 * 1024;

/// Sends the run's one request, over and over, on one connection pool.
pub struct Client {
    agent: ureq::Agent,
    spec: RequestSpec,
    proxies: Proxies,
}

impl Client {
    pub fn new(spec: RequestSpec) -> Client {
        let mut tls = ureq::tls::TlsConfig::builder().disable_verification(spec.insecure);
        if let Some(pem) = &spec.cacert {
            tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&trusted_roots(pem)));
        }
        let config = ureq::Agent::config_builder()
            // 4xx and 5xx are answers the policy reads, not errors.
            .http_status_as_error(false)
            // Redirects are followed here, to drop credentials by origin as curl does.
            .max_redirects(0)
            .timeout_connect(Some(spec.connect_timeout))
            .timeout_global(Some(spec.request_timeout))
            .user_agent(spec.user_agent.as_str())
            .accept_encoding("gzip, deflate, br")
            // Not ureq's default, its own reading of the environment (ALL_PROXY
            // first, for every scheme): `send` sets one per request, from `proxies`.
            .proxy(None)
            .tls_config(tls.build())
            .allow_non_standard_methods(true)
            .build();
        let connector = proxy::Connector::new(config.clone());
        let agent = ureq::Agent::with_parts(config, connector, LiteralResolver::default());
        Client { agent, spec, proxies: Proxies::from_env() }
    }

    /// One attempt: send, follow redirects, read the body. `budget` bounds the
    /// whole attempt (the smaller of `--request-timeout` and the time left).
    pub fn fetch(&self, budget: Duration) -> Result<Reply, Fault> {
        let started = Instant::now();
        let mut url = self.spec.url.clone();
        let mut method = self.spec.method.clone();
        let mut body = self.spec.body.as_deref();
        let mut headers: Vec<&(String, String)> = self.spec.headers.iter().collect();
        let mut hops = 0;
        loop {
            let left = budget.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(Fault::new(Failure::Timeout, "request timed out"));
            }
            let mut response = self.send(&method, &url, &headers, body, left)?;
            let status = response.status().as_u16();
            let location = response.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_owned);
            let location = location.filter(|_| is_redirect(status) && self.spec.max_redirects > 0);
            let Some(location) = location else {
                return self.read(response);
            };
            // Drain the redirect's body so its connection goes back to the pool.
            let _ = response.body_mut().with_config().limit(REDIRECT_BODY_LIMIT).read_to_vec();
            hops += 1;
            if hops > self.spec.max_redirects {
                let n = self.spec.max_redirects;
                return Err(Fault::new(Failure::TooManyRedirects, format!("more than {n} redirects (--max-redirs)")));
            }
            let from: Uri = url.parse().map_err(|_| Fault::new(Failure::BadRedirect, "bad redirect"))?;
            let next = resolve(&from, &location).ok_or_else(|| {
                Fault::new(
                    Failure::BadRedirect,
                    format!("redirect to an unusable Location `{}`", location.escape_debug()),
                )
            })?;
            let to: Uri = next.parse().map_err(|_| {
                Fault::new(Failure::BadRedirect, format!("redirect to an invalid URL `{}`", next.escape_debug()))
            })?;
            if origin(&from) != origin(&to) {
                headers.retain(|(name, _)| !CREDENTIAL_HEADERS.iter().any(|c| name.eq_ignore_ascii_case(c)));
            }
            // As curl: 303 turns anything but HEAD into GET; 301/302 turn POST into GET.
            let to_get = status == 303 && method != "HEAD" || matches!(status, 301 | 302) && method == "POST";
            if to_get {
                method = "GET".into();
                body = None;
                headers.retain(|(name, _)| !name.eq_ignore_ascii_case("content-type"));
            }
            url = next;
        }
    }

    fn send(
        &self,
        method: &str,
        url: &str,
        headers: &[&(String, String)],
        body: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<http::Response<ureq::Body>, Fault> {
        let mut builder = http::Request::builder().method(method).uri(url);
        for (name, value) in headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let invalid = |e: http::Error| Fault::new(Failure::BadRedirect, format!("cannot build the request: {e}"));
        let result = match body {
            Some(bytes) => {
                let request = builder.body(bytes).map_err(invalid)?;
                let proxy = self.proxies.for_uri(request.uri()).cloned();
                let request = self.agent.configure_request(request).timeout_global(Some(timeout)).proxy(proxy).build();
                self.agent.run(request)
            }
            None => {
                let request = builder.body(()).map_err(invalid)?;
                let proxy = self.proxies.for_uri(request.uri()).cloned();
                let request = self.agent.configure_request(request).timeout_global(Some(timeout)).proxy(proxy).build();
                self.agent.run(request)
            }
        };
        result.map_err(|e| match classify(&e) {
            // An end of stream before any reply is a dropped connection, not a short body.
            Fault { failure: Failure::Truncated, detail } => Fault::new(Failure::Reset, detail),
            fault => fault,
        })
    }

    fn read(&self, mut response: http::Response<ureq::Body>) -> Result<Reply, Fault> {
        let status = response.status().as_u16();
        let headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(name, value)| (name.as_str().to_string(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
            .collect();
        let limit = self.spec.max_body;
        let raw = response.body_mut().with_config().limit(limit).read_to_vec().map_err(|e| classify(&e))?;
        let deflated = headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("content-encoding") && v.trim().eq_ignore_ascii_case("deflate"));
        let body = if deflated { inflate(&raw, limit)? } else { raw };
        Ok(Reply { status, headers, body })
    }
}

/// `--cacert` adds to the built-in roots, as the contract says: an internal API
/// signed by a private CA may still redirect to a public host (a presigned
/// download URL, say). ureq takes one list, so the Mozilla roots ureq uses by
/// default come along from `webpki-root-certs`, the same list as certificates.
fn trusted_roots(pem: &[u8]) -> Vec<ureq::tls::Certificate<'static>> {
    let extra = ureq::tls::parse_pem(pem).filter_map(|item| match item {
        Ok(ureq::tls::PemItem::Certificate(cert)) => Some(cert),
        _ => None,
    });
    let builtin =
        webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().map(|der| ureq::tls::Certificate::from_der(der.as_ref()));
    extra.chain(builtin).collect()
}

/// Answers IP literals at once and leaves names to ureq's resolver. With a
/// timeout set, ureq resolves on a new thread for every request, even one that
/// then reuses a pooled connection: a thread per poll, most of a tight poll's cost.
#[derive(Debug, Default)]
struct LiteralResolver(ureq::unversioned::resolver::DefaultResolver);

impl ureq::unversioned::resolver::Resolver for LiteralResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        let literal = uri.authority().and_then(|authority| {
            let host = authority.host().trim_start_matches('[').trim_end_matches(']');
            let ip: std::net::IpAddr = host.parse().ok()?;
            let default_port = if uri.scheme_str() == Some("https") { 443 } else { 80 };
            Some(std::net::SocketAddr::new(ip, authority.port_u16().unwrap_or(default_port)))
        });
        match literal {
            Some(address) => {
                let mut addresses = self.0.empty();
                addresses.push(address);
                Ok(addresses)
            }
            None => self.0.resolve(uri, config, timeout),
        }
    }
}

/// `Content-Encoding: deflate` is zlib-wrapped by the RFC, raw deflate by some
/// servers; try both. The decoded size is bounded by `--max-body`.
fn inflate(raw: &[u8], limit: u64) -> Result<Vec<u8>, Fault> {
    let decode = |reader: &mut dyn Read| -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        reader.take(limit.saturating_add(1)).read_to_end(&mut out)?;
        Ok(out)
    };
    let body = decode(&mut flate2::read::ZlibDecoder::new(raw))
        .or_else(|_| decode(&mut flate2::read::DeflateDecoder::new(raw)))
        .map_err(|e| Fault::new(Failure::Malformed, format!("deflate body does not decode: {e}")))?;
    if body.len() as u64 > limit {
        return Err(Fault::new(
            Failure::BodyTooLarge,
            format!("decoded body is larger than --max-body ({limit} bytes)"),
        ));
    }
    Ok(body)
}

fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// (scheme, host, port) with the scheme's default port filled in.
pub fn origin(uri: &Uri) -> (String, String, u16) {
    let scheme = uri.scheme_str().unwrap_or("").to_ascii_lowercase();
    let default_port = if scheme == "https" { 443 } else { 80 };
    let host = uri.host().unwrap_or("").to_ascii_lowercase();
    (scheme, host, uri.port_u16().unwrap_or(default_port))
}

/// Resolves a `Location` against the URL that answered with it.
fn resolve(base: &Uri, location: &str) -> Option<String> {
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
    let folder = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    let folder = if folder.is_empty() { "/" } else { folder };
    if location.starts_with('?') {
        return Some(format!("{scheme}://{authority}{path}{location}"));
    }
    Some(format!("{scheme}://{authority}{folder}{location}"))
}

/// Sorts a ureq error into the contract's classes.
fn classify(error: &ureq::Error) -> Fault {
    use ureq::Error as E;
    let detail = error.to_string();
    let failure = match error {
        E::Timeout(ureq::Timeout::Connect) => Failure::ConnectTimeout,
        E::Timeout(ureq::Timeout::Resolve) => Failure::Dns,
        E::Timeout(_) => Failure::Timeout,
        E::HostNotFound => Failure::Dns,
        E::Io(io) if io.to_string().starts_with("failed to lookup address information") => Failure::Dns,
        E::Io(io) if io.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()).is_some() => Failure::Tls,
        E::Io(io) => match io.kind() {
            ErrorKind::ConnectionRefused => Failure::Refused,
            ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe => Failure::Reset,
            ErrorKind::UnexpectedEof => Failure::Truncated,
            ErrorKind::TimedOut | ErrorKind::WouldBlock => Failure::Timeout,
            ErrorKind::InvalidData => Failure::Malformed,
            _ => Failure::Reset,
        },
        E::ConnectionFailed => Failure::Refused,
        E::Tls(_) | E::Rustls(_) | E::Pem(_) | E::TlsRequired => Failure::Tls,
        E::TooManyRedirects => Failure::TooManyRedirects,
        E::RedirectFailed | E::BadUri(_) | E::Http(_) => Failure::BadRedirect,
        E::BodyExceedsLimit(_) => Failure::BodyTooLarge,
        E::Protocol(_) | E::LargeResponseHeader(..) | E::Decompress(..) => Failure::Malformed,
        E::BodyStalled => Failure::Timeout,
        // ureq's words: "proxy server responded 403/403", or "did not respond" (it hung up).
        E::ConnectProxyFailed(reason) if reason.starts_with("proxy server responded") => Failure::ProxyRefused,
        E::ConnectProxyFailed(_) => Failure::Reset,
        _ => Failure::Malformed,
    };
    let detail = match (failure, error) {
        (Failure::BodyTooLarge, _) => "body larger than --max-body".to_string(),
        (Failure::ProxyRefused, E::ConnectProxyFailed(reason)) => {
            let code = reason.trim_start_matches(|c: char| !c.is_ascii_digit()).get(..3).unwrap_or("");
            let words = code.parse().ok().and_then(|c| http::StatusCode::from_u16(c).ok()?.canonical_reason());
            format!("CONNECT answered with {code} {}", words.unwrap_or("")).trim_end().to_string()
        }
        _ => detail,
    };
    Fault::new(failure, detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_locations() {
        let Ok(base) = "http://h:8080/a/b?q=1".parse::<Uri>() else { panic!("valid base") };
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
            assert_eq!(resolve(&base, location).as_deref(), want, "{location}");
        }
    }

    #[test]
    fn cacert_adds_to_the_builtin_roots() {
        let Ok(pem) = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cert.pem")) else {
            panic!("test fixture")
        };
        let roots = trusted_roots(&pem);
        assert_eq!(roots.len(), 1 + webpki_root_certs::TLS_SERVER_ROOT_CERTS.len());
        assert!(roots.len() > 100, "the Mozilla roots come along");
        let Some(Ok(ureq::tls::PemItem::Certificate(ours))) = ureq::tls::parse_pem(&pem).next() else {
            panic!("fixture holds a certificate")
        };
        assert_eq!(roots[0].der(), ours.der());
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        let o = |s: &str| s.parse::<Uri>().map(|u| origin(&u)).ok();
        assert_eq!(o("http://H:80/a"), o("http://h/b"));
        assert_ne!(o("http://h/"), o("https://h/"));
        assert_ne!(o("http://h:1/"), o("http://h:2/"));
    }
}
