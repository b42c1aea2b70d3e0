//! The GitHub Actions step summary: at the end of a run, one Markdown table
//! appended to the file `GITHUB_STEP_SUMMARY` names, one row per URL. The
//! rendering is pure ([`render`]); [`append`] is the one file write.
//!
//! Every cell is bounded ([`MAX_CELL`]), so 100 URLs stay far below the
//! runner's 1 MiB limit for a step's summary.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error;
use crate::report::result::UrlResult;
use crate::util::file;
use crate::util::text::{count, human, printable};

/// The variable the runner sets to the step's summary file.
pub(crate) const VARIABLE: &str = "GITHUB_STEP_SUMMARY";

/// The longest cell, in characters; longer text is cut with `…`.
const MAX_CELL: usize = 300;

/// The summary file, when the run is in GitHub Actions (`github`: `--ci
/// github` or `GITHUB_ACTIONS=true`) and the variable names one.
pub(crate) fn path(github: bool) -> Option<PathBuf> {
    let value = std::env::var_os(VARIABLE).filter(|v| !v.is_empty())?;
    github.then(|| PathBuf::from(value))
}

/// A URL's exit code in words; `None` when the run ended before it did.
fn words(code: Option<u8>) -> &'static str {
    code.map_or("abandoned", error::words)
}

/// The table, with a heading line naming the run's ending and a blank line
/// before and after, so that tables of several runs in one step stay apart.
/// A URL the run ended first shares `run_wide`'s exit code (a signal's, a
/// deadline's) and is abandoned otherwise.
pub(crate) fn render(results: &[UrlResult], run_wide: Option<u8>, code: u8, elapsed: Duration) -> String {
    let attempts: u32 = results.iter().map(|result| result.attempts).sum();
    let mut text = format!(
        "\n#### poll: {} (exit {code}), {} in {}\n\n",
        words(Some(code)),
        count(attempts, "attempt"),
        human(elapsed)
    );
    text.push_str("| URL | Result | Exit code | Attempts | Elapsed | Last status |\n");
    text.push_str("|---|---|---:|---:|---:|---|\n");
    for row in results {
        let exit_code = row.exit_code().or(run_wide);
        let words = words(exit_code);
        let result = match row.error().map(|error| error.beside(&row.url)) {
            // An error that opens with its ending's words (`deadline: ...`, `interrupted after ...`) says them once.
            Some(what) if what.starts_with(words) => what,
            Some(what) => format!("{words}: {what}"),
            None => words.to_string(),
        };
        let exit = exit_code.map_or_else(|| "–".to_string(), |code| code.to_string());
        let last = if row.last.is_empty() { "–" } else { row.last.as_str() };
        text.push_str(&format!(
            "| {} | {} | {exit} | {} | {} | {} |\n",
            code_span(&row.url),
            cell(&result),
            row.attempts,
            human(row.elapsed),
            cell(last)
        ));
    }
    text.push('\n');
    text
}

/// Appends `text` to the summary file in one write (other steps' tables, and
/// other `poll`s of the same step, stay as they are), by `until` (the run's
/// deadline) when it is a FIFO no one reads.
pub(crate) fn append(path: &Path, text: &str, until: Option<Instant>) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("cannot write the step summary `{}` ({VARIABLE}): {e}", path.display());
    file::append(path, text.as_bytes(), until).map_err(fail)
}

/// `text` cut to [`MAX_CELL`] characters, on one line.
fn bounded(text: &str) -> String {
    let one_line = text.replace("\r\n", "\n").replace(['\r', '\n'], " ");
    match one_line.char_indices().nth(MAX_CELL) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

/// Plain text in a table cell: Markdown's punctuation backslash-escaped (a
/// `|` would end the cell, `*` or `<` would format), and what GitHub would
/// turn into something else: `$` (math), `@` (a mention, an e-mail link),
/// `:` before a word (`:warning:`) or `//` (a bare link), `www.`. Line breaks
/// are spaces; other control and invisible characters are escaped as text.
fn cell(text: &str) -> String {
    let text = printable(&bounded(text));
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    // Inside a `:word` that an escaped colon opened: its closing colon is escaped too.
    let mut shortcode = false;
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        let special = match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '&' | '#' | '!' | '$' | '@' => true,
            ':' if shortcode => true,
            ':' => next.is_some_and(|n| n.is_alphanumeric() || n == '/'),
            '.' => out.to_ascii_lowercase().ends_with("www"),
            _ => false,
        };
        shortcode = match c {
            ':' => special && !shortcode && next.is_some_and(char::is_alphanumeric),
            c => shortcode && (c.is_alphanumeric() || matches!(c, '_' | '+' | '-')),
        };
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A URL as code in a table cell: shown as it is (control and invisible
/// characters escaped), never turned into a link or formatted; only `|` is escaped (GitHub splits cells before it reads
/// code spans), and the fence is longer than any run of backticks inside.
fn code_span(text: &str) -> String {
    let text = printable(&bounded(text)).replace('|', "\\|");
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, Kind};

    /// A URL's result: ended with `kind` and `message` (`None`: done), or abandoned (`ended` false).
    fn row(url: &str, ended: bool, error: Option<(Kind, &str)>, last: &str) -> UrlResult {
        UrlResult {
            url: url.to_string(),
            ended: ended.then(|| error.map_or(Ok(()), |(kind, message)| Err(Error::new(kind, message)))),
            body: None,
            printed: None,
            attempts: 3,
            elapsed: Duration::from_millis(1_250),
            last: last.to_string(),
        }
    }

    #[test]
    fn one_row_per_url_under_a_heading() {
        let rows = [
            row("http://localhost/containers/db/json", true, None, "200 done"),
            row("http://api.test/b", false, None, ""),
        ];
        assert_eq!(
            render(&rows, None, 0, Duration::from_secs(2)),
            "\n#### poll: done (exit 0), 6 attempts in 2.0s\n\n\
             | URL | Result | Exit code | Attempts | Elapsed | Last status |\n\
             |---|---|---:|---:|---:|---|\n\
             | `http://localhost/containers/db/json` | done | 0 | 3 | 1.2s | 200 done |\n\
             | `http://api.test/b` | abandoned | – | 3 | 1.2s | – |\n\n"
        );
    }

    #[test]
    fn a_signal_is_named_in_the_heading() {
        let rows = [row("http://h/", true, Some((Kind::HungUp, "hung up after 3 attempts")), "–")];
        let text = render(&rows, None, 129, Duration::ZERO);
        assert!(text.starts_with("\n#### poll: hung up (exit 129), 3 attempts in "), "{text}");
        assert!(text.contains("| `http://h/` | hung up after 3 attempts | 129 |"), "its words once: {text}");
        let rows = [row("http://h/", true, Some((Kind::Deadline, "deadline: only 2s is left")), "200 pending")];
        let text = render(&rows, None, 1, Duration::ZERO);
        assert!(text.contains("| `http://h/` | deadline: only 2s is left | 1 |"), "{text}");
    }

    #[test]
    fn pipes_newlines_and_markdown_are_escaped() {
        let rows = [row("http://h/a|b`c", true, Some((Kind::Permanent, "HTTP 404 | *not*\nfound <b>")), "404")];
        let text = render(&rows, None, 3, Duration::ZERO);
        let line = text.lines().nth(5).unwrap_or_default();
        assert_eq!(
            line,
            r"| ``http://h/a\|b`c`` | permanent failure: HTTP 404 \| \*not\* found \<b\> | 3 | 3 | 1.2s | 404 |"
        );
        // Each row is one line with its seven cell borders, whatever the text.
        assert_eq!(line.matches(" | ").count() + 2, 7);
        assert_eq!(code_span("`a`"), "`` `a` ``");
    }

    #[test]
    fn what_github_would_render_is_escaped() {
        let hostile = "$x$ $$y$$ @octocat :warning: https://evil.test www.evil.test me@evil.test a\u{202e}b\u{200b}";
        assert_eq!(
            cell(hostile),
            r"\$x\$ \$\$y\$\$ \@octocat \:warning\: https\://evil.test www\.evil.test me\@evil.test a\\u{202e}b\\u{200b}"
        );
        assert_eq!(cell("deadline: 1.2s"), "deadline: 1.2s", "a colon before a space and a plain dot stay");
    }

    #[test]
    fn a_hundred_long_urls_stay_far_below_one_mebibyte() {
        let long = format!("http://h/{}", "x".repeat(5_000));
        let message = "y".repeat(5_000);
        let rows: Vec<UrlResult> = (0..100).map(|_| row(&long, true, Some((Kind::GaveUp, &message)), "503")).collect();
        let size = render(&rows, None, 5, Duration::ZERO).len();
        assert!(size < 100 << 10, "{size} bytes");
    }
}
