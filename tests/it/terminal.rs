//! What a person at a terminal sees: the live progress line and colour, tested
//! under a pseudo-terminal made by util-linux `script` (`support::have_tool`: a
//! loud skip where it is missing, a failure with `POLL_TEST_REQUIRE_TOOLS=1`).

use crate::support;

use std::process::Command;

use support::server::{Reply, Server};

/// `script`, which makes the pseudo-terminal: in Debian's bsdutils (util-linux elsewhere).
fn have_script() -> bool {
    support::have_tool("script", "apt-get install bsdutils")
}

/// Runs poll under a pseudo-terminal (call `have_script()` first); returns its exit code and everything drawn.
fn on_terminal(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let quoted: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_poll"))
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let mut cmd = Command::new("script");
    support::hermetic(&mut cmd).args(["-qfec", &quoted.join(" "), "/dev/null"]).env("TERM", "xterm");
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = cmd.output().expect("run script");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn the_progress_line_shows_attempt_outcome_countdown_and_clock_then_a_summary() {
    if !have_script() {
        return;
    }
    let server = Server::start(vec![
        Reply::json(200, r#"{"status":"pending","progress":42}"#),
        Reply::json(200, r#"{"status":"done","progress":100}"#),
    ]);
    let args = ["--until", r#".status=="done""#, "--show", ".progress", "-i", "800ms", "--timeout", "1m"];
    let (code, drawn) = on_terminal(&[&args[..], &[server.url("/").as_str()]].concat(), &[]);
    assert_eq!(code, 0, "{drawn}");
    assert!(drawn.contains("attempt 1 · 200 pending · progress 42 · next poll in 0."), "{drawn}");
    assert!(drawn.contains(" / 1m"), "the clock shows the deadline: {drawn}");
    // The countdown moves: at least two different values are drawn during the wait.
    let countdowns: std::collections::HashSet<&str> =
        drawn.match_indices("next poll in ").map(|(i, _)| &drawn[i + 13..i + 17]).collect();
    assert!(countdowns.len() >= 2, "countdown does not move: {countdowns:?}");
    // The line is cleared and one summary stays; the body follows on stdout.
    let summary = drawn.find("poll: done after 2 attempts in ").expect("summary line");
    assert!(drawn[..summary].contains("\x1b[2K"), "progress line cleared before the summary");
    assert!(drawn.contains(r#"{"status":"done","progress":100}"#));
}

#[test]
fn quiet_and_json_draw_no_progress_line() {
    if !have_script() {
        return;
    }
    let server = Server::start(vec![Reply::json(200, r#"{"ok":true}"#)]);
    for flag in ["-q", "--log-format=json"] {
        let (code, drawn) = on_terminal(&[flag, "--until", ".ok", &server.url("/")], &[]);
        assert_eq!(code, 0);
        assert!(!drawn.contains("attempt 1 ·"), "{flag}: {drawn}");
        assert!(!drawn.contains("poll: done"), "{flag}: {drawn}");
    }
}

#[test]
fn errors_are_coloured_on_a_terminal_unless_no_color_or_never() {
    if !have_script() {
        return;
    }
    let server = Server::start(vec![Reply::status(404)]);
    let url = server.url("/");
    let (code, drawn) = on_terminal(&[&url], &[]);
    assert_eq!(code, 3);
    assert!(drawn.contains("\x1b[31merror:\x1b[0m"), "{drawn:?}");

    let (_, drawn) = on_terminal(&[&url], &[("NO_COLOR", "1")]);
    assert!(drawn.contains("poll: error: HTTP 404") && !drawn.contains("\x1b[31m"), "{drawn:?}");

    let (_, drawn) = on_terminal(&["--color", "never", &url], &[]);
    assert!(!drawn.contains("\x1b[31m"), "{drawn:?}");
}

#[test]
fn colour_can_be_forced_off_a_terminal() {
    let server = Server::start(vec![Reply::status(404)]);
    let out = support::poll().args(["--color", "always", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\x1b[31merror:"));
    let out = support::poll().arg(server.url("/")).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains('\x1b'), "no colour off a terminal by default");
}

#[test]
fn two_urls_draw_a_progress_line_each_at_the_same_time() {
    if !have_script() {
        return;
    }
    let pending = Reply::json(200, r#"{"status":"pending"}"#);
    let done = Reply::json(200, r#"{"status":"done"}"#);
    let server = Server::routes(vec![
        ("/a", vec![pending.clone(), done.clone()]),
        ("/b", vec![pending.clone(), pending.clone(), pending, done]),
    ]);
    let (a, b) = (server.url("/a"), server.url("/b"));
    let args = ["--until", r#".status=="done""#, "-i", "300ms", "--timeout", "1m", &a, &b];
    let (code, drawn) = on_terminal(&args, &[]);
    assert_eq!(code, 0, "{drawn}");
    assert_eq!(server.hits(), 6);
    // Each redraw clears the rows it drew, then writes every line: one redraw holds both.
    let frames: Vec<&str> = drawn.split("\x1b[2K").collect();
    let both = |one: &str, other: &str| frames.iter().any(|frame| frame.contains(one) && frame.contains(other));
    let waiting = |url: &str| format!("{url} · attempt 1 · 200 pending · next poll in 0.");
    assert!(both(&waiting(&a), &waiting(&b)), "no redraw shows both progress lines: {drawn:?}");
    // The URL that is done says so and stops, while the other goes on.
    let over = format!("{a} · attempt 2 · 200 done · 0.");
    assert!(both(&over, &format!("{b} · attempt 2 · 200 pending · next poll in 0.")), "{drawn:?}");
    assert!(both(&over, &format!("{b} · attempt 3 · 200 pending · next poll in 0.")), "{drawn:?}");

    let summary = drawn.find("poll: done after 6 attempts in ").expect("summary line");
    let first = format!(r#"{{"url":"{a}","exit_code":0,"body":{{"status":"done"}}}}"#);
    assert!(drawn[summary..].contains(&first), "{:?}", &drawn[summary..]);
}

#[test]
fn the_progress_line_says_a_service_is_not_up_yet() {
    if !have_script() {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/healthz");
    let (code, drawn) = on_terminal(&["-i", "400ms", "--timeout", "1s", &url], &[]);
    assert_eq!(code, 1, "{drawn}");
    assert!(drawn.contains("attempt 1 · connection refused · next poll in 0."), "{drawn}");
    assert!(drawn.contains("s (not up yet)"), "{drawn}");
    assert!(drawn.contains("never reached: connection refused"), "{drawn}");
}

/// Ctrl-C at a terminal: the terminal echoes `^C` where the cursor is, at the end
/// of the progress line. Each frame leaves two columns free for it, so the echo
/// does not wrap to a line of its own and the clearing at the end takes the frame
/// with it: nothing of the progress line stays above the error line.
#[test]
fn ctrl_c_at_a_terminal_leaves_no_progress_frame_behind() {
    if !have_script() {
        return;
    }
    let server = Server::start(vec![Reply::json(200, r#"{"status":"pending"}"#)]);
    let command = format!(
        "stty rows 24 cols 60; '{}' --until '.status==\"done\"' -i 100ms --timeout 1m '{}'",
        env!("CARGO_BIN_EXE_poll"),
        server.url("/a-path-long-enough-to-fill-the-line")
    );
    let mut cmd = Command::new("script");
    support::hermetic(&mut cmd).args(["-qfec", &command, "/dev/null"]).env("TERM", "xterm");
    let mut child =
        cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().expect("run script");
    assert!(server.wait_hits(3, std::time::Duration::from_secs(10)), "the run polls");
    // The terminal's interrupt character, typed: the line discipline echoes ^C and sends SIGINT.
    let mut stdin = child.stdin.take().expect("script's stdin");
    std::io::Write::write_all(&mut stdin, b"\x03").expect("type Ctrl-C");
    let output = child.wait_with_output().expect("script ends");
    drop(stdin);
    let drawn = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(130), "{drawn}");
    // Every frame is drawn after a cleared line start (a long one wraps); where it ends, the
    // cursor must be short of the terminal's last two columns of 60.
    let frames: Vec<String> = drawn.split("\r\x1b[2K").map(visible).filter(|f| f.contains("attempt")).collect();
    assert!(!frames.is_empty(), "{drawn:?}");
    for frame in &frames {
        let column = frame.trim_end_matches("^C").chars().count() % 60;
        assert!((1..=58).contains(&column), "a frame ends at column {column} of 60: {frame:?}");
    }
    assert!(drawn.contains("poll: \x1b[31merror:\x1b[0m interrupted after "), "{drawn:?}");
}

/// `text` as a terminal shows it on one line: escape sequences and line ends out.
fn visible(text: &str) -> String {
    let mut shown = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                // CSI: ESC [ parameters, then a final letter.
                if chars.next_if_eq(&'[').is_some() {
                    while chars.next_if(|c| !c.is_ascii_alphabetic()).is_some() {}
                    chars.next();
                }
            }
            '\r' | '\n' => {}
            c => shown.push(c),
        }
    }
    shown
}

/// `--auth-cmd` that asks at the terminal (an MFA prompt: `read t </dev/tty`) runs in a process
/// group of its own, which the terminal stops with SIGTTIN (SIGTTOU for `stty -echo`): the run
/// says so at once and ends, exit 3, where it waited silently for the command's 30 s limit or the
/// deadline (issue 39, row 11).
#[test]
fn an_auth_cmd_that_reads_the_terminal_is_said_so_at_once() {
    if !have_script() {
        return;
    }
    let server = Server::start(vec![Reply::json(200, r#"{"ok":true}"#)]).expect_hits(0);
    let started = std::time::Instant::now();
    let args = ["--auth-cmd", r#"read t </dev/tty; echo "$t""#, "--timeout", "20s", &server.url("/")];
    let (code, drawn) = on_terminal(&args, &[("NO_COLOR", "1")]);
    let took = started.elapsed();
    assert_eq!(code, 3, "{drawn}");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}: {drawn}");
    let said = format!(
        "poll: error: --auth-cmd tried to read the terminal and was stopped (SIGTTIN): it runs in a process group of \
         its own, which the terminal does not answer; it was ended [{}]; have it print its token without asking (log \
         in before poll runs), or give the token with -H @FILE\r\n",
        server.url("/")
    );
    assert!(drawn.ends_with(&said), "{drawn:?}");

    // A password prompt turns the echo off first: the terminal stops that with SIGTTOU.
    let args = ["--auth-cmd", "stty -echo </dev/tty; echo token", "--timeout", "20s", &server.url("/")];
    let (code, drawn) = on_terminal(&args, &[("NO_COLOR", "1")]);
    assert_eq!(code, 3, "{drawn}");
    let said = "--auth-cmd tried to write to the terminal or change its settings and was stopped (SIGTTOU)";
    assert!(drawn.contains(said), "{drawn:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
}
