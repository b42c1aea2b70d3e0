//! The `poll` binary: flags -> Config -> run -> print -> exit code. The body
//! and the one final error line are printed here; only a signal that comes
//! while they are written has a line of its own (`process/signals.rs`), as it ends
//! the process at once.

use std::io::{self, Write};
use std::process::ExitCode;

use poll::{Ending, HandedOver};

fn main() -> ExitCode {
    // jaq recurses: the whole run gets a large stack (reserved, not used).
    let run = poll::spawn_on_a_large_stack("poll", || {
        let ending = match poll::configure(std::env::args_os(), &mut io::stdin()) {
            Ok(config) => poll::run(config),
            Err(ending) => ending,
        };
        print(ending)
    });
    match run.map(|thread| thread.join()) {
        Ok(Ok(code)) => ExitCode::from(code),
        // A panic (never expected) exits as Rust does by default, not with a code of the table.
        Ok(Err(_)) => ExitCode::from(101),
        Err(e) => ExitCode::from(print(Ending::cannot_start(&e))),
    }
}

/// Writes the body to stdout, then the reporter's last word and the error
/// line to stderr, then hands over to `-- CMD` after exit 0; returns the exit code.
fn print(ending: Ending) -> u8 {
    let written = io::stdout().lock().write_all(ending.stdout()).and_then(|()| io::stdout().lock().flush());
    let mut closed = ending.close(written);
    let (line, code) = match closed.hand_over() {
        None => (closed.error_line.take(), closed.code),
        Some(HandedOver::Failed { error_line, code }) => (Some(error_line), code),
        // Windows: the command ran as a child; its status is the process's, as exec makes it on Unix.
        Some(HandedOver::Exited(status)) => std::process::exit(status),
        // --start: the command ran as a child, and the server it waited for is stopped.
        Some(HandedOver::Served { error_line, code }) => (error_line, code),
    };
    if let Some(line) = line {
        let _ = writeln!(io::stderr().lock(), "{line}");
    }
    code
}
