//! End-to-end tests of `--paginate`, `--next` and `--max-pages` (issue 51, the contract's "Every
//! page of a collection"), against the scripted loopback server: GitHub's check runs over three
//! pages, Azure's `nextLink`, Kubernetes' `continue`, RFC 8288's forms of `Link`, a loop, the cap,
//! a page on another origin, a page that fails, the validators of each page, the credentials.

use crate::support;

use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::poll;
use support::server::{Recorded, Reply, Server};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The requests' targets (path and query), in the order they came.
fn targets(server: &Server) -> Vec<String> {
    server.requests().iter().map(|r| r.path.clone()).collect()
}

/// A JSON page with `Link` fields (none when `links` is empty) and an `ETag` when given.
fn page(body: &str, links: &[&str], etag: Option<&str>) -> Reply {
    let mut reply = Reply::json(200, body);
    for link in links {
        reply = reply.header("Link", link);
    }
    match etag {
        Some(etag) => reply.header("ETag", etag),
        None => reply,
    }
}

/// `full` to a request that does not carry `etag` in `If-None-Match`, else a bare `304` (with the
/// `ETag`, as GitHub sends it, and no `Link`).
fn conditional(full: Reply, etag: &str) -> Reply {
    Reply::status(304).header("ETag", etag).only_with("if-none-match", etag, full)
}

// ---------------------------------------------------------------------------------------------
// GitHub: a commit's 250 check runs, 100 a page

const RUNS: usize = 250;
const PER_PAGE: usize = 100;
const CHECK_RUNS: &str = "/repos/octo/app/commits/5f2b/check-runs";
const ALL_COMPLETED: &str = r#"map(.check_runs[]) | all(.status == "completed")"#;
const ANY_FAILED: &str = r#"map(.check_runs[]) | any(.conclusion == "failure")"#;
/// When run 201 (the first of page 3) completes, with a failure.
const RUN_201_ENDS: Duration = Duration::from_secs(5);

/// Page `n` (from 1) of the commit's check runs, GitHub's shape: `total_count` and the runs, each
/// completed and successful but run 201 while `running_201`.
fn check_runs_page(n: usize, running_201: bool) -> String {
    let first = (n - 1) * PER_PAGE + 1;
    let last = (n * PER_PAGE).min(RUNS);
    let runs: Vec<Value> = (first..=last)
        .map(|id| {
            let (status, conclusion) = match id {
                201 if running_201 => ("in_progress", Value::Null),
                201 => ("completed", Value::from("failure")),
                _ => ("completed", Value::from("success")),
            };
            serde_json::json!({"id": id, "name": format!("job {id}"), "status": status, "conclusion": conclusion})
        })
        .collect();
    serde_json::json!({"total_count": RUNS, "check_runs": runs}).to_string()
}

/// GitHub's `Link` of page `n` of 3: `prev`, `next`, `last` and `first` as they apply, absolute.
fn check_runs_link(origin: &str, n: usize) -> String {
    let url = |k: usize| format!("<{origin}/repositories/42/commits/5f2b/check-runs?per_page={PER_PAGE}&page={k}>");
    let mut links = Vec::new();
    if n > 1 {
        links.push(format!("{}; rel=\"prev\"", url(n - 1)));
    }
    if n < 3 {
        links.push(format!("{}; rel=\"next\"", url(n + 1)));
        links.push(format!("{}; rel=\"last\"", url(3)));
    }
    if n > 1 {
        links.push(format!("{}; rel=\"first\"", url(1)));
    }
    links.join(", ")
}

/// A GitHub-like server of the commit's check runs: three pages with `Link` and ETags (a 304 to
/// the ETag of what a page holds now); run 201, on page 3, in progress until `RUN_201_ENDS`
/// after the server starts, then completed with a failure.
fn github() -> Server {
    let port = support::daemon::free_port();
    let origin = format!("http://127.0.0.1:{port}");
    let route = |n: usize| match n {
        1 => format!("{CHECK_RUNS}?per_page={PER_PAGE}"),
        n => format!("/repositories/42/commits/5f2b/check-runs?per_page={PER_PAGE}&page={n}"),
    };
    let served = |n: usize, running: bool, etag: &str| {
        let full = page(&check_runs_page(n, running), &[&check_runs_link(&origin, n)], Some(etag));
        conditional(full.header("X-RateLimit-Remaining", "4999"), etag)
    };
    let page_3 = served(3, true, "W/\"p3-running\"").until(RUN_201_ENDS, served(3, false, "W/\"p3-failed\""));
    let routes = [
        (route(1), vec![served(1, false, "W/\"p1\"")]),
        (route(2), vec![served(2, false, "W/\"p2\"")]),
        (route(3), vec![page_3]),
    ];
    let routes: Vec<(&str, Vec<Reply>)> =
        routes.iter().map(|(path, replies)| (path.as_str(), replies.clone())).collect();
    Server::routes_on(port, routes)
}

#[test]
fn a_commits_check_runs_are_judged_on_every_page_and_fail_when_run_201_does() {
    let server = github();
    let url = server.url(&format!("{CHECK_RUNS}?per_page={PER_PAGE}"));
    let started = Instant::now();
    let out = poll()
        .args(["--paginate", "--until", ALL_COMPLETED, "--fail-when", ANY_FAILED, "-i", "500ms", "--timeout", "30s"])
        .args(["--log-format", "json", &url])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(took >= RUN_201_ENDS - Duration::from_millis(300), "ended at {took:?}, before run 201 did");
    assert!(took < RUN_201_ENDS + Duration::from_secs(4), "ended at {took:?}, long after run 201 failed");
    // stdout: the three pages' bodies as one array, each compact, in order.
    let pages: Vec<Value> = serde_json::from_slice(&out.stdout).expect("stdout is a JSON array");
    assert_eq!(pages.len(), 3);
    let ids: Vec<u64> = pages
        .iter()
        .flat_map(|p| p["check_runs"].as_array().cloned().unwrap_or_default())
        .map(|r| r["id"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(ids, (1..=RUNS as u64).collect::<Vec<_>>());
    assert_eq!(pages[2]["check_runs"][0]["conclusion"], "failure");
    assert_eq!(
        stdout(&out),
        format!("[{},{},{}]", check_runs_page(1, false), check_runs_page(2, false), check_runs_page(3, false))
    );
    // Never done by a page alone: every attempt read all three pages, and none said done.
    let objects: Vec<Value> = stderr(&out).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let attempts: Vec<&Value> = objects.iter().filter(|o| o["event"] == "attempt").collect();
    assert!(attempts.len() >= 5, "about 10 polls in 5 s at -i 500ms: {}", attempts.len());
    assert!(attempts.iter().all(|a| a["pages"] == 3 && a["action"] != "done"), "{attempts:?}");
    assert_eq!(attempts.last().map(|a| a["action"].clone()), Some(Value::from("stop")));
    let requests = server.requests();
    assert_eq!(requests.len(), 3 * attempts.len());
    // The quota: each page read whole (a 200) on the first walk; after that every request carries its
    // page's ETag, answered 304 but for the one to page 3 after run 201 ended: 3 + 1 200s in all.
    assert_eq!(requests.iter().filter(|r| r.header("if-none-match").is_none()).count(), 3);
    let on_page_3: Vec<&Recorded> = requests.iter().filter(|r| r.path.ends_with("&page=3")).skip(1).collect();
    assert!(on_page_3.iter().all(|r| r.header("if-none-match") == Some("W/\"p3-running\"")), "{on_page_3:?}");

    // Without --paginate the same wait judges page 1 alone, and calls the commit done at once:
    // the bug the flag is for.
    let out = poll()
        .args(["--until", &ALL_COMPLETED.replace("map(.check_runs[])", "[.check_runs[]]"), &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

// ---------------------------------------------------------------------------------------------
// What is read

#[test]
fn link_is_read_as_rfc_8288_writes_it() {
    // Page 1: two links in one field, quoted, the next a reference relative to the page, with a
    // rel of two types. Page 2: the links in two fields, unquoted, the next absolute, its host in
    // capitals. Page 3: a Link with no next.
    let port = support::daemon::free_port();
    let server = Server::routes_on(
        port,
        vec![
            (
                "/items",
                vec![page(r#"{"p":1}"#, &[r#"</items>; rel="first", <../items/2?x=a,b>; rel="last next""#], None)],
            ),
            (
                "/items/2",
                vec![page(
                    r#"{"p":2}"#,
                    &["</items>; rel=first", &format!("<HTTP://127.0.0.1:{port}/items/3#top>;rel=next")],
                    None,
                )],
            ),
            ("/items/3", vec![page(r#"{"p":3}"#, &[r#"</items>; rel="first""#], None)]),
        ],
    );
    let out = poll().args(["--paginate", &server.url("/items")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), r#"[{"p":1},{"p":2},{"p":3}]"#);
    assert_eq!(targets(&server), ["/items", "/items/2?x=a,b", "/items/3"]);
}

#[test]
fn a_link_that_does_not_parse_is_warned_of_once_where_the_walk_ends() {
    // An unclosed `<`: no next page can be read from it, and the walk may end too soon.
    let server =
        Server::routes(vec![("/p1", vec![page("1", &["</p2; rel=next"], None), page("1", &["</p2; rel=next"], None)])]);
    let out = poll().args(["--paginate", "--stable", "2", "-i", "10ms", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "[1]");
    assert_eq!(
        stderr(&out),
        format!(
            "poll: warning: a Link header of {} has a link poll cannot read (`</p2; rel=next`): the walk ends at \
             that page\n",
            server.url("/p1")
        )
    );
}

#[test]
fn the_filters_read_an_array_even_of_one_page_and_the_last_pages_status_and_headers() {
    // One page: still an array, for the filters, --print, stdout and -o alike.
    let server = Server::start(vec![Reply::json(200, "{\n  \"n\": 1\n}\n")]);
    let folder = support::process::Folder::new("pages-one");
    let file = folder.path("body.json");
    let out = poll()
        .args([
            "--paginate",
            "--until",
            "length == 1 and .[0].n == 1",
            "-o",
            &file.display().to_string(),
            &server.url("/one"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), r#"[{"n":1}]"#);

    // $status and $headers are the last page's; each page one value, compact, its numbers as sent.
    let server = Server::routes(vec![
        ("/a", vec![page(r#"{"v": 1.50, "s": "a b"}"#, &["</b>; rel=next"], None).header("X-Page", "a")]),
        ("/b", vec![Reply::json(203, "[ 1e3 ]").header("X-Page", "b")]),
    ]);
    let print = r#"$status, $headers["x-page"], length, (.[0] | tojson)"#;
    let out = poll().args(["--paginate", "--print", print, &server.url("/a")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "203\nb\n2\n{\"v\":1.5,\"s\":\"a b\"}\n", "jq writes its numbers its way");
    let out = poll().args(["--paginate", &server.url("/a")]).output().unwrap();
    assert_eq!(stdout(&out), r#"[{"v":1.50,"s":"a b"},[1e3]]"#);
}

#[test]
fn azure_next_link_is_followed_and_wins_over_link() {
    let port = support::daemon::free_port();
    let origin = format!("http://127.0.0.1:{port}");
    let vms = "/subscriptions/s1/providers/Microsoft.Compute/virtualMachines?api-version=2024-07-01";
    let second = format!(
        "{origin}/subscriptions/s1/providers/Microsoft.Compute/virtualMachines?api-version=2024-07-01&$skiptoken=b2Zmc2V0PTI"
    );
    let server = Server::routes_on(
        port,
        vec![
            (
                vms,
                vec![page(
                    &format!(
                        r#"{{"value":[{{"name":"vm1","properties":{{"provisioningState":"Succeeded"}}}}],"nextLink":"{second}"}}"#
                    ),
                    // A Link the server also sends: --next wins, so /elsewhere is never asked.
                    &["</elsewhere>; rel=next"],
                    None,
                )],
            ),
            (
                &second[origin.len()..],
                vec![page(r#"{"value":[{"name":"vm2","properties":{"provisioningState":"Updating"}}]}"#, &[], None)],
            ),
        ],
    );
    let until = r#"map(.value[]) | all(.properties.provisioningState == "Succeeded")"#;
    let out = poll()
        .args(["--next", ".nextLink", "--until", until, "--timeout", "1s", "-i", "300ms", "-v", &server.url(vms)])
        .output()
        .unwrap();
    // vm2 is still updating: never done, though page 1 alone would be.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let requests = targets(&server);
    assert!(requests.len() >= 4 && requests.len().is_multiple_of(2), "{requests:?}");
    assert!(requests.iter().all(|r| !r.starts_with("/elsewhere")));
    assert!(stderr(&out).contains("attempt 1 · page 2: 200 in "), "{}", stderr(&out));
}

#[test]
fn a_kubernetes_continue_token_is_put_in_the_next_url() {
    let pods = |names: &[&str], token: Option<&str>| {
        let items: Vec<Value> = names
            .iter()
            .map(|n| serde_json::json!({"metadata": {"name": n}, "status": {"phase": "Running"}}))
            .collect();
        let mut metadata = serde_json::json!({"resourceVersion": "5"});
        if let Some(token) = token {
            metadata["continue"] = Value::from(token);
        }
        serde_json::json!({"kind": "PodList", "metadata": metadata, "items": items}).to_string()
    };
    let server = Server::routes(vec![
        ("/api/v1/namespaces/ci/pods?limit=2", vec![Reply::json(200, &pods(&["a", "b"], Some("eyJ2IjoxfQ")))]),
        (
            "/api/v1/namespaces/ci/pods?limit=2&continue=eyJ2IjoxfQ",
            vec![Reply::json(200, &pods(&["c", "d"], Some("eyJ2IjoyfQ")))],
        ),
        ("/api/v1/namespaces/ci/pods?limit=2&continue=eyJ2IjoyfQ", vec![Reply::json(200, &pods(&["e"], None))]),
    ]);
    let next = r#".metadata.continue // empty | "?limit=2&continue=" + ."#;
    let out = poll()
        .args(["--next", next, "--until", r#"map(.items[]) | length == 5 and all(.status.phase == "Running")"#])
        .args([
            "--print",
            "[.[].items[].metadata.name] | join(\",\")",
            &server.url("/api/v1/namespaces/ci/pods?limit=2"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "a,b,c,d,e\n");
    assert_eq!(server.hits(), 3);
}

#[test]
fn next_ends_the_walk_on_null_empty_and_the_empty_string_and_refuses_other_values() {
    for end in ["null", "empty", r#""""#, ".missing"] {
        let server = Server::start(vec![Reply::json(200, r#"{"a":1}"#)]);
        let out = poll().args(["--next", end, &server.url("/x")]).output().unwrap();
        assert_eq!(
            (out.status.code(), stdout(&out)),
            (Some(0), r#"[{"a":1}]"#.to_string()),
            "--next {end}: {}",
            stderr(&out)
        );
        assert_eq!(server.hits(), 1);
    }
    // A value that is no URL, a runtime error, a page that is not JSON: exit 3, naming --next and the page.
    for (next, body, said) in [
        (".n", r#"{"n":7}"#, "--next on page 1: `.n` gave 7, not a URL"),
        (".n.m", r#"{"n":7}"#, "--next on page 1: jq error in `.n.m`: cannot index 7"),
        (".next", "<html>busy</html>", "--next on page 1: the page is not JSON"),
    ] {
        let server = Server::start(vec![Reply::json(200, body)]);
        let out = poll().args(["--next", next, &server.url("/x")]).output().unwrap();
        assert_eq!(out.status.code(), Some(3), "{next}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{next}: {}", stderr(&out));
        assert!(stderr(&out).contains(&server.url("/x")), "{}", stderr(&out));
        assert_eq!(out.stdout, b"");
    }
}

// ---------------------------------------------------------------------------------------------
// Where a walk may not go

#[test]
fn a_page_read_already_is_exit_3_naming_it() {
    let port = support::daemon::free_port();
    // Page 3 names page 1 again, its scheme and host in capitals, the default... port spelled out, a fragment.
    let server = Server::routes_on(
        port,
        vec![
            ("/p1", vec![page("1", &["</p2>; rel=next"], None)]),
            ("/p2", vec![page("2", &["</p3>; rel=next"], None)]),
            ("/p3", vec![page("3", &[&format!("<HTTP://127.0.0.1:{port}/p1#again>; rel=next")], None)]),
        ],
    );
    let out = poll().args(["--paginate", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let line = format!(
        "poll: error: the next page http://127.0.0.1:{port}/p1 was read already in this walk (the pages loop) [http://127.0.0.1:{port}/p3]\n"
    );
    assert_eq!(stderr(&out), line);
    assert_eq!(out.stdout, b"");
    assert_eq!(server.hits(), 3);
}

#[test]
fn a_next_url_that_is_not_http_is_exit_3_naming_it() {
    let server = Server::routes(vec![("/p1", vec![page("1", &["<ftp://files.example/p2>; rel=next"], None)])]);
    let out = poll().args(["--paginate", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("the next page `ftp://files.example/p2` is not an http(s) URL"), "{}", stderr(&out));
    assert_eq!(server.hits(), 1);
}

#[test]
fn more_pages_than_max_pages_is_exit_3_never_a_silent_cut() {
    let server = Server::routes(vec![
        ("/p1", vec![page("1", &["</p2>; rel=next"], None)]),
        ("/p2", vec![page("2", &["</p3>; rel=next"], None)]),
        ("/p3", vec![page("3", &[], None)]),
    ])
    .expect_route_hits("/p3", 0);
    let out = poll().args(["--paginate", "--max-pages", "2", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("more than 2 pages: raise --max-pages"), "{}", stderr(&out));
    assert_eq!(out.stdout, b"");

    // The default is 100: the 100th page that names a 101st ends the run, and no 101st is asked for.
    let replies: Vec<Reply> =
        (1..=101).map(|n| page(&n.to_string(), &[&format!("</items?page={}>; rel=next", n + 1)], None)).collect();
    let server = Server::start(replies).expect_hits(100);
    let out = poll().args(["--paginate", &server.url("/items?page=1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("poll: error: more than 100 pages: raise --max-pages (the next one is "),
        "{}",
        stderr(&out)
    );
}

// ---------------------------------------------------------------------------------------------
// Usage errors

#[test]
fn paginate_with_watch_submit_head_or_a_port_is_a_usage_error() {
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(0);
    let url = server.url("/x");
    for (args, said) in [
        (vec!["--paginate", "--watch", &url], "'--paginate' cannot be used with '--watch'"),
        (vec!["--next", ".n", "--watch", &url], "'--next <JQ>' cannot be used with '--watch'"),
        (vec!["--paginate", "--submit", &url], "'--paginate' cannot be used with '--submit'"),
        (vec!["--paginate", "-I", &url], "'--paginate' cannot be used with '--head'"),
        (vec!["--paginate", "tcp://127.0.0.1:5432"], "--paginate: a tcp:// or unix:// target has no pages to read"),
        (vec!["--next", ".n", "unix:///run/db.sock"], "--next: a tcp:// or unix:// target has no pages to read"),
        (vec!["--max-pages", "3", &url], "--max-pages: only means something with --paginate or --next"),
        (vec!["--paginate", "--max-pages", "0", &url], "--max-pages: must be 1 or more"),
        (vec!["--next", ".[", &url], "--next: `.[` does not compile"),
        (vec!["--location-trusted", &url], "--location-trusted: only means something with --submit or --paginate"),
    ] {
        let out = poll().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
}

// ---------------------------------------------------------------------------------------------
// A walk is one attempt

/// Three pages, each its own route, each with an ETag and a `Link` to the next (none on page 3).
fn three_pages(changes: [&[(&str, &str)]; 3]) -> Server {
    let routes: Vec<(String, Vec<Reply>)> = (1..=3)
        .map(|n| {
            let link = (n < 3).then(|| format!("</p{}>; rel=next", n + 1));
            let replies = changes[n - 1]
                .iter()
                .map(|(body, etag)| {
                    conditional(page(body, &link.iter().map(String::as_str).collect::<Vec<_>>(), Some(etag)), etag)
                })
                .collect();
            (format!("/p{n}"), replies)
        })
        .collect();
    Server::routes(routes.iter().map(|(path, replies)| (path.as_str(), replies.clone())).collect())
}

#[test]
fn pages_that_change_one_at_a_time_are_read_again_alone() {
    // Each route plays its replies in order: page 2 changes on the third walk, page 3 on the fourth,
    // page 1 never. A 304 carries no Link: the one kept for its page leads on.
    let pending = |n: u32| format!(r#"{{"page":{n},"state":"pending"}}"#);
    let done = |n: u32| format!(r#"{{"page":{n},"state":"done"}}"#);
    let (p1, p2p, p2d, p3p, p3d) = (done(1), pending(2), done(2), pending(3), done(3));
    let server = three_pages([
        &[(&p1, "\"1a\"")],
        &[(&p2p, "\"2a\""), (&p2p, "\"2a\""), (&p2d, "\"2b\"")],
        &[(&p3p, "\"3a\""), (&p3p, "\"3a\""), (&p3p, "\"3a\""), (&p3d, "\"3b\"")],
    ]);
    let until = r#"all(.state == "done")"#;
    let out = poll().args(["--paginate", "--until", until, "-i", "0", "-v", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("[{p1},{p2d},{p3d}]"));
    let err = stderr(&out);
    // Every walk reads the three pages; after the first, each carries its own page's ETag.
    let requests = server.requests();
    assert_eq!(requests.len(), 12, "{err}");
    let sent: Vec<(String, Option<&str>)> =
        requests.iter().map(|r| (r.path.clone(), r.header("if-none-match"))).collect();
    let expected = [
        ("/p1", None),
        ("/p2", None),
        ("/p3", None),
        ("/p1", Some("\"1a\"")),
        ("/p2", Some("\"2a\"")),
        ("/p3", Some("\"3a\"")),
        ("/p1", Some("\"1a\"")),
        ("/p2", Some("\"2a\"")),
        ("/p3", Some("\"3a\"")),
        ("/p1", Some("\"1a\"")),
        ("/p2", Some("\"2b\"")),
        ("/p3", Some("\"3a\"")),
    ];
    let expected: Vec<(String, Option<&str>)> = expected.iter().map(|(p, e)| (p.to_string(), *e)).collect();
    assert_eq!(sent, expected);
    // -v: a line per page; a walk whose pages are all unchanged is a 304 as a whole.
    for line in [
        "attempt 1 · page 1: 200 in ",
        "attempt 1: 200 pending (3 pages) in ",
        "attempt 2 · page 2: 304 not modified in ",
        "attempt 2: 304 not modified (3 pages) in ",
        "attempt 3 · page 2: 200 in ",
        "attempt 3 · page 3: 304 not modified in ",
        "attempt 3: 200 pending (3 pages) in ",
        "attempt 4 · page 3: 200 in ",
        "attempt 4: 200 done (3 pages) in ",
    ] {
        assert!(err.contains(line), "no `{line}` in:\n{err}");
    }
    assert!(err.contains("attempt 2 · page 3: 304 not modified in "), "{err}");
    assert!(err.contains(&server.url("/p3")), "-v names each page's URL: {err}");
}

#[test]
fn a_page_that_fails_fails_the_attempt_and_the_next_starts_from_page_1() {
    // Page 2 answers 503 with Retry-After: 1 once: the attempt is retried after it, from page 1.
    let server = Server::routes(vec![
        ("/p1", vec![page("1", &["</p2>; rel=next"], None)]),
        ("/p2", vec![Reply::status(503).header("Retry-After", "1"), page("2", &["</p3>; rel=next"], None)]),
        ("/p3", vec![page("3", &[], None)]),
    ]);
    let out = poll().args(["--paginate", "-v", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "[1,2,3]");
    assert_eq!(targets(&server), ["/p1", "/p2", "/p1", "/p2", "/p3"]);
    let requests = server.requests();
    let waited = requests[2].at.duration_since(requests[1].at);
    assert!(waited >= Duration::from_millis(950), "Retry-After: 1 honoured, waited {waited:?}");
    let err = stderr(&out);
    assert!(err.contains("attempt 1 · page 2: 503 in "), "{err}");
    assert!(err.contains("attempt 1: 503 (2 pages) in "), "{err}");
    assert!(err.contains("-> retry in 1.0s (Retry-After)"), "{err}");

    // Only a whole walk resets the count of failures: page 1's 200s do not. --retries 1: the second
    // failure in a row gives up, naming page 2, though page 1 answered in between.
    let server =
        Server::routes(vec![("/p1", vec![page("1", &["</p2>; rel=next"], None)]), ("/p2", vec![Reply::status(502)])]);
    let out = poll().args(["--paginate", "--retries", "1", "--backoff", "10ms", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(targets(&server), ["/p1", "/p2", "/p1", "/p2"]);
    assert!(stderr(&out).contains(&format!("[{}]", server.url("/p2"))), "the error names page 2: {}", stderr(&out));
    assert_eq!(out.stdout, b"");
}

#[test]
fn a_page_that_says_the_quota_is_spent_holds_the_next_until_the_reset() {
    // GitHub's headers: page 2 spends the last request of the window, which resets in 2 s. Page 3
    // sent at once would only earn a 429 and a walk from page 1 again, in the next window too.
    let quota = |reply: Reply, left: &str| reply.header("X-RateLimit-Remaining", left).header("X-RateLimit-Reset", "2");
    let routes = || {
        Server::routes(vec![
            ("/p1", vec![quota(page("1", &["</p2>; rel=next"], None), "1")]),
            ("/p2", vec![quota(page("2", &["</p3>; rel=next"], None), "0")]),
            ("/p3", vec![quota(page("3", &[], None), "4999")]),
        ])
    };
    let server = routes();
    let out = poll().args(["--paginate", "-v", "--timeout", "30s", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "[1,2,3]");
    assert_eq!(targets(&server), ["/p1", "/p2", "/p3"]);
    let requests = server.requests();
    let waited = requests[2].at.duration_since(requests[1].at);
    assert!(waited >= Duration::from_millis(1900), "page 3 waited for the reset: {waited:?}");
    assert!(stderr(&out).contains("attempt 1: waits 2.0s for rate-limit reset\n"), "{}", stderr(&out));
    // A reset past the deadline ends the run at once, and page 3 is never sent.
    let server = routes().expect_route_hits("/p3", 0);
    let started = Instant::now();
    let out = poll().args(["--paginate", "--timeout", "1s", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    assert_eq!(targets(&server), ["/p1", "/p2"]);
    assert!(stderr(&out).contains("(rate-limit reset) but only "), "{}", stderr(&out));
}

#[test]
fn a_page_that_is_not_json_fails_a_walk_whose_filter_reads_it() {
    // As one reply: a 2xx that is not JSON while a filter is given is a transient failure, retried
    // from page 1; without a filter the page is a string in the array, an empty one null.
    let routes = || {
        Server::routes(vec![
            ("/p1", vec![page("1", &["</p2>; rel=next"], None)]),
            (
                "/p2",
                vec![
                    Reply::text(200, "<html>busy</html>").header("Link", "</p3>; rel=next"),
                    page("2", &["</p3>; rel=next"], None),
                ],
            ),
            ("/p3", vec![Reply::status(204)]),
        ])
    };
    let server = routes();
    let out =
        poll().args(["--paginate", "-v", "--backoff", "10ms", "--until", "length == 3", &server.url("/p1")]).output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "[1,2,null]");
    assert_eq!(targets(&server), ["/p1", "/p2", "/p1", "/p2", "/p3"]);
    assert!(stderr(&out).contains("attempt 1: 200 not JSON (2 pages) in "), "{}", stderr(&out));
    let server = routes().expect_route_hits("/p2", 1);
    let out = poll().args(["--paginate", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), r#"[1,"<html>busy</html>",null]"#);
}

#[test]
fn a_page_that_is_no_2xx_is_judged_by_the_status_lists_with_its_own_body() {
    // --fail-on 404: page 2's 404 ends the run with exit 4, and its body is stdout.
    let gone = r#"{"message":"Not Found"}"#;
    let server = Server::routes(vec![
        ("/p1", vec![page("1", &["</p2>; rel=next"], None)]),
        ("/p2", vec![Reply::json(404, gone)]),
    ]);
    let folder = support::process::Folder::new("poll-pages-junit");
    let (junit, summary) = (folder.file("junit.xml"), folder.file("summary.md"));
    let out = poll()
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args(["--ci", "github", "--report-junit", &junit, "--paginate", "--fail-on", "404", &server.url("/p1")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(stdout(&out), gone);
    let named = format!("HTTP 404 is in --fail-on [{}]", server.url("/p2"));
    assert!(stderr(&out).contains(&named), "{}", stderr(&out));
    // The reports, which name the first page's URL as the test, name the page that ended the walk too.
    let report = std::fs::read_to_string(&junit).unwrap();
    assert!(report.contains(&format!("message=\"{named}\"")), "{report}");
    let table = std::fs::read_to_string(&summary).unwrap();
    assert!(
        table.contains("| failure condition met: HTTP 404 is in --fail-on \\[http") && table.contains("/p2\\] |"),
        "{table}"
    );

    // --done-on 410 alike, with exit 0; --pending-on 404 polls the whole collection again.
    let server = Server::routes(vec![
        ("/p1", vec![page("1", &["</p2>; rel=next"], None)]),
        ("/p2", vec![Reply::json(404, gone), Reply::json(410, r#"{"gone":true}"#)]),
    ]);
    let out = poll()
        .args(["--paginate", "--pending-on", "404", "--done-on", "410", "-i", "0", &server.url("/p1")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), r#"{"gone":true}"#);
    assert_eq!(targets(&server), ["/p1", "/p2", "/p1", "/p2"]);

    // Without a list a 404 is permanent: exit 3, naming page 2.
    let server = Server::routes(vec![
        ("/p1", vec![page("1", &["</p2>; rel=next"], None)]),
        ("/p2", vec![Reply::json(404, gone)]),
    ]);
    let out = poll().args(["--paginate", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains(&server.url("/p2")), "{}", stderr(&out));
}

#[test]
fn a_post_walk_whose_later_page_fails_is_not_sent_again() {
    // Page 1's POST was answered, so it was processed: a retry walks from it and sends it twice,
    // whatever page 2's failure (a 429 turned page 2 away, not the POST).
    let server = Server::routes(vec![
        ("/p1", vec![page("1", &["</p2>; rel=next"], None)]),
        ("/p2", vec![Reply::status(429).header("Retry-After", "0"), page("2", &[], None)]),
    ])
    .expect_route_hits("/p2", 1);
    let out = poll().args(["--paginate", "-d", "x=1", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(targets(&server), ["/p1", "/p2"]);
    assert!(
        stderr(&out).contains("HTTP 429: the request may have been processed, so it is not re-sent"),
        "{}",
        stderr(&out)
    );
    // --retry-non-idempotent sends it again, as the user asked.
    let server = Server::routes(vec![
        ("/p1", vec![page("1", &["</p2>; rel=next"], None), page("1", &["</p2>; rel=next"], None)]),
        ("/p2", vec![Reply::status(429).header("Retry-After", "0"), page("2", &[], None)]),
    ]);
    let out = poll().args(["--paginate", "-d", "x=1", "--retry-non-idempotent", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(targets(&server), ["/p1", "/p2", "/p1", "/p2"]);
}

#[test]
fn pages_after_the_first_are_gets_without_a_body() {
    // A search API that takes a POST: its later pages are GETs, with none of the body's headers
    // nor the idempotency key, as gh api --paginate sends them.
    let server = Server::routes(vec![
        ("/search", vec![page(r#"{"hits":[1]}"#, &["</search?cursor=2>; rel=next"], None)]),
        ("/search?cursor=2", vec![page(r#"{"hits":[2]}"#, &[], None)]),
    ]);
    let out = poll()
        .args(["--paginate", "--json", r#"{"q":"flaky"}"#, "--idempotency-key", "k-51", "-H", "X-Trace: t"])
        .arg(server.url("/search"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), r#"[{"hits":[1]},{"hits":[2]}]"#);
    let requests = server.requests();
    assert_eq!((requests[0].method.as_str(), requests[0].body_str().as_str()), ("POST", r#"{"q":"flaky"}"#));
    assert_eq!(requests[0].header("idempotency-key"), Some("k-51"));
    assert_eq!((requests[1].method.as_str(), requests[1].body.len()), ("GET", 0));
    assert_eq!(requests[1].header("content-type"), None);
    assert_eq!(requests[1].header("idempotency-key"), None);
    assert_eq!(requests[1].header("x-trace"), Some("t"), "the user's other headers go along");
    assert_eq!(requests[1].header("accept"), Some("application/json"));
}

#[test]
fn several_urls_each_walk_their_own_pages() {
    let server = Server::routes(vec![
        ("/a1", vec![page(r#""a1""#, &["</a2>; rel=next"], None)]),
        ("/a2", vec![page(r#""a2""#, &[], None)]),
        ("/b1", vec![page(r#""b1""#, &["</b2>; rel=next"], None)]),
        ("/b2", vec![page(r#""b2""#, &["</b3>; rel=next"], None)]),
        ("/b3", vec![page(r#""b3""#, &[], None)]),
    ]);
    let out = poll().args(["--paginate", &server.url("/a1"), &server.url("/b1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    assert_eq!(lines[0]["body"], serde_json::json!(["a1", "a2"]));
    assert_eq!(lines[1]["body"], serde_json::json!(["b1", "b2", "b3"]));
}

#[test]
fn the_users_own_validator_goes_with_the_first_page_only() {
    // The user's If-None-Match is about page 1: page 2 gets ours, from its own last 200.
    let server = Server::routes(vec![
        ("/p1", vec![page("1", &["</p2>; rel=next"], Some("\"1\""))]),
        ("/p2", vec![page("2", &[], Some("\"2\"")), Reply::status(304)]),
    ]);
    let out = poll()
        .args(["--paginate", "-H", "If-None-Match: \"mine\"", "--stable", "2", "-i", "0", &server.url("/p1")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = server.requests();
    let sent: Vec<(&str, Option<&str>)> =
        requests.iter().map(|r| (r.path.as_str(), r.header("if-none-match"))).collect();
    assert_eq!(sent, [("/p1", Some("\"mine\"")), ("/p2", None), ("/p1", Some("\"mine\"")), ("/p2", Some("\"2\""))]);
    assert_eq!(stdout(&out), "[1,2]");
}

// ---------------------------------------------------------------------------------------------
// Credentials, shared state and pacing

#[test]
fn credentials_go_with_the_pages_on_the_first_pages_origin_only_unless_trusted() {
    let (port_a, port_b) = (support::daemon::free_port(), support::daemon::free_port());
    let (a, b) = (format!("http://127.0.0.1:{port_a}"), format!("http://127.0.0.1:{port_b}"));
    // Page 1 and page 3 on the first page's origin, page 2 on another.
    let run = |args: &[&str]| -> (Vec<Recorded>, Vec<Recorded>) {
        let first = Server::routes_on(
            port_a,
            vec![
                ("/p1", vec![page("1", &[&format!("<{b}/p2>; rel=next")], None)]),
                ("/p3", vec![page("3", &[], None)]),
            ],
        );
        let other = Server::routes_on(port_b, vec![("/p2", vec![page("2", &[&format!("<{a}/p3>; rel=next")], None)])]);
        let out = poll().arg("--paginate").args(args).arg(format!("{a}/p1")).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "[1,2,3]");
        (first.requests(), other.requests())
    };
    let headers = ["-u", "ci:pw-51", "-H", "X-Api-Key: key-51", "-H", "Cookie: sid=c-51", "-H", "X-Trace: t"];
    let (first, other) = run(&headers);
    for request in &first {
        assert!(request.header("authorization").is_some_and(|a| a.starts_with("Basic ")), "{request:?}");
        assert_eq!((request.header("x-api-key"), request.header("cookie")), (Some("key-51"), Some("sid=c-51")));
    }
    let page_2 = &other[0];
    assert_eq!(
        (page_2.header("authorization"), page_2.header("x-api-key"), page_2.header("cookie")),
        (None, None, None)
    );
    assert_eq!(page_2.header("x-trace"), Some("t"), "what is no credential goes along");

    // --auth-cmd's token alike.
    let (first, other) = run(&["--auth-cmd", "printf tok-51"]);
    assert!(first.iter().all(|r| r.header("authorization") == Some("Bearer tok-51")));
    assert_eq!(other[0].header("authorization"), None);

    // --location-trusted: everywhere.
    let (first, other) = run(&[&headers[..], &["--location-trusted"]].concat());
    assert!(
        first
            .iter()
            .chain(&other)
            .all(|r| r.header("x-api-key") == Some("key-51") && r.header("authorization").is_some())
    );
}

#[test]
fn every_page_is_a_token_of_the_rate_and_a_walk_one_outcome_for_the_breaker() {
    let folder = support::process::Folder::new("pages-state");
    let state = folder.file("state.json");
    let server = Server::routes(vec![
        ("/p1", vec![page("1", &["</p2>; rel=next"], None)]),
        ("/p2", vec![page("2", &["</p3>; rel=next"], None)]),
        ("/p3", vec![page("3", &[], None)]),
    ]);
    // --rate 5/s: one request every 200 ms, the pages of one walk included.
    let out = poll().args(["--paginate", "--rate", "5/s", "--state", &state, &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for pair in requests.windows(2) {
        let gap = pair[1].at.duration_since(pair[0].at);
        assert!(gap >= Duration::from_millis(180), "pages {gap:?} apart under --rate 5/s");
    }
    // One walk, one outcome in the breaker's window.
    let kept: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    let window = &kept["origins"][server.origin()]["breaker"]["window"];
    assert_eq!(window.as_array().map(Vec::len), Some(1), "{kept}");
}

#[test]
fn a_half_open_breakers_probe_is_the_whole_walk() {
    // The breaker is open, its cool-down long over: the next attempt is the probe, and its pages are
    // not turned away by the probe's own lease. The walk succeeds: closed again, one outcome.
    let folder = support::process::Folder::new("pages-probe");
    let state = folder.path("state.json");
    let server = Server::routes(vec![
        ("/p1", vec![page("1", &["</p2>; rel=next"], None)]),
        ("/p2", vec![page("2", &["</p3>; rel=next"], None)]),
        ("/p3", vec![page("3", &[], None)]),
    ]);
    let failed = serde_json::json!({"ms": 1, "ok": false});
    let open = |origin: String| {
        serde_json::json!({
            "origins": {origin: {
                "breaker": {"cooldown_ms": 1000, "reason": "5 of the last 5 requests failed", "state": "open", "until_ms": 1,
                            "window": [failed, failed, failed, failed, failed]},
                "next_slot_ms": 0, "not_before_ms": 0
            }},
            "version": 1
        })
    };
    std::fs::write(&state, open(server.origin()).to_string()).unwrap();
    support::certs::owner_only(&state);
    let out = poll()
        .args(["--paginate", "--state", &state.display().to_string(), "-v", &server.url("/p1")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "[1,2,3]");
    let kept: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    let breaker = &kept["origins"][server.origin()]["breaker"];
    // The probe succeeded: closed, and a window started afresh.
    assert_eq!(
        (breaker["state"].as_str(), breaker["window"].as_array().map(Vec::len)),
        (Some("closed"), Some(0)),
        "{kept}"
    );

    // The probe's lease outlasts the walk: a connect and a request timeout for each of
    // --max-pages pages (6 x 2 s) and a second, not one request's 3 s, during which another
    // process would probe too.
    let server = Server::routes(vec![
        ("/p1", vec![page("1", &["</p2>; rel=next"], None)]),
        ("/p2", vec![page("2", &[], None).delay(Duration::from_millis(800))]),
    ]);
    std::fs::write(&state, open(server.origin()).to_string()).unwrap();
    support::certs::owner_only(&state);
    let child = support::poll_std()
        .args(["--paginate", "--max-pages", "6", "--connect-timeout", "1s", "--request-timeout", "1s"])
        .args(["--state", &state.display().to_string(), &server.url("/p1")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(server.wait_hits(2, Duration::from_secs(10)));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let probing: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    let breaker = &probing["origins"][server.origin()]["breaker"];
    assert_eq!(breaker["state"], "half_open", "{probing}");
    let lease = breaker["lease_until_ms"].as_u64().unwrap_or_default().saturating_sub(now);
    assert!(lease >= 11_000, "the lease ends in {lease} ms: {probing}");
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(0));
}

#[test]
fn the_json_log_has_one_object_per_walk_with_its_pages() {
    let server = three_pages([&[("1", "\"a\"")], &[("2", "\"b\"")], &[("3", "\"c\"")]]);
    let out = poll()
        .args([
            "--paginate",
            "--until",
            "false",
            "--timeout",
            "1s",
            "-i",
            "300ms",
            "--log-format",
            "json",
            &server.url("/p1"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let objects: Vec<Value> = stderr(&out).lines().map(|l| serde_json::from_str(l).expect("NDJSON")).collect();
    let attempts: Vec<&Value> = objects.iter().filter(|o| o["event"] == "attempt").collect();
    assert!(attempts.len() >= 2, "{objects:?}");
    assert_eq!(server.hits(), 3 * attempts.len(), "one object per walk of three requests");
    assert_eq!((attempts[0]["pages"].as_u64(), attempts[0]["status"].as_u64()), (Some(3), Some(200)));
    // Every page a 304: the walk is one.
    assert_eq!((attempts[1]["pages"].as_u64(), attempts[1]["status"].as_u64()), (Some(3), Some(304)));
    assert_eq!(attempts[1]["url"], server.url("/p1"));
    assert_eq!(objects.last().map(|o| o["attempts"].as_u64()), Some(Some(attempts.len() as u64)));
}

#[test]
fn the_pages_flags_from_the_environment() {
    let server = Server::routes(vec![
        ("/p1", vec![page("1", &["</p2>; rel=next"], None)]),
        ("/p2", vec![page("2", &["</p3>; rel=next"], None)]),
        ("/p3", vec![page("3", &[], None)]),
    ])
    .expect_hits(2 + 3);
    // POLL_MAX_PAGES with --paginate on the command line: the cap.
    let out = poll().env("POLL_MAX_PAGES", "2").args(["--paginate", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("more than 2 pages: raise --max-pages"), "{}", stderr(&out));
    // POLL_PAGINATE=true walks; POLL_MAX_PAGES=0 is a usage error that names it.
    let out = poll().env("POLL_PAGINATE", "true").arg(server.url("/p1")).output().unwrap();
    assert_eq!((out.status.code(), stdout(&out)), (Some(0), "[1,2,3]".to_string()), "{}", stderr(&out));
    let out = poll().env("POLL_MAX_PAGES", "0").args(["--paginate", &server.url("/p1")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("POLL_MAX_PAGES"), "{}", stderr(&out));
    // Without --paginate, POLL_MAX_PAGES means nothing: ignored, and -v says why.
    let plain = Server::start(vec![Reply::json(200, "{}")]);
    let out = poll().env("POLL_MAX_PAGES", "2").args(["-v", &plain.url("/x")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("POLL_MAX_PAGES (only means something with --paginate)"), "{}", stderr(&out));
}
