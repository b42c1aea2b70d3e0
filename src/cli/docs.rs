//! The generated files: shell completions and the man page, made from the
//! clap model (and the man page's extra sections from the exit-code table),
//! written by the hidden `poll --generate KIND` (as xh does) and checked
//! against the committed `completions/` and `man/` by a test.

use clap_complete::Shell;

use crate::cli::flags::{self, BUILTIN_FILTERS, BUILTIN_INTRO, BUILTIN_OUTCOME, Generate};
use crate::error::{self, EXIT_CODES};

/// The file `kind` names, as bytes.
pub(crate) fn generate(kind: Generate) -> Vec<u8> {
    let shell = match kind {
        Generate::Man => return man_page(),
        Generate::Bash => Shell::Bash,
        Generate::Zsh => Shell::Zsh,
        Generate::Fish => Shell::Fish,
        Generate::Powershell => Shell::PowerShell,
        Generate::Elvish => Shell::Elvish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut flags::command(), "poll", &mut script);
    script
}

/// Environment variables `poll` reads, besides `POLL_<FLAG>` (listed from the clap model).
const ENVIRONMENT: [(&str, &str); 12] = [
    ("http_proxy, HTTP_PROXY", "Proxy for http:// URLs (requests go to it in absolute form)."),
    ("https_proxy, HTTPS_PROXY", "Proxy for https:// URLs (through a CONNECT tunnel)."),
    ("all_proxy, ALL_PROXY", "Proxy for either, when the scheme's own variable is not set."),
    ("no_proxy, NO_PROXY", "Comma-separated hosts (and their subdomains) reached directly; * for all."),
    (
        "SSL_CERT_FILE, SSL_CERT_DIR",
        "The trusted roots, as curl reads them: a bundle, a folder of certificates (instead of the system's store).",
    ),
    ("NO_COLOR", "When set and not empty, no colour on stderr with --color auto."),
    ("GITHUB_ACTIONS", "When true, errors and warnings are GitHub workflow commands (as --ci github)."),
    ("GITHUB_STEP_SUMMARY", "In GitHub Actions, the file the run's summary table is appended to."),
    ("GITLAB_CI", "When true, -v lines are folded in GitLab's collapsed sections (as --ci gitlab)."),
    ("PATH", "Where the command after -- is looked for (/bin:/usr/bin when unset)."),
    (
        "TRACEPARENT, TRACESTATE",
        "W3C Trace Context: each request carries the trace with a span of its own, and the command after -- is handed it.",
    ),
    ("ComSpec, SystemRoot", "On Windows, the shell that runs --auth-cmd (cmd.exe)."),
];

/// What the man page says of `POLL_<FLAG>` before listing the variables.
const SETTINGS: &str = "Every option that takes one value, and every switch, can be set from the environment: \
    POLL_ and the long name in capitals, - as _. Switches take true or false (yes, no, on, off, 1, 0). An empty \
    variable is unset. The command line wins, also over a variable whose option conflicts with one it gives \
    (POLL_QUIET=true with -v): the variable is ignored. A variable that only means something beside another \
    option (POLL_STATE_KEY without --state) is ignored without it. Two variables that conflict are a usage \
    error naming both. -v names the variables used and those ignored, and why.";

/// clap_mangen's sections, plus the ones a man page reader looks for.
fn man_page() -> Vec<u8> {
    let man = clap_mangen::Man::new(flags::command());
    let mut page = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = man.render_title(&mut page);
    let _ = man.render_name_section(&mut page);
    let _ = man.render_synopsis_section(&mut page);
    let _ = man.render_description_section(&mut page);
    let _ = man.render_options_section(&mut page);
    page.extend_from_slice(extra_sections().as_bytes());
    let _ = man.render_version_section(&mut page);
    page
}

fn extra_sections() -> String {
    let mut roff = String::from(".SH \"EXIT STATUS\"\n");
    for (code, meaning) in EXIT_CODES {
        roff.push_str(&format!(".TP\n\\fB{code}\\fR\n{}\n", escape(meaning)));
    }
    roff.push_str(&format!(
        ".PP\nWith \\fB\\-\\-fallback\\fR, a run that ends with {} prints the fallback body on stdout; the exit status is unchanged.\n",
        error::fallback_codes()
    ));
    roff.push_str(&format!(".SH \"BUILT-IN CONDITIONS\"\n{}\n", escape(BUILTIN_INTRO)));
    for (name, filter) in BUILTIN_FILTERS {
        roff.push_str(&format!(".TP\n{}\n.nf\n{}\n.fi\n", escape(name), escape(filter)));
    }
    roff.push_str(&format!(".PP\n{}\n", escape(BUILTIN_OUTCOME)));
    roff.push_str(&format!(".SH ENVIRONMENT\n{}\n", escape(SETTINGS)));
    for (names, meaning) in environment() {
        let names: Vec<String> = names.split(", ").map(|n| format!("\\fB{}\\fR", escape(n))).collect();
        roff.push_str(&format!(".TP\n{}\n{}\n", names.join(", "), escape(&meaning)));
    }
    roff.push_str(".SH EXAMPLES\n");
    for (what, lines) in flags::EXAMPLES {
        roff.push_str(&format!("{}\n.PP\n.nf\n.RS\n{}\n.RE\n.fi\n.PP\n", escape(what), escape(lines)));
    }
    roff
}

/// Every variable `poll` reads, with what it does: `POLL_<FLAG>` for each
/// option the environment can set (a flag on the command line wins), then the others.
fn environment() -> Vec<(String, String)> {
    let command = flags::command();
    let settings = command.get_arguments().filter_map(|arg| {
        let variable = arg.get_env()?.to_string_lossy().into_owned();
        let long = arg.get_long()?;
        Some((variable, format!("As --{long}, when the command line does not give it.")))
    });
    let others = ENVIRONMENT.iter().map(|(names, meaning)| (names.to_string(), meaning.to_string()));
    settings.chain(others).collect()
}

/// Text for roff: backslashes and dashes escaped, and no line starting with
/// a control character.
fn escape(text: &str) -> String {
    text.replace('\\', "\\e")
        .replace('-', "\\-")
        .lines()
        .map(|line| if line.starts_with(['.', '\'']) { format!("\\&{line}") } else { line.to_string() })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variable a source file reads by name is in the man page's ENVIRONMENT section,
    /// but a test's own (`POLL_TEST_...`).
    #[test]
    fn every_variable_poll_reads_is_in_the_man_page() {
        let listed: Vec<String> = environment()
            .iter()
            .flat_map(|(names, _)| names.split(", ").map(str::to_string).collect::<Vec<_>>())
            .collect();
        let mut read = vec![crate::report::summary::VARIABLE.to_string()];
        let mut sources = vec![std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))];
        while let Some(path) = sources.pop() {
            match std::fs::read_dir(&path) {
                Ok(entries) => sources.extend(entries.flatten().map(|e| e.path())),
                Err(_) => {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    for call in ["var(\"", "var_os(\""] {
                        for found in text.split(call).skip(1) {
                            read.extend(found.split('"').next().map(str::to_string));
                        }
                    }
                    let quoted = text.split('"').skip(1).step_by(2);
                    let proxy = |q: &&str| {
                        q.to_ascii_lowercase()
                            .strip_suffix("_proxy")
                            .is_some_and(|scheme| !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphabetic()))
                    };
                    read.extend(quoted.filter(proxy).map(str::to_string));
                }
            }
        }
        assert!(read.len() > 10, "{read:?}");
        let missing: Vec<&String> =
            read.iter().filter(|v| !v.starts_with("POLL_TEST_") && !listed.contains(v)).collect();
        assert!(missing.is_empty(), "read but not in the man page: {missing:?}");
        assert!(
            listed.iter().any(|v| v == "POLL_TIMEOUT") && !listed.iter().any(|v| v == "POLL_HEADERS"),
            "{listed:?}"
        );
    }

    #[test]
    fn roff_text_is_escaped() {
        assert_eq!(escape("--timeout"), "\\-\\-timeout");
        assert_eq!(escape("a\\(b"), "a\\e(b");
        assert_eq!(escape(".status\n'x"), "\\&.status\n\\&'x");
    }

    #[test]
    fn the_man_page_lists_every_exit_code() {
        let page = String::from_utf8(man_page()).unwrap_or_default();
        for (code, _) in EXIT_CODES {
            assert!(page.contains(&format!(".TP\n\\fB{code}\\fR\n")), "exit {code} is missing");
        }
    }
}
