//! The roots `poll` trusts: the operating system's, as curl's are
//! (`SSL_CERT_FILE` and `SSL_CERT_DIR` when set, else the distribution's
//! bundle; the Windows store; the macOS keychain), through
//! rustls-native-certs; the Mozilla roots only where no store is found.
//! Read once per process, when the first TLS configuration is built (a
//! plain `http://` run never reads them), and said once in `-v` ([`note`]).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

use crate::util::text::count;

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

/// Where the roots came from, once they were loaded (`None` before the first TLS configuration).
pub(crate) fn source() -> Option<&'static str> {
    ROOTS.get().map(|roots| roots.source.as_str())
}

/// Whether `-v` was told where the roots came from (once per process).
static NOTED: AtomicBool = AtomicBool::new(false);

/// `-v`'s line on the roots, once per process after they were loaded.
pub(crate) fn note() -> Option<String> {
    let source = source()?;
    (!NOTED.swap(true, Ordering::SeqCst)).then(|| format!("trusted roots: {source}"))
}

/// The certificates of a PEM text (a bundle, `--cacert`), and how many of
/// its certificate sections could not be decoded; other sections are skipped.
/// rustls-pki-types' reader, the one rustls-native-certs reads stores with.
pub(crate) fn certificates(pem: &[u8]) -> (Vec<CertificateDer<'static>>, u32) {
    let (mut certs, mut bad) = (Vec::new(), 0);
    for cert in CertificateDer::pem_slice_iter(pem) {
        match cert {
            Ok(cert) => certs.push(cert),
            Err(_) => bad += 1,
        }
    }
    (certs, bad)
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
/// instead of about 150 (docs/BENCHMARKS.md says what that saves).
fn system() -> Found {
    #[cfg(all(unix, not(target_os = "macos")))]
    if let Some(file) = openssl_probe::probe().cert_file {
        return bundle(&file);
    }
    Found::from(rustls_native_certs::load_native_certs())
}

/// The certificates of the PEM bundle at `path` (the distribution's, or
/// `SSL_CERT_FILE`), read at once and bounded as every local read is.
fn bundle(path: &std::path::Path) -> Found {
    match std::fs::File::open(path).and_then(crate::util::file::read_at_most) {
        Ok(pem) => {
            let (certs, bad) = certificates(&pem);
            let problems = match bad {
                0 => Vec::new(),
                n => vec![format!("{} of {} could not be decoded", count(n, "certificate"), path.display())],
            };
            Found { certs, problems }
        }
        Err(e) => Found { certs: Vec::new(), problems: vec![format!("cannot read {}: {e}", path.display())] },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Vec<u8> {
        let Ok(pem) = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cert.pem")) else {
            panic!("test fixture")
        };
        pem
    }

    #[test]
    fn certificate_sections_are_read_and_others_skipped() {
        let one = fixture();
        let (expected, bad) = certificates(&one);
        assert_eq!((expected.len(), bad), (1, 0));
        // CRLF lines, text around and between sections, another kind of section, a section that is no base64.
        let crlf = String::from_utf8_lossy(&one).replace('\n', "\r\n");
        let key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let bad = "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n";
        let bundle = format!("# a bundle\n{crlf}{key}between\n{bad}");
        let (certs, failed) = certificates(bundle.as_bytes());
        assert_eq!((certs, failed), (expected, 1));
        assert_eq!(certificates(b""), (Vec::new(), 0));
    }

    /// The distribution's bundle, where this machine has one, gives what rustls-native-certs gives.
    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn the_bundle_is_read_as_rustls_native_certs_reads_it() {
        let Some(path) = openssl_probe::probe().cert_file else { return };
        let mut ours = bundle(&path).certs;
        let mut theirs = rustls_native_certs::load_certs_from_paths(Some(&path), None).certs;
        ours.sort_unstable_by(|a, b| a[..].cmp(&b[..]));
        ours.dedup();
        theirs.sort_unstable_by(|a, b| a[..].cmp(&b[..]));
        assert_eq!(ours, theirs);
        let missing = bundle(std::path::Path::new("/no/such/bundle.pem"));
        assert!(missing.certs.is_empty() && missing.problems[0].starts_with("cannot read /no/such/bundle.pem"));
    }
}
