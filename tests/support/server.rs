//! Scripted HTTP/1.1 (and HTTPS) test server: loopback only (or a Unix socket in a test's temporary
//! folder), one thread per connection, replies played from a script.
//!
//! Built on `std::net` and std threads only (plus rustls for TLS) so tests see exactly the
//! bytes we choose to send, misbehaviour included: resets, clean closes without a reply,
//! truncated bodies, garbage status lines, replies that never come, bodies that never end.
//!
//! The server checks itself when dropped, and panics (unless the test is already panicking)
//! with every way it was not used as scripted:
//!
//! - **Played through, by default.** A script (that of `start`, or each route of `routes`) must
//!   have played every one of its replies at least once: hits >= replies, the last reply
//!   repeating as often as asked. A test whose client stops short of its script fails.
//! - **Or as the test says.** A test that expects fewer requests says how many:
//!   `.expect_hits(n)` (exactly `n` requests in all, in place of the default for every route;
//!   `0` for a server that must not be reached), `.expect_hits_between(lo, hi)`, or
//!   `.expect_route_hits(path, n)` for one route (the others keep the default).
//! - **Nothing unanswered.** A request no route matched still gets 404, but fails the test,
//!   as does a malformed request (answered 400/413/414/431 by the server itself).
//! - **No panic** in a server thread.

#[cfg(not(unix))]
use super::no_unix::{UnixListener, UnixStream};
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
#[cfg(unix)]
use std::os::unix::net::{UnixListener, UnixStream};
#[cfg(unix)]
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

/// Longest request line or header line accepted; longer gets 414/431, never a panic.
const MAX_LINE: usize = 64 * 1024;
/// Most header lines (or chunked trailer lines) in one request.
const MAX_HEADERS: usize = 256;
/// Largest request body read; larger gets 413.
const MAX_BODY: usize = 64 << 20;
/// Chunk size of `Reply::endless`.
const CHUNK: usize = 64 * 1024;
/// `Reply::endless` gives up after this much, so a client with no body limit cannot spin forever.
const ENDLESS_CAP: u64 = 1 << 30;
/// After our FIN, how long we keep reading so that late client bytes do not turn the close into a RST.
const LINGER: Duration = Duration::from_millis(250);
/// How long `Drop` waits for all server threads together.
const JOIN_WAIT: Duration = Duration::from_secs(1);

/// `tests/fixtures/cert.pem`: the self-signed leaf (CA:FALSE, SAN IP:127.0.0.1 + DNS:localhost,
/// EC P-256, valid 2026-01-01 to 2126-01-01) served by `start_tls`. It is also the trust anchor
/// to give the client (`--cacert`): webpki accepts a self-signed CA:FALSE leaf as its own root.
/// To make a new pair (notBefore is then "now"):
///
/// ```text
/// openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
/// openssl req -x509 -new -key key.pem -sha256 -days 36500 \
///   -subj "/CN=poll test server (127.0.0.1)" \
///   -addext "basicConstraints=critical,CA:FALSE" \
///   -addext "keyUsage=critical,digitalSignature,keyEncipherment" \
///   -addext "extendedKeyUsage=serverAuth" \
///   -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -out cert.pem
/// ```
pub fn cert_path() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cert.pem"))
}

/// `tests/fixtures/key.pem`: PKCS#8 EC P-256 key of `cert_path()`.
pub fn key_path() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/key.pem"))
}

/// One request as it arrived.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    /// The request target verbatim: origin-form `/a?b=c`, or absolute-form `http://h/a` when
    /// the client talks to us as a proxy.
    pub path: String,
    /// In arrival order, names lowercased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// Decoded body (Content-Length or chunked).
    pub body: Vec<u8>,
    /// When the request line had arrived.
    pub at: Instant,
}

impl Recorded {
    /// First value of `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Every value of `name` (any case), in order.
    pub fn header_all(&self, name: &str) -> Vec<&str> {
        self.headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).collect()
    }

    /// The body as text (lossy), for assertions.
    pub fn body_str(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

#[derive(Clone, Debug)]
enum Kind {
    Normal,
    Reset,
    Close,
    Truncated,
    Hang,
    Raw,
    Endless,
    Stream,
    Panic,
}

/// One scripted answer to one request.
#[derive(Clone, Debug)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    delay: Duration,
    /// Close the connection after this reply without saying so (no `Connection: close`).
    hang_up: bool,
    kind: Kind,
    /// `only_with`: a request header (name, text its value must contain), and the reply
    /// played instead to a request without it.
    only_with: Option<(String, String, Box<Reply>)>,
    /// `until`: from this long after the server started, this reply is played instead.
    until: Option<(Duration, Box<Reply>)>,
    /// `stream`: the body's parts, each written as a chunk after its delay.
    parts: Vec<(Duration, Vec<u8>)>,
    /// `stream`: how the body ends once its parts are written.
    end: StreamEnd,
}

/// How a `Reply::stream` body ends once its parts are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StreamEnd {
    /// The last chunk: the reply is whole, the connection kept.
    Finish,
    /// No byte more, the connection held open until the server is dropped.
    Hold,
    /// A TCP RST in the middle of the body.
    Reset,
}

impl Reply {
    fn of(kind: Kind, status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            delay: Duration::ZERO,
            hang_up: false,
            kind,
            only_with: None,
            until: None,
            parts: Vec::new(),
            end: StreamEnd::Finish,
        }
    }

    /// `code` with `Content-Type: content_type` and a chunked body of `parts`, each written and
    /// flushed as a chunk after its delay (cut short when the server is dropped): a stream's
    /// events as they happen. The body then ends, unless `then_hold` or `then_reset` say otherwise.
    pub fn stream(code: u16, content_type: &str, parts: &[(Duration, &str)]) -> Reply {
        let mut reply = Reply::of(Kind::Stream, code).header("Content-Type", content_type);
        reply.parts = parts.iter().map(|(delay, text)| (*delay, text.as_bytes().to_vec())).collect();
        reply
    }

    /// A `text/event-stream` reply of `parts` (see `stream`).
    pub fn sse(parts: &[(Duration, &str)]) -> Reply {
        Reply::stream(200, "text/event-stream", parts)
    }

    /// A stream that sends no byte more after its parts and is held open until the server is dropped.
    pub fn then_hold(mut self) -> Reply {
        self.end = StreamEnd::Hold;
        self
    }

    /// A stream reset (TCP RST) after its parts, in the middle of its body.
    pub fn then_reset(mut self) -> Reply {
        self.end = StreamEnd::Reset;
        self
    }

    /// `code` with an empty body (`Content-Length: 0`; none at all for 1xx/204/304).
    pub fn status(code: u16) -> Reply {
        Reply::of(Kind::Normal, code)
    }

    /// `code` with `body` and `Content-Type: application/json`.
    pub fn json(code: u16, body: &str) -> Reply {
        Reply::status(code).header("Content-Type", "application/json").body(body)
    }

    /// `code` with `body` and `Content-Type: text/plain`.
    pub fn text(code: u16, body: &str) -> Reply {
        Reply::status(code).header("Content-Type", "text/plain; charset=utf-8").body(body)
    }

    /// Closes the connection right after this reply, without `Connection: close`:
    /// a rude keep-alive server the client must notice before it reuses the socket.
    pub fn then_hang_up(mut self) -> Reply {
        self.hang_up = true;
        self
    }

    /// `code` (301/302/303/307/308) with `Location: location`.
    pub fn redirect(code: u16, location: &str) -> Reply {
        Reply::status(code).header("Location", location)
    }

    /// Adds a header, sent as given. A scripted `Content-Length` or `Transfer-Encoding` replaces
    /// the computed one (so a test can lie), and `Connection: close` closes after the reply.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn body(mut self, bytes: impl Into<Vec<u8>>) -> Reply {
        self.body = bytes.into();
        self
    }

    /// This reply only to a request whose header `name` contains `text`; to any other,
    /// `otherwise` (a sticky backend that knows only the clients its cookie pinned).
    pub fn only_with(mut self, name: &str, text: &str, otherwise: Reply) -> Reply {
        self.only_with = Some((name.to_owned(), text.to_owned(), Box::new(otherwise)));
        self
    }

    /// Waits this long before writing anything; cut short when the server is dropped.
    /// This reply until `d` after the server started; from then on, `then` (a job whose state
    /// changes at a moment, whatever was asked before).
    pub fn until(mut self, d: Duration, then: Reply) -> Reply {
        self.until = Some((d, Box::new(then)));
        self
    }

    pub fn delay(mut self, d: Duration) -> Reply {
        self.delay = d;
        self
    }

    /// Reads the request, then aborts the connection with a TCP RST (SO_LINGER 0).
    pub fn reset() -> Reply {
        Reply::of(Kind::Reset, 0)
    }

    /// Reads the request, then closes cleanly (TLS close_notify, then FIN) without any reply.
    pub fn close() -> Reply {
        Reply::of(Kind::Close, 0)
    }

    /// Claims `Content-Length: len + 100`, sends `body`, then closes cleanly.
    pub fn truncated(code: u16, body: &str) -> Reply {
        Reply::of(Kind::Truncated, code).body(body)
    }

    /// Reads the request and never answers; the socket is held until the server is dropped.
    pub fn hang() -> Reply {
        Reply::of(Kind::Hang, 0)
    }

    /// Writes these bytes verbatim (e.g. `"HTTP/1.1 abc\r\n\r\n"`), then closes cleanly.
    pub fn raw(bytes: impl Into<Vec<u8>>) -> Reply {
        Reply::of(Kind::Raw, 0).body(bytes)
    }

    /// `code` with a chunked body that never ends: 64 KiB chunks of `x` until the client goes
    /// away, the server is dropped, or 1 GiB was sent (then the connection is closed unfinished).
    pub fn endless(code: u16) -> Reply {
        Reply::of(Kind::Endless, code)
    }

    /// Panics the connection thread with `message` after reading the request: only for testing
    /// that `Drop` reports server-thread panics.
    pub fn panic(message: &str) -> Reply {
        Reply::of(Kind::Panic, 0).body(message)
    }

    fn has_header(&self, name: &str) -> bool {
        self.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name))
    }

    fn wants_close(&self) -> bool {
        self.headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("connection") && v.to_ascii_lowercase().contains("close"))
    }
}

/// Replies played in order; the last one repeats forever.
struct Seq {
    replies: Vec<Reply>,
    /// Requests served so far (so also the index of the next reply).
    next: usize,
    /// Exactly how many requests this script must serve (`expect_route_hits`); `None`: the
    /// default, every reply played at least once.
    expect: Option<usize>,
}

impl Seq {
    fn new(replies: Vec<Reply>) -> Seq {
        assert!(!replies.is_empty(), "a test server script needs at least one reply");
        Seq { replies, next: 0, expect: None }
    }

    /// What is wrong with how this script was played (`what` names it), given whether the
    /// server-wide `expect_hits` replaced the default.
    fn unmet(&self, what: &str, total_expected: bool) -> Option<String> {
        let (hits, scripted) = (self.next, self.replies.len());
        match self.expect {
            Some(n) if hits != n => Some(format!("{what}: expected exactly {n} request(s), got {hits}")),
            None if !total_expected && hits < scripted => Some(format!(
                "{what}: only {hits} of its {scripted} scripted replies were played \
                 (a test that expects fewer says so: expect_hits, expect_route_hits)"
            )),
            _ => None,
        }
    }

    fn pick(&mut self) -> Reply {
        let i = self.next.min(self.replies.len() - 1);
        self.next += 1;
        self.replies[i].clone()
    }
}

enum Script {
    Any(Seq),
    Routes(Vec<(String, Seq)>),
}

impl Script {
    /// The reply to `target`, or `None` when no route matches it.
    fn pick(&mut self, target: &str) -> Option<Reply> {
        match self {
            Script::Any(seq) => Some(seq.pick()),
            Script::Routes(routes) => {
                // A route with a query (`/runs?page=2`) is that page only; the others take any query.
                let (whole, path) = (route_key_with_query(target), route_key(target));
                let i =
                    routes.iter().position(|(p, _)| p == whole).or_else(|| routes.iter().position(|(p, _)| p == path));
                i.map(|i| routes[i].1.pick())
            }
        }
    }

    fn unmet(&self, total_expected: bool) -> Vec<String> {
        match self {
            Script::Any(seq) => seq.unmet("the script", total_expected).into_iter().collect(),
            Script::Routes(routes) => {
                routes.iter().filter_map(|(path, seq)| seq.unmet(&format!("route {path}"), total_expected)).collect()
            }
        }
    }
}

/// The path a route matches on: no scheme/authority (absolute-form, as sent to a proxy), no query.
fn route_key(target: &str) -> &str {
    let path = match target.find("://") {
        Some(i) => {
            let rest = &target[i + 3..];
            rest.find('/').map_or("/", |j| &rest[j..])
        }
        None => target,
    };
    let end = path.find(['?', '#']).unwrap_or(path.len());
    &path[..end]
}

/// The target a route with a query matches on: no scheme/authority, no fragment, its query kept.
fn route_key_with_query(target: &str) -> &str {
    let path = match target.find("://") {
        Some(i) => {
            let rest = &target[i + 3..];
            rest.find('/').map_or("/", |j| &rest[j..])
        }
        None => target,
    };
    &path[..path.find('#').unwrap_or(path.len())]
}

struct State {
    script: Script,
    log: Vec<Recorded>,
    /// Requests no route matched (answered 404), as `METHOD target`.
    unanswered: Vec<String>,
    /// Plain replies written whole (for `wait_replies`).
    replied: usize,
}

/// Everything the acceptor, the connection threads and the `Server` handle share.
struct Shared {
    state: Mutex<State>,
    /// When the server started listening (`Reply::until` counts from here).
    started: Instant,
    /// Signalled on every recorded request and every reply written whole (for `wait_hits`,
    /// `wait_replies`).
    arrived: Condvar,
    stopped: Mutex<bool>,
    stop_cv: Condvar,
    connections: AtomicUsize,
    bad_requests: AtomicUsize,
    /// A clone of every open connection's socket, so `Drop` can unblock its reads and writes.
    open: Mutex<HashMap<u64, Box<dyn Socket>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    panics: Mutex<Vec<String>>,
}

/// Locks even after a panicking thread poisoned the mutex: the data is still fine for a test
/// server, and the panic itself is reported by `Drop`.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn is_stopped(&self) -> bool {
        *lock(&self.stopped)
    }

    /// Sleeps `d`, or less when the server stops; true when the full time passed.
    fn pause(&self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        let mut stopped = lock(&self.stopped);
        while !*stopped {
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            stopped = self.stop_cv.wait_timeout(stopped, deadline - now).unwrap_or_else(PoisonError::into_inner).0;
        }
        false
    }

    fn wait_stopped(&self) {
        let mut stopped = lock(&self.stopped);
        while !*stopped {
            stopped = self.stop_cv.wait(stopped).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Records the request and picks its reply under one lock, so log order == script order.
    fn record(&self, req: Recorded) -> Reply {
        let mut state = lock(&self.state);
        let reply = state.script.pick(&req.path).unwrap_or_else(|| {
            state.unanswered.push(format!("{} {}", req.method, req.path));
            Reply::status(404)
        });
        let reply = match &reply.until {
            Some((d, then)) if self.started.elapsed() >= *d => (**then).clone(),
            _ => reply,
        };
        let stranger = |(name, text, _): &&(String, String, Box<Reply>)| {
            !req.header_all(name).iter().any(|value| value.contains(text.as_str()))
        };
        let otherwise = reply.only_with.as_ref().filter(stranger).map(|(_, _, otherwise)| (**otherwise).clone());
        let reply = otherwise.unwrap_or(reply);
        state.log.push(req);
        self.arrived.notify_all();
        reply
    }

    /// Counts a reply written whole.
    fn replied(&self) {
        lock(&self.state).replied += 1;
        self.arrived.notify_all();
    }

    fn forget(&self, id: u64) {
        lock(&self.open).remove(&id);
    }

    /// Joins finished connection threads so handles don't pile up; keeps their panics for `Drop`.
    fn reap(&self) {
        let mut threads = lock(&self.threads);
        let (done, running): (Vec<_>, Vec<_>) = threads.drain(..).partition(JoinHandle::is_finished);
        *threads = running;
        drop(threads);
        for handle in done {
            if let Err(payload) = handle.join() {
                lock(&self.panics).push(panic_message(payload.as_ref()));
            }
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// A scripted server on 127.0.0.1 with an ephemeral port, or on a Unix socket; stops when dropped.
pub struct Server {
    addr: SocketAddr,
    /// The socket's path, for a server on a Unix socket (`addr` is then unused).
    unix: Option<PathBuf>,
    tls: bool,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
    /// Fewest and most requests in all (`expect_hits`), in place of the played-through default.
    total: Option<(usize, usize)>,
}

impl Server {
    /// Any path: plays `replies` in order, then repeats the last one.
    pub fn start(replies: Vec<Reply>) -> Server {
        Server::launch(Script::Any(Seq::new(replies)), None)
    }

    /// Per path (exact match on the path without query; a route given with a query matches that
    /// path and query only, before the path alone does); an unknown path gets 404.
    pub fn routes(routes: Vec<(&str, Vec<Reply>)>) -> Server {
        Server::launch(routes_script(routes), None)
    }

    /// `routes` on a chosen loopback port (`daemon::free_port()`), for replies that name the
    /// server's own URLs (a `Link` header's absolute targets).
    pub fn routes_on(port: u16, routes: Vec<(&str, Vec<Reply>)>) -> Server {
        Server::launch_on(port, routes_script(routes), None)
    }

    /// `start` over TLS with the fixture certificate (`cert_path()`).
    pub fn start_tls(replies: Vec<Reply>) -> Server {
        Server::launch(Script::Any(Seq::new(replies)), Some(tls_config()))
    }

    /// `start` on a chosen loopback port, for a server that comes up after its client.
    pub fn start_on(port: u16, replies: Vec<Reply>) -> Server {
        Server::launch_on(port, Script::Any(Seq::new(replies)), None)
    }

    fn launch(script: Script, tls: Option<Arc<ServerConfig>>) -> Server {
        Server::launch_on(0, script, tls)
    }

    fn launch_on(port: u16, script: Script, tls: Option<Arc<ServerConfig>>) -> Server {
        // Loopback only, ever: tests must not listen on or reach any other address.
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local_addr of test server");
        Server::serve_on(Listener::Tcp(listener), addr, None, script, tls)
    }

    fn serve_on(
        listener: Listener,
        addr: SocketAddr,
        unix: Option<PathBuf>,
        script: Script,
        tls: Option<Arc<ServerConfig>>,
    ) -> Server {
        let shared = Arc::new(Shared {
            state: Mutex::new(State { script, log: Vec::new(), unanswered: Vec::new(), replied: 0 }),
            started: Instant::now(),
            arrived: Condvar::new(),
            stopped: Mutex::new(false),
            stop_cv: Condvar::new(),
            connections: AtomicUsize::new(0),
            bad_requests: AtomicUsize::new(0),
            open: Mutex::new(HashMap::new()),
            threads: Mutex::new(Vec::new()),
            panics: Mutex::new(Vec::new()),
        });
        let is_tls = tls.is_some();
        let sh = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name(format!("test-server-{}", addr.port()))
            .spawn(move || accept_loop(&listener, &sh, tls))
            .expect("spawn test server acceptor");
        Server { addr, unix, tls: is_tls, shared, acceptor: Some(acceptor), total: None }
    }

    /// Expects exactly `n` requests in all, instead of every reply of every route played
    /// through: for a test that stops before the end of its script, or (`0`) never sends.
    pub fn expect_hits(self, n: usize) -> Server {
        self.expect_hits_between(n, n)
    }

    /// Expects `lo..=hi` requests in all, instead of every reply of every route played through.
    pub fn expect_hits_between(mut self, lo: usize, hi: usize) -> Server {
        assert!(lo <= hi, "expect_hits_between({lo}, {hi})");
        self.total = Some((lo, hi));
        self
    }

    /// Expects exactly `n` requests on the route `path` of a `routes` server, instead of its
    /// replies played through; the other routes keep theirs.
    pub fn expect_route_hits(self, path: &str, n: usize) -> Server {
        let path = &route_path(path);
        let mut state = lock(&self.shared.state);
        let Script::Routes(routes) = &mut state.script else {
            panic!("expect_route_hits({path:?}) is for a server made with `routes`; use expect_hits");
        };
        let Some((_, seq)) = routes.iter_mut().find(|(p, _)| p == path) else {
            panic!("expect_route_hits({path:?}): no such route");
        };
        seq.expect = Some(n);
        drop(state);
        self
    }

    /// Every way the server was not used as the test scripted it (see the module doc).
    fn unmet(&self) -> Vec<String> {
        let state = lock(&self.shared.state);
        let mut unmet = Vec::new();
        if !state.unanswered.is_empty() {
            let n = state.unanswered.len();
            unmet.push(format!("{n} request(s) that no route answered (got 404): {}", state.unanswered.join(", ")));
        }
        let bad = self.shared.bad_requests.load(Ordering::SeqCst);
        if bad > 0 {
            unmet.push(format!("{bad} malformed request(s), answered 400/413/414/431 by the server itself"));
        }
        if let Some((lo, hi)) = self.total {
            let hits = state.log.len();
            if hits < lo || hits > hi {
                let wanted = if lo == hi { format!("exactly {lo}") } else { format!("{lo} to {hi}") };
                unmet.push(format!("expected {wanted} request(s) in all, got {hits}"));
            }
        }
        unmet.extend(state.script.unmet(self.total.is_some()));
        unmet
    }

    /// `http://127.0.0.1:PORT/path` (`https` for TLS; `localhost` on a Unix socket); `path` with
    /// or without its leading `/`.
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        let slash = if path.starts_with('/') { "" } else { "/" };
        let host = if self.unix.is_some() { "localhost".to_string() } else { self.addr.to_string() };
        format!("{scheme}://{host}{slash}{path}")
    }

    /// `scheme://host:port`: the server's origin, which `poll` takes as its state key.
    pub fn origin(&self) -> String {
        self.url("").trim_end_matches('/').to_string()
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every well-formed request that arrived, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.state).log.clone()
    }

    pub fn hits(&self) -> usize {
        lock(&self.shared.state).log.len()
    }

    /// TCP connections accepted (a TLS handshake that failed still counts).
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Requests rejected as malformed (answered 400/413/414/431, not in `requests()`).
    /// "Nothing reached the wire" is best checked with `connections() == 0`.
    pub fn bad_requests(&self) -> usize {
        self.shared.bad_requests.load(Ordering::SeqCst)
    }

    /// Waits until at least `n` requests arrived; false on timeout.
    pub fn wait_hits(&self, n: usize, timeout: Duration) -> bool {
        super::arrivals::wait_until(&self.shared.state, &self.shared.arrived, timeout, |state| state.log.len() >= n)
    }

    /// Waits until at least `n` plain replies were written whole (handed to the connection: a
    /// drop of the server after it no longer cuts them short, as it can after `wait_hits`); false
    /// on timeout.
    pub fn wait_replies(&self, n: usize, timeout: Duration) -> bool {
        super::arrivals::wait_until(&self.shared.state, &self.shared.arrived, timeout, |state| state.replied >= n)
    }
}

/// Servers on a Unix socket, where there are Unix sockets (`tests/it/unix.rs`).
#[cfg(unix)]
impl Server {
    /// `start` on a Unix socket at `path` (in a test's temporary folder), which must not exist;
    /// it is removed when the server is dropped. `url()` names `localhost`.
    pub fn start_unix(path: &Path, replies: Vec<Reply>) -> Server {
        Server::launch_unix(path, Script::Any(Seq::new(replies)), None)
    }

    /// `routes` on a Unix socket at `path`.
    pub fn routes_unix(path: &Path, routes: Vec<(&str, Vec<Reply>)>) -> Server {
        Server::launch_unix(path, routes_script(routes), None)
    }

    /// `routes` on a Unix socket at `path`, over TLS with the fixture certificate (`localhost`).
    pub fn routes_unix_tls(path: &Path, routes: Vec<(&str, Vec<Reply>)>) -> Server {
        Server::launch_unix(path, routes_script(routes), Some(tls_config()))
    }

    /// The Unix socket's path, for a server made with `start_unix` or `routes_unix`.
    pub fn socket_path(&self) -> &Path {
        self.unix.as_deref().expect("a server on a Unix socket")
    }

    fn launch_unix(path: &Path, script: Script, tls: Option<Arc<ServerConfig>>) -> Server {
        let listener = UnixListener::bind(path).unwrap_or_else(|e| panic!("bind {}: {e}", path.display()));
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        Server::serve_on(Listener::Unix(listener), addr, Some(path.to_path_buf()), script, tls)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let sh = &self.shared;
        // Flag first: wakes delays and hangs, and tells the acceptor its next accept is the last.
        *lock(&sh.stopped) = true;
        sh.stop_cv.notify_all();
        // accept() blocks; a throwaway connection to ourselves wakes it.
        match &self.unix {
            Some(path) => drop(UnixStream::connect(path)),
            None => drop(TcpStream::connect_timeout(&self.addr, Duration::from_millis(500))),
        }
        let deadline = Instant::now() + JOIN_WAIT;
        let mut stuck = 0;
        // The acceptor registers every socket before spawning its thread, so once it is gone
        // `open` holds every connection there will ever be.
        if let Some(acceptor) = self.acceptor.take() {
            join_by(acceptor, deadline, sh, &mut stuck);
        }
        // Unblocks reads (idle keep-alive) and writes (endless bodies) in connection threads.
        for sock in lock(&sh.open).values() {
            let _ = sock.shutdown(Shutdown::Both);
        }
        let threads = std::mem::take(&mut *lock(&sh.threads));
        for handle in threads {
            join_by(handle, deadline, sh, &mut stuck);
        }
        if let Some(path) = &self.unix {
            let _ = std::fs::remove_file(path);
        }
        if stuck > 0 {
            eprintln!("test server {}: {stuck} thread(s) still running {JOIN_WAIT:?} after drop", self.addr);
        }
        if thread::panicking() {
            return;
        }
        let panics = std::mem::take(&mut *lock(&sh.panics));
        let mut problems: Vec<String> = panics.into_iter().map(|p| format!("a server thread panicked: {p}")).collect();
        problems.extend(self.unmet());
        if !problems.is_empty() {
            panic!("test server {} was not used as scripted:\n  - {}", self.addr, problems.join("\n  - "));
        }
    }
}

/// Joins `handle` if it finishes before `deadline`, else leaves it detached and counts it.
fn join_by(handle: JoinHandle<()>, deadline: Instant, sh: &Shared, stuck: &mut usize) {
    while !handle.is_finished() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(2));
    }
    if !handle.is_finished() {
        *stuck += 1;
        return;
    }
    if let Err(payload) = handle.join() {
        lock(&sh.panics).push(panic_message(payload.as_ref()));
    }
}

fn routes_script(routes: Vec<(&str, Vec<Reply>)>) -> Script {
    Script::Routes(routes.into_iter().map(|(path, replies)| (route_path(path), Seq::new(replies))).collect())
}

/// A route's path as given, with its leading `/` (which may be left out).
fn route_path(path: &str) -> String {
    if path.starts_with('/') { path.to_owned() } else { format!("/{path}") }
}

fn tls_config() -> Arc<ServerConfig> {
    let certs = CertificateDer::pem_file_iter(cert_path())
        .expect("open tests/fixtures/cert.pem")
        .collect::<Result<Vec<_>, _>>()
        .expect("parse tests/fixtures/cert.pem");
    let key = PrivateKeyDer::from_pem_file(key_path()).expect("parse tests/fixtures/key.pem");
    // An explicit provider: with both ring and aws-lc-rs in the build, `builder()` would panic.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("rustls protocol versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("fixture cert and key match");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// What the server listens on.
enum Listener {
    Tcp(TcpListener),
    #[cfg_attr(not(unix), expect(dead_code, reason = "made by Server::launch_unix alone, which is Unix-only"))]
    Unix(UnixListener),
}

/// One accepted connection, whichever the listener.
enum Accepted {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Listener {
    fn accept(&self) -> io::Result<Accepted> {
        match self {
            Listener::Tcp(listener) => listener.accept().map(|(tcp, _)| {
                let _ = tcp.set_nodelay(true);
                Accepted::Tcp(tcp)
            }),
            Listener::Unix(listener) => listener.accept().map(|(unix, _)| Accepted::Unix(unix)),
        }
    }
}

fn accept_loop(listener: &Listener, sh: &Arc<Shared>, tls: Option<Arc<ServerConfig>>) {
    let mut next_id = 0u64;
    loop {
        let incoming = listener.accept();
        if sh.is_stopped() {
            // Either Drop's wake-up connection or a latecomer: both just get closed.
            break;
        }
        let Ok(accepted) = incoming else {
            // e.g. EMFILE: don't spin.
            thread::sleep(Duration::from_millis(10));
            continue;
        };
        sh.connections.fetch_add(1, Ordering::SeqCst);
        let clone: Option<Box<dyn Socket>> = match &accepted {
            Accepted::Tcp(tcp) => tcp.try_clone().ok().map(|c| Box::new(c) as Box<dyn Socket>),
            Accepted::Unix(unix) => unix.try_clone().ok().map(|c| Box::new(c) as Box<dyn Socket>),
        };
        let Some(clone) = clone else {
            continue;
        };
        let id = next_id;
        next_id += 1;
        lock(&sh.open).insert(id, clone);
        let conn_sh = Arc::clone(sh);
        let conn_tls = tls.clone();
        let spawned = thread::Builder::new().name(format!("test-server-conn-{id}")).spawn(move || match accepted {
            Accepted::Tcp(tcp) => connection(tcp, id, &conn_sh, conn_tls),
            Accepted::Unix(unix) => connection(unix, id, &conn_sh, conn_tls),
        });
        match spawned {
            Ok(handle) => lock(&sh.threads).push(handle),
            Err(_) => sh.forget(id),
        }
        sh.reap();
    }
}

/// How a connection ends.
enum End {
    /// Just close (FIN): the peer left, or we stop.
    Drop,
    /// TLS close_notify, FIN, then a short drain so the close stays clean.
    Graceful,
    /// TCP RST.
    Reset,
}

/// A TCP or Unix socket, as a connection's end needs it.
trait Socket: Send + 'static {
    fn shutdown(&self, how: Shutdown) -> io::Result<()>;
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
    fn read_some(&self, buf: &mut [u8]) -> io::Result<usize>;
    /// Ends the connection abruptly: a TCP RST; a Unix socket has none, so it is shut down.
    fn abort(&self);
}

impl Socket for TcpStream {
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        TcpStream::shutdown(self, how)
    }
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        TcpStream::set_read_timeout(self, timeout)
    }
    fn read_some(&self, buf: &mut [u8]) -> io::Result<usize> {
        let mut this = self;
        this.read(buf)
    }
    fn abort(&self) {
        abort(self);
    }
}

impl Socket for UnixStream {
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        UnixStream::shutdown(self, how)
    }
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        UnixStream::set_read_timeout(self, timeout)
    }
    fn read_some(&self, buf: &mut [u8]) -> io::Result<usize> {
        let mut this = self;
        this.read(buf)
    }
    fn abort(&self) {
        let _ = UnixStream::shutdown(self, Shutdown::Both);
    }
}

/// The plain or TLS stream a connection is served over.
trait Transport: Read + Write {
    fn sock(&self) -> &dyn Socket;
    /// The TLS goodbye; nothing for plain TCP.
    fn close_notify(&mut self) {}
}

impl Transport for TcpStream {
    fn sock(&self) -> &dyn Socket {
        self
    }
}

impl Transport for UnixStream {
    fn sock(&self) -> &dyn Socket {
        self
    }
}

impl<S: Socket + Read + Write> Transport for StreamOwned<ServerConnection, S> {
    fn sock(&self) -> &dyn Socket {
        &self.sock
    }

    fn close_notify(&mut self) {
        self.conn.send_close_notify();
        let _ = self.flush();
    }
}

/// Takes a connection out of `open` however its thread ends, a panic included: the clone
/// left there would hold the socket open, and the client would wait until the server drops.
struct Forget<'a>(&'a Shared, u64);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.0.forget(self.1);
    }
}

fn connection<S: Transport + Socket>(tcp: S, id: u64, sh: &Shared, tls: Option<Arc<ServerConfig>>) {
    let _forget = Forget(sh, id);
    match tls {
        None => {
            let (end, t) = serve(tcp, sh);
            // Out of `open` before closing: a clone left there would keep the socket alive and
            // turn our RST/FIN into nothing.
            sh.forget(id);
            finish(end, t);
        }
        Some(config) => {
            let Ok(conn) = ServerConnection::new(config) else {
                sh.forget(id);
                return;
            };
            let (end, t) = serve(StreamOwned::new(conn, tcp), sh);
            sh.forget(id);
            finish(end, t);
        }
    }
}

fn finish<T: Transport>(end: End, mut t: T) {
    match end {
        End::Drop => {}
        End::Reset => t.sock().abort(),
        End::Graceful => {
            t.close_notify();
            let sock = t.sock();
            let _ = sock.shutdown(Shutdown::Write);
            drain(sock);
        }
    }
}

/// Reads (and discards) until the peer closes or `LINGER` passes: closing with unread bytes
/// in the kernel buffer would send a RST instead of the clean close we promised.
fn drain(sock: &dyn Socket) {
    let deadline = Instant::now() + LINGER;
    let _ = sock.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        match sock.read_some(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Sends a TCP RST: with SO_LINGER {on, 0}, close() aborts the connection instead of a FIN.
/// (std's `TcpStream::set_linger` is unstable.) Should the option fail, the client sees a clean EOF.
fn abort(tcp: &TcpStream) {
    if socket2::SockRef::from(tcp).set_linger(Some(Duration::ZERO)).is_err() {
        let _ = tcp.shutdown(Shutdown::Both);
    }
}

/// Serves requests on one connection until it should end; hands the stream back for closing.
fn serve<T: Transport>(t: T, sh: &Shared) -> (End, T) {
    let mut rd = BufReader::new(t);
    loop {
        let req = match read_request(&mut rd) {
            Ok(Some(req)) => req,
            Ok(None) | Err(Bad::Gone) => return (End::Drop, rd.into_inner()),
            Err(Bad::Reject(code)) => {
                sh.bad_requests.fetch_add(1, Ordering::SeqCst);
                let mut t = rd.into_inner();
                let head =
                    format!("HTTP/1.1 {code} {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", reason(code));
                let _ = t.write_all(head.as_bytes()).and_then(|()| t.flush());
                return (End::Graceful, t);
            }
        };
        let client_close = req.close;
        let head_only = req.recorded.method == "HEAD";
        let reply = sh.record(req.recorded);
        if !reply.delay.is_zero() && !sh.pause(reply.delay) {
            return (End::Drop, rd.into_inner());
        }
        let t = rd.get_mut();
        match reply.kind {
            Kind::Normal => {
                let close = client_close || reply.wants_close();
                if write_normal(t, &reply, head_only, close).is_err() {
                    return (End::Drop, rd.into_inner());
                }
                sh.replied();
                if close || reply.hang_up {
                    return (End::Graceful, rd.into_inner());
                }
            }
            Kind::Reset => return (End::Reset, rd.into_inner()),
            Kind::Close => return (End::Graceful, rd.into_inner()),
            Kind::Truncated => {
                let extra = format!("Content-Length: {}\r\n", reply.body.len() + 100);
                let _ = write_head(t, &reply, &extra).and_then(|()| t.write_all(&reply.body)).and_then(|()| t.flush());
                return (End::Graceful, rd.into_inner());
            }
            Kind::Hang => {
                sh.wait_stopped();
                return (End::Drop, rd.into_inner());
            }
            Kind::Raw => {
                let _ = t.write_all(&reply.body).and_then(|()| t.flush());
                return (End::Graceful, rd.into_inner());
            }
            Kind::Endless => {
                let _ = write_endless(t, &reply, sh);
                return (End::Drop, rd.into_inner());
            }
            Kind::Stream => match write_stream(t, &reply, sh) {
                Ok(StreamEnd::Finish) => {}
                Ok(StreamEnd::Hold) => {
                    sh.wait_stopped();
                    return (End::Drop, rd.into_inner());
                }
                Ok(StreamEnd::Reset) => return (End::Reset, rd.into_inner()),
                Err(_) => return (End::Drop, rd.into_inner()),
            },
            Kind::Panic => panic!("{}", String::from_utf8_lossy(&reply.body)),
        }
    }
}

fn write_head(t: &mut impl Write, reply: &Reply, extra: &str) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(extra);
    head.push_str("\r\n");
    t.write_all(head.as_bytes())
}

fn write_normal(t: &mut impl Write, reply: &Reply, head_only: bool, close: bool) -> io::Result<()> {
    let bodyless = reply.status < 200 || reply.status == 204 || reply.status == 304;
    let mut extra = String::new();
    if !bodyless && !reply.has_header("content-length") && !reply.has_header("transfer-encoding") {
        extra.push_str(&format!("Content-Length: {}\r\n", reply.body.len()));
    }
    if close && !reply.has_header("connection") {
        extra.push_str("Connection: close\r\n");
    }
    write_head(t, reply, &extra)?;
    if !head_only && !bodyless {
        t.write_all(&reply.body)?;
    }
    t.flush()
}

fn write_endless(t: &mut impl Write, reply: &Reply, sh: &Shared) -> io::Result<()> {
    write_head(t, reply, "Transfer-Encoding: chunked\r\n")?;
    let mut chunk = format!("{CHUNK:x}\r\n").into_bytes();
    chunk.resize(chunk.len() + CHUNK, b'x');
    chunk.extend_from_slice(b"\r\n");
    let mut sent = 0u64;
    while sent < ENDLESS_CAP && !sh.is_stopped() {
        t.write_all(&chunk)?;
        sent += CHUNK as u64;
    }
    t.flush()
}

/// A `Reply::stream`'s head and parts, each a chunk after its delay; the last chunk when it finishes.
fn write_stream(t: &mut impl Write, reply: &Reply, sh: &Shared) -> io::Result<StreamEnd> {
    write_head(t, reply, "Transfer-Encoding: chunked\r\n")?;
    t.flush()?;
    for (delay, part) in &reply.parts {
        if !delay.is_zero() && !sh.pause(*delay) {
            return Err(io::Error::other("the server was dropped"));
        }
        if !part.is_empty() {
            t.write_all(format!("{:x}\r\n", part.len()).as_bytes())?;
            t.write_all(part)?;
            t.write_all(b"\r\n")?;
            t.flush()?;
        }
    }
    if reply.end == StreamEnd::Finish {
        t.write_all(b"0\r\n\r\n")?;
        t.flush()?;
    }
    Ok(reply.end)
}

fn reason(code: u16) -> &'static str {
    match code {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        413 => "Content Too Large",
        414 => "URI Too Long",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// Why no request could be read.
enum Bad {
    /// The peer went away or the socket failed mid-request: nothing to answer.
    Gone,
    /// Malformed or too large: answer with this status and close.
    Reject(u16),
}

struct Request {
    recorded: Recorded,
    /// The client asked to close after this exchange.
    close: bool,
}

/// One line without its CRLF (a bare LF is accepted too); `None` on EOF before any byte.
fn read_line(rd: &mut impl BufRead, too_long: u16) -> Result<Option<Vec<u8>>, Bad> {
    let mut line = Vec::new();
    loop {
        let buf = match rd.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(Bad::Gone),
        };
        if buf.is_empty() {
            return if line.is_empty() { Ok(None) } else { Err(Bad::Gone) };
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        line.extend_from_slice(&buf[..take]);
        rd.consume(take);
        if line.len() > MAX_LINE + 2 {
            return Err(Bad::Reject(too_long));
        }
        if done {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(line));
        }
    }
}

/// A line that must be there (inside a request): EOF means the peer left.
fn need_line(rd: &mut impl BufRead, too_long: u16) -> Result<Vec<u8>, Bad> {
    read_line(rd, too_long)?.ok_or(Bad::Gone)
}

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn read_request<T: Transport>(rd: &mut BufReader<T>) -> Result<Option<Request>, Bad> {
    // RFC 9112 2.2: ignore a few empty lines before a request line.
    let mut line = Vec::new();
    for _ in 0..4 {
        match read_line(rd, 414)? {
            None => return Ok(None),
            Some(l) if l.is_empty() => {}
            Some(l) => {
                line = l;
                break;
            }
        }
    }
    let at = Instant::now();
    let Ok(line) = String::from_utf8(line) else {
        return Err(Bad::Reject(400));
    };
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Bad::Reject(400));
    };
    if !is_token(method) || target.is_empty() {
        return Err(Bad::Reject(400));
    }
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        _ => return Err(Bad::Reject(400)),
    };

    let mut headers: Vec<(String, String)> = Vec::new();
    loop {
        let line = need_line(rd, 431)?;
        if line.is_empty() {
            break;
        }
        if headers.len() >= MAX_HEADERS {
            return Err(Bad::Reject(431));
        }
        // Obsolete line folding (and any leading whitespace) is rejected, as RFC 9112 allows.
        if line[0] == b' ' || line[0] == b'\t' {
            return Err(Bad::Reject(400));
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Err(Bad::Reject(400));
        };
        let Ok(name) = std::str::from_utf8(&line[..colon]) else {
            return Err(Bad::Reject(400));
        };
        if !is_token(name) {
            return Err(Bad::Reject(400));
        }
        let value = String::from_utf8_lossy(&line[colon + 1..]).trim_matches([' ', '\t']).to_owned();
        headers.push((name.to_ascii_lowercase(), value));
    }

    let values =
        |name: &str| -> Vec<&str> { headers.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect() };
    let connection = values("connection").join(",").to_ascii_lowercase();
    let close = if http10 { !connection.contains("keep-alive") } else { connection.contains("close") };
    let chunked = match values("transfer-encoding").join(",").trim() {
        "" => false,
        te if te.to_ascii_lowercase().ends_with("chunked") => true,
        _ => return Err(Bad::Reject(400)),
    };
    let length = if chunked {
        None
    } else {
        let lengths = values("content-length");
        match lengths.first() {
            None => None,
            Some(first) => {
                if lengths.iter().any(|l| l != first) {
                    return Err(Bad::Reject(400));
                }
                let Ok(n) = first.parse::<usize>() else {
                    return Err(Bad::Reject(400));
                };
                if n > MAX_BODY {
                    return Err(Bad::Reject(413));
                }
                Some(n)
            }
        }
    };
    let expects_continue = values("expect").iter().any(|v| v.eq_ignore_ascii_case("100-continue"));
    if expects_continue && !http10 && (chunked || length.unwrap_or(0) > 0) {
        let t = rd.get_mut();
        if t.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").and_then(|()| t.flush()).is_err() {
            return Err(Bad::Gone);
        }
    }

    let body = if chunked {
        read_chunked(rd)?
    } else {
        let mut body = vec![0u8; length.unwrap_or(0)];
        if rd.read_exact(&mut body).is_err() {
            return Err(Bad::Gone);
        }
        body
    };

    Ok(Some(Request {
        recorded: Recorded { method: method.to_owned(), path: target.to_owned(), headers, body, at },
        close,
    }))
}

fn read_chunked(rd: &mut impl BufRead) -> Result<Vec<u8>, Bad> {
    let mut body = Vec::new();
    loop {
        let line = need_line(rd, 400)?;
        let Ok(line) = std::str::from_utf8(&line) else {
            return Err(Bad::Reject(400));
        };
        let size = line.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size, 16) else {
            return Err(Bad::Reject(400));
        };
        if size == 0 {
            break;
        }
        if size > MAX_BODY - body.len() {
            return Err(Bad::Reject(413));
        }
        let start = body.len();
        body.resize(start + size, 0);
        if rd.read_exact(&mut body[start..]).is_err() {
            return Err(Bad::Gone);
        }
        if !need_line(rd, 400)?.is_empty() {
            return Err(Bad::Reject(400));
        }
    }
    // Trailer fields: read and dropped.
    for _ in 0..=MAX_HEADERS {
        if need_line(rd, 431)?.is_empty() {
            return Ok(body);
        }
    }
    Err(Bad::Reject(431))
}
