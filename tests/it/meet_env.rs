//! Where `POLL_*` meets the command line, `--help` and the JUnit report (issue 49, rows 9 to 12):
//! a report stays well-formed XML whatever a server sends.

use crate::support;

use std::path::Path;
use std::process::{Command as StdCommand, Output};

use support::process::Folder;
use support::server::{Reply, Server};
use support::{have_tool, poll};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
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
