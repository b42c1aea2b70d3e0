//! `--report-junit FILE`, read back by a JUnit reader nobody here wrote: Python's `junitparser`
//! (GitLab's and Jenkins's rules: one testsuite, a testcase per URL, a failure's type, message and
//! text, skipped testcases), for a run that is done, each ending that is not, several URLs and a signal.

use crate::support;

use std::path::Path;
use std::process::{Command as StdCommand, Output};
use std::time::Duration;

use serde_json::Value;
use support::process::Folder;
use support::server::{Reply, Server};
use support::{have_python_module, poll};

const INSTALL: &str = "pip install junitparser (or apt-get install python3-junitparser)";

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The report at `path` as junitparser reads it: the suite's counts and each case's name,
/// time, and result (`passed`, or the failure's or skip's type, message and text).
fn read_back(path: &Path) -> Value {
    let script = r#"
import json, sys
from junitparser import JUnitXml, Failure, Skipped
suites = list(JUnitXml.fromfile(sys.argv[1]))
suite = suites[0]
cases = []
for case in suite:
    result = [{"kind": type(r).__name__, "type": r.type, "message": r.message, "text": r.text} for r in case.result]
    cases.append({"name": case.name, "classname": case.classname, "time": case.time, "result": result})
print(json.dumps({"suites": len(suites), "name": suite.name, "tests": suite.tests, "failures": suite.failures,
                  "skipped": suite.skipped, "cases": cases}))
"#;
    let out = StdCommand::new("python3").args(["-c", script]).arg(path).output().expect("run python3");
    assert!(out.status.success(), "junitparser: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("junitparser's reading as JSON")
}

#[test]
fn a_run_that_is_done_is_one_suite_of_passed_cases() {
    if !have_python_module("junitparser", INSTALL) {
        return;
    }
    let folder = Folder::new("junit-done");
    let report = folder.path("report.xml");
    let server = Server::start(vec![Reply::json(200, r#"{"status":"done"}"#)]);
    let url = server.url("/job?token=s3cret");
    let out = poll().args(["--report-junit", report.to_str().unwrap(), &url, &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let read = read_back(&report);
    assert_eq!(
        (&read["suites"], &read["name"], &read["tests"], &read["failures"]),
        (&1.into(), &"poll".into(), &2.into(), &0.into())
    );
    let shown = server.url("/job?token=<redacted>");
    assert_eq!(read["cases"][0]["name"], Value::from(shown.clone()));
    assert_eq!(read["cases"][1]["name"], Value::from(format!("{shown} #2")));
    assert_eq!(read["cases"][0]["classname"], "poll");
    assert_eq!(read["cases"][0]["result"], serde_json::json!([]));
    assert!(!std::fs::read_to_string(&report).unwrap().contains("s3cret"));
}

#[test]
fn each_ending_that_is_not_done_is_a_failure_of_its_reason() {
    if !have_python_module("junitparser", INSTALL) {
        return;
    }
    let cases: [(Vec<Reply>, &[&str], i32, &str); 4] = [
        (vec![Reply::json(200, r#"{"status":"failed"}"#)], &["--fail-when", ".status==\"failed\""], 4, "fail_when"),
        (vec![Reply::json(200, r#"{"status":"pending"}"#)], &["--until", ".done", "--timeout", "1s"], 1, "deadline"),
        (vec![Reply::status(400)], &[], 3, "permanent"),
        (vec![Reply::status(503)], &["--retries", "0"], 5, "gave_up"),
    ];
    for (replies, args, code, reason) in cases {
        let folder = Folder::new("junit-failed");
        let report = folder.path("report.xml");
        let server = Server::start(replies);
        let out =
            poll().args(["--report-junit", report.to_str().unwrap()]).args(args).arg(server.url("/")).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{reason}: {}", stderr(&out));
        let read = read_back(&report);
        assert_eq!((&read["tests"], &read["failures"]), (&1.into(), &1.into()), "{reason}: {read}");
        let failure = &read["cases"][0]["result"][0];
        assert_eq!((&failure["kind"], &failure["type"]), (&"Failure".into(), &reason.into()), "{read}");
        let line = stderr(&out).lines().last().unwrap_or_default().trim_start_matches("poll: error: ").to_string();
        let message = failure["message"].as_str().unwrap_or_default();
        assert!(line.starts_with(message), "message `{message}` is not the error line `{line}`");
        assert!(failure["text"].as_str().is_some_and(|t| t.contains("last status: ")), "{read}");
    }
}

#[test]
fn a_url_abandoned_under_any_is_skipped() {
    if !have_python_module("junitparser", INSTALL) {
        return;
    }
    let folder = Folder::new("junit-any");
    let report = folder.path("report.xml");
    let server = Server::routes(vec![
        ("/fast", vec![Reply::json(200, "{}")]),
        ("/slow", vec![Reply::json(200, "{}").delay(Duration::from_secs(5))]),
    ])
    .expect_route_hits("/slow", 1);
    let args = ["--any", "--report-junit", report.to_str().unwrap(), &server.url("/fast"), &server.url("/slow")];
    let out = poll().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let read = read_back(&report);
    assert_eq!((&read["tests"], &read["failures"], &read["skipped"]), (&2.into(), &0.into(), &1.into()), "{read}");
    assert_eq!(read["cases"][1]["result"][0]["kind"], "Skipped");
}

#[cfg(unix)]
#[test]
fn a_run_a_signal_ends_still_writes_its_report() {
    use std::process::Stdio;
    use support::poll_std;
    if !have_python_module("junitparser", INSTALL) {
        return;
    }
    let folder = Folder::new("junit-signal");
    let report = folder.path("report.xml");
    let server = Server::start(vec![Reply::json(200, r#"{"status":"pending"}"#)]);
    let child = poll_std()
        .args(["--until", ".done", "-i", "30s", "--report-junit", report.to_str().unwrap(), &server.url("/")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn poll");
    assert!(server.wait_hits(1, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(200)); // The first poll is judged; the run waits.
    let status = StdCommand::new("sh").args(["-c", &format!("kill -TERM {}", child.id())]).status().expect("kill");
    assert!(status.success());
    let out = child.wait_with_output().expect("wait for poll");
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    let read = read_back(&report);
    assert_eq!(read["cases"][0]["result"][0]["type"], "terminated", "{read}");
}

#[test]
fn a_report_in_a_folder_that_does_not_exist_is_a_usage_error() {
    let server = Server::start(vec![Reply::status(200)]).expect_hits(0);
    let out = poll().args(["--report-junit", "/no/such/folder/report.xml", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--report-junit: folder `/no/such/folder` does not exist"), "{}", stderr(&out));
}
