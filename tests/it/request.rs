//! End-to-end tests of the request side of `poll` (README.md, "What it does"; `poll --help`):
//! how the flags build the request, what reaches the server on every attempt,
//! redirects, body limits and decoding, TLS trust, connection reuse and proxies.
//! Every test runs the real binary against the scripted loopback server.

use crate::support;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

use support::poll;
use support::server::{Recorded, Reply, Server};
use support::tinyproxy::Tinyproxy;

/// `Basic` of `user:pass`.
const USER_PASS: &str = "Basic dXNlcjpwYXNz";

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A usage error: exactly one line on stderr, `poll: error: ...`.
fn assert_one_error_line(stderr: &str) {
    assert!(stderr.starts_with("poll: error: "), "{stderr:?}");
    assert!(stderr.ends_with('\n'), "{stderr:?}");
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
}

/// The credential headers of a request (those that must not follow it to another origin), in that order.
fn credentials(request: &Recorded) -> Vec<(&str, &str)> {
    ["authorization", "proxy-authorization", "cookie"]
        .into_iter()
        .filter_map(|name| request.header(name).map(|value| (name, value)))
        .collect()
}

/// A file under Cargo's scratch folder for integration tests, unique to `name`.
fn scratch(name: &str, contents: &[u8]) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("request-{}-{name}", std::process::id()));
    std::fs::write(&path, contents).expect("write scratch file");
    path
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).expect("gzip into memory");
    encoder.finish().expect("gzip into memory")
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).expect("zlib into memory");
    encoder.finish().expect("zlib into memory")
}

// ---------------------------------------------------------------------------
// How the flags build the request
// ---------------------------------------------------------------------------

#[test]
fn x_sets_the_method_standard_or_custom() {
    for method in ["PUT", "DELETE", "PURGE"] {
        let server = Server::start(vec![Reply::json(200, r#"{"ok":true}"#)]);
        poll().args(["-X", method, &server.url("/thing")]).assert().code(0).stdout(r#"{"ok":true}"#).stderr("");
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{method}");
        assert_eq!(requests[0].method, method);
        assert_eq!(requests[0].path, "/thing");
        assert!(requests[0].body.is_empty(), "{method}");
    }
}

#[test]
fn repeated_headers_all_arrive_with_their_exact_values() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    poll()
        .args(["-H", "X-One: first value", "-H", "X-Two:second", "-H", "X-Dup: 1", "-H", "X-Dup: 2"])
        .arg(server.url("/"))
        .assert()
        .code(0)
        .stdout("{}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header_all("x-one"), ["first value"]);
    assert_eq!(requests[0].header_all("x-two"), ["second"]);
    assert_eq!(requests[0].header_all("x-dup"), ["1", "2"]);
}

#[test]
fn default_headers_name_poll_and_advertise_every_decoder() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    poll().arg(server.url("/")).assert().code(0).stdout("{}").stderr("");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "GET");
    assert_eq!(request.header_all("user-agent"), [format!("poll/{}", env!("CARGO_PKG_VERSION"))]);
    let accept_encoding = request.header("accept-encoding").unwrap_or_default();
    let codings: Vec<&str> = accept_encoding.split(',').map(str::trim).collect();
    for coding in ["gzip", "deflate", "br"] {
        assert!(codings.contains(&coding), "{coding} missing from Accept-Encoding: {accept_encoding}");
    }
    assert_eq!(request.header("authorization"), None);
    assert!(request.body.is_empty());
}

#[test]
fn a_sets_the_user_agent() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    poll().args(["-A", "probe/9 (ci)", &server.url("/")]).assert().code(0).stdout("{}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header_all("user-agent"), ["probe/9 (ci)"]);
}

#[test]
fn data_makes_a_post_with_the_exact_body() {
    let server = Server::start(vec![Reply::json(200, r#"{"id":7}"#)]);
    poll().args(["-d", "name=a b&x=1", &server.url("/items")]).assert().code(0).stdout(r#"{"id":7}"#);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].body, b"name=a b&x=1");
    assert_eq!(requests[0].header("content-length"), Some("12"));
    // As curl -d.
    assert_eq!(requests[0].header("content-type"), Some("application/x-www-form-urlencoded"));
}

#[test]
fn data_content_type_can_be_overridden() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    poll().args(["-H", "Content-Type: text/csv", "-d", "a,b", &server.url("/")]).assert().code(0).stdout("{}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header_all("content-type"), ["text/csv"]);
    assert_eq!(requests[0].body, b"a,b");
}

#[test]
fn x_wins_over_the_post_a_body_implies() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    poll().args(["-X", "PATCH", "-d", "v=2", &server.url("/")]).assert().code(0).stdout("{}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "PATCH");
    assert_eq!(requests[0].body, b"v=2");
}

#[test]
fn data_from_a_file_is_sent_byte_for_byte() {
    // Unlike curl -d @file (which strips CR and LF), the file is sent as it is, like --data-binary.
    let contents = b"line one\r\nline two\n\x00\xff end\n";
    let file = scratch("data.bin", contents);
    let server = Server::start(vec![Reply::json(200, "{}")]);
    poll().args(["-d", &format!("@{}", file.display()), &server.url("/")]).assert().code(0).stdout("{}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].body, contents);
    let _ = std::fs::remove_file(file);
}

#[test]
fn data_from_stdin() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    poll().args(["-d", "@-", &server.url("/")]).write_stdin("from stdin\n").assert().code(0).stdout("{}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].body, b"from stdin\n");
}

#[test]
fn data_from_a_missing_file_is_a_usage_error() {
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(0);
    let missing = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("request-no-such-file.json");
    let output = poll().args(["-d", &format!("@{}", missing.display()), &server.url("/")]).assert().code(2).stdout("");
    let stderr = stderr_of(output.get_output());
    assert_one_error_line(&stderr);
    assert!(stderr.contains("--data"), "{stderr}");
    assert_eq!(server.connections(), 0);
}

#[test]
fn json_sets_both_headers_and_sends_the_exact_body() {
    let server = Server::start(vec![Reply::json(201, r#"{"id":1}"#)]);
    let body = r#"{"name": "build", "tags": ["a", "b"]}"#;
    poll().args(["--json", body, &server.url("/builds")]).assert().code(0).stdout(r#"{"id":1}"#).stderr("");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.header_all("content-type"), ["application/json"]);
    assert_eq!(request.header_all("accept"), ["application/json"]);
    assert_eq!(request.body_str(), body);
}

#[test]
fn json_from_stdin() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    poll().args(["--json", "@-", &server.url("/")]).write_stdin("[1, 2]\n").assert().code(0).stdout("{}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body, b"[1, 2]\n");
    assert_eq!(requests[0].header("content-type"), Some("application/json"));
}

#[test]
fn invalid_json_is_a_usage_error_and_nothing_is_sent() {
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(0);
    let output = poll().args(["--json", r#"{"a": 1"#, &server.url("/")]).assert().code(2).stdout("");
    let stderr = stderr_of(output.get_output());
    assert_one_error_line(&stderr);
    assert!(stderr.contains("--json"), "{stderr}");
    assert_eq!(server.connections(), 0);
}

#[test]
fn user_becomes_basic_auth() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    poll().args(["-u", "user:pass", &server.url("/")]).assert().code(0).stdout("{}").stderr("");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header_all("authorization"), [USER_PASS]);
}

#[test]
fn user_without_password_as_curl() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    poll().args(["-u", "user", &server.url("/")]).assert().code(0).stdout("{}");
    // base64("user:")
    assert_eq!(server.requests()[0].header_all("authorization"), ["Basic dXNlcjo="]);
}

#[test]
fn credentials_in_the_url_become_basic_auth_and_never_show() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    let port = server.addr().port();
    let url = format!("http://user:pass@127.0.0.1:{port}/secret-place");
    let output = poll().args(["-vv", &url]).assert().code(0).stdout("{}");
    let stderr = stderr_of(output.get_output());
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/secret-place");
    assert_eq!(requests[0].header_all("authorization"), [USER_PASS]);
    assert!(!stderr.contains("pass") && !stderr.contains("dXNlcjpwYXNz"), "{stderr}");

    // The error line names the URL: still without the password.
    let server = Server::start(vec![Reply::json(404, "{}")]);
    let url = format!("http://user:pass@127.0.0.1:{}/missing", server.addr().port());
    let output = poll().args(["-v", &url]).assert().code(3).stdout("");
    let stderr = stderr_of(output.get_output());
    assert!(stderr.contains("404"), "{stderr}");
    assert!(!stderr.contains("pass") && !stderr.contains("dXNlcjpwYXNz"), "{stderr}");
    assert_eq!(server.requests()[0].header_all("authorization"), [USER_PASS]);
}

#[test]
fn every_attempt_sends_the_same_headers_and_body() {
    let server = Server::start(vec![Reply::status(503), Reply::status(503), Reply::json(200, r#"{"done":true}"#)]);
    poll()
        .args(["-X", "PUT", "-d", "payload=1", "-H", "X-Trace: abc", "-u", "user:pass", "-A", "ua/1"])
        .args(["--backoff", "10ms", "--interval", "0", &server.url("/job?x=1")])
        .assert()
        .code(0)
        .stdout(r#"{"done":true}"#)
        .stderr("");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let first = &requests[0];
    assert_eq!(first.method, "PUT");
    assert_eq!(first.path, "/job?x=1");
    assert_eq!(first.body, b"payload=1");
    assert_eq!(first.header("x-trace"), Some("abc"));
    assert_eq!(first.header("authorization"), Some(USER_PASS));
    for later in &requests[1..] {
        assert_eq!(later.method, first.method);
        assert_eq!(later.path, first.path);
        assert_eq!(later.headers, first.headers);
        assert_eq!(later.body, first.body);
    }
}

// ---------------------------------------------------------------------------
// Usage errors: exit 2, one line on stderr, no connection
// ---------------------------------------------------------------------------

/// Runs `poll` with `args` (`{url}` is the server's URL) and checks a usage error:
/// exit 2, nothing on stdout, one line on stderr, no connection. Returns stderr.
fn usage_error(args: &[&str]) -> String {
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(0);
    let url = server.url("/");
    let args: Vec<String> = args.iter().map(|a| a.replace("{url}", &url)).collect();
    let output = poll().args(&args).assert().code(2).stdout("");
    let stderr = stderr_of(output.get_output());
    assert_one_error_line(&stderr);
    assert_eq!(server.connections(), 0, "{args:?}");
    stderr
}

#[test]
fn header_with_cr_lf_is_refused() {
    // (A NUL cannot be in an argument at all.)
    for header in ["X: a\r\nEvil: b", "X: a\nEvil: b", "X: a\rEvil: b"] {
        usage_error(&["-H", header, "{url}"]);
    }
}

#[test]
fn header_with_cr_lf_is_refused_with_a_clear_message() {
    for (header, problem) in
        [("X: a\r\nEvil: b", "carriage return"), ("X: a\nEvil: b", "line feed"), ("X: a\rEvil: b", "carriage return")]
    {
        let stderr = usage_error(&["-H", header, "{url}"]);
        assert!(stderr.contains("--header") && stderr.contains(problem), "{stderr:?}");
        assert!(!stderr.trim_end_matches('\n').contains(char::is_control), "{stderr:?}");
    }
}

#[test]
fn user_agent_and_user_with_cr_lf_are_refused() {
    let stderr = usage_error(&["-A", "ua\r\nEvil: b", "{url}"]);
    assert!(stderr.contains("--user-agent"), "{stderr}");
    let stderr = usage_error(&["-u", "user:pa\nss", "{url}"]);
    assert!(stderr.contains("--user"), "{stderr}");
}

#[test]
fn header_without_colon_is_refused() {
    let stderr = usage_error(&["-H", "NoColonHere", "{url}"]);
    assert!(stderr.contains("NoColonHere"), "{stderr}");
}

#[test]
fn bad_urls_are_refused() {
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(0);
    let port = server.addr().port();
    for url in [format!("127.0.0.1:{port}/"), format!("ftp://127.0.0.1:{port}/"), "http://".to_string()] {
        let output = poll().arg(&url).assert().code(2).stdout("");
        let stderr = stderr_of(output.get_output());
        assert_one_error_line(&stderr);
        assert!(stderr.contains("URL"), "{stderr}");
    }
    assert_eq!(server.connections(), 0);
}

#[test]
fn a_port_outside_1_to_65535_is_a_usage_error_and_nothing_is_sent() {
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(0);
    for port in ["0", "99999", "65536", ""] {
        let url = format!("http://127.0.0.1:{port}/");
        let output = poll().args(["--retries", "3", &url]).assert().code(2).stdout("");
        let stderr = stderr_of(output.get_output());
        assert_one_error_line(&stderr);
        assert!(stderr.contains(&format!("port `{port}` is not a number from 1 to 65535")), "{stderr}");
    }
    // The largest port is fine: it is refused by the network, not by poll (a service not up yet: the deadline).
    poll().args(["--retries", "0", "--timeout", "300ms", "http://127.0.0.1:65535/"]).assert().code(1);
    assert_eq!(server.connections(), 0);
}

#[test]
fn an_internationalised_host_is_sent_as_punycode() {
    // Through a proxy (the scripted server), so the name is never resolved: the
    // request line and Host carry the punycode form, as curl sends them.
    let proxy = Server::start(vec![Reply::json(200, r#"{"idn":true}"#)]);
    poll()
        .env("HTTP_PROXY", format!("http://127.0.0.1:{}", proxy.addr().port()))
        .args(["--retries", "0", "http://bücher.example/katalog?q=ä"])
        .assert()
        .code(0)
        .stdout(r#"{"idn":true}"#);
    let requests = proxy.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].path.starts_with("http://xn--bcher-kva.example/katalog?q="), "{}", requests[0].path);
    assert_eq!(requests[0].header("host"), Some("xn--bcher-kva.example"));
    // A name that IDNA cannot map is a usage error.
    let stderr = usage_error(&["http://a\u{200b}\u{fffd}b..example/", "{url}"]);
    assert!(stderr.contains("invalid URL"), "{stderr}");
}

#[test]
fn bad_max_body_is_refused() {
    let stderr = usage_error(&["--max-body", "lots", "{url}"]);
    assert!(stderr.contains("--max-body"), "{stderr}");
}

#[test]
fn bad_interval_is_refused() {
    let stderr = usage_error(&["--interval", "soon", "{url}"]);
    assert!(stderr.contains("--interval"), "{stderr}");
}

#[test]
fn output_into_a_missing_folder_is_refused() {
    let missing = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("request-no-such-folder").join("out.json");
    let stderr = usage_error(&["-o", &missing.display().to_string(), "{url}"]);
    assert!(stderr.contains("--output"), "{stderr}");
    assert!(!missing.exists());
}

#[test]
fn missing_cacert_is_refused() {
    let missing = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("request-no-such-ca.pem");
    let stderr = usage_error(&["--cacert", &missing.display().to_string(), "{url}"]);
    assert!(stderr.contains("--cacert"), "{stderr}");
}

#[test]
fn a_filter_that_does_not_compile_names_its_column() {
    let stderr = usage_error(&["--until", ".status == ", "{url}"]);
    assert!(stderr.contains("--until"), "{stderr}");
    assert!(stderr.contains("col 12"), "{stderr}");
    let stderr = usage_error(&["--fail-when", ".a | nosuchfn", "{url}"]);
    assert!(stderr.contains("--fail-when"), "{stderr}");
    assert!(stderr.contains("col 6"), "{stderr}");
}

// ---------------------------------------------------------------------------
// Redirects
// ---------------------------------------------------------------------------

#[test]
fn a_redirect_is_followed() {
    let server = Server::routes(vec![
        ("/old", vec![Reply::redirect(302, "/new").body("moved")]),
        ("/new", vec![Reply::json(200, r#"{"here":true}"#)]),
    ]);
    poll().arg(server.url("/old")).assert().code(0).stdout(r#"{"here":true}"#).stderr("");
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/old", "/new"]);
}

#[test]
fn a_redirect_loop_stops_after_max_redirs() {
    let server =
        Server::routes(vec![("/a", vec![Reply::redirect(302, "/b")]), ("/b", vec![Reply::redirect(302, "/a")])]);
    let output = poll().args(["--backoff", "10ms", &server.url("/a")]).assert().code(3).stdout("");
    let stderr = stderr_of(output.get_output());
    assert_one_error_line(&stderr);
    assert!(stderr.contains("redirects"), "{stderr}");
    // The default --max-redirs 10: the first request and ten hops, and no retry.
    assert_eq!(server.hits(), 11);

    let server =
        Server::routes(vec![("/a", vec![Reply::redirect(302, "/b")]), ("/b", vec![Reply::redirect(302, "/a")])]);
    poll().args(["--max-redirs", "3", &server.url("/a")]).assert().code(3).stdout("");
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/a", "/b", "/a", "/b"]);
}

#[test]
fn max_redirs_zero_returns_the_redirect_itself() {
    let server =
        Server::routes(vec![("/old", vec![Reply::redirect(302, "/new")]), ("/new", vec![Reply::json(200, "{}")])])
            .expect_route_hits("/new", 0);
    let output = poll().args(["--max-redirs", "0", &server.url("/old")]).assert().code(3).stdout("");
    let stderr = stderr_of(output.get_output());
    assert_one_error_line(&stderr);
    assert!(stderr.contains("302"), "{stderr}");
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/old"]);
}

#[test]
fn max_redirs_counts_hops() {
    let chain = || {
        Server::routes(vec![
            ("/1", vec![Reply::redirect(302, "/2")]),
            ("/2", vec![Reply::redirect(301, "/3")]),
            ("/3", vec![Reply::redirect(307, "/4")]),
            ("/4", vec![Reply::json(200, r#"{"hops":3}"#)]),
        ])
    };
    // Three hops with --max-redirs 2: the third is not followed.
    let server = chain().expect_route_hits("/4", 0);
    let output = poll().args(["--max-redirs", "2", &server.url("/1")]).assert().code(3).stdout("");
    assert!(stderr_of(output.get_output()).contains("redirects"));
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/1", "/2", "/3"]);

    // Three hops with --max-redirs 3: done.
    let server = chain();
    poll().args(["--max-redirs", "3", &server.url("/1")]).assert().code(0).stdout(r#"{"hops":3}"#);
    assert_eq!(server.hits(), 4);
}

/// Flags that put every kind of credential on the request, besides a harmless header.
fn credential_flags(authorization_from: &str) -> Vec<&'static str> {
    let mut flags =
        vec!["-H", "Cookie: session=abc", "-H", "Proxy-Authorization: Basic cHJveHk6cHc=", "-H", "X-Keep: yes"];
    match authorization_from {
        "-u" => flags.extend(["-u", "user:pass"]),
        _ => flags.extend(["-H", "Authorization: Bearer t0ken"]),
    }
    flags
}

#[test]
fn a_cross_origin_redirect_drops_credentials() {
    for (from, authorization) in [("-u", USER_PASS), ("-H", "Bearer t0ken")] {
        let other = Server::start(vec![Reply::json(200, r#"{"origin":"other"}"#)]);
        let first = Server::start(vec![Reply::redirect(302, &other.url("/landing"))]);
        poll().args(credential_flags(from)).arg(first.url("/start")).assert().code(0).stdout(r#"{"origin":"other"}"#);

        let sent = first.requests();
        assert_eq!(sent.len(), 1, "{from}");
        assert_eq!(
            credentials(&sent[0]),
            [
                ("authorization", authorization),
                ("proxy-authorization", "Basic cHJveHk6cHc="),
                ("cookie", "session=abc")
            ],
            "{from}"
        );
        let followed = other.requests();
        assert_eq!(followed.len(), 1, "{from}");
        assert_eq!(followed[0].path, "/landing");
        assert_eq!(credentials(&followed[0]), [], "{from}");
        assert_eq!(followed[0].header("x-keep"), Some("yes"), "{from}");
    }
}

#[test]
fn a_same_origin_redirect_keeps_credentials() {
    for (from, authorization) in [("-u", USER_PASS), ("-H", "Bearer t0ken")] {
        let server = Server::routes(vec![
            ("/start", vec![Reply::redirect(302, "/landing")]),
            ("/landing", vec![Reply::json(200, "{}")]),
        ]);
        poll().args(credential_flags(from)).arg(server.url("/start")).assert().code(0).stdout("{}");
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{from}");
        for request in &requests {
            assert_eq!(
                credentials(request),
                [
                    ("authorization", authorization),
                    ("proxy-authorization", "Basic cHJveHk6cHc="),
                    ("cookie", "session=abc")
                ],
                "{from} {}",
                request.path
            );
            assert_eq!(request.header("x-keep"), Some("yes"));
        }
    }
}

#[test]
fn see_other_after_post_becomes_get_without_body() {
    let server = Server::routes(vec![
        ("/create", vec![Reply::redirect(303, "/result")]),
        ("/result", vec![Reply::json(200, r#"{"created":true}"#)]),
    ]);
    poll().args(["--json", r#"{"a":1}"#, &server.url("/create")]).assert().code(0).stdout(r#"{"created":true}"#);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!((requests[0].method.as_str(), requests[0].body_str().as_str()), ("POST", r#"{"a":1}"#));
    assert_eq!(requests[1].method, "GET");
    assert_eq!(requests[1].path, "/result");
    assert!(requests[1].body.is_empty());
    assert_eq!(requests[1].header("content-type"), None);
    assert!(matches!(requests[1].header("content-length"), None | Some("0")), "{:?}", requests[1].headers);
    assert!(requests[1].header("transfer-encoding").is_none());
}

#[test]
fn temporary_redirect_keeps_post_and_body() {
    for code in [307, 308] {
        let server = Server::routes(vec![
            ("/create", vec![Reply::redirect(code, "/v2/create")]),
            ("/v2/create", vec![Reply::json(201, r#"{"id":3}"#)]),
        ]);
        poll().args(["-d", "k=v", &server.url("/create")]).assert().code(0).stdout(r#"{"id":3}"#);
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{code}");
        for request in &requests {
            assert_eq!(request.method, "POST", "{code}");
            assert_eq!(request.body, b"k=v", "{code}");
            assert_eq!(request.header("content-type"), Some("application/x-www-form-urlencoded"));
        }
        assert_eq!(requests[1].path, "/v2/create");
    }
}

#[test]
fn found_after_post_becomes_get_as_curl() {
    let server = Server::routes(vec![
        ("/form", vec![Reply::redirect(302, "/thanks")]),
        ("/thanks", vec![Reply::json(200, "{}")]),
    ]);
    poll().args(["-d", "k=v", &server.url("/form")]).assert().code(0).stdout("{}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].method, "GET");
    assert!(requests[1].body.is_empty());
}

// ---------------------------------------------------------------------------
// Body size and decoding
// ---------------------------------------------------------------------------

#[test]
fn a_body_over_max_body_is_permanent() {
    let server = Server::start(vec![Reply::text(200, &"x".repeat(2048))]);
    let output = poll().args(["--max-body", "1KiB", &server.url("/")]).assert().code(3).stdout("");
    let stderr = stderr_of(output.get_output());
    assert_one_error_line(&stderr);
    assert!(stderr.contains("--max-body"), "{stderr}");
    assert_eq!(server.hits(), 1);

    // Exactly at the limit is fine.
    let server = Server::start(vec![Reply::text(200, &"x".repeat(1024))]);
    poll().args(["--max-body", "1KiB", &server.url("/")]).assert().code(0).stdout("x".repeat(1024));
}

/// A status list decides on the status whatever the body says: a 404 under `--done-on 404` whose
/// body is over `--max-body` is done, with the first `--max-body` bytes on stdout and one warning,
/// plain or gzipped; `--fail-on` exits 4 so, and `--pending-on` says it once however many come. A
/// status no list names is still refused (issue 39, row 16).
#[test]
fn a_listed_statuss_body_over_max_body_is_cut_not_refused() {
    let page: String = (0..5000u32).map(|n| char::from(b'a' + (n % 26) as u8)).collect();
    let limit = 1024;
    let first = &page[..limit];
    let max_body = limit.to_string();
    let warned = |stderr: &str| stderr.lines().filter(|line| line.contains("cut to its first")).count();
    let plain = Reply::text(404, &page);
    let gzipped = Reply::status(404).header("Content-Encoding", "gzip").body(gzip(page.as_bytes()));
    for (list, code) in [("--done-on", 0), ("--fail-on", 4)] {
        for reply in [&plain, &gzipped] {
            let server = Server::start(vec![reply.clone()]);
            let output = poll().args([list, "404", "--max-body", &max_body, &server.url("/")]).output().unwrap();
            let stderr = stderr_of(&output);
            assert_eq!(output.status.code(), Some(code), "{list}: {stderr}");
            assert_eq!(String::from_utf8_lossy(&output.stdout), first, "{list}");
            assert_eq!(warned(&stderr), 1, "{list}: {stderr}");
            assert!(stderr.contains(&format!("--max-body ({limit} bytes)")), "{stderr}");
        }
    }
    let server = Server::start(vec![plain.clone(), plain.clone(), Reply::json(200, r#"{"ok":true}"#)]);
    let output =
        poll().args(["--pending-on", "404", "-i", "0", "--max-body", &max_body, &server.url("/")]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(warned(&stderr_of(&output)), 1, "said once: {}", stderr_of(&output));
    assert_eq!(server.hits(), 3);
    // No list names it: refused, as any body over --max-body is.
    let server = Server::start(vec![plain]);
    let output = poll().args(["--max-body", &max_body, &server.url("/")]).output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", stderr_of(&output));
    assert!(stderr_of(&output).contains("body larger than --max-body"), "{}", stderr_of(&output));
}

/// The body's room is set aside from its `Content-Length` before it is read, but
/// never a server's word for a terabyte: the two bytes that came are a truncated reply.
#[test]
fn a_content_length_of_a_terabyte_is_not_set_aside_and_the_short_body_is_truncated() {
    let lie = "HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\n{}";
    let server = Server::start(vec![Reply::raw(lie), Reply::raw(lie)]);
    let args = ["--max-body", "1024GiB", "--retries", "1", "--backoff", "1ms"];
    let output = poll().args(args).arg(server.url("/")).assert().code(5).stdout("");
    let stderr = stderr_of(output.get_output());
    assert_one_error_line(&stderr);
    assert!(stderr.contains("body truncated"), "{stderr}");
    assert_eq!(server.hits(), 2);
}

/// A server that takes the connection and never reads: an upload larger than
/// the socket buffers stalls, and each attempt still ends at --request-timeout.
#[test]
fn an_upload_the_server_never_reads_ends_at_the_request_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    listener.set_nonblocking(true).unwrap();
    // Takes connections and holds them, unread, until told to stop.
    let holder = std::thread::spawn(move || {
        let mut held = Vec::new();
        while stopped.recv_timeout(Duration::from_millis(10)) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
            held.extend(listener.accept().ok().map(|(stream, _)| stream));
        }
        held.len()
    });
    let body = "x".repeat(15 << 20);
    let started = Instant::now();
    let args = ["-X", "PUT", "-d", "@-", "--request-timeout", "1s", "--retries", "1", "--backoff", "1ms", &url];
    let output = poll().args(args).write_stdin(body).timeout(Duration::from_secs(30)).assert().code(5).stdout("");
    let took = started.elapsed();
    let _ = stop.send(());
    assert_eq!(holder.join().unwrap(), 2, "two attempts, one connection each");
    let stderr = stderr_of(output.get_output());
    assert_one_error_line(&stderr);
    assert!(stderr.contains("last: request timed out"), "{stderr}");
    assert!(took >= Duration::from_millis(1900) && took < Duration::from_secs(15), "{took:?}");
}

#[test]
fn an_endless_body_stops_quickly() {
    let server = Server::start(vec![Reply::endless(200)]);
    let started = Instant::now();
    let output = poll().arg(server.url("/")).assert().code(3).stdout("");
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    assert!(stderr_of(output.get_output()).contains("--max-body"));
    assert_eq!(server.hits(), 1);
}

#[test]
fn gzip_bodies_are_decoded() {
    let body = r#"{"status":"done","items":[1,2,3]}"#;
    let server = Server::start(vec![
        Reply::status(200)
            .header("Content-Type", "application/json")
            .header("Content-Encoding", "gzip")
            .body(gzip(body.as_bytes())),
    ]);
    poll().args(["--until", r#".status == "done""#, &server.url("/")]).assert().code(0).stdout(body).stderr("");
    assert_eq!(server.hits(), 1);
}

/// A reply with no body keeps the coding its GET would have had (nginx with `gzip on` answers a
/// HEAD so, and a 304 or 204 may): nothing to decode, and no malformed reply.
#[test]
fn a_reply_with_no_body_but_a_content_encoding_is_no_malformed_reply() {
    let coded = |reply: Reply| reply.header("Content-Encoding", "gzip").header("Vary", "Accept-Encoding");
    let server = Server::start(vec![coded(Reply::status(200).header("Content-Type", "application/json"))]);
    poll().args(["-I", &server.url("/file.json")]).assert().code(0).stdout("").stderr("");
    assert_eq!(server.requests()[0].method, "HEAD");
    let server = Server::start(vec![coded(Reply::status(404))]).expect_hits(1);
    poll().args(["-I", "--done-on", "404", &server.url("/missing.json")]).assert().code(0).stdout("");
    let server = Server::start(vec![coded(Reply::status(204))]).expect_hits(1);
    poll().args(["--until", ". == null", &server.url("/")]).assert().code(0).stdout("");
}

#[test]
fn deflate_bodies_are_decoded() {
    let body = r#"{"status":"done"}"#;
    let server = Server::start(vec![
        Reply::status(200)
            .header("Content-Type", "application/json")
            .header("Content-Encoding", "deflate")
            .body(zlib(body.as_bytes())),
    ]);
    poll().args(["--until", r#".status == "done""#, &server.url("/")]).assert().code(0).stdout(body).stderr("");
    assert_eq!(server.hits(), 1);
}

#[test]
fn brotli_bodies_are_decoded() {
    // Made once with Python's `brotli.compress`: no brotli encoder is among the dependencies.
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/done.json.br");
    let compressed = std::fs::read(fixture).unwrap();
    let body = format!(r#"{{"status": "done", "encoding": "br", "pad": "{}"}}"#, "x".repeat(200));
    let server = Server::start(vec![
        Reply::status(200).header("Content-Type", "application/json").header("Content-Encoding", "br").body(compressed),
    ]);
    poll().args(["--until", r#".encoding == "br""#, &server.url("/")]).assert().code(0).stdout(body).stderr("");
    // The decoded size counts for --max-body: 247 bytes decoded, 59 on the wire.
    poll().args(["--max-body", "100", &server.url("/")]).assert().code(3).stdout("");
}

#[test]
fn max_body_applies_to_the_decoded_size() {
    // 8 MiB of zeros is a few KiB compressed: well under the limit on the wire, far over it decoded.
    let zeros = vec![0u8; 8 << 20];
    for (coding, compressed) in [("gzip", gzip(&zeros)), ("deflate", zlib(&zeros))] {
        assert!(compressed.len() < 64 << 10, "{coding}: {}", compressed.len());
        let server = Server::start(vec![Reply::status(200).header("Content-Encoding", coding).body(compressed)]);
        let output = poll().args(["--max-body", "1MiB", &server.url("/")]).assert().code(3).stdout("");
        let stderr = stderr_of(output.get_output());
        assert_one_error_line(&stderr);
        assert!(stderr.contains("--max-body"), "{coding}: {stderr}");
        assert_eq!(server.hits(), 1, "{coding}");
    }
}

// ---------------------------------------------------------------------------
// TLS
// ---------------------------------------------------------------------------

#[test]
fn an_untrusted_certificate_is_permanent_with_a_hint() {
    let server = Server::start_tls(vec![Reply::json(200, "{}")]).expect_hits(0);
    let output = poll().args(["--backoff", "10ms", &server.url("/")]).assert().code(3).stdout("");
    let stderr = stderr_of(output.get_output());
    assert_one_error_line(&stderr);
    assert!(stderr.contains("--cacert"), "{stderr}");
    assert_eq!(server.hits(), 0);
    assert_eq!(server.connections(), 1);
}

#[test]
fn cacert_trusts_the_server() {
    let server = Server::start_tls(vec![Reply::json(200, r#"{"tls":true}"#)]);
    poll()
        .args(["--cacert", &support::server::cert_path().display().to_string(), &server.url("/")])
        .assert()
        .code(0)
        .stdout(r#"{"tls":true}"#)
        .stderr("");
    assert_eq!(server.hits(), 1);
}

/// An empty folder for `SSL_CERT_DIR`, so that no other store than the one a test names is read.
fn empty_cert_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("request-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("make scratch folder");
    dir
}

/// A company's CA, put where its machines look for roots (`SSL_CERT_FILE`), is trusted with no
/// `--cacert`, as curl trusts it; `-v` says where the roots came from.
#[test]
fn a_ca_in_ssl_cert_file_is_trusted_without_cacert() {
    let server = Server::start_tls(vec![Reply::json(200, r#"{"tls":true}"#)]);
    let dir = empty_cert_dir("store-dir");
    poll()
        .env("SSL_CERT_FILE", support::server::cert_path())
        .env("SSL_CERT_DIR", &dir)
        .arg(server.url("/"))
        .assert()
        .code(0)
        .stdout(r#"{"tls":true}"#)
        .stderr("");
    let server = Server::start_tls(vec![Reply::json(200, r#"{"tls":true}"#)]);
    let output = poll()
        .env("SSL_CERT_FILE", support::server::cert_path())
        .env("SSL_CERT_DIR", &dir)
        .args(["-v", &server.url("/")])
        .assert()
        .code(0);
    let stderr = stderr_of(output.get_output());
    let named = format!("trusted roots: 1 from SSL_CERT_FILE={}", support::server::cert_path().display());
    assert!(stderr.contains(&named), "{stderr}");
}

/// `SSL_CERT_FILE` naming an empty file, and no other store: nothing is trusted (the Mozilla
/// roots do not step in for a store the user named, as in curl), so a server whose CA is not
/// in the store (here the fixture's; on the internet, any public CA) fails at once with exit 3,
/// saying which roots did not trust it and how to trust it.
#[test]
fn an_empty_ssl_cert_file_trusts_nothing_and_fails_cleanly() {
    let server = Server::start_tls(vec![Reply::json(200, "{}")]).expect_hits(0);
    let empty = scratch("empty.pem", b"");
    let dir = empty_cert_dir("empty-dir");
    let output = poll()
        .env("SSL_CERT_FILE", &empty)
        .env("SSL_CERT_DIR", &dir)
        .args(["--backoff", "10ms", &server.url("/")])
        .assert()
        .code(3)
        .stdout("");
    let stderr = stderr_of(output.get_output());
    assert_one_error_line(&stderr);
    assert!(stderr.contains("UnknownIssuer"), "{stderr}");
    assert!(stderr.contains(&format!("trusted roots: 0 from SSL_CERT_FILE={}", empty.display())), "{stderr}");
    assert!(stderr.contains("--cacert"), "the hint: {stderr}");
    assert_eq!(server.connections(), 1, "a certificate error is not retried");
    // --cacert adds to the (empty) store.
    let server = Server::start_tls(vec![Reply::json(200, r#"{"tls":true}"#)]);
    poll()
        .env("SSL_CERT_FILE", &empty)
        .env("SSL_CERT_DIR", &dir)
        .args(["--cacert", &support::server::cert_path().display().to_string(), &server.url("/")])
        .assert()
        .code(0)
        .stdout(r#"{"tls":true}"#);
}

/// A server that `--cacert`'s roots vouch for is trusted without the system's store being read
/// (a one-shot run would pay for reading the distribution's 146 roots). One they do not vouch
/// for is checked against every root (src/net/tls.rs's unit tests).
#[test]
fn a_server_that_cacert_vouches_for_needs_no_system_store() {
    let server = Server::start_tls(vec![Reply::json(200, r#"{"tls":true}"#)]);
    let missing = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-such-bundle.pem");
    let cacert = support::server::cert_path().display().to_string();
    let output = poll()
        .env("SSL_CERT_FILE", &missing)
        .args(["-v", "--cacert", &cacert, &server.url("/")])
        .assert()
        .code(0)
        .stdout(r#"{"tls":true}"#);
    let stderr = stderr_of(output.get_output());
    assert!(!stderr.contains("trusted roots"), "{stderr}");
}

/// A plain `http://` run never reads the trusted roots (they load on the first TLS connection).
#[test]
fn a_plain_http_run_reads_no_roots() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    let missing = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-such-bundle.pem");
    let output = poll().env("SSL_CERT_FILE", &missing).args(["-v", &server.url("/")]).assert().code(0);
    let stderr = stderr_of(output.get_output());
    assert!(!stderr.contains("trusted roots"), "{stderr}");
}

#[test]
fn insecure_accepts_any_certificate() {
    let server = Server::start_tls(vec![Reply::json(200, r#"{"tls":true}"#)]);
    poll().args(["-k", &server.url("/")]).assert().code(0).stdout(r#"{"tls":true}"#).stderr("");
    assert_eq!(server.hits(), 1);
}

// ---------------------------------------------------------------------------
// Connection reuse
// ---------------------------------------------------------------------------

#[test]
fn polls_reuse_one_connection() {
    let replies = (1..=5).map(|n| Reply::json(200, &format!(r#"{{"n":{n}}}"#))).collect();
    let server = Server::start(replies);
    poll().args(["--until", ".n==5", "--interval", "0", &server.url("/")]).assert().code(0).stdout(r#"{"n":5}"#);
    assert_eq!(server.hits(), 5);
    assert_eq!(server.connections(), 1);
}

#[test]
fn redirects_reuse_the_connection() {
    let server = Server::routes(vec![
        ("/a", vec![Reply::redirect(302, "/b").body("see /b")]),
        ("/b", vec![Reply::json(200, "{}")]),
    ]);
    poll().arg(server.url("/a")).assert().code(0).stdout("{}");
    assert_eq!(server.hits(), 2);
    assert_eq!(server.connections(), 1);
}

// ---------------------------------------------------------------------------
// Proxies (only ever 127.0.0.1: `.invalid` names go to the proxy and are never resolved here)
// ---------------------------------------------------------------------------

/// An http:// URL goes to the proxy in absolute form, as curl sends it (here the scripted
/// server plays the proxy, so it records what the proxy got).
#[test]
fn http_proxy_is_used() {
    for var in ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"] {
        let proxy = Server::start(vec![Reply::json(200, r#"{"via":"proxy"}"#)]);
        poll()
            .env(var, format!("http://127.0.0.1:{}", proxy.addr().port()))
            .args(["--retries", "0", "--timeout", "10s", "http://example.invalid/x?y=1"])
            .assert()
            .code(0)
            .stdout(r#"{"via":"proxy"}"#)
            .stderr("");
        let requests = proxy.requests();
        assert_eq!(requests.len(), 1, "{var}");
        assert_eq!((requests[0].method.as_str(), requests[0].path.as_str()), ("GET", "http://example.invalid/x?y=1"));
        assert_eq!(requests[0].header("host"), Some("example.invalid"), "{var}");
        assert_eq!(proxy.connections(), 1, "{var}");
    }
}

#[test]
fn proxy_gets_the_absolute_url_as_curl() {
    let proxy = Server::start(vec![Reply::json(200, r#"{"via":"proxy"}"#)]);
    poll()
        .env("HTTP_PROXY", format!("http://127.0.0.1:{}", proxy.addr().port()))
        .args(["--retries", "0", "--timeout", "10s", "http://example.invalid/x?y=1"])
        .assert()
        .code(0)
        .stdout(r#"{"via":"proxy"}"#);
    let requests = proxy.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!((requests[0].method.as_str(), requests[0].path.as_str()), ("GET", "http://example.invalid/x?y=1"));
    assert_eq!(requests[0].header("host"), Some("example.invalid"));
}

#[test]
fn credentials_go_to_whom_they_belong_through_a_proxy() {
    let proxy = Server::start(vec![Reply::json(200, "{}")]);
    poll()
        .env("HTTP_PROXY", format!("http://proxyuser:proxypw@127.0.0.1:{}", proxy.addr().port()))
        .args(["-u", "user:pass", "--retries", "0", "--timeout", "10s", "http://example.invalid/"])
        .assert()
        .code(0)
        .stdout("{}");
    let requests = proxy.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "http://example.invalid/");
    // One request carries both: base64("proxyuser:proxypw") for the proxy, which drops it
    // (`tinyproxy_takes_its_own_credentials_only`), and the user's for the target.
    assert_eq!(
        credentials(&requests[0]),
        [("authorization", USER_PASS), ("proxy-authorization", "Basic cHJveHl1c2VyOnByb3h5cHc=")]
    );
}

/// Each poll on the kept-alive connection to the proxy starts with a head in absolute form,
/// and a body sent after `100 Continue` is never mistaken for one.
#[test]
fn polls_reuse_one_connection_to_the_proxy() {
    let replies = (1..=3).map(|n| Reply::json(200, &format!(r#"{{"n":{n}}}"#))).collect();
    let proxy = Server::start(replies);
    // The body looks like a request head: rewriting it would show.
    let body = "GET / HTTP/1.1\r\n\r\n";
    poll()
        .env("HTTP_PROXY", format!("http://u:p@127.0.0.1:{}", proxy.addr().port()))
        .args(["-d", body, "-H", "Expect: 100-continue", "--until", ".n==3", "--interval", "0"])
        .arg("http://example.invalid/job")
        .assert()
        .code(0)
        .stdout(r#"{"n":3}"#);
    let requests = proxy.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "http://example.invalid/job"));
        assert_eq!(request.body_str(), body);
        assert_eq!(request.header_all("proxy-authorization"), ["Basic dTpw"]);
    }
    assert_eq!(proxy.connections(), 1);
}

/// ureq writes a head into its 128 KiB output buffer; in absolute form it is longer still.
#[test]
fn a_head_longer_than_the_output_buffer_reaches_the_proxy_whole() {
    let proxy = Server::start(vec![Reply::json(200, "{}")]);
    let pad = "a".repeat(540);
    let headers: Vec<String> = (0..250).map(|n| format!("X-Pad-{n:03}: {pad}")).collect();
    let mut cmd = poll();
    for header in &headers {
        cmd.args(["-H", header]);
    }
    cmd.env("HTTP_PROXY", format!("http://u:p@127.0.0.1:{}", proxy.addr().port()))
        .arg("http://example.invalid/big")
        .assert()
        .code(0)
        .stdout("{}");
    let requests = proxy.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "http://example.invalid/big");
    assert_eq!(requests[0].header_all("proxy-authorization"), ["Basic dTpw"]);
    let padded = requests[0].headers.iter().filter(|(name, value)| name.starts_with("x-pad-") && *value == pad);
    assert_eq!(padded.count(), 250);
    assert_eq!(proxy.bad_requests(), 0);
}

/// An `https://` proxy URL: TLS to the proxy (trusted by --cacert), then absolute form inside.
#[test]
fn an_https_proxy_url_gets_tls_then_absolute_form() {
    let proxy = Server::start_tls(vec![Reply::json(200, r#"{"via":"tls proxy"}"#)]);
    poll()
        .env("HTTP_PROXY", format!("https://u:p@{}", proxy.addr()))
        .args(["--cacert", support::server::cert_path().to_str().unwrap(), "--retries", "0"])
        .arg("http://example.invalid/x")
        .assert()
        .code(0)
        .stdout(r#"{"via":"tls proxy"}"#);
    let requests = proxy.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "http://example.invalid/x");
    assert_eq!(requests[0].header_all("proxy-authorization"), ["Basic dTpw"]);
}

/// Each hop of a redirect is checked against NO_PROXY again.
#[test]
fn a_redirect_to_a_no_proxy_host_goes_direct() {
    // The target is `localhost`, which /etc/hosts resolves: no DNS query leaves the machine.
    let target = Server::start(vec![Reply::json(200, r#"{"direct":true}"#)]);
    let location = format!("http://localhost:{}/x", target.addr().port());
    let proxy = Server::start(vec![Reply::redirect(302, &location)]);
    poll()
        .env("HTTP_PROXY", format!("http://127.0.0.1:{}", proxy.addr().port()))
        .env("NO_PROXY", "localhost")
        .args(["--retries", "0", "--timeout", "10s", "http://example.invalid/start"])
        .assert()
        .code(0)
        .stdout(r#"{"direct":true}"#);
    let via_proxy = proxy.requests();
    assert_eq!(via_proxy.len(), 1);
    assert_eq!(via_proxy[0].path, "http://example.invalid/start");
    let direct = target.requests();
    assert_eq!(direct.len(), 1);
    assert_eq!(direct[0].path, "/x");
}

#[test]
fn no_proxy_exempts_a_host() {
    // The target is `localhost`, which /etc/hosts resolves: no DNS query leaves the machine.
    for (var, value) in [("NO_PROXY", "localhost"), ("no_proxy", "other.test, .localhost"), ("NO_PROXY", "*")] {
        let proxy = Server::start(vec![Reply::json(200, r#"{"via":"proxy"}"#)]).expect_hits(0);
        let target = Server::start(vec![Reply::json(200, r#"{"direct":true}"#)]);
        poll()
            .env("HTTP_PROXY", format!("http://127.0.0.1:{}", proxy.addr().port()))
            .env(var, value)
            .args(["--retries", "0", "--timeout", "10s", &format!("http://localhost:{}/x", target.addr().port())])
            .assert()
            .code(0)
            .stdout(r#"{"direct":true}"#);
        assert_eq!(proxy.connections(), 0, "{var}={value}");
        assert_eq!(target.hits(), 1, "{var}={value}");
    }
}

#[test]
fn https_proxy_is_not_used_for_http() {
    let proxy = Server::start(vec![Reply::json(200, "{}")]).expect_hits(0);
    let target = Server::start(vec![Reply::json(200, r#"{"direct":true}"#)]);
    poll()
        .env("HTTPS_PROXY", format!("http://127.0.0.1:{}", proxy.addr().port()))
        .arg(target.url("/"))
        .assert()
        .code(0)
        .stdout(r#"{"direct":true}"#);
    assert_eq!(proxy.connections(), 0);
    assert_eq!(target.hits(), 1);
}

// ---------------------------------------------------------------------------
// Through a real tinyproxy with `ConnectPort 443`, as squid's stock config
// (each test is skipped, loudly, where tinyproxy is not installed)
// ---------------------------------------------------------------------------

#[test]
fn tinyproxy_forwards_http_in_absolute_form() {
    let Some(proxy) = Tinyproxy::start(None) else { return };
    let replies = (1..=3).map(|n| Reply::json(200, &format!(r#"{{"n":{n}}}"#))).collect();
    let target = Server::start(replies);
    let port = target.addr().port();
    poll()
        .env("http_proxy", proxy.url(None))
        .args(["--retries", "0", "--timeout", "20s", &target.url("/x?y=1")])
        .assert()
        .code(0)
        .stdout(r#"{"n":1}"#)
        .stderr("");
    let requests = target.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!((requests[0].method.as_str(), requests[0].path.as_str()), ("GET", "/x?y=1"));
    assert_eq!(requests[0].header("host"), Some(format!("127.0.0.1:{port}").as_str()));
    assert_eq!(proxy.requests(), [format!("GET http://127.0.0.1:{port}/x?y=1 HTTP/1.1")], "{}", proxy.log());

    // Polls until the condition holds, each through the proxy.
    poll()
        .env("http_proxy", proxy.url(None))
        .args(["--until", ".n==3", "--interval", "0", "--timeout", "20s", &target.url("/again")])
        .assert()
        .code(0)
        .stdout(r#"{"n":3}"#);
    assert_eq!(target.hits(), 3);
    let again = format!("GET http://127.0.0.1:{port}/again HTTP/1.1");
    assert_eq!(proxy.requests()[1..], [again.clone(), again.clone()], "{}", proxy.log());
}

#[test]
fn tinyproxy_takes_its_own_credentials_only() {
    let Some(proxy) = Tinyproxy::start(Some(("user", "pass"))) else { return };
    let target = Server::start(vec![Reply::json(200, "{}")]);
    // base64("alice:secret"), the user's own, for the target.
    let alice = "Basic YWxpY2U6c2VjcmV0";
    let output = poll()
        .env("HTTP_PROXY", proxy.url(Some("user:pass")))
        .args(["-vv", "-u", "alice:secret", "--retries", "0", "--timeout", "20s", &target.url("/")])
        .assert()
        .code(0)
        .stdout("{}");
    let stderr = stderr_of(output.get_output());
    assert!(!stderr.contains("user:pass") && !stderr.contains(USER_PASS.trim_start_matches("Basic ")), "{stderr}");
    let requests = target.requests();
    assert_eq!(requests.len(), 1);
    // The proxy's credentials stop at the proxy; the user's go on to the target.
    assert_eq!(credentials(&requests[0]), [("authorization", alice)]);

    // Missing, or given with -u (which is for the target): 407, permanent, with the hint.
    // Wrong: tinyproxy 1.11 answers 401 (with `WWW-Authenticate`), as if it were the target.
    let cases = [
        (proxy.url(None), vec![], "HTTP 407: not retryable", "; check the credentials in the proxy URL (http_proxy)"),
        (proxy.url(None), vec!["-u", "user:pass"], "HTTP 407: not retryable", "in the proxy URL (http_proxy)"),
        (proxy.url(Some("user:wrong")), vec!["-u", "alice:secret"], "HTTP 401: not retryable", "; check the"),
    ];
    for (proxy_url, args, error, hint) in cases {
        let started = Instant::now();
        let output = poll()
            .env("HTTP_PROXY", &proxy_url)
            .args(args)
            .args(["--timeout", "20s", &target.url("/")])
            .assert()
            .code(3)
            .stdout("");
        assert!(started.elapsed() < Duration::from_secs(2), "no retries: {:?}", started.elapsed());
        let stderr = stderr_of(output.get_output());
        assert_one_error_line(&stderr);
        assert!(stderr.contains(error) && stderr.contains(hint), "{stderr}");
        assert!(!stderr.contains("wrong"), "the proxy's password never shows: {stderr}");
    }
    assert_eq!(target.hits(), 1, "only the first request reached the target");
    let logged = proxy.requests();
    assert_eq!(logged.len(), 4, "{}", proxy.log());
    assert!(logged.iter().all(|line| line.starts_with("GET http://127.0.0.1:")), "{logged:?}");

    // A CONNECT without credentials: 407 too, with the hint for https_proxy.
    let output = poll()
        .env("HTTPS_PROXY", proxy.url(None))
        .args(["--timeout", "20s", "https://127.0.0.1:443/"])
        .assert()
        .code(3)
        .stdout("");
    let stderr = stderr_of(output.get_output());
    assert_one_error_line(&stderr);
    let refused = "the proxy refused the connection (CONNECT answered with 407 Proxy Authentication Required)";
    assert!(stderr.contains(refused) && stderr.contains("in the proxy URL (https_proxy)"), "{stderr}");
    assert_eq!(proxy.requests()[4..], ["CONNECT 127.0.0.1:443 HTTP/1.1".to_string()], "{}", proxy.log());
}

#[test]
fn tinyproxy_refuses_connect_to_a_port_other_than_443() {
    let Some(proxy) = Tinyproxy::start(None) else { return };
    let target = Server::start_tls(vec![Reply::json(200, "{}")]).expect_hits(0);
    let port = target.addr().port();
    let started = Instant::now();
    let output = poll()
        .env("HTTPS_PROXY", proxy.url(None))
        .args(["--cacert", support::server::cert_path().to_str().unwrap(), "--timeout", "20s", &target.url("/")])
        .assert()
        .code(3)
        .stdout("");
    // Permanent at once: the default backoff would take seconds over 6 retries.
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    let stderr = stderr_of(output.get_output());
    assert_one_error_line(&stderr);
    let refused = "the proxy refused the connection (CONNECT answered with 403 Forbidden): not retryable";
    assert!(stderr.contains(refused), "{stderr}");
    assert_eq!(target.connections(), 0);
    assert_eq!(proxy.requests(), [format!("CONNECT 127.0.0.1:{port} HTTP/1.1")], "{}", proxy.log());
}

#[test]
fn a_response_head_over_32_kib_is_refused_and_retried() {
    let big = "x".repeat(33 << 10);
    let server = Server::start(vec![Reply::json(200, "{}").header("X-Big", &big), Reply::json(200, r#"{"ok":1}"#)]);
    let output = poll().args(["-v", "--backoff", "10ms", &server.url("/")]).assert().code(0).stdout(r#"{"ok":1}"#);
    let stderr = stderr_of(output.get_output());
    assert!(stderr.contains("attempt 1: ") && stderr.contains("-> retry in"), "{stderr}");
    assert_eq!(server.hits(), 2);
    // Just under the limit is fine.
    let fits = "x".repeat(30 << 10);
    let server = Server::start(vec![Reply::json(200, r#"{"ok":2}"#).header("X-Big", &fits)]);
    poll().arg(server.url("/")).assert().code(0).stdout(r#"{"ok":2}"#);
}

#[test]
fn a_long_request_head_still_fits_its_buffer() {
    // 100 KiB of headers: far more than the 4 KiB output buffer a short request gets.
    let value = "v".repeat(10 << 10);
    let server = Server::start(vec![Reply::json(200, "{}")]);
    let mut cmd = poll();
    for i in 0..10 {
        cmd.args(["-H", &format!("X-Long-{i}: {value}")]);
    }
    cmd.arg(server.url(&format!("/{}", "p".repeat(8 << 10)))).assert().code(0).stdout("{}");
    let request = &server.requests()[0];
    assert_eq!(request.header("x-long-9").map(str::len), Some(10 << 10));
}

#[test]
fn an_authorization_header_wins_over_user_as_in_curl() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    poll().args(["-u", "user:pass", "-H", "Authorization: Bearer t0ken", &server.url("/")]).assert().code(0);
    let request = &server.requests()[0];
    assert_eq!(request.header_all("authorization"), ["Bearer t0ken"]);
}

#[test]
fn a_socks_or_broken_proxy_is_a_usage_error_and_nothing_is_sent() {
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(0);
    for (var, value, why) in [
        ("ALL_PROXY", "socks5://user:secret@127.0.0.1:1080", "is a SOCKS proxy"),
        ("http_proxy", "http://[::1", "is not a proxy URL"),
    ] {
        let output = poll().env(var, value).arg(server.url("/")).assert().code(2).stdout("");
        let stderr = stderr_of(output.get_output());
        assert_one_error_line(&stderr);
        assert!(stderr.contains(why) && stderr.contains(var), "{stderr}");
        assert!(!stderr.contains("secret"), "{stderr}");
    }
    assert_eq!(server.connections(), 0);
}

/// `https://` to a port that speaks plain HTTP says so, rather than suggesting `-k`.
#[test]
fn https_to_a_plain_http_port_says_it_does_not_speak_tls() {
    // A plain-HTTP server: whatever comes, a 400 (the scripted server would count the TLS hello against the test).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let url = format!("https://{}/", listener.local_addr().expect("its address"));
    std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let _ = std::io::Read::read(&mut stream, &mut [0; 1024]);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    let output = poll().args(["-k", "--retries", "0", &url]).output().expect("run poll");
    assert_eq!(output.status.code(), Some(3));
    let text = stderr_of(&output);
    assert_one_error_line(&text);
    assert!(text.contains("the server does not speak TLS there"), "{text}");
    assert!(text.contains("is the URL http://, not https://?"), "{text}");
    assert!(!text.contains("-k to skip verification"), "{text}");
}

/// A proxy nobody answers at is named, with the variable it came from (its password
/// redacted), in `-v` and in the error line, not taken for a dead server.
#[test]
fn a_dead_proxy_is_named_in_the_error_line_and_in_minus_v() {
    let proxy = format!("http://user:secret@127.0.0.1:{}", support::redis::free_port());
    let output = poll()
        .args(["-v", "--timeout", "1s", "-i", "100ms", "http://server.test/"])
        .env("HTTP_PROXY", &proxy)
        .output()
        .expect("run poll");
    assert_eq!(output.status.code(), Some(1));
    let text = stderr_of(&output);
    let shown = proxy.replace("user:secret", "<redacted>");
    assert!(text.contains(&format!("proxy: {shown} (HTTP_PROXY)\n")), "{text}");
    assert!(text.contains(&format!("nothing answered at the proxy {shown} (HTTP_PROXY): is it up?")), "{text}");
    assert!(!text.contains("secret") && !text.contains("is the server up"), "{text}");
}
