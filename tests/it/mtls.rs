//! Mutual TLS (`-E/--cert`, `--key`) end to end against real servers that ask who is calling,
//! each started by its test on 127.0.0.1 with certificates made by openssl
//! (`support::certs`): nginx with `ssl_verify_client` (the key apart and in the certificate's
//! file; PKCS#8, SEC1 and PKCS#1 keys; through a proxy's `CONNECT` tunnel; not to another
//! origin unless `--location-trusted`), etcd with `--client-cert-auth` (a health wait; without
//! a certificate or with a stranger's, exit 3 in words that say so), redis-server with
//! `tls-auth-clients yes` as `--state rediss://`; and every bad input, exit 2 before anything is
//! sent. No output ever holds a byte of a key. A test whose server is not installed skips with
//! one `SKIPPED` line, or fails with `POLL_TEST_REQUIRE_TOOLS=1`.

use crate::support;

use std::path::Path;
use std::process::Output;

use support::certs;
use support::etcd::Etcd;
use support::nginx::Mtls;
use support::process::{Folder, run, stderr, stdout};
use support::redis::Redis;
use support::server::{Reply, Server};
use support::tinyproxy::Tinyproxy;

const DONE: &str = r#"{"status":"done"}"#;
/// The hint of a server that was not trusted, which a refused client must never get.
const CACERT_HINT: &str = "--cacert FILE";

/// The certificates of one test, in a folder of its own.
fn made(name: &str) -> Option<Folder> {
    let folder = Folder::new(name);
    certs::make(&folder.path("")).then_some(folder)
}

/// `--cacert` (the servers' CA), then `args`.
fn with_ca(folder: &Folder, args: &[&str]) -> Output {
    let ca = folder.file("ca.pem");
    let mut all = vec!["--cacert", ca.as_str()];
    all.extend(args);
    run(&all)
}

/// Asserts that no output of `out` holds a line of any key `folder` holds.
fn no_key_in(out: &Output, folder: &Folder) {
    let text = format!("{}{}", stdout(out), stderr(out));
    for key in ["client.key", "client-sec1.key", "rsa.key", "rsa-pkcs1.key", "stranger.key", "leaf.key", "both.pem"] {
        for line in certs::key_lines(&folder.path(key)) {
            assert!(!text.contains(&line), "a line of {key} is in the output: {text}");
        }
    }
}

/// The SHA-256 fingerprint of a certificate, as openssl writes it (`AB:01:...`).
fn fingerprint(cert: &Path) -> String {
    let out = std::process::Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256", "-in"])
        .arg(cert)
        .output()
        .expect("run openssl");
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().split_once('=').map(|(_, hex)| hex.to_string()).unwrap_or_else(|| panic!("{text}"))
}

#[test]
fn nginx_that_asks_for_a_certificate_gets_it_with_its_key_apart_or_in_its_file() {
    let Some(folder) = made("mtls-nginx") else { return };
    let Some(nginx) = Mtls::start(&folder.path("")) else { return };
    let who = nginx.url("/who");
    let (client, key) = (folder.file("client.pem"), folder.file("client.key"));
    let until = r#".verify == "SUCCESS""#;
    let shown = |args: &[&str], subject: &str| {
        let mut all = args.to_vec();
        all.extend(["--until", until, "--print", ".client", "--timeout", "20s", who.as_str()]);
        let out = with_ca(&folder, &all);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}\n{}", stderr(&out), nginx.log());
        assert_eq!(stdout(&out).trim(), subject, "{args:?}");
        no_key_in(&out, &folder);
    };
    shown(&["--cert", &client, "--key", &key], "CN=poll-client");
    // The key in the certificate's file, after the chain: nothing else is needed.
    shown(&["-E", &folder.file("both.pem")], "CN=poll-client");
    // SEC1, PKCS#8 and PKCS#1 keys.
    shown(&["--cert", &client, "--key", &folder.file("client-sec1.key")], "CN=poll-client");
    shown(&["--cert", &folder.file("rsa.pem"), "--key", &folder.file("rsa.key")], "CN=poll-rsa");
    shown(&["--cert", &folder.file("rsa.pem"), "--key", &folder.file("rsa-pkcs1.key")], "CN=poll-rsa");

    // -v names the certificate: its file and its SHA-256 fingerprint, as openssl gives it.
    let out = with_ca(&folder, &["-v", "--cert", &client, "--key", &key, &who]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let named = format!("client certificate: `{client}` (SHA-256 {})", fingerprint(&folder.path("client.pem")));
    assert!(stderr(&out).contains(&named), "{named}\n{}", stderr(&out));
    no_key_in(&out, &folder);

    // Without a certificate, or with one its CA did not sign, nginx answers 400: exit 3.
    for args in [vec![], vec!["--cert", &folder.file("stranger.pem"), "--key", &folder.file("stranger.key")]] {
        let mut all = args.clone();
        all.push(&who);
        let out = with_ca(&folder, &all);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("HTTP 400: not retryable"), "{}", stderr(&out));
        no_key_in(&out, &folder);
    }
}

#[test]
fn the_certificate_goes_to_another_origin_only_with_location_trusted() {
    let Some(folder) = made("mtls-origins") else { return };
    let Some(nginx) = Mtls::start(&folder.path("")) else { return };
    let (client, key) = (folder.file("client.pem"), folder.file("client.key"));
    let verify = |args: &[&str]| {
        let mut all = vec!["--cert", client.as_str(), "--key", key.as_str(), "--print", ".verify", "--timeout", "20s"];
        all.extend(args);
        let out = with_ca(&folder, &all);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}\n{}", stderr(&out), nginx.log());
        stdout(&out).trim().to_string()
    };
    // The other origin asks for a certificate but takes a request without: it says whether one came.
    assert_eq!(verify(&[&nginx.other_url("/who")]), "SUCCESS", "a URL given is the loop's own origin");
    assert_eq!(verify(&[&nginx.url("/away")]), "NONE", "a redirect to another origin gets none");
    let jobs = nginx.url("/jobs");
    let submit = ["--submit", "-X", "POST", "--until", ".verify", jobs.as_str()];
    assert_eq!(verify(&submit), "NONE", "a status URL on another origin gets none");
    let mut trusted = vec!["--location-trusted"];
    trusted.extend(submit);
    assert_eq!(verify(&trusted), "SUCCESS", "--location-trusted sends it there");
}

#[test]
fn the_certificate_goes_through_a_proxys_connect_tunnel() {
    let Some(folder) = made("mtls-proxy") else { return };
    let Some(nginx) = Mtls::start(&folder.path("")) else { return };
    let port = nginx.url("").rsplit(':').next().and_then(|port| port.parse().ok()).expect("nginx's port");
    let Some(proxy) = Tinyproxy::tunnelling_to(port) else { return };
    let (ca, client, key) = (folder.file("ca.pem"), folder.file("client.pem"), folder.file("client.key"));
    let out = support::poll()
        .args(["--cacert", &ca, "--cert", &client, "--key", &key, "--print", ".verify", &nginx.url("/who")])
        .env("HTTPS_PROXY", proxy.url(None))
        .output()
        .expect("run poll");
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), proxy.log());
    assert_eq!(stdout(&out).trim(), "SUCCESS");
    let tunnelled = format!("CONNECT 127.0.0.1:{port} ");
    assert!(proxy.requests().iter().any(|request| request.starts_with(&tunnelled)), "{:?}", proxy.requests());
}

/// The error lines of a refused certificate and of a missing one, against etcd, are printed
/// for the record (`cargo test mtls::etcd -- --nocapture`).
#[test]
fn etcd_with_client_cert_auth_is_waited_on_with_a_certificate_and_says_why_without() {
    let Some(folder) = made("mtls-etcd") else { return };
    let Some(etcd) = Etcd::with_client_cert_auth(&folder.path("")) else { return };
    let health = etcd.url("/health");
    let (client, key) = (folder.file("client.pem"), folder.file("client.key"));
    // docs/guide/credentials.md's health wait: until etcd has a leader.
    let out = with_ca(
        &folder,
        &["--cert", &client, "--key", &key, "--until", r#".health == "true""#, "--timeout", "30s", &health],
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), etcd.log());
    assert!(stdout(&out).contains(r#""health":"true""#), "{}", stdout(&out));

    let out = with_ca(&folder, &["--timeout", "30s", &health]);
    let missing = stderr(&out);
    eprintln!("no certificate: {missing}");
    assert_eq!(out.status.code(), Some(3), "{missing}");
    assert!(missing.contains("the server asks for a client certificate"), "{missing}");
    assert!(missing.contains("give one with --cert FILE"), "{missing}");
    assert!(!missing.contains(CACERT_HINT), "{missing}");
    assert_eq!(missing.lines().count(), 1, "{missing}");

    let stranger = ["--cert", &folder.file("stranger.pem"), "--key", &folder.file("stranger.key")];
    let out = with_ca(&folder, &[&stranger[..], &["--timeout", "30s", &health]].concat());
    let refused = stderr(&out);
    eprintln!("a stranger's certificate: {refused}");
    assert_eq!(out.status.code(), Some(3), "{refused}");
    assert!(refused.contains("the server refused the client certificate"), "{refused}");
    assert!(!refused.contains(CACERT_HINT), "{refused}");
    assert_eq!(refused.lines().count(), 1, "{refused}");
    no_key_in(&out, &folder);
}

#[test]
fn rediss_state_presents_the_certificate_to_a_redis_that_asks() {
    let _serial = support::process::serial();
    let Some(folder) = made("mtls-redis") else { return };
    let Some(redis) =
        Redis::with_client_auth(&folder.path("leaf.pem"), &folder.path("leaf.key"), &folder.path("ca.pem"))
    else {
        return;
    };
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let url = server.url("/");
    let state = redis.tls_url();
    let (client, key) = (folder.file("client.pem"), folder.file("client.key"));
    let out = with_ca(&folder, &["--state", &state, "--state-fail", "closed", "--cert", &client, "--key", &key, &url]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), redis.log());
    assert_eq!(redis.keys().len(), 1, "the state was written over TLS: {:?}", redis.keys());

    // Without a certificate, or with a stranger's, the store cannot be reached: under
    // --state-fail closed, exit 6 before anything is sent.
    let stranger = ["--cert", &folder.file("stranger.pem"), "--key", &folder.file("stranger.key")];
    for args in [&[][..], &stranger[..]] {
        let before = server.hits();
        let out = with_ca(&folder, &[args, &["--state", &state, "--state-fail", "closed", &url]].concat());
        assert_eq!(out.status.code(), Some(6), "{args:?}: {}", stderr(&out));
        assert_eq!(server.hits(), before, "nothing is sent");
        no_key_in(&out, &folder);
    }
}

#[test]
fn bad_certificates_and_keys_are_usage_errors_before_anything_is_sent() {
    let Some(folder) = made("mtls-bad") else { return };
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let url = server.url("/");
    std::fs::write(
        folder.path("garbled.key"),
        "-----BEGIN PRIVATE KEY-----\nnot base64 at all!\n-----END PRIVATE KEY-----\n",
    )
    .expect("write garbled.key");
    std::fs::write(folder.path("nonsense.key"), "-----BEGIN PRIVATE KEY-----\nAAAAAAAA\n-----END PRIVATE KEY-----\n")
        .expect("write nonsense.key");
    for key in ["garbled.key", "nonsense.key"] {
        certs::owner_only(&folder.path(key));
    }
    let f = |name: &str| folder.file(name);
    let rows: Vec<(Vec<String>, String)> = vec![
        (vec!["--cert".into(), f("nope.pem")], format!("--cert: cannot read `{}`", f("nope.pem"))),
        (
            vec!["--cert".into(), f("client.pem"), "--key".into(), f("nope.key")],
            format!("--key: cannot read `{}`", f("nope.key")),
        ),
        (vec!["--cert".into(), f("client.key")], format!("--cert: `{}` holds no PEM certificate", f("client.key"))),
        (
            vec!["--cert".into(), f("client.pem")],
            format!("--cert: `{}` holds no private key; give it with --key FILE", f("client.pem")),
        ),
        (
            vec!["--cert".into(), f("client.pem"), "--key".into(), f("ca.pem")],
            format!("--key: `{}` holds no PEM private key (PKCS#8, PKCS#1 or SEC1)", f("ca.pem")),
        ),
        (
            vec!["--cert".into(), f("client.pem"), "--key".into(), f("stranger.key")],
            format!(
                "--key: the key in `{}` does not belong to the certificate in `{}`",
                f("stranger.key"),
                f("client.pem")
            ),
        ),
        (
            vec!["--cert".into(), f("client.pem"), "--key".into(), f("encrypted.key")],
            format!("--key: `{}` holds an encrypted private key", f("encrypted.key")),
        ),
        (
            vec!["--cert".into(), f("client.pem"), "--key".into(), f("garbled.key")],
            format!("--key: `{}` holds a PEM section that does not decode", f("garbled.key")),
        ),
        (
            vec!["--cert".into(), f("client.pem"), "--key".into(), f("nonsense.key")],
            format!("--key: the key in `{}` is no RSA, ECDSA (P-256, P-384) or Ed25519 key", f("nonsense.key")),
        ),
        (vec!["--key".into(), f("client.key")], "--cert".into()),
    ];
    for (args, said) in rows {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.push(&url);
        let out = run(&all);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(&said), "{args:?}: {said}\n{err}");
        assert!(!err.contains("not base64") && !err.contains("AAAAAAAA"), "{err}");
        no_key_in(&out, &folder);
        // clap's own error (--key without --cert) is several lines; ours are one.
        if !args[0].starts_with("--key") {
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        }
    }
    assert_eq!(server.connections(), 0, "nothing is sent");
}

/// A key file that group or others may read is used, with one warning naming it (as ssh warns).
#[cfg(unix)]
#[test]
fn a_key_others_may_read_is_used_with_one_warning() {
    use support::process::warnings;
    let Some(folder) = made("mtls-mode") else { return };
    let server = Server::start(vec![Reply::json(200, DONE), Reply::json(200, DONE), Reply::json(200, DONE)]);
    let url = server.url("/");
    let (client, key) = (folder.file("client.pem"), folder.file("client.key"));
    let out = run(&["--cert", &client, "--key", &key, &url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(warnings(&out).is_empty(), "0600 is the owner's alone: {:?}", warnings(&out));

    certs::set_mode(&folder.path("client.key"), 0o644);
    let out = run(&["--cert", &client, "--key", &key, &url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
    let warned = warnings(&out);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains(&format!("--key `{key}` holds a private key that others may read (mode 644)")),
        "{warned:?}"
    );

    // The key in the certificate's file: that file is named.
    let both = folder.file("both.pem");
    certs::set_mode(&folder.path("both.pem"), 0o640);
    let out = run(&["--cert", &both, &url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let warned = warnings(&out);
    assert!(warned.len() == 1 && warned[0].contains(&format!("--cert `{both}`")), "{warned:?}");
    no_key_in(&out, &folder);
}
