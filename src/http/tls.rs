//! The roots `poll` trusts and its one TLS configuration. The roots are the
//! operating system's, as curl's are (`SSL_CERT_FILE` and `SSL_CERT_DIR`
//! when set, else the distribution's bundle; the Windows store; the macOS
//! keychain), through rustls-native-certs; the Mozilla roots only where no
//! store is found; `--cacert` adds to them. They are read when a server's
//! certificate is first checked against them (a plain `http://` run never
//! reads them, nor one whose servers `--cacert`'s roots vouch for: see
//! [`Verifier`]), once per process, and the rustls configuration is built
//! once per process and shared by every URL's loop, so a thousand URLs cost
//! one load and one configuration. `--state rediss://` trusts the same roots
//! ([`config`]; with `-k`, [`unverified`]).

use std::fmt;
use std::io::{Read as _, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::http::wire;
use crate::util::text::count;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme, StreamOwned};
use ureq::unversioned::transport::{
    self, Buffers, ConnectionDetails, NextTimeout, RustlsConnector, Transport, TransportAdapter,
};

/// The roots of this process, once loaded.
pub(crate) struct Roots {
    pub certs: Vec<CertificateDer<'static>>,
    /// Where they came from (the Mozilla roots saying so), for `-v` and for a certificate error.
    pub source: String,
}

static ROOTS: OnceLock<Roots> = OnceLock::new();

/// The system's roots, read on first use.
pub(crate) fn roots() -> &'static Roots {
    ROOTS.get_or_init(|| load(&|name| std::env::var_os(name).filter(|v| !v.is_empty())))
}

/// Where the roots came from, once they were loaded (`None` before the first TLS connection).
pub(crate) fn source() -> Option<&'static str> {
    ROOTS.get().map(|roots| roots.source.as_str())
}

/// The roots as `var` (the environment) names them. A store the user names
/// (`SSL_CERT_FILE`, `SSL_CERT_DIR`) is taken as it is, even when empty, as
/// curl and OpenSSL do; the Mozilla roots stand in only where the system has
/// no store at all (a `scratch` container).
fn load(var: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Roots {
    let named: Vec<String> = ["SSL_CERT_FILE", "SSL_CERT_DIR"]
        .iter()
        .filter_map(|name| var(name).map(|value| format!("{name}={}", value.to_string_lossy())))
        .collect();
    let found = match (var("SSL_CERT_FILE"), var("SSL_CERT_DIR")) {
        (None, None) => system(),
        (Some(file), None) => bundle(std::path::Path::new(&file)),
        _ => Found::from(rustls_native_certs::load_native_certs()),
    };
    let problems = match found.problems.first() {
        Some(first) if found.problems.len() > 1 => format!("; {first} and {} more", found.problems.len() - 1),
        Some(first) => format!("; {first}"),
        None => String::new(),
    };
    let count = found.certs.len();
    if !named.is_empty() {
        let source = format!("{count} from {}{problems}", named.join(", "));
        return Roots { certs: found.certs, source };
    }
    if found.certs.is_empty() {
        let certs: Vec<CertificateDer<'static>> = webpki_root_certs::TLS_SERVER_ROOT_CERTS.to_vec();
        let source =
            format!("no system store found{problems}; the {} built-in Mozilla roots serve instead", certs.len());
        return Roots { certs, source };
    }
    Roots { certs: found.certs, source: format!("{count} from the system's store{problems}") }
}

/// Certificates found in a store, and what went wrong reading it.
struct Found {
    certs: Vec<CertificateDer<'static>>,
    problems: Vec<String>,
}

impl From<rustls_native_certs::CertificateResult> for Found {
    fn from(result: rustls_native_certs::CertificateResult) -> Found {
        Found { certs: result.certs, problems: result.errors.iter().map(ToString::to_string).collect() }
    }
}

/// The system's store, where the user named none. On Linux and the BSDs the
/// distribution's bundle alone, when there is one (`/etc/ssl/certs/ca-certificates.crt`
/// and its kin): it holds what the folder beside it holds, one file to read
/// instead of about 150 (3 ms of a one-shot https:// run).
fn system() -> Found {
    #[cfg(all(unix, not(target_os = "macos")))]
    if let Some(file) = openssl_probe::probe().cert_file {
        return bundle(&file);
    }
    Found::from(rustls_native_certs::load_native_certs())
}

/// The certificates of the PEM bundle at `path` (the distribution's, or
/// `SSL_CERT_FILE`), read at once (at most 16 MiB). Not rustls-pki-types'
/// PEM reader, which rustls-native-certs uses: it decodes line by line, with
/// a base64 decoder made for private keys that keeps its timing independent
/// of the data, and on Debian's 146 roots that was most of the 0.5 ms the
/// system's roots added to a one-shot `https://` run (docs/BENCHMARKS.md);
/// certificates are public.
fn bundle(path: &std::path::Path) -> Found {
    let text = std::fs::File::open(path).and_then(crate::util::file::read_at_most);
    match text {
        Ok(text) => {
            let (certs, bad) = pem_certs(&text);
            let problems = match bad {
                0 => Vec::new(),
                n => vec![format!("{} of {} could not be decoded", count(n, "certificate"), path.display())],
            };
            Found { certs, problems }
        }
        Err(e) => Found { certs: Vec::new(), problems: vec![format!("cannot read {}: {e}", path.display())] },
    }
}

/// The `CERTIFICATE` sections of a PEM text, decoded, sorted and without
/// duplicates (as rustls-native-certs gives them), and how many sections
/// could not be decoded. Text outside the sections is skipped.
fn pem_certs(pem: &[u8]) -> (Vec<CertificateDer<'static>>, u32) {
    use base64::Engine as _;
    const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
    const END: &[u8] = b"-----END CERTIFICATE-----";
    let (mut certs, mut bad, mut body) = (Vec::new(), 0, Vec::new());
    let mut rest = pem;
    while let Some(start) = memchr::memmem::find(rest, BEGIN) {
        let section = &rest[start + BEGIN.len()..];
        let Some(end) = memchr::memmem::find(section, END) else {
            bad += 1;
            break;
        };
        // The base64 of the section, its lines joined.
        body.clear();
        let mut from = 0;
        for newline in memchr::memchr_iter(b'\n', &section[..end]).chain([end]) {
            body.extend_from_slice(section[from..newline].trim_ascii());
            from = (newline + 1).min(end);
        }
        match base64::engine::general_purpose::STANDARD.decode(&body) {
            Ok(der) => certs.push(CertificateDer::from(der)),
            Err(_) => bad += 1,
        }
        rest = &section[end + END.len()..];
    }
    certs.sort_unstable_by(|a, b| a[..].cmp(&b[..]));
    certs.dedup();
    (certs, bad)
}

/// Whether `-v` was told where the roots came from (once per process).
static TOLD: AtomicBool = AtomicBool::new(false);

/// `-v`'s line on the roots, once per process after they were loaded.
pub(crate) fn note() -> Option<String> {
    let source = source()?;
    (!TOLD.swap(true, Ordering::SeqCst)).then(|| format!("trusted roots: {source}"))
}

/// The rustls configuration of this process and the `--cacert` it was made with.
type Made = (Option<Vec<u8>>, Result<Arc<ClientConfig>, rustls::Error>);
static CONFIG: OnceLock<Made> = OnceLock::new();

/// The configuration for `cacert`: built on the first TLS connection and
/// shared after. A process has one `--cacert`; another (unit tests) gets
/// one of its own, built each time.
pub(crate) fn config(cacert: Option<&[u8]>) -> Result<Arc<ClientConfig>, rustls::Error> {
    let (made_for, shared) = CONFIG.get_or_init(|| (cacert.map(<[u8]>::to_vec), build(cacert)));
    if made_for.as_deref() == cacert { shared.clone() } else { build(cacert) }
}

fn build(cacert: Option<&[u8]>) -> Result<Arc<ClientConfig>, rustls::Error> {
    // Not dangerous: rustls' own checks, with the system's roots read when first needed.
    with_verifier(|algorithms| Verifier::new(cacert, algorithms))
}

/// ureq's own choices (ring, TLS 1.2 and 1.3, SNI, no client certificate),
/// with `verifier` for the server's certificate.
fn with_verifier(
    verifier: impl FnOnce(WebPkiSupportedAlgorithms) -> Verifier,
) -> Result<Arc<ClientConfig>, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = verifier(provider.signature_verification_algorithms);
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Checks a server's certificate as rustls' `WebPkiServerVerifier` does
/// (with no revocation lists, as ureq gives it none), against `--cacert`'s
/// roots and the system's, reading the system's only when needed: a chain
/// that `--cacert`'s roots alone vouch for is vouched for by all of them, so
/// those are tried first, and a run against a server of `--cacert`'s CA reads
/// no system store (the bundle's 146 roots cost a one-shot run 0.2 ms of CPU).
/// Any other chain is checked against all of them, and its error is theirs.
/// With `-k` ([`unverified`]) any certificate is taken; the handshake's
/// signatures are checked either way.
#[derive(Debug)]
struct Verifier {
    /// `--cacert`'s roots alone, when it has any.
    own: Option<RootCertStore>,
    /// `--cacert`'s roots and the system's, made on first need.
    all: OnceLock<RootCertStore>,
    /// `-k`: no certificate is checked.
    any: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl Verifier {
    fn new(cacert: Option<&[u8]>, algorithms: WebPkiSupportedAlgorithms) -> Verifier {
        let own = cacert.map(|pem| {
            let mut store = RootCertStore::empty();
            store.add_parsable_certificates(extra(pem));
            store
        });
        Verifier { own: own.filter(|store| !store.is_empty()), all: OnceLock::new(), any: false, algorithms }
    }

    /// Every root: the system's (read now, once per process) and `--cacert`'s.
    fn all(&self) -> &RootCertStore {
        self.all.get_or_init(|| {
            let mut store = RootCertStore::empty();
            // Borrowed: the store keeps what it parsed out of each, not the certificate.
            store.add_parsable_certificates(roots().certs.iter().map(|cert| CertificateDer::from(&cert[..])));
            if let Some(own) = &self.own {
                store.roots.extend(own.roots.iter().cloned());
            }
            store
        })
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.any {
            return Ok(ServerCertVerified::assertion());
        }
        let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
        let chains_to = |roots: &RootCertStore| {
            rustls::client::verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.algorithms.all,
            )
        };
        if self.own.as_ref().is_none_or(|own| chains_to(own).is_err()) {
            chains_to(self.all())?;
        }
        rustls::client::verify_server_name(&cert, server_name)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The certificates in `--cacert`'s PEM (checked to hold one already).
fn extra(pem: &[u8]) -> Vec<CertificateDer<'static>> {
    ureq::tls::parse_pem(pem)
        .filter_map(|item| match item {
            Ok(ureq::tls::PemItem::Certificate(cert)) => Some(CertificateDer::from(cert.der().to_vec())),
            _ => None,
        })
        .collect()
}

/// `-k` for connections ureq does not make (`--state rediss://`): any
/// certificate is taken, as ureq's own `-k` takes it.
pub(crate) fn unverified() -> Result<Arc<ClientConfig>, rustls::Error> {
    with_verifier(|algorithms| Verifier { any: true, ..Verifier::new(None, algorithms) })
}

/// TLS for the connections that need it: this process's configuration, or
/// with `-k` ureq's own, which verifies nothing.
#[derive(Debug)]
pub(crate) struct TlsConnector {
    cacert: Option<Vec<u8>>,
    insecure: RustlsConnector,
}

impl TlsConnector {
    pub(crate) fn new(cacert: Option<Vec<u8>>) -> TlsConnector {
        TlsConnector { cacert, insecure: RustlsConnector::default() }
    }
}

impl<In: Transport> transport::Connector<In> for TlsConnector {
    type Out = Box<dyn Transport>;

    fn connect(&self, details: &ConnectionDetails, chained: Option<In>) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(plain) = chained else { return Ok(None) };
        if !details.needs_tls() || plain.is_tls() {
            return Ok(Some(plain.boxed()));
        }
        self.handshake(details, plain.boxed()).map(Some)
    }
}

impl TlsConnector {
    /// TLS over `plain`. Not inlined into the connector chain, whose stack
    /// frame every connect (`http://` too) would then take, and each URL's
    /// thread keep.
    #[inline(never)]
    fn handshake(
        &self,
        details: &ConnectionDetails,
        plain: Box<dyn Transport>,
    ) -> Result<Box<dyn Transport>, ureq::Error> {
        if details.config.tls_config().disable_verification() {
            let wrapped = transport::Connector::connect(&self.insecure, details, Some(plain))?;
            return wrapped.map(Transport::boxed).ok_or(ureq::Error::ConnectionFailed);
        }
        let host = details.uri.host().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_string()).map_err(|_| ureq::Error::Tls("invalid dns name"))?;
        let mut connection = ClientConnection::new(config(self.cacert.as_deref())?, name)?;
        let mut socket = TransportAdapter::new(plain, details.current_time.clone());
        socket.set_timeout(details.timeout);
        connection.complete_io(&mut socket)?;
        let buffers = wire::Buffers::new(details.config.input_buffer_size(), details.config.output_buffer_size());
        Ok(Box::new(Tls { buffers, stream: StreamOwned { conn: connection, sock: socket } }))
    }
}

/// HTTP/1.1 over TLS: ureq's rustls transport, on this process's configuration.
struct Tls {
    buffers: wire::Buffers,
    stream: StreamOwned<ClientConnection, TransportAdapter>,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls").finish_non_exhaustive()
    }
}

impl Transport for Tls {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let output = &self.buffers.output()[..amount];
        self.stream.write_all(output)?;
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let amount = self.stream.read(input)?;
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.get_mut().get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_sections_decode_as_rustls_native_certs_reads_them() {
        use rustls::pki_types::pem::PemObject as _;
        let Ok(one) = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cert.pem")) else {
            panic!("test fixture")
        };
        let Ok(expected) = CertificateDer::pem_slice_iter(&one).collect::<Result<Vec<_>, _>>() else {
            panic!("the fixture parses")
        };
        assert_eq!(pem_certs(&one), (expected.clone(), 0));
        // CRLF lines, text around and between sections, a duplicate, a section that is no base64,
        // another kind of section: one certificate, one failure.
        let crlf = String::from_utf8_lossy(&one).replace('\n', "\r\n");
        let bad = "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n";
        let key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let bundle = format!("# Debian's bundle\n{crlf}{key}between\n{}{bad}", String::from_utf8_lossy(&one));
        assert_eq!(pem_certs(bundle.as_bytes()), (expected, 1));
        assert_eq!(pem_certs(b"-----BEGIN CERTIFICATE-----\nAAAA"), (Vec::new(), 1), "no END line");
        assert_eq!(pem_certs(b""), (Vec::new(), 0));
    }

    /// `--cacert`'s roots alone decide when they vouch for the server; otherwise every root does,
    /// with rustls' own verifier's answer.
    #[test]
    fn the_system_roots_are_read_only_when_cacert_does_not_vouch_for_the_server() {
        let Ok(pem) = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cert.pem")) else {
            panic!("test fixture")
        };
        let server = extra(&pem).remove(0);
        let algorithms = rustls::crypto::ring::default_provider().signature_verification_algorithms;
        let now = UnixTime::now();
        let check = |verifier: &dyn ServerCertVerifier, name: &str| {
            let name = ServerName::try_from(name.to_string()).map_err(|e| e.to_string())?;
            verifier.verify_server_cert(&server, &[], &name, &[], now).map(drop).map_err(|e| e.to_string())
        };
        let mut every = RootCertStore::empty();
        every.add_parsable_certificates(roots().certs.iter().cloned());
        every.add_parsable_certificates(extra(&pem));
        let Ok(rustls_own) = rustls::client::WebPkiServerVerifier::builder(Arc::new(every)).build() else {
            panic!("a store with roots")
        };
        let ours = Verifier::new(Some(&pem), algorithms);
        for name in ["127.0.0.1", "localhost"] {
            assert_eq!(check(&ours, name), Ok(()), "{name}");
        }
        assert!(ours.all.get().is_none(), "--cacert vouched: the system's roots were not read");
        // A name the certificate is not for: every root is asked, and the answer is rustls' own.
        assert_eq!(check(&ours, "example.com"), check(rustls_own.as_ref(), "example.com"));
        assert!(check(&ours, "example.com").is_err_and(|e| e.contains("not valid for name")));
        // No --cacert: the system's roots, which do not hold the test's certificate.
        let system = Verifier::new(None, algorithms);
        assert!(check(&system, "localhost").is_err_and(|e| e.contains("UnknownIssuer")));
        assert!(system.all.get().is_some());
    }

    /// The distribution's bundle, where this machine has one, gives what rustls-native-certs gives.
    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn the_bundle_is_read_as_rustls_native_certs_reads_it() {
        let Some(path) = openssl_probe::probe().cert_file else { return };
        let ours = bundle(&path);
        let theirs = rustls_native_certs::load_certs_from_paths(Some(&path), None);
        assert_eq!(ours.certs, theirs.certs);
        assert_eq!(ours.problems.len(), theirs.errors.len(), "{:?}", ours.problems);
        let missing = bundle(std::path::Path::new("/no/such/bundle.pem"));
        assert!(missing.certs.is_empty() && missing.problems[0].starts_with("cannot read /no/such/bundle.pem"));
    }

    #[test]
    fn cacert_adds_to_every_root_and_k_makes_a_configuration_too() {
        let Ok(pem) = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cert.pem")) else {
            panic!("test fixture")
        };
        assert_eq!(extra(&pem).len(), 1);
        assert!(build(Some(&pem)).is_ok());
        assert!(unverified().is_ok());
    }
}
