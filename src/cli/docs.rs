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
    roff.push_str(&format!(
        ".PP\nWith \\fB\\-\\-fallback\\fR, a run that ends with {} prints the fallback body on stdout; the exit status is unchanged.\n",
        error::fallback_codes()
    ));
    roff.push_str(&format!(".SH \"BUILT-IN CONDITIONS\"\n{}\n", escape(BUILTIN_INTRO)));
    for (name, filter) in BUILTIN_FILTERS {
        roff.push_str(&format!(".TP\n{}\n.nf\n{}\n.fi\n", escape(name), escape(filter)));
    }
    roff.push_str(&format!(".PP\n{}\n", escape(BUILTIN_OUTCOME)));
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
