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
//!
//! With `--cert`, the configuration presents the client certificate to a
//! server that asks for one (rustls' own `SingleCertAndKey` resolver, as
//! `with_client_auth_cert` makes it); beside it is one that presents none,
//! for the connections of a loop to another origin than its URL's
//! ([`CertScope`]). An X.509 version 1 certificate, which rustls' own check
//! cannot parse, is checked against its key here and presented as curl
//! presents it: the server decides whether it takes one.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, WebPkiServerVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::net::roots::roots;
use crate::util::url;

/// What the TLS connections of a run trust, and the client certificate they present.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Trust {
    /// `--cacert`'s certificates, added to the system's roots (read before anything is sent).
    pub cacert: Vec<CertificateDer<'static>>,
    /// `-k`: no certificate is checked.
    pub insecure: bool,
    /// `--cert` (and `--key`): shown to a server that asks for a client certificate.
    pub identity: Option<Identity>,
}

/// A client certificate, its chain and its private key, known to belong
/// together. Its `Debug` shows no byte of the key.
pub(crate) struct Identity {
    /// The certificate's file as the user gave it, for `-v`.
    pub file: String,
    /// The certificate first, then the chain that may follow it.
    pub chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

impl Identity {
    /// `chain` (from `file`) and `key`, when rustls can sign with the key and
    /// it belongs to the chain's first certificate (rustls' own check, as
    /// `with_client_auth_cert` makes it; for an X.509 v1 certificate, which
    /// that check cannot parse, the same comparison of public keys).
    pub(crate) fn new(
        file: String,
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Identity, rustls::Error> {
        let identity = Identity { file, chain, key };
        let certified = identity.certified()?;
        match certified.keys_match() {
            // rustls' own rule: a key whose public half it cannot tell is not refused.
            Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => Ok(identity),
            Err(refused @ rustls::Error::InvalidCertificate(_)) => {
                let Some(spki) = v1_public_key(&identity.chain[0]) else { return Err(refused) };
                match certified.key.public_key().map(|key| key.as_ref() == spki.as_slice()) {
                    Some(false) => Err(rustls::InconsistentKeys::KeyMismatch.into()),
                    Some(true) | None => Ok(identity),
                }
            }
            Err(other) => Err(other),
        }
    }

    /// The chain and its signing key, as rustls presents them.
    fn certified(&self) -> Result<CertifiedKey, rustls::Error> {
        let provider = rustls::crypto::ring::default_provider();
        let key = provider.key_provider.load_private_key(self.key.clone_key())?;
        Ok(CertifiedKey::new(self.chain.clone(), key))
    }

    /// The certificate's SHA-256 fingerprint as `openssl x509 -fingerprint
    /// -sha256` writes it (`AB:01:...`): what `-v` names it by, since no crate
    /// of the tree turns a subject into text.
    pub(crate) fn fingerprint(&self) -> String {
        // ring's SHA-256, as rustls exposes it: the hash of a TLS 1.3 suite.
        let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256.tls13();
        let digest = suite.map(|suite| suite.common.hash_provider.hash(&self.chain[0]));
        let bytes = digest.as_ref().map_or(&[][..], |digest| digest.as_ref());
        bytes.iter().map(|byte| format!("{byte:02X}")).collect::<Vec<_>>().join(":")
    }
}

impl Clone for Identity {
    fn clone(&self) -> Identity {
        Identity { file: self.file.clone(), chain: self.chain.clone(), key: self.key.clone_key() }
    }
}

impl PartialEq for Identity {
    fn eq(&self, other: &Identity) -> bool {
        self.chain == other.chain && self.key.secret_der() == other.key.secret_der()
    }
}

impl Eq for Identity {}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity").field("file", &self.file).field("certificates", &self.chain.len()).finish()
    }
}

/// The DER of the public key (`SubjectPublicKeyInfo`) of `certificate` when
/// it is an X.509 version 1 certificate: one whose `tbsCertificate` has no
/// `[0] version` and so starts with its serial number. `None` for any other.
fn v1_public_key(certificate: &[u8]) -> Option<Vec<u8>> {
    use pkcs8::der::asn1::AnyRef;
    use pkcs8::der::{Decode as _, Encode as _, SliceReader, Tag, Tagged as _};
    fn within<'a>(any: AnyRef<'a>) -> Option<SliceReader<'a>> {
        SliceReader::new(any.value()).ok()
    }
    let whole = AnyRef::from_der(certificate).ok().filter(|any| any.tag() == Tag::Sequence)?;
    let tbs = AnyRef::decode(&mut within(whole)?).ok().filter(|any| any.tag() == Tag::Sequence)?;
    let mut fields = within(tbs)?;
    // serialNumber, then signature, issuer, validity and subject before the key.
    let serial = AnyRef::decode(&mut fields).ok()?;
    if serial.tag() != Tag::Integer {
        return None;
    }
    for _ in 0..4 {
        AnyRef::decode(&mut fields).ok()?;
    }
    let key = AnyRef::decode(&mut fields).ok().filter(|any| any.tag() == Tag::Sequence)?;
    key.to_der().ok()
}

/// Why an encrypted private key was not decrypted. No variant carries a byte
/// of the key or of the passphrase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Undecrypted {
    /// The PEM section or the DER inside it does not decode.
    Garbled,
    /// The passphrase does not decrypt it (or the key is damaged).
    WrongPassphrase,
    /// Its encryption is not PBES2 with PBKDF2 (SHA-2) or scrypt and AES-CBC,
    /// or not one the crate reads at all.
    Unsupported,
}

/// The first `-----BEGIN ENCRYPTED PRIVATE KEY-----` section of `pem` (PKCS#8's
/// encrypted form, as `openssl pkcs8 -topk8` and `openssl genpkey -aes256`
/// write it), decrypted with `passphrase` (curl's `--cert FILE:PASSPHRASE`) by
/// RustCrypto's `pkcs8`; `None` when `pem` holds no such section.
pub(crate) fn decrypt_key(pem: &[u8], passphrase: &[u8]) -> Option<Result<PrivateKeyDer<'static>, Undecrypted>> {
    const BEGIN: &[u8] = b"-----BEGIN ENCRYPTED PRIVATE KEY-----";
    const END: &[u8] = b"-----END ENCRYPTED PRIVATE KEY-----";
    let find = |text: &[u8], what: &[u8]| text.windows(what.len()).position(|window| window == what);
    let start = find(pem, BEGIN)?;
    let Some(end) = find(&pem[start..], END).map(|end| start + end + END.len()) else {
        return Some(Err(Undecrypted::Garbled));
    };
    Some(decrypt_section(&pem[start..end], passphrase))
}

fn decrypt_section(section: &[u8], passphrase: &[u8]) -> Result<PrivateKeyDer<'static>, Undecrypted> {
    use pkcs8::der::Decode as _;
    let (_, der) = pkcs8::der::pem::decode_vec(section).map_err(|_| Undecrypted::Garbled)?;
    // The PEM decoded: what does not parse is most often a scheme the crate does not know (PKCS#12's PBE-SHA1-3DES).
    let info = pkcs8::EncryptedPrivateKeyInfoRef::from_der(&der).map_err(|_| Undecrypted::Unsupported)?;
    let plain = info.decrypt(passphrase).map_err(|e| match e {
        pkcs8::Error::EncryptedPrivateKey(pkcs8::pkcs5::Error::DecryptFailed) => Undecrypted::WrongPassphrase,
        // A wrong passphrase may also unpad to bytes that are no PKCS#8 document.
        pkcs8::Error::Asn1(_) | pkcs8::Error::KeyMalformed(_) => Undecrypted::WrongPassphrase,
        _ => Undecrypted::Unsupported,
    })?;
    Ok(PrivateKeyDer::Pkcs8(plain.as_bytes().to_vec().into()))
}

/// Where a loop presents the run's client certificate. To the origin of the
/// loop's URL, where `-u` and `Authorization` go, and not to another that a
/// redirect or a `--submit` status URL leads to; with `--location-trusted`,
/// to any, as curl's flag sends credentials wherever a reply leads. Decided
/// per connection, by the origin it is made for: ureq pools connections by
/// origin, so one made with the certificate serves that origin only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CertScope {
    /// `--location-trusted`.
    Everywhere,
    /// The loop's URL.
    OriginOf(String),
}

impl CertScope {
    /// Whether a connection for `url` presents the certificate.
    pub(crate) fn covers(&self, url: &str) -> bool {
        match self {
            CertScope::Everywhere => true,
            CertScope::OriginOf(own) => url::same_origin(own, url),
        }
    }
}

/// The two configurations of a trust: presenting its client certificate,
/// and presenting none (the same one when there is no certificate).
#[derive(Debug, Clone)]
struct Configs {
    presenting: Arc<ClientConfig>,
    anonymous: Arc<ClientConfig>,
}

/// The configurations of this process and the trust they were made for.
type Made = (Trust, Result<Configs, rustls::Error>);
static CONFIG: OnceLock<Made> = OnceLock::new();

/// The configuration for `trust`, presenting its client certificate to a
/// server that asks: built on first use and shared after. A process has one
/// trust; another (unit tests) gets one of its own, built each time.
pub(crate) fn config(trust: &Trust) -> Result<Arc<ClientConfig>, rustls::Error> {
    configs(trust).map(|configs| configs.presenting)
}

/// The configuration for `trust` that presents no client certificate: for
/// an origin out of a loop's [`CertScope`].
pub(crate) fn without_certificate(trust: &Trust) -> Result<Arc<ClientConfig>, rustls::Error> {
    configs(trust).map(|configs| configs.anonymous)
}

fn configs(trust: &Trust) -> Result<Configs, rustls::Error> {
    let (made_for, shared) = CONFIG.get_or_init(|| (trust.clone(), build(trust)));
    if made_for == trust { shared.clone() } else { build(trust) }
}

/// `config` for one connection, noting whether its server asks for a client
/// certificate (sends a `CertificateRequest`): a TLS 1.2 server that wants
/// one and is shown none (OpenSSL's) ends the handshake with a bare
/// `handshake_failure`, which alone says nothing of certificates. A copy of
/// the shared configuration (its verifier and session cache shared).
pub(crate) fn noting_requests(config: &ClientConfig) -> (Arc<ClientConfig>, Asked) {
    let asked = Asked(Arc::new(AtomicBool::new(false)));
    let inner = Arc::clone(&config.client_auth_cert_resolver);
    let mut noting = config.clone();
    noting.client_auth_cert_resolver = Arc::new(Noting { inner, asked: asked.clone() });
    (Arc::new(noting), asked)
}

/// Whether the server of a connection asked for a client certificate ([`noting_requests`]).
#[derive(Debug, Clone)]
pub(crate) struct Asked(Arc<AtomicBool>);

impl Asked {
    pub(crate) fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The resolver of a configuration, noting that it was asked.
#[derive(Debug)]
struct Noting {
    inner: Arc<dyn ResolvesClientCert>,
    asked: Asked,
}

impl ResolvesClientCert for Noting {
    fn resolve(&self, issuers: &[&[u8]], schemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        self.asked.0.store(true, Ordering::Relaxed);
        self.inner.resolve(issuers, schemes)
    }

    fn only_raw_public_keys(&self) -> bool {
        self.inner.only_raw_public_keys()
    }

    fn has_certs(&self) -> bool {
        self.inner.has_certs()
    }
}

/// A TLS 1.2 server's `handshake_failure` after it asked for a client
/// certificate ([`Asked`]): its refusal of the certificate (or of none),
/// known by this type where the alert alone says nothing.
#[derive(Debug)]
pub(crate) struct RefusedAfterRequest(pub rustls::Error);

impl fmt::Display for RefusedAfterRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for RefusedAfterRequest {}

impl RefusedAfterRequest {
    /// `error` of a handshake whose server `asked` for a certificate: a bare
    /// `handshake_failure` marked as its refusal; any other as it is.
    pub(crate) fn mark(error: std::io::Error, asked: &Asked) -> std::io::Error {
        let failure = rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure);
        let bare = error.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) == Some(&failure);
        match asked.get() && bare {
            true => std::io::Error::new(error.kind(), RefusedAfterRequest(failure)),
            false => error,
        }
    }
}

/// Both configurations, on one verifier (the system's roots are read once).
fn build(trust: &Trust) -> Result<Configs, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // rustls' own verifier where there are roots; otherwise `Unconditional`.
    let verifier = verifier(trust, Arc::clone(&provider))?;
    let builder = || {
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider));
        let builder = builder.with_protocol_versions(rustls::ALL_VERSIONS)?;
        Ok::<_, rustls::Error>(builder.dangerous().with_custom_certificate_verifier(Arc::clone(&verifier)))
    };
    let anonymous = Arc::new(builder()?.with_no_client_auth());
    let presenting = match &trust.identity {
        // Checked when it was read (`Identity::new`), v1 certificates too, which `with_client_auth_cert` refuses.
        Some(identity) => {
            let presented = rustls::sign::SingleCertAndKey::from(identity.certified()?);
            Arc::new(builder()?.with_client_cert_resolver(Arc::new(presented)))
        }
        None => Arc::clone(&anonymous),
    };
    Ok(Configs { presenting, anonymous })
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

    /// Only a version 1 certificate has its key read here (tests/it/meet_headers.rs presents one to
    /// nginx); a version 3 one, and DER that is no certificate, are rustls' to judge.
    #[test]
    fn only_a_v1_certificate_has_its_key_read_here() {
        assert_eq!(v1_public_key(&fixture()[0]), None);
        for junk in [&[][..], &[0x30, 0x03, 0x02, 0x01, 0x01][..], &[0x30, 0x80][..], &[0x02, 0x01, 0x01][..]] {
            assert_eq!(v1_public_key(junk), None, "{junk:?}");
        }
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
        let cacert = Trust { cacert: fixture(), insecure: false, identity: None };
        assert_eq!(verdict(&cacert, "localhost"), Ok(()));
        assert_eq!(verdict(&cacert, "127.0.0.1"), Ok(()));
        assert!(verdict(&cacert, "example.com").is_err_and(|e| e.contains("not valid for name")));
        // The system's roots alone do not hold the test's certificate.
        assert!(verdict(&Trust::default(), "localhost").is_err_and(|e| e.contains("UnknownIssuer")));
        let insecure = Trust { cacert: Vec::new(), insecure: true, identity: None };
        assert_eq!(verdict(&insecure, "example.com"), Ok(()));
        assert!(build(&cacert).is_ok() && build(&insecure).is_ok());
    }

    fn fixture_key() -> PrivateKeyDer<'static> {
        use rustls::pki_types::pem::PemObject as _;
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/key.pem");
        let Ok(key) = PrivateKeyDer::from_pem_file(path) else { panic!("test fixture") };
        key
    }

    #[test]
    fn an_identity_is_a_certificate_and_its_own_key_and_never_shows_the_key() {
        let Ok(identity) = Identity::new("cert.pem".into(), fixture(), fixture_key()) else { panic!("an identity") };
        // 32 bytes in hex, colon-separated, as `openssl x509 -fingerprint -sha256` writes them.
        let fingerprint = identity.fingerprint();
        assert_eq!((fingerprint.len(), fingerprint.matches(':').count()), (95, 31), "{fingerprint}");
        assert!(fingerprint.chars().all(|c| c == ':' || c.is_ascii_hexdigit() && !c.is_ascii_lowercase()));
        let shown = format!("{:?}", Trust { identity: Some(identity.clone()), ..Trust::default() });
        assert!(shown.contains("cert.pem") && !shown.contains("key"), "{shown}");
        assert_eq!(identity.clone(), identity);

        // A key that is not the certificate's: any of the Mozilla roots has another.
        let stranger = vec![webpki_root_certs::TLS_SERVER_ROOT_CERTS[0].clone()];
        let mismatch = Identity::new("root.pem".into(), stranger, fixture_key()).map(drop);
        assert!(matches!(mismatch, Err(rustls::Error::InconsistentKeys(_))), "{mismatch:?}");
    }

    #[test]
    fn with_a_certificate_a_second_configuration_presents_none() {
        let Ok(identity) = Identity::new("cert.pem".into(), fixture(), fixture_key()) else { panic!("an identity") };
        let with = Trust { cacert: fixture(), insecure: false, identity: Some(identity) };
        let (Ok(presenting), Ok(anonymous)) = (config(&with), without_certificate(&with)) else { panic!("configs") };
        assert!(presenting.client_auth_cert_resolver.has_certs());
        assert!(!anonymous.client_auth_cert_resolver.has_certs());
        let without = Trust { cacert: fixture(), insecure: false, identity: None };
        let (Ok(one), Ok(other)) = (config(&without), without_certificate(&without)) else { panic!("configs") };
        assert!(!one.client_auth_cert_resolver.has_certs() && !other.client_auth_cert_resolver.has_certs());
    }

    #[test]
    fn a_loop_presents_the_certificate_to_its_own_origin_only_unless_told_everywhere() {
        let own = CertScope::OriginOf("https://api.test/v1/jobs".into());
        assert!(own.covers("https://API.test:443/other"));
        assert!(!own.covers("https://api.test:8443/v1/jobs"));
        assert!(!own.covers("https://status.test/v1/jobs"));
        assert!(!own.covers("http://api.test/v1/jobs"));
        assert!(CertScope::Everywhere.covers("https://status.test/"));
    }

    #[test]
    fn one_configuration_serves_the_trust_it_was_made_for() {
        let trust = Trust { cacert: fixture(), insecure: false, identity: None };
        let (Ok(first), Ok(again)) = (config(&trust), config(&trust)) else { panic!("configurations") };
        let shared = CONFIG.get().is_some_and(|(made_for, _)| made_for == &trust);
        // Another test of this process may have made the shared one first: then each is its own.
        assert_eq!(Arc::ptr_eq(&first, &again), shared);
    }
}
