//! Where headers, certificates and bodies meet the rest (issue 49): every header `poll` adds
//! (cookies from the jar, `Last-Event-ID`, `tracestate`) counted in the request's size, so that a
//! request goes out whole or not at all; `TRACESTATE` and `TRACEPARENT` held to W3C's rules;
//! `--cert FILE:PASSPHRASE` as curl reads it, with the passphrase in no output; an X.509 v1
//! client certificate; and words that say what happened (a TLS 1.2 server that wants a
//! certificate, a corrupt gzip stream, a body nested too deep).

use crate::support;

use std::process::Output;

use support::certs;
use support::daemon::Daemon;
use support::nginx::Mtls;
use support::poll;
use support::process::{Folder, stderr, stdout, warnings};
use support::server::{Reply, Server};

const DONE: &str = r#"{"status":"done"}"#;
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// `poll` with `TRACEPARENT` set to `parent` and `TRACESTATE` to `state`, then `args`.
fn traced(parent: &str, state: &str, args: &[&str]) -> Output {
    poll().env("TRACEPARENT", parent).env("TRACESTATE", state).args(args).output().expect("run poll")
}

/// A `TRACESTATE` that W3C's rules reject (a CR and LF, a control character, a bad key) is
/// dropped with one warning, as a bad `TRACEPARENT` is: the request goes out with its
/// `traceparent` and no `tracestate`, and no message speaks of a redirect.
#[test]
fn a_tracestate_w3c_rejects_is_dropped_with_one_warning_and_the_request_sent() {
    for state in ["congo=1\r\nx-injected: yes", "congo=t61\u{7}", "Congo=1", "congo=1\n"] {
        let server = Server::start(vec![Reply::json(200, DONE)]);
        let out = traced(TRACEPARENT, state, &[&server.url("/")]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{state:?}: {err}");
        assert_eq!(stdout(&out), DONE);
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert!(
            requests[0].header("traceparent").is_some_and(|p| p.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"))
        );
        assert_eq!(requests[0].header("x-injected"), None, "{state:?}");
        if state == "congo=1\n" {
            // A line end at the end is the variable's, not the value's: trimmed, and sent.
            assert_eq!(requests[0].header("tracestate"), Some("congo=1"));
            assert!(warnings(&out).is_empty(), "{err}");
            continue;
        }
        assert_eq!(requests[0].header("tracestate"), None, "{state:?}");
        let warned = warnings(&out);
        assert_eq!(warned.len(), 1, "{state:?}: {err}");
        assert!(warned[0].contains("TRACESTATE is not a W3C tracestate ("), "{}", warned[0]);
        assert!(warned[0].ends_with("); no tracestate header is sent"), "{}", warned[0]);
        assert!(!err.contains("redirect"), "{err}");
        assert_eq!(server.bad_requests(), 0);
    }
}

/// `TRACEPARENT`'s flags other than `sampled` are sent as 0 (W3C level 1), to the server and to
/// `-- CMD` alike.
#[test]
fn traceparent_flags_other_than_sampled_are_sent_as_zero() {
    for (flags, sent) in [("ff", "01"), ("fe", "00"), ("03", "01"), ("00", "00")] {
        let server = Server::start(vec![Reply::json(200, DONE)]);
        let parent = format!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-{flags}");
        let out = traced(&parent, "congo=1", &[&server.url("/"), "--", "sh", "-c", "echo $TRACEPARENT"]);
        assert_eq!(out.status.code(), Some(0), "{flags}: {}", stderr(&out));
        let header = server.requests()[0].header("traceparent").unwrap_or_default().to_string();
        assert!(header.ends_with(&format!("-{sent}")) && header.len() == TRACEPARENT.len(), "{flags}: {header}");
        let handed = stdout(&out);
        assert!(handed.trim().ends_with(&format!("-{sent}")), "{flags}: {handed}");
    }
}

const PENDING: &str = r#"{"status":"pending"}"#;
const UNTIL_DONE: &str = r#".status == "done""#;

/// `Set-Cookie` values of these sizes, as a first reply sets them, and the `Cookie` header the
/// second request must carry.
fn cookies(sizes: &[usize]) -> (Vec<String>, String) {
    let set: Vec<String> = sizes
        .iter()
        .enumerate()
        .map(|(i, size)| format!("_oauth2_proxy_{i}={}; Path=/", "c".repeat(size - "_oauth2_proxy_0=".len())))
        .collect();
    let sent = set.iter().map(|cookie| cookie.split(';').next().unwrap_or_default()).collect::<Vec<_>>().join("; ");
    (set, sent)
}

/// Cookies that push the request head past its first buffer (two of 2,500 bytes, as
/// oauth2-proxy splits its session; one of 4,096 bytes) go back whole: the server never sees a
/// head cut short, nor a retry.
#[test]
fn cookies_that_push_the_head_past_its_first_buffer_go_back_whole() {
    for sizes in [&[2_500, 2_500][..], &[4_096][..], &[4_000, 4_000][..]] {
        let (set, sent) = cookies(sizes);
        let mut first = Reply::json(200, PENDING);
        for cookie in &set {
            first = first.header("Set-Cookie", cookie);
        }
        let server = Server::start(vec![first, Reply::json(200, DONE)]).expect_hits(2);
        let out = poll()
            .args(["--until", UNTIL_DONE, "-i", "10ms", "--retries", "3", "--timeout", "20s", &server.url("/")])
            .output()
            .expect("run poll");
        assert_eq!(out.status.code(), Some(0), "{sizes:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), DONE);
        let requests = server.requests();
        // In any order: RFC 6265 leaves cookies of the same path and age to the jar.
        let mut got: Vec<&str> = requests[1].header("cookie").unwrap_or_default().split("; ").collect();
        got.sort_unstable();
        assert!(got.join("; ") == sent, "{sizes:?}: the cookies did not go back as they were set");
        assert_eq!(server.bad_requests(), 0, "{sizes:?}: a head arrived cut short");
    }
}

/// Cookies past the jar's 8 KiB cap are exit 3 naming the largest, before anything more is
/// sent: never retried, never half-sent.
#[test]
fn cookies_past_the_jars_cap_are_exit_3_never_sent() {
    let (set, _) = cookies(&[3_000, 3_100, 3_000]);
    let mut first = Reply::json(200, PENDING);
    for cookie in &set {
        first = first.header("Set-Cookie", cookie);
    }
    let server = Server::start(vec![first]).expect_hits(1);
    let out = poll()
        .args(["--until", UNTIL_DONE, "-i", "10ms", "--retries", "3", "--timeout", "20s", &server.url("/")])
        .output()
        .expect("run poll");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("too large to send back (`_oauth2_proxy_1` alone is 3100 bytes)"), "{err}");
    assert_eq!(server.bad_requests(), 0);
}

/// An SSE `id:` of 5,000 bytes is sent back whole as `Last-Event-ID`; one past 8 KiB is exit 3
/// naming the header, found before the next request is sent, and not retried.
#[test]
fn a_long_event_id_is_sent_back_whole_and_one_past_the_limit_is_exit_3() {
    let id = "i".repeat(5_000);
    let event = format!("id: {id}\ndata: {PENDING}\n\n");
    let server = Server::start(vec![
        Reply::sse(&[(std::time::Duration::ZERO, &event)]),
        Reply::sse(&[(std::time::Duration::ZERO, &format!("data: {DONE}\n\n"))]),
    ]);
    let out = poll()
        .args(["--watch", "--until", UNTIL_DONE, "-i", "10ms", "--retries", "3", "--timeout", "20s"])
        .arg(server.url("/"))
        .output()
        .expect("run poll");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].header("last-event-id"), Some(id.as_str()));
    assert_eq!(server.bad_requests(), 0, "a head arrived cut short");

    let id = "i".repeat(9_000);
    let event = format!("id: {id}\ndata: {PENDING}\n\n");
    let server = Server::start(vec![Reply::sse(&[(std::time::Duration::ZERO, &event)])]).expect_hits(1);
    let out = poll()
        .args(["--watch", "--until", UNTIL_DONE, "-i", "10ms", "--retries", "3", "--timeout", "20s"])
        .arg(server.url("/"))
        .output()
        .expect("run poll");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("the `Last-Event-ID` header is 9000 bytes, more than the 8192 poll sends"), "{err}");
    assert!(!err.contains(&id[..100]) && !err.contains("redirect"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(server.bad_requests(), 0);
}

/// A W3C tracestate of 32 list-members of `len` bytes each (with commas between).
fn tracestate(members: usize, len: usize) -> String {
    (0..members).map(|i| format!("k{i:02}={}", "v".repeat(len - 4))).collect::<Vec<_>>().join(",")
}

/// A `TRACESTATE` of 5,000 bytes goes out whole on every request; one W3C takes but past 8 KiB
/// is exit 3 naming `tracestate`, with nothing sent.
#[test]
fn a_long_tracestate_is_sent_whole_and_one_past_the_limit_is_exit_3_with_nothing_sent() {
    let state = tracestate(20, 249);
    assert_eq!(state.len(), 4_999);
    let server = Server::start(vec![Reply::json(200, PENDING), Reply::json(200, DONE)]);
    let out = traced(TRACEPARENT, &state, &["--until", UNTIL_DONE, "-i", "10ms", "--retries", "3", &server.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(warnings(&out).is_empty(), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|request| request.header("tracestate") == Some(state.as_str())));
    assert_eq!(server.bad_requests(), 0, "a head arrived cut short");

    let state = tracestate(32, 260);
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let out = traced(TRACEPARENT, &state, &["--retries", "3", &server.url("/")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let said = format!("the `tracestate` header is {} bytes, more than the 8192 poll sends", state.len());
    assert!(err.contains(&said), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(server.connections(), 0, "nothing is sent");
}

/// A body nested deeper than 127 levels warns "nested too deep", and the run's last line says
/// so too (not "2xx body is not JSON"), in the JSON log's final object as well.
#[test]
fn a_body_nested_too_deep_ends_in_the_warnings_words() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let server = Server::start(vec![Reply::json(200, &deep)]).expect_hits(2);
    let out = poll().args(["--until", ".a", "-i", "10ms", "--retries", "1", &server.url("/")]).output().expect("run");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(
            "poll: error: gave up after 2 consecutive failures; last: --until failed on the body: \
             JSON nested too deep (more than 127 levels)"
        ),
        "{err}"
    );
    assert!(!last.contains("not JSON"), "{err}");
    assert!(warnings(&out).iter().all(|w| w.contains("JSON nested too deep (more than 127 levels)")), "{err}");

    let server = Server::start(vec![Reply::json(200, &deep)]).expect_hits(1);
    let out = poll()
        .args(["--until", ".a", "--retries", "0", "--log-format", "json", &server.url("/")])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let text = format!("{}{}", stdout(&out), stderr(&out));
    let last = text.lines().rfind(|line| line.contains(r#""event":"done""#)).unwrap_or_default().to_string();
    assert!(last.contains("gave up after 1 failure: --until failed on the body: JSON nested too deep"), "{text}");
}

/// `bytes`, gzipped.
fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).expect("gzip in memory");
    encoder.finish().expect("gzip in memory")
}

/// Bytes that do not decode in a gzip event stream are "the stream's gzip is corrupt", a
/// malformed reply (retried as one), not "connection reset"; the events before them were judged.
#[test]
fn a_corrupt_gzip_event_stream_says_so() {
    let mut body = gzip(format!("data: {PENDING}\n\n").as_bytes());
    body.extend_from_slice(b"\x1f\x8b this is not gzip, and no reset");
    let stream = Reply::status(200).header("Content-Type", "text/event-stream").header("Content-Encoding", "gzip");
    let server = Server::start(vec![stream.body(body)]).expect_hits(2);
    let out = poll()
        .args(["--watch", "--until", UNTIL_DONE, "--show", ".status", "-v", "-i", "10ms", "--retries", "1"])
        .arg(server.url("/"))
        .output()
        .expect("run poll");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(
            "poll: error: gave up after 2 consecutive failures; last: malformed reply (the stream's gzip is corrupt ("
        ),
        "{err}"
    );
    assert!(!err.contains("connection reset"), "{err}");
}

/// The certificates of one test (`support::certs`), in a folder of its own; `None` without openssl.
fn made(name: &str) -> Option<Folder> {
    let folder = Folder::new(name);
    certs::make(&folder.path("")).then_some(folder)
}

/// Runs `openssl ARGS` in `folder` (the paths are the folder's files, without spaces).
fn openssl(folder: &Folder, args: &str) {
    let args: Vec<String> = args.split(' ').map(|arg| arg.replace("{}", &folder.file(""))).collect();
    let out = std::process::Command::new("openssl").args(&args).output().expect("run openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Asserts that no output of `out` holds `secret`.
fn secret_kept(out: &Output, secret: &str, what: &str) {
    let text = format!("{}{}", stdout(out), stderr(out));
    assert!(!text.contains(secret), "{what}: the passphrase is in the output: {text}");
}

/// `--cert FILE:PASSPHRASE`, curl's form: an encrypted PKCS#8 key (beside the certificate, or
/// in its file) is decrypted with it and shown to nginx; the passphrase is in no output, not
/// in a usage error, not from `POLL_CERT`, not in a GitHub annotation, not in `-v`, not in
/// `--help`; a wrong one, or a key poll cannot decrypt, is exit 2 before anything is sent.
#[test]
fn cert_file_colon_passphrase_decrypts_the_key_and_never_shows_the_passphrase() {
    let Some(folder) = made("meet-cert-passphrase") else { return };
    let f = |name: &str| folder.file(name);
    let both = format!(
        "{}{}",
        std::fs::read_to_string(folder.path("client.pem")).expect("client.pem"),
        std::fs::read_to_string(folder.path("encrypted.key")).expect("encrypted.key")
    );
    std::fs::write(folder.path("both-encrypted.pem"), both).expect("write both-encrypted.pem");
    certs::owner_only(&folder.path("both-encrypted.pem"));
    // Keys of the same client key: scrypt (PBES2 too, taken); PBES1 3DES and OpenSSL's old PEM form (refused).
    openssl(&folder, "pkcs8 -topk8 -scrypt -in {}client.key -out {}scrypt.key -passout pass:hunter2");
    openssl(&folder, "pkcs8 -topk8 -v1 PBE-SHA1-3DES -in {}client.key -out {}pbes1.key -passout pass:hunter2");
    openssl(&folder, "ec -aes256 -in {}client.key -out {}legacy.key -passout pass:hunter2");
    for key in ["scrypt.key", "pbes1.key", "legacy.key"] {
        certs::owner_only(&folder.path(key));
    }

    if let Some(nginx) = Mtls::start(&folder.path("")) {
        let who = nginx.url("/who");
        let ca = f("ca.pem");
        let with = |cert: &str, key: Option<&str>| {
            let mut cmd = poll();
            cmd.args(["--cacert", &ca, "-v", "--print", ".client", "--timeout", "20s", "--cert", cert]);
            if let Some(key) = key {
                cmd.args(["--key", key]);
            }
            let out = cmd.arg(&who).output().expect("run poll");
            assert_eq!(out.status.code(), Some(0), "{cert}: {}\n{}", stderr(&out), nginx.log());
            assert_eq!(stdout(&out).trim(), "CN=poll-client");
            secret_kept(&out, "hunter2", cert);
        };
        with(&format!("{}:hunter2", f("client.pem")), Some(&f("encrypted.key")));
        with(&format!("{}:hunter2", f("client.pem")), Some(&f("scrypt.key")));
        with(&format!("{}:hunter2", f("both-encrypted.pem")), None);
        // A passphrase for a key that needs none is not needed, as in curl.
        with(&format!("{}:hunter2", f("client.pem")), Some(&f("client.key")));
    }

    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let url = server.url("/");
    let pass = "s3cret-pass";
    let rows: Vec<(Vec<String>, String)> = vec![
        (vec!["-E".into(), format!("{}:{pass}", f("nope.pem"))], format!("--cert: cannot read `{}`", f("nope.pem"))),
        (
            vec!["--cert".into(), format!("{}:{pass}", f("client.pem")), "--key".into(), f("encrypted.key")],
            format!("--key: the passphrase given with --cert does not decrypt the key in `{}`", f("encrypted.key")),
        ),
        (
            vec!["--cert".into(), format!("{}:{pass}", f("both-encrypted.pem"))],
            format!(
                "--cert: the passphrase given with --cert does not decrypt the key in `{}`",
                f("both-encrypted.pem")
            ),
        ),
        (
            vec!["--cert".into(), f("client.pem"), "--key".into(), f("encrypted.key")],
            format!(
                "--key: `{}` holds an encrypted private key; give its passphrase as --cert FILE:PASSPHRASE",
                f("encrypted.key")
            ),
        ),
        (
            vec!["--cert".into(), format!("{}:{pass}", f("client.pem")), "--key".into(), f("pbes1.key")],
            format!("--key: `{}` holds a key encrypted in a way poll does not decrypt", f("pbes1.key")),
        ),
        (
            vec!["--cert".into(), format!("{}:{pass}", f("client.pem")), "--key".into(), f("legacy.key")],
            format!("--key: `{}` holds an encrypted private key in OpenSSL's old PEM form", f("legacy.key")),
        ),
    ];
    for (args, said) in rows {
        let out = poll().args(&args).arg(&url).output().expect("run poll");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(&said), "{args:?}: {said}\n{err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        secret_kept(&out, pass, "a usage error");
    }
    // The same from the environment, and as a GitHub annotation.
    let cert = format!("{}:{pass}", f("nope.pem"));
    let out = poll().env("POLL_CERT", &cert).arg(&url).output().expect("run poll");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("cannot read `{}`", f("nope.pem"))), "{}", stderr(&out));
    secret_kept(&out, pass, "POLL_CERT");
    let out = poll().env("GITHUB_ACTIONS", "true").args(["-E", &cert, &url]).output().expect("run poll");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(format!("{}{}", stdout(&out), stderr(&out)).contains("::error"), "{}", stderr(&out));
    secret_kept(&out, pass, "an annotation");
    let out = poll().env("POLL_CERT", &cert).arg("--help").output().expect("run poll");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    secret_kept(&out, pass, "--help");
    assert_eq!(server.connections(), 0, "nothing is sent");
}

/// An X.509 version 1 client certificate (no extensions, as `openssl x509 -req` makes one
/// without `-extfile`) is checked against its key and presented, as curl presents it: nginx
/// takes it. One whose key is another's, or a certificate that does not parse, is one line in
/// words, exit 2.
#[test]
fn an_x509_v1_client_certificate_is_presented_and_a_bad_one_is_said_in_words() {
    let Some(folder) = made("meet-cert-v1") else { return };
    let f = |name: &str| folder.file(name);
    openssl(&folder, "req -new -key {}client.key -subj /CN=poll-v1 -out {}v1.csr");
    openssl(&folder, "x509 -req -in {}v1.csr -CA {}ca.pem -CAkey {}ca.key -CAcreateserial -out {}v1.pem -days 2");
    let text = std::process::Command::new("openssl")
        .args(["x509", "-noout", "-text", "-in", &f("v1.pem")])
        .output()
        .expect("run openssl");
    assert!(String::from_utf8_lossy(&text.stdout).contains("Version: 1 (0x0)"), "openssl made no v1 certificate");
    // A PEM certificate whose DER is no certificate.
    std::fs::write(folder.path("junk.pem"), "-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n")
        .expect("write junk.pem");

    if let Some(nginx) = Mtls::start(&folder.path("")) {
        let out = poll()
            .args(["--cacert", &f("ca.pem"), "--cert", &f("v1.pem"), "--key", &f("client.key")])
            .args(["--until", r#".verify == "SUCCESS""#, "--print", ".client", "--timeout", "20s"])
            .arg(nginx.url("/who"))
            .output()
            .expect("run poll");
        assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), nginx.log());
        assert_eq!(stdout(&out).trim(), "CN=poll-v1");
    }

    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let rows = [
        (
            ["--cert", &f("v1.pem"), "--key", &f("stranger.key")],
            format!(
                "--key: the key in `{}` does not belong to the certificate in `{}`",
                f("stranger.key"),
                f("v1.pem")
            ),
        ),
        (
            ["--cert", &f("junk.pem"), "--key", &f("client.key")],
            format!(
                "--cert: the certificate in `{}` is no X.509 certificate poll can read (version 1 or 3, DER in PEM)",
                f("junk.pem")
            ),
        ),
    ];
    for (args, said) in rows {
        let out = poll().args(args).arg(server.url("/")).output().expect("run poll");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end(), format!("poll: error: {said}"), "{args:?}");
    }
    assert_eq!(server.connections(), 0, "nothing is sent");
}

/// A TLS 1.2 server that wants a client certificate (OpenSSL's `s_server -Verify 1 -tls1_2`,
/// which ends the handshake with a bare `handshake_failure`) gets `--cert`'s hint, as a TLS 1.3
/// one does, never `--cacert`'s; a certificate its CA did not sign is "refused"; its own
/// client's is taken.
#[test]
fn a_tls_1_2_server_that_wants_a_certificate_gets_the_hint_of_cert() {
    let Some(folder) = made("meet-tls12") else { return };
    let f = |name: &str| folder.file(name);
    let (leaf, key, ca) = (f("leaf.pem"), f("leaf.key"), f("ca.pem"));
    let server = Daemon::new("openssl").start(
        |command, _, ports| {
            let accept = format!("127.0.0.1:{}", ports[0]);
            command.args(["s_server", "-accept", &accept, "-cert", &leaf, "-key", &key, "-CAfile", &ca]);
            command.args(["-Verify", "1", "-verify_return_error", "-tls1_2", "-www"]);
        },
        Daemon::accepting,
    );
    let url = format!("https://127.0.0.1:{}/", server.port(0));
    let run = |args: &[&str]| {
        let out = poll().args(["--cacert", &ca, "--timeout", "20s"]).args(args).arg(&url).output().expect("run");
        (out.status.code(), stderr(&out))
    };
    let (code, err) = run(&[]);
    assert_eq!(code, Some(3), "{err}\n{}", server.output());
    assert!(err.contains("the server asks for a client certificate"), "{err}");
    assert!(err.trim_end().ends_with("; give one with --cert FILE (and --key FILE)"), "{err}");
    assert!(!err.contains("--cacert FILE"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    let (code, err) = run(&["--cert", &f("stranger.pem"), "--key", &f("stranger.key")]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("the server refused the client certificate"), "{err}");
    assert!(!err.contains("--cacert FILE"), "{err}");

    let (code, err) = run(&["--cert", &f("client.pem"), "--key", &f("client.key")]);
    assert_eq!(code, Some(0), "{err}\n{}", server.output());
}

/// A token read at each attempt (`-H @FILE`) is counted too: one of 6,000 bytes, which the
/// loop's first request head did not hold, goes out whole.
#[test]
fn a_long_token_from_a_file_goes_out_whole() {
    let folder = Folder::new("meet-long-token");
    let token = "t".repeat(6_000);
    std::fs::write(folder.path("auth.hdr"), format!("Authorization: Bearer {token}\n")).expect("write auth.hdr");
    let server = Server::start(vec![Reply::json(200, PENDING), Reply::json(200, DONE)]);
    let header = format!("@{}", folder.file("auth.hdr"));
    let out = poll()
        .args(["-H", &header, "--until", UNTIL_DONE, "-i", "10ms", "--retries", "3", &server.url("/")])
        .output()
        .expect("run poll");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let sent = format!("Bearer {token}");
    assert!(requests.iter().all(|request| request.header("authorization") == Some(sent.as_str())));
    assert_eq!(server.bad_requests(), 0, "a head arrived cut short");
}
