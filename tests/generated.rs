//! `completions/` and `man/poll.1` are generated from the clap model and
//! committed; this test regenerates them in memory and fails when a committed
//! file differs. `UPDATE=1 cargo test --test generated` rewrites them.

mod support;

use std::path::{Path, PathBuf};

use clap_complete::Shell;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn completions_and_man_page_are_current() {
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    for (shell, name) in [
        (Shell::Bash, "poll.bash"),
        (Shell::Zsh, "_poll"),
        (Shell::Fish, "poll.fish"),
        (Shell::PowerShell, "_poll.ps1"),
        (Shell::Elvish, "poll.elv"),
    ] {
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut poll::cli::command(), "poll", &mut script);
        files.push((root().join("completions").join(name), script));
    }
    files.push((root().join("man").join("poll.1"), man_page()));

    let update = std::env::var_os("UPDATE").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (path, fresh) in files {
        if update {
            write(&path, &fresh);
        } else if std::fs::read(&path).ok().as_deref() != Some(&fresh[..]) {
            stale.push(path.strip_prefix(root()).unwrap_or(&path).display().to_string());
        }
    }
    assert!(stale.is_empty(), "stale generated files {stale:?}: run `UPDATE=1 cargo test --test generated`");
}

fn write(path: &Path, bytes: &[u8]) {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).expect("create folder for generated file");
    }
    std::fs::write(path, bytes).expect("write generated file");
}

/// clap_mangen's sections, plus the ones a man page reader looks for:
/// exit status, environment and examples.
fn man_page() -> Vec<u8> {
    let man = clap_mangen::Man::new(poll::cli::command());
    let mut page = Vec::new();
    man.render_title(&mut page).expect("render");
    man.render_name_section(&mut page).expect("render");
    man.render_synopsis_section(&mut page).expect("render");
    man.render_description_section(&mut page).expect("render");
    man.render_options_section(&mut page).expect("render");
    page.extend_from_slice(EXTRA.as_bytes());
    man.render_version_section(&mut page).expect("render");
    page
}

const EXTRA: &str = r#".SH "EXIT STATUS"
.TP
\fB0\fR
The condition is met (without \fB\-\-until\fR: a 2xx response arrived). The body is on stdout.
.TP
\fB1\fR
Deadline: \fB\-\-timeout\fR passed, or would pass before the next attempt could start.
.TP
\fB2\fR
Usage: a bad flag, URL, duration, header, JSON body or jq filter. Nothing was sent.
.TP
\fB3\fR
Permanent failure: a non\-retryable status (4xx but 408 and 429, 501, unfollowed 3xx) or error (TLS, too many redirects, a body over \fB\-\-max\-body\fR).
.TP
\fB4\fR
\fB\-\-fail\-when\fR matched. The body is on stdout.
.TP
\fB5\fR
Gave up on transient failures: \fB\-\-retries\fR spent, or a POST/PATCH that may have been processed and so is not re\-sent.
.TP
\fB6\fR
Circuit open (only with \fB\-\-state\fR): the breaker for this origin is open, so nothing was sent, or it opened during the run. The message names the origin and when it will be tried again.
.TP
\fB130\fR, \fB143\fR
Interrupted by SIGINT or terminated by SIGTERM; any wait and any request in flight end at once.
.PP
With \fB\-\-fallback\fR, a run that ends with 1, 5 or 6 prints the fallback body on stdout; the exit status is unchanged.
.SH ENVIRONMENT
.TP
\fBhttp_proxy\fR, \fBHTTP_PROXY\fR
Proxy for http:// URLs.
.TP
\fBhttps_proxy\fR, \fBHTTPS_PROXY\fR
Proxy for https:// URLs.
.TP
\fBall_proxy\fR, \fBALL_PROXY\fR
Proxy for either, when the scheme's own variable is not set.
.TP
\fBno_proxy\fR, \fBNO_PROXY\fR
Comma\-separated hosts (and their subdomains) reached directly; \fB*\fR for all.
.TP
\fBNO_COLOR\fR
When set and not empty, no colour on stderr with \fB\-\-color auto\fR.
.SH EXAMPLES
Wait for a job, stop early if it fails, give up after ten minutes:
.PP
.nf
.RS
poll \-\-until '.status=="done"' \-\-fail\-when '.status=="failed"' \-\-timeout 10m https://api.example.com/jobs/42
.RE
.fi
.PP
Wait until a freshly deployed service answers its health check:
.PP
.nf
.RS
poll \-\-timeout 2m \-\-interval 2s https://staging.example.com/healthz
.RE
.fi
.PP
Start a job with POST, then read one field of the result:
.PP
.nf
.RS
poll \-\-json '{"name":"build"}' \-\-until '.ready' https://api.example.com/builds | jq \-r .artifact
.RE
.fi
.PP
Branch on the outcome in a script:
.PP
.nf
.RS
poll \-q \-\-until '.ok' "$URL" > result.json
case $? in
  0) echo ready ;;
  1) echo "timed out" ;;
  4) echo "job failed" ;;
  *) echo "poll failed" ;;
esac
.RE
.fi
.PP
Let parallel CI jobs share one rate budget and circuit breaker for an API, and carry on with the last good answer when it is down:
.PP
.nf
.RS
poll \-\-state /tmp/api.state \-\-rate 10/s \-\-fallback last https://api.example.com/status
.RE
.fi
"#;

#[test]
fn man_page_renders_without_warnings() {
    // groff is not on every machine; where it is, it must find nothing to complain about.
    if !support::have_tool("groff", "apt-get install groff-base") {
        return;
    }
    let out = std::process::Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(root().join("man").join("poll.1"))
        .output()
        .expect("run groff");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "groff warnings");
}
