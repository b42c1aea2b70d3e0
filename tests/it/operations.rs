//! End-to-end tests of `--submit` against the shapes of Azure Resource
//! Manager's long-running operations, as the Azure SDKs meet them: body
//! polling, a terminal first reply, PUT and DELETE re-sent, cookies, Location
//! moves and the final GET of the resource. Each runs against the scripted
//! loopback server.

use crate::support;

use std::net::{Ipv4Addr, TcpListener};
use std::process::Output;

use support::poll;
use support::server::{Reply, Server};

const CREATING: &str = r#"{"name":"st1","properties":{"provisioningState":"Creating"}}"#;
const ACCEPTED: &str = r#"{"name":"st1","properties":{"provisioningState":"Accepted"}}"#;
const SUCCEEDED: &str = r#"{"name":"st1","properties":{"provisioningState":"Succeeded"}}"#;
const FAILED: &str = r#"{"name":"st1","properties":{"provisioningState":"Failed"}}"#;
const OP_RUNNING: &str = r#"{"status":"InProgress"}"#;
const OP_SUCCEEDED: &str = r#"{"status":"Succeeded"}"#;

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// (method, path) of every request the server saw.
fn sent(server: &Server) -> Vec<(String, String)> {
    server.requests().into_iter().map(|r| (r.method, r.path)).collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect()
}

/// A loopback port nobody listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a free port");
    let port = listener.local_addr().expect("its address").port();
    drop(listener);
    port
}

/// The `Cookie` headers of request `n`, joined.
fn cookies(server: &Server, n: usize) -> String {
    server.requests()[n].header_all("cookie").join("; ")
}

// The submit's own reply.

#[test]
fn a_put_answered_201_creating_is_polled_at_its_own_url_until_its_provisioning_state_is_terminal() {
    let server = Server::routes(vec![(
        "/things/1",
        vec![Reply::json(201, CREATING), Reply::json(200, CREATING), Reply::json(200, SUCCEEDED)],
    )]);
    let url = server.url("/things/1");
    let out = poll().args(["--submit", "-X", "PUT", "--json", "{}", "-i", "10ms", &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
    assert_eq!(sent(&server), pairs(&[("PUT", "/things/1"), ("GET", "/things/1"), ("GET", "/things/1")]));
    // Body polls are bare GETs: the PUT's body stays with the PUT.
    assert_eq!(server.requests()[1].body, b"");

    let server = Server::routes(vec![("/things/1", vec![Reply::json(201, CREATING), Reply::json(200, FAILED)])]);
    let out = poll().args(["--submit", "-X", "PUT", "--json", "{}", "-i", "10ms", &server.url("/things/1")]).output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(out.stdout, FAILED.as_bytes());
    assert_eq!(server.hits(), 2);
    assert!(stderr(&out).contains("the operation failed (by --submit's built-in failure test)"), "{}", stderr(&out));
}

#[test]
fn a_put_answered_200_accepted_without_a_header_is_polled_too() {
    let server = Server::routes(vec![("/things/1", vec![Reply::json(200, ACCEPTED), Reply::json(200, SUCCEEDED)])]);
    let out = poll().args(["--submit", "-X", "PUT", "-d", "{}", "-i", "10ms", &server.url("/things/1")]).output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
    assert_eq!(sent(&server), pairs(&[("PUT", "/things/1"), ("GET", "/things/1")]));

    // A resource already there is the ending at once.
    let server = Server::routes(vec![("/things/1", vec![Reply::json(200, SUCCEEDED)])]).expect_hits(1);
    let out = poll().args(["--submit", "-X", "PUT", "-d", "{}", &server.url("/things/1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
}

#[test]
fn a_patch_answered_200_succeeded_is_done_whatever_its_azure_asyncoperation_says() {
    let nowhere = format!("http://127.0.0.1:{}/ops/1", closed_port());
    let server =
        Server::routes(vec![("/things/1", vec![Reply::json(200, SUCCEEDED).header("Azure-AsyncOperation", &nowhere)])])
            .expect_hits(1);
    let out =
        poll().args(["--submit", "-X", "PATCH", "-d", "{}", "-i", "10ms", &server.url("/things/1")]).output().unwrap();
    // Had it been polled, the closed port would have refused it: exit 5, not 0.
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
    assert_eq!(stderr(&out), "");
}

#[test]
fn a_delete_answered_204_without_a_header_is_the_ending() {
    let server = Server::routes(vec![("/things/1", vec![Reply::status(204)])]).expect_hits(1);
    let out = poll().args(["--submit", "-X", "DELETE", &server.url("/things/1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"");
    assert_eq!(sent(&server), pairs(&[("DELETE", "/things/1")]));
}

// Re-sent or not.

#[test]
fn a_put_submit_that_meets_a_500_is_re_sent_and_a_post_is_not_unless_keyed() {
    let server = Server::routes(vec![("/things/1", vec![Reply::status(500), Reply::json(201, SUCCEEDED)])]);
    let out = poll()
        .args(["--submit", "-X", "PUT", "--json", r#"{"sku":"S1"}"#, "--backoff", "10ms", &server.url("/things/1")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
    assert_eq!(sent(&server), pairs(&[("PUT", "/things/1"), ("PUT", "/things/1")]));
    assert!(server.requests().iter().all(|r| r.body == br#"{"sku":"S1"}"#), "the same PUT both times");

    // DELETE is idempotent too.
    let server = Server::routes(vec![("/things/1", vec![Reply::reset(), Reply::status(204)])]);
    let out =
        poll().args(["--submit", "-X", "DELETE", "--backoff", "10ms", &server.url("/things/1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 2);

    // A POST may have started a job: not re-sent.
    let server = Server::routes(vec![("/jobs", vec![Reply::status(500), Reply::json(201, SUCCEEDED)])]).expect_hits(1);
    let out = poll().args(["--submit", "-d", "{}", "--backoff", "10ms", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(out.stdout, b"");
    assert!(stderr(&out).contains("not re-sent"), "{}", stderr(&out));

    // With --idempotency-key it is, with the same key.
    let server = Server::routes(vec![
        ("/jobs", vec![Reply::status(500), Reply::status(202).header("Operation-Location", "/ops/1")]),
        ("/ops/1", vec![Reply::json(200, OP_SUCCEEDED)]),
    ]);
    let out = poll()
        .args(["--submit", "-d", "{}", "--idempotency-key", "k-1", "--backoff", "10ms", "-i", "10ms"])
        .arg(server.url("/jobs"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(sent(&server), pairs(&[("POST", "/jobs"), ("POST", "/jobs"), ("GET", "/ops/1")]));
    let keys: Vec<Option<String>> =
        server.requests().iter().map(|r| r.header("idempotency-key").map(str::to_string)).collect();
    assert_eq!(keys, [Some("k-1".to_string()), Some("k-1".to_string()), None]);
}

// Where the polls go.

#[test]
fn a_status_url_that_pins_the_client_with_a_cookie_gets_it_back() {
    let pinned = Reply::json(200, OP_SUCCEEDED).only_with("cookie", "ARRAffinity=b1", Reply::status(202));
    let server = Server::routes(vec![
        ("/jobs", vec![Reply::status(202).header("Operation-Location", "/ops/1")]),
        ("/ops/1", vec![Reply::status(202).header("Set-Cookie", "ARRAffinity=b1; Path=/; HttpOnly"), pinned]),
    ]);
    let out =
        poll().args(["--submit", "-d", "{}", "-i", "10ms", "--timeout", "5s", &server.url("/jobs")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, OP_SUCCEEDED.as_bytes());
    assert_eq!(server.hits(), 3);
    assert_eq!(cookies(&server, 0), "");
    assert_eq!(cookies(&server, 2), "ARRAffinity=b1");
}

#[test]
fn a_status_reply_202_with_a_new_location_moves_the_polling_there() {
    let server = Server::routes(vec![
        ("/jobs", vec![Reply::status(202).header("Location", "/ops/1")]),
        ("/ops/1", vec![Reply::status(202).header("Location", "/ops/2")]),
        ("/ops/2", vec![Reply::status(202), Reply::json(200, r#"{"result":42}"#)]),
    ]);
    let out = poll()
        .args(["--submit", "-d", "{}", "-i", "10ms", "--timeout", "5s", "--print", ".result", &server.url("/jobs")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"42\n");
    let want = [("POST", "/jobs"), ("GET", "/ops/1"), ("GET", "/ops/2"), ("GET", "/ops/2")];
    assert_eq!(sent(&server), pairs(&want));
}

// The final body.

#[test]
fn a_put_done_through_azure_asyncoperation_ends_with_a_get_of_the_resource() {
    let resource = r#"{"name":"dep1","properties":{"provisioningState":"Succeeded","outputs":{"url":"https://app"}}}"#;
    let server = Server::routes(vec![
        (
            "/deployments/dep1",
            vec![Reply::json(201, CREATING).header("Azure-AsyncOperation", "/ops/7"), Reply::json(200, resource)],
        ),
        ("/ops/7", vec![Reply::json(200, OP_RUNNING), Reply::json(200, OP_SUCCEEDED)]),
    ]);
    let out = poll()
        .args(["--submit", "-X", "PUT", "--json", "{}", "-i", "10ms", "-H", "Authorization: Bearer t0k"])
        .args(["--print", ".properties.outputs.url", &server.url("/deployments/dep1")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"https://app\n");
    let want = [("PUT", "/deployments/dep1"), ("GET", "/ops/7"), ("GET", "/ops/7"), ("GET", "/deployments/dep1")];
    assert_eq!(sent(&server), pairs(&want));
    let last = &server.requests()[3];
    assert_eq!(last.body, b"", "a bare GET");
    assert_eq!(last.header("authorization"), Some("Bearer t0k"), "the submit's own origin: credentials go along");

    // Without --print, the resource is what stdout gets; -v names it.
    let server = Server::routes(vec![
        ("/things/1", vec![Reply::status(202).header("Operation-Location", "/ops/1"), Reply::json(200, SUCCEEDED)]),
        ("/ops/1", vec![Reply::json(200, OP_SUCCEEDED)]),
    ]);
    let out =
        poll().args(["--submit", "-X", "PATCH", "-d", "{}", "-i", "10ms", "-v", &server.url("/things/1")]).output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
    assert_eq!(server.hits(), 3);
    assert!(stderr(&out).contains("the operation is done; the resource is at http://127.0.0.1:"), "{}", stderr(&out));
}

#[test]
fn the_final_get_is_retried_like_any_get() {
    let server = Server::routes(vec![
        (
            "/things/1",
            vec![
                Reply::status(202).header("Operation-Location", "/ops/1"),
                Reply::status(503),
                Reply::json(200, SUCCEEDED),
            ],
        ),
        ("/ops/1", vec![Reply::json(200, OP_SUCCEEDED)]),
    ]);
    let out = poll()
        .args(["--submit", "-X", "PUT", "-d", "{}", "-i", "10ms", "--backoff", "10ms", &server.url("/things/1")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, SUCCEEDED.as_bytes());
    let want = [("PUT", "/things/1"), ("GET", "/ops/1"), ("GET", "/things/1"), ("GET", "/things/1")];
    assert_eq!(sent(&server), pairs(&want));
}

#[test]
fn a_delete_done_through_azure_asyncoperation_prints_the_status_and_gets_nothing_more() {
    let status = r#"{"status":"Succeeded","endTime":"2026-12-02T10:00:00Z"}"#;
    let server = Server::routes(vec![
        ("/things/1", vec![Reply::status(202).header("Azure-AsyncOperation", "/ops/9")]),
        ("/ops/9", vec![Reply::json(200, OP_RUNNING), Reply::json(200, status)]),
    ])
    .expect_route_hits("/things/1", 1);
    let out = poll().args(["--submit", "-X", "DELETE", "-i", "10ms", &server.url("/things/1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, status.as_bytes());
    assert_eq!(sent(&server), pairs(&[("DELETE", "/things/1"), ("GET", "/ops/9"), ("GET", "/ops/9")]));
}

// Cookies, by RFC 6265.

#[test]
fn several_urls_keep_a_cookie_jar_each() {
    let server = Server::routes(vec![
        (
            "/a",
            vec![
                Reply::json(200, r#"{"s":"running"}"#).header("Set-Cookie", "a=1; Path=/"),
                Reply::json(200, r#"{"s":"running"}"#),
                Reply::json(200, r#"{"s":"done"}"#),
            ],
        ),
        (
            "/b",
            vec![
                Reply::json(200, r#"{"s":"running"}"#).header("Set-Cookie", "b=2; Path=/"),
                Reply::json(200, r#"{"s":"running"}"#),
                Reply::json(200, r#"{"s":"done"}"#),
            ],
        ),
    ]);
    let out = poll()
        .args(["--until", r#".s == "done""#, "-i", "50ms", "--timeout", "5s"])
        .args([server.url("/a"), server.url("/b")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = server.requests();
    for path in ["/a", "/b"] {
        let own = if path == "/a" { "a=1" } else { "b=2" };
        let theirs: Vec<String> =
            requests.iter().filter(|r| r.path == path).map(|r| r.header_all("cookie").join("; ")).collect();
        assert_eq!(theirs, ["", own, own], "{path}: its own cookie, never the other's");
    }
}

#[test]
fn a_cookie_with_max_age_0_is_removed_and_a_secure_one_never_goes_over_http() {
    let running = || Reply::json(200, r#"{"s":"running"}"#);
    let server = Server::start(vec![
        running().header("Set-Cookie", "s=1; Path=/").header("Set-Cookie", "tls=only; Path=/; Secure"),
        running().header("Set-Cookie", "s=1; Path=/; Max-Age=0"),
        running(),
        Reply::json(200, r#"{"s":"done"}"#),
    ]);
    let out = poll().args(["--until", r#".s == "done""#, "-i", "10ms", &server.url("/x")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.hits(), 4);
    assert_eq!(cookies(&server, 1), "s=1", "set by the first reply; the Secure one stays off http://");
    assert_eq!(cookies(&server, 2), "", "Max-Age=0 removed it");
    assert_eq!(cookies(&server, 3), "");
}

#[test]
fn cookie_values_never_show_in_verbose_output_and_a_users_cookie_goes_along() {
    let server = Server::start(vec![
        Reply::json(200, r#"{"s":"running"}"#).header("Set-Cookie", "session=s3cr3t-value; Path=/"),
        Reply::json(200, r#"{"s":"done"}"#),
    ]);
    let out = poll()
        .args(["--until", r#".s == "done""#, "-i", "10ms", "-vv", "-H", "Cookie: mine=hunter2", &server.url("/x")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(!err.contains("s3cr3t") && !err.contains("hunter2"), "{err}");
    assert!(err.contains("set-cookie: <redacted>"), "{err}");
    assert!(err.to_ascii_lowercase().contains("cookie: <redacted>"), "{err}");
    assert_eq!(cookies(&server, 0), "mine=hunter2");
    let second = cookies(&server, 1);
    assert!(second.contains("mine=hunter2") && second.contains("session=s3cr3t-value"), "{second}");
}
