//! The roots `poll` trusts and its one TLS configuration. The roots are the
//! operating system's, as curl's are (`SSL_CERT_FILE` and `SSL_CERT_DIR`
//! when set, else the distribution's bundle; the Windows store; the macOS
//! keychain), through rustls-native-certs; the Mozilla roots only where no
//! store is found; `--cacert` adds to them. They are loaded on the first TLS
//! connection (a plain `http://` run never reads them), and the rustls
//! configuration made from them is built once per process and shared by
//! every URL's loop, so a thousand URLs cost one load and one configuration.
//! `--state rediss://` trusts the same roots ([`config`]; with `-k`, [`unverified`]).

use std::fmt;
use std::io::{Read as _, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme, StreamOwned};
use ureq::unversioned::transport::{
    self, Buffers, ConnectionDetails, LazyBuffers, NextTimeout, RustlsConnector, Transport, TransportAdapter,
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
    let found = if named.is_empty() { system() } else { rustls_native_certs::load_native_certs() };
    let problems = match found.errors.first() {
        Some(first) if found.errors.len() > 1 => format!("; {first} and {} more", found.errors.len() - 1),
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

/// The system's store, where the user named none. On Linux and the BSDs the
/// distribution's bundle alone, when there is one (`/etc/ssl/certs/ca-certificates.crt`
/// and its kin): it holds what the folder beside it holds, one file to read
/// instead of about 150 (3 ms of a one-shot https:// run).
fn system() -> rustls_native_certs::CertificateResult {
    #[cfg(all(unix, not(target_os = "macos")))]
    if let Some(bundle) = openssl_probe::probe().cert_file {
        return rustls_native_certs::load_certs_from_paths(Some(&bundle), None);
    }
    rustls_native_certs::load_native_certs()
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
    let mut store = RootCertStore::empty();
    store.add_parsable_certificates(roots().certs.iter().cloned());
    if let Some(pem) = cacert {
        store.add_parsable_certificates(extra(pem));
    }
    // ureq's own choices: ring, TLS 1.2 and 1.3, SNI, no client certificate.
    let config = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_protocol_versions(rustls::ALL_VERSIONS)?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(Arc::new(config))
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
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Unverified(provider.signature_verification_algorithms);
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// `-k`: any certificate is taken; the handshake's signatures are still checked.
#[derive(Debug)]
struct Unverified(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// TLS for the connections that need it: this process's configuration, or
/// with `-k` ureq's own, which verifies nothing.
#[derive(Debug)]
pub(crate) struct Connector {
    cacert: Option<Vec<u8>>,
    insecure: RustlsConnector,
}

impl Connector {
    pub(crate) fn new(cacert: Option<Vec<u8>>) -> Connector {
        Connector { cacert, insecure: RustlsConnector::default() }
    }
}

impl<In: Transport> transport::Connector<In> for Connector {
    type Out = Box<dyn Transport>;

    fn connect(&self, details: &ConnectionDetails, chained: Option<In>) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(plain) = chained else { return Ok(None) };
        if !details.needs_tls() || plain.is_tls() {
            return Ok(Some(plain.boxed()));
        }
        if details.config.tls_config().disable_verification() {
            let wrapped = transport::Connector::connect(&self.insecure, details, Some(plain))?;
            return Ok(wrapped.map(Transport::boxed));
        }
        let host = details.uri.host().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_string()).map_err(|_| ureq::Error::Tls("invalid dns name"))?;
        let mut connection = ClientConnection::new(config(self.cacert.as_deref())?, name)?;
        let mut socket = TransportAdapter::new(plain.boxed(), details.current_time.clone());
        socket.set_timeout(details.timeout);
        connection.complete_io(&mut socket)?;
        let buffers = LazyBuffers::new(details.config.input_buffer_size(), details.config.output_buffer_size());
        Ok(Some(Box::new(Tls { buffers, stream: StreamOwned { conn: connection, sock: socket } })))
    }
}

/// HTTP/1.1 over TLS: ureq's rustls transport, on this process's configuration.
struct Tls {
    buffers: LazyBuffers,
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
    fn cacert_adds_to_every_root_and_k_makes_a_configuration_too() {
        let Ok(pem) = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cert.pem")) else {
            panic!("test fixture")
        };
        assert_eq!(extra(&pem).len(), 1);
        assert!(build(Some(&pem)).is_ok());
        assert!(unverified().is_ok());
    }
}
