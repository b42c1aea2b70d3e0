//! The one place HTTP requests are made: what a request is ([`Request`]),
//! one ureq `Agent` per loop (its connections are `transport/connect.rs`'s), and
//! [`Client::fetch`], which sends a request, follows redirects as curl does
//! and reads the body to the end. It returns plain data; no ureq type leaves
//! this module. Each request (each redirect hop too) takes its proxy from
//! `Proxies` (`http/proxy.rs`).

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::io::{BufReader, ErrorKind, Read};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ureq::http;

use crate::http::cookies::Jar;
use crate::http::decode::{self, Corrupt, Undecodable};
use crate::http::events::{Broken, Event, Events, Framing};
use crate::http::proxy::Proxies;
use crate::http::transport::connect::{self, Unresolved};
use crate::http::transport::wire::Silence;
use crate::net::roots;
use crate::net::tls::{CertScope, RefusedAfterRequest, Trust};
use crate::net::unix::{NoPermission, NotASocket};
use crate::rules::attempt::Failure;
use crate::util::headers::Headers;
use crate::util::url;

// The defaults of the request flags: `cli/flags.rs` shows these.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
pub(crate) const MAX_REDIRECTS: u32 = 10;
pub(crate) const MAX_BODY: u64 = 16 << 20;
/// `--idle-timeout`: under `--watch`, the longest silence of a reply.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Whether a header carries a credential: dropped by a redirect to another
/// origin (as curl drops `Authorization` and `Cookie`), and sent to a
/// `--submit` status URL on another origin only with `--location-trusted`.
/// The same list as redacts it in every output (`X-Api-Key`, `PRIVATE-TOKEN`, ...).
pub(crate) fn is_credential(name: &str) -> bool {
    url::is_secret(name)
}

/// One request, as it goes on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub method: String,
    pub url: String,
    /// Extra headers, in order; `Authorization` from `-u` included.
    pub headers: Headers,
    pub body: Option<Vec<u8>>,
    /// A 301/302/303 answer is the reply itself, not followed: a `--submit`'s
    /// "see other" names its status monitor, and its `Retry-After` says when to look.
    pub see_other_is_the_answer: bool,
}

impl Request {
    /// The GET that polls a `--submit`'s operation's status at `url`: no body, none of
    /// the submit's body headers or idempotency key (`drop`), and credentials
    /// only on the submit's origin unless `trusted` (`--location-trusted`).
    pub(crate) fn status_poll(&self, url: &str, drop: Option<&str>, trusted: bool) -> Request {
        let keep_credentials = trusted || url::same_origin(&self.url, url);
        let mut headers = self.headers.clone();
        headers.remove("content-type");
        if let Some(drop) = drop {
            headers.remove(drop);
        }
        headers.retain(|name, _| keep_credentials || !is_credential(name));
        Request { method: "GET".into(), url: url.to_string(), headers, body: None, see_other_is_the_answer: false }
    }

    /// The GET of a `--paginate` page at `url` after the first (this request): no body
    /// (as `gh api --paginate`), none of its body headers, its idempotency key (`drop`) or
    /// the user's own validators (`-H If-None-Match` is about the first page), and the
    /// credentials only on its origin unless `trusted` (`--location-trusted`).
    pub(crate) fn page(&self, url: &str, drop: Option<&str>, trusted: bool) -> Request {
        let mut page = self.status_poll(url, drop, trusted);
        for validator in ["if-none-match", "if-modified-since"] {
            page.headers.remove(validator);
        }
        page
    }
}

/// How every request of a run is sent.
#[derive(Debug, Clone)]
pub(crate) struct ClientConfig {
    pub user_agent: String,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    pub max_redirects: u32,
    pub max_body: u64,
    /// What TLS trusts: the system's roots and `--cacert`'s, or with `-k`
    /// anything; and the client certificate of `--cert`.
    pub trust: Arc<Trust>,
    /// `--location-trusted`: the client certificate goes to every origin,
    /// not only to the origin of each loop's URL ([`CertScope`]).
    pub certificate_everywhere: bool,
    /// `--unix-socket`: every connection goes to this socket (see `src/net/unix.rs`).
    pub unix_socket: Option<std::path::PathBuf>,
    /// `--watch`: replies are read as streams, with no `--request-timeout`,
    /// and `idle` (`--idle-timeout`; `None` for 0) bounds every silence.
    pub watch: Option<Idle>,
}

/// `--idle-timeout` under `--watch`: `None` when the silence of a reply is not bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Idle(pub Option<Duration>);

/// A response read to its last byte (decoded when compressed), or to
/// `--max-body` when its status may have its body cut ([`Client::fetch`]).
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub status: u16,
    pub headers: Headers,
    pub body: Vec<u8>,
    /// The body was larger than `--max-body`, and is its first `--max-body` bytes.
    pub cut: bool,
}

/// An attempt that produced no usable response: its class, and the detail for people.
#[derive(Debug, Clone)]
pub(crate) struct Fault {
    pub failure: Failure,
    pub detail: String,
    /// The proxy that could not be reached, as messages name it, when it is the proxy's failure.
    pub proxy: Option<String>,
    /// [`Failure::ProxyRefused`]: the status the proxy answered `CONNECT` with.
    pub proxy_status: Option<u16>,
    /// A redirect answered before this failure, at a hop after the first: the URL was reached.
    pub redirected: bool,
}

impl Fault {
    pub(crate) fn new(failure: Failure, detail: impl Into<String>) -> Fault {
        Fault { failure, detail: detail.into(), proxy: None, proxy_status: None, redirected: false }
    }
}

/// The largest response head read (status line and headers). ureq's input
/// buffer must hold a whole head, and each connection keeps one, so it is
/// the head limit and no more: 100 URLs at once cost 100 of them.
const MAX_RESPONSE_HEAD: usize = 32 << 10;

/// The smallest output buffer: request heads and the body, in chunks, go
/// through it. A page: each connection keeps one, and a poll's head is short.
const MIN_OUTPUT_BUFFER: usize = 4 << 10;

/// The largest `Cookie` header sent back: servers refuse longer header lines
/// (nginx's default is 8 KiB), and the request head must fit its buffer.
const MAX_COOKIE_HEADER: usize = 8 << 10;

/// The largest value of the other headers `poll` adds from what a server or
/// the environment gave it ([`ADDED`]): the same line servers take (nginx's
/// 8 KiB, Apache's 8190 bytes). A user's own `-H` has no limit of its own.
const MAX_ADDED_HEADER: usize = 8 << 10;

/// The headers [`MAX_ADDED_HEADER`] bounds: an event stream's `Last-Event-ID`
/// (an SSE `id:` sent back) and `TRACESTATE`'s `tracestate`.
const ADDED: [&str; 2] = ["Last-Event-ID", "tracestate"];

/// The failure of a header `poll` adds that is larger than it sends, or `None`.
fn added_too_large(headers: &Headers) -> Option<Fault> {
    ADDED.into_iter().find_map(|name| {
        let len = headers.get(name)?.len();
        let detail = format!("the `{name}` header is {len} bytes, more than the {MAX_ADDED_HEADER} poll sends");
        (len > MAX_ADDED_HEADER).then(|| Fault::new(Failure::Unsendable, detail))
    })
}

/// The failure of the cookies a server set when they are too large to send back, naming the largest.
fn too_large(cookies: &str) -> Fault {
    let largest = cookies.split("; ").max_by_key(|cookie| cookie.len()).unwrap_or_default();
    let name = largest.split('=').next().unwrap_or_default();
    let detail = format!(
        "the cookies the server set are {} bytes, too large to send back (`{}` alone is {} bytes)",
        cookies.len(),
        crate::util::text::printable(&crate::util::text::cut(name)),
        largest.len()
    );
    Fault::new(Failure::Credential, detail)
}

/// The largest output buffer, whatever the request's head: the bound of a
/// request a run can be given (headers from files and the URL are bounded too).
const MAX_OUTPUT_BUFFER: usize = 16 << 20;

/// The most a body's `Content-Length` sets aside before a byte of it came.
const BODY_ROOM_AT_ONCE: u64 = 1 << 20;

/// How much of a redirect's own body is read, so its connection can be reused.
const REDIRECT_BODY_LIMIT: u64 = 64 * 1024;

/// Sends a loop's requests, over and over, on one connection pool.
pub(crate) struct Client {
    /// Made again, with a larger output buffer, when a request's head outgrows it ([`Client::room_for`]).
    agent: RefCell<ureq::Agent>,
    /// The agent's output buffer: the largest request head it can write, with room to spare.
    room: Cell<usize>,
    spec: ClientConfig,
    /// Where the client certificate goes.
    scope: CertScope,
    proxies: Proxies,
    /// The cookies replies set, sent back on this loop's later requests.
    jar: Jar,
    /// The last URL sent, as parsed for ureq: a loop sends the same one again and again.
    parsed: RefCell<Option<(String, http::Uri)>>,
    /// `--watch`: how long each read of a reply may wait, shared with every connection.
    silence: Option<Silence>,
}

impl Client {
    /// A client for a loop that sends `request` (and requests like it).
    pub(crate) fn new(spec: &ClientConfig, request: &Request) -> Client {
        let room = output_buffer(spec, request);
        // Over a Unix socket no proxy is used, as in curl.
        let proxies = if spec.unix_socket.is_some() { Proxies::none() } else { Proxies::from_env() };
        let silence = spec.watch.map(|Idle(idle)| Silence::new(idle));
        let scope = match spec.certificate_everywhere {
            true => CertScope::Everywhere,
            false => CertScope::OriginOf(request.url.clone()),
        };
        let agent = RefCell::new(agent(spec, &scope, room, silence.clone()));
        let (spec, jar, parsed) = (spec.clone(), Jar::default(), RefCell::default());
        Client { agent, room: Cell::new(room), spec, scope, proxies, jar, parsed, silence }
    }

    /// `--watch`: no read of a reply, its head or its body, waits past `at`
    /// (when `--stall` would fire; `None`: only `--idle-timeout` bounds them).
    pub(crate) fn wake_by(&self, at: Option<Instant>) {
        if let Some(silence) = &self.silence {
            silence.wake_by(at);
        }
    }

    /// Room for a request head of `head` bytes ([`head_size`]): the agent
    /// is made again with an output buffer twice that (as [`output_buffer`]
    /// sizes the first) when its own is smaller. ureq writes a head that
    /// does not fit only in part, so none may go to it. A head larger than
    /// any buffer is a request that cannot be sent.
    fn room_for(&self, head: usize) -> Result<(), Fault> {
        if head > MAX_OUTPUT_BUFFER {
            let detail = format!("its head is {head} bytes, more than the {MAX_OUTPUT_BUFFER} poll sends");
            return Err(Fault::new(Failure::Unsendable, detail));
        }
        let room = head.saturating_mul(2).clamp(MIN_OUTPUT_BUFFER, MAX_OUTPUT_BUFFER);
        if room > self.room.get() {
            *self.agent.borrow_mut() = agent(&self.spec, &self.scope, room, self.silence.clone());
            self.room.set(room);
        }
        Ok(())
    }

    /// `-v`'s line on the client certificate, when there is one.
    pub(crate) fn certificate_note(&self) -> Option<String> {
        let identity = self.spec.trust.identity.as_ref()?;
        let to = match &self.scope {
            CertScope::Everywhere => "every origin (--location-trusted)".to_string(),
            CertScope::OriginOf(own) => url::origin_key(own),
        };
        Some(format!("client certificate: `{}` (SHA-256 {}), for {to}", identity.file, identity.fingerprint()))
    }

    /// Whether a request to `url` presents the client certificate.
    fn presents_certificate(&self, url: &str) -> bool {
        self.spec.trust.identity.is_some() && self.scope.covers(url)
    }

    /// The proxy a request to `url` goes through, as messages name it.
    pub(crate) fn proxy_for(&self, url: &str) -> Option<&str> {
        self.proxies.shown_for(&self.uri(url)?)
    }

    /// Where the trusted roots came from, once per process after the first
    /// TLS connection loaded them, for `-v`.
    pub(crate) fn roots_note(&self) -> Option<String> {
        roots::note()
    }

    /// One attempt: send, follow redirects, read the body. `budget` bounds the
    /// whole attempt (the smaller of `--request-timeout` and the time left).
    /// A reply whose status `cuts` names (one a status list decides on, whatever
    /// its body) has a body over `--max-body` cut there; any other is refused.
    pub(crate) fn fetch(
        &self,
        request: &Request,
        budget: Duration,
        cuts: &dyn Fn(u16) -> bool,
    ) -> Result<Reply, Fault> {
        let response = self.follow(request, Some(budget))?;
        self.read(response, cuts)
    }

    /// `--watch`: one request, whose 2xx reply is handed over as a
    /// [`Stream`] of events as they arrive; any other reply is read whole,
    /// as [`Client::fetch`] reads it. `budget` (the time left, if there is a
    /// deadline) bounds the whole request; `--idle-timeout` bounds each
    /// silence (the transport's reads).
    pub(crate) fn open(
        &self,
        request: &Request,
        budget: Option<Duration>,
        cuts: &dyn Fn(u16) -> bool,
    ) -> Result<Opened, Fault> {
        let response = self.follow(request, budget)?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return self.read(response, cuts).map(Opened::Reply);
        }
        let headers = headers_of(&response);
        let framing = Framing::of(headers.get("content-type"));
        let decoded = decode::reader(headers.get("content-encoding"), response.into_body().into_reader());
        let events = Events::new(BufReader::with_capacity(STREAM_BUFFER, decoded), framing, self.spec.max_body);
        Ok(Opened::Stream(Stream { status, headers, events, silence: self.silence.clone() }))
    }

    /// Sends `request` and follows its redirects as curl does, within
    /// `budget` (`None`: no bound); the reply's body is left unread.
    fn follow(&self, request: &Request, budget: Option<Duration>) -> Result<http::Response<ureq::Body>, Fault> {
        let started = Instant::now();
        // Borrowed until a redirect changes them: most attempts have none.
        let mut url = Cow::Borrowed(request.url.as_str());
        let mut method = Cow::Borrowed(request.method.as_str());
        let mut body = request.body.as_deref();
        let mut headers = Cow::Borrowed(&request.headers);
        let mut hops = 0;
        loop {
            let left = match hops {
                0 => budget,
                _ => budget.map(|budget| budget.saturating_sub(started.elapsed())),
            };
            if left.is_some_and(|left| left.is_zero()) {
                return Err(Fault::new(Failure::Timeout, "request timed out"));
            }
            let cookies = self.jar.header(&url);
            if let Some(cookies) = cookies.as_deref().filter(|cookies| cookies.len() > MAX_COOKIE_HEADER) {
                return Err(too_large(cookies));
            }
            // Every header counted before a byte goes: the request is sent whole, or not at all.
            if let Some(fault) = added_too_large(&headers) {
                return Err(fault);
            }
            self.room_for(head_size(&self.spec.user_agent, &method, &url, &headers, cookies.as_deref()))?;
            let sent = self.send(&method, &url, &headers, cookies.as_deref(), body, left);
            // Only a Location can make a request that cannot be built a redirect's failure.
            let mut response = sent.map_err(|fault| match fault.failure {
                Failure::BadRedirect if hops == 0 => Fault { failure: Failure::Unsendable, ..fault },
                _ if hops == 0 => fault,
                // The URL answered with a redirect: reached, whatever its Location does.
                _ => {
                    let to = format!("after a redirect to {}", url::redact(&url));
                    let detail = match fault.failure.traits().shows_detail {
                        true => format!("{}, {to}", fault.detail),
                        false => to,
                    };
                    Fault { detail, redirected: true, ..fault }
                }
            })?;
            let set_cookies = response.headers().get_all("set-cookie").iter().filter_map(|v| v.to_str().ok());
            self.jar.store(&url, set_cookies);
            let status = response.status().as_u16();
            let location = response.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_owned);
            let see_other = request.see_other_is_the_answer && is_see_other(status);
            let location = location.filter(|_| is_redirect(status) && self.spec.max_redirects > 0 && !see_other);
            let Some(location) = location else {
                return Ok(response);
            };
            // Drain the redirect's body so its connection goes back to the pool.
            let _ = response.body_mut().with_config().limit(REDIRECT_BODY_LIMIT).read_to_vec();
            hops += 1;
            if hops > self.spec.max_redirects {
                let n = self.spec.max_redirects;
                return Err(Fault::new(Failure::TooManyRedirects, format!("more than {n} redirects (--max-redirs)")));
            }
            let next = url::resolve(&url, &location).ok_or_else(|| {
                Fault::new(
                    Failure::BadRedirect,
                    format!("redirect to an unusable Location `{}`", location.escape_debug()),
                )
            })?;
            if next.parse::<http::Uri>().is_err() {
                let detail = format!("redirect to an invalid URL `{}`", next.escape_debug());
                return Err(Fault::new(Failure::BadRedirect, detail));
            }
            if !url::same_origin(&url, &next) {
                headers.to_mut().retain(|name, _| !is_credential(name));
            }
            // As curl: 303 turns anything but HEAD into GET; 301/302 turn POST into GET.
            let to_get = status == 303 && method != "HEAD" || matches!(status, 301 | 302) && method == "POST";
            if to_get {
                method = Cow::Borrowed("GET");
                body = None;
                headers.to_mut().remove("content-type");
            }
            url = Cow::Owned(next);
        }
    }

    /// One hop. `cookies` (the jar's) join a user's own `Cookie` header in one.
    fn send(
        &self,
        method: &str,
        url: &str,
        headers: &Headers,
        cookies: Option<&str>,
        body: Option<&[u8]>,
        timeout: Option<Duration>,
    ) -> Result<http::Response<ureq::Body>, Fault> {
        let builder = http::Request::builder().method(method);
        // One that does not parse is refused when the request is built, below.
        let mut builder = match self.uri(url) {
            Some(uri) => builder.uri(uri),
            None => builder.uri(url),
        };
        let mut cookies = cookies;
        for (name, value) in headers.iter() {
            let value = match cookies.take_if(|_| name.eq_ignore_ascii_case("cookie")) {
                Some(jar) => Cow::Owned(format!("{value}; {jar}")),
                None => Cow::Borrowed(value),
            };
            builder = builder.header(name, writable(name, &value)?);
        }
        if let Some(jar) = cookies {
            builder = builder.header("cookie", writable("Cookie", jar)?);
        }
        let invalid = |e: http::Error| Fault::new(Failure::BadRedirect, format!("cannot build the request: {e}"));
        let result = match body {
            Some(bytes) => self.run(builder.body(bytes).map_err(invalid)?, timeout),
            None => self.run(builder.body(()).map_err(invalid)?, timeout),
        };
        result.map_err(|e| {
            let mut fault = classify(&e);
            // An end of stream before any reply is a closed connection, not a short body. (ureq
            // says the same of a reply's head cut short, which is no reply either.)
            if fault.failure == Failure::Truncated {
                fault.failure = Failure::Closed;
            }
            // The alert of a server that wants a certificate it was not shown says so.
            if fault.failure == Failure::CertRefused && !self.presents_certificate(url) {
                fault.failure = Failure::CertWanted;
            }
            // Nothing was reached: through a proxy, that is the proxy.
            if fault.failure.traits().surely_unprocessed {
                fault.proxy = self.proxy_for(url).map(str::to_string);
            }
            fault
        })
    }

    /// `url` parsed, from the last parse when it is the same URL.
    fn uri(&self, url: &str) -> Option<http::Uri> {
        let mut parsed = self.parsed.borrow_mut();
        if let Some((last, uri)) = parsed.as_ref()
            && last == url
        {
            return Some(uri.clone());
        }
        let uri: http::Uri = url.parse().ok()?;
        *parsed = Some((url.to_string(), uri.clone()));
        Some(uri)
    }

    /// Runs `request` within `timeout` (`None`: the agent's), through its
    /// proxy if it has one. The agent's own timeout is `--request-timeout`
    /// (none under `--watch`) and it has no proxy: most polls need nothing of
    /// their own, and are spared a copy of the agent's configuration each.
    fn run<B: ureq::AsSendBody>(
        &self,
        request: http::Request<B>,
        timeout: Option<Duration>,
    ) -> Result<http::Response<ureq::Body>, ureq::Error> {
        let proxy = self.proxies.for_uri(request.uri());
        let agents = match self.spec.watch {
            Some(_) => timeout.is_none(),
            None => timeout.is_none_or(|timeout| timeout >= self.spec.request_timeout),
        };
        // A clone shares the agent's pool: `room_for` may replace the agent while a reply is read.
        let agent = self.agent.borrow().clone();
        if proxy.is_none() && agents {
            return agent.run(request);
        }
        let proxy = proxy.cloned();
        let configured = agent.configure_request(request);
        let configured = match timeout {
            Some(timeout) => configured.timeout_global(Some(timeout)),
            None => configured,
        };
        agent.run(configured.proxy(proxy).build())
    }

    fn read(&self, mut response: http::Response<ureq::Body>, cuts: &dyn Fn(u16) -> bool) -> Result<Reply, Fault> {
        let status = response.status().as_u16();
        let headers = headers_of(&response);
        let limit = self.spec.max_body;
        let may_cut = cuts(status);
        // Room for the whole body when its length is known: read in one go, with no small probe read first.
        let known = response.body().content_length().unwrap_or(0).min(limit).min(BODY_ROOM_AT_ONCE);
        let mut raw = Vec::with_capacity(usize::try_from(known).unwrap_or(0));
        let read = match may_cut {
            // One byte past the limit tells a body that is cut; the rest is never read (nor the connection kept).
            true => response.body_mut().as_reader().take(limit.saturating_add(1)).read_to_end(&mut raw),
            false => response.body_mut().with_config().limit(limit).reader().read_to_end(&mut raw),
        };
        read.map_err(|e| classify(&ureq::Error::from(e)))?;
        let coding = headers.get("content-encoding");
        let decoded = match may_cut {
            true => decode::decode_cut(coding, raw, limit),
            false => decode::decode(coding, raw, limit).map(|body| (body, false)),
        };
        let (body, cut) = decoded.map_err(|e| match e {
            Undecodable::Broken { name, error } => {
                Fault::new(Failure::Malformed, format!("{name} body does not decode: {error}"))
            }
            Undecodable::TooLarge => {
                Fault::new(Failure::BodyTooLarge, format!("decoded body is larger than --max-body ({limit} bytes)"))
            }
        })?;
        Ok(Reply { status, headers, body, cut })
    }
}

/// A reply's header fields, as ureq read them.
fn headers_of(response: &http::Response<ureq::Body>) -> Headers {
    let fields = response.headers().iter();
    fields
        .map(|(name, value)| (name.as_str().to_string(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
        .collect()
}

/// What a request under `--watch` brought: a reply read whole (any status
/// but a 2xx), or a 2xx's stream of events.
pub(crate) enum Opened {
    Reply(Reply),
    Stream(Stream),
}

impl Opened {
    /// The reply's status.
    pub(crate) fn status(&self) -> u16 {
        match self {
            Opened::Reply(reply) => reply.status,
            Opened::Stream(stream) => stream.status,
        }
    }
}

/// How much of a stream is read ahead of the event being judged.
const STREAM_BUFFER: usize = 8 << 10;

/// A 2xx reply under `--watch`: its head, and its body as events as they
/// arrive (`http/events.rs` frames them). Only the event being read is kept.
pub(crate) struct Stream {
    pub status: u16,
    pub headers: Headers,
    events: Events<BufReader<Box<dyn Read>>>,
    /// Its connection's, to set when a read must wake.
    silence: Option<Silence>,
}

impl Stream {
    /// The next event as soon as it is complete; `None` when the reply ended
    /// cleanly. A silence of `--idle-timeout` is a [`Failure::Timeout`].
    pub(crate) fn next_event(&mut self) -> Option<Result<Event, Fault>> {
        let broken = match self.events.next_event()? {
            Ok(event) => return Some(Ok(event)),
            Err(broken) => broken,
        };
        Some(Err(match broken {
            Broken::Io(e) => classify(&ureq::Error::from(e)),
            // An event over --max-body is a malformed reply (transient), as a bad frame is.
            other => Fault::new(Failure::Malformed, other.to_string()),
        }))
    }

    /// No read waits past `at` (see [`Client::wake_by`]).
    pub(crate) fn wake_by(&self, at: Option<Instant>) {
        if let Some(silence) = &self.silence {
            silence.wake_by(at);
        }
    }

    /// An event stream's last event ID, to resume with (`Last-Event-ID`).
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.events.last_event_id()
    }

    /// An event stream's last `retry:`, waited instead of `--interval`.
    pub(crate) fn retry(&self) -> Option<Duration> {
        self.events.retry()
    }

    /// Whether the reply is an event stream (`text/event-stream`).
    pub(crate) fn is_event_stream(&self) -> bool {
        matches!(Framing::of(self.headers.get("content-type")), Framing::Sse)
    }
}

/// The agent of a loop whose request heads fit `room` bytes: ureq's
/// settings, and connections made by `transport/connect.rs`.
fn agent(spec: &ClientConfig, scope: &CertScope, room: usize, silence: Option<Silence>) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        // 4xx and 5xx are answers the policy reads, not errors.
        .http_status_as_error(false)
        // Redirects are followed here, to drop credentials by origin as curl does.
        .max_redirects(0)
        .timeout_connect(Some(spec.connect_timeout))
        // A watched reply may be held to the deadline: each request then says how long it may take.
        .timeout_global(spec.watch.is_none().then_some(spec.request_timeout))
        .user_agent(spec.user_agent.as_str())
        // A compressing server may hold an event back until a block fills.
        .accept_encoding(if spec.watch.is_some() { "identity" } else { "gzip, deflate, br" })
        // Not ureq's default, its own reading of the environment (ALL_PROXY
        // first, for every scheme): `send` sets one per request, from `proxies`.
        .proxy(None)
        .allow_non_standard_methods(true)
        .max_response_header_size(MAX_RESPONSE_HEAD)
        // One byte more than a head may take: only then does ureq see a head that is too large (not a hang-up).
        .input_buffer_size(MAX_RESPONSE_HEAD + 1)
        .output_buffer_size(room)
        .build();
    connect::agent(config, Arc::clone(&spec.trust), scope.clone(), spec.unix_socket.as_deref(), silence)
}

/// Room for the request's head twice over (a redirect or a status URL may be
/// longer), and never less than [`MIN_OUTPUT_BUFFER`]: ureq refuses a head
/// that does not fit its output buffer. The headers each attempt adds (the
/// jar's cookies, a token, `Last-Event-ID`, `tracestate`) are counted as each
/// hop is sent ([`Client::room_for`]).
fn output_buffer(spec: &ClientConfig, request: &Request) -> usize {
    let head = head_size(&spec.user_agent, &request.method, &request.url, &request.headers, None);
    head.saturating_mul(2).clamp(MIN_OUTPUT_BUFFER, MAX_OUTPUT_BUFFER)
}

/// At least the bytes of a request head with these parts, and `cookies`
/// from the jar: each header as `Name: value` and its line end, and 512
/// bytes for the request line's own words and the headers ureq adds (`Host`,
/// `Accept`, `Accept-Encoding`, `Content-Length`).
fn head_size(user_agent: &str, method: &str, url: &str, headers: &Headers, cookies: Option<&str>) -> usize {
    let fields: usize = headers.iter().map(|(name, value)| name.len() + value.len() + 4).sum();
    let cookies = cookies.map_or(0, |cookies| cookies.len() + "Cookie: ; \r\n".len());
    method.len() + url.len() + user_agent.len() + fields + cookies + 512
}

/// `value` as the header `name` is written, or the failure of a request
/// that cannot be sent, naming the header and never quoting its value (it
/// may be a credential): one with a CR, LF or another control character.
fn writable(name: &str, value: &str) -> Result<http::HeaderValue, Fault> {
    // HTTP carries other bytes as opaque text, but a credential's scheme and token are ASCII
    // (ureq reads `Authorization` as text): such a one can never be sent, nor tried (exit 3).
    if !value.is_ascii() && crate::util::url::is_secret(name) {
        let name = crate::util::text::printable(&crate::util::text::cut(name));
        let detail = format!("the `{name}` header holds a character that is not ASCII, which no credential can carry");
        return Err(Fault::new(Failure::Credential, detail));
    }
    http::HeaderValue::from_str(value).map_err(|_| {
        let name = crate::util::text::printable(&crate::util::text::cut(name));
        let detail =
            format!("the `{name}` header holds a CR, LF or another control character, which HTTP cannot carry");
        Fault::new(Failure::Unsendable, detail)
    })
}

fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// A "see other" answer (303, or 301/302 to a POST): to a `--submit`, it
/// names its status monitor (curl #11447) rather than a place to follow.
pub(crate) fn is_see_other(status: u16) -> bool {
    matches!(status, 301..=303)
}

/// Sorts a ureq error into the classes README lists (transient or permanent)
/// by its type: ureq's variant, the `io::ErrorKind`, or the error inside an
/// I/O error (rustls', or one of ours: [`Unresolved`], [`NotASocket`], [`NoPermission`]). One
/// message is read: a refused `CONNECT`'s status, which ureq carries only in
/// its reason ([`proxy_status`]); a test pins that reading across upgrades.
fn classify(error: &ureq::Error) -> Fault {
    use ureq::Error as E;
    let tls = tls_error(error);
    let failure = match error {
        E::Timeout(ureq::Timeout::Connect) => Failure::ConnectTimeout,
        E::Timeout(ureq::Timeout::Resolve) => Failure::Dns,
        E::Timeout(_) => Failure::Timeout,
        E::HostNotFound => Failure::Dns,
        _ if matches!(tls, Some(rustls::Error::InvalidMessage(_))) => Failure::NotTls,
        // `send` makes it `CertWanted` where no certificate was shown.
        _ if tls.is_some_and(refuses_client_certificate) || after_request(error) => Failure::CertRefused,
        _ if tls.is_some() => Failure::Tls,
        E::Io(io) if io.get_ref().is_some_and(|inner| inner.is::<Unresolved>()) => Failure::Dns,
        E::Io(io) if io.get_ref().is_some_and(|inner| inner.is::<NotASocket>()) => Failure::NotASocket,
        E::Io(io) if io.get_ref().is_some_and(|inner| inner.is::<NoPermission>()) => Failure::NoPermission,
        E::Io(io) if io.get_ref().is_some_and(|inner| inner.is::<Corrupt>()) => Failure::Malformed,
        E::Io(io) => match io.kind() {
            ErrorKind::ConnectionRefused => Failure::Refused,
            ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe => Failure::Reset,
            ErrorKind::UnexpectedEof => Failure::Truncated,
            ErrorKind::TimedOut | ErrorKind::WouldBlock => Failure::Timeout,
            ErrorKind::InvalidData => Failure::Malformed,
            _ => Failure::Reset,
        },
        E::ConnectionFailed => Failure::Refused,
        E::Tls(_) | E::TlsRequired => Failure::Tls,
        E::TooManyRedirects => Failure::TooManyRedirects,
        E::RedirectFailed | E::BadUri(_) | E::Http(_) => Failure::BadRedirect,
        E::BodyExceedsLimit(_) => Failure::BodyTooLarge,
        E::Protocol(_) | E::LargeResponseHeader(..) => Failure::Malformed,
        E::BodyStalled => Failure::Timeout,
        // A status the proxy answered CONNECT with; none: it hung up.
        E::ConnectProxyFailed(reason) if proxy_status(reason).is_some() => Failure::ProxyRefused,
        E::ConnectProxyFailed(_) => Failure::Reset,
        _ => Failure::Malformed,
    };
    let detail = match (failure, error) {
        (Failure::BodyTooLarge, _) => "body larger than --max-body".to_string(),
        // rustls' words for the alert, without ureq's `io: `.
        (Failure::CertRefused, _) => tls.map(ToString::to_string).unwrap_or_else(|| error.to_string()),
        // Which roots did not trust it: the first thing to check behind a TLS-inspecting proxy.
        (Failure::Tls, _) if matches!(tls, Some(rustls::Error::InvalidCertificate(_))) => match roots::source() {
            Some(source) => format!("{error} (trusted roots: {source})"),
            None => error.to_string(),
        },
        // `--unix-socket`'s own words (`src/net/unix.rs`), without ureq's `io: `.
        (Failure::NotASocket | Failure::NoPermission | Failure::Refused, E::Io(io)) if io.get_ref().is_some() => {
            io.to_string()
        }
        // The stream's coding that does not decode (`http/decode.rs`), in its own words.
        (Failure::Malformed, E::Io(io)) if io.get_ref().is_some_and(|inner| inner.is::<Corrupt>()) => io.to_string(),
        (Failure::ProxyRefused, E::ConnectProxyFailed(reason)) => {
            let code = proxy_status(reason).unwrap_or_default();
            let words = http::StatusCode::from_u16(code).ok().and_then(|c| c.canonical_reason()).unwrap_or("");
            format!("CONNECT answered with {code} {words}").trim_end().to_string()
        }
        _ => error.to_string(),
    };
    let proxy_status = match error {
        E::ConnectProxyFailed(reason) => proxy_status(reason),
        _ => None,
    };
    Fault { proxy_status, ..Fault::new(failure, detail) }
}

/// The TLS error inside `error`, if it is one: an I/O error that carries
/// rustls' own (the handshake runs inside our transport's reads).
fn tls_error(error: &ureq::Error) -> Option<&rustls::Error> {
    let ureq::Error::Io(io) = error else { return None };
    let inner = io.get_ref()?;
    let marked = inner.downcast_ref::<RefusedAfterRequest>().map(|RefusedAfterRequest(tls)| tls);
    inner.downcast_ref::<rustls::Error>().or(marked)
}

/// Whether a TLS error is a TLS 1.2 server's `handshake_failure` after it asked for a client
/// certificate (`transport/connect.rs` marks it): a refusal of the certificate, or of none.
fn after_request(error: &ureq::Error) -> bool {
    matches!(error, ureq::Error::Io(io) if io.get_ref().is_some_and(|inner| inner.is::<RefusedAfterRequest>()))
}

/// Whether a TLS error is the server's alert about the client certificate:
/// one it wants and did not get (TLS 1.3's `certificate_required`; Go's
/// `bad_certificate`, as etcd sends it), or one it does not take (unknown
/// CA, expired, revoked, not allowed): which, only whether one was shown
/// says. The alert arrives with the handshake in TLS 1.2, and with the
/// first read after it in TLS 1.3.
fn refuses_client_certificate(error: &rustls::Error) -> bool {
    use rustls::AlertDescription as A;
    matches!(
        error,
        rustls::Error::AlertReceived(
            A::CertificateRequired
                | A::BadCertificate
                | A::UnsupportedCertificate
                | A::CertificateRevoked
                | A::CertificateExpired
                | A::CertificateUnknown
                | A::UnknownCA
                | A::AccessDenied
        )
    )
}

/// The status a proxy answered `CONNECT` with: the one number of three digits
/// in ureq's reason (`proxy server responded 407/407`), where a hang-up has none.
fn proxy_status(reason: &str) -> Option<u16> {
    reason
        .split(|c: char| !c.is_ascii_digit())
        .filter(|digits| digits.len() == 3)
        .find_map(|digits| digits.parse().ok().filter(|code| (100..600).contains(code)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handshake_failure() -> rustls::Error {
        rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure)
    }

    /// The error `decode::reader` gives for bytes of a gzip stream that do not decode.
    fn decoded_wrong() -> ureq::Error {
        let mut coded = b"not gzip".to_vec();
        coded.extend_from_slice(&[0; 16]);
        let read = decode::reader(Some("gzip"), &coded[..]).read_to_end(&mut Vec::new());
        ureq::Error::Io(read.err().unwrap_or_else(|| std::io::Error::other("decoded")))
    }

    /// Each class by the error's type: what a ureq release says in its messages decides nothing.
    #[test]
    fn errors_are_sorted_by_their_type() {
        use std::io::Error as Io;
        use ureq::Error as E;
        let io = |kind: ErrorKind, inner: Box<dyn std::error::Error + Send + Sync>| E::Io(Io::new(kind, inner));
        let cert = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let not_tls = rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType);
        let alert = |alert| Box::new(rustls::Error::AlertReceived(alert));
        let rows: Vec<(E, Failure)> = vec![
            (E::Timeout(ureq::Timeout::Connect), Failure::ConnectTimeout),
            (E::Timeout(ureq::Timeout::Resolve), Failure::Dns),
            (E::Timeout(ureq::Timeout::Global), Failure::Timeout),
            (E::HostNotFound, Failure::Dns),
            // The resolver's error is ours by its type, whatever it says.
            (io(ErrorKind::Other, Box::new(Unresolved(Io::other("any words at all")))), Failure::Dns),
            (E::Io(Io::from(ErrorKind::ConnectionRefused)), Failure::Refused),
            (E::Io(Io::from(ErrorKind::ConnectionReset)), Failure::Reset),
            (E::Io(Io::from(ErrorKind::BrokenPipe)), Failure::Reset),
            (E::Io(Io::from(ErrorKind::UnexpectedEof)), Failure::Truncated),
            (E::Io(Io::from(ErrorKind::TimedOut)), Failure::Timeout),
            (E::Io(Io::from(ErrorKind::InvalidData)), Failure::Malformed),
            (io(ErrorKind::InvalidData, Box::new(cert)), Failure::Tls),
            (io(ErrorKind::InvalidData, Box::new(not_tls)), Failure::NotTls),
            // The client certificate's alerts; `send` tells a refusal from a request by whether one was shown.
            (io(ErrorKind::InvalidData, alert(rustls::AlertDescription::CertificateRequired)), Failure::CertRefused),
            (io(ErrorKind::InvalidData, alert(rustls::AlertDescription::BadCertificate)), Failure::CertRefused),
            (io(ErrorKind::InvalidData, alert(rustls::AlertDescription::UnknownCA)), Failure::CertRefused),
            (io(ErrorKind::InvalidData, alert(rustls::AlertDescription::HandshakeFailure)), Failure::Tls),
            // The same alert after the server asked for a client certificate (TLS 1.2): its refusal.
            (io(ErrorKind::InvalidData, Box::new(RefusedAfterRequest(handshake_failure()))), Failure::CertRefused),
            (io(ErrorKind::Other, Box::new(NotASocket("not a socket".into()))), Failure::NotASocket),
            (io(ErrorKind::PermissionDenied, Box::new(NoPermission("any words".into()))), Failure::NoPermission),
            // A coded stream that does not decode, whatever kind the decoder gave its error.
            (decoded_wrong(), Failure::Malformed),
            (E::TooManyRedirects, Failure::TooManyRedirects),
            (E::BodyExceedsLimit(10), Failure::BodyTooLarge),
            (E::ConnectProxyFailed("proxy server responded 407/407".into()), Failure::ProxyRefused),
            (E::ConnectProxyFailed("the proxy says 403 now".into()), Failure::ProxyRefused),
            (E::ConnectProxyFailed("proxy server did not respond".into()), Failure::Reset),
        ];
        for (error, failure) in rows {
            assert_eq!(classify(&error).failure, failure, "{error:?}");
        }
        let refused = classify(&E::ConnectProxyFailed("proxy server responded 407/407".into()));
        assert_eq!(
            (refused.proxy_status, refused.detail.as_str()),
            (Some(407), "CONNECT answered with 407 Proxy Authentication Required")
        );
    }

    /// A header that cannot be written names itself, quotes nothing of its value, and is
    /// no redirect's failure; one `poll` adds past its limit is found before anything is sent.
    #[test]
    fn a_header_that_cannot_be_sent_is_named_and_never_quoted() {
        let fault = writable("Last-Event-ID", "17\r\nX-Injected: secret").err();
        let fault = fault.map(|fault| (fault.failure, fault.detail));
        let said = "the `Last-Event-ID` header holds a CR, LF or another control character, which HTTP cannot carry";
        assert_eq!(fault, Some((Failure::Unsendable, said.to_string())));
        assert!(writable("X-Tab", "a\tb c").is_ok());
        let fault = writable("Authorization", "Bearer S3CRÉT").err().map(|fault| (fault.failure, fault.detail));
        let said = "the `Authorization` header holds a character that is not ASCII, which no credential can carry";
        assert_eq!(fault, Some((Failure::Credential, said.to_string())));
        let headers = |value: String| -> Headers { [("tracestate", value)].into_iter().collect() };
        assert!(added_too_large(&headers("k=v".repeat(2730))).is_none());
        let fault = added_too_large(&headers("k".repeat(8193))).map(|fault| (fault.failure, fault.detail));
        let said = "the `tracestate` header is 8193 bytes, more than the 8192 poll sends";
        assert_eq!(fault, Some((Failure::Unsendable, said.to_string())));
    }

    /// Every header and the jar's cookies count toward the head, so that its buffer holds it.
    #[test]
    fn the_head_counts_every_header_and_the_cookies() {
        let headers: Headers = [("X-A", "1".repeat(100)), ("Last-Event-ID", "i".repeat(5000))].into_iter().collect();
        let bare = head_size("poll/1", "GET", "http://h/", &Headers::default(), None);
        let full = head_size("poll/1", "GET", "http://h/", &headers, Some(&"c=v".repeat(1000)));
        assert!(full >= bare + 100 + 5000 + 3000 + "X-A: \r\nLast-Event-ID: \r\nCookie: \r\n".len(), "{full}");
    }

    #[test]
    fn a_status_poll_is_a_bare_get_with_credentials_only_on_the_same_origin() {
        let submit = Request {
            method: "POST".into(),
            url: "https://api.test/jobs".into(),
            headers: [
                ("Authorization", "Bearer t"),
                ("Cookie", "c=1"),
                ("X-Tenant", "7"),
                ("Content-Type", "application/json"),
                ("Idempotency-Key", "k"),
            ]
            .into_iter()
            .collect(),
            body: Some(b"{}".to_vec()),
            see_other_is_the_answer: true,
        };
        let names = |r: &Request| r.headers.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>();
        let same = submit.status_poll("https://api.test/ops/1", Some("idempotency-key"), false);
        assert_eq!((same.method.as_str(), same.body.as_ref()), ("GET", None));
        assert_eq!(names(&same), ["Authorization", "Cookie", "X-Tenant"]);
        let other = submit.status_poll("https://status.test/ops/1", Some("Idempotency-Key"), false);
        assert_eq!(names(&other), ["X-Tenant"]);
        let trusted = submit.status_poll("https://status.test/ops/1", Some("Idempotency-Key"), true);
        assert_eq!(names(&trusted), ["Authorization", "Cookie", "X-Tenant"]);
    }
}
