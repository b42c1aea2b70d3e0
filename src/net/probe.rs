//! The whole attempt of a `tcp://` or `unix://` target: a connection opened, then closed at
//! once with nothing sent, as wait-for-it, dockerize and Testcontainers' port wait do. Every
//! address a name resolves to is tried, in the resolver's order (IPv6 and IPv4), each connect
//! bounded by `--connect-timeout` (never past the time left); a name is resolved on a thread
//! given up at that bound, since the system's resolver has none. What happened comes back as
//! plain words and a class ([`Knocked`]); `run/port.rs` makes the rules' outcome of it.

use std::io::{self, ErrorKind};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs as _};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::net::unix::{self, NoPermission, NotASocket};
use crate::util::text::cut;
use crate::util::url::Endpoint;

/// How a knock went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Knocked {
    /// A connection opened (and was closed at once).
    Open,
    /// Every address refused it; or no socket file is there (yet, or any more), or nobody listens on it.
    Refused,
    /// The name did not resolve (yet).
    Unresolved,
    /// No address answered within `--connect-timeout`.
    TimedOut,
    /// Reset, unreachable, or another failure of the connect itself: nothing answered.
    Failed,
    /// `unix://` names something that is no socket.
    NotASocket,
    /// `unix://` names a socket this user may not open.
    NoPermission,
}

/// What a knock found, and its words for `-v` and messages (`refused`, `open at [::1]:5432`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Knock {
    pub knocked: Knocked,
    pub words: String,
}

impl Knock {
    fn new(knocked: Knocked, words: impl Into<String>) -> Knock {
        Knock { knocked, words: words.into() }
    }
}

/// Opens a connection to `endpoint` and closes it; each connect (and a name's resolution)
/// takes at most `bound`.
pub(crate) fn knock(endpoint: &Endpoint, bound: Duration) -> Knock {
    match endpoint {
        Endpoint::Tcp { host, port } => tcp(host, *port, bound),
        Endpoint::Unix(path) => match unix::connect(path, Some(bound)) {
            Ok(socket) => {
                drop(socket);
                Knock::new(Knocked::Open, "open")
            }
            Err(e) => {
                let knocked = match e.kind() {
                    _ if e.get_ref().is_some_and(|inner| inner.is::<NotASocket>()) => Knocked::NotASocket,
                    _ if e.get_ref().is_some_and(|inner| inner.is::<NoPermission>()) => Knocked::NoPermission,
                    ErrorKind::ConnectionRefused => Knocked::Refused,
                    ErrorKind::TimedOut => Knocked::TimedOut,
                    _ => Knocked::Failed,
                };
                let words = match knocked {
                    Knocked::TimedOut => "connect timed out (the listener's backlog is full)".to_string(),
                    _ => e.to_string(),
                };
                Knock::new(knocked, words)
            }
        },
    }
}

/// `host:port` over TCP: each address in turn until one opens.
fn tcp(host: &str, port: u16, bound: Duration) -> Knock {
    let addresses = match resolve(host, port, bound) {
        Ok(addresses) => addresses,
        Err(words) => return Knock::new(Knocked::Unresolved, words),
    };
    let literal = host.parse::<IpAddr>().is_ok();
    let mut tried = Vec::new();
    for address in &addresses {
        match TcpStream::connect_timeout(address, bound.max(Duration::from_millis(1))) {
            Ok(stream) => {
                // Nothing is sent: the connection is its own answer.
                let _ = stream.shutdown(std::net::Shutdown::Both);
                let words = if literal { "open".to_string() } else { format!("open at {address}") };
                return Knock::new(Knocked::Open, words);
            }
            Err(e) => tried.push((address, failure(&e))),
        }
    }
    let knocked = match tried.iter().find(|(_, (knocked, _))| *knocked != Knocked::Refused) {
        Some((_, (knocked, _))) => *knocked,
        None => Knocked::Refused,
    };
    let words = match tried.as_slice() {
        // A literal names its one address already; a name's line says which address did what.
        [(_, (_, words))] if literal => words.to_string(),
        _ => tried.iter().map(|(address, (_, words))| format!("{address} {words}")).collect::<Vec<_>>().join(", "),
    };
    Knock::new(knocked, words)
}

/// A failed connect's class and words.
fn failure(e: &io::Error) -> (Knocked, &'static str) {
    match e.kind() {
        ErrorKind::ConnectionRefused => (Knocked::Refused, "refused"),
        ErrorKind::TimedOut | ErrorKind::WouldBlock => (Knocked::TimedOut, "connect timed out"),
        ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable | ErrorKind::NetworkDown => {
            (Knocked::Failed, "unreachable")
        }
        ErrorKind::AddrNotAvailable => (Knocked::Failed, "address not available"),
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => (Knocked::Failed, "reset"),
        _ => (Knocked::Failed, "connect failed"),
    }
}

/// The addresses of `host` (an IP literal at once), resolved within `bound`.
fn resolve(host: &str, port: u16, bound: Duration) -> Result<Vec<SocketAddr>, String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let (tell, told) = mpsc::channel();
    let name = host.to_string();
    let started = Instant::now();
    let looked_up = std::thread::Builder::new().name("resolve".into()).spawn(move || {
        let _ = tell.send((name.as_str(), port).to_socket_addrs().map(Vec::from_iter));
    });
    if looked_up.is_err() {
        return Err("cannot start a thread to resolve it".to_string());
    }
    let host = cut(host);
    match told.recv_timeout(bound) {
        Ok(Ok(addresses)) if !addresses.is_empty() => Ok(addresses),
        Ok(Ok(_)) => Err(format!("`{host}` resolved to no address")),
        Ok(Err(e)) => Err(format!("`{host}` did not resolve: {e}")),
        // The thread is left to the resolver; the process ends soon after a run that needed it.
        Err(_) => Err(format!("`{host}` did not resolve within {:?}", started.elapsed())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn an_open_port_opens_and_a_closed_one_is_refused() {
        let Ok(listener) = TcpListener::bind("127.0.0.1:0") else { return };
        let Ok(address) = listener.local_addr() else { return };
        let endpoint = Endpoint::Tcp { host: "127.0.0.1".into(), port: address.port() };
        assert_eq!(knock(&endpoint, Duration::from_secs(5)), Knock::new(Knocked::Open, "open"));
        drop(listener);
        let knocked = knock(&endpoint, Duration::from_secs(5));
        assert_eq!(knocked, Knock::new(Knocked::Refused, "refused"));
        let named = Endpoint::Tcp { host: "localhost".into(), port: address.port() };
        assert_eq!(knock(&named, Duration::from_secs(5)).knocked, Knocked::Refused);
    }

    #[test]
    fn a_name_that_does_not_resolve_is_unresolved() {
        let endpoint = Endpoint::Tcp { host: "poll-test.invalid".into(), port: 80 };
        assert_eq!(knock(&endpoint, Duration::from_secs(5)).knocked, Knocked::Unresolved);
        // A name of 5,000 bytes is quoted in 200 characters.
        let long = Endpoint::Tcp { host: format!("{}.invalid", "b".repeat(5000)), port: 80 };
        let knocked = knock(&long, Duration::from_secs(5));
        assert_eq!(knocked.knocked, Knocked::Unresolved);
        assert!(knocked.words.contains("... 4808 bytes more` did not resolve"), "{}", knocked.words);
    }
}
