//! How a loop's ureq agent connects and resolves, built by [`agent`]. The
//! gaps it fills, each for the transports of `wire.rs`:
//!
//! - TCP: ureq's own connector makes ureq's transport; [`Tcp`] is ureq's
//!   connect (its address order, its geometric split of the connect
//!   timeout, its "only this address" errors) making a [`Wire`].
//! - Unix sockets, which ureq has none of (`--unix-socket`).
//! - TLS on this process's one configuration (`net/tls.rs`: the roots read
//!   on the first TLS connection, `-k`, `--cacert` and `--cert` in one
//!   place), where ureq builds one configuration per agent from roots given
//!   up front; the client certificate only to the origins of the loop's
//!   [`CertScope`], which ureq has no knob for.
//! - An `http://` URL through an HTTP proxy in absolute form
//!   (`absolute_form.rs`), where ureq 3 opens a `CONNECT` tunnel.
//! - Host names that are IP literals answered at once ([`LiteralResolver`]):
//!   with a timeout set, ureq resolves on a new thread for every request,
//!   even one that reuses a pooled connection (most of a tight poll's cost,
//!   docs/BENCHMARKS.md).
//!
//! It implements `ureq::unversioned`'s connector and resolver traits, which
//! ureq may change in any minor release: CONTRIBUTING.md's "Upgrading ureq or jaq".

use std::io::{self, ErrorKind};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::ClientConnection;
use rustls::pki_types::ServerName;
use socket2::Socket;
use ureq::http::Uri;
use ureq::http::uri::Scheme;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{
    self, ConnectProxyConnector, ConnectionDetails, Connector as _, Either, NextTimeout, Transport,
};
use ureq::{Proxy, ProxyProtocol, Timeout};

use crate::http::transport::absolute_form::AbsoluteForm;
use crate::http::transport::wire::{Silence, Tls, Wire};
use crate::net::tls::{self, CertScope, Trust};
use crate::net::unix;
use crate::util::url;

/// The agent a loop sends with: `config` (which names no proxy: each
/// request names its own), connecting to `--unix-socket` when given (no
/// proxy then, as in curl), and TLS trusting `trust`, presenting its client
/// certificate to the origins of `scope`; with a `silence` (`--watch`'s
/// `--idle-timeout`, and a wake), no read waits longer than it allows.
pub(crate) fn agent(
    config: ureq::config::Config,
    trust: Arc<Trust>,
    scope: CertScope,
    unix_socket: Option<&Path>,
    silence: Option<Silence>,
) -> ureq::Agent {
    let tls = TlsHandshake { trust, scope: Arc::new(scope) };
    match unix_socket {
        Some(path) => {
            let connector = UnixSocketConnector { path: path.to_path_buf(), tls, silence };
            ureq::Agent::with_parts(config, connector, NoResolver)
        }
        None => {
            let connections = Connections::new(config.clone(), tls, silence);
            ureq::Agent::with_parts(config, connections, LiteralResolver::default())
        }
    }
}

/// A chain of connectors that ends in a boxed transport.
type Chain = Box<dyn transport::Connector<(), Out = Box<dyn Transport>>>;

/// Makes every connection of an agent not on a Unix socket: straight to the
/// URL's host; through a `CONNECT` tunnel for a request whose config names a
/// proxy (ureq's own); or, for an `http://` URL through an HTTP proxy, to
/// the proxy in absolute form. TLS over it for an `https://` URL.
#[derive(Debug)]
struct Connections {
    /// TCP and TLS, for a request with no proxy: a chain of its own, so that
    /// the tunnel's stack frame (kilobytes) is not part of every connect.
    straight: Chain,
    /// ureq's CONNECT tunnel, then TCP and TLS: for an `https://` request through a proxy.
    tunnelled: Chain,
    /// The agent's config, which names no proxy, for the connection to the
    /// proxy itself: plain TCP, or TLS for an `https://` proxy URL.
    direct: ureq::config::Config,
}

impl Connections {
    /// `agent` is the config the agent is built with; it must name no proxy.
    fn new(agent: ureq::config::Config, tls: TlsHandshake, silence: Option<Silence>) -> Connections {
        let straight = ().chain(Tcp { silence: silence.clone() }).chain(tls.clone());
        let tunnelled = ().chain(ConnectProxyConnector::default()).chain(Tcp { silence }).chain(tls);
        Connections { straight: Box::new(straight), tunnelled: Box::new(tunnelled), direct: agent }
    }

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

impl transport::Connector for Connections {
    type Out = Box<dyn Transport>;

    fn connect(&self, details: &ConnectionDetails, chained: Option<()>) -> Result<Option<Self::Out>, ureq::Error> {
        // SOCKS never gets here: `http/proxy.rs` refuses it before anything is sent.
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

/// ureq's TCP connect, with the [`Wire`] transport: the addresses in the
/// order resolved, the connect timeout shared among them as ureq shares it.
#[derive(Debug)]
struct Tcp {
    /// How long a read of the connection may wait (`--idle-timeout`, a wake).
    silence: Option<Silence>,
}

impl<In: Transport> transport::Connector<In> for Tcp {
    type Out = Either<In, Wire>;

    fn connect(&self, details: &ConnectionDetails, chained: Option<In>) -> Result<Option<Self::Out>, ureq::Error> {
        // A connection made before this one (through a proxy's tunnel) is the one used.
        if let Some(chained) = chained {
            return Ok(Some(Either::A(chained)));
        }
        let stream = tcp(&details.addrs, details.timeout)?;
        if details.config.no_delay() {
            stream.set_nodelay(true)?;
        }
        Ok(Some(Either::B(Wire::new(Socket::from(stream), details, self.silence.clone())?)))
    }
}

/// The first of `addrs` that takes a connection within `timeout`. As in ureq,
/// the first address gets half the time, the next a quarter, and so on (at
/// least 10 ms each), and a failure that concerns only the address tried
/// (refused, unreachable) moves on to the next.
fn tcp(addrs: &[SocketAddr], timeout: NextTimeout) -> Result<TcpStream, ureq::Error> {
    let total = timeout.not_zero().map(|t| *t);
    let started = Instant::now();
    let shares = 2.0 * (1.0 - 0.5_f64.powi(i32::try_from(addrs.len()).unwrap_or(i32::MAX)));
    let mut last = None;
    for (i, addr) in addrs.iter().enumerate() {
        let share = total.map(|t| {
            let weight = 0.5_f64.powi(i32::try_from(i).unwrap_or(i32::MAX)) / shares;
            t.mul_f64(weight).max(Duration::from_millis(10))
        });
        let tried = match share {
            Some(share) => TcpStream::connect_timeout(addr, share),
            None => TcpStream::connect(addr),
        };
        match tried {
            Ok(stream) => return Ok(stream),
            Err(e) if matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) => {
                if total.is_some_and(|total| started.elapsed() >= total) {
                    return Err(ureq::Error::Timeout(timeout.reason));
                }
                last = Some(ureq::Error::Timeout(Timeout::Connect));
            }
            Err(e) if only_this_address(&e) => last = Some(ureq::Error::Io(e)),
            Err(e) => return Err(ureq::Error::Io(e)),
        }
    }
    Err(last.unwrap_or_else(|| ureq::Error::Io(io::Error::new(ErrorKind::ConnectionRefused, "Connection refused"))))
}

/// A failed connect that says nothing of the host's other addresses (ureq's
/// list: a host with no IPv6 route fails its AAAA address at once). Windows
/// reports a blocked address family as WSAEACCES.
fn only_this_address(e: &io::Error) -> bool {
    const WSAEACCES: i32 = 10013;
    (cfg!(windows) && e.raw_os_error() == Some(WSAEACCES))
        || matches!(
            e.kind(),
            ErrorKind::ConnectionRefused
                | ErrorKind::HostUnreachable
                | ErrorKind::NetworkUnreachable
                | ErrorKind::NetworkDown
                | ErrorKind::AddrNotAvailable
        )
}

/// Connects every request to the Unix socket at `path`, with TLS over it for
/// an `https://` URL (checked against the URL's host name).
#[derive(Debug)]
struct UnixSocketConnector {
    path: PathBuf,
    tls: TlsHandshake,
    /// How long a read of the connection may wait (`--idle-timeout`, a wake).
    silence: Option<Silence>,
}

impl transport::Connector for UnixSocketConnector {
    type Out = Box<dyn Transport>;

    fn connect(&self, details: &ConnectionDetails, _: Option<()>) -> Result<Option<Self::Out>, ureq::Error> {
        let socket = unix::connect(&self.path, details.timeout.not_zero().map(|t| *t)).map_err(|e| match e.kind() {
            ErrorKind::TimedOut => ureq::Error::Timeout(Timeout::Connect),
            _ => ureq::Error::Io(e),
        })?;
        let plain: Box<dyn Transport> = Box::new(Wire::new(socket, details, self.silence.clone())?);
        // The TLS connector wraps it for an `https://` URL and passes it through otherwise.
        transport::Connector::connect(&self.tls, details, Some(plain))
    }
}

/// TLS over the connection made before it, for an `https://` URL, on this
/// process's configuration for `trust`: the one that presents the client
/// certificate for an origin of `scope`, the one that presents none for
/// another (a redirect's, a status URL's, an `https://` proxy's own).
#[derive(Debug, Clone)]
struct TlsHandshake {
    trust: Arc<Trust>,
    scope: Arc<CertScope>,
}

impl<In: Transport> transport::Connector<In> for TlsHandshake {
    type Out = Box<dyn Transport>;

    fn connect(&self, details: &ConnectionDetails, chained: Option<In>) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(plain) = chained else { return Ok(None) };
        if !details.needs_tls() || plain.is_tls() {
            return Ok(Some(plain.boxed()));
        }
        self.handshake(details, plain.boxed()).map(Some)
    }
}

impl TlsHandshake {
    /// TLS over `plain`. Not inlined into the connector chain, whose stack
    /// frame every connect (`http://` too) would then take, and each URL's
    /// thread keep.
    #[inline(never)]
    fn handshake(
        &self,
        details: &ConnectionDetails,
        plain: Box<dyn Transport>,
    ) -> Result<Box<dyn Transport>, ureq::Error> {
        let host = details.uri.host().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_string()).map_err(|_| ureq::Error::Tls("invalid dns name"))?;
        // The URL is parsed only when there is a certificate to withhold.
        let withheld = self.trust.identity.is_some() && !self.scope.covers(&details.uri.to_string());
        let config = if withheld { tls::without_certificate(&self.trust) } else { tls::config(&self.trust) };
        // Whether the server asks for a certificate is what tells a TLS 1.2 refusal of one from other failures.
        let noted = config.map(|config| tls::noting_requests(&config));
        let (connection, asked) = match noted {
            Ok((config, asked)) => (ClientConnection::new(config, name), Some(asked)),
            Err(e) => (Err(e), None),
        };
        // As rustls' own errors of the handshake arrive: inside an I/O error.
        let connection = connection.map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
        let shaken = Tls::handshake(connection, plain, details).map_err(|e| match (e, &asked) {
            (ureq::Error::Io(io), Some(asked)) => ureq::Error::Io(tls::RefusedAfterRequest::mark(io, asked)),
            (other, _) => other,
        });
        Ok(Box::new(shaken?))
    }
}

/// Answers IP literals at once and leaves names to ureq's resolver (whose
/// failure carries [`Unresolved`], so that it is known by its type).
#[derive(Debug, Default)]
struct LiteralResolver(DefaultResolver);

impl Resolver for LiteralResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let literal = uri.authority().and_then(|authority| {
            // Most often an address and its port, in one parse.
            if let Ok(address) = authority.as_str().parse() {
                return Some(address);
            }
            let host = authority.host().trim_start_matches('[').trim_end_matches(']');
            let ip: std::net::IpAddr = host.parse().ok()?;
            let port = authority.port_u16().unwrap_or_else(|| url::default_port(uri.scheme_str().unwrap_or("")));
            Some(SocketAddr::new(ip, port))
        });
        match literal {
            Some(address) => {
                let mut addresses = self.0.empty();
                addresses.push(address);
                Ok(addresses)
            }
            None => self.0.resolve(uri, config, timeout).map_err(|e| match e {
                ureq::Error::Io(io) => ureq::Error::Io(io::Error::new(io.kind(), Unresolved(io))),
                other => other,
            }),
        }
    }
}

/// ureq resolves the URL's host before it connects; over a Unix socket the
/// host names no machine (`http://localhost/...`, `http://docker/...`), so
/// nothing is resolved.
#[derive(Debug, Default)]
struct NoResolver;

impl Resolver for NoResolver {
    fn resolve(&self, _: &Uri, _: &ureq::config::Config, _: NextTimeout) -> Result<ResolvedSocketAddrs, ureq::Error> {
        Ok(self.empty())
    }
}

/// A host name that did not resolve: the resolver's error, marked so that
/// `http/request.rs` knows it by its type (std reports it as an uncategorised I/O error).
#[derive(Debug)]
pub(crate) struct Unresolved(pub io::Error);

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Unresolved {}
