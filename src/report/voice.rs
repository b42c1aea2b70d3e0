//! How `poll` speaks on stderr outside the JSON log: the error line and
//! warnings (plain, coloured, or as GitHub workflow commands, which the
//! Actions log turns into annotations), the mask of a secret, and the lines
//! that fold `-v`'s lines in the CI's log (GitHub's groups, GitLab's
//! collapsed sections).

use std::time::SystemTime;

use crate::util::text::printable;

/// How the final error line and warnings are written: plain or coloured
/// `poll: error: ...`, or as GitHub workflow commands, which the Actions log
/// turns into annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Voice {
    pub color: bool,
    pub github: bool,
}

impl Voice {
    /// Before the run starts (a usage error): plain, or a workflow command in GitHub Actions.
    pub(crate) fn plain(github: bool) -> Voice {
        Voice { color: false, github }
    }

    pub(crate) fn error_line(&self, message: &str) -> String {
        self.line("error", "31", message)
    }

    pub(crate) fn warning_line(&self, message: &str) -> String {
        self.line("warning", "33", message)
    }

    fn line(&self, level: &str, colour: &str, message: &str) -> String {
        let message = printable(message);
        if self.github {
            format!("::{level} title=poll::{}", workflow_escape(&message))
        } else if self.color {
            format!("poll: \x1b[{colour}m{level}:\x1b[0m {message}")
        } else {
            format!("poll: {level}: {message}")
        }
    }
}

/// A workflow command's message with `%`, CR and LF escaped, as GitHub reads them.
fn workflow_escape(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// The line that makes GitHub's runner hide `secret` in every log from then on.
pub(crate) fn add_mask(secret: &str) -> String {
    format!("::add-mask::{}", workflow_escape(secret))
}

/// The line that opens loop `t`'s `-v` lines (for `url`): GitHub's
/// `::group::`, or a collapsed GitLab section named `poll_T`, stamped with
/// the Unix time; `None` outside both.
pub(crate) fn fold_open(github: bool, gitlab: bool, t: usize, url: &str) -> Option<String> {
    if github {
        Some(format!("::group::poll {url}"))
    } else if gitlab {
        Some(format!("\x1b[0Ksection_start:{}:poll_{t}[collapsed=true]\r\x1b[0Kpoll {url}", unix_time()))
    } else {
        None
    }
}

/// The line that closes what [`fold_open`] opened.
pub(crate) fn fold_close(github: bool, gitlab: bool, t: usize) -> String {
    if gitlab && !github {
        format!("\x1b[0Ksection_end:{}:poll_{t}\r\x1b[0K", unix_time())
    } else {
        "::endgroup::".to_string()
    }
}

/// Seconds since the Unix epoch, as GitLab's section lines carry them.
fn unix_time() -> u64 {
    SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_commands_escape_percent_cr_and_lf() {
        assert_eq!(workflow_escape("100% done\r\nnext"), "100%25 done%0D%0Anext");
        let github = Voice { color: false, github: true };
        assert_eq!(github.error_line("HTTP 404 [http://h/?a=%20]"), "::error title=poll::HTTP 404 [http://h/?a=%2520]");
        assert_eq!(github.warning_line("a\nb"), r"::warning title=poll::a\nb", "control characters are escaped first");
        let plain = Voice { color: false, github: false };
        assert_eq!(plain.error_line("HTTP 404"), "poll: error: HTTP 404");
        let colour = Voice { color: true, github: false };
        assert_eq!(colour.error_line("x"), "poll: \x1b[31merror:\x1b[0m x");
    }
}
