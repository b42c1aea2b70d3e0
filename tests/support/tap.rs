//! A tap in front of a scripted server (`server.rs`): a relay on a loopback port of its own that
//! passes every byte both ways as the server sends it (holds, half-closes and resets included),
//! and sees what the server cannot: a request the client began and never finished.
//!
//! The scripted server counts the requests it cannot parse (`bad_requests()`), but a client that
//! sends half a request head and then closes is, to the server, a peer that left: nothing is
//! counted. The tap cuts the client's bytes into requests (a head, then a `Content-Length` or
//! chunked body) and keeps every connection that ended inside one (`partial_requests()`).
//! It also counts the connections a client opened (`connections()`: 0 for "nothing was sent"),
//! and can come up after its client (`start_on` a [`Port`] reserved beforehand: a server not up
//! yet, whose port refuses connections until then and that no one else can take meanwhile).

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How often a relay's reader of the client looks up from its read to see whether it should stop.
const TICK: Duration = Duration::from_millis(50);
/// How long `Drop` waits for the relays to end.
const JOIN_WAIT: Duration = Duration::from_secs(2);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

struct Shared {
    backend: SocketAddr,
    stopped: AtomicBool,
    connections: AtomicUsize,
    /// Relays still reading their client.
    reading: AtomicUsize,
    /// Each connection that ended inside a request, in words.
    partial: Mutex<Vec<String>>,
    /// A clone of both sockets of every open relay, so that `Drop` can unblock them.
    open: Mutex<HashMap<u64, (TcpStream, TcpStream)>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// A loopback port held for a tap that comes up later: bound, not listening, so that connections
/// to it are refused (as to a server not up yet) and no other socket can take it meanwhile.
pub struct Port(socket2::Socket);

impl Port {
    pub fn reserve() -> Port {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("a TCP socket");
        socket.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into()).expect("bind 127.0.0.1:0");
        Port(socket)
    }

    pub fn number(&self) -> u16 {
        self.0.local_addr().ok().and_then(|a| a.as_socket()).map_or(0, |a| a.port())
    }

    /// Listens on it, accepting nothing: a port that opens, for a `tcp://` target (the kernel
    /// completes each connection on its own, up to the backlog).
    pub fn listen(self) -> socket2::Socket {
        self.0.listen(128).expect("listen on the reserved port");
        self.0
    }
}

/// A relay on 127.0.0.1 to a backend; stops when dropped.
pub struct Tap {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl Tap {
    /// A tap on `port`, which starts listening now, in front of `backend`.
    pub fn start_on(port: Port, backend: SocketAddr) -> Tap {
        port.0.listen(128).expect("listen on the tap's port");
        let listener: TcpListener = port.0.into();
        let addr = listener.local_addr().expect("local_addr of the tap");
        let shared = Arc::new(Shared {
            backend,
            stopped: AtomicBool::new(false),
            connections: AtomicUsize::new(0),
            reading: AtomicUsize::new(0),
            partial: Mutex::new(Vec::new()),
            open: Mutex::new(HashMap::new()),
            threads: Mutex::new(Vec::new()),
        });
        let sh = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name(format!("tap-{}", addr.port()))
            .spawn(move || accept_loop(&listener, &sh))
            .expect("spawn the tap's acceptor");
        Tap { addr, shared, acceptor: Some(acceptor) }
    }

    /// Connections a client opened to the tap.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Waits (at most 1 s) until every relay has read its client to the end: once the client's
    /// process has exited, what it sent is all there is.
    pub fn settle(&self) {
        let deadline = Instant::now() + Duration::from_secs(1);
        while self.shared.reading.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Every connection whose client bytes ended inside a request, in words (after `settle`).
    pub fn partial_requests(&self) -> Vec<String> {
        lock(&self.shared.partial).clone()
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        let sh = &self.shared;
        sh.stopped.store(true, Ordering::SeqCst);
        drop(TcpStream::connect_timeout(&self.addr, Duration::from_millis(500)));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for (client, backend) in lock(&sh.open).values() {
            let _ = client.shutdown(Shutdown::Both);
            let _ = backend.shutdown(Shutdown::Both);
        }
        let deadline = Instant::now() + JOIN_WAIT;
        for handle in std::mem::take(&mut *lock(&sh.threads)) {
            while !handle.is_finished() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(2));
            }
            if handle.is_finished() {
                let _ = handle.join();
            }
        }
    }
}

fn accept_loop(listener: &TcpListener, sh: &Arc<Shared>) {
    let mut next_id = 0u64;
    loop {
        let incoming = listener.accept();
        if sh.stopped.load(Ordering::SeqCst) {
            break;
        }
        let Ok((client, _)) = incoming else {
            thread::sleep(Duration::from_millis(10));
            continue;
        };
        sh.connections.fetch_add(1, Ordering::SeqCst);
        sh.reading.fetch_add(1, Ordering::SeqCst);
        let id = next_id;
        next_id += 1;
        let relay_sh = Arc::clone(sh);
        let spawned =
            thread::Builder::new().name(format!("tap-relay-{id}")).spawn(move || relay(client, id, &relay_sh));
        match spawned {
            Ok(handle) => lock(&sh.threads).push(handle),
            Err(_) => _ = sh.reading.fetch_sub(1, Ordering::SeqCst),
        }
    }
}

/// Counts a relay out of `reading` however it ends.
struct Reading<'a>(&'a Shared);

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.0.reading.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Sends a TCP RST when the socket's last handle closes (SO_LINGER 0).
fn reset_on_close(tcp: &TcpStream) {
    let _ = socket2::SockRef::from(tcp).set_linger(Some(Duration::ZERO));
}

/// One client connection: the server's bytes to the client on this thread, the client's bytes to
/// the server (cut into requests) on a scoped one.
fn relay(client: TcpStream, id: u64, sh: &Shared) {
    let _ = client.set_nodelay(true);
    // Counted out when the client's side is read to its end, or at once when there is no relay.
    let reading = Reading(sh);
    let Ok(backend) = TcpStream::connect_timeout(&sh.backend, Duration::from_secs(1)) else {
        reset_on_close(&client);
        return;
    };
    let _ = backend.set_nodelay(true);
    let (Ok(client_up), Ok(backend_up), Ok(client_kept), Ok(backend_kept)) =
        (client.try_clone(), backend.try_clone(), client.try_clone(), backend.try_clone())
    else {
        reset_on_close(&client);
        return;
    };
    lock(&sh.open).insert(id, (client_kept, backend_kept));
    let server_reset = AtomicBool::new(false);
    let server_reset = &server_reset;
    thread::scope(|scope| {
        scope.spawn(move || {
            upstream(client_up, backend_up, sh, server_reset);
            drop(reading);
        });
        downstream(backend, &client, server_reset);
    });
    // The last handles of both sockets close here (and `client`'s sends the RST when the server reset).
    lock(&sh.open).remove(&id);
}

/// The server's bytes to the client, until the server closes (FIN to the client) or resets
/// (RST to the client, once the other half has let go of the socket).
fn downstream(mut backend: TcpStream, mut client: &TcpStream, server_reset: &AtomicBool) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match backend.read(&mut buf) {
            Ok(0) => {
                let _ = client.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => {
                if client.write_all(&buf[..n]).is_err() {
                    let _ = backend.shutdown(Shutdown::Both);
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => {
                reset_on_close(client);
                server_reset.store(true, Ordering::SeqCst);
                return;
            }
        }
    }
}

/// The client's bytes to the server, cut into requests; a connection that ends inside one is kept.
fn upstream(mut client: TcpStream, mut backend: TcpStream, sh: &Shared, server_reset: &AtomicBool) {
    let _ = client.set_read_timeout(Some(TICK));
    let mut cutter = Cutter::default();
    let mut buf = [0u8; 16 * 1024];
    let ended = loop {
        if server_reset.load(Ordering::SeqCst) || sh.stopped.load(Ordering::SeqCst) {
            break None;
        }
        match client.read(&mut buf) {
            Ok(0) => break Some("closed"),
            Ok(n) => {
                cutter.feed(&buf[..n]);
                if backend.write_all(&buf[..n]).is_err() {
                    break None;
                }
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break Some("reset"),
        }
    };
    // Only the client's own ending tells of a request cut short: a server that reset or a tap that
    // stops (its `Drop` shuts every socket down) cut it themselves.
    let ended = ended.filter(|_| !sh.stopped.load(Ordering::SeqCst));
    if let (Some(how), Some(partial)) = (ended, cutter.unfinished()) {
        lock(&sh.partial).push(format!("the client {how} the connection {partial}"));
    }
    let _ = backend.shutdown(Shutdown::Write);
}

/// The client's bytes, cut into whole requests as they arrive.
#[derive(Default)]
struct Cutter {
    unread: Vec<u8>,
    whole: usize,
}

impl Cutter {
    fn feed(&mut self, bytes: &[u8]) {
        self.unread.extend_from_slice(bytes);
        while let Some(n) = request_length(&self.unread) {
            self.unread.drain(..n);
            self.whole += 1;
        }
    }

    /// The request begun and not finished, in words; `None` when the bytes end between requests.
    fn unfinished(&self) -> Option<String> {
        if self.unread.is_empty() {
            return None;
        }
        let first = self.unread.split(|&b| b == b'\n').next().unwrap_or_default();
        let first = String::from_utf8_lossy(&first[..first.len().min(120)]).trim_end().to_string();
        let part = if find(&self.unread, b"\r\n\r\n").is_some() { "its body" } else { "its head" };
        Some(format!(
            "inside request {} ({} bytes of it sent, cut in {part}): {first:?}",
            self.whole + 1,
            self.unread.len()
        ))
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The length of the whole request at the start of `bytes`, once all of it is there.
fn request_length(bytes: &[u8]) -> Option<usize> {
    let head = find(bytes, b"\r\n\r\n")? + 4;
    let text = String::from_utf8_lossy(&bytes[..head]).to_ascii_lowercase();
    let field = |name: &str| {
        text.lines().find_map(|line| line.strip_prefix(name).and_then(|rest| rest.strip_prefix(':')).map(str::trim))
    };
    if field("transfer-encoding").is_some_and(|te| te.ends_with("chunked")) {
        return chunked_length(bytes, head);
    }
    let length = field("content-length").and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
    (bytes.len() >= head + length).then_some(head + length)
}

/// The end of a chunked body that starts at `at`, once all of it (and its trailer) is there.
fn chunked_length(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let line_end = at + find(&bytes[at..], b"\r\n")?;
        let size = String::from_utf8_lossy(&bytes[at..line_end]);
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16).ok()?;
        at = line_end + 2;
        if size == 0 {
            // The trailer: lines up to an empty one.
            loop {
                let end = at + find(&bytes[at..], b"\r\n")?;
                let empty = end == at;
                at = end + 2;
                if empty {
                    return Some(at);
                }
            }
        }
        at += size + 2;
        if bytes.len() < at {
            return None;
        }
    }
}

#[test]
fn the_cutter_finds_whole_requests_and_the_one_cut_short() {
    let mut cutter = Cutter::default();
    cutter.feed(b"GET /a HTTP/1.1\r\nHost: h\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nab");
    assert_eq!(cutter.whole, 1);
    cutter.feed(b"c");
    assert_eq!((cutter.whole, cutter.unfinished()), (2, None));
    cutter.feed(b"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n");
    assert_eq!((cutter.whole, cutter.unfinished()), (3, None));
    cutter.feed(b"GET /d HTTP/1.1\r\nCookie: a=");
    assert_eq!(cutter.whole, 3);
    let cut = cutter.unfinished().expect("a request cut short");
    assert!(cut.contains("request 4") && cut.contains("its head") && cut.contains("GET /d"), "{cut}");
}
