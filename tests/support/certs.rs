//! The certificates of the mutual TLS tests, made with openssl in a test's folder, as the
//! `rediss://` tests make theirs ([`super::redis::certificates`], whose CA and server
//! certificate for 127.0.0.1 these start from):
//!
//! - `ca.pem`, `leaf.pem`, `leaf.key`: the CA, and the server's certificate and key.
//! - `client.pem`, `client.key`: a client certificate the CA signed (`CN=poll-client`), its
//!   EC P-256 key as PKCS#8; `client-sec1.key`, the same key as SEC1; `both.pem`, the
//!   certificate, the CA after it (a chain) and the key, in one file.
//! - `rsa.pem`, `rsa.key`: an RSA client certificate the CA signed, its key as PKCS#8;
//!   `rsa-pkcs1.key`, the same key as PKCS#1.
//! - `stranger.pem`, `stranger.key`: a client certificate of another CA, which no server here trusts.
//! - `encrypted.key`: `client.key` encrypted (PKCS#8, with a passphrase).
//!
//! Every key file is the owner's alone (0600), as a user keeps one.

use std::path::Path;
use std::process::Command;

/// Makes the files above in `folder`; false (after the `SKIPPED` line) without openssl.
pub fn make(folder: &Path) -> bool {
    if !super::redis::certificates(folder) {
        return false;
    }
    let path = |name: &str| folder.join(name).display().to_string();
    std::fs::write(
        folder.join("client.ext"),
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n",
    )
    .expect("write client.ext");
    let ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2";
    let (ca, ca_key, ext) = (path("ca.pem"), path("ca.key"), path("client.ext"));
    let signed = |name: &str, ca: &str, ca_key: &str| {
        let (csr, pem) = (path(&format!("{name}.csr")), path(&format!("{name}.pem")));
        format!("x509 -req -in {csr} -CA {ca} -CAkey {ca_key} -CAcreateserial -out {pem} -days 2 -extfile {ext}")
    };
    let (other, other_key) = (path("other-ca.pem"), path("other-ca.key"));
    let steps = [
        format!("req -new {ec} -keyout {} -out {} -subj /CN=poll-client", path("client.key"), path("client.csr")),
        signed("client", &ca, &ca_key),
        format!("ec -in {} -out {}", path("client.key"), path("client-sec1.key")),
        format!(
            "req -new -newkey rsa:2048 -nodes -keyout {} -out {} -subj /CN=poll-rsa",
            path("rsa.key"),
            path("rsa.csr")
        ),
        signed("rsa", &ca, &ca_key),
        format!("rsa -in {} -traditional -out {}", path("rsa.key"), path("rsa-pkcs1.key")),
        format!("req -x509 -new {ec} -keyout {other_key} -out {other} -subj /CN=another-CA"),
        format!("req -new {ec} -keyout {} -out {} -subj /CN=stranger", path("stranger.key"), path("stranger.csr")),
        signed("stranger", &other, &other_key),
        format!("pkcs8 -topk8 -in {} -out {} -passout pass:hunter2", path("client.key"), path("encrypted.key")),
    ];
    for step in &steps {
        // The paths are under the target folder: no spaces to split on.
        let args: Vec<&str> = step.split(' ').collect();
        let out = Command::new("openssl").args(&args).output().expect("run openssl");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let read = |name: &str| std::fs::read_to_string(folder.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let both = format!("{}{}{}", read("client.pem"), read("ca.pem"), read("client.key"));
    std::fs::write(folder.join("both.pem"), both).expect("write both.pem");
    for key in
        ["client.key", "client-sec1.key", "rsa.key", "rsa-pkcs1.key", "stranger.key", "encrypted.key", "both.pem"]
    {
        owner_only(&folder.join(key));
    }
    true
}

/// The base64 lines of a PEM file's private key sections, for a test that looks for any of
/// them in an output.
pub fn key_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut inside = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        match line {
            _ if line.starts_with("-----BEGIN") => inside = line.contains("PRIVATE KEY"),
            _ if line.starts_with("-----END") => inside = false,
            _ if inside && line.len() >= 16 => lines.push(line.to_string()),
            _ => {}
        }
    }
    assert!(!lines.is_empty(), "{} holds no private key", path.display());
    lines
}

#[cfg(unix)]
pub fn owner_only(path: &Path) {
    set_mode(path, 0o600);
}

#[cfg(not(unix))]
pub fn owner_only(_: &Path) {}

/// Sets the mode of `path` (Unix).
#[cfg(unix)]
pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {mode:o} {}: {e}", path.display()));
}
