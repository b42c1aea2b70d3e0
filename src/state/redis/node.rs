//! One connection to one Redis server, made on demand, and every step on it
//! bounded as a whole: the connect (resolving the host name included), the
//! TLS handshake and the login run in a thread of their own that the step
//! waits for no longer than its time left; a reply is read within the step's
//! deadline however slowly it trickles, and one larger than [`MAX_REPLY`]
//! fails the step. The socket is ours (redis-rs's own connection bounds each
//! read, not the step, and reads a reply of any size); redis-rs packs the
//! commands and parses the replies.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs as _};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use ::redis::{ConnectionLike, ErrorKind, RedisError, RedisResult, Script, Value};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

use super::url::{Addr, RedisUrl};
use crate::net::tls::{self, Trust};
use crate::net::unix::UnixSocket;
use crate::util::timeout;

/// The largest reply a step reads, as the contract says: 1 MiB, its RESP
/// framing included. poll's scripts answer a few hundred bytes, or a kept
/// body, which is kept only while its reply fits (see
/// [`super::MAX_KEPT_BODY`]); a server that sends more is not one to trust.
pub(super) const MAX_REPLY: usize = 1 << 20;

/// How to reach a server: the login, database and TLS a URL names.
#[derive(Clone)]
pub(super) struct Dialer {
    user: Option<String>,
    password: Option<String>,
    db: i64,
    /// TLS to the data nodes, with the configuration that verifies them (or, with `-k`, nothing).
    tls: Option<Arc<ClientConfig>>,
}

impl Dialer {
    /// TLS trusts what `https://` does (`trust`).
    pub(super) fn new(url: &RedisUrl, trust: &Trust) -> Result<Dialer, String> {
        // Made here, when the store is made: `rediss://` may be this run's first TLS connection.
        let tls = url.tls.then(|| tls::config(trust)).transpose().map_err(|e| format!("TLS: {e}"))?;
        Ok(Dialer { user: url.user.clone(), password: url.password.clone(), db: url.db, tls })
    }

    /// The dialer of a Sentinel: no login, no database, no TLS (the URL's are the data nodes').
    pub(super) fn sentinel() -> Dialer {
        Dialer { user: None, password: None, db: 0, tls: None }
    }

    /// A server at `addr`, not connected yet.
    pub(super) fn node(&self, addr: &Addr) -> Node {
        Node { addr: addr.clone(), dialer: self.clone(), link: None }
    }
}

/// A server and the connection to it, if one is open.
pub(super) struct Node {
    addr: Addr,
    dialer: Dialer,
    link: Option<Link>,
}

impl Node {
    /// Whether a connection is open (made in an earlier step, or this one).
    pub(super) fn is_open(&self) -> bool {
        self.link.is_some()
    }

    /// Closes the connection: the next call connects afresh.
    pub(super) fn close(&mut self) {
        self.link = None;
    }

    /// Runs `send` on the connection, connecting first if need be, all of it
    /// by `deadline`. Any failure but a server's error reply closes the
    /// connection (a reply cut short leaves it in no state to reuse).
    fn query<T>(&mut self, deadline: Instant, send: impl FnOnce(&mut Bounded<'_>) -> RedisResult<T>) -> RedisResult<T> {
        let result = self.connected(deadline).and_then(|link| send(&mut Bounded::new(link, deadline)));
        if let Err(e) = &result
            && !matches!(e.kind(), ErrorKind::Server(_) | ErrorKind::Extension)
        {
            self.close();
        }
        result
    }

    /// Sends one command and reads its reply; an error reply is an `Err`.
    pub(super) fn request(&mut self, deadline: Instant, cmd: &::redis::Cmd) -> RedisResult<Value> {
        self.query(deadline, |link| link.req_command(cmd).and_then(Value::extract_error))
    }

    /// Runs `script` (by EVALSHA, `cmd`) here; loads it on NOSCRIPT and runs it
    /// again. `asking`: after an `ASK`, each EVALSHA goes after an `ASKING`
    /// in the same round trip.
    pub(super) fn eval(
        &mut self,
        deadline: Instant,
        script: &Script,
        cmd: &::redis::Cmd,
        asking: bool,
    ) -> RedisResult<Value> {
        let once = |link: &mut Bounded<'_>| -> RedisResult<Value> {
            if !asking {
                return link.req_command(cmd).and_then(Value::extract_error);
            }
            let mut packed = ::redis::cmd("ASKING").get_packed_command();
            packed.extend_from_slice(&cmd.get_packed_command());
            let replies = link.req_packed_commands(&packed, 1, 1)?;
            let no_reply = || Err(RedisError::from((ErrorKind::Parse, "no reply to EVALSHA after ASKING")));
            replies.into_iter().next().map_or_else(no_reply, Value::extract_error)
        };
        match self.query(deadline, once) {
            Err(e) if e.kind() == ErrorKind::Server(::redis::ServerErrorKind::NoScript) => {
                self.query(deadline, |link| script.load(link))?;
                self.query(deadline, once)
            }
            result => result,
        }
    }

    /// The connection, made if there is none.
    fn connected(&mut self, deadline: Instant) -> RedisResult<&mut Link> {
        if self.link.is_none() {
            self.link = Some(connect(&self.addr, &self.dialer, deadline)?);
        }
        self.link.as_mut().ok_or_else(timed_out)
    }
}

/// Connects by `deadline`, the host name's resolution included, on a thread
/// of its own: a resolver that hangs (a dead DNS server) costs the time left,
/// not its own timeout. The thread left behind by a timeout ends by itself:
/// every read and write it makes is bounded by the same deadline.
fn connect(addr: &Addr, dialer: &Dialer, deadline: Instant) -> RedisResult<Link> {
    let (send, receive) = mpsc::channel();
    let (addr, dialer) = (addr.clone(), dialer.clone());
    std::thread::Builder::new()
        .name("redis-connect".into())
        .spawn(move || {
            let _ = send.send(Link::open(&addr, &dialer, deadline));
        })
        .map_err(RedisError::from)?;
    within(&receive, deadline.saturating_duration_since(Instant::now()))
}

/// The answer on `receive`, if it comes within `left`.
fn within<T>(receive: &mpsc::Receiver<RedisResult<T>>, left: Duration) -> RedisResult<T> {
    match receive.recv_timeout(left) {
        Ok(result) => result,
        Err(_) => Err(timed_out()),
    }
}

pub(super) fn timed_out() -> RedisError {
    RedisError::from(io::Error::new(io::ErrorKind::TimedOut, "the step's time is up"))
}

/// An open connection: the socket, and redis-rs's parser of what it reads
/// (it may hold the start of the next reply).
struct Link {
    stream: NodeStream,
    parser: ::redis::Parser,
    db: i64,
}

enum NodeStream {
    Tcp(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
    /// `redis+unix://` (`net/unix.rs` owns the platform's Unix sockets).
    Unix(UnixSocket),
}

impl NodeStream {
    /// Bounds the next read and write of the socket by `left`, in the platform's unit.
    fn set_timeouts(&self, left: Duration) -> io::Result<()> {
        let left = Some(timeout::socket(left));
        match self {
            NodeStream::Tcp(socket) => socket.set_read_timeout(left).and_then(|()| socket.set_write_timeout(left)),
            NodeStream::Tls(tls) => tls.sock.set_read_timeout(left).and_then(|()| tls.sock.set_write_timeout(left)),
            NodeStream::Unix(socket) => socket.set_timeouts(left),
        }
    }
}

impl Read for NodeStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            NodeStream::Tcp(socket) => socket.read(buf),
            NodeStream::Tls(tls) => tls.read(buf),
            NodeStream::Unix(socket) => socket.read(buf),
        }
    }
}

impl Write for NodeStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            NodeStream::Tcp(socket) => socket.write(buf),
            NodeStream::Tls(tls) => tls.write(buf),
            NodeStream::Unix(socket) => socket.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            NodeStream::Tcp(socket) => socket.flush(),
            NodeStream::Tls(tls) => tls.flush(),
            NodeStream::Unix(socket) => socket.flush(),
        }
    }
}

impl Link {
    /// Connects to `addr`, with TLS and the login when the URL names them, by `deadline`.
    fn open(addr: &Addr, dialer: &Dialer, deadline: Instant) -> RedisResult<Link> {
        let left = || {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() { Err(timed_out()) } else { Ok(left) }
        };
        let stream = match addr {
            Addr::Tcp { host, port } => {
                let socket = tcp(host, *port, &left)?;
                match &dialer.tls {
                    Some(config) => NodeStream::Tls(Box::new(handshake(config, host, socket, &left)?)),
                    None => NodeStream::Tcp(socket),
                }
            }
            Addr::Unix(path) => NodeStream::Unix(UnixSocket::connect(path).map_err(|e| match e.kind() {
                // No Unix sockets on this system: the URL cannot work here, not a server that is down.
                io::ErrorKind::Unsupported => {
                    RedisError::from((ErrorKind::InvalidClientConfig, "Unix sockets need a Unix-like system"))
                }
                _ => RedisError::from(e),
            })?),
        };
        let mut link = Link { stream, parser: ::redis::Parser::new(), db: dialer.db };
        link.log_in(dialer, deadline)?;
        Ok(link)
    }

    /// AUTH and SELECT, as the URL names them.
    fn log_in(&mut self, dialer: &Dialer, deadline: Instant) -> RedisResult<()> {
        let mut bounded = Bounded::new(self, deadline);
        if let Some(password) = &dialer.password {
            let mut auth = ::redis::cmd("AUTH");
            if let Some(user) = &dialer.user {
                auth.arg(user);
            }
            auth.arg(password);
            if let Value::ServerError(_) = bounded.req_command(&auth)? {
                return Err(RedisError::from((ErrorKind::AuthenticationFailed, "Password authentication failed")));
            }
        }
        if dialer.db != 0 {
            bounded.req_command(::redis::cmd("SELECT").arg(dialer.db)).and_then(Value::extract_error)?;
        }
        Ok(())
    }
}

/// A TCP connection to `host:port`, each address tried within the time left.
fn tcp(host: &str, port: u16, left: &dyn Fn() -> RedisResult<Duration>) -> RedisResult<TcpStream> {
    let mut last = None;
    for address in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&address, left()?) {
            Ok(socket) => {
                // Each step is one small request and its reply: no Nagle delay.
                socket.set_nodelay(true)?;
                return Ok(socket);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.map_or_else(|| RedisError::from((ErrorKind::Io, "the host name has no address")), RedisError::from))
}

/// The TLS handshake with `host` over `socket`, within the time left.
fn handshake(
    config: &Arc<ClientConfig>,
    host: &str,
    mut socket: TcpStream,
    left: &dyn Fn() -> RedisResult<Duration>,
) -> RedisResult<StreamOwned<ClientConnection, TcpStream>> {
    let name = ServerName::try_from(host.to_string())
        .map_err(|_| RedisError::from((ErrorKind::InvalidClientConfig, "the host is no valid TLS server name")))?;
    let mut connection = ClientConnection::new(Arc::clone(config), name).map_err(io::Error::other)?;
    while connection.is_handshaking() {
        let left = timeout::socket(left()?);
        socket.set_read_timeout(Some(left))?;
        socket.set_write_timeout(Some(left))?;
        connection.complete_io(&mut socket)?;
    }
    Ok(StreamOwned::new(connection, socket))
}

/// A connection for one step: every read and write within `deadline`, and
/// at most [`MAX_REPLY`] bytes read, however the server sends them.
struct Bounded<'a> {
    link: &'a mut Link,
    deadline: Instant,
    read: usize,
}

impl<'a> Bounded<'a> {
    fn new(link: &'a mut Link, deadline: Instant) -> Bounded<'a> {
        Bounded { link, deadline, read: 0 }
    }

    fn left(&self) -> io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() { Err(io::Error::new(io::ErrorKind::TimedOut, "the step's time is up")) } else { Ok(left) }
    }

    fn send(&mut self, packed: &[u8]) -> RedisResult<()> {
        self.link.stream.set_timeouts(self.left()?)?;
        self.link.stream.write_all(packed)?;
        self.link.stream.flush()?;
        Ok(())
    }

    fn receive(&mut self) -> RedisResult<Value> {
        let parser = &mut self.link.parser;
        let mut reader = Reader { stream: &mut self.link.stream, deadline: self.deadline, read: &mut self.read };
        parser.parse_value(&mut reader)
    }
}

/// The socket as the parser reads it: each read bounded by what is left of
/// the step's time and of [`MAX_REPLY`].
struct Reader<'a> {
    stream: &'a mut NodeStream,
    deadline: Instant,
    read: &'a mut usize,
}

impl Read for Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "the step's time is up"));
        }
        let room = MAX_REPLY.saturating_sub(*self.read);
        if room == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a reply larger than 1 MiB"));
        }
        self.stream.set_timeouts(left)?;
        let end = buf.len().min(room);
        let n = self.stream.read(&mut buf[..end])?;
        *self.read += n;
        Ok(n)
    }
}

impl ConnectionLike for Bounded<'_> {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        self.send(cmd)?;
        self.receive()
    }

    fn req_packed_commands(&mut self, cmd: &[u8], offset: usize, count: usize) -> RedisResult<Vec<Value>> {
        self.send(cmd)?;
        let mut replies = Vec::with_capacity(count);
        for i in 0..offset + count {
            let reply = self.receive()?;
            if i >= offset {
                replies.push(reply);
            }
        }
        Ok(replies)
    }

    fn get_db(&self) -> i64 {
        self.link.db
    }

    fn check_connection(&mut self) -> bool {
        true
    }

    fn is_open(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connect whose resolver hangs (a dead DNS server) costs the time left, not the resolver's timeout.
    #[test]
    fn a_connect_that_hangs_is_given_up_when_the_time_is_up() {
        let (send, receive) = mpsc::channel::<RedisResult<()>>();
        let hanging = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(2));
            drop(send);
        });
        let started = Instant::now();
        let Err(e) = within(&receive, Duration::from_millis(200)) else { panic!("nothing answered") };
        let took = started.elapsed();
        assert!(e.is_timeout(), "{e}");
        assert!(took >= Duration::from_millis(190) && took < Duration::from_millis(1_000), "{took:?}");
        drop(receive);
        let _ = hanging.join();
        let (send, receive) = mpsc::channel();
        let _ = send.send(Ok(7));
        assert_eq!(within(&receive, Duration::from_millis(1)).ok(), Some(7));
    }
}
