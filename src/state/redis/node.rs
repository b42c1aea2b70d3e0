//! One connection to one Redis server, made on demand and bounded by the
//! step's time: the connect (resolving the host name included), the TLS
//! handshake and the login run in a thread of their own that the step waits
//! for no longer than its time left, since redis-rs resolves a name before
//! its connect timeout starts. Every read and write is bounded by the time
//! left too.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use ::redis::{
    Client, ConnectionAddr, ConnectionInfo, ConnectionLike as _, ErrorKind, IntoConnectionInfo as _,
    RedisConnectionInfo, RedisError, RedisResult, Script, TlsCertificates, Value,
};

use super::url::{Addr, RedisUrl};
use crate::http::tls;
use crate::util::clock;

/// How to reach a server: the login, database and TLS a URL names.
pub(super) struct Dialer {
    settings: RedisConnectionInfo,
    tls: bool,
    insecure: bool,
    /// The roots to trust (the system's, as for https, and `--cacert`), as a PEM bundle.
    roots: Option<Vec<u8>>,
}

impl Dialer {
    /// `cacert` (PEM) is trusted besides the system's roots for TLS, and
    /// `insecure` (`-k`) verifies nothing, as for https.
    pub(super) fn new(url: &RedisUrl, cacert: Option<&[u8]>, insecure: bool) -> Dialer {
        let mut settings = RedisConnectionInfo::default().set_db(url.db).set_skip_set_lib_name();
        if let Some(user) = &url.user {
            settings = settings.set_username(user);
        }
        if let Some(password) = &url.password {
            settings = settings.set_password(password);
        }
        // Read here, when the store is made: `rediss://` is this run's first TLS connection.
        let roots = (url.tls && !insecure).then(|| tls::pem_bundle(cacert));
        Dialer { settings, tls: url.tls, insecure, roots }
    }

    /// The dialer of a Sentinel: no login, no database, no TLS (the URL's are the data nodes').
    pub(super) fn sentinel() -> Dialer {
        Dialer {
            settings: RedisConnectionInfo::default().set_skip_set_lib_name(),
            tls: false,
            insecure: false,
            roots: None,
        }
    }

    /// A server at `addr`, not connected yet.
    pub(super) fn node(&self, addr: &Addr) -> RedisResult<Node> {
        let addr = match addr {
            Addr::Tcp { host, port } if self.tls => {
                ConnectionAddr::TcpTls { host: host.clone(), port: *port, insecure: self.insecure, tls_params: None }
            }
            Addr::Tcp { host, port } => ConnectionAddr::Tcp(host.clone(), *port),
            Addr::Unix(path) => ConnectionAddr::Unix(path.clone()),
        };
        // Each step is one small request and its reply: no Nagle delay.
        let tcp = ::redis::io::tcp::TcpSettings::default().set_nodelay(true);
        let info: ConnectionInfo =
            addr.into_connection_info()?.set_redis_settings(self.settings.clone()).set_tcp_settings(tcp);
        let client = match &self.roots {
            // Given roots replace redis-rs's built-in (Mozilla) ones: the system's come along in `pem`.
            Some(pem) => {
                let roots = TlsCertificates { client_tls: None, root_cert: Some(pem.clone()) };
                Client::build_with_tls(info, roots)?
            }
            None => Client::open(info)?,
        };
        Ok(Node { client, connection: None, bound: None })
    }
}

/// A server and the connection to it, if one is open.
pub(super) struct Node {
    client: Client,
    connection: Option<::redis::Connection>,
    /// The read and write timeout the connection has now.
    bound: Option<Duration>,
}

impl Node {
    /// Whether a connection is open (made in an earlier step, or this one).
    pub(super) fn is_open(&self) -> bool {
        self.connection.is_some()
    }

    /// Closes the connection: the next call connects afresh.
    pub(super) fn close(&mut self) {
        self.connection = None;
    }

    /// Sends `cmd` (a command or a pipeline), connecting first if need be,
    /// every part bounded by `deadline`. Any failure but a server's error
    /// reply closes the connection.
    pub(super) fn query<T>(
        &mut self,
        deadline: Instant,
        send: impl FnOnce(&mut ::redis::Connection) -> RedisResult<T>,
    ) -> RedisResult<T> {
        let result = self.bounded(deadline).and_then(send);
        if let Err(e) = &result
            && !matches!(e.kind(), ErrorKind::Server(_) | ErrorKind::Extension)
        {
            self.close();
        }
        result
    }

    /// Sends one command and reads its reply; an error reply is an `Err`.
    pub(super) fn request(&mut self, deadline: Instant, cmd: &::redis::Cmd) -> RedisResult<Value> {
        self.query(deadline, |connection| connection.req_command(cmd).and_then(Value::extract_error))
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
        let once = |connection: &mut ::redis::Connection| -> RedisResult<Value> {
            if !asking {
                return connection.req_command(cmd).and_then(Value::extract_error);
            }
            let mut packed = ::redis::cmd("ASKING").get_packed_command();
            packed.extend_from_slice(&cmd.get_packed_command());
            let replies = connection.req_packed_commands(&packed, 1, 1)?;
            let no_reply = || Err(RedisError::from((ErrorKind::Parse, "no reply to EVALSHA after ASKING")));
            replies.into_iter().next().map_or_else(no_reply, Value::extract_error)
        };
        match self.query(deadline, once) {
            Err(e) if e.kind() == ErrorKind::Server(::redis::ServerErrorKind::NoScript) => {
                self.query(deadline, |connection| script.load(connection))?;
                self.query(deadline, once)
            }
            result => result,
        }
    }

    /// The connection, made if there is none, with its timeouts set to the time left.
    fn bounded(&mut self, deadline: Instant) -> RedisResult<&mut ::redis::Connection> {
        let left = || {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() { Err(timed_out()) } else { Ok(left) }
        };
        if self.connection.is_none() {
            self.bound = None;
            self.connection = Some(connect(&self.client, left()?)?);
        }
        let Some(connection) = &mut self.connection else { return Err(timed_out()) };
        // The time left, cut to whole 10 ms: the same step after step, so that the
        // socket's timeouts are set only when it changes, not twice a step.
        let bound = Duration::from_millis(clock::ms(left()?) / 10 * 10).max(Duration::from_millis(1));
        if self.bound != Some(bound) {
            connection.set_read_timeout(Some(bound))?;
            connection.set_write_timeout(Some(bound))?;
            self.bound = Some(bound);
        }
        Ok(connection)
    }
}

/// Connects within `left`, the host name's resolution included: redis-rs
/// resolves before its own timeout starts, and gives each address the whole
/// timeout. The connecting thread left behind by a timeout ends by itself
/// (its connection, if it ever gets one, is dropped).
fn connect(client: &Client, left: Duration) -> RedisResult<::redis::Connection> {
    let (send, receive) = mpsc::channel();
    let client = client.clone();
    std::thread::Builder::new()
        .name("redis-connect".into())
        .spawn(move || {
            let _ = send.send(client.get_connection_with_timeout(left));
        })
        .map_err(RedisError::from)?;
    within(&receive, left)
}

/// The answer on `receive`, if it comes within `left`.
fn within<T>(receive: &mpsc::Receiver<RedisResult<T>>, left: Duration) -> RedisResult<T> {
    match receive.recv_timeout(left) {
        Ok(result) => result,
        Err(_) => Err(timed_out()),
    }
}

pub(super) fn timed_out() -> RedisError {
    RedisError::from(std::io::Error::new(std::io::ErrorKind::TimedOut, "the step's time is up"))
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
