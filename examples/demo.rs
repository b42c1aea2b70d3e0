//! A self-contained demo: starts a tiny job API on 127.0.0.1 whose job goes
//! pending -> 503 with Retry-After -> pending -> done, then polls it with the
//! real `poll` code, exactly as the binary would.
//!
//!     cargo run --release --example demo

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::ExitCode;

/// The job's answers, in order; the last one repeats.
const SCRIPT: &[(&str, &str, &str)] = &[
    ("200 OK", "", r#"{"id":42,"status":"pending","progress":10}"#),
    ("503 Service Unavailable", "Retry-After: 1\r\n", r#"{"error":"busy, come back in a second"}"#),
    ("200 OK", "", r#"{"id":42,"status":"pending","progress":70}"#),
    ("200 OK", "", r#"{"id":42,"status":"done","progress":100,"artifact":"build-42.tar.gz"}"#),
];

fn main() -> ExitCode {
    let listener = match TcpListener::bind("127.0.0.1:0") {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("demo: cannot listen on 127.0.0.1: {e}");
            return ExitCode::FAILURE;
        }
    };
    let url = match listener.local_addr() {
        Ok(addr) => format!("http://{addr}/jobs/42"),
        Err(e) => {
            eprintln!("demo: {e}");
            return ExitCode::FAILURE;
        }
    };
    std::thread::spawn(move || serve(&listener));

    let args = [
        "poll",
        "--until",
        r#".status=="done""#,
        "--fail-when",
        r#".status=="failed""#,
        "--interval",
        "500ms",
        "--timeout",
        "30s",
        "--show",
        ".progress",
        "-v",
        &url,
    ];
    eprintln!("demo: job API on {url}; running: {}\n", shell_words(&args));
    // The same calls as poll's own main: the ending holds the body, then closes with the error line and the exit code.
    let ending = match poll::configure(args.map(Into::into), &mut std::io::empty()) {
        Ok(config) => poll::run(config),
        Err(ending) => ending,
    };
    println!("{}", String::from_utf8_lossy(ending.stdout()));
    let closed = ending.close(Ok(()));
    if let Some(line) = &closed.error_line {
        eprintln!("{line}");
    }
    ExitCode::from(closed.code)
}

/// Answers every request, on any connection, with the next step of the script.
fn serve(listener: &TcpListener) {
    let mut step = 0;
    for stream in listener.incoming().flatten() {
        let Ok(reader) = stream.try_clone() else { continue };
        let mut reader = BufReader::new(reader);
        let mut stream: TcpStream = stream;
        // Keep-alive: one request after another until the client hangs up.
        while read_request_head(&mut reader) {
            let (status, headers, body) = SCRIPT[step.min(SCRIPT.len() - 1)];
            step += 1;
            let reply = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{headers}\r\n{body}",
                body.len()
            );
            if stream.write_all(reply.as_bytes()).is_err() {
                break;
            }
        }
    }
}

/// Reads one request head (the demo's requests have no body); false at the end of the connection.
fn read_request_head(reader: &mut impl BufRead) -> bool {
    let mut line = String::new();
    let mut lines = 0;
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return false,
            Ok(_) if line == "\r\n" && lines > 0 => return true,
            Ok(_) => lines += 1,
        }
    }
}

fn shell_words(args: &[&str]) -> String {
    args.iter()
        .map(|a| if a.contains(['"', ' ', '=']) { format!("'{a}'") } else { a.to_string() })
        .collect::<Vec<_>>()
        .join(" ")
}
