//! `--report-junit FILE`: the run as a JUnit XML report, the format GitLab
//! shows on a merge request and Jenkins and GitHub's test-report actions
//! read. One `<testsuite name="poll">`, one `<testcase>` per URL (its name the
//! URL as `-v` shows it, a URL given twice named ` #2`), a `<failure>` whose
//! `type` is the JSON log's reason and whose text says the error line and the
//! last status, `<skipped/>` for a URL the run abandoned (`--any`). The
//! rendering is pure; the ending writes it, atomically.

use std::time::{Duration, SystemTime};

use crate::error::Error;
use crate::report::result::UrlResult;
use crate::util::text::printable;

/// The report of a run that took `elapsed` and ended at `now`, one testcase
/// per result. A URL the run ended first shares `run_wide`'s error (a signal,
/// the deadline), and is skipped when there is none (another was enough).
pub(crate) fn render(results: &[UrlResult], run_wide: Option<&Error>, elapsed: Duration, now: SystemTime) -> String {
    let mut cases = String::new();
    let (mut failures, mut skipped) = (0, 0);
    for (n, result) in results.iter().enumerate() {
        let given_before = results[..n].iter().filter(|earlier| earlier.url == result.url).count();
        let name = match given_before {
            0 => result.url.clone(),
            before => format!("{} #{}", result.url, before + 1),
        };
        let time = seconds(result.elapsed);
        cases.push_str(&format!("    <testcase classname=\"poll\" name=\"{}\" time=\"{time}\"", escape(&name)));
        let error = match &result.ended {
            Some(ended) => ended.as_ref().err(),
            None => run_wide,
        };
        match (error, &result.ended) {
            (Some(error), _) => {
                failures += 1;
                let line = error.beside(&result.url);
                let last = if result.last.is_empty() { "none" } else { result.last.as_str() };
                let text = format!("{line}\nlast status: {last}\nattempts: {}", result.attempts);
                cases.push_str(&format!(
                    ">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n",
                    error.reason(),
                    escape(&line),
                    escape(&text)
                ));
            }
            (None, None) => {
                skipped += 1;
                cases.push_str(
                    ">\n      <skipped message=\"the run ended before this URL did (--any)\"/>\n    </testcase>\n",
                );
            }
            (None, Some(_)) => cases.push_str("/>\n"),
        }
    }
    let stamp = jiff::Timestamp::try_from(now).map(|t| t.strftime("%Y-%m-%dT%H:%M:%S").to_string()).unwrap_or_default();
    let counts = format!(
        "tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{}\"",
        results.len(),
        seconds(elapsed)
    );
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"poll\" {counts}>\n  <testsuite \
         name=\"poll\" {counts} timestamp=\"{stamp}\">\n{cases}  </testsuite>\n</testsuites>\n"
    )
}

/// Seconds, as JUnit's `time` attributes take them.
fn seconds(duration: Duration) -> String {
    format!("{:.3}", duration.as_secs_f64())
}

/// Text for an attribute or an element: XML's five specials as entities, and
/// what XML 1.0 cannot hold at all escaped as poll escapes a server's text
/// (`\u{1b}`, `\u{fffe}`): control characters, and the noncharacters U+FFFE
/// and U+FFFF, which [`printable`] lets through. (A lone surrogate never
/// reaches a Rust string: text read lossily holds U+FFFD in its place.)
/// Line ends stay: GitLab shows them.
fn escape(text: &str) -> String {
    let lines: Vec<String> = text.split('\n').map(printable).collect();
    let mut out = String::with_capacity(text.len());
    for c in lines.join("\n").chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if !is_xml_char(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

/// XML 1.0's `Char`: tab, line feed, carriage return, and U+0020 up, but
/// for the surrogates and U+FFFE and U+FFFF.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specials_and_control_characters_are_escaped_and_line_ends_kept() {
        assert_eq!(escape("a<b>&\"c'\nd\u{1b}"), "a&lt;b&gt;&amp;&quot;c&apos;\nd\\u{1b}");
    }

    #[test]
    fn every_character_xml_forbids_is_escaped() {
        assert_eq!(escape("a\u{fffe}b\u{ffff}c\u{0}d\u{1f}"), "a\\u{fffe}b\\u{ffff}c\\u{0}d\\u{1f}");
        // What XML 1.0 allows stays as it is, astral planes included.
        assert_eq!(escape("é\u{fffd}\u{10000}😀"), "é\u{fffd}\u{10000}😀");
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            assert!(escape(&c.to_string()).chars().all(is_xml_char), "{:?}", c);
        }
    }

    #[test]
    fn seconds_have_milliseconds() {
        assert_eq!(seconds(Duration::from_millis(1234)), "1.234");
    }
}
