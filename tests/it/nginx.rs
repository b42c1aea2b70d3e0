//! Against a stock nginx with `gzip on` (`support::nginx::Gzip`: static files, JSON gzipped at any
//! size, nginx's own HTML 404 page), started by each test on 127.0.0.1: `-I` ends (a HEAD's reply
//! names the coding its GET would have, with no body), a conditional poll goes on through nginx's
//! 304s, and a status list's ending reads nginx's HTML 404 (issue 39, rows 1 and 3). Each test
//! checks in nginx's access log that nginx answered as the test means. Skipped with one `SKIPPED`
//! line without nginx, or failed with `POLL_TEST_REQUIRE_TOOLS=1`.

use crate::support;

use std::time::Duration;

use support::nginx::Gzip;
use support::process::{Running, run, stderr, stdout};

const PENDING: &str = r#"{"status":"pending"}"#;
const DONE: &str = r#"{"status":"done","result":42}"#;

/// The one access log line of `uri`, which must be there.
fn only_request(nginx: &Gzip, uri: &str) -> String {
    let lines = nginx.requests(uri);
    assert_eq!(lines.len(), 1, "one request for {uri}: {lines:?}\n{}", nginx.log());
    lines[0].clone()
}

#[test]
fn head_ends_against_nginx_with_gzip_on() {
    let Some(nginx) = Gzip::start(&[("file.json", DONE)]) else { return };
    let out = run(&["-I", &nginx.url("/file.json")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "a HEAD has no body");
    // nginx named the coding its GET would have had, with no body: the case of row 1.
    assert_eq!(only_request(&nginx, "/file.json"), r#"HEAD /file.json 200 "-" "gzip""#);

    let out = run(&["-I", "--done-on", "404", &nginx.url("/missing.json")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(only_request(&nginx, "/missing.json"), r#"HEAD /missing.json 404 "-" "gzip""#);

    // The GET beside it: its gzipped body decoded.
    let out = run(&["--until", r#".status == "done""#, &nginx.url("/file.json")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), DONE);
    assert_eq!(nginx.requests("/file.json")[1], r#"GET /file.json 200 "-" "gzip""#);
}

/// poll sends the ETag of nginx's gzipped reply back; nginx answers 304 while the file stays as
/// it was, and the new file's 200 once it changed, which ends the wait.
#[test]
fn a_conditional_poll_goes_on_through_nginxs_304s() {
    let Some(nginx) = Gzip::start(&[("job.json", PENDING)]) else { return };
    let url = nginx.url("/job.json");
    let polling = Running::spawn(&["--until", r#".status == "done""#, "-i", "100ms", "-v", &url]);
    let two_304s = || nginx.requests("/job.json").iter().filter(|line| line.contains(" 304 ")).count() >= 2;
    assert!(support::eventually(Duration::from_secs(30), two_304s), "{:?}", nginx.requests("/job.json"));
    nginx.write("job.json", DONE);
    let out = polling.wait();
    assert_eq!(out.status.code(), Some(0), "{}\n{:?}", stderr(&out), nginx.requests("/job.json"));
    assert_eq!(stdout(&out), DONE);
    let lines = nginx.requests("/job.json");
    // The first reply was gzipped (so its ETag is weak), and each later request sent that ETag back.
    assert!(lines[0].starts_with(r#"GET /job.json 200 "-" "gzip""#), "{lines:?}");
    let etag = lines[1].split('"').nth(1).unwrap_or_default().replace("\\x22", "\"");
    assert!(etag.starts_with("W/\""), "a weak ETag went back: {lines:?}");
    let done = lines.last().map(String::as_str).unwrap_or_default();
    assert!(done.starts_with("GET /job.json 200 ") && done.ends_with(r#" "gzip""#), "{lines:?}");
    let not_modified = lines.iter().filter(|line| line.contains(" 304 ")).count();
    assert_eq!(stderr(&out).matches("304 not modified").count(), not_modified, "{}", stderr(&out));
}

/// A status list's ending on nginx's HTML 404 page (gzipped): `--print '$status'` prints it.
#[test]
fn print_reads_the_status_of_nginxs_html_404() {
    let Some(nginx) = Gzip::start(&[]) else { return };
    let url = nginx.url("/missing.json");
    let out = run(&["--done-on", "404", "--print", "$status", &url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "404\n");
    let out = run(&["--fail-on", "404", "--print", "$status", &url]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(stdout(&out), "404\n");
    // Both were nginx's HTML page, gzipped.
    let lines = nginx.requests("/missing.json");
    assert_eq!(lines, vec![r#"GET /missing.json 404 "-" "gzip""#; 2], "{}", nginx.log());
}
