//! The generated files: shell completions and the man page, made from the
//! clap model (and the man page's extra sections from the exit-code table),
//! written by the hidden `poll --generate KIND` (as xh does) and checked
//! against the committed `completions/` and `man/` by a test.

use clap_complete::Shell;

use crate::cli::flags::{self, Generate};
use crate::error::EXIT_CODES;
use crate::rules::condition::{BUILTIN_VERDICT, OPERATION_WORD, RESOURCE_WORD};

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

/// Environment variables `poll` reads.
const ENVIRONMENT: [(&str, &str); 6] = [
    ("http_proxy, HTTP_PROXY", "Proxy for http:// URLs (requests go to it in absolute form)."),
    ("https_proxy, HTTPS_PROXY", "Proxy for https:// URLs (through a CONNECT tunnel)."),
    ("all_proxy, ALL_PROXY", "Proxy for either, when the scheme's own variable is not set."),
    ("no_proxy, NO_PROXY", "Comma-separated hosts (and their subdomains) reached directly; * for all."),
    ("NO_COLOR", "When set and not empty, no colour on stderr with --color auto."),
    ("GITHUB_ACTIONS", "When true, errors and warnings are GitHub workflow commands (as --ci github)."),
];

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
    roff.push_str(".PP\nWith \\fB\\-\\-fallback\\fR, a run that ends with 1, 5 or 6 prints the fallback body on stdout; the exit status is unchanged.\n");
    roff.push_str(".SH \"BUILT-IN CONDITIONS\"\nWith \\fB\\-\\-submit\\fR, replies are done and failed by the built-ins; \\fB\\-\\-until\\fR replaces the done test and \\fB\\-\\-fail\\-when\\fR the failure test. A status reply 202 is never done; a 2xx that is not JSON is done. A JSON body is read by this jq, whose \\fBword\\fR is read one way on an operation's status and another on a resource:\n");
    for (name, filter) in [
        ("word, on an operation's status (Operation-Location, Azure-AsyncOperation, --status-url)", OPERATION_WORD),
        ("word, on a resource (Location, body polling, the submit's own reply)", RESOURCE_WORD),
        ("the answer", BUILTIN_VERDICT),
    ] {
        roff.push_str(&format!(".TP\n{}\n.nf\n{}\n.fi\n", escape(name), escape(filter)));
    }
    roff.push_str(".PP\n\"done\" is done, \"failed\" fails (exit 4), \"running\" polls on; \"other\" is done on a resource in Location mode and body polling, and polls on elsewhere.\n");
    roff.push_str(".SH ENVIRONMENT\n");
    for (names, meaning) in ENVIRONMENT {
        let names: Vec<String> = names.split(", ").map(|n| format!("\\fB{}\\fR", escape(n))).collect();
        roff.push_str(&format!(".TP\n{}\n{}\n", names.join(", "), escape(meaning)));
    }
    roff.push_str(".SH EXAMPLES\n");
    for (what, lines) in flags::EXAMPLES {
        roff.push_str(&format!("{}\n.PP\n.nf\n.RS\n{}\n.RE\n.fi\n.PP\n", escape(what), escape(lines)));
    }
    roff
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
