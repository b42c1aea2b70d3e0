//! Where `POLL_*` meets the command line, `--help` and the JUnit report (issue 49, rows 9 to 12):
//! the command line wins also over a variable whose option conflicts with a flag it gives; an
//! empty variable is unset; a variable that only means something beside another option is
//! ignored without it; a bad value names its variable and never quotes a secret; `--help` hides
//! the values of every variable that can carry one and `-h` says the rule once; `POLL_INSECURE`
//! warns on every run; and a report stays well-formed XML whatever a server sends.

use crate::support;

use std::path::Path;
use std::process::{Command as StdCommand, Output};

use support::process::Folder;
use support::server::{Reply, Server};
use support::{have_tool, poll};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The `-v` line that names the variables set aside, without its prefix.
fn ignored_line(output: &Output) -> String {
    let text = stderr(output);
    let line = text.lines().find(|line| line.starts_with("ignored from the environment: "));
    line.unwrap_or_default().trim_start_matches("ignored from the environment: ").to_string()
}

/// Row 9: each pair the issue names, and pairs of `config.rs`'s own clashes (a value, the URLs):
/// the run goes on with the command line's flag, the variable is named under `-v`, its value is
/// never shown.
#[test]
fn the_command_line_wins_over_a_variable_whose_option_conflicts_with_a_flag_it_gives() {
    let server = Server::start(vec![Reply::json(200, r#"{"status":"done"}"#)]).expect_hits(1);
    let out = poll().env("POLL_QUIET", "true").args(["-v", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ignored_line(&out), "POLL_QUIET (the command line gives --verbose)", "{}", stderr(&out));
    assert!(stderr(&out).contains("> GET "), "-v is on: {}", stderr(&out));
    drop(server);

    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(1);
    let out = poll().env("POLL_DATA", "form=s3cret").args(["-v", "--json", r#"{"a":1}"#, &server.url("/")]).output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let request = &server.requests()[0];
    assert_eq!((request.method.as_str(), request.body_str()), ("POST", r#"{"a":1}"#.to_string()));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(ignored_line(&out), "POLL_DATA (the command line gives --json)");
    assert!(!stderr(&out).contains("s3cret"), "{}", stderr(&out));
    drop(server);

    let server = Server::start(vec![Reply::json(200, r#"{"status":"done"}"#)]).expect_hits(1);
    let out = poll().env("POLL_WATCH", "true").args(["-v", "--submit", "-d", "x", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ignored_line(&out), "POLL_WATCH (the command line gives --submit)");
    drop(server);

    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(1);
    let out = poll().env("POLL_AUTH_CMD", "echo tok-s3cret").args(["-v", "-u", "alice:pw", &server.url("/")]).output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests()[0].header("authorization"), Some("Basic YWxpY2U6cHc="));
    assert_eq!(ignored_line(&out), "POLL_AUTH_CMD (the command line gives --user)");
    assert!(!stderr(&out).contains("tok-s3cret"), "{}", stderr(&out));
    drop(server);

    // Clashes that turn on a value or on the URLs: a status in two lists, --fallback beside two URLs.
    let server = Server::start(vec![Reply::status(404), Reply::json(200, "{}")]).expect_hits(2);
    let args = ["-v", "-i", "10ms", "--pending-on", "404", &server.url("/")];
    let out = poll().env("POLL_RETRY_ON", "404").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ignored_line(&out), "POLL_RETRY_ON (the command line gives --pending-on)");
    drop(server);

    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(2);
    let (a, b) = (server.url("/a"), server.url("/b"));
    let out = poll().env("POLL_FALLBACK", r#"{"s3cret":1}"#).args(["-v", &a, &b]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ignored from the environment: POLL_FALLBACK (the command line gives several URLs)"),
        "{}",
        stderr(&out)
    );
}

/// Row 9, the contract's choice where it is silent: two variables that conflict with each other
/// (no command-line side) are a usage error naming both, and nothing is sent.
#[test]
fn two_variables_that_conflict_are_a_usage_error_naming_both() {
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(0);
    let cases: [(&[(&str, &str)], &str); 3] = [
        (
            &[("POLL_DATA", "a=s3cret"), ("POLL_JSON", "{}")],
            "poll: error: POLL_DATA and POLL_JSON cannot be used together (--data and --json); unset one of them",
        ),
        (
            &[("POLL_VERBOSE", "1"), ("POLL_QUIET", "yes")],
            "poll: error: POLL_VERBOSE and POLL_QUIET cannot be used together (--verbose and --quiet); unset one of them",
        ),
        (
            &[("POLL_INTERVAL_MAX", "100ms"), ("POLL_INTERVAL", "1s")],
            "poll: error: POLL_INTERVAL_MAX and POLL_INTERVAL: --interval-max: 100ms is shorter than --interval 1s",
        ),
    ];
    for (variables, said) in cases {
        let out = poll().envs(variables.iter().copied()).arg(server.url("/")).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{variables:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), format!("{said}\n"), "{variables:?}");
    }
    // A switch a variable turns off sets nothing, so it conflicts with nothing.
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(1);
    let out = poll().env("POLL_VERBOSE", "0").env("POLL_QUIET", "true").arg(server.url("/")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

/// Row 10: an empty variable is unset, as CI systems unset one.
#[test]
fn an_empty_variable_is_unset() {
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(2);
    let empty = [("POLL_VERBOSE", ""), ("POLL_TIMEOUT", ""), ("POLL_REQUEST", ""), ("POLL_INSECURE", "")];
    let out = poll().envs(empty).arg(server.url("/")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "POLL_VERBOSE= is not -v");
    let out = poll().env("POLL_TIMEOUT", "").args(["-v", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ignored_line(&out), "POLL_TIMEOUT (empty: unset)");
    assert_eq!(server.requests()[0].method, "GET");
}

/// A `POLL_` variable that no option reads (a typo, `-X`'s old name, a repeatable option's) is
/// named under `-v` with why, and changes nothing; the installers' own variables are not named.
#[test]
fn a_variable_no_option_reads_is_named_under_v_and_changes_nothing() {
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(1);
    let strays = [
        ("POLL_TIMEOUTT", "1s"),
        ("POLL_METHOD", "DELETE"),
        ("POLL_HEADER", "Authorization: Bearer s3cret"),
        ("POLL_INSTALL_DIR", "/opt/bin"),
    ];
    let out = poll().envs(strays).args(["-v", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        ignored_line(&out),
        "POLL_HEADER (--header is not read from the environment), POLL_METHOD (no option has that name), \
         POLL_TIMEOUTT (no option has that name)"
    );
    let request = &server.requests()[0];
    assert_eq!((request.method.as_str(), request.header("authorization")), ("GET", None));
    assert!(!stderr(&out).contains("s3cret"), "{}", stderr(&out));
}

/// Row 10: a variable set for a template, that only means something beside another option, is
/// ignored on a call without that option (named under `-v` with why) and used on a call with it.
#[test]
fn a_variable_that_only_means_something_beside_another_option_is_ignored_without_it() {
    let template = [
        ("POLL_STATE_KEY", "ci-token-1"),
        ("POLL_RETRY_BUDGET", "20%"),
        ("POLL_BREAKER_WINDOW", "20"),
        ("POLL_STATUS_URL", ".url"),
        ("POLL_KEY", "/no/such/client.key"),
        ("POLL_IDLE_TIMEOUT", "5s"),
        ("POLL_FALLBACK", "last"),
        ("POLL_RATE", "auto"),
    ];
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(2);
    let out = poll().envs(template).arg(server.url("/")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    let out = poll().envs(template).args(["-v", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        ignored_line(&out),
        "POLL_KEY (only means something with --cert), POLL_STATUS_URL (only means something with --submit), \
         POLL_IDLE_TIMEOUT (only means something with --watch), POLL_RETRY_BUDGET (only means something with \
         --state), POLL_STATE_KEY (only means something with --state), POLL_BREAKER_WINDOW (only means something \
         with --state), POLL_FALLBACK (only means something with --state), POLL_RATE (only means something with \
         --state)"
    );
    drop(server);

    // Beside --state they are read: the state is kept under POLL_STATE_KEY's key.
    let folder = Folder::new("meet-env-state");
    let state = folder.path("state.json");
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(1);
    let out = poll()
        .env("POLL_STATE_KEY", "ci-token-1")
        .env("POLL_BREAKER_WINDOW", "20")
        .args(["-v", "--state", state.to_str().unwrap(), &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("settings from the environment: POLL_STATE_KEY, POLL_BREAKER_WINDOW"),
        "{}",
        stderr(&out)
    );
    assert_eq!(ignored_line(&out), "");
    let kept = std::fs::read_to_string(&state).unwrap_or_default();
    assert!(kept.contains("ci-token-1"), "{kept}");
}

/// Row 10: every bad value names its variable, a secret one's value is not quoted (not even the
/// part a parser's message would quote), and nothing is sent.
#[test]
fn a_bad_value_names_its_variable_and_quotes_no_part_of_a_secret() {
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(0);
    let cases = [
        ("POLL_REQUEST", "G ET", "poll: error: POLL_REQUEST: --request: `G ET` is not an HTTP method"),
        (
            "POLL_RETRY_ON",
            "404,abc",
            "poll: error: POLL_RETRY_ON: invalid value 'abc' for '--retry-on <CODES>': `abc` is not an HTTP status code \
             (100-599); see `poll --help`",
        ),
        (
            "POLL_UNTIL",
            r#".token == "s3cret" | s3cret_fn"#,
            "poll: error: POLL_UNTIL: --until: `<redacted>` does not compile: at col 22: undefined filter `<redacted>`",
        ),
        (
            "POLL_JSON",
            r#"{"token":"s3cret""#,
            "poll: error: POLL_JSON: --json: body is not valid JSON: EOF while parsing an object at line 1 column 17",
        ),
    ];
    for (variable, value, said) in cases {
        let out = poll().env(variable, value).arg(server.url("/")).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{variable}: {}", stderr(&out));
        assert_eq!(stderr(&out), format!("{said}\n"), "{variable}");
    }
}

/// Row 11: `--help` shows each option's variable but not what the variables of bodies, keys,
/// certificates and filters hold; `-h` says the `POLL_<FLAG>` rule once and tags no option.
#[test]
fn help_hides_what_bodies_keys_and_filters_hold_and_the_short_help_says_the_rule_once() {
    let secrets = [
        ("POLL_DATA", "data-s3cret"),
        ("POLL_JSON", r#"{"json":"s3cret"}"#),
        ("POLL_IDEMPOTENCY_KEY", "key-s3cret"),
        ("POLL_UNTIL", r#".token == "s3cret""#),
        ("POLL_PRINT", ".s3cret"),
        ("POLL_CERT", "client.pem:s3cret-pass"),
        ("POLL_KEY", "key-s3cret.pem"),
    ];
    let out = poll().envs(secrets).env("POLL_TIMEOUT", "7m").arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for (variable, _) in secrets {
        assert!(help.contains(&format!("[env: {variable}]")), "{variable}: {help}");
    }
    assert!(help.contains("[env: POLL_TIMEOUT=7m]") && help.contains("[env: POLL_REQUEST=]"), "{help}");
    assert!(!help.contains("s3cret"), "{help}");

    let out = poll().envs(secrets).arg("-h").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let short = String::from_utf8_lossy(&out.stdout);
    assert!(!short.contains("[env:"), "{short}");
    assert_eq!(short.matches("POLL_<FLAG>").count(), 1, "{short}");
    assert!(short.lines().count() < 180, "{} lines", short.lines().count());
    assert!(!short.contains("s3cret"), "{short}");
}

/// Row 11: TLS verification turned off from the environment warns on every run, as Node does
/// for `NODE_TLS_REJECT_UNAUTHORIZED=0`; `-k` typed on the command line does not.
#[test]
fn tls_verification_turned_off_from_the_environment_warns_on_every_run() {
    let server = Server::start_tls(vec![Reply::json(200, "{}")]).expect_hits(3);
    for _ in 0..2 {
        let out = poll().env("POLL_INSECURE", "true").arg(server.url("/")).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            "poll: warning: POLL_INSECURE turns off TLS certificate verification (as -k): any certificate is accepted\n"
        );
    }
    let out = poll().args(["-k", &server.url("/")]).output().unwrap();
    assert_eq!((out.status.code(), stderr(&out)), (Some(0), String::new()));
}

/// Row 12: a body holding U+FFFE, U+FFFF and a control character reaches the report's failure
/// text through `--show`; the file still parses with expat (Python's xml.etree and minidom), and
/// the characters XML forbids are escaped as poll escapes a server's text.
#[test]
fn a_report_is_well_formed_xml_whatever_the_server_sends() {
    if !have_tool("python3", "apt-get install python3") {
        return;
    }
    let folder = Folder::new("meet-env-junit");
    let report = folder.path("report.xml");
    let body = "{\"status\":\"bad\u{fffe}\u{ffff}\\u0001\\uffff end\"}";
    let server = Server::start(vec![Reply::json(200, body)]).expect_hits(1);
    let args = ["--show", ".status", "--fail-when", r#".status | startswith("bad")"#, "--report-junit"];
    let out = poll().args(args).arg(&report).arg(server.url("/")).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let text = read_back(&report);
    assert_eq!(
        text,
        "--fail-when matched\nlast status: 200 failed · status bad\\u{fffe}\\u{ffff}\\u{1}\\u{ffff} end\nattempts: 1"
    );
}

/// The failure's text as expat reads it, after minidom has parsed the file too.
fn read_back(report: &Path) -> String {
    let script = r#"
import sys, xml.etree.ElementTree as ET, xml.dom.minidom
xml.dom.minidom.parse(sys.argv[1])
failure = ET.parse(sys.argv[1]).getroot().find("./testsuite/testcase/failure")
sys.stdout.write(failure.text)
"#;
    let out = StdCommand::new("python3").args(["-c", script]).arg(report).output().expect("run python3");
    let file = std::fs::read_to_string(report).unwrap_or_default();
    assert!(out.status.success(), "expat: {}\n{file}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}
