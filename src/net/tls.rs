//! The one TLS client configuration of a process, for `https://` and
//! `--state rediss://` alike: rustls (ring, TLS 1.2 and 1.3) with rustls' own
//! `WebPkiServerVerifier` over the roots `poll` trusts (the system's, see
//! `roots`, and `--cacert`'s), or with `-k` a verifier that takes any
//! certificate. It is built on the first TLS connection and shared after, so
//! a thousand URLs cost one load and one configuration. With `--cacert`, a
//! server its roots vouch for is trusted without the system's roots being
//! read at all (a one-shot run would spend most of its time parsing them:
//! docs/BENCHMARKS.md, "The house kept simple"); any other is checked
//! against every root, read then.

use std::sync::{Arc, OnceLock};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::net::roots::roots;

/// What the TLS connections of a run trust.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Trust {
    /// `--cacert`'s certificates, added to the system's roots (read before anything is sent).
    pub cacert: Vec<CertificateDer<'static>>,
    /// `-k`: no certificate is checked.
    pub insecure: bool,
}

/// The configuration of this process and the trust it was made for.
type Made = (Trust, Result<Arc<ClientConfig>, rustls::Error>);
static CONFIG: OnceLock<Made> = OnceLock::new();

/// The configuration for `trust`: built on first use and shared after. A
/// process has one trust; another (unit tests) gets one of its own, built each time.
pub(crate) fn config(trust: &Trust) -> Result<Arc<ClientConfig>, rustls::Error> {
    let (made_for, shared) = CONFIG.get_or_init(|| (trust.clone(), build(trust)));
    if made_for == trust { shared.clone() } else { build(trust) }
}

fn build(trust: &Trust) -> Result<Arc<ClientConfig>, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(rustls::ALL_VERSIONS)?
        // rustls' own verifier where there are roots; otherwise `Unconditional`.
        .dangerous()
        .with_custom_certificate_verifier(verifier(trust, provider)?)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// What checks a server's certificate under `trust`.
fn verifier(trust: &Trust, provider: Arc<CryptoProvider>) -> Result<Arc<dyn ServerCertVerifier>, rustls::Error> {
    let algorithms = provider.signature_verification_algorithms;
    if trust.insecure {
        return Ok(Arc::new(Unconditional { accept: true, algorithms }));
    }
    if trust.cacert.is_empty() {
        return every_root(trust, provider);
    }
    let own = webpki(&trust.cacert, &[], Arc::clone(&provider))?;
    Ok(Arc::new(CacertFirst { own, every: OnceLock::new(), trust: trust.clone(), provider }))
}

/// rustls' verifier over the system's roots and `trust`'s own (`Unconditional`
/// refusal where there is none at all).
fn every_root(trust: &Trust, provider: Arc<CryptoProvider>) -> Result<Arc<dyn ServerCertVerifier>, rustls::Error> {
    let algorithms = provider.signature_verification_algorithms;
    if roots().certs.is_empty() && trust.cacert.is_empty() {
        return Ok(Arc::new(Unconditional { accept: false, algorithms }));
    }
    webpki(&roots().certs, &trust.cacert, provider)
}

/// rustls' own verifier over `certs` and `more`.
fn webpki(
    certs: &[CertificateDer<'static>],
    more: &[CertificateDer<'static>],
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, rustls::Error> {
    let mut store = RootCertStore::empty();
    // Borrowed: the store keeps what it parsed out of each, not the certificate.
    store.add_parsable_certificates(certs.iter().chain(more).map(|cert| CertificateDer::from(&cert[..])));
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider).build();
    Ok(webpki.map_err(|e| rustls::Error::General(e.to_string()))?)
}

/// `--cacert`: rustls' verifier over its roots first; a certificate they do
/// not vouch for goes to rustls' verifier over every root, made (and the
/// system's roots read) when first needed.
#[derive(Debug)]
struct CacertFirst {
    own: Arc<dyn ServerCertVerifier>,
    every: OnceLock<Result<Arc<dyn ServerCertVerifier>, rustls::Error>>,
    trust: Trust,
    provider: Arc<CryptoProvider>,
}

impl CacertFirst {
    fn every(&self) -> Result<&Arc<dyn ServerCertVerifier>, rustls::Error> {
        let made = self.every.get_or_init(|| every_root(&self.trust, Arc::clone(&self.provider)));
        made.as_ref().map_err(Clone::clone)
    }
}

impl ServerCertVerifier for CacertFirst {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verify = |verifier: &Arc<dyn ServerCertVerifier>| {
            verifier.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        };
        match verify(&self.own) {
            Err(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)) => verify(self.every()?),
            verdict => verdict,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.own.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.own.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.own.supported_verify_schemes()
    }
}

/// A verifier whose answer does not depend on the certificate: with `-k` it
/// takes any, and where nothing at all is trusted (`SSL_CERT_FILE` naming an
/// empty file, no `--cacert`) it takes none, with the error rustls' own
/// verifier gives a certificate no root vouches for (it cannot be built
/// without a root). The handshake's signatures are checked either way.
#[derive(Debug)]
struct Unconditional {
    accept: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Unconditional {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.accept {
            true => Ok(ServerCertVerified::assertion()),
            false => Err(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::roots::certificates;

    fn fixture() -> Vec<CertificateDer<'static>> {
        let Ok(pem) = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cert.pem")) else {
            panic!("test fixture")
        };
        certificates(&pem).0
    }

    /// What each configuration says of the test server's certificate, by name.
    fn verdict(trust: &Trust, name: &str) -> Result<(), String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let Ok(verifier) = verifier(trust, provider) else { panic!("a verifier for {trust:?}") };
        let server = fixture().remove(0);
        let name = ServerName::try_from(name.to_string()).map_err(|e| e.to_string())?;
        verifier.verify_server_cert(&server, &[], &name, &[], UnixTime::now()).map(drop).map_err(|e| e.to_string())
    }

    #[test]
    fn cacert_adds_to_the_roots_and_k_takes_any_certificate() {
        let cacert = Trust { cacert: fixture(), insecure: false };
        assert_eq!(verdict(&cacert, "localhost"), Ok(()));
        assert_eq!(verdict(&cacert, "127.0.0.1"), Ok(()));
        assert!(verdict(&cacert, "example.com").is_err_and(|e| e.contains("not valid for name")));
        // The system's roots alone do not hold the test's certificate.
        assert!(verdict(&Trust::default(), "localhost").is_err_and(|e| e.contains("UnknownIssuer")));
        let insecure = Trust { cacert: Vec::new(), insecure: true };
        assert_eq!(verdict(&insecure, "example.com"), Ok(()));
        assert!(build(&cacert).is_ok() && build(&insecure).is_ok());
    }

    #[test]
    fn one_configuration_serves_the_trust_it_was_made_for() {
        let trust = Trust { cacert: fixture(), insecure: false };
        let (Ok(first), Ok(again)) = (config(&trust), config(&trust)) else { panic!("configurations") };
        let shared = CONFIG.get().is_some_and(|(made_for, _)| made_for == &trust);
        // Another test of this process may have made the shared one first: then each is its own.
        assert_eq!(Arc::ptr_eq(&first, &again), shared);
    }
}
