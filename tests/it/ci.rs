//! End-to-end tests of what CI users read: the GitHub Actions step summary
//! (`GITHUB_STEP_SUMMARY`) and GitLab's collapsed sections around `-v` lines.

use crate::support;

use std::path::PathBuf;
use std::process::Output;
use std::time::{SystemTime, UNIX_EPOCH};

use support::poll;
use support::server::{Reply, Server};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A scratch file path of this test's own (the file itself is not made).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("poll-ci-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary folder");
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

/// The table's rows after its header and separator, each split into its cells.
fn rows(summary: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = summary.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(lines.first().copied(), Some("| URL | Result | Exit code | Attempts | Elapsed | Last status |"));
    assert_eq!(lines.get(1).copied(), Some("|---|---|---:|---:|---:|---|"));
    lines[2..]
        .iter()
        .map(|line| {
            let inner = line.strip_prefix("| ").and_then(|l| l.strip_suffix(" |")).expect("a row");
            inner.split(" | ").map(str::to_string).collect()
        })
        .collect()
}

/// An elapsed time as `human` writes it: `350ms`, `1.2s`.
fn is_elapsed(cell: &str) -> bool {
    cell.strip_suffix("ms").is_some_and(|n| n.parse::<u64>().is_ok())
        || cell.strip_suffix('s').is_some_and(|n| n.parse::<f64>().is_ok())
}

#[test]
fn one_url_appends_one_table_after_what_the_file_held() {
    let server = Server::start(vec![Reply::json(200, r#"{"s":"pending"}"#), Reply::json(200, r#"{"s":"done"}"#)]);
    let file = scratch("one.md");
    std::fs::write(&file, "## Earlier step\n").unwrap();
    let out = poll()
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &file)
        .args(["--until", r#".s=="done""#, "-i", "20ms", &server.url("/job")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "a summary adds nothing to stderr");
    let summary = std::fs::read_to_string(&file).unwrap();
    let table = summary.strip_prefix("## Earlier step\n").expect("appended, the earlier text kept");
    assert!(table.starts_with("\n#### poll: done (exit 0), 2 attempts in "), "{table}");
    assert!(table.ends_with(" |\n\n"), "{table:?}");
    let rows = rows(table);
    assert_eq!(rows.len(), 1, "{table}");
    let row = &rows[0];
    assert_eq!(row[..4], [format!("`{}`", server.url("/job")), "done".into(), "0".into(), "2".into()]);
    assert!(is_elapsed(&row[4]), "{row:?}");
    assert_eq!(row[5], "200 done");

    // A second run appends a second table.
    let again = poll()
        .args(["--ci", "github", "--until", r#".s=="done""#, &server.url("/job")])
        .env("GITHUB_STEP_SUMMARY", &file)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let summary = std::fs::read_to_string(&file).unwrap();
    assert_eq!(summary.matches("#### poll: done (exit 0)").count(), 2, "{summary}");
}

#[test]
fn three_urls_are_three_rows_with_their_own_endings() {
    let server = Server::routes(vec![
        ("/a", vec![Reply::json(200, r#"{"s":"done"}"#)]),
        ("/b", vec![Reply::status(503), Reply::status(404)]),
        ("/c", vec![Reply::json(200, r#"{"s":"pending"}"#)]),
    ]);
    let file = scratch("three.md");
    let (a, b, c) = (server.url("/a"), server.url("/b"), server.url("/c"));
    let out = poll()
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &file)
        .args(["--until", r#".s=="done""#, "-i", "30s", "--backoff", "300ms", "--jitter", "none", &a, &b, &c])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let summary = std::fs::read_to_string(&file).unwrap();
    assert!(summary.starts_with("\n#### poll: permanent failure (exit 3), 4 attempts in "), "{summary}");
    let rows = rows(&summary);
    assert_eq!(rows.len(), 3, "{summary}");
    let without_elapsed: Vec<Vec<&str>> = rows
        .iter()
        .map(|row| {
            assert!(is_elapsed(&row[4]), "{row:?}");
            row.iter().enumerate().filter(|(i, _)| *i != 4).map(|(_, cell)| cell.as_str()).collect()
        })
        .collect();
    let (a, b, c) = (format!("`{a}`"), format!("`{b}`"), format!("`{c}`"));
    assert_eq!(
        without_elapsed,
        [
            vec![a.as_str(), "done", "0", "1", "200 done"],
            vec![b.as_str(), "permanent failure: HTTP 404: not retryable", "3", "2", "404"],
            vec![c.as_str(), "abandoned", "–", "1", "200 pending"],
        ]
    );
}

/// The title and the Result cell name what ended the run once: a `--fail-on` status is not
/// "--fail-when matched", and a deadline's words do not repeat its row's (`deadline: deadline:`).
#[test]
fn the_summary_says_what_ended_the_run_in_its_own_words_once() {
    let server = Server::routes(vec![
        ("/gone", vec![Reply::json(404, r#"{"error":"gone"}"#)]),
        ("/job", vec![Reply::json(200, r#"{"s":"pending"}"#)]),
    ]);
    let file = scratch("words.md");
    let out = poll()
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &file)
        .args(["-v", "--fail-on", "404", &server.url("/gone")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("\npoll: failure condition met after 1 attempt in "), "{}", stderr(&out));
    let summary = std::fs::read_to_string(&file).unwrap();
    assert!(summary.starts_with("\n#### poll: failure condition met (exit 4), 1 attempt in "), "{summary}");
    let row = &rows(&summary)[0];
    assert_eq!(row[1..4], ["failure condition met: HTTP 404 is in --fail-on", "4", "1"], "{summary}");

    std::fs::remove_file(&file).unwrap();
    let out = poll()
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &file)
        .args(["--until", r#".s=="done""#, "-i", "500ms", "--timeout", "700ms", &server.url("/job")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let summary = std::fs::read_to_string(&file).unwrap();
    assert!(summary.starts_with("\n#### poll: deadline (exit 1), 2 attempts in "), "{summary}");
    let result = &rows(&summary)[0][1];
    assert!(result.starts_with("deadline: the next attempt would start in 500ms (interval) but only "), "{summary}");
    assert_eq!(result.matches("deadline").count(), 1, "{summary}");
}

#[test]
fn pipes_and_newlines_in_a_url_or_a_reason_are_escaped() {
    let server = Server::start(vec![Reply::json(200, r#"{"s":1}"#)]);
    let file = scratch("escape.md");
    let url = server.url("/a|b");
    // A --print runtime error: its message quotes the filter, a newline and a `|` in it, and
    // the error's own string (written as jq writes it, without JSON's quotes and escapes).
    let out = poll()
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &file)
        .args(["--print", "error(\"no\nid\") | .x", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let summary = std::fs::read_to_string(&file).unwrap();
    let row = summary.lines().find(|l| l.starts_with("| `")).expect("a row");
    let shown = url.replace('|', "\\|");
    assert_eq!(
        row,
        format!(
            r#"| `{shown}` | permanent failure: --print: jq error in \`error("no id") \| .x\`: no id | 3 | 1 | {} | 200 done |"#,
            rows(&summary)[0][4]
        )
    );
    // Every line of the table is a row: the newline did not split one.
    assert_eq!(summary.lines().filter(|l| l.starts_with('|')).count(), 3, "{summary}");
}

#[test]
fn nothing_is_written_outside_github_actions_or_under_ci_none() {
    let server = Server::start(vec![Reply::json(200, "{}")]);
    let file = scratch("none.md");
    let url = server.url("/");
    let runs = [
        poll().env("GITHUB_ACTIONS", "true").env("GITHUB_STEP_SUMMARY", &file).args(["--ci", "none", &url]).output(),
        // The variable alone is not GitHub Actions.
        poll().env("GITHUB_STEP_SUMMARY", &file).arg(&url).output(),
        poll().env("GITHUB_STEP_SUMMARY", &file).args(["--ci", "gitlab", &url]).output(),
        // In Actions without the variable (or with it empty): nothing, and no warning.
        poll().env("GITHUB_ACTIONS", "true").arg(&url).output(),
        poll().env("GITHUB_ACTIONS", "true").env("GITHUB_STEP_SUMMARY", "").arg(&url).output(),
    ];
    for out in runs {
        let out = out.unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stderr(&out), "");
    }
    assert!(!file.exists());
    assert_eq!(server.hits(), 5);
}

#[test]
fn a_summary_that_cannot_be_written_is_a_warning_and_the_exit_code_stays() {
    let server = Server::routes(vec![("/ok", vec![Reply::json(200, "{}")]), ("/gone", vec![Reply::status(410)])]);
    let folder = scratch("a-folder");
    std::fs::create_dir_all(&folder).unwrap();
    for (path, code) in [("/ok", 0), ("/gone", 3)] {
        let out = poll()
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_STEP_SUMMARY", &folder)
            .arg(server.url(path))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
        let err = stderr(&out);
        let first = err.lines().next().unwrap_or_default();
        let want = format!(
            "::warning title=poll::cannot write the step summary `{}` (GITHUB_STEP_SUMMARY): ",
            folder.display()
        );
        assert!(first.starts_with(&want), "{err}");
        assert_eq!(err.lines().count(), if code == 0 { 1 } else { 2 }, "{err}");
        if code == 0 {
            assert_eq!(out.stdout, b"{}");
        } else {
            assert!(err.lines().nth(1).unwrap_or_default().starts_with("::error title=poll::HTTP 410"), "{err}");
        }
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `ESC[0Ksection_start:TIME:NAME[collapsed=true]\rESC[0KHEADER`: its time, and the line with the time as `T`.
fn stamped(line: &str, from: u64, to: u64) -> String {
    let marker = if line.contains("section_start:") { "section_start:" } else { "section_end:" };
    let (before, rest) = line.split_once(marker).unwrap_or_else(|| panic!("a section line: {line:?}"));
    let (time, after) = rest.split_once(':').unwrap_or_else(|| panic!("a time in {line:?}"));
    let time: u64 = time.parse().unwrap_or_else(|_| panic!("a Unix time in {line:?}"));
    assert!((from..=to).contains(&time), "{time} is the time of the run ({from}..={to})");
    format!("{before}{marker}T:{after}")
}

#[test]
fn gitlab_sections_wrap_each_urls_verbose_lines_byte_for_byte() {
    for gitlab in [&["--ci", "gitlab"][..], &[]] {
        let server = Server::routes(vec![
            ("/slow", vec![Reply::json(200, r#"{"s":"pending"}"#), Reply::json(200, r#"{"s":"done"}"#)]),
            ("/fast", vec![Reply::json(200, r#"{"s":"done"}"#)]),
        ]);
        let (slow, fast) = (server.url("/slow"), server.url("/fast"));
        let from = now();
        let out = poll()
            .env("GITLAB_CI", "true")
            .args(gitlab)
            .args(["-v", "--until", r#".s=="done""#, "-i", "300ms", &slow, &fast])
            .output()
            .unwrap();
        let to = now();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let err = stderr(&out);
        let lines: Vec<String> = err
            .split_inclusive('\n')
            .map(|line| if line.contains("\x1b[0Ksection_") { stamped(line, from, to) } else { line.to_string() })
            .map(|line| {
                // Latencies vary: `in 3ms ->` becomes `in L ->`.
                match (line.find("] attempt "), line.find(" -> ")) {
                    (Some(_), Some(arrow)) => match line[..arrow].rfind(" in ") {
                        Some(at) => format!("{} in L{}", &line[..at], &line[arrow..]),
                        None => line,
                    },
                    _ => line,
                }
            })
            .collect();
        let (last, sections) = lines.split_last().expect("lines");
        assert!(last.starts_with("poll: done after 3 attempts in "), "{err}");
        let want = format!(
            "\x1b[0Ksection_start:T:poll_1[collapsed=true]\r\x1b[0Kpoll {fast}\n\
             [{fast}] > GET {fast}\n\
             [{fast}] > User-Agent: poll/{v}\n\
             [{fast}] attempt 1: 200 done in L -> done\n\
             \x1b[0Ksection_end:T:poll_1\r\x1b[0K\n\
             \x1b[0Ksection_start:T:poll_0[collapsed=true]\r\x1b[0Kpoll {slow}\n\
             [{slow}] > GET {slow}\n\
             [{slow}] > User-Agent: poll/{v}\n\
             [{slow}] attempt 1: 200 pending in L -> poll again in 300ms (interval)\n\
             [{slow}] attempt 2: 200 done in L -> done\n\
             \x1b[0Ksection_end:T:poll_0\r\x1b[0K\n",
            v = env!("CARGO_PKG_VERSION")
        );
        assert_eq!(sections.concat(), want, "{err:?}");
    }

    // --ci none turns GITLAB_CI off.
    let server = Server::start(vec![Reply::json(200, "{}")]);
    let out = poll().env("GITLAB_CI", "true").args(["--ci", "none", "-v", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!stderr(&out).contains("section_"), "{}", stderr(&out));
}

#[test]
fn gitlab_one_url_section_opens_at_the_start_and_closes_at_the_end() {
    let server = Server::start(vec![Reply::status(404)]);
    let url = server.url("/x");
    let out = poll().args(["--ci", "gitlab", "-v", &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines[0].starts_with("\x1b[0Ksection_start:"), "{err:?}");
    assert!(lines[0].ends_with(&format!(":poll_0[collapsed=true]\r\x1b[0Kpoll {url}")), "{err:?}");
    assert!(lines[lines.len() - 2].starts_with("\x1b[0Ksection_end:"), "{err:?}");
    assert!(lines[lines.len() - 2].ends_with(":poll_0\r\x1b[0K"), "{err:?}");
    // The error line is plain text (no workflow command) and outside the section.
    assert!(lines[lines.len() - 1].starts_with("poll: error: HTTP 404"), "{err:?}");
}
